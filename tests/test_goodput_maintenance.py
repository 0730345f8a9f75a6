"""Planned maintenance as its own part of goodput's lost capacity (``maintenance_gpu_hours``).

Goodput stays productive / capacity; the column says how much of the idle capacity planned maintenance
took, by the same rule node availability uses (node states with a maintenance reason, or any down time
inside a cluster.yaml window; the windows alone on days without node states). Values worked out by hand:
10 nodes × 8 GPUs = 80 GPUs, 1,920 GPU-hours a day, no job interrupted.
"""

from __future__ import annotations

from datetime import date

import polars as pl
import pytest

from gpusre.models.reliability.goodput import GOODPUT_SCHEMA, goodput_daily

D1, D2 = date(2026, 10, 1), date(2026, 10, 2)
_UTC = pl.Datetime("us", "UTC")
#: No instance at all: the losses are 0 and productive = allocated.
NO_INSTANCES = pl.DataFrame(schema={"job_id": pl.String, "instance_no": pl.Int32, "n_gpus": pl.Int64,
                                    "interrupted": pl.Boolean, "start_ts": _UTC, "end_ts": _UTC,
                                    "lost_work_s": pl.Float64, "charged_overhead_s": pl.Float64})
UTIL = pl.DataFrame({"day": [D1, D2], "capacity_gpu_hours": [1920.0, 1920.0], "allocated_gpu_hours": [960.0, 1800.0]})


def _node_states_day1() -> pl.DataFrame:
    """Day 1 only: n0-n3 drained 12 h for planned maintenance, n4 down 6 h for a fault, the rest in service."""
    maint = [12.0] * 4 + [0.0] * 6
    down_other = [0.0] * 4 + [6.0] + [0.0] * 5
    return pl.DataFrame({"day": [D1] * 10, "node": [f"n{i}" for i in range(10)],
                         "in_service_hours": [24.0 - m - o for m, o in zip(maint, down_other)],
                         "down_maintenance_hours": maint})


def test_maintenance_from_node_states_is_part_of_unavailable() -> None:
    # cluster.yaml would say 100 node-hours on day 1: node states win (what really went down);
    # day 2 has no node states, so its window's 3 node-hours count: 3 × 8 = 24 GPU-h (idle is 120).
    windows = pl.DataFrame({"day": [D1, D2], "maintenance_node_hours": [100.0, 3.0]})
    out = goodput_daily(NO_INSTANCES, UTIL, in_service=_node_states_day1(), gpus_per_node=8, maintenance=windows)
    d1, d2 = out.row(0, named=True), out.row(1, named=True)
    # day 1: in service 4 × 12 + 18 + 5 × 24 = 186 node-h = 1,488 GPU-h; unavailable 432; maintenance 4 × 12 × 8
    assert d1["in_service_gpu_hours"] == 1488.0 and d1["unavailable_gpu_hours"] == 432.0
    assert d1["maintenance_gpu_hours"] == 384.0
    assert d1["goodput"] == pytest.approx(960 / 1920)  # the definition is unchanged: productive / capacity
    assert d2["maintenance_gpu_hours"] == 24.0 and d2["capacity_source"].startswith("cluster.yaml")
    assert list(out.columns) == list(GOODPUT_SCHEMA)


def test_maintenance_never_exceeds_the_idle_capacity() -> None:
    # no node states: day 1's window is 300 node-h = 2,400 GPU-h, but only 1,920 − 960 = 960 were idle
    windows = pl.DataFrame({"day": [D1], "maintenance_node_hours": [300.0]})
    out = goodput_daily(NO_INSTANCES, UTIL, gpus_per_node=8, maintenance=windows)
    assert out.get_column("maintenance_gpu_hours").to_list() == [960.0, 0.0]


def test_without_maintenance_information_the_part_is_zero() -> None:
    # node states without the maintenance column (an older mart) and no windows: nothing is known as planned
    states = _node_states_day1().drop("down_maintenance_hours")
    out = goodput_daily(NO_INSTANCES, UTIL, in_service=states, gpus_per_node=8)
    assert out.get_column("maintenance_gpu_hours").to_list() == [0.0, 0.0]
    assert out.get_column("unavailable_gpu_hours").to_list() == [432.0, 0.0]


# --------------------------------------------------------------------------------------------
# the SLO review's goodput section over a hand-made marts.goodput_daily

def _goodput_mart(with_maintenance: bool = True) -> "duckdb.DuckDBPyConnection":
    """Three days of 48 nodes × 8 GPUs (9,216 GPU-h a day). 10-01: half the day in planned maintenance
    (4,608 GPU-h), nothing ran; 10-02: 4,113 allocated, 1 GPU-h lost to a restart; 10-03: 6,000 allocated,
    100 lost to a failure."""
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts")
    # largest_loss as the mart computes it: 10-01 ties its 4,608 maintenance GPU-h with 4,608 other idle ones
    # (the earlier part, planned maintenance, names it); 10-02 and 10-03 lost most to idle capacity.
    maint = ", maintenance_gpu_hours DOUBLE, largest_loss VARCHAR" if with_maintenance else ""
    con.execute(f"""CREATE TABLE marts.goodput_daily (day DATE, capacity_gpu_hours DOUBLE, allocated_gpu_hours DOUBLE,
                        productive_gpu_hours DOUBLE, lost_failure_gpu_hours DOUBLE, lost_restart_gpu_hours DOUBLE,
                        idle_gpu_hours DOUBLE, goodput DOUBLE, infra_interruptions BIGINT, partial BOOLEAN{maint})""")
    rows = [(D1, 9216.0, 0.0, 0.0, 0.0, 0.0, 9216.0, 0.0, 0, False, 4608.0, "planned_maintenance"),
            (D2, 9216.0, 4113.0, 4112.0, 0.0, 1.0, 5103.0, 4112 / 9216, 1, False, 0.0, "idle"),
            (date(2026, 10, 3), 9216.0, 6000.0, 5900.0, 100.0, 0.0, 3216.0, 5900 / 9216, 1, False, 0.0, "idle")]
    con.executemany(f"INSERT INTO marts.goodput_daily VALUES ({', '.join('?' * (12 if with_maintenance else 10))})",
                    [r if with_maintenance else r[:10] for r in rows])
    return con


def _goodput_section(con):  # noqa: ANN001, ANN202 - DuckDB connection, kit Section
    from datetime import datetime, timezone

    from gpusre.reports.slo.sections import goodput
    from gpusre.reports.slo.window import SloWindow

    return goodput.build(con, SloWindow(D1, date(2026, 10, 3), datetime(2026, 10, 4, tzinfo=timezone.utc), "hand"))


def test_report_names_planned_maintenance_and_never_prints_a_nonzero_share_as_zero() -> None:
    con = _goodput_mart()
    try:
        sec = _goodput_section(con)
    finally:
        con.close()
    first, daily = sec.takeaways
    # capacity 27,648; idle 17,535 = 63.4 %; maintenance 4,608 = 16.7 %; failures 100 = 0.36 %; restarts 1 = 0.0036 %
    assert first == ("Of 27,648 GPU-hours of capacity in the window, 63.4 % sat idle (16.7 % in planned maintenance, "
                     "4,608 GPU-hours), 0.36 % were lost to failures and < 0.01 % to restarts after them (2 "
                     "interruptions by the infrastructure): goodput was 36.2 %.")  # 10,012 / 27,648
    # 10-01 scores 0 % because of the planned drain (and nothing else ran): said so, with the worst other day
    assert daily == ("The worst day was 2026-10-01 at 0.0 % (100.0 % of capacity idle, 50.0 % in planned "
                     "maintenance: a maintenance day, planned maintenance its largest loss); the worst day that was "
                     "not a maintenance day was 2026-10-02 at 44.6 % (55.4 % of capacity idle).")
    table = {r[0].text: (r[1].text, r[2].text) for r in sec.tables[0].rows}
    assert table["of which planned maintenance"] == ("4,608", "16.67 %")
    assert table["Lost to restarts"] == ("1", "< 0.01 %")


def test_report_of_a_warehouse_before_the_maintenance_column() -> None:
    con = _goodput_mart(with_maintenance=False)
    try:
        sec = _goodput_section(con)
    finally:
        con.close()
    assert "planned maintenance" not in " ".join(sec.takeaways)
    assert sec.takeaways[1] == "The worst day was 2026-10-01 at 0.0 % (100.0 % of capacity idle)."


def test_share_text() -> None:
    from gpusre.reports.slo.sections.goodput import share_text

    assert share_text(11 / 285_696, 2) == "< 0.01 %" and share_text(0.0, 2) == "0.00 %"
    assert share_text(0.00005, 2) == "0.01 %"  # rounds up to 0.01 %: printed as it is
    assert share_text(0.0004, 1) == "< 0.1 %" and share_text(None) == "–"
