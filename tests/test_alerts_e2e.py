"""Alerts end to end against the simulator's ground truth.

The simulator writes Alertmanager webhook payloads (``alerts/YYYY-MM-DD.jsonl``: each alert repeated in
every notification of its group, then resolved) for its node faults, leaf-switch failures, storage
outages and background noise, and ``truth/alerts.csv`` with the truth incident of every alert. The
pipeline sees the payloads (plus sacct, syslog, node states) only. Checked here: notification and alert
counts, node mapping and status, clustering against the truth (adjusted Rand index), root-cause levels
of fabric incidents, rule hygiene verdicts and the compression of alerts into incidents.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from sklearn.metrics import adjusted_rand_score

from gpusre.simulate import SimulationConfig, simulate_cluster
from gpusre.pipelines.runner import run_pipeline

# Node faults at ~10x a real cluster, leaf switches and storage 10-20x: a 64-node fortnight has four
# leaf-switch failures, three storage outages and ~50 node faults, plus noise (flapping /var/log, ...).
CONFIG = SimulationConfig(nodes=64, days=14, seed=3, leaf_switch_failures_per_1000_switch_days=100,
                          storage_outages_per_1000_days=400, node_failures_per_1000_node_days=60,
                          syslog_layout="central")
#: Measured 0.925 on this seed: the misses are alerts of two independent causes that single linkage
#: joins (a leaf switch failing twice within 10 min; two nodes of one rack going down 6 min apart;
#: a noise alert on a node minutes before / during its fabric incident).
MIN_ARI = 0.9


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("alerts")
    landing = root / "landing"
    simulate_cluster(landing, CONFIG)
    run_pipeline(landing, root / "w.duckdb", root / "reports")
    truth = pl.read_csv(landing / "truth" / "alerts.csv", infer_schema=False).with_columns(
        pl.col("n_notifications").cast(pl.Int64))
    con = duckdb.connect(str(root / "w.duckdb"), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register("truth", truth.to_arrow())
        joined = con.sql(
            """SELECT a.alert_id, a.alertname, a.node, a.status, a.ends_at, a.n_notifications,
                      t.node AS truth_node, t.ends_at AS truth_ends_at, t.n_notifications AS truth_notifications,
                      t.truth_incident_id, t.source, t.kind, m.incident_id, m.level, i.root_level
               FROM core.alerts AS a
               JOIN truth AS t ON t.fingerprint = a.fingerprint AND CAST(t.starts_at AS TIMESTAMPTZ) = a.starts_at
               LEFT JOIN marts.alert_incident_members AS m USING (alert_id)
               LEFT JOIN marts.alert_incidents AS i USING (incident_id)""").pl()
        out = {
            "truth": truth,
            "joined": joined,
            "summary": json.loads((landing / "truth" / "summary.json").read_text()),
            "files": sorted(p.name for p in (landing / "alerts").iterdir()),
            "notifications": con.sql("SELECT count(*) FROM raw.alert_notifications").fetchall()[0][0],
            "core": con.sql("SELECT count(*), sum(n_notifications) FROM core.alerts").fetchall()[0],
            "rejects": con.sql("SELECT count(*) FROM raw.rejects WHERE source_kind = 'alerts'").fetchall()[0][0],
            "quality": con.sql("SELECT alertname, fired, precision, flap_share, verdict "
                               "FROM marts.alert_rule_quality").pl(),
            "daily": con.sql("SELECT * FROM marts.alert_daily").pl(),
        }
    finally:
        con.close()
    return out


def test_counts_reconcile_with_truth(world: dict) -> None:
    summary, truth = world["summary"], world["truth"]
    assert world["rejects"] == 0
    assert len(world["files"]) == summary["alert_files"] and all(f.endswith(".jsonl") for f in world["files"])
    assert world["notifications"] == summary["n_alert_notifications"] == truth["n_notifications"].sum()
    n_alerts, n_notifications = world["core"]
    assert n_alerts == summary["n_alerts"] == truth.height
    assert n_notifications == summary["n_alert_notifications"]
    # Repeats and resolved notifications: the same alert arrives more than once on average.
    assert summary["n_alert_notifications"] > 1.5 * summary["n_alerts"]
    assert set(summary["alerts_by_source"]) == {"fault", "fabric", "noise"}


def test_every_alert_matches_its_truth(world: dict) -> None:
    j = world["joined"]
    assert j.height == world["truth"].height  # (fingerprint, startsAt) identifies each alert
    assert (j["n_notifications"] == j["truth_notifications"]).all()
    # Node from instance / Hostname / node (slurm-exporter) / -bmc labels; switches and OSTs have none.
    assert j.filter(pl.col("node").fill_null("") != pl.col("truth_node").fill_null("")).height == 0
    resolved = pl.col("truth_ends_at").fill_null("") != ""
    expected = j.select(pl.when(resolved).then(pl.lit("resolved")).otherwise(pl.lit("firing")))[:, 0]
    assert (j["status"] == expected).all()
    ends = j.filter(resolved).with_columns(pl.col("truth_ends_at").str.to_datetime(time_zone="UTC", time_unit="us"))
    assert (ends["ends_at"].dt.convert_time_zone("UTC") == ends["truth_ends_at"]).all()


def test_clustering_matches_truth_incidents(world: dict) -> None:
    j = world["joined"]
    assert j["incident_id"].null_count() == 0
    ari = adjusted_rand_score(j["truth_incident_id"].to_list(), j["incident_id"].to_list())
    assert ari >= MIN_ARI, f"adjusted Rand index {ari:.3f}"


def test_fabric_incidents_rooted_upstream(world: dict) -> None:
    j = world["joined"]
    fabric = j.filter(pl.col("source") == "fabric")
    assert set(fabric["kind"]) == {"leaf_switch_down", "storage_outage"}
    expected = {"leaf_switch_down": "fabric", "storage_outage": "storage"}
    for (truth_id, kind), rows in fabric.group_by("truth_incident_id", "kind"):
        # The pipeline incident holding most of the truth incident's alerts.
        main = rows.group_by("incident_id").len().sort("len", "incident_id", descending=[True, False])["incident_id"][0]
        root = rows.filter(pl.col("incident_id") == main)["root_level"][0]
        assert root == expected[kind], (truth_id, kind, root)
        assert rows.filter(pl.col("incident_id") == main).height >= 0.9 * rows.height


def test_rule_quality_verdicts(world: dict) -> None:
    q = {r["alertname"]: r for r in world["quality"].iter_rows(named=True)}
    flap = q["NodeFilesystemSpaceFillingUp"]
    assert flap["verdict"] in ("flapping", "noise: consider silencing"), flap
    assert q["DCGMXidError"]["verdict"] == "useful", q["DCGMXidError"]
    assert q["InfinibandLinkDown"]["verdict"] == "useful"


def test_compression(world: dict) -> None:
    daily = world["daily"]
    assert daily["alerts"].sum() == world["summary"]["n_alerts"]
    assert daily["notifications"].sum() == world["summary"]["n_alert_notifications"]
    assert daily["alerts"].sum() / daily["incidents"].sum() > 1
    # Days with a leaf-switch failure or storage outage compress many alerts into few incidents.
    assert daily["compression_ratio"].max() > 5
