"""Issue 12 "Done when", end to end on the simulator's scenario matrix (simulate/scenarios.py).

Each scenario is simulated and run through the whole pipeline once (a module-scoped fixture per
scenario); every test then checks one Done-when figure of that run against the simulator's truth with
``incident_scoring.score_scenario``. The thresholds are the issue's, on every scenario: heuristics
tuned on one kind of cluster must hold on the others. ``benchmarks/eval_incident_scenarios.py`` prints
the same figures as a table.
"""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pytest

from gpusre.simulate import simulate_cluster
from gpusre.simulate.incident_scoring import MIN_FAULTS_FOR_INTERVAL, IncidentScore, score_scenario
from gpusre.simulate.scenarios import scenario_config
from gpusre.pipelines.runner import run_pipeline

#: Every scenario but ``default`` (today's simulator, whose NHC lines stop after an hour: not a real NHC).
SCENARIOS = ("lbnl_until_repair", "bare_nhc_120s", "site_checks_600s", "flapping_alerts", "quiet", "noisy",
             "fabric_heavy", "silent_power")
SEED = 11


@pytest.fixture(scope="module", params=SCENARIOS)
def score(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> IncidentScore:
    root = tmp_path_factory.mktemp(request.param)
    landing = root / "landing"
    simulate_cluster(landing, scenario_config(request.param, SEED))
    run_pipeline(landing, root / "w.duckdb", root / "reports")
    con = duckdb.connect(str(root / "w.duckdb"), read_only=True)
    try:
        return score_scenario(con, Path(landing) / "truth")
    finally:
        con.close()


def _within(ratio: float, low: float, high: float) -> bool:
    return not math.isnan(ratio) and low <= ratio <= high


def test_hardware_incidents_match_true_faults(score: IncidentScore) -> None:
    assert score.true_faults >= 15, "the scenario must have enough faults to score"
    assert _within(score.incident_ratio, 0.9, 1.1), (
        f"{score.hw_incidents} hardware incidents for {score.true_faults} faults; by class (product / truth) "
        f"{score.hw_incidents_by_class} / {score.true_faults_by_class}")


def test_each_class_found_as_often_as_it_failed(score: IncidentScore) -> None:
    """Per component class with a few faults, the incidents found: a class the product cannot see (power
    faults that log nothing, seen only by Slurm's node states) fails here, not in the total's tolerance."""
    found, true = score.hw_incidents_by_class, score.true_faults_by_class
    off = {c: (found.get(c, 0), n) for c, n in true.items() if n >= 3 and not _within(found.get(c, 0) / n, 0.75, 1.25)}
    assert not off, f"incidents / true faults outside 0.75-1.25 by class (product, truth): {off}"


def test_no_other_incident_of_health_checks_alone(score: IncidentScore) -> None:
    assert score.other_health_check_incidents == 0


def test_cluster_mtbf_near_realized(score: IncidentScore) -> None:
    assert _within(score.mtbf_ratio, 0.65, 1.35), (
        f"MTBF {score.mtbf_hours} h, realized {score.realized_mtbf_hours:.0f} h")


def test_class_mtbf_near_realized_and_inside_interval(score: IncidentScore) -> None:
    classes = [c for c, n in score.true_faults_by_class.items() if n >= MIN_FAULTS_FOR_INTERVAL]
    ratios = score.mtbf_class_ratios()
    off = {c: round(ratios[c], 2) for c in classes if not _within(ratios[c], 0.65, 1.35)}
    assert not off, f"class MTBF / realized outside 0.65-1.35: {off}"
    outside = [c for c, ok in score.realized_in_interval.items() if not ok]
    assert not outside, f"realized MTBF outside the Garwood interval for {outside}"


def test_mttr_p50_per_class_near_truth(score: IncidentScore) -> None:
    ratios = score.mttr_ratios()
    assert ratios, "no class has a repaired fault"
    off = {c: round(r, 2) for c, r in ratios.items() if not _within(r, 0.75, 1.25)}
    assert not off, (f"MTTR p50 / truth outside 0.75-1.25: {off} (product {score.mttr_p50_by_class}, "
                     f"truth {score.true_mttr_p50_by_class})")


def test_exposure_and_downtime_match_node_states(score: IncidentScore) -> None:
    assert _within(score.exposure_ratio, 0.99, 1.01), (
        f"exposure {score.exposure_hours} vs {score.true_exposure_hours:.0f} node-hours")
    # The node-state down hours exposure takes out (simulate/incident_scoring.py product_downtime_hours):
    # 0.96-1.00 on every scenario (2026-12-06); the 0.5-1.5 allowed for the span convention.
    assert _within(score.downtime_ratio, 0.9, 1.1), (
        f"downtime removed {score.downtime_removed_hours} vs {score.true_downtime_hours:.0f} node-hours")


def test_alert_grouping_matches_truth(score: IncidentScore) -> None:
    assert score.alerts_matched == score.alerts_truth, "every truth alert must be in an alert incident"
    assert score.alert_ari >= 0.90, f"adjusted Rand index {score.alert_ari:.3f}"
    assert _within(score.alerts_per_incident_ratio, 0.85, 1.15), (
        f"{score.alerts_per_incident:.2f} alerts per incident vs {score.true_alerts_per_incident:.2f}")


def test_attribution_precision_recall_and_component_class(score: IncidentScore) -> None:
    assert score.attribution_support >= 10, "the scenario must kill enough job instances to score attribution"
    assert score.attribution_precision >= 0.95, f"precision {score.attribution_precision:.3f}"
    assert score.attribution_recall >= 0.95, f"recall {score.attribution_recall:.3f}"
    assert score.class_match_share >= 0.90, (
        f"component class matches the fault's for {score.class_match_share:.2f} "
        f"of {score.class_match_support} instances")


def test_suspect_nodes_are_the_nodes_that_failed_again(score: IncidentScore) -> None:
    # Every node whose own true faults stand out (robust z >= 3 over the fleet, the product's rule on the
    # truth's counts; none in a scenario whose failures are spread evenly) is flagged, and at most two
    # flagged nodes neither failed 3 times in 28 days nor are lemons (2026-12-06: precision 0.50-1.00 and
    # recall 1.00 where there was anything to find; before a failed job counted on the node its evidence is
    # on only, the benchmark year flagged 194 nodes, 9 of them deserving).
    if score.suspect_support:
        assert score.suspect_recall == 1.0, f"flagged {score.suspect_recall:.2f} of {score.suspect_support}"
    undeserved = round(score.suspects_flagged * (1 - score.suspect_precision)) if score.suspects_flagged else 0
    assert undeserved <= 2, f"{undeserved} of {score.suspects_flagged} suspect nodes did not fail again"

