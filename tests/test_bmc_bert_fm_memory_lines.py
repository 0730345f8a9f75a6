"""Fault lines an outside probe (AI) found the catalogs missed or misread, fed through the ingest's own
parsing and event path, with hand-written expectations, and the attribution of the jobs they killed:

1. ipmievd without the sensor's SDR prints ``<type> sensor - <event>`` (no name, no direction word:
   ipmitool src/ipmievd.c log_event); with an SDR ``... Asserted`` / ``Deasserted`` as before, and a
   deasserted DIMM / bus / processor event is still no repair;
2. BERT prints the previous boot's CPER records without the ``{N}`` record number: its section lines
   take the severity of its own ``event severity:`` line (kinds ``bert_*``; GHES's numbered records keep
   theirs);
3. Fabric Manager's own start-up aborts (``..., aborting fabric manager``; the driver-version mismatch)
   and systemd's ``Control process exited`` of its forking unit are ``fabric_manager_down``;
4. BMC Processor sensor events (IERR, machine check, FRB, thermal trip) per the IPMI Processor offsets;
5. a DIMM's uncorrected error a process consumed (x86 MCE SRAR, mm/memory-failure.c) without EDAC;
6. an NHC line that quotes a kernel line (Azure's check_gpu_xid quoting an Xid) is the check's firing,
   not a second Xid;
7. a log-level word where a syslog header has its host (DCGM's nv-hostengine.log) is no host;
and a journald MESSAGE holding the driver's three-line "fallen off the bus" printk keeps its GPU.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from gpusre.assets.core_jobs import core_jobs
from gpusre.assets.ingest_sacct import raw_sacct
from gpusre.assets.ingest_syslog import core_node_events, raw_syslog
from gpusre.models.failures.attribution import attribute_failures
from gpusre.models.failures.health_checks import health_check_quality, missed_detections
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, merge_incidents
from gpusre.models.logs.event_catalog import classify_messages
from gpusre.models.logs.templates import canonical_forms
from gpusre.models.sources.syslog import parse as syslog_parse
from gpusre.models.sources.syslog.ingest import _events
from gpusre.models.sources.syslog.parse import SyslogInput, parse_syslog_batch, parse_syslog_bytes
from gpusre.models.warehouse import connect
from gpusre.pipelines.resources import default_resources

YEAR = (datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 12, 31, tzinfo=timezone.utc))
T0 = datetime(2026, 11, 18, 12, 0, 0, tzinfo=timezone.utc)  # "Nov 18 12:00:00" of the lines below


def ingest(lines: list[str], node: str = "gpu001", name: str | None = None) -> pl.DataFrame:
    """Every parsed line of the file ``lines`` (as the syslog ingest reads and classifies it), with
    ``event_id`` 1.. in line order; ``kind`` is null on lines that are no event."""
    data = ("\n".join(lines) + "\n").encode()
    batch = parse_syslog_batch([SyslogInput(data, name or f"syslog/2026-11-18/{node}.log", node, YEAR)])
    assert batch.rejects.is_empty(), batch.rejects
    parsed = batch.lines
    events = _events(parsed, *canonical_forms(parsed["message"]))
    rows = pl.concat([parsed.select("ts", pl.col("host").alias("node"), "program", "message"), events], how="horizontal")
    return rows.with_row_index("event_id", offset=1).with_columns(pl.col("event_id").cast(pl.Int64))


def at(line: str, program: str = "kernel", ts: str = "12:00:00", host: str = "gpu001") -> str:
    """``line`` as an RFC 3164 syslog line of ``host`` at ``ts`` on 18 November."""
    return f"Nov 18 {ts} {host} {program}: {line}"


def kinds(lines: list[str]) -> list[tuple]:
    """(kind, component, severity) of each line, classified as the ingest does."""
    return ingest(lines).select("kind", "component", "severity").rows()


def attribution(lines: list[str], state: str, end: datetime, elapsed: timedelta, exit_signal: int = 0) -> dict:
    events = ingest(lines).filter(pl.col("kind").is_not_null())
    ev = events.select([c for c in EVENT_SCHEMA if c in events.columns])
    merged, _ = merge_incidents(ev)
    job = pl.DataFrame([{"job_id": "1", "state": state, "nodes": ["gpu001"], "n_gpus": 8, "start_ts": end - elapsed,
                         "end_ts": end, "elapsed_s": int(elapsed.total_seconds()), "exit_code": 0 if exit_signal else 1,
                         "exit_signal": exit_signal}],
                       schema={"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
                               "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"),
                               "elapsed_s": pl.Int64, "exit_code": pl.Int64, "exit_signal": pl.Int64})
    row = attribute_failures(job, ev, merged).row(0, named=True)
    return {**row, "_incidents": merged, "_events": ev, "_job": job}


# 42 min of work, checkpoints every 60 min: 8 GPUs x (0.7 - 0.7^2 / 2) h = 8 x 0.455 = 3.64 GPU-h
ELAPSED = timedelta(minutes=42)
LOST = 8 * (0.7 - 0.7 ** 2 / 2)


# --- 1. ipmievd without an SDR ------------------------------------------------------------------

@pytest.mark.parametrize(("line", "expected"), [
    # the probe's line: no SDR, no direction word
    (at("Memory sensor - Uncorrectable ECC", "ipmievd[2817]"), ("ipmi_memory", "host_memory", "critical")),
    (at("Memory sensor - Correctable ECC", "ipmievd[2817]"), ("ipmi_memory_ce", "host_memory", "low")),
    (at("Critical Interrupt sensor - Bus Fatal Error", "ipmievd[2817]"), ("ipmi_pcie", "pcie_bus", "critical")),
    (at("Power Supply sensor - Power Supply AC lost", "ipmievd[2817]"), ("ipmi_power", "host_power", "high")),
    (at("Temperature sensor - Upper Critical going high", "ipmievd[2817]"), ("ipmi_thermal", "thermal", "high")),
    # compact SDR ("<type> sensor <name> - <event> <dir>") and full SDR forms, as before
    (at("Memory sensor DIMM_B2 - Uncorrectable ECC Asserted", "ipmievd[2817]"), ("ipmi_memory", "host_memory", "critical")),
    (at("Memory sensor DIMM_B2 - Uncorrectable ECC Deasserted", "ipmievd[2817]"), ("ipmi_sel_cleared", "other", "info")),
    (at("Memory sensor DIMM_B2 Uncorrectable ECC Deasserted", "ipmievd[2817]"), ("ipmi_sel_cleared", "other", "info")),
    # a sensor the event table does not describe: ipmievd prints its number only, nothing to read
    (at("Memory sensor 53", "ipmievd[2817]"), (None, None, None)),
])
def test_ipmievd_events_without_an_sdr_are_read_as_the_assertion(line: str, expected: tuple) -> None:
    assert kinds([line]) == [expected]


def test_a_job_a_bmc_dimm_ue_without_sdr_killed_is_host_memory() -> None:
    got = attribution([at("Memory sensor - Uncorrectable ECC", "ipmievd[2817]", ts="11:59:40")],
                      "FAILED", T0 + timedelta(seconds=30), ELAPSED)
    assert (got["attribution"], got["component"]) == ("infrastructure", "host_memory")
    assert got["lost_gpu_hours"] == pytest.approx(LOST)


# --- 4. BMC Processor sensor events -------------------------------------------------------------

@pytest.mark.parametrize(("line", "expected"), [
    # the probe's full-SDR discrete line and the sel elist row
    (at("Processor sensor CPU1_Status IERR Asserted", "ipmievd[2817]"), ("ipmi_cpu", "host_cpu", "critical")),
    (at("1f | 11/18/2026 | 12:00:00 | Processor #0x02 | IERR | Asserted", "ipmi-sel"), ("ipmi_cpu", "host_cpu", "critical")),
    # other spellings: compact SDR, no SDR, FreeIPMI's wording, newer ipmitool's 0Bh text
    (at("Processor sensor CPU0_Status - IERR Asserted", "ipmievd[2817]"), ("ipmi_cpu", "host_cpu", "critical")),
    (at("Processor sensor - IERR", "ipmievd[2817]"), ("ipmi_cpu", "host_cpu", "critical")),
    (at("Processor sensor CPU0 Machine Check Exception (Uncorrectable) Asserted", "ipmievd[2817]"),
     ("ipmi_cpu", "host_cpu", "critical")),
    (at("2a | 11/18/2026 | 12:00:00 | Processor CPU1 Status | Uncorrectable machine check exception | Asserted", "ipmi-sel"),
     ("ipmi_cpu", "host_cpu", "critical")),
    (at("Processor sensor CPU1_Status FRB1/BIST failure Asserted", "ipmievd[2817]"), ("ipmi_cpu", "host_cpu", "high")),
    (at("2b | 11/18/2026 | 12:00:00 | Processor #0x61 | FRB3/Processor startup/init failure | Asserted", "ipmi-sel"),
     ("ipmi_cpu", "host_cpu", "high")),
    (at("Processor sensor CPU0_Status Thermal Trip Asserted", "ipmievd[2817]"), ("ipmi_thermal_trip", "thermal", "critical")),
    (at("Processor sensor CPU0_Status Correctable machine check error Asserted", "ipmievd[2817]"),
     ("ipmi_cpu_ce", "host_cpu", "low")),
    # cleared: no repair of the CPU; presence and throttling are no fault
    (at("Processor sensor CPU1_Status IERR Deasserted", "ipmievd[2817]"), ("ipmi_sel_cleared", "other", "info")),
    (at("1f | 11/18/2026 | 12:05:00 | Processor #0x02 | IERR | Deasserted", "ipmi-sel"), ("ipmi_sel_cleared", "other", "info")),
    (at("Processor sensor CPU1_Status Presence detected Asserted", "ipmievd[2817]"), (None, None, None)),
    (at("2c | 11/18/2026 | 12:00:00 | Processor #0x02 | Throttled | Asserted", "ipmi-sel"), (None, None, None)),
])
def test_bmc_processor_events(line: str, expected: tuple) -> None:
    assert kinds([line]) == [expected]


def test_a_node_fail_after_a_bmc_ierr_is_host_cpu_not_suspected() -> None:
    got = attribution([at("Processor sensor CPU1_Status IERR Asserted", "ipmievd[2817]", ts="11:59:32")],
                      "NODE_FAIL", T0, ELAPSED)
    assert (got["attribution"], got["component"]) == ("infrastructure", "host_cpu")
    assert got["lost_gpu_hours"] == pytest.approx(LOST)
    inc = got["_incidents"]
    assert inc.height == 1 and inc["component"][0] == "host_cpu" and inc["severity"][0] == "critical"


# --- 5. a DIMM error a process consumed (no EDAC) ------------------------------------------------

PROBE_SRAR = [at("mce: [Hardware Error]: Machine check events logged", ts="11:59:41"),
              at("mce: Uncorrected hardware memory error in user-access at 3f1c2d000", ts="11:59:41"),
              at("Memory failure: 0x3f1c2d: Sending SIGBUS to python3:4242 due to hardware memory corruption", ts="11:59:41"),
              at("Memory failure: 0x3f1c2d: recovery action for dirty LRU page: Recovered", ts="11:59:41")]


def test_memory_failure_lines_of_the_probe_and_of_older_kernels() -> None:
    assert kinds(PROBE_SRAR) == [("mce", "host_cpu", "medium"), ("memory_failure", "host_memory", "critical"),
                                 ("memory_failure", "host_memory", "critical"), ("memory_failure", "host_memory", "high")]
    older = [at("MCE 0x3f1c2d: Killing pt_main_thread:4242 due to hardware memory corruption"),  # before 4.x
             at("MCE 0x3f1c2d: dirty LRU page recovery: Recovered"),
             at("Memory failure: 0xaf34214: recovery action for reserved kernel page: Failed"),
             at("mce: Memory error not recovered"),
             at("Memory failure: 0xedbe201: forcibly killing read_poison:22434 because of failure to unmap corrupted page"),
             # a page already offlined: no new error
             at("Memory failure: 0x8a398a: already hardware poisoned")]
    assert kinds(older) == [("memory_failure", "host_memory", "critical"), ("memory_failure", "host_memory", "high"),
                            ("memory_failure", "host_memory", "critical"), ("memory_failure", "host_memory", "critical"),
                            ("memory_failure", "host_memory", "critical"), (None, None, None)]


def test_a_job_killed_with_sigbus_by_a_memory_error_is_host_memory() -> None:
    # exit 0:7: SIGBUS, which alone reads as the user's crash
    got = attribution(PROBE_SRAR, "FAILED", T0 + timedelta(seconds=20), ELAPSED, exit_signal=7)
    assert (got["attribution"], got["component"]) == ("infrastructure", "host_memory")
    assert got["lost_gpu_hours"] == pytest.approx(LOST)
    assert got["_incidents"]["component"].to_list() == ["host_memory"]


# --- 3. Fabric Manager's own start-up failures ----------------------------------------------------

def test_fabric_manager_aborts_in_its_own_log_and_in_syslog() -> None:
    fm_log = ["[Nov 18 2026 05:58:10] [INFO] [tid 1802] Fabric Manager version 550.127.05 is running with the following "
              "configuration options",
              "[Nov 18 2026 05:58:12] [ERROR] [tid 1802] detected number of NVSwitches don't match with any supported "
              "system topology, aborting fabric manager"]
    rows = ingest(fm_log, "gpu012", "syslog/2026-11-18/gpu012/fabricmanager.log")
    # the parser reads Fabric Manager's own format (local time, UTC here) as the program nv-fabricmanager
    assert rows.select("ts", "node", "program", "kind", "component", "severity").rows() == [
        (datetime(2026, 11, 18, 5, 58, 10, tzinfo=timezone.utc), "gpu012", "nv-fabricmanager", None, None, None),
        (datetime(2026, 11, 18, 5, 58, 12, tzinfo=timezone.utc), "gpu012", "nv-fabricmanager",
         "fabric_manager_down", "nvswitch", "high")]
    other = [at("No NVSwitches detected, aborting fabric manager", "nv-fabricmanager[1929]"),
             at("fabric manager NVIDIA GPU driver interface version 570.86.15 don't match with driver version 570.124.06. "
                "Please update with matching NVIDIA driver package.", "nv-fabricmanager[131760]"),
             at("nvidia-fabricmanager.service: Control process exited, code=exited, status=1/FAILURE", "systemd[1]"),
             # a non-fatal line of its log is no outage
             at("[ERROR] [tid 1230079] failed to find the GPU handle 5410063385821516767 in the multicast team request "
                "setup 6130285411925746235.", "nv-fabricmanager")]
    assert ingest(other).select("kind", "cause_class", "action").rows() == [
        ("fabric_manager_down", "hardware", "RESTART_BM"), ("fabric_manager_down", "driver_firmware", "UPDATE_SWFW"),
        ("fabric_manager_down", "driver_firmware", "RESTART_FM"), (None, None, None)]


# --- 2. BERT: the previous boot's records ----------------------------------------------------------

BERT = ["[Wed Nov 18 02:34:00 2026] Linux version 5.15.0-125-generic (buildd@lcy02-amd64-066) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) "
        "11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #135-Ubuntu SMP Fri Sep 27 13:53:58 UTC 2024",
        "[Wed Nov 18 02:34:10 2026] BERT: Error records from previous boot:",
        "[Wed Nov 18 02:34:10 2026] [Hardware Error]: event severity: fatal",
        "[Wed Nov 18 02:34:10 2026] [Hardware Error]:  Error 0, type: fatal",
        "[Wed Nov 18 02:34:10 2026] [Hardware Error]:   section_type: PCIe error",
        "[Wed Nov 18 02:34:10 2026] [Hardware Error]:   port_type: 4, root port",
        "[Wed Nov 18 02:34:10 2026] [Hardware Error]:   device_id: 0000:17:01.0",
        "[Wed Nov 18 02:34:10 2026] [Hardware Error]:   vendor_id: 0x8086, device_id: 0x347a"]


def test_bert_section_lines_take_their_records_severity_and_name_the_device() -> None:
    rows = ingest(BERT, "gpu011", "syslog/2026-11-18/gpu011/dmesg.log").filter(pl.col("kind").is_not_null())
    assert rows.select("ts", "kind", "component", "severity", "device_pci").rows()[1:] == [
        (datetime(2026, 11, 18, 2, 34, 10, tzinfo=timezone.utc), "bert_record", "other", "info", None),
        (datetime(2026, 11, 18, 2, 34, 10, tzinfo=timezone.utc), "bert_pcie_error", "pcie_bus", "critical", None),
        (datetime(2026, 11, 18, 2, 34, 10, tzinfo=timezone.utc), "bert_pcie_error", "pcie_bus", "critical", "0000:17:01.0")]
    inc, _ = merge_incidents(rows.select([c for c in EVENT_SCHEMA if c in rows.columns]))
    assert inc.select("component", "severity", "start_ts").rows() == [
        ("pcie_bus", "critical", datetime(2026, 11, 18, 2, 34, 10, tzinfo=timezone.utc))]


def test_bert_and_ghes_records_keep_their_own_severities() -> None:
    out = classify_messages(pl.Series([
        "kernel: [Hardware Error]:   section_type: memory error",   # no severity line before it: capped
        "kernel: [Hardware Error]: event severity: corrected",
        "kernel: {1}[Hardware Error]: event severity: fatal",        # a GHES record between BERT's lines
        "kernel: [Hardware Error]:   section_type: memory error",   # BERT's corrected record: low
        "kernel: {1}[Hardware Error]:   section_type: PCIe error",   # GHES's fatal record: critical
        "kernel: [ 12.5] [Hardware Error]: event severity: recoverable",
        "kernel: [ 12.5] [Hardware Error]:   section_type: IA32/X64 processor error",
        # not BERT: the MCE decoder's lines and AMD's decoded bank (no record of CPER sections)
        "kernel: mce: [Hardware Error]: Machine check events logged",
        "kernel: [Hardware Error]: CPU:0 (17:31:0) MC27_STATUS[-|UE|MiscV|-|PCC|-|-|-|-]: 0xbc00000000000000",
    ]))
    assert out.select("kind", "severity").rows() == [
        ("bert_memory_error", "medium"), ("bert_record", "info"), ("ghes_record", "info"), ("bert_memory_error", "low"),
        ("ghes_pcie_error", "critical"), ("bert_record", "info"), ("bert_processor_error", "critical"),
        ("mce", "medium"), (None, None)]


# --- 6. NHC quoting a kernel line -------------------------------------------------------------------

AZURE_NHC = ("Health check failed:  check_gpu_xid: GPU Xid errors detected: [Wed Nov 18 05:00:00 2026] NVRM: Xid "
             "(PCI:0000:4e:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.. FaultCode: NHC2001")


@pytest.mark.parametrize(("line", "component"), [
    (at(AZURE_NHC, "nhc[5123]"), "pcie_bus"),
    # slurmd relaying NHC's output, and NHC quoting an NVLink Xid, an EDAC UE, a Lustre error
    (at("error: health_check failed: rc:1 output: " + AZURE_NHC, "slurmd[881]"), "pcie_bus"),
    (at("Health check failed:  check_nv_healthmon:  GPU 0000:18:00.0 NVLink 4 is inactive: NVRM: Xid (PCI:0000:18:00): "
        "74, pid=1912, name=python, NVLink: fatal error detected on link 4", "nhc[5123]"), "nvlink"),
    (at("ERROR:  nhc:  Health check failed:  check_hw_mcelog:  EDAC MC0: 1 UE memory read error on DIMM_A1",
        "nhc[5123]"), "host_cpu"),
    (at("Health check failed:  check_fs_mount:  LustreError: 11-0: scratch-MDT0000-mdc: operation mds_getattr failed: "
        "rc = -107", "nhc[5123]"), "storage"),
])
def test_a_health_check_quoting_a_kernel_line_is_the_checks_firing(line: str, component: str) -> None:
    row = ingest([line]).row(0, named=True)
    assert (row["kind"], row["code"], row["component"]) == ("health_check", None, component)
    # the kernel's own line is still the kernel's
    assert kinds([at("NVRM: Xid (PCI:0000:4e:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")]) == [
        ("xid", "pcie_bus", "critical")]


def test_the_azure_xid_check_is_a_firing_and_no_missed_detection() -> None:
    lines = [at("NVRM: Xid (PCI:0000:4e:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", ts="11:59:30"),
             at(AZURE_NHC, "nhc[5123]", ts="12:04:01")]
    got = attribution(lines, "FAILED", T0, ELAPSED)
    assert (got["attribution"], got["component"]) == ("infrastructure", "pcie_bus")
    events = got["_events"].join(ingest(lines).select("event_id", "message"), on="event_id")
    assert events.filter(pl.col("kind") == "xid").height == 1  # one Xid 79, not two
    inc = got["_incidents"]
    assert inc.height == 1 and inc["n_health_check_episodes"][0] == 1
    quality = health_check_quality(events, got["_job"])
    assert quality.select("check_name", "firings", "preceded_job_failure").rows() == [("check_gpu_xid", 1, 1)]
    attribution_rows = pl.DataFrame([{k: got[k] for k in ("job_id", "state", "end_ts", "n_gpus", "component", "rule",
                                                          "attribution")}])
    assert missed_detections(attribution_rows, got["_job"], events).is_empty()


# --- 7. a log level is no host ------------------------------------------------------------------------

DCGM = ["2026-11-17 12:10:03.624 ERROR [3125:3190] GetLatestSample returned No data is available for entityId 0 groupId 1 "
        "fieldId 230 [/workspaces/dcgm-rel_dcgm_3_3-postmerge/dcgmlib/src/DcgmCacheManager.cpp:4395]",
        "2026-11-17 12:10:03.625 WARNING [3125:3190] Skipping loading of module 9 because it is blocklisted",
        "2026-11-17 12:10:04.000 info [3125:3190] lowercase level",
        "2026-11-17T12:10:05.000Z Warn nv-hostengine[3125]: a level word before a tag (the fast-path shape)",
        "2026-11-17T12:10:06.000Z info01 kernel: a host that starts like a level word",
        "Nov 17 12:10:07 DEBUG something an RFC 3164 line with a level for its host"]


@pytest.mark.parametrize("fast", [True, False])
def test_a_log_level_word_is_no_host(fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(syslog_parse, "_FAST_PATH", fast)
    got = parse_syslog_bytes(("\n".join(DCGM) + "\n").encode(), "syslog/2026-11-17/gpu014/nv-hostengine.log",
                             host_from_name="gpu014", year_hint=YEAR)
    assert got.rejects.is_empty()
    assert got.lines.select("host", "program", "message").rows() == [
        ("gpu014", None, DCGM[0][24:]),  # the level stays the message's
        ("gpu014", None, "WARNING [3125:3190] Skipping loading of module 9 because it is blocklisted"),
        ("gpu014", None, "info [3125:3190] lowercase level"),
        ("gpu014", "nv-hostengine", "a level word before a tag (the fast-path shape)"),
        ("info01", "kernel", "a host that starts like a level word"),
        ("gpu014", None, "DEBUG something an RFC 3164 line with a level for its host")]


# --- journald: the driver's three-line message as one record ------------------------------------------

def test_a_journald_message_with_the_three_line_fallen_off_the_bus_text_keeps_its_gpu() -> None:
    record = {"__REALTIME_TIMESTAMP": "1794895800000000", "_TRANSPORT": "kernel", "SYSLOG_IDENTIFIER": "kernel",
              "_HOSTNAME": "gpu002.hpc.example.org",
              "MESSAGE": "NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:2330) installed in this system has\n"
                         "NVRM: fallen off the bus and is not responding to commands."}
    batch = parse_syslog_batch([SyslogInput((json.dumps(record) + "\n").encode(), "syslog/2026-11-17/gpu002.json",
                                            "gpu002", YEAR)])
    parsed = batch.lines
    row = _events(parsed, *canonical_forms(parsed["message"])).row(0, named=True)
    assert (row["kind"], row["gpu_pci"], row["severity"]) == ("gpu_fallen_off_bus", "0000:b3:00.0", "critical")


# --- end to end: real Dagster materializations into a real DuckDB file --------------------------------

def test_the_probes_lines_through_the_pipeline(tmp_path: Path) -> None:
    root = tmp_path / "landing"
    (root / "sacct").mkdir(parents=True)
    (root / "sacct" / "d.psv").write_text(
        "JobID|State|Submit|Start|End\n1|COMPLETED|2026-11-17T10:00:00|2026-11-17T10:00:00|2026-11-17T11:00:00\n")
    day = root / "syslog" / "2026-11-17"
    (day / "gpu014").mkdir(parents=True)
    (day / "gpu014" / "nv-hostengine.log").write_text("\n".join(DCGM[:2]) + "\n")
    (day / "gpu012").mkdir()
    (day / "gpu012" / "fabricmanager.log").write_text(
        "[Nov 17 2026 05:58:12] [ERROR] [tid 1802] detected number of NVSwitches don't match with any supported system "
        "topology, aborting fabric manager\n")
    (day / "gpu011").mkdir()
    (day / "gpu011" / "dmesg.log").write_text("\n".join(b.replace("Wed Nov 18", "Tue Nov 17") for b in BERT[1:]) + "\n")
    (day / "messages").write_text("\n".join([
        "Nov 17 11:30:02 gpu006.hpc.example.org ipmievd[2817]: Memory sensor - Uncorrectable ECC",
        "Nov 17 04:00:02 gpu005.hpc.example.org ipmievd[2817]: Processor sensor CPU1_Status IERR Asserted",
        "Nov 17 06:00:01 gpu007.hpc.example.org kernel: Memory failure: 0x3f1c2d: Sending SIGBUS to python3:4242 due to "
        "hardware memory corruption",
        "Nov 17 05:04:31 gpu008.hpc.example.org nhc[5123]: " + AZURE_NHC]) + "\n")
    wh = tmp_path / "w.duckdb"
    result = dg.materialize([raw_sacct, core_jobs, raw_syslog, core_node_events],
                            resources=default_resources(str(wh), str(root), str(tmp_path / "r")))
    assert result.success
    con = connect(wh, read_only=True)
    try:
        events = con.sql("SELECT node, kind, component, severity FROM core.node_events ORDER BY node, ts").fetchall()
        nodes = con.sql("SELECT DISTINCT node FROM raw.syslog_lines ORDER BY node").fetchall()
    finally:
        con.close()
    assert events == [("gpu005", "ipmi_cpu", "host_cpu", "critical"),
                      ("gpu006", "ipmi_memory", "host_memory", "critical"),
                      ("gpu007", "memory_failure", "host_memory", "critical"),
                      ("gpu008", "health_check", "pcie_bus", "high"),
                      ("gpu011", "bert_record", "other", "info"),
                      ("gpu011", "bert_pcie_error", "pcie_bus", "critical"),
                      ("gpu011", "bert_pcie_error", "pcie_bus", "critical"),
                      ("gpu012", "fabric_manager_down", "nvswitch", "high")]
    # DCGM's level words are no hosts: its lines are gpu014's (no node 'error' / 'warning')
    assert nodes == [(n,) for n in ("gpu005", "gpu006", "gpu007", "gpu008", "gpu011", "gpu012", "gpu014")]


# --- BERT is post-mortem evidence (probe AI F2, re-run 2026-12-06) -----------------------------------

def _bert_at(ts: str) -> list[str]:
    """The BERT lines of a boot at ``ts``: the firmware's record of the fault that crashed the previous boot."""
    return [at("BERT: Error records from previous boot:", ts=ts), at("[Hardware Error]: event severity: fatal", ts=ts),
            at("[Hardware Error]:   section_type: PCIe error", ts=ts), at("[Hardware Error]:   device_id: 0000:17:01.0", ts=ts)]


def test_a_bert_record_printed_after_a_node_fail_names_the_crash() -> None:
    """Job NODE_FAIL at 12:00:00; the node reboots and prints the previous boot's fatal PCIe record at 12:03:10.
    Stamped at the boot, it is the crash's own record: the job's evidence (within the 5-min after-window, as a
    health check is), and its incident is the one that killed the job."""
    got = attribution(_bert_at("12:03:10"), "NODE_FAIL", T0, ELAPSED)
    assert (got["attribution"], got["component"], got["rule"]) == ("infrastructure", "pcie_bus", "failure event in window")
    assert got["incident_id"] == got["_incidents"]["incident_id"][0]


def test_a_bert_record_later_than_the_after_window_or_a_live_fault_after_the_end_is_no_evidence() -> None:
    """The record 6 min after the end is past Meta's after-window; a live Xid 79 3 min after the end is stamped
    when it happened, after the job was gone (unchanged: only detections and post-mortem records lag)."""
    late = attribution(_bert_at("12:06:10"), "NODE_FAIL", T0, ELAPSED)
    assert (late["attribution"], late["component"]) == ("infrastructure", "unknown (suspected)")
    live = attribution([at("NVRM: Xid (PCI:0000:4e:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
                           ts="12:03:10")], "NODE_FAIL", T0, ELAPSED)
    assert (live["attribution"], live["component"]) == ("infrastructure", "unknown (suspected)")
