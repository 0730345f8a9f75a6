-- marts.cluster_comparison: one row per GPU cluster: this one (every finished GPU job in core.jobs)
-- and the published traces AcmeTrace summarises (Seren, Kalos, Philly, Helios, PAI; from the view
-- _published_clusters that gpusre.models.job_mix.cluster_comparison registers), with the job-mix figures
-- those papers report: GPU jobs, runtime, queue wait, GPUs per job, and the shares of completed,
-- cancelled and failed jobs by count and by GPU time.
-- This cluster's row classifies final states as AcmeTrace does, with core.job_outcome (the vocabulary's
-- FAILED_STATES): completed = COMPLETED, cancelled = CANCELLED, failed = FAILED, TIMEOUT, NODE_FAIL,
-- OUT_OF_MEMORY, BOOT_FAIL, DEADLINE; jobs in any other state (PREEMPTED, REQUEUED, still running) are
-- left out, so the three shares sum to 1.
-- Integer sums and sort-based medians only: a rerun gives bit-identical rows.
CREATE OR REPLACE TABLE marts.cluster_comparison AS
WITH finished AS (
    SELECT core.job_outcome(state) AS outcome,
           elapsed_s,
           date_diff('second', submit_ts, start_ts) AS queue_s,
           n_gpus,
           n_gpus::BIGINT * elapsed_s AS gpu_s,
           end_day
    FROM core.jobs
    WHERE n_gpus > 0 AND elapsed_s IS NOT NULL AND end_ts IS NOT NULL
      AND core.job_outcome(state) IS NOT NULL
), ours AS (
    SELECT $cluster                                   AS cluster,
           TRUE                                       AS this_cluster,
           NULL::VARCHAR                              AS organisation,
           strftime(min(end_day), '%Y-%m-%d') || ' … ' || strftime(max(end_day), '%Y-%m-%d') AS trace_period,
           'core.jobs'                                AS reference,
           count(*)                                   AS gpu_jobs,
           avg(elapsed_s)                             AS avg_run_time_s,
           quantile_cont(elapsed_s, 0.5)              AS med_run_time_s,
           max(elapsed_s)::DOUBLE                     AS max_run_time_s,
           avg(queue_s)                               AS avg_queue_s,
           quantile_cont(queue_s, 0.5)                AS med_queue_s,
           avg(n_gpus)                                AS avg_gpus,
           quantile_cont(n_gpus, 0.5)                 AS med_gpus,
           max(n_gpus)::DOUBLE                        AS max_gpus,
           count(*) FILTER (outcome = 'completed') / count(*) AS completed_share_jobs,
           count(*) FILTER (outcome = 'cancelled') / count(*) AS cancelled_share_jobs,
           count(*) FILTER (outcome = 'failed') / count(*)    AS failed_share_jobs,
           (sum(gpu_s) FILTER (outcome = 'completed') / NULLIF(sum(gpu_s), 0))::DOUBLE AS completed_share_gpu_time,
           (sum(gpu_s) FILTER (outcome = 'cancelled') / NULLIF(sum(gpu_s), 0))::DOUBLE AS cancelled_share_gpu_time,
           (sum(gpu_s) FILTER (outcome = 'failed') / NULLIF(sum(gpu_s), 0))::DOUBLE    AS failed_share_gpu_time
    FROM finished
    HAVING count(*) > 0
)
SELECT * FROM ours
UNION ALL BY NAME
SELECT FALSE AS this_cluster, * FROM _published_clusters
ORDER BY this_cluster DESC, gpu_jobs DESC;
