"""Real-format fault lines an outside probe found unrecognised or misclassified (catalog breadth), fed
through the ingest's own parsing path, with hand-written expectations, and the attribution of jobs
they killed (or did not):

1. PCIe AER in both kernel wordings (``error message received from <dev>`` since 2023, ``error
   received: <dev>`` before) and the reporting device's ``PCIe Bus Error: severity=...`` line, whose
   severity is read from its text and whose prefix (the ``nvidia`` driver: a GPU) names the device;
2. a firmware-first (APEI GHES) record of any section type takes its record's ``event severity``
   (fatal PCIe / processor sections are failures; a PCIe section names its device);
3. an NVLink5 Xid (144–150) sub-code that says ``Nonfatal`` is capped as a ``Non-fatal`` SXid is
   (:data:`FATALITY_WORDS`: at most medium, no failure); a ``Fatal`` one keeps the catalog's severity;
4. BMC SEL events, as ipmievd prints them and as ``ipmitool sel elist`` rows: a DIMM's uncorrectable
   ECC, a fatal bus error, a lost supply, an over-temperature; ``Deasserted`` is no failure;
5. the Fabric Manager service dying (systemd) is an NVSwitch-side fault;
6. Xid 154 carries the recovery action its text spells out;
7. a machine-check status word with UC / PCC set is an uncorrected error; the one-line form of the
   driver's "fallen off the bus" message gives its GPU's address.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl
import pytest

from gpusre.models.failures.attribution import attribute_failures
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, failure_events, merge_incidents
from gpusre.models.logs.event_catalog import FATALITY_WORDS, classify_messages, load_log_patterns
from gpusre.models.logs.templates import canonical_forms
from gpusre.models.sources.syslog.ingest import _events
from gpusre.models.sources.syslog.parse import SyslogInput, parse_syslog_batch

YEAR = (datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 12, 31, tzinfo=timezone.utc))
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)  # the "Mar  1 12:00:00" of the lines below


def ingest(lines: list[str], node: str = "gpu001") -> pl.DataFrame:
    """``core.node_events``-like rows (with the message) of RFC 3164 ``lines`` as the syslog ingest
    classifies them: header parse, then the ingest's event step. Unrecognized lines are left out."""
    data = ("\n".join(lines) + "\n").encode()
    batch = parse_syslog_batch([SyslogInput(data, f"syslog/2026-03-01/{node}.log", node, YEAR)])
    assert batch.rejects.is_empty(), batch.rejects
    parsed = batch.lines
    events = _events(parsed, *canonical_forms(parsed["message"]))
    rows = pl.concat([parsed.select("ts", pl.col("host").alias("node"), "program", "message"), events], how="horizontal")
    return (rows.with_row_index("event_id", offset=1).with_columns(pl.col("event_id").cast(pl.Int64))
            .filter(pl.col("kind").is_not_null()))


def at(line: str, program: str = "kernel", ts: str = "12:00:00") -> str:
    """``line`` as an RFC 3164 syslog line of gpu001 at ``ts`` on 1 March."""
    return f"Mar  1 {ts} gpu001 {program}: {line}"


def one(line: str, program: str = "kernel") -> dict:
    rows = ingest([at(line, program)])
    return rows.row(0, named=True) if rows.height else {"kind": None}


def failures(events: pl.DataFrame) -> pl.DataFrame:
    return failure_events(events.select([c for c in EVENT_SCHEMA if c in events.columns]))


def incidents(events: pl.DataFrame) -> pl.DataFrame:
    got, _ = merge_incidents(events.select([c for c in EVENT_SCHEMA if c in events.columns]))
    return got


# --- per line: kind, component, cause, severity, action, gpu_pci, device_pci ---------------------

LINES = [
    # 1. AER, current wording (the root port names the device it heard from)
    ("pcieport 0000:17:01.0: AER: Uncorrectable (Fatal) error message received from 0000:18:00.0",
     ("pcie_aer", "pcie_bus", "hardware", "critical", "RESTART_BM", None, "0000:18:00.0")),
    ("pcieport 0000:17:01.0: AER: Multiple Uncorrectable (Fatal) error message received from 0000:18:00.0",
     ("pcie_aer", "pcie_bus", "hardware", "critical", "RESTART_BM", None, "0000:18:00.0")),
    ("pcieport 0000:17:01.0: AER: Uncorrectable (Non-Fatal) error message received from 0000:18:00.0",
     ("pcie_aer", "pcie_bus", "hardware", "high", "MONITOR", None, "0000:18:00.0")),
    ("pcieport 0000:16:02.0: AER: Correctable error message received from 0000:17:00.0",
     ("pcie_aer", "pcie_bus", "hardware", "low", "MONITOR", None, "0000:17:00.0")),
    # ... and the older wording, which worked before and still does
    ("pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0",
     ("pcie_aer", "pcie_bus", "hardware", "critical", "RESTART_BM", None, "0000:3b:00.0")),
    ("pcieport 0000:00:1c.0: AER: Corrected error received: 0000:00:1c.0",
     ("pcie_aer", "pcie_bus", "hardware", "low", "MONITOR", None, "0000:00:1c.0")),
    # the reporting device's line: severity from its text, address from its prefix (nvidia driver: a GPU)
    ("nvidia 0000:18:00.0: AER: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, (Receiver ID)",
     ("pcie_aer", "pcie_bus", "hardware", "critical", "RESTART_BM", "0000:18:00.0", "0000:18:00.0")),
    ("nvidia 0000:18:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)",
     ("pcie_aer", "pcie_bus", "hardware", "high", "MONITOR", "0000:18:00.0", "0000:18:00.0")),
    ("mlx5_core 0000:ab:00.0: AER: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Data Link Layer, (Receiver ID)",
     ("pcie_aer", "pcie_bus", "hardware", "critical", "RESTART_BM", None, "0000:ab:00.0")),
    ("pcieport 0000:16:02.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)",
     ("pcie_aer", "pcie_bus", "hardware", "low", "MONITOR", None, "0000:16:02.0")),
    ("pcieport 0000:16:02.0: AER: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)",
     ("pcie_aer", "pcie_bus", "hardware", "low", "MONITOR", None, "0000:16:02.0")),
    # 3. NVLink5 Xids: Nonfatal capped at medium (no failure), Fatal keeps xid.csv's high
    ("NVRM: Xid (PCI:0019:01:00): 146, TLW_RX Nonfatal XC0 i0 Link 05 (0x00000001 0x00000000 0x00000000 0x00000000)",
     ("xid", "nvlink", "hardware", "medium", "WORKFLOW_NVLINK5_ERR", "0019:01:00.0", "0019:01:00.0")),
    ("NVRM: Xid (PCI:0009:01:00): 145, RLW_REMAP Nonfatal XC0 i0 Link -1 (0x00000004 0x80000000 0x00000000)",
     ("xid", "nvlink", "hardware", "medium", "WORKFLOW_NVLINK5_ERR", "0009:01:00.0", "0009:01:00.0")),
    ("NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT  Fatal XC0 i0 Link 03 (0x004505c6 0x00000000 0x00000000)",
     ("xid", "nvlink", "hardware", "high", "WORKFLOW_NVLINK5_ERR", "0008:01:00.0", "0008:01:00.0")),
    # 4. BMC SEL, ipmievd form and `ipmitool sel elist` rows
    ("Memory sensor DIMM_A1, Uncorrectable ECC Asserted",
     ("ipmi_memory", "host_memory", "hardware", "critical", "DRAIN_NODE", None, None)),
    ("Critical Interrupt sensor PCIe_Slot3, Bus Fatal Error Asserted",
     ("ipmi_pcie", "pcie_bus", "hardware", "critical", "RESTART_BM", None, None)),
    ("Memory sensor DIMM_A1, Correctable ECC Asserted",
     ("ipmi_memory_ce", "host_memory", "hardware", "low", "MONITOR", None, None)),
    ("Memory sensor DIMM_A1, Uncorrectable ECC Deasserted",
     ("ipmi_sel_cleared", "other", "informational", "info", "IGNORE", None, None)),
    ("  1c | 11/10/2026 | 05:25:10 | Memory #0x87 | Uncorrectable ECC | Asserted",
     ("ipmi_memory", "host_memory", "hardware", "critical", "DRAIN_NODE", None, None)),
    ("  1d | 11/10/2026 | 07:25:10 | Critical Interrupt #0x1a | Bus Fatal Error | Asserted",
     ("ipmi_pcie", "pcie_bus", "hardware", "critical", "RESTART_BM", None, None)),
    ("  1a | 11/10/2026 | 01:25:10 | Power Supply #0x51 | Power Supply AC lost | Asserted",
     ("ipmi_power", "host_power", "hardware", "high", "DRAIN_NODE", None, None)),
    ("  1b | 11/10/2026 | 03:25:10 | Temperature #0x30 | Upper Critical going high | Asserted",
     ("ipmi_thermal", "thermal", "hardware", "high", "CHECK_THERMALS", None, None)),
    ("  1b | 11/10/2026 | 03:40:10 | Temperature #0x30 | Upper Critical going high | Deasserted",
     ("ipmi_thermal_cleared", "thermal", "informational", "info", "IGNORE", None, None)),
    ("  1a | 11/10/2026 | 01:40:10 | Power Supply #0x51 | Power Supply AC lost | Deasserted",
     ("ipmi_power_cleared", "host_power", "informational", "info", "IGNORE", None, None)),
    ("  1e | 11/10/2026 | 05:40:10 | Memory #0x87 | Correctable ECC | Asserted",
     ("ipmi_memory_ce", "host_memory", "hardware", "low", "MONITOR", None, None)),
    ("  1c | 11/10/2026 | 05:40:10 | Memory #0x87 | Uncorrectable ECC | Deasserted",
     ("ipmi_sel_cleared", "other", "informational", "info", "IGNORE", None, None)),
    # 6. Xid 154: the action the text names (cause stays sympathetic: the Xid before it is the fault)
    ("NVRM: Xid (PCI:0000:5d:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
     ("xid", "other", "sympathetic", "high", "RESET_GPU", "0000:5d:00.0", "0000:5d:00.0")),
    ("NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
     ("xid", "other", "sympathetic", "high", "RESTART_BM", "0008:01:00.0", "0008:01:00.0")),
    ("NVRM: Xid (PCI:0000:5d:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
     ("xid", "other", "sympathetic", "high", "RESET_GPU", "0000:5d:00.0", "0000:5d:00.0")),
    ("NVRM: Xid (PCI:0000:5d:00): 154, GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)",
     ("xid", "other", "sympathetic", "medium", "RESTART_APP", "0000:5d:00.0", "0000:5d:00.0")),
    ("NVRM: Xid (PCI:0000:5d:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
     ("xid", "other", "informational", "info", "IGNORE", "0000:5d:00.0", "0000:5d:00.0")),
    # 7. MCE status word: be00... = VAL|UC|EN, MISCV|ADDRV|PCC -> uncorrected, context corrupt;
    #    bc00... = VAL|UC|EN, MISCV|ADDRV (no PCC) -> uncorrected, recoverable; 8c00... = corrected
    ("mce: [Hardware Error]: CPU 12: Machine Check: 0 Bank 13: be00000000800090",
     ("mce", "host_cpu", "hardware", "critical", "DRAIN_NODE", None, None)),
    ("mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 7: bc00000000010090",
     ("mce", "host_cpu", "hardware", "high", "DRAIN_NODE", None, None)),
    ("mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5: 8c00004000010151",
     ("mce", "host_cpu", "hardware", "medium", "MONITOR", None, None)),
    ("NVRM: The NVIDIA GPU 0000:9a:00.0 (PCI ID: 10de:2330) installed in this system has fallen off the bus and is not "
     "responding to commands.",
     ("gpu_fallen_off_bus", "pcie_bus", "hardware", "critical", "RESTART_BM", "0000:9a:00.0", "0000:9a:00.0")),
]


@pytest.mark.parametrize(("line", "expected"), LINES, ids=[f"{i:02d}" for i in range(len(LINES))])
def test_a_probe_line_is_classified_as_by_hand(line: str, expected: tuple) -> None:
    program = "ipmi-sel" if " | " in line else ("ipmievd[4242]" if "sensor" in line else "kernel")
    row = one(line, program)
    got = tuple(row.get(c) for c in ("kind", "component", "cause_class", "severity", "action", "gpu_pci", "device_pci"))
    assert got == expected


def test_the_fabric_manager_service_dying_is_an_nvswitch_fault() -> None:
    lines = [at("nvidia-fabricmanager.service: Main process exited, code=exited, status=1/FAILURE", "systemd[1]"),
             at("nvidia-fabricmanager.service: Failed with result 'exit-code'.", "systemd[1]", "12:00:01"),
             # a clean stop is no fault
             at("nvidia-fabricmanager.service: Main process exited, code=exited, status=0/SUCCESS", "systemd[1]", "13:00:00"),
             at("nvidia-fabricmanager.service: Deactivated successfully.", "systemd[1]", "13:00:01")]
    events = ingest(lines)
    assert events.select("kind", "component", "cause_class", "severity", "action").rows() == [
        ("fabric_manager_down", "nvswitch", "driver_firmware", "high", "RESTART_FM")] * 2
    got = incidents(events)
    assert got.height == 1 and got["component"][0] == "nvswitch"


# --- 2. GHES records of any section type ------------------------------------------------------

GHES_PCIE = [
    "{3}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 1",
    "{3}[Hardware Error]: event severity: fatal",
    "{3}[Hardware Error]:  Error 0, type: fatal",
    "{3}[Hardware Error]:   section_type: PCIe error",
    "{3}[Hardware Error]:   port_type: 0, PCIe end point",
    "{3}[Hardware Error]:   version: 3.0",
    "{3}[Hardware Error]:   device_id: 0000:18:00.0",
    "{3}[Hardware Error]:   slot: 0",
    "{3}[Hardware Error]:   vendor_id: 0x10de, device_id: 0x2330",
]


@pytest.mark.parametrize(("severity", "expected", "failure"), [
    ("fatal", "critical", True), ("recoverable", "critical", True), ("corrected", "low", False), ("info", "info", False)])
def test_a_ghes_pcie_record_takes_its_severity_and_names_its_device(severity: str, expected: str, failure: bool) -> None:
    events = ingest([at(line.replace("fatal", severity)) for line in GHES_PCIE])
    sections = events.filter(pl.col("kind") == "ghes_pcie_error")
    assert sections.select("component", "cause_class", "severity", "action").unique().rows() == [
        ("pcie_bus", "hardware", expected, "RESTART_BM")]
    assert sections["device_pci"].to_list() == [None, "0000:18:00.0"]  # the vendor/device id line is no address
    assert events.filter(pl.col("kind") == "ghes_record")["severity"].to_list() == ["info"]
    assert (failures(events).height == 2) == failure and (failures(events).height == 0) == (not failure)


def test_a_fatal_ghes_processor_record_is_a_host_cpu_failure() -> None:
    lines = ["{4}[Hardware Error]: event severity: fatal", "{4}[Hardware Error]:   section_type: IA32/X64 processor error"]
    events = ingest([at(line) for line in lines])
    section = events.filter(pl.col("kind") == "ghes_processor_error").row(0, named=True)
    assert (section["component"], section["severity"]) == ("host_cpu", "critical")
    # a section line whose record's severity line is missing (a rotated file): evidence, no failure
    alone = one("{9}[Hardware Error]:   section_type: IA32/X64 processor error")
    assert alone["severity"] == "medium"


# --- 3. the SXid fatality rule is the one Xid lines use ----------------------------------------

def test_nonfatal_xids_use_the_sxid_fatality_rule() -> None:
    xid = classify_messages(pl.Series(["NVRM: Xid (PCI:0019:01:00): 146, TLW_RX Nonfatal XC0 i0 Link 05 (0x1)"]))
    sxid = classify_messages(pl.Series(["nvidia-nvswitch2: SXid (PCI:0000:06:00.0): 22013, Non-fatal, Link 40 x"]))
    assert FATALITY_WORDS["nonfatal"] == FATALITY_WORDS["non-fatal"] == ("cap", "medium")
    assert xid["severity"][0] == "medium" and sxid["severity"][0] in ("medium", "low", "info")
    # the generic Xid row captures only the non-fatal words: "Fatal" (and "fatal error" of Xid 74) keep xid.csv's
    fatal = classify_messages(pl.Series([
        "NVRM: Xid (PCI:0000:5d:00): 74, pid=0, NVLink: fatal error detected on link 6(0x10000, 0x0)",
        "NVRM: Xid (PCI:0018:01:00): 144, SAW_MVB Fatal XC0 i0 Link -1 (0x00000002 0x00000000)"]))
    assert fatal["severity"].to_list() == ["high", "high"]


def test_every_new_row_has_an_example_its_regex_matches() -> None:
    # load_log_patterns checks each example; here: each new row classifies its own example as itself
    patterns = load_log_patterns()
    new = patterns.filter(pl.col("pattern_id").str.contains(
        r"^(?:pcie_aer_correctable|pcie_bus_error_|ghes_(?:pcie|processor|other)|ipmi_(?:sel_|memory|bus|cleared)|"
        r"fabricmanager_|xid_154_|mce_status_)"))
    # 33 rows of the breadth probe, then 6 more of these prefixes (the BMC's Processor rows ipmi_sel_processor_*,
    # Fabric Manager's start-up aborts fabricmanager_*: tests/test_bmc_bert_fm_memory_lines.py), then the 3 NVML
    # recovery values 5-7 of Xid 154 (tests/test_gpu_identity_and_recovery_action.py)
    assert new.height == 42
    got = classify_messages(new["example"])
    assert got["pattern_id"].to_list() == new["pattern_id"].to_list()


# --- attribution: the jobs these lines killed (or did not) -------------------------------------

def attribution(lines: list[str], state: str, end: datetime, elapsed: timedelta) -> dict:
    events = ingest(lines)
    ev = events.select([c for c in EVENT_SCHEMA if c in events.columns])
    merged, _ = merge_incidents(ev)
    job = pl.DataFrame([{"job_id": "1", "state": state, "nodes": ["gpu001"], "n_gpus": 8, "start_ts": end - elapsed,
                         "end_ts": end, "elapsed_s": int(elapsed.total_seconds()), "exit_code": 1, "exit_signal": 0}],
                       schema={"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
                               "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"),
                               "elapsed_s": pl.Int64, "exit_code": pl.Int64, "exit_signal": pl.Int64})
    row = attribute_failures(job, ev, merged).row(0, named=True)
    return {**row, "_incidents": merged}


# 42 min of work, checkpoints every 60 min: 8 GPUs x (0.7 - 0.7^2 / 2) h = 8 x 0.455 = 3.64 GPU-h
ELAPSED = timedelta(minutes=42)
LOST = 8 * (0.7 - 0.7 ** 2 / 2)


def test_a_job_a_fatal_aer_killed_is_infrastructure_pcie() -> None:
    lines = [at("pcieport 0000:17:01.0: AER: Uncorrectable (Fatal) error message received from 0000:18:00.0"),
             at("nvidia 0000:18:00.0: AER: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, "
                "(Receiver ID)"),
             at("nvidia 0000:18:00.0: AER:   device [10de:2330] error status/mask=00040000/00000000")]
    got = attribution(lines, "FAILED", T0 + timedelta(seconds=30), ELAPSED)
    assert (got["attribution"], got["component"]) == ("infrastructure", "pcie_bus")
    assert got["lost_gpu_hours"] == pytest.approx(LOST)
    inc = got["_incidents"]
    assert inc.height == 1 and inc["gpus"][0].to_list() == ["gpu001:0000:18:00.0"]  # node:address (gpu_id)


def test_a_job_ending_after_a_nonfatal_nvlink5_xid_is_the_users_and_a_fatal_one_is_not() -> None:
    nonfatal = [at("NVRM: Xid (PCI:0019:01:00): 146, TLW_RX Nonfatal XC0 i0 Link 05 (0x00000001 0x00000000)")]
    got = attribution(nonfatal, "FAILED", T0 + timedelta(seconds=30), ELAPSED)
    assert got["attribution"] == "user" and got["_incidents"].is_empty()
    fatal = [at("NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT  Fatal XC0 i0 Link 03 (0x004505c6 0x00000000)")]
    got = attribution(fatal, "FAILED", T0 + timedelta(seconds=30), ELAPSED)
    assert (got["attribution"], got["component"]) == ("infrastructure", "nvlink")


@pytest.mark.parametrize("line", [
    at("  1c | 03/01/2026 | 12:00:00 | Memory #0x87 | Uncorrectable ECC | Asserted", "ipmi-sel"),
    at("Memory sensor DIMM_A1, Uncorrectable ECC Asserted", "ipmievd[4242]"),
])
def test_a_node_fail_after_a_bmc_dimm_ue_is_host_memory(line: str) -> None:
    got = attribution([line], "NODE_FAIL", T0 + timedelta(seconds=30), ELAPSED)
    assert (got["attribution"], got["component"]) == ("infrastructure", "host_memory")
    assert got["lost_gpu_hours"] == pytest.approx(LOST)


def test_a_node_fail_after_a_deasserted_or_correctable_bmc_event_is_not_explained_by_it() -> None:
    lines = [at("  1e | 03/01/2026 | 12:00:00 | Memory #0x87 | Correctable ECC | Asserted", "ipmi-sel"),
             at("  1c | 03/01/2026 | 12:00:00 | Memory #0x87 | Uncorrectable ECC | Deasserted", "ipmi-sel")]
    got = attribution(lines, "NODE_FAIL", T0 + timedelta(seconds=30), ELAPSED)
    assert (got["attribution"], got["component"]) == ("infrastructure", "unknown (suspected)")
