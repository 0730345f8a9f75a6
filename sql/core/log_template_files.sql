-- core.log_template_files: one row per node-log file version and Drain3 template of its lines, from
-- the relation `rows` (the columns of raw.syslog_lines over that version's lake files): lines, the
-- nodes that logged it, first/last time, the earliest line's message and the earliest recognized
-- event's time and kind. Kept per file version (gpusre.models.logs.node_event_tables); core.log_templates sums it.
-- Two GROUP BYs: per node first, so that a template's list of distinct nodes is a plain list of
-- the first level's nodes (list(DISTINCT) per group took 1.1 of 1.7 s on a night of 10 M lines).
SELECT source_file, template_id,
       sum(lines)::BIGINT                                             AS lines,
       list_sort(coalesce(list(node) FILTER (WHERE node IS NOT NULL), [])) AS nodes,
       min(first_seen_ts)                                             AS first_seen_ts,
       max(last_seen_ts)                                              AS last_seen_ts,
       arg_min(example, example_at)                                   AS example,
       min(first_event_ts)                                            AS first_event_ts,
       arg_min(kind, kind_at)                                         AS kind
FROM (
    SELECT source_file, template_id, node,
           count(*)                                                   AS lines,
           min(ts)                                                    AS first_seen_ts,
           max(ts)                                                    AS last_seen_ts,
           -- arg_min skips a NULL message: its place is the earliest line that has one.
           min((ts, line_no)) FILTER (WHERE message IS NOT NULL)      AS example_at,
           arg_min(message, (ts, line_no))                            AS example,
           min(ts) FILTER (WHERE kind IS NOT NULL)                    AS first_event_ts,
           min((ts, line_no)) FILTER (WHERE kind IS NOT NULL)         AS kind_at,
           arg_min(kind, (ts, line_no)) FILTER (WHERE kind IS NOT NULL) AS kind
    FROM rows
    GROUP BY source_file, template_id, node
) AS per_node
GROUP BY source_file, template_id
