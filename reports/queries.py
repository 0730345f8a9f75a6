"""Reading warehouse rows for the reports: one helper shared by the report modules."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import duckdb

__all__ = ["query_rows"]


def query_rows(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """The result rows of ``sql`` as dicts by column name."""
    cur = con.execute(sql, list(params) if params else [])
    names = [d[0] for d in cur.description]
    # DECIMAL columns (e.g. from literal-built marts) would not mix with float arithmetic.
    return [{n: float(v) if isinstance(v, Decimal) else v for n, v in zip(names, r)} for r in cur.fetchall()]
