"""Node-log lines of the repeated DST hour that nothing in their file places are counted and reported.

America/Chicago falls back on 2026-11-01: local 01:00-01:59 happens twice, first CDT (UTC-5), then CST
(UTC-6). A busy node's file shows the clock going back (a drop of more than 5 min inside the hour):
lines before the drop are the first pass, lines after it the second — placed, not guessed. A quiet
node's file (hourly cron, then an Xid and NHC failures every 5 min) never shows the drop: its lines of
that hour are read as the first pass by a guess, perhaps 1 h early (an outside evaluator's gpu009: the
Xid of 01:20:03 CST, 07:20:03Z, stored at 06:20:03Z). The guess stays (nothing in the file says
otherwise) but the ledger counts it and the nightly says so.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import duckdb

from gpusre.models.sources.syslog.parse import SyslogInput, parse_syslog_batch
from gpusre.pipelines.runner import run_pipeline
from gpusre.reports.nightly.report import render_nightly_report

UTC = timezone.utc
HINT = (datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC))
XID = "kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1912, name=python, GPU has fallen off the bus."
NHC = "nhc[{}]: ERROR:  nhc:  Health check failed:  check_nvsmi_healthmon:  nvidia-smi exited with 15"
CRON = "CRON[{}]: (root) CMD (run-parts /etc/cron.hourly)"

#: The quiet node: cron at 00:01 (CDT), 01:01 twice (CDT, then CST: the same text, no drop), the Xid
#: at 01:20:03 and NHC failures 01:25 .. 01:55 — 10 lines of the repeated hour, none after a drop —,
#: then 02:00 and 02:05 (CST, not ambiguous).
QUIET = [("00:01:01", CRON.format(1)), ("01:01:01", CRON.format(2)), ("01:01:01", CRON.format(3)),
         ("01:20:03", XID), *[(f"01:{m:02d}:01", NHC.format(m)) for m in range(25, 60, 5)],
         ("02:00:01", NHC.format(60)), ("02:05:01", NHC.format(65))]
#: The busy node: every 10 min through both passes; the clock drops from 01:50 to 01:00 (50 min > 5):
#: placed, 12 lines of the repeated hour, none guessed.
BUSY = [(f"01:{m:02d}:00", CRON.format(100 + m)) for m in range(0, 60, 10)] * 2


def _file(lines: list[tuple[str, str]], node: str) -> bytes:
    return "".join(f"Nov  1 {hms} {node} {msg}\n" for hms, msg in lines).encode()


def test_lines_of_the_repeated_hour_nothing_places_are_counted() -> None:
    out = parse_syslog_batch([SyslogInput(_file(QUIET, "gpu009"), "syslog/gpu009.log", "gpu009", HINT),
                              SyslogInput(_file(BUSY, "gpu001"), "syslog/gpu001.log", "gpu001", HINT)],
                             timezone="America/Chicago")
    assert dict(out.files.select("source_file", "rows_dst_guessed").iter_rows()) == {
        "syslog/gpu009.log": 10, "syslog/gpu001.log": 0}
    ts = out.lines.filter(pl_message_has("Xid"))["ts"].to_list()
    assert ts == [datetime(2026, 11, 1, 6, 20, 3, tzinfo=UTC)]  # the guess: the first pass (CDT)
    busy = out.lines.filter(pl_source("syslog/gpu001.log"))["ts"].to_list()
    assert busy[0] == datetime(2026, 11, 1, 6, 0, tzinfo=UTC) and busy[6] == datetime(2026, 11, 1, 7, 0, tzinfo=UTC)
    # The same lines in UTC, or with their own offset, are never ambiguous.
    utc = parse_syslog_batch([SyslogInput(_file(QUIET, "gpu009"), "syslog/gpu009.log", "gpu009", HINT)], timezone="UTC")
    assert utc.files["rows_dst_guessed"].to_list() == [0]
    iso = "".join(f"2026-11-01T{hms}-06:00 gpu009 {msg}\n" for hms, msg in QUIET[1:]).encode()
    exact = parse_syslog_batch([SyslogInput(iso, "syslog/iso.log", "gpu009")], timezone="America/Chicago")
    assert exact.files["rows_dst_guessed"].to_list() == [0]


def pl_message_has(text: str):  # noqa: ANN201 - a Polars expression
    import polars as pl
    return pl.col("message").str.contains(text, literal=True)


def pl_source(name: str):  # noqa: ANN201 - a Polars expression
    import polars as pl
    return pl.col("source_file") == name


def test_the_ledger_and_the_nightly_say_so(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "syslog" / "2026-11-01").mkdir(parents=True)
    (landing / "cluster.yaml").write_text('cluster: chi\ntimezone: America/Chicago\nnodes: "gpu[001-016]"\n'
                                          "gpus_per_node: 8\ngpu_type: h100\n")
    (landing / "syslog" / "2026-11-01" / "gpu009.log").write_bytes(_file(QUIET, "gpu009"))
    (landing / "syslog" / "2026-11-01" / "gpu001.log").write_bytes(_file(BUSY, "gpu001"))
    run_pipeline(landing, tmp_path / "w.duckdb", tmp_path / "reports")
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    try:
        got = dict(con.sql("SELECT source_file, rows_dst_guessed FROM raw.ingested_files").fetchall())
        assert got == {"syslog/2026-11-01/gpu009.log": 10, "syslog/2026-11-01/gpu001.log": 0}
        md = render_nightly_report(con, tmp_path / "out", report_date=date(2026, 11, 1)).markdown.read_text()
        md_next = render_nightly_report(con, tmp_path / "out2", report_date=date(2026, 11, 2)).markdown.read_text()
    finally:
        con.close()
    sentence = ("1 node-log file of 2026-11-01 has lines in the hour the DST change repeated with nothing in the "
                "file to say which pass: read as the first (daylight-time) pass, they may be 1 h early, and so may "
                "incidents, detect and repair times built on them: syslog/2026-11-01/gpu009.log (10) lines "
                "(raw.ingested_files.rows_dst_guessed).")
    assert sentence in " ".join(md.split())
    # The report names the zone the warehouse was built for (marts.fleet_coverage.timezone), and the odd day.
    assert "Times in UTC; the cluster's time zone is America/Chicago (the local day 2026-11-01 had 25 h)" in md
    assert "DST change repeated" not in md_next
