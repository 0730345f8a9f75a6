-- core.node_events: one row per recognized node event (an Xid, SXid, ECC, link, storage, OOM,
-- panic, slurmd … line), rebuilt from raw.syslog_lines. event_id is stable across runs: derived
-- from the line's file and number, so a rerun or a re-ingested neighbour file keeps the ids.
CREATE OR REPLACE TABLE core.node_events AS
SELECT ('0x' || left(md5(source_file || ':' || line_no::VARCHAR), 15))::BIGINT AS event_id,
       ts, node, kind, code, gpu_pci, device_pci, port, component, cause_class, severity, action,
       template_id, message, program, source_file, line_no
FROM raw.syslog_lines
WHERE kind IS NOT NULL
ORDER BY ts, node, source_file, line_no;

-- core.log_templates: one row per Drain3 template of the node logs: its text, how often and where
-- it was seen, and when first — a failure mode nobody catalogued shows up here as a new template.
-- Needs a relation _miner_templates(template_id, template) registered by the caller (the
-- persisted miner's templates).
CREATE OR REPLACE TABLE core.log_templates AS
WITH stats AS (
    SELECT template_id,
           any_value(message ORDER BY ts)   AS example,
           count(*)                         AS lines,
           count(DISTINCT node)             AS nodes,
           min(ts)                          AS first_seen_ts,
           max(ts)                          AS last_seen_ts,
           arg_min(source_file, ts)         AS first_source_file,
           bool_or(kind IS NOT NULL)        AS has_event,
           any_value(kind ORDER BY ts) FILTER (WHERE kind IS NOT NULL) AS kind
    FROM raw.syslog_lines
    GROUP BY template_id
)
SELECT s.template_id, t.template, s.example, s.lines, s.nodes, s.first_seen_ts, s.last_seen_ts,
       f.ingested_at AS first_ingested_at, s.has_event, s.kind
FROM stats AS s
LEFT JOIN _miner_templates AS t USING (template_id)
LEFT JOIN raw.ingested_files AS f ON f.source_file = s.first_source_file
ORDER BY s.template_id;
