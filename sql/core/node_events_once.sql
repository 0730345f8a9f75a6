-- core.node_events with each logged event once: one row per event the node logged, as the failure
-- marts read them. A line delivered twice is one event: stock rsyslog writes kernel messages to
-- both syslog and kern.log, a central copy sits beside a per-node one (often with other timestamp
-- precision: whole seconds beside microseconds), two relays forward one line into one file, and
-- journald's export repeats syslog's line a fraction of a second later. Without this, five Xid 63
-- lines counted ten crossed the repeat threshold and blamed the job on the GPU. Rule: the same
-- message on the same node within a second of the previous copy is a copy; the first copy (earliest,
-- then by file and line) stays. rsyslog's "message repeated N times: [...]" is another message
-- and stays (it stands for N more lines).
-- One run of a health check is one event too, though two programs log it: NHC's die() syslogs
-- "Health check failed:  <check>:  <message>", then exits non-zero, and slurmd, which ran it as its
-- HealthCheckProgram, logs "error: health_check failed: rc:N output:<NHC's output>" (Slurm's format)
-- when it sees the exit — the same verdict, after NHC has marked the node offline. A health-check
-- line is therefore keyed by the verdict it reports (from "Health check failed:", spaces and rsyslog's
-- #012/#011 control escapes folded), and slurmd's report beside NHC's own line of that verdict (either
-- first: relays reorder stamps) is a copy within NHC's run timeout (TIMEOUT, 30 s by default: no run
-- outlasts it) — far below any HealthCheckInterval (300 s typical), so two runs never pair. Two NHC
-- lines, or two slurmd lines, of one verdict stay two runs past the one-second copy rule.
-- The copy test runs over the key columns only and the events are read once, without it: the window
-- sorting every column of a year's events took twice as long. Lines other than health checks keep
-- their message as the key (the verdict is cut only from the few health-check lines).
WITH keyed AS (
    SELECT event_id, node, ts, source_file, line_no,
           CASE WHEN kind = 'health_check' AND strpos(message, 'Health check failed:') > 0
                THEN rtrim(regexp_replace(substr(message, strpos(message, 'Health check failed:')),
                                          '(\s|#01[12])+', ' ', 'g'))
                ELSE message END AS _verdict,
           CASE WHEN kind = 'health_check' THEN strpos(message, 'health_check failed: rc:') > 0
                ELSE false END AS _by_slurmd
    FROM core.node_events
),
ordered AS (
    SELECT event_id,
           ts - lag(ts) OVER w AS _since_copy,
           _by_slurmd <> lag(_by_slurmd) OVER w AS _other_logger
    FROM keyed
    WINDOW w AS (PARTITION BY node, _verdict ORDER BY ts, source_file, line_no)
),
copies AS (
    SELECT event_id FROM ordered
    WHERE _since_copy <= INTERVAL 1 SECOND OR (_other_logger AND _since_copy <= INTERVAL 30 SECOND)
)
SELECT * FROM core.node_events ANTI JOIN copies USING (event_id)
