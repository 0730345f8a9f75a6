-- raw.alert_notifications: one row per alert notification as a payload in landing/alerts showed it
-- (Alertmanager / Grafana webhook, Prometheus /api/v1/alerts dump, bare alert objects). Not
-- deduplicated: the same alert arrives again with every repeat_interval, its resolved notification,
-- every receiver and group. Received order = (source_file in name order, seq).
-- See gpusre.models.sources.alerts.parse.
-- Kept in the Parquet lake (gpusre.models.ingest.lake): lake.alert_notifications only declares the columns and
-- types; the warehouse reads the rows through the view raw.alert_notifications (same columns, same order).
CREATE TABLE IF NOT EXISTS lake.alert_notifications (
    source_file          VARCHAR NOT NULL,
    line_no              BIGINT NOT NULL,     -- physical line the payload starts on (1 for a .json document)
    payload_no           INTEGER NOT NULL,    -- 1-based index in a top-level JSON array of payloads, else 1
    alert_no             INTEGER NOT NULL,    -- 1-based index in alerts[] / data.alerts[]
    seq                  BIGINT NOT NULL,     -- 1-based received order within the file
    format               VARCHAR NOT NULL,    -- alertmanager | grafana | prometheus_api | alert
    received_at          TIMESTAMPTZ,         -- from a logger's timestamp before the JSON on the line, if any; a snapshot's file-name time, else its latest updatedAt
    receiver             VARCHAR,
    group_key            VARCHAR,
    payload_status       VARCHAR,             -- the payload's status (firing/resolved; 'success' for the API); a bare alert's status object as JSON text
    status               VARCHAR NOT NULL,    -- firing | resolved | pending (Prometheus API only)
    fingerprint          VARCHAR NOT NULL,    -- as sent, else Alertmanager's hash of the labels
    fingerprint_computed BOOLEAN NOT NULL,
    alertname            VARCHAR,
    starts_at            TIMESTAMPTZ NOT NULL, -- startsAt (activeAt for the Prometheus API), UTC
    ends_at              TIMESTAMPTZ,          -- endsAt; NULL for the zero time 0001-01-01T00:00:00Z
    labels               JSON NOT NULL,       -- the alert's labels object, as sent (minified)
    annotations          JSON,
    generator_url        VARCHAR,
    value                VARCHAR,             -- Prometheus API value, Grafana valueString / values
    template_id          BIGINT               -- Drain3 template of 'alertname: summary' (miner 'alerts'):
                                              -- summary = annotations summary, else title; else the
                                              -- description (annotations description, else message, else Error, else the summary)
);
-- Without a lake (the bare DDL), raw.alert_notifications reads the empty lake.alert_notifications; opening the warehouse with
-- gpusre.models.warehouse.connect points it at the Parquet files.
CREATE VIEW IF NOT EXISTS raw.alert_notifications AS SELECT * FROM lake.alert_notifications;

-- core.alerts: one row per alert occurrence = (fingerprint, starts_at), from every notification
-- of it. status 'resolved' when any notification of it was resolved (ends_at = the earliest
-- endsAt of those), else 'firing' with ends_at NULL: a firing notification's endsAt is only
-- Alertmanager's resolve-timeout guess. Pending-only alerts (Prometheus API) are left out.
-- Rebuilt from raw.alert_notifications by gpusre.models.sources.alerts.ingest.build_core_alerts.
CREATE TABLE IF NOT EXISTS core.alerts (
    alert_id            BIGINT NOT NULL,      -- unique  -- md5(fingerprint | starts_at epoch µs), 60 bits
    fingerprint         VARCHAR NOT NULL,
    alertname           VARCHAR,
    status              VARCHAR NOT NULL,     -- firing | resolved
    severity            VARCHAR,              -- labels.severity
    node                VARCHAR,              -- Slurm node the labels name (gpusre.models.alerts.nodes), else NULL
    target              VARCHAR,              -- switch / file system / device, or the unknown host
    target_label        VARCHAR,              -- which label target came from
    starts_at           TIMESTAMPTZ NOT NULL,
    ends_at             TIMESTAMPTZ,
    labels              JSON NOT NULL,        -- of the first notification received
    summary             VARCHAR,              -- annotations summary (else title) of the first notification
    description         VARCHAR,              -- annotations description (else message, else Error, else the summary)
    template_id         BIGINT,
    source_file         VARCHAR NOT NULL,     -- file of the notification that decided status/ends_at
    n_notifications     BIGINT NOT NULL,
    first_received_file VARCHAR NOT NULL
);

-- core.alert_templates: one row per Drain3 template of alert texts ('alertname: summary'; the alert
-- name verbatim, numbers, addresses and host names in the summary masked), with how many alerts
-- had it and when. Miner 'alerts' in raw.template_miners, so ids are stable across nights.
CREATE TABLE IF NOT EXISTS core.alert_templates (
    template_id   BIGINT NOT NULL,
    template      VARCHAR,
    example       VARCHAR,                     -- the text of its earliest alert
    alerts        BIGINT NOT NULL,
    first_seen_ts TIMESTAMPTZ,
    last_seen_ts  TIMESTAMPTZ
);
