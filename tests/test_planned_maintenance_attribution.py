"""Jobs planned maintenance ended are ``planned``, not infrastructure failures (rule 2p of
models/failures/attribution.py), on hand-built frames and end to end on the probe's landing.

The maintenance: nodes drained ``maint: firmware upgrade`` 06:00-12:00 (a planned-maintenance period,
:func:`~gpusre.models.failures.hw_incidents.planned_maintenance`). A job whose end falls from 10 min
(the attribution ``before`` window) ahead of the period's start to its end, with no fault of its own, was
ended by the maintenance. Lost GPU-hours: hourly checkpoints, phase unknown: n_gpus × 0.5 h for a job
that ran for an hour or more.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest

from gpusre.models.failures.attribution import PLANNED_RULE, attribute_failures
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, merge_incidents, planned_maintenance
from gpusre.models.reliability.goodput import PREEMPTION, interruption_cause
from gpusre.models.vocabulary import ATTRIBUTIONS, INFRASTRUCTURE, PLANNED, PLANNED_CAUSE_CLASS, PLANNED_COMPONENT

from tests.hand_landing import query_rows, run_hand_landing

UTC = timezone.utc
M = timedelta(minutes=1)
H = timedelta(hours=1)


def t(h: int, m: int = 0, s: int = 0) -> datetime:
    return datetime(2026, 11, 25, h, m, s, tzinfo=UTC)


#: gpu[019-024]-like nodes n1..n3 drained for maintenance 06:00-12:00; n9 is not.
PLANNED_PERIODS = pl.DataFrame({"node": ["n1", "n2", "n3"], "start_ts": [t(6)] * 3, "end_ts": [t(12)] * 3},
                               schema={"node": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                                       "end_ts": pl.Datetime("us", "UTC")})

XID79 = ("xid", 79, "pcie_bus", "hardware", "critical", "RESTART_BM")
XID13 = ("xid", 13, "user_application", "user_application", "medium", "RESTART_APP")


def ev(event_id: int, ts: datetime, node: str, spec: tuple) -> dict:
    kind, code, component, cause, severity, action = spec
    return {"event_id": event_id, "ts": ts, "node": node, "kind": kind, "code": code, "gpu_pci": None,
            "component": component, "cause_class": cause, "severity": severity, "action": action}


def job(job_id: str, state: str, nodes: list[str], end: datetime, *, elapsed: timedelta = 7 * H, n_gpus: int = 8,
        exit_code: int = 0, exit_signal: int = 0, cancelled_by: int | None = None) -> dict:
    return {"job_id": job_id, "state": state, "nodes": nodes, "n_gpus": n_gpus, "start_ts": end - elapsed,
            "end_ts": end, "elapsed_s": int(elapsed.total_seconds()), "exit_code": exit_code,
            "exit_signal": exit_signal, "cancelled_by": cancelled_by}


JOB_SCHEMA = {"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
              "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"), "elapsed_s": pl.Int64,
              "exit_code": pl.Int64, "exit_signal": pl.Int64, "cancelled_by": pl.Int64}

INCIDENT_COLUMNS = {"incident_id": pl.String, "component": pl.String, "cause_class": pl.String, "severity": pl.String,
                    "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"),
                    "nodes": pl.List(pl.String), "label_source": pl.String}


def attribute(job_rows: list[dict], event_rows: list[dict], *, planned: pl.DataFrame | None = PLANNED_PERIODS,
              incidents: pl.DataFrame | None = None) -> dict[str, dict]:
    events = pl.DataFrame(event_rows, schema=EVENT_SCHEMA)
    if incidents is None:
        incidents, _ = merge_incidents(events, planned=planned)
    out = attribute_failures(pl.DataFrame(job_rows, schema=JOB_SCHEMA), events, incidents, planned=planned)
    return {r["job_id"]: r for r in out.iter_rows(named=True)}


def test_attribution_values_defined_once() -> None:
    assert ATTRIBUTIONS == ("infrastructure", "planned", "user", "unknown")
    assert (PLANNED_COMPONENT, PLANNED_CAUSE_CLASS) == ("maintenance", "planned_maintenance")


def test_jobs_ended_by_the_maintenance_are_planned() -> None:
    out = attribute([
        # the probe's 2005: NODE_FAIL 6 min into the drain (the reboot), ran 7.1 h, 8 GPUs
        job("2005", "NODE_FAIL", ["n3"], t(6, 6), elapsed=timedelta(hours=7, minutes=6)),
        # the probe's 2003: cancelled by root 30 s after the drain began, ran 12 h
        job("2003", "CANCELLED", ["n2"], t(6, 0, 30), elapsed=12 * H, exit_signal=15, cancelled_by=0),
        # killed by signal as the drain began 8 min later (inside the 10-min before window)
        job("sig", "FAILED", ["n1"], t(5, 52), exit_signal=9),
        job("rq", "REQUEUED", ["n1"], t(9)),
        # two nodes, one of them in maintenance
        job("multi", "NODE_FAIL", ["n9", "n2"], t(11, 59), n_gpus=16),
    ], [])
    for j in ("2005", "2003", "sig", "rq", "multi"):
        r = out[j]
        assert (r["attribution"], r["rule"], r["component"], r["cause_class"]) == (
            PLANNED, PLANNED_RULE, "maintenance", "planned_maintenance"), j
        assert r["incident_id"] is None and r["evidence_event_ids"] == []
    # 8 GPUs × half an hourly checkpoint interval = 4.0 GPU-h, charged to the maintenance
    assert out["2005"]["lost_gpu_hours"] == pytest.approx(4.0)
    assert out["2003"]["lost_gpu_hours"] == pytest.approx(4.0)
    assert out["multi"]["lost_gpu_hours"] == pytest.approx(8.0)


def test_outside_the_maintenance_nothing_changes() -> None:
    out = attribute([
        job("early", "CANCELLED", ["n1"], t(5, 45), cancelled_by=0),  # 15 min before the drain: no evidence
        job("after", "NODE_FAIL", ["n1"], t(12, 1)),  # after its end
        job("other", "NODE_FAIL", ["n9"], t(6, 6)),  # a node not in maintenance
    ], [])
    assert out["early"]["attribution"] == "unknown"
    assert (out["after"]["attribution"], out["after"]["rule"]) == (INFRASTRUCTURE, "node failure without evidence")
    assert out["other"]["attribution"] == INFRASTRUCTURE
    # without the maintenance known, the 2005 case is what the probe found: node failure without evidence
    bare = attribute([job("2005", "NODE_FAIL", ["n3"], t(6, 6))], [], planned=None)
    assert (bare["2005"]["attribution"], bare["2005"]["lost_gpu_hours"]) == (INFRASTRUCTURE, pytest.approx(4.0))


def test_own_evidence_wins_over_planned() -> None:
    out = attribute([
        # a GPU that fell off the bus 2 min before the drain: found before the maintenance, a failure
        job("fault", "NODE_FAIL", ["n1"], t(6, 2)),
        # the application's crash (Xid 13) as the drain began: still the user's
        job("crash", "FAILED", ["n2"], t(6, 1), exit_code=1),
        # a job limit is the user's
        job("limit", "TIMEOUT", ["n3"], t(7)),
    ], [ev(1, t(5, 58), "n1", XID79), ev(2, t(6, 0, 30), "n2", XID13)])
    assert (out["fault"]["attribution"], out["fault"]["component"]) == (INFRASTRUCTURE, "pcie_bus")
    assert out["fault"]["evidence_event_ids"] == [1]
    assert out["crash"]["attribution"] == "user"
    assert out["limit"]["attribution"] == "user"


def test_maintenance_lines_are_no_evidence() -> None:
    # the flash loses a GPU on the drained node at 06:04: the maintenance's work, not the job's killer
    out = attribute([job("2005", "NODE_FAIL", ["n3"], t(6, 6))], [ev(1, t(6, 4), "n3", XID79)])
    assert out["2005"]["attribution"] == PLANNED


def _incident(component: str, cause: str, label_source: str) -> pl.DataFrame:
    return pl.DataFrame({"incident_id": ["inc-1"], "component": [component], "cause_class": [cause],
                         "severity": ["high"], "start_ts": [t(6)], "end_ts": [t(12)], "nodes": [["n1", "n2", "n3"]],
                         "label_source": [label_source]}, schema=INCIDENT_COLUMNS)


def test_planned_wins_over_a_not_a_failure_incident_but_not_over_a_real_one() -> None:
    jobs = [job("2005", "NODE_FAIL", ["n3"], t(6, 6)), job("2003", "CANCELLED", ["n2"], t(6, 0, 30), cancelled_by=0)]
    # the probe's landing2: the maintenance written in incidents.csv as component not_a_failure
    dismissed = attribute(jobs, [], incidents=_incident("not_a_failure", "not_a_failure", "operator"))
    assert {j: r["attribution"] for j, r in dismissed.items()} == {"2005": PLANNED, "2003": PLANNED}
    # an operator's real incident in the same hours: a fault, so the infrastructure's
    real = attribute(jobs, [], incidents=_incident("gpu", "hardware", "operator"))
    assert {j: (r["attribution"], r["incident_id"]) for j, r in real.items()} == {
        "2005": (INFRASTRUCTURE, "inc-1"), "2003": (INFRASTRUCTURE, "inc-1")}
    # no maintenance known: the not-a-failure incident keeps its old reading (no change outside maintenance)
    bare = attribute(jobs, [], planned=None, incidents=_incident("not_a_failure", "not_a_failure", "operator"))
    assert bare["2005"]["rule"] == "incident covers job end"


def test_cluster_wide_window_covers_every_node() -> None:
    # a cluster.yaml window naming no node, without a fleet list: node null = every node
    periods = planned_maintenance(None, [_span(t(6), t(12), None)], None)
    assert periods["node"].to_list() == [None]
    out = attribute([job("x", "NODE_FAIL", ["n7"], t(8))], [], planned=periods)
    assert out["x"]["attribution"] == PLANNED


def _span(start: datetime, end: datetime, nodes: frozenset[str] | None):
    from gpusre.models.reliability.mtbf import MaintenanceSpan
    return MaintenanceSpan(start, end, nodes, "firmware")


def test_goodput_charges_a_planned_node_fail_to_maintenance_not_failure() -> None:
    # The planned NODE_FAIL is an interruption of its own cause (goodput's lost_maintenance), not the
    # infrastructure's (lost_failure); a preemption is neither.
    inst = pl.DataFrame({"job_id": ["2005", "9", "11"], "instance_no": [1, 1, 1],
                         "state": ["NODE_FAIL", "NODE_FAIL", "PREEMPTED"]})
    attr = pl.DataFrame({"job_id": ["2005", "9"], "instance_no": [1, 1], "attribution": [PLANNED, INFRASTRUCTURE]})
    assert interruption_cause(inst, attr).to_list() == [PLANNED, INFRASTRUCTURE, PREEMPTION]


# --- end to end: the probe's landing (24 H100 nodes, 4 days, CHG-4411 on gpu[019-024] 11-25 06:00-12:00) ---

_USERS = {"u1": 1001, "u2": 1002, "u3": 1003, "u4": 1004, "u5": 1005, "u6": 1006, "alice": 2001, "bob": 2002,
          "carol": 2003, "dave": 2004, "erin": 2005, "frank": 2006, "gina": 2007}
_HDR = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
        "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")
_BOOT = "Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023"


def _T(s: str) -> datetime:
    return datetime.fromisoformat(s)


def _fmt(x: datetime | None) -> str:
    return x.strftime("%Y-%m-%dT%H:%M:%S") if x else "Unknown"


def _dur(sec: float) -> str:
    d, r = divmod(int(sec), 86400)
    h, r = divmod(r, 3600)
    m, s = divmod(r, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def _instances() -> list[dict]:
    """The probe's 98 GPU jobs (101 runs): 72 COMPLETED fillers on 12 nodes and the hand-labelled ones."""
    out: list[dict] = []

    def J(jid, name, user, acct, qos, state, exitc, submit, start, end, nodelist, nnodes, gpus, tl="1-00:00:00",
          steps=None, eligible=None):
        out.append(dict(jid=jid, name=name, user=user, acct=acct, qos=qos, state=state, exit=exitc, submit=_T(submit),
                        eligible=_T(eligible or submit), start=_T(start), end=_T(end), tl=tl, nodelist=nodelist,
                        nnodes=nnodes, gpus=gpus, steps=steps))
    jid = 1001
    for i, n in enumerate([1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13, 14]):
        for k in range(6):
            s = _T("2026-11-24T00:30:00") + timedelta(hours=16 * k)
            J(str(jid), f"train_{jid}", f"u{1 + (i + k) % 6}", "research", "normal", "COMPLETED", "0:0",
              (s - timedelta(minutes=20)).isoformat(), s.isoformat(), (s + timedelta(hours=14)).isoformat(),
              f"gpu{n:03d}", 1, 8)
            jid += 1
    J("2001", "ft_a", "gina", "llm", "normal", "COMPLETED", "0:0", "2026-11-24T19:50:00", "2026-11-24T20:00:00", "2026-11-25T05:40:00", "gpu019", 1, 8)
    J("2002", "ft_b", "gina", "llm", "normal", "COMPLETED", "0:0", "2026-11-24T21:50:00", "2026-11-24T22:00:00", "2026-11-25T05:55:00", "gpu[020-021]", 2, 16)
    J("2003", "sweep_c", "u4", "research", "normal", "CANCELLED by 0", "0:15", "2026-11-24T17:50:00", "2026-11-24T18:00:00", "2026-11-25T06:00:30", "gpu022", 1, 8, tl="2-00:00:00")
    J("2004", "ft_d", "gina", "llm", "normal", "COMPLETED", "0:0", "2026-11-25T00:50:00", "2026-11-25T01:00:00", "2026-11-25T05:58:00", "gpu023", 1, 8, tl="05:00:00")
    J("2005", "eval_e", "u5", "research", "normal", "NODE_FAIL", "0:0", "2026-11-24T22:50:00", "2026-11-24T23:00:00", "2026-11-25T06:06:00", "gpu024", 1, 8, tl="2-00:00:00")
    J("2006", "dbe_victim", "u6", "research", "normal", "FAILED", "1:0", "2026-11-25T12:20:00", "2026-11-25T12:30:00", "2026-11-25T13:01:00", "gpu020", 1, 8)
    J("2007", "post_maint_big", "gina", "llm", "normal", "COMPLETED", "0:0", "2026-11-25T12:20:00", "2026-11-25T12:30:00", "2026-11-25T23:30:00", "gpu[021-024]", 4, 32)
    J("2008", "post_maint_a", "u1", "research", "normal", "COMPLETED", "0:0", "2026-11-25T12:05:00", "2026-11-25T12:15:00", "2026-11-25T22:00:00", "gpu019", 1, 8)
    J("2009", "after_rma", "u2", "research", "normal", "COMPLETED", "0:0", "2026-11-25T19:20:00", "2026-11-25T19:30:00", "2026-11-26T08:00:00", "gpu020", 1, 8)
    J("2029", "late_big", "gina", "llm", "normal", "COMPLETED", "0:0", "2026-11-27T09:50:00", "2026-11-27T10:00:00", "2026-11-27T23:30:00", "gpu[021-024]", 4, 32)
    J("2011", "scav_bob", "bob", "research", "scavenger", "PREEMPTED", "0:15", "2026-11-24T01:50:00", "2026-11-24T02:00:00", "2026-11-24T10:00:00", "gpu[016-017]", 2, 16)
    J("2012", "prio_alice", "alice", "prod", "high", "COMPLETED", "0:0", "2026-11-24T09:55:00", "2026-11-24T10:01:00", "2026-11-24T20:00:00", "gpu[016-017]", 2, 16)
    J("2013", "scav_carol", "carol", "research", "scavenger", "PREEMPTED", "0:15", "2026-11-24T02:50:00", "2026-11-24T03:00:00", "2026-11-24T11:00:00", "gpu018", 1, 8)
    J("2013", "scav_carol", "carol", "research", "scavenger", "COMPLETED", "0:0", "2026-11-24T11:00:00", "2026-11-24T21:00:00", "2026-11-25T03:00:00", "gpu018", 1, 8, eligible="2026-11-24T11:02:00")
    J("2014", "prio_alice2", "alice", "prod", "high", "COMPLETED", "0:0", "2026-11-24T10:58:00", "2026-11-24T11:01:00", "2026-11-24T20:30:00", "gpu018", 1, 8)
    J("2015", "req_dave", "dave", "research", "normal", "REQUEUED", "0:0", "2026-11-24T23:50:00", "2026-11-25T00:00:00", "2026-11-25T02:00:00", "gpu016", 1, 8)
    J("2015", "req_dave", "dave", "research", "normal", "COMPLETED", "0:0", "2026-11-25T02:00:00", "2026-11-25T02:10:00", "2026-11-25T09:00:00", "gpu016", 1, 8, eligible="2026-11-25T02:02:00")
    J("2016", "llm_erin", "erin", "llm", "normal", "NODE_FAIL", "0:0", "2026-11-26T07:50:00", "2026-11-26T08:00:00", "2026-11-26T20:00:00", "gpu[010,018]", 2, 16, tl="2-00:00:00")
    J("2016", "llm_erin", "erin", "llm", "normal", "COMPLETED", "0:0", "2026-11-26T20:00:00", "2026-11-26T20:10:00", "2026-11-27T06:10:00", "gpu[016-017]", 2, 16, tl="2-00:00:00", eligible="2026-11-26T20:02:00")
    J("2017", "hung_frank", "frank", "research", "normal", "CANCELLED by 0", "0:15", "2026-11-26T03:50:00", "2026-11-26T04:00:00", "2026-11-26T10:20:00", "gpu005", 1, 8)
    J("2019", "to_job", "u3", "research", "normal", "TIMEOUT", "0:0", "2026-11-24T00:50:00", "2026-11-24T01:00:00", "2026-11-24T05:00:30", "gpu015", 1, 8, tl="04:00:00")
    J("2020", "oom_job", "u3", "research", "normal", "OUT_OF_MEMORY", "0:125", "2026-11-24T05:50:00", "2026-11-24T06:00:00", "2026-11-24T06:45:00", "gpu015", 1, 8)
    J("2021", "dl_job", "u4", "research", "normal", "DEADLINE", "0:0", "2026-11-24T07:50:00", "2026-11-24T08:00:00", "2026-11-24T10:00:00", "gpu015", 1, 8)
    J("2022", "bf_job", "u5", "research", "normal", "BOOT_FAIL", "0:0", "2026-11-24T10:50:00", "2026-11-24T11:00:00", "2026-11-24T11:00:00", "gpu015", 1, 8)
    J("2023", "ucancel", "u3", "research", "normal", "CANCELLED by 1003", "0:0", "2026-11-24T11:50:00", "2026-11-24T12:00:00", "2026-11-24T15:00:00", "gpu015", 1, 8)
    J("2024", "sig9", "u2", "research", "normal", "FAILED", "0:9", "2026-11-24T15:50:00", "2026-11-24T16:00:00", "2026-11-24T18:00:00", "gpu015", 1, 8)
    J("2025", "exit1", "u2", "research", "normal", "FAILED", "1:0", "2026-11-24T18:50:00", "2026-11-24T19:00:00", "2026-11-24T20:00:00", "gpu015", 1, 8)
    J("2026", "sig15", "u1", "research", "normal", "FAILED", "0:15", "2026-11-24T20:50:00", "2026-11-24T21:00:00", "2026-11-24T23:00:00", "gpu015", 1, 8)
    J("2027", "stepfail", "u1", "research", "normal", "COMPLETED", "0:0", "2026-11-24T23:50:00", "2026-11-25T00:00:00", "2026-11-25T04:00:00", "gpu015", 1, 8,
      steps=[("batch", "COMPLETED", "0:0"), ("extern", "COMPLETED", "0:0"), ("0", "FAILED", "1:0"), ("1", "FAILED", "2:0")])
    return out


def _sacct_rows(i: dict, cut: datetime) -> list[str]:
    """One instance as a nightly ``sacct -P`` dump cut at ``cut`` shows it (running: RUNNING, no end)."""
    st, en = i["start"], i["end"]
    nn, ncpu = i["nnodes"], 96 * i["nnodes"]
    if st > cut:
        state, exitc, stt, ent, el, nl, tres, ncpu = "PENDING", "0:0", None, None, 0, "None assigned", "", 0
    else:
        running = en > cut
        state, exitc = ("RUNNING", "0:0") if running else (i["state"], i["exit"])
        stt, ent = st, (None if running else en)
        el = ((cut if running else en) - st).total_seconds()
        nl, tres = i["nodelist"], f"billing={ncpu},cpu={ncpu},gres/gpu={i['gpus']},mem={1024 * nn}G,node={nn}"
    out = [f"{i['jid']}|{i['jid']}|{i['name']}|{i['user']}|{_USERS[i['user']]}|{i['user']}|{i['acct']}|gpu|{i['qos']}|"
           f"{state}|{exitc}|{_fmt(i['submit'])}|{_fmt(i['eligible'])}|{_fmt(stt)}|{_fmt(ent)}|{_dur(el)}|{i['tl']}|"
           f"{nn}|{ncpu}|{tres}|{nl}|"]
    if state == "PENDING":
        return out
    steps = i["steps"] or {
        "RUNNING": [("batch", "RUNNING", "0:0"), ("extern", "RUNNING", "0:0")],
        "COMPLETED": [("batch", "COMPLETED", "0:0"), ("extern", "COMPLETED", "0:0")],
        "FAILED": [("batch", "FAILED", i["exit"]), ("extern", "COMPLETED", "0:0")],
        "OUT_OF_MEMORY": [("batch", "OUT_OF_MEMORY", "0:125"), ("extern", "COMPLETED", "0:0")],
        "BOOT_FAIL": [],
    }.get(state, [("batch", "CANCELLED", "0:15"), ("extern", "COMPLETED", "0:0")])
    for name, sst, sex in steps:
        out.append(f"{i['jid']}.{name}|{i['jid']}.{name}|{name}||||{i['acct']}|||{'RUNNING' if state == 'RUNNING' else sst}|"
                   f"{sex}||{_fmt(stt)}|{_fmt(stt)}|{_fmt(ent)}|{_dur(el)}||{nn}|{ncpu}|"
                   f"cpu={ncpu},gres/gpu={i['gpus']},mem={1024 * nn}G,node={nn}|{nl}|")
    return out


#: sacctmgr show event rows: (nodes, start, end, state, reason, user).
_NODE_EVENTS = [
    ([f"gpu{n:03d}" for n in range(19, 25)], "2026-11-25T06:00:00", "2026-11-25T12:00:00", "DRAIN",
     "maint: firmware upgrade CHG-4411", "root"),
    (["gpu024"], "2026-11-25T06:06:00", "2026-11-25T06:15:00", "DOWN*", "Not responding", "slurm"),
    (["gpu020"], "2026-11-25T13:05:00", "2026-11-25T19:05:00", "DRAIN", "Xid 48 DBE GPU3 - RMA", "root"),
    (["gpu005"], "2026-11-26T10:21:00", "2026-11-26T16:21:00", "DRAIN", "Xid 79 GPU fell off bus", "root"),
    (["gpu010"], "2026-11-26T20:00:00", "2026-11-26T20:30:00", "DOWN*", "Not responding", "slurm"),
    (["gpu010"], "2026-11-26T20:30:00", "2026-11-27T02:30:00", "DRAIN", "MCE CPU1 - vendor ticket", "root"),
    (["gpu015"], "2026-11-27T09:00:00", "2026-11-27T13:00:00", "DRAIN", "investigating", "admin1"),
]

#: Node-log lines beyond the three heartbeats every node logs every day: (node, time, program, message).
_LOG_LINES = [
    ("gpu024", "2026-11-25T06:08:00", "kernel", _BOOT),
    *((f"gpu{n:03d}", f"2026-11-25T08:{n:02d}:00", "kernel", _BOOT) for n in range(19, 25)),
    # the flash: gpu021's HCA link drops and returns, NHC finds gpu022's GPU lost twice
    ("gpu021", "2026-11-25T07:50:00", "kernel", "mlx5_core 0000:5a:00.0 mlx5_0: Port: 1 Link DOWN"),
    ("gpu021", "2026-11-25T08:25:00", "kernel", "mlx5_core 0000:5a:00.0 mlx5_0: Port: 1 Link ACTIVE"),
    *(("gpu022", f"2026-11-25T07:{m}:00", f"nhc[{pid}]", "ERROR:  nhc:  Health check failed:  check_nv_healthmon:  "
       "GPU 0000:18:00.0 is lost (nvidia-smi: Unable to determine the device handle)") for m, pid in (("40", 40211), ("45", 40388))),
    # the three real failures
    ("gpu020", "2026-11-25T13:00:00", "kernel", "NVRM: Xid (PCI:0000:9d:00): 48, pid=84211, name=python, Ch 00000008, "
     "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0."),
    ("gpu020", "2026-11-25T19:00:00", "kernel", _BOOT),
    ("gpu005", "2026-11-26T10:00:00", "kernel", "NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
    ("gpu005", "2026-11-26T16:00:00", "kernel", _BOOT),
    ("gpu010", "2026-11-26T19:59:50", "kernel", "mce: [Hardware Error]: CPU 12: Machine Check Exception: 5 Bank 6: fe00000000800400"),
    ("gpu010", "2026-11-26T19:59:50", "kernel", "Kernel panic - not syncing: Fatal machine check"),
    ("gpu010", "2026-11-26T20:25:00", "kernel", _BOOT),
]


def probe_landing() -> dict[str, str]:
    """The outside probe's landing (its gen/make_landing.py, same lines): nightly sacct and sacctmgr dumps cut
    at D+1 00:05, RFC 3164 node logs, cluster.yaml with the CHG-4411 window."""
    files = {"cluster.yaml": (
        'cluster: h100-probe\ntimezone: UTC\nnodes: "gpu[001-024]"\ngpus_per_node: 8\ngpu_type: h100\nmaintenance:\n'
        '  - {start: "2026-11-25T06:00:00Z", end: "2026-11-25T12:00:00Z", nodes: "gpu[019-024]", '
        'reason: "CHG-4411 firmware upgrade"}\n')}
    inst = _instances()
    for d in range(24, 28):
        d0 = _T(f"2026-11-{d:02d}T00:00:00")
        d1, cut = d0 + timedelta(days=1), d0 + timedelta(days=1, minutes=5)
        lines = [_HDR] + [r for i in inst if i["submit"] < d1 and i["end"] >= d0 for r in _sacct_rows(i, cut)]
        files[f"sacct/sacct_2026-11-{d:02d}.psv"] = "\n".join(lines) + "\n"
        ev = ["Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User|Event|ClusterNodes",
              f"h100-probe||2026-11-01T00:00:00|Unknown|{_dur((cut - _T('2026-11-01T00:00:00')).total_seconds())}||"
              "Cluster Registered TRES||Cluster|gpu[001-024]"]
        for nodes, s, e, st, reason, user in _NODE_EVENTS:
            s_, e_ = _T(s), _T(e)
            if s_ < d1 and e_ >= d0:
                end = e_ if e_ <= cut else None
                ev += [f"h100-probe|{n}|{_fmt(s_)}|{_fmt(end)}|{_dur(((end or cut) - s_).total_seconds())}|{st}|{reason}|"
                       f"{user}|Node|" for n in nodes]
        files[f"slurm_events/events_2026-11-{d:02d}.txt"] = "\n".join(ev) + "\n"
    logs: dict[tuple[str, str], list[tuple[datetime, str]]] = {}
    beats = [(f"gpu{n:03d}", f"2026-11-{d:02d}T{hh}", "systemd[1]", "Started Session c1 of user root.")
             for d in range(24, 28) for n in range(1, 25) for hh in ("00:00:30", "12:00:00", "23:59:30")]
    for node, ts, prog, msg in beats + _LOG_LINES:
        x = _T(ts)
        logs.setdefault((x.strftime("%Y-%m-%d"), node), []).append((x, f"{x.strftime('%b %e %H:%M:%S')} {node} {prog}: {msg}"))
    for (day, node), lines in logs.items():
        files[f"syslog/{day}/{node}.log"] = "\n".join(x for _, x in sorted(lines)) + "\n"
    return files


@pytest.fixture(scope="module")
def probe_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("planned_probe"), probe_landing())


def test_probe_end_to_end_planned_not_failure(probe_warehouse: Path) -> None:
    wh = probe_warehouse
    attr = {r[0]: r[1:] for r in query_rows(wh, "SELECT job_id, attribution, component, cause_class, lost_gpu_hours "
                                                "FROM marts.job_failure_attribution")}
    assert attr["2005"][:3] == (PLANNED, "maintenance", "planned_maintenance")
    assert attr["2005"][3] == pytest.approx(4.0)  # 8 GPUs × 0.5 h
    assert attr["2003"][:3] == (PLANNED, "maintenance", "planned_maintenance")
    assert attr["2006"][0] == INFRASTRUCTURE  # Xid 48 an hour after the window: a failure
    summary = dict(query_rows(wh, "SELECT attribution, lost_gpu_hours FROM marts.failure_attribution_summary "
                                  "WHERE scope = 'day' AND day = DATE '2026-11-25' AND state = 'NODE_FAIL'"))
    assert summary[PLANNED] == pytest.approx(4.0) and summary.get(INFRASTRUCTURE, 0.0) == 0.0
    planned_all = query_rows(wh, "SELECT jobs, lost_gpu_hours FROM marts.failure_attribution_summary "
                                 "WHERE scope = 'all' AND attribution = 'planned' AND state = '(all)'")
    assert planned_all == [(2, pytest.approx(8.0))]
    # job_infra_success on 11-25: 36 runs ended, only 2006 killed by the infrastructure (2005 was the reboot)
    assert query_rows(wh, "SELECT good, total FROM marts.slo_daily WHERE sli = 'job_infra_success' "
                          "AND day = DATE '2026-11-25'") == [(35.0, 36.0)]
    # job MTTF counts the infrastructure's failures only: 2005's NODE_FAIL at the reboot is no failure
    # (the 8-GPU bucket: 2006, 2016's first run, 2017 — the probe's 4 before the fix)
    assert query_rows(wh, "SELECT infra_failures FROM marts.job_mttf_by_size WHERE gpus_bucket = '2-8'") == [(3,)]
    # goodput charges 2006's Xid 48 only: 8 × (31 − 31²/120) / 60 min
    lost = query_rows(wh, "SELECT lost_failure_gpu_hours FROM marts.goodput_daily WHERE day = DATE '2026-11-25'")
    assert lost == [(pytest.approx(8 * (31 - 31**2 / 120) / 60),)]
    # the flash's link drop and lost GPU are no incidents: 3 failures over 2245.5 node-h in service
    assert sorted(query_rows(wh, "SELECT component, nodes[1] FROM marts.hw_incidents")) == [
        ("gpu_memory", "gpu020"), ("host_cpu", "gpu010"), ("pcie_bus", "gpu005")]
    assert query_rows(wh, "SELECT failures, exposure_hours, mtbf_hours FROM marts.mtbf "
                          "WHERE scope = 'cluster' AND period_type = 'all'") == [(3, 2245.5, 748.5)]
    # no 0.6-h "repair" of the maintenance: median of 6.083, 6.35, 6.503 h
    assert query_rows(wh, "SELECT incidents, mttr_hours_p50 FROM marts.repair_times WHERE component_class = 'all'") == [
        (3, pytest.approx(6.35))]
    assert not query_rows(wh, "SELECT node FROM marts.suspect_nodes WHERE node IN ('gpu021', 'gpu022', 'gpu024')")
    # the events stay in core.node_events
    assert query_rows(wh, "SELECT count(*) FROM core.node_events WHERE node IN ('gpu021', 'gpu022') "
                          "AND kind IN ('ib_link_down', 'health_check')") == [(3,)]
    nightly = (wh.parent.parent / "reports" / "nightly-2026-11-27.md").read_text()
    assert "2 planned maintenance (8.0 GPU-h lost)" in nightly
    assert "| Planned maintenance |" in nightly
