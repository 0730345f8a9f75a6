"""Nightly report section "Job size: share of jobs vs share of GPU-hours" (``#sizes``).

Reads marts.size_buckets; formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    fmt_int,
    fmt_num,
    fmt_pct,
    sentence_case,
)
from gpusre.reports.kit.labels import bucket_cell, bucket_name
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.nightly.meta import NightlyMeta, total_cells


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("sizes", "Job size: share of jobs vs share of GPU-hours")
    reason = table_status(con, "marts.size_buckets")
    if reason:
        sec.no_data = reason
        return sec
    rows = query_rows(con, """SELECT size_bucket, jobs, gpu_hours, share_jobs, share_gpu_hours
                         FROM marts.size_buckets WHERE period_type = 'all' ORDER BY bucket_order""")
    if not rows:
        sec.no_data = f"{NO_DATA}: marts.size_buckets has no period_type 'all' rows."
        return sec
    biggest = max(rows, key=lambda r: r["share_gpu_hours"] or 0.0)
    single = next((r for r in rows if r["size_bucket"] == "1"), None)
    first = single or rows[0]
    if biggest["share_gpu_hours"] is None:
        sec.lead = (f"No GPU-hours were recorded, so no size shares of GPU time; "
                    f"{bucket_name(first['size_bucket'])} jobs are {fmt_pct(first['share_jobs'])} of jobs.")
    else:
        sec.lead = (
            f"{sentence_case(bucket_name(first['size_bucket']))} jobs are {fmt_pct(first['share_jobs'])} of jobs "
            f"but {fmt_pct(first['share_gpu_hours'])} of GPU-hours; {bucket_name(biggest['size_bucket'])} jobs take "
            f"the largest share of GPU-hours, {fmt_pct(biggest['share_gpu_hours'])} "
            f"(from {fmt_pct(biggest['share_jobs'])} of jobs)."
        )
    sec.add(svg(charts.size_share_chart(
        [(r["size_bucket"], r["share_jobs"], r["share_gpu_hours"]) for r in rows],
        "Share of jobs vs share of GPU-hours by job size")))
    sec.add(Table(
        [Column("GPUs per job"), Column("Jobs", True), Column("Share of jobs", True), Column("GPU-hours", True),
         Column("Share of GPU-hours", True)],
        [[bucket_cell(r["size_bucket"]), Cell(fmt_int(r["jobs"])), Cell(fmt_pct(r["share_jobs"])),
          Cell(fmt_num(r["gpu_hours"])), Cell(fmt_pct(r["share_gpu_hours"]))] for r in rows]
        + [c for c in [total_cells(con)] if c],
        caption="Jobs: GPU jobs that started and ended (a job still running at the end of the data counts once it "
                "ends; the queue-wait table counts it already).",
    ))
    return sec


SECTION = SectionSpec("sizes", "Job size: share of jobs vs share of GPU-hours", build)
