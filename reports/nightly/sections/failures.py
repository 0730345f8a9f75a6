"""Nightly report section "Last night's job failures" (``#failures``).

Reads core.jobs, marts.job_totals, marts.job_failure_attribution (each job's attribution and lost GPU-hours);
formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.models.vocabulary import FAILED_STATES, INFRASTRUCTURE, LOSS_ATTRIBUTIONS, PLANNED
from gpusre.models.warehouse import select_columns
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_duration,
    fmt_int,
    fmt_num,
    fmt_pct,
    period_text,
    plural,
    sentence_case,
    truncate,
)
from gpusre.reports.kit.labels import state_cell
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.incident.terms import UNKNOWN_NO_ACCOUNTING, missing_sources
from gpusre.reports.nightly.meta import NightlyMeta, job_totals, reason_text, sources_without_day

_TOP_N_FAILURES = 20
_ATTRIBUTION_COLUMNS = ["job_id", "attribution", "lost_gpu_hours"]
#: An attribution value as the table names it (the others: as they are).
_ATTRIBUTION_LABELS = {PLANNED: "planned maintenance"}


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("failures", f"Last night's job failures ({d})")
    reason = table_status(con, "marts.job_totals")
    if reason:
        sec.no_data = reason
        return sec
    # The same GPU jobs and failure-state set as the headline (marts.job_totals). The infrastructure's
    # failures first (they are the SRE's), then by lost and used GPU-hours: sorted by size alone, a night's
    # routine 24 GPU-h TIMEOUTs bury the one job a switch killed.
    status = table_status(con, "marts.job_failure_attribution")
    if status and "has not been built" not in status:
        status = None  # built but empty: no failed job was attributed, every job reads "unknown"
    attr = ("(SELECT NULL::VARCHAR AS job_id, NULL::VARCHAR AS attribution, NULL::DOUBLE AS lost_gpu_hours "
            "WHERE false)" if status else
            f"(SELECT {select_columns(con, 'marts.job_failure_attribution', _ATTRIBUTION_COLUMNS)} "
            "FROM marts.job_failure_attribution)")
    rows = query_rows(con, f"""SELECT j.job_id, j."user", j.name, j.n_gpus, j.elapsed_s, j.state, j.exit_code,
                                      j.exit_signal, j.gpu_hours, a.attribution, a.lost_gpu_hours
                               FROM core.jobs AS j LEFT JOIN {attr} AS a ON a.job_id = j.job_id
                               WHERE j.end_day = ? AND list_contains(?, j.state) AND j.n_gpus > 0
                                 AND j.end_ts IS NOT NULL
                               ORDER BY a.attribution = '{INFRASTRUCTURE}' DESC NULLS LAST,
                                        a.lost_gpu_hours DESC NULLS LAST, j.gpu_hours DESC NULLS LAST, j.job_id
                               LIMIT {_TOP_N_FAILURES}""",
                      [meta.report_date, list(FAILED_STATES)])
    night = query_rows(con, "SELECT failed_jobs AS n, failed_runs AS runs, failed_gpu_hours AS gpuh, "
                            "failed_share_gpu_hours AS share FROM marts.job_totals WHERE scope = 'day' AND day = ?",
                       [meta.report_date])
    agg = night[0] if night else {"n": 0, "runs": 0, "gpuh": 0.0, "share": None}
    requeued = (agg["runs"] or 0) - (agg["n"] or 0)  # failed runs Slurm requeued: no failed job, same GPU time
    if not rows:
        gaps = sources_without_day(con, meta.report_date)
        if "sacct" in missing_sources(con):
            sec.lead = f"The failed GPU jobs of {d} are {UNKNOWN_NO_ACCOUNTING}."
        elif "sacct" in gaps:
            sec.lead = f"The failed GPU jobs of {d} are unknown: no Slurm accounting for that day ({gaps['sacct']})."
        else:
            sec.lead = f"No GPU job ended in {', '.join(FAILED_STATES[:-1])} or {FAILED_STATES[-1]} on {d}."
        return sec
    share = agg["share"]
    whole = job_totals(con, through=meta.through)
    # The table leads with the infrastructure's failures; the lead names the largest job by GPU-hours.
    top = query_rows(con, """SELECT job_id, state, gpu_hours FROM core.jobs
                             WHERE end_day = ? AND list_contains(?, state) AND n_gpus > 0 AND end_ts IS NOT NULL
                             ORDER BY gpu_hours DESC NULLS LAST, job_id LIMIT 1""",
                     [meta.report_date, list(FAILED_STATES)])[0]
    sec.lead = (f"{plural(agg['n'], 'GPU job')} ended in a failure state on {d}"
                + (f" and {plural(requeued, 'run')} failed that Slurm requeued" if requeued > 0 else "")
                + f", using {fmt_num(agg['gpuh'])} GPU-hours "
                f"({fmt_pct(share)} of that day's GPU-hours); the largest job was {top['job_id']} "
                f"({top['state']}, {fmt_num(top['gpu_hours'])} GPU-hours)"
                + (f"; over {period_text(fmt_date(whole['first_day']), fmt_date(whole['last_day']))} failed runs hold "
                   f"{fmt_pct(whole['failed_share_gpu_hours'])} of GPU-hours."
                   if whole else "."))
    sec.add(Table(
        [Column("Job ID"), Column("User"), Column("Name"), Column("GPUs", True), Column("Elapsed", True),
         Column("State"), Column("Exit code", True), Column("Attribution"), Column("GPU-hours", True),
         Column("Lost GPU-h", True)],
        [[Cell(str(r["job_id"]), mono=True), Cell(truncate(r["user"], 24), title=r["user"]),
          Cell(truncate(r["name"], 40), title=r["name"]), Cell(fmt_int(r["n_gpus"])),
          Cell(fmt_duration(r["elapsed_s"]), mono=True), state_cell(r["state"]),
          Cell(MISSING if r["exit_code"] is None else f"{r['exit_code']}:{r['exit_signal'] or 0}", mono=True),
          Cell(sentence_case(_ATTRIBUTION_LABELS.get(r["attribution"], r["attribution"])) if r["attribution"]
               else MISSING), Cell(fmt_num(r["gpu_hours"])),
          Cell(fmt_num(r["lost_gpu_hours"]) if r["attribution"] in LOSS_ATTRIBUTIONS else MISSING)] for r in rows],
        caption=f"Top {len(rows)} of {fmt_int(agg['n'])} failed jobs: those the infrastructure failed first, then by "
                "lost and used GPU-hours; exit code as code:signal. Attribution as in \u201cWhy jobs failed\u201d "
                "(marts.job_failure_attribution"
                + (f"; {reason_text(status)}" if status else "")
                + "); lost GPU-hours for infrastructure failures and planned maintenance (no failure) only.",
    ))
    return sec


SECTION = SectionSpec("failures", "Last night's job failures", build)
