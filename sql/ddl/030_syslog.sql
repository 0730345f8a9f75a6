-- raw.syslog_lines: one row per parsed node-log line (syslog, dmesg, journald), with its Drain3
-- template id and, for lines the event catalog recognizes, the event columns (NULL for noise).
-- Kept in the Parquet lake (gpusre.models.ingest.lake): lake.syslog_lines only declares the columns and
-- types; the warehouse reads the rows through the view raw.syslog_lines (same columns, same order).
CREATE TABLE IF NOT EXISTS lake.syslog_lines (
    source_file  VARCHAR NOT NULL,
    line_no      BIGINT NOT NULL,
    ts           TIMESTAMPTZ NOT NULL,     -- UTC
    host         VARCHAR,                  -- as printed (FQDN, case)
    node         VARCHAR,                  -- Slurm node name by cluster.yaml's alerts.nodes rules, else host's first label
    program      VARCHAR,
    pid          BIGINT,
    message      VARCHAR,
    format       VARCHAR,                  -- rfc3164, rfc5424, iso8601, dmesg_iso, journald_json, ...
    template_id  BIGINT,
    kind         VARCHAR,                  -- event kind from models/catalog/log_patterns.csv
    code         INTEGER,                  -- Xid / SXid code
    gpu_pci      VARCHAR,
    device_pci   VARCHAR,
    port         VARCHAR,
    component    VARCHAR,
    cause_class  VARCHAR,
    severity     VARCHAR,
    action       VARCHAR,
    pattern_id   VARCHAR,
    message_key  BIGINT                    -- lake only (not in the view): key of the masked message, see below
);
ALTER TABLE lake.syslog_lines ADD COLUMN IF NOT EXISTS message_key BIGINT;
-- Without a lake (the bare DDL), raw.syslog_lines reads the empty lake.syslog_lines; opening the warehouse with
-- gpusre.models.warehouse.connect points it at the Parquet files.
CREATE VIEW IF NOT EXISTS raw.syslog_lines AS SELECT * EXCLUDE (message_key) FROM lake.syslog_lines;

-- raw.syslog_message_templates: one row per distinct masked node-log message ever seen: its Drain3
-- template id. Parse steps run in parallel and cannot mine (ids depend on mining order), so lake rows
-- carry message_key (a stable 64-bit BLAKE2b of the masked text) and the publish step mines the new
-- keys in landing order; raw.syslog_lines shows template_id through this table. A key's id never
-- changes once written.
CREATE TABLE IF NOT EXISTS raw.syslog_message_templates (
    message_key  BIGINT NOT NULL,
    template_id  BIGINT NOT NULL
);

-- raw.template_miners: the persisted Drain3 state per miner ('syslog', later 'alerts'), so template
-- ids are stable across nightly runs. One row per miner; replaced in the ingest transaction.
CREATE TABLE IF NOT EXISTS raw.template_miners (
    miner       VARCHAR NOT NULL,
    state       BLOB NOT NULL,             -- deterministic JSON (gpusre.models.logs.templates)
    templates   BIGINT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

-- core.node_events: one row per recognized node event (see sql/core/node_events.sql), kept per
-- node-log file version (gpusre.models.ingest.version_summaries).
CREATE TABLE IF NOT EXISTS core.node_events (
    event_id     BIGINT NOT NULL,
    ts           TIMESTAMPTZ NOT NULL,
    node         VARCHAR,
    kind         VARCHAR NOT NULL,
    code         INTEGER,
    gpu_pci      VARCHAR,
    device_pci   VARCHAR,
    port         VARCHAR,
    component    VARCHAR,
    cause_class  VARCHAR,
    severity     VARCHAR,
    action       VARCHAR,
    template_id  BIGINT,
    message      VARCHAR,
    program      VARCHAR,
    source_file  VARCHAR NOT NULL,
    line_no      BIGINT NOT NULL
);

-- core.node_event_copies: one row per event of core.node_events that is a second copy of a logged
-- event (sql/core/node_event_copies.sql), kept in step with it per node from the earliest changed event
-- on (gpusre.models.logs.node_event_copies).
CREATE TABLE IF NOT EXISTS core.node_event_copies (
    event_id     BIGINT NOT NULL,
    node         VARCHAR,
    ts           TIMESTAMPTZ NOT NULL
);

-- core.node_event_copies_basis: one row: the core.node_events core.node_event_copies was last brought in
-- step with (row count and sum of event ids) and the copy rule's definition; a reader that finds
-- another works the copies out itself.
CREATE TABLE IF NOT EXISTS core.node_event_copies_basis (
    events        BIGINT NOT NULL,
    event_id_sum  HUGEINT NOT NULL,
    definition    VARCHAR NOT NULL
);

-- core.log_template_files: one row per node-log file (the version the ledger holds) and Drain3 template
-- of its lines: lines, nodes, first/last time, the first line's message and the first recognized
-- event's kind. core.log_templates sums these; kept per file version so a night reads only new files.
CREATE TABLE IF NOT EXISTS core.log_template_files (
    source_file    VARCHAR NOT NULL,
    template_id    BIGINT,
    lines          BIGINT NOT NULL,
    nodes          VARCHAR[] NOT NULL,
    first_seen_ts  TIMESTAMPTZ NOT NULL,
    last_seen_ts   TIMESTAMPTZ NOT NULL,
    example        VARCHAR,
    first_event_ts TIMESTAMPTZ,
    kind           VARCHAR
);
