"""MTBF marts on hand-computed small cases: exposure, maintenance, scopes, insufficient data, trend, TBF."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import polars as pl
import pytest

from node_event_lines import T0 as T0_LINES
from node_event_lines import events_from_lines

from gpusre.models.component_classes import load_component_classes
from gpusre.models.reliability.failure_rates import garwood_interval
from gpusre.models.failures.hw_incidents import merge_incidents
from gpusre.models.reliability.mtbf import (
    MaintenanceSpan,
    mtbf_around_maintenance,
    mtbf_table,
    mtbf_trend,
    node_exposure,
    periods,
    tbf_weibull,
)

UTC = timezone.utc
T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 3, 1, tzinfo=UTC)  # Jan (744 h) + Feb (672 h) = 1,416 h
NODES = ["gpu01", "gpu02", "gpu03", "gpu04"]


def incidents(rows: list[tuple[str, str, datetime, list[str], str]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"incident_id": pl.String, "component": pl.String,
                                      "start_ts": pl.Datetime("us", "UTC"), "nodes": pl.List(pl.String),
                                      "scope": pl.String}, orient="row")


def test_periods_are_all_plus_clipped_months() -> None:
    got = [(p[1], (p[3] - p[2]).total_seconds() / 3600) for p in periods(T0 + timedelta(days=10), T1)]
    assert got == [("all", 1416 - 240), ("2026-01", 744 - 240), ("2026-02", 672)]


def test_exposure_subtracts_maintenance_per_node() -> None:
    w = [MaintenanceSpan(datetime(2026, 1, 31, 20, tzinfo=UTC), datetime(2026, 2, 1, 4, tzinfo=UTC),
                         frozenset({"gpu01", "gpu02"})),
         MaintenanceSpan(datetime(2026, 2, 10, tzinfo=UTC), datetime(2026, 2, 10, 2, tzinfo=UTC), None)]
    exp = node_exposure(NODES, T0, T1, w)
    by = {(r["period"], r["node"]): r["exposure_hours"] for r in exp.iter_rows(named=True)}
    # gpu01: 4 h of the first window in January, 4 h in February, plus 2 h of the cluster-wide one.
    assert by[("2026-01", "gpu01")] == 744 - 4
    assert by[("2026-02", "gpu01")] == 672 - 4 - 2
    assert by[("2026-02", "gpu03")] == 672 - 2
    assert by[("all", "gpu01")] == 1416 - 10
    assert by[("all", "gpu04")] == 1416 - 2


def test_mtbf_scopes_counts_and_garwood_limits() -> None:
    exp = node_exposure(NODES, T0, T1)
    inc = incidents([
        ("a", "gpu_memory", datetime(2026, 1, 5, tzinfo=UTC), ["gpu01"], "node"),
        ("b", "pcie_bus", datetime(2026, 1, 9, tzinfo=UTC), ["gpu01"], "node"),
        ("c", "gpu_compute", datetime(2026, 2, 3, tzinfo=UTC), ["gpu02"], "node"),
        ("d", "network_switch", datetime(2026, 2, 4, tzinfo=UTC), ["gpu01", "gpu02", "gpu03"], "leaf_switch"),
        ("e", "storage", datetime(2026, 2, 20, tzinfo=UTC), ["gpu04"], "node"),
    ])
    m = mtbf_table(inc, exp, gpus_per_node=8, t0=T0, t1=T1, min_failures=3)
    row = m.filter((pl.col("period") == "all") & (pl.col("scope") == "cluster")).row(0, named=True)
    exposure = 4 * 1416
    assert row["failures"] == 5 and row["exposure_hours"] == exposure
    assert row["mtbf_hours"] == pytest.approx(exposure / 5)
    lo, hi = garwood_interval(5, exposure)
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(1 / hi), pytest.approx(1 / lo))
    assert row["rate_per_1000_node_days"] == pytest.approx(5 / (exposure / 24) * 1000)
    gpu = m.filter((pl.col("period") == "all") & (pl.col("scope") == "component_class")
                   & (pl.col("component") == "gpu")).row(0, named=True)
    # three GPU incidents (memory, bus, compute): enough for an estimate, with GPU-hours.
    assert gpu["failures"] == 3 and gpu["sufficient"]
    assert gpu["exposure_gpu_hours"] == exposure * 8 and gpu["mtbf_gpu_hours"] == pytest.approx(exposure * 8 / 3)
    net = m.filter((pl.col("period") == "all") & (pl.col("scope") == "component_class")
                   & (pl.col("component") == "network")).row(0, named=True)
    assert net["failures"] == 1 and net["mtbf_hours"] is None and not net["sufficient"]
    assert net["note"].startswith("insufficient data: 1 failure in ") and net["ci_low"] is not None
    # a class with no failure in February still has a row (0 failures, unbounded upper limit)
    feb_storage_jan = m.filter((pl.col("period") == "2026-01") & (pl.col("component") == "storage")
                               & (pl.col("scope") == "component_class")).row(0, named=True)
    assert feb_storage_jan["failures"] == 0 and feb_storage_jan["ci_high"] is None
    nodes = {r["node"]: r["failures"] for r in m.filter(pl.col("scope") == "node").iter_rows(named=True)}
    # node scope counts node incidents only (the switch incident is not a node failure)
    assert nodes == {"gpu01": 2, "gpu02": 1, "gpu03": 0, "gpu04": 1}


def test_every_catalog_component_has_a_class() -> None:
    classes = load_component_classes()
    assert classes.get_column("component").is_unique().all()
    assert set(classes.get_column("component_class")) == {"gpu", "nvlink", "network", "storage", "host", "thermal", "power", "other"}
    for comp in ("gpu_memory", "pcie_bus", "nvlink", "network_switch", "storage", "host_memory"):
        assert comp in classes.get_column("component").to_list()


def test_trend_flags_a_significant_rise() -> None:
    exp = node_exposure(NODES, T0, T1)
    rows = [(f"j{i}", "gpu_memory", datetime(2026, 1, 2 + i, tzinfo=UTC), ["gpu01"], "node") for i in range(2)]
    rows += [(f"f{i}", "gpu_memory", datetime(2026, 2, 1, i, tzinfo=UTC), ["gpu02"], "node") for i in range(20)]
    trend = mtbf_trend(mtbf_table(incidents(rows), exp, 8, T0, T1))
    gpu = trend.filter(pl.col("component") == "gpu").row(0, named=True)
    assert (gpu["period"], gpu["previous_period"], gpu["failures"], gpu["previous_failures"]) == ("2026-02", "2026-01", 20, 2)
    assert gpu["direction"] == "worse" and gpu["p_value"] < 0.001
    assert gpu["rate_ratio"] == pytest.approx((20 / (4 * 672)) / (2 / (4 * 744)))


def test_tbf_merges_same_failure_and_censors_tails() -> None:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [("a", "gpu_memory", base + timedelta(hours=100), ["gpu01"], "node"),
            ("b", "pcie_bus", base + timedelta(hours=100, minutes=10), ["gpu01"], "node"),  # same failure
            ("c", "gpu_memory", base + timedelta(hours=300), ["gpu01"], "node"),
            ("d", "gpu_memory", base + timedelta(hours=350), ["gpu01"], "node"),
            ("e", "gpu_memory", base + timedelta(hours=400), ["gpu02"], "node")]
    out = tbf_weibull(incidents(rows), NODES, T0, T1)
    allrow = out.filter(pl.col("component_class") == "all").row(0, named=True)
    # observed gaps: 200 h and 50 h on gpu01; censored: gpu01 after 350 h, gpu02 after 400 h,
    # gpu03 and gpu04 the whole span.
    assert allrow["n_failures"] == 2 and allrow["n_censored"] == 4
    assert allrow["shape"] is None and allrow["interpretation"].startswith("insufficient data")


def test_one_fault_seen_by_several_components_is_one_failure() -> None:
    # The incident model merges what one fault logs (catalog/fault_signatures.csv); MTBF counts its rows.
    at = datetime(2026, 1, 10, tzinfo=UTC) - T0_LINES
    lines = [(at, "gpu01", "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (xxx xxx)"),
             (at + timedelta(seconds=1), "gpu01", "[ 6821.518487] Kernel panic - not syncing: Fatal exception"),
             (at + timedelta(hours=5), "gpu02", "NVRM: Xid (PCI:0000:18:00): 74, pid=1912, name=python, NVLink: fatal error"),
             (at + timedelta(hours=5, seconds=12), "gpu02",
              "[6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up"),
             (at + timedelta(hours=2), "gpu01", "[ 6821.518487] Kernel panic - not syncing: Fatal exception")]
    lines += [(at + timedelta(hours=9, seconds=i), n, "mlx5_core 0000:08:00.0 mlx5_0: Port: 1 Link DOWN")
              for i, n in enumerate(["gpu01", "gpu02", "gpu03"])]
    inc, _ = merge_incidents(events_from_lines(lines), topology={"leaf01": "gpu[01-03]"})
    assert sorted(inc.select("component", "component_class").rows()) == [
        ("host_memory", "host"), ("network_switch", "network"), ("nvswitch", "nvlink"), ("os", "host")]
    m = mtbf_table(inc, node_exposure(NODES, T0, T1), 8, T0, T1)
    allp = m.filter(pl.col("period") == "all")
    assert allp.filter(pl.col("scope") == "cluster").item(0, "failures") == 4
    by_class = dict(allp.filter(pl.col("scope") == "component_class").select("component", "failures").rows())
    # every hardware class of the catalog has its row; those that did not fail count 0
    assert by_class == {"host": 2, "network": 1, "nvlink": 1, "gpu": 0, "power": 0, "storage": 0, "thermal": 0}


def test_rate_after_an_upgrade_vs_before() -> None:
    upgrade = MaintenanceSpan(datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 2, 1, 6, tzinfo=UTC),
                              frozenset({"gpu01", "gpu02"}))
    rows = [("b1", "gpu_memory", datetime(2026, 1, 10, tzinfo=UTC), ["gpu01"], "node"),
            ("x", "gpu_memory", datetime(2026, 1, 11, tzinfo=UTC), ["gpu03"], "node")]  # not an upgraded node
    rows += [(f"a{i}", "gpu_memory", datetime(2026, 2, 2 + i, tzinfo=UTC), ["gpu02"], "node") for i in range(12)]
    out = mtbf_around_maintenance(incidents(rows), NODES, T0, T1, [upgrade])
    gpu = out.filter(pl.col("component") == "gpu").row(0, named=True)
    assert gpu["comparison"].startswith("after maintenance (2026-02-01)")
    # 2 nodes x 744 h before; 2 nodes x (672 - 6) h after
    assert (gpu["failures"], gpu["previous_failures"]) == (12, 1)
    assert gpu["rate_ratio"] == pytest.approx((12 / (2 * 666)) / (1 / (2 * 744)))
    assert gpu["direction"] == "worse" and gpu["previous_mtbf_hours"] is None
    assert mtbf_trend(mtbf_table(incidents(rows), node_exposure(NODES, T0, T1), 8, T0, T1)).item(
        0, "comparison") == "month over month"


def test_exposure_subtracts_exactly_the_unplanned_down_time() -> None:
    from gpusre.models.reliability.mtbf import exposure_from_availability

    t1 = datetime(2026, 1, 3, 12, tzinfo=UTC)  # 2.5 days
    avail = pl.DataFrame({
        "day": [date(2026, 1, 1), date(2026, 1, 2), date(2026, 1, 3), date(2026, 1, 2)],
        "node": ["gpu01", "gpu01", "gpu01", "gpu02"],
        # gpu02's rows start mid-day (the mart began with its first event): a partial day is not down time
        "observed_hours": [24.0, 24.0, 12.0, 14.0],
        "in_service_hours": [20.0, 21.0, 10.0, 13.0],
        "down_maintenance_hours": [0.0, 3.0, 0.0, 0.0]})
    w = [MaintenanceSpan(datetime(2026, 1, 2, 10, tzinfo=UTC), datetime(2026, 1, 2, 13, tzinfo=UTC),
                         frozenset({"gpu01", "gpu02"}))]
    exp = exposure_from_availability(avail, ["gpu01", "gpu02"], T0, t1, w)
    got = {(r["period"], r["node"]): r["exposure_hours"] for r in exp.iter_rows(named=True)}
    # gpu01: day 1 24 - 4 h down = 20; day 2 24 - 3 h planned (its down time is that window) = 21;
    # day 3 (to 12:00) 12 - 2 h down = 10.
    assert got[("all", "gpu01")] == pytest.approx(20 + 21 + 10)
    # gpu02: day 1 no rows = 24 (no node-state row: nothing to subtract); day 2 24 - 1 h down = 23 — it stayed
    # in service through the planned window, so the window is not taken out (one rule with the SLI's total);
    # day 3 12.
    assert got[("all", "gpu02")] == pytest.approx(24 + 23 + 12)
    assert got[("2026-01", "gpu01")] == pytest.approx(51)


def test_failure_window_is_the_accounting_span_cut_to_the_node_logs() -> None:
    import doctest

    from gpusre.models.reliability import marts as reliability_marts
    from gpusre.models.reliability.marts import failure_window

    assert doctest.testmod(reliability_marts).failed == 0
    d = lambda h: datetime(2026, 8, 1, tzinfo=UTC) + timedelta(hours=h)  # noqa: E731
    # Logs from 05:00 (the first dump's local midnight) to 40 h (16:00, 8 h before midnight): the first day
    # counts whole from its midnight (models/accounting_span.py), the window ends with the logs.
    assert failure_window(d(0), d(48), (d(5), d(40))) == (d(0), d(40))
    # Logs wider than the accounting, or no logs: the accounting's span, from its first day's midnight.
    assert failure_window(d(5), d(40), (d(0), d(48))) == (d(0), d(40))
    assert failure_window(d(5), d(40), (None, None)) == (d(0), d(40))
    # Logs ending at 23:17 and accounting at 23:30 (at most an hour before midnight): both end at midnight,
    # where the capacity and the open outages end (outside probe z: the window once ended at 23:17).
    assert failure_window(d(0), d(47.5), (d(0.3), d(47 + 17 / 60))) == (d(0), d(48))


# --------------------------------------------------------------------------------------------
# before/after a planned window: the exposure of marts.mtbf, sides named to the minute

_W_T0, _W_T1 = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 5, tzinfo=UTC)  # 96 h
_WINDOW = MaintenanceSpan(datetime(2026, 1, 3, 6, tzinfo=UTC), datetime(2026, 1, 3, 18, tzinfo=UTC), None,
                          "firmware upgrade")
# n1: 4 h unplanned down on 01-02; on 01-03 down 12 h in the window (planned) + 3 h unplanned.
# n2: stayed in service through the window. n3: no node-state row (the window comes out).
_AVAIL = pl.DataFrame({"day": [date(2026, 1, 2), date(2026, 1, 3), date(2026, 1, 3)], "node": ["n1", "n1", "n2"],
                       "observed_hours": [24.0, 24.0, 24.0], "in_service_hours": [20.0, 9.0, 24.0],
                       "down_maintenance_hours": [0.0, 12.0, 0.0]})
_W_ROWS = [("g1", "gpu_memory", datetime(2026, 1, 1, 10, tzinfo=UTC), ["n1"], "node"),
           ("g2", "gpu_memory", datetime(2026, 1, 2, 10, tzinfo=UTC), ["n2"], "node"),
           ("g3", "gpu_compute", datetime(2026, 1, 3, 2, tzinfo=UTC), ["n3"], "node"),
           ("i1", "network_switch", datetime(2026, 1, 2, 12, tzinfo=UTC), ["n1"], "node"),
           ("m1", "gpu_memory", datetime(2026, 1, 3, 10, tzinfo=UTC), ["n2"], "node"),  # in the window: neither side
           ("a1", "gpu_memory", datetime(2026, 1, 3, 18, tzinfo=UTC), ["n3"], "node")]  # at its end: after


def test_around_maintenance_uses_the_in_service_exposure_of_marts_mtbf() -> None:
    from scipy.stats import binomtest

    from gpusre.models.reliability.mtbf import exposure_from_availability

    out = mtbf_around_maintenance(incidents(_W_ROWS), ["n1", "n2", "n3"], _W_T0, _W_T1, [_WINDOW],
                                  availability=_AVAIL)
    by = {r["component"]: r for r in out.iter_rows(named=True)}
    c = by["all"]
    # Before = [01-01 00:00, 01-03 06:00) = 54 h a node, after = [01-03 18:00, 01-05 00:00) = 30 h.
    # n1: 24 + (24 - 4) + its 01-03 outside the window: (24 - 15 down) - 0 in service in it = 9, split 6 : 6
    #     -> before 48.5, after 4.5 + 24 = 28.5
    # n2: 01-03 in service 24, of which 12 in the window -> 12 outside, 6 : 6 -> before 54, after 30
    # n3: no row: 01-03 = 24 - 12 (window) = 12 -> before 54, after 30
    before, after = 48.5 + 54 + 54, 28.5 + 30 + 30
    assert (c["failures"], c["previous_failures"]) == (1, 4)
    assert c["previous_mtbf_hours"] == pytest.approx(before / 4)  # 39.125 h
    assert c["mtbf_hours"] is None  # 1 failure < min_failures
    assert c["rate_ratio"] == pytest.approx((1 / after) / (4 / before))
    assert c["p_value"] == pytest.approx(binomtest(1, 5, after / (after + before)).pvalue)
    assert c["direction"] == "no significant change"
    assert by["gpu"]["previous_mtbf_hours"] == pytest.approx(before / 3)
    # the sides and the window's in-service hours (n2's 12 h) make up marts.mtbf's whole-record exposure
    whole = exposure_from_availability(_AVAIL, ["n1", "n2", "n3"], _W_T0, _W_T1, [_WINDOW])
    assert whole.filter(pl.col("period") == "all").get_column("exposure_hours").sum() == pytest.approx(
        before + after + 12)
    # sides named with their times: the window cuts 01-03 at 06:00 and 18:00
    assert (c["previous_period"], c["period"]) == ("2026-01-01 00:00 to 2026-01-03 06:00",
                                                    "2026-01-03 18:00 to 2026-01-05 00:00")
    assert c["comparison"] == "after firmware upgrade (2026-01-03)"
    # 1 network failure before, 0 after: too few on both sides to test
    net = by["network"]
    assert (net["direction"], net["p_value"], net["rate_ratio"]) == ("insufficient data", None, None)


def test_around_maintenance_without_node_states_is_cluster_yaml_minus_windows() -> None:
    out = mtbf_around_maintenance(incidents(_W_ROWS), ["n1", "n2", "n3"], _W_T0, _W_T1, [_WINDOW])
    c = out.filter(pl.col("component") == "all").row(0, named=True)
    assert c["previous_mtbf_hours"] == pytest.approx(3 * 54 / 4)
    assert c["rate_ratio"] == pytest.approx((1 / (3 * 30)) / (4 / (3 * 54)))


def test_trend_with_too_few_failures_on_both_sides_is_insufficient_data() -> None:
    from scipy.stats import binomtest

    exp = node_exposure(NODES, T0, T1)  # January 4 x 744 h, February 4 x 672 h
    rows = [("n", "network_switch", datetime(2026, 1, 5, tzinfo=UTC), ["gpu01"], "node")]  # 1 vs 0
    rows += [(f"s{i}", "storage", datetime(2026, 1, 6 + i, tzinfo=UTC), ["gpu02"], "node") for i in range(3)]  # 3 vs 0
    trend = mtbf_trend(mtbf_table(incidents(rows), exp, 8, T0, T1, min_failures=3))
    by = {r["component"]: r for r in trend.filter(pl.col("scope") == "component_class").iter_rows(named=True)}
    assert (by["network"]["direction"], by["network"]["p_value"]) == ("insufficient data", None)
    # January has enough storage failures: tested. P(0 of 3 in February) = (1 - 2688 / 5664)^3 = 0.145;
    # two-sided, well above 0.05.
    assert by["storage"]["direction"] == "no significant change"
    assert by["storage"]["p_value"] == pytest.approx(binomtest(0, 3, 2688 / 5664).pvalue)
