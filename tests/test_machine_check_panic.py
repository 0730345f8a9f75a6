"""A fatal machine check is a host hardware fault, and a DIMM error EDAC reports after the reboot names it.

Hand-made node log of one DIMM crash (an evaluator's probe L, V1): the fatal ``mce: [Hardware Error]``
lines and ``Kernel panic - not syncing: Fatal machine check`` at 10:00:00-01, the reboot at 10:06, and
on the new boot, at 10:06:31 (390 s after the panic), EDAC decoding the uncorrectable DIMM error from
the banks kept across the reset — the usual order, since the panic comes before EDAC can print. The
node's job ends NODE_FAIL at 10:05:02. Expected by hand: one incident, component ``host_memory`` (class
``host``, cause class ``hardware``), and the job attributed to it (it once read ``os`` /
``system_software`` / ``kernel_panic``: every panic was the OS's, and a cause could name its effect
only up to one minute after it).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl
import pytest

from gpusre.models.failures.attribution import attribute_failures
from gpusre.models.failures.fault_signatures import (DEFAULT_CAUSE_AFTER_EFFECT_S, SignatureError,
                                                     load_fault_signatures)
from gpusre.models.failures.hw_incidents import failure_events, merge_incidents
from gpusre.models.logs.event_catalog import classify_messages, load_log_patterns
from node_event_lines import T0, events_from_lines

S = timedelta(seconds=1)
M = timedelta(minutes=1)
NODE = "gpu003"
MCE_LINES = [
    (0 * S, "kernel: [1561560.101100] mce: [Hardware Error]: CPU 17: Machine Check Exception: 5 Bank 13: be00000000800090"),
    (0 * S, "kernel: [1561560.102200] mce: [Hardware Error]: TSC 1a2b3c4d5e6f ADDR 7f3a1000 MISC 200000c020001086"),
    (0 * S, "kernel: [1561560.103300] mce: [Hardware Error]: Run the above through 'mcelog --ascii'"),
    (1 * S, "kernel: [1561561.104300] mce: [Hardware Error]: Machine check: Processor context corrupt"),
    (1 * S, "kernel: [1561561.104400] Kernel panic - not syncing: Fatal machine check"),
]
REBOOT_LINES = [
    (6 * M, "kernel: [    3.105500] Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) #101-Ubuntu SMP"),
    (6 * M, "kernel: [    3.106600] Command line: BOOT_IMAGE=/boot/vmlinuz-5.15.0-91-generic ro quiet"),
    (6 * M + 31 * S, "kernel: [   34.109900] mce: [Hardware Error]: Machine check events logged"),
    (6 * M + 31 * S, "kernel: [   34.111000] EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#0_Chan#3_DIMM#0 "
                     "(channel:3 slot:0 page:0x7f3a1 offset:0x0 grain:32)"),
    (6 * M + 38 * S, "kernel: [   41.107700] nvidia: loading out-of-tree module taints kernel."),
    (6 * M + 53 * S, "slurmd[2101]: slurmd version 23.11.4 started"),
]


def node_log(lines: list[tuple[timedelta, str]], node: str = NODE) -> pl.DataFrame:
    return events_from_lines([(at, node, text) for at, text in lines])


@pytest.mark.parametrize("text", [
    "Kernel panic - not syncing: Fatal machine check",
    "Kernel panic - not syncing: Fatal local machine check",
    "Kernel panic - not syncing: Fatal Machine check",
    "Kernel panic - not syncing: Machine check from unknown source",
    "Kernel panic - not syncing: Timeout: Not all CPUs entered broadcast exception handler",
    "mce: [Hardware Error]: Machine check: Processor context corrupt",
])
def test_a_panic_that_names_a_machine_check_is_a_host_cpu_hardware_fault(text: str) -> None:
    row = classify_messages(pl.Series([f"kernel: [ 12.0] {text}"])).row(0, named=True)
    assert (row["component"], row["cause_class"], row["severity"], row["action"]) == (
        "host_cpu", "hardware", "critical", "DRAIN_NODE")


def test_other_panics_and_the_machine_check_report_lines_keep_their_rows() -> None:
    out = classify_messages(pl.Series([
        "[ 6821.518487] Kernel panic - not syncing: Fatal exception",
        "kernel: Kernel panic - not syncing: Fatal hardware error!",  # GHES: its record's section names the part
        "mce: [Hardware Error]: CPU 17: Machine Check Exception: 5 Bank 13: be00000000800090",
        "mce: [Hardware Error]: Machine check events logged",
    ])).select("pattern_id", "component", "severity")
    assert out.rows() == [("kernel_panic", "os", "critical"), ("kernel_panic", "os", "critical"),
                          # the bank's status word be00...: VAL|UC|EN, PCC set -> an uncorrected error, context corrupt
                          ("mce_status_uncorrected_pcc", "host_cpu", "critical"), ("mce_hardware_error", "host_cpu", "medium")]


def test_the_machine_check_rows_come_before_the_generic_ones() -> None:
    ids = load_log_patterns()["pattern_id"].to_list()
    assert ids.index("kernel_panic_machine_check") < ids.index("kernel_panic")
    assert ids.index("mce_fatal") < ids.index("mce_hardware_error")


def test_dimm_ue_decoded_after_the_reboot_names_the_machine_check_crash() -> None:
    events = node_log(MCE_LINES + REBOOT_LINES)
    # Failures: the bank's uncorrected status line (UC|PCC), the "Machine check:" line, the panic and the EDAC UE
    # (the other mce lines are medium).
    assert sorted(failure_events(events)["kind"].to_list()) == ["edac_ue", "kernel_panic", "mce", "mce"]
    incidents, members = merge_incidents(events)
    assert incidents.height == 1
    row = incidents.row(0, named=True)
    assert (row["component"], row["component_class"], row["cause_class"]) == ("host_memory", "host", "hardware")
    assert (row["root_cause"], row["action"], row["n_events"]) == ("edac_ue", "DRAIN_NODE", 4)
    # from the first failure (the bank's uncorrected status line, 0 s) to the UE; the lower-severity mce lines are
    # no failures
    assert (row["start_ts"], row["end_ts"]) == (T0, T0 + 6 * M + 31 * S)
    assert members.height == 4

    job = pl.DataFrame([{"job_id": "9002", "state": "NODE_FAIL", "nodes": [NODE], "n_gpus": 8,
                         "start_ts": T0 - 4 * timedelta(hours=1), "end_ts": T0 + 5 * M + 2 * S,
                         "elapsed_s": 4 * 3600 + 302, "exit_code": 0, "exit_signal": 0, "cancelled_by": None}],
                       schema={"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String),
                               "n_gpus": pl.Int64, "start_ts": pl.Datetime("us", "UTC"),
                               "end_ts": pl.Datetime("us", "UTC"), "elapsed_s": pl.Int64, "exit_code": pl.Int64,
                               "exit_signal": pl.Int64, "cancelled_by": pl.Int64})
    out = attribute_failures(job, events, incidents).row(0, named=True)
    assert (out["attribution"], out["component"], out["incident_id"]) == (
        "infrastructure", "host_memory", row["incident_id"])


def test_a_machine_check_panic_without_a_dimm_error_is_the_cpus() -> None:
    incidents, _ = merge_incidents(node_log(MCE_LINES + REBOOT_LINES[:2]))
    assert incidents.select("component", "component_class", "cause_class").rows() == [("host_cpu", "host", "hardware")]


def test_a_dimm_error_after_the_reboot_window_does_not_name_the_crash() -> None:
    # The UE decoded 16 min after the panic: beyond the signature's 15 min (window and cause-after-effect).
    late = [(16 * M, REBOOT_LINES[3][1])]
    incidents, _ = merge_incidents(node_log(MCE_LINES + late))
    assert sorted(incidents["component"].to_list()) == ["host_cpu", "host_memory"]


def test_the_cause_after_effect_slack_is_per_signature() -> None:
    sigs = {s.signature_id: s for s in load_fault_signatures()}
    assert sigs["dimm_machine_check"].cause_after_effect_s == sigs["dimm_panic"].cause_after_effect_s == 900
    assert sigs["gpu_memory_fault"].cause_after_effect_s == DEFAULT_CAUSE_AFTER_EFFECT_S == 60
    for s in sigs.values():  # the window joins every cause the slack lets name the incident
        assert 0 <= s.cause_after_effect_s <= s.window_s, s.signature_id


@pytest.mark.parametrize("sig", [s for s in load_fault_signatures() if s.scope == "node" and s.cause != s.effect],
                         ids=lambda s: s.signature_id)
def test_a_cause_logged_within_its_slack_after_the_effect_names_the_incident(sig) -> None:
    slack = timedelta(seconds=sig.cause_after_effect_s)
    events = events_from_lines([(timedelta(0), "n1", sig.example_effect), (slack, "n1", sig.example_cause)])
    incidents, _ = merge_incidents(events)
    cause = events["component"][1]
    assert incidents.height == 1 and incidents["component"][0] == cause, sig.signature_id


def test_the_existing_order_rule_still_holds() -> None:
    """A bus drop first and a DBE ten minutes later is the bus drop's (gpu_memory_fault keeps 60 s); the DBE
    first and the bus drop after it is the memory fault."""
    dbe = "NVRM: Xid (PCI:0000:86:00): 48, pid=2211, name=python, Ch 00000008, An uncorrectable double bit error (DBE)"
    drop = "NVRM: Xid (PCI:0000:86:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    bus_first, _ = merge_incidents(events_from_lines([(timedelta(0), "n1", drop), (10 * M, "n1", dbe)]))
    assert bus_first.select("component", "n_events").rows() == [("pcie_bus", 2)]
    dbe_first, _ = merge_incidents(events_from_lines([(timedelta(0), "n1", dbe), (10 * M, "n1", drop)]))
    assert dbe_first.select("component", "n_events").rows() == [("gpu_memory", 2)]
    # ... and 61 s after the drop the DBE no longer names it; 60 s after it does.
    assert merge_incidents(events_from_lines([(timedelta(0), "n1", drop), (61 * S, "n1", dbe)]))[0]["component"][0] \
        == "pcie_bus"
    assert merge_incidents(events_from_lines([(timedelta(0), "n1", drop), (60 * S, "n1", dbe)]))[0]["component"][0] \
        == "gpu_memory"


def test_a_slack_beyond_the_window_is_refused(tmp_path, monkeypatch) -> None:
    from gpusre.models.failures import fault_signatures as fs

    text = (fs.resources.files("gpusre.models.catalog").joinpath("fault_signatures.csv").read_text(encoding="utf-8"))
    bad = text.replace("dimm_panic,node,host_memory,os,900,900,", "dimm_panic,node,host_memory,os,900,901,", 1)
    assert bad != text

    class _Files:
        def joinpath(self, _name: str):
            return self

        def read_bytes(self) -> bytes:
            return bad.encode("utf-8")

    monkeypatch.setattr(fs.resources, "files", lambda _pkg: _Files())
    fs.load_fault_signatures.cache_clear()
    try:
        with pytest.raises(SignatureError, match=r"line \d+: cause_after_effect_s must be between 0 and window_s"):
            fs.load_fault_signatures()
    finally:
        monkeypatch.undo()
        fs.load_fault_signatures.cache_clear()
