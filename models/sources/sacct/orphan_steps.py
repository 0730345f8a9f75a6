"""Steps whose job has no allocation record: what their rejects say.

A step is part of a job: its GPU time is counted through the job's allocation record (core.jobs,
core.job_instances), never through its steps. A dump can hold ``2012.batch`` (or ``2012.0``,
``2013+1.0``, ``2014_3.batch``) without the ``2012`` line — cut by hand, a ``sacct --jobs`` of
steps, a ``--state`` filter that matched only steps — and nightly dumps overlap, so the allocation
may come in another file, earlier or later. Whether a job has one is therefore known only across
every dump, after core.jobs is upserted: ``sql/core/jobs_upsert.sql`` keeps one reject in
``raw.rejects`` per step of core.job_steps whose job is not in core.jobs (file and line of the
step's record, this reason), and drops it once a dump brings the allocation.

Such a step record is loaded (raw.sacct_records, core.job_steps): it is a finding across records,
not a record the parser could not read, so the ledger's ``rows_read = rows_loaded + rows_rejected``
does not count it (:func:`gpusre.models.ingest.reconcile.mismatched_files`).
"""

from __future__ import annotations

__all__ = ["ORPHAN_STEP_REASON", "is_orphan_step_reject_sql", "orphan_step_error"]

#: The words every such reject's error holds, after ``step <job>.<step> of job <job>: ``.
#: ``sql/core/jobs_upsert.sql`` spells it out (a test holds it to this).
ORPHAN_STEP_REASON = ("the job's GPU time is not counted — no sacct dump loaded its allocation record "
                      "(missing from every dump, or rejected); the step stays in core.job_steps")


def orphan_step_error(job_id: str, step_id: str) -> str:
    """The reject reason of step ``step_id`` of job ``job_id`` (as the upsert writes it)."""
    return f"step {job_id}.{step_id} of job {job_id}: {ORPHAN_STEP_REASON}"


def is_orphan_step_reject_sql(error: str = "error") -> str:
    """A SQL predicate on the ``raw.rejects`` column ``error``: the reject is such a step's."""
    quoted = ORPHAN_STEP_REASON.replace("'", "''")
    return f"contains({error}, '{quoted}')"
