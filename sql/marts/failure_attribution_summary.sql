-- marts.failure_attribution_summary: one row per (scope, day, attribution, state) over the failed jobs
-- of marts.job_failure_attribution: jobs and lost GPU-hours (infrastructure failures only carry lost
-- work). scope 'all' (day NULL) is the whole record, scope 'day' one UTC day of the job's end.
-- attribution '(all)' and state '(all)' rows are the totals over attributions / states, so a report
-- reads every count it shows instead of adding rows up.
CREATE OR REPLACE TABLE marts.failure_attribution_summary AS
WITH f AS (
    SELECT CAST(timezone('UTC', end_ts) AS DATE) AS end_day, COALESCE(attribution, 'unknown') AS attribution,
           COALESCE(state, 'UNKNOWN') AS state, lost_gpu_hours
    FROM marts.job_failure_attribution
), g AS (
    SELECT 'all' AS scope, NULL::DATE AS day, CASE WHEN grouping(attribution) = 1 THEN '(all)' ELSE attribution END AS attribution,
           CASE WHEN grouping(state) = 1 THEN '(all)' ELSE state END AS state, count(*)::BIGINT AS jobs,
           COALESCE(sum(lost_gpu_hours::DECIMAL(38, 9)), 0)::DOUBLE AS lost_gpu_hours
    FROM f GROUP BY GROUPING SETS ((attribution, state), (attribution), (state), ())
    UNION ALL
    SELECT 'day', end_day, CASE WHEN grouping(attribution) = 1 THEN '(all)' ELSE attribution END,
           CASE WHEN grouping(state) = 1 THEN '(all)' ELSE state END, count(*)::BIGINT,
           COALESCE(sum(lost_gpu_hours::DECIMAL(38, 9)), 0)::DOUBLE
    FROM f GROUP BY GROUPING SETS ((end_day, attribution, state), (end_day, attribution), (end_day, state), (end_day))
)
SELECT * FROM g ORDER BY scope, day, attribution, state;
