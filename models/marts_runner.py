"""Run the SQL marts shipped as package data in ``gpusre.sql`` (``marts/<name>.sql``).

Each file may hold several statements; DuckDB only binds prepared parameters on a single
statement, so the file is split with DuckDB's own parser and each statement gets just the
parameters it names. Parameters the caller passes but a statement does not use are ignored;
a parameter a statement needs but the caller did not pass raises a DuckDB error.

Transactions are the caller's job: nothing here issues BEGIN/COMMIT, so a Dagster asset can
wrap a whole partition (DELETE + INSERT) in one transaction.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from importlib.resources import files
from collections.abc import Mapping
from typing import Any

import duckdb

from gpusre.models.accounting_span import MAX_GAP_MINUTES

__all__ = [
    "DAILY_MARTS",
    "POOL_ALL",
    "POOL_OTHER",
    "ROLLUP_MARTS",
    "create_daily_mart_tables",
    "queue_missing_days",
    "mart_sql",
    "pool_params",
    "run_mart_sql",
    "run_daily_marts",
    "run_rollup_marts",
]

#: Day-partitioned marts (parameter ``day``), in dependency order.
DAILY_MARTS: tuple[str, ...] = ("job_usage_daily", "utilization_daily", "utilization_by_pool_daily")
#: The one pool of a fleet without cluster.yaml ``pools``, and the pool of the nodes in none of them
#: (marts.utilization_by_pool_daily; cluster.yaml reserves both names).
POOL_ALL, POOL_OTHER = "all", "other"
#: Whole-table marts rebuilt from core.jobs / the daily marts, in dependency order.
ROLLUP_MARTS: tuple[str, ...] = (
    "gpu_time_by_state",
    "size_buckets",
    "runtime_quantiles",
    "queue_wait_quantiles",
    "top_consumers",
)

_NAME = re.compile(r"^[a-z0-9_]+$")


def mart_sql(name: str) -> str:
    """Return the text of ``gpusre.sql`` package file ``marts/<name>.sql``.

    Raises ValueError for a name that is not a plain identifier (no paths), FileNotFoundError
    when no such mart exists.
    """
    if not _NAME.match(name):
        raise ValueError(f"invalid mart name {name!r}")
    return files("gpusre.sql").joinpath("marts", f"{name}.sql").read_text(encoding="utf-8")


def run_mart_sql(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None
) -> None:
    """Execute every statement of mart ``name`` on ``con`` with DuckDB prepared ``params``.

    ``params`` maps parameter names without ``$`` (``{"day": date(2026, 9, 1)}``) to values.
    """
    params = params or {}
    for stmt in con.extract_statements(mart_sql(name)):
        used = {k: params[k] for k in stmt.named_parameters if k in params}
        if stmt.named_parameters:
            con.execute(stmt.query, used)
        else:
            con.execute(stmt.query)


def run_daily_marts(
    con: duckdb.DuckDBPyConnection,
    day: date,
    capacity_gpus: int,
    as_of: datetime | None,
    pool_gpus: Mapping[str, int] | None = None,
    pool_by_node: Mapping[str, str] | None = None,
    acct_from: datetime | None = None,
) -> None:
    """(Re)build the ``day`` partition of every daily mart (:data:`DAILY_MARTS`).

    ``capacity_gpus`` is the number of GPUs in the cluster; ``as_of`` is the end assumed for
    jobs still running (a naive datetime is taken as UTC; None leaves running jobs out).
    ``pool_gpus`` / ``pool_by_node`` are cluster.yaml's pools (``ClusterConfig.pool_gpus`` /
    ``pool_by_node``); None: one pool :data:`POOL_ALL` of ``capacity_gpus`` GPUs.
    ``acct_from`` is the accounting's first moment (:func:`~gpusre.models.accounting_span.accounting_span`):
    ``marts.utilization_daily`` has no row before its UTC day, as the other daily marts of the span;
    None: no first day.
    """
    if as_of is not None and as_of.tzinfo is None:
        # a naive value would otherwise be read in the session TimeZone
        as_of = as_of.replace(tzinfo=timezone.utc)
    if acct_from is not None and acct_from.tzinfo is None:
        acct_from = acct_from.replace(tzinfo=timezone.utc)
    # the one capacity-hours rule of models/accounting_span.py: its threshold, not a copy of it in each SQL file
    params: dict[str, Any] = {"day": day, "capacity_gpus": int(capacity_gpus), "as_of": as_of,
                              "max_gap_minutes": MAX_GAP_MINUTES, "acct_from": acct_from}
    params.update(pool_params(capacity_gpus, pool_gpus, pool_by_node))
    for name in DAILY_MARTS:
        run_mart_sql(con, name, params)


def pool_params(capacity_gpus: int, pool_gpus: Mapping[str, int] | None,
                pool_by_node: Mapping[str, str] | None) -> dict[str, Any]:
    """The parameters of ``sql/marts/utilization_by_pool_daily.sql``: every pool and its GPUs, every listed
    node's pool, and the pool of nodes no pool names (:data:`POOL_ALL` without pools, else :data:`POOL_OTHER`)."""
    pools = dict(pool_gpus) if pool_gpus else {POOL_ALL: int(capacity_gpus)}
    by_node = dict(pool_by_node or {})
    return {"pool_names": list(pools), "pool_gpus": [int(g) for g in pools.values()],
            "pool_nodes": list(by_node), "node_pools": list(by_node.values()),
            "default_pool": POOL_ALL if list(pools) == [POOL_ALL] else POOL_OTHER}


def create_daily_mart_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the daily marts' tables, empty, when no day was ever built (a landing without
    accounting): the roll-ups read them. Runs only each mart's ``CREATE TABLE IF NOT EXISTS`` statement."""
    for name in DAILY_MARTS:
        for stmt in con.extract_statements(mart_sql(name)):
            if stmt.type == duckdb.StatementType.CREATE:
                con.execute(stmt.query)


def run_rollup_marts(con: duckdb.DuckDBPyConnection) -> None:
    """Rebuild every whole-table mart (:data:`ROLLUP_MARTS`); daily marts must exist first."""
    for name in ROLLUP_MARTS:
        run_mart_sql(con, name)


def queue_missing_days(con: duckdb.DuckDBPyConnection) -> int:
    """Add to ``core.dirty_days`` every day between the first day of ``marts.utilization_daily`` and the
    last day it or the queue holds that has no row yet; return how many.

    Each run recomputes the days its changed records touch. A day no record touches (no GPU job ran,
    started or ended: a full outage, a quiet holiday) between two runs' ranges was never computed and
    vanished from the daily marts instead of reading 0 % utilization — the very day an SRE looks for.
    """
    exists = con.sql("""SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'marts'
                        AND table_name = 'utilization_daily' AND database_name = current_database()""").fetchall()[0][0]
    if not exists:
        return 0
    before = con.sql("SELECT count(*) FROM core.dirty_days").fetchall()[0][0]
    con.execute("""
        INSERT OR IGNORE INTO core.dirty_days
        SELECT CAST(d AS DATE) FROM (
            SELECT unnest(generate_series(lo, hi, INTERVAL 1 DAY)) AS d
            FROM (SELECT min(day) AS lo,
                         greatest(max(day), (SELECT max(day) FROM core.dirty_days)) AS hi
                  FROM marts.utilization_daily)
            WHERE lo IS NOT NULL)
        WHERE CAST(d AS DATE) NOT IN (SELECT day FROM marts.utilization_daily)""")
    return int(con.sql("SELECT count(*) FROM core.dirty_days").fetchall()[0][0] - before)

