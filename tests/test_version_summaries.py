"""Tables kept per landing-file version (raw.record_days, core.node_events, core.log_template_files and
core.log_templates over them) equal a full rebuild from every raw record: after a first run, after a
changed and a new landing file, and on a warehouse whose bookkeeping is missing (built before it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from gpusre.models.ingest.record_days import record_day_summaries, refresh_record_days
from gpusre.models.logs.node_event_tables import NODE_EVENT_SUMMARIES, refresh_node_event_tables
from gpusre.models.sources.syslog.ingest import load_miner
from gpusre.models.warehouse import connect, transaction
from gpusre.pipelines.runner import run_pipeline

GPUSRE = [sys.executable, "-m", "gpusre.pipelines.cli"]

#: core.log_templates as it was defined before it summed per-file rows: straight from every line.
LOG_TEMPLATES_FROM_LINES = """
SELECT template_id, any_value(message ORDER BY ts, source_file, line_no) AS example, count(*) AS lines,
       count(DISTINCT node) AS nodes, min(ts) AS first_seen_ts, max(ts) AS last_seen_ts,
       bool_or(kind IS NOT NULL) AS has_event,
       any_value(kind ORDER BY ts, source_file, line_no) FILTER (WHERE kind IS NOT NULL) AS kind
FROM raw.syslog_lines GROUP BY template_id ORDER BY template_id"""

#: Per source and UTC day, straight from every record's own time (raw.record_times).
RECORD_DAYS_FROM_RECORDS = """
SELECT source_kind, ts::DATE AS day, count(*) AS records, min(ts), max(ts)
FROM raw.record_times WHERE ts IS NOT NULL GROUP BY ALL ORDER BY ALL"""

#: Node-log nodes per UTC day, straight from every line.
LOG_NODES_FROM_LINES = "SELECT DISTINCT ts::DATE, node FROM raw.syslog_lines WHERE node IS NOT NULL ORDER BY ALL"


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("summaries") / "landing"
    proc = subprocess.run([*GPUSRE, "simulate", "--out", str(out), "--nodes", "4", "--days", "3",
                           "--start", "2026-09-01"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


def _assert_equal_to_full_rebuild(con: duckdb.DuckDBPyConnection) -> None:
    for summary in (*record_day_summaries(), *NODE_EVENT_SUMMARIES):
        full = con.sql(f"WITH rows AS (SELECT * FROM raw.{summary.lake.name}) "
                       f"SELECT * FROM ({summary.select}) ORDER BY ALL").fetchall()
        kept = con.sql(f"SELECT * FROM {summary.table} WHERE {summary.scope} ORDER BY ALL").fetchall()
        assert kept == full, summary.key
    versions = con.sql("SELECT DISTINCT split_part(summary, ':', 2), source_file, sha256 FROM raw.summarized_versions "
                       "ORDER BY ALL").fetchall()
    ledger = con.sql("SELECT source_kind, source_file, sha256 FROM raw.ingested_files "
                     "WHERE source_kind <> 'incidents' ORDER BY ALL").fetchall()
    assert versions == ledger
    # The two-level sums equal the definitions over every record.
    days = con.sql("SELECT source_kind, day, sum(records)::BIGINT, min(first_ts), max(last_ts) FROM raw.record_days "
                   "GROUP BY ALL ORDER BY ALL").fetchall()
    assert days == con.sql(RECORD_DAYS_FROM_RECORDS).fetchall()
    log_nodes = con.sql("SELECT DISTINCT day, unnest(nodes) FROM raw.record_days WHERE source_kind = 'syslog' "
                        "ORDER BY ALL").fetchall()
    assert log_nodes == con.sql(LOG_NODES_FROM_LINES).fetchall()
    templates = con.sql("SELECT template_id, example, lines, nodes, first_seen_ts, last_seen_ts, has_event, kind "
                        "FROM core.log_templates ORDER BY template_id").fetchall()
    assert templates == con.sql(LOG_TEMPLATES_FROM_LINES).fetchall()
    assert con.sql("SELECT count(*) FROM core.node_events").fetchall() == \
        con.sql("SELECT count(*) FROM raw.syslog_lines WHERE kind IS NOT NULL").fetchall()


def test_kept_per_version_equals_a_full_rebuild_across_changed_files_and_a_lost_bookkeeping(
        landing: Path, tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    run_pipeline(landing, wh, tmp_path / "reports")
    con = connect(wh, read_only=True)
    try:
        _assert_equal_to_full_rebuild(con)
        events_before = con.sql("SELECT count(*) FROM core.node_events").fetchall()[0][0]
    finally:
        con.close()

    # A node-log file changes (one line rewritten, an Xid line appended) and a new one lands.
    changed = sorted((landing / "syslog").rglob("*.log"))[0]
    lines = changed.read_text().splitlines()
    header = " ".join(lines[-1].split()[:4])  # "Sep  2 23:58:01 gpu003" -> month, day, time, host
    lines[0] = lines[0] + " (rewritten)"
    lines.append(f"{header} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.")
    changed.write_text("\n".join(lines) + "\n")
    extra = landing / "syslog" / "extra" / "late.log"
    extra.parent.mkdir(parents=True)
    extra.write_text(f"{header} kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=99, DBE (double bit error) detected.\n")
    run_pipeline(landing, wh, tmp_path / "reports")
    con = connect(wh)
    try:
        _assert_equal_to_full_rebuild(con)
        assert con.sql("SELECT count(*) FROM core.node_events").fetchall()[0][0] == events_before + 2

        # A warehouse whose per-version tables were built before the bookkeeping: rebuilt once, no duplicates.
        with transaction(con):
            con.execute("DELETE FROM raw.summarized_versions")
            refresh_record_days(con)
            refresh_node_event_tables(con, load_miner(con).templates().select("template_id", "template"))
        _assert_equal_to_full_rebuild(con)
    finally:
        con.close()


def test_a_changed_definition_rebuilds_its_parts_and_drops_the_old_bookkeeping(landing: Path, tmp_path: Path) -> None:
    """An upgrade that changes what a summary computes (here: what a record's time is) must not keep the
    parts the old definition built for unchanged landing files: the key fingerprints the definition."""
    from dataclasses import replace

    from gpusre.models.ingest.version_summaries import refresh_version_summary

    wh = tmp_path / "w.duckdb"
    run_pipeline(landing, wh, tmp_path / "reports")
    con = connect(wh)
    try:
        old = next(s for s in record_day_summaries() if s.source == "syslog")
        # The same summary with every record an hour later: a different definition, a different key.
        later = replace(old, select=old.select.replace("SELECT source_file, ts AS ts", "SELECT source_file, ts + INTERVAL 1 HOUR AS ts"))
        assert later.select != old.select and later.key != old.key
        assert later.key.split(":")[:2] == old.key.split(":")[:2]
        before = con.sql("SELECT max(last_ts) FROM raw.record_days WHERE source_kind = 'syslog'").fetchall()[0][0]
        with transaction(con):
            removed, added = refresh_version_summary(con, later)
        files = con.sql("SELECT count(*) FROM raw.ingested_files WHERE source_kind = 'syslog'").fetchall()[0][0]
        assert (removed, added) == (0, files)
        after = con.sql("SELECT max(last_ts) FROM raw.record_days WHERE source_kind = 'syslog'").fetchall()[0][0]
        assert (after - before).total_seconds() == 3600
        keys = [k for (k,) in con.sql("SELECT DISTINCT summary FROM raw.summarized_versions "
                                      "WHERE summary LIKE 'raw.record_days:syslog:%'").fetchall()]
        assert keys == [later.key]  # the old definition's bookkeeping is gone
    finally:
        con.close()
