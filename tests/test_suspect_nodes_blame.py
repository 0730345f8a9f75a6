"""Suspect nodes blame a failed job on the node its fault was on (models/failures/suspect_nodes.py).

One node's fault kills a job on many nodes; before, every node of the job counted it, and on the benchmark
year (2,000 nodes, jobs up to 1,000 nodes) 194 nodes were suspect, 172 of them on NODE_FAIL counts alone
(fleet median 5 NODE_FAIL jobs in 28 days). Hand-made fleets of 10 nodes; robust z as in test_suspect_nodes.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl

from gpusre.models.failures.attribution import AttributionEvidence, attribute_failures_with, prepare_evidence
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, merge_incidents, shared_part_events
from gpusre.models.failures.suspect_nodes import suspect_nodes

AS_OF = datetime(2025, 3, 29, tzinfo=timezone.utc)
FLEET = [f"n{i:02d}" for i in range(1, 11)]
JOB_SCHEMA = {"job_id": pl.String, "state": pl.String, "end_ts": pl.Datetime("us", "UTC"), "nodes": pl.List(pl.String)}
BLAME_SCHEMA = {"job_id": pl.String, "attribution": pl.String, "evidence_nodes": pl.List(pl.String),
                "incident_id": pl.String}
NO_EVENTS = pl.DataFrame(schema=EVENT_SCHEMA)


def _jobs(n: int, nodes: list[str], state: str = "NODE_FAIL") -> pl.DataFrame:
    """``n`` jobs on ``nodes``, ending 1..n days before AS_OF."""
    return pl.DataFrame([{"job_id": str(i), "state": state, "end_ts": AS_OF - timedelta(days=i), "nodes": nodes}
                         for i in range(1, n + 1)], schema=JOB_SCHEMA)


def _blame(n: int, evidence_nodes: list[str], incident: str | None = None) -> pl.DataFrame:
    return pl.DataFrame([{"job_id": str(i), "attribution": "infrastructure", "evidence_nodes": evidence_nodes,
                          "incident_id": incident} for i in range(1, n + 1)], schema=BLAME_SCHEMA)


def test_multi_node_job_counts_on_the_node_its_evidence_is_on() -> None:
    # 4 NODE_FAIL jobs on all ten nodes, each with its evidence on n07 (n07's DOWN, its Xid): n07 alone has
    # 4 NODE_FAIL and 4 infra jobs, the fleet 0 -> z 4; the nine others count nothing.
    out = suspect_nodes(NO_EVENTS, _blame(4, ["n07"]), _jobs(4, FLEET), as_of=AS_OF, fleet=FLEET)
    assert out["node"].to_list() == ["n07"]
    row = out.row(0, named=True)
    assert (row["infra_failed_jobs"], row["node_fail_jobs"]) == (4, 4)
    # Control: the same jobs without evidence columns count on every node: fleet median 4, MAD 0 -> nobody
    # stands out (which is what hid a lemon among the nodes of large jobs).
    legacy = _blame(4, ["n07"]).select("job_id", "attribution")
    assert suspect_nodes(NO_EVENTS, legacy, _jobs(4, FLEET), as_of=AS_OF, fleet=FLEET).is_empty()


def test_job_without_evidence_counts_only_when_it_ran_on_one_node() -> None:
    # n02 ran 3 one-node NODE_FAIL jobs without evidence: the failing node can only be n02 -> z 3.
    # Three 5-node NODE_FAIL jobs without evidence on n03..n07: which node failed cannot be told -> none.
    one = _jobs(3, ["n02"])
    many = _jobs(3, ["n03", "n04", "n05", "n06", "n07"]).with_columns(pl.col("job_id") + "m")
    blame = pl.concat([_blame(3, []), _blame(3, []).with_columns(pl.col("job_id") + "m")])
    out = suspect_nodes(NO_EVENTS, blame, pl.concat([one, many]), as_of=AS_OF, fleet=FLEET)
    assert out["node"].to_list() == ["n02"]
    assert out.row(0, named=True)["node_fail_jobs"] == 3


def test_shared_part_incident_is_no_failure_of_its_nodes() -> None:
    # A leaf switch failed three times: each time links went down on n01..n04 (Link DOWN lines, one
    # episode per node per failure) and a job on those nodes died. The incidents are leaf_switch scope:
    # the switch is the lemon, not the nodes; without the shared list each node would have 3 episodes.
    specs = []
    for day in (2, 9, 16):
        for node in ("n01", "n02", "n03", "n04"):
            specs.append({"ts": AS_OF - timedelta(days=day), "node": node})
    ev = pl.DataFrame([{"event_id": i, "ts": s["ts"], "node": s["node"], "kind": "ib_link_down", "code": None,
                        "gpu_pci": None, "component": "network", "cause_class": "hardware", "severity": "high",
                        "action": "CHECK_LINK"} for i, s in enumerate(specs, start=1)], schema=EVENT_SCHEMA)
    incidents, members = merge_incidents(ev, topology={"leaf01": ["n01", "n02", "n03", "n04"]})
    assert incidents["scope"].unique().to_list() == ["leaf_switch"]
    shared = shared_part_events(incidents, members)
    assert shared.height == 12
    jobs = pl.DataFrame([{"job_id": str(d), "state": "FAILED", "end_ts": AS_OF - timedelta(days=d, minutes=-1),
                          "nodes": ["n01", "n02", "n03", "n04"]} for d in (2, 9, 16)], schema=JOB_SCHEMA)
    inc_of = dict(zip(incidents.sort("start_ts")["incident_id"].to_list(), (16, 9, 2)))
    blame = pl.DataFrame([{"job_id": str(d), "attribution": "infrastructure",
                           "evidence_nodes": ["n01", "n02", "n03", "n04"], "incident_id": i}
                          for i, d in inc_of.items()], schema=BLAME_SCHEMA)
    assert suspect_nodes(ev, blame, jobs, as_of=AS_OF, fleet=FLEET, shared=shared).is_empty()
    flagged = suspect_nodes(ev, blame, jobs, as_of=AS_OF, fleet=FLEET)
    assert sorted(flagged["node"].to_list()) == ["n01", "n02", "n03", "n04"]  # the old reading


def test_attribution_names_the_evidence_nodes() -> None:
    # A 3-node job FAILED 1 min after an Xid 79 on n02; a 2-node job ended NODE_FAIL while n05 went DOWN
    # (Slurm node state, no log line); a 2-node NODE_FAIL without any evidence.
    t = AS_OF - timedelta(days=1)
    ev = pl.DataFrame([{"event_id": 1, "ts": t - timedelta(minutes=1), "node": "n02", "kind": "xid", "code": 79,
                        "gpu_pci": None, "component": "pcie_bus", "cause_class": "hardware", "severity": "critical",
                        "action": "RESTART_BM"}], schema=EVENT_SCHEMA)
    jobs = pl.DataFrame([
        {"job_id": "10", "state": "FAILED", "nodes": ["n01", "n02", "n03"], "end_ts": t},
        {"job_id": "11", "state": "NODE_FAIL", "nodes": ["n04", "n05"], "end_ts": t + timedelta(hours=2)},
        {"job_id": "12", "state": "NODE_FAIL", "nodes": ["n06", "n07"], "end_ts": t + timedelta(hours=5)},
    ]).with_columns(pl.col("end_ts").cast(pl.Datetime("us", "UTC")),
                    (pl.col("end_ts") - timedelta(hours=3)).cast(pl.Datetime("us", "UTC")).alias("start_ts"),
                    pl.lit(10_800).alias("elapsed_s"), pl.lit(8).alias("n_gpus"), pl.lit(None, pl.String).alias("cancelled_by"),
                    pl.lit(1).alias("exit_code"), pl.lit(0).alias("exit_signal"), pl.lit("a").alias("account"),
                    pl.lit(None, pl.String).alias("het_job_id"), pl.lit(3600).alias("checkpoint_interval_s"))
    outages = pl.DataFrame([{"node": "n05", "start_ts": t + timedelta(hours=2, seconds=-30), "end_ts": None,
                             "component": "node", "evidence": 'DOWN "Not responding" since …'}],
                           schema={"node": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                                   "end_ts": pl.Datetime("us", "UTC"), "component": pl.String, "evidence": pl.String})
    incidents, _ = merge_incidents(ev)
    evidence: AttributionEvidence = prepare_evidence(ev, incidents, outages, None, None)
    out = attribute_failures_with(jobs, evidence).sort("job_id")
    assert out["attribution"].to_list() == ["infrastructure"] * 3
    assert out["evidence_nodes"].to_list() == [["n02"], ["n05"], []]
