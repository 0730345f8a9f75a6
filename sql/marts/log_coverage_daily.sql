-- marts.log_coverage_daily: one row per UTC day inside the node logs' span: the nodes that ran a
-- job that day, how many of them logged at least one line, and which did not. A silent node's log
-- shipping is broken (or the node is dead): a hardware fault there leaves no event, so a job it
-- kills is attributed 'unknown' or to the user. Nodes from core.jobs (the nodes a job held for any
-- part of the day; a running job up to its latest elapsed time), log nodes from raw.record_days
-- (per node-log file and day: the nodes that logged; a summary of raw.syslog_lines).
CREATE OR REPLACE TABLE marts.log_coverage_daily AS
WITH log_days AS (
    SELECT day, nodes FROM raw.record_days WHERE source_kind = 'syslog'
), span AS (
    SELECT min(day) AS first_day, max(day) AS last_day FROM log_days
), days AS (
    SELECT unnest(generate_series(first_day, last_day, INTERVAL 1 DAY))::DATE AS day
    FROM span WHERE first_day IS NOT NULL
), held AS (
    SELECT job_id, nodes, start_ts,
           coalesce(end_ts, start_ts + to_seconds(coalesce(elapsed_s, 0))) AS until_ts
    FROM core.jobs
    WHERE start_ts IS NOT NULL AND len(nodes) > 0
), held_days AS (
    -- held on day d: started before d ends, held until d began or later (UTC session time zone);
    -- each job's days generated from its own span (a range join of jobs x days cost 1.7 s on a year)
    SELECT unnest(generate_series(start_ts::DATE, until_ts::DATE, INTERVAL 1 DAY))::DATE AS day, nodes
    FROM held
), busy AS (
    SELECT DISTINCT h.day, unnest(h.nodes) AS node
    FROM held_days AS h
    WHERE h.day BETWEEN (SELECT first_day FROM span) AND (SELECT last_day FROM span)
), logging AS (
    SELECT DISTINCT day, unnest(nodes) AS node FROM log_days
), joined AS (
    SELECT b.day, b.node, l.node IS NOT NULL AS logged FROM busy AS b LEFT JOIN logging AS l USING (day, node)
)
SELECT d.day,
       count(j.node)                                            AS nodes_with_jobs,
       count(j.node) FILTER (WHERE j.logged)                    AS nodes_with_jobs_logging,
       count(j.node) FILTER (WHERE NOT j.logged)                AS n_silent_nodes,
       coalesce(list(j.node ORDER BY j.node) FILTER (WHERE NOT j.logged), []::VARCHAR[]) AS silent_nodes,
       (SELECT count(*) FROM logging AS l WHERE l.day = d.day)  AS nodes_logging
FROM days AS d
LEFT JOIN joined AS j USING (day)
GROUP BY d.day
ORDER BY d.day;
