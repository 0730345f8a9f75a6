-- marts.job_states_daily: one row per (UTC end day, state): the GPU runs that ended that day in that
-- state, how many were a job's final run (jobs), and their GPU-hours, all size buckets together
-- (marts.job_usage_daily summed over size_bucket; an earlier run of a requeued job counts under its
-- own state). in_failure_set says whether the state is one of $failure_states, the report's one
-- failure-state set. Parameters: $failure_states VARCHAR[].
CREATE OR REPLACE TABLE marts.job_states_daily AS
SELECT day, state, sum(jobs)::BIGINT AS jobs, sum(runs)::BIGINT AS runs, sum(gpu_hours::DECIMAL(38, 9))::DOUBLE AS gpu_hours,
       list_contains($failure_states::VARCHAR[], state) AS in_failure_set
FROM marts.job_usage_daily
GROUP BY day, state
ORDER BY day, state;
