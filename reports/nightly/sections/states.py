"""Nightly report section "GPU-hours by job state" (``#states``).

Reads marts.gpu_time_by_state, marts.job_states_daily, marts.job_totals; formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.models.vocabulary import FAILED_STATES
from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    fmt_int,
    fmt_num,
    fmt_pct,
    months_or_days_text,
    plural,
)
from gpusre.reports.kit.labels import state_cell, state_name
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status
from gpusre.reports.nightly.meta import NightlyMeta, total_cells


def _state_period_label(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> str:
    """The months of the mart's rows, or the days of data in them when those are fewer ('2026-11-18 …
    2026-11-24' for a week of November, not '2026-11')."""
    months = query_rows(con, "SELECT min(period) AS a, max(period) AS b FROM marts.gpu_time_by_state "
                        "WHERE period_type = 'month'")
    first, last = (months[0]["a"], months[0]["b"]) if months else (None, None)
    return months_or_days_text(first, last, meta.period_first, meta.data_last or meta.period_last)


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("states", "GPU-hours by job state")
    reason = table_status(con, "marts.gpu_time_by_state")
    if reason:
        sec.no_data = reason
        return sec
    rows = query_rows(con, """SELECT state, jobs, runs, gpu_hours, share_jobs, share_gpu_hours
                         FROM marts.gpu_time_by_state WHERE period_type = 'all'
                         ORDER BY gpu_hours DESC NULLS LAST, state""")
    if not rows:
        sec.no_data = f"{NO_DATA}: marts.gpu_time_by_state has no period_type 'all' rows."
        return sec
    period = _state_period_label(con, meta)
    top = rows[0]
    # The one failed share every section quotes: marts.job_totals over FAILED_STATES.
    failed = scalar(con, "SELECT failed_share_gpu_hours FROM marts.job_totals WHERE scope = 'all'")
    others = [r for r in rows[1:3] if r["state"] not in FAILED_STATES]
    if top["share_gpu_hours"] is None:  # GPU jobs that ran 0 s, or no GPU counts in the dumps
        sec.lead = (f"No GPU-hours were recorded in {period}: {plural(sum(r['jobs'] or 0 for r in rows), 'GPU job')} "
                    "ended, none with a positive runtime × GPU count.")
    else:
        sec.lead = (
            f"{state_name(top['state'])} runs consumed {fmt_pct(top['share_gpu_hours'])} of GPU time in {period}"
            + "".join(f"; {state_name(r['state']).lower()} runs {fmt_pct(r['share_gpu_hours'])}" for r in others)
            + f"; runs that failed ({', '.join(FAILED_STATES)}) {fmt_pct(failed)}."
        )
    sec.add(svg(charts.state_share_chart(
        [(r["state"], r["share_jobs"], r["share_gpu_hours"]) for r in rows],
        f"Share of jobs vs share of GPU-hours by state, {period}")))
    if table_status(con, "marts.job_states_daily") is None:
        daily = query_rows(con, "SELECT day, state, gpu_hours AS gpuh FROM marts.job_states_daily ORDER BY day")
        days = sorted({r["day"] for r in daily})
        idx = {d: i for i, d in enumerate(days)}
        order = [r["state"] for r in rows] + sorted({r["state"] for r in daily} - {r["state"] for r in rows})
        series: dict[str, list[float]] = {s: [0.0] * len(days) for s in order if any(r["state"] == s for r in daily)}
        for r in daily:
            series[r["state"]][idx[r["day"]]] = r["gpuh"] or 0.0
        sec.add(svg(charts.daily_state_chart(days, series, "Daily GPU-hours by the state each run ended in")))
    sec.add(Table(
        [Column("State"), Column("Jobs", True), Column("Share of jobs", True), Column("Runs", True),
         Column("GPU-hours", True), Column("Share of GPU-hours", True)],
        [[state_cell(r["state"]), Cell(fmt_int(r["jobs"])), Cell(fmt_pct(r["share_jobs"])), Cell(fmt_int(r["runs"])),
          Cell(fmt_num(r["gpu_hours"])), Cell(fmt_pct(r["share_gpu_hours"]))] for r in rows]
        + [c for c in [total_cells(con, runs=True)] if c],
        caption="Jobs count each job once, under its final state; GPU-hours count every run, so a run Slurm "
                "requeued (NODE_FAIL, PREEMPTED, REQUEUED) counts its GPU time under its own state: the GPU time "
                "the cluster gave, as utilization counts it.",
    ))
    return sec


SECTION = SectionSpec("states", "GPU-hours by job state", build)
