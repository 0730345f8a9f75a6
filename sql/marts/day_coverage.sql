-- marts.day_coverage: one row per UTC day from the first to the last record of the dense sources
-- (Slurm accounting and node logs): the part of the day the data covers and whether the day is partial.
-- The covered span is the intersection of the sources' spans (latest first record .. earliest last
-- record, over the dense sources that have records), so a day counts as complete only when every
-- source covers it. A day is partial when more than $max_gap_minutes of it lie outside that span (a
-- complete day's last record is seldom exactly at 24:00). Partial days are labelled in every daily
-- mart (column partial, from this table) and left out of means, minima and trends.
-- Record time and which sources are dense: the source registry (raw.record_days, its per-file
-- summary of raw.record_times, and raw.sources), as marts.data_freshness.
-- Slurm accounting's span is the one every analytic uses (models/accounting_span.py: from the earliest
-- job start on its first record's day — a dump's first record is a job end, hours after jobs started
-- at midnight — to the latest moment the dumps show), passed in as $acct_from / $acct_to.
-- Parameters: $max_gap_minutes DOUBLE (models.day_coverage.MAX_GAP_MINUTES), $acct_from / $acct_to
-- TIMESTAMPTZ (NULL without jobs: the records' own span).
CREATE OR REPLACE TABLE marts.day_coverage AS
WITH record_spans AS (
    SELECT r.source_kind, min(r.first_ts) AS first_ts, max(r.last_ts) AS last_ts
    FROM raw.record_days AS r JOIN raw.sources AS s USING (source_kind) WHERE s.dense GROUP BY ALL
), spans AS (
    SELECT source_kind,
           CASE WHEN source_kind = 'sacct' THEN COALESCE($acct_from::TIMESTAMPTZ, first_ts) ELSE first_ts END AS first_ts,
           CASE WHEN source_kind = 'sacct' THEN COALESCE($acct_to::TIMESTAMPTZ, last_ts) ELSE last_ts END AS last_ts
    FROM record_spans
), span AS (
    SELECT max(first_ts) AS covered_from, min(last_ts) AS covered_to,
           min(first_ts) AS any_from, max(last_ts) AS any_to,
           string_agg(source_kind, ', ' ORDER BY source_kind) AS sources
    FROM spans HAVING count(*) > 0
), days AS (
    SELECT unnest(generate_series(timezone('UTC', any_from)::DATE, timezone('UTC', any_to)::DATE, INTERVAL 1 DAY))::DATE AS day
    FROM span
), bounded AS (
    SELECT d.day,
           timezone('UTC', d.day::TIMESTAMP)       AS d0,
           timezone('UTC', (d.day + 1)::TIMESTAMP) AS d1,
           s.covered_from, s.covered_to, s.sources
    FROM days AS d, span AS s
), covered AS (
    SELECT *, greatest(epoch_us(least(covered_to, d1)) - epoch_us(greatest(covered_from, d0)), 0) / 3.6e9 AS covered_hours
    FROM bounded
)
SELECT day,
       CASE WHEN covered_hours > 0 THEN greatest(covered_from, d0) END AS covered_from,  -- first covered instant of the day
       CASE WHEN covered_hours > 0 THEN least(covered_to, d1) END     AS covered_to,    -- last covered instant
       covered_hours,                                                                   -- 0 .. 24
       covered_hours < 24 - $max_gap_minutes::DOUBLE / 60 AS partial,
       sources                                                                          -- sources whose spans define it
FROM covered
ORDER BY day;
