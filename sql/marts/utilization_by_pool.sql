-- marts.utilization_by_pool(date_from, date_to): a table macro, one row per pool of
-- marts.utilization_by_pool_daily over the UTC days date_from .. date_to (both included): the pool's GPUs,
-- the days in the window, how many of them are partial (marts.day_coverage: the data covers them only in
-- part; their capacity already counts only the covered hours, so they are summed like the others), the
-- window's capacity and allocated GPU-hours, utilization (allocated / capacity over the window; NULL
-- without capacity) and max_jobs_running (the most GPU jobs on one day: a job running for several days
-- counts on each, so days are not summed). The pools' capacity and allocated GPU-hours sum to
-- marts.utilization_daily's over the same days. Ordered by capacity, largest first, pool 'other' last.
CREATE OR REPLACE MACRO marts.utilization_by_pool(date_from, date_to) AS TABLE
SELECT pool,
       max(gpus)                                                     AS gpus,
       count(*)::BIGINT                                              AS days,
       count(*) FILTER (WHERE coalesce(partial, false))::BIGINT      AS partial_days,
       sum(capacity_gpu_hours)                                       AS capacity_gpu_hours,
       sum(allocated_gpu_hours)                                      AS allocated_gpu_hours,
       sum(allocated_gpu_hours) / nullif(sum(capacity_gpu_hours), 0) AS utilization,
       max(jobs_running)::BIGINT                                     AS max_jobs_running
FROM marts.utilization_by_pool_daily
WHERE day BETWEEN date_from AND date_to
GROUP BY pool
ORDER BY pool = 'other', sum(capacity_gpu_hours) DESC NULLS LAST, pool;
