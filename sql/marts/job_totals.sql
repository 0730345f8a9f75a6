-- marts.job_totals: one row per scope: the whole record (scope 'all', day NULL) or one UTC end day
-- (scope 'day', every day from the first to the last end day, zero rows included). gpu_jobs counts
-- terminal GPU jobs that started (marts.job_usage_daily): the one GPU job count every report section
-- quotes; gpu_runs every GPU run that ended in the scope (the earlier runs of requeued jobs included).
-- A job cancelled while pending (Start Unknown) never ran: it is no GPU job and no GPU run (as the
-- job_infra_success SLI leaves it out of its GPU jobs).
-- gpu_hours is the GPU time of every run that ended in the scope, the earlier runs of requeued jobs
-- included (the GPU time the cluster gave them). failed_jobs counts the jobs whose final state is in
-- $failure_states (one set for the whole report); failed_runs the runs that ended in such a state
-- (those jobs' final runs and the requeued jobs' earlier ones); failed_gpu_hours the GPU-hours of the runs that
-- ended in such a state (a NODE_FAIL run Slurm requeued included); failed_share_gpu_hours is their
-- share of the scope's GPU-hours (NULL when zero).
-- first_day / last_day: the end days the scope covers.
-- Parameters: $failure_states VARCHAR[].
CREATE OR REPLACE TABLE marts.job_totals AS
WITH bounds AS (
    SELECT min(day) AS first_day, max(day) AS last_day FROM marts.job_usage_daily
), days AS (
    SELECT unnest(generate_series(first_day, last_day, INTERVAL 1 DAY))::DATE AS day FROM bounds
    WHERE first_day IS NOT NULL
), per_day AS (
    SELECT d.day,
           COALESCE(sum(u.jobs), 0)::BIGINT AS gpu_jobs,
           COALESCE(sum(u.runs), 0)::BIGINT AS gpu_runs,
           COALESCE(sum(u.gpu_hours::DECIMAL(38, 9)), 0) AS gpu_hours,
           COALESCE(sum(u.jobs) FILTER (WHERE list_contains($failure_states::VARCHAR[], u.state)), 0)::BIGINT
               AS failed_jobs,
           COALESCE(sum(u.runs) FILTER (WHERE list_contains($failure_states::VARCHAR[], u.state)), 0)::BIGINT
               AS failed_runs,
           COALESCE(sum(u.gpu_hours::DECIMAL(38, 9)) FILTER (WHERE list_contains($failure_states::VARCHAR[], u.state)), 0)
               AS failed_gpu_hours
    FROM days AS d LEFT JOIN marts.job_usage_daily AS u ON u.day = d.day
    GROUP BY d.day
), scoped AS (
    SELECT 'all' AS scope, NULL::DATE AS day, min(day) AS first_day, max(day) AS last_day,
           COALESCE(sum(gpu_jobs), 0)::BIGINT AS gpu_jobs, COALESCE(sum(gpu_runs), 0)::BIGINT AS gpu_runs,
           COALESCE(sum(gpu_hours), 0) AS gpu_hours,
           COALESCE(sum(failed_jobs), 0)::BIGINT AS failed_jobs, COALESCE(sum(failed_runs), 0)::BIGINT AS failed_runs,
           COALESCE(sum(failed_gpu_hours), 0) AS failed_gpu_hours
    FROM per_day
    UNION ALL
    SELECT 'day', day, day, day, gpu_jobs, gpu_runs, gpu_hours, failed_jobs, failed_runs, failed_gpu_hours FROM per_day
)
SELECT scope, day, first_day, last_day, gpu_jobs, gpu_runs, gpu_hours::DOUBLE AS gpu_hours, failed_jobs, failed_runs,
       failed_gpu_hours::DOUBLE AS failed_gpu_hours,
       (failed_gpu_hours / NULLIF(gpu_hours, 0))::DOUBLE AS failed_share_gpu_hours
FROM scoped
ORDER BY scope, day;
