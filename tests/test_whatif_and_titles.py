"""The checkpoint what-if's "measured ETTR over the same runs" is over the SLO's runs or empty, never over
every small run; hardware incidents are titled and advised by their spread (rack, fabric), not by the
component of their worst event; loss shares name their denominator."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from report_html import section, visible_text

from gpusre.models.reliability.job_reliability import checkpoint_what_if_table
from gpusre.models.reliability.training_runs import CheckpointAssumption
from gpusre.models.warehouse import connect
from gpusre.reports.incident.terms import what_text
from gpusre.reports.kit.labels import incident_action, incident_component, incident_kind
from gpusre.reports.slo import render_slo_report

N, RF = 128, 6.5e-3  # 128 nodes at RSC-1's 6.50 failures per 1000 node-days: λ = 0.832 / 86,400 s
POLICY = CheckpointAssumption(3600, 300, 0)


def _runs(rows: list[tuple[float, int, int]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"productive_s": pl.Float64, "wallclock_s": pl.Int64, "queue_s": pl.Int64},
                        orient="row")


@pytest.mark.parametrize("incl", [True, False])
def test_what_if_without_slo_runs_measures_nothing(incl: bool) -> None:
    """No run the SLO counts: measured ETTR and queue share are NULL (not a ratio over other runs), and the
    expected ETTR is the closed form alone. Hand-computed: at Δ = 1 h, 1 − λ (300 + 1,800) = 0.9797778; the
    longest interval reaching 0.9 is 2 (0.1 / λ − 300) = 20,169.23 s, as without queue wait."""
    out = checkpoint_what_if_table(N, RF, POLICY, 0.9, includes_queue_wait=incl, measured=_runs([]))
    assert out["measured_ettr"].null_count() == out.height and out["queue_share"].null_count() == out.height
    row = out.filter(pl.col("interval_s") == 3600).row(0, named=True)
    assert row["expected_ettr"] == pytest.approx(0.9797778, abs=1e-7) == row["expected_ettr_excl_queue"]
    assert row["max_interval_for_target_s"] == pytest.approx(20169.23, abs=0.01)
    assert checkpoint_what_if_table(N, RF, POLICY, 0.9, includes_queue_wait=incl)["measured_ettr"][0] is None


def test_what_if_measures_exactly_the_runs_it_is_given() -> None:
    """Two SLO runs, queue wait left out: Σ productive / Σ (wall − queue) = (8,000 + 3,000) / (9,000 + 5,000)
    = 11,000 / 14,000 = 0.785714; queue share 2,000 / 16,000 = 0.125 — the pooled ratio, not a mean of runs."""
    out = checkpoint_what_if_table(N, RF, POLICY, 0.9, includes_queue_wait=False,
                                   measured=_runs([(8000, 10000, 1000), (3000, 6000, 1000)]))
    assert out["measured_ettr"][0] == pytest.approx(11000 / 14000) and out["queue_share"][0] == pytest.approx(0.125)


def test_the_warehouse_what_if_measures_the_slo_runs_only(rich_warehouse) -> None:
    """marts.checkpoint_what_if.measured_ettr is the SLO's ratio over finished runs of >= 256 GPUs
    (slo.ettr_min_run_gpus, the default) of marts.ettr_runs, or NULL when there is none."""
    con = connect(rich_warehouse[0], read_only=True)
    try:
        incl = con.execute("SELECT any_value(includes_queue_wait) FROM marts.checkpoint_what_if").fetchone()[0]
        if incl is None:
            pytest.skip("no checkpoint what-if in this warehouse")
        denominator = "wallclock_s" if incl else "wallclock_s - queue_s"
        want = con.execute(f"""SELECT sum(productive_s) / nullif(sum({denominator}), 0)
                               FROM marts.ettr_runs WHERE NOT ongoing AND n_gpus >= 256""").fetchone()[0]
        got = con.execute("SELECT DISTINCT measured_ettr FROM marts.checkpoint_what_if").fetchall()
    finally:
        con.close()
    assert len(got) == 1
    if want is None:  # the simulated cluster's largest runs have 128 GPUs: the what-if measures nothing
        assert got[0][0] is None
    else:
        assert got[0][0] == pytest.approx(min(want, 1.0))


def test_slo_report_says_when_no_slo_run_backs_the_what_if(rich_warehouse, tmp_path: Path) -> None:
    copy = tmp_path / "w.duckdb"
    shutil.copy(rich_warehouse[0], copy)
    con = connect(copy)
    try:
        con.execute("UPDATE marts.checkpoint_what_if SET measured_ettr = NULL, queue_share = NULL, "
                    "includes_queue_wait = FALSE")
        page = render_slo_report(con, tmp_path / "out").html.read_text(encoding="utf-8")
    finally:
        con.close()
    text = visible_text(section(page, "ettr"))
    if "Checkpoint what-if" not in text:
        pytest.skip("no checkpoint what-if in the window's report")
    assert "No run the ETTR SLO counts has finished, so there is no measured ETTR to set this against." in text
    assert "measured ETTR over the same runs" not in text


def test_slo_incident_share_names_its_denominator(rich_warehouse, tmp_path: Path) -> None:
    con = connect(rich_warehouse[0], read_only=True)
    try:
        page = render_slo_report(con, tmp_path / "out").html.read_text(encoding="utf-8")
    finally:
        con.close()
    text = visible_text(section(page, "incidents"))
    if "cost the most" in text:
        assert re.search(r"cost the most \([\d,.]+ GPU-h, [\d.]+ % of the [\d,.]+ GPU-h lost in hardware "
                         r"incidents; infrastructure failures no incident explains", text), text


@pytest.mark.parametrize(("component", "scope", "kind", "what", "action"), [
    ("host_power", "rack", "Rack power loss", "Rack power", "Check the rack's PDU / breaker and power feed"),
    ("thermal", "rack", "Rack cooling failure", "Rack cooling", "Check the rack's cooling"),
    ("network_switch", "fabric", "Fabric (upstream switch) outage", "Fabric (upstream switch)",
     "Check the spine / core switches"),
    ("network_switch", "leaf_switch", "Interconnect switch failure", "Interconnect switch", "Check the leaf switch"),
    ("host_power", "node", "Node power supply failure", "Node power supply", "Drain the node"),
])
def test_incident_titles_follow_the_scope(component: str, scope: str, kind: str, what: str, action: str) -> None:
    assert incident_kind(component, scope) == kind
    assert incident_component(component, scope) == what
    catalog_action = "CHECK_LINK" if component == "network_switch" else "DRAIN_NODE"
    assert incident_action(catalog_action, component, scope).startswith(action)


def test_retrospective_title_of_a_rack_pdu_trip() -> None:
    """Probe O: a PDU breaker trip on rack r5 (8 nodes), stored as component host_power, scope rack."""
    row = {"component": "host_power", "scope": "rack", "nodes": [f"gpu{i:03d}" for i in range(33, 41)],
           "leaf_switch": None, "root_cause": "PDU breaker r5"}
    assert what_text(SimpleNamespace(kind="hw", row=row)) == "Rack power loss on gpu[033-040] (PDU breaker r5)"
    fabric = {"component": "network_switch", "scope": "fabric", "nodes": [f"gpu{i:03d}" for i in range(1, 17)],
              "leaf_switch": None, "root_cause": "ib_link_down"}
    assert (what_text(SimpleNamespace(kind="hw", row=fabric))
            == "Fabric (upstream switch) outage on gpu[001-016] (ib_link_down)")
