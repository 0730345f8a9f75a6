-- marts.data_freshness: one row per input source kind with ingested files (sacct, syslog,
-- slurm_events, alerts): files, when the last one was ingested, the span of the records' own
-- timestamps, and the UTC days inside that span without a single record. For the dense sources
-- (sacct: every submit/start/end; syslog: every line) an empty day is a missing dump or log file;
-- for the sparse ones (alerts, node-state events) it may just be a quiet day.
-- Record time and which sources are dense come from the source registry
-- (gpusre.models.sources.registry); records per day from raw.record_days (its per-file summary of
-- raw.record_times), which sources are dense from raw.sources. Slurm accounting's span is the one every
-- analytic uses (models/accounting_span.py, passed in as $acct_from / $acct_to, NULL without jobs): a
-- first dump holding only a job running since noon is stamped at the dump's end, but the accounting
-- speaks from noon (the data warnings once said it began the next day).
-- Node states (slurm_events) also say where their history ends, when the dumps say when they were cut
-- (history_end_ts: start + Duration of an event still open in a sacctmgr dump, an sinfo snapshot's
-- time; NULL when no dump says so, or a record is later than every known cut), and whether that is
-- more than an hour before the accounting's end (ends_before_accounting: a nightly node-state dump is
-- missing; the node-state marts measure nothing after it). The rule of
-- gpusre.models.sources.slurm_events.ingest.dumps_cut / node_states_end (HISTORY_END_SLACK = 1 h).
-- Alert notifications are dated here, per record, from raw.alert_notifications (a small table; the alert
-- marts read all of it every night too), not from raw.record_days: without a logger's time a record
-- is stamped with its alert's start (registry record_ts), which Alertmanager re-sends unchanged, and a
-- Watchdog started three weeks before made the alert data "begin" then. Such a record was delivered
-- no earlier than the day its file is named for (the last YYYY-MM-DD in the path: the rule of
-- gpusre.models.alerts.clustering._FILE_DAY_SQL, which the alert data span and the notification days
-- use too); a logger's (or snapshot's) time stays what it says.
-- Node states are dated by their node events only (raw.slurm_events, event_type 'node'): a cluster event
-- (the "Cluster Registered TRES" period every sacctmgr dump lists, begun at the last slurmctld restart,
-- weeks before) is not a node-state record (README keeps it apart, core.cluster_events), and once made the
-- node-state data "begin" weeks early with every day between "without records". records still counts
-- every line loaded (raw.record_days).
-- A meta-alert's start (a Watchdog's, re-sent unchanged from its first firing) dates nothing: $meta_alerts is
-- the catalog's pattern (gpusre.models.alerts.clustering.meta_alert_pattern, models/catalog/alert_meta.csv).
-- Without accounting, a history no dump cut ends where models/accounting_span.node_history_end says
-- ($states_to: the last dump's named day, never past the newest record's day), as node availability reads it.
-- Parameters: $acct_from / $acct_to TIMESTAMPTZ, $states_to TIMESTAMPTZ (NULL with accounting), $meta_alerts VARCHAR.
CREATE OR REPLACE TABLE marts.data_freshness AS
WITH alert_times AS (
    SELECT coalesce(received_at, greatest(
               CASE WHEN NOT coalesce(regexp_matches(alertname, $meta_alerts), false) THEN starts_at END,
               timezone('UTC', CAST(try_strptime(
               list_last(regexp_extract_all(source_file, '(\d{4}-\d{2}-\d{2})', 1)), '%Y-%m-%d')::DATE AS TIMESTAMP))))
           AS ts
    FROM raw.alert_notifications
), per_day AS (
    SELECT source_kind, day, sum(records) AS n, min(first_ts) AS first_ts, max(last_ts) AS last_ts
    FROM raw.record_days WHERE source_kind NOT IN ('alerts', 'slurm_events') GROUP BY ALL
    UNION ALL
    SELECT 'slurm_events', CAST(timezone('UTC', start_ts) AS DATE), count(*), min(start_ts), max(start_ts)
    FROM raw.slurm_events WHERE event_type = 'node' AND start_ts IS NOT NULL GROUP BY ALL
    UNION ALL
    SELECT 'alerts', CAST(timezone('UTC', ts) AS DATE), count(*), min(ts), max(ts)
    FROM alert_times WHERE ts IS NOT NULL GROUP BY ALL
), span AS (
    SELECT source_kind, sum(n)::BIGINT AS records, min(first_ts) AS first_record_ts, max(last_ts) AS last_record_ts,
           count(*) AS days_with_records, min(day) AS first_day, max(day) AS last_day
    FROM per_day GROUP BY ALL
), calendar AS (
    SELECT source_kind, unnest(generate_series(first_day, last_day, INTERVAL 1 DAY))::DATE AS day FROM span
), empty AS (
    SELECT c.source_kind, list(c.day ORDER BY c.day) AS empty_days
    FROM calendar AS c ANTI JOIN per_day AS p ON p.source_kind = c.source_kind AND p.day = c.day
    GROUP BY ALL
), states_cut AS (
    SELECT greatest(max(observed_ts), (SELECT max(observed_ts) FROM raw.slurm_event_snapshots)) AS cut,
           greatest(max(start_ts), max(end_ts)) AS last_ts
    FROM raw.slurm_events
), states_end AS (
    SELECT 'slurm_events' AS source_kind,
           CASE WHEN cut IS NOT NULL AND (last_ts IS NULL OR last_ts <= cut) THEN cut
                WHEN $acct_to::TIMESTAMPTZ IS NULL THEN $states_to::TIMESTAMPTZ END AS history_end_ts
    FROM states_cut
), loaded AS (
    SELECT source_kind, sum(records)::BIGINT AS records FROM raw.record_days GROUP BY ALL
), files AS (
    SELECT source_kind, count(*) AS files, count(*) FILTER (WHERE status = 'refused') AS files_refused,
           max(ingested_at) AS last_ingested_at
    FROM raw.ingested_files GROUP BY ALL
)
SELECT f.source_kind,
       coalesce(src.dense, false)                AS dense,           -- an empty day means missing data
       f.files, f.files_refused, f.last_ingested_at,
       coalesce(CASE WHEN f.source_kind = 'slurm_events' THEN l.records END, s.records, 0) AS records,
       CASE WHEN f.source_kind = 'sacct' THEN least(s.first_record_ts, $acct_from::TIMESTAMPTZ)
            ELSE s.first_record_ts END AS first_record_ts,
       CASE WHEN f.source_kind = 'sacct' THEN greatest(s.last_record_ts, $acct_to::TIMESTAMPTZ)
            ELSE s.last_record_ts END AS last_record_ts,
       coalesce(s.days_with_records, 0)          AS days_with_records,
       coalesce(len(e.empty_days), 0)            AS n_empty_days,
       coalesce(e.empty_days, []::DATE[])        AS empty_days,
       h.history_end_ts,
       CASE WHEN f.source_kind = 'slurm_events' THEN
            coalesce(h.history_end_ts < $acct_to::TIMESTAMPTZ - INTERVAL 1 HOUR, false) END AS ends_before_accounting
FROM files AS f
LEFT JOIN span AS s USING (source_kind)
LEFT JOIN empty AS e USING (source_kind)
LEFT JOIN states_end AS h USING (source_kind)
LEFT JOIN loaded AS l USING (source_kind)
JOIN raw.sources AS src USING (source_kind)
ORDER BY f.source_kind;
