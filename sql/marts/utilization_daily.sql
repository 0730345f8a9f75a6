-- marts.utilization_daily: one row per UTC day: GPU capacity, GPU-hours allocated to GPU jobs
-- (every started instance in core.job_instances, so a requeued job's first run counts too)
-- (n_gpus x overlap of [start_ts, COALESCE(end_ts, $as_of)] with [day, day + 1) UTC, so a job
-- spanning midnight is split across both days), their ratio, and how many GPU jobs overlapped.
-- PARTITIONED by day: rerunning a day replaces exactly that day's row.
-- Capacity: $capacity_gpus x the day's capacity hours, the one rule of models/accounting_span.py
-- (capacity_hours_expr, which goodput, node availability and the SLIs use): 24, but on the day of $as_of
-- (the accounting's last moment) only the hours up to it when more than 60 min (MAX_GAP_MINUTES) of the
-- day lie after it (the minutes after midnight a dump cut at 00:05 reaches; the day is flagged partial).
-- First day: the accounting's (the UTC day of $acct_from, models/accounting_span.py accounting_span's first
-- moment), as goodput_daily, node_availability_daily and slo_daily: no row before it, though a job that
-- started before the first dump's window overlaps those days (the dumps say nothing else about them).
-- Parameters: $max_gap_minutes DOUBLE (accounting_span.MAX_GAP_MINUTES), $day DATE, $capacity_gpus INTEGER (GPUs in the cluster: the sum of every node's GPUs,
-- cluster.yaml node_gpus over gpus_per_node), $as_of TIMESTAMPTZ
-- (end assumed for jobs still running and the accounting's last moment; a NULL $as_of leaves running
-- jobs out and the day's end uncut), $acct_from TIMESTAMPTZ (the accounting's first moment; NULL: no first day).
CREATE TABLE IF NOT EXISTS marts.utilization_daily (
    day                 DATE   NOT NULL,
    capacity_gpu_hours  DOUBLE,          -- $capacity_gpus * the day's capacity hours (24 unless partial)
    allocated_gpu_hours DOUBLE NOT NULL,
    utilization         DOUBLE,          -- allocated / capacity; NULL when capacity is 0 or unknown
    jobs_running        BIGINT NOT NULL  -- GPU jobs with a positive overlap with the day
);

-- the days before the first day go too: an earlier run may have written them before the dump that starts
-- the accounting later (or a re-landed one) moved its first day
DELETE FROM marts.utilization_daily
WHERE day = $day::DATE OR day < CAST(timezone('UTC', $acct_from::TIMESTAMPTZ) AS DATE);

INSERT INTO marts.utilization_daily BY NAME  -- by name: the partial column (models/day_coverage.py) is set afterwards
WITH bounds AS (
    -- explicit UTC so the session TimeZone setting cannot shift the day window
    SELECT timezone('UTC', $day::DATE::TIMESTAMP)       AS d0,
           timezone('UTC', ($day::DATE + 1)::TIMESTAMP) AS d1
), overlap AS (
    SELECT j.job_id, j.n_gpus,
           greatest(j.start_ts, b.d0)                                   AS s,
           least(COALESCE(j.end_ts, $as_of::TIMESTAMPTZ), b.d1)         AS e
    FROM core.job_instances AS j, bounds AS b
    WHERE j.n_gpus > 0
      AND j.start_ts IS NOT NULL
      AND j.start_ts < b.d1
      AND COALESCE(j.end_ts, $as_of::TIMESTAMPTZ) > b.d0
), covered AS (
    SELECT greatest(epoch_us(least(COALESCE($as_of::TIMESTAMPTZ, b.d1), b.d1)) - epoch_us(b.d0), 0) / 3.6e9 AS h
    FROM bounds AS b
), cap AS (
    SELECT $capacity_gpus::INTEGER * CASE WHEN h >= 24 - $max_gap_minutes / 60.0 THEN 24.0 ELSE h END AS capacity_gpu_hours
    FROM covered
), agg AS (
    SELECT COALESCE(sum(n_gpus::HUGEINT * (epoch_us(e) - epoch_us(s))) / 3.6e9, 0.0) AS allocated_gpu_hours,
           count(DISTINCT job_id) AS jobs_running  -- a job requeued within the day is one job
    FROM overlap
    WHERE e > s
)
SELECT $day::DATE                                              AS day,
       cap.capacity_gpu_hours,
       allocated_gpu_hours,
       allocated_gpu_hours / NULLIF(cap.capacity_gpu_hours, 0) AS utilization,
       jobs_running
FROM agg, cap
WHERE $acct_from::TIMESTAMPTZ IS NULL OR $day::DATE >= CAST(timezone('UTC', $acct_from::TIMESTAMPTZ) AS DATE);
