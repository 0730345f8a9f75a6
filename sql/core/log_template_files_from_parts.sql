-- core.log_template_files of node-log file versions just parsed, from their template parts (relation
-- `parts`: per file and masked message, staged by the parse, gpusre.models.sources.syslog.summary_parts)
-- instead of their lake files. Same rows as sql/core/log_template_files.sql over the lines: a template
-- is the union of its masked messages' parts, its earliest line the earliest of their earliest lines.
SELECT p.source_file, m.template_id,
       sum(p.lines)::BIGINT                                         AS lines,
       list_sort(coalesce(list_distinct(flatten(list(p.nodes))), [])) AS nodes,
       min(p.first_seen_ts)                                         AS first_seen_ts,
       max(p.last_seen_ts)                                          AS last_seen_ts,
       arg_min(p.example, (p.first_seen_ts, p.example_line_no))     AS example,
       min(p.first_event_ts)                                        AS first_event_ts,
       arg_min(p.kind, (p.first_event_ts, p.event_line_no)) FILTER (WHERE p.kind IS NOT NULL) AS kind
FROM parts AS p
LEFT JOIN raw.syslog_message_templates AS m ON m.message_key = p.message_key
GROUP BY p.source_file, m.template_id
