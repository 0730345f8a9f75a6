"""Alert conventions of other sites, checked on an outside evaluator's hand-written night
(``tests/fixtures/alerts/other_sites``: a few of its payloads, README there) and on hand-built alerts:

* an incident whose alerts still fire is ongoing — no duration, "ongoing since …" in the retrospective;
* Kubernetes dcgm-exporter labels (``kubernetes_node`` beside a pod ``Hostname`` and a pod ``instance``);
* Slurm hostlist labels (``nodelist="gpu[065-080]"``) put an alert on those nodes;
* an incident on no node is a ``service`` / ``fabric`` incident, not ``cluster``;
* rule hygiene needs several incidents outside maintenance before calling a rule noise;
* ``marts.alert_daily.notifications`` counts what arrived that day, not the alerts' start days;
* a symptom with a ``gpu`` label names no faulty GPU; a Slurm drain is no root cause;
* a webhook dump cut off while written is refused;
* without a node list, a switch / OST label beats the ``instance`` of the server watching it.

Every expected value below is counted by hand from the payloads.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models.alerts.clustering import (
    MAINTENANCE_SCHEMA,
    NOTIFICATION_DAYS_SQL,
    AlertClusteringSettings,
    Topology,
    alert_levels,
    alert_marts,
    cluster_alerts,
)
from gpusre.models.alerts.nodes import AlertLocation, alert_nodes, locate
from gpusre.models.ingest.landing_files import LandingFileFault
from gpusre.models.sources.alerts.parse import iter_alert_records
from gpusre.pipelines.runner import run_pipeline
from gpusre.reports.incident.report import build_incident_context
from gpusre.reports.kit.labels import scope_label

LANDING = Path(__file__).parent / "fixtures" / "alerts" / "other_sites"
NODES = [f"gpu{i:03d}" for i in range(1, 257)]
UTC = timezone.utc


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[duckdb.DuckDBPyConnection, object]:
    root = tmp_path_factory.mktemp("other_sites")
    shutil.copytree(LANDING, root / "landing")
    summary = run_pipeline(root / "landing", root / "wh" / "w.duckdb", root / "reports")
    con = duckdb.connect(str(root / "wh" / "w.snapshot.duckdb"), read_only=True)
    yield con, summary
    con.close()


def _incident(con: duckdb.DuckDBPyConnection, where: str) -> dict:
    rows = con.sql(f"SELECT * FROM marts.alert_incidents WHERE {where}").pl().to_dicts()
    assert len(rows) == 1, rows
    return rows[0]


# -- 1. ongoing incidents ----------------------------------------------------------------------


def test_an_incident_whose_alert_still_fires_is_ongoing(run) -> None:  # noqa: ANN001
    con, _ = run
    # The end of the alert data: the latest alert start or end — /tmp on gpu200 full at 05:30:15.
    as_of = _ts("2026-11-10 05:30:15")
    disk = _incident(con, "root_cause_candidate = 'NodeFilesystemAlmostOutOfSpace on gpu200'")
    assert (disk["start_ts"], disk["end_ts"], disk["ongoing"], disk["firing_alerts"]) == (
        _ts("2026-11-09 22:47:15"), as_of, True, 1)
    xid = _incident(con, "list_contains(nodes, 'gpu033')")
    assert (xid["n_alerts"], xid["ongoing"], xid["firing_alerts"], xid["end_ts"]) == (2, True, 2, as_of)
    # Incidents whose alerts all resolved end at their last end.
    leaf = _incident(con, "root_cause_candidate = 'IBSwitchUnreachable on leaf03'")
    assert (leaf["ongoing"], leaf["firing_alerts"], leaf["end_ts"]) == (False, 0, _ts("2026-11-10 02:01:00"))
    ongoing = con.sql("SELECT root_cause_candidate FROM marts.alert_incidents WHERE ongoing ORDER BY start_ts").fetchall()
    # (The Watchdog fires for ever by design: a heartbeat of the alert pipeline, no incident — alert_meta.csv.)
    assert [r[0] for r in ongoing] == ["NodeFilesystemAlmostOutOfSpace on gpu200", "DCGMXidError on gpu033",
                                       "NodeFilesystemFull on gpu200"]


def test_the_retrospective_says_ongoing_and_no_duration(run) -> None:  # noqa: ANN001
    con, _ = run
    disk = _incident(con, "root_cause_candidate = 'NodeFilesystemAlmostOutOfSpace on gpu200'")["incident_id"]
    summary = build_incident_context(con, disk)["by_key"]["summary"]
    assert summary.lead.startswith(
        f"Alert incident {disk} on gpu200 is ongoing since 2026-11-09 22:47:15 UTC (still firing at the end of the "
        "alert data, 2026-11-10 05:30:15 UTC): 1 alert (1 still firing)")
    assert "lasted" not in summary.lead
    started = next(c for c in summary.cards if c["label"] == "Started")
    assert started["sub"] == "UTC · ongoing, still firing"
    xid = _incident(con, "list_contains(nodes, 'gpu033')")["incident_id"]
    ctx = build_incident_context(con, xid)
    assert "is ongoing since 2026-11-10 03:00:35 UTC" in ctx["by_key"]["summary"].lead
    assert "lasted" not in ctx["by_key"]["summary"].lead
    moments = [row[2].text for item in ctx["by_key"]["timeline"].items if hasattr(item, "rows") for row in item.rows]
    assert "end of the alert data: 2 of the incident's alerts still firing (ongoing)" in moments
    # An incident that ended still says how long it lasted: leaf03 01:00:20 → 02:01:00, 60 min 40 s.
    leaf = _incident(con, "root_cause_candidate = 'IBSwitchUnreachable on leaf03'")["incident_id"]
    assert "and lasted 61 min" in build_incident_context(con, leaf)["by_key"]["summary"].lead


# -- 2, 3. node labels: Kubernetes, hostlists -------------------------------------------------


def test_kubernetes_node_label_names_the_node(run) -> None:  # noqa: ANN001
    con, _ = run
    row = con.sql("SELECT node, target FROM core.alerts WHERE alertname = 'GPU temperature high'").fetchall()
    assert row == [("gpu210", None)]
    # ... and joins the node's IPMI alert (gpu210-ipmi) into one node incident.
    inc = _incident(con, "list_contains(nodes, 'gpu210')")
    assert (inc["n_alerts"], inc["nodes"], inc["scope"]) == (2, ["gpu210"], "node")
    pod = {"alertname": "GPU temperature high", "Hostname": "nvidia-dcgm-exporter-7x9kq", "kubernetes_node": "gpu210",
           "instance": "10.244.3.17:9400", "gpu": "5"}
    # Without a node list too: the pod's name is no node when the node label names one.
    assert locate(pod).node == "gpu210" and locate(pod, known_nodes=NODES).node == "gpu210"


def test_a_hostlist_label_puts_the_alert_on_its_nodes(run) -> None:  # noqa: ANN001
    con, _ = run
    rows = con.sql("SELECT node, target, target_label FROM core.alerts WHERE alertname = 'SlurmJobNodeFail' "
                   "ORDER BY target").fetchall()
    assert rows == [(None, "gpu[065-080]", "nodelist"), (None, "gpu[081-088]", "nodelist"),
                    (None, "gpu[089-096]", "nodelist")]
    # The leaf03 incident: switch, 2 IB ports and 2 DCGM idle GPUs of gpu065, the 3 job alerts on the 32
    # nodes under leaf03 — not three "cluster" incidents on no node.
    leaf = _incident(con, "root_cause_candidate = 'IBSwitchUnreachable on leaf03'")
    assert (leaf["n_alerts"], leaf["n_nodes"], leaf["scope"]) == (8, 32, "leaf_switch")
    assert leaf["nodes"] == [f"gpu{i:03d}" for i in range(65, 97)]
    assert con.sql("SELECT count(*) FROM marts.alert_incidents WHERE list_contains(alertnames, 'SlurmJobNodeFail')"
                   ).fetchall() == [(1,)]


def test_hostlist_values_in_the_reference_rule() -> None:
    assert locate({"nodelist": "gpu[065-067]"}, known_nodes=NODES) == AlertLocation(None, "gpu[065-067]", "nodelist")
    # Only the nodes of the list count; one node is that node; none is no node.
    assert locate({"nodelist": "gpu[255-258]"}, known_nodes=NODES) == AlertLocation(None, "gpu[255-256]", "nodelist")
    assert locate({"nodelist": "gpu[256-258]"}, known_nodes=NODES) == AlertLocation("gpu256", None, None)
    assert locate({"nodelist": "cpu[01-02]"}, known_nodes=NODES).node is None
    assert locate({"node": "gpu001,gpu003"}) == AlertLocation(None, "gpu[001,003]", "node")
    assert alert_nodes(None, "gpu[001,003]", "node") == ["gpu001", "gpu003"]
    assert alert_nodes(None, "gpu[001-002]", "switch") == []  # only a node label's hostlist is nodes


# -- 4. scope of incidents on no node ---------------------------------------------------------


def test_incidents_on_no_node_are_service_or_fabric_not_cluster(run) -> None:  # noqa: ANN001
    con, _ = run
    scopes = dict(con.sql("SELECT root_cause_candidate, scope FROM marts.alert_incidents").fetchall())
    assert "Watchdog" not in scopes  # a meta-alert (models/catalog/alert_meta.csv): no incident
    assert scopes["UFMSubnetManagerFailover"] == "fabric"
    assert "cluster" not in scopes.values()
    # Eight InstanceDown on gpu240 (rack r15) and gpu241-247 (r16): two racks, one leaf switch (leaf08).
    assert scopes["InstanceDown on gpu240"] == "leaf_switch"
    assert scope_label("service") == "service (no node)" and scope_label("fabric") == "fabric (no node)"
    assert scope_label("cluster") == "cluster (several racks)" and scope_label("leaf_switch") == "leaf switch"


# -- 5. rule hygiene ------------------------------------------------------------------------------

T0 = datetime(2026, 11, 10, tzinfo=UTC)


def _alert_rows(specs: list[tuple[str, str, datetime]]) -> pl.DataFrame:
    rows = []
    for i, (name, node, at) in enumerate(specs, start=1):
        labels = {"alertname": name, "instance": f"{node}:9100"}
        rows.append({"alert_id": i, "fingerprint": f"{name}-{node}", "alertname": name, "status": "resolved",
                     "severity": "critical", "node": node, "target": None, "target_label": None, "starts_at": at,
                     "ends_at": at + timedelta(minutes=10), "labels": json.dumps(labels), "template_id": None,
                     "n_notifications": 1})
    return pl.DataFrame(rows, schema={
        "alert_id": pl.Int64, "fingerprint": pl.String, "alertname": pl.String, "status": pl.String,
        "severity": pl.String, "node": pl.String, "target": pl.String, "target_label": pl.String,
        "starts_at": pl.Datetime("us", "UTC"), "ends_at": pl.Datetime("us", "UTC"), "labels": pl.String,
        "template_id": pl.Int64, "n_notifications": pl.Int64})


def _hw(node: str, at: datetime) -> dict:
    return {"incident_id": f"inc-{node}", "component": "gpu", "start_ts": at, "end_ts": at + timedelta(minutes=5),
            "nodes": [node], "scope": "node", "leaf_switch": None}


def test_one_maintenance_event_does_not_make_a_rule_noise() -> None:
    topo = Topology.from_groups({"r16": "gpu[241-256]"}, {"leaf08": "gpu[225-256]"})
    # One planned maintenance: 8 InstanceDown 10 s apart — one incident. A GPU fault elsewhere gives the
    # data evidence to judge precision with.
    specs = [("InstanceDown", f"gpu{241 + k}", T0 + timedelta(seconds=10 * k)) for k in range(8)]
    specs.append(("GpuXid", "gpu010", T0 + timedelta(hours=3)))
    hw = pl.DataFrame([_hw("gpu010", T0 + timedelta(hours=3))])
    q = {r["alertname"]: r for r in alert_marts(_alert_rows(specs), topology=topo, hw_incidents=hw)
         .rule_quality.iter_rows(named=True)}
    assert (q["InstanceDown"]["fired"], q["InstanceDown"]["incidents"], q["InstanceDown"]["precision"]) == (8, 1, 0.0)
    assert q["InstanceDown"]["verdict"] == "too few to judge"  # was "noise: consider silencing" (8 ≥ min_fired 5)
    # The same rule firing in 3 separate incidents (6 h apart, one node each) with no evidence: noise.
    specs = [("InstanceDown", f"gpu{241 + k}", T0 + timedelta(hours=6 * k)) for k in range(3) for _ in range(2)]
    specs = [(n, node, at + timedelta(seconds=30 * j)) for j, (n, node, at) in enumerate(specs)]
    specs.append(("GpuXid", "gpu010", T0 + timedelta(hours=3)))
    q = {r["alertname"]: r for r in alert_marts(_alert_rows(specs), topology=topo, hw_incidents=hw)
         .rule_quality.iter_rows(named=True)}
    assert (q["InstanceDown"]["fired"], q["InstanceDown"]["incidents"]) == (6, 3)
    assert q["InstanceDown"]["verdict"] == "noise: consider silencing"
    # Two of those incidents in planned maintenance of their nodes: one incident left, too few to judge.
    maint = pl.DataFrame({"node": ["gpu241", "gpu242"], "start_ts": [T0 - timedelta(minutes=5), T0 + timedelta(hours=5)],
                          "end_ts": [T0 + timedelta(hours=1), T0 + timedelta(hours=7)]}, schema=MAINTENANCE_SCHEMA)
    q = {r["alertname"]: r for r in alert_marts(_alert_rows(specs), topology=topo, hw_incidents=hw, maintenance=maint)
         .rule_quality.iter_rows(named=True)}
    assert (q["InstanceDown"]["in_maintenance"], q["InstanceDown"]["verdict"]) == (2, "too few to judge")
    # A whole-cluster window (node NULL) covers every alert in it.
    everywhere = pl.DataFrame({"node": [None], "start_ts": [T0 + timedelta(hours=11)], "end_ts": [T0 + timedelta(hours=13)]},
                              schema=MAINTENANCE_SCHEMA)
    q = {r["alertname"]: r for r in alert_marts(_alert_rows(specs), topology=topo, hw_incidents=hw,
                                                maintenance=everywhere).rule_quality.iter_rows(named=True)}
    assert q["InstanceDown"]["in_maintenance"] == 1 and q["InstanceDown"]["verdict"] == "too few to judge"
    assert AlertClusteringSettings().min_incidents == 3


def test_the_maintenance_storm_is_too_few_to_judge(run) -> None:  # noqa: ANN001
    con, _ = run
    assert con.sql("SELECT fired, incidents, verdict FROM marts.alert_rule_quality WHERE alertname = 'InstanceDown'"
                   ).fetchall() == [(8, 1, "too few to judge")]


# -- 6. notifications by the day they arrived -------------------------------------------------


def test_daily_notifications_count_what_arrived_that_day(run) -> None:  # noqa: ANN001
    con, _ = run
    daily = {r[0].isoformat(): r[1:] for r in con.sql(
        "SELECT day, notifications, deliveries, alerts, incidents FROM marts.alert_daily ORDER BY day").fetchall()}
    # Watchdog started 2026-11-01 but every notification of it arrived on 11-09 / 11-10 (file names); a
    # meta-alert is no alert of the marts, so the days start at the first notification.
    assert min(daily) == "2026-11-09"
    # 11-09 file: 3 payloads of one alert each. 11-10: the Alertmanager file's 20 payloads carry 42
    # alert entries, the Grafana log's 2 lines (receiver timestamps 11-10) one each.
    assert daily["2026-11-09"] == (3, 3, 9, 2)      # alerts: /tmp warning + 8 InstanceDown; incidents: those 2
    assert daily["2026-11-10"] == (44, 22, 14, 5)
    assert sum(v[0] for v in daily.values()) == con.sql("SELECT count(*) FROM raw.alert_notifications").fetchall()[0][0]


def test_notification_day_rule() -> None:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE SCHEMA raw; CREATE TABLE raw.alert_notifications (source_file VARCHAR, line_no BIGINT, "
                "payload_no INTEGER, received_at TIMESTAMPTZ, status VARCHAR, starts_at TIMESTAMPTZ, ends_at TIMESTAMPTZ, "
                "format VARCHAR DEFAULT 'alertmanager', alertname VARCHAR DEFAULT 'NodeDown')")
    # The day rule also reads the truncation rejects (raw.rejects, always created with the raw schema).
    con.execute("CREATE TABLE raw.rejects (source_file VARCHAR, source_kind VARCHAR, line_no BIGINT, raw VARCHAR, "
                "error VARCHAR, rejected_at TIMESTAMPTZ)")
    con.execute("""INSERT INTO raw.alert_notifications
                   (source_file, line_no, payload_no, received_at, status, starts_at, ends_at) VALUES
        -- a logger's timestamp wins over the file name
        ('alerts/2026-11-09/am.log', 1, 1, TIMESTAMPTZ '2026-11-10 00:00:05+00', 'firing', TIMESTAMPTZ '2026-11-01 00:00:00+00', NULL),
        -- the last date in the path; one payload of two alerts is one delivery
        ('alerts/2026-11/am-2026-11-08.jsonl', 1, 1, NULL, 'firing', TIMESTAMPTZ '2026-11-01 00:00:00+00', NULL),
        ('alerts/2026-11/am-2026-11-08.jsonl', 1, 1, NULL, 'firing', TIMESTAMPTZ '2026-11-07 00:00:00+00', NULL),
        -- never before what the payload shows: a resolve of 11-09 in a file named 11-08
        ('alerts/2026-11/am-2026-11-08.jsonl', 2, 1, NULL, 'resolved', TIMESTAMPTZ '2026-11-08 23:00:00+00',
         TIMESTAMPTZ '2026-11-09 00:30:00+00'),
        -- no date in the name: the latest time the payload shows
        ('alerts/dump.json', 1, 2, NULL, 'firing', TIMESTAMPTZ '2026-11-06 12:00:00+00', NULL)""")
    got = {d.isoformat(): (n, k) for d, n, k, *_ in con.sql(NOTIFICATION_DAYS_SQL).fetchall()}
    assert got == {"2026-11-06": (1, 1), "2026-11-08": (2, 1), "2026-11-09": (1, 1), "2026-11-10": (1, 1)}


# -- 7, 9. faulty GPUs and the root of a GPU fault ----------------------------------------------


def test_a_slurm_drain_is_no_root_cause_and_symptoms_name_no_faulty_gpu(run) -> None:  # noqa: ANN001
    con, _ = run
    xid = _incident(con, "list_contains(nodes, 'gpu033')")
    assert (xid["root_cause_candidate"], xid["root_level"]) == ("DCGMXidError on gpu033", "gpu")
    levels = dict(con.sql("SELECT a.alertname, m.level FROM marts.alert_incident_members m JOIN core.alerts a "
                          "USING (alert_id)").fetchall())
    assert levels["SlurmNodeDrained"] == "slurm" and levels["SlurmJobNodeFail"] == "slurm"
    assert levels["DCGMGPUIdleWhileAllocated"] == "other" and levels["DCGMXidError"] == "gpu"
    blast = build_incident_context(con, xid["incident_id"])["by_key"]["blast-radius"].lead
    assert "1 faulty GPU named by its evidence (gpu033 GPU 3)" in blast
    leaf = _incident(con, "root_cause_candidate = 'IBSwitchUnreachable on leaf03'")["incident_id"]
    blast = build_incident_context(con, leaf)["by_key"]["blast-radius"].lead
    assert "0 faulty GPUs named by its evidence" in blast  # DCGM idle GPUs 0, 1 of gpu065: a symptom


def test_level_rules_for_slurm_and_gpu_usage_alerts() -> None:
    frame = _alert_rows([("SlurmNodeDrained", "gpu001", T0), ("SlurmNodeNotResponding", "gpu001", T0),
                         ("SlurmctldDown", "gpu001", T0), ("DCGMGPUIdleWhileAllocated", "gpu001", T0),
                         ("GpuUtilizationLow", "gpu001", T0), ("HostHighCpuUsage", "gpu001", T0),
                         ("GpuXidError", "gpu001", T0)])
    assert alert_levels(frame).to_list() == ["slurm", "slurm", "node", "other", "other", "node", "gpu"]
    # A drain 5 min after the Xid on the same node: the Xid is the root even though "node" < "gpu".
    inc, _ = cluster_alerts(_alert_rows([("GpuXidError", "gpu001", T0),
                                         ("SlurmNodeDrained", "gpu001", T0 + timedelta(minutes=5))]))
    assert inc["root_cause_candidate"].to_list() == ["GpuXidError on gpu001"]


# -- 8. a webhook dump cut off while written ----------------------------------------------------


def test_a_truncated_alert_file_is_refused(run) -> None:  # noqa: ANN001
    con, summary = run
    row = con.sql("SELECT status, rows_loaded, error FROM raw.ingested_files "
                  "WHERE source_file = 'alerts/bad-truncated.json'").fetchall()
    assert row == [("refused", 0, "truncated JSON: the value starting on line 1 breaks off inside an unclosed object "
                                  "at the end of the file, after 0 complete payloads")]
    assert [f.split(": ")[0] for f in summary.files_refused] == ["alerts/bad-truncated.json"]  # the CLI exits 1


def test_a_cut_file_keeps_its_complete_records(tmp_path: Path) -> None:
    payload = {"version": "4", "status": "firing", "alerts": [
        {"status": "firing", "labels": {"alertname": "A", "instance": "gpu001:9100"}, "startsAt": "2026-11-10T01:00:00Z"}]}
    line = json.dumps(payload)
    # A line file whose last line breaks off (no final line break): two lines kept, refused.
    cut = tmp_path / "am.jsonl"
    cut.write_text(f"{line}\n{line}\n{line[:40]}")  # ... "status": "firing", "al
    frames, fault = [], None
    try:
        frames.extend(iter_alert_records(cut, "alerts/am.jsonl"))
    except LandingFileFault as exc:
        fault = str(exc)
    assert sum(f.height for f in frames) == 2 and all(f["error"].null_count() == f.height for f in frames)
    assert fault == ("truncated JSON: the value starting on line 3 breaks off inside an unclosed string at the end "
                     "of the file, after 2 complete lines")
    # A bad line in the middle, or a last line ending with its line break, stays a reject of a loaded file.
    ok = tmp_path / "ok.jsonl"
    ok.write_text(f"{line}\n{line[:40]}\n{line}\n")
    assert [f["error"].null_count() for f in iter_alert_records(ok, "alerts/ok.jsonl")] == [2]
    # An array of payloads cut in its third element: the two complete payloads are kept.
    arr = tmp_path / "dump.json"
    arr.write_text(json.dumps([payload, payload, payload])[:-30])
    frames, fault = [], None
    try:
        frames.extend(iter_alert_records(arr, "alerts/dump.json"))
    except LandingFileFault as exc:
        fault = str(exc)
    assert len(frames) == 1 and json.loads(frames[0]["body"][0]) == [payload, payload]
    assert fault is not None and fault.endswith("after 2 complete payloads")


# -- 10. no node list: a switch or OST label beats the server's instance -------------------------


def test_without_a_node_list_a_device_label_beats_the_server_instance() -> None:
    ufm = {"alertname": "IBSwitchUnreachable", "switch": "leaf03", "instance": "ufm01.mgmt.example.com:9090"}
    oss = {"alertname": "LustreOSTUnavailable", "ost": "scratch-OST0007", "fsname": "scratch",
           "instance": "oss04.example.com:9169"}
    assert locate(ufm) == AlertLocation(None, "leaf03", "switch")
    assert locate(oss) == AlertLocation(None, "scratch-OST0007", "ost")
    # A node label still names the node; a plain exporter host without a device label still counts.
    assert locate({**oss, "node": "gpu002"}).node == "gpu002"
    assert locate({"alertname": "NodeDown", "instance": "gpu007:9100"}).node == "gpu007"
    # With a node list nothing changes: the server is no node anyway.
    assert locate(ufm, known_nodes=NODES) == AlertLocation(None, "leaf03", "switch")
