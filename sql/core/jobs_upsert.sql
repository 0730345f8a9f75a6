-- Rebuild the core.jobs (one row = one Slurm job allocation, its latest instance),
-- core.job_instances and core.job_steps rows of every job id queued in raw.sacct_dirty_jobs, then
-- drain the queue. Days touched by the old and new versions of the instances and jobs that changed
-- are queued in core.dirty_days for the daily marts. Runs inside the caller's transaction.
--
-- Winner per job_id: the latest instance (a requeued job reappears under the same id with a new
-- start; ordered by start, else eligible, else submit), and within it the most final record:
-- terminal state first, then latest end, longest elapsed, latest dump file and line.
--
-- Every pick here (the job's winner, an instance's record, a step's record) is the maximum of a
-- key over the job's records, so it can be taken over the old picks and the new records alone. A
-- job queued with a dump file (source_file set) only gained records, in that newly published
-- dump: it is merged, reading only the new dumps (a year re-lists long-pending jobs in every daily
-- dump; one night's 16 k jobs had ~1 M records in the lake). A job queued without one (a re-read
-- dump's old version held it: records may be gone or changed) is rebuilt from all its records.

-- Hash joins build on the side written on the right. The lake views' row estimate is ~0 (their
-- semi-join with the ledger), so the optimizer would build on the lake scan: on a first load of a
-- year that is every wide record, which ran out of the 1 GB default memory (the planner's choice
-- for the queues' small tables is the same either way). Reset at the end. (lake.LAKE_JOIN_BUILD_SIDE)
SET disabled_optimizers = 'build_side_probe_side';

-- The current (old) rows of the dirty jobs without their provenance (dump file and line): a job
-- that a new dump lists again unchanged (a job pending or requeued for months is in every daily
-- dump) must not queue the days of its old instances, or one such job makes the daily marts
-- recompute most of a year.
CREATE OR REPLACE TEMP TABLE _old_instances AS
SELECT * EXCLUDE (source_file, line_no) FROM core.job_instances
WHERE job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs);
CREATE OR REPLACE TEMP TABLE _old_jobs AS
SELECT * EXCLUDE (source_file, line_no) FROM core.jobs
WHERE job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs);

CREATE OR REPLACE TEMP TABLE _rebuild AS
SELECT DISTINCT job_id FROM raw.sacct_dirty_jobs WHERE source_file IS NULL;
CREATE OR REPLACE TEMP TABLE _merge AS
SELECT DISTINCT job_id FROM raw.sacct_dirty_jobs WHERE job_id NOT IN (SELECT job_id FROM _rebuild);
-- Constants the lake scans test per file: the new dumps, and whether any job is rebuilt (a scan
-- for an empty set of jobs would still read the whole lake).
SET VARIABLE gpusre_new_dumps = (SELECT COALESCE(list(DISTINCT source_file), []) FROM raw.sacct_dirty_jobs
                                 WHERE source_file IS NOT NULL);
SET VARIABLE gpusre_rebuild = (SELECT count(*) > 0 FROM _rebuild);

-- The old picks of the merged jobs: every instance, and the job's winner when it never started (a
-- started winner is the pick of its instance). Their old restarts count is merged in _job_winners.
-- An instance whose end was inferred (REQUEUED at the requeue: the value the instances below
-- compute from the next instance or from a later never-started record) goes back in without it: a
-- recorded end (a later -D dump listing the run REQUEUED at 07:50) must beat the inferred 08:00, and
-- an end still unrecorded is inferred again from the records of now. A recorded end equal to the
-- inferred one loses nothing.
CREATE OR REPLACE TEMP TABLE _old_picks AS
WITH old_instances AS (
    SELECT i.*,
           CASE WHEN i.is_latest
                THEN COALESCE(CASE WHEN p.submit_ts > i.start_ts THEN p.submit_ts END,
                              CASE WHEN p.eligible_ts > i.start_ts THEN p.eligible_ts END)
                ELSE COALESCE(CASE WHEN lead(i.submit_ts) OVER w > i.start_ts THEN lead(i.submit_ts) OVER w END,
                              CASE WHEN lead(i.eligible_ts) OVER w > i.start_ts THEN lead(i.eligible_ts) OVER w END,
                              lead(i.start_ts) OVER w) END AS inferred_end
    FROM core.job_instances AS i
    LEFT JOIN (SELECT job_id, submit_ts, eligible_ts FROM core.jobs
               WHERE start_ts IS NULL AND job_id IN (SELECT job_id FROM _merge)) AS p USING (job_id)
    WHERE i.job_id IN (SELECT job_id FROM _merge)
    WINDOW w AS (PARTITION BY i.job_id ORDER BY i.instance_no)
)
SELECT job_id, source_file, line_no, state, submit_ts, eligible_ts,
       CASE WHEN state = 'REQUEUED' AND end_ts = inferred_end THEN NULL ELSE end_ts END AS end_ts,
       CASE WHEN state = 'REQUEUED' AND end_ts = inferred_end THEN NULL ELSE elapsed_s END AS elapsed_s,
       NULL::INTEGER AS restart_cnt, n_gpus, nodes, exit_code, exit_signal, start_ts, NULL::VARCHAR AS gpu_type
FROM old_instances
UNION ALL
SELECT job_id, source_file, line_no, state, submit_ts, eligible_ts, end_ts, elapsed_s, NULL::INTEGER AS restart_cnt,
       n_gpus, nodes, exit_code, exit_signal, start_ts, gpu_type
FROM core.jobs WHERE start_ts IS NULL AND job_id IN (SELECT job_id FROM _merge);

-- The ranking and instance columns of the records to pick from (the wide record of each job's
-- winner is read afterwards, from the dumps holding the winners). Within allocations (file, line)
-- is the record key (a JSON dump's steps share their allocation's line, but are not allocations).
CREATE OR REPLACE TEMP TABLE _job_keys AS
WITH lake_keys AS (
    SELECT job_id, source_file, line_no, state, submit_ts, eligible_ts, end_ts, elapsed_s, restart_cnt,
           n_gpus, nodes, exit_code, exit_signal,
           -- Slurm prints Start = End = the cancel time for a job cancelled while pending; a job that
           -- never got nodes has not started (else it would count as a queue wait and a run).
           CASE WHEN nodes IS NOT NULL AND len(nodes) = 0 AND COALESCE(elapsed_s, 0) = 0
                THEN NULL ELSE start_ts END AS start_ts,
           gpu_type
    FROM raw.sacct_records
    WHERE record_type = 'allocation'
)
-- rebuilt jobs: every record
SELECT * FROM lake_keys
WHERE getvariable('gpusre_rebuild') AND job_id IN (SELECT job_id FROM _rebuild)
-- merged jobs: the records of the new dumps (but an old pick: a queue merged twice) ...
UNION ALL
SELECT * FROM lake_keys AS k
WHERE list_contains(getvariable('gpusre_new_dumps'), k.source_file) AND k.job_id IN (SELECT job_id FROM _merge)
  AND NOT EXISTS (SELECT 1 FROM _old_picks AS o
                  WHERE o.job_id = k.job_id AND o.source_file = k.source_file AND o.line_no = k.line_no)
-- ... and the old picks
UNION ALL
SELECT * FROM _old_picks;

-- Most jobs have a single key row (a year's first load: 954,000 of 1.05 M jobs), which is their
-- winner and their one instance's pick; the arg_max over a struct key (~1 s per million rows) runs
-- only over the jobs with several.
-- n_gpus is the job's GPU count, the one definition core.jobs and every instance take: a job's GPU
-- allocation does not change between its records (a requeued job is re-allocated its request; het
-- components and array tasks have ids of their own), so it is the largest count its records state.
-- A record with an empty allocation (pending, cancelled while pending) states none (NULL from the
-- parser), and one whose GPU columns show no GPU (0: an AllocTRES of a site that does not track
-- gres/gpu, in a dump without AllocGRES) does not hide another record's positive count; a job no
-- record shows a GPU for has 0 (CPU job), one no record states an allocation for NULL. A merged job's
-- old picks carry its old count, so the maximum over them and the new records is over every record.
CREATE OR REPLACE TEMP TABLE _job_key_rows AS
-- gpu_type likewise: the type any record names (a pending record, or a later dump without AllocGRES at a
-- site whose TRES has untyped gres/gpu only, names none; a job is not re-allocated another model).
SELECT job_id, count(*) = 1 AS single, max(n_gpus) AS n_gpus, max(gpu_type) AS gpu_type
FROM _job_keys GROUP BY job_id;

-- NULLs are mapped to sentinels so they rank lowest. (arg_max_null: the winner's start_ts may
-- be NULL and must not be skipped.)
CREATE OR REPLACE TEMP TABLE _job_winners AS
WITH ranked AS (
    SELECT k.job_id, k.source_file AS winner_file, k.line_no AS winner_line, k.start_ts AS winner_start_ts,
           k.submit_ts AS winner_submit_ts, k.eligible_ts AS winner_eligible_ts,
           (k.start_ts IS NOT NULL)::BIGINT AS n_started_instances, k.restart_cnt AS max_restart_cnt
    FROM _job_keys AS k SEMI JOIN (SELECT job_id FROM _job_key_rows WHERE single) AS s ON k.job_id = s.job_id
    UNION ALL
    SELECT job_id, winner.f, winner.l, winner.start_ts, winner.submit_ts, winner.eligible_ts, n_started_instances,
           max_restart_cnt
    FROM (SELECT k.job_id,
                 arg_max_null({'f': k.source_file, 'l': k.line_no, 'start_ts': k.start_ts, 'submit_ts': k.submit_ts,
                               'eligible_ts': k.eligible_ts},
                              (COALESCE(k.start_ts, k.eligible_ts, k.submit_ts, '-infinity'::TIMESTAMPTZ),
                               core.is_terminal_state(k.state),
                               COALESCE(k.end_ts, '-infinity'::TIMESTAMPTZ),
                               COALESCE(k.elapsed_s, -1),
                               k.source_file,
                               k.line_no)) AS winner,
                 -- the old instances are among the keys, so this counts every start
                 count(DISTINCT k.start_ts) AS n_started_instances,
                 max(k.restart_cnt) AS max_restart_cnt
          FROM _job_keys AS k SEMI JOIN (SELECT job_id FROM _job_key_rows WHERE NOT single) AS s ON k.job_id = s.job_id
          GROUP BY k.job_id)
)
SELECT r.job_id, r.winner_file, r.winner_line, r.winner_start_ts, r.winner_submit_ts, r.winner_eligible_ts,
       r.n_started_instances, c.n_gpus AS job_n_gpus, COALESCE(c.gpu_type, o.gpu_type) AS job_gpu_type,
       -- a merged job's old restarts count is at least its old records' largest RestartCnt and
       -- at most the new count, so folding it in gives the count over every record (greatest
       -- skips the NULL of a rebuilt job)
       greatest(r.max_restart_cnt, o.restarts) AS max_restart_cnt
FROM ranked AS r
JOIN _job_key_rows AS c USING (job_id)
LEFT JOIN (SELECT job_id, restarts, gpu_type FROM core.jobs WHERE job_id IN (SELECT job_id FROM _merge)) AS o USING (job_id);

-- Every started instance of the dirty jobs: per (job, start) the most final record (a job with one
-- key row: that row).
CREATE OR REPLACE TEMP TABLE _instance_picks AS
SELECT winner_file AS pick_file, winner_line AS pick_line, job_id, winner_start_ts AS start_ts
FROM _job_winners SEMI JOIN (SELECT job_id FROM _job_key_rows WHERE single) AS s USING (job_id)
WHERE winner_start_ts IS NOT NULL
UNION ALL
SELECT rid.f, rid.l, job_id, start_ts
FROM (SELECT k.job_id, k.start_ts,
             arg_max({'f': k.source_file, 'l': k.line_no}, (core.is_terminal_state(k.state),
                     COALESCE(k.end_ts, '-infinity'::TIMESTAMPTZ), COALESCE(k.elapsed_s, -1), k.source_file, k.line_no)) AS rid
      FROM _job_keys AS k SEMI JOIN (SELECT job_id FROM _job_key_rows WHERE NOT single) AS s ON k.job_id = s.job_id
      WHERE k.start_ts IS NOT NULL
      GROUP BY k.job_id, k.start_ts);

-- The dump files of the winners, as a constant list the scan tests file by file (a join on
-- (file, line) alone reads every file of the lake).
SET VARIABLE gpusre_upsert_files = (SELECT COALESCE(list(DISTINCT winner_file), []) FROM _job_winners);

DELETE FROM core.jobs WHERE job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs);

-- The winners' wide records are read from the lake in this one join (start_ts is the winner's, as
-- _job_keys adjusted it).
INSERT INTO core.jobs BY NAME
SELECT r.job_id, r.cluster, r.job_id_raw, r.array_job_id, r.array_task_id, r.array_task_ids,
       r.het_job_id, r.het_job_offset, r.name, r."user", r.uid, r.account, r."group", r.partition, r.qos,
       r.state, r.cancelled_by, r.exit_code, r.exit_signal, r.submit_ts, r.eligible_ts,
       w.winner_start_ts AS start_ts, r.end_ts, r.elapsed_s, r.timelimit_s,
       CASE WHEN w.winner_start_ts IS NOT NULL
            THEN greatest(0, epoch(w.winner_start_ts)
                             - epoch(COALESCE(r.eligible_ts, r.submit_ts, w.winner_start_ts)))::BIGINT
       END AS queue_wait_s,
       r.n_nodes, r.n_cpus, w.job_n_gpus AS n_gpus, COALESCE(r.gpu_type, w.job_gpu_type) AS gpu_type,
       core.size_bucket(w.job_n_gpus) AS size_bucket,
       r.nodelist, r.nodes,
       COALESCE(w.job_n_gpus, 0) * COALESCE(r.elapsed_s, 0) / 3600.0 AS gpu_hours,
       -- every start but the winner's was requeued; a winner that never started (pending again after
       -- a requeue, or cancelled so) follows a requeue of each start
       greatest(w.n_started_instances - (w.winner_start_ts IS NOT NULL)::INTEGER, COALESCE(w.max_restart_cnt, 0),
                0)::INTEGER AS restarts,
       r.comment,
       r.end_ts::DATE AS end_day,
       r.source_file, r.line_no
FROM raw.sacct_records AS r JOIN _job_winners AS w ON r.source_file = w.winner_file AND r.line_no = w.winner_line
WHERE r.record_type = 'allocation' AND list_contains(getvariable('gpusre_upsert_files'), r.source_file);

-- A column the winner's dump did not have is unknown, not empty: the identity columns a job gets at
-- submission (a 22.05 `-p` cut without UID, Group, QOS must not wipe what a 23.11 dump gave) fall
-- back to the job's value from its other records — those read here (a merged job's new dumps, every
-- record of a rebuilt one; the latest that has a value), else a merged
-- job's old row. A record does not tell a column its dump lacked from one Slurm printed empty, so
-- only columns Slurm never prints empty once a job has them fall back (an update changes them, it
-- never empties them); Comment, times, exit codes, node lists and the counts of the record's own
-- instance do not. Only rows with such a NULL and another record to ask are looked at (most dumps
-- have every column; a first load's jobs mostly have one record).
CREATE OR REPLACE TEMP TABLE _unknown AS
SELECT job_id FROM core.jobs
WHERE job_id IN (SELECT job_id FROM _job_key_rows WHERE NOT single)
  AND (job_id_raw IS NULL OR name IS NULL OR "user" IS NULL OR uid IS NULL OR account IS NULL OR "group" IS NULL
       OR partition IS NULL OR qos IS NULL);
SET VARIABLE gpusre_unknown = (SELECT count(*) > 0 FROM _unknown);
CREATE OR REPLACE TEMP TABLE _fallback AS
WITH recs AS (
    SELECT job_id,
           arg_max(job_id_raw, rank) FILTER (WHERE job_id_raw IS NOT NULL) AS job_id_raw,
           arg_max(name, rank) FILTER (WHERE name IS NOT NULL) AS name,
           arg_max("user", rank) FILTER (WHERE "user" IS NOT NULL) AS "user",
           arg_max(uid, rank) FILTER (WHERE uid IS NOT NULL) AS uid,
           arg_max(account, rank) FILTER (WHERE account IS NOT NULL) AS account,
           arg_max("group", rank) FILTER (WHERE "group" IS NOT NULL) AS "group",
           arg_max(partition, rank) FILTER (WHERE partition IS NOT NULL) AS partition,
           arg_max(qos, rank) FILTER (WHERE qos IS NOT NULL) AS qos
    FROM (SELECT job_id, job_id_raw, name, "user", uid, account, "group", partition, qos,
                 COALESCE(end_ts, start_ts, eligible_ts, submit_ts, '-infinity'::TIMESTAMPTZ) AS rank
          FROM raw.sacct_records
          WHERE getvariable('gpusre_unknown') AND record_type = 'allocation' AND job_id IN (SELECT job_id FROM _unknown)
            AND ((getvariable('gpusre_rebuild') AND job_id IN (SELECT job_id FROM _rebuild))
                 OR (list_contains(getvariable('gpusre_new_dumps'), source_file)
                     AND job_id IN (SELECT job_id FROM _merge))))
    GROUP BY job_id
)
SELECT u.job_id,
       COALESCE(r.job_id_raw, o.job_id_raw) AS job_id_raw, COALESCE(r.name, o.name) AS name,
       COALESCE(r."user", o."user") AS "user", COALESCE(r.uid, o.uid) AS uid,
       COALESCE(r.account, o.account) AS account, COALESCE(r."group", o."group") AS "group",
       COALESCE(r.partition, o.partition) AS partition, COALESCE(r.qos, o.qos) AS qos
FROM _unknown AS u
LEFT JOIN recs AS r USING (job_id)
LEFT JOIN (SELECT * FROM _old_jobs WHERE job_id IN (SELECT job_id FROM _merge)) AS o USING (job_id);
UPDATE core.jobs AS j
SET job_id_raw = COALESCE(j.job_id_raw, f.job_id_raw), name = COALESCE(j.name, f.name),
    "user" = COALESCE(j."user", f."user"), uid = COALESCE(j.uid, f.uid), account = COALESCE(j.account, f.account),
    "group" = COALESCE(j."group", f."group"), partition = COALESCE(j.partition, f.partition),
    qos = COALESCE(j.qos, f.qos)
FROM _fallback AS f
WHERE j.job_id = f.job_id;
DROP TABLE _fallback;
DROP TABLE _unknown;
RESET VARIABLE gpusre_unknown;

DELETE FROM core.job_instances WHERE job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs);
-- A job's picks have distinct starts (one per (job, start)), so its latest instance is the one no
-- later start follows: one window order for both columns (two orders sorted the rows twice).
-- An earlier instance no dump saw end (dumps without -D list only a job's latest run; a dump missing
-- for a night) ended when Slurm requeued it: at the next instance's submit (the requeue time), else
-- its eligible time, else its start. Left open it would run on to the end of the data (ETTR 3.2).
-- The same holds for the latest started instance when a record of the job shows it later never
-- started (the job's winner: submitted or eligible again after that start, pending after a
-- requeue, or cancelled while pending): that run ended at the requeue too, it is no run still going.
-- Every instance has the job's GPU count (_job_key_rows): a requeued run is re-allocated the same request.
INSERT INTO core.job_instances BY NAME
SELECT job_id, instance_no, is_latest,
       CASE WHEN closed_ts IS NULL OR core.is_terminal_state(state) THEN state ELSE 'REQUEUED' END AS state,
       start_ts, COALESCE(end_ts, closed_ts) AS end_ts,
       -- (the record's Elapsed is the time run by its dump, not to the requeue)
       CASE WHEN closed_ts IS NOT NULL THEN (epoch(closed_ts) - epoch(start_ts))::BIGINT ELSE elapsed_s END AS elapsed_s,
       job_n_gpus AS n_gpus,
       nodes, source_file, line_no, submit_ts, eligible_ts, exit_code, exit_signal
FROM (SELECT p.job_id,
             (row_number() OVER w)::INTEGER AS instance_no,
             lead(p.start_ts) OVER w IS NULL AS is_latest,
             CASE WHEN r.end_ts IS NULL AND lead(p.start_ts) OVER w IS NOT NULL THEN
                  COALESCE(CASE WHEN lead(r.submit_ts) OVER w > p.start_ts THEN lead(r.submit_ts) OVER w END,
                           CASE WHEN lead(r.eligible_ts) OVER w > p.start_ts THEN lead(r.eligible_ts) OVER w END,
                           lead(p.start_ts) OVER w)
                  WHEN r.end_ts IS NULL AND g.winner_start_ts IS NULL THEN
                  COALESCE(CASE WHEN g.winner_submit_ts > p.start_ts THEN g.winner_submit_ts END,
                           CASE WHEN g.winner_eligible_ts > p.start_ts THEN g.winner_eligible_ts END) END AS closed_ts,
             r.state, p.start_ts, r.end_ts, r.elapsed_s, r.nodes, r.source_file, r.line_no,
             r.submit_ts, r.eligible_ts, r.exit_code, r.exit_signal, g.job_n_gpus
      FROM _job_keys AS r JOIN _instance_picks AS p ON r.source_file = p.pick_file AND r.line_no = p.pick_line
      LEFT JOIN _job_winners AS g ON g.job_id = p.job_id
      WINDOW w AS (PARTITION BY p.job_id ORDER BY p.start_ts)) AS i;

-- Days the daily marts must recompute: those of the instances and job rows that changed (old rows
-- gone or altered, new rows added or altered) — the marts read core.job_instances (utilization)
-- and core.jobs by end day (usage).
-- Only the rows of jobs that had rows before are compared whole: a job new to core.jobs changed
-- every day it touches by definition, and a first load's million new rows cost ~1.5 s in the set
-- differences for nothing.
CREATE OR REPLACE TEMP TABLE _new_instances AS
SELECT * EXCLUDE (source_file, line_no) FROM core.job_instances
WHERE job_id IN (SELECT job_id FROM _old_instances);
-- An instance's span is half-open, [start, end): one that ends (or, running, reaches the dump's cut)
-- at 00:00 exactly does not touch that day — queuing it made a phantom day of 0 % utilization at full
-- capacity after data cut at midnight.
INSERT OR IGNORE INTO core.dirty_days
SELECT DISTINCT unnest(generate_series(
           start_ts::DATE,
           greatest(start_ts, COALESCE(end_ts, start_ts + to_seconds(COALESCE(elapsed_s, 0)))
                              - INTERVAL 1 MICROSECOND)::DATE,
           INTERVAL 1 DAY))::DATE
FROM ((SELECT start_ts, end_ts, elapsed_s FROM (FROM _old_instances EXCEPT FROM _new_instances))
      UNION ALL (SELECT start_ts, end_ts, elapsed_s FROM (FROM _new_instances EXCEPT FROM _old_instances))
      UNION ALL (SELECT start_ts, end_ts, elapsed_s FROM core.job_instances
                 WHERE job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs)
                   AND job_id NOT IN (SELECT job_id FROM _old_instances)));
INSERT OR IGNORE INTO core.dirty_days
WITH known_new AS (SELECT * EXCLUDE (source_file, line_no) FROM core.jobs
                   WHERE job_id IN (SELECT job_id FROM _old_jobs))
SELECT DISTINCT end_day
FROM ((SELECT end_day FROM (FROM _old_jobs EXCEPT FROM known_new))
      UNION ALL (SELECT end_day FROM (FROM known_new EXCEPT FROM _old_jobs))
      UNION ALL (SELECT end_day FROM core.jobs
                 WHERE job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs)
                   AND job_id NOT IN (SELECT job_id FROM _old_jobs)))
WHERE end_day IS NOT NULL;

-- Steps of the dirty jobs: per (job, step) the most final record of the latest instance, over
-- the old steps and the new dumps' step records of merged jobs, and every step record of rebuilt ones.
CREATE OR REPLACE TEMP TABLE _step_candidates AS
WITH lake_steps AS (
    SELECT job_id, step_id, name, state, exit_code, exit_signal, start_ts, end_ts, elapsed_s, n_nodes, n_cpus,
           n_gpus, nodelist, nodes, source_file, line_no
    FROM raw.sacct_records
    WHERE record_type = 'step'
)
SELECT * FROM lake_steps
WHERE getvariable('gpusre_rebuild') AND job_id IN (SELECT job_id FROM _rebuild)
UNION ALL
SELECT * FROM lake_steps
WHERE list_contains(getvariable('gpusre_new_dumps'), source_file) AND job_id IN (SELECT job_id FROM _merge)
UNION ALL
SELECT job_id, step_id, name, state, exit_code, exit_signal, start_ts, end_ts, elapsed_s, n_nodes, n_cpus,
       n_gpus, nodelist, nodes, source_file, line_no
FROM core.job_steps WHERE job_id IN (SELECT job_id FROM _merge);
DELETE FROM core.job_steps WHERE job_id IN (SELECT job_id FROM raw.sacct_dirty_jobs);
-- The pick is a row id of the temp table, and its record is read back: an arg_max carrying whole
-- records spilled on a first load (2.3 M step records of a year under the 1 GB default). Most steps
-- have one candidate, which is their pick: the arg_max over a struct key (~1 s on a year's 2.3 M
-- candidates, against 0.25 s for a count) runs only over the steps with several.
CREATE OR REPLACE TEMP TABLE _step_groups AS
SELECT job_id, step_id, count(*) AS n, min(rowid) AS first_row FROM _step_candidates GROUP BY job_id, step_id;
INSERT INTO core.job_steps BY NAME
SELECT * FROM _step_candidates
WHERE rowid IN (SELECT first_row FROM _step_groups WHERE n = 1
                UNION ALL
                SELECT arg_max(c.rowid, (COALESCE(c.start_ts, '-infinity'::TIMESTAMPTZ),
                                         core.is_terminal_state(c.state),
                                         COALESCE(c.end_ts, '-infinity'::TIMESTAMPTZ),
                                         c.source_file, c.line_no))
                FROM _step_candidates AS c
                SEMI JOIN (SELECT job_id, step_id FROM _step_groups WHERE n > 1) AS g
                     ON c.job_id = g.job_id AND c.step_id = g.step_id
                GROUP BY c.job_id, c.step_id);

-- A pending array range (`1800_[2-3%1]`) is listed under its own id until its tasks start, then
-- under theirs (`1800_2`, ...) and a shrunk range (`1800_[3%1]`): once every task of a range has a
-- record of its own or is in a range a later dump listed, the range's last record is stale, not a
-- job still waiting (it kept training runs "ongoing" for ever).
-- The range is the record of the array job itself (JobIDRaw = the array's id), which Slurm lists once
-- per dump and only ever shrinks: a range of the same array over fewer of its tasks, whatever its
-- state (pending, or cancelled while pending), is a newer look at the same record and supersedes it
-- (`1006_[4-9]` PENDING after `1006_4` COMPLETED and `1006_[5-9]` CANCELLED). The same tasks under
-- another spelling (`1006_[5-9%2]`, `1006_[5-9]`) are superseded by the more final or later-listed
-- record. A range no later record covers stays: a dump that does not list it (a partial cut) cannot
-- tell that no task is pending any more.
CREATE OR REPLACE TEMP TABLE _array_ranges AS
SELECT job_id, array_job_id, array_task_ids, state, source_file, line_no, start_ts IS NULL AND end_ts IS NULL AS pending
FROM core.jobs
WHERE start_ts IS NULL AND array_task_id IS NULL AND len(array_task_ids) > 0;
DELETE FROM core.jobs WHERE job_id IN (
    SELECT r.job_id
    FROM _array_ranges AS r
    WHERE r.pending AND EXISTS (
        SELECT 1 FROM _array_ranges AS n
        WHERE n.array_job_id = r.array_job_id AND n.job_id <> r.job_id
          AND list_has_all(r.array_task_ids, n.array_task_ids)
          AND (len(n.array_task_ids) < len(r.array_task_ids)
               OR (NOT n.pending, n.source_file, n.line_no) > (NOT r.pending, r.source_file, r.line_no))));
CREATE OR REPLACE TEMP TABLE _pending_ranges AS
SELECT job_id, array_job_id, array_task_ids, source_file, line_no FROM core.jobs
WHERE start_ts IS NULL AND end_ts IS NULL AND array_task_id IS NULL AND len(array_task_ids) > 0;
DELETE FROM core.jobs WHERE job_id IN (
    SELECT r.job_id
    FROM (SELECT job_id, array_job_id, source_file, line_no, unnest(array_task_ids) AS task FROM _pending_ranges) AS r
    WHERE EXISTS (SELECT 1 FROM core.jobs AS t
                  WHERE t.array_job_id = r.array_job_id AND t.array_task_id = r.task)
       OR EXISTS (SELECT 1 FROM _pending_ranges AS n
                  WHERE n.array_job_id = r.array_job_id AND list_contains(n.array_task_ids, r.task)
                    AND (n.source_file, n.line_no) > (r.source_file, r.line_no))
    GROUP BY r.job_id
    HAVING count(*) = (SELECT len(array_task_ids) FROM _pending_ranges AS p WHERE p.job_id = r.job_id));
DROP TABLE _pending_ranges;
DROP TABLE _array_ranges;

-- A step of core.job_steps whose job has no row in core.jobs: no dump loaded the job's allocation
-- record (a dump cut by hand, a `sacct --jobs` of steps, a --state filter that matched only steps;
-- or the allocation was rejected). The job's GPU time is counted through that record only, so the
-- SRE must see it: one reject per such step (file and line of its picked record). Nightly dumps
-- overlap and the allocation may come in any other dump, so this is known only across every dump,
-- here, over the whole of core: the rejects of steps whose job is now whole go, those still missing
-- their job stay untouched (rejected_at kept: a rerun changes nothing). A re-read dump's rejects were
-- deleted with its old version; its jobs are rebuilt above and theirs written again here.
-- (models/sources/sacct/orphan_steps.py: ORPHAN_STEP_REASON, held to this text by a test; the step
-- record is loaded, so the ledger's rows_read = loaded + rejected does not count these.)
SET VARIABLE gpusre_orphan_step_reason = 'the job''s GPU time is not counted — no sacct dump loaded its allocation '
    || 'record (missing from every dump, or rejected); the step stays in core.job_steps';
CREATE OR REPLACE TEMP TABLE _orphan_steps AS
SELECT s.source_file, s.line_no,
       'step ' || s.job_id || '.' || s.step_id || ' of job ' || s.job_id || ': '
       || getvariable('gpusre_orphan_step_reason') AS error
FROM core.job_steps AS s ANTI JOIN core.jobs AS j ON s.job_id = j.job_id;
DELETE FROM raw.rejects AS r
WHERE r.source_kind = 'sacct' AND r.line_no > 0 AND contains(r.error, getvariable('gpusre_orphan_step_reason'))
  AND NOT EXISTS (SELECT 1 FROM _orphan_steps AS o
                  WHERE o.source_file = r.source_file AND o.line_no = r.line_no AND o.error = r.error);
INSERT INTO raw.rejects (source_file, source_kind, line_no, raw, error, rejected_at)
SELECT o.source_file, 'sacct', o.line_no, NULL, o.error, now()
FROM _orphan_steps AS o
WHERE NOT EXISTS (SELECT 1 FROM raw.rejects AS r
                  WHERE r.source_kind = 'sacct' AND r.source_file = o.source_file AND r.line_no = o.line_no
                    AND r.error = o.error);
RESET VARIABLE gpusre_orphan_step_reason;
DROP TABLE _orphan_steps;

DELETE FROM raw.sacct_dirty_jobs;
RESET disabled_optimizers;
DROP TABLE _job_winners;
DROP TABLE _job_keys;
DROP TABLE _instance_picks;
DROP TABLE _job_key_rows;
DROP TABLE _step_candidates;
DROP TABLE _step_groups;
DROP TABLE _old_picks;
DROP TABLE _rebuild;
DROP TABLE _merge;
RESET VARIABLE gpusre_upsert_files;
RESET VARIABLE gpusre_new_dumps;
RESET VARIABLE gpusre_rebuild;
DROP TABLE _old_instances;
DROP TABLE _new_instances;
DROP TABLE _old_jobs;
