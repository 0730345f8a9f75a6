-- Questions SREs ask of the gpusre warehouse, one query each.
--
-- Open the snapshot (readable while a run writes):  duckdb -readonly demo/warehouse.snapshot.duckdb
-- then paste a query, or run them all:               duckdb -readonly demo/warehouse.snapshot.duckdb < examples/queries.sql
-- Every table and column is described in the file itself:
--   SELECT column_name, comment FROM duckdb_columns() WHERE table_name = 'hw_incidents';
--
-- "Last week" / "last 30 days" are relative to the data (the latest day the warehouse holds), not to
-- today, so every query answers on the demo and on an old trace alike. Each query starts with its
-- question and a `-- columns:` line (tests/test_example_queries.py runs every query on a simulated
-- warehouse and checks it returns rows with exactly those columns).


-- Q: Which nodes lost the most GPU-hours to hardware in the last 30 days of data?
-- Two definitions side by side, because they answer different questions: job work lost (GPU-hours of
-- the jobs hardware incidents killed, split evenly over each incident's nodes) and node down time
-- (node-hours out of service with a hardware reason, from Slurm node states).
-- columns: node, incidents, job_gpu_hours_lost, down_hardware_node_hours
WITH latest AS (SELECT max(end_day) AS day FROM core.jobs),
job_loss AS (
    SELECT node, count(*) AS incidents, sum(i.lost_gpu_hours / len(i.nodes)) AS job_gpu_hours_lost
    FROM marts.hw_incidents AS i, unnest(i.nodes) AS u(node)
    WHERE i.start_ts >= (SELECT day FROM latest) - INTERVAL 30 DAY AND len(i.nodes) > 0
    GROUP BY node),
down AS (
    SELECT node, sum(down_hardware_hours) AS down_hardware_node_hours
    FROM marts.node_availability_daily
    WHERE day > (SELECT day FROM latest) - INTERVAL 30 DAY
    GROUP BY node)
SELECT node, coalesce(j.incidents, 0) AS incidents, round(coalesce(j.job_gpu_hours_lost, 0), 1) AS job_gpu_hours_lost,
       round(coalesce(d.down_hardware_node_hours, 0), 1) AS down_hardware_node_hours
FROM job_loss AS j FULL OUTER JOIN down AS d USING (node)
WHERE coalesce(j.incidents, 0) > 0 OR coalesce(d.down_hardware_node_hours, 0) > 0
ORDER BY job_gpu_hours_lost DESC, down_hardware_node_hours DESC, node
LIMIT 20;


-- Q: What is the MTBF of GPUs (and of the cluster), with its 95 % interval?
-- mtbf_hours is node-hours in service per hardware incident; NULL (with a note) when there are too few
-- failures for a point estimate, the interval is still given.
-- columns: scope, component, failures, exposure_node_hours, mtbf_hours, ci_low_hours, ci_high_hours, note
SELECT scope, component, failures, round(exposure_hours) AS exposure_node_hours, round(mtbf_hours, 1) AS mtbf_hours,
       round(ci_low, 1) AS ci_low_hours, round(ci_high, 1) AS ci_high_hours, note
FROM marts.mtbf
WHERE period_type = 'all' AND (scope = 'cluster' OR (scope = 'component_class' AND component = 'gpu'))
ORDER BY scope;


-- Q: What were the top alert incidents of the last week (by GPU-hours lost, then by alerts)?
-- columns: incident_id, start_ts, n_alerts, n_nodes, root_cause_candidate, hw_incident_id, n_jobs_killed, lost_gpu_hours
SELECT incident_id, start_ts, n_alerts, n_nodes, root_cause_candidate, hw_incident_id, n_jobs_killed,
       round(lost_gpu_hours, 1) AS lost_gpu_hours
FROM marts.alert_incidents
WHERE start_ts >= (SELECT max(start_ts) FROM marts.alert_incidents) - INTERVAL 7 DAY
ORDER BY lost_gpu_hours DESC NULLS LAST, n_alerts DESC
LIMIT 10;


-- Q: Which jobs did a given hardware incident kill?
-- Replace the `target` CTE with the incident id you care about (SELECT 'inc-1a2b3c4d' AS incident_id):
-- as written it takes the incident that killed the most jobs. Every killed run: a job's final run
-- (instance_no NULL) and the earlier runs Slurm requeued (instance_no 1, 2, ...), as affected_jobs counts them.
-- columns: incident_id, job_id, instance_no, user, name, state, n_gpus, end_ts, lost_gpu_hours
WITH target AS (SELECT incident_id FROM marts.hw_incidents ORDER BY affected_jobs DESC, lost_gpu_hours DESC LIMIT 1),
     runs AS (SELECT incident_id, job_id, NULL::INTEGER AS instance_no, state, n_gpus, end_ts, lost_gpu_hours
              FROM marts.job_failure_attribution
              UNION ALL
              SELECT incident_id, job_id, instance_no, state, n_gpus, end_ts, lost_gpu_hours
              FROM marts.instance_failure_attribution)
SELECT a.incident_id, a.job_id, a.instance_no, j."user", j.name, a.state, a.n_gpus, a.end_ts,
       round(a.lost_gpu_hours, 2) AS lost_gpu_hours
FROM runs AS a
JOIN target USING (incident_id)
LEFT JOIN core.jobs AS j USING (job_id)
ORDER BY a.lost_gpu_hours DESC, a.job_id, a.instance_no;


-- Q: Which users were hit by infrastructure failures in the last 30 days of data?
-- Every killed run counts: a job's final run and the earlier runs Slurm requeued after a node failure
-- (marts.instance_failure_attribution), as the reports count them; a job killed twice is one job, two runs.
-- columns: user, jobs_killed, runs_killed, gpus_max, lost_gpu_hours, components
WITH runs AS (SELECT job_id, attribution, component, n_gpus, end_ts, lost_gpu_hours FROM marts.job_failure_attribution
              UNION ALL
              SELECT job_id, attribution, component, n_gpus, end_ts, lost_gpu_hours FROM marts.instance_failure_attribution)
SELECT j."user", count(DISTINCT a.job_id) AS jobs_killed, count(*) AS runs_killed, max(a.n_gpus) AS gpus_max,
       round(sum(a.lost_gpu_hours), 1) AS lost_gpu_hours,
       string_agg(DISTINCT a.component, ', ' ORDER BY a.component) AS components
FROM runs AS a
JOIN core.jobs AS j USING (job_id)
WHERE a.attribution = 'infrastructure'
  AND a.end_ts >= (SELECT max(end_day) FROM core.jobs) - INTERVAL 30 DAY
GROUP BY j."user"
ORDER BY lost_gpu_hours DESC, jobs_killed DESC;


-- Q: Why did jobs fail in the last 30 days of data (failure taxonomy: who is to blame, which part)?
-- Failed runs: the failed jobs' final runs and the earlier runs Slurm requeued (runs − jobs = requeued runs),
-- so the infrastructure total is the nightly report's.
-- columns: attribution, component, cause_class, jobs, runs, gpu_hours_lost, share_of_failed_runs
WITH runs AS (SELECT job_id, attribution, component, cause_class, end_ts, lost_gpu_hours FROM marts.job_failure_attribution
              UNION ALL
              SELECT job_id, attribution, component, cause_class, end_ts, lost_gpu_hours FROM marts.instance_failure_attribution)
SELECT attribution, coalesce(component, '-') AS component, coalesce(cause_class, '-') AS cause_class,
       count(DISTINCT job_id) AS jobs, count(*) AS runs, round(sum(lost_gpu_hours), 1) AS gpu_hours_lost,
       round(count(*) / sum(count(*)) OVER (), 3) AS share_of_failed_runs
FROM runs
WHERE end_ts >= (SELECT max(end_day) FROM core.jobs) - INTERVAL 30 DAY
GROUP BY ALL
ORDER BY runs DESC;


-- Q: What is the time to detect and the time to repair (MTTR) per component class?
-- Hours from the first evidence; the interval is the 95 % interval of the median (NULL with < 6 repairs).
-- columns: component_class, incidents, repaired, ongoing, mttd_p50_min, mttr_p50_hours, mttr_p90_hours, mttr_ci_low, mttr_ci_high
SELECT component_class, incidents, repaired, ongoing, round(mttd_hours_p50 * 60, 1) AS mttd_p50_min,
       round(mttr_hours_p50, 1) AS mttr_p50_hours, round(mttr_hours_p90, 1) AS mttr_p90_hours,
       round(ci_low, 1) AS mttr_ci_low, round(ci_high, 1) AS mttr_ci_high
FROM marts.repair_times
ORDER BY component_class = 'all' DESC, incidents DESC;


-- Q: Which are the worst nodes (hardware incidents, killed jobs), and which does gpusre flag as suspect?
-- marts.suspect_nodes holds the nodes far above the fleet over the last 28 days (robust z); this ranks
-- every node with hardware incidents so the list is never empty. Jobs killed are those that ran on the
-- node (marts.node_hardware_loss), not an incident's fleet-wide count: a leaf switch's 8 nodes did not
-- each kill every job the switch killed.
-- columns: node, hw_incidents, jobs_killed, suspect_score, recommended_action
WITH incidents AS (
    SELECT node, sum(hw_incidents) AS hw_incidents, sum(jobs_killed) AS jobs_killed
    FROM marts.node_hardware_loss
    GROUP BY node
    HAVING sum(hw_incidents) > 0)
SELECT node, hw_incidents, jobs_killed, round(s.score, 1) AS suspect_score, s.recommended_action
FROM incidents LEFT JOIN marts.suspect_nodes AS s USING (node)
ORDER BY s.score DESC NULLS LAST, hw_incidents DESC, jobs_killed DESC, node
LIMIT 20;


-- Q: What ETTR do the largest training runs get, with and without their queue wait?
-- ETTR = productive / wall-clock (first eligible → last end); without the queue it compares like for
-- like with the failure-only formula.
-- columns: run_id, user, name, n_gpus, interruptions, wallclock_hours, ettr, ettr_excl_queue
SELECT run_id, "user", name, n_gpus, interruptions, round(wallclock_s / 3600, 1) AS wallclock_hours, round(ettr, 3) AS ettr,
       round(productive_s / nullif(wallclock_s - queue_s, 0), 3) AS ettr_excl_queue
FROM marts.ettr_runs
WHERE n_gpus >= (SELECT quantile_disc(n_gpus, 0.9) FROM marts.ettr_runs)
ORDER BY n_gpus DESC, wallclock_s DESC
LIMIT 20;


-- Q: Where does every SLO stand today: value, objective, error budget left and burn rates?
-- columns: sli, day, value, objective, budget_remaining, burn_rate_short, burn_rate_long, status
SELECT sli, day, round(value, 4) AS value, objective, round(budget_remaining, 3) AS budget_remaining,
       round(burn_rate_short, 2) AS burn_rate_short, round(burn_rate_long, 2) AS burn_rate_long, status
FROM marts.slo_daily
WHERE status <> 'no_data' AND value IS NOT NULL  -- the latest day with a value (a partial last day may have none)
QUALIFY row_number() OVER (PARTITION BY sli ORDER BY day DESC) = 1
ORDER BY sli;


-- Q: How much does alert grouping compress what the on-call reads (last 7 days of alerts)?
-- columns: day, notifications, alerts, incidents, compression_ratio, flood_episodes
SELECT day, notifications, alerts, incidents, round(compression_ratio, 1) AS compression_ratio, flood_episodes
FROM marts.alert_daily
WHERE day > (SELECT max(day) FROM marts.alert_daily) - INTERVAL 7 DAY
ORDER BY day;


-- Q: Which alert rules are noise (fire often, never with a hardware incident or job impact)?
-- columns: alertname, fired, incidents, precision, flap_share, verdict
SELECT alertname, fired, incidents, round(precision, 2) AS precision, round(flap_share, 2) AS flap_share, verdict
FROM marts.alert_rule_quality
ORDER BY fired DESC
LIMIT 15;


-- Q: How much of the GPU capacity did useful work each day last week (goodput), and where did the rest go?
-- columns: day, capacity_gpu_hours, productive_gpu_hours, lost_gpu_hours, idle_gpu_hours, goodput
SELECT day, round(capacity_gpu_hours) AS capacity_gpu_hours, round(productive_gpu_hours) AS productive_gpu_hours,
       round(lost_failure_gpu_hours + lost_restart_gpu_hours, 1) AS lost_gpu_hours, round(idle_gpu_hours) AS idle_gpu_hours,
       round(goodput, 3) AS goodput
FROM marts.goodput_daily
WHERE day > (SELECT max(day) FROM marts.goodput_daily) - INTERVAL 7 DAY
ORDER BY day;


-- Q: Is any input late or missing (last record per source, days without records)?
-- columns: source_kind, files, files_refused, last_record_ts, n_empty_days
SELECT source_kind, files, files_refused, last_record_ts, n_empty_days
FROM marts.data_freshness
ORDER BY source_kind;
