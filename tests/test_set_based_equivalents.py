"""Set-based rewrites of row loops checked against the loops they replaced, on random inputs.

``node_outages`` merged states in a Python loop and ``median_ci`` searched its order statistic by one
binomial cdf call per step (2026-12-06: 0.3 s and 0.7 s of a year's night); the references below are
those loops, kept as the definition the vectorized code must equal.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from gpusre.models.reliability.repair_times import OUTAGE_SCHEMA, median_ci, node_outages

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def _outages_by_loop(states: pl.DataFrame) -> pl.DataFrame:
    """The loop node_outages was until 2026-12-06: a state overlapping or touching the open outage of its
    node joins it; an ongoing one (null end) absorbs every later state of the node."""
    rows = states.sort("node", "start_ts", maintain_order=True).select(
        "node", "start_ts", "end_ts", "reason_class", "reason").rows()
    out: list[list[object]] = []
    for node, start, end, rclass, reason in rows:
        last = out[-1] if out else None
        if last is not None and last[0] == node and (last[2] is None or start <= last[2]):
            if last[2] is not None:
                last[2] = None if end is None else max(last[2], end)
            last[5] += 1
            last[6].append(rclass)
            last[7].append(reason)
        else:
            out.append([node, start, end, rclass, reason, 1, [rclass], [reason]])
    return pl.DataFrame(out, schema=OUTAGE_SCHEMA, orient="row")


_state = st.tuples(st.sampled_from(["n1", "n2", "n3"]), st.integers(0, 40), st.one_of(st.none(), st.integers(0, 12)),
                   st.sampled_from([None, "gpu_xid", "reboot", "maintenance"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(_state, max_size=25))
def test_node_outages_equal_the_loop(raw: list[tuple[str, int, int | None, str | None]]) -> None:
    """Any mix of overlapping, touching, contained, ongoing and tied states merges as the loop did."""
    states = pl.DataFrame(
        {"node": [r[0] for r in raw],
         "start_ts": [T0 + timedelta(hours=r[1]) for r in raw],
         "end_ts": [None if r[2] is None else T0 + timedelta(hours=r[1] + r[2]) for r in raw],
         "reason_class": [r[3] for r in raw],
         "reason": [f"reason {i}" for i in range(len(raw))]},
        schema={"node": pl.String, "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"),
                "reason_class": pl.String, "reason": pl.String})
    got = node_outages(states)
    assert got.schema == pl.Schema(OUTAGE_SCHEMA)
    assert got.to_dicts() == _outages_by_loop(states).to_dicts()


def test_node_outages_hand_case() -> None:
    """n1: 01-02 touches 02-04 (one outage of two states), 05-06 alone; n2: an ongoing state absorbs a later one."""
    h = lambda x: T0 + timedelta(hours=x)  # noqa: E731
    states = pl.DataFrame({"node": ["n1", "n1", "n1", "n2", "n2"], "start_ts": [h(1), h(2), h(5), h(1), h(9)],
                           "end_ts": [h(2), h(4), h(6), None, h(10)]})
    got = node_outages(states).select("node", "outage_start_ts", "outage_end_ts", "events").rows()
    assert got == [("n1", h(1), h(4), 2), ("n1", h(5), h(6), 1), ("n2", h(1), None, 2)]


def _median_ci_by_loop(values: list[float], level: float) -> tuple[float | None, float | None]:
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if n == 0:
        return None, None
    alpha, l = (1 - level) / 2, 0
    while l + 1 <= n and binom.cdf(l, n, 0.5) <= alpha:
        l += 1
    return (None, None) if l < 1 else (float(x[l - 1]), float(x[n - l]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1e4, allow_nan=False), max_size=300), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_median_ci_equals_the_loop(values: list[float], level: float) -> None:
    assert median_ci(values, level) == _median_ci_by_loop(values, level)


def test_alert_levels_read_labels_of_any_text() -> None:
    """Labels are read by DuckDB's JSON paths (one parse per distinct text): text that is no JSON, a null and
    a nested value give no label rather than stopping the night, and a PDU label still makes a power alert."""
    from gpusre.models.alerts.clustering import alert_levels

    alerts = pl.DataFrame({"alertname": ["PduOutletDown", "PduOutletDown", "Whatever", "Whatever"],
                           "target_label": [None, None, None, None], "node": [None, None, None, None],
                           "labels": ['{"pdu": "pdu-r12-a", "severity": "critical"}', "not json {", None,
                                      '{"pdu": {"nested": 1}, "instance": 5}']},
                          schema={"alertname": pl.String, "target_label": pl.String, "node": pl.String,
                                  "labels": pl.String})
    levels = alert_levels(alerts).to_list()
    assert len(levels) == 4 and levels[2] == "other"
    assert levels[0] != "other" and levels[1] == levels[2]
