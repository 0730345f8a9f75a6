"""Nightly report section "Compared with published GPU clusters" (``#published``).

Reads marts.cluster_comparison; formats, computes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb

from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_int,
    fmt_num,
    fmt_pct,
    sentence_case,
    span_hours,
)
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.nightly.meta import NightlyMeta


def _span(seconds: float | None) -> str:
    """A runtime or queue wait: '45 s', '15.2 min' (a decimal, since the published medians differ by
    less than a minute), then as :func:`age_text` ('5.2 h', '3.1 days')."""
    if seconds is None:
        return MISSING
    if seconds < 120:
        return f"{seconds:,.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:,.1f} min"
    return span_hours(seconds / 3600)


def _against(value: float | None, published: list[tuple[str, float]], fmt: Callable[[float], str]) -> str:
    """Where ``value`` stands among published (cluster, value) figures, as a phrase."""
    if value is None or not published:
        return ""
    lo, hi = min(published, key=lambda x: x[1]), max(published, key=lambda x: x[1])
    if value < lo[1]:
        return f"below every published cluster (lowest {lo[0]}, {fmt(lo[1])})"
    if value > hi[1]:
        return f"above every published cluster (highest {hi[0]}, {fmt(hi[1])})"
    return f"within the published range, {fmt(lo[1])} ({lo[0]}) to {fmt(hi[1])} ({hi[0]})"


#: (label, column, formatter) rows of the comparison table.
_COMPARISON_ROWS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("Trace period", "trace_period", lambda v: v or MISSING),
    ("GPU jobs compared", "gpu_jobs", fmt_int),
    ("Completed, share of GPU time", "completed_share_gpu_time", fmt_pct),
    ("Cancelled, share of GPU time", "cancelled_share_gpu_time", fmt_pct),
    ("Failed, share of GPU time", "failed_share_gpu_time", fmt_pct),
    ("Completed, share of jobs", "completed_share_jobs", fmt_pct),
    ("Cancelled, share of jobs", "cancelled_share_jobs", fmt_pct),
    ("Failed, share of jobs", "failed_share_jobs", fmt_pct),
    ("Median runtime", "med_run_time_s", _span),
    ("Mean runtime", "avg_run_time_s", _span),
    ("Median queue wait", "med_queue_s", _span),
    ("Mean queue wait", "avg_queue_s", _span),
    ("Mean GPUs per job", "avg_gpus", lambda v: fmt_num(v)),
    ("Largest job (GPUs)", "max_gpus", fmt_int),
)


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("published", "Compared with published GPU clusters")
    reason = table_status(con, "marts.cluster_comparison")
    if reason:
        sec.no_data = reason
        return sec
    rows = query_rows(con, "SELECT * FROM marts.cluster_comparison ORDER BY this_cluster DESC, gpu_jobs DESC, cluster")
    ours = next((r for r in rows if r["this_cluster"]), None)
    published = [r for r in rows if not r["this_cluster"]]
    if ours is None:
        sec.no_data = "No finished GPU jobs in core.jobs yet"
        return sec

    def figures(column: str) -> list[tuple[str, float]]:
        return [(r["cluster"], r[column]) for r in published if r[column] is not None]

    phrases = (  # (value here, how to say it, column compared)
        # shares of every run's GPU time (a requeued job's earlier runs under their own end), as in
        # "GPU-hours by job state": runs, not jobs
        ("cancelled_share_gpu_time", lambda v: f"cancelled runs hold {fmt_pct(v)} of GPU time here", fmt_pct),
        ("failed_share_gpu_time", lambda v: f"failed runs {fmt_pct(v)}", fmt_pct),
        ("med_run_time_s", lambda v: f"the median GPU job runs {_span(v)}", _span),
    )
    # A figure this cluster does not have (no GPU time yet) is left out rather than shown as a dash.
    parts = [f"{say(ours[col])}, {_against(ours[col], figures(col), fmt)}"
             for col, say, fmt in phrases if ours[col] is not None and figures(col)]
    sec.lead = sentence_case("; ".join(parts)) + "." if parts else "The published figures, for reference:"
    sec.add(Table(
        [Column(""), *(Column(("This cluster: " if r["this_cluster"] else "") + r["cluster"], True, nowrap=True)
                       for r in rows)],
        [[Cell(label), *(Cell(fmt(r[column])) for r in rows)] for label, column, fmt in _COMPARISON_ROWS],
        # The published figures are shares of all GPU jobs and all GPU time; this cluster's are over every
        # GPU job and every run's GPU time, the same quantities "GPU-hours by job state" shows.
        caption="GPU jobs that finished and the GPU time of every run (a requeued job's earlier runs under the "
                "state each ended in), classed as the published traces class them: completed = COMPLETED, "
                "cancelled = CANCELLED, failed = FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE. "
                "Shares are of every GPU job and all GPU time, as in \"GPU-hours by job state\"; runs and jobs "
                "that ended preempted or requeued (states the published traces do not have) are in no class, "
                "so this cluster's three shares may sum to less than 100 %.",
    ))
    sec.notes.append("Published figures: AcmeTrace `cluster_summary.csv` (Hu et al., NSDI '24; CC-BY-4.0) — "
                + "; ".join(f"{r['cluster']}: {r['organisation']}, {r['trace_period']}" for r in published)
                + ". The traces predate this cluster's hardware and differ in workload; they show what is "
                "usual, not a target.")
    return sec


SECTION = SectionSpec("published", "Compared with published GPU clusters", build)
