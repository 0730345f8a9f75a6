"""Every raw and core row of a warehouse, for tests that compare two warehouses' contents."""

from __future__ import annotations

from pathlib import Path

from gpusre.models.warehouse import connect

#: Columns whose value is the time of ingestion (or of a compaction), not data.
WALL_CLOCK = frozenset({"ingested_at", "rejected_at", "updated_at", "first_ingested_at", "compacted_at"})


def warehouse_contents(warehouse: Path, *, skip_columns: frozenset[str] = WALL_CLOCK,
                       skip_tables: tuple[str, ...] = ()) -> dict[str, list[tuple]]:
    """Every raw view and table and every core table, rows sorted, ``skip_columns`` left out.
    ``raw.warehouse_schema`` (the DDL fingerprint, which names the warehouse's own lake path) and
    ``skip_tables`` (names without schema) are left out."""
    con = connect(warehouse, read_only=True)
    try:
        skip = ("warehouse_schema", *skip_tables)
        names = con.execute("SELECT table_schema || '.' || table_name FROM information_schema.tables "
                            "WHERE table_schema IN ('raw', 'core') AND table_name NOT IN (SELECT unnest(?)) "
                            "ORDER BY 1", [list(skip)]).fetchall()
        out: dict[str, list[tuple]] = {}
        for (name,) in names:
            schema, _, table = name.partition(".")
            cols = [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns WHERE "
                                              "table_schema = ? AND table_name = ? ORDER BY ordinal_position",
                                              [schema, table]).fetchall() if c not in skip_columns]
            select = ", ".join(f'"{c}"' for c in cols)
            out[name] = con.sql(f"SELECT {select} FROM {name} ORDER BY ALL").fetchall()
        return out
    finally:
        con.close()
