"""Alert incident scopes on hosts outside the node list and on job hostlists, and the alert data span
(an outside evaluator's probe: a 24-node H100 cluster, alerts in Alertmanager webhook files):

1. an alert about a host-local target (``device``/``mountpoint``: a NIC, a disk, a mount) on a host the
   node list does not hold (``InfinibandPortDown{instance="10.0.4.3:9100", device="mlx5_0"}``) is that
   host's: scope ``service`` (no node), never ``fabric`` (a switch or subnet manager);
2. a job-failure alert's hostlist (``nodelist="gpu[004-006]"``) names the job's nodes, not how far a
   fault reached: without other evidence several nodes are ``nodes`` (spread unknown), with the
   hardware incident it is about the incident's own nodes decide (one node: ``node``), and the
   root-cause text names the hardware incident's nodes; ``rack`` needs separate alerts on several
   nodes of the rack;
3. an always-firing Watchdog re-sent with its first ``startsAt`` (weeks before) never dates the alert
   data's start; a delivery without a logger's time is no earlier than the day its file is named for.

Every expected value is worked out by hand from the inputs below.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models.alerts.clustering import (ALERT_DATA_SPAN_SQL, NOTIFICATION_DAYS_SQL, Topology, alert_levels,
                                             cluster_alerts)
from gpusre.pipelines.runner import run_pipeline
from gpusre.reports.nightly.report import render_nightly_report

T0 = datetime(2026, 11, 23, tzinfo=UTC)
M = timedelta(minutes=1)
RACKS = {"r1": "gpu[001-003]", "r2": "gpu[004-006]"}
SCHEMA = {"alert_id": pl.Int64, "fingerprint": pl.String, "alertname": pl.String, "status": pl.String,
          "severity": pl.String, "node": pl.String, "target": pl.String, "target_label": pl.String,
          "starts_at": pl.Datetime("us", "UTC"), "ends_at": pl.Datetime("us", "UTC"), "labels": pl.String,
          "template_id": pl.Int64, "n_notifications": pl.Int64}


def _alerts(specs: list[tuple[str, str | None, str | None, str | None, datetime, dict]]) -> pl.DataFrame:
    """(alertname, node, target, target_label, start, labels) -> core.alerts rows (resolved 10 min later)."""
    rows = [{"alert_id": i, "fingerprint": f"fp{i:02d}", "alertname": name, "status": "resolved",
             "severity": "critical", "node": node, "target": target, "target_label": label, "starts_at": at,
             "ends_at": at + 10 * M, "labels": json.dumps({"alertname": name, **labels}), "template_id": None,
             "n_notifications": 1}
            for i, (name, node, target, label, at, labels) in enumerate(specs, start=1)]
    return pl.DataFrame(rows, schema=SCHEMA)


def _hw(iid: str, nodes: list[str], at: datetime, component: str = "pcie_bus", scope: str = "node") -> dict:
    return {"incident_id": iid, "component": component, "start_ts": at, "end_ts": at + 5 * M, "nodes": nodes,
            "scope": scope, "leaf_switch": None}


def _hw_frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"incident_id": pl.String, "component": pl.String,
                                      "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"),
                                      "nodes": pl.List(pl.String), "scope": pl.String, "leaf_switch": pl.String})


def _by_candidate(incidents: pl.DataFrame) -> dict[str, dict]:
    return {r["root_cause_candidate"]: r for r in incidents.iter_rows(named=True)}


# -- 1. a host-local target on a host outside the node list --------------------------------------


IB_PORT = ("InfinibandPortDown", None, "10.0.4.3/mlx5_0", "device", T0 + 20 * 60 * M,
           {"instance": "10.0.4.3:9100", "device": "mlx5_0", "port": "1"})
SM_FAILOVER = ("UFMSubnetManagerFailover", None, "ufm01", "instance", T0 + 2 * 60 * M, {"instance": "ufm01:9000"})


def test_an_ib_port_of_an_unresolved_host_is_a_service_incident_not_fabric() -> None:
    topo = Topology.from_groups(racks=RACKS)
    # An NFS mount's device names the shared file system: storage, untouched by the host-local rule.
    nfs = ("NodeFilesystemReadOnly", None, "nfs01:/home", "device", T0 + 8 * 60 * M,
           {"instance": "10.0.4.9:9100", "device": "nfs01:/home", "fstype": "nfs4", "mountpoint": "/home"})
    inc, _ = cluster_alerts(_alerts([SM_FAILOVER, nfs, IB_PORT]), topo)
    got = _by_candidate(inc)
    port = got["InfinibandPortDown on 10.0.4.3/mlx5_0"]
    assert (port["scope"], port["root_level"], port["nodes"]) == ("service", "other", [])
    assert port["root_cause_reason"] == "earliest alert at the most upstream level (other: 10.0.4.3/mlx5_0)"
    # A subnet manager on no node stays the fabric's; the NFS mount stays storage.
    assert (got["UFMSubnetManagerFailover on ufm01"]["scope"], got["UFMSubnetManagerFailover on ufm01"]["root_level"]) \
        == ("fabric", "fabric")
    assert got["NodeFilesystemReadOnly on nfs01:/home"]["scope"] == "storage"
    # The level rule alone (alert_levels, no target) still reads the catalog's fabric rule.
    assert alert_levels(_alerts([IB_PORT])).to_list() == ["fabric"]


def test_the_host_local_rule_follows_the_configured_labels_and_a_resolved_node() -> None:
    # With no host-local labels configured, a device target on no node is as before: the fabric rule.
    inc, _ = cluster_alerts(_alerts([IB_PORT]), host_local_labels=[])
    assert inc.select("scope", "root_level").rows() == [("fabric", "fabric")]
    # The same port once its IP resolves to gpu003: a node alert.
    resolved = ("InfinibandPortDown", "gpu003", "mlx5_0", "device", T0, {"instance": "gpu003:9100", "device": "mlx5_0"})
    inc, _ = cluster_alerts(_alerts([resolved]), Topology.from_groups(racks=RACKS))
    assert inc.select("scope", "root_level", "nodes").rows() == [("node", "node", ["gpu003"])]


# -- 2. a job's hostlist is no rack event ----------------------------------------------------------


JOB_FAILED = ("SlurmJobFailed", None, "gpu[004-006]", "nodelist", T0 + 10 * 60 * M + 5 * M,
              {"nodelist": "gpu[004-006]", "job_id": "1005"})


def test_a_job_hostlist_alert_about_a_one_node_fault_is_a_node_incident() -> None:
    hw = _hw_frame([_hw("inc-gpu005", ["gpu005"], T0 + 10 * 60 * M)])
    inc, _ = cluster_alerts(_alerts([JOB_FAILED]), Topology.from_groups(racks=RACKS), hw)
    row = inc.row(0, named=True)
    # On the job's three nodes (nodes, n_nodes), but the fault it is about is gpu005's alone.
    assert (row["nodes"], row["n_nodes"], row["scope"]) == (["gpu004", "gpu005", "gpu006"], 3, "node")
    assert row["root_cause_reason"] == "hardware incident inc-gpu005 (pcie_bus) on gpu005"
    assert row["root_cause_candidate"] == "SlurmJobFailed on gpu[004-006]"


def test_a_job_hostlist_alert_alone_has_an_unknown_spread() -> None:
    inc, _ = cluster_alerts(_alerts([JOB_FAILED]), Topology.from_groups(racks=RACKS))
    assert inc.select("scope", "n_nodes").rows() == [("nodes", 3)]
    assert inc["root_cause_reason"].to_list() == [
        "earliest alert at the most upstream level (Slurm reaction on gpu[004-006])"]


def test_a_rack_needs_separate_alerts_on_several_of_its_nodes() -> None:
    at = T0 + 10 * 60 * M
    down = [("NodeDown", f"gpu00{k}", None, None, at + k * timedelta(seconds=10), {"instance": f"gpu00{k}:9100"})
            for k in (4, 6)]
    # NodeDown on gpu004 and gpu006 (separate alerts, rack r2) with the job's hostlist alert: a rack.
    inc, _ = cluster_alerts(_alerts([*down, JOB_FAILED]), Topology.from_groups(racks=RACKS))
    assert inc.select("scope", "n_nodes", "n_alerts").rows() == [("rack", 3, 3)]
    # A hardware incident of the whole rack (a PDU trip, scope rack) makes the hostlist alert rack-wide too.
    hw = _hw_frame([_hw("inc-r2", ["gpu004", "gpu005", "gpu006"], at, component="host_power", scope="rack")])
    inc, _ = cluster_alerts(_alerts([JOB_FAILED]), Topology.from_groups(racks=RACKS), hw)
    assert inc.select("scope").rows() == [("rack",)]
    assert inc["root_cause_reason"].to_list() == ["hardware incident inc-r2 (host_power) on rack r2 (gpu[004-006])"]


# -- 3. the alert data span -------------------------------------------------------------------------


def _notifications(rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE SCHEMA raw; CREATE TABLE raw.alert_notifications (source_file VARCHAR, line_no BIGINT, "
                "payload_no INTEGER, received_at TIMESTAMPTZ, alertname VARCHAR, status VARCHAR, "
                "starts_at TIMESTAMPTZ, ends_at TIMESTAMPTZ, format VARCHAR DEFAULT 'alertmanager')")
    # The day rule also reads the truncation rejects (raw.rejects, always created with the raw schema).
    con.execute("CREATE TABLE raw.rejects (source_file VARCHAR, source_kind VARCHAR, line_no BIGINT, raw VARCHAR, "
                "error VARCHAR, rejected_at TIMESTAMPTZ)")
    con.executemany("INSERT INTO raw.alert_notifications (source_file, line_no, payload_no, received_at, alertname, "
                    "status, starts_at, ends_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return con


def _t(day: int, h: int = 0, m: int = 0, s: int = 0) -> datetime:
    return datetime(2026, 11, day, h, m, s, tzinfo=UTC)


def test_a_watchdog_never_dates_the_start_and_a_dated_file_bounds_its_deliveries() -> None:
    con = _notifications([
        # 11-23 file: the Watchdog (started 11-01) first, then an Xid at 06:00:45 -> delivered no earlier
        # than 11-23 00:00 (the file's day), not 11-01.
        ("alerts/2026-11-23.jsonl", 1, 1, None, "Watchdog", "firing", _t(1), None),
        ("alerts/2026-11-23.jsonl", 2, 1, None, "DCGMXidErrors", "firing", _t(23, 6, 0, 45), None),
        # 11-24 file: a repeat of the 11-23 alert (shows 11-23 06:00:45: delivered no earlier than 11-24
        # 00:00) and its resolve, endsAt 11-24 11:30: the last delivery (no data's end here: the file's
        # day is not extended, see tests/test_alert_span_file_day.py).
        ("alerts/2026-11-24.jsonl", 1, 1, None, "DCGMXidErrors", "firing", _t(23, 6, 0, 45), None),
        ("alerts/2026-11-24.jsonl", 2, 1, None, "DCGMXidErrors", "resolved", _t(23, 6, 0, 45), _t(24, 11, 30)),
        # No date in the name, meta-alerts only: no known delivery time, dates nothing.
        ("alerts/webhook.log", 1, 1, None, "DeadMansSwitch", "firing", _t(2), None),
    ])
    assert con.sql(ALERT_DATA_SPAN_SQL).fetchall() == [(_t(23), _t(24, 11, 30))]
    days = {d.isoformat(): (n, k) for d, n, k, *_ in con.sql(NOTIFICATION_DAYS_SQL).fetchall()}
    assert days == {"2026-11-23": (2, 2), "2026-11-24": (2, 2)}
    # A logger's time still wins (a Watchdog received 11-22 23:59:30 in the 11-23 file) ...
    con.execute("INSERT INTO raw.alert_notifications (source_file, line_no, payload_no, received_at, alertname, status, "
                "starts_at) VALUES ('alerts/2026-11-23.jsonl', 3, 1, TIMESTAMPTZ '2026-11-22 23:59:30+00', 'Watchdog', "
                "'firing', TIMESTAMPTZ '2026-11-01 00:00:00+00')")
    assert con.sql(ALERT_DATA_SPAN_SQL).fetchall() == [(_t(22, 23, 59, 30), _t(24, 11, 30))]
    # ... and without a dated name a real alert's start dates its delivery, a Watchdog's never.
    con.execute("DELETE FROM raw.alert_notifications")
    con.executemany("INSERT INTO raw.alert_notifications (source_file, line_no, payload_no, received_at, alertname, "
                    "status, starts_at, ends_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
                        ("alerts/webhook.log", 1, 1, None, "Watchdog", "firing", _t(1), None),
                        ("alerts/webhook.log", 1, 1, None, "NodeDown", "firing", _t(23, 5), None),
                        ("alerts/webhook.log", 2, 1, None, "Watchdog", "firing", _t(1), None)])
    assert con.sql(ALERT_DATA_SPAN_SQL).fetchall() == [(_t(23, 5), _t(23, 5))]


# -- end to end: webhook files -> warehouse -> marts and the nightly report ---------------------------

CLUSTER_YAML = """cluster: tiny
timezone: UTC
nodes: "gpu[001-006]"
gpus_per_node: 8
gpu_type: h100
racks: {r1: "gpu[001-003]", r2: "gpu[004-006]"}
"""
SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|"
                "End|Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")
XID79 = "kernel: NVRM: Xid (PCI:0000:9b:00): 79, pid=1912, name=python, GPU has fallen off the bus."


def _payload(status: str, labels: dict, fp: str, start: str, end: str = "0001-01-01T00:00:00Z") -> str:
    """One Alertmanager webhook body (version 4) of one alert, as a receiver appends it to a file."""
    return json.dumps({"receiver": "sre", "status": status, "alerts": [
        {"status": status, "labels": labels, "annotations": {"summary": labels["alertname"]}, "startsAt": start,
         "endsAt": end, "generatorURL": "http://prom:9090/graph", "fingerprint": fp}],
        "groupLabels": {"alertname": labels["alertname"]}, "commonLabels": labels, "commonAnnotations": {},
        "externalURL": "http://am:9093", "version": "4", "groupKey": f'{{}}:{{alertname="{labels["alertname"]}"}}',
        "truncatedAlerts": 0})


def _landing(root: Path) -> Path:
    """Two days, six nodes (racks r1 gpu[001-003], r2 gpu[004-006]). Node logs: Xid 79 on gpu005 11-24
    10:00 (killing job 1005 on gpu[004-006]). Alerts, no logger prefix: each file opens with the Watchdog
    (startsAt 11-01); 11-23 20:00:30 InfinibandPortDown on 10.0.4.3 (an IP, no node) port mlx5_0;
    11-24 10:05 SlurmJobFailed nodelist gpu[004-006], resolved 10:30 (the last delivery)."""
    landing = root / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text(CLUSTER_YAML)
    for day in (23, 24):
        folder = landing / "syslog" / f"2026-11-{day}"
        folder.mkdir(parents=True)
        for n in range(1, 7):
            node = f"gpu{n:03d}"
            lines = [(f"{h:02d}:30:00", "CRON[200]: (root) CMD (/usr/lib64/sa/sa1 1 1)") for h in range(24)]
            if (day, node) == (24, "gpu005"):
                lines.append(("10:00:00", XID79))
            (folder / f"{node}.log").write_text("".join(
                f"2026-11-{day}T{hms}.000000+00:00 {node} {msg}\n" for hms, msg in sorted(lines)))
    (landing / "sacct" / "sacct_2026-11-24.psv").write_text("\n".join([
        SACCT_HEADER,
        "1005|1005|train|dave|1004|dave|ml|gpu|normal|FAILED|1:0|2026-11-24T08:00:00|2026-11-24T08:00:00|"
        "2026-11-24T08:00:00|2026-11-24T10:01:00|02:01:00|12:00:00|3|336|billing=336,cpu=336,gres/gpu:h100=24,"
        "mem=6000G,node=3|gpu[004-006]|"]) + "\n")
    watchdog = {"alertname": "Watchdog", "severity": "none"}
    port = {"alertname": "InfinibandPortDown", "instance": "10.0.4.3:9100", "device": "mlx5_0", "port": "1",
            "severity": "critical"}
    job = {"alertname": "SlurmJobFailed", "nodelist": "gpu[004-006]", "job_id": "1005", "severity": "warning"}
    (landing / "alerts").mkdir()
    (landing / "alerts" / "2026-11-23.jsonl").write_text("\n".join([
        _payload("firing", watchdog, "00000000000wdog0", "2026-11-01T00:00:00Z"),
        _payload("firing", port, "00000000000port0", "2026-11-23T20:00:30Z")]) + "\n")
    (landing / "alerts" / "2026-11-24.jsonl").write_text("\n".join([
        _payload("firing", watchdog, "00000000000wdog0", "2026-11-01T00:00:00Z"),
        _payload("firing", job, "000000000000job0", "2026-11-24T10:05:00Z"),
        _payload("resolved", job, "000000000000job0", "2026-11-24T10:05:00Z", "2026-11-24T10:30:00Z")]) + "\n")
    return landing


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scopes_hosts")
    run_pipeline(_landing(root), root / "w.duckdb", root / "reports")
    return root / "w.duckdb"


def test_e2e_scopes_span_and_freshness(warehouse: Path, tmp_path: Path) -> None:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        assert con.sql("SELECT node, target, target_label FROM core.alerts WHERE alertname = 'InfinibandPortDown'"
                       ).fetchall() == [(None, "10.0.4.3/mlx5_0", "device")]
        (hw,), = con.sql("SELECT incident_id FROM marts.hw_incidents WHERE nodes = ['gpu005']").fetchall()
        inc = {r[0]: r[1:] for r in con.sql(
            "SELECT root_cause_candidate, scope, nodes, root_cause_reason FROM marts.alert_incidents").fetchall()}
        assert inc == {
            "InfinibandPortDown on 10.0.4.3/mlx5_0": (
                "service", [], "earliest alert at the most upstream level (other: 10.0.4.3/mlx5_0)"),
            "SlurmJobFailed on gpu[004-006]": (
                "node", ["gpu004", "gpu005", "gpu006"], f"hardware incident {hw} (pcie_bus) on gpu005"),
        }
        # The Watchdog's start (11-01) dates nothing: its first delivery is in the file of 11-23. The
        # file of 11-24 covers that day, up to the data's end: the node logs' last line, 11-24 23:30.
        assert con.sql("SELECT first_ts, last_ts, span_source FROM marts.alert_data_span").fetchall() == [
            (_t(23), _t(24, 23, 30), "deliveries")]
        fresh = con.sql("SELECT first_record_ts, last_record_ts, n_empty_days FROM marts.data_freshness "
                        "WHERE source_kind = 'alerts'").fetchall()
        # Records: the alerts' starts (20:00:30, 10:05 twice), the Watchdogs at their files' day.
        assert fresh == [(_t(23), _t(24, 10, 5), 0)]
        assert con.sql("SELECT day, notifications FROM marts.alert_daily ORDER BY day").fetchall() == [
            (date(2026, 11, 23), 2), (date(2026, 11, 24), 3)]
        md = render_nightly_report(con, tmp_path, report_date=date(2026, 11, 24)).markdown.read_text()
        md23 = render_nightly_report(con, tmp_path, report_date=date(2026, 11, 23)).markdown.read_text()
    finally:
        con.close()
    assert "2026-11-01" not in md
    assert "| Alerts | 2 | 5 | 2026-11-23 00:00 | 2026-11-24 10:05 | 0 |" in md
    assert f"hardware incident {hw} (pcie_bus) on gpu005" in md
    assert "2026-11-01" not in md23
    port = next(line for line in md23.splitlines() if "InfinibandPortDown on 10.0.4.3/mlx5_0 —" in line)
    assert "service (no node)" in port and "fabric" not in port
