-- core.log_template_files: one row per node-log file version and Drain3 template of its lines, from
-- the relation `rows` (the columns of raw.syslog_lines over that version's lake files): lines, the
-- nodes that logged it, first/last time, the earliest line's message and the earliest recognized
-- event's time and kind. Kept per file version (gpusre.models.logs.node_event_tables); core.log_templates sums it.
-- Two levels, (file, template, node) then (file, template): the same result as one GROUP BY with
-- list(DISTINCT node), which cost 3x as much on a night of 10 M lines. Each node's earliest line
-- (among those arg_min may pick: a non-NULL value) carries its message and kind up to the second level.
SELECT source_file, template_id,
       sum(lines)::BIGINT                               AS lines,
       list_sort(coalesce(list(node) FILTER (WHERE node IS NOT NULL), [])) AS nodes,
       min(first_seen_ts)                               AS first_seen_ts,
       max(last_seen_ts)                                AS last_seen_ts,
       arg_min(example, example_line)                   AS example,  -- ties: the earlier line
       min(first_event_ts)                              AS first_event_ts,
       arg_min(kind, event_line)                        AS kind
FROM (
    SELECT source_file, template_id, node,
           count(*)                                     AS lines,
           min(ts)                                      AS first_seen_ts,
           max(ts)                                      AS last_seen_ts,
           arg_min(message, (ts, line_no))              AS example,
           min((ts, line_no)) FILTER (WHERE message IS NOT NULL) AS example_line,
           min(ts) FILTER (WHERE kind IS NOT NULL)      AS first_event_ts,
           arg_min(kind, (ts, line_no)) FILTER (WHERE kind IS NOT NULL) AS kind,
           min((ts, line_no)) FILTER (WHERE kind IS NOT NULL) AS event_line
    FROM rows
    GROUP BY source_file, template_id, node
) AS per_node
GROUP BY source_file, template_id
