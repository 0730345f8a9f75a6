-- marts.ingestion_by_source: one row per source kind of raw.ingested_files (sacct, syslog, alerts, ...),
-- plus a '(all)' row over every file and a '(last day)' row over the files ingested on the latest UTC
-- ingestion day (a run is not recorded explicitly; that day stands for it): files ingested, rows
-- read / loaded / rejected, files refused as a whole, reject_rate (rows rejected / rows read, NULL
-- when none were read), the last ingestion time, and the commonest reason in raw.rejects of the source
-- kind's rows (a source whose every record was rejected: the reports quote it), and files_gone: files
-- the ledger holds that are gone from the landing folder (gone_since set; a lake source's rows stay).
-- rows_rejected counts bad records, as raw.rejects holds them with line_no > 0; a refused file's
-- line-0 reject is counted by files_refused instead. incidents.csv is a file of kind 'incidents'.
CREATE OR REPLACE TABLE marts.ingestion_by_source AS
WITH f AS (
    SELECT *, CAST(timezone('UTC', ingested_at) AS DATE) AS ingest_day FROM raw.ingested_files
), tagged AS (
    SELECT source_kind, f.* EXCLUDE (source_kind) FROM f
    UNION ALL
    SELECT '(all)', f.* EXCLUDE (source_kind) FROM f
    UNION ALL
    SELECT '(last day)', f.* EXCLUDE (source_kind) FROM f WHERE ingest_day = (SELECT max(ingest_day) FROM f)
)
SELECT source_kind, count(*)::BIGINT AS files,
       COALESCE(sum(rows_read), 0)::BIGINT AS rows_read, COALESCE(sum(rows_loaded), 0)::BIGINT AS rows_loaded,
       COALESCE(sum(rows_rejected), 0)::BIGINT AS rows_rejected,
       count(*) FILTER (WHERE status = 'refused')::BIGINT AS files_refused,
       count(*) FILTER (WHERE gone_since IS NOT NULL)::BIGINT AS files_gone,
       COALESCE(sum(rows_rejected), 0) / NULLIF(sum(rows_read), 0) AS reject_rate,
       max(ingested_at) AS last_ingested_at,
       (SELECT mode(r.error) FROM raw.rejects AS r WHERE r.source_kind = tagged.source_kind) AS top_reject_reason
FROM tagged
GROUP BY source_kind
ORDER BY source_kind LIKE '(%', source_kind;
