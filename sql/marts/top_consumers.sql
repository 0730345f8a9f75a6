-- marts.top_consumers: one row per (kind, rank): one of the top 20 users (kind 'user') or
-- accounts (kind 'account') by the GPU-hours of every GPU run that ended, over all data — the runs
-- marts.job_usage_daily counts: each terminal GPU job's final run (core.jobs: n_gpus > 0,
-- core.is_terminal_state, end_ts and start_ts set) and the earlier runs of requeued jobs
-- (core.instances_outside_jobs with an end_ts; user and account are the job's). So a user's GPU-hours
-- are all the GPU time the cluster gave their jobs, and the GPU-hours of all users sum to
-- marts.job_totals.gpu_hours (scope 'all'). jobs counts the terminal GPU jobs (once each, by their
-- final run), runs every run. A job cancelled while pending never ran: it is no job and no run here.
-- share_gpu_hours is relative to all such GPU-hours (not just the top 20). A missing user or
-- account is reported as '(unknown)'. Ties are broken by name so ranks are deterministic.
CREATE OR REPLACE TABLE marts.top_consumers AS
WITH runs AS (
    SELECT "user", account, 1 AS is_job, COALESCE(gpu_hours, 0.0) AS gpu_hours
    FROM core.jobs
    WHERE n_gpus > 0
      AND core.is_terminal_state(state)
      AND end_ts IS NOT NULL
      AND start_ts IS NOT NULL
    UNION ALL
    SELECT "user", account, 0 AS is_job, COALESCE(n_gpus * elapsed_s / 3600.0, 0.0) AS gpu_hours
    FROM core.instances_outside_jobs
    WHERE n_gpus > 0
      AND end_ts IS NOT NULL
), by_name AS (
    SELECT 'user' AS kind, COALESCE("user", '(unknown)') AS name, sum(is_job)::BIGINT AS jobs, count(*)::BIGINT AS runs,
           sum(gpu_hours::DECIMAL(38, 9))::DOUBLE AS gpu_hours
    FROM runs GROUP BY ALL
    UNION ALL
    SELECT 'account', COALESCE(account, '(unknown)'), sum(is_job)::BIGINT, count(*)::BIGINT,
           sum(gpu_hours::DECIMAL(38, 9))::DOUBLE
    FROM runs GROUP BY ALL
), ranked AS (
    SELECT kind,
           row_number() OVER (PARTITION BY kind ORDER BY gpu_hours DESC, name) AS rank,
           name, jobs, runs, gpu_hours,
           gpu_hours / NULLIF(sum(gpu_hours::DECIMAL(38, 9)) OVER (PARTITION BY kind), 0)     AS share_gpu_hours
    FROM by_name
)
SELECT kind, rank, name, jobs, runs, gpu_hours, share_gpu_hours
FROM ranked
WHERE rank <= 20
ORDER BY kind, rank;
