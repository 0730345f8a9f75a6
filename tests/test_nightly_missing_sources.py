"""A source that has nothing for the report day makes its figures unknown, said at the top and in
"Last night", never "none" / "0" as fact; the nightly never re-renders an older day in silence.

Hand-made landings (cluster gpu[01-04] x 8 GPUs, UTC), days D1 = 2026-11-10 and D2 = 2026-11-11:

=====  =====  ======================  =====================  =========================================
job    node   run (UTC)               state                  truth
=====  =====  ======================  =====================  =========================================
2001   gpu01  D1 01:00 - D1 23:30     COMPLETED
2002   gpu02  D1 10:00 - D1 12:00     FAILED 1:0             Xid 79 on gpu02 at D1 11:59 (node log)
2003   gpu03  D2 04:00 - D2 06:00     FAILED 1:0             cause unseen (no D2 line on gpu03)
2004   gpu01  D2 00:30 - D2 23:50     COMPLETED              accounting covers D2 to 23:50 (> 23:00)
=====  =====  ======================  =====================  =========================================

Every node logs 00:01 and 23:58 on the days it has a log file. Alerts: one on gpu02 (D1 11:59), one on
gpu03 (D2 05:59).

* ``stop``: D1 node logs only, both days of the rest. D2 is covered by the accounting (23:50, 10 min
  before midnight), so D2 is the report day, with a warning that the node logs have nothing for it;
  "Last night" says hardware incidents unknown, and the lead cannot say 0 jobs killed (2003 unknown).
* ``quiet``: node logs D2 from gpu01, gpu02, gpu04 only (gpu03 ran 2003 and logged nothing), alerts D1
  only: "none began on the 3 nodes that logged; 1 node … logged nothing (gpu03)"; alert incidents unknown.
* ``acct``: sacct only (no syslog/, alerts/, slurm_events/ folders): 2002 and 2003 failed for an unknown
  reason; the suspect card and the taxonomy say unknown; the run summary says the folders are missing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from gpusre.models.warehouse import connect
from gpusre.reports.nightly import build_nightly_context

D1, D2 = date(2026, 11, 10), date(2026, 11, 11)
HEADER = "JobID|State|ExitCode|Submit|Start|End|Elapsed|AllocTRES|NNodes|NodeList\n"
SACCT = {
    D1: ["2001|COMPLETED|0:0|2026-11-10T00:55:00|2026-11-10T01:00:00|2026-11-10T23:30:00|22:30:00|gres/gpu=8|1|gpu01",
         "2002|FAILED|1:0|2026-11-10T09:55:00|2026-11-10T10:00:00|2026-11-10T12:00:00|02:00:00|gres/gpu=8|1|gpu02"],
    D2: ["2003|FAILED|1:0|2026-11-11T03:55:00|2026-11-11T04:00:00|2026-11-11T06:00:00|02:00:00|gres/gpu=8|1|gpu03",
         "2004|COMPLETED|0:0|2026-11-11T00:25:00|2026-11-11T00:30:00|2026-11-11T23:50:00|23:20:00|gres/gpu=8|1|gpu01"],
}
XID = ("{m} 11:59:00 gpu02 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, "
       "GPU has fallen off the bus.\n")


def _log(node: str, day: date, extra: str = "") -> str:
    m = f"Nov {day.day}"
    return (f"{m} 00:01:02 {node} CRON[2002]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)\n"
            + extra.format(m=m)
            + f"{m} 23:58:02 {node} CRON[3002]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)\n")


def _alert(node: str, name: str, start: str) -> str:
    labels = {"alertname": name, "instance": f"{node}:9400", "Hostname": node, "severity": "critical"}
    return json.dumps({"version": "4", "status": "firing", "receiver": "sre", "groupLabels": {"alertname": name},
                       "commonLabels": labels, "alerts": [{"status": "firing", "labels": labels,
                                                           "annotations": {"summary": f"{name} on {node}"},
                                                           "startsAt": start, "endsAt": "0001-01-01T00:00:00Z",
                                                           "fingerprint": f"fp{node}{name}"}]}) + "\n"


ALERTS = {D1: _alert("gpu02", "DCGMXidError", "2026-11-10T11:59:00Z"),
          D2: _alert("gpu03", "InfinibandPortDown", "2026-11-11T05:59:00Z")}


def _landing(root: Path, *, logs: dict[date, list[str]], alert_days: list[date]) -> Path:
    root.mkdir(parents=True)
    (root / "cluster.yaml").write_text("cluster: t\ntimezone: UTC\nnodes: \"gpu[01-04]\"\ngpus_per_node: 8\n")
    (root / "sacct").mkdir()
    for day, rows in SACCT.items():
        (root / "sacct" / f"sacct_{day}.psv").write_text(HEADER + "\n".join(rows) + "\n")
    for day, nodes in logs.items():
        (root / "syslog" / str(day)).mkdir(parents=True)
        for node in nodes:
            extra = XID if (node, day) == ("gpu02", D1) else ""
            (root / "syslog" / str(day) / f"{node}.log").write_text(_log(node, day, extra))
    if alert_days:
        (root / "alerts").mkdir()
        for day in alert_days:
            (root / "alerts" / f"{day}.jsonl").write_text(ALERTS[day])
    return root


def _gpusre(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpusre.pipelines.cli", *args], capture_output=True, text=True,
                          timeout=900)


def _run(tmp: Path, landing: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    wh = tmp / "w.duckdb"
    proc = _gpusre("run", "--landing", str(landing), "--warehouse", str(wh), "--reports", str(tmp / "reports"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return wh, proc


def _context(wh: Path, day: date | None = None) -> dict:
    con = connect(wh, read_only=True)
    try:
        return build_nightly_context(con, report_date=day)
    finally:
        con.close()


def _entries(ctx: dict) -> dict[str, str]:
    return {e["term"]: e["text"] for e in ctx["by_key"]["last_night"].entries}


def _card(ctx: dict, label: str) -> dict:
    return next(c for c in ctx["by_key"]["headline"].cards if c["label"] == label)


@pytest.fixture(scope="module")
def stop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("stop")
    landing = _landing(tmp / "landing", logs={D1: ["gpu01", "gpu02", "gpu03", "gpu04"]}, alert_days=[D1, D2])
    return _run(tmp, landing)[0]


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("quiet")
    landing = _landing(tmp / "landing", logs={D1: ["gpu01", "gpu02", "gpu03", "gpu04"],
                                              D2: ["gpu01", "gpu02", "gpu04"]}, alert_days=[D1])
    return _run(tmp, landing)[0]


@pytest.fixture(scope="module")
def acct(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    tmp = tmp_path_factory.mktemp("acct")
    landing = _landing(tmp / "landing", logs={}, alert_days=[])
    wh, proc = _run(tmp, landing)
    return wh, proc.stderr + proc.stdout, tmp


def test_a_day_the_accounting_covers_is_the_report_day_when_the_logs_stopped(stop: Path) -> None:
    con = connect(stop, read_only=True)
    try:
        rows = con.sql("SELECT day, covered_hours, partial, accounting_hours, accounting_complete "
                       "FROM marts.day_coverage ORDER BY day").fetchall()
    finally:
        con.close()
    # D2: the node logs end at D1 23:58 (counted to midnight): nothing of D2 is covered by every source,
    # but the accounting's last record (2004 ends 23:50) is 10 min before midnight: complete.
    assert rows == [(D1, 24.0, False, 24.0, True), (D2, 0.0, True, 24.0, True)]
    ctx = _context(stop)
    assert ctx["meta"]["report_date"] == "2026-11-11"
    assert ctx["warnings"][0] == (
        "No node logs for 2026-11-11 (the last record is on 2026-11-10): hardware incidents, node events and the "
        "cause of failed jobs are unknown for that day, not zero — land the missing files and run again.")


def test_the_slo_review_window_ends_on_the_nightlys_day(stop: Path) -> None:
    """One rule for "the last complete day" in both reports: the SLO review's default window ends where the
    nightly's default day is (D2, which the accounting covers though the node logs stopped), not a day earlier."""
    from gpusre.reports.nightly.meta import nightly_report_day
    from gpusre.reports.slo.window import default_window

    con = connect(stop, read_only=True)
    try:
        assert default_window(con, days=7)[1] == nightly_report_day(con) == D2
    finally:
        con.close()


def test_last_night_says_unknown_where_the_node_logs_stopped(stop: Path) -> None:
    ctx = _context(stop)
    sec = ctx["by_key"]["last_night"]
    # 2003 failed with no node log of D2: the count of jobs the infrastructure killed is unknown.
    assert sec.lead == ("On 2026-11-11: hardware incidents unknown, an unknown number of jobs killed by the "
                        "infrastructure (1 failed job of unknown cause), 1 alert incident.")
    unknown = "no node log line on 2026-11-11 (the last record is on 2026-11-10): whether one began is unknown"
    entries = _entries(ctx)
    assert entries["Hardware incidents"] == unknown
    assert entries["To do"] == unknown + "."
    assert entries["Nodes failing again"] == unknown
    assert "none began" not in " ".join(entries.values())
    # The whole period's incident (Xid 79 on gpu02, D1) is counted; D2's is unknown.
    assert _card(ctx, "Hardware incidents")["sub"] == "whole period · unknown for 2026-11-11: no node logs that day"


def test_an_older_day_is_never_rendered_in_silence(stop: Path) -> None:
    ctx = _context(stop, D1)  # an explicit --date: the reader's choice, said by the header
    assert ctx["meta"]["report_date"] == "2026-11-10"
    assert not any("No node logs for" in w for w in ctx["warnings"])  # D1 has every source


def test_silent_nodes_and_stopped_alerts(quiet: Path) -> None:
    ctx = _context(quiet)
    assert ctx["meta"]["report_date"] == "2026-11-11"
    assert ("No alert data for 2026-11-11 (the last record is on 2026-11-10): alert incidents are unknown for that "
            "day, not zero — land the missing files and run again.") in ctx["warnings"]
    entries = _entries(ctx)
    assert entries["Hardware incidents"] == ("none began on the 3 nodes that logged; 1 node that ran jobs logged "
                                             "nothing (gpu03): whether one began there is unknown.")
    assert entries["To do"] == ("check the log shipping of the 1 node that logged nothing (gpu03); no hardware "
                                "incident or node failing again on the nodes that logged.")
    assert entries["Nodes failing again"] == "none among the nodes that logged: no hardware incident began there."
    assert entries["Alert incidents"] == ("no alert data for 2026-11-11 (the last record is on 2026-11-10): whether "
                                          "one started is unknown")
    assert ctx["by_key"]["last_night"].lead == (
        "On 2026-11-11: 0 hardware incidents on the nodes that logged (1 logged nothing), an unknown number of jobs "
        "killed by the infrastructure (1 failed job of unknown cause), alert incidents unknown.")


def test_sacct_only_says_unknown_not_zero(acct: tuple[Path, str, Path]) -> None:
    wh, _, _ = acct
    ctx = _context(wh)
    assert ctx["meta"]["report_date"] == "2026-11-11"
    lead = ctx["by_key"]["last_night"].lead
    assert "0 jobs killed" not in lead
    assert "an unknown number of jobs killed by the infrastructure (1 failed job of unknown cause)" in lead
    assert _card(ctx, "Suspect nodes") == {"label": "Suspect nodes", "value": "–", "sub": "unknown: no node logs",
                                           "tone": ""}
    taxonomy = ctx["by_key"]["taxonomy"]
    if not taxonomy.no_data:
        assert "0 incidents" not in taxonomy.lead
        assert "the incidents are unknown (no node logs were loaded" in taxonomy.lead


def test_run_summary_says_a_source_folder_is_missing(acct: tuple[Path, str, Path]) -> None:
    _, out, _ = acct
    assert "syslog: no syslog/ folder in the landing directory: nothing of this source was collected" in out
    assert "alerts: no alerts/ folder in the landing directory" in out
    assert "syslog: 0 new/changed file(s)" not in out


def test_a_date_outside_the_data_is_a_one_line_error(acct: tuple[Path, str, Path]) -> None:
    wh, _, tmp = acct
    proc = _gpusre("report", "nightly", "--warehouse", str(wh), "--out", str(tmp / "o"), "--date", "2020-01-01")
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("gpusre: error: 2020-01-01 is outside the data (2026-11-10 … 2026-11-11): "
                                   "no source has a record that day to report on")
    assert not (tmp / "o").exists()


def test_an_uncreatable_reports_dir_fails_before_the_ingest(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    landing = _landing(tmp_path / "landing", logs={}, alert_days=[])
    proc = _gpusre("run", "--landing", str(landing), "--warehouse", str(tmp_path / "w.duckdb"),
                   "--reports", str(tmp_path / "file" / "reports"))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"gpusre: error: {tmp_path / 'file' / 'reports'}: cannot create the report directory")
    assert not (tmp_path / "w.duckdb").exists()  # nothing was ingested


def test_a_later_day_with_data_is_named_with_its_command() -> None:
    """Node logs and alerts run a day past the accounting (which ends at midnight): the report day is
    the accounting's last day, and the top says which later day has data and how to render it."""
    import duckdb

    from gpusre.reports.nightly.meta import later_data_note

    con = duckdb.connect()
    con.execute("CREATE SCHEMA raw")
    con.execute("CREATE TABLE raw.record_days (source_kind VARCHAR, day DATE, records BIGINT)")
    con.execute("INSERT INTO raw.record_days VALUES ('sacct', '2026-11-10', 5), ('syslog', '2026-11-10', 40), "
                "('syslog', '2026-11-11', 40), ('alerts', '2026-11-11', 2)")
    assert later_data_note(con, D2) == []
    assert later_data_note(con, D1) == [
        "This report is for 2026-11-10, not 2026-11-11, the last day with data (alert data, node logs): no day "
        "after 2026-11-10 is covered completely by Slurm accounting (or, without it, by every dense source). "
        "For 2026-11-11 as it stands: `gpusre report nightly --date 2026-11-11`."]
