-- marts.job_usage_daily: one row per (end day, final state, GPU size bucket): how many terminal
-- GPU jobs (n_gpus > 0, core.is_terminal_state, end_ts set) ended that UTC day and their GPU-hours.
-- PARTITIONED by day: rerunning a day replaces exactly that day's rows.
-- Parameters: $day DATE.
CREATE TABLE IF NOT EXISTS marts.job_usage_daily (
    day          DATE    NOT NULL,   -- UTC day the jobs ended (core.jobs.end_day)
    state        VARCHAR NOT NULL,   -- normalized final Slurm state
    size_bucket  VARCHAR NOT NULL,   -- core.size_bucket(n_gpus)
    bucket_order INTEGER NOT NULL,   -- core.size_bucket_order(n_gpus), for sorting
    jobs         BIGINT  NOT NULL,
    gpu_hours    DOUBLE  NOT NULL    -- sum of n_gpus * elapsed_s / 3600
);

DELETE FROM marts.job_usage_daily WHERE day = $day::DATE;

INSERT INTO marts.job_usage_daily BY NAME  -- by name: the partial column (models/day_coverage.py) is set afterwards
SELECT $day::DATE                          AS day,
       j.state,
       core.size_bucket(j.n_gpus)          AS size_bucket,
       core.size_bucket_order(j.n_gpus)    AS bucket_order,
       count(*)                            AS jobs,
       -- core.jobs.gpu_hours is NULL only when elapsed_s is missing; such a job used no known time
       COALESCE(sum(j.gpu_hours::DECIMAL(38, 9))::DOUBLE, 0.0)     AS gpu_hours
FROM core.jobs AS j
WHERE j.n_gpus > 0
  AND core.is_terminal_state(j.state)
  AND j.end_ts IS NOT NULL
  AND j.end_day = $day::DATE
GROUP BY ALL
ORDER BY bucket_order, state;
