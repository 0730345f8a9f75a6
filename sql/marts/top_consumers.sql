-- marts.top_consumers: one row per (kind, rank): one of the top 20 users (kind 'user') or
-- accounts (kind 'account') by GPU-hours of terminal GPU jobs with an end_ts, over all data.
-- share_gpu_hours is relative to all such GPU-hours (not just the top 20). A missing user or
-- account is reported as '(unknown)'. Ties are broken by name so ranks are deterministic.
CREATE OR REPLACE TABLE marts.top_consumers AS
WITH j AS (
    SELECT "user", account, COALESCE(gpu_hours, 0.0) AS gpu_hours
    FROM core.jobs
    WHERE n_gpus > 0
      AND core.is_terminal_state(state)
      AND end_ts IS NOT NULL
), by_name AS (
    SELECT 'user' AS kind, COALESCE("user", '(unknown)') AS name, count(*) AS jobs,
           sum(gpu_hours::DECIMAL(38, 9))::DOUBLE AS gpu_hours
    FROM j GROUP BY ALL
    UNION ALL
    SELECT 'account', COALESCE(account, '(unknown)'), count(*), sum(gpu_hours::DECIMAL(38, 9))::DOUBLE
    FROM j GROUP BY ALL
), ranked AS (
    SELECT kind,
           row_number() OVER (PARTITION BY kind ORDER BY gpu_hours DESC, name) AS rank,
           name, jobs, gpu_hours,
           gpu_hours / NULLIF(sum(gpu_hours::DECIMAL(38, 9)) OVER (PARTITION BY kind), 0)     AS share_gpu_hours
    FROM by_name
)
SELECT kind, rank, name, jobs, gpu_hours, share_gpu_hours
FROM ranked
WHERE rank <= 20
ORDER BY kind, rank;
