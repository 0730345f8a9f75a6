"""Lost GPU-hours of an infrastructure-killed run: one definition for attribution and goodput/ETTR.

The loss of an instance the infrastructure killed = GPUs × the expected work since its last checkpoint
(its work time being its elapsed time less its own start-up min(u0, elapsed) when it restarted its run)
+ GPUs × the restart overhead min(u0, elapsed) of the instance that restarted the run after it, once
that restart has started (a job never resubmitted, or whose resubmission is still pending at the end of
the data, costs no restart). Checkpoints every Δ = 3600 s, u0 = 300 s, phase unknown:
E[lost](t) = t − t²/7200 for t < 3600 s, else 1800 s. Every expected value is worked out by hand.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hand_landing import run_hand_landing

from gpusre.models.failures.attribution import attribute_failures, with_run_losses
from gpusre.models.vocabulary import INFRASTRUCTURE
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA
from gpusre.models.reliability.goodput import goodput_daily, interruption_cause
from gpusre.models.reliability.marts import read_reliability_inputs
from gpusre.models.reliability.training_runs import (RunRules, assign_runs, charge_interruptions, ettr_runs,
                                                     attributed_interruption_losses, interruption_losses, run_instances,
                                                     run_mates)
from gpusre.pipelines.runner import run_pipeline

D0 = datetime(2026, 12, 1, tzinfo=timezone.utc)
RULES = RunRules()  # Δ = 3600 s, u0 = 300 s, resubmissions within 6 h


def at(h: float) -> datetime:
    return D0 + timedelta(hours=h)


def inst(job: str, no: int, state: str, start: float, end: float | None, gpus: int, *, name: str = "train",
         user: str = "nora", submit: float | None = None, comment: str | None = None) -> dict:
    """One started instance (hours after 2026-12-01 00:00Z); ``end`` None = still running."""
    return {"job_id": job, "instance_no": no, "state": state, "start_ts": at(start),
            "end_ts": at(end) if end is not None else None,
            "elapsed_s": round((end - start) * 3600) if end is not None else None, "n_gpus": gpus,
            "name": name, "user": user, "comment": comment, "submit_ts": at(start if submit is None else submit)}


def pending(job: str, submit: float, *, name: str = "train", user: str = "nora") -> dict:
    """A job still pending at the end of the data: no instance, no GPUs yet."""
    return {"job_id": job, "instance_no": None, "state": "PENDING", "start_ts": None, "end_ts": None,
            "elapsed_s": None, "n_gpus": None, "name": name, "user": user, "comment": None, "submit_ts": at(submit)}


def frames(rows: list[dict]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(jobs, instances) as read_reliability_inputs reads them."""
    df = pl.DataFrame(rows, schema={
        "job_id": pl.String, "instance_no": pl.Int64, "state": pl.String, "start_ts": pl.Datetime("us", "UTC"),
        "end_ts": pl.Datetime("us", "UTC"), "elapsed_s": pl.Int64, "n_gpus": pl.Int64, "name": pl.String,
        "user": pl.String, "comment": pl.String, "submit_ts": pl.Datetime("us", "UTC")}).with_columns(
        pl.col("submit_ts").alias("eligible_ts"), pl.lit("research").alias("account"),
        (pl.col("n_gpus") // 8).alias("n_nodes"))
    started = df.filter(pl.col("instance_no").is_not_null())
    instances = started.with_columns(
        (pl.col("instance_no") == pl.col("instance_no").max().over("job_id")).alias("is_latest")).select(
        "job_id", "instance_no", "is_latest", "state", "submit_ts", "eligible_ts", "start_ts", "end_ts",
        "elapsed_s", "n_gpus", "n_nodes")
    jobs = (df.sort("job_id", "instance_no", nulls_last=True)
            .group_by("job_id", maintain_order=True)
            .agg(pl.col("user", "account", "name", "comment").last(), pl.col("state").last(),
                 pl.col("n_gpus").last(), pl.col("n_nodes").last(), pl.col("submit_ts").min(),
                 pl.col("eligible_ts").min(), pl.col("start_ts").last(), pl.col("end_ts").last()))
    return jobs, instances


def attributions(jobs: pl.DataFrame, instances: pl.DataFrame,
                 infra: set[tuple[str, int]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(job attribution of each latest instance, attribution of earlier instances): ``infra`` are the
    (job, instance) the infrastructure killed, the rest none."""
    blame = pl.struct("job_id", "instance_no").map_elements(
        lambda r: "infrastructure" if (r["job_id"], r["instance_no"]) in infra else "none", return_dtype=pl.String)
    i = instances.select("job_id", "instance_no", "is_latest", blame.alias("attribution"))
    return (i.filter("is_latest").select("job_id", "attribution"),
            i.filter(~pl.col("is_latest")).select("job_id", "instance_no", "attribution"))


def losses(rows: list[dict], infra: set[tuple[str, int]], as_of: datetime) -> dict[tuple[str, int], dict]:
    jobs, instances = frames(rows)
    job_attr, inst_attr = attributions(jobs, instances, infra)
    out = attributed_interruption_losses(jobs, instances, job_attr, inst_attr, RULES, as_of,
                                         attributions=(INFRASTRUCTURE,))
    return {(r["job_id"], r["instance_no"]): r for r in out.iter_rows(named=True)}


def test_a_restart_that_happened_is_charged_u0() -> None:
    """Job 1 (64 GPUs) ran 2 h, NODE_FAIL; Slurm requeued it and the requeue ran 3 h: lost work Δ/2 =
    1,800 s (+ the requeue's start-up min(300, 3 h) = 300 s): 64 × 2,100 / 3,600 = 37.333 GPU-h."""
    rows = [inst("1", 1, "NODE_FAIL", 0, 2, 64), inst("1", 2, "COMPLETED", 2.5, 5.5, 64)]
    got = losses(rows, {("1", 1)}, at(6))
    assert list(got) == [("1", 1)]
    r = got[("1", 1)]
    assert (r["lost_work_s"], r["restart_s"], r["restart_gpus"]) == (1800.0, 300, 64)
    assert r["lost_gpu_hours"] == pytest.approx(64 * 2100 / 3600)  # 37.333


def test_an_instance_shorter_than_u0_that_was_itself_a_restart() -> None:
    """Run pt-70b (256 GPUs, resubmitted by name): 100 NODE_FAIL after 20 min; 101 (a restart) NODE_FAIL
    after 2 min, shorter than u0, so all of it was start-up and no work was lost; 102 ran 9 h.
    100: E[lost](1,200) = 1,200 − 1,200²/7,200 = 1,000 s + 101's start-up min(300, 120) = 120 s
         -> 256 × 1,120 / 3,600 = 79.644.
    101: E[lost](120 − 120) = 0 + 102's start-up 300 s -> 256 × 300 / 3,600 = 21.333 (not the 256 ×
         (118 + 300) / 3,600 = 29.72 of the whole elapsed time plus u0)."""
    rows = [inst("100", 1, "NODE_FAIL", 0, 1 / 3, 256, submit=0), inst("101", 1, "NODE_FAIL", 0.5, 0.5 + 1 / 30, 256,
                                                                       submit=25 / 60),
            inst("102", 1, "COMPLETED", 1, 10, 256, submit=40 / 60)]
    got = losses(rows, {("100", 1), ("101", 1)}, at(11))
    assert (got[("100", 1)]["lost_work_s"], got[("100", 1)]["restart_s"]) == (pytest.approx(1000.0), 120)
    assert got[("100", 1)]["lost_gpu_hours"] == pytest.approx(256 * 1120 / 3600)
    assert (got[("101", 1)]["lost_work_s"], got[("101", 1)]["restart_s"]) == (0.0, 300)
    assert got[("101", 1)]["lost_gpu_hours"] == pytest.approx(256 * 300 / 3600)


def test_a_pending_resubmission_costs_no_restart_until_it_starts() -> None:
    """Job 300 (128 GPUs) NODE_FAIL after 6 h; resubmission 301 submitted 10 min later. While 301 is
    pending at the end of the data no restart has happened: 128 × 1,800 / 3,600 = 64.0 (goodput charges
    no restart either). Once 301 has started, its start-up is charged as goodput charges it: 2 min in,
    min(300, 120) = 120 s -> 128 × 1,920 / 3,600 = 68.267; past u0, 300 s -> 74.667."""
    failed = inst("300", 1, "NODE_FAIL", 12, 18, 128, name="pend-run", user="pia")
    got = losses([failed, pending("301", 18 + 1 / 6, name="pend-run", user="pia")], {("300", 1)}, at(20))
    assert (got[("300", 1)]["restart_s"], got[("300", 1)]["lost_gpu_hours"]) == (0, pytest.approx(64.0))
    started = inst("301", 1, "RUNNING", 18.5, None, 128, name="pend-run", user="pia", submit=18 + 1 / 6)
    got = losses([failed, started], {("300", 1)}, at(18.5 + 1 / 30))
    assert got[("300", 1)]["lost_gpu_hours"] == pytest.approx(128 * 1920 / 3600)
    got = losses([failed, started], {("300", 1)}, at(20))
    assert got[("300", 1)]["lost_gpu_hours"] == pytest.approx(128 * 2100 / 3600)


def test_a_run_never_resubmitted_costs_its_lost_work_only() -> None:
    """Job 2004 of the bad night: 16 GPUs, 5 h 20 min, killed by a switch flap, never resubmitted:
    16 × 0.5 h = 8.0 GPU-h."""
    got = losses([inst("2004", 1, "FAILED", 8, 8 + 16 / 3, 16, user="erin")], {("2004", 1)}, at(23))
    assert got[("2004", 1)]["lost_gpu_hours"] == pytest.approx(8.0)


def _all_cases() -> tuple[list[dict], set[tuple[str, int]]]:
    rows = [inst("1", 1, "NODE_FAIL", 0, 2, 64, name="a"), inst("1", 2, "COMPLETED", 2.5, 5.5, 64, name="a"),
            inst("100", 1, "NODE_FAIL", 0, 1 / 3, 256), inst("101", 1, "NODE_FAIL", 0.5, 0.5 + 1 / 30, 256),
            inst("102", 1, "FAILED", 1, 10, 256), inst("103", 1, "COMPLETED", 10.2, 12, 256),
            inst("300", 1, "NODE_FAIL", 12, 18, 128, name="pend-run", user="pia"),
            pending("301", 18 + 1 / 6, name="pend-run", user="pia"),
            inst("2004", 1, "FAILED", 8, 8 + 16 / 3, 16, user="erin"),
            # keyed runs across job names, a user failure, and jobs of other runs
            inst("500", 1, "FAILED", 1, 3, 32, name="x", user="quin", comment="run=k1"),
            inst("501", 1, "COMPLETED", 3.1, 8, 32, name="y", user="quin", comment="run=k1"),
            inst("600", 1, "FAILED", 2, 4, 8, name="z", user="olga"), inst("601", 1, "COMPLETED", 4, 6, 8, name="z",
                                                                              user="olga")]
    # 102's FAILED is the infrastructure's (node logs), 600's the user's
    return rows, {("1", 1), ("100", 1), ("101", 1), ("102", 1), ("300", 1), ("2004", 1), ("500", 1)}


def test_the_losses_sum_to_goodputs_and_ettrs() -> None:
    """Per interruption (attribution) and per day (goodput) and per run (ETTR): the same GPU-seconds."""
    rows, infra = _all_cases()
    jobs, instances = frames(rows)
    job_attr, inst_attr = attributions(jobs, instances, infra)
    as_of = at(23)
    runs = assign_runs(jobs, RULES)
    i = run_instances(instances, jobs, runs, RULES, as_of)
    attr = pl.concat([inst_attr, i.filter("is_latest").select("job_id", "instance_no").join(job_attr, on="job_id")])
    charged = charge_interruptions(i.with_columns(interruption_cause(i, attr)))
    per_interruption = interruption_losses(charged)
    util = pl.DataFrame({"day": [D0.date()], "capacity_gpu_hours": [24 * 512.0], "allocated_gpu_hours": [5000.0]})
    goodput = goodput_daily(charged, util, as_of)
    total = goodput.select(pl.col("lost_failure_gpu_hours") + pl.col("lost_restart_gpu_hours")).item()
    assert per_interruption.get_column("lost_gpu_hours").sum() == pytest.approx(total)
    # 1: 37.333; 100: 79.644; 101: 256 × (0 + 102's 300) = 21.333; 102 (9 h, a restart): 256 × (1,800 + 103's
    # 300 s) = 149.333; 300: 64; 2004: 8; 500 (2 h, keyed run k1): 32 × (1,800 + 501's 300 s) = 18.667
    expected = {"1": 64 * 2100, "100": 256 * 1120, "101": 256 * 300, "102": 256 * 2100, "300": 128 * 1800,
                "2004": 16 * 1800, "500": 32 * 2100}
    got = dict(per_interruption.select("job_id", "lost_gpu_hours").iter_rows())
    assert got == {k: pytest.approx(v / 3600) for k, v in expected.items()}
    assert total == pytest.approx(sum(expected.values()) / 3600)
    ettr = ettr_runs(charged, jobs, runs, as_of, RULES.min_gpus)
    gpu_s = ettr.select(pl.col("n_gpus") * (pl.col("lost_work_s") + pl.col("restart_overhead_s"))).sum().item()
    assert gpu_s == pytest.approx(sum(expected.values()))


def test_the_runs_of_the_killed_jobs_alone_give_the_same_losses() -> None:
    """The failure asset assembles only the runs that hold an infrastructure-killed job (run_mates), not
    the year's million: the losses are those of the whole assembly."""
    rows, infra = _all_cases()
    jobs, instances = frames(rows)
    job_attr, inst_attr = attributions(jobs, instances, infra)
    whole = attributed_interruption_losses(jobs, instances, job_attr, inst_attr, RULES, at(23),
                                           attributions=(INFRASTRUCTURE,))
    mates = run_mates(jobs, RULES, pl.Series(["2004", "500"]))
    assert mates.to_list() == ["2004", "500", "501"]  # erin's train jobs; the run=k1 jobs across names
    mates = run_mates(jobs, RULES, pl.Series(sorted({j for j, _ in infra})))
    assert "600" not in mates.to_list() and "601" not in mates.to_list()
    part = attributed_interruption_losses(jobs.filter(pl.col("job_id").is_in(mates.to_list())),
                                          instances.filter(pl.col("job_id").is_in(mates.to_list())),
                                          job_attr, inst_attr, RULES, at(23), attributions=(INFRASTRUCTURE,))
    assert part.equals(whole)



def test_the_losses_of_the_charged_runs_alone_equal_those_of_every_run() -> None:
    """attributed_interruption_losses assembles only the runs that hold a charged instance (2026-12-07: a
    year's ~4,000 killed jobs had 540,000 run mates — a user's every "train" is one chain): each charged
    instance's losses equal those of the whole assembly of every run, as goodput and ETTR take them."""
    rows, infra = _all_cases()
    jobs, instances = frames(rows)
    job_attr, inst_attr = attributions(jobs, instances, infra)
    runs = assign_runs(jobs, RULES)
    i = run_instances(instances, jobs, runs, RULES, at(23)).with_columns(pl.col("instance_no").cast(pl.Int64))
    attr = pl.concat([inst_attr.with_columns(pl.col("instance_no").cast(pl.Int64)),
                      i.filter("is_latest").select("job_id", "instance_no").join(job_attr, on="job_id")],
                     how="vertical_relaxed").unique(["job_id", "instance_no"], keep="first", maintain_order=True)
    every_run = interruption_losses(charge_interruptions(i.with_columns(interruption_cause(i, attr))))
    wanted = attr.filter(pl.col("attribution") == INFRASTRUCTURE).select("job_id", "instance_no")
    expected = every_run.join(wanted, on=["job_id", "instance_no"], how="semi")
    got = attributed_interruption_losses(jobs, instances, job_attr, inst_attr, RULES, at(23),
                                         attributions=(INFRASTRUCTURE,))
    assert got.height == len(infra) and got.equals(expected)

def test_with_run_losses_replaces_the_estimate_of_infrastructure_rows_only() -> None:
    t = D0 + timedelta(hours=12)
    job_rows = pl.DataFrame({"job_id": ["7", "8", "9"], "state": ["NODE_FAIL", "FAILED", "NODE_FAIL"],
                             "nodes": [["n1"], ["n2"], ["n3"]], "n_gpus": [8, 8, 8],
                             "start_ts": [t - timedelta(hours=2)] * 3, "end_ts": [t] * 3, "elapsed_s": [7200] * 3,
                             "exit_code": [0, 1, 0], "exit_signal": [0, 0, 0], "cancelled_by": [None] * 3},
                            schema_overrides={"cancelled_by": pl.Int64})
    attr = attribute_failures(job_rows, pl.DataFrame(schema=EVENT_SCHEMA), pl.DataFrame(schema={
        "incident_id": pl.String, "component": pl.String, "cause_class": pl.String, "severity": pl.String,
        "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"), "nodes": pl.List(pl.String),
        "label_source": pl.String}))
    # without the run: a run's first instance with no restart after it, 8 × 0.5 h
    assert attr.get_column("lost_gpu_hours").to_list() == [4.0, 0.0, 4.0]
    losses = pl.DataFrame({"job_id": ["7", "7", "8"], "instance_no": [1, 2, 1], "is_latest": [False, True, True],
                           "lost_gpu_hours": [1.0, 4.667, 3.0]})
    out = with_run_losses(attr, losses)
    # 7's final record is its latest instance; 8 is the user's (0); 9 has no instance row: its estimate
    assert out.get_column("lost_gpu_hours").to_list() == [4.667, 0.0, 4.0]
    earlier = attr.filter(pl.col("job_id") == "7").with_columns(pl.lit(1).alias("instance_no"))
    assert with_run_losses(earlier, losses).get_column("lost_gpu_hours").to_list() == [1.0]


# -- end to end -------------------------------------------------------------------------------------

HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
          "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|ReqTRES|NodeList|Comment")


def _ts(h: float) -> str:
    return at(h).strftime("%Y-%m-%dT%H:%M:%S")


def _job(jid: str, name: str, user: str, state: str, submit: float, start: float | None, end: float | None,
         nodes: int, nodelist: str) -> str:
    tres = f"billing={96 * nodes},cpu={96 * nodes},gres/gpu={8 * nodes},mem={1000 * nodes}G,node={nodes}"
    if start is None:
        return (f"{jid}|{jid}|{name}|{user}|1101|{user}|research|gpu|normal|{state}|0:0|{_ts(submit)}|{_ts(submit)}|"
                f"Unknown|Unknown|00:00:00|1-00:00:00|{nodes}|{96 * nodes}||{tres}|None assigned|")
    el = round((end - start) * 3600)  # type: ignore[operator]
    return (f"{jid}|{jid}|{name}|{user}|1101|{user}|research|gpu|normal|{state}|0:0|{_ts(submit)}|{_ts(submit)}|"
            f"{_ts(start)}|{_ts(end)}|{el // 3600:02d}:{el % 3600 // 60:02d}:{el % 60:02d}|1-00:00:00|{nodes}|"  # type: ignore[arg-type]
            f"{96 * nodes}|{tres}|{tres}|{nodelist}|")


#: Case (a): run pt-70b on 32 nodes (256 GPUs): 100 NODE_FAIL after 20 min, 101 NODE_FAIL after 2 min,
#: 102 completes 9 h; run pend-run on 16 nodes (128 GPUs): 300 NODE_FAIL after 6 h, 301 still pending.
DUMP = "\n".join([
    HEADER,
    _job("100", "pt-70b", "nora", "NODE_FAIL", 0, 0, 1 / 3, 32, "gpu[001-032]"),
    _job("101", "pt-70b", "nora", "NODE_FAIL", 25 / 60, 0.5, 0.5 + 1 / 30, 32, "gpu[001-032]"),
    _job("102", "pt-70b", "nora", "COMPLETED", 40 / 60, 1, 10, 32, "gpu[001-032]"),
    _job("300", "pend-run", "pia", "NODE_FAIL", 12, 12, 18, 16, "gpu[041-056]"),
    _job("301", "pend-run", "pia", "PENDING", 18 + 1 / 6, None, None, 16, ""),
]) + "\n"
CLUSTER = """cluster: probe
timezone: UTC
nodes: "gpu[001-064]"
gpus_per_node: 8
reliability:
  min_failures: 1
"""
#: 100: 256 × (1,000 + 120) s; 101: 256 × (0 + 300) s; 300: 128 × (1,800 + no restart yet) s.
CASE_A = {"100": 256 * 1120 / 3600, "101": 256 * 300 / 3600, "300": 128 * 1800 / 3600}


@pytest.fixture(scope="module")
def case_a(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lost_a")
    return run_hand_landing(root, {"sacct/sacct_2026-12-01.psv": DUMP, "cluster.yaml": CLUSTER})


def test_case_a_attribution_goodput_and_the_nightly_agree(case_a: Path) -> None:
    con = duckdb.connect(str(case_a.with_name("gpusre.snapshot.duckdb")), read_only=True)
    try:
        got = dict(con.sql("SELECT job_id, lost_gpu_hours FROM marts.job_failure_attribution "
                           "WHERE attribution = 'infrastructure'").fetchall())
        assert got == {k: pytest.approx(v) for k, v in CASE_A.items()}
        # goodput: lost work 256 × 1,000 + 128 × 1,800 s; restarts 256 × (120 + 300) s (101's and 102's start-up)
        lost, restart = con.sql("SELECT sum(lost_failure_gpu_hours), sum(lost_restart_gpu_hours) "
                                "FROM marts.goodput_daily").fetchall()[0]
        assert (lost, restart) == (pytest.approx((256 * 1000 + 128 * 1800) / 3600), pytest.approx(256 * 420 / 3600))
        assert lost + restart == pytest.approx(sum(CASE_A.values()))  # 164.98
        # the failure marts read the run inputs as the reliability marts do, cut to the jobs they name
        from gpusre.models.reliability.marts import run_instances_sql, run_jobs_sql
        inputs = read_reliability_inputs(con)
        con.register("_run_jobs", con.sql("SELECT job_id FROM core.jobs").pl().to_arrow())
        assert con.sql(run_jobs_sql("_run_jobs")).pl().equals(inputs.jobs)
        assert con.sql(run_instances_sql("_run_jobs")).pl().equals(inputs.instances)
    finally:
        con.close()
    nightly = next((case_a.parent.parent / "reports").glob("nightly-*.md")).read_text()
    assert "**Infra failures, whole period:** 3 (165 GPU-h lost" in nightly


# Case (b), the hand-written bad night, is checked in tests/test_bad_night_e2e.py (one pipeline run).
