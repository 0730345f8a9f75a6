"""Job failure attribution, lost GPU-hours, failure taxonomy and incident impact on hand-made cases.

Every job ends at T_END; events sit a stated number of minutes from it. Lost GPU-hours are written
as the arithmetic they come from: n_gpus × min(elapsed, checkpoint interval) / 1 h.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpusre.models.failures.attribution import (ATTRIBUTION_SCHEMA, attribute_failures, attribute_failures_with,
                                                node_state_evidence, prepare_evidence)
from gpusre.models.failures.taxonomy import failure_taxonomy, incident_impact
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, merge_incidents
from gpusre.models.logs.event_catalog import classify_messages

T_END = datetime(2025, 3, 31, 23, 50, tzinfo=timezone.utc)
M = timedelta(minutes=1)
H = timedelta(hours=1)

XID79 = ("xid", 79, "pcie_bus", "hardware", "critical", "RESTART_BM")
XID74 = ("xid", 74, "nvlink", "hardware", "high", "WORKFLOW_NVLINK_ERR")
#: Xid 94, a contained ECC error: a one-off fault (RESTART_APP), no lasting state.
XID94 = ("xid", 94, "gpu_memory", "hardware", "high", "RESTART_APP")
HEALTH_CHECK = ("health_check", None, "gpu", "hardware", "high", "RESET_GPU")
XID13 = ("xid", 13, "user_application", "user_application", "medium", "RESTART_APP")
XID63 = ("xid", 63, "gpu_memory", "informational", "info", "IGNORE")


def ev(event_id: int, minutes: float, node: str, spec: tuple) -> dict:
    """One node event ``minutes`` after T_END (negative = before)."""
    kind, code, component, cause, severity, action = spec
    return {"event_id": event_id, "ts": T_END + timedelta(minutes=minutes), "node": node, "kind": kind,
            "code": code, "gpu_pci": None, "component": component, "cause_class": cause,
            "severity": severity, "action": action}


def events(rows: list[dict]) -> pl.DataFrame:
    """Events typed like core.node_events."""
    return pl.DataFrame(rows, schema=EVENT_SCHEMA)


def job(job_id: str, state: str, nodes: list[str], *, n_gpus: int = 8, elapsed: timedelta = 2 * H,
        exit_code: int = 1, exit_signal: int = 0, cancelled_by: int | None = None,
        end: datetime = T_END) -> dict:
    """One core.jobs row ending at ``end``."""
    return {"job_id": job_id, "state": state, "nodes": nodes, "n_gpus": n_gpus, "start_ts": end - elapsed,
            "end_ts": end, "elapsed_s": int(elapsed.total_seconds()), "exit_code": exit_code,
            "exit_signal": exit_signal, "cancelled_by": cancelled_by}


JOB_SCHEMA = {"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
              "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"), "elapsed_s": pl.Int64,
              "exit_code": pl.Int64, "exit_signal": pl.Int64, "cancelled_by": pl.Int64}


def jobs(rows: list[dict]) -> pl.DataFrame:
    extra = {k: pl.Int64 for r in rows for k in r if k not in JOB_SCHEMA}
    return pl.DataFrame(rows, schema={**JOB_SCHEMA, **extra})


def attribute(job_rows: list[dict], event_rows: list[dict], operator: pl.DataFrame | None = None,
              **kwargs) -> dict[str, dict]:
    """Attribution rows by job id, incidents merged from the same events."""
    ev_frame = events(event_rows)
    incidents, _ = merge_incidents(ev_frame, operator=operator)
    out = attribute_failures(jobs(job_rows), ev_frame, incidents, **kwargs)
    return {r["job_id"]: r for r in out.iter_rows(named=True)}


def test_window_boundaries() -> None:
    # Fault events (Xid 94: not a lasting fault, which counts before the window while open —
    # tests/test_attribution_lasting_faults.py; Xid 74 is one since NVLink needs a GPU reset) at -11, -10, -9 minutes and +30 s, +2 min from the end;
    # detections (a failed health check) at +4, +5, +6 minutes. Window [-10 min, +5 min]; a fault stamped
    # more than 60 s (clock skew) after the end cannot have killed the job, a detection can lag it.
    offsets = {"a": -11, "b": -10, "c": -9, "s": 0.5, "l": 2}
    rows = [ev(i, m, n, XID94) for i, (n, m) in enumerate(offsets.items(), start=1)]
    detections = {"d": 4, "e": 5, "f": 6}
    rows += [ev(10 + i, m, n, HEALTH_CHECK) for i, (n, m) in enumerate(detections.items())]
    names = [*offsets, *detections]
    out = attribute([job(n, "FAILED", [n]) for n in names], rows)
    assert {n: out[n]["attribution"] for n in names} == {
        "a": "user", "b": "infrastructure", "c": "infrastructure", "s": "infrastructure", "l": "user",
        "d": "infrastructure", "e": "infrastructure", "f": "user",
    }
    assert out["c"]["evidence_event_ids"] == [3]
    assert out["c"]["component"] == "gpu_memory" and out["c"]["cause_class"] == "hardware"
    assert out["c"]["incident_id"] is not None
    # Non-default window: 12 min before catches a; a wider clock skew accepts l.
    wide = attribute([job("a", "FAILED", ["a"])], [ev(1, -11, "a", XID94)], before=12 * M)
    assert wide["a"]["attribution"] == "infrastructure"
    skew = attribute([job("l", "FAILED", ["l"])], [ev(1, 2, "l", XID79)], clock_skew=3 * M)
    assert skew["l"]["attribution"] == "infrastructure"


def test_evidence_on_any_node_of_a_multi_node_job() -> None:
    out = attribute([job("j", "FAILED", ["n1", "n2", "n3"], n_gpus=24)], [ev(7, -2, "n2", XID74)])
    assert out["j"]["attribution"] == "infrastructure"
    assert out["j"]["component"] == "nvlink" and out["j"]["evidence_event_ids"] == [7]


def test_node_fail_without_evidence_is_suspected_infrastructure() -> None:
    out = attribute([job("nf", "NODE_FAIL", ["n1"], n_gpus=8, elapsed=10 * M, exit_code=0)], [])
    row = out["nf"]
    assert (row["attribution"], row["component"]) == ("infrastructure", "unknown (suspected)")
    assert row["evidence_event_ids"] == [] and row["incident_id"] is None
    assert row["lost_gpu_hours"] == pytest.approx(8 * (10 - 10**2 / 120) / 60)  # 8 GPUs x E[lost] of 10 min


def state(node: str, start_min: float, end_min: float | None, reason: str, component: str, availability: str,
          name: str = "DOWN*") -> dict:
    """One core.node_states row from ``start_min`` to ``end_min`` minutes after T_END (None = ongoing)."""
    return {"node": node, "state": name, "reason": reason, "reason_component": component,
            "availability_class": availability, "start_ts": T_END + timedelta(minutes=start_min),
            "end_ts": None if end_min is None else T_END + timedelta(minutes=end_min)}


STATE_SCHEMA = {"node": pl.String, "state": pl.String, "reason": pl.String, "reason_component": pl.String,
                "availability_class": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                "end_ts": pl.Datetime("us", "UTC")}


def test_node_state_evidence_merges_an_outage_and_names_its_hardware_part() -> None:
    states = pl.DataFrame([
        # n1: DOWN* Not responding, then the operator's note (touching): one outage, named host_power.
        state("n1", 1, 90, "Not responding", "os", "unknown"),
        state("n1", 90, None, "PSU failure - replace PSU2", "host_power", "hardware", "DOWN"),
        # n2: planned maintenance, then a hardware note in the same outage: planned work, dropped.
        state("n2", -30, 60, "planned maintenance: BIOS", "other", "maintenance", "MAINT"),
        state("n2", 30, 120, "gpu ecc errors", "gpu_memory", "hardware", "DRAIN"),
        # n3: software only (Kill task failed): dropped. n4: two separate outages, the second named.
        state("n3", 0, 60, "Kill task failed", "slurm", "software", "DRAIN"),
        state("n4", -600, -500, "reboot requested", "os", "maintenance", "DRAIN"),
        state("n4", 2, 30, "NHC: check_gpu_xid: Xid 79 on GPU 3", "gpu", "hardware", "DRAIN"),
    ], schema=STATE_SCHEMA)
    out = node_state_evidence(states)
    assert out.select("node", "component").rows() == [("n1", "host_power"), ("n4", "gpu")]
    assert out.get_column("start_ts").to_list() == [T_END + M, T_END + 2 * M]
    assert out.get_column("evidence").to_list() == [
        'DOWN "PSU failure - replace PSU2" since 2025-04-01 01:20:00Z',
        'DRAIN "NHC: check_gpu_xid: Xid 79 on GPU 3" since 2025-03-31 23:52:00Z']


def test_node_state_in_window_names_the_component() -> None:
    outages = node_state_evidence(pl.DataFrame([
        state("n1", 1, 90, "Not responding", "os", "unknown"),
        state("n1", 90, None, "PSU failure - replace PSU2", "host_power", "hardware", "DOWN"),
        state("n7", 6, None, "gpu ecc errors", "gpu_memory", "hardware", "DRAIN"),  # past the 5-min window
    ], schema=STATE_SCHEMA))
    out = attribute([job("nf", "NODE_FAIL", ["n1"], exit_code=0), job("late", "NODE_FAIL", ["n7"], exit_code=0),
                     job("f", "FAILED", ["n1"]), job("oom", "OUT_OF_MEMORY", ["n1"]),
                     job("ok", "COMPLETED", ["n1"], exit_code=0),
                     job("logged", "FAILED", ["n1"])],
                    [ev(5, -1, "n9", XID79)], node_states=outages)
    assert (out["nf"]["attribution"], out["nf"]["rule"], out["nf"]["component"], out["nf"]["cause_class"]) == (
        "infrastructure", "Slurm node state in window", "host_power", "hardware")
    assert out["nf"]["evidence_node_state"] == 'DOWN "PSU failure - replace PSU2" since 2025-04-01 01:20:00Z'
    assert out["nf"]["evidence_event_ids"] == []
    assert out["f"]["component"] == "host_power"  # a FAILED job too: the node went down under it
    assert (out["late"]["component"], out["late"]["evidence_node_state"]) == ("unknown (suspected)", None)
    assert out["oom"]["attribution"] == "user" and out["oom"]["evidence_node_state"] is None
    assert out["ok"]["attribution"] == "none"
    # Log evidence comes first: the event names the component, the node state is listed beside it.
    logged = attribute([job("logged", "FAILED", ["n1"])], [ev(5, -1, "n1", XID79)], node_states=outages)["logged"]
    assert (logged["rule"], logged["component"]) == ("failure event in window", "pcie_bus")
    assert logged["evidence_node_state"].startswith('DOWN "PSU failure')


def test_user_xid_only_is_user() -> None:
    out = attribute([job("u", "FAILED", ["n1"])], [ev(1, -1, "n1", XID13)])
    row = out["u"]
    assert (row["attribution"], row["component"]) == ("user", "user_application")
    assert row["evidence_event_ids"] == [1] and row["lost_gpu_hours"] == 0.0


def test_user_xid_with_hardware_xid_is_infrastructure() -> None:
    out = attribute([job("h", "FAILED", ["n1"])], [ev(1, -3, "n1", XID13), ev(2, -2, "n1", XID79)])
    row = out["h"]
    assert (row["attribution"], row["component"]) == ("infrastructure", "pcie_bus")
    assert row["evidence_event_ids"] == [2]


def test_informational_xid_is_not_evidence() -> None:
    out = attribute([job("i", "FAILED", ["n1"]), job("z", "FAILED", ["n2"], exit_code=0)],
                    [ev(1, -1, "n1", XID63)])
    assert out["i"]["attribution"] == "user"  # non-zero exit, no infrastructure evidence
    assert out["z"]["attribution"] == "unknown"  # FAILED 0:0 and nothing else: we cannot tell


def test_failed_by_signal_is_user() -> None:
    out = attribute([job("s", "FAILED", ["n1"], exit_code=0, exit_signal=11)], [])
    assert out["s"]["attribution"] == "user"


def test_a_started_deadline_job_is_the_users_limit_and_a_pending_one_no_failure() -> None:
    # Slurm ends a running job at its --deadline (DEADLINE) as it ends one at its time limit; a job whose
    # deadline passed while it pended never ran: nothing was killed (outside probe: job 3002 counted as
    # failed with no attribution row, "1 of 1 failed job").
    out = attribute([job("dl", "DEADLINE", ["n1"], exit_code=0),
                     {**job("dl_pending", "DEADLINE", [], exit_code=0), "start_ts": None, "elapsed_s": 0}],
                    [ev(1, 0, "n1", XID79)])
    got = {k: (v["attribution"], v["component"]) for k, v in out.items()}
    assert got == {"dl": ("user", "user_application"), "dl_pending": ("none", None)}


def test_limits_cancellations_and_non_failures() -> None:
    out = attribute(
        [job("oom", "OUT_OF_MEMORY", ["n1"], exit_code=0), job("to", "TIMEOUT", ["n2"], exit_code=0),
         job("to_hw", "TIMEOUT", ["n3"], exit_code=0),
         job("root", "CANCELLED", ["n4"], cancelled_by=0), job("usr", "CANCELLED", ["n5"], cancelled_by=1234),
         job("ok", "COMPLETED", ["n6"], exit_code=0), job("rq", "REQUEUED", ["n7"], exit_code=0),
         job("rq_hw", "REQUEUED", ["n8"], exit_code=0),
         {**job("root_pending", "CANCELLED", [], cancelled_by=0), "start_ts": None, "elapsed_s": 0}],
        [ev(1, 0, "n3", XID79), ev(2, 1, "n6", XID79), ev(3, -1, "n8", XID79)],
    )
    got = {k: (v["attribution"], v["component"]) for k, v in out.items()}
    assert got == {
        "oom": ("user", "host_memory"),
        "to": ("user", "user_application"),
        "to_hw": ("user", "user_application"),  # it reached its time limit: the Xid is a coincidence
        "root": ("unknown", None),
        "usr": ("none", None),
        "ok": ("none", None),  # a completed job is 'none' even with an Xid 79 beside it
        "rq": ("none", None),
        "rq_hw": ("infrastructure", "pcie_bus"),
        "root_pending": ("none", None),  # root cancelled it before it started: nothing was killed
    }


def test_operator_incident_covers_job_without_events() -> None:
    operator = pl.DataFrame({"id": ["OPS-1"], "start": [T_END - H], "end": [T_END + H],
                             "component": ["ip_configuration"], "root_cause": ["bad netmask"],
                             "nodes": ["n[1-2]"], "notes": [None]})
    out = attribute([job("j", "FAILED", ["n2"]), job("k", "FAILED", ["n3"])], [], operator=operator)
    assert (out["j"]["attribution"], out["j"]["component"]) == ("infrastructure", "ip_configuration")
    assert out["j"]["rule"] == "incident covers job end"
    assert out["k"]["attribution"] == "user"


def test_lost_gpu_hours_arithmetic() -> None:
    rows = [ev(1, -1, "n1", XID79), ev(2, -1, "n2", XID79)]
    short = job("short", "FAILED", ["n1"], n_gpus=16, elapsed=20 * M)
    long = job("long", "FAILED", ["n2"], n_gpus=16, elapsed=2 * H)
    out = attribute([short, long], rows)
    # hourly checkpoints, phase unknown: t − t²/2Δ for t < Δ (20 min -> 20 − 400/120 = 16.67 min), else Δ/2
    assert out["short"]["lost_gpu_hours"] == pytest.approx(16 * (20 - 20**2 / 120) / 60)
    assert out["long"]["lost_gpu_hours"] == pytest.approx(16 * 0.5)  # 8.0: half an interval
    custom = attribute([long], rows, checkpoint_interval=120 * M)
    assert custom["long"]["lost_gpu_hours"] == pytest.approx(16 * 60 / 60)  # half of a 2 h interval: 16.0
    # the site's per-account policy, as columns, wins over the arguments; without the run a restart
    # is not known to have followed, so none is charged (with_run_losses: tests/test_lost_gpu_hours.py)
    per_job = attribute([dict(long, checkpoint_interval_s=1800, restart_overhead_s=600)], rows)
    assert per_job["long"]["lost_gpu_hours"] == pytest.approx(16 * 15 / 60)


def test_tied_events_at_window_edge_all_count() -> None:
    out = attribute([job("t", "FAILED", ["n1"])], [ev(5, -10, "n1", XID79), ev(4, -10, "n1", XID74)])
    assert out["t"]["evidence_event_ids"] == [4, 5]
    assert out["t"]["component"] in {"pcie_bus", "nvlink"}


def test_job_instances_keep_instance_no_and_schema() -> None:
    inst = jobs([job("9", "NODE_FAIL", ["n1"], exit_code=0), job("9", "COMPLETED", ["n2"], exit_code=0)])
    inst = inst.with_columns(pl.Series("instance_no", [1, 2])).drop("exit_code", "exit_signal", "cancelled_by")
    out = attribute_failures(inst, events([]), merge_incidents(events([]))[0])
    assert out.columns[:2] == ["job_id", "instance_no"]
    assert out["attribution"].to_list() == ["infrastructure", "none"]
    assert {c: out.schema[c] for c in ATTRIBUTION_SCHEMA} == ATTRIBUTION_SCHEMA


def _scenario() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Two incidents, three failed jobs, one suspected NODE_FAIL, and later successes.

    Incident A: Xid 79 on n1 at -5 and -1 min (2 events) kills job a1 (8 GPUs, 2 h) and a2 (4 GPUs,
    12 min) on n1. Incident B: Xid 74 on n2 at +2 min kills b1 (8 GPUs, 1 h). NODE_FAIL nf on n3
    (8 GPUs, 40 min) with no event; it ends on 1 April, the others on 31 March.
    """
    ev_frame = events([ev(1, -5, "n1", XID79), ev(2, -1, "n1", XID79), ev(3, -2, "n2", XID74)])
    job_frame = jobs([
        job("a1", "FAILED", ["n1"], n_gpus=8, elapsed=2 * H),
        job("a2", "FAILED", ["n1"], n_gpus=4, elapsed=12 * M),
        job("b1", "FAILED", ["n2"], n_gpus=8, elapsed=1 * H),
        job("nf", "NODE_FAIL", ["n3"], n_gpus=8, elapsed=40 * M, exit_code=0, end=T_END + H),
        # Successes after the incidents: ok1 starts on n1 at T_END + 3 h (incident A ended at -1 min),
        # n2 only before incident B ends, so B has not recovered.
        job("ok1", "COMPLETED", ["n1"], exit_code=0, elapsed=H, end=T_END + 4 * H),
        job("ok2", "COMPLETED", ["n2"], exit_code=0, elapsed=H, end=T_END + 30 * M),
    ])
    incidents, _ = merge_incidents(ev_frame)
    attribution = attribute_failures(job_frame, ev_frame, incidents)
    return ev_frame, job_frame, incidents, attribution


def test_evidence_prepared_once_serves_every_job_frame() -> None:
    """The asset prepares the evidence once for the latest and the earlier instances: each frame's
    result must equal its own attribute_failures call, in either order, reusing the same evidence."""
    ev_frame, job_frame, incidents, _ = _scenario()
    earlier = job_frame.head(3).with_columns(pl.Series("instance_no", [1, 1, 2]),
                                              pl.lit("REQUEUED").alias("state"))
    evidence = prepare_evidence(ev_frame, incidents)
    for frame in (earlier, job_frame, earlier):
        assert attribute_failures_with(frame, evidence).equals(attribute_failures(frame, ev_frame, incidents))
    got = attribute_failures_with(earlier, evidence)
    assert got["attribution"].to_list() == ["infrastructure", "infrastructure", "infrastructure"]


def test_failure_taxonomy_all_and_month() -> None:
    _, _, incidents, attribution = _scenario()
    tax = failure_taxonomy(incidents, attribution, period="all")
    got = {r["component"]: (r["incidents"], r["events"], r["affected_jobs"], r["lost_gpu_hours"])
           for r in tax.iter_rows(named=True)}
    assert got == {
        # E[lost] with hourly checkpoints: 2 h -> 30 min; 12 min -> 12 - 144/120 = 10.8 min
        "pcie_bus": (1, 2, 2, pytest.approx(8 * 0.5 + 4 * 10.8 / 60)),  # 4.0 + 0.72
        "nvlink": (1, 1, 1, pytest.approx(8 * 0.5)),  # t = Δ: 30 min
        "unknown (suspected)": (0, 0, 1, pytest.approx(8 * (40 - 1600 / 120) / 60)),  # 26.67 min
    }
    assert tax["period"].unique().to_list() == ["all"]
    month = failure_taxonomy(incidents, attribution, period="month")
    per_month = {(r["period"], r["component"]) for r in month.iter_rows(named=True)}
    assert per_month == {("2025-03", "pcie_bus"), ("2025-03", "nvlink"), ("2025-04", "unknown (suspected)")}
    # Totals reconcile with the attribution's infrastructure lost GPU-hours (4.72 + 4 + 3.556).
    assert month["lost_gpu_hours"].sum() == pytest.approx(4.72 + 4 + 8 * (40 - 1600 / 120) / 60)


def test_incident_impact() -> None:
    _, job_frame, incidents, attribution = _scenario()
    impact = {r["incident_id"]: r for r in incident_impact(incidents, attribution, job_frame).iter_rows(named=True)}
    by_component = dict(zip(incidents["component"], incidents["incident_id"], strict=True))
    a = impact[by_component["pcie_bus"]]
    assert (a["affected_jobs"], a["affected_gpus"]) == (2, 12)
    assert a["lost_gpu_hours"] == pytest.approx(4.72)
    # ok1 starts at T_END + 3 h; incident A ended at T_END - 1 min: 3 h 1 min later.
    assert a["nodes_recovered"] == 1
    assert a["hours_to_recovery"] == pytest.approx(3 + 1 / 60)
    b = impact[by_component["nvlink"]]
    assert (b["affected_jobs"], b["nodes_recovered"], b["recovered_ts"]) == (1, 0, None)


def test_evidence_before_the_job_started_did_not_kill_it() -> None:
    # A GPU fault on n1 whose last failing check is 9 min before the end: a job that started 5 min after
    # that check (the node was back in service) and failed is the user's; one that ran through it is not.
    rows = [ev(1, -60, "n1", XID79), ev(2, -9, "n1", HEALTH_CHECK)]
    late = job("late", "FAILED", ["n1"], elapsed=4 * M)
    through = job("through", "FAILED", ["n1"], elapsed=2 * H)
    got = attribute([late, through], rows)
    assert got["late"]["attribution"] == "user" and got["late"]["incident_id"] is None
    assert got["through"]["attribution"] == "infrastructure"


def test_a_user_gpu_error_beside_only_a_storage_fault_is_the_users() -> None:
    lustre = ("lustre_error", None, "storage", "system_software", "high", "CHECK_STORAGE")
    rows = [ev(1, -3, "n1", lustre), ev(2, -1, "n1", XID13), ev(3, -3, "n2", XID13), ev(4, -1, "n2", XID79)]
    got = attribute([job("app", "FAILED", ["n1"]), job("gpu", "FAILED", ["n2"]),
                     job("io", "FAILED", ["n3"])], rows + [ev(5, -2, "n3", lustre)])
    assert (got["app"]["attribution"], got["app"]["component"]) == ("user", "user_application")
    assert got["app"]["rule"].startswith("user-application event; the storage/network fault")
    # A GPU fault can leave application Xids behind: infrastructure; storage alone: infrastructure.
    assert got["gpu"]["attribution"] == "infrastructure" and got["io"]["attribution"] == "infrastructure"


def test_a_user_gpu_error_on_another_node_than_the_link_fault_is_not_the_cause() -> None:
    link = ("ib_link_down", None, "network", "hardware", "high", "CHECK_LINK")
    got = attribute([job("wide", "FAILED", ["n1", "n2"])], [ev(1, 0, "n1", link), ev(2, 0.5, "n2", XID13)])
    assert (got["wide"]["attribution"], got["wide"]["component"]) == ("infrastructure", "network")


def test_a_fault_its_node_recovered_from_before_the_job_ended_did_not_kill_it() -> None:
    # A Lustre outage on n1 and n2 until 3 min before the end; n1's client reconnected at -2 min, so a
    # job on n1 failing at the end was not killed by it. n2 never logged the reconnect: a job there was.
    # (A Lustre client replays its blocked I/O on reconnect: no grace, unlike a link — test_link_flaps.py.)
    lustre = ("lustre_error", None, "storage", "system_software", "high", "CHECK_STORAGE")
    restored = ("lustre_recovered", None, "storage", "informational", "info", "IGNORE")
    rows = [ev(1, -9, "n1", lustre), ev(2, -3, "n1", lustre), ev(3, -2, "n1", restored),
            ev(4, -9, "n2", lustre), ev(5, -3, "n2", lustre), ev(6, -8, "n3", lustre)]
    got = attribute([job("a", "FAILED", ["n1"]), job("b", "FAILED", ["n2"])], rows)
    assert got["a"]["attribution"] == "user" and got["a"]["incident_id"] is None
    assert (got["b"]["attribution"], got["b"]["component"]) == ("infrastructure", "storage")


def test_an_earlier_recovery_does_not_clear_the_fault_logged_just_after_the_end() -> None:
    # n1 had a Lustre hiccup that recovered 6 min before the end; the outage that killed the job shows in
    # its log 30 s after the end (the client notices late).
    lustre = ("lustre_error", None, "storage", "system_software", "high", "CHECK_STORAGE")
    restored = ("lustre_recovered", None, "storage", "informational", "info", "IGNORE")
    rows = [ev(1, -9, "n1", lustre), ev(2, -6, "n1", restored), ev(3, 0.5, "n1", lustre)]
    got = attribute([job("a", "FAILED", ["n1"])], rows)
    assert (got["a"]["attribution"], got["a"]["component"]) == ("infrastructure", "storage")


MIDNIGHT = datetime(2025, 4, 1, tzinfo=timezone.utc)


@settings(max_examples=300, deadline=None)
@given(inc_start=st.integers(-3 * 24 * 60, 24 * 60), inc_minutes=st.integers(0, 3 * 24 * 60),
       end=st.integers(-2 * 24 * 60, 2 * 24 * 60), run_minutes=st.integers(1, 4 * 24 * 60),
       operator=st.booleans())
@example(inc_start=-30, inc_minutes=25, end=4, run_minutes=60, operator=False)  # ended 9 min after, next day
@example(inc_start=3, inc_minutes=60, end=-2, run_minutes=60, operator=True)  # began 5 min after, next day
@example(inc_start=-2 * 24 * 60, inc_minutes=3 * 24 * 60, end=-24 * 60 + 7, run_minutes=600, operator=False)
def test_an_incident_meets_a_job_by_its_window_whatever_days_both_span(
        inc_start: int, inc_minutes: int, end: int, run_minutes: int, operator: bool) -> None:
    """The incidents are joined with the job's nodes by the days the job's window can fall on: a job
    meets an incident by the window rule alone (10 min before the end, 5 min after for an operator's
    incident, 60 s of clock skew for the others), also across midnights and multi-day incidents."""
    start_ts, end_ts = MIDNIGHT + inc_start * M, MIDNIGHT + (inc_start + inc_minutes) * M
    job_end = MIDNIGHT + end * M
    incidents = pl.DataFrame(
        {"incident_id": ["I1"], "component": ["pcie_bus"], "cause_class": ["hardware"], "severity": ["critical"],
         "start_ts": [start_ts], "end_ts": [end_ts], "nodes": [["n1"]],
         "label_source": ["operator" if operator else "events"]},
        schema_overrides={"start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC")})
    got = attribute_failures_with(jobs([job("j", "FAILED", ["n1"], end=job_end, elapsed=run_minutes * M)]),
                                  prepare_evidence(events([]), incidents))
    skew = timedelta(seconds=60)
    meets = (start_ts <= job_end + (5 * M if operator else skew) and end_ts >= job_end - 10 * M
             and (operator or end_ts >= job_end - run_minutes * M - skew))
    assert got["incident_id"].to_list() == (["I1"] if meets else [None])


def test_an_incident_with_a_far_end_adds_only_the_days_jobs_end_on() -> None:
    """An operator's incident ending in 2999 (a typo) still covers the job whose window it meets, and
    is listed only on the days between the first and the last job end, not for ten centuries."""
    from gpusre.models.failures.attribution import _by_day

    incident_nodes = pl.DataFrame(
        {"incident_id": ["OPS-1"], "node": ["n1"], "_inc_start": [T_END - H],
         "_inc_end": [datetime(2999, 1, 1, tzinfo=timezone.utc)]},
        schema_overrides={"_inc_start": pl.Datetime("us", "UTC"), "_inc_end": pl.Datetime("us", "UTC")})
    days = _by_day(incident_nodes, "_inc_start", "_inc_end", lead=5 * M, lag=10 * M, ends=(T_END, T_END + 49 * H))
    assert days["_day"].to_list() == [T_END.date() + timedelta(days=d) for d in range(4)]  # Mar 31 ... Apr 3
    assert _by_day(incident_nodes, "_inc_start", "_inc_end", lead=5 * M, lag=10 * M, ends=(None, None)).height == 0
    operator = pl.DataFrame({"id": ["OPS-1"], "start": [T_END - H], "end": [datetime(2999, 1, 1, tzinfo=timezone.utc)],
                             "component": ["ip_configuration"], "root_cause": ["typo"], "nodes": ["n1"],
                             "notes": [None]})
    out = attribute([job("j", "FAILED", ["n1"]), job("k", "FAILED", ["n1"], end=T_END + 49 * H)], [], operator=operator)
    assert out["j"]["incident_id"] == out["k"]["incident_id"] is not None


def test_a_node_state_just_past_midnight_is_in_the_window_of_a_job_ending_before_it() -> None:
    """Outages meet job-nodes by the day the job ended: an outage starting 4 min after a job that
    ended at 23:58 (the next UTC day) is in its window; one starting 6 min after is not, nor one
    starting 11 min before."""
    end = MIDNIGHT - 2 * M
    minutes = lambda m: (end + m * M - T_END).total_seconds() / 60  # noqa: E731 - state() counts from T_END
    outages = node_state_evidence(pl.DataFrame([
        state("n1", minutes(4), None, "PSU failure", "host_power", "hardware", "DOWN"),
        state("n2", minutes(6), None, "PSU failure", "host_power", "hardware", "DOWN"),
        state("n3", minutes(-11), None, "PSU failure", "host_power", "hardware", "DOWN"),
    ], schema=STATE_SCHEMA))
    out = attribute([job(n, "NODE_FAIL", [n], exit_code=0, end=end) for n in ("n1", "n2", "n3")], [],
                    node_states=outages)
    assert [out[n]["component"] for n in ("n1", "n2", "n3")] == ["host_power", "unknown (suspected)",
                                                                  "unknown (suspected)"]


def test_an_nfs_server_answering_again_clears_its_timeout() -> None:
    # The catalog's own verdicts for the two kernel lines: n1 logged the server OK 2 min before the
    # job ended, n2 did not.
    classes = classify_messages(pl.Series(["nfs: server fs01 not responding, still trying", "nfs: server fs01 OK"]))
    timeout, answered = (tuple(r[c] for c in ("kind", "code", "component", "cause_class", "severity", "action"))
                         for r in classes.iter_rows(named=True))
    assert answered[0] == "nfs_recovered"
    rows = [ev(1, -6, "n1", timeout), ev(2, -2, "n1", answered), ev(3, -6, "n2", timeout)]
    got = attribute([job("a", "FAILED", ["n1"]), job("b", "FAILED", ["n2"])], rows)
    assert got["a"]["attribution"] == "user"
    assert (got["b"]["attribution"], got["b"]["component"]) == ("infrastructure", "storage")


def test_incident_impact_counts_the_instances_it_killed() -> None:
    # Incident X killed job r's first instance (8 GPUs, 4.667 GPU-h; Slurm requeued it and it later
    # completed) and, in another requeue, job s twice (instance 1: 2.0, the job itself: 3.0).
    incidents = pl.DataFrame({"incident_id": ["X"], "end_ts": [T_END], "nodes": [["n1"]]},
                             schema_overrides={"end_ts": pl.Datetime("us", "UTC")})
    kills = pl.DataFrame({"job_id": ["r", "s", "s", "t"], "attribution": ["infrastructure"] * 3 + ["user"],
                          "incident_id": ["X", "X", "X", None], "n_gpus": [8, 16, 16, 8],
                          "lost_gpu_hours": [14 / 3, 2.0, 3.0, 1.0]})
    row = incident_impact(incidents, kills, jobs([])).row(0, named=True)
    assert (row["affected_jobs"], row["affected_gpus"]) == (2, 24)
    assert row["lost_gpu_hours"] == pytest.approx(14 / 3 + 5.0)


def test_a_gpu_stopped_processing_xid_does_not_outweigh_the_link_fault_beside_it() -> None:
    # n1's IB port went down 2 min before the end and Xid 43 ("GPU stopped processing", low: NVIDIA
    # says ignore; a process killed by an NCCL timeout leaves it) 30 s before: the network's. On n2 a
    # user's Xid 13 (an illegal instruction: medium) beside a storage fault stays the user's.
    link = ("ib_link_down", None, "network", "hardware", "high", "CHECK_LINK")
    xid43 = ("xid", 43, "user_application", "user_application", "low", "IGNORE")
    lustre = ("lustre_error", None, "storage", "system_software", "high", "CHECK_STORAGE")
    got = attribute([job("a", "FAILED", ["n1"]), job("b", "FAILED", ["n2"])],
                    [ev(1, -2, "n1", link), ev(2, -0.5, "n1", xid43), ev(3, -3, "n2", lustre), ev(4, -1, "n2", XID13)])
    assert (got["a"]["attribution"], got["a"]["component"]) == ("infrastructure", "network")
    assert (got["b"]["attribution"], got["b"]["component"]) == ("user", "user_application")


def test_failure_taxonomy_counts_the_instances_incidents_killed() -> None:
    # Incident X (pcie_bus) killed job r's first instance (Slurm requeued it; it later completed:
    # 4.667 GPU-h) and job s twice (2.0 + 3.0); a NODE_FAIL without evidence killed job u's first
    # instance and then job u (0.5 + 1.5). The taxonomy counts what hw_incidents counts: X 2 jobs,
    # 9.667 GPU-h; unknown (suspected) 1 job, 2.0 GPU-h. A user failure counts nowhere.
    incidents = pl.DataFrame({"incident_id": ["X"], "component": ["pcie_bus"], "cause_class": ["hardware"],
                              "start_ts": [T_END - timedelta(hours=1)], "n_events": [3]},
                             schema_overrides={"start_ts": pl.Datetime("us", "UTC")})
    kills = pl.DataFrame({
        "job_id": ["r", "s", "s", "u", "u", "t"],
        "attribution": ["infrastructure"] * 5 + ["user"],
        "incident_id": ["X", "X", "X", None, None, None],
        "component": ["pcie_bus"] * 3 + ["unknown (suspected)"] * 2 + [None],
        "cause_class": ["hardware"] * 3 + [None, None, None],
        "end_ts": [T_END] * 6,
        "lost_gpu_hours": [14 / 3, 2.0, 3.0, 0.5, 1.5, 1.0]},
        schema_overrides={"end_ts": pl.Datetime("us", "UTC")})
    got = {r["component"]: (r["incidents"], r["affected_jobs"], r["lost_gpu_hours"])
           for r in failure_taxonomy(incidents, kills).iter_rows(named=True)}
    assert got == {"pcie_bus": (1, 2, pytest.approx(14 / 3 + 5.0)), "unknown (suspected)": (0, 1, pytest.approx(2.0))}


def test_a_job_cancelled_by_an_unknown_uid_keeps_its_row() -> None:
    # sacct prints plain CANCELLED when it does not know who cancelled: cancelled_by is NULL. Such a job is no
    # candidate, but it keeps its "not a failure" row (it once fell out of both the candidates and the rest).
    rows = [job("a", "CANCELLED", ["n1"], cancelled_by=None), job("b", "CANCELLED", ["n1"], cancelled_by=0)]
    got = attribute(rows, [])
    assert set(got) == {"a", "b"}
    assert got["a"]["attribution"] == "none" and got["b"]["attribution"] == "unknown"
