"""Nightly report section "Last night's job failures" (``#failures``).

Reads core.jobs, marts.job_totals; formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.models.vocabulary import FAILED_STATES
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_duration,
    fmt_int,
    fmt_num,
    fmt_pct,
    plural,
    truncate,
)
from gpusre.reports.kit.labels import state_cell
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.nightly.meta import NightlyMeta, job_totals

_TOP_N_FAILURES = 20


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("failures", f"Last night's job failures ({d})")
    reason = table_status(con, "marts.job_totals")
    if reason:
        sec.no_data = reason
        return sec
    # The same GPU jobs and failure-state set as the headline (marts.job_totals); the listed jobs are
    # the largest of them.
    rows = query_rows(con, f"""SELECT job_id, "user", name, n_gpus, elapsed_s, state, exit_code, exit_signal, gpu_hours
                               FROM core.jobs
                               WHERE end_day = ? AND list_contains(?, state) AND n_gpus > 0 AND end_ts IS NOT NULL
                               ORDER BY gpu_hours DESC NULLS LAST, job_id LIMIT {_TOP_N_FAILURES}""",
                      [meta.report_date, list(FAILED_STATES)])
    night = query_rows(con, "SELECT failed_jobs AS n, failed_runs AS runs, failed_gpu_hours AS gpuh, "
                            "failed_share_gpu_hours AS share FROM marts.job_totals WHERE scope = 'day' AND day = ?",
                       [meta.report_date])
    agg = night[0] if night else {"n": 0, "runs": 0, "gpuh": 0.0, "share": None}
    requeued = (agg["runs"] or 0) - (agg["n"] or 0)  # failed runs Slurm requeued: no failed job, same GPU time
    if not rows:
        sec.lead = f"No GPU job ended in {', '.join(FAILED_STATES[:-1])} or {FAILED_STATES[-1]} on {d}."
        return sec
    share = agg["share"]
    whole = job_totals(con)
    top = rows[0]
    sec.lead = (f"{plural(agg['n'], 'GPU job')} ended in a failure state on {d}"
                + (f" and {plural(requeued, 'run')} failed that Slurm requeued" if requeued > 0 else "")
                + f", using {fmt_num(agg['gpuh'])} GPU-hours "
                f"({fmt_pct(share)} of that day's GPU-hours); the largest job was {top['job_id']} "
                f"({top['state']}, {fmt_num(top['gpu_hours'])} GPU-hours)"
                + (f"; over the whole period failed runs hold {fmt_pct(whole['failed_share_gpu_hours'])} of GPU-hours."
                   if whole else "."))
    sec.add(Table(
        [Column("Job ID"), Column("User"), Column("Name"), Column("GPUs", True), Column("Elapsed", True),
         Column("State"), Column("Exit code", True), Column("GPU-hours", True)],
        [[Cell(str(r["job_id"]), mono=True), Cell(truncate(r["user"], 24), title=r["user"]),
          Cell(truncate(r["name"], 40), title=r["name"]), Cell(fmt_int(r["n_gpus"])),
          Cell(fmt_duration(r["elapsed_s"]), mono=True), state_cell(r["state"]),
          Cell(MISSING if r["exit_code"] is None else f"{r['exit_code']}:{r['exit_signal'] or 0}", mono=True),
          Cell(fmt_num(r["gpu_hours"]))] for r in rows],
        caption=f"Top {len(rows)} of {fmt_int(agg['n'])} failed jobs by GPU-hours; exit code as code:signal.",
    ))
    return sec


SECTION = SectionSpec("failures", "Last night's job failures", build)
