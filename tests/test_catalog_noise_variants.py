"""Real-format node-log lines a probe found misclassified, fed through the ingest's own parsing path
(syslog header parse, then ``_events``: what turns a syslog message into a ``core.node_events`` row):

1. a ``Non-fatal`` SXid is not a failure (the line's own Fatal / Non-fatal word sets the severity);
   its ``Severity … Engine instance`` / ``Data {…}`` lines are details, not more failures;
2. BMC (ipmievd) ``Deasserted`` events are recoveries of their thermal / power class, not failures;
3. systemd-networkd / NetworkManager carrier loss is a link down (``Gained carrier`` its recovery),
   and a fatal APEI/GHES memory error record is a host-memory hardware fault (the panic its effect),
   while a corrected one is no failure.
"""

from __future__ import annotations

from datetime import datetime, timezone

import polars as pl
import pytest

from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, failure_events, merge_incidents
from gpusre.models.logs.templates import canonical_forms
from gpusre.models.reliability.repair_times import load_recovery_kinds, recovery_lines
from gpusre.models.sources.syslog.ingest import _events
from gpusre.models.sources.syslog.parse import SyslogInput, parse_syslog_batch

YEAR = (datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 12, 31, tzinfo=timezone.utc))


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


def one(line: str) -> dict:
    """The event row of a single line (None when the ingest recognizes no event in it)."""
    rows = ingest([line])
    return rows.row(0, named=True) if rows.height else {"kind": None}


def classes(row: dict) -> tuple:
    return row["kind"], row["component"], row["cause_class"], row["severity"]


def failures(events: pl.DataFrame) -> pl.DataFrame:
    return failure_events(events.select([c for c in EVENT_SCHEMA if c in events.columns] + ["message"]))


def incidents(events: pl.DataFrame) -> pl.DataFrame:
    got, _ = merge_incidents(events.select([c for c in EVENT_SCHEMA if c in events.columns] + ["message"]))
    return got


# --- 1. NVSwitch SXid: the line's own Fatal / Non-fatal word -------------------------------------

SXID_NONFATAL = [
    "Mar  1 12:00:00 gpu001 kernel: [1234.567890] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Non-fatal, "
    "Link 32 egress non-posted PRIV error (First)",
    "Mar  1 12:00:00 gpu001 kernel: [1234.567901] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Severity 0 "
    "Engine instance 32 Sub-engine instance 00",
    "Mar  1 12:00:00 gpu001 kernel: [1234.567912] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Data "
    "{0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}",
]


def test_a_non_fatal_sxid_and_its_detail_lines_are_no_failure() -> None:
    events = ingest(SXID_NONFATAL)
    assert [classes(r) for r in events.iter_rows(named=True)] == [
        ("sxid", "nvswitch", "hardware", "medium"),          # 12028 is non_fatal in sxid.csv, and the line says so
        ("sxid_detail", "nvswitch", "informational", "info"),
        ("sxid_detail", "nvswitch", "informational", "info"),
    ]
    assert events["code"].to_list() == [12028] * 3 and events["port"].to_list() == ["32", None, None]
    assert failures(events).is_empty() and incidents(events).is_empty()


@pytest.mark.parametrize(("line", "code", "severity"), [
    # the word on the line wins over the catalog's fatal column, both ways
    ("nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Fatal, Link 32 egress non-posted PRIV error (First)", 12028, "high"),
    ("nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Non-fatal, Link 48 LTSSM Fault Up", 20034, "medium"),
    # always-fatal codes stay critical; a non-fatal code the catalog rates low stays low
    ("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 22003, Fatal, Link 05 MINION halt", 22003, "critical"),
    ("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20001, Non-fatal, Link 05 TX Replay Error", 20001, "low"),
    # without the word: the catalog's fatal column (via its severity)
    ("nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034", 20034, "high"),
    ("nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 12028", 12028, "high"),
])
def test_the_sxid_line_word_decides_else_the_catalog(line: str, code: int, severity: str) -> None:
    row = one(f"Mar  1 12:00:00 gpu001 kernel: {line}")
    assert (row["kind"], row["code"], row["component"], row["severity"]) == ("sxid", code, "nvswitch", severity)


def test_fabric_manager_fatal_stays_a_failure_and_non_fatal_is_not() -> None:
    fm = "[ERROR] [tid 12727] detected NVSwitch {} error 12028 on fid 0 on NVSwitch pci bus id 00000000:07:00.0 physical id 3 port 32"
    events = ingest([f"Mar  1 12:00:01 gpu001 nv-fabricmanager[2211]: {fm.format('fatal')}",
                     f"Mar  1 13:00:01 gpu001 nv-fabricmanager[2211]: {fm.format('non-fatal')}"])
    assert [classes(r) for r in events.iter_rows(named=True)] == [
        ("sxid", "nvswitch", "hardware", "high"), ("sxid", "nvswitch", "hardware", "medium")]
    assert failures(events)["event_id"].to_list() == [events["event_id"][0]]
    got = incidents(events)
    assert got["component"].to_list() == ["nvswitch"] and got["n_events"].to_list() == [1]


def test_a_fatal_sxid_with_its_details_is_one_failure_event() -> None:
    lines = [line.replace("Non-fatal", "Fatal") for line in SXID_NONFATAL]
    events = ingest(lines)
    assert failures(events)["kind"].to_list() == ["sxid"]
    got = incidents(events)
    assert (got["component"].to_list(), got["n_events"].to_list()) == (["nvswitch"], [1])


# --- 2. BMC deassert events are recoveries ------------------------------------------------------

THERMAL = ["Mar  1 12:00:00 gpu001 ipmievd[1234]: Temperature sensor GPU3_Temp Upper Critical going high Asserted",
           "Mar  1 12:04:00 gpu001 ipmievd[1234]: Temperature sensor GPU3_Temp Upper Critical going high Deasserted"]
POWER = ["Mar  1 12:00:00 gpu001 ipmievd[4242]: Power Supply sensor PS2 Status, Power Supply AC lost Asserted",
         "Mar  1 12:04:00 gpu001 ipmievd[4242]: Power Supply sensor PS2 Status, Power Supply AC lost Deasserted"]


@pytest.mark.parametrize(("lines", "failure", "recovery", "component", "component_class"), [
    (THERMAL, "ipmi_thermal", "ipmi_thermal_cleared", "thermal", "thermal"),
    (POWER, "ipmi_power", "ipmi_power_cleared", "host_power", "power"),
])
def test_a_bmc_deassert_is_a_recovery_of_its_class_not_a_failure(lines: list[str], failure: str, recovery: str,
                                                                 component: str, component_class: str) -> None:
    events = ingest(lines)
    assert [classes(r) for r in events.iter_rows(named=True)] == [
        (failure, component, "hardware", "high"), (recovery, component, "informational", "info")]
    assert failures(events)["kind"].to_list() == [failure]
    up = recovery_lines(events)
    assert up.select("node", "component_class").rows() == [("gpu001", component_class)]
    assert up["_up"].to_list() == [events["ts"][1]]
    assert dict(load_recovery_kinds().iter_rows())[recovery] == component_class


@pytest.mark.parametrize("line", [
    "ipmievd[1234]: Temperature sensor CPU1_Temp Upper Non-critical going high Deasserted",  # not a critical threshold
    "ipmievd[1234]: Temperature sensor GPU3_Temp Upper Critical going high Deasserted (Reading 71 < Threshold 85 degrees C)",
    "ipmievd[4242]: Power Supply sensor PS1 Status, Presence detected Deasserted",           # a supply pulled
])
def test_lines_near_the_deassert_rules(line: str) -> None:
    row = one(f"Mar  1 12:04:00 gpu001 {line}")
    if "Critical" in line:
        assert classes(row) == ("ipmi_thermal_cleared", "thermal", "informational", "info")
    else:
        assert row["kind"] is None


# --- 3a. carrier loss on systemd-networkd / NetworkManager hosts -------------------------------

def test_networkd_lost_carrier_is_a_link_down_and_gained_carrier_its_recovery() -> None:
    events = ingest(["Mar  1 12:00:00 gpu001 systemd-networkd[1187]: ibp59s0: Lost carrier",
                     "Mar  1 12:03:00 gpu001 systemd-networkd[1187]: ibp59s0: Gained carrier"])
    mlx5 = one("Mar  1 12:00:00 gpu001 kernel: mlx5_core 0000:08:00.0 mlx5_0: Port: 1 Link DOWN")
    mlx5_up = one("Mar  1 12:00:00 gpu001 kernel: mlx5_core 0000:08:00.0 mlx5_0: Port: 1 Link ACTIVE")
    assert [classes(r) for r in events.iter_rows(named=True)] == [classes(mlx5), classes(mlx5_up)]
    assert classes(mlx5) == ("ib_link_down", "network", "hardware", "high")
    assert events["port"].to_list() == ["ibp59s0", "ibp59s0"]
    assert failures(events)["kind"].to_list() == ["ib_link_down"]
    assert recovery_lines(events).select("component_class").rows() == [("network",)]


@pytest.mark.parametrize(("line", "expected"), [
    ("systemd-networkd[1187]: ens1f0np0: Lost carrier", ("nic_link_down", "network", "hardware", "high")),
    ("systemd-networkd[1187]: ens1f0np0: Gained carrier", ("nic_link_up", "network", "informational", "info")),
    ("systemd-networkd[1187]: bond0: Lost carrier", ("nic_link_down", "network", "hardware", "high")),
    ("NetworkManager[1100]: <info>  [1699999999.1234] device (ibp59s0): state change: activated -> unavailable "
     "(reason 'carrier-changed', sys-iface-state: 'managed')", ("ib_link_down", "network", "hardware", "high")),
    ("NetworkManager[1100]: <info>  [1699999999.5678] device (ibp59s0): carrier: link connected",
     ("ib_link_up", "network", "informational", "info")),
    # neighbours that are not a link loss
    ("systemd-networkd[1187]: eth0: Gained IPv6LL", (None,)),
    ("systemd-networkd[1187]: eth0: Link UP", (None,)),
    ("systemd-networkd[1187]: veth3a9f1c2: Lost carrier", (None,)),        # a container's virtual link
    ("systemd-networkd[1187]: docker0: Lost carrier", (None,)),
    ("systemd-networkd[1187]: enx0a94ef5c1d2e: Lost carrier", (None,)),    # the BMC's USB NIC
    ("NetworkManager[1100]: <info>  [1699999999.1234] device (ibp59s0): state change: activated -> deactivating "
     "(reason 'user-requested', sys-iface-state: 'managed')", (None,)),
    ("NetworkManager[1100]: <info>  [1699999999.1234] device (ibp59s0): carrier: link disconnected (deferring action "
     "for 10 seconds)", (None,)),
    ("NetworkManager[1100]: <info>  [1699999999.1234] device (veth12ab): state change: activated -> unavailable "
     "(reason 'carrier-changed', sys-iface-state: 'managed')", (None,)),
])
def test_carrier_line_variants(line: str, expected: tuple) -> None:
    row = one(f"Mar  1 12:00:00 gpu001 {line}")
    assert (classes(row) if expected[0] else (row["kind"],)) == expected


# --- 3b. APEI / GHES firmware-first memory errors ---------------------------------------------

GHES_FATAL_MEMORY = [
    "Mar  1 12:10:00 gpu001 kernel: {1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 0",
    "Mar  1 12:10:00 gpu001 kernel: {1}[Hardware Error]: event severity: fatal",
    "Mar  1 12:10:00 gpu001 kernel: {1}[Hardware Error]:  Error 0, type: fatal",
    "Mar  1 12:10:00 gpu001 kernel: {1}[Hardware Error]:  fru_text: Card03, ChnF, DIMM0",
    "Mar  1 12:10:00 gpu001 kernel: {1}[Hardware Error]:   section_type: memory error",
    "Mar  1 12:10:00 gpu001 kernel: {1}[Hardware Error]:   physical_address: 0x000000393cfe5040",
    "Mar  1 12:10:00 gpu001 kernel: Kernel panic - not syncing: Fatal hardware error!",
]


def test_a_fatal_ghes_memory_error_and_its_panic_are_one_host_memory_fault() -> None:
    events = ingest(GHES_FATAL_MEMORY)
    edac_ue = one("Mar  1 12:10:00 gpu001 kernel: EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (x)")
    by_kind = {r["kind"]: r for r in events.iter_rows(named=True)}
    assert set(by_kind) == {"ghes_record", "ghes_memory_error", "kernel_panic"}
    # the memory section of a fatal record has the DIMM uncorrectable-error rule's classes
    assert classes(by_kind["ghes_memory_error"])[1:] == classes(edac_ue)[1:] == ("host_memory", "hardware", "critical")
    assert by_kind["ghes_memory_error"]["action"] == edac_ue["action"]
    assert classes(by_kind["ghes_record"])[2:] == ("informational", "info")
    assert sorted(failures(events)["kind"].to_list()) == ["ghes_memory_error", "kernel_panic"]
    got = incidents(events)
    assert got.height == 1
    row = got.row(0, named=True)
    assert (row["component"], row["component_class"], row["n_events"]) == ("host_memory", "host", 2)


@pytest.mark.parametrize(("severity", "expected"), [("corrected", "low"), ("recoverable", "critical"), ("info", "info")])
def test_a_ghes_memory_error_takes_its_records_severity(severity: str, expected: str) -> None:
    lines = [line.replace("fatal", severity) for line in GHES_FATAL_MEMORY[:-1]]
    events = ingest(lines)
    memory = events.filter(pl.col("kind") == "ghes_memory_error").row(0, named=True)
    assert classes(memory) == ("ghes_memory_error", "host_memory", "hardware", expected)
    assert (failures(events).height > 0) == (expected == "critical")


def test_a_corrected_record_between_fatal_ones_and_a_record_seen_without_its_severity() -> None:
    corrected = [line.replace("{1}", "{2}").replace("fatal", "corrected") for line in GHES_FATAL_MEMORY[:-1]]
    events = ingest(GHES_FATAL_MEMORY[:-1] + corrected)
    memory = events.filter(pl.col("kind") == "ghes_memory_error")
    assert memory["severity"].to_list() == ["critical", "low"]
    # a section line whose record's severity line is not in the input (a rotated file): evidence only
    alone = one("Mar  1 12:10:00 gpu001 kernel: {7}[Hardware Error]:   section_type: memory error")
    assert classes(alone) == ("ghes_memory_error", "host_memory", "hardware", "medium")


@pytest.mark.parametrize("line", [
    "{1}[Hardware Error]: event severity: corrected",
    "{1}[Hardware Error]: It has been corrected by h/w and requires no further action",
    "{1}[Hardware Error]:   section_type: PCIe error",
    "{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 0",
])
def test_ghes_lines_that_are_no_failure(line: str) -> None:
    events = ingest([f"Mar  1 12:10:00 gpu001 kernel: {line}"])
    assert failures(events).is_empty()
