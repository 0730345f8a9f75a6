"""Tests of the trace-driven cluster simulator (gpusre.simulate)."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from gpusre.models.ingest.hostlist import expand_hostlist
from gpusre.simulate import SACCT_FIELDS, SACCT_HEADER, JOBS_COLUMNS, SimulationConfig, simulate_cluster

TINY = SimulationConfig(nodes=16, days=7, seed=11)
# Big enough for job-mix statistics (a few thousand jobs), still ~1 s.
MIX = SimulationConfig(nodes=48, days=45, seed=3)


def _run(tmp_path_factory: pytest.TempPathFactory, name: str, config: SimulationConfig) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp(name)
    return out, simulate_cluster(out, config)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    return _run(tmp_path_factory, "tiny", TINY)


@pytest.fixture(scope="module")
def mix(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    return _run(tmp_path_factory, "mix", MIX)


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _jobs(out: Path) -> list[dict[str, str]]:
    with (out / "truth" / "jobs.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def _dump_rows(path: Path) -> list[list[str]]:
    lines = path.read_text().splitlines()
    return [line.split("|") for line in lines[1:]]


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes_other_seed_differs(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    simulate_cluster(a, TINY)
    simulate_cluster(b, TINY)
    simulate_cluster(c, SimulationConfig(nodes=16, days=7, seed=12))
    fa, fb, fc = _files(a), _files(b), _files(c)
    # cluster.yaml, one sacct dump and one sacctmgr event dump per day, jobs/faults/summary (+ incidents,
    # attribution, log summary, runs, goodput_daily, node_states, alerts), one log file per node per day,
    # and one alert file per UTC day with a notification.
    assert len([f for f in fa if not f.startswith(("syslog/", "alerts/"))]) == 1 + 7 + 7 + 5 + 3 + 1 + 1
    assert 1 <= len([f for f in fa if f.startswith("alerts/")]) <= TINY.days
    assert len([f for f in fa if f.startswith("slurm_events/")]) == TINY.days
    assert len([f for f in fa if f.startswith("syslog/")]) == TINY.nodes * TINY.days
    assert fa == fb
    assert fa["truth/jobs.csv"] != fc["truth/jobs.csv"]
    assert fa["sacct/sacct_2026-08-03.psv"] != fc["sacct/sacct_2026-08-03.psv"]


def test_cluster_yaml_shape(tiny: tuple[Path, dict]) -> None:
    out, _ = tiny
    doc = yaml.safe_load((out / "cluster.yaml").read_text())
    assert list(doc) == ["cluster", "timezone", "nodes", "gpus_per_node", "gpu_type", "racks", "leaf_switches",
                         "maintenance", "reliability"]
    assert doc["nodes"] == "gpu[001-016]" and doc["gpus_per_node"] == 8
    assert doc["racks"] == {"r01": "gpu[001-016]"}
    assert doc["leaf_switches"] == {"leaf01": "gpu[001-016]"}
    assert 1 <= len(doc["maintenance"]) <= 2
    for w in doc["maintenance"]:
        assert set(w) == {"start", "end", "nodes", "reason"}
        assert w["start"].endswith("Z") and _ts(w["end"]) > _ts(w["start"])
        assert expand_hostlist(w["nodes"])


def test_dumps_are_well_formed(tiny: tuple[Path, dict]) -> None:
    out, summary = tiny
    dumps = sorted((out / "sacct").glob("sacct_*.psv"))
    assert [p.name for p in dumps] == [f"sacct_2026-08-{d:02d}.psv" for d in range(1, 8)]
    n_alloc = 0
    for path in dumps:
        text = path.read_text()
        assert text.splitlines()[0] == SACCT_HEADER
        rows = _dump_rows(path)
        assert rows, path
        current = None
        for row in rows:
            assert len(row) == len(SACCT_FIELDS), row
            rec = dict(zip(SACCT_FIELDS, row, strict=True))
            if "." in rec["JobID"]:
                # Steps follow their allocation row and never carry user or QOS.
                assert current is not None and rec["JobID"].split(".")[0] == current["JobID"]
                assert rec["User"] == "" and rec["QOS"] == ""
                continue
            n_alloc += 1
            current = rec
            assert rec["User"] and rec["UID"].isdigit() and rec["Partition"] in {"batch", "interactive", "preempt"}
            assert ":" in rec["ExitCode"] and rec["Timelimit"]
            if rec["State"] == "PENDING":
                assert rec["Start"] == "Unknown" and rec["NodeList"] == "None assigned" and rec["AllocTRES"] == ""
            elif rec["Start"] != rec["End"] or rec["NodeList"] != "None assigned":
                n = int(rec["NNodes"])
                assert len(expand_hostlist(rec["NodeList"])) == n
                assert f"node={n}" in rec["AllocTRES"] and "gres/gpu:h100=" in rec["AllocTRES"]
            if rec["State"].startswith("CANCELLED"):
                assert rec["State"] == f"CANCELLED by {rec['UID']}"
    assert n_alloc == summary["sacct_allocation_rows"]


def test_running_job_later_shows_final_state(mix: tuple[Path, dict]) -> None:
    out, _ = mix
    seen: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for path in sorted((out / "sacct").glob("sacct_*.psv")):
        for row in _dump_rows(path):
            rec = dict(zip(SACCT_FIELDS, row, strict=True))
            if "." not in rec["JobID"]:
                seen[rec["JobIDRaw"]].append((path.name, rec["State"], rec["End"]))
    changed = [v for v in seen.values() if v[0][1] == "RUNNING" and v[-1][1] not in {"RUNNING", "PENDING"}]
    assert len(changed) > 20
    for history in changed:
        assert history[0][2] == "Unknown" and history[-1][2] != "Unknown"
    # The state in each job's latest dump row is the truth's final state.
    truth = {r["job_id_raw"]: r["state_final"] for r in _jobs(out)}
    latest = {raw: v[-1][1].split(" by ")[0] for raw, v in seen.items()}
    assert latest == truth


def test_no_gpu_over_allocation_and_maintenance_respected(mix: tuple[Path, dict]) -> None:
    out, _ = mix
    doc = yaml.safe_load((out / "cluster.yaml").read_text())
    windows = [(_ts(w["start"]), _ts(w["end"]), set(expand_hostlist(w["nodes"]))) for w in doc["maintenance"]]
    last = _ts(json.loads((out / "truth" / "summary.json").read_text())["last_dump_utc"])
    events: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for r in _jobs(out):
        if not r["start_ts"]:
            continue
        start = _ts(r["start_ts"])
        end = _ts(r["end_ts"]) if r["end_ts"] else last
        nodes = expand_hostlist(r["nodes"])
        per_node = int(r["n_gpus"]) // int(r["n_nodes"])
        assert len(nodes) == int(r["n_nodes"])
        for node in nodes:
            events[node] += [(start, per_node), (end, -per_node)]
            for w0, w1, wnodes in windows:
                assert not (node in wnodes and start < w1 and end > w0), (r["job_id"], node)
    assert events
    for node, ev in events.items():
        used = 0
        for _, delta in sorted(ev, key=lambda e: (e[0], e[1])):  # releases before allocations at a tie
            used += delta
            assert 0 <= used <= 8, node


def test_job_mix_properties(mix: tuple[Path, dict]) -> None:
    out, summary = mix
    jobs = _jobs(out)
    gpu_h = sum(float(r["gpu_hours"]) for r in jobs)
    large = [r for r in jobs if int(r["n_nodes"]) > 1]
    small = [r for r in jobs if int(r["n_gpus"]) < 8]
    large_share = sum(float(r["gpu_hours"]) for r in large) / gpu_h
    assert large_share > len(large) / len(jobs) * 5  # few multi-node jobs hold most GPU time
    assert large_share > 0.5 and len(small) / len(jobs) > 0.6
    by_state = summary["gpu_hours_by_state"]
    assert max(by_state, key=by_state.get) == "CANCELLED"
    assert by_state.get("FAILED", 0) / gpu_h < 0.05
    user_err = [r for r in jobs if r["cause"] == "user_error"]
    assert len(user_err) / len(jobs) > 0.1  # failures are frequent ...
    assert sum(float(r["gpu_hours"]) for r in user_err) / gpu_h < 0.01  # ... but short
    assert {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY"} <= set(summary["jobs_by_state"])
    assert 0.55 < summary["utilization"] < 0.95
    # Waits emerge from contention: some jobs queue, most small ones start quickly.
    waits = [_ts(r["start_ts"]) - _ts(r["eligible_ts"]) for r in jobs if r["start_ts"]]
    assert sum(w > 600 for w in waits) > 0.02 * len(waits)
    assert sorted(waits)[len(waits) // 2] < 3600


def test_large_share_declines_over_time(mix: tuple[Path, dict]) -> None:
    out, _ = mix
    halves = [[0.0, 0.0], [0.0, 0.0]]  # [large, total] per half of the horizon
    mid = _ts("2026-08-23T12:00:00Z")
    for r in _jobs(out):
        if not r["start_ts"]:
            continue
        h = 0 if _ts(r["submit_ts"]) < mid else 1
        halves[h][1] += float(r["gpu_hours"])
        if int(r["n_nodes"]) >= 8:
            halves[h][0] += float(r["gpu_hours"])
    assert halves[1][0] / halves[1][1] < halves[0][0] / halves[0][1]


def test_time_limits_runs_arrays_and_requeues(mix: tuple[Path, dict]) -> None:
    out, summary = mix
    jobs = _jobs(out)
    limits: dict[str, int] = {}
    requeued_ids: set[str] = set()
    for path in sorted((out / "sacct").glob("sacct_*.psv")):
        count: dict[str, int] = defaultdict(int)
        for row in _dump_rows(path):
            rec = dict(zip(SACCT_FIELDS, row, strict=True))
            if "." in rec["JobID"]:
                continue
            lim = rec["Timelimit"]
            days, _, hms = lim.rpartition("-")
            h, m, s = (int(x) for x in hms.split(":"))
            limits[rec["JobIDRaw"]] = (int(days or 0) * 24 + h) * 3600 + m * 60 + s
            count[rec["JobIDRaw"]] += 1
        requeued_ids |= {k for k, v in count.items() if v > 1}
    for r in jobs:
        elapsed = int(r["elapsed_s"])
        assert elapsed <= limits[r["job_id_raw"]]
        if r["state_final"] == "TIMEOUT":
            assert elapsed == limits[r["job_id_raw"]]
    assert requeued_ids and all(int(r["restarts"]) > 0 for r in jobs if r["job_id_raw"] in requeued_ids)
    runs: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in jobs:
        if r["run_id"] != r["job_id"]:
            runs[r["run_id"]].append(r)
    multi = [v for v in runs.values() if len(v) > 1]
    assert multi
    for segs in multi:
        assert len({(s["user"], s["name"], s["account"], s["n_gpus"]) for s in segs}) == 1
        segs.sort(key=lambda s: int(s["job_id_raw"]))
        for prev, nxt in zip(segs, segs[1:]):
            assert prev["end_ts"] and _ts(nxt["submit_ts"]) >= _ts(prev["end_ts"])
    arrays = [r for r in jobs if "_" in r["job_id"]]
    assert arrays and all(r["job_id"] != r["job_id_raw"] for r in arrays)
    assert summary["n_requeues"] > 0


def test_faults_explain_node_failures(mix: tuple[Path, dict]) -> None:
    out, _ = mix
    with (out / "truth" / "faults.csv").open(newline="") as fh:
        faults = list(csv.DictReader(fh))
    assert faults
    killed = {jid for f in faults for jid in f["job_ids"].split(";") if jid}
    hw = [r for r in _jobs(out) if r["cause"] == "node_fail"]
    assert {r["job_id"] for r in hw} <= killed
    assert all(r["state_final"] in {"NODE_FAIL", "FAILED", "REQUEUED"} for r in hw)


def test_summary_matches_truth_rows(mix: tuple[Path, dict]) -> None:
    out, summary = mix
    jobs = _jobs(out)
    assert list(jobs[0]) == list(JOBS_COLUMNS)
    assert summary == json.loads((out / "truth" / "summary.json").read_text())
    assert summary["n_jobs"] == len(jobs) == len({r["job_id"] for r in jobs})
    by_state: dict[str, int] = defaultdict(int)
    gpu_by_state: dict[str, float] = defaultdict(float)
    for r in jobs:
        by_state[r["state_final"]] += 1
        gpu_by_state[r["state_final"]] += int(r["n_gpus"]) * int(r["elapsed_s"]) / 3600
        assert float(r["gpu_hours"]) == pytest.approx(int(r["n_gpus"]) * int(r["elapsed_s"]) / 3600, abs=1e-4)
    assert summary["jobs_by_state"] == dict(by_state)
    for state, hours in gpu_by_state.items():
        assert summary["gpu_hours_by_state"][state] == pytest.approx(hours, abs=1e-3)
    per_day = summary["allocated_gpu_hours_by_utc_day"]
    assert len(per_day) == MIX.days + 1  # plus the 15 min before the last dump
    assert sum(per_day.values()) == pytest.approx(summary["allocated_gpu_hours"], abs=1e-3)
    # Requeued earlier instances also held GPUs, so all instances >= final jobs.
    assert summary["allocated_gpu_hours"] >= summary["gpu_hours_final_jobs"] - 1e-6
    assert max(per_day.values()) <= MIX.nodes * 8 * 24
    assert summary["capacity_gpu_hours"] == MIX.nodes * 8 * 24 * MIX.days


def test_tiny_config_is_fast(tmp_path: Path) -> None:
    import time

    t0 = time.perf_counter()
    summary = simulate_cluster(tmp_path, TINY)
    assert time.perf_counter() - t0 < 2.0
    assert summary["n_jobs"] > 50


def test_non_utc_timezone_dumps_local_times(tmp_path: Path) -> None:
    cfg = SimulationConfig(nodes=16, days=3, seed=5, timezone="America/Chicago")
    simulate_cluster(tmp_path, cfg)
    jobs = {r["job_id_raw"]: r for r in _jobs(tmp_path)}
    rows = _dump_rows(tmp_path / "sacct" / "sacct_2026-08-02.psv")
    checked = 0
    for row in rows:
        rec = dict(zip(SACCT_FIELDS, row, strict=True))
        if "." in rec["JobID"]:
            continue
        # CDT is UTC-5 in August.
        utc = _ts(jobs[rec["JobIDRaw"]]["submit_ts"]) if rec["JobIDRaw"] in jobs else None
        if utc is not None and jobs[rec["JobIDRaw"]]["restarts"] == "0":
            local = datetime.fromisoformat(rec["Submit"]).replace(tzinfo=None)
            assert (datetime.utcfromtimestamp(utc) - local).total_seconds() == 5 * 3600
            checked += 1
    assert checked > 5
