"""Time to detect / time to repair: hardware incidents linked to the node outages that follow them."""

from __future__ import annotations

import doctest
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from gpusre.models.reliability import repair_times as rt
from gpusre.models.reliability.repair_times import (
    INCIDENT_REPAIR_SCHEMA,
    REPAIR_TIMES_SCHEMA,
    link_incidents,
    median_ci,
    node_outages,
    repair_times,
)
from gpusre.models.warehouse import connect
from gpusre.pipelines.resources import default_resources

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")


def _t(day: int, hour: float) -> datetime:
    return datetime(2026, 5, day, tzinfo=UTC) + timedelta(hours=hour)


def _states() -> pl.DataFrame:
    return pl.DataFrame({
        "node": ["n1", "n1", "n2", "n3", "n4", "n4"],
        "start_ts": [_t(1, 2), _t(1, 5), _t(1, 1), _t(2, 0), _t(1, 0), _t(3, 0)],
        "end_ts": [_t(1, 6), _t(1, 9), _t(1, 4), None, _t(1, 12), _t(3, 1)],
        "reason": ["NHC: Xid 79", "Not responding", "IB link down", "gpu ecc errors", "planned maintenance", "x"],
        "reason_class": ["gpu_xid", "not_responding", "network", "gpu_ecc", "planned_maintenance", "unknown"],
    }, schema_overrides={"end_ts": DT})


def _incidents() -> pl.DataFrame:
    return pl.DataFrame({
        "incident_id": ["a", "b", "c", "d", "e", "f"],
        "component": ["gpu", "network_switch", "gpu_memory", "gpu", "gpu", "storage"],
        "start_ts": [_t(1, 1), _t(1, 1.5), _t(1, 23), _t(1, 3), _t(5, 0), _t(1, 0)],
        "nodes": [["n1"], ["n1", "n2"], ["n3"], ["n4"], ["n1"], []],
    })


def test_doctests() -> None:
    assert doctest.testmod(rt).failed == 0


def test_overlapping_states_form_one_outage() -> None:
    out = node_outages(_states()).select("node", "outage_start_ts", "outage_end_ts", "events").rows()
    assert out == [("n1", _t(1, 2), _t(1, 9), 2), ("n2", _t(1, 1), _t(1, 4), 1), ("n3", _t(2, 0), None, 1),
                   ("n4", _t(1, 0), _t(1, 12), 1), ("n4", _t(3, 0), _t(3, 1), 1)]


def test_incidents_are_linked_to_the_outage_that_follows() -> None:
    linked = link_incidents(_incidents(), _states())
    assert linked.schema == pl.Schema(INCIDENT_REPAIR_SCHEMA)
    got = {r["incident_id"]: (r["repair_state"], r["linked_nodes"], r["hours_to_detect"], r["hours_to_repair"],
                              r["drain_reason_class"]) for r in linked.iter_rows(named=True)}
    assert got == {
        # n1 drained 1 h after the incident, back at 09:00 (DRAIN then DOWN: one outage): 8 h after the
        # first evidence.
        "a": ("repaired", 1, 1.0, 8.0, "gpu_xid"),
        # n2 drained 30 min *before* the incident's first log line (within the 30 min allowance):
        # detected at once, back at 04:00, 2.5 h after the first evidence. n1's outage was drained for a
        # GPU Xid: it is incident a's repair, not this network incident's.
        "b": ("repaired", 1, 0.0, 2.5, "network"),
        # n3's drain (1 h later) is still open: ongoing, no repair time.
        "c": ("ongoing", 1, 1.0, None, "gpu_ecc"),
        # n4 was already out (planned maintenance since 00:00) when the incident started: not its drain.
        "d": ("not_drained", 0, None, None, None),
        "e": ("not_drained", 0, None, None, None),
        "f": ("no_nodes", 0, None, None, None),
    }


def test_summary_per_component_class_and_all() -> None:
    summary = repair_times(link_incidents(_incidents(), _states()))
    assert summary.schema == pl.Schema(REPAIR_TIMES_SCHEMA)
    rows = {r["component_class"]: r for r in summary.iter_rows(named=True)}
    assert summary["component_class"][0] == "all"
    overall = rows["all"]
    assert (overall["incidents"], overall["linked_incidents"], overall["repaired"], overall["ongoing"]) == (6, 3, 2, 1)
    assert overall["mttr_hours_p50"] == pytest.approx(5.25) and overall["mttr_hours_mean"] == pytest.approx(5.25)
    assert overall["mttd_hours_p50"] == pytest.approx(1.0) and overall["from_node_states"] == 2
    assert overall["ci_low"] is None and "too few" in overall["note"]
    # gpu, gpu_memory -> class gpu (a, c, d, e); network_switch -> network: the classes MTBF uses
    assert set(rows) == {"all", "gpu", "network", "storage"}
    assert rows["gpu"]["incidents"] == 4 and rows["gpu"]["repaired"] == 1
    assert rows["network"]["mttr_hours_p50"] == pytest.approx(2.5)
    assert rows["storage"]["note"] == "no repaired incident"


def test_without_node_states_repairs_fall_back_and_say_so() -> None:
    incidents = _incidents().with_columns(
        pl.Series("end_ts", [_t(1, 2), _t(1, 3), _t(1, 23.5), _t(1, 6), _t(5, 4), _t(1, 1)], dtype=DT),
        pl.Series("n_health_check_episodes", [0, 2, 0, 1, 0, 0]),
        pl.Series("recovered_ts", [_t(1, 10), None, None, _t(1, 20), None, None], dtype=DT))
    linked = link_incidents(incidents, _states().clear())
    got = {r["incident_id"]: (r["repair_state"], r["repair_source"], r["hours_to_repair"])
           for r in linked.iter_rows(named=True)}
    assert got == {
        "a": ("repaired", "job_completed", 9.0),    # no health check: the first completed job (10:00)
        # The checks last failed at 03:00: the repair is after that, at the check's next run (no run
        # details here: the default 300 s), 02:30 after the 01:30 start + 5 min.
        "b": ("repaired", "health_checks", pytest.approx(1.5 + 5 / 60)),
        "c": ("not_drained", None, None),           # nothing tells when it was repaired
        "d": ("repaired", "health_checks", pytest.approx(3.0 + 5 / 60)),  # health checks win over the job restart
        "e": ("not_drained", None, None),
        "f": ("no_nodes", None, None),
    }
    assert repair_times(linked).filter(pl.col("component_class") == "all").item(0, "from_node_states") == 0


def test_median_interval_covers_the_median() -> None:
    values = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0, 4.0, 6.0, 10.0]
    low, high = median_ci(values)
    assert low is not None and high is not None and low <= 5.5 <= high
    assert (low, high) == (2.0, 9.0)  # n = 10: x(2), x(9) (coverage 97.9 %)
    assert median_ci([]) == (None, None)


def test_the_asset_links_warehouse_incidents(tmp_path: Path) -> None:
    from gpusre.assets.node_states import repair_time_marts

    wh = tmp_path / "w.duckdb"
    con = connect(wh)
    con.register("_s", _states().with_columns(
        pl.lit("DRAIN").alias("state"), pl.lit("sacctmgr").alias("source_format"), pl.lit("f").alias("source_file"),
        pl.lit(1, pl.Int64).alias("line_no")).to_arrow())
    con.execute("INSERT INTO core.node_states BY NAME SELECT * FROM _s")
    con.register("_i", _incidents().to_arrow())
    con.execute("CREATE TABLE marts.hw_incidents AS SELECT * FROM _i")
    con.close()
    result = dg.materialize([repair_time_marts], resources=default_resources(str(wh), str(tmp_path), str(tmp_path)))
    assert result.success
    con = connect(wh, read_only=True)
    states = dict(con.sql("SELECT incident_id, repair_state FROM marts.incident_repairs").fetchall())
    overall = con.sql("SELECT repaired, mttr_hours_p50 FROM marts.repair_times WHERE component_class = 'all'").fetchall()
    con.close()
    assert states["a"] == "repaired" and states["d"] == "not_drained"
    assert overall == [(2, 5.25)]


def test_only_drains_of_its_own_nodes_and_time_are_an_incidents_repair() -> None:
    # A storage incident on n5/n6 from 01:00 to 01:10. n6 is drained at 01:05 for the mount; n5 only at
    # 09:00 "NCCL perf investigation" (an admin's drain long after the evidence ended); n7, not the
    # incident's node, is drained at 01:02.
    incidents = pl.DataFrame({"incident_id": ["s"], "component": ["storage"], "start_ts": [_t(1, 1)],
                              "end_ts": [_t(1, 1 + 10 / 60)], "nodes": [["n5", "n6"]]},
                             schema_overrides={"end_ts": DT})
    states = pl.DataFrame({"node": ["n5", "n6", "n7"], "start_ts": [_t(1, 9), _t(1, 1 + 5 / 60), _t(1, 1 + 2 / 60)],
                           "end_ts": [_t(1, 18), _t(1, 2), _t(1, 3)],
                           "reason": ["NCCL perf investigation", "lustre not mounted", "x"],
                           "reason_class": [None, "filesystem", "unknown"]}, schema_overrides={"reason_class": pl.String})
    row = link_incidents(incidents, states).row(0, named=True)
    assert (row["linked_nodes"], row["back_in_service_ts"], row["hours_to_repair"]) == (1, _t(1, 2), 1.0)
    assert row["repair_source"] == "node_states" and row["drain_reason"] == "lustre not mounted"


def test_recovery_lines_time_a_repair_without_node_states() -> None:
    from gpusre.models.reliability.repair_times import recovery_ends

    # A leaf switch on n1, n2: their last link-down at 01:10 / 01:50 (a second wave on n2); n1's port is
    # ACTIVE again at 03:00, n2's at 04:00.
    evidence = pl.DataFrame({"incident_id": ["w", "w", "x"], "component_class": ["network", "network", "storage"],
                             "node": ["n1", "n2", "n3"], "last_ts": [_t(1, 1 + 10 / 60), _t(1, 1 + 50 / 60), _t(1, 5)]})
    events = pl.DataFrame({"node": ["n1", "n2", "n2", "n3", "n1"],
                           "ts": [_t(1, 3), _t(1, 1.5), _t(1, 4), _t(1, 6), _t(1, 2)],
                           "kind": ["ib_link_up", "ib_link_up", "ib_link_up", "ib_link_up", "oom_kill"]},
                          schema_overrides={"ts": DT})
    # n2's 01:30 ACTIVE came before its second wave: its repair is the 04:00 one. n3's fault is storage:
    # a link coming up is not its recovery.
    assert recovery_ends(evidence, events).rows() == [("w", _t(1, 4), "recovery_events")]
    incidents = pl.DataFrame({"incident_id": ["w"], "component": ["network_switch"], "start_ts": [_t(1, 1)],
                              "nodes": [["n1", "n2"]], "recovered_ts": [_t(9, 0)]}, schema_overrides={"recovered_ts": DT})
    row = link_incidents(incidents, _states().clear(), recoveries=recovery_ends(evidence, events)).row(0, named=True)
    assert (row["repair_source"], row["hours_to_repair"]) == ("recovery_events", 3.0)
    # Without recovery lines a multi-node incident gets no repair time from a job that completed days later.
    row = link_incidents(incidents, _states().clear()).row(0, named=True)
    assert (row["repair_state"], row["repair_source"], row["hours_to_repair"]) == ("not_drained", None, None)


def test_a_reboot_ends_a_lasting_gpu_fault_but_no_link() -> None:
    from gpusre.models.reliability.repair_times import recovery_ends

    # g: an Xid 79 (RESTART_BM) on n1 at 01:00, its node booted at 01:05 (the kernel banner), its NVIDIA
    # driver loaded at 01:06: the first line after the evidence ends it. h: an Xid 79 on n1, n2 (last at
    # 02:00 / 02:30): n1 booted at 03:00, n2's driver loaded at 04:00 -> 04:00. k: an Xid 79 on n3 whose node
    # booted at the very moment of its last evidence only: no reboot after it. u: an Xid 31 (IGNORE) on n4,
    # booted: not a lasting fault. w: a port down on n5 (network, no action), the node booted, no ACTIVE:
    # a boot ends no link. v: a port down on n6 with a lasting action (an operator's class on an Xid) whose
    # port came ACTIVE at 06:00 and booted at 07:00: the class recovery. y: the same on n7, booted, no ACTIVE:
    # a network incident is ended by its own recovery lines only.
    evidence = pl.DataFrame({
        "incident_id": ["g", "h", "h", "k", "u", "w", "v", "y"],
        "component_class": ["gpu", "gpu", "gpu", "gpu", "gpu", "network", "network", "network"],
        "node": ["n1", "n1", "n2", "n3", "n4", "n5", "n6", "n7"],
        "last_ts": [_t(1, 1), _t(1, 2), _t(1, 2.5), _t(1, 1), _t(1, 1), _t(1, 1), _t(1, 5), _t(1, 5)],
        "action": ["RESTART_BM", "RESET_GPU", "RESET_GPU", "RESTART_BM", "IGNORE", None, "RESTART_BM", "RESTART_BM"]})
    events = pl.DataFrame({
        "node": ["n1", "n1", "n1", "n2", "n3", "n4", "n5", "n6", "n6", "n7"],
        "ts": [_t(1, 1 + 5 / 60), _t(1, 1 + 6 / 60), _t(1, 3), _t(1, 4), _t(1, 1), _t(1, 2), _t(1, 2), _t(1, 6),
               _t(1, 7), _t(1, 6)],
        "kind": ["kernel_boot", "driver_loaded", "kernel_boot", "driver_loaded", "kernel_boot", "kernel_boot",
                 "kernel_boot", "ib_link_up", "kernel_boot", "kernel_boot"]}, schema_overrides={"ts": DT})
    assert recovery_ends(evidence, events).rows() == [
        ("g", _t(1, 1 + 5 / 60), "reboot"), ("h", _t(1, 4), "reboot"), ("v", _t(1, 6), "recovery_events")]
    # Without the incidents' action no reboot counts.
    assert recovery_ends(evidence.drop("action"), events).rows() == [("v", _t(1, 6), "recovery_events")]
    # In the mart: node states absent, the boot is the repair (5 min), with repair_source reboot.
    incidents = pl.DataFrame({"incident_id": ["g"], "component": ["pcie_bus"], "start_ts": [_t(1, 1)],
                              "nodes": [["n1"]]})
    row = link_incidents(incidents, _states().clear(), recoveries=recovery_ends(evidence, events)).row(0, named=True)
    got = (row["repair_state"], row["repair_source"], round(row["hours_to_repair"] * 60, 6))
    assert got == ("repaired", "reboot", 5.0)
    # A drain of its node still wins.
    states = pl.DataFrame({"node": ["n1"], "start_ts": [_t(1, 1.5)], "end_ts": [_t(1, 3)], "reason": ["Xid 79"],
                           "reason_class": ["gpu_xid"]})
    row = link_incidents(incidents, states, recoveries=recovery_ends(evidence, events)).row(0, named=True)
    assert (row["repair_source"], row["hours_to_repair"]) == ("node_states", 2.0)


def test_every_recovery_kind_example_is_recognized() -> None:
    from gpusre.models.logs.event_catalog import classify_messages
    from gpusre.models.reliability.repair_times import load_recovery_kinds

    from gpusre.models.reliability.repair_times import load_health_evidence_kinds

    text = (Path(rt.__file__).parents[1] / "catalog" / "recovery_events.csv").read_text()
    catalog = pl.read_csv(text.encode(), schema_overrides={"component_class": pl.String})
    recovery = catalog.filter(pl.col("evidence") == "recovery")
    assert recovery["kind"].to_list() == load_recovery_kinds()["kind"].to_list()
    assert catalog.filter(pl.col("evidence") != "recovery")["kind"].to_list() == load_health_evidence_kinds()["kind"].to_list()
    got = classify_messages(catalog["example"]).select("kind", "component")
    assert got["kind"].to_list() == catalog["kind"].to_list()
    assert set(catalog["evidence"]) <= {"recovery", "check_pass", "reboot"}
    # A recovery names the class it repairs; a passing check or a reboot repairs whatever the check saw.
    assert set(recovery["component_class"]) <= {"gpu", "nvlink", "network", "storage", "host", "thermal", "power"}
    assert catalog.filter(pl.col("evidence") != "recovery")["component_class"].null_count() == \
        catalog.filter(pl.col("evidence") != "recovery").height


def test_every_clears_token_names_a_fault_the_catalogs_know() -> None:
    """The ``clears`` column of recovery_events.csv: a kind token is a failure kind of log_patterns.csv; an
    ``action:`` token is the action of xid.csv / sxid.csv rows (the lasting GPU faults). Examples: the
    Xid 79 line (RESTART_BM), the Xid 95 line (RESET_GPU) and a fatal NVLink Xid 74 (WORKFLOW_NVLINK_ERR: the
    link comes back only with a GPU reset) are lasting, cleared by the driver load; Xid 13 (the application's)
    is not."""
    from gpusre.models.logs.event_catalog import classify_messages

    catalog_dir = Path(rt.__file__).parents[1] / "catalog"
    patterns = pl.read_csv(catalog_dir / "log_patterns.csv", infer_schema=False)
    actions = set(pl.concat([pl.read_csv(catalog_dir / f, infer_schema=False).select("action")
                             for f in ("xid.csv", "sxid.csv")])["action"])
    assert set(rt.load_open_fault_kinds()) <= set(patterns["kind"])
    assert rt.load_lasting_fault_actions() == ["RESET_GPU", "RESTART_BM", "RESTART_VM", "WORKFLOW_NVLINK5_ERR",
                                               "WORKFLOW_NVLINK_ERR", "WORKFLOW_XID_48"]
    assert set(rt.load_lasting_fault_actions()) <= actions
    clears = rt.load_fault_clears()
    assert set(clears.filter(pl.col("fault").str.starts_with("action:"))["kind"]) == {"driver_loaded", "kernel_boot"}
    lines = ["NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
             "NVRM: Xid (PCI:0000:3b:00): 95, pid=2231, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No",
             "NVRM: Xid (PCI:0000:18:00): 74, pid=1, name=python, NVLink: fatal error detected on link "
             "4(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
             "NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 2, "
             "SM 0): Out Of Range Address"]
    lasting = classify_messages(pl.Series(lines))["action"].is_in(rt.load_lasting_fault_actions()).to_list()
    assert lasting == [True, True, True, False]


def test_a_kernel_boot_is_a_reboot_as_the_driver_load_is() -> None:
    """A node that rebooted logs the kernel's ``Linux version`` banner (and x86's ``Command line:
    BOOT_IMAGE=``) whether or not the NVIDIA driver's load line reaches the log: ``kernel_boot`` clears the
    same lasting GPU faults (the ``action:`` tokens) as ``driver_loaded``, is a reboot after a failing
    health check, and is no recovery of a component class (it ends no link's or file system's outage)."""
    from gpusre.models.logs.event_catalog import classify_messages
    from gpusre.models.reliability.repair_times import health_check_ends, load_recovery_kinds

    clears = rt.load_fault_clears()
    faults = {k: set(clears.filter(pl.col("kind") == k)["fault"]) for k in ("driver_loaded", "kernel_boot")}
    assert faults["kernel_boot"] == faults["driver_loaded"] == {
        "action:RESET_GPU", "action:RESTART_BM", "action:RESTART_VM", "action:WORKFLOW_NVLINK5_ERR",
        "action:WORKFLOW_NVLINK_ERR", "action:WORKFLOW_XID_48"}
    assert "kernel_boot" not in load_recovery_kinds()["kind"].to_list()
    assert ("kernel_boot", "reboot") in rt.load_health_evidence_kinds().rows()
    banner = ("Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, "
              "GNU ld (GNU Binutils for Ubuntu) 2.38) #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023")
    got = classify_messages(pl.Series([
        banner, "[    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz-5.15.0-91-generic root=/dev/sda1 ro quiet",
        # Loghub's Linux sample (a 2.6 kernel): the banner of another compiler string
        "Linux version 2.6.5-1.358 (bhcompile@bugs.build.redhat.com) (gcc version 3.3.3 20040412 (Red Hat Linux "
        "3.3.3-7)) #1 Sat May 8 09:04:50 EDT 2004",
        # a script logging /proc/version, and a user's message: no boot
        "inventory: kernel=Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) (gcc 11.4.0)",
        "job 42: Command line: BOOT_IMAGE=x",
    ])).select("kind", "component", "cause_class", "severity", "action")
    assert got.rows()[:3] == [("kernel_boot", "os", "informational", "info", "IGNORE")] * 3
    assert got["kind"].to_list()[3:] == [None, None]
    # A failing health check at 01:00 on n1, the node booted at 01:20: the boot is the repair (source reboot).
    evidence = pl.DataFrame({"incident_id": ["h"], "node": ["n1"], "ts": [_t(1, 1)], "kind": ["health_check"]},
                            schema_overrides={"ts": DT})
    lines = pl.DataFrame({"node": ["n1"], "ts": [_t(1, 1 + 20 / 60)], "kind": ["kernel_boot"]},
                         schema_overrides={"ts": DT})
    assert health_check_ends(evidence, lines).rows() == [("h", _t(1, 1 + 20 / 60), "reboot")]


def test_an_outage_of_two_overlapping_drains_repairs_the_incident_either_names() -> None:
    # gpu002: IB link down logged at 10:00 (a network incident, evidence to 10:00). Drained 10:02 for
    # "GPU 3 ECC DBE" (to 11:00) and, overlapping, 10:30 for "IB link down mlx5_0" (to 14:00): one
    # outage 10:02-14:00 whose first reason names the GPU, but whose drains name the network too —
    # the network incident's repair (4.0 h), not "not drained". A storage incident the drains do not
    # name stays unlinked.
    incidents = pl.DataFrame({"incident_id": ["net", "sto"], "component": ["network", "storage"],
                              "start_ts": [_t(1, 10), _t(1, 10)], "end_ts": [_t(1, 10), _t(1, 10)],
                              "nodes": [["gpu002"], ["gpu002"]]}, schema_overrides={"end_ts": DT})
    states = pl.DataFrame({"node": ["gpu002", "gpu002"], "start_ts": [_t(1, 10 + 2 / 60), _t(1, 10.5)],
                           "end_ts": [_t(1, 11), _t(1, 14)], "reason": ["GPU 3 ECC DBE", "IB link down mlx5_0"],
                           "reason_class": ["gpu_ecc", "network"]})
    rows = {r["incident_id"]: r for r in link_incidents(incidents, states).iter_rows(named=True)}
    assert (rows["net"]["repair_state"], rows["net"]["hours_to_repair"]) == ("repaired", 4.0)
    assert rows["sto"]["repair_state"] == "not_drained"


def test_monthly_repair_times_of_a_two_month_review() -> None:
    """The probe's hand values (tests/hand_repairs.py): medians and means per class and month, the
    ongoing repair counted but not averaged, the never-drained storage incident timed by its recoveries."""
    import hand_repairs

    rows = hand_repairs.linked()
    got = {r["incident_id"]: (r["repair_state"], r["repair_source"], r["hours_to_repair"]) for r in rows.iter_rows(named=True)}
    assert got["G11"] == ("ongoing", "node_states", None)
    assert got["S1"][:2] == ("repaired", "recovery_events") and got["S1"][2] == pytest.approx(2 / 3)
    assert got["H1"] == ("repaired", "node_states", 6.0)

    def summary(frame: pl.DataFrame) -> dict[str, tuple]:
        return {r["component_class"]: (r["repaired"], r["ongoing"], r["mttr_hours_p50"], r["mttr_hours_mean"])
                for r in frame.iter_rows(named=True)}

    record = summary(repair_times(rows))
    assert record["gpu"] == (10, 1, 15.0, 18.0)
    assert record["network"][:3] == (6, 0, 7.0) and record["network"][3] == pytest.approx(46 / 6)  # 7.67
    assert record["storage"][:3] == (1, 0, pytest.approx(2 / 3))
    # all 18 repaired: 0.67, 4, 4, 6 x4, 8, 10, 12 x4, 18, 20, 24, 24, 48 -> median (10 + 12) / 2
    assert record["all"][:3] == (18, 1, 11.0) and record["all"][3] == pytest.approx((2 / 3 + 232) / 18)
    months = hand_repairs.monthly(rows)
    sep = summary(months.filter(pl.col("period") == "2026-09"))
    octo = summary(months.filter(pl.col("period") == "2026-10"))
    assert sep["gpu"] == (8, 0, 15.0, 18.0) and sep["network"] == (3, 0, 8.0, 8.0)
    assert sep["all"][:3] == (13, 0, 10.0) and sep["all"][3] == pytest.approx((2 / 3 + 174) / 13)
    assert octo["gpu"] == (2, 1, 18.0, 18.0) and octo["all"] == (5, 1, 12.0, 11.6)
    assert octo["network"][:3] == (3, 0, 6.0) and octo["network"][3] == pytest.approx(22 / 3)
