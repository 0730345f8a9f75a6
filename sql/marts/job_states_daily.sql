-- marts.job_states_daily: one row per (UTC end day, final state): terminal GPU jobs that ended that
-- day in that state and their GPU-hours, all size buckets together (marts.job_usage_daily summed over
-- size_bucket). in_failure_set says whether the state is one of $failure_states, the report's one
-- failure-state set. Parameters: $failure_states VARCHAR[].
CREATE OR REPLACE TABLE marts.job_states_daily AS
SELECT day, state, sum(jobs)::BIGINT AS jobs, sum(gpu_hours::DECIMAL(38, 9))::DOUBLE AS gpu_hours,
       list_contains($failure_states::VARCHAR[], state) AS in_failure_set
FROM marts.job_usage_daily
GROUP BY day, state
ORDER BY day, state;
