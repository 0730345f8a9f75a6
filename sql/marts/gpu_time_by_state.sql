-- marts.gpu_time_by_state: one row per (period, state): the GPU runs that ended in the period in that
-- state (runs; jobs: those that were a job's final run) and their GPU-hours, with each state's share
-- of the period's jobs and GPU-hours (shares sum to 1 per period). An earlier run of a requeued job
-- counts its GPU-hours under its own state (NODE_FAIL, PREEMPTED, REQUEUED), so the GPU-hours of a
-- period are all the GPU time its runs used. period_type 'all' (period 'all'), 'month' (period
-- 'YYYY-MM') or 'week' (ISO week 'YYYY-Www'); runs count in the period of their end day. Built from
-- marts.job_usage_daily.
-- Sums go through DECIMAL: a parallel DOUBLE sum depends on thread timing, and a rerun over
-- the same data must give bit-identical marts.
CREATE OR REPLACE TABLE marts.gpu_time_by_state AS
WITH tagged AS (
    SELECT 'all' AS period_type, 'all' AS period, state, jobs, runs, gpu_hours FROM marts.job_usage_daily
    UNION ALL
    SELECT 'month', strftime(day, '%Y-%m'), state, jobs, runs, gpu_hours FROM marts.job_usage_daily
    UNION ALL
    SELECT 'week', strftime(day, '%G-W%V'), state, jobs, runs, gpu_hours FROM marts.job_usage_daily
), agg AS (
    SELECT period_type, period, state, sum(jobs)::BIGINT AS jobs, sum(runs)::BIGINT AS runs, sum(gpu_hours::DECIMAL(38, 9))::DOUBLE AS gpu_hours
    FROM tagged
    GROUP BY ALL
)
SELECT period_type, period, state, jobs, runs, gpu_hours,
       jobs / NULLIF(sum(jobs) OVER w, 0)           AS share_jobs,
       -- NULL rather than a made-up share when a period has zero GPU-hours
       gpu_hours / NULLIF(sum(gpu_hours::DECIMAL(38, 9)) OVER w, 0) AS share_gpu_hours
FROM agg
WINDOW w AS (PARTITION BY period_type, period)
ORDER BY period_type, period, gpu_hours DESC, state;
