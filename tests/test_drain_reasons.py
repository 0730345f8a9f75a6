"""Drain/down reason taxonomy: the packaged rule file loads and classifies typical reasons; bad rule
files fail with file, line and column; the top-reasons mart ranks by node-hours."""

from __future__ import annotations

import doctest
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import pytest

from gpusre.models.failures import drain_reasons as drain_reasons
from gpusre.models.failures.drain_reasons import (
    AVAILABILITY_CLASSES,
    DRAIN_REASONS_MART_SCHEMA,
    CatalogError,
    classify_reasons,
    load_drain_reason_rules,
    top_drain_reasons,
)
from gpusre.models.reliability.node_availability import down_segments

UTC = timezone.utc
HEADER = "rule_id,regex,unless,reason_class,component,availability_class,example,note\n"
#: Rule files written before the ``unless`` column still load.
LEGACY_HEADER = "rule_id,regex,reason_class,component,availability_class,example,note\n"


def test_doctests() -> None:
    assert doctest.testmod(drain_reasons).failed == 0


@pytest.mark.parametrize(("reason", "reason_class", "component", "availability"), [
    ("Not responding", "not_responding", "os", "unknown"),
    ("Kill task failed", "kill_task_failed", "slurm", "software"),
    ("NHC: check_gpu_xid: Xid 79 on GPU 3", "gpu_xid", "pcie_bus", "hardware"),  # component: xid.csv
    ("gpu ecc errors", "gpu_ecc", "gpu_memory", "hardware"),
    ("IB link down mlx5_0", "network", "network", "hardware"),
    ("reboot requested", "reboot", "os", "maintenance"),
    ("Reboot ASAP", "reboot", "os", "maintenance"),
    ("planned maintenance: BIOS upgrade", "planned_maintenance", "other", "maintenance"),
    ("Prolog error", "prolog_epilog_error", "slurm", "software"),
    ("Epilog error", "prolog_epilog_error", "slurm", "software"),
    ("NHC: check_fs_mount: /lustre not mounted", "filesystem", "storage", "software"),
    ("NHC: check_ps_service: sshd not running", "health_check", "other", "health_check"),
    ("NVLink errors on GPU 2", "nvlink", "nvlink", "hardware"),
    ("gres/gpu count reported lower than configured (7 < 8)", "gpu", "gpu", "hardware"),
    ("GPU 3 not responding", "gpu", "gpu", "hardware"),
    ("Node unexpectedly rebooted boot_time=1757000000", "unexpected_reboot", "os", "unknown"),
    ("Low RealMemory", "slurm_config", "slurm", "software"),
    ("waiting for bob", "unknown", "other", "unknown"),
    ("", "no_reason", "other", "unknown"),
    (None, "no_reason", "other", "unknown"),
])
def test_typical_reasons(reason: str | None, reason_class: str, component: str, availability: str) -> None:
    out = classify_reasons(pl.Series([reason], dtype=pl.String)).row(0, named=True)
    assert (out["reason_class"], out["reason_component"], out["availability_class"]) == (reason_class, component, availability)


def test_classification_is_case_insensitive_and_keeps_row_order() -> None:
    reasons = pl.Series(["KILL TASK FAILED", "x", "ib LINK down mlx5_1", "x"])
    assert classify_reasons(reasons)["reason_class"].to_list() == ["kill_task_failed", "unknown", "network", "unknown"]


def test_maint_or_reboot_state_makes_an_unexplained_reason_maintenance() -> None:
    out = classify_reasons(pl.Series(["waiting for bob", "waiting for bob", "gpu ecc errors", None]),
                           pl.Series(["MAINT", "DRAIN", "REBOOT", "REBOOT"]))
    assert out["availability_class"].to_list() == ["maintenance", "unknown", "hardware", "maintenance"]
    assert out["reason_class"].to_list() == ["unknown", "unknown", "gpu_ecc", "no_reason"]


def test_packaged_rules_are_valid() -> None:
    rules = load_drain_reason_rules()
    assert rules.height >= 15 and rules["rule_id"].is_unique().all()
    assert set(rules["availability_class"]) <= set(AVAILABILITY_CLASSES)
    # Every rule classifies its own example (no rule shadowed by an earlier one).
    assert classify_reasons(rules["example"], rules=rules)["rule_id"].to_list() == rules["rule_id"].to_list()


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "rules.csv"
    path.write_text(HEADER + body)
    return path


@pytest.mark.parametrize(("body", "message"), [
    ("bad,\\b(gpu,,gpu,gpu,hardware,gpu,x\n", r"rules\.csv: line 2: column 'regex': invalid regex"),
    ("look,gpu(?=s),,gpu,gpu,hardware,gpus,x\n", r"line 2: column 'regex': (invalid regex|regex not supported by Polars)"),
    ("a,\\bgpu\\b,,gpu,warp_drive,hardware,gpu,x\n", r"line 2: column 'component': 'warp_drive' is not one of"),
    ("a,\\bgpu\\b,,gpu,gpu,broken,gpu,x\n", r"line 2: column 'availability_class': 'broken'"),
    ("a,\\bgpu\\b,,GPU,gpu,hardware,gpu,x\n", r"line 2: column 'reason_class': 'GPU' is not snake_case"),
    ("a,\\bgpu\\b,,gpu,gpu,hardware,network down,x\n", r"line 2: column 'regex': does not match its example"),
    ("a,\\bgpu\\b,,gpu,gpu,hardware,gpu,x\na,\\bib\\b,,network,network,hardware,ib,x\n", r"line 3: column 'rule_id': duplicate"),
    ("a,\\bgpu\\b,,gpu,gpu,hardware,gpu,x\nb,\\bgpu ecc\\b,,gpu_ecc,gpu_memory,hardware,gpu ecc,x\n",
     r"line 3: column 'example': 'gpu ecc' is classified by the earlier rule 'a' \(line 2\)"),
    # an earlier rule shadows the next one when its unless does not pass over the next one's example
    ("a,\\bgpu\\b,\\becc\\b,gpu,gpu,hardware,gpu,x\nb,\\bgpu\\b,,gpu_any,gpu,hardware,gpu dead,x\n",
     r"line 3: column 'example': 'gpu dead' is classified by the earlier rule 'a' \(line 2\)"),
    ("a,\\bgpu\\b,\\b(ecc,gpu,gpu,hardware,gpu,x\n", r"line 2: column 'unless': invalid regex"),
    ("a,\\bgpu\\b,(?<!x)ecc,gpu,gpu,hardware,gpu,x\n", r"line 2: column 'unless': (invalid regex|regex not supported by Polars)"),
    ("a,\\bgpu\\b,\\bgpu\\b,gpu,gpu,hardware,gpu,x\n", r"line 2: column 'unless': matches the rule's own example 'gpu'"),
    ("a,\\bgpu\\b,,gpu,gpu,hardware,gpu\n", r"line 2: 7 fields, expected 8"),
    ("a,,,gpu,gpu,hardware,gpu,x\n", r"line 2: column 'regex': value is required"),
])
def test_bad_rule_files_name_file_line_and_column(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        load_drain_reason_rules(_write(tmp_path, body))


def test_bad_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rules.csv"
    path.write_text("id,regex\n")
    with pytest.raises(CatalogError, match="line 1: header"):
        load_drain_reason_rules(path)


def test_custom_rules_file_is_used(tmp_path: Path) -> None:
    rules = load_drain_reason_rules(_write(tmp_path, "site_psu,\\bpsu\\b,,psu,other,hardware,psu 2 dead,x\n"))
    assert classify_reasons(pl.Series(["PSU 1 dead", "Kill task failed"]), rules=rules)["reason_class"].to_list() == [
        "psu", "unknown"]


def test_legacy_rule_file_without_unless_loads(tmp_path: Path) -> None:
    path = tmp_path / "rules.csv"
    path.write_text(LEGACY_HEADER + "site_psu,\\bpsu\\b,psu,other,hardware,psu 2 dead,x\n")
    rules = load_drain_reason_rules(path)
    assert rules["unless"].to_list() == [""]
    assert classify_reasons(pl.Series(["PSU 1 dead"]), rules=rules)["reason_class"].to_list() == ["psu"]
    path.write_text(LEGACY_HEADER + "a,\\bgpu\\b,gpu,gpu,hardware,gpu\n")
    with pytest.raises(CatalogError, match=r"line 2: 6 fields, expected 7"):
        load_drain_reason_rules(path)


def test_unless_passes_a_rule_over_to_the_next(tmp_path: Path) -> None:
    rules = load_drain_reason_rules(_write(tmp_path, (
        "work,\\b(upgrade|patch)\\b,\\b(ecc|errors?)\\b,planned_maintenance,other,maintenance,driver upgrade,x\n"
        "ecc,\\becc\\b,,gpu_ecc,gpu_memory,hardware,ecc,x\n")))
    out = classify_reasons(pl.Series(["driver upgrade", "ECC errors, waiting for patch", "patch errors"]), rules=rules)
    assert out["rule_id"].to_list() == ["work", "ecc", None]


def test_top_drain_reasons_counts_overlapping_hours_once() -> None:
    t = lambda h: datetime(2026, 3, 1, h, tzinfo=UTC)  # noqa: E731
    states = pl.DataFrame({
        "node": ["n1", "n1", "n2", "n3"],
        "start_ts": [t(0), t(2), t(1), t(5)],
        "end_ts": [t(4), t(8), t(3), None],
        "reason": ["Xid 79", "Not responding", "Xid 48", "Not responding"],
        "reason_template_id": [1, 2, 1, 2],
        "reason_template": ["Xid <NUM>", "Not responding", "Xid <NUM>", "Not responding"],
        "reason_class": ["gpu_xid", "not_responding", "gpu_xid", "not_responding"],
        "reason_component": ["gpu", "os", "gpu", "os"],
        "availability_class": ["hardware", "unknown", "hardware", "unknown"],
    }, schema_overrides={"end_ts": pl.Datetime("us", "UTC")})
    as_of = t(10)
    mart = top_drain_reasons(states, down_segments(states, as_of))
    assert mart.schema == pl.Schema(DRAIN_REASONS_MART_SCHEMA)
    rows = mart.select("rank", "reason_class", "template_id", "events", "nodes", "node_hours_lost", "ongoing_events").rows()
    # not responding: n1 only 4-8 (0-4 belongs to the earlier Xid drain) = 4 h, n3 5-10 = 5 h -> 9 h.
    # Xid: n1 0-4 = 4 h, n2 1-3 = 2 h -> 6 h.
    assert rows == [(1, "not_responding", 2, 2, 2, 9.0, 1), (2, "gpu_xid", 1, 2, 2, 6.0, 0)]
    assert mart["share_node_hours"].sum() == pytest.approx(1.0)
    assert mart.row(1, named=True)["example"] in {"Xid 79", "Xid 48"}
    assert top_drain_reasons(states.clear(), down_segments(states.clear(), as_of)).height == 0
