"""The node-log summaries built from the parts the parse stages (models/sources/syslog/summary_parts.py)
equal the same summaries built from the lines: core.node_events, core.log_template_files and the node
logs' raw.record_days. Property-based over lines with tied times, lines out of time order, lines
without a node, masked messages sharing a template and messages without one; and end to end, where
the publish step summarizes the new files from their parts and nothing is left to read from the lake."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusre.models.ingest.record_days import record_day_summaries
from gpusre.models.ingest.version_summaries import VersionSummary
from gpusre.models.logs.node_event_tables import NODE_EVENT_SUMMARIES
from gpusre.models.sources.syslog.ingest import ingest_syslog_files
from gpusre.models.sources.syslog.summary_parts import empty_parts, summary_parts
from gpusre.models.warehouse import connect

FIXTURES = Path(__file__).parent / "fixtures" / "syslog"
SUMMARIES: tuple[VersionSummary, ...] = (
    *NODE_EVENT_SUMMARIES, *(s for s in record_day_summaries() if s.source == "syslog"))
T0 = datetime(2026, 11, 30, 23, 59, 58, tzinfo=timezone.utc)  # lines cross midnight: two UTC days


def _lines(draw: st.DrawFn) -> pl.DataFrame:
    rows = []
    for f in range(draw(st.integers(1, 3))):
        line_nos = sorted(draw(st.sets(st.integers(1, 400), min_size=1, max_size=25)))
        for line_no in line_nos:
            kind = draw(st.sampled_from([None, None, "xid", "ecc_dbe"]))
            rows.append({
                "source_file": f"syslog/2026-11-30/gpu{f:03d}/kern.log", "line_no": line_no,
                "ts": T0 + timedelta(seconds=draw(st.integers(0, 4))),  # ties, and lines out of time order
                "node": draw(st.sampled_from([None, "gpu001", "gpu002", "gpu003"])),
                "message": draw(st.sampled_from(["a", "b", "c", "NVRM: Xid 79", ""])),
                "kind": kind, "code": 79 if kind == "xid" else None,
                "message_key": draw(st.integers(1, 6)),
                "program": draw(st.sampled_from([None, "kernel"])),
            })
    frame = pl.DataFrame(rows, schema_overrides={"code": pl.Int32, "ts": pl.Datetime("us", "UTC"), "node": pl.String,
                                                 "kind": pl.String, "program": pl.String})
    return frame.with_columns(pl.lit(None, dtype=pl.String).alias(c) for c in (
        "gpu_pci", "device_pci", "port", "component", "cause_class", "severity", "action"))


def _warehouse(templates: dict[int, int]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE SCHEMA raw")
    con.execute("CREATE TABLE raw.syslog_message_templates (message_key BIGINT, template_id BIGINT)")
    if templates:
        con.executemany("INSERT INTO raw.syslog_message_templates VALUES (?, ?)", list(templates.items()))
    return con


def _from_lines(con: duckdb.DuckDBPyConnection, summary: VersionSummary, lines: pl.DataFrame) -> list[tuple]:
    con.register("_lines", lines.to_arrow())
    try:
        # As the raw.syslog_lines view shows a line: its template id looked up by its masked message's key.
        return con.sql("WITH rows AS (SELECT l.* EXCLUDE (message_key), m.template_id FROM _lines AS l "
                       "LEFT JOIN raw.syslog_message_templates AS m ON m.message_key = l.message_key) "
                       f"SELECT * FROM ({summary.select}) ORDER BY ALL").fetchall()
    finally:
        con.unregister("_lines")


def _from_parts(con: duckdb.DuckDBPyConnection, summary: VersionSummary, parts: dict[str, pl.DataFrame]) -> list[tuple]:
    assert summary.parts is not None
    con.register("_parts", parts[summary.parts.kind].to_arrow())
    try:
        return con.sql(f"WITH parts AS (SELECT * FROM _parts) SELECT * FROM ({summary.parts.select}) "
                       "ORDER BY ALL").fetchall()
    finally:
        con.unregister("_parts")


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_each_summary_from_parts_equals_it_from_the_lines(data: st.DataObject) -> None:
    lines = data.draw(st.composite(_lines)())
    # Keys 1-4 have templates (1 and 2 share one); 5 and 6 were never mined (the view shows NULL).
    con = _warehouse({1: 10, 2: 10, 3: 11, 4: 12})
    # The parse stages parts per batch of whole files: any split of the files gives the same rows.
    files = lines.get_column("source_file").unique(maintain_order=True).to_list()
    cut = data.draw(st.integers(0, len(files)))
    batches = [lines.filter(pl.col("source_file").is_in(files[:cut])), lines.filter(pl.col("source_file").is_in(files[cut:]))]
    staged = [summary_parts(b) for b in batches]
    parts = {kind: pl.concat([s[kind] for s in staged]) for kind in staged[0]}
    for summary in SUMMARIES:
        expected = _from_lines(con, summary, lines)
        # Rows for any lines (node events: when a line has a kind).
        assert expected or (summary.table == "core.node_events" and lines["kind"].is_null().all()), summary.key
        assert _from_parts(con, summary, parts) == expected, summary.key


def test_parts_of_no_lines_give_no_rows() -> None:
    con = _warehouse({})
    for summary in SUMMARIES:
        assert _from_parts(con, summary, empty_parts()) == []


def test_the_publish_summarizes_new_files_from_their_parts(tmp_path: Path) -> None:
    """After the node-log ingest alone (no node-events step), the per-version tables hold the new files,
    equal to a rebuild from the lines, and the bookkeeping names every file: the node-events step will
    read nothing from the lake. A file changed later is summarized again, its old rows gone."""
    landing = tmp_path / "landing" / "syslog"
    landing.mkdir(parents=True)
    for path in sorted(FIXTURES.glob("*.log")):
        shutil.copy(path, landing / path.name)
    con = connect(tmp_path / "w.duckdb")
    try:
        for night in range(2):
            if night:  # the next night: one file grows, one is new
                first = sorted(landing.iterdir())[0]
                first.write_text(first.read_text() + first.read_text().splitlines()[-1] + "\n")
                shutil.copy(FIXTURES / "other_kernel_and_slurm_lines.txt", landing / "other.log")
            ingest_syslog_files(con, tmp_path / "landing")
            for summary in SUMMARIES:
                kept = con.sql(f"SELECT * FROM {summary.table} WHERE {summary.scope} ORDER BY ALL").fetchall()
                full = con.sql(f"WITH rows AS (SELECT * FROM raw.syslog_lines) SELECT * FROM ({summary.select}) "
                               "ORDER BY ALL").fetchall()
                assert kept == full and kept, summary.key
                summarized = con.execute("SELECT source_file, sha256 FROM raw.summarized_versions WHERE summary = ? "
                                         "ORDER BY ALL", [summary.key]).fetchall()
                assert summarized == con.sql("SELECT source_file, sha256 FROM raw.ingested_files "
                                             "WHERE source_kind = 'syslog' ORDER BY ALL").fetchall()
        assert con.sql("SELECT count(*) FROM core.node_events").fetchall()[0][0] > 0
    finally:
        con.close()
