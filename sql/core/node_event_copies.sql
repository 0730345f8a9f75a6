-- core.node_event_copies: one row per event of core.node_events that is a second copy of a logged
-- event (event_id, node, ts), so that readers take each logged event once
-- (sql/core/node_events_once.sql). A line delivered twice is one event: stock rsyslog writes kernel
-- messages to both syslog and kern.log, a central copy sits beside a per-node one (often with other
-- timestamp precision: whole seconds beside microseconds), two relays forward one line into one file,
-- and journald's export repeats syslog's line a fraction of a second later. Without this, five Xid 63
-- lines counted ten crossed the repeat threshold and blamed the job on the GPU. Rule: the same message
-- on the same node within a second of the previous copy is a copy; the first copy (earliest, then by
-- file and line) stays. rsyslog's "message repeated N times: [...]" is another message and stays (it
-- stands for N more lines).
-- One run of a health check is one event too, though two programs log it: NHC's die() syslogs
-- "Health check failed:  <check>:  <message>", then exits non-zero, and slurmd, which ran it as its
-- HealthCheckProgram, logs "error: health_check failed: rc:N output:<NHC's output>" (Slurm's format)
-- when it sees the exit — the same verdict, after NHC has marked the node offline. A health-check line
-- is therefore keyed by the verdict it reports (from "Health check failed:", spaces and rsyslog's
-- #012/#011 control escapes folded), and slurmd's report beside NHC's own line of that verdict (either
-- first: relays reorder stamps) is a copy within NHC's run timeout (TIMEOUT, 30 s by default: no run
-- outlasts it) — far below any HealthCheckInterval (300 s typical), so two runs never pair. Two NHC
-- lines, or two slurmd lines, of one verdict stay two runs past the one-second copy rule.
--
-- Kept per node from the earliest changed event on (gpusre.models.logs.node_event_copies): whether an
-- event is a copy depends only on the one before it of its node and key, and only when that one is at
-- most 30 s earlier. The relation `scope` (node, from_ts) names the nodes to redo and from when; the
-- events from 31 s before from_ts are read, the copies from from_ts on returned.
WITH keyed AS (
    SELECT e.event_id, e.node, e.ts, e.source_file, e.line_no, s.from_ts,
           CASE WHEN e.kind = 'health_check' AND strpos(e.message, 'Health check failed:') > 0
                THEN rtrim(regexp_replace(substr(e.message, strpos(e.message, 'Health check failed:')),
                                          '(\s|#01[12])+', ' ', 'g'))
                ELSE e.message END AS _verdict,
           CASE WHEN e.kind = 'health_check' THEN strpos(e.message, 'health_check failed: rc:') > 0
                ELSE false END AS _by_slurmd
    FROM core.node_events AS e
    JOIN scope AS s ON e.node IS NOT DISTINCT FROM s.node AND e.ts >= s.from_ts - INTERVAL 31 SECOND
),
ordered AS (
    SELECT event_id, node, ts, from_ts,
           ts - lag(ts) OVER w AS _since_copy,
           _by_slurmd <> lag(_by_slurmd) OVER w AS _other_logger
    FROM keyed
    WINDOW w AS (PARTITION BY node, _verdict ORDER BY ts, source_file, line_no)
)
SELECT event_id, node, ts FROM ordered
WHERE ts >= from_ts
  AND (_since_copy <= INTERVAL 1 SECOND OR (_other_logger AND _since_copy <= INTERVAL 30 SECOND))
