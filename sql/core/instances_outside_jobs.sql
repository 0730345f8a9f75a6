-- One row per started instance of a job that core.jobs does not describe: the earlier instances of
-- a requeued job, and the last started one of a job requeued and pending again (core.jobs shows
-- the pending record). Used to attribute instances killed before the job's final record.
SELECT i.job_id, i.instance_no, i.state, i.nodes, i.start_ts, i.end_ts, i.elapsed_s, i.n_gpus, i.exit_code,
       i.exit_signal, j.account
FROM core.job_instances AS i
JOIN core.jobs AS j USING (job_id)
WHERE NOT i.is_latest OR i.start_ts IS DISTINCT FROM j.start_ts
