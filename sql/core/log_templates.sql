-- core.log_templates: one row per Drain3 template of the node logs: its text, how often and where
-- it was seen, and when first — a failure mode nobody catalogued shows up here as a new template.
-- Sums core.log_template_files (one row per file and template), so it costs the number of
-- file-template pairs, not of lines. Needs a relation _miner_templates(template_id, template)
-- registered by the caller (the persisted miner's templates).
CREATE OR REPLACE TABLE core.log_templates AS
WITH stats AS (
    SELECT template_id,
           arg_min(example, (first_seen_ts, source_file)) AS example,  -- ties: by file name, as a line order
           sum(lines)::BIGINT                       AS lines,
           min(first_seen_ts)                       AS first_seen_ts,
           max(last_seen_ts)                        AS last_seen_ts,
           arg_min(source_file, (first_seen_ts, source_file)) AS first_source_file,
           bool_or(kind IS NOT NULL)                AS has_event,
           arg_min(kind, (first_event_ts, source_file)) AS kind
    FROM core.log_template_files
    GROUP BY template_id
), nodes AS (
    SELECT template_id, count(DISTINCT node) AS nodes
    FROM (SELECT template_id, unnest(nodes) AS node FROM core.log_template_files)
    GROUP BY template_id
)
SELECT s.template_id, t.template, s.example, s.lines, coalesce(n.nodes, 0) AS nodes, s.first_seen_ts,
       s.last_seen_ts, f.ingested_at AS first_ingested_at, s.has_event, s.kind
FROM stats AS s
LEFT JOIN nodes AS n ON n.template_id IS NOT DISTINCT FROM s.template_id
LEFT JOIN _miner_templates AS t ON t.template_id = s.template_id
LEFT JOIN raw.ingested_files AS f ON f.source_file = s.first_source_file
ORDER BY s.template_id;
