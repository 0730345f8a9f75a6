-- marts.node_hardware_loss: one row per node and calendar month (UTC) with any GPU-hours lost to hardware,
-- by the two definitions side by side, so "which nodes lost the most GPU-hours to hardware last month" has
-- one answer with both numbers:
--   down_gpu_hours      node down time with a hardware reason x the node's GPUs (capacity lost; its own
--                       count in a mixed fleet: cluster.yaml node_gpus, else gpus_per_node). A generic reason
--                       (Not responding) is hardware when its outage's cause is: the part its repair chain's
--                       drain names, or the hardware incident linked to it, whatever the incident's scope (a
--                       rack PDU trip: every node of the rack) — the availability mart's classification
--                       (models/reliability/node_availability.py, outage_causes), read from it. From Slurm
--                       node states (marts.node_availability_daily.down_hardware_hours) for the node-hours
--                       they cover; for the rest estimated from node-scope hardware incidents, from the
--                       incident's start until the node again completed a job (recovered_ts; $as_of while it
--                       has not), as the node_availability SLI estimates it. "Covered" is the availability
--                       mart's own decision (one definition): every row of marts.node_availability_daily is a
--                       node-day the history covers, its observed_hours (from midnight: every day counts from
--                       its midnight, the first one too — models/accounting_span.py) in service unless a state says down — so a node the history
--                       covers and never shows out was in service (0 h), as MTBF exposure and the SLI count
--                       it; only node-days without a row (no node-state history, days before it starts or
--                       after it ends — a missing dump) fall back to the incident estimate. An incident an operator labelled in
--                       incidents.csv keeps the scope of its evidence (label_source says who labelled it),
--                       so the incidents SREs label count here too; switch, storage and several-node
--                       operator incidents are not one node's fault.
--   job_lost_gpu_hours  work of job instances attributed to a hardware incident on the node
--                       (marts.job_failure_attribution + marts.instance_failure_attribution, lost_gpu_hours),
--                       in the month the instance ended; an incident on several of the job's nodes splits
--                       the loss evenly between them (the job's nodes inside the incident, else its nodes).
-- A month is the grain because the question is asked per month (a node-day grain is mostly zeros); sum the
-- rows for other windows. month_complete: every day of the month is a complete day (marts.day_coverage).
-- Parameters: $gpus_per_node INTEGER (GPUs of a node $gpu_nodes does not name), $gpu_nodes VARCHAR[] and
-- $gpu_counts INTEGER[] (parallel lists: each listed node's GPUs, cluster.yaml gpus_by_node; may be empty),
-- $as_of TIMESTAMPTZ (the data's one end, models/accounting_span.py counted_end: the moment open outages count to).
CREATE OR REPLACE TABLE marts.node_hardware_loss AS
WITH node_gpus AS (
    SELECT unnest($gpu_nodes::VARCHAR[]) AS node, unnest($gpu_counts::INTEGER[]) AS gpus
), covered AS (
    -- The span of each node-day the history covers, in epoch µs: observed_hours from the day's midnight
    -- (the mart's first day counts whole too; its last day may stop at the data's end).
    SELECT a.node, a.day,
           epoch_us(timezone('UTC', a.day::TIMESTAMP)) AS lo_us,
           a.observed_hours * 3.6e9 AS len_us
    FROM marts.node_availability_daily AS a
), state_down AS (
    SELECT node, date_trunc('month', day)::DATE AS month, sum(down_hardware_hours ORDER BY day) AS down_hours
    FROM marts.node_availability_daily
    WHERE source = 'node_states' AND down_hardware_hours > 0
    GROUP BY ALL
), node_incidents AS (
    SELECT incident_id, unnest(nodes) AS node, start_ts, coalesce(recovered_ts, $as_of::TIMESTAMPTZ) AS up_ts
    FROM marts.hw_incidents
    WHERE scope = 'node' AND core.is_failure_incident(cause_class)  -- not an operator-marked false positive
), incident_days AS (
    -- Each incident cut at UTC midnights: [lo, hi) of every day it spans, in epoch µs.
    SELECT i.node, d.day,
           greatest(epoch_us(i.start_ts), epoch_us(timezone('UTC', d.day::TIMESTAMP))) AS lo_us,
           least(epoch_us(i.up_ts), epoch_us(timezone('UTC', (d.day + 1)::TIMESTAMP))) AS hi_us
    FROM node_incidents AS i,
         LATERAL (SELECT unnest(generate_series(date_trunc('day', timezone('UTC', i.start_ts)),
                                                date_trunc('day', timezone('UTC', i.up_ts)), INTERVAL 1 DAY))::DATE
                  AS day) AS d
    WHERE i.up_ts > i.start_ts
), incident_down AS (
    -- Only the part of each day the node-state history does not cover (it measured the rest).
    SELECT i.node, date_trunc('month', i.day)::DATE AS month,
           sum(greatest(i.hi_us - i.lo_us, 0)
               -- (least/greatest skip NULLs: a day without a row must not look covered)
               - CASE WHEN c.node IS NULL THEN 0
                      ELSE greatest(least(i.hi_us, c.lo_us + c.len_us) - greatest(i.lo_us, c.lo_us), 0) END
               ORDER BY i.day, i.lo_us, i.hi_us) / 3.6e9
               AS down_hours
    FROM incident_days AS i LEFT JOIN covered AS c USING (node, day)
    GROUP BY ALL
), down AS (
    -- A node-month both measured and estimated (the history ends inside it) adds the two.
    SELECT node, month, sum(down_hours ORDER BY src) AS down_hours,
           CASE WHEN count(DISTINCT src) = 2 THEN 'node_states+incidents' ELSE any_value(src) END AS down_source
    FROM (SELECT node, month, down_hours, 'node_states' AS src FROM state_down
          UNION ALL
          SELECT node, month, down_hours, 'incidents' FROM incident_down WHERE down_hours > 1e-9)
    GROUP BY ALL
), killed AS (
    SELECT a.job_id, NULL::INTEGER AS instance_no, a.end_ts, a.lost_gpu_hours, a.incident_id, j.nodes AS job_nodes
    FROM marts.job_failure_attribution AS a JOIN core.jobs AS j USING (job_id)
    WHERE a.attribution = 'infrastructure' AND a.incident_id IS NOT NULL
    UNION ALL
    SELECT a.job_id, a.instance_no, a.end_ts, a.lost_gpu_hours, a.incident_id, i.nodes
    FROM marts.instance_failure_attribution AS a JOIN core.job_instances AS i USING (job_id, instance_no)
    WHERE a.attribution = 'infrastructure' AND a.incident_id IS NOT NULL
), killed_nodes AS (
    SELECT k.*, CASE WHEN len(list_intersect(h.nodes, k.job_nodes)) > 0 THEN list_intersect(h.nodes, k.job_nodes)
                     ELSE h.nodes END AS loss_nodes
    FROM killed AS k JOIN marts.hw_incidents AS h USING (incident_id)
), job_loss AS (
    SELECT unnest(loss_nodes) AS node, date_trunc('month', timezone('UTC', end_ts))::DATE AS month,
           coalesce(lost_gpu_hours, 0) / len(loss_nodes) AS lost, job_id, instance_no
    FROM killed_nodes
    WHERE end_ts IS NOT NULL AND len(loss_nodes) > 0
), job_month AS (
    SELECT node, month, count(*) AS jobs_killed, sum(lost ORDER BY job_id, instance_no) AS job_lost_gpu_hours FROM job_loss GROUP BY ALL
), incident_count AS (
    SELECT node, date_trunc('month', timezone('UTC', start_ts))::DATE AS month, count(DISTINCT incident_id) AS n
    FROM (SELECT incident_id, unnest(nodes) AS node, start_ts FROM marts.hw_incidents
          WHERE core.is_failure_incident(cause_class)) GROUP BY ALL
), keys AS (
    SELECT node, month FROM down UNION SELECT node, month FROM job_month
), months AS (
    SELECT date_trunc('month', day)::DATE AS month, count(*) FILTER (WHERE NOT partial) AS complete_days
    FROM marts.day_coverage GROUP BY ALL
)
SELECT k.node,
       k.month,                                                         -- first day of the calendar month
       strftime(k.month, '%Y-%m')                       AS period,
       coalesce(g.gpus, $gpus_per_node::INTEGER)        AS gpus_per_node,
       coalesce(d.down_hours, 0.0)                      AS down_hardware_hours,
       d.down_source,                                   -- node_states | incidents | node_states+incidents | NULL
       coalesce(d.down_hours, 0.0) * coalesce(g.gpus, $gpus_per_node::INTEGER) AS down_gpu_hours,
       coalesce(c.n, 0)                                 AS hw_incidents,
       coalesce(j.jobs_killed, 0)                       AS jobs_killed,
       coalesce(j.job_lost_gpu_hours, 0.0)              AS job_lost_gpu_hours,
       coalesce(m.complete_days = date_diff('day', k.month, (k.month + INTERVAL 1 MONTH)::DATE), FALSE) AS month_complete
FROM keys AS k
LEFT JOIN down AS d USING (node, month)
LEFT JOIN job_month AS j USING (node, month)
LEFT JOIN incident_count AS c USING (node, month)
LEFT JOIN months AS m USING (month)
LEFT JOIN node_gpus AS g ON g.node = k.node
ORDER BY k.month, greatest(coalesce(d.down_hours, 0.0) * coalesce(g.gpus, $gpus_per_node::INTEGER),
                           coalesce(j.job_lost_gpu_hours, 0.0)) DESC, k.node;
