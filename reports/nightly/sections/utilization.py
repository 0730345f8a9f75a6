"""Nightly report section "Utilization" (``#utilization``).

Reads marts.utilization_daily and marts.utilization_summary (complete days only); formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    fmt_date,
    fmt_int,
    fmt_num,
    fmt_pct,
)
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.nightly.meta import NightlyMeta

_UTIL_TABLE_DAYS = 14


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("utilization", "Utilization")
    reason = table_status(con, "marts.utilization_daily")
    if reason:
        sec.no_data = reason
        return sec
    rows = query_rows(con, """SELECT day, capacity_gpu_hours AS cap, allocated_gpu_hours AS alloc, utilization,
                                jobs_running, coalesce(partial, false) AS partial
                                FROM marts.utilization_daily WHERE day <= ? ORDER BY day""", [meta.report_date])
    summary = {r["scope"]: r for r in query_rows(
        con, "SELECT * FROM marts.utilization_summary(?, ?)", [meta.report_date, _UTIL_TABLE_DAYS])}
    whole, last = summary.get("all", {}), summary.get("recent", {})
    mean_u = whole.get("utilization")
    recent = [r for r in rows if not r["partial"]][-_UTIL_TABLE_DAYS:]
    partial_note = (f" {fmt_int(whole['partial_days'])} partial day(s) — the data covers them only in part — are "
                    "left out of the mean and the minimum." if whole.get("partial_days") else "")
    sec.lead = (
        f"Mean utilization was {fmt_pct(mean_u)} over {fmt_int(whole.get('days', 0))} complete days "
        f"({fmt_int(whole.get('allocated_gpu_hours'))} of {fmt_int(whole.get('capacity_gpu_hours'))} GPU-hours "
        f"allocated); the last {fmt_int(last.get('days', 0))} days averaged {fmt_pct(last.get('utilization'))}"
        + (f", and the lowest day was {fmt_date(whole['lowest_day'])} at {fmt_pct(whole['lowest_utilization'])}."
           if whole.get("lowest_day") is not None else ".") + partial_note
    )
    sec.add(svg(charts.utilization_chart(
        # Unknown capacity is a gap in the line, not a drop to zero.
        [r["day"] for r in rows if not r["partial"]],
        [float("nan") if r["cap"] is None else r["cap"] for r in rows if not r["partial"]],
        [r["alloc"] or 0.0 for r in rows if not r["partial"]], mean_u,
        "Daily allocated vs capacity GPU-hours")))
    sec.add(Table(
        [Column("Day"), Column("Capacity (GPU-h)", True), Column("Allocated (GPU-h)", True),
         Column("Utilization", True), Column("Jobs running", True)],
        [[Cell(fmt_date(r["day"])), Cell(fmt_num(r["cap"])), Cell(fmt_num(r["alloc"])),
          Cell(fmt_pct(r["utilization"])), Cell(fmt_int(r["jobs_running"]))] for r in reversed(recent)],
        caption=f"Last {len(recent)} days up to {fmt_date(meta.report_date)}, newest first.",
    ))
    return sec


SECTION = SectionSpec("utilization", "Utilization", build)
