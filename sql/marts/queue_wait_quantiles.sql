-- marts.queue_wait_quantiles: one row per GPU size bucket, plus one row size_bucket 'all'
-- (bucket_order 99): queue wait (core.jobs.queue_wait_s, in minutes) of GPU jobs that started
-- (start_ts set), whatever their state. Quantiles are continuous (quantile_cont).
-- running_jobs: those of the jobs not yet in a final state (core.is_terminal_state) at the end of the data —
-- their wait is known, their end is not — so a report can say why this count exceeds the finished jobs of
-- marts.size_buckets and marts.runtime_quantiles ("136 (3 still running)").
CREATE OR REPLACE TABLE marts.queue_wait_quantiles AS
WITH j AS (
    SELECT core.size_bucket(n_gpus)       AS size_bucket,
           core.size_bucket_order(n_gpus) AS bucket_order,
           queue_wait_s / 60.0            AS m,
           NOT core.is_terminal_state(state) AS running
    FROM core.jobs
    WHERE n_gpus > 0
      AND start_ts IS NOT NULL
      AND queue_wait_s IS NOT NULL
)
SELECT COALESCE(size_bucket, 'all')   AS size_bucket,
       COALESCE(bucket_order, 99)     AS bucket_order,
       count(*)                       AS jobs,
       count(*) FILTER (WHERE running) AS running_jobs,
       quantile_cont(m, 0.50)         AS p50_min,
       quantile_cont(m, 0.90)         AS p90_min,
       quantile_cont(m, 0.99)         AS p99_min,
       max(m)                         AS max_min,
       avg(m::DECIMAL(38, 9))::DOUBLE                       AS mean_min
FROM j
GROUP BY GROUPING SETS ((size_bucket, bucket_order), ())
ORDER BY bucket_order;
