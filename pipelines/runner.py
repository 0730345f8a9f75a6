"""Run the pipeline in process through Dagster: what ``gpusre run`` and ``gpusre demo`` do.

Three job runs, in order: ``ingest_job`` (raw + core), ``daily_marts_job`` over the range of days
that changed (one single-run backfill), ``rollup_job`` (roll-up marts and the report). Runs, asset
materializations and check results are recorded in a persistent Dagster instance: ``$DAGSTER_HOME``
when it is set, else ``<warehouse folder>/dagster_home`` (created with a ``dagster.yaml`` on the first
run), so ``DAGSTER_HOME=<that folder> dagster dev -w workspace.yaml`` (``make dev`` for the demo) shows
what ran.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import dagster as dg
import duckdb

from gpusre.assets.core_jobs import CORE_JOBS
from gpusre.assets.failures import HW_INCIDENTS
from gpusre.assets.ingest_syslog import NODE_EVENTS
from gpusre.assets.lake_compaction import LAKE_COMPACTION
from gpusre.assets.reports import NIGHTLY_REPORT, SLO_REPORT
from gpusre.assets.warehouse_snapshot import WAREHOUSE_SNAPSHOT
from gpusre.models.ingest.lake_compaction import compaction_backlog
from gpusre.models.ingest.ledger import gone_files
from gpusre.models.marts_runner import queue_missing_days
from gpusre.models.sources.registry import lake_tables, record_sources
from gpusre.models.warehouse import connect
from gpusre.models.warehouse_snapshot import remove_stale_snapshot_tmp, snapshot_path
from gpusre.pipelines.config import load_cluster_config
from gpusre.pipelines.definitions import build_definitions
from gpusre.pipelines.partitions import DAILY_PARTITIONS
from gpusre.pipelines.run_lock import inherit_lock, warehouse_lock
from gpusre.pipelines.step_threads import step_process_threads

__all__ = ["SOURCES", "IncidentsSummary", "PipelineError", "RunSummary", "SourceSummary", "dagster_home", "gone_line",
           "run_pipeline", "ui_command"]

#: Dagster's own console logging is switched off below CRITICAL: the CLI prints its own progress and
#: one line per problem; a failing step's ERROR events (with their traceback) go to the run's log
#: file instead (see :func:`_execute`).
QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}

_log = logging.getLogger("gpusre.run")


class PipelineError(RuntimeError):
    """A run failed for a reason the user can act on; the message is one line."""


#: The landing sources with records, each optional: a landing with any subset of them runs
#: (declared once in gpusre.models.sources.registry).
SOURCES = record_sources()
#: Sources whose ingest is plan → parse per shard → publish (gpusre.assets.parallel_parse).
PARALLEL_SOURCES = ("sacct", "syslog")


@dataclass
class SourceSummary:
    """What the ingest did with one source's files in this run."""

    files_changed: int = 0  # new or changed files read (loaded or refused)
    files_refused: int = 0
    files_ignored: int = 0  # not this source's files (README, wrong name): listed in raw.ingested_files
    rows_loaded: int = 0
    rows_rejected: int = 0

    def line(self, name: str, records: str) -> str:
        """``sacct: 2 new/changed file(s), 1 refused, 0 ignored; 1,234 sacct records loaded, 5 rejected``."""
        return (f"{name}: {self.files_changed} new/changed file(s), {self.files_refused} refused, "
                f"{self.files_ignored} ignored; {self.rows_loaded:,} {records} loaded, {self.rows_rejected:,} rejected")


@dataclass
class RunSummary:
    """What a pipeline run did, for the CLI's closing lines and for tests."""

    files_changed: int = 0
    files_refused: list[str] = field(default_factory=list)  # "<file>: <reason>", every source
    rows_loaded: int = 0
    rows_rejected: int = 0  # records rejected this run, every source
    log_lines_loaded: int = 0
    #: Sources whose landing folder does not exist: said as such, not as "0 new/changed file(s)" (a quiet night).
    absent_sources: frozenset[str] = frozenset()
    node_events: int = 0
    jobs: int = 0
    days_recomputed: int = 0
    skipped_days_before_partitions: int = 0
    report_html: Path | None = None
    slo_report_html: Path | None = None
    snapshot: Path | None = None  # the warehouse copy for ad hoc queries (reports/warehouse_snapshot)
    #: Node-log lake files (and days) ``gpusre compact`` would merge now.
    mergeable_log_files: int = 0
    mergeable_log_days: int = 0
    report_markdown: Path | None = None
    dagster_home: Path | None = None  # the Dagster instance the runs were recorded in
    seconds: float = 0.0
    sources: dict[str, SourceSummary] = field(default_factory=dict)
    #: Landing files loaded earlier and since deleted from the landing folder (rows kept), newest gone first.
    gone_files: list[str] = field(default_factory=list)
    #: What the run did with the operator's incidents.csv (read by the failure marts, after the ingest).
    incidents: IncidentsSummary | None = None


@dataclass
class IncidentsSummary:
    """What the run did with ``incidents.csv``: status ``loaded``/``refused`` (read anew), ``unchanged``,
    ``gone`` (deleted: its labels were dropped) or ``absent``."""

    source_file: str
    status: str
    rows_loaded: int = 0
    rows_rejected: int = 0
    error: str = ""

    def line(self) -> str:
        """``incidents: incidents.csv new/changed, loaded; 1 operator incident(s) loaded, 1 rejected``."""
        if self.status == "gone":
            return f"incidents: {self.source_file} is gone from the landing directory; its incident labels were dropped"
        what = {"unchanged": "unchanged", "loaded": "new/changed, loaded", "refused": "refused"}.get(
            self.status, self.status)
        return (f"incidents: {self.source_file} {what}; {self.rows_loaded:,} operator incident(s) loaded, "
                f"{self.rows_rejected:,} rejected")


#: Names the gone-files line quotes before "...".
GONE_NAMES_SHOWN = 3


def gone_line(names: list[str]) -> str:
    """The run summary's line on landing files loaded earlier and deleted since (rows kept)."""
    shown = ", ".join(names[:GONE_NAMES_SHOWN]) + (", ..." if len(names) > GONE_NAMES_SHOWN else "")
    return (f"{len(names)} landing file(s) loaded earlier are gone from the landing directory; their rows stay "
            f"(the lake is the archive): {shown}")


#: Written on the first run into a new instance folder. Telemetry off: a batch job on a cluster
#: head node should not phone home; everything else is Dagster's default (SQLite storage in the folder).
_DAGSTER_YAML = """\
# Dagster instance of the gpusre runs on the warehouse in the folder above (written by gpusre run).
# Open the UI on it: DAGSTER_HOME=<this folder> dagster dev -w workspace.yaml  (make dev for the demo)
telemetry:
  enabled: false
# One writer of the DuckDB file: the warehouse steps (pool duckdb_warehouse) run one at a time,
# also when parse steps run side by side (gpusre run --workers N, the multiprocess executor).
concurrency:
  pools:
    default_limit: 1
# Steps print nothing worth keeping (their logs are events); capturing stdout costs two processes per step.
compute_logs:
  module: dagster._core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
"""
#: Dagster's SQLite event log with its connections kept open (see pipelines/dagster_event_log.py):
#: the same files, a few seconds less per run. The folder is absolute; a moved instance gets it rewritten.
_EVENT_LOG_YAML = """\
# Dagster's SQLite event log, connections kept open (the same files; see gpusre/pipelines/dagster_event_log.py).
event_log_storage:
  module: gpusre.pipelines.dagster_event_log
  class: KeptOpenSqliteEventLogStorage
  config:
    base_dir: {base_dir}
"""
#: What earlier versions wrote; replaced by the current text (the first lacked the pool limit,
#: the second the event log storage).
_OLD_DAGSTER_YAMLS = (_DAGSTER_YAML.split("# One writer")[0], _DAGSTER_YAML)


def _dagster_yaml(home: Path) -> str:
    """The ``dagster.yaml`` gpusre writes into the instance folder ``home``."""
    return _DAGSTER_YAML + _EVENT_LOG_YAML.format(base_dir=json.dumps(str(home.resolve() / "history" / "runs")))


def dagster_home(warehouse: Path) -> Path:
    """The Dagster instance folder runs over ``warehouse`` record into: ``$DAGSTER_HOME`` when set,
    else ``dagster_home`` next to the warehouse file."""
    env = os.environ.get("DAGSTER_HOME")
    return Path(env) if env else Path(warehouse).resolve().parent / "dagster_home"


#: Settings the definitions read when `dagster dev` loads them, passed on when the run had them set:
#: without the same partitions the UI would not know the days the run materialized.
_UI_PASSED_SETTINGS = ("GPUSRE_PARTITIONS_START", "GPUSRE_PARTITIONS_AHEAD_DAYS")


def ui_command(home: Path, landing: Path, warehouse: Path, reports: Path) -> str:
    """The shell line that opens the Dagster UI on the instance ``home`` of a run over ``landing``,
    ``warehouse`` and ``reports``: absolute paths, shell-quoted, usable from any directory.

    The definitions `dagster dev` loads take their resources from GPUSRE_LANDING / GPUSRE_WAREHOUSE /
    GPUSRE_REPORTS (else ``demo/`` under the current directory): with DAGSTER_HOME alone, a
    Materialize click or the sensor turned on in that UI would act on ./demo, not on this warehouse.
    """
    env = {"DAGSTER_HOME": home, "GPUSRE_LANDING": landing, "GPUSRE_WAREHOUSE": warehouse,
           "GPUSRE_REPORTS": reports}
    words = [f"{name}={shlex.quote(str(Path(value).expanduser().resolve()))}" for name, value in env.items()]
    words += [f"{name}={shlex.quote(os.environ[name])}" for name in _UI_PASSED_SETTINGS if os.environ.get(name)]
    # workspace.yaml sits in the source checkout (not in an installed wheel); the module form loads the same defs.
    workspace = Path(__file__).resolve().parents[1] / "workspace.yaml"
    target = (f"-w {shlex.quote(str(workspace))}" if workspace.is_file()
              else "-m gpusre.pipelines.definitions -a defs")
    return " ".join([*words, "dagster dev", target])


def _instance(home: Path) -> dg.DagsterInstance:
    """The persistent instance in ``home``, its folder and ``dagster.yaml`` created when missing;
    runs a killed process left unfinished are closed (see :func:`_close_dead_runs`)."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    text = config.read_text() if config.exists() else None
    # Rewritten when missing or when gpusre wrote it (an earlier version, or the instance moved);
    # a dagster.yaml the user wrote is left alone.
    if text is None or text in _OLD_DAGSTER_YAMLS or text.startswith(
            _DAGSTER_YAML + _EVENT_LOG_YAML.split("{base_dir}")[0]):
        wanted = _dagster_yaml(home)
        if text != wanted:
            config.write_text(wanted)
    instance = dg.DagsterInstance.from_config(str(home))
    _close_dead_runs(instance)
    return instance


def _close_dead_runs(instance: dg.DagsterInstance) -> None:
    """Mark runs still 'started' as failed and free the pool slots they claimed. Called with the
    warehouse's run lock held, so no other run on this warehouse is alive: those runs' process was
    killed (SIGKILL, OOM, power loss). Without this, the ``duckdb_warehouse`` slot a killed step held
    stays claimed in the instance and every later run waits for it forever."""
    unfinished = instance.get_runs(filters=dg.RunsFilter(statuses=[
        dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.CANCELING]))
    for run in unfinished:
        instance.report_run_failed(run)
    storage = instance.event_log_storage
    if storage.supports_global_concurrency_limits:
        for run_id in storage.get_concurrency_run_ids():
            storage.free_concurrency_slots_for_run(run_id)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _lock_conflict(warehouse: Path, exc: BaseException) -> str | None:
    """The one-line error for a warehouse file another process holds open, else None.

    gpusre runs exclude each other with the run lock before they open the file, so the holder is
    an ad hoc reader (``duckdb`` CLI, a notebook) or a Dagster process: point readers at the
    snapshot, which stays readable while a run writes."""
    if not isinstance(exc, duckdb.IOException) or "lock" not in str(exc).lower():
        return None
    return (f"{warehouse}: the warehouse file is held open by another process (an ad hoc reader or a dagster "
            f"process, not a gpusre run); readers should open the snapshot {snapshot_path(warehouse)} "
            f"instead: {_first_line(exc)}")


def _execute(defs: dg.Definitions, job_name: str, instance: dg.DagsterInstance, warehouse: Path,
             tags: dict[str, str] | None = None, ops: dict[str, object] | None = None) -> dg.ExecuteInProcessResult:
    """Run one job in process; any failure is one :class:`PipelineError` line, its traceback logged.

    Dagster 1.13's ``execute_in_process`` re-raises the step's own exception (not a
    ``DagsterExecutionStepExecutionError``), so every exception is caught here."""
    job = defs.resolve_job_def(job_name)
    try:
        run_config = {**QUIET_RUN_CONFIG, "ops": ops} if ops else QUIET_RUN_CONFIG
        result = job.execute_in_process(instance=instance, run_config=run_config, tags=tags,
                                        raise_on_error=True)
    except PipelineError:
        raise
    except Exception as exc:
        cause = getattr(exc, "user_exception", None) or exc
        _log.error("%s failed", job_name, exc_info=cause)
        step = getattr(exc, "step_key", None)
        where = f"{job_name} failed" + (f" in step {step}" if step else "")
        raise PipelineError(_lock_conflict(warehouse, cause)
                            or f"{where}: {type(cause).__name__}: {_first_line(cause)}") from exc
    if not result.success:
        raise PipelineError(f"{job_name} failed")
    return result


def ingest_job_for(warehouse: str, landing: str, reports: str, workers: int) -> dg.JobDefinition:
    """The ingest job with ``workers`` parse shards on the multiprocess executor: what each step
    process rebuilds (:func:`dagster.build_reconstructable_job` names this function)."""
    return build_definitions(warehouse, landing, reports, workers).resolve_job_def("ingest_job")


@contextmanager
def _step_output_to_run_log() -> Iterator[None]:
    """Point file descriptor 2 at the run's log file (else /dev/null) while step processes start:
    Dagster's step processes log their start-up events at DEBUG to the stderr they inherit, whatever
    the run config says, and the CLI prints one line per problem, not those."""
    handlers = [h for h in logging.getLogger("gpusre").handlers if isinstance(h, logging.FileHandler)]
    target = handlers[0].baseFilename if handlers else os.devnull
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def _execute_parallel(job_args: dict[str, object], instance: dg.DagsterInstance,
                      warehouse: Path) -> dg.ExecutionResult:
    """Run the ingest job on the multiprocess executor (steps in child processes, which inherit
    the run lock); any failure is one :class:`PipelineError` line, its traceback logged."""
    recon = dg.build_reconstructable_job("gpusre.pipelines.runner", "ingest_job_for", reconstructable_kwargs=job_args)
    with inherit_lock(warehouse), _step_output_to_run_log(), \
            dg.execute_job(recon, instance=instance, run_config=QUIET_RUN_CONFIG) as result:
        if result.success:
            return result
        for event in result.get_step_failure_events():
            error = event.step_failure_data.error
            _log.error("ingest_job failed in step %s:\n%s", event.step_key, error.to_string() if error else "")
            cause = error.cause if error and error.cause else error
            message = cause.message.strip().splitlines()[0] if cause and cause.message.strip() else "failed"
            raise PipelineError(f"ingest_job failed in step {event.step_key}: {message}")
        raise PipelineError("ingest_job failed")


def _materialization_metadata(result: dg.ExecutionResult, key: dg.AssetKey) -> dict[str, object]:
    for event in result.get_asset_materialization_events():
        mat = event.materialization
        if mat.asset_key == key:
            return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    return {}


def _count(metadata: dict[str, object], key: str) -> int:
    """An integer materialization metadata value; 0 when the asset did not report it."""
    return int(metadata.get(key) or 0)  # type: ignore[call-overload]


#: New bytes of parallel-parsed sources below which ``workers=None`` parses in this process: each
#: step process of the multiprocess executor costs seconds to start (measured: 3-6 s per step on a
#: 2-core machine), about what parsing 50 MB of node logs costs.
AUTO_PARALLEL_BYTES = 256 << 20
#: Cores below which ``workers=None`` always parses in this process: one parse process already keeps
#: ~1.2 cores busy (Polars' threads, the lake writer thread), so on 2 cores 2 processes parsed 10 M
#: node-log lines only 1.04-1.08x faster, and the year's night with 10 M new lines took 95.2 s with 2
#: workers against 83.0 s with 1 (each of ~18 step processes starting in seconds; 2026-12-03).
AUTO_PARALLEL_MIN_CORES = 4


def auto_workers(new_bytes: int, cores: int) -> int:
    """Parse workers when ``gpusre run`` is given none: every core once ``new_bytes`` of sacct dumps
    and node logs are new on a machine of at least :data:`AUTO_PARALLEL_MIN_CORES`, else 1 (in process)."""
    return cores if new_bytes >= AUTO_PARALLEL_BYTES and cores >= AUTO_PARALLEL_MIN_CORES else 1


def _preflight_warehouse(warehouse: Path, landing: Path, *, count_new: bool) -> int:
    """Open (and create) the warehouse once up front so a lock or permission problem is one clear
    line; with ``count_new``, return the bytes of sacct and node-log files whose path and size the
    ledger does not know (new or probably changed: what the parse steps will have to read), else 0
    (stat-ing every landing file costs seconds on a year of history)."""
    parallel = [s for s in SOURCES if s.name in PARALLEL_SOURCES]
    try:
        con = connect(warehouse)
        try:
            known = set(con.execute("SELECT source_file, size_bytes FROM raw.ingested_files").fetchall()) \
                if count_new else set()
        finally:
            con.close()
    except duckdb.IOException as exc:
        raise PipelineError(_lock_conflict(warehouse, exc)
                            or f"{warehouse}: cannot open the warehouse for writing: {_first_line(exc)}") from exc
    if not count_new:
        return 0
    new = 0
    for source in parallel:
        for path in source.landing_files(landing):
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if (path.relative_to(landing).as_posix(), size) not in known:
                new += size
    return new


def _has_input(landing: Path) -> bool:
    """True when any source folder holds any file (each source is optional, but not all of them)."""
    return any(s.landing_files(landing) for s in SOURCES)


def _source_summaries(ingest: dg.ExecutionResult, summary: RunSummary) -> None:
    """Per-source counts and every refused file, from the raw assets' materialization metadata."""
    for source in SOURCES:
        meta = _materialization_metadata(ingest, dg.AssetKey(list(source.asset)))
        summary.sources[source.name] = SourceSummary(
            files_changed=_count(meta, "files_changed"), files_refused=_count(meta, "files_refused"),
            files_ignored=_count(meta, "files_ignored"), rows_loaded=_count(meta, "rows_loaded"),
            rows_rejected=_count(meta, "rows_rejected"))
        # Parsers' reasons often name the file already: say it once.
        summary.files_refused += [f"{d['file']}: {str(d['error']).removeprefix(d['file'] + ': ')}"
                                  for d in (meta.get("refused_files") or [])]
    summary.files_changed = sum(s.files_changed for s in summary.sources.values())
    summary.rows_rejected = sum(s.rows_rejected for s in summary.sources.values())
    summary.rows_loaded = summary.sources["sacct"].rows_loaded
    summary.log_lines_loaded = summary.sources["syslog"].rows_loaded


def _incidents_summary(meta: dict[str, object], summary: RunSummary, progress: Callable[[str], None]) -> None:
    """incidents.csv's line, its rejects in the run's count and a refusal among the refused files."""
    status = str(meta.get("incidents_status") or "absent")
    if status == "absent":
        return
    inc = IncidentsSummary(str(meta.get("incidents_file")), status, _count(meta, "incidents_loaded"),
                           _count(meta, "incidents_rejected"), str(meta.get("incidents_error") or ""))
    summary.incidents = inc
    progress(f"      {inc.line()}")
    if status in ("loaded", "refused"):  # read anew in this run, like a new/changed file of a source
        summary.rows_rejected += inc.rows_rejected
    if status == "refused":
        summary.files_refused.append(f"{inc.source_file}: {inc.error}")


def run_pipeline(landing: Path, warehouse: Path, reports: Path,
                 progress: Callable[[str], None] = lambda _msg: None, workers: int | None = 1) -> RunSummary:
    """Materialize every asset over ``landing`` into ``warehouse``; safe to run again.

    ``workers`` > 1: the ingest runs on Dagster's multiprocess executor with that many parse steps
    per parallel-parsed source (sacct, node logs) side by side; the result is the same as with 1.
    ``None``: as many as cores when at least :data:`AUTO_PARALLEL_BYTES` of those sources are new,
    else 1 (step processes cost seconds each to start).
    Holds the warehouse's run lock from the first step to the last (snapshot included): a second
    run raises :class:`~gpusre.pipelines.run_lock.WarehouseBusy` at once."""
    started = time.monotonic()
    if not landing.is_dir():
        raise PipelineError(f"{landing}: " + ("is a file, not a landing directory" if landing.exists()
                                              else "landing directory does not exist"))
    load_cluster_config(landing)  # fail fast, before any run, with the key path of a bad setting
    if not _has_input(landing):
        raise PipelineError(f"{landing}: no input files (expected any of "
                            f"{', '.join(s.landing + '/' for s in SOURCES)} with files in it)")
    with warehouse_lock(warehouse, progress):
        remove_stale_snapshot_tmp(warehouse)
        return _run_locked(landing, warehouse, reports, progress, started, workers)


def _run_locked(landing: Path, warehouse: Path, reports: Path, progress: Callable[[str], None],
                started: float, workers: int | None) -> RunSummary:
    new_bytes = _preflight_warehouse(warehouse, landing, count_new=workers is None)
    if workers is None:  # auto: parallel parse only when there is enough to parse
        workers = auto_workers(new_bytes, len(os.sched_getaffinity(0)))
    defs = build_definitions(str(warehouse), str(landing), str(reports))
    home = dagster_home(warehouse)
    job_args = {"warehouse": str(warehouse), "landing": str(landing), "reports": str(reports), "workers": workers}
    with _instance(home) as instance:
        # Folder sources only: incidents.csv is an operator's optional file, absent on most sites.
        absent = frozenset(s.name for s in SOURCES if "." not in s.landing and not (landing / s.landing).exists())
        return _run_jobs(defs, instance, warehouse, progress, started,
                         RunSummary(dagster_home=home, absent_sources=absent), job_args if workers > 1 else None)


def _run_jobs(defs: dg.Definitions, instance: dg.DagsterInstance, warehouse: Path,
              progress: Callable[[str], None], started: float, summary: RunSummary,
              parallel: dict[str, object] | None) -> RunSummary:
    t0 = time.monotonic()
    if parallel:
        workers = int(parallel["workers"])  # type: ignore[call-overload]
        with step_process_threads(workers, len(os.sched_getaffinity(0))) as threads:
            progress("[1/3] ingest: sacct dumps, node logs, alerts, node states -> raw.*, core.*, "
                     f"{workers} parse workers ({threads} Polars thread(s) each)")
            ingest = _execute_parallel(parallel, instance, warehouse)
    else:
        progress("[1/3] ingest: sacct dumps, node logs, alerts, node states -> raw.*, core.*")
        ingest = _execute(defs, "ingest_job", instance, warehouse)
    _source_summaries(ingest, summary)
    summary.jobs = _count(_materialization_metadata(ingest, CORE_JOBS), "dagster/row_count")
    summary.node_events = _count(_materialization_metadata(ingest, NODE_EVENTS), "dagster/row_count")
    progress(f"      {summary.files_changed} new/changed file(s), {len(summary.files_refused)} refused; "
             f"{summary.rows_rejected:,} records rejected; core.jobs {summary.jobs:,} jobs (every state, CPU jobs and "
             f"jobs cancelled while pending too), {summary.node_events:,} node events ({time.monotonic() - t0:.1f} s)")
    for source in SOURCES:
        src = summary.sources[source.name]
        if source.name in summary.absent_sources and not src.files_changed:
            progress(f"      {source.name}: no {source.landing}/ folder in the landing directory: nothing of this "
                     "source was collected")
        else:
            progress(f"      {src.line(source.name, source.label)}")

    con = connect(warehouse)
    try:
        summary.gone_files = gone_files(con)
        if summary.gone_files:
            # Said on every run while they are gone: the reports keep counting their rows.
            progress(f"      {gone_line(summary.gone_files)}")
        queue_missing_days(con)  # days no record touched between two runs' ranges (a day nothing ran)
        lo, hi, n = con.sql("SELECT min(day), max(day), count(*) FROM core.dirty_days").fetchall()[0]
        first_partition = date.fromisoformat(DAILY_PARTITIONS.get_first_partition_key())
        too_early = con.execute("SELECT count(*) FROM core.dirty_days WHERE day < ?", [first_partition]).fetchall()[0][0]
        last_partition = date.fromisoformat(DAILY_PARTITIONS.get_last_partition_key())
        too_late = con.execute("SELECT count(*) FROM core.dirty_days WHERE day > ?", [last_partition]).fetchall()[0][0]
        if too_early or too_late:
            # Those days cannot be partitions; drop them from the queue so the warning is given once.
            con.execute("DELETE FROM core.dirty_days WHERE day < ? OR day > ?", [first_partition, last_partition])
    finally:
        con.close()
    summary.skipped_days_before_partitions = int(too_early)
    if too_early:
        progress(f"      warning: {too_early} day(s) before {first_partition} have no daily partition; "
                 "set GPUSRE_PARTITIONS_START earlier to include them in daily marts")
    if too_late:
        progress(f"      warning: {too_late} day(s) after {last_partition} have no daily partition (this machine's "
                 "clock is far behind the data?); set GPUSRE_PARTITIONS_AHEAD_DAYS to include them in daily marts")

    if n and n > too_early + too_late:
        start = max(lo, first_partition).isoformat()
        end = min(hi, last_partition).isoformat()
        progress(f"[2/3] daily marts: {start} .. {end}")
        t0 = time.monotonic()
        _execute(defs, "daily_marts_job", instance, warehouse, tags={
            "dagster/asset_partition_range_start": start,
            "dagster/asset_partition_range_end": end,
        })
        summary.days_recomputed = (date.fromisoformat(end) - date.fromisoformat(start)).days + 1
        progress(f"      {summary.days_recomputed} day(s) recomputed ({time.monotonic() - t0:.1f} s)")
    else:
        progress("[2/3] daily marts: no changed days")

    progress("[3/3] roll-up marts, reliability SLIs, node states, reports")
    t0 = time.monotonic()
    rollup = _execute(defs, "rollup_job", instance, warehouse)
    _incidents_summary(_materialization_metadata(rollup, HW_INCIDENTS), summary, progress)
    report_meta = _materialization_metadata(rollup, NIGHTLY_REPORT)
    if report_meta.get("html"):
        summary.report_html = Path(str(report_meta["html"]))
        summary.report_markdown = Path(str(report_meta["markdown"]))
    slo_meta = _materialization_metadata(rollup, SLO_REPORT)
    if slo_meta.get("html"):
        summary.slo_report_html = Path(str(slo_meta["html"]))
    snapshot_meta = _materialization_metadata(rollup, WAREHOUSE_SNAPSHOT)
    if snapshot_meta.get("path"):
        summary.snapshot = Path(str(snapshot_meta["path"]))
    con = connect(warehouse, read_only=True)
    try:
        backlogs = [compaction_backlog(con, spec) for spec in lake_tables() if spec.compactable]
    finally:
        con.close()
    summary.mergeable_log_files = sum(b.files for b in backlogs)
    summary.mergeable_log_days = sum(b.days for b in backlogs)
    progress(f"      done ({time.monotonic() - t0:.1f} s)")
    summary.seconds = time.monotonic() - started
    return summary


@dataclass
class CompactionSummary:
    """What ``gpusre compact`` did (the lake_compaction asset's metadata)."""

    days_compacted: int = 0
    versions_merged: int = 0
    files_merged: int = 0
    rows_written: int = 0
    files_deleted: int = 0
    snapshot: Path | None = None
    seconds: float = 0.0


def compact_lake(warehouse: Path, *, keep_days: int, min_files: int,
                 progress: Callable[[str], None] = lambda _msg: None) -> CompactionSummary:
    """Run the ``lake_compaction_job`` on ``warehouse`` (merge old days' small lake files, then
    refresh the snapshot) under the warehouse's run lock; safe to run again."""
    started = time.monotonic()
    if not warehouse.is_file():
        raise PipelineError(f"{warehouse}: warehouse file does not exist (run gpusre run first)")
    with warehouse_lock(warehouse, progress):
        remove_stale_snapshot_tmp(warehouse)
        defs = build_definitions(str(warehouse))
        with _instance(dagster_home(warehouse)) as instance:
            progress("lake compaction: old days' small node-log files -> one file per day; snapshot")
            result = _execute(defs, "lake_compaction_job", instance, warehouse, ops={
                "maintenance__lake_compaction": {"config": {"keep_days": keep_days, "min_files": min_files}}})
    metadata = _materialization_metadata(result, LAKE_COMPACTION)
    snapshot = _materialization_metadata(result, WAREHOUSE_SNAPSHOT).get("path")
    return CompactionSummary(
        **{name: _count(metadata, name) for name in
           ("days_compacted", "versions_merged", "files_merged", "rows_written", "files_deleted")},
        snapshot=Path(str(snapshot)) if snapshot else None, seconds=time.monotonic() - started)
