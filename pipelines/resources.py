"""Dagster resources: the warehouse file, the landing directory and the reports directory.

DuckDB allows one writing process per database file, so every asset opens the warehouse through
:class:`WarehouseResource`, which a run (or, with a multiprocess executor, a step process) opens once
and closes at its end; all warehouse-writing assets share the ``duckdb_warehouse`` pool (see
``definitions.py``) so at most one writes at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import dagster as dg
import duckdb
from pydantic import PrivateAttr

from gpusre.models.warehouse import connect
from gpusre.pipelines.config import ClusterConfig, load_cluster_config
from gpusre.pipelines.run_lock import warehouse_lock

__all__ = ["WarehouseResource", "LandingResource", "ParseResource", "ReportsResource", "default_resources",
           "landing_path", "warehouse_path"]

#: Where `dagster dev` looks when no environment variable says otherwise: the `gpusre demo` output.
DEFAULT_LANDING = "demo/landing"
DEFAULT_WAREHOUSE = "demo/warehouse.duckdb"
DEFAULT_REPORTS = "demo/reports"


#: How long a run Dagster launches (schedule, sensor, UI) waits for a busy warehouse: a nightly run
#: that meets a long `gpusre run` (or backfill) runs after it instead of failing.
LOCK_WAIT_SECONDS = 2 * 3600


class WarehouseResource(dg.ConfigurableResource):
    """The DuckDB warehouse file: one database per run (or step process), a cursor per use.

    While a run (or, with a multiprocess executor, a step) uses it, it holds the warehouse's run
    lock (:mod:`gpusre.pipelines.run_lock`), so runs the schedule or the sensor launch exclude
    ``gpusre run`` and each other as the CLI's runs do; inside ``gpusre run``, which took the lock
    already, this is a no-op. When another run holds it, a Dagster-launched run waits for it, trying
    every few seconds, up to ``lock_wait_seconds`` (2 h; 0 = fail at once), then fails the step with
    the one-line "warehouse busy" error. ``gpusre run`` itself never waits: it takes the lock before
    Dagster and refuses at once. Outside a run (a sensor or schedule evaluation) no lock is taken."""

    path: str
    lock_wait_seconds: float = LOCK_WAIT_SECONDS
    _lock: ExitStack | None = PrivateAttr(default=None)
    _shared: duckdb.DuckDBPyConnection | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        if context.run is None:  # evaluated for a sensor or a schedule: not a writer
            return
        log = context.log
        stack = ExitStack()
        stack.enter_context(warehouse_lock(Path(self.path), lambda msg: log.warning(msg) if log else None,
                                           wait_seconds=self.lock_wait_seconds))
        self._lock = stack

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._shared is not None:  # before the lock: the next run may open the file at once
            self._shared.close()
            self._shared = None
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    @contextmanager
    def connect(self, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one use. Inside a run (the run lock held: no other process may open the
        file anyway) every use is a cursor of one database the run opens once and closes at its end
        (each step process its own, with a multiprocess executor): some 40 steps a night each paid
        the file's open, schema check and closing checkpoint. A cursor has its own session — temporary
        tables, registered frames and the UTC zone stay with the step that made them — and sees what
        earlier steps committed. Outside a run, a connection of its own, opened and closed here."""
        if self._lock is None:
            con = connect(Path(self.path), read_only=read_only)
            try:
                yield con
            finally:
                con.close()
            return
        if self._shared is None:
            self._shared = connect(Path(self.path))
        con = self._shared.cursor()
        try:
            con.execute("SET TimeZone = 'UTC'")
            yield con
        finally:
            con.close()


class LandingResource(dg.ConfigurableResource):
    """The landing directory: sacct/, syslog/, alerts/, cluster.yaml."""

    path: str

    @property
    def root(self) -> Path:
        return Path(self.path)

    def cluster_config(self) -> ClusterConfig:
        return load_cluster_config(self.root)


class ParseResource(dg.ConfigurableResource):
    """How many parse steps (shards) each parallel-parsed source is split into: ``gpusre run
    --workers``; with Dagster's multiprocess executor they run side by side."""

    shards: int = 1


class ReportsResource(dg.ConfigurableResource):
    """Directory the HTML and Markdown reports are written to."""

    path: str

    @property
    def root(self) -> Path:
        return Path(self.path)


def warehouse_path(warehouse: str | None = None) -> str:
    """The warehouse file: the argument, else GPUSRE_WAREHOUSE, else the demo's."""
    return warehouse or os.environ.get("GPUSRE_WAREHOUSE", DEFAULT_WAREHOUSE)


def landing_path(landing: str | None = None) -> str:
    """The landing directory: the argument, else GPUSRE_LANDING, else the demo's."""
    return landing or os.environ.get("GPUSRE_LANDING", DEFAULT_LANDING)


def default_resources(
    warehouse: str | None = None, landing: str | None = None, reports: str | None = None, workers: int | None = None
) -> dict[str, dg.ConfigurableResource]:
    """Resources from arguments, else GPUSRE_WAREHOUSE / GPUSRE_LANDING / GPUSRE_REPORTS /
    GPUSRE_WORKERS, else demo/ and one parse shard."""
    return {
        "parse_settings": ParseResource(shards=max(1, workers or int(os.environ.get("GPUSRE_WORKERS", "1")))),
        "warehouse": WarehouseResource(path=warehouse_path(warehouse)),
        "landing": LandingResource(path=landing_path(landing)),
        "reports": ReportsResource(path=reports or os.environ.get("GPUSRE_REPORTS", DEFAULT_REPORTS)),
    }
