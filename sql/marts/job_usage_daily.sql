-- marts.job_usage_daily: one row per (end day, state, GPU size bucket): the GPU runs that ended that
-- UTC day in that state, how many of them were a job's final run (jobs), and their GPU-hours.
-- A run is one started instance of a job: a job Slurm requeued (NODE_FAIL, PREEMPTED, REQUEUED) ran
-- several times, and each earlier run's GPU-hours count under its own state on its own end day — the
-- GPU time the cluster gave it, as utilization counts it — while the job counts once, under its final
-- state (terminal GPU jobs: n_gpus > 0, core.is_terminal_state, end_ts set, start_ts set).
-- A job that never started (cancelled while pending: Start Unknown, its GPUs only requested) held no
-- GPU: it is neither a GPU job nor a GPU run here, as in the job_infra_success SLI.
-- PARTITIONED by day: rerunning a day replaces exactly that day's rows.
-- Parameters: $day DATE.
CREATE TABLE IF NOT EXISTS marts.job_usage_daily (
    day          DATE    NOT NULL,   -- UTC day the runs ended (core.jobs.end_day; an earlier run's end)
    state        VARCHAR NOT NULL,   -- normalized Slurm state the run ended in (a job's final state)
    size_bucket  VARCHAR NOT NULL,   -- core.size_bucket(n_gpus)
    bucket_order INTEGER NOT NULL,   -- core.size_bucket_order(n_gpus), for sorting
    jobs         BIGINT  NOT NULL,   -- final runs: terminal GPU jobs that started
    runs         BIGINT  NOT NULL,   -- every run, the earlier runs of requeued jobs included
    gpu_hours    DOUBLE  NOT NULL    -- sum of n_gpus * elapsed_s / 3600 over the runs
);

DELETE FROM marts.job_usage_daily WHERE day = $day::DATE;

INSERT INTO marts.job_usage_daily BY NAME  -- by name: the partial column (models/day_coverage.py) is set afterwards
WITH final_runs AS (
    SELECT j.state, j.n_gpus, 1 AS is_final,
           -- core.jobs.gpu_hours is NULL only when elapsed_s is missing; such a job used no known time
           j.gpu_hours
    FROM core.jobs AS j
    WHERE j.n_gpus > 0
      AND core.is_terminal_state(j.state)
      AND j.end_ts IS NOT NULL
      AND j.start_ts IS NOT NULL   -- a job cancelled while pending never ran
      AND j.end_day = $day::DATE
), earlier_runs AS (
    -- the instances core.jobs does not describe: earlier ones, and the last started one of a job
    -- requeued and pending again
    SELECT i.state, i.n_gpus, 0 AS is_final, i.n_gpus * i.elapsed_s / 3600.0 AS gpu_hours
    FROM core.instances_outside_jobs AS i
    WHERE i.n_gpus > 0
      AND i.end_ts IS NOT NULL
      -- the UTC day as a range of end_ts: DuckDB then filters the instances before the view's join with
      -- core.jobs (as timezone('UTC', end_ts)::DATE = $day it joined all of them: ~0.2 s a day on a year)
      AND i.end_ts >= timezone('UTC', $day::DATE::TIMESTAMP)
      AND i.end_ts < timezone('UTC', ($day::DATE + 1)::TIMESTAMP)
), runs AS (
    SELECT * FROM final_runs UNION ALL SELECT * FROM earlier_runs
)
SELECT $day::DATE                          AS day,
       state,
       core.size_bucket(n_gpus)            AS size_bucket,
       core.size_bucket_order(n_gpus)      AS bucket_order,
       sum(is_final)::BIGINT               AS jobs,
       count(*)::BIGINT                    AS runs,
       COALESCE(sum(gpu_hours::DECIMAL(38, 9))::DOUBLE, 0.0) AS gpu_hours
FROM runs
GROUP BY ALL
ORDER BY bucket_order, state;
