"""A writable open applies the DDL only when something it creates changed or is missing
(raw.warehouse_schema holds the fingerprint of what was last applied)."""

from __future__ import annotations

import shutil
from pathlib import Path

from gpusre.models.ingest.lake import lake_root
from gpusre.models.warehouse import connect


def _applied_at(path: Path):  # noqa: ANN202 - a datetime
    con = connect(path)
    try:
        return con.sql("SELECT applied_at FROM raw.warehouse_schema").fetchall()[0][0]
    finally:
        con.close()


def test_an_unchanged_warehouse_is_opened_without_the_ddl(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    first = _applied_at(wh)
    assert _applied_at(wh) == first  # same fingerprint, every declared object there: skipped


def test_a_changed_fingerprint_a_dropped_table_or_a_lost_lake_apply_it_again(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    first = _applied_at(wh)

    con = connect(wh)
    con.execute("UPDATE raw.warehouse_schema SET fingerprint = 'older gpusre'")
    con.close()
    second = _applied_at(wh)
    assert second > first

    con = connect(wh)
    con.execute("DROP TABLE core.alerts")  # dropped by hand
    con.close()
    con = connect(wh)
    try:
        assert con.sql("SELECT count(*) FROM core.alerts").fetchall() == [(0,)]
        third = con.sql("SELECT applied_at FROM raw.warehouse_schema").fetchall()[0][0]
    finally:
        con.close()
    assert third > second

    shutil.rmtree(lake_root(wh))  # the lake folder deleted: its schema files and views are made again
    con = connect(wh)
    try:
        assert con.sql("SELECT count(*) FROM raw.syslog_lines").fetchall() == [(0,)]
    finally:
        con.close()
    assert lake_root(wh).is_dir()
