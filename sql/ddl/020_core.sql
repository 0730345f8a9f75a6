-- core.size_bucket, core.size_bucket_order, core.is_terminal_state, core.is_failed_state and the other
-- state-set macros are generated from gpusre.models.vocabulary (models/warehouse.py apply_ddl), not written here.
-- Keys of the core tables are unique by construction (the upsert picks one row per key) and
-- checked by blocking asset checks, not by PRIMARY KEY indexes: DuckDB's ART indexes made a
-- year-scale upsert about 7x slower (its commit alone took 63 s of 91 s), and analytic readers never look
-- rows up by key.

-- core.jobs: one row per Slurm job allocation (array task, het component), the latest known
-- instance of it across all dumps; restarts counts the earlier (requeued) instances.
CREATE TABLE IF NOT EXISTS core.jobs (
    job_id          VARCHAR NOT NULL,     -- unique  -- as Slurm prints it: '123', '123_4', '123_[1-5]' (pending array), '123+0'
    cluster         VARCHAR,
    job_id_raw      VARCHAR,
    array_job_id    BIGINT,
    array_task_id   BIGINT,               -- NULL unless exactly one task
    array_task_ids  BIGINT[],             -- expanded task ids ('123_[1-3]' -> [1,2,3])
    het_job_id      BIGINT,
    het_job_offset  INTEGER,
    name            VARCHAR,
    "user"          VARCHAR,
    uid             BIGINT,
    account         VARCHAR,
    "group"         VARCHAR,
    partition       VARCHAR,
    qos             VARCHAR,
    state           VARCHAR NOT NULL,     -- normalized Slurm state, e.g. CANCELLED (never 'CANCELLED by 12')
    cancelled_by    BIGINT,               -- uid from 'CANCELLED by <uid>'
    exit_code       INTEGER,
    exit_signal     INTEGER,
    submit_ts       TIMESTAMPTZ,          -- UTC
    eligible_ts     TIMESTAMPTZ,
    start_ts        TIMESTAMPTZ,
    end_ts          TIMESTAMPTZ,          -- NULL while running / pending
    elapsed_s       BIGINT,
    timelimit_s     BIGINT,
    queue_wait_s    BIGINT,               -- start - COALESCE(eligible, submit)
    n_nodes         INTEGER,
    n_cpus          INTEGER,
    n_gpus          INTEGER,
    gpu_type        VARCHAR,
    size_bucket     VARCHAR,              -- core.size_bucket(n_gpus)
    nodelist        VARCHAR,              -- compressed hostlist as Slurm printed it
    nodes           VARCHAR[],            -- expanded node names
    gpu_hours       DOUBLE,               -- n_gpus * elapsed_s / 3600
    restarts        INTEGER NOT NULL,
    comment         VARCHAR,
    end_day         DATE,                 -- UTC day of end_ts: the daily partition the job belongs to
    source_file     VARCHAR NOT NULL,     -- dump and line of the winning record
    line_no         BIGINT NOT NULL
);

-- core.job_instances: one row per started instance of a job — a requeued job (sacct -D) has
-- several under one job_id; the latest is the one in core.jobs. Utilization and, later, ETTR
-- count every instance, since an instance that ended in NODE_FAIL still held its GPUs.
CREATE TABLE IF NOT EXISTS core.job_instances (
    job_id       VARCHAR NOT NULL,
    instance_no  INTEGER NOT NULL,        -- 1 = first start; ordered by start_ts
    is_latest    BOOLEAN NOT NULL,
    state        VARCHAR,
    start_ts     TIMESTAMPTZ NOT NULL,
    end_ts       TIMESTAMPTZ,
    elapsed_s    BIGINT,
    n_gpus       INTEGER,
    nodes        VARCHAR[],
    source_file  VARCHAR NOT NULL,
    line_no      BIGINT NOT NULL,         -- unique key: (job_id, instance_no)
    submit_ts    TIMESTAMPTZ,             -- this instance's submit / eligible time (a requeue resets them)
    eligible_ts  TIMESTAMPTZ,
    exit_code    INTEGER,
    exit_signal  INTEGER
);
-- Warehouses created before these columns existed get them (NULL until their jobs are rebuilt).
ALTER TABLE core.job_instances ADD COLUMN IF NOT EXISTS submit_ts TIMESTAMPTZ;
ALTER TABLE core.job_instances ADD COLUMN IF NOT EXISTS eligible_ts TIMESTAMPTZ;
ALTER TABLE core.job_instances ADD COLUMN IF NOT EXISTS exit_code INTEGER;
ALTER TABLE core.job_instances ADD COLUMN IF NOT EXISTS exit_signal INTEGER;

-- core.job_steps: one row per job step ('123.batch', '123.extern', '123.0') of the latest instance.
CREATE TABLE IF NOT EXISTS core.job_steps (
    job_id       VARCHAR NOT NULL,
    step_id      VARCHAR NOT NULL,
    name         VARCHAR,
    state        VARCHAR,
    exit_code    INTEGER,
    exit_signal  INTEGER,
    start_ts     TIMESTAMPTZ,
    end_ts       TIMESTAMPTZ,
    elapsed_s    BIGINT,
    n_nodes      INTEGER,
    n_cpus       INTEGER,
    n_gpus       INTEGER,
    nodelist     VARCHAR,
    nodes        VARCHAR[],
    source_file  VARCHAR NOT NULL,
    line_no      BIGINT NOT NULL          -- unique key: (job_id, step_id)
);

-- core.dirty_days: UTC days whose daily marts must be recomputed because core.jobs changed
-- (written by core_jobs, drained by the daily-partitioned marts for the days they compute).
CREATE TABLE IF NOT EXISTS core.dirty_days (
    day DATE PRIMARY KEY
);

-- core.instances_outside_jobs: one row per started instance of a job that core.jobs does not
-- describe — the earlier instances of a requeued job, and the last started one of a job requeued and
-- pending again (core.jobs shows the pending record). The one definition of "a run core.jobs does
-- not show": attribution reads it for the instances killed before the job's final record, and
-- marts.job_usage_daily, marts.top_consumers and marts.cluster_comparison for the GPU-hours of every run
-- (user and account are the job's, so a run's GPU-hours count for whoever ran the job).
CREATE OR REPLACE VIEW core.instances_outside_jobs AS
SELECT i.job_id, i.instance_no, i.state, i.nodes, i.start_ts, i.end_ts, i.elapsed_s, i.n_gpus, i.exit_code,
       i.exit_signal, j.account, j."user"
FROM core.job_instances AS i
JOIN core.jobs AS j USING (job_id)
WHERE NOT i.is_latest OR i.start_ts IS DISTINCT FROM j.start_ts;

-- core.attribution_memo: the attribution of every job and earlier instance that could have failed, as
-- the failure marts last computed it (before run losses), with the hash of the input row: a night
-- attributes again only the jobs whose row or evidence changed (gpusre.models.failures.attribution_memo).
CREATE TABLE IF NOT EXISTS core.attribution_memo (
    kind                 VARCHAR NOT NULL,
    input_hash           UBIGINT NOT NULL,
    instance_no          BIGINT,
    job_id               VARCHAR NOT NULL,
    state                VARCHAR,
    end_ts               TIMESTAMPTZ,
    n_gpus               BIGINT,
    attribution          VARCHAR,
    rule                 VARCHAR,
    component            VARCHAR,
    cause_class          VARCHAR,
    incident_id          VARCHAR,
    evidence_event_ids   BIGINT[],
    evidence_node_state  VARCHAR,
    evidence_nodes       VARCHAR[],
    lost_gpu_hours       DOUBLE
);

-- core.attribution_memo_basis: per evidence frame and UTC day, the rows of the evidence core.attribution_memo
-- was computed against that touch the day (count and two sums of row hashes), and the code and rules'
-- fingerprint: a day whose rows differ tonight is dirty, and so is every job within reach of it.
CREATE TABLE IF NOT EXISTS core.attribution_memo_basis (
    fingerprint  VARCHAR NOT NULL,
    part         VARCHAR NOT NULL,
    day          DATE NOT NULL,
    "rows"       BIGINT NOT NULL,
    sum_lo       BIGINT NOT NULL,
    sum_hi       BIGINT NOT NULL
);
