"""The raw layer as a Parquet lake: typed views over an empty lake, file sets per landing file
version, and a real kill of a run between its Parquet writes and its commit."""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

import gpusre.models.ingest.lake as gpusre_lake
from gpusre.models.ingest.lake import lake_files, lake_root, landing_file_id, version_stem
from gpusre.models.sources.registry import lake_tables, record_sources
from gpusre.models.warehouse import connect
from gpusre.models.warehouse_snapshot import snapshot_path
from gpusre.pipelines.runner import run_pipeline
from warehouse_contents import warehouse_contents

GPUSRE = [sys.executable, "-m", "gpusre.pipelines.cli"]


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small simulated landing with every source (a run over it takes seconds)."""
    out = tmp_path_factory.mktemp("lake") / "landing"
    proc = subprocess.run([*GPUSRE, "simulate", "--out", str(out), "--nodes", "4", "--days", "3",
                           "--start", "2026-09-01"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


def _contents(warehouse: Path) -> dict[str, list[tuple]]:
    """Every raw view and core table, rows sorted, wall-clock columns left out."""
    return warehouse_contents(warehouse)


def test_an_empty_lake_gives_empty_views_with_the_declared_columns_and_types(tmp_path: Path) -> None:
    con = connect(tmp_path / "w.duckdb")
    try:
        for spec in lake_tables():
            declared = con.execute("SELECT column_name, data_type FROM information_schema.columns WHERE "
                                   "table_schema = 'lake' AND table_name = ? ORDER BY ordinal_position",
                                   [spec.name]).fetchall()
            declared = [c for c in declared if c[0] not in spec.hidden]  # lake-only keys
            view = con.execute("SELECT column_name, data_type FROM information_schema.columns WHERE "
                               "table_schema = 'raw' AND table_name = ? ORDER BY ordinal_position",
                               [spec.name]).fetchall()
            assert view == declared and declared
            assert con.sql(f"SELECT count(*) FROM raw.{spec.name}").fetchall() == [(0,)]
    finally:
        con.close()
    assert (lake_root(tmp_path / "w.duckdb")) == tmp_path / "w.lake"


def _pre_lake_tables(con: duckdb.DuckDBPyConnection) -> None:
    """raw.syslog_lines and raw.ingested_files as tables, as gpusre wrote them before the lake."""
    con.execute("CREATE TABLE raw.syslog_lines (source_file VARCHAR, line_no BIGINT, ts TIMESTAMPTZ, host VARCHAR, "
                "node VARCHAR, program VARCHAR, pid BIGINT, message VARCHAR, format VARCHAR, template_id BIGINT, "
                "kind VARCHAR, code INTEGER, gpu_pci VARCHAR, device_pci VARCHAR, port VARCHAR, component VARCHAR, "
                "cause_class VARCHAR, severity VARCHAR, action VARCHAR, pattern_id VARCHAR)")
    con.execute("CREATE TABLE raw.ingested_files (source_file VARCHAR PRIMARY KEY, source_kind VARCHAR NOT NULL, "
                "sha256 VARCHAR NOT NULL, size_bytes BIGINT NOT NULL, rows_read BIGINT NOT NULL, rows_loaded BIGINT "
                "NOT NULL, rows_rejected BIGINT NOT NULL, status VARCHAR NOT NULL, error VARCHAR, "
                "ingested_at TIMESTAMPTZ NOT NULL)")


def test_a_pre_lake_warehouse_moves_its_raw_rows_into_the_lake(tmp_path: Path) -> None:
    """A warehouse written before the lake (raw.syslog_lines a table) keeps its rows, now as Parquet."""
    wh = tmp_path / "old.duckdb"
    con = duckdb.connect(str(wh))
    con.execute("CREATE SCHEMA raw")
    _pre_lake_tables(con)
    con.execute("INSERT INTO raw.syslog_lines (source_file, line_no, ts, host, node, message) VALUES "
                "('syslog/a.log', 1, '2026-09-01 10:00:00+00', 'gpu001', 'gpu001', 'hello'), "
                "('syslog/a.log', 2, '2026-09-02 10:00:00+00', 'gpu001', 'gpu001', 'world')")
    con.execute("INSERT INTO raw.ingested_files (source_file, source_kind, sha256, size_bytes, rows_read, rows_loaded, rows_rejected, status, error, ingested_at) VALUES ('syslog/a.log', 'syslog', 'ab12', 10, 2, 2, 0, 'loaded', "
                "NULL, now())")
    con.close()
    con = connect(wh)
    try:
        assert con.sql("SELECT line_no, message FROM raw.syslog_lines ORDER BY 1").fetchall() == [(1, "hello"),
                                                                                                 (2, "world")]
        kind = con.sql("SELECT table_type FROM information_schema.tables WHERE table_schema = 'raw' "
                       "AND table_name = 'syslog_lines'").fetchall()
        assert kind == [("VIEW",)]
    finally:
        con.close()
    names = sorted(p.relative_to(tmp_path / "old.lake" / "syslog_lines").as_posix()
                   for p in lake_files(tmp_path / "old.lake", "syslog_lines") if not p.name.startswith("_"))
    stem = version_stem("syslog/a.log", "ab12")
    assert names == [f"day=2026-09-01/{stem}.parquet", f"day=2026-09-02/{stem}.parquet"]


def _pre_lake_syslog(wh: Path, rows: int, message_bytes: int) -> None:
    """A pre-lake warehouse file whose raw.syslog_lines table holds ``rows`` lines over three days of one
    landing file (the open moves them into the lake)."""
    con = duckdb.connect(str(wh))
    con.execute("CREATE SCHEMA raw")
    _pre_lake_tables(con)
    con.execute("INSERT INTO raw.syslog_lines (source_file, line_no, ts, host, node, program, message) "
                "SELECT 'syslog/a.log', i, TIMESTAMPTZ '2026-09-01 00:00:00+00' + to_seconds(i * 259200 // ?), "
                "'gpu001', 'gpu001', 'kernel', md5(i::VARCHAR) || repeat('x', ?) FROM range(?) AS t(i)",
                [rows, message_bytes, rows])
    con.execute("INSERT INTO raw.ingested_files (source_file, source_kind, sha256, size_bytes, rows_read, rows_loaded, "
                "rows_rejected, status, error, ingested_at) VALUES ('syslog/a.log', 'syslog', 'ab12', 10, ?, ?, 0, "
                "'loaded', NULL, now())", [rows, rows])
    con.close()


def test_a_full_scan_of_a_raw_view_fits_a_small_memory_limit(tmp_path: Path) -> None:
    """DuckDB estimates a glob's rows from its first file. With the zero-row schema file first, every
    lake scan looked empty and the view's ledger filter built its hash table on the lake, i.e. on every
    column of every row: reading a year's node logs ran out of the 1 GB default (2026-12-03). Here
    200 k lines of ~300 bytes read in full under 64 MB (the lake-side build needs more)."""
    wh = tmp_path / "w.duckdb"
    _pre_lake_syslog(wh, 200_000, 300)
    con = connect(wh)
    try:
        con.execute("SET memory_limit = '64MB'")
        con.execute("SET threads = 2")
        assert con.sql("SELECT count(*), count(COLUMNS(*)) FROM raw.syslog_lines").fetchall()[0][:3] == (
            200_000, 200_000, 200_000)
        assert con.sql("SELECT count(DISTINCT message), sum(length(message)) FROM raw.syslog_lines").fetchall() == [
            (200_000, 200_000 * 332)]
        first = con.sql(f"SELECT file FROM glob('{(tmp_path / 'w.lake' / 'syslog_lines').as_posix()}/*/*.parquet') "
                        "LIMIT 1").fetchall()[0][0]
        assert not first.endswith("_schema.parquet")
    finally:
        con.close()


def test_a_schema_file_in_its_old_first_folder_moves_last(tmp_path: Path) -> None:
    """A lake written before 2026-12-03 has its schema files in day=1970-01-01 (first in the glob):
    the next open moves them, and the views read the same rows."""
    wh = tmp_path / "w.duckdb"
    _pre_lake_syslog(wh, 10, 10)
    connect(wh).close()
    lake = tmp_path / "w.lake"
    for spec in lake_tables():
        new = lake / spec.name / gpusre_lake.SCHEMA_FILE
        old = lake / spec.name / "day=1970-01-01" / "_schema.parquet"
        old.parent.mkdir(exist_ok=True)
        new.rename(old)
    # The fingerprint names the schema files, so the open redoes the views (and moves them).
    con = connect(wh)
    try:
        assert con.sql("SELECT count(*), count(DISTINCT line_no) FROM raw.syslog_lines").fetchall() == [(10, 10)]
    finally:
        con.close()
    for spec in lake_tables():
        assert (lake / spec.name / gpusre_lake.SCHEMA_FILE).is_file()
        assert not (lake / spec.name / "day=1970-01-01").exists()


def test_a_run_writes_one_file_per_landing_file_and_day_and_a_rerun_replaces_exactly_a_changed_file(
        landing: Path, tmp_path: Path) -> None:
    work = tmp_path / "landing"
    subprocess.run(["cp", "-r", str(landing), str(work)], check=True)
    wh = tmp_path / "w.duckdb"
    run_pipeline(work, wh, tmp_path / "reports")
    lake = lake_root(wh)
    before = {p for p in lake_files(lake, "syslog_lines") if not p.name.startswith("_")}
    con = connect(wh, read_only=True)
    per_file_day = con.sql("SELECT count(DISTINCT (source_file, ts::DATE)) FROM raw.syslog_lines").fetchall()[0][0]
    con.close()
    assert len(before) == per_file_day
    assert all(p.suffix == ".parquet" and p.parent.name.startswith("day=") for p in before)
    # The snapshot (a copy of the DuckDB file) reads the same lake through the same absolute paths.
    assert _raw_counts(snapshot_path(wh)) == _raw_counts(wh) and all(_raw_counts(wh).values())

    changed = sorted((work / "syslog").rglob("*"))[0]
    while not changed.is_file():
        changed = sorted(changed.rglob("*"))[0]
    lines = changed.read_bytes().splitlines(keepends=True)
    changed.write_bytes(b"".join(lines[: len(lines) // 2]))
    run_pipeline(work, wh, tmp_path / "reports")
    after = {p for p in lake_files(lake, "syslog_lines") if not p.name.startswith("_")}
    source_file = changed.relative_to(work).as_posix()
    ident = landing_file_id(source_file)
    assert {p for p in before if not p.name.startswith(ident)} == {p for p in after if not p.name.startswith(ident)}
    assert {p for p in before if p.name.startswith(ident)} != {p for p in after if p.name.startswith(ident)}
    con = connect(wh, read_only=True)
    n = con.execute("SELECT count(*) FROM raw.syslog_lines WHERE source_file = ?", [source_file]).fetchall()[0][0]
    loaded = con.execute("SELECT rows_loaded FROM raw.ingested_files WHERE source_file = ?", [source_file]).fetchall()
    con.close()
    assert [(n,)] == loaded and n < len(lines)


#: A `gpusre run` whose process is killed (SIGKILL, no cleanup) while writing its Nth Parquet file,
#: after the earlier files of the same run were renamed in place, before any commit of theirs.
KILLED_RUN = """
import os, signal, sys
from pathlib import Path
import gpusre.models.ingest.lake as lake
real, calls = lake.write_atomic, [0]
def dying(table, target, **kwargs):
    if not target.name.startswith("_") and "_staged" not in target.parts:  # lake files only
        calls[0] += 1
        if calls[0] == int(sys.argv[4]):
            tmp = target.with_name(f".{target.stem}.{os.getpid()}.parquet.tmp")
            tmp.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(b"PAR1 half a file")
            os.kill(os.getpid(), signal.SIGKILL)
    real(table, target, **kwargs)
lake.write_atomic = dying
from gpusre.pipelines.runner import run_pipeline
run_pipeline(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
"""


@pytest.fixture(scope="module")
def reference(landing: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted run over ``landing`` (read only)."""
    root = tmp_path_factory.mktemp("reference")
    run_pipeline(landing, root / "reference.duckdb", root / "reports")
    return root / "reference.duckdb"


@pytest.mark.parametrize("when", ["early", "late"])
def test_a_run_killed_mid_write_shows_no_partial_file_and_the_rerun_gives_the_same_results(
        landing: Path, reference: Path, tmp_path: Path, when: str) -> None:
    """Killed while writing the 3rd Parquet file (sacct committed nothing yet), or the last but one
    (the earlier sources committed, the last one not)."""
    n_files = sum(not p.name.startswith("_") for t in lake_tables() for p in lake_files(lake_root(reference), t.name))
    kill_at = 3 if when == "early" else n_files - 1

    wh = tmp_path / "w.duckdb"
    proc = subprocess.run([sys.executable, "-c", KILLED_RUN, str(landing), str(wh), str(tmp_path / "reports"),
                           str(kill_at)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    lake = lake_root(wh)
    written = [p for t in lake_tables() for p in lake_files(lake, t.name)]
    assert any(p.name.endswith(".parquet.tmp") for p in written)  # the half-written file
    # The files before the Nth are whole, except those still being written on the other writer threads.
    in_flight = gpusre_lake._WRITE_THREADS - 1
    assert sum(p.suffix == ".parquet" and not p.name.startswith("_") for p in written) >= kill_at - 1 - in_flight
    # The views read whole files of committed landing files only: the killed run's files are not
    # in the ledger, the half-written one does not match the glob.
    con = connect(wh, read_only=True)
    try:
        ledger = con.sql("SELECT count(*) FROM raw.ingested_files").fetchall()[0][0]
        for source in record_sources():
            assert source.lake is not None
            shown = con.sql(f"SELECT count(*) FROM raw.{source.lake.name}").fetchall()[0][0]
            committed = con.execute("SELECT coalesce(sum(rows_loaded), 0) FROM raw.ingested_files "
                                    "WHERE source_kind = ?", [source.name]).fetchall()[0][0]
            assert shown == committed
    finally:
        con.close()
    assert ledger < _count_ledger(reference)

    run_pipeline(landing, wh, tmp_path / "reports")
    assert _contents(wh) == _contents(reference)
    left = [p for t in lake_tables() for p in lake_files(lake, t.name)]
    assert not any(p.name.endswith(".tmp") for p in left)
    assert len(left) == len([p for t in lake_tables() for p in lake_files(lake_root(reference), t.name)])


def _raw_counts(warehouse: Path) -> dict[str, int]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return {t.name: con.sql(f"SELECT count(*) FROM raw.{t.name}").fetchall()[0][0] for t in lake_tables()}
    finally:
        con.close()


def _count_ledger(warehouse: Path) -> int:
    con = connect(warehouse, read_only=True)
    try:
        return int(con.sql("SELECT count(*) FROM raw.ingested_files").fetchall()[0][0])
    finally:
        con.close()


def test_views_cast_the_lake_to_the_declared_types(tmp_path: Path) -> None:
    """A file set written from a frame with looser types still reads back with the declared ones."""
    from gpusre.models.ingest.lake import write_file_sets
    from gpusre.models.sources.registry import lake_table

    wh = tmp_path / "w.duckdb"
    con = connect(wh)
    try:
        rows = pl.DataFrame({"source_file": ["slurm_events/e.txt"], "line_no": [1], "source_format": ["sacctmgr"],
                             "event_type": ["node"], "nodes": [["gpu001"]], "state_raw": [3]}).with_columns(
            start_ts=pl.lit("2026-09-01 10:00:00").str.to_datetime(time_zone="UTC"))
        schema = con.sql("SELECT * FROM lake.slurm_events LIMIT 0").pl().schema
        full = rows.select([pl.col(c) if c in rows.columns else pl.lit(None).alias(c) for c in schema])
        write_file_sets(lake_root(wh), lake_table("slurm_events"), full, {"slurm_events/e.txt": "00ff"})
        con.execute("INSERT INTO raw.ingested_files (source_file, source_kind, sha256, size_bytes, rows_read, rows_loaded, rows_rejected, status, error, ingested_at) VALUES ('slurm_events/e.txt', 'slurm_events', '00ff', 1, 1, 1, 0, "
                    "'loaded', NULL, now())")
        got = con.sql("SELECT nodes, start_ts::VARCHAR, state_raw FROM raw.slurm_events").fetchall()
        assert got == [(["gpu001"], "2026-09-01 10:00:00+00", 3)]
        assert (lake_root(wh) / "slurm_events" / "day=2026-09-01" / f"{version_stem('slurm_events/e.txt', '00ff')}"
                ".parquet").is_file()
    finally:
        con.close()


def test_file_sets_of_interleaved_rows_get_exactly_their_rows(tmp_path: Path) -> None:
    """Rows of one landing file that alternate between days (lines out of time order), and of two
    landing files in one batch: each (file, day) file set gets exactly its rows, in input order,
    whether or not the batch needed sorting."""
    from gpusre.models.ingest.lake import write_file_sets
    from gpusre.models.sources.registry import lake_table

    wh = tmp_path / "w.duckdb"
    con = connect(wh)
    try:
        schema = con.sql("SELECT * FROM lake.slurm_events LIMIT 0").pl().schema
        files = ["slurm_events/a.txt", "slurm_events/a.txt", "slurm_events/b.txt", "slurm_events/a.txt",
                 "slurm_events/b.txt"]
        stamps = ["2026-09-01 23:59:00", "2026-09-02 00:01:00", "2026-09-01 12:00:00", "2026-09-01 23:59:30",
                  "2026-09-01 13:00:00"]
        rows = pl.DataFrame({"source_file": files, "line_no": [1, 2, 1, 3, 2], "event_type": ["node"] * 5}).with_columns(
            start_ts=pl.Series(stamps).str.to_datetime(time_zone="UTC"))
        full = rows.select([pl.col(c) if c in rows.columns else pl.lit(None).alias(c) for c in schema])
        versions = {"slurm_events/a.txt": "00aa", "slurm_events/b.txt": "00bb"}
        # The node-state table keeps one file per dump; the per-day split is what node logs use.
        per_day = dataclasses.replace(lake_table("slurm_events"), day_of_landing_file=False)
        for batch in (full, full.filter(pl.col("source_file") == "slurm_events/b.txt")):
            for path in lake_files(lake_root(wh), "slurm_events"):
                if path.name != "_schema.parquet":
                    path.unlink()
            assert write_file_sets(lake_root(wh), per_day, batch, versions) == (
                batch.select("source_file", pl.col("start_ts").dt.date()).n_unique())
            got = {(p.parent.name, p.stem): pl.read_parquet(p)["line_no"].to_list()
                   for p in lake_files(lake_root(wh), "slurm_events") if p.name != "_schema.parquet"}
            expected = {(f"day={day}", version_stem(f, versions[f])): part["line_no"].to_list()
                        for (f, day), part in batch.group_by("source_file", pl.col("start_ts").dt.date(),
                                                             maintain_order=True)}
            assert got == expected
        # As registered (one file per dump, in the folder of its latest row), and for the alerts.
        for path in lake_files(lake_root(wh), "slurm_events"):
            if path.name != "_schema.parquet":
                path.unlink()
        assert lake_table("slurm_events").day_of_landing_file and lake_table("alerts").day_of_landing_file
        assert write_file_sets(lake_root(wh), lake_table("slurm_events"), full, versions) == 2
        got = {(p.parent.name, p.stem): sorted(pl.read_parquet(p)["line_no"].to_list())
               for p in lake_files(lake_root(wh), "slurm_events") if p.name != "_schema.parquet"}
        assert got == {("day=2026-09-02", version_stem("slurm_events/a.txt", "00aa")): [1, 2, 3],
                       ("day=2026-09-01", version_stem("slurm_events/b.txt", "00bb")): [1, 2]}
    finally:
        con.close()


def test_rows_reconcile_reads_the_footers_and_finds_a_lost_file(reference: Path, tmp_path: Path) -> None:
    """The per-file row counts of the reconcile checks come from the Parquet footers of each ledger
    version's files: they equal counting the raw views, and a file lost from the lake is named."""
    import shutil

    from gpusre.models.ingest.lake import ledger_file_rows_sql
    from gpusre.models.ingest.reconcile import mismatched_files

    wh = tmp_path / "w.duckdb"
    shutil.copy(reference, wh)
    shutil.copytree(lake_root(reference), lake_root(wh))
    con = connect(wh)
    try:
        for source in record_sources():
            assert source.lake is not None
            footers = con.sql(f"{ledger_file_rows_sql(con, source.lake.name, source.name)} ORDER BY 1").fetchall()
            counted = con.execute(f"SELECT f.source_file, count(r.source_file) FROM raw.ingested_files AS f "
                                  f"LEFT JOIN raw.{source.lake.name} AS r USING (source_file) "
                                  f"WHERE f.source_kind = ? GROUP BY ALL ORDER BY 1", [source.name]).fetchall()
            assert footers == counted and sum(n for _, n in footers) > 0
            assert mismatched_files(con, source.name, source.lake.name) == []
        source_file, sha, loaded = con.sql("SELECT source_file, sha256, rows_loaded FROM raw.ingested_files "
                                           "WHERE source_kind = 'sacct' AND rows_loaded > 0 LIMIT 1").fetchall()[0]
    finally:
        con.close()
    for path in lake_files(lake_root(wh), "sacct_records"):
        if path.stem == version_stem(source_file, sha):
            path.unlink()
    con = connect(wh)
    try:
        assert [row[0::4] for row in mismatched_files(con, "sacct", "sacct_records")] == [(source_file, 0)]
        assert mismatched_files(con, "sacct", "sacct_records")[0][2] == loaded
    finally:
        con.close()


def test_report_table_status_of_a_lake_view_comes_from_the_ledger(reference: Path, tmp_path: Path) -> None:
    """The reports ask whether raw.* has rows; over the lake the ledger answers (a scan took ~1 s a
    table on a year), and it answers the same as the view."""
    from gpusre.reports.kit.warehouse import table_status

    con = connect(reference, read_only=True)
    try:
        for source in record_sources():
            assert source.lake is not None
            has_rows = con.sql(f"SELECT count(*) > 0 FROM raw.{source.lake.name}").fetchall()[0][0]
            assert has_rows and table_status(con, f"raw.{source.lake.name}") is None
    finally:
        con.close()
    empty = connect(tmp_path / "empty.duckdb")
    try:
        assert table_status(empty, "raw.slurm_events") == "No data yet: raw.slurm_events is empty."
    finally:
        empty.close()
