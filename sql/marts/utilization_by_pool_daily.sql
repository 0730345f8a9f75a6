-- marts.utilization_by_pool_daily: one row per UTC day and pool (cluster.yaml `pools`: named groups of
-- nodes, the hardware — a GPU generation — not the Slurm partition; the nodes in no pool form pool
-- 'other'; without pools the whole fleet is pool 'all', one row per day equal to marts.utilization_daily):
-- the pool's GPUs and capacity, the GPU-hours allocated on its nodes, their ratio, and how many GPU jobs
-- ran on them. PARTITIONED by day: rerunning a day replaces exactly that day's rows.
-- Capacity: the pool's GPUs x the day's capacity hours — marts.utilization_daily's rule (models/accounting_span.py
-- capacity_hours_expr: 24, but on the day of $as_of only the hours up to it when more than 60 min of the day
-- lie after it), so the pools' capacities sum to utilization_daily's.
-- Allocated: every started instance's n_gpus x its overlap with the day (utilization_daily's GPU-hours),
-- apportioned to its nodes as Slurm allocated them: the accounting gives no per-node GPU count, so each
-- distinct node of the instance gets n_gpus / its node count, and a job spanning two pools splits between
-- them; an instance without a node list (or on a node no pool names) counts in $default_pool. The pools'
-- allocations sum to utilization_daily's allocated_gpu_hours. jobs_running counts a job spanning pools in
-- each of them (so the pools' jobs_running can sum to more than utilization_daily's).
-- Parameters: $day DATE, $as_of TIMESTAMPTZ, $max_gap_minutes DOUBLE (as marts.utilization_daily), $pool_names VARCHAR[] /
-- $pool_gpus INTEGER[] (parallel: every pool and its GPUs, cluster.yaml pool_gpus; they sum to the
-- fleet's GPUs), $pool_nodes VARCHAR[] / $node_pools VARCHAR[] (parallel: each listed node's pool,
-- cluster.yaml pool_by_node; empty with a node count only), $default_pool VARCHAR ('all' without pools,
-- else 'other'; a pool not in $pool_names gets a row with 0 GPUs only when something was allocated there).
CREATE TABLE IF NOT EXISTS marts.utilization_by_pool_daily (
    day                 DATE    NOT NULL,
    pool                VARCHAR NOT NULL,
    gpus                INTEGER NOT NULL,  -- the pool's GPUs (cluster.yaml gpus_per_node / node_gpus of its nodes)
    capacity_gpu_hours  DOUBLE,            -- gpus * the day's capacity hours (24 unless partial)
    allocated_gpu_hours DOUBLE  NOT NULL,
    utilization         DOUBLE,            -- allocated / capacity; NULL when capacity is 0 or unknown
    jobs_running        BIGINT  NOT NULL   -- GPU jobs with a positive overlap with the day on the pool's nodes
);

DELETE FROM marts.utilization_by_pool_daily WHERE day = $day::DATE;

INSERT INTO marts.utilization_by_pool_daily BY NAME  -- by name: the partial column (models/day_coverage.py) is set afterwards
WITH bounds AS (
    -- explicit UTC so the session TimeZone setting cannot shift the day window
    SELECT timezone('UTC', $day::DATE::TIMESTAMP)       AS d0,
           timezone('UTC', ($day::DATE + 1)::TIMESTAMP) AS d1
), pools AS (
    SELECT unnest($pool_names::VARCHAR[]) AS pool, unnest($pool_gpus::INTEGER[]) AS gpus
), node_pool AS (
    SELECT unnest($pool_nodes::VARCHAR[]) AS node, unnest($node_pools::VARCHAR[]) AS pool
), overlap AS (
    -- utilization_daily's overlap, with each instance's distinct nodes
    SELECT j.job_id, j.instance_no, j.n_gpus, list_distinct(COALESCE(j.nodes, [])) AS nodes,
           greatest(j.start_ts, b.d0)                                   AS s,
           least(COALESCE(j.end_ts, $as_of::TIMESTAMPTZ), b.d1)         AS e
    FROM core.job_instances AS j, bounds AS b
    WHERE j.n_gpus > 0
      AND j.start_ts IS NOT NULL
      AND j.start_ts < b.d1
      AND COALESCE(j.end_ts, $as_of::TIMESTAMPTZ) > b.d0
), placed AS (
    -- one row per instance and node (one row with node NULL for an instance without a node list)
    SELECT job_id, instance_no, n_gpus, s, e, greatest(len(nodes), 1) AS n_nodes,
           unnest(CASE WHEN len(nodes) > 0 THEN nodes ELSE [NULL::VARCHAR] END) AS node
    FROM overlap
    WHERE e > s
), share AS (
    -- per instance and pool: the share of its nodes in the pool
    SELECT p.job_id, COALESCE(np.pool, $default_pool::VARCHAR) AS pool,
           any_value(p.n_gpus) AS n_gpus, any_value(p.s) AS s, any_value(p.e) AS e,
           count(*)::DOUBLE / any_value(p.n_nodes) AS node_share
    FROM placed AS p LEFT JOIN node_pool AS np ON np.node = p.node
    GROUP BY p.job_id, p.instance_no, COALESCE(np.pool, $default_pool::VARCHAR)
), agg AS (
    SELECT pool,
           sum(n_gpus::HUGEINT * (epoch_us(e) - epoch_us(s)) * node_share) / 3.6e9 AS allocated_gpu_hours,
           count(DISTINCT job_id) AS jobs_running  -- a job requeued within the day is one job
    FROM share
    GROUP BY pool
), covered AS (
    SELECT greatest(epoch_us(least(COALESCE($as_of::TIMESTAMPTZ, b.d1), b.d1)) - epoch_us(b.d0), 0) / 3.6e9 AS h
    FROM bounds AS b
), hours AS (
    SELECT CASE WHEN h >= 24 - $max_gap_minutes / 60.0 THEN 24.0 ELSE h END AS capacity_hours FROM covered
)
SELECT $day::DATE                                               AS day,
       COALESCE(pools.pool, agg.pool)                           AS pool,
       COALESCE(pools.gpus, 0)::INTEGER                         AS gpus,
       COALESCE(pools.gpus, 0) * hours.capacity_hours           AS capacity_gpu_hours,
       COALESCE(agg.allocated_gpu_hours, 0.0)                   AS allocated_gpu_hours,
       COALESCE(agg.allocated_gpu_hours, 0.0)
           / NULLIF(COALESCE(pools.gpus, 0) * hours.capacity_hours, 0) AS utilization,
       COALESCE(agg.jobs_running, 0)                            AS jobs_running
FROM pools FULL OUTER JOIN agg ON agg.pool = pools.pool, hours;
