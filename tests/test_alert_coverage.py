"""Alert coverage is judged over the span of the alert *data* — first to last webhook delivery,
resolves and repeats included — not over the span of alert *starts*.

A resolve that arrives hours after the last alert fired shows Alertmanager was working until then:
a hardware incident in between that no alert saw is missing coverage, and the verdict on it must not
wait for (or flip on) the next unrelated alert. Incidents outside the span stay unjudged, and the
nightly report says so and gives the span. The nightly alert-incident section says when an incident
that started on an earlier day ended. All values below are hand-computed from the inputs.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models.alerts.clustering import (ALERT_DATA_SPAN_SQL, alert_coverage, alert_data_span, alert_data_span_sql,
                                             alert_marts)
from gpusre.pipelines.runner import run_pipeline
from gpusre.reports.nightly.report import render_nightly_report

UTC = timezone.utc


def _t(day: int, hh: int, mm: int = 0, ss: int = 0) -> datetime:
    return datetime(2026, 11, day, hh, mm, ss, tzinfo=UTC)


def _alerts(rows: list[tuple[str, str, datetime, datetime | None]]) -> pl.DataFrame:
    """core.alerts-shaped rows: (alertname, node, starts_at, ends_at)."""
    return pl.DataFrame(
        [{"alert_id": k + 1, "fingerprint": f"fp{k}", "alertname": name, "status": "resolved" if end else "firing",
          "severity": "critical", "node": node, "target": node, "target_label": "instance", "starts_at": start,
          "ends_at": end, "labels": json.dumps({"alertname": name, "instance": f"{node}:9400"}),
          "template_id": None, "n_notifications": 2} for k, (name, node, start, end) in enumerate(rows)],
        schema={"alert_id": pl.Int64, "fingerprint": pl.String, "alertname": pl.String, "status": pl.String,
                "severity": pl.String, "node": pl.String, "target": pl.String, "target_label": pl.String,
                "starts_at": pl.Datetime("us", "UTC"), "ends_at": pl.Datetime("us", "UTC"), "labels": pl.String,
                "template_id": pl.Int64, "n_notifications": pl.Int64})


def _hw(rows: list[tuple[str, str, datetime, str]]) -> pl.DataFrame:
    """marts.hw_incidents-shaped rows: (incident_id, component, start_ts, node), each lasting 5 min."""
    return pl.DataFrame(
        [{"incident_id": i, "component": c, "cause_class": "hardware", "severity": "high", "start_ts": t,
          "end_ts": t + timedelta(minutes=5), "nodes": [n], "scope": "node", "leaf_switch": None}
         for i, c, t, n in rows],
        schema={"incident_id": pl.String, "component": pl.String, "cause_class": pl.String, "severity": pl.String,
                "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"),
                "nodes": pl.List(pl.String), "scope": pl.String, "leaf_switch": pl.String})


# One alert, GPUXidError on gpu001 from 10:00:30 (about inc-xid79), resolved at 18:00 on 11-02.
# Hardware incidents: gpu002 link down 02:00 (before any alert data), the Xid 79 at 10:00 (covered),
# gpu002 Xid 48 at 15:00 (after the last alert *start*, before the resolve: judged, no alert),
# gpu003 Xid 48 at 23:00 (after the last delivery: not judged).
ALERTS = _alerts([("GPUXidError", "gpu001", _t(2, 10, 0, 30), _t(2, 18))])
HW = _hw([("inc-link", "network", _t(2, 2), "gpu002"), ("inc-xid79", "gpu", _t(2, 10), "gpu001"),
          ("inc-dbe", "gpu_memory", _t(2, 15), "gpu002"), ("inc-late", "gpu_memory", _t(2, 23), "gpu003")])


def _judged(cov: pl.DataFrame) -> dict[str, tuple[bool, int]]:
    return {r["incident_id"]: (r["covered"], r["n_alerts"]) for r in cov.iter_rows(named=True)}


def test_span_runs_to_the_last_delivery_not_the_last_alert_start() -> None:
    # Deliveries: the firing at 10:00:30, the resolve showing 18:00 -> span 10:00:30 .. 18:00.
    span = (_t(2, 10, 0, 30), _t(2, 18))
    cov = alert_coverage(ALERTS, HW, data_span=span)
    assert _judged(cov) == {"inc-xid79": (True, 1), "inc-dbe": (False, 0)}
    marts = alert_marts(ALERTS, hw_incidents=HW, data_span=span)
    assert marts.hw_without_alert["incident_id"].to_list() == ["inc-dbe"]
    assert marts.data_span.rows() == [(_t(2, 10, 0, 30), _t(2, 18), "deliveries")]
    # Without the deliveries: the alerts' own times (here the same instants), said so; no alerts: no row.
    assert alert_marts(ALERTS, hw_incidents=HW).data_span.rows() == [(_t(2, 10, 0, 30), _t(2, 18), "alert_times")]
    assert alert_marts(ALERTS.clear(), hw_incidents=HW).data_span.is_empty()


def test_without_notifications_the_span_ends_at_the_last_alert_end() -> None:
    # No delivery times: the alerts' own times — first start 10:00:30, latest start or end 18:00.
    assert alert_data_span(ALERTS) == (_t(2, 10, 0, 30), _t(2, 18))
    assert _judged(alert_coverage(ALERTS, HW)) == {"inc-xid79": (True, 1), "inc-dbe": (False, 0)}
    firing = ALERTS.with_columns(pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("ends_at"))
    assert alert_data_span(firing) == (_t(2, 10, 0, 30), _t(2, 10, 0, 30))
    assert alert_data_span(ALERTS.clear()) == (None, None)


def test_a_later_unrelated_alert_does_not_change_the_verdict() -> None:
    # The night after, a file-system alert on gpu004 at 11-03 10:00 (resolved 10:20) extends the span
    # to 11-03 10:20: inc-late (11-02 23:00) is now judged; the earlier verdicts stay as they were.
    span = (_t(2, 10, 0, 30), _t(2, 18))
    before = _judged(alert_coverage(ALERTS, HW, data_span=span))
    more = pl.concat([ALERTS, _alerts([("NodeFilesystemAlmostFull", "gpu004", _t(3, 10), _t(3, 10, 20))])
                      .with_columns(pl.lit(2, dtype=pl.Int64).alias("alert_id"))])
    after = _judged(alert_coverage(more, HW, data_span=(_t(2, 10, 0, 30), _t(3, 10, 20))))
    assert after == {**before, "inc-late": (False, 0)}


def test_alert_data_span_sql_reads_receipts_resolves_and_repeats() -> None:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE SCHEMA raw")
    con.execute("""CREATE TABLE raw.alert_notifications (source_file VARCHAR, line_no BIGINT, payload_no INTEGER,
                   received_at TIMESTAMPTZ, status VARCHAR, starts_at TIMESTAMPTZ, ends_at TIMESTAMPTZ,
                   alertname VARCHAR DEFAULT 'GPUXidError')""")
    rows = [
        # line 1: firing, no logger time -> shown 10:00:30
        ("a/2026-11-02.jsonl", 1, 1, None, "firing", _t(2, 10, 0, 30), None),
        # line 2: one payload of two alerts, a resolved one (end 18:00) and a firing repeat -> 18:00
        ("a/2026-11-02.jsonl", 2, 1, None, "resolved", _t(2, 9), _t(2, 18)),
        ("a/2026-11-02.jsonl", 2, 1, None, "firing", _t(2, 10, 0, 30), None),
        # a repeat received (logger time) at 20:15 of an alert started at 10:00:30 -> 20:15
        ("a/fluentd.log", 7, 1, _t(2, 20, 15), "firing", _t(2, 10, 0, 30), None),
    ]
    con.executemany("INSERT INTO raw.alert_notifications (source_file, line_no, payload_no, received_at, status, "
                    "starts_at, ends_at) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    first, last = con.sql(ALERT_DATA_SPAN_SQL).fetchall()[0]
    assert (first, last) == (_t(2, 10, 0, 30), _t(2, 20, 15))
    # With the data's end at 23:00, the file of 11-02 covers that day up to it; at 19:00, the receipt
    # at 20:15 still ends the span (the cap never cuts a delivery).
    for end, expected in (("23:00", _t(2, 23)), ("19:00", _t(2, 20, 15))):
        capped = alert_data_span_sql(f"TIMESTAMPTZ '2026-11-02 {end}:00+00'")
        assert con.sql(capped).fetchall()[0] == (_t(2, 10, 0, 30), expected)
    con.execute("DELETE FROM raw.alert_notifications")
    assert con.sql(ALERT_DATA_SPAN_SQL).fetchall()[0] == (None, None)


# -- end to end: landing -> warehouse -> nightly report -----------------------------------------------

CLUSTER_YAML = """cluster: tiny
timezone: UTC
nodes: "gpu[001-004]"
gpus_per_node: 8
gpu_type: h100
racks: {r01: "gpu[001-004]"}
leaf_switches: {leaf01: "gpu[001-004]"}
"""
SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|"
                "End|Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")


def _sacct_line(job: int, node: str, start: str, end: str, elapsed: str) -> str:
    return (f"{job}|{job}|nb|dave|1004|dave|interactive|gpu|normal|COMPLETED|0:0|{start}|{start}|{start}|{end}|"
            f"{elapsed}|04:00:00|1|112|billing=112,cpu=112,gres/gpu:h100=8,mem=2000G,node=1|{node}|")


def _payload(status: str, name: str, node: str, fp: str, start: str, end: str) -> str:
    labels = {"alertname": name, "instance": f"{node}:9400", "severity": "critical", "job": "dcgm"}
    return json.dumps({"version": "4", "groupKey": f"{{}}:{{alertname=\"{name}\"}}", "truncatedAlerts": 0,
                       "status": status, "receiver": "sre-pager", "groupLabels": {"alertname": name},
                       "commonLabels": labels, "commonAnnotations": {"summary": f"{name} on {node}"},
                       "externalURL": "http://am:9093",
                       "alerts": [{"status": status, "labels": labels, "annotations": {"summary": f"{name} on {node}"},
                                   "startsAt": start, "endsAt": end, "generatorURL": "http://prom:9090",
                                   "fingerprint": fp}]})


def _landing(root: Path, *, resolve: bool = True) -> Path:
    """Two days, four nodes. Node logs: gpu002 IB link down 11-02 02:00 (before any alert data),
    gpu001 Xid 79 11-02 10:00, gpu002 Xid 48 11-02 15:00, gpu003 Xid 48 11-03 05:00. Alerts: the
    Xid 79 fires at 10:00:30 (file of 11-02) and its resolve, endsAt 11-03 02:00, arrives in the
    file of 11-03 — the last delivery; that file covers 11-03: the alert data ends at the data's end,
    the node logs' last line 11-03 23:40:07."""
    landing = root / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text(CLUSTER_YAML)
    events = {
        (2, "gpu002"): [("02:00:00", "kernel: mlx5_core 0000:ab:00.0 mlx5_0: Port: 1 Link DOWN"),
                        ("02:20:00", "kernel: mlx5_core 0000:ab:00.0 mlx5_0: Port: 1 Link ACTIVE"),
                        ("15:00:00", "kernel: NVRM: Xid (PCI:0000:1b:00): 48, pid=4821, name=python, An uncorrectable "
                                     "double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, "
                                     "subpartition 0.")],
        (2, "gpu001"): [("10:00:00", "kernel: NVRM: Xid (PCI:0000:9b:00): 79, pid=1912, name=python, GPU has fallen "
                                     "off the bus.")],
        (3, "gpu003"): [("05:00:00", "kernel: NVRM: Xid (PCI:0000:1b:00): 48, pid=77, name=python, An uncorrectable "
                                     "double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, "
                                     "subpartition 0.")],
    }
    for day in (2, 3):
        folder = landing / "syslog" / f"2026-11-0{day}"
        folder.mkdir(parents=True)
        for n in range(1, 5):
            node = f"gpu{n:03d}"
            lines = [(f"{h:02d}:{m:02d}:07", "CRON[200]: (root) CMD (/usr/lib64/sa/sa1 1 1)")
                     for h in range(24) for m in (0, 20, 40)] + events.get((day, node), [])
            (folder / f"{node}.log").write_text("".join(
                f"2026-11-0{day}T{hms}.000000+00:00 {node} {msg}\n" for hms, msg in sorted(lines)))
        (landing / "sacct" / f"sacct_2026-11-0{day}.psv").write_text("\n".join(
            [SACCT_HEADER, _sacct_line(100 + day, "gpu004", f"2026-11-0{day}T01:00:00", f"2026-11-0{day}T02:00:00",
                                       "01:00:00")]) + "\n")
    (landing / "alerts").mkdir()
    (landing / "alerts" / "2026-11-02.jsonl").write_text(
        _payload("firing", "GPUXidError", "gpu001", "f1f1f1f1f1f1f1f1", "2026-11-02T10:00:30Z",
                 "0001-01-01T00:00:00Z") + "\n")
    if resolve:
        (landing / "alerts" / "2026-11-03.jsonl").write_text(
            _payload("resolved", "GPUXidError", "gpu001", "f1f1f1f1f1f1f1f1", "2026-11-02T10:00:30Z",
                     "2026-11-03T02:00:00Z") + "\n")
    return landing


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("coverage")
    run_pipeline(_landing(root), root / "w.duckdb", root / "reports")
    return root / "w.duckdb"


def _lead(md: str, heading: str) -> str:
    block = md.split(f"## {heading}", 1)[1]
    return next(line for line in block.splitlines()[1:] if line.strip())


def test_e2e_coverage_mart_and_nightly_text(warehouse: Path, tmp_path: Path) -> None:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        hw = dict(con.sql("SELECT nodes[1] || ' ' || component, incident_id FROM marts.hw_incidents").fetchall())
        assert sorted(hw) == ["gpu001 pcie_bus", "gpu002 gpu_memory", "gpu002 network", "gpu003 gpu_memory"]
        cov = {r[0]: r[1:] for r in con.sql("SELECT incident_id, covered, n_alerts FROM marts.alert_coverage").fetchall()}
        # Judged: the Xid 79 (covered), gpu002's DBE at 15:00, 5 h after the last alert start but
        # before the resolve delivered at 11-03 02:00, and gpu003's DBE at 11-03 05:00: the file of
        # 11-03 covers that day. Not judged: the link down (before the alert data).
        assert cov == {hw["gpu001 pcie_bus"]: (True, 1), hw["gpu002 gpu_memory"]: (False, 0),
                       hw["gpu003 gpu_memory"]: (False, 0)}
        # The span it was judged in: the firing delivered 11-02 10:00:30 to the end of 11-03, the day
        # of the resolve's file, capped at the data's end (the node logs' last line, 23:40:07).
        assert con.sql("SELECT first_ts, last_ts, span_source FROM marts.alert_data_span").fetchall() == [
            (_t(2, 10, 0, 30), _t(3, 23, 40, 7), "deliveries")]
        inc = con.sql("SELECT incident_id, ongoing, start_ts, end_ts FROM marts.alert_incidents").fetchall()
        assert [(i[1], i[2], i[3]) for i in inc] == [(False, _t(2, 10, 0, 30), _t(3, 2))]
        md = render_nightly_report(con, tmp_path, report_date=date(2026, 11, 3)).markdown.read_text()
        md2 = render_nightly_report(con, tmp_path, report_date=date(2026, 11, 2)).markdown.read_text()
    finally:
        con.close()
    hygiene = _lead(md, "Alert hygiene")
    assert ("2 of 3 hardware incidents in 2026-11-02 … 2026-11-03 had no alert on their nodes "
            "(missing coverage: GPU memory 2).") in hygiene
    assert ("Alert coverage is judged on the hardware incidents that started while alert notifications were "
            "arriving, 2026-11-02 10:00 UTC … 2026-11-03 23:40 UTC") in hygiene
    assert ("and on any an alert was about; not judged, the alert data not reaching them: 1 that started "
            "before the first delivery.") in hygiene
    # The incident started 11-02 and ended 11-03: the 11-03 report says so (the 11-02 one does not).
    resolved = (f"1 alert incident that started earlier ended on 2026-11-03: \u201cGPUXidError on gpu001\u201d "
                f"({inc[0][0]}, 2026-11-02 10:00 UTC \u2192 2026-11-03 02:00 UTC, 16.0 h).")
    assert resolved in _lead(md, "Alert incidents of 2026-11-03")
    assert "started earlier ended" not in _lead(md2, "Alert incidents of 2026-11-02")


def test_e2e_incidents_after_the_alert_data_stay_unjudged(tmp_path: Path) -> None:
    # Only the firing notification of 10:00:30 was delivered (the resolve has not arrived), in the file
    # of 11-02: the alert data covers 11-02 10:00:30 to 11-03 00:00. Judged: the Xid 79 its alert was
    # about (covered) and gpu002's DBE at 15:00 (missed). Not judged: the link down before it and
    # gpu003's DBE at 11-03 05:00 after it — no verdict either way.
    run_pipeline(_landing(tmp_path, resolve=False), tmp_path / "w.duckdb", tmp_path / "reports")
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        cov = con.sql("SELECT h.nodes[1] || ' ' || h.component, c.covered, c.n_alerts FROM marts.alert_coverage c "
                      "JOIN marts.hw_incidents h USING (incident_id)").fetchall()
        assert cov == [("gpu001 pcie_bus", True, 1), ("gpu002 gpu_memory", False, 0)]
        assert con.sql("SELECT count(*) FROM marts.hw_incidents_without_alert").fetchall()[0][0] == 1
        # Still firing at the end of the alert data, the end of its file's day.
        ongoing = con.sql("SELECT ongoing, end_ts FROM marts.alert_incidents").fetchall()
        assert ongoing == [(True, _t(3, 0))]
        md = render_nightly_report(con, tmp_path / "out", report_date=date(2026, 11, 3)).markdown.read_text()
    finally:
        con.close()
    hygiene = _lead(md, "Alert hygiene")
    assert ("1 of 2 hardware incidents in 2026-11-02 … 2026-11-03 had no alert on their nodes "
            "(missing coverage: GPU memory 1). Alert coverage is judged on the hardware incidents that started "
            "while alert notifications were arriving, 2026-11-02 10:00 UTC … 2026-11-03 00:00 UTC") in hygiene
    assert ("not judged, the alert data not reaching them: 1 that started before the first delivery and 1 that "
            "started after the end of the alert data.") in hygiene
    # Still firing at the end of the data: not listed as ended.
    assert "started earlier ended" not in _lead(md, "Alert incidents of 2026-11-03")
