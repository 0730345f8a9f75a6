"""slurmd's report of a failed HealthCheckProgram is a health-check firing whatever the relay wrote before it.

slurmd logs a failing NHC run as ``error("health_check failed: rc:%u output:%s")`` (Slurm
src/slurmd/slurmd/slurmd.c). The program field in front of it depends on the relay: ``slurmd[PID]:`` or
``slurmd:`` (syslog, journalctl short/short-iso), ``slurmd.service[PID]:`` (``journalctl -o with-unit``),
and ``slurmd[PID]: slurmd: error: …`` when journald captured slurmd's stderr (Slurm's log.c prefixes stderr
lines with the program name; seen in ``systemctl status slurmd`` output everywhere). The ``nhc_*`` rules of
``catalog/log_patterns.csv`` read all of them through one envelope, defined once as the fragment
``{SLURMD_HEALTH_CHECK}`` of ``catalog/regex_fragments.csv`` and expanded when the catalog loads; before, the
stderr and with-unit forms fell to ``slurmd_error`` (component slurm) or to no event at all.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing

from gpusre.models.failures.health_checks import check_name, health_check_quality
from gpusre.models.logs.event_catalog import classify_messages, load_log_patterns, load_regex_fragments
from gpusre.models.logs.templates import canonical_forms
from gpusre.models.sources.syslog.ingest import _events
from gpusre.models.sources.syslog.parse import SyslogInput, parse_syslog_batch

YEAR = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 12, 31, tzinfo=UTC))
NHC = "ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_6:1 is ACTIVE (LinkUp 400 Gb/sec)."
SLURMD = "error: health_check failed: rc:1 output:" + NHC


def _ingest(lines: list[str]) -> pl.DataFrame:
    """The lines of one node's file as the syslog ingest parses and classifies them."""
    batch = parse_syslog_batch([SyslogInput(("\n".join(lines) + "\n").encode(), "syslog/2026-12-01/gpu01.log",
                                            "gpu01", YEAR)])
    assert batch.rejects.is_empty(), batch.rejects
    parsed = batch.lines
    events = _events(parsed, *canonical_forms(parsed["message"]))
    return pl.concat([parsed.select("ts", pl.col("host").alias("node"), "program", "message"), events],
                     how="horizontal")


def test_every_nhc_rule_reads_slurmds_report_through_one_envelope() -> None:
    # The envelope is defined once (catalog/regex_fragments.csv) and every health-check rule of the CSV writes
    # it as the placeholder right after its anchor
    raw = list(csv.DictReader(io.StringIO(
        resources.files("gpusre.models.catalog").joinpath("log_patterns.csv").read_text(encoding="utf-8"))))
    nhc = [r for r in raw if r["kind"] == "health_check"]
    assert len(nhc) == 21 and all(r["regex"].startswith("^{SLURMD_HEALTH_CHECK}{NHC_FAILED}") for r in nhc)
    assert not any("{SLURMD_HEALTH_CHECK}" in r["regex"] for r in raw if r["kind"] != "health_check")
    # loaded, the placeholder is expanded to the fragment's text, and every rule's example still matches its rule
    envelope = load_regex_fragments()["SLURMD_HEALTH_CHECK"]
    assert envelope.startswith("(?:") and "health_check failed: rc:" in envelope
    rules = load_log_patterns().filter(pl.col("kind") == "health_check")
    nhc_failed = load_regex_fragments()["NHC_FAILED"]
    assert rules["regex"].to_list() == ["^" + envelope + nhc_failed + r["regex"][len("^{SLURMD_HEALTH_CHECK}{NHC_FAILED}"):]
                                        for r in nhc]
    assert all(re.search(rx, ex) for rx, ex in rules.select("regex", "example").iter_rows())
    assert classify_messages(rules["example"])["pattern_id"].to_list() == rules["pattern_id"].to_list()


@pytest.mark.parametrize("line", [
    f"Dec  1 12:00:01 gpu01 slurmd[2211]: {SLURMD}",                      # syslog, with the PID
    f"Dec  1 12:00:01 gpu01 slurmd: {SLURMD}",                            # syslog, without it
    f"2026-12-01T12:00:01+0000 gpu01 slurmd[2211]: {SLURMD}",             # journalctl -o short-iso
    f"Tue 2026-12-01 12:00:01 UTC gpu01 slurmd.service[2211]: {SLURMD}",  # journalctl -o with-unit
    f"Dec  1 12:00:01 gpu01 slurmd[2211]: slurmd: {SLURMD}",              # slurmd's stderr in the journal
    f"<27>1 2026-12-01T12:00:01Z gpu01 slurmd 2211 - - {SLURMD}",         # RFC 5424
    f"Dec  1 12:00:01 gpu01 slurmd: [2026-12-01T12:00:01.123] {SLURMD}",  # slurmd.log tailed by a relay
    # NHC output without its ERROR:/nhc: prefixes
    "Dec  1 12:00:01 gpu01 slurmd[2211]: error: health_check failed: rc:1 output:Health check failed:  check_hw_ib:  "
    "No IB port mlx5_6:1 is ACTIVE",
])
def test_each_relay_form_is_the_nhc_check(line: str) -> None:
    row = _ingest([line]).row(0, named=True)
    assert (row["node"], row["kind"], row["component"], row["pattern_id"]) == ("gpu01", "health_check", "network",
                                                                                 "nhc_network")
    assert row["ts"] == datetime(2026, 12, 1, 12, 0, 1, tzinfo=UTC)
    assert pl.select(check_name(pl.lit(row["message"]))).item() == "check_hw_ib"


def test_a_whole_line_with_the_pid_in_its_text_classifies_too() -> None:
    # classify_messages on text that still carries the program field (no header split off)
    out = classify_messages(pl.Series([f"slurmd[2211]: {SLURMD}", f"slurmd[2211]: slurmd: {SLURMD}",
                                       "slurmd[2211]: slurmd: error: Node configuration differs from hardware: CPUs=16"]))
    assert out.select("kind", "pattern_id").rows() == [("health_check", "nhc_network"), ("health_check", "nhc_network"),
                                                        ("slurmd_error", "slurmd_error")]


def test_other_slurmd_errors_stay_slurmd_errors() -> None:
    rows = _ingest(["Dec  1 12:00:01 gpu01 slurmd[2211]: slurmd: error: Node configuration differs from hardware: CPUs=16",
                    "Dec  1 12:00:02 gpu01 slurmd[2211]: error: health_check killed by signal 9 output:"])
    # the envelope is slurmd's health_check *failed* report only: other errors (a killed check included) stay
    # slurmd's own errors
    assert rows.select("kind", "component").rows() == [("slurmd_error", "slurm")] * 2


def test_nhcs_own_line_and_slurmds_relays_are_one_firing() -> None:
    # NHC's own line, then slurmd's report of the same run and of the next two runs, each in another relay form
    lines = [f"Dec  1 12:00:00 gpu01 nhc[41001]: {NHC}",
             f"Dec  1 12:00:01 gpu01 slurmd[2211]: {SLURMD}",
             f"Dec  1 12:05:01 gpu01 slurmd[2211]: slurmd: {SLURMD}",
             f"Tue 2026-12-01 12:10:01 UTC gpu01 slurmd.service[2211]: {SLURMD}"]
    events = _ingest(lines)
    assert events["kind"].to_list() == ["health_check"] * 4
    quality = health_check_quality(events, None)
    # 4 lines of check_hw_ib on gpu01, 5 min apart at most (< 30 min episode gap): 1 firing of 4 events
    assert quality.select("check_name", "component", "firings", "events", "nodes").rows() == [
        ("check_hw_ib", "network", 1, 4, 1)]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("slurmd_relay")
    sacct = ("JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|NNodes|"
             "AllocTRES|NodeList\n101|101|train|alice|llm|gpu|COMPLETED|0:0|2026-12-01T00:10:00|2026-12-01T00:10:00|"
             "2026-12-01T00:10:00|2026-12-01T23:50:00|23:40:00|1|cpu=96,gres/gpu=8,node=1|gpu02\n")
    log = [f"Dec  1 12:00:00 gpu01 nhc[41001]: {NHC}",
           f"Dec  1 12:00:01 gpu01 slurmd[2211]: {SLURMD}",
           f"Dec  1 12:05:01 gpu01 slurmd[2211]: slurmd: {SLURMD}",
           f"Tue 2026-12-01 12:10:01 UTC gpu01 slurmd.service[2211]: {SLURMD}"]
    return run_hand_landing(root, {
        "cluster.yaml": 'cluster: relay\nnodes: "gpu[01-02]"\ngpus_per_node: 8\ntimezone: UTC\n',
        "sacct/sacct_2026-12-01.psv": sacct,
        "syslog/2026-12-01/gpu01.log": "\n".join(log) + "\n",
    })


def test_the_pipeline_counts_one_firing_of_three_runs(warehouse: Path) -> None:
    kinds = query_rows(warehouse, "SELECT kind, count(*) FROM core.node_events WHERE node = 'gpu01' GROUP BY kind")
    assert kinds == [("health_check", 4)]
    # NHC's line at 12:00:00 and slurmd's report of that run at 12:00:01 are one run
    # (core/node_events_once.sql); slurmd alone reports the runs of 12:05 and 12:10
    assert query_rows(warehouse, "SELECT check_name, component, firings, events, nodes "
                                 "FROM marts.health_check_quality") == [("check_hw_ib", "network", 1, 3, 1)]
    # one network incident on gpu01 whose evidence is that one firing
    assert query_rows(warehouse, "SELECT nodes, n_health_check_episodes FROM marts.hw_incidents") == [(["gpu01"], 1)]
