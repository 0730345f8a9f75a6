"""Nightly report section "Top users and accounts" (``#top``).

Reads marts.top_consumers; formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    fmt_int,
    fmt_num,
    fmt_pct,
    sentence_case,
    truncate,
)
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.nightly.meta import NightlyMeta

_TOP_N_CONSUMERS = 10


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("top", "Top users and accounts", side_by_side=True)
    reason = table_status(con, "marts.top_consumers")
    if reason:
        sec.no_data = reason
        return sec
    rows = query_rows(con, """SELECT kind, rank, name, jobs, gpu_hours, share_gpu_hours FROM marts.top_consumers
                         WHERE rank <= ? ORDER BY kind DESC, rank""", [_TOP_N_CONSUMERS])
    users = [r for r in rows if r["kind"] == "user"]
    accounts = [r for r in rows if r["kind"] == "account"]
    parts = []
    for label, rs in (("users", users), ("accounts", accounts)):
        if rs:
            tot = sum(r["share_gpu_hours"] or 0.0 for r in rs)
            parts.append(f"the top {len(rs)} {label} consumed {fmt_pct(tot)} of GPU-hours "
                         f"(largest: {rs[0]['name']}, {fmt_pct(rs[0]['share_gpu_hours'])})")
    sec.lead = sentence_case("; ".join(parts) + ".")
    if users:
        sec.add(svg(charts.top_consumers_chart(
            [(r["name"], r["share_gpu_hours"]) for r in users], f"Top {len(users)} users by share of GPU-hours",
            "Share of GPU-hours (%)")))
    for label, rs in (("User", users), ("Account", accounts)):
        if rs:
            sec.add(Table(
                [Column("#", True), Column(label), Column("Jobs", True), Column("GPU-hours", True),
                 Column("Share", True)],
                [[Cell(fmt_int(r["rank"])), Cell(truncate(r["name"], 32), title=r["name"]),
                  Cell(fmt_int(r["jobs"])), Cell(fmt_num(r["gpu_hours"])), Cell(fmt_pct(r["share_gpu_hours"]))]
                 for r in rs],
                # GPU-hours of every run, as the headline's total: a requeued job's earlier runs too
                caption=f"Top {len(rs)} {label.lower()}s; GPU-hours of every run (a requeued job's earlier runs "
                        "included), each job counted once",
            ))
    return sec


SECTION = SectionSpec("top", "Top users and accounts", build)
