-- marts.alert_incident_scopes: one row per (UTC start day, scope) of marts.alert_incidents: how many
-- alert incidents of that scope (node, rack, leaf switch, ...) began that day, their alerts (and alerts
-- per incident), how many
-- were part of a flood or linked to a hardware incident, the jobs they killed and the GPU-hours lost
-- (NULL without Slurm accounting: unknown, not 0).
CREATE OR REPLACE TABLE marts.alert_incident_scopes AS
SELECT CAST(timezone('UTC', start_ts) AS DATE) AS day, scope,
       count(*)::BIGINT AS incidents, sum(n_alerts)::BIGINT AS alerts, sum(n_alerts) / count(*) AS alerts_per_incident,
       count(*) FILTER (WHERE in_flood)::BIGINT AS in_flood,
       count(*) FILTER (WHERE hw_incident_id IS NOT NULL)::BIGINT AS with_hw_incident,
       sum(n_jobs_killed)::BIGINT AS jobs_killed,
       sum(lost_gpu_hours)::DOUBLE AS lost_gpu_hours
FROM marts.alert_incidents
GROUP BY ALL
ORDER BY day, incidents DESC, alerts DESC, scope;
