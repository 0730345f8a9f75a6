"""Nightly report section "Failure taxonomy" (``#taxonomy``).

Reads marts.failure_taxonomy (whole record: it has no per-day rows, so a past night's re-render says so) and
marts.failure_attribution_summary (the infrastructure's failed jobs and requeued runs, worded as "Why jobs failed"
words them); formats, computes nothing."""

from __future__ import annotations

from typing import Any

import duckdb

from gpusre.reports.incident.terms import UNKNOWN_NO_ACCOUNTING, missing_sources
from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    fmt_int,
    fmt_num,
    fmt_pct,
    gpuh,
    jobs_and_requeued_runs,
    months_or_days_text,
    plural,
)
from gpusre.reports.kit.labels import cause_label, component_label
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.nightly.meta import NightlyMeta, unbounded_note


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("taxonomy", "Failure taxonomy")
    reason = table_status(con, "marts.failure_taxonomy")
    if reason:
        sec.no_data = (reason + (" No node logs were loaded (landing/syslog/): incidents come from the node logs, "
                                 "so the failure taxonomy is unknown." if "syslog" in missing_sources(con) else ""))
        return sec
    raw = query_rows(con, """SELECT component, cause_class, incidents, events, affected_jobs, lost_gpu_hours
                        FROM marts.failure_taxonomy WHERE period_type = 'all'""")
    if not raw:
        sec.no_data = f"{NO_DATA}: marts.failure_taxonomy has no period_type 'all' rows."
        return sec
    months = query_rows(con, "SELECT min(period) AS a, max(period) AS b FROM marts.failure_taxonomy "
                        "WHERE period_type = 'month'")[0]
    period = _period_label(months["a"], months["b"], meta)
    groups: dict[str, dict[str, Any]] = {}
    for r in raw:
        g = groups.setdefault(component_label(r["component"]), {"incidents": 0, "events": 0, "jobs": 0, "lost": 0.0,
                                                               "causes": {}})
        g["incidents"] += r["incidents"] or 0
        g["events"] += r["events"] or 0
        g["jobs"] += r["affected_jobs"] or 0
        g["lost"] += r["lost_gpu_hours"] or 0.0
        cause = cause_label(r["cause_class"])
        g["causes"][cause] = g["causes"].get(cause, 0.0) + (r["lost_gpu_hours"] or 0.0) + (r["incidents"] or 0) * 1e-9
    order = sorted(groups, key=lambda k: (-groups[k]["lost"], -groups[k]["incidents"], k))
    tot_inc = sum(g["incidents"] for g in groups.values())
    tot_jobs = sum(g["jobs"] for g in groups.values())
    tot_lost = sum(g["lost"] for g in groups.values())
    by_inc = sorted((k for k in groups if groups[k]["incidents"]), key=lambda k: (-groups[k]["incidents"], k))
    top = order[0]
    # Without Slurm accounting the mart's job columns are NULL: the incidents' cost is unknown, not 0.
    unknown = all(r["affected_jobs"] is None for r in raw)
    # The jobs it failed and the requeued runs it killed, as the headline and "Why jobs failed" word them
    # (the mart's affected_jobs counts a requeued job whose run was killed as a job: 13 + 1 = 14).
    infra = [] if table_status(con, "marts.failure_attribution_summary") else query_rows(
        con, "SELECT jobs, runs FROM marts.failure_attribution_summary "
             "WHERE scope = 'all' AND attribution = 'infrastructure' AND state = '(all)'")
    killed = (jobs_and_requeued_runs(infra[0]["jobs"], infra[0]["runs"], "infrastructure-failed job")
              if infra and infra[0]["runs"] == tot_jobs else plural(tot_jobs, "infrastructure-failed job"))
    by_component = ", ".join(f"{k} {fmt_int(groups[k]['incidents'])}" for k in by_inc)
    # Incidents come from the node logs: without any, "0 incidents" would be no evidence, said as a fact.
    incidents = (f"there {'was' if tot_inc == 1 else 'were'} {plural(tot_inc, 'incident')}"
                 if tot_inc or "syslog" not in missing_sources(con) else
                 "the incidents are unknown (no node logs were loaded: incidents come from the node logs)")
    if unknown:
        sec.lead = (f"In {period} {incidents}"
                    + (f" ({by_component})" if by_inc else "")
                    + f"; the jobs they failed and the GPU-hours lost are {UNKNOWN_NO_ACCOUNTING}.")
    else:
        sec.lead = (
            f"In {period} {incidents}"
            + (f" — {by_component} —" if by_inc else "")
            + (" and " if tot_inc or "syslog" not in missing_sources(con) else " and the accounting shows ")
            + f"{killed}, costing {gpuh(tot_lost)} GPU-hours"
            # named denominator: the SLO review's incident shares are of incident losses only, a smaller total
            + (f"; the most work was lost to {top} ({gpuh(groups[top]['lost'])} GPU-h, "
               f"{fmt_pct(groups[top]['lost'] / tot_lost)} of the {gpuh(tot_lost)} GPU-h lost to the "
               "infrastructure)." if tot_lost > 0 else ".")
        )
    sec.lead += unbounded_note(meta, "The taxonomy")

    def job_cells(jobs: int, lost: float, share: float | None) -> list[Cell]:
        if unknown:
            return [Cell("unknown"), Cell("unknown"), Cell("unknown")]
        return [Cell(fmt_int(jobs)), Cell(fmt_num(lost)), Cell(fmt_pct(share))]

    with_loss = [k for k in order if groups[k]["lost"] > 0]
    if with_loss:
        sec.add(svg(charts.lost_gpu_hours_chart(
            [(k, groups[k]["lost"]) for k in with_loss], f"Lost GPU-hours by component, {period}",
            "Lost GPU-hours (work since the last checkpoint + restart)")))
    sec.add(Table(
        [Column("Component"), Column("Cause class"), Column("Incidents", True), Column("Events", True),
         Column("Jobs killed", True), Column("Lost GPU-hours", True), Column("Share of lost", True)],
        [[Cell(k), Cell(", ".join(sorted(groups[k]["causes"], key=lambda c: (-groups[k]["causes"][c], c)))),
          Cell(fmt_int(groups[k]["incidents"])), Cell(fmt_int(groups[k]["events"])),
          *job_cells(groups[k]["jobs"], groups[k]["lost"], groups[k]["lost"] / tot_lost if tot_lost else None)]
         for k in order]
        + [[Cell("Total"), Cell(""), Cell(fmt_int(tot_inc)), Cell(fmt_int(sum(g["events"] for g in groups.values()))),
            *job_cells(tot_jobs, tot_lost, 1.0 if tot_lost else None)]],
        caption=f"Whole record ({period}). Jobs killed: failed jobs and requeued runs the component killed (a job "
                "Slurm requeued counts once). Events are the failure log lines merged into the incidents; jobs without a "
                "matching incident (e.g. NODE_FAIL with no log evidence) count under their own component. Share "
                "of lost: of all GPU-hours lost to the infrastructure, failures no incident explains included."
                + (f" Affected jobs and lost GPU-hours: {UNKNOWN_NO_ACCOUNTING}." if unknown else ""),
    ))
    return sec


def _period_label(first_month: str | None, last_month: str | None, meta: NightlyMeta) -> str:
    """'2026-09 … 2026-10' when the data covers those months whole, else the days it covers in them
    ('2026-11-18 … 2026-11-24'): :func:`~gpusre.reports.kit.formatting.months_or_days_text`."""
    return months_or_days_text(first_month, last_month, meta.period_first, meta.data_last or meta.period_last)


SECTION = SectionSpec("taxonomy", "Failure taxonomy", build)
