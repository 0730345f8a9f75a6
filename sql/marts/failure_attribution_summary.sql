-- marts.failure_attribution_summary: one row per (scope, day, attribution, state) over the attributed
-- failed runs: the failed jobs of marts.job_failure_attribution (a job's final run, under its final state)
-- and the earlier runs of requeued jobs in marts.instance_failure_attribution (e.g. a NODE_FAIL run Slurm
-- requeued, under the state that run ended in) — the same runs the nightly headline's infrastructure cards,
-- marts.hw_incidents and marts.failure_taxonomy count, so every section shows one figure per day.
-- jobs counts failed jobs (final runs only: a requeued job that later completed is no failed job), runs
-- every attributed run (jobs + the requeued runs), lost_gpu_hours the work lost over every run
-- (infrastructure failures and 'planned' runs carry lost work). attribution 'planned' (planned maintenance
-- on the run's node ended it, no fault: models/vocabulary.py ATTRIBUTIONS) is its own row, no failure: a
-- reader of infrastructure failures reads attribution = 'infrastructure', never the '(all)' total. scope 'all' (day NULL) is the whole record, scope 'day'
-- one UTC day of the run's end. attribution '(all)' and state '(all)' rows are the totals over
-- attributions / states, so a report reads every count it shows instead of adding rows up.
-- marts.instance_failure_attribution is written with marts.job_failure_attribution (assets/failures.py);
-- where it does not exist (a warehouse written before it), runs are the jobs' final runs only.
SET VARIABLE gpusre_attributed_runs = (
    SELECT list(schema_name || '.' || table_name ORDER BY table_name DESC)
    FROM duckdb_tables()
    WHERE database_name = current_database() AND schema_name = 'marts'
      AND table_name IN ('job_failure_attribution', 'instance_failure_attribution'));

CREATE OR REPLACE TABLE marts.failure_attribution_summary AS
WITH attributed AS (
    -- instance_no is NULL on a job's final run (marts.job_failure_attribution has no such column)
    SELECT NULL::INTEGER AS instance_no, NULL::TIMESTAMPTZ AS end_ts, NULL::VARCHAR AS attribution,
           NULL::VARCHAR AS state, NULL::DOUBLE AS lost_gpu_hours
    WHERE false
    UNION ALL BY NAME
    SELECT * FROM query_table(getvariable('gpusre_attributed_runs'), true)
), f AS (
    SELECT CAST(timezone('UTC', end_ts) AS DATE) AS end_day, COALESCE(attribution, 'unknown') AS attribution,
           COALESCE(state, 'UNKNOWN') AS state, (instance_no IS NULL)::INTEGER AS is_job, lost_gpu_hours
    FROM attributed
), g AS (
    SELECT 'all' AS scope, NULL::DATE AS day, CASE WHEN grouping(attribution) = 1 THEN '(all)' ELSE attribution END AS attribution,
           CASE WHEN grouping(state) = 1 THEN '(all)' ELSE state END AS state,
           COALESCE(sum(is_job), 0)::BIGINT AS jobs, count(*)::BIGINT AS runs,
           COALESCE(sum(lost_gpu_hours::DECIMAL(38, 9)), 0)::DOUBLE AS lost_gpu_hours
    FROM f GROUP BY GROUPING SETS ((attribution, state), (attribution), (state), ())
    UNION ALL
    SELECT 'day', end_day, CASE WHEN grouping(attribution) = 1 THEN '(all)' ELSE attribution END,
           CASE WHEN grouping(state) = 1 THEN '(all)' ELSE state END,
           COALESCE(sum(is_job), 0)::BIGINT, count(*)::BIGINT,
           COALESCE(sum(lost_gpu_hours::DECIMAL(38, 9)), 0)::DOUBLE
    FROM f GROUP BY GROUPING SETS ((end_day, attribution, state), (end_day, attribution), (end_day, state), (end_day))
)
SELECT * FROM g ORDER BY scope, day, attribution, state;
