"""Nightly report section "Utilization" (``#utilization``).

Reads marts.utilization_daily; formats, computes nothing."""

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
                                jobs_running FROM marts.utilization_daily ORDER BY day""")
    cap = sum(r["cap"] or 0.0 for r in rows)
    alloc = sum(r["alloc"] or 0.0 for r in rows)
    mean_u = alloc / cap if cap else None
    recent = [r for r in rows if r["day"] <= meta.report_date][-_UTIL_TABLE_DAYS:]
    rc = sum(r["cap"] or 0.0 for r in recent)
    recent_u = sum(r["alloc"] or 0.0 for r in recent) / rc if rc else None
    with_u = [r for r in rows if r["utilization"] is not None]
    low = min(with_u, key=lambda r: r["utilization"]) if with_u else None
    sec.lead = (
        f"Mean utilization was {fmt_pct(mean_u)} over {fmt_int(len(rows))} days "
        f"({fmt_int(alloc)} of {fmt_int(cap)} GPU-hours allocated); the last {len(recent)} days averaged "
        f"{fmt_pct(recent_u)}" + (f", and the lowest day was {fmt_date(low['day'])} at {fmt_pct(low['utilization'])}."
                                  if low else ".")
    )
    sec.add(svg(charts.utilization_chart(
        # Unknown capacity is a gap in the line, not a drop to zero.
        [r["day"] for r in rows], [float("nan") if r["cap"] is None else r["cap"] for r in rows], [r["alloc"] or 0.0 for r in rows], mean_u,
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
