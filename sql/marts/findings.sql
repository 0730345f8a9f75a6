-- marts.findings: one row per headline finding (1..4) about the job mix, computed from the other
-- marts by gpusre.models.job_mix.findings.write_findings. This file only (re)creates the empty table.
CREATE OR REPLACE TABLE marts.findings (
    finding_id INTEGER NOT NULL,
    title      VARCHAR NOT NULL,
    statement  VARCHAR NOT NULL,   -- plain sentence with the numbers, formatted from data
    metric     VARCHAR NOT NULL,   -- what value measures
    value      DOUBLE,             -- NULL when the data cannot give it
    supported  BOOLEAN             -- does the data support the claim; NULL when it cannot tell
);
