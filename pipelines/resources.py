"""Dagster resources: the warehouse file, the landing directory and the reports directory.

DuckDB allows one writing process per database file, so every asset opens the warehouse through
:class:`WarehouseResource`, uses it, and closes it before the step ends; all warehouse-writing
assets share the ``duckdb_warehouse`` pool (see ``definitions.py``) so at most one writes at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import duckdb

from gpusre.models.warehouse import connect
from gpusre.pipelines.config import ClusterConfig, load_cluster_config

__all__ = ["WarehouseResource", "LandingResource", "ReportsResource", "default_resources"]

#: Where `dagster dev` looks when no environment variable says otherwise: the `gpusre demo` output.
DEFAULT_LANDING = "demo/landing"
DEFAULT_WAREHOUSE = "demo/warehouse.duckdb"
DEFAULT_REPORTS = "demo/reports"


class WarehouseResource(dg.ConfigurableResource):
    """The DuckDB warehouse file. Open per use; never hold a connection across steps."""

    path: str

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


class ReportsResource(dg.ConfigurableResource):
    """Directory the HTML and Markdown reports are written to."""

    path: str

    @property
    def root(self) -> Path:
        return Path(self.path)


def default_resources(
    warehouse: str | None = None, landing: str | None = None, reports: str | None = None
) -> dict[str, dg.ConfigurableResource]:
    """Resources from arguments, else GPUSRE_WAREHOUSE / GPUSRE_LANDING / GPUSRE_REPORTS, else demo/."""
    return {
        "warehouse": WarehouseResource(path=warehouse or os.environ.get("GPUSRE_WAREHOUSE", DEFAULT_WAREHOUSE)),
        "landing": LandingResource(path=landing or os.environ.get("GPUSRE_LANDING", DEFAULT_LANDING)),
        "reports": ReportsResource(path=reports or os.environ.get("GPUSRE_REPORTS", DEFAULT_REPORTS)),
    }
