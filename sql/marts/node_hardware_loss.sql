-- marts.node_hardware_loss: one row per node and calendar month (UTC) with any GPU-hours lost to hardware,
-- by the two definitions side by side, so "which nodes lost the most GPU-hours to hardware last month" has
-- one answer with both numbers:
--   down_gpu_hours      node down time with a hardware reason x the node's GPUs (capacity lost; its own
--                       count in a mixed fleet: cluster.yaml node_gpus, else gpus_per_node). From Slurm
--                       node states (marts.node_availability_daily.down_hardware_hours) for nodes they cover;
--                       for other nodes estimated from node-scope hardware incidents, from the incident's
--                       start until the node again completed a job (recovered_ts; $as_of while it has not),
--                       as the node_availability SLI estimates it. An incident an operator labelled in
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
-- $as_of TIMESTAMPTZ (end of the data).
CREATE OR REPLACE TABLE marts.node_hardware_loss AS
WITH node_gpus AS (
    SELECT unnest($gpu_nodes::VARCHAR[]) AS node, unnest($gpu_counts::INTEGER[]) AS gpus
), state_nodes AS (
    SELECT DISTINCT node FROM marts.node_availability_daily WHERE source = 'node_states'
), state_down AS (
    SELECT node, date_trunc('month', day)::DATE AS month, sum(down_hardware_hours) AS down_hours
    FROM marts.node_availability_daily
    WHERE source = 'node_states' AND down_hardware_hours > 0
    GROUP BY ALL
), node_incidents AS (
    SELECT incident_id, unnest(nodes) AS node, start_ts, coalesce(recovered_ts, $as_of::TIMESTAMPTZ) AS up_ts
    FROM marts.hw_incidents
    WHERE scope = 'node'
), incident_months AS (
    SELECT i.node, i.start_ts, i.up_ts,
           unnest(generate_series(date_trunc('month', timezone('UTC', i.start_ts)),
                                  date_trunc('month', timezone('UTC', i.up_ts)), INTERVAL 1 MONTH))::DATE AS month
    FROM node_incidents AS i
    WHERE i.up_ts > i.start_ts AND i.node NOT IN (SELECT node FROM state_nodes)
), incident_down AS (
    SELECT node, month,
           sum(greatest(epoch_us(least(up_ts, timezone('UTC', (month + INTERVAL 1 MONTH)::TIMESTAMP)))
                        - epoch_us(greatest(start_ts, timezone('UTC', month::TIMESTAMP))), 0)) / 3.6e9 AS down_hours
    FROM incident_months
    GROUP BY ALL
), down AS (
    SELECT node, month, down_hours, 'node_states' AS down_source FROM state_down
    UNION ALL
    SELECT node, month, down_hours, 'incidents' FROM incident_down WHERE down_hours > 0
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
    SELECT node, month, count(*) AS jobs_killed, sum(lost) AS job_lost_gpu_hours FROM job_loss GROUP BY ALL
), incident_count AS (
    SELECT node, date_trunc('month', timezone('UTC', start_ts))::DATE AS month, count(DISTINCT incident_id) AS n
    FROM (SELECT incident_id, unnest(nodes) AS node, start_ts FROM marts.hw_incidents) GROUP BY ALL
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
       d.down_source,                                                   -- node_states | incidents | NULL
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
