-- marts.utilization_summary(date_to, recent_days): a table macro, one row per scope of
-- marts.utilization_daily up to the report day date_to: 'all' (every complete day up to date_to) and
-- 'recent' (the last recent_days complete days up to date_to). Partial days (marts.day_coverage) are
-- left out of both, so a day the data covers only in part never pulls the mean or the minimum down.
-- Columns: scope, days, first_day, last_day, capacity_gpu_hours, allocated_gpu_hours, utilization
-- (allocated / capacity over the scope), lowest_day and lowest_utilization (the complete day with the
-- lowest utilization), partial_days (days up to date_to left out).
CREATE OR REPLACE MACRO marts.utilization_summary(date_to, recent_days) AS TABLE
WITH upto AS (
    SELECT * FROM marts.utilization_daily WHERE day <= date_to
), complete AS (
    SELECT *, row_number() OVER (ORDER BY day DESC) AS age FROM upto WHERE NOT coalesce(partial, false)
), scoped AS (
    SELECT 'all' AS scope, * FROM complete
    UNION ALL
    SELECT 'recent', * FROM complete WHERE age <= recent_days
)
SELECT scope,
       count(*)::BIGINT                                             AS days,
       min(day)                                                     AS first_day,
       max(day)                                                     AS last_day,
       sum(capacity_gpu_hours)                                      AS capacity_gpu_hours,
       sum(allocated_gpu_hours)                                     AS allocated_gpu_hours,
       sum(allocated_gpu_hours) / nullif(sum(capacity_gpu_hours), 0) AS utilization,
       arg_min(day, utilization) FILTER (WHERE utilization IS NOT NULL) AS lowest_day,
       min(utilization)                                             AS lowest_utilization,
       (SELECT count(*) FROM upto WHERE coalesce(partial, false))::BIGINT AS partial_days
FROM scoped
GROUP BY scope;
