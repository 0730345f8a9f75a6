"""Reading warehouse rows for the reports: one helper shared by the report modules."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import duckdb

from gpusre.models.ingest.lake import reads_lake
from gpusre.models.sources.registry import record_sources
from gpusre.reports.kit.section import NO_DATA

__all__ = ["query_rows"]


def query_rows(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """The result rows of ``sql`` as dicts by column name."""
    cur = con.execute(sql, list(params) if params else [])
    names = [d[0] for d in cur.description]
    # DECIMAL columns (e.g. from literal-built marts) would not mix with float arithmetic.
    return [{n: float(v) if isinstance(v, Decimal) else v for n, v in zip(names, r)} for r in cur.fetchall()]


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> Any:
    rows = con.execute(sql, list(params) if params else []).fetchall()
    return rows[0][0] if rows else None


def table_status(con: duckdb.DuckDBPyConnection, qualified: str) -> str | None:
    """None when the table exists and has rows, otherwise the 'No data yet' reason."""
    schema, name = qualified.split(".")
    exists = scalar(
        con,
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
        [schema, name],
    )
    if not exists:
        return f"{NO_DATA}: {qualified} has not been built."
    source = _LAKE_SOURCES.get(qualified)
    if source is not None and reads_lake(con, name):
        # A raw view over the lake: any row means a scan of a year of Parquet files (~1 s); the
        # ledger says the same (the rows-reconcile checks hold it to the lake).
        has_rows = scalar(con, "SELECT count(*) > 0 FROM raw.ingested_files WHERE source_kind = ? AND rows_loaded > 0",
                          [source])
    else:
        has_rows = scalar(con, f"SELECT count(*) > 0 FROM {schema}.{name}")  # name comes from our own list
    if not has_rows:
        return f"{NO_DATA}: {qualified} is empty."
    return None


#: ``raw.<lake table>`` -> its source, for :func:`table_status`.
_LAKE_SOURCES = {f"raw.{s.lake.name}": s.name for s in record_sources() if s.lake is not None}


def utc_day_sql(col: str) -> str:
    """SQL for the UTC calendar day of a TIMESTAMPTZ column (report days are UTC days)."""
    return f"CAST(timezone('UTC', {col}) AS DATE)"


def macro_status(con: duckdb.DuckDBPyConnection, qualified: str) -> str | None:
    """None when the table macro ``schema.name`` exists, otherwise the 'No data yet' reason."""
    schema, name = qualified.split(".")
    exists = scalar(con, "SELECT count(*) FROM duckdb_functions() WHERE schema_name = ? AND function_name = ?",
                    [schema, name])
    return None if exists else f"{NO_DATA}: {qualified} has not been built."
