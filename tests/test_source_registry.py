"""The source registry: every entry's parser, asset, lake table and freshness query resolve, and the
landing sensor watches every source (incidents.csv included)."""

from __future__ import annotations

import inspect
from pathlib import Path

import dagster as dg
import pytest

from gpusre.models.sources.registry import SOURCES, Source, lake_tables, record_sources, resolve, source
from gpusre.models.warehouse import connect
from gpusre.pipelines.definitions import build_definitions
from gpusre.pipelines.resources import LandingResource
from gpusre.pipelines.sensors import landing_sensor

SOURCE_IDS = [s.name for s in SOURCES]


@pytest.mark.parametrize("entry", SOURCES, ids=SOURCE_IDS)
def test_every_entry_resolves(entry: Source, tmp_path: Path) -> None:
    parser = resolve(entry.parser)
    assert callable(parser) and inspect.signature(parser).parameters  # a function taking its input
    # The parser lives in the source's own folder: adding a source is one folder and one entry.
    assert entry.parser.startswith(f"gpusre.models.sources.{entry.name}.")
    assets = build_definitions(str(tmp_path / "w.duckdb")).resolve_asset_graph()
    assert assets.has(dg.AssetKey(list(entry.asset)))
    assert entry.patterns and entry.label and entry.title
    con = connect(tmp_path / "w.duckdb")
    try:
        if entry.lake is not None:
            assert con.sql(f"SELECT count(*) FROM raw.{entry.lake.name}").fetchall() == [(0,)]
            declared = {c for (c,) in con.execute("SELECT column_name FROM information_schema.columns WHERE "
                                                  "table_schema = 'lake' AND table_name = ?",
                                                  [entry.lake.name]).fetchall()}
            assert set(entry.lake.day_columns) <= declared
            query = entry.freshness_sql()
            assert query is not None
            assert con.sql(query).columns == ["source_kind", "ts"]
        else:
            assert entry.freshness_sql() is None
    finally:
        con.close()


def test_names_and_lake_tables_are_unique_and_views_list_the_record_sources(tmp_path: Path) -> None:
    assert len({s.name for s in SOURCES}) == len(SOURCES)
    assert len({t.name for t in lake_tables()}) == len(lake_tables())
    con = connect(tmp_path / "w.duckdb")
    try:
        listed = [r[0] for r in con.sql("SELECT source_kind FROM raw.sources ORDER BY ALL").fetchall()]
        dense = {r[0] for r in con.sql("SELECT source_kind FROM raw.sources WHERE dense").fetchall()}
    finally:
        con.close()
    assert listed == sorted(s.name for s in record_sources())
    assert dense == {s.name for s in SOURCES if s.dense}
    with pytest.raises(KeyError):
        source("no_such_source")


def test_each_lake_table_shows_the_ledger_rows_of_its_own_source(tmp_path: Path) -> None:
    """A lake view reads only its source's ledger rows, which keeps DuckDB's estimate of the ledger
    side of its filter below the lake scan's (the hash table is built on the ledger)."""
    for entry in record_sources():
        assert entry.lake is not None and entry.lake.source_kind == entry.name
    con = connect(tmp_path / "w.duckdb")
    try:
        for entry in record_sources():
            view = con.execute("SELECT sql FROM duckdb_views() WHERE schema_name = 'raw' AND view_name = ?",
                               [entry.lake.name]).fetchall()[0][0]
            assert f"source_kind = '{entry.name}'" in view
    finally:
        con.close()


def test_landing_files_follow_the_patterns(tmp_path: Path) -> None:
    (tmp_path / "sacct" / "sub").mkdir(parents=True)
    (tmp_path / "sacct" / "sub" / "a.psv").write_text("x")
    (tmp_path / "incidents.csv").write_text("id\n")
    (tmp_path / "other.csv").write_text("id\n")
    assert source("sacct").landing_files(tmp_path) == [tmp_path / "sacct" / "sub" / "a.psv"]
    assert source("incidents").landing_files(tmp_path) == [tmp_path / "incidents.csv"]
    assert source("syslog").landing_files(tmp_path) == []


def test_the_sensor_fires_when_incidents_csv_lands_or_changes(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-09-01.psv").write_text("JobID|State\n1|COMPLETED\n")
    resources = {"landing": LandingResource(path=str(landing))}
    first = landing_sensor(dg.build_sensor_context(cursor=None, resources=resources))
    assert len(first.run_requests) == 1

    (landing / "incidents.csv").write_text("id,start,end,component,root_cause,nodes\n"
                                           "INC-1,2026-09-01T10:00:00,2026-09-01T12:00:00,gpu,xid 79,gpu001\n")
    landed = landing_sensor(dg.build_sensor_context(cursor=first.cursor, resources=resources))
    assert len(landed.run_requests) == 1
    assert landed.run_requests[0].tags["gpusre/changed_files"] == "1"

    (landing / "incidents.csv").write_text("id,start,end,component,root_cause,nodes\n"
                                           "INC-1,2026-09-01T10:00:00,2026-09-01T13:00:00,gpu,xid 79,gpu001\n"
                                           "INC-2,2026-09-02T10:00:00,2026-09-02T11:00:00,network,ib,gpu002\n")
    edited = landing_sensor(dg.build_sensor_context(cursor=landed.cursor, resources=resources))
    assert len(edited.run_requests) == 1 and edited.run_requests[0].run_key != landed.run_requests[0].run_key
