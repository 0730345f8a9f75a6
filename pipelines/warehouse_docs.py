"""The warehouse documents itself: one contract, ``sql/contract/<schema>.yaml``, says what every raw,
core and marts table and column means; from it come the ``COMMENT ON`` of the tables and columns in the
DuckDB file (applied at the end of every run, so ``duckdb_tables()`` / ``duckdb_columns()`` and any SQL
client show them) and the README's table reference (``gpusre docs --readme`` rewrites the section
between the markers; a test fails when it is out of date).

Contract format, one file per schema::

    marts.hw_incidents:
      description: One row is a hardware incident: one fault, with all its evidence
      columns:
        incident_id: hardware incident id `inc-...`: stable hash of component, first time, first node
        lost_gpu_hours: GPU-hours lost by the jobs it killed (lost work + restart overhead)

Columns are listed in the table's column order. A table or column the contract names but the
warehouse lacks is skipped when comments are applied (a warehouse without alerts has no alert marts)
and reported by :func:`unknown_entries`; a warehouse column the contract lacks stays without comment and
is reported by :func:`undocumented`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import duckdb

from gpusre.models.warehouse import transaction
from gpusre.pipelines.config import load_yaml

__all__ = ["README_BEGIN", "README_END", "SCHEMAS", "TableDoc", "apply_comments", "load_contract",
           "readme_section", "sync_readme", "undocumented", "unknown_entries"]

#: Schemas the contract covers, in README order.
SCHEMAS = ("raw", "core", "marts")
README_BEGIN = "<!-- BEGIN table reference: generated from sql/contract/*.yaml by `gpusre docs --readme`; edit the contract, not this -->"
README_END = "<!-- END table reference -->"
_SCHEMA_TITLES = {
    "raw": "raw — as ingested, lossless, with file and line",
    "core": "core — clean entities",
    "marts": "marts — analyses the reports and SREs read",
}


@dataclass(frozen=True)
class TableDoc:
    """One contract entry: ``schema.table``, what one row is, and each column's meaning in column order."""

    name: str
    description: str
    columns: dict[str, str]

    @property
    def schema(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def table(self) -> str:
        return self.name.split(".", 1)[1]


def load_contract(folder: Path | None = None) -> list[TableDoc]:
    """Every table of ``folder`` (default: the packaged ``sql/contract``), schema by schema, sorted by name.

    Raises ValueError naming the file and table for a malformed entry (missing description, a column
    without meaning, a table filed under another schema's file)."""
    root = Path(folder) if folder else Path(str(resources.files("gpusre.sql").joinpath("contract")))
    docs: list[TableDoc] = []
    for schema in SCHEMAS:
        path = root / f"{schema}.yaml"
        if not path.is_file():
            continue
        # libyaml's loader when built in: the pure-Python one took 0.4 s of every run for the contract.
        for name, entry in (load_yaml(path.read_text(encoding="utf-8")) or {}).items():  # type: ignore[union-attr]
            columns = (entry or {}).get("columns") or {}
            description = str((entry or {}).get("description") or "").strip()
            if not name.startswith(f"{schema}.") or not description or not columns:
                raise ValueError(f"{path}: {name}: needs the schema prefix {schema}., a description and columns")
            empty = [c for c, text in columns.items() if not str(text or "").strip()]
            if empty:
                raise ValueError(f"{path}: {name}: columns without meaning: {', '.join(empty)}")
            docs.append(TableDoc(name, description, {str(c): str(t).strip() for c, t in columns.items()}))
    return sorted(docs, key=lambda d: (SCHEMAS.index(d.schema), d.name))


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _warehouse_columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """``schema.table`` → its columns in order, for the base tables and views of the contract's schemas."""
    rows = con.sql(
        f"""SELECT schema_name || '.' || table_name, column_name FROM duckdb_columns()
            WHERE database_name = current_database() AND schema_name IN ({", ".join(map(_literal, SCHEMAS))})
            ORDER BY schema_name, table_name, column_index""").fetchall()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return out


def _kinds(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """``schema.table`` → ``TABLE`` or ``VIEW`` (COMMENT ON needs to know which)."""
    rows = con.sql(
        "SELECT schema_name || '.' || table_name, 'TABLE' FROM duckdb_tables() WHERE database_name = current_database() "
        "UNION ALL SELECT schema_name || '.' || view_name, 'VIEW' FROM duckdb_views() "
        "WHERE database_name = current_database() AND NOT internal").fetchall()
    return dict(rows)


def _comments(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str | None], str | None]:
    """The comments in place: ``(schema.table, None)`` for a table or view, ``(schema.table, column)`` for a
    column, of the contract's schemas."""
    in_schemas = ", ".join(map(_literal, SCHEMAS))
    rows = con.sql(
        f"""SELECT schema_name || '.' || table_name, NULL, comment FROM duckdb_tables()
            WHERE database_name = current_database() AND schema_name IN ({in_schemas})
            UNION ALL
            SELECT schema_name || '.' || view_name, NULL, comment FROM duckdb_views()
            WHERE database_name = current_database() AND schema_name IN ({in_schemas}) AND NOT internal
            UNION ALL
            SELECT schema_name || '.' || table_name, column_name, comment FROM duckdb_columns()
            WHERE database_name = current_database() AND schema_name IN ({in_schemas})""").fetchall()
    return {(table, column): comment for table, column, comment in rows}


def apply_comments(con: duckdb.DuckDBPyConnection, contract: list[TableDoc] | None = None) -> tuple[int, int]:
    """``COMMENT ON`` every contract table and column present in the warehouse, in one transaction.

    Tables that ``CREATE OR REPLACE`` drops lose their comments, so this runs at the end of every run; a
    comment already in place is not written again (a night replaces a few dozen marts: ~0.3 s of
    ~1,100 statements saved). Returns (tables, columns) that carry the contract's comment."""
    contract = load_contract() if contract is None else contract
    present = _warehouse_columns(con)
    kinds = _kinds(con)
    in_place = _comments(con)
    statements: list[str] = []
    n_tables = n_columns = 0
    for doc in contract:
        if doc.name not in present:
            continue
        target = f"{_quote(doc.schema)}.{_quote(doc.table)}"
        n_tables += 1
        if in_place.get((doc.name, None)) != doc.description:
            statements.append(f"COMMENT ON {kinds.get(doc.name, 'TABLE')} {target} IS {_literal(doc.description)}")
        for column in present[doc.name]:
            if column in doc.columns:
                n_columns += 1
                if in_place.get((doc.name, column)) != doc.columns[column]:
                    statements.append(f"COMMENT ON COLUMN {target}.{_quote(column)} IS {_literal(doc.columns[column])}")
    if statements:
        with transaction(con):
            for statement in statements:
                con.execute(statement)
    return n_tables, n_columns


def undocumented(con: duckdb.DuckDBPyConnection, schemas: tuple[str, ...] = SCHEMAS) -> list[str]:
    """``schema.table`` (tables and views) and ``schema.table.column`` of ``schemas`` whose comment is
    missing or empty: exactly the entries to add to the contract."""
    in_schemas = ", ".join(map(_literal, schemas))
    tables = con.sql(
        f"""SELECT schema_name || '.' || table_name AS name FROM duckdb_tables()
            WHERE database_name = current_database() AND schema_name IN ({in_schemas})
              AND coalesce(trim(comment), '') = ''
            UNION ALL
            SELECT schema_name || '.' || view_name FROM duckdb_views()
            WHERE database_name = current_database() AND schema_name IN ({in_schemas}) AND NOT internal
              AND coalesce(trim(comment), '') = ''
            ORDER BY name""").fetchall()
    columns = con.sql(
        f"""SELECT schema_name || '.' || table_name || '.' || column_name FROM duckdb_columns()
            WHERE database_name = current_database() AND schema_name IN ({in_schemas})
              AND coalesce(trim(comment), '') = '' ORDER BY schema_name, table_name, column_index""").fetchall()
    return [r[0] for r in tables + columns]


def unknown_entries(con: duckdb.DuckDBPyConnection, contract: list[TableDoc] | None = None) -> list[str]:
    """Contract tables (``schema.table``) and columns (``schema.table.column``) the warehouse does not have."""
    contract = load_contract() if contract is None else contract
    present = _warehouse_columns(con)
    out: list[str] = []
    for doc in contract:
        if doc.name not in present:
            out.append(doc.name)
            continue
        out += [f"{doc.name}.{c}" for c in doc.columns if c not in present[doc.name]]
    return out


def _cell(text: str) -> str:
    """Markdown table cell: pipes escaped, one line."""
    return re.sub(r"\s+", " ", text).replace("|", "\\|")


def readme_section(contract: list[TableDoc] | None = None) -> str:
    """The README's table reference (between and including the markers), from the contract."""
    contract = load_contract() if contract is None else contract
    lines = [README_BEGIN, ""]
    for schema in SCHEMAS:
        docs = [d for d in contract if d.schema == schema]
        if not docs:
            continue
        lines += [f"### {_SCHEMA_TITLES[schema]}", ""]
        for doc in docs:
            lines += [f"#### `{doc.name}`", "", _cell(doc.description) + ".", "", "| column | meaning |", "|---|---|"]
            lines += [f"| `{column}` | {_cell(meaning)} |" for column, meaning in doc.columns.items()]
            lines.append("")
    lines.append(README_END)
    return "\n".join(lines)


def sync_readme(readme: Path, contract: list[TableDoc] | None = None, *, check: bool = False) -> bool:
    """Rewrite the section between the markers of ``readme``; True when it was already up to date.

    With ``check`` nothing is written. Raises ValueError when the markers are missing."""
    text = readme.read_text(encoding="utf-8")
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        raise ValueError(f"{readme}: no table-reference markers ({README_BEGIN!r} ... {README_END!r})")
    new = text[:begin] + readme_section(contract) + text[end + len(README_END):]
    if new == text:
        return True
    if not check:
        readme.write_text(new, encoding="utf-8")
    return False
