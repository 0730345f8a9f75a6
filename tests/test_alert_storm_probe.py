"""Outside probe J (an alert storm over 64 nodes): the findings, each on a small hand-made input in the
real formats, with hand-computed values.

1. A rack's power loss is one alert incident over one ``host_power`` hardware incident per node: its
   blast radius counts the jobs attributed to every one of them (not only the root's, which had none).
2. An ``/api/v2/alerts`` snapshot: an inhibited alert is never the root; an alert a later snapshot of
   the same source no longer shows has ended; a silenced root says so.
3. A snapshot's delivery time is its file name's time (else its latest ``updatedAt``), not the start
   of the oldest alert in it: the span of the alert data starts at the first delivery.
4. Snapshot entries are not webhook notifications (``alert_daily``).
5. Meta-alerts (``Watchdog``) are the pipeline's heartbeat, not incidents (``models/catalog/alert_meta.csv``).
6. A node-less spine alert joins the fabric hardware incident its leaves' alerts match, as its root.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl

from gpusre.models.alerts.clustering import (
    ALERT_DATA_SPAN_SQL,
    NOTIFICATION_DAYS_SQL,
    Topology,
    alert_marts,
    cluster_alerts,
    is_meta_alert,
    load_meta_alerts,
)
from gpusre.models.sources.alerts.ingest import SUPPRESSED_SQL, build_core_alerts, ingest_alert_files
from gpusre.models.sources.alerts.parse import parse_alert_file
from gpusre.models.warehouse import connect
from test_alert_clustering import NODE_EXPORTER, Alerts, hw_frame

UTC = timezone.utc
T = datetime(2026, 11, 24, 7, 16, tzinfo=UTC)
# 16 nodes: racks of 4, leaf switches of 8.
NODES = [f"gpu{i:03d}" for i in range(1, 17)]
TOPO = Topology.from_groups({f"r{r}": NODES[4 * r:4 * r + 4] for r in range(4)},
                            {"leaf01": NODES[:8], "leaf02": NODES[8:]})


def _by_alert(incidents: pl.DataFrame, members: pl.DataFrame) -> dict[int, dict]:
    inc = {r["incident_id"]: r for r in incidents.to_dicts()}
    return {m["alert_id"]: inc[m["incident_id"]] for m in members.to_dicts()}


# -- 1. a rack's power loss: per-node hardware incidents, one alert incident --------------------------


def test_rack_power_loss_counts_the_jobs_of_every_hardware_incident_it_is_about() -> None:
    a = Alerts()
    # Rack r0 (gpu001-004) loses power: one InstanceDown per node, 15 s apart, rack peers -> one incident.
    ids = [a.add("InstanceDown", T + timedelta(seconds=15 * k), node=NODES[k], labels=NODE_EXPORTER)
           for k in range(4)]
    # The node logs: one host_power incident per node (the PSU lines of each node).
    hw = hw_frame([{"incident_id": f"inc-p{k + 1}", "component": "host_power", "cause_class": "hardware",
                    "severity": "critical", "start_ts": T - timedelta(seconds=20) + timedelta(seconds=15 * k),
                    "end_ts": T + timedelta(seconds=15 * k), "nodes": [NODES[k]], "scope": "node",
                    "leaf_switch": None} for k in range(4)])
    # Job 10 (gpu002-003) and job 11 (gpu004) died with the rack; job 12 (gpu003) hung on NCCL and died
    # 40 min later, attributed to inc-p3. gpu001, the root's node, ran nothing.
    jobs = pl.DataFrame({"job_id": ["10", "11", "12"], "state": ["NODE_FAIL", "NODE_FAIL", "FAILED"],
                         "end_ts": [T + timedelta(minutes=1), T + timedelta(minutes=1), T + timedelta(minutes=40)],
                         "nodes": [["gpu002", "gpu003"], ["gpu004"], ["gpu003"]]})
    attribution = pl.DataFrame({"job_id": ["10", "11", "12"], "attribution": ["infrastructure"] * 3,
                                "lost_gpu_hours": [28.0, 3.278, 1.5], "incident_id": ["inc-p2", "inc-p4", "inc-p3"]})
    incidents, members = cluster_alerts(a.frame(), TOPO, hw, jobs=jobs, attribution=attribution)
    assert incidents.height == 1
    row = incidents.row(0, named=True)
    assert row["root_alert_id"] == ids[0] and row["hw_incident_id"] == "inc-p1"
    assert sorted(members["hw_incident_id"].to_list()) == ["inc-p1", "inc-p2", "inc-p3", "inc-p4"]
    # 28.0 + 3.278 + 1.5: never less than the four hardware incidents' own losses together.
    assert row["n_jobs_killed"] == 3 and abs(row["lost_gpu_hours"] - 32.778) < 1e-9


def test_a_job_of_a_hardware_incident_the_alert_incident_is_not_about_still_does_not_count() -> None:
    # The rule stays: gpu001's alert incident (inc-p1 only) does not claim a job on gpu001 that
    # attribution gives to a GPU fault on another node (inc-gpu).
    a = Alerts()
    a.add("InstanceDown", T, node="gpu001", labels=NODE_EXPORTER)
    hw = hw_frame([{"incident_id": "inc-p1", "component": "host_power", "cause_class": "hardware", "severity": "critical",
                    "start_ts": T, "end_ts": T, "nodes": ["gpu001"], "scope": "node", "leaf_switch": None}])
    jobs = pl.DataFrame({"job_id": ["20"], "state": ["FAILED"], "end_ts": [T + timedelta(minutes=1)],
                         "nodes": [["gpu001", "gpu016"]]})
    attribution = pl.DataFrame({"job_id": ["20"], "attribution": ["infrastructure"], "lost_gpu_hours": [5.0],
                                "incident_id": ["inc-gpu"]})
    incidents, _ = cluster_alerts(a.frame(), TOPO, hw, jobs=jobs, attribution=attribution)
    assert incidents.select("n_jobs_killed", "lost_gpu_hours").row(0) == (0, 0.0)


# -- 2. inhibited and silenced alerts ----------------------------------------------------------------


def _with_suppressed(a: Alerts, held: dict[int, str]) -> pl.DataFrame:
    return a.frame().with_columns(pl.col("alert_id").replace_strict(held, default=None, return_dtype=pl.String)
                                  .alias("suppressed"))


def test_an_inhibited_alert_is_never_the_root() -> None:
    a = Alerts()
    # The receive-error alert fires 15 s before the port-down alert that inhibits it: without the
    # inhibition it would be the root (same level, earliest).
    errs = a.add("NodeNetworkReceiveErrs", T, node="gpu008", labels=NODE_EXPORTER)
    port = a.add("InfinibandPortDown", T + timedelta(seconds=15), node="gpu008", labels=NODE_EXPORTER)
    plain, _ = cluster_alerts(a.frame(), TOPO)
    assert plain["root_alert_id"].to_list() == [errs]
    incidents, members = cluster_alerts(_with_suppressed(a, {errs: "inhibited"}), TOPO)
    assert incidents["root_alert_id"].to_list() == [port]
    assert incidents["root_cause_candidate"].to_list() == ["InfinibandPortDown on gpu008"]
    assert sorted(members["alert_id"].to_list()) == [errs, port]  # still a member


def test_a_silenced_root_says_so() -> None:
    a = Alerts()
    mem = a.add("NodeMemoryHighUtilization", T, node="gpu033", labels=NODE_EXPORTER, minutes=None)
    incidents, _ = cluster_alerts(_with_suppressed(a, {mem: "silenced"}), TOPO)
    assert incidents["root_cause_reason"].to_list() == [
        "earliest alert at the most upstream level (node gpu033); silenced in Alertmanager"]
    assert incidents["ongoing"].to_list() == [True]


# -- 2-4. snapshots through the ingest ---------------------------------------------------------------


def _v2(name: str, node: str, starts: str, fp: str, state: str = "active", inhibited: tuple[str, ...] = (),
        silenced: tuple[str, ...] = (), updated: str = "2026-11-24T02:14:45Z") -> dict:
    """One element of Alertmanager's ``/api/v2/alerts``."""
    labels = {"alertname": name, "severity": "warning", **({"instance": f"{node}:9100"} if node else {})}
    return {"annotations": {"summary": f"{name} {node}"}, "endsAt": "2026-11-24T02:19:00Z", "fingerprint": fp,
            "receivers": [{"name": "sre-pager"}], "startsAt": starts, "updatedAt": updated,
            "status": {"inhibitedBy": list(inhibited), "silencedBy": list(silenced), "state": state},
            "generatorURL": "http://prom:9090/graph", "labels": labels}


def _webhook(received: str, *alerts: dict) -> str:
    body = {"version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0, "receiver": "gpusre-archive",
            "status": "firing" if any(x["status"] == "firing" for x in alerts) else "resolved",
            "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {}, "externalURL": "http://am:9093",
            "alerts": list(alerts)}
    return f"{received} POST /alerts {json.dumps(body)}\n"


def _wh_alert(name: str, node: str, starts: str, status: str = "firing", ends: str = "0001-01-01T00:00:00Z") -> dict:
    return {"status": status, "labels": {"alertname": name, "instance": f"{node}:9100", "severity": "critical"},
            "annotations": {"summary": f"{name} {node}"}, "startsAt": starts, "endsAt": ends}


def _snapshot_landing(tmp_path: Path) -> Path:
    landing = tmp_path / "landing"
    api = landing / "alerts" / "am-api"
    api.mkdir(parents=True)
    # Webhook log: first delivery 2026-11-23 00:30 (the port alert at 02:10:45 next day, resolved 02:19:30).
    port = _wh_alert("InfinibandPortDown", "gpu008", "2026-11-24T02:10:45Z")
    (landing / "alerts" / "am-2026-11-24.log").write_text(
        _webhook("2026-11-23T00:30:00Z", _wh_alert("NodeClockSkew", "gpu001", "2026-11-23T00:29:00Z"))
        + _webhook("2026-11-24T02:11:00Z", port)
        + _webhook("2026-11-24T02:19:45Z", {**port, "status": "resolved", "endsAt": "2026-11-24T02:19:30Z"}))
    watchdog = _v2("Watchdog", "", "2026-11-20T08:00:00Z", "d932928d93666417")
    errs = _v2("NodeNetworkReceiveErrs", "gpu008", "2026-11-24T02:10:45Z", "00000000000000e8", state="suppressed",
               inhibited=("00000000000000aa",))
    mem = _v2("NodeMemoryHighUtilization", "gpu033", "2026-11-24T01:30:00Z", "0000000000000033", state="suppressed",
              silenced=("5e1f",))
    # endsAt (03:00) after the next snapshot (02:30) that no longer shows it: ended by 02:30.
    temp = {**_v2("NodeTemperatureHigh", "gpu009", "2026-11-24T02:05:00Z", "0000000000000009"),
            "endsAt": "2026-11-24T03:00:00Z"}
    (api / "alerts-2026-11-24T021500Z.json").write_text(json.dumps([watchdog, errs, mem, temp], indent=1))
    (api / "alerts-2026-11-24T023000Z.json").write_text(json.dumps([watchdog, mem], indent=1))
    return landing


def test_snapshot_entries_are_received_at_the_snapshot_time(tmp_path: Path) -> None:
    landing = _snapshot_landing(tmp_path)
    n = parse_alert_file(landing / "alerts" / "am-api" / "alerts-2026-11-24T021500Z.json").notifications
    assert n["received_at"].to_list() == [datetime(2026, 11, 24, 2, 15, tzinfo=UTC)] * 4
    # Without a time in the name: the latest updatedAt the snapshot shows.
    other = tmp_path / "snap.json"
    other.write_text(json.dumps([_v2("A", "gpu001", "2026-11-20T00:00:00Z", "01", updated="2026-11-24T03:00:00Z"),
                                 _v2("B", "gpu002", "2026-11-20T00:00:00Z", "02", updated="2026-11-24T03:00:05Z")]))
    assert parse_alert_file(other).notifications["received_at"].to_list() == [
        datetime(2026, 11, 24, 3, 0, 5, tzinfo=UTC)] * 2


def test_snapshots_end_alerts_a_later_snapshot_lacks_and_date_the_span_not_the_daily_counts(tmp_path: Path) -> None:
    landing = _snapshot_landing(tmp_path)
    con = connect(tmp_path / "w.duckdb")
    ingest_alert_files(con, landing)
    build_core_alerts(con, known_nodes=NODES + ["gpu033"])
    core = {r[0]: r[1:] for r in con.sql("SELECT alertname, status, ends_at FROM core.alerts").fetchall()}
    # In the 02:15 snapshot, not in the 02:30 one: ended in between, at the endsAt the 02:15 snapshot
    # showed (02:19:00, Alertmanager's resolve time had the rule not re-sent it). In both: still firing.
    assert core["NodeNetworkReceiveErrs"] == ("resolved", datetime(2026, 11, 24, 2, 19, tzinfo=UTC))
    assert core["NodeMemoryHighUtilization"] == ("firing", None)
    assert core["Watchdog"] == ("firing", None)
    assert core["NodeTemperatureHigh"] == ("resolved", datetime(2026, 11, 24, 2, 30, tzinfo=UTC))
    assert core["InfinibandPortDown"] == ("resolved", datetime(2026, 11, 24, 2, 19, 30, tzinfo=UTC))
    held = dict(con.sql(f"SELECT a.alertname, s.suppressed FROM ({SUPPRESSED_SQL}) s JOIN core.alerts a USING (alert_id)")
                .fetchall())
    assert held == {"NodeNetworkReceiveErrs": "inhibited", "NodeMemoryHighUtilization": "silenced"}
    # The span starts at the first webhook delivery, not at the Watchdog's startsAt of 11-20; the last
    # delivery is the 02:30 snapshot.
    assert con.sql(ALERT_DATA_SPAN_SQL).fetchall() == [(datetime(2026, 11, 23, 0, 30, tzinfo=UTC),
                                                        datetime(2026, 11, 24, 2, 30, tzinfo=UTC))]
    # Notifications: the 3 webhook payloads of one alert each; the 6 snapshot entries are none.
    days = {d.isoformat(): (n, k) for d, n, k, *_ in con.sql(NOTIFICATION_DAYS_SQL).fetchall()}
    assert days == {"2026-11-23": (1, 1), "2026-11-24": (2, 2)}
    con.close()


# -- 5. meta-alerts -----------------------------------------------------------------------------------


def test_every_meta_alert_rule_matches_its_example_and_nothing_else_by_accident() -> None:
    rules = load_meta_alerts()
    # The heartbeats; Grafana's meta-alerts (matched with a label too) are tests/test_grafana_alerting.py's.
    heartbeats = [r for r in rules if r.kind == "heartbeat"]
    assert {r.rule_id for r in heartbeats} == {"watchdog", "deadmans_switch", "info_inhibitor"}
    for rule in heartbeats:
        hit = pl.select(is_meta_alert(pl.lit(rule.example))).item()
        assert hit, rule.rule_id
    names = pl.Series(["watchdog", "SoftLockupWatchdog", "WatchdogTimeout", "NodeDown", None])
    assert pl.select(is_meta_alert(pl.lit(names))).to_series().to_list() == [True, False, False, False, False]


def test_the_watchdog_is_no_incident() -> None:
    a = Alerts()
    a.add("Watchdog", T - timedelta(days=4), minutes=None, labels={"severity": "none"})
    node = a.add("NodeDown", T, node="gpu001", labels=NODE_EXPORTER)
    marts = alert_marts(a.frame(), topology=TOPO)
    assert marts.members["alert_id"].to_list() == [node]
    assert marts.incidents.select("ongoing", "scope").rows() == [(False, "node")]
    assert marts.daily.select("day", "alerts").rows() == [(T.date(), 1)]


# -- 6. a spine failure: one fabric hardware incident over two leaves --------------------------------


def test_spine_alert_joins_the_fabric_incident_of_its_leaves_as_the_root() -> None:
    a = Alerts()
    t = datetime(2026, 11, 24, 2, 10, tzinfo=UTC)
    # Link-down on 4 nodes of each leaf within a minute; the spine's own alert is on no Slurm node.
    leaf1 = [a.add("NodeInfinibandLinkDown", t + timedelta(seconds=40 + 5 * k), node=NODES[k],
                   labels={**NODE_EXPORTER, "device": "mlx5_0"}) for k in range(4)]
    leaf2 = [a.add("NodeInfinibandLinkDown", t + timedelta(seconds=42 + 5 * k), node=NODES[8 + k],
                   labels={**NODE_EXPORTER, "device": "mlx5_0"}) for k in range(4)]
    spine = a.add("IBSwitchUnreachable", t + timedelta(seconds=20), target="ib-spine-01", target_label="switch",
                  labels={"job": "ufm"})
    ids = leaf1 + leaf2 + [spine]
    # Without the node logs: the spine alone, and each leaf apart.
    apart, members = cluster_alerts(a.frame(), TOPO)
    assert apart.height == 3
    # The node logs make it one fabric incident over both leaves (the hardware side's rule).
    hw = hw_frame([{"incident_id": "inc-fab", "component": "network_switch", "cause_class": "hardware",
                    "severity": "critical", "start_ts": t + timedelta(seconds=35), "end_ts": t + timedelta(minutes=9),
                    "nodes": NODES[:4] + NODES[8:12], "scope": "fabric", "leaf_switch": None}])
    incidents, members = cluster_alerts(a.frame(), TOPO, hw)
    assert incidents.height == 1 and sorted(members["alert_id"].to_list()) == sorted(ids)
    row = incidents.row(0, named=True)
    assert row["root_alert_id"] == spine and row["root_cause_candidate"] == "IBSwitchUnreachable on ib-spine-01"
    assert row["hw_incident_id"] == "inc-fab" and row["n_nodes"] == 8
    assert row["root_cause_reason"] == "hardware incident inc-fab (network_switch) on gpu[001-004,009-012]"
    # A spine alert an hour away from the outage is not about it.
    b = Alerts()
    b.add("NodeInfinibandLinkDown", t + timedelta(seconds=40), node=NODES[0], labels=NODE_EXPORTER)
    b.add("IBSwitchUnreachable", t + timedelta(hours=1), target="ib-spine-01", target_label="switch",
          labels={"job": "ufm"})
    assert cluster_alerts(b.frame(), TOPO, hw)[0].height == 2


def test_spine_alert_ties_together_the_leaf_incidents_it_explains() -> None:
    # Before the node logs make it one fabric incident: one leaf_switch incident per leaf, both
    # starting at the spine alert's minute. The spine alert links both (not only the nearest).
    a = Alerts()
    t = datetime(2026, 11, 24, 2, 10, tzinfo=UTC)
    for k in range(3):
        a.add("NodeInfinibandLinkDown", t + timedelta(seconds=40 + k), node=NODES[k], labels=NODE_EXPORTER)
        a.add("NodeInfinibandLinkDown", t + timedelta(seconds=40 + k), node=NODES[8 + k], labels=NODE_EXPORTER)
    spine = a.add("IBSwitchUnreachable", t + timedelta(seconds=20), target="ib-spine-01", target_label="switch",
                  labels={"job": "ufm"})
    hw = hw_frame([{"incident_id": f"inc-leaf0{n + 1}", "component": "network_switch", "cause_class": "hardware",
                    "severity": "critical", "start_ts": t + timedelta(seconds=35), "end_ts": t + timedelta(minutes=9),
                    "nodes": NODES[8 * n:8 * n + 3], "scope": "leaf_switch", "leaf_switch": f"leaf0{n + 1}"}
                   for n in range(2)])
    incidents, members = cluster_alerts(a.frame(), TOPO, hw)
    assert incidents.height == 1 and members.height == 7
    assert incidents["root_alert_id"].to_list() == [spine]
    assert sorted(members["hw_incident_id"].drop_nulls().unique().to_list()) == ["inc-leaf01", "inc-leaf02"]


def test_alert_freshness_dates_notifications_by_delivery_not_by_an_old_alert_start(tmp_path: Path) -> None:
    """The Watchdog of the 11-24 snapshots started 11-20; the first delivery was 11-23 00:30. Alert data
    freshness dated records by startsAt and reported alert data from 11-20 with empty days before any
    payload arrived (outside probe J): a notification's time is its delivery, else its alert's start."""
    from gpusre.pipelines.runner import run_pipeline

    landing = _snapshot_landing(tmp_path)
    wh = tmp_path / "fresh.duckdb"
    run_pipeline(landing, wh, tmp_path / "reports")
    con = connect(wh, read_only=True)
    try:
        first, last = con.sql("SELECT first_record_ts, last_record_ts FROM marts.data_freshness "
                              "WHERE source_kind = 'alerts'").fetchall()[0]
    finally:
        con.close()
    assert first == datetime(2026, 11, 23, 0, 30, tzinfo=UTC)
    assert last == datetime(2026, 11, 24, 2, 30, tzinfo=UTC)
