-- raw.ingested_files: one row per landing file ingested (latest ingestion wins; a file whose
-- sha256 is unchanged is skipped on rerun). rows_read = rows_loaded + rows_rejected always.
CREATE TABLE IF NOT EXISTS raw.ingested_files (
    source_file   VARCHAR PRIMARY KEY,   -- path relative to the landing directory, e.g. 'sacct/2026-09-01.psv'
    source_kind   VARCHAR NOT NULL,      -- 'sacct', later 'syslog', 'alerts', ...
    sha256        VARCHAR NOT NULL,
    size_bytes    BIGINT NOT NULL,
    rows_read     BIGINT NOT NULL,       -- data records seen (header and blank lines excluded)
    rows_loaded   BIGINT NOT NULL,
    rows_rejected BIGINT NOT NULL,
    status        VARCHAR NOT NULL,      -- 'loaded' | 'refused' (unreadable as a whole, or past a fault: see error) | 'ignored' (not this source's file: see error)
    error         VARCHAR,               -- why a file was refused or ignored
    ingested_at   TIMESTAMPTZ NOT NULL
);
-- The file's modification time (ns since the epoch) when it was read; NULL = unknown. A file whose
-- size and mtime_ns still match is skipped unread (rsync's quick check): a night reads only new bytes.
ALTER TABLE raw.ingested_files ADD COLUMN IF NOT EXISTS mtime_ns BIGINT;
-- gone_since: when a run first found a loaded file missing from the landing directory (its rows stay: the
-- lake is the archive); NULL while it is there.
ALTER TABLE raw.ingested_files ADD COLUMN IF NOT EXISTS gone_since TIMESTAMPTZ;
-- rows_dst_guessed: node-log lines of the repeated hour of a DST fall-back that nothing in their file placed
-- (read as the earlier instant, perhaps 1 h early); NULL for sources that resolve such times.
ALTER TABLE raw.ingested_files ADD COLUMN IF NOT EXISTS rows_dst_guessed BIGINT;

-- raw.rejects: one row per input record that could not be loaded, with the reason.
-- line_no is the 1-based physical line (text files) or 1-based index in jobs[] (sacct --json);
-- line_no 0 means the whole file was refused (e.g. fixed-width sacct output).
CREATE TABLE IF NOT EXISTS raw.rejects (
    source_file VARCHAR NOT NULL,
    source_kind VARCHAR NOT NULL,
    line_no     BIGINT NOT NULL,
    raw         VARCHAR,
    error       VARCHAR NOT NULL,
    rejected_at TIMESTAMPTZ NOT NULL
);

-- raw.sacct_records: one row per sacct record (allocation or step) exactly as a dump showed it,
-- typed but not deduplicated: the same job appears once per dump that listed it, and once per
-- requeued instance (sacct -D). core.jobs / core.job_steps pick the winning record.
-- Kept in the Parquet lake (gpusre.models.ingest.lake): lake.sacct_records only declares the columns and
-- types; the warehouse reads the rows through the view raw.sacct_records (same columns, same order).
CREATE TABLE IF NOT EXISTS lake.sacct_records (
    source_file     VARCHAR NOT NULL,
    line_no         BIGINT NOT NULL,
    record_type     VARCHAR NOT NULL,     -- 'allocation' | 'step'
    cluster         VARCHAR,
    job_id          VARCHAR NOT NULL,     -- as Slurm prints it without the step: '123', '123_4', '123_[1-5]', '123+0'
    job_id_raw      VARCHAR,
    array_job_id    BIGINT,
    array_task_id   BIGINT,
    array_task_ids  BIGINT[],
    het_job_id      BIGINT,
    het_job_offset  INTEGER,
    step_id         VARCHAR,              -- 'batch' | 'extern' | 'interactive' | '0' | '0+1' ...; NULL for allocations
    name            VARCHAR,
    "user"          VARCHAR,
    uid             BIGINT,
    account         VARCHAR,
    "group"         VARCHAR,
    partition       VARCHAR,
    qos             VARCHAR,
    state           VARCHAR,
    state_raw       VARCHAR,
    cancelled_by    BIGINT,
    exit_code       INTEGER,
    exit_signal     INTEGER,
    submit_ts       TIMESTAMPTZ,
    eligible_ts     TIMESTAMPTZ,
    start_ts        TIMESTAMPTZ,
    end_ts          TIMESTAMPTZ,
    elapsed_s       BIGINT,
    timelimit_s     BIGINT,
    n_nodes         INTEGER,
    n_cpus          INTEGER,
    n_gpus          INTEGER,
    gpu_type        VARCHAR,
    nodelist        VARCHAR,
    nodes           VARCHAR[],
    restart_cnt     INTEGER,
    comment         VARCHAR,
    raw_line        VARCHAR
);
-- Without a lake (the bare DDL), raw.sacct_records reads the empty lake.sacct_records; opening the warehouse with
-- gpusre.models.warehouse.connect points it at the Parquet files.
CREATE VIEW IF NOT EXISTS raw.sacct_records AS SELECT * FROM lake.sacct_records;

-- raw.sacct_dirty_jobs: job ids whose raw records changed since core.jobs last consumed them
-- (a work queue: the ingest writes it, the core_jobs asset drains it in the same transaction
-- as its upsert, so a failed core step is simply retried by the next run). A job id may be
-- queued more than once; consumers use set semantics (IN / DISTINCT). source_file: the newly
-- published dump that holds new records of the job (core.jobs merges them with its old picks);
-- NULL when records of the job may be gone or changed (a re-read dump's old version held it):
-- core.jobs rebuilds the job from all its records.
CREATE TABLE IF NOT EXISTS raw.sacct_dirty_jobs (
    job_id      VARCHAR NOT NULL,
    source_file VARCHAR
);
ALTER TABLE raw.sacct_dirty_jobs ADD COLUMN IF NOT EXISTS source_file VARCHAR;

-- raw.summarized_versions: which landing-file version each per-version table was built from
-- (gpusre.models.ingest.version_summaries): one row per table, source and landing file. A ledger
-- version missing here is read (its own lake files only) and added; a row whose version the ledger
-- no longer holds has its table rows deleted. Bookkeeping, written in the same transaction as the table.
CREATE TABLE IF NOT EXISTS raw.summarized_versions (
    summary     VARCHAR NOT NULL,          -- '<table>:<source_kind>', e.g. 'raw.record_days:syslog'
    source_file VARCHAR NOT NULL,
    sha256      VARCHAR NOT NULL
);

-- raw.record_days: one row per landing file (the version the ledger holds) and UTC day of its records'
-- own time (registry: record_ts): how many records, the first and last record time and, for node
-- logs, the nodes that logged. What the coverage marts read instead of every raw record; kept per
-- landing-file version (gpusre.models.ingest.version_summaries), so a night reads only its new files.
CREATE TABLE IF NOT EXISTS raw.record_days (
    source_kind VARCHAR NOT NULL,
    source_file VARCHAR NOT NULL,
    day         DATE NOT NULL,             -- UTC
    records     BIGINT NOT NULL,
    first_ts    TIMESTAMPTZ NOT NULL,
    last_ts     TIMESTAMPTZ NOT NULL,
    nodes       VARCHAR[]                  -- distinct nodes of the day's records (node logs), else NULL
);

-- raw.lake_compacted_versions: the manifest of the lake's compacted files
-- (gpusre.models.ingest.lake_compaction): one row per compacted file and landing-file version
-- whose rows of that day it holds. A version listed here is read from its compacted file only;
-- a compacted file is visible once its rows here commit. Written in the compaction's transaction.
CREATE TABLE IF NOT EXISTS raw.lake_compacted_versions (
    lake_table     VARCHAR NOT NULL,       -- the raw table, e.g. 'syslog_lines'
    day            DATE NOT NULL,          -- the day folder of the compacted file (UTC day of the rows)
    compacted_file VARCHAR NOT NULL,       -- file name stem under <lake>/_compacted/<table>/day=<day>/
    source_file    VARCHAR NOT NULL,       -- the landing file
    version_stem   VARCHAR NOT NULL,       -- <landing-file-id>-<sha256[:16]> of the version
    rows           BIGINT NOT NULL,        -- rows of that version in the compacted file
    compacted_at   TIMESTAMPTZ NOT NULL
);
