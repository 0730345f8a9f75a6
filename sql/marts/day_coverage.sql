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
-- Days follow the one day rule of models/accounting_span.py (day_start / counted_end, the rule of every
-- capacity, in-service and exposure figure): every source's span starts at its first day's midnight (the
-- first day counts whole: a first job at 04:30 leaves quiet hours, not a partial day), and the covered
-- span ends at the next midnight when its end misses at most $max_gap_minutes of that day (else at the
-- end) — so covered_to is the moment open outages and repairs are counted to, and no day after it has a row.
-- accounting_hours / accounting_complete: the same for Slurm accounting's span alone (its counted end), so
-- a day the accounting covers completely stays a report day when another source stopped at midnight (the
-- nightly says which source has nothing for it rather than re-render the day before); NULL without jobs.
-- Parameters: $max_gap_minutes DOUBLE (models.day_coverage.MAX_GAP_MINUTES), $acct_from / $acct_to
-- TIMESTAMPTZ (NULL without jobs: the records' own span).
CREATE OR REPLACE TABLE marts.day_coverage AS
WITH record_spans AS (
    SELECT r.source_kind, min(r.first_ts) AS first_ts, max(r.last_ts) AS last_ts
    FROM raw.record_days AS r JOIN raw.sources AS s USING (source_kind) WHERE s.dense GROUP BY ALL
), spans AS (
    SELECT source_kind,
           timezone('UTC', timezone('UTC', CASE WHEN source_kind = 'sacct' THEN COALESCE($acct_from::TIMESTAMPTZ, first_ts)
                                                ELSE first_ts END)::DATE::TIMESTAMP) AS first_ts,
           CASE WHEN source_kind = 'sacct' THEN COALESCE($acct_to::TIMESTAMPTZ, last_ts) ELSE last_ts END AS last_ts
    FROM record_spans
), raw_span AS (
    SELECT max(first_ts) AS covered_from, min(last_ts) AS last_covered,
           min(first_ts) AS any_from, max(last_ts) AS last_any,
           string_agg(source_kind, ', ' ORDER BY source_kind) AS sources
    FROM spans HAVING count(*) > 0
), ends AS (
    -- counted_end of both ends: t, or its next midnight when t lies inside a day and at most $max_gap_minutes before it
    SELECT *, timezone('UTC', (timezone('UTC', t)::DATE + 1)::TIMESTAMP) AS next_midnight
    FROM (SELECT 'covered' AS which, last_covered AS t FROM raw_span UNION ALL SELECT 'any', last_any FROM raw_span)
), counted AS (
    SELECT which, CASE WHEN t <> timezone('UTC', timezone('UTC', t)::DATE::TIMESTAMP)
                        AND epoch_us(next_midnight) - epoch_us(t) <= $max_gap_minutes::DOUBLE * 6e7
                       THEN next_midnight ELSE t END AS t
    FROM ends
), span AS (
    SELECT s.covered_from, s.any_from, s.sources,
           (SELECT t FROM counted WHERE which = 'covered') AS covered_to,
           (SELECT t FROM counted WHERE which = 'any') AS any_to
    FROM raw_span AS s
), acct AS (
    -- Slurm accounting's own span, its end counted as the covered span's is (0 or 1 row)
    SELECT first_ts AS acct_from,
           CASE WHEN last_ts <> timezone('UTC', timezone('UTC', last_ts)::DATE::TIMESTAMP)
                 AND epoch_us(timezone('UTC', (timezone('UTC', last_ts)::DATE + 1)::TIMESTAMP)) - epoch_us(last_ts)
                     <= $max_gap_minutes::DOUBLE * 6e7
                THEN timezone('UTC', (timezone('UTC', last_ts)::DATE + 1)::TIMESTAMP) ELSE last_ts END AS acct_to
    FROM spans WHERE source_kind = 'sacct'
), days AS (
    -- up to the day of the instant before the end: an end at midnight closes the day before it
    SELECT unnest(generate_series(timezone('UTC', any_from)::DATE,
                                  timezone('UTC', any_to - INTERVAL 1 MICROSECOND)::DATE, INTERVAL 1 DAY))::DATE AS day
    FROM span
), bounded AS (
    SELECT d.day,
           timezone('UTC', d.day::TIMESTAMP)       AS d0,
           timezone('UTC', (d.day + 1)::TIMESTAMP) AS d1,
           s.covered_from, s.covered_to, s.sources, a.acct_from, a.acct_to
    FROM days AS d CROSS JOIN span AS s LEFT JOIN acct AS a ON true
), covered AS (
    SELECT *, greatest(epoch_us(least(covered_to, d1)) - epoch_us(greatest(covered_from, d0)), 0) / 3.6e9 AS covered_hours,
           CASE WHEN acct_to IS NOT NULL
                THEN greatest(epoch_us(least(acct_to, d1)) - epoch_us(greatest(acct_from, d0)), 0) / 3.6e9 END
               AS accounting_hours
    FROM bounded
)
SELECT day,
       CASE WHEN covered_hours > 0 THEN greatest(covered_from, d0) END AS covered_from,  -- first covered instant of the day
       CASE WHEN covered_hours > 0 THEN least(covered_to, d1) END     AS covered_to,    -- last covered instant
       covered_hours,                                                                   -- 0 .. 24
       covered_hours < 24 - $max_gap_minutes::DOUBLE / 60 AS partial,
       sources,                                                                         -- sources whose spans define it
       accounting_hours,                                                                -- Slurm accounting's alone, 0 .. 24
       accounting_hours >= 24 - $max_gap_minutes::DOUBLE / 60 AS accounting_complete    -- NULL without jobs
FROM covered
ORDER BY day;
