"""Lake compaction: old days' per-node node-log files merged into one file per day, with the same
rows in every view, the same core tables, reruns that change nothing, changed landing files after a
merge, kills before and inside the manifest commit, and the `gpusre compact` job with its snapshot."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import duckdb
import hypothesis.strategies as st
import polars as pl
import pytest
from hypothesis import given, settings

import gpusre.models.ingest.lake_compaction as compaction
from gpusre.models.ingest import compaction_policy
from gpusre.models.ingest.lake import (
    MANIFEST,
    compacted_files,
    lake_files,
    lake_root,
    ledger_file_rows_sql,
    ledger_stems_sql,
    unlisted_files,
    version_stem_sql,
)
from gpusre.models.ingest.lake_compaction import compact_lake_table
from gpusre.models.sources.registry import lake_table
from gpusre.models.warehouse import connect
from gpusre.models.warehouse_snapshot import snapshot_path
from gpusre.pipelines.cli import main
from gpusre.pipelines.runner import run_pipeline
from warehouse_contents import WALL_CLOCK, warehouse_contents

GPUSRE = [sys.executable, "-m", "gpusre.pipelines.cli"]
SYSLOG = lake_table("syslog")
#: Small on purpose: the simulated cluster has 6 nodes, so a day holds 6 per-node files.
MIN_FILES = 3


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six nodes, five days, one node-log file per node and day (the layout compaction is for)."""
    out = tmp_path_factory.mktemp("compaction") / "landing"
    proc = subprocess.run([*GPUSRE, "simulate", "--out", str(out), "--nodes", "6", "--days", "5",
                           "--start", "2026-09-01", "--syslog-layout", "per-node"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def built(landing: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse run over ``landing``, not compacted (copy it before changing it)."""
    root = tmp_path_factory.mktemp("built")
    run_pipeline(landing, root / "w.duckdb", root / "reports")
    return root


def _copy(built: Path, to: Path) -> Path:
    """A writable copy of the built warehouse and its lake (a writable open points the views at the copy)."""
    shutil.copytree(built, to, ignore=shutil.ignore_patterns("*.snapshot.duckdb", "dagster_home", "reports"))
    wh = to / "w.duckdb"
    connect(wh).close()
    return wh


def _contents(warehouse: Path) -> dict[str, list[tuple]]:
    """Every raw and core row (the manifest is bookkeeping of the layout, not content; mtime_ns
    depends on when a test copied the landing)."""
    return warehouse_contents(warehouse, skip_columns=WALL_CLOCK | {"mtime_ns"},
                              skip_tables=("lake_compacted_versions",))


def _data_files(warehouse: Path) -> tuple[list[Path], list[Path]]:
    """(own files, compacted files) of raw.syslog_lines, schema files left out."""
    lake = lake_root(warehouse)
    return ([p for p in lake_files(lake, SYSLOG.name) if not p.name.startswith("_")],
            [p for p in compacted_files(lake, SYSLOG.name) if not p.name.startswith("_")])


def _stale(warehouse: Path) -> list[Path]:
    """Files of raw.syslog_lines, in any day, that no ledger or manifest row names: a compaction
    deletes what it superseded listing only the days it merged, so nothing may be left elsewhere."""
    con = connect(warehouse, read_only=True)
    try:
        return unlisted_files(con, lake_root(warehouse), SYSLOG.name)[0]
    finally:
        con.close()


def _compact(warehouse: Path, **kwargs: object) -> compaction.CompactionResult:
    con = connect(warehouse)
    try:
        return compact_lake_table(con, SYSLOG, min_files=MIN_FILES, keep_days=1, **kwargs)  # type: ignore[arg-type]
    finally:
        con.close()


def _loaded_rows(warehouse: Path) -> tuple[list[tuple], list[tuple]]:
    """(per ledger row: rows the lake holds for it, by footers and manifest; rows the ledger loaded)."""
    con = connect(warehouse, read_only=True)
    try:
        held = con.sql(f"SELECT * FROM ({ledger_file_rows_sql(con, SYSLOG.name, 'syslog')}) ORDER BY 1").fetchall()
        loaded = con.sql("SELECT source_file, rows_loaded FROM raw.ingested_files WHERE source_kind = 'syslog' "
                         "ORDER BY 1").fetchall()
        return held, loaded
    finally:
        con.close()


def test_compaction_merges_old_days_and_every_view_and_core_table_keeps_its_rows(
        built: Path, tmp_path: Path) -> None:
    wh = _copy(built, tmp_path / "c")
    before = _contents(wh)
    own_before, _ = _data_files(wh)
    con = connect(wh, read_only=True)
    days = sorted({d for (d,) in con.sql("SELECT DISTINCT ts::DATE FROM raw.syslog_lines").fetchall()})
    con.close()

    result = _compact(wh)
    own, merged = _data_files(wh)
    # Days up to the newest day minus keep_days, each with at least MIN_FILES files, are one file each.
    newest = max(date.fromisoformat(p.parent.name[4:]) for p in own_before)
    expected_days = {date.fromisoformat(p.parent.name[4:]) for p in own_before
                     if date.fromisoformat(p.parent.name[4:]) <= newest - timedelta(days=1)}
    assert result.days == len(merged) == len({p.parent for p in merged}) > 0
    assert {date.fromisoformat(p.parent.name[4:]) for p in merged} <= expected_days
    assert result.files_merged + len(own) == len(own_before) and result.files_deleted == result.files_merged
    assert _stale(wh) == []
    assert result.rows > 0 and len(days) > 1
    assert _contents(wh) == before
    held, loaded = _loaded_rows(wh)
    assert held == loaded  # the rows-reconcile check still finds every loaded row

    # A rerun of the compaction and of the whole pipeline changes nothing.
    again = _compact(wh)
    assert (again.days, again.versions, again.files_deleted) == (0, 0, 0)
    assert _data_files(wh) == (own, merged)


def test_a_run_after_compaction_changes_nothing_and_rebuilt_summaries_read_the_merged_files(
        built: Path, landing: Path, tmp_path: Path) -> None:
    wh = _copy(built, tmp_path / "c")
    before = _contents(wh)
    _compact(wh)
    files = _data_files(wh)
    run_pipeline(landing, wh, tmp_path / "reports")
    assert _contents(wh) == before and _data_files(wh) == files
    # Per-version tables built anew (their bookkeeping gone, as for a table a later gpusre adds)
    # read the compacted versions from the merged files.
    con = connect(wh)
    con.execute("DELETE FROM raw.summarized_versions WHERE summary LIKE '%:syslog:%'")
    con.close()
    run_pipeline(landing, wh, tmp_path / "reports")
    assert _contents(wh) == before


def _rewrite(landing: Path, to: Path, keep: float) -> Path:
    """A copy of ``landing`` with the first per-node log file cut to ``keep`` of its lines; the file."""
    shutil.copytree(landing, to)
    changed = sorted(p for p in (to / "syslog").rglob("*") if p.is_file())[0]
    lines = changed.read_bytes().splitlines(keepends=True)
    changed.write_bytes(b"".join(lines[: int(len(lines) * keep)]))
    return changed


def test_a_landing_file_changed_after_its_day_was_merged_replaces_exactly_its_rows(
        built: Path, landing: Path, tmp_path: Path) -> None:
    """Compared with the same history on a warehouse never compacted (template ids depend on the
    order lines were mined in, so a fresh build is not the reference)."""
    wh = _copy(built, tmp_path / "c")
    reference = _copy(built, tmp_path / "ref")
    _compact(wh)
    work = tmp_path / "landing"
    changed = _rewrite(landing, work, keep=0.5)
    run_pipeline(work, reference, tmp_path / "ref" / "reports")

    run_pipeline(work, wh, tmp_path / "reports")
    assert _contents(wh) == _contents(reference)
    held, loaded = _loaded_rows(wh)
    assert held == loaded
    # Merged again (a sixth of the day's compacted rows are dead: more than DEAD_SHARE): the old
    # version's rows leave the day's compacted file, the new version joins it.
    assert _dead_rows(wh) > 0
    _compact(wh)
    assert _contents(wh) == _contents(reference)
    source_file = changed.relative_to(work).as_posix()
    assert _dead_rows(wh) == 0 and _manifest_versions(wh, source_file) == {"live": 1}
    assert _stale(wh) == []  # the day's replaced compacted file and the merged version's own files

    # Back to the original content: the version merged first is live again, once.
    shutil.copy2(landing / changed.relative_to(work), changed)
    run_pipeline(work, wh, tmp_path / "reports")
    run_pipeline(work, reference, tmp_path / "ref" / "reports")
    assert _contents(wh) == _contents(reference)
    assert _loaded_rows(wh)[0] == _loaded_rows(wh)[1]
    con = connect(wh, read_only=True)
    shown = con.execute("SELECT count(*) FROM raw.syslog_lines WHERE source_file = ?", [source_file]).fetchall()
    con.close()
    assert shown == [(len((landing / changed.relative_to(work)).read_bytes().splitlines()),)]


def _dead_rows(warehouse: Path) -> int:
    """Rows in compacted files of versions the ledger no longer holds (invisible, taking space)."""
    con = connect(warehouse, read_only=True)
    try:
        files = [p.as_posix() for p in compacted_files(lake_root(warehouse), SYSLOG.name)]
        return con.execute(
            f"SELECT count(*) FROM read_parquet(?) WHERE lake_version IS NOT NULL AND lake_version NOT IN "
            f"({ledger_stems_sql()})",
            [files]).fetchall()[0][0]
    finally:
        con.close()


def _manifest_versions(warehouse: Path, source_file: str) -> dict[str, int]:
    """How many of the manifest's versions of ``source_file`` the ledger holds ('live') or not ('dead')."""
    con = connect(warehouse, read_only=True)
    try:
        rows = con.execute(
            f"""SELECT CASE WHEN m.version_stem = {version_stem_sql('f')} THEN 'live' ELSE 'dead' END,
                       count(DISTINCT m.version_stem)
                FROM {MANIFEST} AS m JOIN raw.ingested_files AS f USING (source_file)
                WHERE m.source_file = ? GROUP BY ALL""", [source_file]).fetchall()
        return dict(rows)
    finally:
        con.close()


def test_a_compaction_failing_before_its_manifest_commit_leaves_the_views_as_they_were(
        built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wh = _copy(built, tmp_path / "c")
    before = _contents(wh)
    own_before, _ = _data_files(wh)

    def failing(_con: duckdb.DuckDBPyConnection):  # type: ignore[no-untyped-def]
        raise OSError("disk full")

    monkeypatch.setattr(compaction, "transaction", failing)
    with pytest.raises(OSError, match="disk full"):
        _compact(wh)
    own, merged = _data_files(wh)
    assert own == own_before and merged  # the compacted files were written, and are not read
    assert _contents(wh) == before
    monkeypatch.undo()
    result = _compact(wh)
    assert result.days == len(_data_files(wh)[1]) and _contents(wh) == before


#: A compaction whose process is SIGKILLed inside its manifest transaction (after its inserts,
#: before the commit), or right after the commit, before it deletes the merged files.
KILLED_COMPACTION = """
import os, signal, sys
from contextlib import contextmanager
import gpusre.models.ingest.lake_compaction as compaction
from gpusre.models.ingest import compaction_policy
from gpusre.models.sources.registry import lake_table
from gpusre.models.warehouse import connect
real = compaction.transaction
@contextmanager
def dying(con):
    with real(con):
        yield
        if sys.argv[2] == "inside":
            os.kill(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
compaction.transaction = dying
compaction.compact_lake_table(connect(sys.argv[1]), lake_table("syslog"), min_files=3, keep_days=1)
"""


@pytest.mark.parametrize("when", ["inside", "after"])
def test_a_compaction_killed_at_its_commit_shows_every_row_once_and_the_next_one_finishes(
        built: Path, tmp_path: Path, when: str) -> None:
    wh = _copy(built, tmp_path / "c")
    before = _contents(wh)
    own_before, _ = _data_files(wh)
    proc = subprocess.run([sys.executable, "-c", KILLED_COMPACTION, str(wh), when],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert _data_files(wh)[0] == own_before  # nothing deleted yet
    assert _contents(wh) == before  # and nothing shown twice or lost
    con = connect(wh, read_only=True)
    committed = con.sql(f"SELECT count(*) FROM {MANIFEST}").fetchall()[0][0]
    con.close()
    assert (committed > 0) == (when == "after")

    _compact(wh)
    own, merged = _data_files(wh)
    assert len(own) < len(own_before) and merged and _contents(wh) == before
    assert not any(p.name.endswith(".tmp") for p in compacted_files(lake_root(wh), SYSLOG.name))


def test_gpusre_compact_runs_the_dagster_job_and_refreshes_the_snapshot(
        built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = _copy(built, tmp_path / "c")
    before = _contents(wh)
    assert main(["compact", "--warehouse", str(wh), "--min-files", str(MIN_FILES), "--keep-days", "1"]) == 0
    out = capsys.readouterr().out
    own, merged = _data_files(wh)
    assert f"lake: {len(merged)} day(s) compacted" in out and merged
    assert _contents(wh) == before
    # The snapshot was published after the merge: its raw views find the merged files.
    con = duckdb.connect(str(snapshot_path(wh)), read_only=True)
    try:
        shown = con.sql("SELECT count(*) FROM raw.syslog_lines").fetchall()[0][0]
    finally:
        con.close()
    assert shown == len(before["raw.syslog_lines"])
    # A second run has nothing left to merge.
    assert main(["compact", "--warehouse", str(wh), "--min-files", str(MIN_FILES), "--keep-days", "1"]) == 0
    assert "lake: 0 day(s) compacted" in capsys.readouterr().out


def test_a_run_reports_what_a_compaction_would_merge_and_the_estimate_is_what_it_merges(
        built: Path, landing: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The run's hint is estimated from raw.record_days, without listing the lake; here it must
    equal what the compaction then merges."""
    wh = _copy(built, tmp_path / "c")
    monkeypatch.setattr(compaction_policy, "MIN_FILES", MIN_FILES)
    monkeypatch.setattr(compaction_policy, "KEEP_DAYS", 1)
    assert main(["run", "--landing", str(landing), "--warehouse", str(wh)]) == 0
    out = capsys.readouterr().out
    summary = run_pipeline(landing, wh, tmp_path / "reports")
    assert summary.mergeable_log_files > 0 and summary.mergeable_log_days > 0
    assert (f"node-log lake: {summary.mergeable_log_files:,} small files on {summary.mergeable_log_days} old day(s)"
            in out) and f"gpusre compact --warehouse {wh}" in out
    result = _compact(wh)
    assert (result.files_merged, result.days) == (summary.mergeable_log_files, summary.mergeable_log_days)
    assert run_pipeline(landing, wh, tmp_path / "reports").mergeable_log_files == 0
    # With the defaults (32 files a day), six nodes leave nothing worth merging: no hint.
    monkeypatch.undo()
    fresh = _copy(built, tmp_path / "d")
    assert run_pipeline(landing, fresh, tmp_path / "reports").mergeable_log_files == 0


def test_gpusre_compact_on_a_missing_warehouse_is_one_line(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compact", "--warehouse", str(tmp_path / "none.duckdb")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("gpusre: error:") and "does not exist" in err[0]
    assert "Traceback" not in "\n".join(err)


@st.composite
def _listings(draw: st.DrawFn) -> pl.DataFrame:
    """Own files of random versions: each version has files on 1-3 consecutive days of 8."""
    rows = []
    for v in range(draw(st.integers(1, 25))):
        first = draw(st.integers(0, 7))
        for d in range(first, min(8, first + draw(st.integers(1, 3)))):
            rows.append({"source_file": f"f{v}", "stem": f"s{v}", "day": date(2026, 9, 1) + timedelta(days=d),
                         "path": f"day={d}/s{v}"})
    return pl.DataFrame(rows)


@given(own=_listings(), through_day=st.integers(0, 8), min_files=st.integers(1, 6),
       also=st.sets(st.integers(0, 8), max_size=3))
@settings(max_examples=200, deadline=None)
def test_versions_are_merged_whole_from_old_busy_days_only(own: pl.DataFrame, through_day: int,
                                                           min_files: int, also: set[int]) -> None:
    """``also``: days merged again for their dead rows, whatever their file count."""
    through = date(2026, 9, 1) + timedelta(days=through_day)
    extra = {date(2026, 9, 1) + timedelta(days=d) for d in also}
    ready = compaction._ready(own, through=through, min_files=min_files, also=sorted(extra))
    for stem in ready.get_column("stem").unique().to_list():
        assert ready.filter(pl.col("stem") == stem).height == own.filter(pl.col("stem") == stem).height
    assert all(d <= through for d in ready.get_column("day").to_list())
    old = own.filter(pl.col("day").max().over("stem") <= through)
    per_day = dict(old.group_by("day").len().iter_rows())
    assert all(per_day[d] >= min_files or d in extra for d in ready.get_column("day").to_list())
    # Maximal: a version left out has a day that is too new, or holds too few old files and is
    # not merged again anyway.
    for stem in set(own.get_column("stem").to_list()) - set(ready.get_column("stem").to_list()):
        days = own.filter(pl.col("stem") == stem).get_column("day").to_list()
        assert any(d > through or (per_day.get(d, 0) < min_files and d not in extra) for d in days)


def test_days_are_merged_again_from_a_tenth_of_dead_rows() -> None:
    """Hand-computed: day 1 holds 100 rows of which 10 dead (= DEAD_SHARE), day 2 9 of 100, day 3
    is all dead but newer than ``through``."""
    d1, d2, d3 = date(2026, 9, 1), date(2026, 9, 2), date(2026, 9, 3)
    compacted = pl.DataFrame({"day": [d1, d1, d2, d2, d3], "rows": [90, 10, 91, 9, 50],
                              "live": [True, False, True, False, False]})
    assert compaction._dead_days(compacted, through=d2) == [d1]
