"""The operator's incidents.csv in the ingestion ledger (gpusre.models.sources.incidents.ingest).

Hand-computed: a file of 2 good rows and 1 bad row is one raw.ingested_files row with the SHA-256
and size of its bytes, rows_read 3 = 2 loaded + 1 rejected, status loaded, and its one bad row in
raw.rejects (line 4: the header is line 1); the same bytes again change nothing (same ingested_at);
an unreadable or unparsable file is refused with a one-line reason and a line-0 reject (0 rows);
a deleted file labels nothing, keeps its ledger row with gone_since set and zero counts, and its
rejects go.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pytest

from gpusre.models.sources.incidents import ingest as incidents_ingest
from gpusre.models.sources.incidents.ingest import GONE_REASON, publish_incidents, read_incidents
from gpusre.models.warehouse import connect

GOOD_AND_BAD = ("id,start,end,component,root_cause,nodes,notes\n"
                "OPS-1,2026-11-03T03:08:00,2026-11-04T09:00:00,GPU,GPU 3 fell off the bus,gpu006,SR-4411\n"
                "OPS-2,2026-11-04T10:00:00,2026-11-04T11:00:00,InfiniBand,cable,gpu009,\n"
                "OPS-3,2026-11-05T99:00,2026-11-05T10:00,GPU,bad row,gpu001,\n")


@pytest.fixture()
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    c = connect(tmp_path / "wh" / "gpusre.duckdb")
    yield c
    c.close()


def _ingest(con: duckdb.DuckDBPyConnection, landing: Path) -> incidents_ingest.IncidentsRead:
    read = read_incidents(con, landing)
    publish_incidents(con, read)
    return read


def _ledger(con: duckdb.DuckDBPyConnection) -> tuple:
    return con.execute("""SELECT source_kind, sha256, size_bytes, rows_read, rows_loaded, rows_rejected, status, error,
                             ingested_at, gone_since FROM raw.ingested_files WHERE source_file = 'incidents.csv'""").fetchall()[0]


def test_good_and_bad_rows_are_one_ledger_row(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    data = GOOD_AND_BAD.encode()
    (landing / "incidents.csv").write_bytes(data)
    read = _ingest(con, landing)
    assert read.incidents is not None and read.incidents["id"].to_list() == ["OPS-1", "OPS-2"]
    kind, sha, size, rows_read, loaded, rejected, status, error, ingested_at, gone = _ledger(con)
    assert (kind, sha, size) == ("incidents", hashlib.sha256(data).hexdigest(), len(data))
    assert (rows_read, loaded, rejected, status, error, gone) == (3, 2, 1, "loaded", None, None)
    assert con.sql("SELECT source_kind, line_no, error FROM raw.rejects").fetchall() == [
        ("incidents", 4, "start is not an ISO-8601 time")]
    # The same bytes again: unchanged, nothing rewritten (the first read's ingested_at and reject stay).
    again = _ingest(con, landing)
    assert again.result.status == "unchanged" and again.incidents is not None and again.incidents.height == 2
    assert _ledger(con)[8] == ingested_at
    assert con.execute("SELECT count(*) FROM raw.rejects").fetchall()[0] == (1,)


def test_unreadable_file_is_refused_in_one_line(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "incidents.csv").write_bytes(GOOD_AND_BAD.encode("utf-16"))
    read = _ingest(con, landing)
    assert read.result.status == "refused" and read.incidents is not None and read.incidents.height == 0
    _, _, _, rows_read, loaded, rejected, status, error, _, _ = _ledger(con)
    assert (rows_read, loaded, rejected, status) == (0, 0, 0, "refused")
    assert error == "UTF-16 encoded: convert to UTF-8" and "\n" not in error
    assert con.sql("SELECT line_no, error FROM raw.rejects").fetchall() == [(0, error)]


def test_parser_crash_is_refused_not_raised(con: duckdb.DuckDBPyConnection, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "incidents.csv").write_text(GOOD_AND_BAD)

    def boom(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(incidents_ingest, "parse_operator_incidents", boom)
    read = _ingest(con, landing)
    assert read.result.status == "refused"
    assert _ledger(con)[6:8] == ("refused", "cannot parse the file: RuntimeError: boom")


def test_deleted_file_drops_its_labels_and_says_so(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "incidents.csv").write_text(GOOD_AND_BAD)
    _ingest(con, landing)
    (landing / "incidents.csv").unlink()
    read = _ingest(con, landing)
    assert read.result.status == "gone" and read.incidents is None  # no labels at all
    _, _, _, rows_read, loaded, rejected, status, error, _, gone = _ledger(con)
    assert (rows_read, loaded, rejected, error) == (0, 0, 0, GONE_REASON) and gone is not None
    assert con.execute("SELECT count(*) FROM raw.rejects").fetchall()[0] == (0,)
    # Next run: nothing more to say, the row stays as it is.
    assert _ingest(con, landing).result.status == "absent" and _ledger(con)[9] == gone
    # Back again: loaded anew, present.
    (landing / "incidents.csv").write_text(GOOD_AND_BAD)
    assert _ingest(con, landing).result.status == "loaded"
    assert _ledger(con)[3:7] == (3, 2, 1, "loaded") and _ledger(con)[9] is None


def test_no_file_ever_writes_nothing(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    read = _ingest(con, tmp_path)
    assert read.result.status == "absent" and read.incidents is None
    assert con.execute("SELECT count(*) FROM raw.ingested_files").fetchall()[0] == (0,)
