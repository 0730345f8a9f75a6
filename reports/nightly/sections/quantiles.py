"""Nightly report sections "Runtime tail by job size" (``#runtime``); "Queue wait by job size" (``#queue``).

Reads marts.queue_wait_quantiles (with ``running_jobs``: the started jobs still running), marts.runtime_quantiles;
formats, computes nothing."""

from __future__ import annotations

from typing import Any

import duckdb

from gpusre.models.warehouse import select_columns
from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    fmt_int,
    fmt_num,
    sentence_case,
)
from gpusre.reports.kit.labels import bucket_cell, bucket_name
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status


def jobs_cell(r: dict[str, Any]) -> Cell:
    """A table's job count with the jobs in it that had not ended at the end of the data: '136 (3 still
    running)' — beside the finished jobs the size and runtime tables count (133), the larger count says why;
    the plain count where the mart has no ``running_jobs`` or none ran on."""
    running = r.get("running_jobs")
    return Cell(fmt_int(r["jobs"]) + (f" ({fmt_int(running)} still running)" if running else ""))


def quantile_section(con: duckdb.DuckDBPyConnection, *, key: str, title: str, table: str, unit: str,
                      unit_label: str, what: str, jobs_note: str) -> Section:
    sec = Section(key, title)
    reason = table_status(con, table)
    if reason:
        sec.no_data = reason
        return sec
    u = unit
    # running_jobs: marts.queue_wait_quantiles counts started jobs, those still running included (NULL: a
    # mart without it, or one of finished jobs only).
    running = select_columns(con, table, ["running_jobs"])
    rows = query_rows(con, f"""SELECT size_bucket, jobs, {running}, p50_{u} AS p50, p90_{u} AS p90, p99_{u} AS p99,
                                 max_{u} AS mx, mean_{u} AS mean
                          FROM {table} ORDER BY (size_bucket = 'all'), bucket_order""")
    buckets = [r for r in rows if r["size_bucket"] != "all"]
    overall = next((r for r in rows if r["size_bucket"] == "all"), None)
    unit_short = "h" if u == "h" else "min"
    dec = 2 if u == "h" else 1
    with_p99 = [r for r in buckets if r["p99"] is not None]
    parts = []
    if overall:
        parts.append(f"Across all jobs the median {what} is {fmt_num(overall['p50'], dec)} {unit_short} "
                     f"and p99 is {fmt_num(overall['p99'], dec)} {unit_short}")
    if with_p99:
        hi = max(with_p99, key=lambda r: r["p99"])
        lo = min(with_p99, key=lambda r: r["p50"] if r["p50"] is not None else float("inf"))
        parts.append(f"the longest tail is in the {bucket_name(hi['size_bucket'])} bucket "
                     f"(p99 {fmt_num(hi['p99'], dec)} {unit_short}), the shortest median in the "
                     f"{bucket_name(lo['size_bucket'])} bucket ({fmt_num(lo['p50'], dec)} {unit_short})")
    sec.lead = ("; ".join(parts) + ".") if parts else f"{NO_DATA}: no quantiles in {table}."
    sec.lead = sentence_case(sec.lead)
    if buckets:
        sec.add(svg(charts.quantile_chart(
            [(r["size_bucket"], r["p50"], r["p90"], r["p99"], r["mx"]) for r in buckets],
            f"{what.capitalize()} quantiles by job size (log scale)", unit_label)))
    sec.add(Table(
        [Column("GPUs per job"), Column("Jobs", True), Column(f"p50 ({unit_short})", True),
         Column(f"p90 ({unit_short})", True), Column(f"p99 ({unit_short})", True),
         Column(f"max ({unit_short})", True), Column(f"mean ({unit_short})", True)],
        [[bucket_cell(r["size_bucket"]), jobs_cell(r)]
         + [Cell(fmt_num(r[k], dec)) for k in ("p50", "p90", "p99", "mx", "mean")] for r in rows],
        caption=jobs_note,
    ))
    return sec


RUNTIME = SectionSpec("runtime", "Runtime tail by job size", lambda con, meta: quantile_section(
    con, key="runtime", title="Runtime tail by job size", table="marts.runtime_quantiles", unit="h",
    unit_label="Runtime (hours, log scale)", what="runtime",
    jobs_note="Jobs: GPU jobs that started and ended, as the job-size table counts them (a job still running at "
              "the end of the data has no runtime yet)."))
QUEUE = SectionSpec("queue", "Queue wait by job size", lambda con, meta: quantile_section(
    con, key="queue", title="Queue wait by job size", table="marts.queue_wait_quantiles", unit="min",
    unit_label="Queue wait (minutes, log scale)", what="queue wait",
    jobs_note="Jobs: GPU jobs that started, those still running at the end of the data included (their wait is "
              "known) — more than the finished jobs the job-size and runtime tables count."))
