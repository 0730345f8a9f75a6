"""The simulator's scenario knobs (SimulationConfig NHC / naming / alert / fault fields, scenarios.py):
each convention shows in the files a site would have, and the truth stays right (second waves and
flapping alerts are one incident; thermal and power faults carry their class)."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from gpusre.models.ingest.hostlist import expand_hostlist
from gpusre.models.component_classes import load_component_classes
from gpusre.simulate import SimulationConfig, simulate_cluster
from gpusre.simulate.scenarios import SCENARIOS, scenario_config

# Every knob away from its default at once, at rates high enough for a 32-node fortnight to show each.
CONFIG = SimulationConfig(nodes=32, days=14, seed=5, cluster="knobs", syslog_layout="central",
                          node_failures_per_1000_node_days=120.0, nhc_interval_s=120, nhc_repeat_until_repair=True,
                          nhc_message_style="check_prefix", node_name_style="rack", node_prefix="dgx",
                          nodes_per_rack=8, nodes_per_leaf=16, alert_instance_style="node_label",
                          leaf_switch_failures_per_1000_switch_days=250.0, leaf_second_wave_share=0.99,
                          fault_alert_flap_share=0.99, alert_flap_off_s=(1200, 3600), thermal_power_fault_share=0.3,
                          fabric_manager_logs=True)


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _ts(text: str) -> float:
    """Epoch seconds of a truth timestamp (``...Z``, with or without a nanosecond fraction)."""
    base, _, frac = text.rstrip("Z").partition(".")
    return datetime.fromisoformat(base).replace(tzinfo=UTC).timestamp() + (float(f"0.{frac}") if frac else 0.0)


def _line_ts(line: str, year: int) -> tuple[float, str]:
    """(epoch seconds, host) of a syslog line, ISO-8601 or RFC 3164 (UTC cluster)."""
    parts = line.split()
    if parts[0][0].isdigit():
        return datetime.fromisoformat(parts[0]).timestamp(), parts[1]
    stamp = datetime.strptime(f"{year} {parts[0]} {parts[1]} {parts[2]}", "%Y %b %d %H:%M:%S")
    return stamp.replace(tzinfo=UTC).timestamp(), parts[3]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("knobs")
    simulate_cluster(out, CONFIG)
    return out


def _syslog(sim: Path) -> list[str]:
    return [line for p in sorted((sim / "syslog").rglob("*.log")) for line in p.read_text().splitlines()]


def test_scenarios_are_small_and_distinct() -> None:
    configs = {name: scenario_config(name) for name in SCENARIOS}
    assert len(configs) >= 6
    for name, cfg in configs.items():
        assert 32 <= cfg.nodes <= 48 and 30 <= cfg.days <= 45, name
    assert len({c.nhc_interval_s for c in configs.values()}) >= 3
    assert {c.nhc_message_style for c in configs.values()} == {"lbnl", "bare", "check_prefix"}
    assert {c.alert_instance_style for c in configs.values()} == {"port", "fqdn", "node_label"}
    with pytest.raises(ValueError, match="unknown scenario"):
        scenario_config("nope")


def test_rack_names_and_topology(sim: Path) -> None:
    doc = yaml.safe_load((sim / "cluster.yaml").read_text())
    names = expand_hostlist(doc["nodes"])
    assert names[:9] == [f"dgx-a0{i}" for i in range(1, 9)] + ["dgx-b01"]
    assert len(doc["racks"]) == 4 and all(len(expand_hostlist(h)) == 8 for h in doc["racks"].values())
    assert len(doc["leaf_switches"]) == 2


def test_nhc_fails_every_run_until_the_repair_in_the_site_style(sim: Path) -> None:
    lines = [ln for ln in _syslog(sim) if " nhc[" in ln]
    assert lines and all(re.search(r"nhc\[\d+\]: check_\w+: ", ln) for ln in lines)
    assert not any("ERROR:  nhc:" in ln for ln in lines)
    assert any("check_hw_sensors: GPU" in ln and "exceeds limit 90C" in ln for ln in lines)
    runs: dict[str, list[float]] = defaultdict(list)
    for ln in lines:
        t, host = _line_ts(ln, CONFIG.start.year)
        runs[host].append(t)
    horizon = _ts(json.loads((sim / "truth" / "summary.json").read_text())["horizon_end_utc"])
    # Node faults NHC catches (job_fail) repaired inside the horizon after >= 3 h: NHC fails on every
    # 120 s run from ~1 min after the fault until the reboot that ends the repair (4 min before its end).
    long = [f for f in _csv(sim / "truth" / "faults.csv") if f["effect"] == "job_fail"
            and _ts(f["ts"]) + 3 * 3600 < _ts(f["repair_end_ts"]) < horizon]
    assert long
    for f in long:
        t0, t1 = _ts(f["ts"]), _ts(f["repair_end_ts"]) - 240
        seen = [t for t in runs[f["node"]] if t0 <= t <= t1]
        assert len(seen) >= 0.8 * (t1 - t0 - 110) / 120, (f["fault_id"], len(seen), (t1 - t0) / 120)


def test_truth_incidents_carry_the_product_classes(sim: Path) -> None:
    incidents = _csv(sim / "truth" / "incidents.csv")
    classes = set(load_component_classes()["component_class"]) | {"thermal", "power"}
    assert {r["component_class"] for r in incidents} <= classes
    kinds = {r["kind"]: r["component_class"] for r in incidents}
    assert kinds.get("gpu_overtemp") == "thermal" and kinds.get("node_power_loss") == "power"
    assert kinds.get("leaf_switch_down") == "network"


def test_second_waves_and_flaps_stay_one_incident(sim: Path) -> None:
    alerts = _csv(sim / "truth" / "alerts.csv")
    by_incident: dict[str, list[float]] = defaultdict(list)
    for a in alerts:
        if a["alertname"] == "LeafSwitchDown":
            by_incident[a["truth_incident_id"]].append(_ts(a["starts_at"]))
    waves = [sorted(v) for v in by_incident.values() if len(v) == 2]
    assert waves, "a leaf switch failing twice fires twice under one truth incident"
    assert all(35 * 60 <= b - a <= 65 * 60 for a, b in waves)
    flaps: dict[str, list[dict[str, str]]] = defaultdict(list)
    for a in alerts:
        if a["alertname"] in ("InfinibandLinkDown", "GPUTemperatureHigh") and a["source"] == "fault":
            flaps[a["fingerprint"]].append(a)
    repeated = [v for v in flaps.values() if len(v) >= 3]
    assert repeated, "fault alerts flap"
    for occ in repeated:
        assert len({a["episode_id"] for a in occ}) == 1 and occ[0]["episode_id"] == occ[0]["truth_incident_id"]
        starts = sorted(_ts(a["starts_at"]) for a in occ)
        assert all(20 * 60 <= b - a <= 85 * 60 for a, b in zip(starts, starts[1:], strict=False))


def test_alert_labels_follow_the_instance_style(sim: Path) -> None:
    labels = [a["labels"] for p in sorted((sim / "alerts").glob("*.jsonl"))
              for line in p.read_text().splitlines() for a in json.loads(line)["alerts"]]
    node_exporter = [lb for lb in labels if lb.get("job") == "node-exporter"]
    assert node_exporter and all(re.fullmatch(r"10\.1\.\d+\.\d+:9100", lb["instance"]) and lb["node"].startswith("dgx-")
                                 for lb in node_exporter)
    assert all("node" in lb and "Hostname" not in lb for lb in labels if lb.get("job") == "dcgm-exporter")
    assert all(lb["instance"].endswith("-bmc") for lb in labels if lb.get("job") == "ipmi-exporter")


def test_multi_kind_fault_lines(sim: Path) -> None:
    text = "\n".join(_syslog(sim))
    assert "nv-fabricmanager[" in text and "detected NVSwitch fatal error 20034" in text
    assert "Temperature sensor GPU" in text


@pytest.mark.parametrize("style,pattern", [("bare", r"nhc\[\d+\]: Health check failed: (?!check_)"),
                                           ("lbnl", r"nhc\[\d+\]: ERROR:  nhc:  Health check failed:  check_\w+:  ")])
def test_nhc_message_styles(tmp_path: Path, style: str, pattern: str) -> None:
    cfg = SimulationConfig(nodes=8, days=7, seed=2, node_failures_per_1000_node_days=300.0, syslog_layout="central",
                           nhc_message_style=style, write_alerts=False)
    simulate_cluster(tmp_path, cfg)
    lines = [ln for ln in _syslog(tmp_path) if " nhc[" in ln]
    assert lines and all(re.search(pattern, ln) for ln in lines)


def test_silent_power_faults_log_nothing_but_slurm_sees_them(tmp_path: Path) -> None:
    """``silent_power_fault_share`` 1: a lost feed or failed PSU leaves no node-log line from the fault (the
    host died with its power), while Slurm's node states still show the node down and drained for it."""
    cfg = SimulationConfig(nodes=8, days=10, seed=3, node_failures_per_1000_node_days=300.0, syslog_layout="central",
                           thermal_power_fault_share=0.9, silent_power_fault_share=1.0, write_alerts=False)
    simulate_cluster(tmp_path, cfg)
    faults = [f for f in _csv(tmp_path / "truth" / "faults.csv") if f["kind"] in ("node_power_loss", "psu_failure")]
    assert len(faults) >= 3, "the config must draw power faults"
    lines = [_line_ts(ln, cfg.start.year) + (ln,) for ln in _syslog(tmp_path)]
    for f in faults:
        t = _ts(f["ts"])
        near = [ln for ts, host, ln in lines if host == f["node"] and t - 60 <= ts <= t + 5]
        assert not any("Power Supply" in ln or "MCE broadcast" in ln for ln in near), near
    # Slurm still records each: the operator's drain for the power fault, on that node, after the fault.
    events = [ln.split("|") for p in sorted((tmp_path / "slurm_events").glob("*.txt"))
              for ln in p.read_text().splitlines() if ln.count("|") >= 7]
    power = re.compile(r"lost power|no power on both feeds|PSU failure|power supply failed")
    for f in faults:
        drains = [e for e in events if e[1] == f["node"] and power.search(e[6])
                  and datetime.fromisoformat(e[2]).replace(tzinfo=UTC).timestamp() >= _ts(f["ts"])]
        assert drains, f"no power drain of {f['node']} after its fault at {f['ts']}"


def test_silent_share_zero_is_the_original_world(tmp_path: Path) -> None:
    """The knob draws nothing when 0: the same config with and without it writes the same node logs."""
    base = SimulationConfig(nodes=8, days=5, seed=4, node_failures_per_1000_node_days=300.0, syslog_layout="central",
                            thermal_power_fault_share=0.9, write_alerts=False)
    simulate_cluster(tmp_path / "a", base)
    simulate_cluster(tmp_path / "b", dataclasses.replace(base, silent_power_fault_share=0.0))
    assert _syslog(tmp_path / "a") == _syslog(tmp_path / "b")
    simulate_cluster(tmp_path / "c", dataclasses.replace(base, silent_power_fault_share=1.0))
    assert len(_syslog(tmp_path / "c")) < len(_syslog(tmp_path / "a"))
