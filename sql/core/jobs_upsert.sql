-- Rebuild the core.jobs (one row = one Slurm job allocation, its latest instance) and
-- core.job_steps rows of every job id queued in raw.sacct_dirty_jobs, from ALL raw records of
-- those jobs, then drain the queue. Days touched by the old and new versions of those jobs are
-- queued in core.dirty_days for the daily marts. Runs inside the caller's transaction.
--
-- Winner per job_id: the latest instance (a requeued job reappears under the same id with a new
-- start; ordered by start, else eligible, else submit), and within it the most final record:
-- terminal state first, then latest end, longest elapsed, latest dump file and line.

-- Days covered by the current (old) instances of the dirty jobs.
INSERT OR IGNORE INTO core.dirty_days
SELECT DISTINCT unnest(generate_series(
           start_ts::DATE,
           COALESCE(end_ts, start_ts + to_seconds(COALESCE(elapsed_s, 0)))::DATE,
           INTERVAL 1 DAY))::DATE
FROM core.job_instances
WHERE job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs);

CREATE OR REPLACE TEMP TABLE _job_recs AS
-- Slurm prints Start = End = the cancel time for a job cancelled while pending; a job that
-- never got nodes has not started (else it would count as a queue wait and a run).
SELECT r.* EXCLUDE (raw_line) REPLACE (
    CASE WHEN r.nodes IS NOT NULL AND len(r.nodes) = 0 AND COALESCE(r.elapsed_s, 0) = 0
         THEN NULL ELSE r.start_ts END AS start_ts)
FROM raw.sacct_records AS r
WHERE r.record_type = 'allocation'
  AND r.job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs);

-- arg_max over a narrow ranking key, then one join back, is several times cheaper than a
-- window sort of the wide rows. NULLs are mapped to sentinels so they rank lowest.
CREATE OR REPLACE TEMP TABLE _job_winners AS
WITH picked AS (
    SELECT job_id,
           arg_max(rowid, (COALESCE(start_ts, eligible_ts, submit_ts, '-infinity'::TIMESTAMPTZ),
                           core.is_terminal_state(state),
                           COALESCE(end_ts, '-infinity'::TIMESTAMPTZ),
                           COALESCE(elapsed_s, -1),
                           source_file,
                           line_no)) AS winner_rowid,
           count(DISTINCT start_ts) AS n_started_instances,
           max(restart_cnt) AS max_restart_cnt
    FROM _job_recs
    GROUP BY job_id
)
SELECT r.*, picked.n_started_instances, picked.max_restart_cnt
FROM _job_recs AS r JOIN picked ON r.rowid = picked.winner_rowid;

DELETE FROM core.jobs WHERE job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs);

INSERT INTO core.jobs BY NAME
SELECT job_id, cluster, job_id_raw, array_job_id, array_task_id, array_task_ids,
       het_job_id, het_job_offset, name, "user", uid, account, "group", partition, qos,
       state, cancelled_by, exit_code, exit_signal, submit_ts, eligible_ts, start_ts, end_ts,
       elapsed_s, timelimit_s,
       CASE WHEN start_ts IS NOT NULL
            THEN greatest(0, epoch(start_ts) - epoch(COALESCE(eligible_ts, submit_ts, start_ts)))::BIGINT
       END AS queue_wait_s,
       n_nodes, n_cpus, n_gpus, gpu_type,
       core.size_bucket(n_gpus) AS size_bucket,
       nodelist, nodes,
       COALESCE(n_gpus, 0) * COALESCE(elapsed_s, 0) / 3600.0 AS gpu_hours,
       greatest(n_started_instances - 1, COALESCE(max_restart_cnt, 0), 0)::INTEGER AS restarts,
       comment,
       end_ts::DATE AS end_day,
       source_file, line_no
FROM _job_winners;

-- Days covered by the new versions (every instance).
INSERT OR IGNORE INTO core.dirty_days
SELECT DISTINCT unnest(generate_series(
           start_ts::DATE,
           COALESCE(end_ts, start_ts + to_seconds(COALESCE(elapsed_s, 0)))::DATE,
           INTERVAL 1 DAY))::DATE
FROM _job_recs WHERE start_ts IS NOT NULL;
INSERT OR IGNORE INTO core.dirty_days
SELECT DISTINCT end_ts::DATE FROM _job_winners WHERE end_ts IS NOT NULL;

-- Every started instance of the dirty jobs: per (job, start) the most final record.
DELETE FROM core.job_instances WHERE job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs);
INSERT INTO core.job_instances BY NAME
WITH picked AS (
    SELECT arg_max(rowid, (core.is_terminal_state(state), COALESCE(end_ts, '-infinity'::TIMESTAMPTZ),
                           COALESCE(elapsed_s, -1), source_file, line_no)) AS rid
    FROM _job_recs WHERE start_ts IS NOT NULL
    GROUP BY job_id, start_ts
)
SELECT job_id,
       row_number() OVER (PARTITION BY job_id ORDER BY start_ts)::INTEGER AS instance_no,
       row_number() OVER (PARTITION BY job_id ORDER BY start_ts DESC) = 1 AS is_latest,
       state, start_ts, end_ts, elapsed_s, n_gpus, nodes, source_file, line_no,
       submit_ts, eligible_ts, exit_code, exit_signal
FROM _job_recs AS r JOIN picked ON r.rowid = picked.rid;

-- Steps of the dirty jobs: per (job, step) the most final record of the latest instance.
DELETE FROM core.job_steps WHERE job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs);
INSERT INTO core.job_steps BY NAME
WITH steps AS (
    SELECT job_id, step_id, name, state, exit_code, exit_signal, start_ts, end_ts, elapsed_s,
           n_nodes, n_cpus, n_gpus, nodelist, nodes, source_file, line_no
    FROM raw.sacct_records
    WHERE record_type = 'step'
      AND job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs)
)
SELECT * FROM steps
QUALIFY row_number() OVER (
            PARTITION BY job_id, step_id
            ORDER BY start_ts DESC NULLS LAST,
                     core.is_terminal_state(state) DESC,
                     end_ts DESC NULLS LAST,
                     source_file DESC, line_no DESC) = 1;

DELETE FROM raw.sacct_dirty_jobs;
DROP TABLE _job_winners;
DROP TABLE _job_recs;
