"""One concept, one definition, in the event catalog (open item OI1, findings 2 and 3).

* The ranking of catalog actions (``ACTION_STRENGTH``, which Xid 154's recovery action is compared with) lives
  beside ``ACTIONS`` in ``event_catalog``; ``hw_incidents`` imports it (was defined there, next to an assert on
  another module's ``ACTIONS``).
* slurmd's relay of a failed health check, repeated in the 21 ``nhc_*`` rows of ``log_patterns.csv``, is the one
  fragment ``{SLURMD_HEALTH_CHECK}`` of ``catalog/regex_fragments.csv``, expanded when the catalog loads.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import polars as pl
import pytest

from gpusre.models.failures import hw_incidents
from gpusre.models.logs import event_catalog
from gpusre.models.logs.event_catalog import (ACTION_STRENGTH, ACTIONS, CatalogError, action_strength,
                                              classify_messages, load_log_patterns, load_regex_fragments)

CATALOG = resources.files("gpusre.models.catalog")
#: The envelope as it was written in each of the 21 rows before (copied from the old log_patterns.csv).
OLD_ENVELOPE = (r"^(?:(?:[^\s:]*slurmd[^\s:]*:\s+)*(?:\[[^\]]*\]\s+)?error: health_check failed: rc:\d+ "
                r"output:\s*)?")


#: NHC's failure line with the prefixes sites add, as each of the 21 nhc_* rows carried it before {NHC_FAILED}.
OLD_NHC_FAILED = r"(?:nhc(?:\[\d+\])?:\s+)?(?:NHC:?\s+)?(?:ERROR:?\s+)?(?:nhc:\s+)?Health check failed:"


def test_the_nhc_line_fragment_expands_to_the_text_the_rows_carried() -> None:
    assert load_regex_fragments()["NHC_FAILED"] == OLD_NHC_FAILED
    rules = load_log_patterns().filter(pl.col("kind") == "health_check")
    assert rules.height == 21 and rules["regex"].str.starts_with(OLD_ENVELOPE + OLD_NHC_FAILED).all()
    # the wrapper prefixes it names, each still read as the check's failure
    for line in ("nhc[4242]: Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE",
                 "NHC: ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE",
                 "Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE"):
        assert classify_messages(pl.Series([line]))["pattern_id"].to_list() == ["nhc_network"], line


def test_action_strength_is_defined_once_beside_actions() -> None:
    assert hw_incidents.ACTION_STRENGTH is event_catalog.ACTION_STRENGTH
    assert hw_incidents.action_strength is event_catalog.action_strength
    assert sorted(ACTION_STRENGTH) == sorted(ACTIONS)
    # NVML recovery actions: 0x3 Drain P2P = RESTART_APP < 0x1 GPU Reset = RESET_GPU < 0x2 Node Reboot = RESTART_BM
    ranks = pl.select(action_strength(pl.lit(pl.Series(["RESTART_APP", "RESET_GPU", "RESTART_BM", "NOPE", None],
                                                         dtype=pl.String)))).to_series().to_list()
    assert ranks == [4, 6, 10, -1, -1]


def test_the_envelope_fragment_expands_to_the_text_the_rows_carried() -> None:
    assert "^" + load_regex_fragments()["SLURMD_HEALTH_CHECK"] == OLD_ENVELOPE
    rules = load_log_patterns().filter(pl.col("kind") == "health_check")
    assert rules.height == 21 and rules["regex"].str.starts_with(OLD_ENVELOPE).all()
    assert not rules["regex"].str.contains(r"\{[A-Z_]+\}").any()


@pytest.mark.parametrize("line", [
    # the relay forms the fragment names, each with another check than the relay test's check_hw_ib
    "slurmd[2211]: error: health_check failed: rc:1 output:ERROR:  nhc:  Health check failed:  check_ipmi_psu:  "
    "PSU2 status is Failure detected",
    "slurmd.service[2211]: slurmd: error: health_check failed: rc:1 output:ERROR:  nhc:  Health check failed:  "
    "check_ipmi_psu:  PSU2 status is Failure detected",
    "[2026-12-01T12:00:01.123] error: health_check failed: rc:1 output:ERROR:  nhc:  Health check failed:  "
    "check_ipmi_psu:  PSU2 status is Failure detected",
    "nhc[4007]: ERROR:  nhc:  Health check failed:  check_ipmi_psu:  PSU2 status is Failure detected",  # NHC itself
])
def test_each_relay_form_reaches_the_rule(line: str) -> None:
    row = classify_messages(pl.Series([line])).row(0, named=True)
    assert (row["kind"], row["pattern_id"], row["component"]) == ("health_check", "nhc_power", "host_power")


def _copy(tmp_path: Path, old: str, new: str) -> Path:
    text = CATALOG.joinpath("log_patterns.csv").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "log_patterns.csv"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_an_unknown_fragment_is_an_error_naming_its_line(tmp_path: Path) -> None:
    # the first nhc row is line 2 of the file
    path = _copy(tmp_path, "^{SLURMD_HEALTH_CHECK}", "^{SLURMD_HEALTHCHECK}")
    with pytest.raises(CatalogError, match=r"line 2: column 'regex': unknown fragment \{SLURMD_HEALTHCHECK\}"):
        load_log_patterns(path)


def test_a_row_may_spell_the_envelope_out_and_loads_the_same(tmp_path: Path) -> None:
    # the placeholder is text substitution only: the row written out in full loads to the same regex
    path = _copy(tmp_path, "^{SLURMD_HEALTH_CHECK}", OLD_ENVELOPE)
    assert load_log_patterns(path)["regex"].to_list() == load_log_patterns()["regex"].to_list()
