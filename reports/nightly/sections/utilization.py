"""Nightly report section "Utilization" (``#utilization``).

Reads marts.utilization_daily and marts.utilization_summary (complete days only), and per pool (cluster.yaml
``pools``: a GPU generation) marts.utilization_by_pool_daily and marts.utilization_by_pool; formats, computes nothing."""

from __future__ import annotations

from datetime import timedelta

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
from gpusre.reports.kit.warehouse import macro_status, query_rows, table_status
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
    pools = _pool_rows(con, meta)
    if pools:
        sec.lead += (f" By pool on {fmt_date(meta.report_date)}: "
                     + ", ".join(f"{r['pool']} {fmt_pct(r['utilization'])}" for r in pools) + ".")
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
    if pools:
        sec.add(_pool_table(pools, meta))
    return sec


def _pool_rows(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> list[dict]:
    """The report day's rows of marts.utilization_by_pool_daily, each with the pool's utilization over the
    last :data:`_UTIL_TABLE_DAYS` days (marts.utilization_by_pool) as ``window_*``; [] with one pool (a fleet
    without cluster.yaml ``pools``: the table above is the whole story) or without the mart."""
    if table_status(con, "marts.utilization_by_pool_daily"):
        return []
    rows = query_rows(con, """SELECT pool, gpus, capacity_gpu_hours AS cap, allocated_gpu_hours AS alloc, utilization,
                                     jobs_running, coalesce(partial, false) AS partial
                              FROM marts.utilization_by_pool_daily WHERE day = ?
                              ORDER BY pool = 'other', gpus DESC, pool""", [meta.report_date])
    if len(rows) < 2:
        return []
    window: dict[str, dict] = {}
    if macro_status(con, "marts.utilization_by_pool") is None:
        window = {r["pool"]: r for r in query_rows(
            con, "SELECT * FROM marts.utilization_by_pool(?, ?)",
            [meta.report_date - timedelta(days=_UTIL_TABLE_DAYS - 1), meta.report_date])}
    for r in rows:
        w = window.get(r["pool"], {})
        r["window_utilization"], r["window_days"] = w.get("utilization"), w.get("days")
        r["window_partial_days"] = w.get("partial_days") or 0
    return rows


def _pool_table(pools: list[dict], meta: NightlyMeta) -> Table:
    partial = " (a partial day: the data covers it only in part)" if any(r["partial"] for r in pools) else ""
    days, partial_days = pools[0]["window_days"] or 0, pools[0]["window_partial_days"]  # every pool has every day
    return Table(
        [Column("Pool"), Column("GPUs", True), Column("Capacity (GPU-h)", True), Column("Allocated (GPU-h)", True),
         Column("Utilization", True), Column("Jobs running", True),
         Column(f"Utilization, last {fmt_int(days)} days", True)],
        [[Cell(r["pool"]), Cell(fmt_int(r["gpus"])), Cell(fmt_num(r["cap"])), Cell(fmt_num(r["alloc"])),
          Cell(fmt_pct(r["utilization"])), Cell(fmt_int(r["jobs_running"])), Cell(fmt_pct(r["window_utilization"]))]
         for r in pools],
        caption=f"Per pool (cluster.yaml pools; nodes in none form pool 'other') on {fmt_date(meta.report_date)}"
                f"{partial}, from marts.utilization_by_pool_daily: a job on nodes of two pools counts its GPUs in each "
                "in proportion to its nodes there, so the pools add up to the day above; a job spanning pools is "
                "running in both. The last column is the window's allocated over capacity GPU-hours"
                + (f" ({fmt_int(partial_days)} partial day(s) in it, at the hours the data covers)" if partial_days else "")
                + ".",
    )


SECTION = SectionSpec("utilization", "Utilization", build)
