-- marts.cluster_comparison: one row per GPU cluster: this one (every GPU job and GPU run that ended, as
-- marts.gpu_time_by_state counts them) and the published traces AcmeTrace summarises (Seren, Kalos,
-- Philly, Helios, PAI; from the view _published_clusters that gpusre.models.job_mix.cluster_comparison
-- registers), with the job-mix figures those papers report: GPU jobs, runtime, queue wait, GPUs per job,
-- and the shares of completed, cancelled and failed jobs by count and by GPU time.
--
-- What the published figures count (AcmeTrace's cluster_summary.csv): one record per GPU job (gpu_num > 0)
-- of the scheduler's trace, with its final state; runtime = end - start, queue = start - submit,
-- gpu_time = runtime x GPUs; a share of jobs is a class's jobs / all GPU jobs, a share of GPU time a
-- class's GPU time / all GPU jobs' GPU time. Their traces hold only COMPLETED, CANCELLED and the failed
-- ends FAILED, TIMEOUT, NODE_FAIL, so there every job and GPU-second is in one of the three classes.
--
-- This cluster's row, like for like:
-- - Jobs (gpu_jobs, runtime, queue wait, GPUs, shares of jobs): one per terminal GPU job that started
--   (core.jobs: n_gpus > 0, core.is_terminal_state, start_ts and end_ts set — the jobs marts.job_totals
--   counts; a job cancelled while pending never ran: no runtime, no GPU time, not a GPU job), by its
--   final record, as a trace record is.
-- - GPU time: every run's, the earlier runs of requeued jobs (core.instances_outside_jobs) included, each
--   under the state it ended in — the GPU time the cluster gave, which a trace of the scheduler's jobs
--   holds too; an earlier run that ended NODE_FAIL is a node-failure end, failed in the published classes.
-- - Classes as AcmeTrace's, with core.job_outcome (the vocabulary's FAILED_STATES): completed = COMPLETED,
--   cancelled = CANCELLED, failed = FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE.
-- - Denominators: every GPU job and every run's GPU time, as in the published figures. Runs and jobs
--   that ended in a state the published traces do not have (PREEMPTED, REQUEUED) count in the
--   denominator but in no class, so a triple sums to 1 minus their share; each share is then the sum of
--   marts.gpu_time_by_state's shares (period 'all') over the class's states — one value per quantity in
--   the report.
-- Integer sums and sort-based medians only: a rerun gives bit-identical rows.
CREATE OR REPLACE TABLE marts.cluster_comparison AS
WITH runs AS (
    -- each terminal GPU job's final run (is_job), as marts.job_usage_daily counts it
    SELECT TRUE                                      AS is_job,
           core.job_outcome(state)                   AS outcome,
           elapsed_s,
           date_diff('second', submit_ts, start_ts)  AS queue_s,
           n_gpus,
           n_gpus::BIGINT * COALESCE(elapsed_s, 0)   AS gpu_s,
           end_day                                   AS day
    FROM core.jobs
    WHERE n_gpus > 0 AND core.is_terminal_state(state) AND end_ts IS NOT NULL AND start_ts IS NOT NULL
    UNION ALL
    -- the earlier runs of requeued jobs: GPU time only (the job is counted once, by its final run)
    SELECT FALSE, core.job_outcome(state), NULL, NULL, n_gpus, n_gpus::BIGINT * elapsed_s,
           CAST(timezone('UTC', end_ts) AS DATE)
    FROM core.instances_outside_jobs
    WHERE n_gpus > 0 AND end_ts IS NOT NULL
), ours AS (
    SELECT $cluster                                   AS cluster,
           TRUE                                       AS this_cluster,
           NULL::VARCHAR                              AS organisation,
           strftime(min(day), '%Y-%m-%d') || ' … ' || strftime(max(day), '%Y-%m-%d') AS trace_period,
           'core.jobs, core.instances_outside_jobs'   AS reference,
           count(*) FILTER (is_job)                   AS gpu_jobs,
           avg(elapsed_s) FILTER (is_job)             AS avg_run_time_s,
           quantile_cont(elapsed_s, 0.5) FILTER (is_job) AS med_run_time_s,
           (max(elapsed_s) FILTER (is_job))::DOUBLE   AS max_run_time_s,
           avg(queue_s) FILTER (is_job)               AS avg_queue_s,
           quantile_cont(queue_s, 0.5) FILTER (is_job) AS med_queue_s,
           avg(n_gpus) FILTER (is_job)                AS avg_gpus,
           quantile_cont(n_gpus, 0.5) FILTER (is_job) AS med_gpus,
           (max(n_gpus) FILTER (is_job))::DOUBLE      AS max_gpus,
           count(*) FILTER (is_job AND outcome = 'completed') / count(*) FILTER (is_job) AS completed_share_jobs,
           count(*) FILTER (is_job AND outcome = 'cancelled') / count(*) FILTER (is_job) AS cancelled_share_jobs,
           count(*) FILTER (is_job AND outcome = 'failed') / count(*) FILTER (is_job)    AS failed_share_jobs,
           (sum(gpu_s) FILTER (outcome = 'completed') / NULLIF(sum(gpu_s), 0))::DOUBLE AS completed_share_gpu_time,
           (sum(gpu_s) FILTER (outcome = 'cancelled') / NULLIF(sum(gpu_s), 0))::DOUBLE AS cancelled_share_gpu_time,
           (sum(gpu_s) FILTER (outcome = 'failed') / NULLIF(sum(gpu_s), 0))::DOUBLE    AS failed_share_gpu_time
    FROM runs
    HAVING count(*) FILTER (is_job) > 0
)
SELECT * FROM ours
UNION ALL BY NAME
SELECT FALSE AS this_cluster, * FROM _published_clusters
ORDER BY this_cluster DESC, gpu_jobs DESC;
