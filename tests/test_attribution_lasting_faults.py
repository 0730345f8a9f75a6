"""Attribution of faults that outlast their log line, of het-job siblings, of hung multi-node and TIMEOUT
jobs, and of Xid codes the catalog does not know (outside probe S, 2026-12-05; probe P for the last).

The probe's misattributions, each rebuilt here on hand-made events (real log lines classified by the
catalog, or hand-typed rows where the catalog's verdict is the point):

1. job 2031: Xid 79 (GPU fallen off the bus) 12 min before a 2-node job ended FAILED 1:0 — the GPU stays
   off the bus until a reboot or GPU reset, so the fault was still open (``recovery_events.csv``:
   ``driver_loaded`` clears ``action:RESTART_BM`` …) → infrastructure, not the user's.
2. job 2023: started on a node after its Xid 79 drain ended → the outage cannot have killed it (user).
3. het job 4000: the component beside the one whose node logged Xid 74 was torn down with it.
4. job 2001: a 4-node job's port came back 40 s after going down, and the job died 29 min later when
   its NCCL watchdog fired → the flap's (``collective_timeout``, default 30 min, for multi-node jobs).
5. job 2026: TIMEOUT while a port of its node was still down → it hung on the fault.
6. probe P: an Xid code absent from xid.csv 2 min before a FAILED 1:0 → unknown, not the user's.

Every job runs 2 h (7200 s ≥ Δ = 3600 s): an infrastructure kill loses Δ/2 = 0.5 h per GPU, so
8 GPUs → 4.0 GPU-h, 16 GPUs → 8.0 GPU-h.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing, sacct_dump, sacct_line
from node_event_lines import T0, events_from_lines

from gpusre.models.failures.attribution import (COLLECTIVE_TIMEOUT, HET_SIBLING_RULE, HUNG_RULE, UNCATALOGUED_RULE,
                                                attribute_failures, node_state_evidence)
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, merge_incidents

S = timedelta(seconds=1)
M = timedelta(minutes=1)
H = timedelta(hours=1)
XID79 = "NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
XID95 = "NVRM: Xid (PCI:0000:3b:00): 95, pid=2231, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No"
XID74 = ("NVRM: Xid (PCI:0000:18:00): 74, pid=12345, name=python, NVLink: fatal error detected on link "
         "4(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)")
XID13 = ("NVRM: Xid (PCI:0000:18:00): 13, pid=2231, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 2, "
         "SM 0): Out Of Range Address")
DRIVER = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024"
DOWN = "mlx5_core 0000:0c:00.0 mlx5_1: Port: 1 Link DOWN"
ACTIVE = "mlx5_core 0000:0c:00.0 mlx5_1: Port: 1 Link ACTIVE"

JOB_SCHEMA = {"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
              "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"), "elapsed_s": pl.Int64,
              "exit_code": pl.Int64, "exit_signal": pl.Int64, "het_job_id": pl.Int64}


def job(job_id: str, nodes: list[str], *, state: str = "FAILED", exit_code: int = 1, elapsed: timedelta = 2 * H,
        end: timedelta = 2 * H, het: int | None = None) -> dict:
    """A core.jobs row ending ``end`` after T0, 8 GPUs per node."""
    return {"job_id": job_id, "state": state, "nodes": nodes, "n_gpus": 8 * len(nodes),
            "start_ts": T0 + end - elapsed, "end_ts": T0 + end, "elapsed_s": int(elapsed.total_seconds()),
            "exit_code": exit_code, "exit_signal": 0, "het_job_id": het}


def attribute(jobs: list[dict], lines: list[tuple[timedelta, str, str]], *, events: pl.DataFrame | None = None,
              node_states: pl.DataFrame | None = None, **rules) -> dict[str, dict]:
    """Attribution rows by job id; ``lines`` are (offset from T0, node, raw log line)."""
    ev = events_from_lines(lines) if events is None else events
    incidents, _ = merge_incidents(ev)
    out = attribute_failures(pl.DataFrame(jobs, schema=JOB_SCHEMA), ev, incidents, node_states=node_states, **rules)
    return {r["job_id"]: r for r in out.iter_rows(named=True)}


def outages(rows: list[tuple[str, timedelta, timedelta | None, str]]) -> pl.DataFrame:
    """:func:`node_state_evidence` of hand-made DRAIN states (node, start, end or None, reason), all hardware."""
    return node_state_evidence(pl.DataFrame(
        [{"node": n, "state": "DRAIN", "start_ts": T0 + s, "end_ts": None if e is None else T0 + e, "reason": r,
          "reason_component": "gpu", "availability_class": "hardware"} for n, s, e, r in rows],
        schema={"node": pl.String, "state": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                "end_ts": pl.Datetime("us", "UTC"), "reason": pl.String, "reason_component": pl.String,
                "availability_class": pl.String}))


def verdict(row: dict) -> tuple:
    return row["attribution"], row["component"], row["lost_gpu_hours"]


def test_a_gpu_off_the_bus_stays_open_until_the_node_reboots_or_returns_to_service() -> None:
    # hung: 2-node job, Xid 79 on n1 12 min before the end (outside the 10-min window), nothing after:
    # still off the bus at the end → infrastructure, pcie_bus, 16 × 0.5 = 8.0 GPU-h, with its incident.
    # rebooted: Xid 79 at -40 min, the NVIDIA driver loaded on n3 at -35 min (a reboot): over → user.
    # back: Xid 79 at -40 min, n4 drained -39 → -30 min (back in service): over → user.
    # too_old: Xid 79 61 min before the end (beyond OPEN_FAULT_LOOKBACK) → user.
    # uncontained: Xid 95 (RESET_GPU) 25 min before → infrastructure, gpu_memory, 4.0.
    # nvlink: Xid 74 (fatal NVLink error: NVIDIA's catalog needs a GPU reset to bring the link back, a lasting
    # fault since probe AP F3; it was the user's before) 12 min before → infrastructure, nvlink, 4.0.
    lines = [
        (2 * H - 12 * M, "n1", XID79),
        (2 * H - 40 * M, "n3", XID79), (2 * H - 35 * M, "n3", DRIVER),
        (2 * H - 40 * M, "n4", XID79),
        (2 * H - 61 * M, "n5", XID79),
        (2 * H - 25 * M, "n6", XID95),
        (2 * H - 12 * M, "n7", XID74),
    ]
    states = outages([("n4", 2 * H - 39 * M, 2 * H - 30 * M, "Xid 79 GPU fell off the bus")])
    got = attribute([job("hung", ["n1", "n2"]), job("rebooted", ["n3"]), job("back", ["n4"]),
                     job("too_old", ["n5"]), job("uncontained", ["n6"]), job("nvlink", ["n7"])], lines,
                    node_states=states)
    assert verdict(got["hung"]) == ("infrastructure", "pcie_bus", 8.0)
    assert got["hung"]["evidence_event_ids"] == [1] and got["hung"]["incident_id"] is not None
    assert verdict(got["uncontained"]) == ("infrastructure", "gpu_memory", 4.0)
    assert verdict(got["nvlink"]) == ("infrastructure", "nvlink", 4.0)
    for job_id in ("rebooted", "back", "too_old"):
        assert (got[job_id]["attribution"], got[job_id]["rule"], got[job_id]["lost_gpu_hours"]) == (
            "user", "non-zero exit without infrastructure evidence", 0.0), job_id


def test_an_outage_over_before_the_job_started_did_not_kill_it() -> None:
    # Probe job 2023: Xid 79 on n1 at -10 min, drained -9.5 → -6 min, rebooted (driver) at -7 min; the job
    # started at -5 min on the repaired node and failed at the end: its own bug → user, 0 GPU-h.
    # The same drain still open when a job started at -5 min (ends at -4 min, after the start; or
    # ongoing) is evidence: infrastructure, the drain's component (gpu), 8 × E[lost](300 s) =
    # 8 × (300 − 300²/7200) s = 8 × 287.5 s = 0.6389 GPU-h.
    lines = [(2 * H - 10 * M, "n1", XID79), (2 * H - 7 * M, "n1", DRIVER)]
    states = outages([("n1", 2 * H - 9.5 * M, 2 * H - 6 * M, "Xid 79 GPU fell off the bus"),
                      ("n2", 2 * H - 9.5 * M, 2 * H - 4 * M, "Xid 79 GPU fell off the bus"),
                      ("n3", 2 * H - 9.5 * M, None, "Xid 79 GPU fell off the bus")])
    got = attribute([job(n, [n], elapsed=5 * M) for n in ("n1", "n2", "n3")], lines, node_states=states)
    assert (got["n1"]["attribution"], got["n1"]["evidence_node_state"], got["n1"]["lost_gpu_hours"]) == (
        "user", None, 0.0)
    for n in ("n2", "n3"):
        assert (got[n]["attribution"], got[n]["rule"], got[n]["component"]) == (
            "infrastructure", "Slurm node state in window", "gpu"), n
        assert got[n]["lost_gpu_hours"] == pytest.approx(8 * 287.5 / 3600)


def test_a_het_component_torn_down_with_its_infrastructure_killed_sibling_is_the_infrastructure_s() -> None:
    # Het job 4000: +0 on n1, +1 on n2, both FAILED 1:0 at the end; Xid 74 on n2 at -1 min. +1 is the
    # NVLink fault's; +0, with nothing on n1, was torn down with it: the same component and incident,
    # 4.0 GPU-h each, its rule saying so.
    # Het job 4100: +1 killed the same way (Xid 74 on n4), but +0 (n3) ended 5 min earlier: not the
    # teardown (5 min > the 60-s clock skew) → user. Het job 4200: +0 (n5) logged its own Xid 13 → its
    # own evidence keeps it the user's. Het job 4300: +0 (n7) OUT_OF_MEMORY → its own limit.
    lines = [(2 * H - M, "n2", XID74), (2 * H - M, "n4", XID74), (2 * H - 2 * M, "n5", XID13),
             (2 * H - M, "n6", XID74), (2 * H - M, "n8", XID74)]
    got = attribute([job("4000+0", ["n1"], het=4000), job("4000+1", ["n2"], het=4000),
                     job("4100+0", ["n3"], het=4100, end=2 * H - 5 * M), job("4100+1", ["n4"], het=4100),
                     job("4200+0", ["n5"], het=4200), job("4200+1", ["n6"], het=4200),
                     job("4300+0", ["n7"], het=4300, state="OUT_OF_MEMORY", exit_code=0),
                     job("4300+1", ["n8"], het=4300)], lines)
    killed, torn = got["4000+1"], got["4000+0"]
    assert verdict(killed) == verdict(torn) == ("infrastructure", "nvlink", 4.0)
    assert torn["rule"] == HET_SIBLING_RULE and killed["rule"] == "failure event in window"
    assert torn["incident_id"] == killed["incident_id"] is not None
    assert torn["evidence_event_ids"] == killed["evidence_event_ids"] == [1]
    assert (got["4100+0"]["attribution"], got["4100+0"]["rule"]) == (
        "user", "non-zero exit without infrastructure evidence")
    assert (got["4200+0"]["attribution"], got["4200+0"]["rule"]) == ("user", "user-application event in window")
    assert (got["4300+0"]["attribution"], got["4300+0"]["component"]) == ("user", "host_memory")
    for job_id in ("4100+1", "4200+1", "4300+1"):
        assert verdict(got[job_id]) == ("infrastructure", "nvlink", 4.0), job_id


def test_a_multi_node_job_hangs_on_a_flap_until_its_collective_times_out() -> None:
    # Probe job 2001: port down on n1 at -30 min, ACTIVE 40 s later (29 min 20 s before the end). A
    # 2-node job (16 GPUs) has not run the 30-min COLLECTIVE_TIMEOUT past the recovery: the flap's,
    # 8.0 GPU-h. The same flap on a single-node job (n3): it ran far past the 5-min RECOVERY_GRACE → user.
    # A 2-node job whose port came back 31 min before its end (n5) survived the flap → user.
    assert COLLECTIVE_TIMEOUT == 30 * M
    lines = [(2 * H - 30 * M, "n1", DOWN), (2 * H - 30 * M + 40 * S, "n1", ACTIVE),
             (2 * H - 30 * M, "n3", DOWN), (2 * H - 30 * M + 40 * S, "n3", ACTIVE),
             (2 * H - 32 * M, "n5", DOWN), (2 * H - 31 * M, "n5", ACTIVE)]
    jobs = [job("multi", ["n1", "n2"]), job("single", ["n3"]), job("survived", ["n5", "n6"])]
    got = attribute(jobs, lines)
    assert verdict(got["multi"]) == ("infrastructure", "network", 8.0)
    assert got["multi"]["incident_id"] is not None
    assert (got["single"]["attribution"], got["survived"]["attribution"]) == ("user", "user")
    # A site whose watchdog fires after 20 min: the multi-node job outlived it → user. One whose watchdog
    # waits 90 min: a flap 80 min before the end still counts (the lookback grows with it): 8.0.
    short = attribute(jobs, lines, collective_timeout=20 * M)
    assert short["multi"]["attribution"] == "user"
    old = [(2 * H - 80 * M, "n1", DOWN), (2 * H - 80 * M + 40 * S, "n1", ACTIVE)]
    long = attribute([job("multi", ["n1", "n2"])], old, collective_timeout=90 * M)
    assert verdict(long["multi"]) == ("infrastructure", "network", 8.0)
    assert attribute([job("multi", ["n1", "n2"])], old)["multi"]["attribution"] == "user"


def test_a_timeout_while_a_lasting_fault_was_open_is_the_fault_s() -> None:
    # Probe job 2026: 2-node TIMEOUT, port down on n1 20 min before the limit, ACTIVE 40 min after it:
    # hung on the dead link → infrastructure, network, 16 × 0.5 = 8.0 GPU-h, the DOWN its evidence.
    # recovered: the port came back 2 min before the limit → the time limit's (user).
    # gpu: Xid 79 on n5 20 min before the limit, never recovered → pcie_bus, 4.0.
    # oom: OUT_OF_MEMORY beside an open fault → still its own limit.
    # at_limit: the port went down 30 s before the limit (within the clock skew): it hung nothing → user.
    # before_start: the port went down before the job started (a node given while down) → user.
    lines = [(2 * H - 20 * M, "n1", DOWN), (2 * H + 40 * M, "n1", ACTIVE),
             (2 * H - 20 * M, "n3", DOWN), (2 * H - 2 * M, "n3", ACTIVE),
             (2 * H - 20 * M, "n5", XID79),
             (2 * H - 20 * M, "n6", DOWN),
             (2 * H - 30 * S, "n7", DOWN),
             (2 * H - 20 * M, "n8", DOWN)]
    limit = {"state": "TIMEOUT", "exit_code": 0}
    got = attribute([job("hung", ["n1", "n2"], **limit), job("recovered", ["n3"], **limit),
                     job("gpu", ["n5"], **limit), job("oom", ["n6"], state="OUT_OF_MEMORY", exit_code=0),
                     job("at_limit", ["n7"], **limit), job("before_start", ["n8"], elapsed=15 * M, **limit)], lines)
    assert verdict(got["hung"]) == ("infrastructure", "network", 8.0)
    assert (got["hung"]["rule"], got["hung"]["evidence_event_ids"]) == (HUNG_RULE, [1])
    assert got["hung"]["incident_id"] is not None
    assert (got["gpu"]["rule"], *verdict(got["gpu"])) == (HUNG_RULE, "infrastructure", "pcie_bus", 4.0)
    assert (got["oom"]["attribution"], got["oom"]["component"]) == ("user", "host_memory")
    for job_id in ("recovered", "at_limit", "before_start"):
        assert (got[job_id]["attribution"], got[job_id]["rule"]) == ("user", "job limit (memory/time)"), job_id


def _event(event_id: int, at: timedelta, node: str, kind: str, code: int, cause: str, severity: str,
           component: str) -> dict:
    return {"event_id": event_id, "ts": T0 + at, "node": node, "kind": kind, "code": code, "gpu_pci": None,
            "component": component, "cause_class": cause, "severity": severity, "action": "CHECK_CATALOG"}


def test_an_uncatalogued_xid_makes_a_non_zero_exit_unknown() -> None:
    # Probe P: an Xid code xid.csv does not know (175), 2 min before a FAILED 1:0 → unknown (it may be the
    # GPU's or the code's), the event its evidence, 0 GPU-h; an unknown SXid the same. Not when the job
    # logged its own Xid 13 (user), nor for an uncatalogued line that is no Xid (kind 'other'), nor
    # 11 min before the end (outside the window), nor for FAILED 0:0 (rule 9, "no evidence", unchanged).
    rows = [_event(1, 2 * H - 2 * M, "n1", "xid", 175, "unknown", "medium", "gpu"),
            _event(2, 2 * H - 2 * M, "n2", "sxid", 29999, "unknown", "medium", "nvswitch"),
            _event(3, 2 * H - 2 * M, "n3", "xid", 175, "unknown", "medium", "gpu"),
            _event(4, 2 * H - 1 * M, "n3", "xid", 13, "user_application", "medium", "user_application"),
            _event(5, 2 * H - 2 * M, "n4", "other", 0, "unknown", "medium", "other"),
            _event(6, 2 * H - 11 * M, "n5", "xid", 175, "unknown", "medium", "gpu"),
            _event(7, 2 * H - 2 * M, "n6", "xid", 175, "unknown", "medium", "gpu")]
    events = pl.DataFrame(rows, schema=EVENT_SCHEMA)
    got = attribute([job("xid", ["n1"]), job("sxid", ["n2", "n9"]), job("app", ["n3"]), job("other", ["n4"]),
                     job("early", ["n5"]), job("zero", ["n6"], exit_code=0)], [], events=events)
    for job_id, ids in (("xid", [1]), ("sxid", [2])):
        row = got[job_id]
        assert (row["attribution"], row["rule"], row["component"], row["evidence_event_ids"],
                row["lost_gpu_hours"]) == ("unknown", UNCATALOGUED_RULE, None, ids, 0.0), job_id
    assert (got["app"]["attribution"], got["app"]["rule"]) == ("user", "user-application event in window")
    for job_id in ("other", "early"):
        assert (got[job_id]["attribution"], got[job_id]["rule"]) == (
            "user", "non-zero exit without infrastructure evidence"), job_id
    assert (got["zero"]["attribution"], got["zero"]["rule"]) == ("unknown", "no evidence")


# ---- end to end: sacct, slurm node states and node logs through the pipeline -------------------------

#: The site's watchdog fires after 20 min (cluster.yaml), not the default 30.
CLUSTER = ('cluster: lasting\ntimezone: UTC\nnodes: "gpu[1-9]"\ngpus_per_node: 8\n'
           "attribution:\n  collective_timeout_min: 20\n")
DAY = "2026-12-01"


def _sacct_row(job_id: str, raw: str, state: str, exit_code: str, start: str, end: str, elapsed: str, nodes: str,
               n_nodes: int, timelimit: str = "1-00:00:00") -> str:
    return sacct_line(job_id, DAY, start, end, nodes, n_nodes, raw=raw, state=state, exit_code=exit_code,
                      elapsed=elapsed, timelimit=timelimit)


SACCT = sacct_dump([
    # 501: 2-node job, Xid 79 on gpu1 at 09:48, 12 min before its 10:00 end; drained only at 10:10.
    _sacct_row("501", "501", "FAILED", "1:0", "08:00:00", "10:00:00", "02:00:00", "gpu[1-2]", 2),
    # 502: started 11:10 on gpu3 after its Xid 79 (11:05), drain 11:05:30-11:09 and reboot (11:08).
    _sacct_row("502", "502", "FAILED", "1:0", "11:10:00", "11:15:00", "00:05:00", "gpu3", 1),
    # 503: het job, +0 on gpu4, +1 on gpu5 (Xid 74 at 11:59), both FAILED 1:0 at 12:00.
    _sacct_row("503+0", "503", "FAILED", "1:0", "10:00:00", "12:00:00", "02:00:00", "gpu4", 1),
    _sacct_row("503+1", "504", "FAILED", "1:0", "10:00:00", "12:00:00", "02:00:00", "gpu5", 1),
    # 505: 2-node job, gpu6's port down 13:35:00, ACTIVE 13:35:40 (24 min 20 s before the 14:00 end).
    _sacct_row("505", "505", "FAILED", "1:0", "12:00:00", "14:00:00", "02:00:00", "gpu[6-7]", 2),
    # 506: 2-node job, gpu6's port down 15:45:00, ACTIVE 15:45:40 (14 min 20 s before the 16:00 end).
    _sacct_row("506", "506", "FAILED", "1:0", "14:00:00", "16:00:00", "02:00:00", "gpu[6-7]", 2),
    # 507: TIMEOUT on gpu8, whose port went down at 17:40 and came back at 18:40.
    _sacct_row("507", "507", "TIMEOUT", "0:0", "16:00:00", "18:00:00", "02:00:00", "gpu8", 1, "02:00:00"),
])

EVENTS = "\n".join([
    "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User|Duration|Event|ClusterNodes",
    f"lasting||2026-11-01T00:00:00|Unknown||Cluster Registered TRES||30-00:00:00|Cluster|gpu[1-9]",
    f"lasting|gpu1|{DAY}T10:10:00|{DAY}T12:00:00|DRAIN|Xid 79 GPU fell off the bus|root(0)|01:50:00|Node|",
    f"lasting|gpu3|{DAY}T11:05:30|{DAY}T11:09:00|DRAIN|Xid 79 GPU fell off the bus|root(0)|00:03:30|Node|",
]) + "\n"

KERNEL = {
    "gpu1": [("09:48:00", XID79)],
    "gpu3": [("11:05:00", XID79), ("11:07:00", "Linux version 5.15.0-125-generic (buildd@lcy02-amd64-001)"),
             ("11:08:00", DRIVER)],
    "gpu5": [("11:59:00", XID74)],
    "gpu6": [("13:35:00", DOWN), ("13:35:40", ACTIVE), ("15:45:00", DOWN), ("15:45:40", ACTIVE)],
    "gpu8": [("17:40:00", DOWN), ("18:40:00", ACTIVE)],
}


def _log(node: str) -> str:
    """The node's kernel lines among benign ones that cover the day."""
    benign = [("00:00:05", "systemd[1]: Started Session 1 of user root."),
              ("23:59:50", "CRON[4242]: (root) CMD (/usr/sbin/nhc)")]
    lines = sorted(benign + [(t, f"kernel: {m}") for t, m in KERNEL.get(node, [])])
    return "".join(f"{DAY}T{t}.000000+00:00 {node} {m}\n" for t, m in lines)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"cluster.yaml": CLUSTER, "sacct/sacct_2026-12-01.psv": SACCT, "slurm_events/events_2026-12-01.txt": EVENTS}
    files.update({f"syslog/{DAY}/gpu{i}.log": _log(f"gpu{i}") for i in range(1, 10)})
    return run_hand_landing(tmp_path_factory.mktemp("lasting"), files)


def test_end_to_end(warehouse: Path) -> None:
    got = {r[0]: r[1:] for r in query_rows(warehouse, "SELECT job_id, attribution, rule, component, lost_gpu_hours "
                                                       "FROM marts.job_failure_attribution ORDER BY job_id")}
    assert got == {
        # the GPU still off the bus 12 min on: 16 GPUs × 0.5 h
        "501": ("infrastructure", "failure event in window", "pcie_bus", 8.0),
        # the drain ended and the node rebooted before the job started
        "502": ("user", "non-zero exit without infrastructure evidence", "user_application", 0.0),
        "503+0": ("infrastructure", HET_SIBLING_RULE, "nvlink", 4.0),
        "503+1": ("infrastructure", "failure event in window", "nvlink", 4.0),
        # cluster.yaml's 20-min collective timeout: 505 ran 24 min 20 s past the recovery (survived),
        # 506 14 min 20 s (hung): 16 × 0.5 = 8.0
        "505": ("user", "non-zero exit without infrastructure evidence", "user_application", 0.0),
        "506": ("infrastructure", "failure event in window", "network", 8.0),
        "507": ("infrastructure", HUNG_RULE, "network", 4.0),
    }
    # The Xid 79 incident counts the job it killed; the het job's incident both components.
    hit = dict(query_rows(warehouse, "SELECT component, affected_jobs FROM marts.hw_incidents "
                                     "WHERE list_contains(nodes, 'gpu1') OR list_contains(nodes, 'gpu5')"))
    assert hit == {"pcie_bus": 1, "nvlink": 2}


FM_ABORT = ("[ERROR] [tid 1802] detected number of NVSwitches don't match with any supported system topology, "
            "aborting fabric manager")
NHC_GPU_LOST = "nhc[2231]: Health check failed:  check_nv_healthmon:  GPU 0000:18:00.0 is lost"


def test_a_lasting_gpu_fault_the_node_was_given_to_the_job_with_killed_it() -> None:
    # Probe AI job 1015: Fabric Manager aborted on n1 at 2 min 38 s before a 50-s job ended; no check drained
    # the node and it did not reboot: CUDA cannot start → infrastructure / nvswitch with its incident,
    # 8 × (50 − 50²/7200) s = 0.1103 GPU-h.
    # n2: Xid 79 30 min before the end, a job started 4 min before it, nothing cleared the fault →
    #     infrastructure / pcie_bus, 8 × (240 − 240²/7200) s = 0.5156 GPU-h.
    # n3: the same, but the NVIDIA driver loaded at -20 min (a reboot) → user.
    # n4: the same, but a health check failed at -15 min and not again before the start: the node was seen
    #     to come back (the check repeats while its condition lasts) → user.
    # n5: Xid 74 (a fatal NVLink error lasts until a GPU reset: probe AP F3; it was the user's before) 8 min
    #     before a job started at -4 min, nothing cleared it → infrastructure / nvlink, 0.5156 GPU-h as n2.
    end = 2 * H
    lines = [(end - 158 * S, "n1", FM_ABORT),
             (end - 30 * M, "n2", XID79),
             (end - 30 * M, "n3", XID79), (end - 20 * M, "n3", DRIVER),
             (end - 30 * M, "n4", XID79), (end - 15 * M, "n4", NHC_GPU_LOST),
             (end - 8 * M, "n5", XID74)]
    ev = events_from_lines(lines)
    assert ev.select("node", "kind").rows() == [("n1", "fabric_manager_down"), ("n2", "xid"), ("n3", "xid"),
                                                ("n3", "driver_loaded"), ("n4", "xid"), ("n4", "health_check"),
                                                ("n5", "xid")]
    got = attribute([job("n1", ["n1"], elapsed=50 * S)] + [job(n, [n], elapsed=4 * M) for n in ("n2", "n3", "n4", "n5")],
                    lines, events=ev)
    assert (got["n1"]["attribution"], got["n1"]["component"]) == ("infrastructure", "nvswitch")
    assert got["n1"]["incident_id"] is not None and got["n1"]["evidence_event_ids"] == [1]
    assert got["n1"]["lost_gpu_hours"] == pytest.approx(8 * (50 - 50**2 / 7200) / 3600)
    assert (got["n2"]["attribution"], got["n2"]["component"]) == ("infrastructure", "pcie_bus")
    assert got["n2"]["incident_id"] is not None
    assert got["n2"]["lost_gpu_hours"] == pytest.approx(8 * (240 - 240**2 / 7200) / 3600)
    assert (got["n5"]["attribution"], got["n5"]["component"]) == ("infrastructure", "nvlink")
    assert got["n5"]["lost_gpu_hours"] == pytest.approx(8 * (240 - 240**2 / 7200) / 3600)
    for n in ("n3", "n4"):
        assert (got[n]["attribution"], got[n]["incident_id"], got[n]["lost_gpu_hours"]) == ("user", None, 0.0), n
