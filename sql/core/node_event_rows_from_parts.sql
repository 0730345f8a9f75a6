-- The relation `rows` sql/core/node_events.sql reads, for node-log file versions just parsed: their event
-- rows (relation `parts`: the lines the catalog recognized, staged by the parse,
-- gpusre.models.sources.syslog.summary_parts) instead of their lake files. The template id is looked up
-- as the raw.syslog_lines view does (the lines' own template_id is NULL since parses run in parallel).
SELECT p.source_file, p.line_no, p.ts, p.node, p.kind, p.code, p.gpu_pci, p.device_pci, p.port, p.component,
       p.cause_class, p.severity, p.action, p.message, p.program, m.template_id
FROM parts AS p
LEFT JOIN raw.syslog_message_templates AS m ON m.message_key = p.message_key
