"""Time to detect and time to repair hardware incidents, from Slurm node-state history.

A hardware incident (``marts.hw_incidents``: failure events on its nodes from the node logs) is
**linked** to a node's outage when that outage *starts* within ``before`` (30 min) before to
``window`` (24 h) after the incident's start. An outage is a maximal run of overlapping or touching
node states on one node (DRAIN -> DOWN -> DRAIN for a reboot is one outage); an outage already
running before ``incident start - before`` is not the incident's (the node was out already).

* **time to detect** = outage start - incident start (0 when the drain came first, within ``before``);
* **time to repair** = back in service (the outage's end) - outage start. For a multi-node
  incident: from the first node's drain to the last node's return. An outage still open is
  ``ongoing`` (right-censored: left out of the quantiles, counted in ``ongoing``).

Summaries per component (and ``all``): p50/p90 of both, the mean time to repair, and a
distribution-free 95 % interval for the median time to repair from order statistics (binomial
method; needs at least 6 repaired incidents).

>>> from datetime import datetime, timezone
>>> t = lambda h: datetime(2026, 1, 1, h, tzinfo=timezone.utc)
>>> incidents = pl.DataFrame({"incident_id": ["i1"], "component": ["gpu"], "start_ts": [t(1)], "nodes": [["n1"]]})
>>> states = pl.DataFrame({"node": ["n1", "n1"], "start_ts": [t(2), t(5)], "end_ts": [t(6), t(9)],
...                        "reason_class": ["gpu_xid", "not_responding"]})
>>> link_incidents(incidents, states).select("repair_state", "hours_to_detect", "hours_to_repair").row(0)
('repaired', 1.0, 7.0)
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import polars as pl
from scipy.stats import binom

__all__ = [
    "INCIDENT_REPAIR_SCHEMA",
    "REPAIR_TIMES_SCHEMA",
    "link_incidents",
    "median_ci",
    "node_outages",
    "repair_times",
]

_UTC = pl.Datetime("us", "UTC")

#: One row per node outage (merged overlapping/touching node states).
OUTAGE_SCHEMA: dict[str, pl.DataType] = {
    "node": pl.String(), "outage_start_ts": _UTC, "outage_end_ts": _UTC, "first_reason_class": pl.String(),
    "first_reason": pl.String(), "events": pl.Int64(),
}

#: ``marts.incident_repairs``: one row per hardware incident.
INCIDENT_REPAIR_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(),
    "component": pl.String(),
    "incident_start_ts": _UTC,
    "nodes": pl.List(pl.String()),
    "linked_nodes": pl.Int64(),
    "drain_start_ts": _UTC,
    "back_in_service_ts": _UTC,
    "hours_to_detect": pl.Float64(),
    "hours_to_repair": pl.Float64(),
    "repair_state": pl.String(),          # repaired | ongoing | not_drained | no_nodes
    "drain_reason_class": pl.String(),    # reason class of the first linked outage's first event
    "drain_reason": pl.String(),
}

#: ``marts.repair_times``: one row per component, plus ``all``.
REPAIR_TIMES_SCHEMA: dict[str, pl.DataType] = {
    "component": pl.String(),
    "incidents": pl.Int64(),
    "linked_incidents": pl.Int64(),       # with a drain/down in the window
    "repaired": pl.Int64(),
    "ongoing": pl.Int64(),
    "mttd_hours_p50": pl.Float64(),
    "mttd_hours_p90": pl.Float64(),
    "mttr_hours_p50": pl.Float64(),
    "mttr_hours_p90": pl.Float64(),
    "mttr_hours_mean": pl.Float64(),
    "ci_low": pl.Float64(),               # 95 % interval of the median time to repair
    "ci_high": pl.Float64(),
    "note": pl.String(),
}


def node_outages(states: pl.DataFrame) -> pl.DataFrame:
    """Merge each node's overlapping or touching states into outages (:data:`OUTAGE_SCHEMA`).

    ``states``: ``node``, ``start_ts``, ``end_ts`` (null = ongoing), optionally ``reason_class``
    and ``reason``. An outage containing an ongoing state is ongoing (null end).
    """
    cols = {"reason_class": pl.String, "reason": pl.String}
    states = states.with_columns(pl.lit(None, t).alias(c) for c, t in cols.items() if c not in states.columns)
    rows = states.sort("node", "start_ts").select("node", "start_ts", "end_ts", "reason_class", "reason").rows()
    out: list[list[object]] = []
    for node, start, end, rclass, reason in rows:
        last = out[-1] if out else None
        if last is not None and last[0] == node and (last[2] is None or start <= last[2]):
            if last[2] is not None:
                last[2] = None if end is None else max(last[2], end)
            last[5] += 1  # type: ignore[operator]
        else:
            out.append([node, start, end, rclass, reason, 1])
    return pl.DataFrame(out, schema=OUTAGE_SCHEMA, orient="row")


def link_incidents(
    incidents: pl.DataFrame,
    states: pl.DataFrame,
    *,
    before: timedelta = timedelta(minutes=30),
    window: timedelta = timedelta(hours=24),
) -> pl.DataFrame:
    """One row per incident (:data:`INCIDENT_REPAIR_SCHEMA`) with its detection and repair times.

    Args:
        incidents: ``incident_id``, ``component``, ``start_ts``, ``nodes`` (List; empty = no node).
        states: core.node_states (see :func:`node_outages`).
    """
    outages = node_outages(states)
    inc = incidents.select("incident_id", "component", pl.col("start_ts").alias("incident_start_ts"), "nodes")
    pairs = (
        inc.explode("nodes").rename({"nodes": "node"}).filter(pl.col("node").is_not_null())
        .join(outages, on="node", how="inner")
        .filter((pl.col("outage_start_ts") >= pl.col("incident_start_ts") - before)
                & (pl.col("outage_start_ts") <= pl.col("incident_start_ts") + window))
        .sort("incident_id", "node", "outage_start_ts")
        .unique(["incident_id", "node"], keep="first", maintain_order=True)  # the node's first outage
    )
    per_incident = (
        pairs.sort("incident_id", "outage_start_ts")
        .group_by("incident_id", maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("linked_nodes"),
            pl.col("outage_start_ts").min().alias("drain_start_ts"),
            pl.when(pl.col("outage_end_ts").null_count() == 0).then(pl.col("outage_end_ts").max())
            .alias("back_in_service_ts"),
            pl.col("first_reason_class").first().alias("drain_reason_class"),
            pl.col("first_reason").first().alias("drain_reason"),
        )
    )
    hours = lambda a, b: (pl.col(a) - pl.col(b)).dt.total_microseconds() / 3.6e9  # noqa: E731
    out = inc.join(per_incident, on="incident_id", how="left", maintain_order="left").with_columns(
        pl.col("linked_nodes").fill_null(0),
        hours("drain_start_ts", "incident_start_ts").clip(lower_bound=0.0).alias("hours_to_detect"),
        hours("back_in_service_ts", "drain_start_ts").alias("hours_to_repair"),
        pl.when(pl.col("nodes").list.len().fill_null(0) == 0).then(pl.lit("no_nodes"))
        .when(pl.col("drain_start_ts").is_null()).then(pl.lit("not_drained"))
        .when(pl.col("back_in_service_ts").is_null()).then(pl.lit("ongoing"))
        .otherwise(pl.lit("repaired")).alias("repair_state"),
    )
    return out.select(list(INCIDENT_REPAIR_SCHEMA)).cast(INCIDENT_REPAIR_SCHEMA)  # type: ignore[arg-type]


def median_ci(values: np.ndarray | list[float], level: float = 0.95) -> tuple[float | None, float | None]:
    """Distribution-free interval for the median from order statistics: ``(x_(l), x_(n-l+1))`` with
    the largest ``l`` such that P(Binomial(n, 1/2) < l) <= (1 - level) / 2. (None, None) when n is
    too small for the level (n < 6 at 95 %).

    >>> median_ci([1, 2, 3, 4, 5, 6])
    (1.0, 6.0)
    >>> median_ci([1, 2, 3])
    (None, None)
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if n == 0:
        return None, None
    alpha = (1 - level) / 2
    # P(B <= l - 1) <= alpha  <=>  l - 1 <= the alpha-quantile bound
    l = 0
    while l + 1 <= n and binom.cdf(l, n, 0.5) <= alpha:
        l += 1
    if l < 1:
        return None, None
    return float(x[l - 1]), float(x[n - l])


def _summary(component: str, part: pl.DataFrame) -> dict[str, object]:
    linked = part.filter(pl.col("drain_start_ts").is_not_null())
    repaired = part.filter(pl.col("repair_state") == "repaired")
    ttr = repaired["hours_to_repair"].to_numpy()
    ttd = linked["hours_to_detect"].to_numpy()
    low, high = median_ci(ttr)
    q = lambda a, p: float(np.quantile(a, p)) if a.size else None  # noqa: E731
    note = None
    if ttr.size == 0:
        note = "no repaired incident linked to a drain"
    elif low is None:
        note = f"{ttr.size} repaired incidents: too few for a 95% interval of the median"
    return {
        "component": component,
        "incidents": part.height,
        "linked_incidents": linked.height,
        "repaired": repaired.height,
        "ongoing": int((part["repair_state"] == "ongoing").sum()),
        "mttd_hours_p50": q(ttd, 0.5),
        "mttd_hours_p90": q(ttd, 0.9),
        "mttr_hours_p50": q(ttr, 0.5),
        "mttr_hours_p90": q(ttr, 0.9),
        "mttr_hours_mean": float(ttr.mean()) if ttr.size else None,
        "ci_low": low,
        "ci_high": high,
        "note": note,
    }


def repair_times(linked: pl.DataFrame) -> pl.DataFrame:
    """:data:`REPAIR_TIMES_SCHEMA`: one row per component (by incidents, descending) and ``all`` first."""
    if linked.height == 0:
        return pl.DataFrame(schema=REPAIR_TIMES_SCHEMA)
    linked = linked.with_columns(pl.col("component").fill_null("other"))
    rows = [_summary("all", linked)]
    counts = linked.group_by("component").len().sort(["len", "component"], descending=[True, False])
    for component in counts["component"].to_list():
        rows.append(_summary(component, linked.filter(pl.col("component") == component)))
    return pl.DataFrame(rows, schema=REPAIR_TIMES_SCHEMA)
