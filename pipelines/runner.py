"""Run the pipeline in process through Dagster: what ``gpusre run`` and ``gpusre demo`` do.

Three job runs, in order: ``ingest_job`` (raw + core), ``daily_marts_job`` over the range of days
that changed (one single-run backfill), ``rollup_job`` (roll-up marts and the report). Runs are
recorded in the Dagster instance of ``$DAGSTER_HOME`` when it is set (so ``dagster dev`` shows them),
else in a throwaway in-memory instance.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import dagster as dg
import duckdb

from gpusre.models.warehouse import connect
from gpusre.pipelines.config import load_cluster_config
from gpusre.pipelines.definitions import build_definitions
from gpusre.pipelines.partitions import DAILY_PARTITIONS

__all__ = ["PipelineError", "RunSummary", "run_pipeline"]

#: Dagster's own console logging is switched down to warnings: the CLI prints its own progress.
QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


class PipelineError(RuntimeError):
    """A run failed for a reason the user can act on; the message is one line."""


@dataclass
class RunSummary:
    """What a pipeline run did, for the CLI's closing lines and for tests."""

    files_changed: int = 0
    files_refused: list[str] = field(default_factory=list)
    rows_loaded: int = 0
    rows_rejected: int = 0
    log_lines_loaded: int = 0
    node_events: int = 0
    jobs: int = 0
    days_recomputed: int = 0
    skipped_days_before_partitions: int = 0
    report_html: Path | None = None
    slo_report_html: Path | None = None
    snapshot: Path | None = None  # the warehouse copy for ad hoc queries (reports/warehouse_snapshot)
    report_markdown: Path | None = None
    seconds: float = 0.0


def _instance() -> dg.DagsterInstance:
    return dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else dg.DagsterInstance.ephemeral()


def _execute(defs: dg.Definitions, job_name: str, instance: dg.DagsterInstance,
             tags: dict[str, str] | None = None) -> dg.ExecuteInProcessResult:
    job = defs.resolve_job_def(job_name)
    try:
        result = job.execute_in_process(instance=instance, run_config=QUIET_RUN_CONFIG, tags=tags,
                                        raise_on_error=True)
    except dg.DagsterExecutionStepExecutionError as exc:
        cause = exc.user_exception if exc.user_exception is not None else exc
        raise PipelineError(f"{job_name} failed in step {exc.step_key}: {type(cause).__name__}: {cause}") from exc
    if not result.success:
        raise PipelineError(f"{job_name} failed")
    return result


def _materialization_metadata(result: dg.ExecuteInProcessResult, key: dg.AssetKey) -> dict[str, object]:
    for event in result.get_asset_materialization_events():
        mat = event.materialization
        if mat.asset_key == key:
            return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    return {}


def _count(metadata: dict[str, object], key: str) -> int:
    """An integer materialization metadata value; 0 when the asset did not report it."""
    return int(metadata.get(key) or 0)  # type: ignore[call-overload]


def _preflight_warehouse(warehouse: Path) -> None:
    """Open (and create) the warehouse once up front so a lock or permission problem is one clear line."""
    try:
        connect(warehouse).close()
    except duckdb.IOException as exc:
        first = str(exc).splitlines()[0]
        raise PipelineError(f"{warehouse}: cannot open the warehouse for writing (is another gpusre or "
                            f"dagster process writing it?): {first}") from exc


def run_pipeline(landing: Path, warehouse: Path, reports: Path,
                 progress: Callable[[str], None] = lambda _msg: None) -> RunSummary:
    """Materialize every asset over ``landing`` into ``warehouse``; safe to run again."""
    started = time.monotonic()
    if not landing.is_dir():
        raise PipelineError(f"{landing}: landing directory does not exist")
    load_cluster_config(landing)  # fail fast, before any run, with the key path of a bad setting
    sacct_dir = landing / "sacct"
    if not sacct_dir.is_dir() or not any(p.is_file() for p in sacct_dir.rglob("*")):
        raise PipelineError(f"{landing / 'sacct'}: no sacct dumps found (expected *.psv, *.txt or *.json)")

    _preflight_warehouse(warehouse)
    defs = build_definitions(str(warehouse), str(landing), str(reports))
    instance = _instance()
    summary = RunSummary()

    progress("[1/3] ingest: sacct dumps and node logs -> raw.*, core.*")
    t0 = time.monotonic()
    ingest = _execute(defs, "ingest_job", instance)
    raw_meta = _materialization_metadata(ingest, dg.AssetKey(["raw", "sacct_records"]))
    log_meta = _materialization_metadata(ingest, dg.AssetKey(["raw", "syslog_lines"]))
    core_meta = _materialization_metadata(ingest, dg.AssetKey(["core", "jobs"]))
    events_meta = _materialization_metadata(ingest, dg.AssetKey(["core", "node_events"]))
    summary.files_changed = _count(raw_meta, "files_changed") + _count(log_meta, "files_changed")
    summary.rows_loaded = _count(raw_meta, "rows_loaded")
    summary.log_lines_loaded = _count(log_meta, "rows_loaded")
    summary.rows_rejected = _count(raw_meta, "rows_rejected") + _count(log_meta, "rows_rejected")
    summary.files_refused = [f"{d['file']}: {d['error']}" for d in (raw_meta.get("refused_files") or [])]
    summary.jobs = _count(core_meta, "dagster/row_count")
    summary.node_events = _count(events_meta, "dagster/row_count")
    progress(f"      {summary.files_changed} new/changed file(s): {summary.rows_loaded:,} sacct records and "
             f"{summary.log_lines_loaded:,} node-log lines loaded, {summary.rows_rejected:,} rejected; "
             f"{summary.jobs:,} jobs, {summary.node_events:,} node events ({time.monotonic() - t0:.1f} s)")

    con = connect(warehouse)
    try:
        lo, hi, n = con.sql("SELECT min(day), max(day), count(*) FROM core.dirty_days").fetchall()[0]
        first_partition = date.fromisoformat(DAILY_PARTITIONS.get_first_partition_key())
        too_early = con.execute("SELECT count(*) FROM core.dirty_days WHERE day < ?", [first_partition]).fetchall()[0][0]
        if too_early:
            # Those days cannot be partitions; drop them from the queue so the warning is given once.
            con.execute("DELETE FROM core.dirty_days WHERE day < ?", [first_partition])
    finally:
        con.close()
    summary.skipped_days_before_partitions = int(too_early)
    if too_early:
        progress(f"      warning: {too_early} day(s) before {first_partition} have no daily partition; "
                 "set GPUSRE_PARTITIONS_START earlier to include them in daily marts")

    if n and n > too_early:
        last_key = DAILY_PARTITIONS.get_last_partition_key()
        start = max(lo, first_partition).isoformat()
        end = min(hi.isoformat(), last_key) if last_key else hi.isoformat()
        progress(f"[2/3] daily marts: {start} .. {end}")
        t0 = time.monotonic()
        _execute(defs, "daily_marts_job", instance, tags={
            "dagster/asset_partition_range_start": start,
            "dagster/asset_partition_range_end": end,
        })
        summary.days_recomputed = (date.fromisoformat(end) - date.fromisoformat(start)).days + 1
        progress(f"      {summary.days_recomputed} day(s) recomputed ({time.monotonic() - t0:.1f} s)")
    else:
        progress("[2/3] daily marts: no changed days")

    progress("[3/3] roll-up marts, reliability SLIs, node states, reports")
    t0 = time.monotonic()
    rollup = _execute(defs, "rollup_job", instance)
    report_meta = _materialization_metadata(rollup, dg.AssetKey(["reports", "nightly"]))
    if report_meta.get("html"):
        summary.report_html = Path(str(report_meta["html"]))
        summary.report_markdown = Path(str(report_meta["markdown"]))
    slo_meta = _materialization_metadata(rollup, dg.AssetKey(["reports", "slo"]))
    if slo_meta.get("html"):
        summary.slo_report_html = Path(str(slo_meta["html"]))
    snapshot_meta = _materialization_metadata(rollup, dg.AssetKey(["reports", "warehouse_snapshot"]))
    if snapshot_meta.get("path"):
        summary.snapshot = Path(str(snapshot_meta["path"]))
    progress(f"      done ({time.monotonic() - t0:.1f} s)")
    summary.seconds = time.monotonic() - started
    return summary
