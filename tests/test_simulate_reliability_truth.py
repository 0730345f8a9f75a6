"""Tests of the simulator's checkpoint/reliability truth: truth/runs.csv (ETTR), truth/goodput_daily.csv,
the reliability section of cluster.yaml and the reliability additions to summary.json."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from gpusre.simulate import GOODPUT_DAILY_COLUMNS, RUNS_COLUMNS, SimulationConfig, simulate_cluster
from gpusre.simulate import reliability_truth
from gpusre.simulate.checkpointing import ACCOUNT_POLICIES, SITE_POLICY, lost_work_s, phase_rng, policy_for
from gpusre.simulate.faults import FAULT_KINDS
from gpusre.simulate.sacct_writer import SACCT_FIELDS
from gpusre.pipelines.config import parse_cluster_config

# A small cluster with a raised fault rate: runs with requeues, segments, faults, preemptions,
# llm-pretrain runs (the override policy) and runs still live at the last dump. ~0.4 s without logs.
CFG = SimulationConfig(nodes=48, days=21, seed=5, node_failures_per_1000_node_days=20, write_logs=False)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("reliability")
    return out, simulate_cluster(out, CFG)


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _ts(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


def _local_ts(text: str) -> int:  # CFG is UTC: sacct local time == UTC
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


# ----------------------------------------------------------------- lost-work rule
def test_lost_work_rule_by_hand() -> None:
    assert lost_work_s(5000, 1000, 3600) == 400  # (5000 - 1000) mod 3600
    assert lost_work_s(500, 1000, 3600) == 500  # before the first checkpoint: everything since the restart
    assert lost_work_s(1000, 1000, 3600) == 0  # interrupted right at a checkpoint
    assert lost_work_s(0, 0, 1800) == 0
    assert lost_work_s(4600, 1000, 3600) == 0  # at the second checkpoint
    got = lost_work_s(np.array([5000, 500, 1000, 8000]), np.array([1000, 1000, 1000, 0]), np.array([3600] * 4))
    assert got.tolist() == [400, 500, 0, 8000 % 3600]


def test_lost_work_is_below_interval_and_elapsed() -> None:
    rng = np.random.default_rng(0)
    interval = rng.choice([1800, 3600], size=20_000)
    phase = rng.integers(0, interval)
    t = rng.integers(0, 10 * 86400, size=interval.size)
    lost = lost_work_s(t, phase, interval)
    assert (lost >= 0).all() and (lost < interval).all() and (lost <= t).all()
    scalar = [lost_work_s(int(a), int(b), int(c)) for a, b, c in zip(t[:500], phase[:500], interval[:500])]
    assert scalar == lost[:500].tolist()


# ----------------------------------------------------------------- cluster.yaml
def test_cluster_yaml_carries_checkpoint_policy(sim: tuple[Path, dict]) -> None:
    out, _ = sim
    cfg = parse_cluster_config((out / "cluster.yaml").read_text())
    cp = cfg.reliability.checkpoint
    assert (cp.interval_s, cp.restart_overhead_s, cp.write_s) == (3600, 300, 0)
    assert (SITE_POLICY.interval_s, SITE_POLICY.restart_overhead_s, SITE_POLICY.write_s) == (3600, 300, 0)
    assert set(cfg.reliability.checkpoint_overrides) == {"llm-pretrain"} == set(ACCOUNT_POLICIES)
    ov = cfg.reliability.checkpoint_overrides["llm-pretrain"]
    assert (ov.interval_s, ov.restart_overhead_s, ov.write_s) == (1800, 600, None)  # write_s: site default
    assert policy_for("llm-pretrain").interval_s == 1800 and policy_for("research") == SITE_POLICY
    assert cfg.gpus_per_node == CFG.gpus_per_node  # the rest still parses


# ----------------------------------------------------------------- runs.csv
def test_runs_invariants(sim: tuple[Path, dict]) -> None:
    out, summary = sim
    runs = _csv(out / "truth" / "runs.csv")
    assert runs and list(runs[0]) == list(RUNS_COLUMNS)
    assert [r["run_id"] for r in runs] == sorted(r["run_id"] for r in runs)
    assert len({r["run_id"] for r in runs}) == len(runs)
    last_dump = _ts(summary["last_dump_utc"])
    jobs = {r["job_id"]: r for r in _csv(out / "truth" / "jobs.csv")}
    ettrs = []
    for r in runs:
        n_inst, inter = int(r["n_instances"]), int(r["interruptions"])
        run_s, over, lost, prod = (int(r[k]) for k in ("run_s", "restart_overhead_s", "lost_work_s", "productive_s"))
        wall, queue = int(r["wallclock_s"]), int(r["queue_s"])
        assert n_inst >= 1 and 0 <= inter <= n_inst  # infrastructure interruptions, the last instance's too
        assert prod == run_s - over - lost
        assert 0 <= over <= inter * int(r["restart_overhead_cfg_s"])
        assert 0 <= lost <= inter * (int(r["interval_s"]) - 1)  # each interrupted instance loses < interval
        assert wall >= run_s + queue >= run_s  # a run's instances never overlap
        ettr = float(r["ettr"])
        assert 0.0 <= ettr <= 1.0 and ettr == pytest.approx(prod / wall, abs=1e-6)
        ettrs.append(ettr)
        policy = policy_for(r["account"])
        assert (int(r["interval_s"]), int(r["restart_overhead_cfg_s"])) == (policy.interval_s,
                                                                             policy.restart_overhead_s)
        ids = r["job_ids"].split(";")
        assert len(ids) == len(set(ids)) == int(r["n_jobs"])
        for jid in ids:
            j = jobs[jid]
            assert j["run_id"] == r["run_id"] and (j["user"], j["account"], j["name"]) == (r["user"], r["account"],
                                                                                           r["name"])
        assert int(r["n_gpus"]) == max(int(jobs[j]["n_gpus"]) for j in ids)
        live = any(jobs[j]["state_final"] in ("RUNNING", "PENDING") for j in ids)
        end = last_dump if live else _ts(r["last_end_ts"])
        assert (r["last_end_ts"] == "") == live
        assert wall == end - _ts(r["first_submit_ts"])
    # Every run of jobs.csv with a started job is there; no non-run job is.
    started_runs = {j["run_id"] for j in jobs.values() if j["run_id"] != j["job_id"] and j["start_ts"]}
    assert started_runs <= {r["run_id"] for r in runs} <= {j["run_id"] for j in jobs.values()}
    # The fixture exercises what matters: interruptions, the override policy, live runs.
    assert any(int(r["interruptions"]) > 0 and r["account"] == "llm-pretrain" for r in runs)
    assert any(int(r["lost_work_s"]) > 0 for r in runs) and any(r["last_end_ts"] == "" for r in runs)
    assert summary["ettr_runs"]["count"] == len(runs)
    assert summary["ettr_runs"]["mean_ettr"] == pytest.approx(sum(ettrs) / len(ettrs), abs=1e-5)


# ----------------------------------------------------------------- goodput_daily.csv
def test_goodput_daily_matches_summary(sim: tuple[Path, dict]) -> None:
    out, summary = sim
    rows = _csv(out / "truth" / "goodput_daily.csv")
    assert rows and list(rows[0]) == list(GOODPUT_DAILY_COLUMNS)
    by_day = summary["allocated_gpu_hours_by_utc_day"]
    assert [r["day"] for r in rows] == list(by_day)
    gpus = CFG.total_gpus
    totals: dict[str, float] = defaultdict(float)
    for r in rows:
        v = {k: float(r[k]) for k in GOODPUT_DAILY_COLUMNS[1:]}
        assert v["allocated_gpu_hours"] == by_day[r["day"]]
        assert v["productive_gpu_hours"] == pytest.approx(
            v["allocated_gpu_hours"] - v["lost_failure_gpu_hours"] - v["lost_restart_gpu_hours"], abs=3e-6)
        assert v["lost_failure_gpu_hours"] >= 0 and v["lost_restart_gpu_hours"] >= 0
        assert 0 < v["capacity_gpu_hours"] <= gpus * 24 and v["allocated_gpu_hours"] <= v["capacity_gpu_hours"]
        assert 0 <= v["goodput"] <= 1
        assert v["goodput"] == pytest.approx(v["productive_gpu_hours"] / v["capacity_gpu_hours"], abs=1e-6)
        for k in GOODPUT_DAILY_COLUMNS[1:-1]:
            totals[k] += v[k]
    # Full UTC days have 24 h of capacity; the last row is the quarter hour before the last dump.
    assert all(float(r["capacity_gpu_hours"]) == gpus * 24 for r in rows[:-1])
    assert float(rows[-1]["capacity_gpu_hours"]) == gpus * 0.25
    g = summary["goodput"]
    for k, total in totals.items():
        assert g[k] == pytest.approx(total, abs=1e-4), k
    assert g["capacity_gpu_hours"] == gpus * (_ts(summary["last_dump_utc"]) - _ts(summary["horizon_start_utc"])) / 3600
    assert g["allocated_gpu_hours"] == pytest.approx(summary["allocated_gpu_hours"], abs=1e-6)
    assert g["goodput"] == pytest.approx(g["productive_gpu_hours"] / g["capacity_gpu_hours"], abs=1e-6)
    assert g["lost_failure_gpu_hours"] > 0 and g["lost_restart_gpu_hours"] > 0


# ----------------------------------------------------------------- independent re-derivation from sacct
def _sacct_instances(out: Path) -> tuple[dict[tuple[str, int], dict[str, str]], dict[str, dict[str, str]], list]:
    """Started instances (latest printed row per (JobIDRaw, Start)), every job's latest row, all rows."""
    started: dict[tuple[str, int], dict[str, str]] = {}
    latest: dict[str, dict[str, str]] = {}
    rows: list[dict[str, str]] = []
    for path in sorted((out / "sacct").glob("sacct_*.psv")):
        for line in path.read_text().splitlines()[1:]:
            rec = dict(zip(SACCT_FIELDS, line.split("|"), strict=True))
            if "." in rec["JobID"]:
                continue
            rows.append(rec)
            latest[rec["JobIDRaw"]] = rec
            if rec["NodeList"] != "None assigned":
                started[(rec["JobIDRaw"], _local_ts(rec["Start"]))] = rec
    return started, latest, rows


def test_truth_matches_sacct_reference(sim: tuple[Path, dict]) -> None:
    """Recompute runs.csv and goodput_daily.csv with plain loops from the sacct dumps, jobs.csv (which
    FAILED jobs a fault killed) and the documented phase draw; everything must agree to the second."""
    out, summary = sim
    last_dump = _ts(summary["last_dump_utc"])
    started, latest, all_rows = _sacct_instances(out)
    jobs = {r["job_id_raw"]: r for r in _csv(out / "truth" / "jobs.csv")}
    runs = {r["run_id"]: r for r in _csv(out / "truth" / "runs.csv")}
    run_of_job = {jid: rid for rid, r in runs.items() for jid in r["job_ids"].split(";")}

    # Instances with their index (rank by start within the job id), in the phase draw order.
    by_job: dict[str, list[tuple[int, dict[str, str]]]] = defaultdict(list)
    for (raw, start), rec in started.items():
        by_job[raw].append((start, rec))
    insts = []
    for raw in sorted(by_job, key=int):
        recs = sorted(by_job[raw], key=lambda x: x[0])
        for index, (start, rec) in enumerate(recs):
            end = last_dump if rec["End"] == "Unknown" else _local_ts(rec["End"])
            gpus = int(rec["AllocTRES"].split("gres/gpu=")[1].split(",")[0])
            state = rec["State"]
            infra = state in ("NODE_FAIL", "PREEMPTED", "REQUEUED") or (
                state == "FAILED" and index == len(recs) - 1 and jobs[raw]["cause"] == "node_fail")
            policy = policy_for(rec["Account"])
            insts.append(dict(raw=raw, job_id=rec["JobID"], index=index, start=start, end=end, gpus=gpus,
                              eligible=_local_ts(rec["Eligible"]), infra=infra, interval=policy.interval_s,
                              u0=policy.restart_overhead_s, run=run_of_job.get(rec["JobID"])))
    # Phases are drawn for the instances whose phase can matter (runs, requeues, fault/preemption ends).
    drawn = [i for i in insts if i["run"] is not None or i["index"] > 0 or i["infra"]]
    assert len(drawn) < len(insts)
    phases = phase_rng(CFG.seed).integers(0, np.array([i["interval"] for i in drawn], dtype=np.int64))
    for inst in insts:
        inst["phase"] = 0  # never used: a first instance of another job ended by the user or the job itself
    for inst, phase in zip(drawn, phases):
        inst["phase"] = int(phase)

    # Chains: the instances of each run by start; of other jobs by index.
    chains: dict[str, list[dict]] = defaultdict(list)
    for inst in insts:
        chains[inst["run"] or f"job:{inst['raw']}"].append(inst)
    day0 = _ts(summary["horizon_start_utc"]) // 86400
    n_days = len(summary["allocated_gpu_hours_by_utc_day"])
    lost_fail, lost_restart = [0] * n_days, [0] * n_days
    expect_runs = {}
    for key, chain in chains.items():
        chain.sort(key=lambda i: i["start"])
        for k, inst in enumerate(chain):
            e = inst["end"] - inst["start"]
            inst["o"] = min(inst["u0"], e) if k > 0 else 0
            inst["lost"] = lost_work_s(e - inst["o"], inst["phase"], inst["interval"])
        charged_o = [0] * len(chain)  # restart overhead after an infrastructure interruption (ETTR and goodput)
        for k, inst in enumerate(chain):
            if inst["infra"]:
                lost_fail[inst["end"] // 86400 - day0] += inst["lost"] * inst["gpus"]
                if k + 1 < len(chain):
                    nxt = chain[k + 1]
                    lost_restart[nxt["start"] // 86400 - day0] += nxt["o"] * nxt["gpus"]
                    charged_o[k + 1] = nxt["o"]
        if key.startswith("job:"):
            continue
        ids = set(runs[key]["job_ids"].split(";"))
        rows = [r for r in all_rows if r["JobID"] in ids]
        live = any(latest[r["JobIDRaw"]]["State"] in ("RUNNING", "PENDING") for r in rows)
        first = min(_local_ts(r["Submit"]) for r in rows)
        end = last_dump if live else max(_local_ts(r["End"]) for r in rows if r["End"] != "Unknown")
        expect_runs[key] = dict(
            n_instances=len(chain), run_s=sum(i["end"] - i["start"] for i in chain),
            queue_s=sum(i["start"] - i["eligible"] for i in chain), restart_overhead_s=sum(charged_o),
            lost_work_s=sum(i["lost"] for i in chain if i["infra"]), wallclock_s=end - first,
            n_jobs=len(ids), interruptions=sum(i["infra"] for i in chain))
    assert set(expect_runs) == set(runs)
    for key, exp in expect_runs.items():
        got = {k: int(runs[key][k]) for k in exp}
        assert got == exp, key

    daily = _csv(out / "truth" / "goodput_daily.csv")
    for i, r in enumerate(daily):
        assert float(r["lost_failure_gpu_hours"]) == pytest.approx(lost_fail[i] / 3600, abs=1e-6), r["day"]
        assert float(r["lost_restart_gpu_hours"]) == pytest.approx(lost_restart[i] / 3600, abs=1e-6), r["day"]
    assert sum(lost_fail) > 0 and sum(lost_restart) > 0


# ----------------------------------------------------------------- summary additions
def test_fault_rate_by_component_sums_to_total(sim: tuple[Path, dict]) -> None:
    out, summary = sim
    rates = dict(summary["fault_rate_per_node_hour_by_component"])
    total = rates.pop("total")
    assert total == pytest.approx(CFG.node_failures_per_1000_node_days / 1000 / 24)
    assert set(rates) == {k.component for k in FAULT_KINDS}
    assert sum(rates.values()) == pytest.approx(total, rel=1e-12)
    w = sum(k.weight for k in FAULT_KINDS)
    gpu_w = sum(k.weight for k in FAULT_KINDS if k.component == "gpu")
    assert rates["gpu"] == pytest.approx(total * gpu_w / w)
    fabric = summary["fabric_fault_rates"]
    assert fabric["leaf_switch_down_per_switch_day"] == CFG.leaf_switch_failures_per_1000_switch_days / 1000
    assert fabric["storage_outage_per_day"] == CFG.storage_outages_per_1000_days / 1000
    assert fabric["kill_jobs"] is False
    assert json.loads((out / "truth" / "summary.json").read_text()) == summary


# ----------------------------------------------------------------- job stream untouched
def test_reliability_truth_does_not_change_the_job_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the reliability recorder stubbed out, sacct and syslog bytes are the same: it draws from no
    shared random stream and changes no instance."""
    cfg = SimulationConfig(nodes=16, days=5, seed=11, node_failures_per_1000_node_days=20)
    simulate_cluster(tmp_path / "with", cfg)
    rec = reliability_truth.ReliabilityRecorder
    monkeypatch.setattr(rec, "record_instance", lambda self, inst, t0, t1: None)
    monkeypatch.setattr(rec, "record_job", lambda self, inst: None)
    monkeypatch.setattr(rec, "finish", lambda self, *a, **k: {})
    simulate_cluster(tmp_path / "without", cfg)

    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
                if p.is_file() and p.relative_to(root).parts[0] in ("sacct", "syslog")}

    a, b = files(tmp_path / "with"), files(tmp_path / "without")
    assert a and a == b
    assert (tmp_path / "with" / "truth" / "runs.csv").exists()
    assert not (tmp_path / "without" / "truth" / "runs.csv").exists()
