-- marts.runtime_quantiles: one row per GPU size bucket, plus one row size_bucket 'all'
-- (bucket_order 99): runtime distribution (elapsed_s of the final run, in hours) of terminal GPU jobs
-- that started and ended (start_ts and end_ts set): a job cancelled while pending never ran and has no
-- runtime (not 0 h). The jobs are those marts.job_totals.gpu_jobs counts (with an elapsed time).
-- Quantiles are continuous (linear interpolation, quantile_cont).
CREATE OR REPLACE TABLE marts.runtime_quantiles AS
WITH j AS (
    SELECT core.size_bucket(n_gpus)       AS size_bucket,
           core.size_bucket_order(n_gpus) AS bucket_order,
           elapsed_s / 3600.0             AS h
    FROM core.jobs
    WHERE n_gpus > 0
      AND core.is_terminal_state(state)
      AND end_ts IS NOT NULL
      AND start_ts IS NOT NULL
      AND elapsed_s IS NOT NULL
)
SELECT COALESCE(size_bucket, 'all')   AS size_bucket,
       COALESCE(bucket_order, 99)     AS bucket_order,
       count(*)                       AS jobs,
       quantile_cont(h, 0.50)         AS p50_h,
       quantile_cont(h, 0.90)         AS p90_h,
       quantile_cont(h, 0.99)         AS p99_h,
       max(h)                         AS max_h,
       avg(h::DECIMAL(38, 9))::DOUBLE                       AS mean_h
FROM j
GROUP BY GROUPING SETS ((size_bucket, bucket_order), ())
ORDER BY bucket_order;
