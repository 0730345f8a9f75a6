"""Node logs written by the simulator (syslog/, truth/incidents.csv, job_attribution.csv, log_summary.json)."""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from gpusre.models.logs.event_catalog import classify_messages
from gpusre.models.ingest.hostlist import expand_hostlist
from gpusre.simulate import SimulationConfig, simulate_cluster
from gpusre.models.sources.syslog.parse import parse_syslog_bytes

# Fault rates far above the default so a 10-day, 40-node run has node faults, leaf-switch failures
# and storage outages; a non-UTC zone so local-time stamps are really checked.
CFG = SimulationConfig(nodes=40, days=10, seed=5, timezone="America/Chicago", node_failures_per_1000_node_days=40,
                       leaf_switch_failures_per_1000_switch_days=150, storage_outages_per_1000_days=200,
                       log_lines_per_node_day=120, log_iso_node_share=0.3)
KILL = SimulationConfig(nodes=40, days=6, seed=9, node_failures_per_1000_node_days=20,
                        leaf_switch_failures_per_1000_switch_days=300, storage_outages_per_1000_days=0,
                        fabric_faults_kill_jobs=True, log_lines_per_node_day=20)

RFC3164 = re.compile(r"^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ 123]\d \d\d:\d\d:\d\d (gpu\d{3}) "
                     r"([A-Za-z][\w.-]*)(\[\d+\])?: (.*)$")
ISO = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d) (gpu\d{3}) ([A-Za-z][\w.-]*)(\[\d+\])?: (.*)$")
KERNEL_STAMP = re.compile(r"^\[ *\d+\.\d{6}\] ")


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("logs")
    simulate_cluster(out, CFG)
    return out


@pytest.fixture(scope="module")
def parsed(sim: Path) -> dict[str, list[tuple[float, str]]]:
    """Every node's lines through the pipeline's own syslog parser: node -> [(epoch, message)]."""
    hint = (datetime(2026, 7, 1, tzinfo=UTC), datetime(2026, 9, 1, tzinfo=UTC))
    by_node: dict[str, list[tuple[float, str]]] = defaultdict(list)
    files: dict[str, list[Path]] = defaultdict(list)
    for path in sorted((sim / "syslog").rglob("*.log")):  # day directories sort in time order
        files[path.stem].append(path)
    for node, paths in files.items():
        data = b"".join(p.read_bytes() for p in paths)
        res = parse_syslog_bytes(data, f"{node}.log", timezone=CFG.timezone, year_hint=hint)
        assert res.rejects.is_empty(), res.rejects.head(3)
        assert res.lines["host"].unique().to_list() == [node]
        by_node[node] = [(ts.timestamp(), msg) for ts, msg in res.lines.select("ts", "message").iter_rows()]
    return by_node


def test_same_seed_same_bytes(tmp_path: Path, sim: Path) -> None:
    simulate_cluster(tmp_path, CFG)
    files = sorted(p.relative_to(sim) for p in sim.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    for rel in files:
        assert (sim / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel


def test_logs_do_not_change_existing_outputs(tmp_path: Path, sim: Path) -> None:
    from dataclasses import replace

    simulate_cluster(tmp_path, replace(CFG, write_logs=False))
    old = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert not any(p.startswith("syslog") for p in old)
    for rel in old:
        assert (sim / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel


def test_sacct_dumps_do_not_depend_on_logs_node_states_or_alerts(tmp_path: Path, sim: Path) -> None:
    """benchmarks/bench_sacct.py simulates the dumps alone: they must be the full simulation's, byte for byte."""
    from dataclasses import replace

    simulate_cluster(tmp_path, replace(CFG, write_logs=False, node_state_events=False, write_alerts=False))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cluster.yaml", "sacct", "truth"]
    dumps = sorted(p.name for p in (sim / "sacct").iterdir())
    assert dumps and dumps == sorted(p.name for p in (tmp_path / "sacct").iterdir())
    for name in dumps:
        assert (sim / "sacct" / name).read_bytes() == (tmp_path / "sacct" / name).read_bytes(), name


def test_lines_match_their_format(sim: Path) -> None:
    summary = json.loads((sim / "truth" / "log_summary.json").read_text())
    iso_nodes = set(summary["formats"]["iso8601"])
    assert 0 < len(iso_nodes) < CFG.nodes
    n = 0
    for path in sorted((sim / "syslog").rglob("*.log")):
        day = path.parent.name
        pattern = ISO if path.stem in iso_nodes else RFC3164
        for line in path.read_text().splitlines():
            m = pattern.match(line)
            assert m, line
            assert m.group(2) == path.stem
            if m.group(3) == "kernel":
                assert KERNEL_STAMP.match(m.group(5)), line
            n += 1
        assert re.fullmatch(r"2026-08-(0[1-9]|1[01])", day)
    assert n == summary["lines"] == sum(summary["lines_by_node"].values())


def test_every_fault_has_its_burst_near_its_ts(sim: Path, parsed: dict[str, list[tuple[float, str]]]) -> None:
    faults = _csv(sim / "truth" / "faults.csv")
    assert len(faults) >= 5
    signature = {"xid79_fallen_off_bus": "Xid", "xid48_dbe_ecc": "Xid", "xid94_contained_ecc": "Xid",
                 "xid119_gsp_timeout": "Xid", "xid74_nvlink": "Xid", "ib_link_down": "Link DOWN",
                 "lustre_mount_missing": "LustreError", "kernel_panic": "Kernel panic",
                 "dimm_uncorrectable": "UE memory read error", "psu_failure": "Power Supply"}
    for f in faults:
        ts = _epoch(f["ts"])
        near = [m for t, m in parsed[f["node"]] if -60 <= t - ts <= 10]
        assert any(signature[f["kind"]] in m for m in near), (f, near)
        if f["effect"] == "job_fail":
            later = [m for t, m in parsed[f["node"]] if 0 <= t - ts <= 300]
            assert any("Health check failed" in m for m in later), f
        else:
            # A dead node logs nothing after its last words until it boots again.
            dead = [m for t, m in parsed[f["node"]] if 30 <= t - ts < _epoch(f["repair_end_ts"]) - ts - 700]
            assert dead == []


def test_leaf_switch_failure_downs_every_node_under_it(sim: Path, parsed: dict[str, list[tuple[float, str]]]) -> None:
    import yaml

    leaves = yaml.safe_load((sim / "cluster.yaml").read_text())["leaf_switches"]
    incidents = [r for r in _csv(sim / "truth" / "incidents.csv") if r["kind"] == "leaf_switch_down"]
    assert incidents
    for inc in incidents:
        nodes = expand_hostlist(inc["nodes"])
        assert any(set(nodes) <= set(expand_hostlist(v)) for v in leaves.values())
        assert inc["affects_jobs"] == "false" and int(inc["n_nodes"]) == len(nodes)
        start = _epoch(inc["start_ts"])
        for node in nodes:
            assert any("Link DOWN" in m and 0 <= t - start <= 60 for t, m in parsed[node]), (inc, node)
    storage = [r for r in _csv(sim / "truth" / "incidents.csv") if r["kind"] == "storage_outage"]
    assert storage and all(int(r["n_nodes"]) >= 2 for r in storage)
    for inc in storage:
        start = _epoch(inc["start_ts"])
        for node in expand_hostlist(inc["nodes"]):
            assert any("was lost" in m and 0 <= t - start <= 60 for t, m in parsed[node])


def test_noise_has_no_xid_and_no_failure(sim: Path, parsed: dict[str, list[tuple[float, str]]]) -> None:
    summary = json.loads((sim / "truth" / "log_summary.json").read_text())
    kinds = summary["lines_by_kind"]
    assert kinds["noise"] > 0.8 * summary["lines"]
    assert summary["noise_shapes"] >= 250
    # Every Xid line is accounted for by a fault, a user job, or a benign informational Xid.
    xid_lines = sum(1 for lines in parsed.values() for _, m in lines if "Xid" in m and "SXid" not in m)
    event_lines = sum(v for k, v in kinds.items() if k != "noise")
    assert 0 < xid_lines <= event_lines
    # Lines outside any truth window: classify them, none may be a high-severity event.
    faults = _csv(sim / "truth" / "faults.csv")
    incidents = _csv(sim / "truth" / "incidents.csv")
    busy = defaultdict(list)
    for inc in incidents:
        for node in expand_hostlist(inc["nodes"]):
            busy[node].append((_epoch(inc["start_ts"]) - 400, _epoch(inc["end_ts"]) + 400))
    for f in faults:
        busy[f["node"]].append((_epoch(f["ts"]) - 400, _epoch(f["repair_end_ts"]) + 400))
    quiet = [m for node, lines in parsed.items() for t, m in lines
             if not any(a <= t <= b for a, b in busy[node])]
    assert len(quiet) > 10_000
    classified = classify_messages(pl.Series(quiet))
    bad = classified.filter(classified["severity"].is_in(["critical", "high"]))
    # Only user-application Xids (their class is user_application) may be "high" outside incidents.
    assert set(bad["cause_class"].to_list()) <= {"user_application"}, bad.head()


def test_benign_xids_are_informational(parsed: dict[str, list[tuple[float, str]]]) -> None:
    benign = [m for lines in parsed.values() for _, m in lines if re.search(r"Xid \(PCI:[^)]*\): (63|92),", m)]
    assert benign
    out = classify_messages(pl.Series(benign))
    assert set(out["cause_class"].to_list()) == {"informational"}


def test_user_xids_precede_user_failures(sim: Path, parsed: dict[str, list[tuple[float, str]]]) -> None:
    rows = _csv(sim / "truth" / "job_attribution.csv")
    with_xid = [r for r in rows if r["user_xid"]]
    assert len(with_xid) >= 5
    for r in with_xid:
        assert r["attribution"] == "user" and r["state_final"] == "FAILED" and r["cause"] == "user_error"
        end = _epoch(r["end_ts"])
        pat = re.compile(rf"Xid \(PCI:[0-9a-f:]+\): {r['user_xid']},")
        hits = [t for node in expand_hostlist(r["nodes"]) for t, m in parsed[node] if pat.search(m)]
        assert any(0 < end - t <= 30 for t in hits), r
    oom = [r for r in rows if r["state_final"] == "OUT_OF_MEMORY"]
    for r in oom:
        end = _epoch(r["end_ts"])
        assert any("oom_kill event" in m and 0 <= end - t <= 10 for node in expand_hostlist(r["nodes"])
                   for t, m in parsed[node]), r


def test_job_attribution_covers_every_ended_job_once(sim: Path) -> None:
    jobs = _csv(sim / "truth" / "jobs.csv")
    rows = _csv(sim / "truth" / "job_attribution.csv")
    ids = [r["job_id"] for r in rows]
    assert len(ids) == len(set(ids))
    ended = {j["job_id"] for j in jobs if j["state_final"] not in {"RUNNING", "PENDING"}}
    assert set(ids) == ended
    failed = {j["job_id"] for j in jobs if j["state_final"] in {"FAILED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY"}}
    assert failed <= set(ids)
    by_id = {r["job_id"]: r for r in rows}
    incidents = {r["incident_id"]: r for r in _csv(sim / "truth" / "incidents.csv")}
    for j in jobs:
        if j["job_id"] not in by_id:
            continue
        r = by_id[j["job_id"]]
        expected = {"node_fail": "infrastructure", "user_error": "user", "oom": "user", "timeout": "user"}.get(
            j["cause"], "none")
        assert r["attribution"] == expected, (j, r)
        if expected == "infrastructure":
            inc = incidents[r["incident_id"]]
            assert r["component"] == inc["component"] and j["job_id"] in inc["job_ids"].split(";")
            assert set(expand_hostlist(inc["nodes"])) & set(expand_hostlist(j["nodes"]))


def test_fabric_faults_can_kill_jobs(tmp_path: Path) -> None:
    simulate_cluster(tmp_path, KILL)
    incidents = [r for r in _csv(tmp_path / "truth" / "incidents.csv") if r["kind"] == "leaf_switch_down"]
    assert incidents and all(r["affects_jobs"] == "true" for r in incidents)
    faults = {r["fault_id"]: r for r in _csv(tmp_path / "truth" / "faults.csv")}
    killed = [j for inc in incidents for j in inc["job_ids"].split(";") if j]
    assert killed, "a leaf switch under busy nodes kills their jobs"
    for inc in incidents:
        for fid in inc["fault_ids"].split(";"):
            assert faults[fid]["kind"] == "leaf_switch_down" and faults[fid]["node"] in expand_hostlist(inc["nodes"])
    attributed = {r["job_id"]: r for r in _csv(tmp_path / "truth" / "job_attribution.csv")}
    switch_jobs = [r for r in attributed.values() if r["component"] == "interconnect_switch"]
    assert switch_jobs and all(r["attribution"] == "infrastructure" for r in switch_jobs)
