"""WarehouseResource inside and outside a run: one open of the file per run, a cursor per use.

Inside a run every use is a cursor of one database the run opened: the next step sees what an earlier
one committed, but not its temporary tables or registered frames (each cursor is its own session), and
the file is closed when the run ends, so another process can open it at once. Outside a run (a sensor
or schedule evaluation) each use opens and closes the file itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from gpusre.pipelines.resources import WarehouseResource

seen: dict[str, object] = {}


@dg.asset
def first_step(warehouse: WarehouseResource) -> None:
    with warehouse.connect() as con:
        con.execute("CREATE TABLE marts.resource_probe AS SELECT 42 AS answer")
        con.execute("CREATE TEMP TABLE step_scratch AS SELECT 1 AS x")
        con.register("step_frame", pl.DataFrame({"y": [1]}).to_arrow())
        seen["first_zone"] = con.sql("SELECT current_setting('TimeZone')").fetchall()[0][0]
    with warehouse.connect() as again:  # a second use in the same step: a fresh session
        seen["temp_in_second_use"] = again.sql(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'step_scratch'").fetchall()[0][0]


@dg.asset(deps=[first_step])
def second_step(warehouse: WarehouseResource) -> None:
    with warehouse.connect(read_only=True) as con:
        seen["answer"] = con.sql("SELECT answer FROM marts.resource_probe").fetchall()[0][0]
        seen["temp_visible"] = con.sql(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'step_scratch'").fetchall()[0][0]
        seen["frame_visible"] = con.sql(
            "SELECT count(*) FROM duckdb_views() WHERE view_name = 'step_frame'").fetchall()[0][0]
        seen["zone"] = con.sql("SELECT current_setting('TimeZone')").fetchall()[0][0]
        seen["utc_day"] = con.sql("SELECT CAST(TIMESTAMPTZ '2026-12-06 23:30:00+00' AS DATE)").fetchall()[0][0]


def _open_in_another_process(path: Path) -> str:
    code = f"import duckdb; c = duckdb.connect({str(path)!r}); print(c.sql('SELECT answer FROM marts.resource_probe').fetchall()[0][0])"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout.strip()


def test_a_run_shares_one_database_and_keeps_each_use_its_own_session(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    seen.clear()
    assert dg.materialize([first_step, second_step], resources={"warehouse": WarehouseResource(path=str(wh))}).success
    assert seen["answer"] == 42  # committed by the first step, read by the second
    assert (seen["temp_visible"], seen["frame_visible"], seen["temp_in_second_use"]) == (0, 0, 0)
    assert seen["first_zone"] == seen["zone"] == "UTC"
    assert str(seen["utc_day"]) == "2026-12-06"
    # Closed at the run's end: another process opens the file (DuckDB refuses while a writer holds it).
    assert _open_in_another_process(wh) == "42"


def test_a_failing_step_leaves_what_it_began_uncommitted_and_the_file_closed(tmp_path: Path) -> None:
    from gpusre.models.warehouse import transaction

    @dg.asset
    def half_done(warehouse: WarehouseResource) -> None:
        with warehouse.connect() as con, transaction(con):
            con.execute("CREATE TABLE marts.resource_probe AS SELECT 7 AS answer")
            raise RuntimeError("the step broke mid-transaction")

    wh = tmp_path / "w.duckdb"
    with pytest.raises(RuntimeError, match="mid-transaction"):
        dg.materialize([half_done], resources={"warehouse": WarehouseResource(path=str(wh))})
    code = ("import duckdb; c = duckdb.connect(%r); print(c.sql(\"SELECT count(*) FROM duckdb_tables() "
            "WHERE table_name = 'resource_probe'\").fetchall()[0][0])" % str(wh))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "0", out.stderr


def test_outside_a_run_each_use_opens_and_closes_the_file(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    resource = WarehouseResource(path=str(wh))
    with resource.connect() as con:
        con.execute("CREATE TABLE marts.resource_probe AS SELECT 42 AS answer")
        assert con.sql("SELECT current_setting('TimeZone')").fetchall()[0][0] == "UTC"
    assert _open_in_another_process(wh) == "42"  # nothing held after the use
    with resource.connect(read_only=True) as con:
        assert con.sql("SELECT answer FROM marts.resource_probe").fetchall()[0][0] == 42
