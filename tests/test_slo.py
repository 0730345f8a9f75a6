"""Daily SLIs and their budgets on a hand-computed three-day case."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import polars as pl
import pytest

from gpusre.models.reliability.slo import SloTarget, daily_sli_counts, slo_daily

UTC = timezone.utc
T0 = datetime(2026, 5, 1, tzinfo=UTC)
T1 = datetime(2026, 5, 4, tzinfo=UTC)
D = [date(2026, 5, 1), date(2026, 5, 2), date(2026, 5, 3)]
TS = pl.Datetime("us", "UTC")


def inputs() -> dict[str, object]:
    jobs = pl.DataFrame({
        "job_id": ["1", "2", "3", "4"],
        "start_ts": [datetime(2026, 5, 1, 1, tzinfo=UTC)] * 4,
        "end_ts": [datetime(2026, 5, 1, 5, tzinfo=UTC), datetime(2026, 5, 1, 6, tzinfo=UTC),
                   datetime(2026, 5, 2, 6, tzinfo=UTC), None],
    }, schema={"job_id": pl.String, "start_ts": TS, "end_ts": TS})
    attribution = pl.DataFrame({"job_id": ["2", "3"], "attribution": ["infrastructure", "user"]})
    runs = pl.DataFrame({"ongoing": [False, False, True], "n_gpus": [512, 64, 512],
                         "last_end_ts": [datetime(2026, 5, 2, 3, tzinfo=UTC)] * 3,
                         "productive_s": [8000.0, 100.0, 1.0], "wallclock_s": [10000, 1000, 10],
                         "queue_s": [2000, 0, 0]},
                        schema={"ongoing": pl.Boolean, "n_gpus": pl.Int64, "last_end_ts": TS,
                                "productive_s": pl.Float64, "wallclock_s": pl.Int64, "queue_s": pl.Int64})
    goodput = pl.DataFrame({"day": D, "productive_gpu_hours": [700.0, 800.0, 100.0],
                            "capacity_gpu_hours": [1000.0, 1000.0, 1000.0]})
    return dict(node_count=10, maintenance_node_hours=pl.DataFrame({"day": [D[1]], "maintenance_node_hours": [40.0]}),
                down=pl.DataFrame({"day": [D[0]], "down_node_hours": [12.0]}), jobs=jobs, job_attribution=attribution,
                runs=runs, goodput=goodput, ettr_min_run_gpus=256, t0=T0, t1=T1)


def test_daily_counts_hand_computed() -> None:
    c = daily_sli_counts(**inputs())
    get = {(r["sli"], r["day"]): (r["good"], r["total"]) for r in c.iter_rows(named=True)}
    assert get[("node_availability", D[0])] == (240 - 12, 240)
    assert get[("node_availability", D[1])] == (200, 200)  # 40 planned node-hours are out of the total
    assert get[("job_infra_success", D[0])] == (1, 2)       # job 2 killed by the infrastructure
    assert get[("job_infra_success", D[1])] == (1, 1)       # job 3 failed by the user: good
    # default: queue wait out of the denominator, 8,000 / (10,000 − 2,000); the 64-GPU and the ongoing run are out
    assert get[("ettr_large_runs", D[1])] == (8000, 8000)
    assert get[("ettr_large_runs", D[0])] == (0, 0)
    assert get[("goodput", D[2])] == (100, 1000)


def test_budget_and_burn_rates() -> None:
    out = slo_daily(targets=[SloTarget("goodput", 0.70), SloTarget("job_infra_success", 0.9)], window_days=30,
                    **inputs())
    g = out.filter(pl.col("sli") == "goodput").sort("day")
    # day 3: bad 900 of 1000 -> burn (0.9) / 0.3 = 3; 3-day: bad 300+200+900 = 1400 of 3000 -> 1.5556.
    assert g.item(2, "burn_rate_short") == pytest.approx(3.0)
    assert g.item(2, "burn_rate_long") == pytest.approx((1400 / 3000) / 0.3)
    # budget over the window so far: allowed bad 0.3 * 3000 = 900, spent 1400 -> 1 - 1400/900.
    assert g.item(2, "budget_remaining") == pytest.approx(1 - 1400 / 900)
    assert g.item(2, "status") == "exhausted"
    assert g.item(0, "value") == pytest.approx(0.7)
    j = out.filter(pl.col("sli") == "job_infra_success").sort("day")
    # day 1: 1 bad of 2 (objective 0.9 -> burn 0.5 / 0.1 = 5)
    assert j.item(0, "burn_rate_short") == pytest.approx(5.0)
    assert set(out.get_column("sli")) == {"goodput", "job_infra_success"}


def test_node_availability_from_node_states_where_covered() -> None:
    avail = pl.DataFrame({"day": [D[1], D[1]], "node": ["a", "b"], "observed_hours": [24.0, 24.0],
                          "in_service_hours": [20.0, 14.0], "down_maintenance_hours": [0.0, 6.0]})
    c = daily_sli_counts(**inputs(), availability=avail)
    get = {(r["sli"], r["day"]): (r["good"], r["total"]) for r in c.iter_rows(named=True)}
    assert get[("node_availability", D[1])] == (34, 42)  # planned 6 h out of the total
    assert get[("node_availability", D[0])] == (228, 240)  # not covered: the incident estimate


@pytest.mark.parametrize(("includes", "total", "value"), [(True, 10000, 0.8), (False, 8000, 1.0)])
def test_ettr_slo_follows_the_queue_wait_setting_and_shows_both(includes: bool, total: float, value: float) -> None:
    """One large run: productive 8,000 s of 10,000 s wall-clock, 2,000 s of it queued (by hand: 0.8 with queue
    wait, 8,000 / 8,000 = 1.0 without). The SLO counts the configured one; both are in the mart."""
    c = daily_sli_counts(**inputs(), ettr_includes_queue_wait=includes)
    row = c.filter((pl.col("sli") == "ettr_large_runs") & (pl.col("day") == D[1])).row(0, named=True)
    assert (row["good"], row["total"]) == (8000, total)
    out = slo_daily(targets=[SloTarget("ettr_large_runs", 0.9)], window_days=30, **inputs(),
                    ettr_includes_queue_wait=includes)
    day = out.filter(pl.col("day") == D[1]).row(0, named=True)
    assert day["value"] == pytest.approx(value)
    assert (day["ettr"], day["ettr_excl_queue"]) == (pytest.approx(0.8), pytest.approx(1.0))
    assert day["status"] == ("exhausted" if includes else "ok")
    # the definition says which ETTR and why
    assert ("including queue wait" if includes else "excluding queue wait") in day["definition"]
    assert ">= 256 GPUs" in day["definition"]


def test_fallback_downtime_ends_at_the_repair_and_counts_overlaps_once() -> None:
    # Hand-computed (no node-state history): n2 lost a GPU at 19:58 on day 1 and ran a completed job
    # at 12:00 on day 2; a storage incident on n2 09:58-12:00 on day 2 lies inside that outage, so day 2
    # has 12 h down, not 14.03. n4's link flapped at 15:00 and was back (a logged recovery: MTTR's
    # repaired_ts) at 15:02: two minutes down, not until a job completed at 23:00.
    from gpusre.models.reliability.marts import _down_node_hours_daily
    d = lambda day, h, m=0: datetime(2026, 12, day, h, m, tzinfo=timezone.utc)  # noqa: E731
    incidents = pl.DataFrame({
        "scope": ["node", "node", "node", "leaf_switch"],
        "nodes": [["n2"], ["n2"], ["n4"], ["n1", "n3"]],
        "start_ts": [d(1, 19, 58), d(2, 9, 58), d(1, 15), d(1, 1)],
        "recovered_ts": [d(2, 12), d(2, 12), d(1, 23), d(1, 2)],
        "repaired_ts": [None, d(2, 12), d(1, 15, 2), None],
    }, schema_overrides={"start_ts": pl.Datetime("us", "UTC"), "recovered_ts": pl.Datetime("us", "UTC"),
                         "repaired_ts": pl.Datetime("us", "UTC")})
    down = _down_node_hours_daily(incidents, d(3, 0))
    assert down["day"].to_list() == [date(2026, 12, 1), date(2026, 12, 2)]
    assert down["down_node_hours"].to_list() == pytest.approx([4 + 2 / 60 + 2 / 60, 12.0])


def test_a_requeued_run_killed_by_the_infrastructure_is_a_failed_run() -> None:
    """Job 3's earlier run (instance 1) died of a node failure on day 2 and Slurm requeued it; the job
    later failed by the user. Job 4's earlier run failed by its user. Day 2 then has 3 runs, 1 killed by
    the infrastructure: 2 good of 3 (it read 1 of 1 while only final runs counted)."""
    args = inputs()
    earlier = pl.DataFrame({"job_id": ["3", "4"], "instance_no": [1, 1],
                            "start_ts": [T0 + timedelta(days=1, hours=1)] * 2,
                            "end_ts": [T0 + timedelta(days=1, hours=2)] * 2},
                           schema={"job_id": pl.String, "instance_no": pl.Int32, "start_ts": TS, "end_ts": TS})
    attr = pl.DataFrame({"job_id": ["3", "4"], "instance_no": [1, 1], "attribution": ["infrastructure", "user"]},
                        schema={"job_id": pl.String, "instance_no": pl.Int32, "attribution": pl.String})
    c = daily_sli_counts(**args, earlier_runs=earlier, earlier_attribution=attr)
    get = {(r["sli"], r["day"]): (r["good"], r["total"]) for r in c.iter_rows(named=True)}
    assert get[("job_infra_success", D[1])] == (2, 3)
    assert get[("job_infra_success", D[0])] == (1, 2)  # unchanged


# A day the node-state history ends inside (a missing nightly sacctmgr dump): 4 nodes, history to
# 2026-05-02 06:00, observation to 2026-05-03 00:00. Measured 00:00-06:00: a, b, d in service 6 h,
# c down 3 h -> good 21 of 24 node-hours. Rest 06:00-24:00 = 18 h x 4 = 72 node-hours, estimated.
def _partial_history_inputs() -> dict[str, object]:
    days = [date(2026, 5, 1)] * 4 + [date(2026, 5, 2)] * 4
    avail = pl.DataFrame({"day": days, "node": ["a", "b", "c", "d"] * 2,
                          "observed_hours": [24.0] * 4 + [6.0] * 4,
                          "in_service_hours": [22.0, 24.0, 24.0, 24.0, 6.0, 6.0, 3.0, 6.0],
                          "down_maintenance_hours": [0.0] * 8})
    return dict(node_count=4, maintenance_node_hours=pl.DataFrame(schema={"day": pl.Date, "maintenance_node_hours": pl.Float64}),
                down=pl.DataFrame({"day": [date(2026, 5, 2)], "down_node_hours": [12.0]}),
                jobs=pl.DataFrame(), job_attribution=pl.DataFrame(), runs=pl.DataFrame(), goodput=pl.DataFrame(),
                ettr_min_run_gpus=256, t0=datetime(2026, 5, 1, tzinfo=UTC), t1=datetime(2026, 5, 3, tzinfo=UTC),
                availability=avail, job_slis=False)


def test_day_the_node_state_history_ends_inside_is_completed_from_incidents() -> None:
    # Incident down spans: c 05:00-10:00 (4 h after 06:00), d 20:00-02:00 next day (4 h before midnight),
    # a on the day before (nothing in the rest). Rest: 72 - 8 = 64 good -> 21 + 64 = 85 of 24 + 72 = 96.
    spans = pl.DataFrame({"node": ["a", "c", "d"],
                          "start_ts": [datetime(2026, 5, 1, 10, tzinfo=UTC), datetime(2026, 5, 2, 5, tzinfo=UTC),
                                       datetime(2026, 5, 2, 20, tzinfo=UTC)],
                          "end_ts": [datetime(2026, 5, 1, 12, tzinfo=UTC), datetime(2026, 5, 2, 10, tzinfo=UTC),
                                     datetime(2026, 5, 3, 2, tzinfo=UTC)]},
                         schema={"node": pl.String, "start_ts": TS, "end_ts": TS})
    c = daily_sli_counts(**_partial_history_inputs(), down_spans=spans).filter(pl.col("sli") == "node_availability")
    get = {r["day"]: (r["good"], r["total"], r["source"]) for r in c.iter_rows(named=True)}
    assert get[date(2026, 5, 1)] == (94.0, 96.0, "node_states")        # fully covered: measured only
    good, total, source = get[date(2026, 5, 2)]
    assert (good, total, source) == (pytest.approx(85.0), pytest.approx(96.0), "node_states+incidents")
    assert good / total == pytest.approx(85 / 96)                       # 0.885417, not 21/24 = 0.875 on 6 h


def test_partial_history_day_without_spans_takes_the_days_incident_down_time_pro_rata() -> None:
    # down 12 node-hours that day, the rest is 18 of its 24 h -> 9 -> rest good 72 - 9 = 63 -> 84 of 96.
    c = daily_sli_counts(**_partial_history_inputs()).filter(pl.col("sli") == "node_availability")
    row = c.filter(pl.col("day") == date(2026, 5, 2)).row(0, named=True)
    assert (row["good"], row["total"], row["source"]) == (pytest.approx(84.0), pytest.approx(96.0),
                                                          "node_states+incidents")


def test_partial_history_day_with_planned_maintenance_and_no_node_logs() -> None:
    args = _partial_history_inputs()
    # 8 planned node-hours that day: the rest (18 of 24 h) takes 6 of them -> rest total 66, good 66 - 9 = 57.
    args["maintenance_node_hours"] = pl.DataFrame({"day": [date(2026, 5, 2)], "maintenance_node_hours": [8.0]})
    row = daily_sli_counts(**args).filter((pl.col("sli") == "node_availability")
                                          & (pl.col("day") == date(2026, 5, 2))).row(0, named=True)
    assert (row["good"], row["total"]) == (pytest.approx(21.0 + 57.0), pytest.approx(24.0 + 66.0))
    # Without node logs there is no incident to estimate from: the measured part alone, as before.
    args["estimate_availability"] = False
    row = daily_sli_counts(**args).filter((pl.col("sli") == "node_availability")
                                          & (pl.col("day") == date(2026, 5, 2))).row(0, named=True)
    assert (row["good"], row["total"], row["source"]) == (21.0, 24.0, "node_states")
