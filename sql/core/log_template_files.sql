-- core.log_template_files: one row per node-log file version and Drain3 template of its lines, from
-- the relation `rows` (the columns of raw.syslog_lines over that version's lake files): lines, the
-- nodes that logged it, first/last time, the earliest line's message and the earliest recognized
-- event's time and kind. Kept per file version (gpusre.models.logs.node_event_tables); core.log_templates sums it.
SELECT source_file, template_id,
       count(*)                                         AS lines,
       list_sort(coalesce(list(DISTINCT node) FILTER (WHERE node IS NOT NULL), [])) AS nodes,
       min(ts)                                          AS first_seen_ts,
       max(ts)                                          AS last_seen_ts,
       arg_min(message, (ts, line_no))                  AS example,  -- ties: the earlier line
       min(ts) FILTER (WHERE kind IS NOT NULL)          AS first_event_ts,
       arg_min(kind, (ts, line_no)) FILTER (WHERE kind IS NOT NULL) AS kind
FROM rows
GROUP BY source_file, template_id
