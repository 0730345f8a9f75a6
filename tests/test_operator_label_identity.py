"""An operator's label (``incidents.csv``) names an incident; it must not change which incident it is.

Found by an outside probe (16 nodes, 4 nights): on night 3 incidents.csv labelled gpu006's Xid 79 as
OPS-1. The incident then (1) got scope ``operator``, so per-node MTBF, the lemon fit, the down time
estimated from incidents and marts.node_hardware_loss dropped it (gpu006: 1 failure -> 0; per-node rows
summed to 3 while the cluster row said 4), and (2) got a new id, so ``gpusre report incident`` refused the
id the night-2 report had printed, and refused ``OPS-1`` too.

Here: the id an incident has before its label is the id it keeps (also when the label's text or start is
edited later), the label keeps the scope of the evidence it folds, and the report finds it by either id.
Every expected value below is computed by hand.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models.failures import hw_incidents
from gpusre.models.failures.hw_incidents import incident_id, merge_incidents, operator_incident_id
from gpusre.models.reliability.marts import _down_node_hours_daily
from gpusre.models.reliability.mtbf import mtbf_table, node_exposure, tbf_weibull
from gpusre.models.sources.incidents.parse import read_operator_incidents
from gpusre.reports.incident.incident import UnknownIncidentError, find_incident

UTC = timezone.utc
T0 = datetime(2026, 11, 3, 3, 10, tzinfo=UTC)  # gpu006's Xid 79 in the probe
M = timedelta(minutes=1)
XID79 = ("xid", 79, "pcie_bus", "hardware", "critical", "RESTART_BM")
LINK_DOWN = ("ib_link_down", None, "network", "hardware", "high", "CHECK_LINK")
LEAVES = {"leaf01": "gpu[001-008]", "leaf02": "gpu[009-016]"}


def ev(event_id: int, at: timedelta, node: str, spec: tuple) -> dict:
    kind, code, component, cause, severity, action = spec
    return {"event_id": event_id, "ts": T0 + at, "node": node, "kind": kind, "code": code, "gpu_pci": None,
            "component": component, "cause_class": cause, "severity": severity, "action": action,
            "template_id": 1, "message": "..."}


def frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={**hw_incidents.EVENT_SCHEMA, "template_id": pl.Int64, "message": pl.String})


def operator(rows: list[tuple]) -> pl.DataFrame:
    """incidents.csv rows (id, start, end, component, root_cause, nodes)."""
    return pl.DataFrame([(*r, "") for r in rows], orient="row", schema=hw_incidents.OPERATOR_SCHEMA)


# gpu006's GPU falls off the bus at T0 (two lines of one fault); gpu014 loses its link a day earlier.
EVENTS = frame([ev(1, 0 * M, "gpu006", XID79), ev(2, 5 * M, "gpu006", XID79),
                ev(3, -timedelta(hours=29), "gpu014", LINK_DOWN)])
OPS_1 = ("OPS-1", T0 - 5 * M, T0 + timedelta(hours=30), "gpu", "GPU 3 fell off the bus - HGX baseboard RMA", "gpu006")


def test_labelling_keeps_the_id_the_events_gave() -> None:
    before, _ = merge_incidents(EVENTS)
    gpu006 = before.filter(pl.col("nodes").list.contains("gpu006")).row(0, named=True)
    assert gpu006["incident_id"] == incident_id("pcie_bus", T0, "gpu006")
    after, members = merge_incidents(EVENTS, operator=operator([OPS_1]))
    assert after.height == 2  # the label names the incident, it adds none
    assert sorted(after["incident_id"]) == sorted(before["incident_id"])
    row = after.filter(pl.col("operator_id") == "OPS-1").row(0, named=True)
    assert row["incident_id"] == gpu006["incident_id"]
    assert (row["label_source"], row["scope"], row["component"]) == ("operator", "node", "gpu")
    assert row["root_cause"] == "GPU 3 fell off the bus - HGX baseboard RMA"
    assert row["start_ts"] == T0 - 5 * M  # the operator saw it first: the start is theirs, the id is not
    assert dict(members.iter_rows()) == {1: row["incident_id"], 2: row["incident_id"],
                                         3: incident_id("network", T0 - timedelta(hours=29), "gpu014")}


@pytest.mark.parametrize("edit", [
    dict(root_cause="baseboard RMA (SR-4411), GPU 3 replaced"),
    dict(start=T0 - timedelta(hours=2)),
    dict(start=T0 + 3 * M),  # after the first line: still overlapping, still the first evidence's id
    dict(end=T0 + timedelta(days=2), component="host_power"),
])
def test_edits_of_the_label_keep_the_id(edit: dict) -> None:
    names = ("id", "start", "end", "component", "root_cause", "nodes")
    edited = tuple(edit.get(k, v) for k, v in zip(names, OPS_1))
    incidents, _ = merge_incidents(EVENTS, operator=operator([edited]))
    row = incidents.filter(pl.col("operator_id") == "OPS-1").row(0, named=True)
    assert row["incident_id"] == incident_id("pcie_bus", T0, "gpu006")
    assert row["scope"] == "node"


def test_a_label_folding_several_incidents_keeps_the_earliest_id() -> None:
    # Two faults of gpu006 40 min apart (gap > 30 min window: two event incidents), one label over both.
    events = frame([ev(1, 0 * M, "gpu006", XID79), ev(2, 40 * M, "gpu006", LINK_DOWN)])
    alone, _ = merge_incidents(events)
    assert sorted(alone["incident_id"]) == sorted([incident_id("pcie_bus", T0, "gpu006"),
                                                   incident_id("network", T0 + 40 * M, "gpu006")])
    labelled, members = merge_incidents(events, operator=operator([OPS_1]))
    assert labelled["incident_id"].to_list() == [incident_id("pcie_bus", T0, "gpu006")]
    assert labelled["n_events"].to_list() == [2] and set(members["incident_id"]) == set(labelled["incident_id"])


def test_scope_is_how_far_the_fault_spread() -> None:
    # A leaf switch: link loss on 4 nodes of leaf01 within a minute.
    switch = frame([ev(i, i * 10 * timedelta(seconds=1), f"gpu00{i}", LINK_DOWN) for i in range(1, 5)])
    alone, _ = merge_incidents(switch, topology=LEAVES)
    first = T0 + 10 * timedelta(seconds=1)  # gpu001's line: the chain's first
    assert alone.select("scope", "incident_id").rows() == [("leaf_switch", incident_id("network_switch", first, "gpu001"))]
    ops = operator([
        ("OPS-2", T0 - M, T0 + 10 * M, "network", "leaf01 PSU failed", "gpu[001-004]"),
        ("OPS-3", T0 + timedelta(days=1), T0 + timedelta(days=1, hours=1), "gpu", "GPU swapped", "gpu010"),
        ("OPS-4", T0 + timedelta(days=2), T0 + timedelta(days=2, hours=1), "storage", "Lustre MDS down", None),
        ("OPS-5", T0 + timedelta(days=3), T0 + timedelta(days=3, hours=1), "host_power", "PDU tripped", "gpu[011-012]"),
    ])
    incidents, _ = merge_incidents(switch, topology=LEAVES, operator=ops)
    got = {r["operator_id"]: (r["scope"], r["incident_id"], r["leaf_switch"]) for r in incidents.iter_rows(named=True)}
    assert got == {
        "OPS-2": ("leaf_switch", alone["incident_id"][0], "leaf01"),  # the switch's evidence, the switch's id
        "OPS-3": ("node", operator_incident_id("OPS-3"), None),      # no evidence, one named node
        "OPS-4": ("cluster", operator_incident_id("OPS-4"), None),   # no nodes: the whole cluster
        "OPS-5": ("nodes", operator_incident_id("OPS-5"), None),     # several nodes, spread unknown
    }


def test_per_node_analytics_count_the_labelled_incident() -> None:
    t0, t1 = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 5, tzinfo=UTC)  # 4 days = 96 h per node
    incidents, _ = merge_incidents(EVENTS, operator=operator([OPS_1]))
    exposure = node_exposure(["gpu006", "gpu014"], t0, t1)
    table = mtbf_table(incidents, exposure, 8, t0, t1, min_failures=1).filter(pl.col("period_type") == "all")
    node = {r["node"]: (r["failures"], r["exposure_hours"], r["mtbf_hours"])
            for r in table.filter(pl.col("scope") == "node").iter_rows(named=True)}
    assert node == {"gpu006": (1, 96.0, 96.0), "gpu014": (1, 96.0, 96.0)}
    assert table.filter(pl.col("scope") == "cluster")["failures"].to_list() == [2] == [sum(v[0] for v in node.values())]
    # The lemon fit sees gpu006's failure: its GPU class has a row (the operator's component `gpu`; without
    # it only `all` and `network`). One failure per node, no gaps observed; in each class the 3 nodes are
    # censored (after their failure, or over the whole horizon when they never failed in that class).
    weibull = tbf_weibull(incidents, ["gpu001", "gpu006", "gpu014"], t0, t1)
    assert weibull.select("component_class", "n_failures", "n_censored").rows() == [
        ("all", 0, 3), ("gpu", 0, 3), ("network", 0, 3)]


def test_down_time_from_incidents_counts_the_labelled_incident() -> None:
    incidents, _ = merge_incidents(EVENTS.filter(pl.col("node") == "gpu006"), operator=operator([OPS_1]))
    # Back at D3 09:00 (drain ended, next job completed). Start = the operator's 03:05 on D2.
    incidents = incidents.with_columns(pl.lit(datetime(2026, 11, 4, 9, 0, tzinfo=UTC)).alias("recovered_ts"))
    down = _down_node_hours_daily(incidents, datetime(2026, 11, 6, tzinfo=UTC)).sort("day")
    # D2: 03:05 -> 24:00 = 20 h 55 min = 20.91667 h; D3: 00:00 -> 09:00 = 9 h.
    assert [str(d) for d in down["day"]] == ["2026-11-03", "2026-11-04"]
    assert down["down_node_hours"].to_list() == pytest.approx([20 + 55 / 60, 9.0])


def _mart(rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts")
    con.execute("CREATE TABLE marts.hw_incidents (incident_id VARCHAR, start_ts TIMESTAMPTZ, operator_id VARCHAR, "
                "label_source VARCHAR)")
    con.executemany("INSERT INTO marts.hw_incidents VALUES (?, ?, ?, ?)", rows)
    return con


def test_report_finds_an_incident_by_its_id_or_the_operators() -> None:
    con = _mart([("inc-af85a3a6828c", T0, "OPS-1", "operator"),
                 ("inc-000000000001", T0 - timedelta(days=1), None, "events")])
    assert find_incident(con, "inc-af85a3a6828c")[1]["operator_id"] == "OPS-1"
    for asked in ("OPS-1", " ops-1 "):  # as quoted in a ticket
        kind, row = find_incident(con, asked)
        assert (kind, row["incident_id"]) == ("hw", "inc-af85a3a6828c")
    with pytest.raises(UnknownIncidentError, match="nor an operator id"):
        find_incident(con, "OPS-2")


def test_a_repeated_operator_id_keeps_the_last_row(tmp_path: Path) -> None:
    path = tmp_path / "incidents.csv"
    path.write_text("id,start,end,component,root_cause,nodes,notes\n"
                    "OPS-1,2026-11-03T03:05:00,2026-11-04T09:00:00,GPU,GPU fell off the bus,gpu006,\n"
                    "OPS-2,2026-11-03T03:05:00,2026-11-04T09:00:00,GPU,x,gpu007,\n"
                    "OPS-1,2026-11-03T03:05:00,2026-11-04T09:00:00,GPU,HGX baseboard RMA,gpu006,edited\n")
    incidents, rejects = read_operator_incidents(path)
    assert incidents.select("id", "root_cause").rows() == [("OPS-2", "x"), ("OPS-1", "HGX baseboard RMA")]
    assert rejects.select("line_no", "error").rows() == [(2, "id OPS-1 is repeated on line 4 (that row is kept)")]


# The probe's story through the whole pipeline, on a landing small enough to read: carol's 32-GPU job dies
# when gpu006's GPU falls off the bus; the next morning an SRE labels the fault OPS-1 in incidents.csv.
CLUSTER = ('cluster: t\ntimezone: UTC\nnodes: "gpu[005-008]"\ngpus_per_node: 8\n'
           'leaf_switches: {leaf01: "gpu[005-008]"}\n')
SACCT = """JobID|JobIDRaw|JobName|User|UID|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList
1001|1001|prep|alice|1001|llm|gpu|COMPLETED|0:0|2026-11-02T00:55:00|2026-11-02T01:00:00|2026-11-02T02:00:00|01:00:00|02:00:00|1|8|billing=8,cpu=8,gres/gpu=8,node=1|gpu007
1003|1003|train-c|carol|1003|llm|gpu|FAILED|1:0|2026-11-02T19:55:00|2026-11-02T20:00:00|2026-11-03T03:12:00|07:12:00|2-00:00:00|4|448|billing=448,cpu=448,gres/gpu=32,node=4|gpu[005-008]
1004|1004|eval|bob|1004|llm|gpu|COMPLETED|0:0|2026-11-04T09:55:00|2026-11-04T10:00:00|2026-11-04T11:00:00|01:00:00|02:00:00|1|8|billing=8,cpu=8,gres/gpu=8,node=1|gpu006
"""
SYSLOG = ("2026-11-03T03:10:00.000000+00:00 gpu006 kernel: NVRM: Xid (PCI:0000:9b:00): 79, pid='<unknown>', "
          "name=<unknown>, GPU has fallen off the bus.\n"
          "2026-11-03T03:10:00.000500+00:00 gpu006 kernel: NVRM: GPU 0000:9b:00.0: GPU has fallen off the bus.\n")
LABEL = ("id,start,end,component,root_cause,nodes,notes\n"
         "OPS-1,2026-11-03T03:05:00,2026-11-04T09:00:00,GPU,{cause},gpu006,ticket SR-4411\n")


def _hw(wh: Path) -> dict[str, object]:
    con = duckdb.connect(str(wh.with_name("gpusre.snapshot.duckdb")), read_only=True)
    try:
        return {
            "incidents": con.sql("SELECT incident_id, scope, label_source, operator_id, nodes FROM marts.hw_incidents"
                                 ).fetchall(),
            "attributed": con.sql("SELECT job_id, incident_id FROM marts.job_failure_attribution "
                                  "WHERE attribution = 'infrastructure'").fetchall(),
            "node_failures": con.sql("SELECT node, failures FROM marts.mtbf WHERE scope = 'node' AND failures > 0"
                                     ).fetchall(),
            "cluster_failures": con.sql("SELECT failures FROM marts.mtbf "
                                        "WHERE scope = 'cluster' AND period_type = 'all'").fetchall(),
            "by_operator_id": find_incident(con, "OPS-1")[1]["incident_id"] if con.sql(
                "SELECT count(*) FROM marts.hw_incidents WHERE operator_id IS NOT NULL").fetchall()[0][0] else None,
        }
    finally:
        con.close()


def test_the_pipeline_keeps_the_id_when_the_incident_is_labelled(tmp_path: Path) -> None:
    from gpusre.pipelines.runner import run_pipeline

    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "syslog" / "2026-11-03").mkdir(parents=True)
    (landing / "cluster.yaml").write_text(CLUSTER)
    (landing / "sacct" / "sacct.psv").write_text(SACCT)
    (landing / "syslog" / "2026-11-03" / "gpu006.log").write_text(SYSLOG)
    (landing / "syslog" / "2026-11-03" / "gpu007.log").write_text(  # the logs cover the whole span
        "2026-11-02T00:30:00.000000+00:00 gpu007 sshd[77]: Accepted publickey for alice\n"
        "2026-11-04T12:00:00.000000+00:00 gpu007 sshd[78]: Accepted publickey for bob\n")
    wh = tmp_path / "wh" / "gpusre.duckdb"
    run_pipeline(landing, wh, tmp_path / "r1")
    night2 = _hw(wh)
    inc = incident_id("pcie_bus", T0, "gpu006")  # the Xid 79 line's component, time and node
    assert night2["incidents"] == [(inc, "node", "events", None, ["gpu006"])]
    assert night2["attributed"] == [("1003", inc)]
    assert night2["node_failures"] == [("gpu006", 1)] and night2["cluster_failures"] == [(1,)]

    (landing / "incidents.csv").write_text(LABEL.format(cause="GPU 3 fell off the bus - HGX baseboard RMA"))
    run_pipeline(landing, wh, tmp_path / "r2")
    night3 = _hw(wh)
    assert night3["incidents"] == [(inc, "node", "operator", "OPS-1", ["gpu006"])]
    assert night3["attributed"] == [("1003", inc)]
    assert night3["node_failures"] == [("gpu006", 1)] and night3["cluster_failures"] == [(1,)]
    assert night3["by_operator_id"] == inc

    # The SRE rewrites the root cause a day later: same incident, same id.
    (landing / "incidents.csv").write_text(LABEL.format(cause="HGX baseboard replaced (RMA 7731)"))
    run_pipeline(landing, wh, tmp_path / "r3")
    assert _hw(wh)["incidents"] == [(inc, "node", "operator", "OPS-1", ["gpu006"])]


def test_a_repeated_operator_id_passed_directly_is_one_incident() -> None:
    edited = ("OPS-1", T0 - 5 * M, T0 + timedelta(hours=30), "gpu", "HGX baseboard RMA", "gpu006")
    incidents, members = merge_incidents(EVENTS, operator=operator([OPS_1, edited]))
    labelled = incidents.filter(pl.col("operator_id") == "OPS-1")
    assert labelled.select("incident_id", "root_cause").rows() == [(incident_id("pcie_bus", T0, "gpu006"),
                                                                     "HGX baseboard RMA")]
    assert members.height == 3  # each event in one incident
