"""Tests for the event catalog (catalog/*.csv) and the line classifier in gpusre.models.logs.event_catalog.

Real lines come from tests/fixtures/xid/ (copies of the shared samples and of the lines quoted in
reliability-facts §6.5), so the tests never read outside the repository.
"""

from __future__ import annotations

import doctest
import re
import time
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusre.models.logs import event_catalog as event_catalog
from gpusre.models.logs.event_catalog import (
    ACTIONS,
    AWS_TIERS,
    CAUSE_CLASSES,
    CLASSIFIED_SCHEMA,
    COMPONENTS,
    SEVERITIES,
    CatalogError,
    classify_messages,
    load_log_patterns,
    load_sxid_catalog,
    load_xid_catalog,
    normalize_pci,
    xid_event_action,
)

FIXTURES = Path(__file__).parent / "fixtures" / "xid"
CATALOG_DIR = Path(event_catalog.__file__).parents[1] / "catalog"
NOISE = "Jan 15 03:04:05 gpu001 systemd[1]: Started Session 42 of user root."


def _lines(name: str) -> list[str]:
    """Non-empty, non-comment lines of a fixture file."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _one(line: str) -> dict:
    """Classify a single line and return its row as a dict."""
    return classify_messages(pl.Series([line])).row(0, named=True)


def test_doctests() -> None:
    assert doctest.testmod(event_catalog).failed == 0


# --- catalogs ---------------------------------------------------------------------------------


def test_xid_catalog_has_every_code_of_the_current_nvidia_catalog() -> None:
    xid = load_xid_catalog()
    # The NVIDIA Xid catalog (gpud catalog_generated.go, 2025-10-29) numbers codes 1..172.
    assert xid["code"].to_list() == list(range(1, 173))
    assert xid.schema["code"] == pl.Int32
    assert xid.filter(pl.col("mnemonic") == "").height == 0


def test_xid_catalog_enums_are_valid() -> None:
    xid = load_xid_catalog()
    assert set(xid["component"]) <= COMPONENTS
    assert set(xid["cause_class"]) <= CAUSE_CLASSES - {"system_software"}
    assert set(xid["severity"]) <= set(SEVERITIES)
    assert set(xid["action"]) <= ACTIONS
    assert set(xid["aws_tier"]) <= AWS_TIERS
    # Xid rows use the ten Xid components only; the rest are for non-Xid node events.
    assert set(xid["component"]) <= {
        "gpu_compute", "gpu_memory", "nvlink", "pcie_bus", "gsp_firmware", "power", "thermal",
        "user_application", "driver", "other",
    }


def test_issue_rules_for_user_infrastructure_and_informational_xids() -> None:
    xid = load_xid_catalog()
    by_code = {r["code"]: r for r in xid.iter_rows(named=True)}
    for code in (13, 31, 43):
        assert by_code[code]["cause_class"] == "user_application", code
        assert by_code[code]["user_app_likely"] is True, code
    infrastructure = [48, 64, 79, 94, 95, 119, 120, 74, 136, 140, *range(144, 151)]
    for code in infrastructure:
        row = by_code[code]
        assert row["cause_class"] in {"hardware", "driver_firmware"}, code
        assert row["severity"] in {"critical", "high"}, code
        assert row["user_app_likely"] is False, code
    for code in (63, 92):
        assert by_code[code]["cause_class"] == "informational", code
        assert by_code[code]["repeat_threshold"] is not None and by_code[code]["repeat_threshold"] >= 1
    assert xid.filter(pl.col("repeat_threshold").is_not_null())["code"].to_list() == [63, 92]
    # NVIDIA's immediate buckets for the anchors of §6.2.
    assert by_code[79]["action"] == "RESTART_BM"
    assert by_code[48]["action"] == "WORKFLOW_XID_48"
    assert by_code[119]["action"] == "RESET_GPU"
    assert by_code[63]["action"] == "IGNORE"
    assert by_code[154]["action"] == "XID_154"
    assert (by_code[79]["component"], by_code[119]["component"], by_code[74]["component"]) == (
        "pcie_bus", "gsp_firmware", "nvlink",
    )


def test_every_code_in_the_azure_fatal_list_is_catalogued_and_flagged() -> None:
    policies = (FIXTURES / "production_health_check_policies.md").read_text(encoding="utf-8")
    fatal_list = re.search(r"Fatal Xid list.*?`([\d ]+)`", policies, re.S)
    assert fatal_list is not None
    azure = {int(c) for c in fatal_list.group(1).split()}
    assert len(azure) == 18
    xid = load_xid_catalog()
    flagged = set(xid.filter(pl.col("azure_fatal"))["code"])
    assert azure <= set(xid["code"])
    # Xid 95 has its own Azure fault code (NHC2011) and is fatal there too.
    assert flagged == azure | {95}


def test_aws_tiers_follow_the_aws_health_check_table() -> None:
    policies = (FIXTURES / "production_health_check_policies.md").read_text(encoding="utf-8")
    expected: dict[int, str] = {}
    for codes, severity in re.findall(r"^\| ([\d ]+) \| ([^|]+) \|", policies, re.M):
        # "configurable, default RESET" -> RESET; otherwise the first tier named (the stricter one).
        default = re.search(r"default (ISOLATE|REBOOT|RESET|MONITOR)", severity)
        tier = default.group(1) if default else re.search(r"ISOLATE|REBOOT|RESET|MONITOR", severity).group(0)
        for code in codes.split():
            expected[int(code)] = tier
    assert len(expected) > 40
    xid = load_xid_catalog()
    actual = {r["code"]: r["aws_tier"] for r in xid.iter_rows(named=True) if r["aws_tier"]}
    assert actual == expected


def test_sxid_catalog() -> None:
    sxid = load_sxid_catalog()
    assert sxid["code"].n_unique() == sxid.height > 50
    assert set(sxid["component"]) == {"nvswitch"}
    assert set(sxid["action"]) <= ACTIONS
    rows = {r["code"]: r for r in sxid.iter_rows(named=True)}
    # §6.3 anchors.
    assert (rows[10001]["fatal"], rows[10001]["action"]) == (False, "IGNORE")
    assert (rows[10002]["fatal"], rows[10002]["action"]) == (False, "IGNORE")
    assert (rows[10003]["fatal"], rows[10003]["action"]) == (True, "RESET_FABRIC")
    assert (rows[10004]["fatal"], rows[10004]["action"]) == (True, "CHECK_THERMALS")
    assert (rows[24007]["fatal"], rows[24007]["action"]) == (True, "RESET_GPU")
    assert rows[20034]["fatal"] is True and rows[20034]["cause_class"] == "hardware"
    # Always-fatal SXids are the most severe; ECC single-bit SXids are informational.
    assert set(sxid.filter(pl.col("fatal_class") == "always_fatal")["severity"]) == {"critical"}
    assert rows[11012]["cause_class"] == "informational"
    assert 12028 in rows  # seen in the Fabric Manager sample log


def test_log_patterns_are_valid_and_unique() -> None:
    patterns = load_log_patterns()
    assert patterns["pattern_id"].n_unique() == patterns.height
    assert set(patterns["component"]) <= COMPONENTS
    assert set(patterns["cause_class"]) <= CAUSE_CLASSES
    assert set(patterns["severity"]) <= set(SEVERITIES)
    assert set(patterns["action"]) <= ACTIONS
    kinds = set(patterns["kind"])
    required = {
        "xid", "sxid", "ecc_row_remap", "page_retirement", "gpu_fallen_off_bus", "gsp_timeout",
        "ib_link_down", "ib_link_up", "mlx5_port_state", "pcie_aer", "pciehp_link_down", "edac_ce",
        "edac_ue", "lustre_error", "nfs_timeout", "gpfs_error", "storage_timeout", "oom_kill",
        "hung_task", "soft_lockup", "hard_lockup", "kernel_panic", "slurmd_error", "slurmstepd_oom", "thermal_throttle", "clock_throttle",
    }
    assert required <= kinds, required - kinds
    # Exactly one generic extractor per catalog, each with a code group.
    assert set(patterns.filter(pl.col("pattern_id").is_in(["xid", "sxid"]))["catalog"]) == {"xid", "sxid"}


# --- bad data ---------------------------------------------------------------------------------


def _copy_with(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """Copy a packaged catalog file to tmp_path with one substring replaced."""
    text = (CATALOG_DIR / name).read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_bad_enum_names_file_line_and_column(tmp_path: Path) -> None:
    path = _copy_with(tmp_path, "xid.csv", "pcie_bus,hardware,critical,RESTART_BM", "pcie_bus,hardware,fatal,RESTART_BM")
    with pytest.raises(CatalogError, match=r"xid\.csv: line 80: column 'severity': 'fatal' is not one of"):
        load_xid_catalog(path)


def test_duplicate_code_and_bad_bool_are_refused(tmp_path: Path) -> None:
    path = _copy_with(tmp_path, "xid.csv", "\n2,ROBUST", "\n1,ROBUST")
    with pytest.raises(CatalogError, match=r"lines \[2, 3\]: duplicate code 1"):
        load_xid_catalog(path)
    path = _copy_with(tmp_path, "sxid.csv", ",false,non_fatal,", ",no,non_fatal,")
    with pytest.raises(CatalogError, match=r"sxid\.csv: line \d+: column 'fatal': 'no' is not true/false"):
        load_sxid_catalog(path)


def test_bad_header_is_refused(tmp_path: Path) -> None:
    path = _copy_with(tmp_path, "xid.csv", "code,mnemonic", "xid,mnemonic")
    with pytest.raises(CatalogError, match=r"line 1: header"):
        load_xid_catalog(path)


def test_pattern_rows_must_be_self_consistent(tmp_path: Path) -> None:
    # A regex Polars cannot run (look-ahead) is refused even though Python's re accepts it.
    path = _copy_with(tmp_path, "log_patterns.csv", r"Kernel panic - not syncing,", r"Kernel panic(?= - not syncing),")
    with pytest.raises(CatalogError, match=r"line \d+: column 'regex': regex not supported by Polars"):
        load_log_patterns(path)
    # A literal prefilter that is not in the example would hide the pattern's own line.
    path = _copy_with(tmp_path, "log_patterns.csv", "kernel_panic,Kernel panic,", "kernel_panic,Kernel Panic,")
    with pytest.raises(CatalogError, match=r"\(kernel_panic\): column 'literal'"):
        load_log_patterns(path)


# --- classifier -------------------------------------------------------------------------------


def test_every_pattern_example_classifies_to_its_own_row() -> None:
    patterns = load_log_patterns()
    out = classify_messages(patterns["example"])
    assert out.schema == pl.Schema(CLASSIFIED_SCHEMA)
    mismatched = patterns.with_columns(out["pattern_id"].alias("got")).filter(pl.col("got") != pl.col("pattern_id"))
    assert mismatched.height == 0, mismatched.select("pattern_id", "got").to_dicts()
    assert out["kind"].to_list() == patterns["kind"].to_list()


@pytest.mark.parametrize(
    ("line_no", "kind", "code", "component", "cause_class", "gpu_pci"),
    [
        (0, "xid", 79, "pcie_bus", "hardware", "0000:91:00.0"),
        (1, "gpu_fallen_off_bus", None, "pcie_bus", "hardware", "0000:91:00.0"),
        (2, "sxid", 20034, "nvswitch", "hardware", None),
        # an SXid's continuation lines (Severity/Engine, Data) are detail of the error its first line counts
        (3, "sxid_detail", 20034, "nvswitch", "informational", None),
        (4, "sxid_detail", 20034, "nvswitch", "informational", None),
        (5, "xid", 79, "pcie_bus", "hardware", "0000:2b:00.0"),
        (6, "xid", 119, "gsp_firmware", "driver_firmware", "0000:9b:00.0"),
        (7, "xid", 13, "user_application", "user_application", "0000:38:00.0"),
        (8, "ecc_row_remap", 63, "gpu_memory", "informational", "0000:10:1c.0"),
        (9, "xid", 149, "nvlink", "hardware", "0009:01:00.0"),
        (10, "xid", 154, "other", "sympathetic", "0009:01:00.0"),
        (11, "xid", 48, "gpu_memory", "hardware", None),
        (12, "page_retirement", 63, "gpu_memory", "informational", None),
        (13, "page_retirement", 64, "gpu_memory", "hardware", None),
    ],
)
def test_reliability_facts_lines(line_no: int, kind: str, code: int | None, component: str, cause_class: str, gpu_pci: str | None) -> None:
    row = _one(_lines("reliability_facts_6_5_lines.txt")[line_no])
    assert (row["kind"], row["code"], row["component"], row["cause_class"], row["gpu_pci"]) == (
        kind, code, component, cause_class, gpu_pci,
    )


def test_sxid_line_keeps_switch_address_and_link() -> None:
    row = _one(_lines("reliability_facts_6_5_lines.txt")[2])
    assert (row["device_pci"], row["port"], row["severity"], row["action"]) == ("0000:06:00.0", "48", "high", "RESET_GPU")


def test_xid_74_is_nvlink_and_unknown_code_falls_back() -> None:
    # Same NVRM format as the real lines above, with codes absent from the samples.
    out = classify_messages(pl.Series([
        "NVRM: Xid (PCI:0000:1b:00): 74, pid=1234, name=python, NVLink: fatal error detected on link 3",
        "NVRM: Xid (PCI:0000:1b:00): 999, pid=1234, name=python, something new",
    ]))
    assert out.select("kind", "code", "component", "cause_class", "action").rows() == [
        ("xid", 74, "nvlink", "hardware", "WORKFLOW_NVLINK_ERR"),
        # An Xid the catalog does not know yet keeps its code and is visibly uncatalogued (cause unknown).
        ("xid", 999, "gpu", "unknown", "CHECK_CATALOG"),
    ]


def test_a_hardware_xid_that_nvidia_says_to_ignore_now_carries_its_investigatory_action() -> None:
    # Xid 157 RESOURCE_RETIREMENT_FAILURE: hardware, high; NVIDIA's immediate bucket IGNORE, investigatory
    # CONTACT_SUPPORT. An incident of it must not read "No action needed"; an application's or the
    # driver's IGNORE (Xid 43, 38) stays IGNORE.
    out = classify_messages(pl.Series([
        "NVRM: Xid (PCI:0000:1b:00): 157, pid=1234, name=python, Resource retirement failure",
        "NVRM: Xid (PCI:0000:1b:00): 43, pid=1234, name=python, Ch 00000010",
        "NVRM: Xid (PCI:0000:1b:00): 38, pid=1234, name=python, ch 00000001",
    ]))
    assert out.select("code", "cause_class", "severity", "action").rows() == [
        (157, "hardware", "high", "CONTACT_SUPPORT"),
        (43, "user_application", "low", "IGNORE"),
        (38, "driver_firmware", "low", "IGNORE"),
    ]
    # The rule as data: every catalog row keeps its bucket but the hardware IGNOREs with an investigatory action.
    catalog = load_xid_catalog().with_columns(xid_event_action().alias("event_action"))
    changed = catalog.filter(pl.col("event_action") != pl.col("action"))
    assert set(changed["code"].to_list()) == {121, 157}
    assert set(changed["event_action"].to_list()) == {"CONTACT_SUPPORT"}


def test_older_drivers_xid_and_sxid_without_the_pci_prefix() -> None:
    # Drivers before the "PCI:" prefix print "Xid (0000:03:00): 79, ..."; the same fault, the same row.
    new, old = (classify_messages(pl.Series([
        f"NVRM: Xid ({p}0000:b7:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
        f"NVRM: Xid ({p}0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
        f"nvidia-nvswitch1: SXid ({p}0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up",
    ])) for p in ("PCI:", ""))
    assert old.equals(new)
    assert old.select("kind", "code", "gpu_pci", "device_pci").rows() == [
        ("xid", 79, "0000:b7:00.0", "0000:b7:00.0"), ("ecc_row_remap", 63, "0000:10:1c.0", "0000:10:1c.0"),
        ("sxid", 20034, None, "0000:06:00.0")]


def test_gsp_sample_file() -> None:
    lines = _lines("raw_sources/gpud_dmesg-with-xid-119.log")
    out = classify_messages(pl.Series(lines))
    xids = out.filter(pl.col("kind") == "xid")
    assert xids.height == 5
    assert set(xids["code"]) == {119}
    assert set(xids["gpu_pci"]) == {"0000:9b:00.0"}
    assert set(xids["component"]) == {"gsp_firmware"}
    assert out.filter(pl.col("pattern_id") == "gsp_rpc_rate_limit")["gpu_pci"].to_list() == ["0000:9b:00.0"]
    # RPC history tables, call traces and the GPU identity lines are context, not events.
    assert out["kind"].is_not_null().sum() == 6
    unmatched = [line for line, kind in zip(lines, out["kind"], strict=True) if kind is None]
    assert any("Call Trace" in line for line in unmatched)
    assert any("GSP_RM_ALLOC" in line for line in unmatched)


def test_memory_decode_sample_file() -> None:
    out = classify_messages(pl.Series(_lines("raw_sources/gpud_memory_dmesg.decode.iso.log")))
    summary = {(k, c): n for k, c, n in out.group_by("kind", "code").len().iter_rows()}
    assert summary == {("xid", 13): 16, ("xid", 43): 1, ("oom_kill", None): 7}
    xid43 = out.filter(pl.col("code") == 43).row(0, named=True)
    assert (xid43["cause_class"], xid43["severity"]) == ("user_application", "low")
    assert set(out.filter(pl.col("kind") == "oom_kill")["cause_class"]) == {"user_application"}


def test_other_kernel_and_slurm_lines() -> None:
    lines = _lines("other_kernel_and_slurm_lines.txt")
    out = classify_messages(pl.Series(lines))
    got = dict(zip(lines, out["kind"].to_list(), strict=True))
    by_text = lambda fragment: next(kind for line, kind in got.items() if fragment in line)  # noqa: E731
    assert by_text("Link INIT") == "mlx5_port_state"
    assert by_text("Link ACTIVE") == "ib_link_up"
    assert by_text("fallen off the bus and is not responding") == "gpu_fallen_off_bus"
    assert by_text("probe routine failed") == "gpu_init_failure"
    assert by_text("loading NVIDIA UNIX") == "driver_loaded"
    assert by_text("_kgspIsHeartbeatTimedOut") == "gsp_timeout"
    assert by_text("Memory Subsystem Error") == "gpu_memory_error"
    assert by_text("timeout error waiting for startToken") == "gpu_timeout"
    assert by_text("Machine check events logged") == "mce"
    assert by_text("4 CE error") == "edac_ce"
    assert by_text("oom-kill event(s)") == "slurmstepd_oom"
    assert by_text("oom_kill event in StepId") == "slurmstepd_oom"
    assert by_text("task 4: Out Of Memory") == "slurm_task_oom"
    assert by_text("task 289: Bus error") == "slurm_task_failed"
    assert by_text("STEP 3495064.0 ON orion-01-01 CANCELLED") == "slurm_step_cancelled"
    # Context lines (fs remounts, workqueue hints, srun bookkeeping) are not events.
    assert by_text("EXT4-fs") is None
    assert by_text("hogged CPU") is None
    assert by_text("srun: Terminating job step") is None
    edac = out.filter(pl.col("kind") == "edac_ce").row(0, named=True)
    assert (edac["component"], edac["cause_class"]) == ("host_memory", "hardware")


def test_fabric_manager_peermem_and_pstore_samples() -> None:
    fm = classify_messages(pl.Series(_lines("raw_sources/gpud_fabricmanager.log")))
    events = fm.filter(pl.col("kind").is_not_null())
    assert events.select("kind", "code", "device_pci", "port", "component").rows() == [
        ("sxid", 12028, "0000:86:00.0", "61", "nvswitch"),
    ]
    peermem = classify_messages(pl.Series(_lines("raw_sources/gpud_kmsg.2.peermem.log")))
    assert peermem["kind"].to_list() == ["gpudirect_rdma_error"] * 7 + [None]
    pstore = classify_messages(pl.Series(_lines("raw_sources/gpud_pstore_dmesg-erst.txt")))
    assert pstore.filter(pl.col("kind").is_not_null())["kind"].to_list() == ["sysrq_crash", "kernel_oops", "kernel_oops"]


def test_mlx5_port_down_is_network_with_nic_address_not_gpu() -> None:
    row = _one("Feb 14 05:03:41 gpu-1 kernel: mlx5_core 0000:AB:00.0 mlx5_5: Port: 1 Link DOWN")
    assert (row["kind"], row["component"], row["cause_class"], row["action"]) == ("ib_link_down", "network", "hardware", "CHECK_LINK")
    assert (row["device_pci"], row["gpu_pci"], row["port"]) == ("0000:ab:00.0", None, "1")


def test_noise_line_is_null() -> None:
    row = _one(NOISE)
    assert all(value is None for value in row.values())
    # A literal alone is not enough: the regex must match too.
    assert _one("slurmd[123]: launch task StepId=1.0 request from UID:1000")["kind"] is None


def test_null_and_empty_input() -> None:
    out = classify_messages(pl.Series([None, ""], dtype=pl.String))
    assert out.height == 2 and out["kind"].null_count() == 2
    assert classify_messages(pl.Series([], dtype=pl.String)).schema == pl.Schema(CLASSIFIED_SCHEMA)


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [("0000:9B:00", "0000:9b:00.0"), ("00000000:86:00.0", "0000:86:00.0"), ("3b:00.0", "0000:3b:00.0"), ("0009:01:00", "0009:01:00.0")],
)
def test_normalize_pci(raw: str, normalized: str) -> None:
    assert pl.select(normalize_pci(pl.lit(raw))).item() == normalized


#: Examples of rows whose lines belong to a multi-line record (a ``(?P<record>...)`` group: GHES
#: ``{N}[Hardware Error]:`` lines take their record's severity): the one exception to independence,
#: tested in test_a_record_line_takes_its_records_severity.
_RECORD_ROWS = load_log_patterns().filter(pl.col("regex").str.contains("(?P<record>", literal=True))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(load_log_patterns().join(_RECORD_ROWS, on="pattern_id", how="anti")["example"].to_list()
                                + [NOISE, "", "Xid", "EDAC MC0"]), min_size=1, max_size=40))
def test_each_row_is_classified_independently_of_its_neighbours(lines: list[str]) -> None:
    together = classify_messages(pl.Series(lines, dtype=pl.String))
    alone = pl.concat([classify_messages(pl.Series([line], dtype=pl.String)) for line in set(lines)])
    expected = dict(zip(set(lines), alone.rows(), strict=True))
    assert together.rows() == [expected[line] for line in lines]


def test_a_record_line_takes_its_records_severity() -> None:
    assert set(_RECORD_ROWS["pattern_id"]) == {"ghes_record_severity", "ghes_memory_error", "ghes_pcie_error",
                                               "ghes_pcie_device", "ghes_processor_error", "ghes_other_section",
                                               # BERT's unnumbered records (tests/test_bmc_bert_fm_memory_lines.py)
                                               "bert_record_severity", "bert_memory_error", "bert_pcie_error",
                                               "bert_pcie_device", "bert_processor_error", "bert_other_section"}
    fatal, memory = "{1}[Hardware Error]: event severity: fatal", "{1}[Hardware Error]:   section_type: memory error"
    corrected = "{2}[Hardware Error]: event severity: corrected"
    out = classify_messages(pl.Series([memory, fatal, NOISE, memory, corrected, memory.replace("{1}", "{2}"), memory]))
    # before its record's severity line: unknown (capped); then the nearest earlier line of the same record
    assert out["severity"].to_list() == ["medium", "info", None, "critical", "info", "low", "critical"]
    assert out["kind"].to_list() == ["ghes_memory_error", "ghes_record", None, "ghes_memory_error", "ghes_record",
                                     "ghes_memory_error", "ghes_memory_error"]


def test_throughput_on_a_realistic_mix() -> None:
    examples = load_log_patterns()["example"].to_list()
    noise = [f"Jan 15 03:04:05 gpu{i % 100:03d} sshd[{i}]: Accepted publickey for slurm port {i}" for i in range(49)]
    base = noise * 2 + examples[:2]  # 2 % events
    messages = pl.Series(base * 2000)  # 200,000 lines
    start = time.perf_counter()
    out = classify_messages(messages)
    elapsed = time.perf_counter() - start
    assert out.height == messages.len()
    assert out["kind"].is_not_null().sum() == 4000
    # Generous floor for a loaded 2-core CI box; the benchmark measures the real rate.
    assert messages.len() / elapsed > 100_000


def test_a_code_too_large_for_its_column_is_no_code_not_a_failed_batch() -> None:
    # A corrupt line's 11-digit Xid used to fail the strict cast to Int32, and with it the
    # classification of the whole batch of lines.
    out = classify_messages(pl.Series([
        "NVRM: Xid (PCI:0000:10:1c): 99999999999, pid=1896, Row Remapper: New row marked for remapping, "
        "reset gpu to activate.",
        "NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    ]))
    assert out["pattern_id"].to_list() == ["xid_row_remap", "xid"]
    assert out["code"].to_list() == [None, 79]


@pytest.mark.parametrize(("line", "kind", "severity", "component", "device_pci"), [
    # node-local disks (component local_disk, class host: one node's fault, not a file server's): the
    # block layer's error is the evidence, what follows it is shown only
    ("blk_update_request: I/O error, dev sda, sector 2048 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0",
     "disk_io_error", "high", "local_disk", None),
    ("critical medium error, dev nvme1n1, sector 77 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 2",
     "disk_io_error", "high", "local_disk", None),
    ("Buffer I/O error on dev sdb1, logical block 12, lost async page write", "disk_io_error", "medium", "local_disk", None),
    ("EXT4-fs error (device md0): ext4_journal_check_start:83: comm kworker: Detected aborted journal",
     "local_fs_error", "medium", "local_disk", None),
    # Ethernet drivers other than mlx5 (Intel, Broadcom), with and without an address
    ("bnxt_en 0000:41:00.0 eno1np0: NIC Link is Down", "nic_link_down", "high", "network", "0000:41:00.0"),
    ("e1000e: eth0 NIC Link is Down", "nic_link_down", "high", "network", None),
    ("igb 0000:01:00.0 eno1: igb: eno1 NIC Link is Up 1000 Mbps Full Duplex, Flow Control: RX",
     "nic_link_up", "info", "network", "0000:01:00.0"),
    ("NVRM: RmInitAdapter failed! (0x26:0x65:1519)", "gpu_init_failure", "high", "pcie_bus", None),
])
def test_node_local_disk_ethernet_and_gpu_init_lines(line: str, kind: str, severity: str, component: str,
                                                     device_pci: str | None) -> None:
    row = _one(line)
    assert (row["kind"], row["severity"], row["component"], row["device_pci"]) == (kind, severity, component, device_pci)


@pytest.mark.parametrize("line", [
    "I/O error, dev sr0, sector 0 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0",   # a BMC's virtual CD drive
    "I/O error, dev loop3, sector 8 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 2",
    "Buffer I/O error on dev sr0, logical block 0, async page read",
    "EXT4-fs (md127p3): re-mounted 5b1c-77. Quota mode: none.",
    "XFS (sda1): Mounting V5 Filesystem",
    "nfs: server fs01 not responding, timed out" + " then OK",   # still the timeout, not a recovery
])
def test_lines_near_the_new_rules_that_are_not_node_faults(line: str) -> None:
    row = _one(line)
    if line.startswith("nfs:"):
        # a soft mount's timeout (its own kind since probe AP F2: its operations failed), not a recovery
        assert row["kind"] == "nfs_soft_timeout"
    else:
        assert row["kind"] is None


@pytest.mark.parametrize(("line", "kind", "severity", "component"), [
    # the OOM kill inside a job's memory cgroup (how Slurm jobs die of memory): the user's
    ("kernel: Memory cgroup out of memory: Killed process 4242 (python3) total-vm:123456kB, anon-rss:1234kB",
     "oom_kill", "medium", "host_memory"),
    ("kernel: pcieport 0000:00:01.0: AER: Multiple Uncorrected (Fatal) error received: 0000:18:00.0",
     "pcie_aer", "critical", "pcie_bus"),
    ("kernel: mlx5_core 0000:ab:00.0: mlx5_fw_fatal_reporter_err_work:726:(pid 123): Driver is in error state. Unloading",
     "nic_firmware_error", "critical", "network"),
    # one SXid is three lines: the first counts, its continuation lines are detail; a Non-fatal
    # SXid is no failure (the line's own word sets the severity: at most medium)
    ("kernel: nvidia-nvswitch4: SXid (PCI:0000:89:00.0): 12028, Non-fatal, Link 34 egress non-posted PRIV error (First)",
     "sxid", "medium", "nvswitch"),
    ("kernel: nvidia-nvswitch4: SXid (PCI:0000:89:00.0): 12028, Fatal, Link 34 egress non-posted PRIV error (First)",
     "sxid", "high", "nvswitch"),
    ("kernel: nvidia-nvswitch4: SXid (PCI:0000:89:00.0): 12028, Severity 0 Engine instance 34 Sub-engine instance 00",
     "sxid_detail", "info", "nvswitch"),
    ("kernel: nvidia-nvswitch4: SXid (PCI:0000:89:00.0): 12028, Data {0x00000000, 0x00000000, 0x00000000}",
     "sxid_detail", "info", "nvswitch"),
    # NHC's verdict relayed by slurmd (HealthCheckProgram=nhc) is the health check's
    ("slurmd: error: health_check failed: rc:1 output:ERROR:  nhc:  Health check failed:  check_fs_mount:  /lustre not mounted",
     "health_check", "high", "storage"),
    ("slurmd: error: Node configuration differs from hardware: CPUs=128:128(hw) Boards=1:1(hw)",
     "slurmd_error", "medium", "slurm"),
])
def test_lines_found_by_probing_real_shapes(line: str, kind: str, severity: str, component: str) -> None:
    row = _one(line)
    assert (row["kind"], row["severity"], row["component"]) == (kind, severity, component)


def test_gpfs_daemon_log_errors_are_storage_events() -> None:
    # as the syslog ingest tags a gpfs-format line: "mmfs: <message>"
    assert (_one("mmfs: [E] Unable to mount file system gpfs01")["kind"],
            _one("mmfs: [I] Command: mount gpfs01")["kind"]) == ("gpfs_error", None)
