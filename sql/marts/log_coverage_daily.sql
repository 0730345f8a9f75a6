-- marts.log_coverage_daily: one row per UTC day inside the node logs' span: the nodes that ran a
-- job that day, how many of them logged at least one line, and which did not. A silent node's log
-- shipping is broken (or the node is dead): a hardware fault there leaves no event, so a job it
-- kills is attributed 'unknown' or to the user. Nodes from core.jobs (the nodes a job held for any
-- part of the day; a running job up to its latest elapsed time), log nodes from raw.record_days
-- (per node-log file and day: the nodes that logged; a summary of raw.syslog_lines).
--
-- A node whose log STOPS part-way through the day while it still runs a job is as blind after its
-- last line as a silent node is all day (probe: gpu16's log ended 12:10, its job ran to 23:00).
-- stopped_nodes names it when, after its last line of the day, it held a job for more than
-- stop_gap AND the fleet's typical node (the median of the nodes' last lines that day, halfway
-- between the middle two on an even count: one late logger does not move it) still logged more than stop_gap after it AND the silence is longer than
-- quiet_factor of the node's own mean interval between lines that day. The last two keep quiet
-- healthy nodes unflagged: a node that logs a dozen lines a day ends its day hours before midnight
-- like the rest of the fleet (no gap to the median), and a node that logs twice a day has gaps of
-- hours as its normal rhythm. A node's last line is the latest last_ts of the files holding its
-- lines that day: exact for per-node files, an upper bound for a central file shared by many nodes
-- (raw.record_days has no per-node time), so a central file never flags a node falsely — it only
-- flags its nodes when the whole file stopped.
--
-- A host outside cluster.yaml's node list that logged (an address a relay printed, a name the host
-- -> node rule does not know) is no node: its lines are loaded under that host, but it is named in
-- outside_hosts — often a node whose alias is missing (cluster.yaml node_aliases), which then looks
-- silent — and counts neither in nodes_logging nor in the fleet's median last line. The node list is
-- the session variable gpusre_fleet (VARCHAR[], set by the caller: SET VARIABLE gpusre_fleet = ...);
-- unset or empty: no list, every host that logged is a node, as without cluster.yaml `nodes`.
CREATE OR REPLACE TABLE marts.log_coverage_daily AS
WITH params AS (
    -- stop_gap: an hour is twelve NHC runs and far beyond syslog's delivery lag; quiet_factor: a
    -- node with lines at a steady rate stays silent for 3 of its mean intervals with probability
    -- e^-3 = 5 % at most once a day — and the fleet-median condition must hold as well.
    SELECT INTERVAL 1 HOUR AS stop_gap, 3.0 AS quiet_factor
), fleet AS (
    SELECT coalesce(getvariable('gpusre_fleet'), []::VARCHAR[])::VARCHAR[] AS nodes
), log_days AS (
    SELECT day, nodes, records, first_ts, last_ts FROM raw.record_days WHERE source_kind = 'syslog'
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
    SELECT unnest(generate_series(start_ts::DATE, until_ts::DATE, INTERVAL 1 DAY))::DATE AS day, nodes,
           job_id, until_ts
    FROM held
), busy_jobs AS (
    SELECT h.day, unnest(h.nodes) AS node, h.job_id,
           least(h.until_ts, h.day + INTERVAL 1 DAY) AS held_until_ts   -- held within the day
    FROM held_days AS h
    WHERE h.day BETWEEN (SELECT first_day FROM span) AND (SELECT last_day FROM span)
), busy AS (
    SELECT DISTINCT day, node FROM busy_jobs
), fleet_nodes AS (
    SELECT DISTINCT unnest(nodes) AS node FROM fleet
), host_lines AS (
    -- a hash lookup, not list_contains: scanning the 2,000 names per (day, host) row cost 1.6 CPU-s a year
    SELECT l.day, l.node, l.records, l.first_ts, l.last_ts,
           (SELECT len(nodes) = 0 FROM fleet) OR l.node IN (SELECT node FROM fleet_nodes) AS listed
    FROM (SELECT day, unnest(nodes) AS node, records, first_ts, last_ts FROM log_days) AS l
), node_lines AS (
    SELECT day, node, records, first_ts, last_ts FROM host_lines WHERE listed
), outside AS (
    SELECT day, count(DISTINCT node) AS n_outside_hosts, list(DISTINCT node ORDER BY node) AS outside_hosts
    FROM host_lines WHERE NOT listed GROUP BY ALL
), logging AS (
    SELECT day, node, max(last_ts) AS last_line_ts, min(first_ts) AS first_line_ts,
           sum(records) AS records
    FROM node_lines GROUP BY ALL
), fleet_last AS (
    SELECT day, median(last_line_ts) AS fleet_last_ts FROM logging GROUP BY ALL
), joined AS (
    SELECT b.day, b.node, l.node IS NOT NULL AS logged FROM busy AS b LEFT JOIN logging AS l USING (day, node)
), stopped AS (
    -- per node and day the job it held latest after its last line
    SELECT j.day, l.node, l.last_line_ts, arg_max(j.job_id, j.held_until_ts) AS job_id,
           max(j.held_until_ts) AS held_until_ts
    FROM busy_jobs AS j
    JOIN logging AS l USING (day, node)
    JOIN fleet_last AS f USING (day)
    CROSS JOIN params AS p
    WHERE j.held_until_ts - l.last_line_ts > p.stop_gap
      AND f.fleet_last_ts - l.last_line_ts > p.stop_gap
      AND epoch(j.held_until_ts) - epoch(l.last_line_ts)
          > p.quiet_factor * (epoch(l.last_line_ts) - epoch(l.first_line_ts)) / greatest(l.records - 1, 1)
    GROUP BY ALL
), stopped_days AS (
    SELECT day, count(*) AS n_stopped_nodes,
           list({'node': node, 'last_line_ts': last_line_ts, 'job_id': job_id, 'held_until_ts': held_until_ts}
                ORDER BY node) AS stopped_nodes
    FROM stopped GROUP BY ALL
), per_day AS (
    SELECT d.day,
           count(j.node)                                            AS nodes_with_jobs,
           count(j.node) FILTER (WHERE j.logged)                    AS nodes_with_jobs_logging,
           count(j.node) FILTER (WHERE NOT j.logged)                AS n_silent_nodes,
           coalesce(list(j.node ORDER BY j.node) FILTER (WHERE NOT j.logged), []::VARCHAR[]) AS silent_nodes,
           (SELECT count(*) FROM logging AS l WHERE l.day = d.day)  AS nodes_logging
    FROM days AS d
    LEFT JOIN joined AS j USING (day)
    GROUP BY d.day
)
SELECT p.*,
       coalesce(s.n_stopped_nodes, 0) AS n_stopped_nodes,
       coalesce(s.stopped_nodes, []::STRUCT(node VARCHAR, last_line_ts TIMESTAMPTZ, job_id VARCHAR,
                                            held_until_ts TIMESTAMPTZ)[]) AS stopped_nodes,
       coalesce(o.n_outside_hosts, 0) AS n_outside_hosts,
       coalesce(o.outside_hosts, []::VARCHAR[]) AS outside_hosts
FROM per_day AS p
LEFT JOIN stopped_days AS s USING (day)
LEFT JOIN outside AS o USING (day)
ORDER BY p.day;
