"""Dagster resources: the warehouse file, the landing directory and the reports directory.

DuckDB allows one writing process per database file, so every asset opens the warehouse through
:class:`WarehouseResource`, uses it, and closes it before the step ends; all warehouse-writing
assets share the ``duckdb_warehouse`` pool (see ``definitions.py``) so at most one writes at a time.
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

__all__ = ["WarehouseResource", "LandingResource", "ParseResource", "ReportsResource", "default_resources"]

#: Where `dagster dev` looks when no environment variable says otherwise: the `gpusre demo` output.
DEFAULT_LANDING = "demo/landing"
DEFAULT_WAREHOUSE = "demo/warehouse.duckdb"
DEFAULT_REPORTS = "demo/reports"


class WarehouseResource(dg.ConfigurableResource):
    """The DuckDB warehouse file. Open per use; never hold a connection across steps.

    While a run (or, with a multiprocess executor, a step) uses it, it holds the warehouse's run
    lock (:mod:`gpusre.pipelines.run_lock`), so runs the schedule or the sensor launch exclude
    ``gpusre run`` and each other as the CLI's runs do; inside ``gpusre run``, which took the lock
    already, this is a no-op. Another run holding it fails the step at once with "warehouse busy"."""

    path: str
    _lock: ExitStack | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        stack = ExitStack()
        stack.enter_context(warehouse_lock(Path(self.path)))
        self._lock = stack

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    @contextmanager
    def connect(self, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        con = connect(Path(self.path), read_only=read_only)
        try:
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


def default_resources(
    warehouse: str | None = None, landing: str | None = None, reports: str | None = None, workers: int | None = None
) -> dict[str, dg.ConfigurableResource]:
    """Resources from arguments, else GPUSRE_WAREHOUSE / GPUSRE_LANDING / GPUSRE_REPORTS /
    GPUSRE_WORKERS, else demo/ and one parse shard."""
    return {
        "parse_settings": ParseResource(shards=max(1, workers or int(os.environ.get("GPUSRE_WORKERS", "1")))),
        "warehouse": WarehouseResource(path=warehouse or os.environ.get("GPUSRE_WAREHOUSE", DEFAULT_WAREHOUSE)),
        "landing": LandingResource(path=landing or os.environ.get("GPUSRE_LANDING", DEFAULT_LANDING)),
        "reports": ReportsResource(path=reports or os.environ.get("GPUSRE_REPORTS", DEFAULT_REPORTS)),
    }
