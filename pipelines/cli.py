"""The ``gpusre`` command line: simulate, run, compact, demo, report, templates, docs.

User errors (bad arguments, unreadable input, invalid cluster.yaml, a warehouse locked by another
process) print one line ``gpusre: error: …`` and exit non-zero; no tracebacks.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from gpusre.models.ingest.compaction_policy import KEEP_DAYS, MIN_FILES

if TYPE_CHECKING:  # duckdb is imported lazily: `gpusre --help` stays fast
    import duckdb

__all__ = ["main"]

EXIT_USAGE = 2
EXIT_FAILED = 1


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _cmd_simulate(args: argparse.Namespace) -> int:
    from gpusre.simulate import SimulationConfig, simulate_cluster

    config = SimulationConfig(nodes=args.nodes, gpus_per_node=args.gpus_per_node, days=args.days,
                              start=args.start, seed=args.seed, timezone=args.timezone,
                              syslog_layout=args.syslog_layout.replace("-", "_"))
    summary = simulate_cluster(Path(args.out), config, progress=_progress)
    print(f"simulated {summary.get('n_jobs', '?')} jobs on {args.nodes} nodes x {args.gpus_per_node} GPUs "
          f"over {args.days} days -> {args.out}")
    return 0


def _run(landing: Path, warehouse: Path, reports: Path, workers: int | None = None) -> int:
    from gpusre.models.warehouse import catalog_clash_error
    from gpusre.pipelines.run_lock import warehouse_lock

    if (refusal := catalog_clash_error(warehouse)) is not None:  # before any file is made next to it
        print(f"gpusre: error: {refusal}", file=sys.stderr)
        return EXIT_USAGE
    # The landing is checked before the report folder, the run lock and the log folder are made: a refused
    # run leaves nothing behind (it once left the warehouse folder with logs/, reports/ and an empty lock).
    _check_landing(landing)
    if (problem := _reports_dir_error(reports)) is not None:  # before the ingest, not after it
        print(f"gpusre: error: {problem}", file=sys.stderr)
        return EXIT_FAILED
    # The run lock first, before Dagster is imported (seconds): a second run is refused at once.
    with warehouse_lock(warehouse, _progress):
        return _run_locked(landing, warehouse, reports, workers)


def _check_landing(landing: Path) -> None:
    """Raise the one-line error of a landing a run would refuse — no directory, no input file of any
    source, an invalid cluster.yaml — before anything is written (the runner checks the same for its
    other callers, after the CLI has taken the run lock)."""
    from gpusre.models.sources.registry import SOURCES, watched_files
    from gpusre.pipelines.config import load_cluster_config

    if not landing.is_dir():
        raise NotADirectoryError(f"{landing}: " + ("is a file, not a landing directory" if landing.exists()
                                                   else "landing directory does not exist"))
    load_cluster_config(landing)  # ClusterConfigError names the key path of a bad setting
    if not watched_files(landing):
        folders = ", ".join(s.landing + ("" if "." in s.landing else "/") for s in SOURCES)
        raise FileNotFoundError(f"{landing}: no input files (expected any of {folders} with files in it)")


def _run_locked(landing: Path, warehouse: Path, reports: Path, workers: int | None) -> int:
    import logging

    from gpusre.pipelines.runner import run_pipeline, ui_command

    # Long asset steps report through this logger (see gpusre.assets.progress).
    progress_logger = logging.getLogger("gpusre.progress")
    if not progress_logger.handlers:  # main() may run more than once in one process (tests)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("      %(message)s"))
        progress_logger.addHandler(handler)
    progress_logger.setLevel(logging.INFO)
    progress_logger.propagate = False

    _start_run_log(warehouse.parent / "logs")
    summary = run_pipeline(landing, warehouse, reports, progress=_progress, workers=workers)
    for refused in summary.files_refused:  # "<file>: <reason>", one line per problem
        print(f"gpusre: error: {refused}", file=sys.stderr)
    if summary.files_refused:
        _log_hint()  # a file a parser could not read has its traceback there
    print(f"warehouse: {warehouse} ({summary.jobs:,} jobs, {summary.rows_rejected:,} records rejected "
          f"and {len(summary.files_refused)} file(s) refused this run; see raw.rejects) in {summary.seconds:.1f} s")
    if summary.report_html:
        print(f"report: {summary.report_html}")
    if summary.slo_report_html:
        print(f"SLO report: {summary.slo_report_html}")
    if summary.snapshot:
        print(f"snapshot for ad hoc queries (readable while a run writes): {summary.snapshot}")
    if summary.mergeable_log_files:
        print(f"node-log lake: {summary.mergeable_log_files:,} small files on {summary.mergeable_log_days} old day(s) "
              f"can be merged into one per day (faster ad hoc queries): gpusre compact --warehouse {warehouse}")
    if summary.dagster_home:
        print("Dagster UI (runs, materializations, checks): "
              + ui_command(summary.dagster_home, landing, warehouse, reports))
    # A refused file is a failed input even though everything else loaded: make cron notice.
    return EXIT_FAILED if summary.files_refused else 0


#: The log file of this process's run, once one was started (tracebacks go there, never to the terminal).
_RUN_LOG: list[Path] = []


def _start_run_log(folder: Path) -> None:
    """Send the ``gpusre`` loggers' records (tracebacks of failed steps and of files a parser could
    not read) to ``folder/gpusre-run-<UTC time>-<pid>.log``; the file is created on the first record."""
    import logging
    import os
    from datetime import UTC, datetime

    path = folder / f"gpusre-run-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{os.getpid()}.log"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # no log file rather than a failed run
    handler = logging.FileHandler(path, delay=True, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("gpusre")
    for old in [h for h in root.handlers if isinstance(h, logging.FileHandler)]:
        root.removeHandler(old)  # main() may run more than once in one process (tests)
        old.close()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    _RUN_LOG[:] = [path]


def _log_hint() -> None:
    """Name the log file holding the details, when the run wrote one."""
    if _RUN_LOG and _RUN_LOG[0].exists():
        print(f"gpusre: details (tracebacks, warnings) in {_RUN_LOG[0]}", file=sys.stderr)


def _default_workers() -> int | None:
    """``$GPUSRE_WORKERS``, else None: as many as cores when there is enough new input (see
    gpusre.pipelines.runner.AUTO_PARALLEL_BYTES), else 1."""
    env = os.environ.get("GPUSRE_WORKERS")
    return max(1, int(env)) if env and env.isdigit() else None


def _reports_dir_error(reports: Path) -> str | None:
    """Create the report directory up front; the one-line reason when it cannot be (its parent is a file,
    no permission): found before the ingest, not after it as a failed roll-up."""
    try:
        reports.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"{reports}: cannot create the report directory ({exc.strerror or exc})"
    return None


def _cmd_run(args: argparse.Namespace) -> int:
    reports = Path(args.reports) if args.reports else Path(args.warehouse).parent / "reports"
    return _run(Path(args.landing), Path(args.warehouse), reports, args.workers)


def _cmd_compact(args: argparse.Namespace) -> int:
    from gpusre.pipelines.run_lock import warehouse_lock

    warehouse = Path(args.warehouse)
    if not warehouse.is_file():  # before the lock file and logs/ are made next to it: a refusal leaves nothing
        raise FileNotFoundError(f"{warehouse}: warehouse file does not exist (run gpusre run first)")
    with warehouse_lock(warehouse, _progress):  # before Dagster is imported, as for a run
        from gpusre.pipelines.runner import compact_lake

        _start_run_log(warehouse.parent / "logs")
        done = compact_lake(warehouse, keep_days=args.keep_days, min_files=args.min_files, progress=_progress)
    print(f"lake: {done.days_compacted} day(s) compacted, {done.versions_merged:,} landing-file versions and "
          f"{done.files_merged:,} files merged into them ({done.rows_written:,} rows written), "
          f"{done.files_deleted:,} files deleted, in {done.seconds:.1f} s")
    if done.snapshot:
        print(f"snapshot for ad hoc queries (readable while a run writes): {done.snapshot}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from gpusre.simulate import SimulationConfig, simulate_cluster

    out = Path(args.out)
    landing = out / "landing"
    _progress(f"simulating the built-in demo cluster into {landing} ...")
    # A central rsyslog layout: one log file per day instead of one per node and day.
    summary = simulate_cluster(landing, SimulationConfig(syslog_layout="central"), progress=_progress)
    _progress(f"simulated {summary.get('n_jobs', '?')} jobs")
    return _run(landing, out / "warehouse.duckdb", out / "reports")


#: Snapshots a report of this command already said it reads instead of the busy warehouse.
_SNAPSHOT_NOTED: set[str] = set()


def _open_warehouse(path: str, read_only: bool, *, report: bool = False) -> tuple[Path, duckdb.DuckDBPyConnection]:
    """An existing warehouse file and a connection to it (a missing file is a one-line user error).

    ``report``: a report reads what a run is writing only through the run's snapshot. While a run holds
    the warehouse (its run lock), the marts are half way between two nights and DuckDB may refuse the
    file anyway, so the report is rendered from ``<warehouse>.snapshot.duckdb`` (the last complete run)
    with a one-line note saying so; without a snapshot yet, a one-line "busy" error."""
    from gpusre.models.warehouse import connect
    from gpusre.models.warehouse_snapshot import snapshot_path
    from gpusre.pipelines.run_lock import WarehouseBusy, busy_holder

    warehouse = Path(path)
    if not warehouse.is_file():
        raise FileNotFoundError(f"{warehouse}: warehouse file does not exist")
    if report and (holder := busy_holder(warehouse)) is not None:
        snapshot = snapshot_path(warehouse)
        if not snapshot.is_file():
            raise WarehouseBusy(f"warehouse busy: {holder}, and no snapshot of a complete run to read yet "
                                f"({snapshot}); run the report again when the run ends")
        published = datetime.fromtimestamp(snapshot.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")
        if str(snapshot) not in _SNAPSHOT_NOTED:  # once per command (nightly --date opens twice)
            _SNAPSHOT_NOTED.add(str(snapshot))
            print(f"gpusre: note: the warehouse is busy ({holder}): rendered from the snapshot of the last complete "
                  f"run, published {published} ({snapshot}); the run in progress is not in it", file=sys.stderr)
        return snapshot, connect(snapshot, read_only=True)
    return warehouse, connect(warehouse, read_only=read_only)


def _render_report(warehouse_arg: str, render: Callable[[duckdb.DuckDBPyConnection, str], Any], *,
                   read_only: bool = True, usage_errors: tuple[type[Exception], ...] = ()) -> int:
    """Open the warehouse, ``render(con, warehouse_label)`` a report, print its HTML and Markdown
    paths; ``usage_errors`` raised by ``render`` are one-line user errors (exit code 2), days outside the
    data (:class:`~gpusre.reports.nightly.meta.OutsideDataError`) one-line errors with exit code 1."""
    from gpusre.reports.nightly.meta import OutsideDataError

    warehouse, con = _open_warehouse(warehouse_arg, read_only=read_only, report=True)
    try:
        paths = render(con, str(warehouse))
    except OutsideDataError as exc:
        print(f"gpusre: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except usage_errors as exc:
        print(f"gpusre: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        con.close()
    print(paths.html)
    print(paths.markdown)
    return 0


def _cmd_report_nightly(args: argparse.Namespace) -> int:
    from gpusre.reports.nightly import render_nightly_report
    from gpusre.reports.nightly.meta import OutsideDataError, check_inside_data

    if args.date is not None:
        # A day outside the data would render every count as a quiet night ("To do: nothing"): refused.
        _, con = _open_warehouse(args.warehouse, read_only=True, report=True)
        try:
            check_inside_data(con, args.date, args.date)
        except OutsideDataError as exc:
            print(f"gpusre: error: {exc}", file=sys.stderr)
            return EXIT_FAILED
        finally:
            con.close()
    return _render_report(args.warehouse, lambda con, label: render_nightly_report(
        con, Path(args.out), report_date=args.date, warehouse_label=label), read_only=False)


def _cmd_report_slo(args: argparse.Namespace) -> int:
    # Dates are parsed here, not by argparse, so a bad date is one line like every other user error.
    dates: dict[str, date | None] = {}
    for flag, text in (("--from", args.date_from), ("--to", args.date_to)):
        try:
            dates[flag] = date.fromisoformat(text) if text is not None else None
        except ValueError:
            print(f"gpusre: error: {flag}: not a date (YYYY-MM-DD): {text!r}", file=sys.stderr)
            return EXIT_USAGE
    if dates["--from"] and dates["--to"] and dates["--from"] > dates["--to"]:
        print(f"gpusre: error: --from {dates['--from']} is after --to {dates['--to']}", file=sys.stderr)
        return EXIT_USAGE

    from gpusre.reports.slo import render_slo_report

    # ValueError: a window that ends before it starts once the defaults are filled in.
    return _render_report(args.warehouse, lambda con, label: render_slo_report(
        con, Path(args.out), dates["--from"], dates["--to"], warehouse_label=label), usage_errors=(ValueError,))


def _cmd_report_incident(args: argparse.Namespace) -> int:
    from gpusre.reports.incident import UnknownIncidentError, render_incident_report

    # UnknownIncidentError names the most recent ids of each kind.
    return _render_report(args.warehouse, lambda con, label: render_incident_report(
        con, Path(args.out), args.incident_id, warehouse_label=label), usage_errors=(UnknownIncidentError,))


def _cmd_templates(args: argparse.Namespace) -> int:
    import polars as pl

    from gpusre.models.sources.syslog.parse import _decompress, parse_syslog_file
    from gpusre.models.logs.templates import mine_lines

    path = Path(args.file)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    if args.format in ("raw", "lines"):
        # Compressed rotations are read like plain files, as the syslog parser does.
        data = _decompress(path.read_bytes()).decode("utf-8", errors="replace")
        messages = pl.Series("message", data.splitlines(), dtype=pl.String)
        line_nos = pl.int_range(1, len(messages) + 1, dtype=pl.Int64, eager=True)
    else:
        parsed = parse_syslog_file(path, path.name)
        # A line the syslog parser rejects is still templated, from its raw text: every input
        # line gets exactly one row.
        both = pl.concat([
            parsed.lines.select("line_no", "message"),
            parsed.rejects.select("line_no", pl.col("raw").alias("message")),
        ]).sort("line_no")
        messages, line_nos = both["message"], both["line_no"]
    # raw: the header the file's lines share (timestamps, level, host, program[pid]:) is learned
    # from the file and set aside; lines: every whole line is the message.
    mined = mine_lines(messages, split_headers=args.format == "raw").with_columns(line_no=line_nos)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    mined.select("line_no", "template_id", "template").write_csv(out)
    n_templates = mined["template_id"].n_unique()
    print(f"{len(mined):,} lines -> {n_templates:,} templates -> {out}")
    return 0


def _cmd_docs(args: argparse.Namespace) -> int:
    from gpusre.pipelines.warehouse_docs import apply_comments, sync_readme, undocumented

    if args.check and not args.readme:  # --check checks the README only: alone it would check nothing
        print("gpusre: error: docs: --check needs --readme [PATH] (gpusre docs --readme --check)", file=sys.stderr)
        return EXIT_USAGE
    if not args.readme and not args.warehouse:
        print("gpusre: error: docs: give --readme [PATH] and/or --warehouse PATH", file=sys.stderr)
        return EXIT_USAGE
    status = 0
    if args.readme:
        readme = Path(args.readme)
        if not readme.is_file():
            raise FileNotFoundError(f"{readme}: no such file")
        try:
            current = sync_readme(readme, check=args.check)
        except ValueError as exc:
            print(f"gpusre: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if current:
            print(f"{readme}: table reference up to date")
        elif args.check:
            print(f"{readme}: table reference out of date; run: gpusre docs --readme {readme}", file=sys.stderr)
            status = EXIT_FAILED
        else:
            print(f"{readme}: table reference regenerated from sql/contract/*.yaml")
    if args.warehouse:
        _, con = _open_warehouse(args.warehouse, read_only=False)
        try:
            tables, columns = apply_comments(con)
            missing = undocumented(con)
        finally:
            con.close()
        print(f"{args.warehouse}: comments on {tables} tables and {columns} columns; "
              f"{len(missing)} without a contract entry{': ' + ', '.join(missing) if missing else ''}")
    return status


def _iso_date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from exc


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from exc


def _non_negative(text: str) -> int:
    value = _whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text}")
    return value


def _positive(text: str) -> int:
    value = _whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text}")
    return value


class _OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, as every other user error (module docstring):
    argparse's usage block before the error made a bad ``--date`` three lines. Subparsers inherit the
    class (``add_subparsers`` makes its parsers of the parent's type), so every subcommand is covered."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("gpusre").strip()
        where = f"{command}: " if command else ""
        self.exit(EXIT_USAGE, f"gpusre: error: {where}{message} (see: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and for documentation)."""
    parser = _OneLineErrorParser(prog="gpusre", description="Incident analytics for Slurm GPU clusters.")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="write a synthetic landing directory (sacct dumps, cluster.yaml, truth/)")
    sim.add_argument("--out", required=True, help="landing directory to write")
    sim.add_argument("--nodes", type=_positive, default=100)
    sim.add_argument("--gpus-per-node", type=_positive, default=8)
    sim.add_argument("--days", type=_positive, default=90)
    sim.add_argument("--start", type=_iso_date, default=date(2026, 8, 1), help="first day (YYYY-MM-DD)")
    sim.add_argument("--seed", type=int, default=7)
    sim.add_argument("--timezone", default="UTC", help="IANA time zone of the simulated Slurm timestamps")
    sim.add_argument("--syslog-layout", choices=("central", "per-node"), default="central",
                     help="node logs as one file per day (rsyslog central server) or one per node and day")
    sim.set_defaults(func=_cmd_simulate)

    run = sub.add_parser("run", help="materialize all assets over a landing directory (safe to rerun)")
    run.add_argument("--landing", required=True)
    run.add_argument("--warehouse", required=True, help="DuckDB file (created if missing)")
    run.add_argument("--reports", help="report directory (default: next to the warehouse)")
    run.add_argument("--workers", type=_positive, default=_default_workers(),
                     help="parse steps per source, run side by side on Dagster's multiprocess executor "
                          "(default: $GPUSRE_WORKERS, else the number of cores when >= 256 MB of sacct dumps "
                          "and node logs are new on >= 4 cores, else 1 = every step in this process)")
    run.set_defaults(func=_cmd_run)

    compact = sub.add_parser("compact", help="merge old days' small node-log lake files into one file per day "
                                             "(safe to rerun; the rows the views show do not change)")
    compact.add_argument("--warehouse", required=True, help="DuckDB file a gpusre run wrote")
    compact.add_argument("--keep-days", type=_non_negative, default=KEEP_DAYS,
                         help="days before the lake's newest day (or today) left as written, for late files "
                              f"(default {KEEP_DAYS})")
    compact.add_argument("--min-files", type=_positive, default=MIN_FILES,
                         help=f"merge a day once it holds this many files (default {MIN_FILES})")
    compact.set_defaults(func=_cmd_compact)

    demo = sub.add_parser("demo", help="simulate the built-in 100-node cluster, run, write the report")
    demo.add_argument("--out", default="demo", help="output directory (default: ./demo)")
    demo.set_defaults(func=_cmd_demo)

    templates = sub.add_parser("templates", help="mine Drain3 log templates: one CSV row per input line")
    templates.add_argument("file", help="log file (syslog formats, dmesg, journald JSON, any text log; .gz ok)")
    templates.add_argument("--format", choices=("syslog", "raw", "lines"), default="syslog",
                           help="syslog: parse timestamps/hosts and template the message; raw: any text log, "
                                "the header its lines share (timestamps, level, host, program[pid]:, "
                                "learned from the file) is set aside and the rest templated; "
                                "lines: each whole line is one message")
    templates.add_argument("--out", required=True, help="CSV to write: line_no,template_id,template")
    templates.set_defaults(func=_cmd_templates)

    report = sub.add_parser("report", help="render a report from the warehouse")
    report_sub = report.add_subparsers(dest="report_kind", required=True)
    nightly = report_sub.add_parser("nightly", help="nightly HTML + Markdown report")
    nightly.add_argument("--warehouse", required=True)
    nightly.add_argument("--out", required=True)
    nightly.add_argument("--date", type=_iso_date, help="report day (default: the last UTC day Slurm accounting covers completely; without "
                              "accounting, the last day every dense source covers completely)")
    nightly.set_defaults(func=_cmd_report_nightly)
    slo = report_sub.add_parser("slo", help="SLO review HTML + Markdown report for a window of days")
    slo.add_argument("--warehouse", required=True)
    slo.add_argument("--out", required=True)
    slo.add_argument("--from", dest="date_from", metavar="YYYY-MM-DD",
                     help="first UTC day of the window (default: 30 days before --to)")
    slo.add_argument("--to", dest="date_to", metavar="YYYY-MM-DD",
                     help="last UTC day of the window (default: latest complete day with SLO data)")
    slo.set_defaults(func=_cmd_report_slo)
    incident = report_sub.add_parser("incident", help="incident retrospective HTML + Markdown for one alert or "
                                                      "hardware incident")
    incident.add_argument("incident_id", metavar="ID",
                          help="alert incident (ainc-..., marts.alert_incidents) or hardware incident "
                               "(inc-..., marts.hw_incidents)")
    incident.add_argument("--warehouse", required=True)
    incident.add_argument("--out", required=True)
    incident.set_defaults(func=_cmd_report_incident)
    docs = sub.add_parser("docs", help="the table contract sql/contract/*.yaml: regenerate the README's table "
                                       "reference, or apply COMMENT ON to a warehouse")
    docs.add_argument("--readme", nargs="?", const="README.md", metavar="PATH",
                      help="rewrite the generated table reference of this README (default: ./README.md)")
    docs.add_argument("--check", action="store_true", help="with --readme: only check, exit 1 when out of date")
    docs.add_argument("--warehouse", metavar="PATH", help="apply the table and column comments to this warehouse "
                                                          "(every run does it at its end)")
    docs.set_defaults(func=_cmd_docs)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``gpusre`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    import duckdb

    from gpusre.pipelines.config import ClusterConfigError

    import logging

    try:
        from gpusre.pipelines.runner import PipelineError
        from gpusre.pipelines.run_lock import WarehouseBusy
    except ImportError:  # pragma: no cover - runner imports Dagster; keep errors readable anyway
        PipelineError = WarehouseBusy = RuntimeError  # type: ignore[misc,assignment]
    _RUN_LOG.clear()
    try:
        return int(args.func(args))
    except (ClusterConfigError, PipelineError, WarehouseBusy, FileNotFoundError, NotADirectoryError,
            PermissionError) as exc:
        print(f"gpusre: error: {exc}", file=sys.stderr)
    except duckdb.IOException as exc:
        first = str(exc).splitlines()[0]
        # Only a lock conflict is another process's doing; a file that is no DuckDB database is not.
        hint = (" (held open by another process? ad hoc readers should open the snapshot "
                "<warehouse>.snapshot.duckdb)" if "lock" in first.lower() else "")
        print(f"gpusre: error: cannot open the warehouse{hint}: {first}", file=sys.stderr)
    except KeyboardInterrupt:
        print("gpusre: interrupted; the warehouse keeps its last committed state", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - never a traceback on the terminal: it goes to the log
        if not _RUN_LOG:  # not a run: the traceback still goes to a file, never to the terminal
            import tempfile

            _start_run_log(Path(tempfile.gettempdir()) / "gpusre-logs")
        logging.getLogger("gpusre.cli").error("unexpected error", exc_info=exc)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"gpusre: error: {type(exc).__name__}: {first}", file=sys.stderr)
    _log_hint()
    return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
