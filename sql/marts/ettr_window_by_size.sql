-- marts.ettr_window_by_size(date_from, date_to): a table macro, one row per GPU size bucket of the
-- training runs of marts.ettr_runs that ended (last job end, UTC day) in [date_from, date_to] and are
-- not ongoing: runs, median nodes, ETTR mean and p10 / p50 / p90 (linear interpolation), the median
-- ETTR without queue wait (ettr_excl_queue_p50, beside the ETTR with it), mean
-- interruptions per run, and the mean share of a run's wall-clock spent in queue wait, in gaps between
-- its jobs, in restart overhead and in re-done work. A macro because the SLO review's window is chosen
-- per report; the per-bucket ETTR quantiles every section quotes come from here. Quantiles are
-- quantile_cont (linear interpolation), the method of marts.ettr_by_size too
-- (job_reliability.ETTR_QUANTILE_INTERPOLATION = 'linear'): change both or neither.
CREATE OR REPLACE MACRO marts.ettr_window_by_size(date_from, date_to) AS TABLE
WITH r AS (
    SELECT core.size_bucket(n_gpus) AS size_bucket, core.size_bucket_order(n_gpus) AS bucket_order, *,
           greatest(COALESCE(wallclock_s, 0) - COALESCE(queue_s, 0) - COALESCE(run_s, 0), 0) AS gap_s
    FROM marts.ettr_runs
    WHERE NOT COALESCE(ongoing, false) AND ettr IS NOT NULL
      AND CAST(timezone('UTC', last_end_ts) AS DATE) BETWEEN date_from AND date_to
)
SELECT size_bucket, bucket_order, count(*)::BIGINT AS runs,
       quantile_cont(COALESCE(n_nodes, 0), 0.5) AS median_nodes,
       avg(ettr) AS ettr_mean, quantile_cont(ettr, 0.1) AS ettr_p10, quantile_cont(ettr, 0.5) AS ettr_p50,
       quantile_cont(ettr, 0.9) AS ettr_p90, quantile_cont(ettr_excl_queue, 0.5) AS ettr_excl_queue_p50,
       avg(COALESCE(interruptions, 0)) AS interruptions_mean,
       avg(COALESCE(queue_s, 0) / wallclock_s) FILTER (WHERE wallclock_s > 0) AS queue_share,
       avg(gap_s / wallclock_s) FILTER (WHERE wallclock_s > 0) AS gap_share,
       avg(COALESCE(restart_overhead_s, 0) / wallclock_s) FILTER (WHERE wallclock_s > 0) AS restart_share,
       avg(COALESCE(lost_work_s, 0) / wallclock_s) FILTER (WHERE wallclock_s > 0) AS lost_work_share
FROM r
GROUP BY size_bucket, bucket_order
ORDER BY bucket_order;
