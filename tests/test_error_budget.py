"""Error budgets and burn rates (gpusre.models.reliability.error_budget) against hand-computed values."""

from datetime import date, datetime, timedelta

import polars as pl
import pytest

from gpusre.models.reliability.error_budget import (
    PAGE_FAST,
    PAGE_SLOW,
    TICKET,
    WORKBOOK_WINDOWS,
    burn_rate,
    error_budget,
    multiwindow_status,
    rolling_burn_rates,
    slo_status,
)


def test_error_budget_by_hand():
    # 99 % SLO, 1000 events, 5 bad: allowed = 0.01 * 1000 = 10; consumed 5/10 = 0.5; remaining 0.5.
    st = error_budget(995, 1000, 0.99)
    assert st.bad == 5
    assert st.sli == pytest.approx(0.995)
    assert st.allowed_bad == pytest.approx(10.0)
    assert st.consumed == pytest.approx(0.5)
    assert st.remaining == pytest.approx(0.5)
    # Overspent: 30 bad of 1000 -> consumed 3, remaining -2 (kept negative on purpose).
    assert error_budget(970, 1000, 0.99).remaining == pytest.approx(-2.0)
    # Exactly on budget is exactly 0 left (1 - 0.99 is rounded, see _budget_fraction).
    assert error_budget(990, 1000, 0.99).remaining == 0.0
    empty = error_budget(0, 0, 0.99)
    assert (empty.sli, empty.consumed, empty.remaining) == (None, None, None)


def test_burn_rate_by_hand():
    # (5/1000) / 0.01 = 0.5; at 99.9 %: 2 bad of 1000 -> 0.002 / 0.001 = 2.
    assert burn_rate(995, 1000, 0.99) == pytest.approx(0.5)
    assert burn_rate(998, 1000, 0.999) == pytest.approx(2.0)
    assert burn_rate(0, 0, 0.99) is None
    for bad_args in [(5, 4, 0.99), (-1, 4, 0.99), (1, 4, 1.0), (1, 4, 0.0)]:
        with pytest.raises(ValueError):
            burn_rate(*bad_args)


def test_workbook_table_thresholds_follow_the_derivation():
    # threshold = budget fraction * 720 h / long window: 0.02*720/1 = 14.4, 0.05*720/6 = 6, 0.10*720/72 = 1.
    period = timedelta(days=30)
    for row in WORKBOOK_WINDOWS:
        assert row.threshold == pytest.approx(row.budget_fraction * period / row.long_window)
        assert row.short_window * 12 == row.long_window  # short window is 1/12 of the long one
    assert (PAGE_FAST.threshold, PAGE_SLOW.threshold, TICKET.threshold) == (14.4, 6.0, 1.0)
    assert (PAGE_FAST.severity, TICKET.severity) == ("page", "ticket")


def test_multiwindow_requires_both_windows():
    assert multiwindow_status(15.0, 20.0, 14.4)
    assert not multiwindow_status(15.0, 2.0, 14.4)   # already recovered: short window resets it
    assert not multiwindow_status(2.0, 20.0, 14.4)   # brief spike: not significant yet
    assert not multiwindow_status(14.4, 14.4, 14.4)  # strictly greater
    assert not multiwindow_status(None, 20.0, 1.0)


@pytest.mark.parametrize(("remaining", "short", "long", "expected"), [
    (None, None, None, "no_data"),
    (0.0, 0.1, 0.1, "exhausted"),
    (-0.5, 10.0, 10.0, "exhausted"),
    (0.8, 7.0, 6.5, "page"),
    (0.8, 7.0, 2.0, "ticket"),      # 6x only on the short window, but > 1x on both
    (0.8, 1.5, 1.2, "ticket"),
    (0.8, 3.0, 0.9, "warning"),     # short-window spike not confirmed by the long window
    (0.2, 0.5, 0.5, "warning"),     # little budget left
    (0.8, 0.5, 0.9, "ok"),
    (0.8, None, 0.9, "ok"),
])
def test_slo_status_rules(remaining, short, long, expected):
    assert slo_status(remaining, short, long) == expected


def test_slo_status_custom_thresholds():
    assert slo_status(0.9, 10.0, 10.0, page_threshold=PAGE_FAST.threshold) == "ticket"
    assert slo_status(0.9, 15.0, 15.0, page_threshold=PAGE_FAST.threshold) == "page"


DAYS = pl.DataFrame({
    "day": [date(2026, 1, 1), date(2026, 1, 2), date(2026, 1, 4), date(2026, 1, 4)],
    "good": [990, 995, 90, 100],
    "total": [1000, 1000, 100, 100],
})


def test_rolling_burn_rates_fill_gaps_with_calendar_days():
    # Objective 0.99 (budget 1 %). Jan 4 has two rows -> 190/200 (10 bad). Jan 3 is missing.
    #   day   bad/total  short(1d)          long(3d)                     budget(30d)
    #   Jan1  10/1000    0.01/0.01 = 1.0    1.0                          1 - 10/10 = 0
    #   Jan2   5/1000    0.5                15/2000 = 0.0075 -> 0.75     1 - 15/20 = 0.25
    #   Jan3   0/0       null               Jan1-3: 0.75                 0.25
    #   Jan4  10/200     0.05 -> 5.0        Jan2-4: 15/1200 -> 1.25      1 - 25/22 = -0.136364
    # (Row-based windows would put Jan1 into Jan4's 3-day window: 25/2200 -> 1.136, wrong.)
    out = rolling_burn_rates(DAYS, "day", "good", "total", objective=0.99)
    assert out["day"].to_list() == [date(2026, 1, d) for d in (1, 2, 3, 4)]
    assert out["total"].to_list() == [1000.0, 1000.0, 0.0, 200.0]
    assert out["burn_rate_short"].to_list() == [pytest.approx(1.0), pytest.approx(0.5), None, pytest.approx(5.0)]
    assert out["burn_rate_long"].to_list() == pytest.approx([1.0, 0.75, 0.75, 1.25])
    assert out["budget_remaining"].to_list() == pytest.approx([0.0, 0.25, 0.25, -3 / 22], abs=1e-12)
    assert out["window_days_covered"].to_list() == [1, 2, 3, 4]
    statuses = [slo_status(r["budget_remaining"], r["burn_rate_short"], r["burn_rate_long"])
                for r in out.iter_rows(named=True)]
    # Jan1: exactly on budget (remaining 0, not 9e-16 from 1 - 0.99) -> exhausted;
    # Jan2/Jan3: 25 % left is not < 25 % and no window burns > 1x -> ok; Jan4 overspent -> exhausted.
    assert out["budget_remaining"][0] == 0.0
    assert statuses == ["exhausted", "ok", "ok", "exhausted"]


def test_rolling_burn_rates_short_budget_window_and_datetime_input():
    # window_days = 2: Jan4's budget covers Jan3 + Jan4 only: 10 bad of 200, allowed 2 -> 1 - 5 = -4.
    dt = DAYS.with_columns(pl.col("day").cast(pl.Datetime("us")) + pl.duration(hours=13))
    out = rolling_burn_rates(dt, "day", "good", "total", objective=0.99, window_days=2, long_days=2)
    assert out.schema["day"] == pl.Date
    assert out["budget_remaining"][-1] == pytest.approx(-4.0)
    # long (2d) at Jan2: Jan1-2 -> 15/2000 -> 0.75; at Jan4: Jan3-4 -> 10/200 -> 5.0.
    assert out["burn_rate_long"].to_list() == pytest.approx([1.0, 0.75, 0.5, 5.0])
    assert out["window_days_covered"].to_list() == [1, 2, 2, 2]


def test_rolling_burn_rates_by_group():
    df = pl.DataFrame({
        "day": [datetime(2026, 1, 2), datetime(2026, 1, 3), datetime(2026, 1, 1), datetime(2026, 1, 3)],
        "partition": ["b", "b", "a", "a"],
        "good": [50, 40, 99, 100],
        "total": [50, 50, 100, 100],
    })
    out = rolling_burn_rates(df, "day", "good", "total", objective=0.9, by="partition")
    # a: Jan1 1/100 bad -> burn 0.1; Jan2 filled (null short, 0 events); Jan3 0 bad -> 0;
    #    long at Jan3 = Jan1-3: 1 bad / 200 events = 0.005 / 0.1 = 0.05
    # b: Jan2 0 bad -> 0; Jan3 10/50 -> 0.2/0.1 = 2; long 10/100 -> 1.0; budget 1 - 10/10 = 0.
    a = out.filter(pl.col("partition") == "a")
    b = out.filter(pl.col("partition") == "b")
    assert a["day"].to_list() == [date(2026, 1, 1), date(2026, 1, 2), date(2026, 1, 3)]
    assert a["burn_rate_short"].to_list() == [pytest.approx(0.1), None, pytest.approx(0.0)]
    assert a["burn_rate_long"][-1] == pytest.approx(0.05)
    assert b["burn_rate_short"].to_list() == pytest.approx([0.0, 2.0])
    assert b["burn_rate_long"].to_list() == pytest.approx([0.0, 1.0])
    assert b["budget_remaining"].to_list() == pytest.approx([1.0, 0.0], abs=1e-12)
    assert b["window_days_covered"].to_list() == [1, 2]


def test_rolling_burn_rates_rejects_bad_counts():
    bad = pl.DataFrame({"day": [date(2026, 1, 1)], "good": [5], "total": [4]})
    with pytest.raises(ValueError):
        rolling_burn_rates(bad, "day", "good", "total", objective=0.99)
