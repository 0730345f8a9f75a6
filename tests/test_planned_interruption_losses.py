"""What a planned interruption costs (probe AG, F5/F6): one price everywhere.

Planned maintenance that ends a run (attribution ``planned``) loses its work since the last checkpoint and
its restart exactly as a failure does: the attribution marts' ``lost_gpu_hours`` of the planned row, goodput's
``lost_maintenance_gpu_hours`` (its own part, not ``lost_failure``) and ETTR's interruptions all charge the
same GPU-seconds. A PREEMPTED instance is goodput's ``lost_preemption``, no infrastructure interruption.
``largest_loss`` names the part of a day's non-productive capacity that cost it the most.

The probe's lines (8 GPUs each, Δ = 3600 s, u0 = 300 s): job 1001 REQUEUED at 11-10 06:00:30 after 8 h by the
maintenance drain of its node, requeue started 06:30 -> lost 8 × 1,800 s + 8 × 300 s = 4.667 GPU-h (the
probe showed 4.0, and 0 in goodput and ETTR); job 1003 PREEMPTED at 05:55 after 5 h 55 min -> 4.0 GPU-h of
preemption (the probe showed it as an infrastructure interruption); job 1009 FAILED by an Xid after 12 h -> 4.0.
"""

from __future__ import annotations

from datetime import date, datetime, timezone

import polars as pl
import pytest

from gpusre.models.failures.attribution import with_run_losses
from gpusre.models.reliability.goodput import GOODPUT_SCHEMA, LOSS_PARTS, goodput_daily, interruption_cause
from gpusre.models.reliability.training_runs import (RunRules, assign_runs, attributed_interruption_losses,
                                                     charge_interruptions, ettr_runs,
                                                     interruption_losses, run_instances)
from gpusre.models.vocabulary import INFRASTRUCTURE, PLANNED

UTC = timezone.utc
RULES = RunRules()
AS_OF = datetime(2026, 11, 12, tzinfo=UTC)


def ts(day: int, h: int, m: int = 0, s: int = 0) -> datetime:
    return datetime(2026, 11, day, h, m, s, tzinfo=UTC)


#: (job, instance, state, start, end, name): the probe's sacct lines, 8 GPUs on one node each.
ROWS = [("1001", 1, "REQUEUED", ts(9, 22), ts(10, 6, 0, 30), "moe-j"),
        ("1001", 2, "COMPLETED", ts(10, 6, 30), ts(10, 10, 30), "moe-j"),
        ("1003", 1, "PREEMPTED", ts(10, 0), ts(10, 5, 55), "rm-l"),
        ("1009", 1, "FAILED", ts(11, 0), ts(11, 12, 0, 30), "gpt-t"),
        ("2001", 1, "COMPLETED", ts(9, 0), ts(9, 6), "pretrain-a")]
SUBMIT = {"1001": ts(9, 21, 55), "1003": ts(9, 23, 55), "1009": ts(10, 23, 55), "2001": ts(9, 0)}


def frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    """(jobs, instances) as read_reliability_inputs reads them."""
    utc = pl.Datetime("us", "UTC")
    inst = pl.DataFrame(
        [(j, n, st, s, e, int((e - s).total_seconds()), 8, 1, name, SUBMIT[j]) for j, n, st, s, e, name in ROWS],
        schema={"job_id": pl.String, "instance_no": pl.Int32, "state": pl.String, "start_ts": utc, "end_ts": utc,
                "elapsed_s": pl.Int64, "n_gpus": pl.Int64, "n_nodes": pl.Int64, "name": pl.String, "submit_ts": utc},
        orient="row").with_columns(pl.col("submit_ts").alias("eligible_ts"),
                                   (pl.col("instance_no") == pl.col("instance_no").max().over("job_id")).alias("is_latest"))
    jobs = (inst.sort("job_id", "instance_no").group_by("job_id", maintain_order=True)
            .agg(pl.col("state", "n_gpus", "n_nodes", "name", "start_ts", "end_ts").last(),
                 pl.col("submit_ts", "eligible_ts").min())
            .with_columns(pl.lit("u").alias("user"), pl.lit("llm").alias("account"),
                          pl.lit(None, pl.String).alias("comment")))
    return jobs, inst.drop("name")


#: The attribution marts' rows: 1001's requeued instance planned, 1009 the infrastructure's (1003 is no failure).
JOB_ATTR = pl.DataFrame({"job_id": ["1009"], "attribution": [INFRASTRUCTURE]})
INST_ATTR = pl.DataFrame({"job_id": ["1001"], "instance_no": [1], "attribution": [PLANNED]},
                         schema={"job_id": pl.String, "instance_no": pl.Int32, "attribution": pl.String})


def charged() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    jobs, inst = frames()
    runs = assign_runs(jobs, RULES)
    ri = run_instances(inst, jobs, runs, RULES, AS_OF)
    attr = pl.concat([INST_ATTR, ri.filter("is_latest").select("job_id", "instance_no").join(JOB_ATTR, on="job_id")])
    return charge_interruptions(ri.with_columns(interruption_cause(ri, attr))), jobs, runs


def test_each_interruption_has_its_cause() -> None:
    ri, _, _ = charged()
    got = dict(ri.select(pl.concat_str("job_id", pl.lit("/"), "instance_no"), "interruption").iter_rows())
    assert got == {"1001/1": PLANNED, "1001/2": None, "1003/1": "preemption", "1009/1": INFRASTRUCTURE,
                   "2001/1": None}


def test_a_planned_interruption_is_priced_as_a_failure_restart_included() -> None:
    jobs, inst = frames()
    out = attributed_interruption_losses(jobs, inst, JOB_ATTR, INST_ATTR, RULES, AS_OF)
    got = {(r["job_id"], r["instance_no"]): (r["interruption"], r["lost_work_s"], r["restart_s"], r["lost_gpu_hours"])
           for r in out.iter_rows(named=True)}
    assert got == {("1001", 1): (PLANNED, 1800.0, 300, pytest.approx(8 * 2100 / 3600)),   # 4.667, was 4.0
                   ("1009", 1): (INFRASTRUCTURE, 1800.0, 0, pytest.approx(4.0))}
    # the infrastructure's alone, as before
    infra_only = attributed_interruption_losses(jobs, inst, JOB_ATTR, INST_ATTR, RULES, AS_OF,
                                                attributions=(INFRASTRUCTURE,))
    assert infra_only["job_id"].to_list() == ["1009"]
    # the attribution mart's planned row takes that price (its own estimate, 4.0, had no restart)
    attr = pl.DataFrame({"job_id": ["1001", "1007"], "instance_no": [1, 1], "attribution": [PLANNED, "user"],
                         "lost_gpu_hours": [4.0, 0.0]}, schema_overrides={"instance_no": pl.Int32})
    assert with_run_losses(attr, out)["lost_gpu_hours"].to_list() == [pytest.approx(8 * 2100 / 3600), 0.0]


def test_goodput_charges_maintenance_and_preemption_as_their_own_parts() -> None:
    ri, _, _ = charged()
    util = pl.DataFrame({"day": [date(2026, 11, d) for d in (9, 10, 11)], "capacity_gpu_hours": [3072.0] * 3,
                         "allocated_gpu_hours": [64.0, 96.0, 96.0]})
    out = {r["day"].day: r for r in goodput_daily(ri, util).iter_rows(named=True)}
    d10, d11 = out[10], out[11]
    # 11-10: 1001's lost work (ended 06:00:30) and its restart (started 06:30) are the maintenance's;
    # 1003's 4.0 the preemption's; nothing the infrastructure's (the probe: 1 infra interruption, 4.0 lost)
    assert (d10["lost_maintenance_gpu_hours"], d10["planned_interruptions"]) == (pytest.approx(4 + 2 / 3), 1)
    assert (d10["lost_preemption_gpu_hours"], d10["preemptions"]) == (pytest.approx(4.0), 1)
    assert (d10["lost_failure_gpu_hours"], d10["lost_restart_gpu_hours"], d10["infra_interruptions"]) == (0.0, 0.0, 0)
    assert d10["productive_gpu_hours"] == pytest.approx(96 - 4 - 2 / 3 - 4)
    # 11-11: 1009's Xid, the infrastructure's
    assert (d11["lost_failure_gpu_hours"], d11["infra_interruptions"], d11["lost_maintenance_gpu_hours"]) == (
        pytest.approx(4.0), 1, 0.0)
    assert list(goodput_daily(ri, util).columns) == list(GOODPUT_SCHEMA)
    # per cause, the per-interruption prices sum to goodput's columns
    per = interruption_losses(ri).group_by("interruption").agg(pl.col("lost_gpu_hours").sum())
    per = dict(per.iter_rows())
    total = lambda c: sum(r[c] for r in out.values())  # noqa: E731
    assert per[PLANNED] == pytest.approx(total("lost_maintenance_gpu_hours"))
    assert per["preemption"] == pytest.approx(total("lost_preemption_gpu_hours"))
    assert per[INFRASTRUCTURE] == pytest.approx(total("lost_failure_gpu_hours") + total("lost_restart_gpu_hours"))


def test_ettr_counts_the_planned_interruption() -> None:
    """Run 1001: eligible 11-09 21:55, last end 11-10 10:30 = 45,300 s; ran 28,830 + 14,400 = 43,230 s; the
    planned requeue loses 1,800 s and its restart 300 s: ETTR 41,130 / 45,300 = 0.90795 (the probe: 0
    interruptions, 0.9543)."""
    ri, jobs, runs = charged()
    row = ettr_runs(ri, jobs, runs, AS_OF).filter(pl.col("run_id") == "1001").row(0, named=True)
    assert (row["interruptions"], row["lost_work_s"], row["restart_overhead_s"]) == (1, 1800.0, 300)
    assert row["ettr"] == pytest.approx(41130 / 45300)


def _day(cap: float, alloc: float, maint_idle: float, lost: dict[str, float]) -> pl.DataFrame:
    """One day's goodput from hand-made losses (no instance frame: the columns charge_interruptions adds)."""
    utc = pl.Datetime("us", "UTC")
    rows = [("j", i, 8, True, cause, ts(9, 1), ts(9, 2), h * 3600 / 8, 0)
            for i, (cause, h) in enumerate(lost.items(), start=1)]
    inst = pl.DataFrame(rows, schema={"job_id": pl.String, "instance_no": pl.Int32, "n_gpus": pl.Int64,
                                      "interrupted": pl.Boolean, "interruption": pl.String, "start_ts": utc,
                                      "end_ts": utc, "lost_work_s": pl.Float64, "charged_overhead_s": pl.Int64},
                        orient="row")
    util = pl.DataFrame({"day": [date(2026, 11, 9)], "capacity_gpu_hours": [cap], "allocated_gpu_hours": [alloc]})
    windows = pl.DataFrame({"day": [date(2026, 11, 9)], "maintenance_node_hours": [maint_idle / 8]})
    return goodput_daily(inst, util, maintenance=windows, gpus_per_node=8)


def test_largest_loss_names_what_cost_the_day_most() -> None:
    assert LOSS_PARTS == ("planned_maintenance", "idle", "failures", "preemption")
    # The probe's 11-09: 3,072 GPU-h, 117 allocated, 16 GPU-h of it in planned maintenance (0.5 %): idle
    # (2,955 − 16 = 2,939 GPU-h) cost it the most — no maintenance day (the report said "a maintenance day").
    assert _day(3072, 117, 16, {}).item(0, "largest_loss") == "idle"
    # A busy day with 8 nodes drained for a firmware flash: maintenance 8 × 8 × 8 = 512 GPU-h idle + 20 lost
    # to the runs it interrupted > 300 other idle (3,072 − 2,260 − 512) > 30 lost to failures.
    busy = _day(3072, 2260, 512, {PLANNED: 20.0, INFRASTRUCTURE: 30.0})
    assert busy.select("largest_loss", "lost_maintenance_gpu_hours", "lost_failure_gpu_hours").row(0) == (
        "planned_maintenance", 20.0, 30.0)
    # A day a failure storm cost more than anything idle
    assert _day(3072, 3000, 10, {INFRASTRUCTURE: 200.0}).item(0, "largest_loss") == "failures"
    # Nothing lost at all: no largest part
    assert _day(100, 100, 0, {}).item(0, "largest_loss") is None
