"""The DuckDB warehouse file: open it, apply the DDL, run work in one transaction.

All writes go through :func:`transaction` so a crash (or an exception) mid-write leaves the
warehouse exactly as it was: DuckDB rolls back the open transaction when the process dies.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from importlib import resources
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

from gpusre.models.vocabulary import sql_macros

__all__ = ["append_arrow", "connect", "apply_ddl", "catalog_clash", "catalog_clash_error", "transaction", "read_sql",
           "query_frames", "select_columns", "table_columns", "table_exists", "replace_table"]


def read_sql(relative: str) -> str:
    """Text of a SQL file shipped in the ``gpusre.sql`` package, e.g. ``'core/jobs_upsert.sql'``."""
    return resources.files("gpusre.sql").joinpath(relative).read_text(encoding="utf-8")


def query_frames(sql: str, frames: dict[str, pl.DataFrame], params: dict[str, object] | None = None) -> pl.DataFrame:
    """Run ``sql`` on an in-memory DuckDB (UTC session time zone, like :func:`connect`) over Polars ``frames``
    registered under their names: for the set-based steps DuckDB does faster than Polars (range joins, one
    JSON parse for many paths), with no warehouse open."""
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        for name, frame in frames.items():
            con.register(name, frame)
        return con.sql(sql, params=params).pl()
    finally:
        con.close()


def apply_ddl(con: duckdb.DuckDBPyConnection, *, registry_views: bool = True) -> None:
    """Create schemas, tables and macros (idempotent): the vocabulary macros
    (:func:`gpusre.models.vocabulary.sql_macros`) first, then ``sql/ddl/*.sql`` in name order, then the
    source registry's views. Imported here: the registry names the sources' parsers, which use this module."""
    con.execute(sql_macros())
    ddl_dir = resources.files("gpusre.sql").joinpath("ddl")
    for entry in sorted(ddl_dir.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".sql"):
            con.execute(entry.read_text(encoding="utf-8"))
    # The source registry's views (raw.sources, raw.record_times) over the raw views the DDL just made:
    # marts read them whether the raw views point at the lake (connect) or at the bare lake.* tables.
    # connect() makes them itself, after the lake views (a view over a lake folder that is gone fails).
    if registry_views:
        from gpusre.models.sources.registry import create_registry_views

        create_registry_views(con)


#: DuckDB's buffer pool defaults to 80 % of RAM; a nightly batch job shares the host, so cap it
#: (DuckDB spills to disk beyond it). Override with GPUSRE_DUCKDB_MEMORY_LIMIT, e.g. '8GB'.
DEFAULT_MEMORY_LIMIT = "1GB"


@cache
def warehouse_schemas() -> frozenset[str]:
    """The schemas the DDL creates (``sql/ddl/001_schemas.sql``), lower case."""
    text = resources.files("gpusre.sql").joinpath("ddl/001_schemas.sql").read_text(encoding="utf-8")
    return frozenset(m.lower() for m in re.findall(r"CREATE SCHEMA IF NOT EXISTS (\w+)", text, flags=re.IGNORECASE))


def catalog_clash(path: Path | str) -> str | None:
    """The schema that a warehouse file at ``path`` cannot hold, or None.

    Why: DuckDB names the database after the file name up to its first dot (``raw.duckdb`` and
    ``raw.snapshot.duckdb`` are the catalog ``raw``), and a catalog named like one of its schemas
    makes every ``raw.table`` ambiguous — the DDL fails, and so would an analyst's query in the DuckDB
    shell. Identifiers are case-insensitive."""
    if str(path) == ":memory:":
        return None
    catalog = Path(path).name.split(".")[0].lower()
    return catalog if catalog in warehouse_schemas() | {"information_schema"} else None


def catalog_clash_error(path: Path | str) -> str | None:
    """One line saying why a warehouse file at ``path`` is refused (:func:`catalog_clash`), or None.
    The CLI prints it and :func:`connect` raises it, so the refusal reads the same everywhere."""
    clash = catalog_clash(path)
    if clash is None:
        return None
    return (f"warehouse file {Path(path).name!r}: DuckDB names the database after the file, and {clash!r} is "
            f"also one of its schemas ({clash}.*), so every query on it would be ambiguous; "
            f"choose another name, e.g. gpusre.duckdb")


def connect(path: Path | str, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open the warehouse with UTC session time zone; a writable open also applies the DDL.

    Raises:
        ValueError: the file's name would make its DuckDB catalog clash with a schema
            (:func:`catalog_clash`), e.g. ``raw.duckdb``.
    """
    path = Path(path)
    if (refusal := catalog_clash_error(path)) is not None:
        raise ValueError(refusal)
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    config = {"memory_limit": os.environ.get("GPUSRE_DUCKDB_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT)}
    con = duckdb.connect(str(path), read_only=read_only, config=config)
    # TIMESTAMPTZ values print and truncate to days in UTC, whatever the machine's zone is.
    con.execute("SET TimeZone = 'UTC'")
    if not read_only:
        fingerprint = _schema_fingerprint(path)
        if fingerprint is None or _applied_fingerprint(con) != fingerprint or not _declared_objects_exist(con):
            apply_ddl(con, registry_views=False)
            _create_views(con, path)
            fingerprint = fingerprint or _schema_fingerprint(path)  # the lake's schema files exist now
            if fingerprint is not None:
                con.execute("CREATE OR REPLACE TABLE raw.warehouse_schema AS SELECT ? AS fingerprint, now() AS applied_at",
                            [fingerprint])
    return con


def _schema_fingerprint(path: Path) -> str | None:
    """A hash of everything a writable open creates: the macros, the DDL files, the code that makes
    the lake and registry views, and the lake's path; None when a lake table's schema file is missing
    (the views must be made). Equal to the warehouse's ``raw.warehouse_schema``: the open skips the
    DDL (some 40 steps open the warehouse each night, each paying it otherwise)."""
    from gpusre.models.ingest import lake
    from gpusre.models.sources import registry

    root = lake.lake_root(path)
    if not all((root / t.name / lake.SCHEMA_FILE).is_file() for t in registry.lake_tables()):
        return None
    digest = hashlib.sha256(sql_macros().encode())
    ddl_dir = resources.files("gpusre.sql").joinpath("ddl")
    for entry in sorted(ddl_dir.iterdir(), key=lambda p: p.name):
        digest.update(entry.name.encode() + entry.read_bytes())
    for module in (lake, registry, sys.modules[__name__]):
        digest.update(Path(str(module.__file__)).read_bytes())
    digest.update(str(root).encode())
    return digest.hexdigest()


@cache
def _declared_objects() -> tuple[str, ...]:
    """``schema.name`` of every table and view the DDL files and the registry create."""
    names = {f"{m[0]}.{m[1]}" for entry in resources.files("gpusre.sql").joinpath("ddl").iterdir()
             if entry.name.endswith(".sql")
             for m in re.findall(r"CREATE\s+(?:TABLE|VIEW)\s+IF\s+NOT\s+EXISTS\s+(\w+)\.(\w+)",
                                 entry.read_text(encoding="utf-8"), flags=re.IGNORECASE)}
    return tuple(sorted(names | {"raw.sources", "raw.record_times"}))


def _declared_objects_exist(con: duckdb.DuckDBPyConnection) -> bool:
    """True when no table or view the DDL declares is missing (one dropped by hand is made again)."""
    names = list(_declared_objects())
    found = con.execute("""SELECT count(*) FROM (SELECT schema_name || '.' || table_name AS n FROM duckdb_tables()
                           UNION ALL SELECT schema_name || '.' || view_name FROM duckdb_views() WHERE NOT temporary)
                           WHERE n IN (SELECT unnest(?))""", [names]).fetchall()[0][0]
    return found == len(names)


def _applied_fingerprint(con: duckdb.DuckDBPyConnection) -> str | None:
    if not con.execute("SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'raw' "
                       "AND table_name = 'warehouse_schema'").fetchall()[0][0]:
        return None
    rows = con.execute("SELECT fingerprint FROM raw.warehouse_schema").fetchall()
    return rows[0][0] if rows else None


def _create_views(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """The raw views over the Parquet lake next to ``path`` and the source registry's views.

    Imported here, not at the top: the registry names the sources' parsers, which use this module."""
    from gpusre.models.ingest.lake import create_lake_views, lake_root
    from gpusre.models.sources.registry import create_registry_views, lake_tables

    create_lake_views(con, lake_root(path), lake_tables())
    create_registry_views(con)


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """``BEGIN`` … ``COMMIT``; ``ROLLBACK`` and re-raise on any exception."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def table_exists(con: duckdb.DuckDBPyConnection, qualified: str) -> bool:
    """True when ``schema.table`` exists."""
    schema, _, name = qualified.partition(".")
    rows = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
        [schema, name],
    ).fetchall()
    return bool(rows[0][0])


def table_columns(con: duckdb.DuckDBPyConnection, qualified: str) -> set[str]:
    """Column names of ``schema.table`` (empty when it does not exist)."""
    schema, _, name = qualified.partition(".")
    return {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_schema = ? AND table_name = ?", [schema, name]).fetchall()}


def select_columns(con: duckdb.DuckDBPyConnection, qualified: str, wanted: Sequence[str]) -> str:
    """A select list of ``wanted`` columns, ``NULL`` for those the table lacks (a warehouse written
    by an older version, read by a newer report)."""
    have = table_columns(con, qualified)
    return ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in wanted)


def replace_table(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    """``CREATE OR REPLACE TABLE table`` with the rows and columns of ``frame`` (a mart rebuilt in full)."""
    con.register("_mart_frame", frame.to_arrow())
    try:
        con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM _mart_frame")
    finally:
        con.unregister("_mart_frame")


def append_arrow(con: duckdb.DuckDBPyConnection, table: str, batch: pa.Table, select: str = "*") -> None:
    """``INSERT INTO table BY NAME SELECT {select} FROM batch``, the Arrow batch bound as a relation.

    Not ``con.register``: inside a transaction a registered view keeps its Arrow table alive until
    COMMIT even after ``unregister`` (measured: +310 MB RSS per million syslog lines); a relation's
    scan is released when the statement ends, so a long ingest transaction stays bounded in memory.
    """
    con.from_arrow(batch).query("batch", f"INSERT INTO {table} BY NAME SELECT {select} FROM batch")
