-- marts.size_buckets: one row per (period, GPU size bucket): terminal GPU jobs and GPU-hours,
-- with each bucket's share of the period's jobs and GPU-hours (shares sum to 1 per period).
-- period_type 'all' (period 'all'), 'month' (period 'YYYY-MM') or 'week' (ISO week 'YYYY-Www');
-- jobs are attributed to the period of their end day. Buckets with no jobs in a period have no
-- row (read them as share 0). Built from marts.job_usage_daily.
CREATE OR REPLACE TABLE marts.size_buckets AS
WITH tagged AS (
    SELECT 'all' AS period_type, 'all' AS period, size_bucket, bucket_order, jobs, gpu_hours
    FROM marts.job_usage_daily
    UNION ALL
    SELECT 'month', strftime(day, '%Y-%m'), size_bucket, bucket_order, jobs, gpu_hours
    FROM marts.job_usage_daily
    UNION ALL
    SELECT 'week', strftime(day, '%G-W%V'), size_bucket, bucket_order, jobs, gpu_hours
    FROM marts.job_usage_daily
), agg AS (
    SELECT period_type, period, size_bucket, bucket_order,
           sum(jobs)::BIGINT AS jobs, sum(gpu_hours::DECIMAL(38, 9))::DOUBLE AS gpu_hours
    FROM tagged
    GROUP BY ALL
)
SELECT period_type, period, size_bucket, bucket_order, jobs, gpu_hours,
       jobs / NULLIF(sum(jobs) OVER w, 0)           AS share_jobs,
       gpu_hours / NULLIF(sum(gpu_hours::DECIMAL(38, 9)) OVER w, 0) AS share_gpu_hours
FROM agg
WINDOW w AS (PARTITION BY period_type, period)
ORDER BY period_type, period, bucket_order;
