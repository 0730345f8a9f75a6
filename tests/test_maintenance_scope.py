"""How far planned maintenance reaches (probe AG, findings F1-F4), on hand-built frames and end to end.

* F1/F4 — a drain on a node still running jobs (``MIXED+DRAIN``, ``DRAINING``; a bare ``DRAIN`` says
  nothing and counts from its start, as an outside evaluator's landing does) lets them finish: the node is in service — not down, not maintenance —
  until the last job running on it at the drain's start ends
  (:func:`~gpusre.models.reliability.node_availability.with_down_from`). A fault it logs then is the job's.
* F2 — a hardware drain that replaces or follows a maintenance drain ends the planned period where it begins
  and claims the failure lines logged up to 30 min before it: a fault found in the maintenance.
* F3 — a job root cancelled (a NODE_FAIL, a requeue) in a cluster.yaml window on its node is the maintenance's
  (rule 2p) whether or not the node went down, with node states as without them.

The probe's lines (/tmp/probe_AG/make_landing.py): 8-GPU H100 nodes, window W 2026-11-10 06:00-14:00 on
h100-[001-004]; h100-003 drained ``scheduled maintenance CHG0012345`` 06:00-10:50 then ``Xid 79 GPU fell off
bus`` 10:50 → 11-11 10:00, Xid 79 logged 10:40; h100-004 ``DOWN*`` 08:00-08:20, job 1004 ``CANCELLED by 0`` at
06:01; h100-006 ``MIXED+DRAIN+REBOOT_REQUESTED`` 11-10 22:00 → 11-11 02:05 while job 1006 ran to 02:00, then
``DOWN+DRAIN+REBOOT_ISSUED`` to 02:20; h100-014 ``MIXED+DRAIN`` ``maint: BIOS 2.3 + fw`` 11-12 01:00-06:00, Xid 79
at 03:00, job 1014 ``FAILED 1:0`` at 03:00:40.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest

from gpusre.models.failures.attribution import PLANNED_RULE, attribute_failures
from gpusre.models.failures.hw_incidents import merge_incidents, planned_evidence, planned_maintenance
from gpusre.models.reliability.mtbf import MaintenanceSpan
from gpusre.models.reliability.node_availability import (node_availability_daily, repair_states,
                                                         with_down_from)
from gpusre.models.reliability.repair_times import link_incidents
from gpusre.models.sources.slurm_events.parse import runs_jobs
from gpusre.models.vocabulary import INFRASTRUCTURE, PLANNED

from tests.hand_landing import query_rows, run_hand_landing
from tests.test_maintenance_evidence_not_failure import ev, events

UTC = timezone.utc
H = timedelta(hours=1)


def t(day: int, h: int, m: int = 0, s: int = 0) -> datetime:
    return datetime(2026, 11, day, h, m, s, tzinfo=UTC)


STATE_SCHEMA = {"node": pl.String, "state": pl.String, "state_text": pl.String, "not_responding": pl.Boolean,
                "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"), "reason": pl.String,
                "reason_class": pl.String, "availability_class": pl.String}
JOB_SCHEMA = {"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
              "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"), "elapsed_s": pl.Int64,
              "exit_code": pl.Int64, "exit_signal": pl.Int64, "cancelled_by": pl.Int64}
XID79 = ("xid", 79, "pcie_bus", "hardware", "critical", "RESTART_BM")
XID48 = ("xid", 48, "gpu_memory", "hardware", "critical", "RESET_GPU")
#: cluster.yaml window W (a Slurm MAINT,IGNORE_JOBS reservation).
W = MaintenanceSpan(t(10, 6), t(10, 14), frozenset({"h100-001", "h100-002", "h100-003", "h100-004"}), "maint_1110")


def states(rows: list[tuple]) -> pl.DataFrame:
    """core.node_states rows: (node, state_text, start, end, reason, reason_class, availability_class)."""
    out = []
    for node, text, start, end, reason, rclass, aclass in rows:
        out.append((node, "DOWN" if "DOWN" in text.upper() else "DRAIN", text, text.endswith("*"), start, end,
                    reason, rclass, aclass))
    return pl.DataFrame(out, schema=STATE_SCHEMA, orient="row")


def job(job_id: str, state: str, node: str, start: datetime, end: datetime | None, *, exit_code: int = 0,
        exit_signal: int = 0, cancelled_by: int | None = None) -> dict:
    elapsed = int(((end or start) - start).total_seconds())
    return {"job_id": job_id, "state": state, "nodes": [node], "n_gpus": 8, "start_ts": start, "end_ts": end,
            "elapsed_s": elapsed, "exit_code": exit_code, "exit_signal": exit_signal, "cancelled_by": cancelled_by}


def jobs(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=JOB_SCHEMA)


def test_printed_state_says_whether_the_node_still_ran_jobs() -> None:
    # sacctmgr's long '+'-joined forms, Slurm's DRAINING/DRAINED names, sinfo's compact and lower-case ones
    busy = ["MIXED+DRAIN", "ALLOCATED+DRAIN", "MIXED+DRAIN+REBOOT_REQUESTED", "DRAINING", "drng", "draining",
            "FAILING", "ALLOC+DRAIN", "mix@", "COMPLETING+DRAIN"]
    at_once = ["IDLE+DRAIN", "IDLE+DRAIN+REBOOT_REQUESTED", "DRAINED", "drained", "drained*", "DOWN*",
               "DOWN+DRAIN+REBOOT_ISSUED", "MIXED*", "IDLE+DRAIN*"]
    assert [runs_jobs(s) for s in busy] == [True] * len(busy)
    assert [runs_jobs(s) for s in at_once] == [False] * len(at_once)
    # the text does not say: core.jobs tells
    assert [runs_jobs(s) for s in ("DRAIN", "drain", "FAIL", "MAINT", "", None)] == [None] * 6


def test_drain_on_a_busy_node_is_in_service_until_its_jobs_end() -> None:
    s = states([
        # the probe's h100-006 (job 1006 18:00 → 02:00) and h100-014 (job 1014 20:00 → 03:00:40)
        ("h100-006", "MIXED+DRAIN+REBOOT_REQUESTED", t(10, 22), t(11, 2, 5), "Reboot ASAP for kernel update",
         "planned_maintenance", "maintenance"),
        ("h100-006", "DOWN+DRAIN+REBOOT_ISSUED", t(11, 2, 5), t(11, 2, 20), "Reboot ASAP for kernel update",
         "planned_maintenance", "maintenance"),
        ("h100-014", "MIXED+DRAIN", t(12, 1), t(12, 6), "maint: BIOS 2.3 + fw", "planned_maintenance", "maintenance"),
        # other spellings and cases, all 2026-11-11
        ("na", "draining", t(11, 10), t(11, 14), "kernel upgrade", "planned_maintenance", "maintenance"),
        ("nb", "DRAIN", t(11, 10), t(11, 12), "kernel upgrade", "planned_maintenance", "maintenance"),
        ("nc", "IDLE+DRAIN", t(11, 10), t(11, 12), "kernel upgrade", "planned_maintenance", "maintenance"),
        ("nd", "ALLOCATED+DRAIN", t(11, 10), t(11, 11), "kernel upgrade", "planned_maintenance", "maintenance"),
        ("nf", "MIXED+DRAIN", t(11, 10), t(11, 12), "Xid 79 GPU fell off bus", "gpu_xid", "hardware"),
        ("ng", "MIXED+DRAIN", t(12, 20), None, "kernel upgrade", "planned_maintenance", "maintenance"),
        ("nh", "DRAIN", t(11, 10), t(11, 12), "kernel upgrade", "planned_maintenance", "maintenance"),
    ])
    j = jobs([
        job("1006", "COMPLETED", "h100-006", t(10, 18), t(11, 2)),
        job("1014", "FAILED", "h100-014", t(11, 20), t(12, 3, 0, 40), exit_code=1),
        job("a", "COMPLETED", "na", t(11, 8), t(11, 12, 30)),
        job("b", "NODE_FAIL", "nb", t(11, 9), t(11, 10, 0, 50)),       # bare DRAIN: from its start, as written
        job("c", "COMPLETED", "nc", t(11, 9), t(11, 11)),                # Slurm says idle: down at once
        job("d", "COMPLETED", "nd", t(11, 9), t(11, 13)),                # drain lifted before the job ended
        job("f1", "COMPLETED", "nf", t(11, 9), t(11, 10, 30)),           # two jobs running at the drain's start:
        job("f2", "FAILED", "nf", t(11, 9, 30), t(11, 11, 15), exit_code=1),  # out once the later one ends
        job("g", "RUNNING", "ng", t(12, 19), None),                       # still running at the end of the data
        job("h", "COMPLETED", "nh", t(11, 8), t(11, 10)),                 # ended as the drain began: at once
    ])
    nodes = ["h100-006", "h100-014", "na", "nb", "nc", "nd", "nf", "ng", "nh"]
    daily = node_availability_daily(with_down_from(s, j), nodes, date(2026, 11, 10), date(2026, 11, 12),
                                     as_of=t(13, 0))
    got = {(r["node"], r["day"].day): (round(r["down_maintenance_hours"], 4), round(r["down_hardware_hours"], 4))
           for r in daily.iter_rows(named=True) if r["down_hours"] > 0}
    assert got == {
        ("h100-006", 11): (round(20 / 60, 4), 0.0),          # 02:00-02:20, not 22:00-02:20
        ("h100-014", 12): (round(3 - 40 / 3600, 4), 0.0),    # 03:00:40-06:00, not 01:00-06:00
        ("na", 11): (1.5, 0.0),
        ("nb", 11): (2.0, 0.0),
        ("nc", 11): (2.0, 0.0),
        ("nf", 11): (0.0, 0.75),
        ("nh", 11): (2.0, 0.0),
    }
    # without accounting, every state counts from its start (h100-006: 2 h on 11-10, 2 h 20 min on 11-11)
    bare = node_availability_daily(with_down_from(s, None), nodes, date(2026, 11, 10), date(2026, 11, 12),
                                   as_of=t(13, 0)).filter(pl.col("node") == "h100-006")
    assert [round(h, 4) for h in bare["down_maintenance_hours"]] == [2.0, round(2 + 20 / 60, 4), 0.0]


def _h100_014() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    s = states([
        ("h100-014", "MIXED+DRAIN", t(12, 1), t(12, 6), "maint: BIOS 2.3 + fw", "planned_maintenance", "maintenance"),
        # another convention: Slurm's older DRAINING name, the job dying of the fault 30 s after it
        ("n2", "DRAINING", t(12, 1), t(12, 6), "kernel upgrade", "planned_maintenance", "maintenance"),
    ])
    j = jobs([job("1014", "FAILED", "h100-014", t(11, 20), t(12, 3, 0, 40), exit_code=1),
              job("j2", "FAILED", "n2", t(11, 20), t(12, 2, 0, 30), exit_code=1)])
    e = events([ev(1, t(12, 3), "h100-014", XID79), ev(2, t(12, 3), "h100-014", XID79),
                ev(3, t(12, 2), "n2", XID79),
                ev(4, t(12, 4), "h100-014", XID48)])   # the flash, an hour after the job ended: the maintenance's
    return s, j, e


def test_fault_under_a_running_job_is_the_jobs_not_the_maintenances() -> None:
    s, j, e = _h100_014()
    planned = planned_maintenance(s, [], t(13, 0), jobs=j)
    assert planned.filter("claims_evidence").select("node", "start_ts", "end_ts").rows() == [
        ("h100-014", t(12, 3, 0, 40), t(12, 6)), ("n2", t(12, 2, 0, 30), t(12, 6))]
    assert planned_evidence(e, planned)["event_id"].to_list() == [4]
    incidents, _ = merge_incidents(e, planned=planned)
    assert sorted((r["nodes"][0], r["start_ts"]) for r in incidents.iter_rows(named=True)) == [
        ("h100-014", t(12, 3)), ("n2", t(12, 2))]
    out = {r["job_id"]: r for r in attribute_failures(j, e, incidents, planned=planned).iter_rows(named=True)}
    for job_id in ("1014", "j2"):
        assert (out[job_id]["attribution"], out[job_id]["component"]) == (INFRASTRUCTURE, "pcie_bus"), job_id
    # without the jobs the drain counts from 01:00, and the fault is (wrongly) the maintenance's: what F1 found
    blind = planned_maintenance(s, [], t(13, 0))
    assert attribute_failures(j, e, merge_incidents(e, planned=blind)[0], planned=blind)["attribution"].to_list() == [
        PLANNED, PLANNED]


def _h100_003() -> pl.DataFrame:
    return states([
        ("h100-003", "DRAIN", t(10, 6), t(10, 10, 50), "scheduled maintenance CHG0012345", "declared_planned_work",
         "maintenance"),
        ("h100-003", "DRAIN", t(10, 10, 50), t(11, 10), "Xid 79 GPU fell off bus", "gpu_xid", "hardware"),
        # another convention: the drain ends, the node is back 10 min, NHC drains it for the GPU it lost
        ("n5", "IDLE+DRAIN", t(12, 6), t(12, 11), "kernel upgrade", "planned_maintenance", "maintenance"),
        ("n5", "IDLE+DRAIN", t(12, 11, 10), t(12, 15), "NHC: Xid 79 GPU fell off bus", "gpu_xid", "hardware"),
    ])


def test_fault_found_in_the_maintenance_is_a_failure() -> None:
    s = _h100_003()
    planned = planned_maintenance(s, [W], t(13, 0), ["h100-003", "n5"])
    claims = planned.filter("claims_evidence").select("node", "start_ts", "end_ts", "fault_drain_ts").rows()
    # h100-003's period ends where its hardware drain begins (W reaches to 14:00, the fault holds the node)
    assert claims == [("h100-003", t(10, 6), t(10, 10, 50), t(10, 10, 50)),
                      ("n5", t(12, 6), t(12, 11), t(12, 11, 10))]
    e = events([
        ev(1, t(10, 7, 10), "h100-003", XID48),   # the firmware flash: the maintenance's
        ev(2, t(10, 10, 40), "h100-003", XID79), ev(3, t(10, 10, 40), "h100-003", XID79),  # 10 min before the drain
        ev(4, t(12, 9), "n5", XID79),              # 2 h 10 min before NHC's drain: the maintenance's
        ev(5, t(12, 10, 50), "n5", XID79),         # 20 min before it: the fault's
    ])
    assert planned_evidence(e, planned)["event_id"].to_list() == [1, 4]
    incidents, members = merge_incidents(e, planned=planned)
    assert sorted((r["nodes"][0], r["start_ts"]) for r in incidents.iter_rows(named=True)) == [
        ("h100-003", t(10, 10, 40)), ("n5", t(12, 10, 50))]
    assert sorted(members["event_id"].to_list()) == [2, 3, 5]
    # its repair: from the first line (10:40) until the hardware drain ends (11-11 10:00) = 23 h 20 min
    repaired = link_incidents(incidents, repair_states(with_down_from(s, None)))
    got = {r["drain_reason"]: (round(r["hours_to_repair"], 4), r["repair_source"]) for r in repaired.iter_rows(named=True)}
    assert got == {"Xid 79 GPU fell off bus": (round(23 + 20 / 60, 4), "node_states"),
                   "NHC: Xid 79 GPU fell off bus": (round(4 + 10 / 60, 4), "node_states")}


def test_repair_of_a_fault_under_a_running_job_runs_to_the_drains_end() -> None:
    s, j, e = _h100_014()
    planned = planned_maintenance(s, [], t(13, 0), jobs=j)
    incidents, _ = merge_incidents(e, planned=planned)
    repaired = link_incidents(incidents, repair_states(with_down_from(s, j)))
    # 03:00 → 06:00 (the drain took the node at 03:00:40, the job's end); 02:00 → 06:00 on n2
    assert sorted(round(h, 4) for h in repaired["hours_to_repair"]) == [3.0, 4.0]


def test_root_cancel_in_a_window_is_planned_with_node_states_or_without() -> None:
    s = states([("h100-004", "DOWN*", t(10, 8), t(10, 8, 20), "Not responding", "not_responding", "unknown")])
    j = jobs([
        job("1004", "CANCELLED", "h100-004", t(10, 2), t(10, 6, 1), exit_signal=15, cancelled_by=0),
        # another spelling of the same: a requeue as the reservation began, on a node never down in it
        job("rq", "REQUEUED", "h100-002", t(10, 1), t(10, 6, 2)),
        # 15 min before the window: no
        job("early", "CANCELLED", "h100-001", t(10, 1), t(10, 5, 45), exit_signal=15, cancelled_by=0),
        # a node the window does not name: no
        job("other", "CANCELLED", "h100-009", t(10, 1), t(10, 6, 1), exit_signal=15, cancelled_by=0),
    ])
    # h100-002 stayed in service through W: its Xid 79 at 09:00 is a fault, not the maintenance's
    e = events([ev(1, t(10, 9), "h100-002", XID79)])
    fleet = ["h100-001", "h100-002", "h100-003", "h100-004", "h100-009"]
    for label, node_states in (("with node states", s), ("without", None)):
        planned = planned_maintenance(node_states, [W], t(11, 0), fleet, jobs=j)
        incidents, _ = merge_incidents(e, planned=planned)
        out = {r["job_id"]: (r["attribution"], r["rule"])
               for r in attribute_failures(j, e, incidents, planned=planned).iter_rows(named=True)}
        assert out["1004"] == (PLANNED, PLANNED_RULE), label
        assert out["rq"] == (PLANNED, PLANNED_RULE), label
        assert out["early"][0] == "unknown" and out["other"][0] == "unknown", label
        if node_states is not None:
            assert incidents.height == 1, label


# --- end to end: the probe's lines for h100-003, -004, -006 and -014 -----------------------------------------

_HDR = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
        "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")
_TRES = "billing=128,cpu=128,gres/gpu:h100=8,gres/gpu=8,mem=2000G,node=1"
#: (jobid, user, uid, node, start, end, state, exit)
_JOBS = [
    ("2004", "dave", 20004, "h100-003", "2026-11-10T00:30:00", "2026-11-10T05:50:00", "COMPLETED", "0:0"),
    ("1004", "mike", 20014, "h100-004", "2026-11-10T02:00:00", "2026-11-10T06:01:00", "CANCELLED by 0", "0:15"),
    ("1006", "quinn", 20016, "h100-006", "2026-11-10T18:00:00", "2026-11-11T02:00:00", "COMPLETED", "0:0"),
    ("1014", "yara", 20024, "h100-014", "2026-11-11T20:00:00", "2026-11-12T03:00:40", "FAILED", "1:0"),
    ("2009", "ivan", 20023, "h100-004", "2026-11-12T12:10:00", "2026-11-12T23:30:00", "COMPLETED", "0:0"),
]
#: sacctmgr show event lines: (node, start, end, state, reason, user)
_EVENTS = [
    ("h100-003", "2026-11-10T06:00:00", "2026-11-10T10:50:00", "DRAIN", "scheduled maintenance CHG0012345", "root(0)"),
    ("h100-003", "2026-11-10T10:50:00", "2026-11-11T10:00:00", "DRAIN", "Xid 79 GPU fell off bus", "root(0)"),
    ("h100-004", "2026-11-10T08:00:00", "2026-11-10T08:20:00", "DOWN*", "Not responding", "slurm(64030)"),
    ("h100-006", "2026-11-10T22:00:00", "2026-11-11T02:05:00", "MIXED+DRAIN+REBOOT_REQUESTED",
     "Reboot ASAP for kernel update", "root(0)"),
    ("h100-006", "2026-11-11T02:05:00", "2026-11-11T02:20:00", "DOWN+DRAIN+REBOOT_ISSUED",
     "Reboot ASAP for kernel update", "root(0)"),
    ("h100-014", "2026-11-12T01:00:00", "2026-11-12T06:00:00", "MIXED+DRAIN", "maint: BIOS 2.3 + fw", "root(0)"),
]
_BOOT = ("kernel: [    0.000000] Linux version 5.15.0-122-generic (buildd@lcy02-amd64-034) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) "
         "11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #132-Ubuntu SMP Thu Aug 29 13:45:52 UTC 2024")
_X79 = "kernel: [{up}] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
_FOB = "kernel: [{up}] NVRM: GPU 0000:91:00.0: GPU has fallen off the bus."
_LOG = [
    ("h100-003", "2026-11-10T07:00:00", _BOOT), ("h100-003", "2026-11-10T10:40:00", _X79),
    ("h100-003", "2026-11-10T10:40:00", _FOB), ("h100-003", "2026-11-11T09:40:00", _BOOT),
    ("h100-004", "2026-11-10T08:05:00", _BOOT), ("h100-006", "2026-11-11T02:10:00", _BOOT),
    ("h100-014", "2026-11-12T03:00:00", _X79), ("h100-014", "2026-11-12T03:00:00", _FOB),
    ("h100-014", "2026-11-12T05:00:00", _BOOT),
]
_NODES = ("h100-003", "h100-004", "h100-006", "h100-014")


def _el(a: datetime, b: datetime) -> str:
    d, r = divmod(int((b - a).total_seconds()), 86400)
    return (f"{d}-" if d else "") + f"{r // 3600:02d}:{r % 3600 // 60:02d}:{r % 60:02d}"


def probe_landing() -> dict[str, str]:
    """The probe's lines for four nodes, 2026-11-10 .. 11-12, dumps cut at 00:05 the next day."""
    d = datetime.fromisoformat
    files = {"cluster.yaml": (
        'cluster: h100\ntimezone: UTC\nnodes: "h100-[003-004,006,014]"\ngpus_per_node: 8\ngpu_type: h100\n'
        'maintenance:\n  - {start: "2026-11-10T06:00:00Z", end: "2026-11-10T14:00:00Z", nodes: "h100-[001-004]", '
        'reason: "maint_1110: BIOS 2.3 + GPU firmware"}\n')}
    for k in range(3):
        day = datetime(2026, 11, 10 + k)
        nxt, cut = day + timedelta(days=1), day + timedelta(days=1, minutes=5)
        rows = [_HDR]
        for jid, user, uid, node, start, end, state, exit_code in _JOBS:
            s, e = d(start), d(end)
            if s < nxt and e >= day:
                done = e <= cut
                rows.append("|".join([jid, jid, f"job{jid}", user, str(uid), user, "llm", "gpu", "normal",
                                      state if done else "RUNNING", exit_code if done else "0:0", start, start, start,
                                      end if done else "Unknown", _el(s, e if done else cut), "1-00:00:00", "1", "128",
                                      _TRES, node, ""]))
        files[f"sacct/sacct_{day:%Y-%m-%d}.psv"] = "\n".join(rows) + "\n"
        lines = ["Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User",
                 "h100||2026-10-01T00:00:00|Unknown|" + _el(datetime(2026, 10, 1), cut) + "||Cluster Registered TRES|"]
        for node, start, end, state, reason, user in _EVENTS:
            s, e = d(start), d(end)
            if s < nxt and e >= day:
                shown = end if e <= cut else "Unknown"
                lines.append(f"h100|{node}|{start}|{shown}|{_el(s, min(e, cut))}|{state}|{reason}|{user}")
        files[f"slurm_events/events_{day:%Y-%m-%d}.txt"] = "\n".join(lines) + "\n"
        for node in _NODES:
            rows_ = [(day + timedelta(hours=h, seconds=5), "systemd[1]: Started Session c1 of user root.")
                     for h in (0, 6, 12, 18)] + [(day + timedelta(hours=23, minutes=59, seconds=50),
                                                  "systemd[1]: Starting logrotate.service - Rotate log files...")]
            for n, ts, msg in _LOG:
                x = d(ts)
                if n == node and day <= x < nxt:
                    rows_.append((x, msg.replace("{up}", f"{(x - datetime(2026, 11, 1)).total_seconds():12.6f}")))
            files[f"syslog/{day:%Y-%m-%d}/{node}.log"] = "\n".join(
                f"{x.strftime('%b %e %H:%M:%S')} {node} {m}" for x, m in sorted(rows_)) + "\n"
    return files


@pytest.fixture(scope="module")
def probe_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("maintenance_scope"), probe_landing())


def test_probe_end_to_end(probe_warehouse: Path) -> None:
    wh = probe_warehouse
    attr = dict(query_rows(wh, "SELECT job_id, attribution FROM marts.job_failure_attribution"))
    assert attr["1014"] == INFRASTRUCTURE      # F1: the Xid 79 under the running job
    assert attr["1004"] == PLANNED             # F3: root's cancel as the reservation began
    # F1 + F2: one GPU incident each on h100-003 (found in the maintenance) and h100-014
    incidents = sorted(r[0] for r in query_rows(wh, "SELECT nodes[1] FROM marts.hw_incidents"))
    assert incidents == ["h100-003", "h100-014"]
    repairs = sorted(round(r[0], 4) for r in query_rows(wh, "SELECT hours_to_repair FROM marts.incident_repairs"))
    assert repairs == [3.0, round(23 + 20 / 60, 4)]     # 03:00 → 06:00; 11-10 10:40 → 11-11 10:00
    # F4: maintenance node-hours per day. 11-10: h100-003 06:00-14:00 in W (8 h) + h100-004 08:00-08:20 (W);
    # h100-006 ran job 1006 from its drain (22:00) to 02:00 → 0. 11-11: h100-006 02:00-02:20.
    # 11-12: h100-014 03:00:40-06:00 (job 1014 ran to 03:00:40).
    maint = {str(r[0]): round(r[1], 4) for r in query_rows(
        wh, "SELECT day, sum(down_maintenance_hours) FROM marts.node_availability_daily GROUP BY day")}
    want = {"2026-11-10": 8 + 20 / 60, "2026-11-11": 20 / 60, "2026-11-12": 3 - 40 / 3600}
    assert maint == {d: round(h, 4) for d, h in want.items()}
    goodput = {str(r[0]): round(r[1], 3) for r in query_rows(
        wh, "SELECT day, maintenance_gpu_hours FROM marts.goodput_daily")}
    assert goodput == {d: round(8 * h, 3) for d, h in want.items()}
    # MTBF: 2 failures over 4 nodes × 72 h less every down hour (h100-003 hardware 10 h + 10 h)
    down = sum(want.values()) + 20.0
    assert query_rows(wh, "SELECT failures, round(exposure_hours, 3) FROM marts.mtbf "
                          "WHERE scope = 'cluster' AND period_type = 'all'") == [(2, round(4 * 72 - down, 3))]
    # job_infra_success 11-12: 1014 (infrastructure) and 2009 ended
    assert query_rows(wh, "SELECT good, total FROM marts.slo_daily WHERE sli = 'job_infra_success' "
                          "AND day = DATE '2026-11-12'") == [(1.0, 2.0)]
