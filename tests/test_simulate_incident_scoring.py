"""The incident scoring harness (simulate/incident_scoring.py) on a warehouse whose marts are the
simulator's truth itself: every figure must then agree with the truth exactly, and a product that splits
every alert into its own incident must score below it. Checks the scorer, not the analytics."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.simulate import SimulationConfig, simulate_cluster
from gpusre.simulate.incident_scoring import score_scenario, truth_incidents, truth_job_kills

CONFIG = SimulationConfig(nodes=24, days=21, seed=9, syslog_layout="central", node_failures_per_1000_node_days=80.0,
                          leaf_switch_failures_per_1000_switch_days=60.0, leaf_second_wave_share=0.5,
                          fault_alert_flap_share=0.5, nhc_repeat_until_repair=True)
#: A product component of each truth class (catalog/component_classes.csv).
COMPONENT_OF_CLASS = {"gpu": "gpu_memory", "nvlink": "nvswitch", "network": "nic", "storage": "storage", "host": "os",
                      "power": "host_power"}


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scoring") / "landing"
    simulate_cluster(out, CONFIG)
    return out


def _perfect_warehouse(path: Path, truth_dir: Path, split_alerts: bool = False) -> None:
    """Marts as a product that got everything right would write them (``split_alerts``: one incident per alert)."""
    incidents = truth_incidents(truth_dir)
    summary = json.loads((truth_dir / "summary.json").read_text())
    exposure = summary["in_service_node_hours"]
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA marts; CREATE SCHEMA core; SET TimeZone = 'UTC'")
    hw = incidents.select("incident_id", pl.col("component_class").replace_strict(COMPONENT_OF_CLASS).alias("component"),
                          "component_class", pl.int_range(pl.len()).cast(pl.Int64).alias("first_event_id"))
    events = hw.select(event_id="first_event_id", kind=pl.lit("xid"))
    by_class = incidents.group_by("component_class").agg(pl.len().alias("failures"))
    mtbf = pl.concat([
        pl.DataFrame({"scope": ["cluster"], "component": ["all"], "failures": [incidents.height]}),
        by_class.select(scope=pl.lit("component_class"), component="component_class", failures=pl.col("failures")),
    ], how="vertical_relaxed").with_columns(exposure_hours=pl.lit(exposure),
                                             mtbf_hours=exposure / pl.col("failures").cast(pl.Float64),
                                             period_type=pl.lit("all")).with_columns(
        ci_low=pl.col("mtbf_hours") * 0.6, ci_high=pl.col("mtbf_hours") * 1.8)
    last = pl.lit(summary["last_dump_utc"]).str.to_datetime(time_zone="UTC")
    repairs = (incidents.filter(pl.col("end_ts") <= last).group_by("component_class")
               .agg(mttr_hours_p50=pl.col("repair_hours").median()))
    alerts = pl.read_csv(truth_dir / "alerts.csv", infer_schema=False).with_row_index("alert_id")
    members = alerts.select("alert_id", incident_id=pl.col("alert_id").cast(pl.String) if split_alerts
                            else pl.col("episode_id"))
    kills = truth_job_kills(truth_dir, incidents).with_columns(
        attribution=pl.lit("infrastructure"), component=pl.col("true_class").replace_strict(COMPONENT_OF_CLASS))
    for name, frame in {"marts.hw_incidents": hw, "core.node_events": events, "marts.mtbf": mtbf,
                        "marts.repair_times": repairs, "marts.alert_incident_members": members,
                        "marts.job_failure_attribution": kills.select("job_id", "end_ts", "attribution", "component",
                                                                      component_class="true_class"),
                        }.items():
        con.register("_frame", frame.to_arrow())
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM _frame")
        con.unregister("_frame")
    con.register("_alerts", alerts.to_arrow())
    con.execute("CREATE TABLE core.alerts AS SELECT alert_id, fingerprint, CAST(starts_at AS TIMESTAMPTZ) AS starts_at "
                "FROM _alerts")
    con.close()


def test_a_perfect_product_scores_perfectly(landing: Path, tmp_path: Path) -> None:
    truth_dir = landing / "truth"
    _perfect_warehouse(tmp_path / "w.duckdb", truth_dir)
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    score = score_scenario(con, truth_dir)
    con.close()
    with (truth_dir / "incidents.csv").open() as fh:
        n_true = sum(1 for _ in csv.DictReader(fh))
    assert score.true_faults == score.hw_incidents == n_true >= 20
    assert score.hw_incidents_by_class == score.true_faults_by_class
    assert score.other_health_check_incidents == 0
    assert score.mtbf_ratio == pytest.approx(1.0) and score.exposure_ratio == pytest.approx(1.0)
    assert score.downtime_ratio == pytest.approx(1.0)
    assert all(r == pytest.approx(1.0) for r in score.mtbf_class_ratios().values())
    assert score.realized_in_interval and all(score.realized_in_interval.values())
    assert score.mttr_ratios() and all(r == pytest.approx(1.0) for r in score.mttr_ratios().values())
    assert score.alerts_matched == score.alerts_truth > 0
    assert score.alert_ari == pytest.approx(1.0) and score.alerts_per_incident_ratio == pytest.approx(1.0)
    assert score.attribution_support > 0
    assert score.attribution_precision == score.attribution_recall == score.class_match_share == 1.0


def test_split_alert_incidents_score_below_truth(landing: Path, tmp_path: Path) -> None:
    truth_dir = landing / "truth"
    _perfect_warehouse(tmp_path / "w.duckdb", truth_dir, split_alerts=True)
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    score = score_scenario(con, truth_dir)
    con.close()
    assert score.alert_ari < 0.9
    assert score.alerts_per_incident == 1.0 < score.true_alerts_per_incident
