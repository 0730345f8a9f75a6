"""A training run never crosses a Slurm account (training_runs.RUN_SCOPE), and the SLO report says what
ETTR's wall-clock holds.

A run is one logical task (reliability-facts §1.2), and a task lives in the account that pays for it:
an explicit run key (name or comment) groups the jobs of one account, whoever submitted them — a
colleague or a service user resubmitting under the key continues the run; another account's job with
the same key never does. A resubmission chain (no key, same job name) stays inside the account too,
and matches the user as well: a job name declares nothing. The last tests take probe AN's
case through the pipeline: carol's ``llama-70b-pt-r1..r6`` (``name_run_key: '^(.+)-r[0-9]+$'``) and
hank's ``llama-70b-pt-r1`` in account ``research`` three days later. Every expected value is worked out
by hand below.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing
from report_html import section, visible_text

from gpusre.models.reliability.goodput import interruption_cause
from gpusre.models.reliability.training_runs import (CheckpointAssumption, RunRules, assign_runs,
                                                     charge_interruptions, ettr_runs, run_instances, run_mates)
from gpusre.models.warehouse import connect
from gpusre.reports.kit.formatting import fmt_pct
from gpusre.reports.slo import render_slo_report

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
UTC = pl.Datetime("us", "UTC")
RULES = RunRules(checkpoint=CheckpointAssumption(3600, 300, 0))
JOB_COLS = {"job_id": pl.String, "user": pl.String, "account": pl.String, "name": pl.String, "comment": pl.String,
            "state": pl.String, "n_gpus": pl.Int64, "n_nodes": pl.Int64, "submit_ts": UTC, "start_ts": UTC,
            "end_ts": UTC}
INST_COLS = {"job_id": pl.String, "instance_no": pl.Int32, "state": pl.String, "submit_ts": UTC,
             "eligible_ts": UTC, "start_ts": UTC, "end_ts": UTC, "elapsed_s": pl.Int64, "n_gpus": pl.Int64}


def h(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def frames(rows: list[tuple]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(job_id, user, account, name, comment, state, gpus, submit, start, end) -> jobs, one instance each
    (eligible at submit)."""
    jobs = [(j, u, a, n, c, s, g, max(g // 8, 1), sub, st, e) for j, u, a, n, c, s, g, sub, st, e in rows]
    inst = [(j, 1, s, sub, sub, st, e, int((e - st).total_seconds()), g) for j, _, _, _, _, s, g, sub, st, e in rows]
    return pl.DataFrame(jobs, schema=JOB_COLS, orient="row"), pl.DataFrame(inst, schema=INST_COLS, orient="row")


def mart(jobs: pl.DataFrame, inst: pl.DataFrame, rules: RunRules = RULES) -> dict[str, dict]:
    """The ETTR mart by run id, every failure the user's (no attribution)."""
    runs = assign_runs(jobs, rules)
    ri = run_instances(inst, jobs, runs, rules, h(48))
    none = pl.DataFrame(schema={"job_id": pl.String, "instance_no": pl.Int32, "attribution": pl.String})
    out = ettr_runs(charge_interruptions(ri.with_columns(interruption_cause(ri, none))), jobs, runs, h(48))
    return {r["run_id"]: r for r in out.iter_rows(named=True)}


# ------------------------------------------------------------------ the model, other conventions


#: The default comment key (``run=<key>``): alice starts gpt-x in account llm, the team's service user
#: resubmits it 6 h after her TIMEOUT (an explicit key needs no gap rule), and zed in account vision
#: tags an unrelated job with the same key.
COMMENT_KEY = [
    ("1", "alice", "llm", "gpt-x-a", "run=gpt-x", "TIMEOUT", 16, h(0), h(0), h(4)),
    ("2", "svc-train", "llm", "gpt-x-b", "prio=high,run=gpt-x", "COMPLETED", 16, h(10), h(10), h(12)),
    ("3", "zed", "vision", "gpt-x", "run=gpt-x", "COMPLETED", 8, h(1), h(1), h(3)),
]


def test_comment_key_groups_a_service_users_resubmission_but_not_another_account() -> None:
    jobs, inst = frames(COMMENT_KEY)
    runs = dict(assign_runs(jobs, RULES).select("job_id", "run_id").iter_rows())
    # llm used the key first (submit 00:00): its run keeps the bare key; vision's is qualified
    assert runs == {"1": "gpt-x", "2": "gpt-x", "3": "gpt-x@vision"}
    got = mart(jobs, inst)
    # gpt-x: 0 -> 12 h wall-clock = 43,200 s; run 4 h + 2 h = 21,600 s, the TIMEOUT is the user's: all
    # productive -> 0.5 (with zed's 2 h in it, it was 28,800 / 43,200 = 0.667)
    assert (got["gpt-x"]["job_ids"], got["gpt-x"]["wallclock_s"], got["gpt-x"]["run_s"]) == (["1", "2"], 43200, 21600)
    assert got["gpt-x"]["ettr"] == pytest.approx(0.5)
    assert (got["gpt-x@vision"]["job_ids"], got["gpt-x@vision"]["wallclock_s"]) == (["3"], 7200)
    assert got["gpt-x@vision"]["account"] == "vision" and got["gpt-x@vision"]["run_key_source"] == "comment"


def test_the_account_that_used_a_key_first_names_its_run() -> None:
    # vision's job submitted an hour before alice's: vision's run is "gpt-x", llm's "gpt-x@llm"
    rows = [r if r[0] != "3" else (*r[:7], h(-1), h(-1), h(1)) for r in COMMENT_KEY]
    jobs, _ = frames(rows)
    runs = dict(assign_runs(jobs, RULES).select("job_id", "run_id").iter_rows())
    assert runs == {"1": "gpt-x@llm", "2": "gpt-x@llm", "3": "gpt-x"}


#: Name-based resubmission: alice's llm-7b FAILS at 4 h and she resubmits it 30 min later (eligible
#: 4.5 h); zoe in account other and bob in alice's account run jobs of the same name, eligible 12 and
#: 20 min after the failure, side by side with alice's resubmission.
COLLEAGUE = [
    ("1", "alice", "llm", "llm-7b", "", "FAILED", 16, h(0), h(0), h(4)),
    ("2", "alice", "llm", "llm-7b", "", "COMPLETED", 16, h(4.5), h(5), h(9)),
    ("3", "zoe", "other", "llm-7b", "", "COMPLETED", 16, h(4.2), h(4.2), h(6)),
    ("4", "bob", "llm", "llm-7b", "", "FAILED", 16, h(4 + 1 / 3), h(4 + 1 / 3), h(7)),
]


def test_a_resubmission_chain_stays_with_its_account_and_user() -> None:
    jobs, inst = frames(COLLEAGUE)
    runs = assign_runs(jobs, RULES)
    # bob's same-name job between alice's failure and her resubmission neither joins nor cuts her chain
    assert dict(runs.select("job_id", "run_id").iter_rows()) == {"1": "1", "2": "1", "3": "3", "4": "4"}
    assert dict(runs.select("job_id", "run_key_source").iter_rows()) == {
        "1": "resubmission", "2": "resubmission", "3": "single", "4": "single"}
    r = mart(jobs, inst)["1"]
    # 0 -> 9 h = 32,400 s; run 4 h + 4 h = 28,800 s, all productive (the FAILED is alice's own);
    # queue 30 min of job 2 = 1,800 s
    assert (r["wallclock_s"], r["run_s"], r["queue_s"]) == (32400, 28800, 1800)
    assert r["ettr"] == pytest.approx(28800 / 32400) and r["user"] == "alice"


def test_a_colleague_resubmitting_under_the_run_key_continues_the_run() -> None:
    # the same jobs with alice's key in job 1 and bob's job 4 (he takes over after her failure): one run
    keyed = [(*r[:4], "run=llm-7b-main", *r[5:]) if r[0] in ("1", "4") else r for r in COLLEAGUE]
    jobs, inst = frames(keyed)
    assert dict(assign_runs(jobs, RULES).select("job_id", "run_id").iter_rows()) == {
        "1": "llm-7b-main", "4": "llm-7b-main", "2": "2", "3": "3"}
    # llm-7b-main: 0 -> 7 h = 25,200 s; run 4 h + 2 h 40 min = 24,000 s, all productive
    r = mart(jobs, inst)["llm-7b-main"]
    assert (r["job_ids"], r["wallclock_s"], r["run_s"]) == (["1", "4"], 25200, 24000)


def test_name_key_of_another_spelling_stays_in_its_account() -> None:
    # a site that names segments "<key>.seg<N>"; the regex's first group is the key
    rules = RunRules(name_run_key=r"^(.+)\.seg[0-9]+$", comment_run_key=None, checkpoint=RULES.checkpoint)
    rows = [
        ("1", "ana", "nlp", "t5-xxl.seg1", "", "TIMEOUT", 32, h(0), h(0), h(10)),
        ("2", "ana", "nlp", "t5-xxl.seg2", "", "COMPLETED", 32, h(20), h(20), h(22)),
        ("3", "ben", "speech", "t5-xxl.seg1", "", "COMPLETED", 32, h(30), h(30), h(31)),
    ]
    jobs, inst = frames(rows)
    assert dict(assign_runs(jobs, rules).select("job_id", "run_id").iter_rows()) == {
        "1": "t5-xxl", "2": "t5-xxl", "3": "t5-xxl@speech"}
    # t5-xxl: 0 -> 22 h = 79,200 s, 12 h run -> 43,200 / 79,200 (with ben's job: 0 -> 31 h, 0.419)
    assert mart(jobs, inst, rules)["t5-xxl"]["ettr"] == pytest.approx(43200 / 79200)


def test_run_mates_give_the_runs_of_the_whole_frame() -> None:
    jobs, _ = frames(COMMENT_KEY + [(f"1{j}", *rest) for j, *rest in COLLEAGUE])
    whole = dict(assign_runs(jobs, RULES).select("job_id", "run_id").iter_rows())
    for wanted, mates in ((["3"], ["1", "2", "3"]),  # the key's other account comes along: it names the run
                          (["12"], ["11", "12"])):   # zoe's (account other) and bob's same-name jobs do not
        got = run_mates(jobs, RULES, pl.Series(wanted))
        assert got.to_list() == mates
        sub = dict(assign_runs(jobs.filter(pl.col("job_id").is_in(got.to_list())), RULES)
                   .select("job_id", "run_id").iter_rows())
        assert {j: sub[j] for j in wanted} == {j: whole[j] for j in wanted}


# ------------------------------------------------------------------ probe AN through the pipeline

HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
          "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment|WCKey")
TRES64 = "billing=896,cpu=896,gres/gpu:h100=64,gres/gpu=64,mem=14400G,node=8"
CAROL = "carol|20003|llm-pretrain|llm-pretrain|batch|normal"


def _dump(*lines: str) -> str:
    return "\n".join([HEADER, *lines]) + "\n"


#: Probe AN's run C (final states; each job in the dump of the day it ended) and hank's job.
LANDING = {
    "sacct/sacct_2026-11-02.psv": _dump(
        f"4001|4001|llama-70b-pt-r1|{CAROL}|TIMEOUT|0:0|2026-11-02T00:30:00|2026-11-02T00:30:00|2026-11-02T00:31:00|"
        f"2026-11-02T12:31:14|12:00:14|12:00:00|8|896|{TRES64}|gpu[017-024]||llama70b",
        f"4002|4002|llama-70b-pt-r2|{CAROL}|FAILED|1:0|2026-11-02T00:30:05|2026-11-02T12:31:14|2026-11-02T12:32:00|"
        f"2026-11-02T22:14:30|09:42:30|12:00:00|8|896|{TRES64}|gpu[017-024]||llama70b"),
    "sacct/sacct_2026-11-03.psv": _dump(
        f"4003|4003|llama-70b-pt-r3|{CAROL}|TIMEOUT|0:0|2026-11-02T00:30:10|2026-11-02T22:14:30|2026-11-02T22:20:00|"
        f"2026-11-03T10:20:14|12:00:14|12:00:00|8|896|{TRES64}|gpu[016-019,021-024]||llama70b",
        f"4004|4004|llama-70b-pt-r4|{CAROL}|OUT_OF_MEMORY|0:125|2026-11-02T00:30:15|2026-11-03T10:20:14|"
        f"2026-11-03T10:21:00|2026-11-03T11:05:00|00:44:00|12:00:00|8|896|{TRES64}|gpu[017-024]||llama70b"),
    "sacct/sacct_2026-11-04.psv": _dump(
        f"4005|4005|llama-70b-pt-r5|{CAROL}|TIMEOUT|0:0|2026-11-03T13:00:00|2026-11-03T13:00:00|2026-11-03T13:02:00|"
        f"2026-11-04T01:02:14|12:00:14|12:00:00|8|896|{TRES64}|gpu[017-024]||llama70b",
        f"4006|4006|llama-70b-pt-r6|{CAROL}|COMPLETED|0:0|2026-11-03T13:00:05|2026-11-04T01:02:14|"
        f"2026-11-04T01:03:00|2026-11-04T09:00:00|07:57:00|12:00:00|8|896|{TRES64}|gpu[017-024]||llama70b"),
    "sacct/sacct_2026-11-05.psv": _dump(
        "8001|8001|llama-70b-pt-r1|hank|20008|research|research|batch|normal|COMPLETED|0:0|2026-11-05T08:00:00|"
        "2026-11-05T08:00:00|2026-11-05T08:05:00|2026-11-05T10:05:00|02:00:00|04:00:00|1|112|"
        "billing=112,cpu=112,gres/gpu:h100=8,gres/gpu=8,mem=1800G,node=1|gpu012||"),
    # the IB link that killed 4002 (infrastructure: 4003 restarts it)
    "syslog/2026-11-02/gpu020.log": (
        "Nov  2 22:10:00 gpu020 kernel: [77001.220345] mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN\n"
        "Nov  2 22:40:00 gpu020 kernel: [78801.004512] mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE\n"),
    "cluster.yaml": """cluster: h100-west
timezone: UTC
nodes: "gpu[001-032]"
gpus_per_node: 8
reliability:
  checkpoint: {interval_s: 3600, restart_overhead_s: 300, write_s: 0}
  checkpoint_overrides:
    llm-pretrain: {interval_s: 1800, restart_overhead_s: 600}
  runs:
    name_run_key: '^(.+)-r[0-9]+$'
slo:
  ettr_min_run_gpus: 64
""",
}

# Run C by hand: wall-clock 11-02 00:30 -> 11-04 09:00 = 203,400 s; run 43,214 + 34,950 + 43,214 + 2,640 +
# 43,214 + 28,620 = 195,852 s; 4002 interrupted (Δ 1,800, u0 600): lost Δ/2 = 900 (t = 34,950 − 600 ≥ Δ),
# 4003's restart 600 -> productive 194,352; queue 60 + 46 + 330 + 46 + 120 + 46 = 648 s. The gap after
# the OOM (11:05 -> 13:00) is 6,900 s = 203,400 − 648 − 195,852.
C_WALL, C_QUEUE, C_RUN, C_PROD = 203400, 648, 195852, 194352.0


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = run_hand_landing(tmp_path_factory.mktemp("run_scope"), LANDING)
    return wh.with_name("gpusre.snapshot.duckdb")


def test_another_accounts_job_with_the_run_key_is_its_own_run(warehouse: Path) -> None:
    rows = {r[0]: r[1:] for r in query_rows(
        warehouse, """SELECT run_id, "user", account, job_ids, wallclock_s, queue_s, run_s, productive_s, ettr,
                             ettr_excl_queue FROM marts.ettr_runs WHERE name LIKE 'llama-70b-pt%'""")}
    assert set(rows) == {"llama-70b-pt", "llama-70b-pt@research"}
    c = rows["llama-70b-pt"]
    assert c[:6] == ("carol", "llm-pretrain", ["4001", "4002", "4003", "4004", "4005", "4006"], C_WALL, C_QUEUE, C_RUN)
    assert c[6:] == (pytest.approx(C_PROD), pytest.approx(C_PROD / C_WALL), pytest.approx(C_PROD / (C_WALL - C_QUEUE)))
    # hank: 08:00 -> 10:05 = 7,500 s, 2 h run, 5 min queue
    assert rows["llama-70b-pt@research"][:6] == ("hank", "research", ["8001"], 7500, 300, 7200)
    assert rows["llama-70b-pt@research"][7] == pytest.approx(7200 / 7500)


def test_the_ettr_slo_counts_run_c_alone(warehouse: Path) -> None:
    # >= 64 GPUs: run C only, ending 11-04, without queue wait: 194,352 / 202,752 = 0.95857
    got = query_rows(warehouse, "SELECT day, good, total, value FROM marts.slo_daily "
                                "WHERE sli = 'ettr_large_runs' AND total > 0")
    assert [(d, v) for d, _, _, v in got] == [(date(2026, 11, 4), pytest.approx(C_PROD / (C_WALL - C_QUEUE)))]


def test_slo_report_says_the_gap_after_a_users_own_failure_is_in_the_wall_clock(warehouse: Path,
                                                                               tmp_path: Path) -> None:
    con = connect(warehouse, read_only=True)
    try:
        paths = render_slo_report(con, tmp_path, date(2026, 11, 2), date(2026, 11, 6))
    finally:
        con.close()
    text = visible_text(section(paths.html.read_text(encoding="utf-8"), "ettr"))
    # the number it explains: run C's gap after the OOM is in its wall-clock (6,900 / 203,400)
    assert f"gaps between jobs {fmt_pct((C_WALL - C_QUEUE - C_RUN) / C_WALL)}" in text
    assert "costs nothing" not in text
    assert ("every gap between a job's end and the eligible time of the run's next job count as unproductive, "
            "the time after a user's own failure or cancellation until the resubmission included") in text
    assert "but the gap before its resubmission still lowers ETTR" in text
    assert "they lower the ETTR though they cost no GPU-hours" in text
    assert "explicit run key (job comment / name) whoever in the account submitted them" in text
