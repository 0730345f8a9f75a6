-- Slurm node-state history (landing/slurm_events): sacctmgr show event -P dumps and sinfo -R snapshots.

-- raw.slurm_events: one row per event line as one file showed it (lossless, not deduplicated: the
-- same event appears in every overlapping nightly dump). Node events have node_name/nodes; cluster
-- events (slurmdbd's "Cluster Registered TRES" and controller-down records) have cluster_nodes.
-- Kept in the Parquet lake (gpusre.models.ingest.lake): lake.slurm_events only declares the columns and
-- types; the warehouse reads the rows through the view raw.slurm_events (same columns, same order).
CREATE TABLE IF NOT EXISTS lake.slurm_events (
    source_file     VARCHAR NOT NULL,
    line_no         BIGINT NOT NULL,
    source_format   VARCHAR NOT NULL,     -- 'sacctmgr' | 'sinfo'
    event_type      VARCHAR NOT NULL,     -- 'node' | 'cluster'
    cluster         VARCHAR,
    node_name       VARCHAR,              -- NodeName as printed
    cluster_nodes   VARCHAR,              -- ClusterNodes hostlist as printed
    nodes           VARCHAR[],            -- expanded NodeName (node events) / ClusterNodes (cluster events)
    start_ts        TIMESTAMPTZ NOT NULL, -- UTC
    end_ts          TIMESTAMPTZ,          -- NULL: ongoing ('Unknown')
    duration_s      BIGINT,               -- Duration (up to the dump time for an ongoing event)
    state           VARCHAR,              -- normalized: DOWN, DRAIN, FAIL, MAINT, REBOOT, ERROR, ...
    state_text      VARCHAR,              -- State as printed: 'DOWN*', 'DRNG', 'IDLE+DRAIN', 'drained'
    state_raw       BIGINT,               -- StateRaw
    not_responding  BOOLEAN,
    reason          VARCHAR,
    user_name       VARCHAR,              -- from 'root(0)'
    uid             BIGINT,
    cpus            BIGINT,
    tres            VARCHAR,
    observed_ts     TIMESTAMPTZ,          -- sinfo snapshot time; start + Duration of an ongoing sacctmgr event
    raw_line        VARCHAR
);
-- Without a lake (the bare DDL), raw.slurm_events reads the empty lake.slurm_events; opening the warehouse with
-- gpusre.models.warehouse.connect points it at the Parquet files.
CREATE VIEW IF NOT EXISTS raw.slurm_events AS SELECT * FROM lake.slurm_events;

-- raw.slurm_event_snapshots: one row per sinfo -R snapshot file (also when it listed no node), so
-- that a node that stops being listed is known to be back in service.
CREATE TABLE IF NOT EXISTS raw.slurm_event_snapshots (
    source_file   VARCHAR NOT NULL,
    observed_ts   TIMESTAMPTZ NOT NULL,   -- the snapshot time (file mtime at ingestion)
    nodes_listed  BIGINT NOT NULL
);

-- core.node_states: one row per node event (node x start_ts is unique), its latest version across
-- all dumps; rebuilt in full from raw.slurm_events. Every row is time out of service.
CREATE TABLE IF NOT EXISTS core.node_states (
    node                VARCHAR NOT NULL,
    cluster             VARCHAR,
    state               VARCHAR,           -- normalized state (raw.slurm_events.state)
    state_text          VARCHAR,
    not_responding      BOOLEAN,
    start_ts            TIMESTAMPTZ NOT NULL,
    end_ts              TIMESTAMPTZ,       -- NULL: still ongoing at the last dump
    end_source          VARCHAR,           -- 'slurm' (TimeEnd) | 'sinfo_absent' (first snapshot no longer listing it) | NULL
    reason              VARCHAR,
    "user"              VARCHAR,
    uid                 BIGINT,
    reason_template_id  BIGINT,            -- Drain3 template of the reason (miner 'slurm_reasons')
    reason_template     VARCHAR,
    reason_class        VARCHAR,           -- models/catalog/drain_reasons.csv (gpu_xid, network, not_responding, ...)
    reason_component    VARCHAR,           -- component_classes.csv vocabulary (gpu, gpu_memory, nvlink, network, ...)
    availability_class  VARCHAR,           -- hardware | maintenance | health_check | software | unknown
    source_format       VARCHAR NOT NULL,  -- 'sacctmgr' | 'sinfo'
    source_file         VARCHAR NOT NULL,  -- the winning line
    line_no             BIGINT NOT NULL
);

-- core.cluster_events: one row per cluster event (cluster x start_ts), latest version. Not node
-- outages: registered-TRES periods (the node inventory) and controller-down periods.
CREATE TABLE IF NOT EXISTS core.cluster_events (
    cluster        VARCHAR,
    start_ts       TIMESTAMPTZ NOT NULL,
    end_ts         TIMESTAMPTZ,
    state_raw      BIGINT,
    reason         VARCHAR,
    cpus           BIGINT,
    tres           VARCHAR,
    cluster_nodes  VARCHAR,
    nodes          VARCHAR[],
    n_nodes        INTEGER,
    source_file    VARCHAR NOT NULL,
    line_no        BIGINT NOT NULL
);

-- core.node_state_reasons: one row per reason template.
CREATE TABLE IF NOT EXISTS core.node_state_reasons (
    template_id         BIGINT,
    template            VARCHAR,
    example             VARCHAR,           -- the most frequent reason text of the template
    reason_class        VARCHAR,           -- most frequent class of its events
    reason_component    VARCHAR,
    availability_class  VARCHAR,
    events              BIGINT,
    nodes               BIGINT,
    node_hours          DOUBLE,            -- sum of event durations (ongoing ones up to as_of), overlaps NOT merged
    first_start_ts      TIMESTAMPTZ,
    last_start_ts       TIMESTAMPTZ
);

-- marts.node_availability_daily: one row per node x UTC day (full rebuild, not partitioned).
CREATE TABLE IF NOT EXISTS marts.node_availability_daily (
    day                      DATE NOT NULL,
    node                     VARCHAR NOT NULL,
    observed_hours           DOUBLE,       -- 24 except the day of as_of
    in_service_hours         DOUBLE,
    down_hours               DOUBLE,       -- union of the node's events (overlaps merged)
    down_hardware_hours      DOUBLE,
    down_maintenance_hours   DOUBLE,       -- incl. any down time inside cluster.yaml maintenance windows
    down_health_check_hours  DOUBLE,
    down_other_hours         DOUBLE,       -- software + unknown
    source                   VARCHAR       -- 'node_states' | 'assumed_in_service' (no event that day)
);

-- marts.drain_reasons: one row per reason class x reason template, ranked by node-hours lost.
CREATE TABLE IF NOT EXISTS marts.drain_reasons (
    rank                BIGINT,
    reason_class        VARCHAR,
    availability_class  VARCHAR,
    component           VARCHAR,
    template_id         BIGINT,
    template            VARCHAR,
    example             VARCHAR,
    events              BIGINT,
    nodes               BIGINT,
    node_hours_lost     DOUBLE,            -- attributed once per hour (adds up to node_availability_daily.down_hours)
    share_node_hours    DOUBLE,
    ongoing_events      BIGINT,
    first_start_ts      TIMESTAMPTZ,
    last_start_ts       TIMESTAMPTZ
);

-- marts.incident_repairs: one row per hardware incident (marts.hw_incidents) with the node outage it
-- caused: the first outage (merged node states) of its own nodes starting 30 min before to 24 h after
-- the incident. (Rebuilt in full by CREATE OR REPLACE; this DDL documents the columns.)
CREATE TABLE IF NOT EXISTS marts.incident_repairs (
    incident_id         VARCHAR,
    component           VARCHAR,
    component_class     VARCHAR,           -- catalog/component_classes.csv, as MTBF
    scope               VARCHAR,           -- node | leaf_switch | cluster | nodes
    incident_start_ts   TIMESTAMPTZ,
    nodes               VARCHAR[],
    linked_nodes        BIGINT,
    drain_start_ts      TIMESTAMPTZ,       -- first linked node out of service
    back_in_service_ts  TIMESTAMPTZ,       -- last linked node back (NULL while any is still out)
    hours_to_detect     DOUBLE,            -- drain start - incident start (>= 0)
    hours_to_repair     DOUBLE,            -- repaired_ts - incident start (first evidence)
    repair_state        VARCHAR,           -- repaired | ongoing | not_drained | no_nodes
    repair_source       VARCHAR,           -- node_states | health_checks | job_completed
    repaired_ts         TIMESTAMPTZ,       -- every node back in service (or the fallback's end)
    drain_reason_class  VARCHAR,
    drain_reason        VARCHAR
);

-- marts.repair_times: one row per component class (the classes MTBF uses), plus 'all'.
CREATE TABLE IF NOT EXISTS marts.repair_times (
    component_class   VARCHAR,
    incidents         BIGINT,
    linked_incidents  BIGINT,
    repaired          BIGINT,
    ongoing           BIGINT,              -- right-censored: left out of the quantiles
    mttd_hours_p50    DOUBLE,
    mttd_hours_p90    DOUBLE,
    mttr_hours_p50    DOUBLE,
    mttr_hours_p90    DOUBLE,
    mttr_hours_mean   DOUBLE,
    ci_low            DOUBLE,              -- distribution-free 95 % interval of the median time to repair
    ci_high           DOUBLE,
    from_node_states  BIGINT,              -- repairs timed by node states (the rest: repair_source fallbacks)
    note              VARCHAR
);

-- marts.repair_times_monthly: the repair_times summary per month of the incidents' start (MTTR trend).
CREATE TABLE IF NOT EXISTS marts.repair_times_monthly (
    period            VARCHAR,             -- YYYY-MM
    component_class   VARCHAR,
    incidents         BIGINT,
    linked_incidents  BIGINT,
    repaired          BIGINT,
    ongoing           BIGINT,
    mttd_hours_p50    DOUBLE,
    mttd_hours_p90    DOUBLE,
    mttr_hours_p50    DOUBLE,
    mttr_hours_p90    DOUBLE,
    mttr_hours_mean   DOUBLE,
    ci_low            DOUBLE,
    ci_high           DOUBLE,
    from_node_states  BIGINT,
    note              VARCHAR
);

-- marts.availability_by_component: one row per period (all, month) and component class ('all' =
-- the cluster): 1 - unplanned down node-hours of that class / scheduled node-hours.
CREATE TABLE IF NOT EXISTS marts.availability_by_component (
    period_type           VARCHAR,
    period                VARCHAR,
    component_class       VARCHAR,
    down_node_hours       DOUBLE,
    scheduled_node_hours  DOUBLE,          -- observed node-hours minus planned maintenance
    availability          DOUBLE
);
