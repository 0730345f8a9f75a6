"""An operator marks a tool-made incident as not a failure (a false positive) in ``incidents.csv``.

Found by an outside probe (probe_w, a quarter of 12 nodes): the network team's cable test took gpu01's IB
link DOWN and back ACTIVE ten minutes later; the operator wrote component ``none``, root cause "false
positive: netops cable test". ``none`` was kept as written (class ``other``) and counted as a failure:
November's cluster MTBF 8,524.25 / 5 = 1,705 h instead of 8,524.25 / 4 = 2,131 h, the taxonomy listed
``none`` as a hardware failure, the trend "Other / unclassified 1 vs 0".

Now a row whose component is ``none``, ``false_positive`` or ``not_a_failure`` (any case, spaces or hyphens
for underscores) marks the tool-made incidents it overlaps (same nodes — none = all — overlapping time:
the rule of every operator label) as not a failure: the incident keeps its ``marts.hw_incidents`` row
(label_source ``operator``, the operator's root cause and notes) with component, component class and
cause class ``not_a_failure``, and MTBF, failure rates, the taxonomy, suspect nodes and incident counts
leave it out. A job it killed stays attributed to the infrastructure (the link did go down): its lost
GPU-hours stay in the taxonomy on a ``not_a_failure`` row with 0 incidents. A reserved row overlapping
no tool incident makes no incident. Every expected value below is computed by hand.
"""

from __future__ import annotations

import doctest
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models import vocabulary
from gpusre.models.failures import hw_incidents
from gpusre.models.failures.hw_incidents import incident_id, merge_incidents, not_a_failure_events
from gpusre.models.failures.suspect_nodes import suspect_nodes
from gpusre.models.failures.taxonomy import failure_taxonomy
from gpusre.models.reliability.mtbf import mtbf_around_maintenance, mtbf_table, node_exposure, tbf_weibull
from gpusre.models.reliability.marts import _down_spans
from gpusre.models.sources.incidents.parse import catalog_component, read_operator_incidents
from gpusre.models.vocabulary import NOT_A_FAILURE, failure_incidents, is_failure_incident
from tests.hand_landing import query_rows, run_hand_landing

UTC = timezone.utc
M = timedelta(minutes=1)
H = timedelta(hours=1)
T0 = datetime(2026, 11, 22, 13, 0, tzinfo=UTC)  # the cable test's link DOWN on gpu01 in the probe
LINK_DOWN = ("ib_link_down", None, "network", "hardware", "high", "CHECK_LINK")
XID79 = ("xid", 79, "pcie_bus", "hardware", "critical", "RESTART_BM")


def ev(event_id: int, at: timedelta, node: str, spec: tuple) -> dict:
    kind, code, component, cause, severity, action = spec
    return {"event_id": event_id, "ts": T0 + at, "node": node, "kind": kind, "code": code, "gpu_pci": None,
            "component": component, "cause_class": cause, "severity": severity, "action": action}


def events(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=hw_incidents.EVENT_SCHEMA)


def operator(rows: list[tuple]) -> pl.DataFrame:
    """incidents.csv rows (id, start, end, component, root_cause, nodes, notes), component as parsed."""
    return pl.DataFrame(rows, orient="row", schema=hw_incidents.OPERATOR_SCHEMA)


# gpu01's link DOWN at T0 (the cable test); gpu05's GPU off the bus 5 days later (a real failure).
EVENTS = events([ev(1, 0 * M, "gpu01", LINK_DOWN), ev(2, 5 * 24 * H, "gpu05", XID79)])
FP = ("OPS-103", T0 - 5 * M, T0 + 15 * M, NOT_A_FAILURE, "false positive: netops cable test", "gpu01",
      "not a failure")


# -- parse: the operator's words ---------------------------------------------------------------------------

@pytest.mark.parametrize("written", ["none", "None", " NONE ", "false_positive", "False positive",
                                     "false-positive", "not_a_failure", "Not a failure", "NOT-A-FAILURE"])
def test_reserved_words_become_not_a_failure(written: str) -> None:
    assert catalog_component(pl.Series("component", [written])).to_list() == [NOT_A_FAILURE]


@pytest.mark.parametrize("written", ["nonexistent", "positive", "failure", "network"])
def test_other_words_are_not_reserved(written: str) -> None:
    assert catalog_component(pl.Series("component", [written])).to_list() != [NOT_A_FAILURE]


def test_the_probe_row_loads_as_not_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "incidents.csv"
    path.write_text("id,start,end,component,root_cause,nodes,notes\n"
                    "OPS-103,2026-11-22T12:55:00,2026-11-22T13:15:00,none,false positive: netops cable test "
                    "(planned),gpu01,not a failure\n")
    incidents, rejects = read_operator_incidents(path)
    assert rejects.height == 0
    assert incidents.select("id", "component", "root_cause", "nodes", "notes").row(0) == (
        "OPS-103", NOT_A_FAILURE, "false positive: netops cable test (planned)", "gpu01", "not a failure")


def test_vocabulary_predicate_and_sql_macro_agree() -> None:
    frame = pl.DataFrame({"cause_class": ["hardware", "unknown", None, NOT_A_FAILURE]})
    assert frame.select(is_failure_incident()).to_series().to_list() == [True, True, True, False]
    assert failure_incidents(frame).height == 3
    assert failure_incidents(frame.rename({"cause_class": "other"})).height == 4  # nothing to judge by
    con = duckdb.connect()
    con.execute(vocabulary.sql_macros())
    got = con.sql("SELECT core.is_failure_incident(c) FROM (VALUES ('hardware'), (NULL), ('not_a_failure')) t(c)"
                  ).fetchall()
    assert [r[0] for r in got] == [True, True, False]
    assert doctest.testmod(vocabulary).failed == 0


# -- merge_incidents: the mark -----------------------------------------------------------------------------

def test_a_false_positive_keeps_its_row_marked_not_a_failure() -> None:
    incidents, members = merge_incidents(EVENTS, operator=operator([FP]))
    assert incidents.height == 2
    fp = incidents.filter(pl.col("operator_id") == "OPS-103").row(0, named=True)
    # The id the events gave (component network, T0, gpu01): the report printed it before the label.
    assert fp["incident_id"] == incident_id("network", T0, "gpu01")
    assert (fp["component"], fp["component_class"], fp["cause_class"]) == (NOT_A_FAILURE,) * 3
    assert (fp["label_source"], fp["root_cause"], fp["notes"]) == (
        "operator", "false positive: netops cable test", "not a failure")
    assert (fp["nodes"], fp["n_events"], fp["scope"]) == (["gpu01"], 1, "node")
    # the marked incident's own span (one line at 13:00), not the operator's 12:55 .. 13:15: a mark folds
    # nothing and widens nothing (rule 6)
    assert (fp["start_ts"], fp["end_ts"]) == (T0, T0)
    assert members.filter(pl.col("incident_id") == fp["incident_id"])["event_id"].to_list() == [1]
    # gpu05's Xid 79 is untouched: another node.
    other = incidents.filter(pl.col("operator_id").is_null()).row(0, named=True)
    assert (other["component"], other["cause_class"], other["label_source"]) == ("pcie_bus", "hardware", "events")
    assert not_a_failure_events(incidents, members)["event_id"].to_list() == [1]


def test_a_reserved_row_over_no_tool_incident_makes_none() -> None:
    # OPS-104 names gpu02 (no events there); OPS-105 names gpu01 but a day later: nothing overlaps either.
    rows = [("OPS-104", T0 - 5 * M, T0 + 15 * M, NOT_A_FAILURE, "drill", "gpu02", ""),
            ("OPS-105", T0 + 24 * H, T0 + 25 * H, NOT_A_FAILURE, "drill", "gpu01", "")]
    incidents, _ = merge_incidents(EVENTS, operator=operator(rows))
    assert incidents.height == 2 and incidents["operator_id"].null_count() == 2
    assert incidents["cause_class"].to_list() == ["hardware", "hardware"]
    # Alone, without any event at all: no incident either.
    alone, members = merge_incidents(EVENTS.clear(), operator=operator(rows))
    assert alone.height == 0 and members.height == 0


def test_a_reserved_row_without_nodes_marks_every_overlapping_incident() -> None:
    # A fabric-wide test: empty nodes = the whole cluster (the rule of every operator row). gpu01's and
    # gpu03's links (two separate node incidents: fewer than 3 nodes, no leaf) are each marked, on its own
    # row (a mark folds nothing together); gpu05's Xid 79 five days later does not overlap.
    ev_rows = events([ev(1, 0 * M, "gpu01", LINK_DOWN), ev(2, 2 * M, "gpu03", LINK_DOWN),
                      ev(3, 5 * 24 * H, "gpu05", XID79)])
    row = ("OPS-106", T0 - 5 * M, T0 + 15 * M, NOT_A_FAILURE, "fabric firmware test", None, "")
    incidents, members = merge_incidents(ev_rows, operator=operator([row]))
    marked = incidents.filter(~is_failure_incident())
    assert marked.height == 2 and marked["nodes"].to_list() == [["gpu01"], ["gpu03"]]
    assert marked["n_events"].to_list() == [1, 1] and marked["operator_id"].to_list() == ["OPS-106"] * 2
    assert sorted(not_a_failure_events(incidents, members)["event_id"].to_list()) == [1, 2]
    assert failure_incidents(incidents)["component"].to_list() == ["pcie_bus"]


def test_a_real_label_beside_it_still_counts() -> None:
    # The same link flap labelled "network" by the operator stays a failure (cause class of its evidence).
    row = ("OPS-107", T0 - 5 * M, T0 + 15 * M, "network", "bad cable", "gpu01", "")
    incidents, _ = merge_incidents(EVENTS, operator=operator([row]))
    assert failure_incidents(incidents).height == 2
    assert incidents.filter(pl.col("operator_id") == "OPS-107")["cause_class"].to_list() == ["hardware"]


# -- the counts ------------------------------------------------------------------------------------------

def _incidents() -> pl.DataFrame:
    """The false positive (gpu01, T0) and four real failures: Xid 79 on gpu05 at +5 d, gpu02 at +6 d, gpu03 at
    +7 d, and a link failure on gpu04 at +8 d."""
    ev_rows = events([ev(1, 0 * M, "gpu01", LINK_DOWN), ev(2, 5 * 24 * H, "gpu05", XID79),
                      ev(3, 6 * 24 * H, "gpu02", XID79), ev(4, 7 * 24 * H, "gpu03", XID79),
                      ev(5, 8 * 24 * H, "gpu04", LINK_DOWN)])
    incidents, _ = merge_incidents(ev_rows, operator=operator([FP]))
    return incidents


def test_mtbf_counts_only_failures() -> None:
    # 10 nodes, 2026-11-20 .. 12-01 = 11 days = 264 h each: 2,640 node-hours. Failures: 4 (not 5):
    # cluster MTBF 2,640 / 4 = 660 h; gpu class (pcie_bus) 3 -> 880 h; network 1 (the false positive
    # gone) -> insufficient (min 3); no row for not_a_failure; gpu01 0 failures at node scope.
    incidents = _incidents()
    nodes = [f"gpu{i:02d}" for i in range(1, 11)]
    t0, t1 = datetime(2026, 11, 20, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    mtbf = mtbf_table(incidents, node_exposure(nodes, t0, t1), 8, t0, t1)
    allp = mtbf.filter(pl.col("period") == "all")
    cluster = allp.filter(pl.col("scope") == "cluster").row(0, named=True)
    assert (cluster["failures"], cluster["exposure_hours"], cluster["mtbf_hours"]) == (4, 2640.0, 660.0)
    by_class = {r["component"]: (r["failures"], r["mtbf_hours"])
                for r in allp.filter(pl.col("scope") == "component_class").iter_rows(named=True)}
    # every hardware class of the catalog has a row, 0 failures where none failed (no MTBF point estimate)
    assert by_class == {"gpu": (3, 880.0), "network": (1, None), "host": (0, None), "nvlink": (0, None),
                        "power": (0, None), "storage": (0, None), "thermal": (0, None)}
    assert NOT_A_FAILURE not in allp["component"].to_list()
    node_rows = {r["node"]: r["failures"] for r in allp.filter(pl.col("scope") == "node").iter_rows(named=True)}
    assert node_rows["gpu01"] == 0 and node_rows["gpu05"] == 1
    # November alone (11-20 .. 12-01 is all November): the same 4 failures.
    nov = mtbf.filter((pl.col("period") == "2026-11") & (pl.col("scope") == "cluster"))
    assert nov["failures"].to_list() == [4]
    # The TBF fit and the before/after-maintenance comparison read the same failures.
    assert tbf_weibull(incidents, nodes, t0, t1).equals(tbf_weibull(failure_incidents(incidents), nodes, t0, t1))
    assert mtbf_around_maintenance(incidents, nodes, t0, t1, []).equals(
        mtbf_around_maintenance(failure_incidents(incidents), nodes, t0, t1, []))


def test_mtbf_before_the_mark_counted_five() -> None:
    # The probe's numbers for the old behaviour, to show what changed: the same incidents with the flap's
    # cause class as the evidence gave it count 5 -> 2,640 / 5 = 528 h.
    incidents = _incidents().with_columns(pl.lit("hardware").alias("cause_class"))
    nodes = [f"gpu{i:02d}" for i in range(1, 11)]
    t0, t1 = datetime(2026, 11, 20, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    cluster = mtbf_table(incidents, node_exposure(nodes, t0, t1), 8, t0, t1).filter(
        (pl.col("period") == "all") & (pl.col("scope") == "cluster"))
    assert cluster.select("failures", "mtbf_hours").row(0) == (5, 528.0)


def test_taxonomy_counts_no_marked_incident_but_keeps_the_job_it_killed() -> None:
    # Job j1 died on gpu01 at the flap (infrastructure, the marked incident, 4.0 GPU-h); job j2 on gpu05's
    # Xid 79 (8.0 GPU-h). Taxonomy: pcie_bus/hardware 3 incidents, 3 events, 1 job, 8.0; network/hardware
    # 1, 1, 0, 0.0; not_a_failure 0 incidents, 0 events, 1 job, 4.0 (the lost work still adds up: 12.0).
    incidents = _incidents()
    fp_id = incidents.filter(~is_failure_incident())["incident_id"].item()
    xid_id = incidents.filter(pl.col("nodes").list.contains("gpu05"))["incident_id"].item()
    attribution = pl.DataFrame({
        "job_id": ["j1", "j2"], "attribution": ["infrastructure"] * 2, "incident_id": [fp_id, xid_id],
        "component": [NOT_A_FAILURE, "pcie_bus"], "cause_class": [NOT_A_FAILURE, "hardware"],
        "end_ts": [T0 + 2 * M, T0 + 5 * 24 * H + 2 * M], "lost_gpu_hours": [4.0, 8.0]})
    tax = failure_taxonomy(incidents, attribution, "all")
    rows = {(r["component"], r["cause_class"]): (r["incidents"], r["events"], r["affected_jobs"], r["lost_gpu_hours"])
            for r in tax.iter_rows(named=True)}
    assert rows == {("pcie_bus", "hardware"): (3, 3, 1, 8.0), ("network", "hardware"): (1, 1, 0, 0.0),
                    (NOT_A_FAILURE, NOT_A_FAILURE): (0, 0, 1, 4.0)}
    assert tax["lost_gpu_hours"].sum() == 12.0 and tax["incidents"].sum() == 4
    # Without a job it killed, the marked incident leaves no taxonomy row at all.
    assert NOT_A_FAILURE not in failure_taxonomy(incidents, attribution.filter(pl.col("job_id") == "j2"),
                                                 "month")["component"].to_list()


def test_down_spans_leave_the_false_positive_out() -> None:
    # Without node states, availability is estimated from incidents: the cable test is no unplanned outage.
    incidents = _incidents().with_columns(pl.lit(None, pl.Datetime("us", "UTC")).alias("recovered_ts"))
    t1 = T0 + 10 * 24 * H
    assert "gpu01" in _down_spans(incidents, t1)["node"].to_list()
    assert "gpu01" not in _down_spans(failure_incidents(incidents), t1)["node"].to_list()


def test_suspect_nodes_ignore_marked_events_and_jobs() -> None:
    # 10 nodes; gpu01's link flapped in 3 cable tests (3 episodes, days apart), each marked not a failure,
    # and 3 jobs died on it in those tests. Fleet median 0, MAD 0 -> floor 1: z = 3 -> suspect without the
    # marks; with them gpu01 has 0 episodes and 0 infrastructure-failed jobs -> not suspect.
    ev_rows = events([ev(i, (i - 1) * 24 * H, "gpu01", LINK_DOWN) for i in (1, 2, 3)])
    fp_rows = [(f"OPS-{i}", T0 + (i - 1) * 24 * H - 5 * M, T0 + (i - 1) * 24 * H + 15 * M, NOT_A_FAILURE, "test",
                "gpu01", "") for i in (1, 2, 3)]
    incidents, members = merge_incidents(ev_rows, operator=operator(fp_rows))
    assert incidents.height == 3 and incidents.filter(is_failure_incident()).height == 0
    jobs = pl.DataFrame({"job_id": ["j1", "j2", "j3"], "state": ["FAILED"] * 3, "nodes": [["gpu01"]] * 3,
                         "end_ts": [T0 + (i * 24 + 0.05) * H for i in range(3)]},
                        schema={"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String),
                                "end_ts": pl.Datetime("us", "UTC")})
    attribution = pl.DataFrame({"job_id": ["j1", "j2", "j3"], "attribution": ["infrastructure"] * 3,
                                "cause_class": [NOT_A_FAILURE] * 3})
    fleet = [f"gpu{i:02d}" for i in range(1, 11)]
    as_of = T0 + 10 * 24 * H
    before = suspect_nodes(ev_rows, attribution.drop("cause_class"), jobs, as_of=as_of, fleet=fleet)
    assert before["node"].to_list() == ["gpu01"]
    after = suspect_nodes(ev_rows, attribution, jobs, as_of=as_of, fleet=fleet,
                          not_failure_events=not_a_failure_events(incidents, members))
    assert after.height == 0


# -- one small pipeline run ------------------------------------------------------------------------------

_SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
                 "Elapsed|Timelimit|NNodes|NCPUS|ReqTRES|AllocTRES|NodeList|Comment")
_TRES = "billing=96,cpu=96,gres/gpu=8,mem=512G,node=1"


def _job(job_id: int, node: str, state: str, exit_code: str, start: str, end: str, elapsed: str) -> str:
    return (f"{job_id}|{job_id}|job-{job_id}|bob|1002|llm|llm|gpu|normal|{state}|{exit_code}|{start}|{start}|{start}|"
            f"{end}|{elapsed}|20:00:00|1|96|{_TRES}|{_TRES}|{node}|")


def _log(day: date, node: str, extra: list[str]) -> str:
    month = day.strftime("%b")
    cron = [f"{month} {day.day:2d} {h:02d}:17:01 {node} CRON[{2000 + h}]: (root) CMD (   cd / && run-parts "
            "--report /etc/cron.hourly)" for h in (0, 6, 12, 18, 23)]
    return "\n".join(sorted(cron + extra)) + "\n"


def _xid79(day: int, hh: str, node: str) -> str:
    return (f"Dec  {day} {hh}:00 {node} kernel: [1150000.000001] NVRM: Xid (PCI:0000:9b:00): 79, pid='<unknown>', "
            "name=<unknown>, GPU has fallen off the bus.")


# 3 nodes x 8 GPUs, UTC, 2026-12-01 .. 12-02 (no node states: exposure = 3 x 48 = 144 node-hours).
# Real failures: Xid 79 on gpu02 12-01 05:00, gpu03 12-01 15:00, gpu02 12-02 10:00. The cable test: gpu01's
# IB link DOWN 12-02 13:00, ACTIVE 13:10, job 11 on gpu01 (12:00 ..) killed at 13:02. incidents.csv marks it
# "None" (OPS-103) and has an operator-only "false_positive" row on gpu03 (OPS-104: nothing under it).
LANDING = {
    "cluster.yaml": 'cluster: tiny\ntimezone: UTC\nnodes: "gpu[01-03]"\ngpus_per_node: 8\n',
    "sacct/sacct_2026-12-01.psv": "\n".join([
        _SACCT_HEADER,
        _job(10, "gpu01", "COMPLETED", "0:0", "2026-12-01T00:30:00", "2026-12-01T02:00:00", "01:30:00")]) + "\n",
    "sacct/sacct_2026-12-02.psv": "\n".join([
        _SACCT_HEADER,
        _job(11, "gpu01", "FAILED", "1:0", "2026-12-02T12:00:00", "2026-12-02T13:02:00", "01:02:00"),
        _job(12, "gpu01", "COMPLETED", "0:0", "2026-12-02T20:00:00", "2026-12-02T23:30:00", "03:30:00")]) + "\n",
    "incidents.csv": "id,start,end,component,root_cause,nodes,notes\n"
                     "OPS-103,2026-12-02T12:55:00,2026-12-02T13:15:00,None,false positive: netops cable test,"
                     "gpu01,not a failure\n"
                     "OPS-104,2026-12-01T20:00:00,2026-12-01T21:00:00,false_positive,drill,gpu03,nothing failed\n",
    **{f"syslog/{d.isoformat()}/{n}.log": _log(d, n, extra) for d, n, extra in [
        (date(2026, 12, 1), "gpu01", []),
        (date(2026, 12, 1), "gpu02", [_xid79(1, "05:00", "gpu02")]),
        (date(2026, 12, 1), "gpu03", [_xid79(1, "15:00", "gpu03")]),
        (date(2026, 12, 2), "gpu01", [
            "Dec  2 13:00:00 gpu01 kernel: [1200000.000001] mlx5_core 0000:0c:00.0 mlx5_1: Port: 1 Link DOWN",
            "Dec  2 13:10:00 gpu01 kernel: [1200600.000001] mlx5_core 0000:0c:00.0 mlx5_1: Port: 1 Link ACTIVE"]),
        (date(2026, 12, 2), "gpu02", [_xid79(2, "10:00", "gpu02")]),
        (date(2026, 12, 2), "gpu03", [])]},
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("false_positive"), LANDING)


def test_pipeline_keeps_the_row_and_counts_three_failures(warehouse: Path) -> None:
    rows = query_rows(warehouse, "SELECT component, component_class, cause_class, label_source, operator_id, "
                                 "root_cause, notes, nodes FROM marts.hw_incidents ORDER BY start_ts")
    assert len(rows) == 4  # 3 Xid 79 + the marked flap; OPS-104 makes none
    marked = [r for r in rows if r[4] == "OPS-103"]
    assert marked == [(NOT_A_FAILURE, NOT_A_FAILURE, NOT_A_FAILURE, "operator", "OPS-103",
                       "false positive: netops cable test", "not a failure", ["gpu01"])]
    assert "OPS-104" not in [r[4] for r in rows]
    # The reports' incident count, through the SQL macro: 3.
    assert query_rows(warehouse, "SELECT count(*) FROM marts.hw_incidents "
                                 "WHERE core.is_failure_incident(cause_class)") == [(3,)]


def test_pipeline_mtbf_is_over_three_failures(warehouse: Path) -> None:
    # 144 node-hours / 3 = 48.0 h (with the flap it was 144 / 4 = 36.0 h); gpu class 3 -> 48.0; no network row.
    got = {(r[0], r[1]): (r[2], r[3], r[4]) for r in query_rows(
        warehouse, "SELECT scope, component, failures, exposure_hours, mtbf_hours FROM marts.mtbf "
                   "WHERE period = 'all' AND scope IN ('cluster', 'component_class')")}
    assert got[("cluster", "all")] == (3, pytest.approx(144.0), pytest.approx(48.0))
    assert got[("component_class", "gpu")] == (3, pytest.approx(144.0), pytest.approx(48.0))
    # the false positive was the only network incident: network failed 0 times (its row says so), and
    # not_a_failure is no class
    assert got[("component_class", "network")] == (0, pytest.approx(144.0), None)
    assert ("component_class", NOT_A_FAILURE) not in got
    assert query_rows(warehouse, "SELECT failures FROM marts.mtbf WHERE period = 'all' AND scope = 'node' "
                                 "AND node = 'gpu01'") == [(0,)]
    # r_f: 3 failures over 144 / 24 = 6 node-days = 500 per 1,000 node-days.
    assert query_rows(warehouse, "SELECT failures, rate_per_1000_node_days FROM marts.node_failure_rate "
                                 "WHERE period = 'all' AND variant = 'hw_incidents'") == [(3, pytest.approx(500.0))]


def test_pipeline_taxonomy_and_attribution(warehouse: Path) -> None:
    # Job 11 stays infrastructure (the link went down under it), on the marked incident, 8 GPUs x 0.5 h lost
    # (1 h 2 min >= the 1 h checkpoint interval: half an interval) = 4.0 GPU-h.
    attr = query_rows(warehouse, "SELECT job_id, attribution, component, cause_class, lost_gpu_hours "
                                 "FROM marts.job_failure_attribution")
    assert attr == [("11", "infrastructure", NOT_A_FAILURE, NOT_A_FAILURE, pytest.approx(4.0))]
    tax = {(r[0], r[1]): (r[2], r[3], r[4], r[5]) for r in query_rows(
        warehouse, "SELECT component, cause_class, incidents, events, affected_jobs, lost_gpu_hours "
                   "FROM marts.failure_taxonomy WHERE period_type = 'all'")}
    assert {k: v[0] for k, v in tax.items()} == {("pcie_bus", "hardware"): 3, (NOT_A_FAILURE, NOT_A_FAILURE): 0}
    assert tax[(NOT_A_FAILURE, NOT_A_FAILURE)] == (0, 0, 1, pytest.approx(4.0))
    assert tax[("pcie_bus", "hardware")][2:] == (0, pytest.approx(0.0))
