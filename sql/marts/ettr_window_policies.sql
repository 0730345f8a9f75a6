-- marts.ettr_window_policies(date_from, date_to): a table macro, one row per checkpoint policy (source,
-- checkpoint interval, configured restart overhead) of the training runs of marts.ettr_runs that ended
-- in [date_from, date_to] and are not ongoing: how many runs were given it. The assumptions behind
-- every ETTR number of the SLO review.
CREATE OR REPLACE MACRO marts.ettr_window_policies(date_from, date_to) AS TABLE
SELECT policy_source, checkpoint_interval_s, restart_overhead_cfg_s, count(*)::BIGINT AS runs
FROM marts.ettr_runs
WHERE NOT COALESCE(ongoing, false) AND ettr IS NOT NULL
  AND CAST(timezone('UTC', last_end_ts) AS DATE) BETWEEN date_from AND date_to
GROUP BY ALL
ORDER BY runs DESC, policy_source, checkpoint_interval_s;
