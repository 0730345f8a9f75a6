-- core.node_events with each logged event once: one row per event the node logged, as the failure
-- marts read them. A line delivered twice is one event: stock rsyslog writes kernel messages to
-- both syslog and kern.log, a central copy sits beside a per-node one (often with other timestamp
-- precision: whole seconds beside microseconds), two relays forward one line into one file, and
-- journald's export repeats syslog's line a fraction of a second later. Without this, five Xid 63
-- lines counted ten crossed the repeat threshold and blamed the job on the GPU. Rule: the same
-- message on the same node within a second of the previous copy is a copy; the first copy (earliest,
-- then by file and line) stays. rsyslog's "message repeated N times: [...]" is another message
-- and stays (it stands for N more lines).
-- The copy test runs over the key columns only and the events are read once, without it: the window
-- sorting every column of a year's events took twice as long.
WITH ordered AS (
    SELECT event_id, ts - lag(ts) OVER (PARTITION BY node, message ORDER BY ts, source_file, line_no) AS _since_copy
    FROM core.node_events
),
copies AS (
    SELECT event_id FROM ordered WHERE _since_copy <= INTERVAL 1 SECOND
)
SELECT * FROM core.node_events ANTI JOIN copies USING (event_id)
