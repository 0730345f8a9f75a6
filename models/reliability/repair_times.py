"""Time to detect and time to repair hardware incidents, from Slurm node-state history.

A hardware incident (``marts.hw_incidents``: failure events on its nodes from the node logs) is
**linked** to a node's outage when that outage *starts* within ``before`` (30 min) before to
``window`` (24 h) after the incident's start. An outage is a maximal run of overlapping or touching
node states on one node (DRAIN -> DOWN -> DRAIN for a reboot is one outage); an outage already
running before ``incident start - before`` is not the incident's (the node was out already).

* **time to detect** = outage start - incident start (0 when the drain came first, within ``before``);
* **time to repair** = back in service - the incident's first evidence: the moment every linked node
  of the incident is back (its merged DOWN/DRAIN outage ended), for every scope — switch and storage
  incidents included. An outage still open is ``ongoing`` (right-censored: left out of the
  quantiles, counted in ``ongoing``).
* **Without node states** for an incident (none ingested, or its nodes were never drained) the repair
  end falls back, in this order, to the moment every node logged a *recovery* of the incident's class
  after its own last evidence (a port back to ``Link ACTIVE``, a Lustre client's ``Connection restored``:
  ``catalog/recovery_events.csv``, :func:`recovery_ends`), to the end of its evidence when health checks
  saw it (NHC stops failing when the condition clears), else — for one-node incidents only — to the first
  job on its node that completed afterwards (``recovered_ts`` of ``marts.hw_incidents``; across many
  nodes that waits for the slowest node's next job, which says nothing about the repair).
  ``repair_source`` says which (``node_states``, ``recovery_events``, ``health_checks``,
  ``job_completed``), and the summaries count each.

Summaries per component class (the classes MTBF uses, and ``all``): p50/p90 of both, the mean time
to repair, and a distribution-free 95 % interval for the median time to repair from order statistics
(binomial method; needs at least 6 repaired incidents).

>>> from datetime import datetime, timezone
>>> t = lambda h: datetime(2026, 1, 1, h, tzinfo=timezone.utc)
>>> incidents = pl.DataFrame({"incident_id": ["i1"], "component": ["gpu"], "start_ts": [t(1)], "nodes": [["n1"]]})
>>> states = pl.DataFrame({"node": ["n1", "n1"], "start_ts": [t(2), t(5)], "end_ts": [t(6), t(9)],
...                        "reason_class": ["gpu_xid", "not_responding"]})
>>> link_incidents(incidents, states).select("repair_state", "hours_to_detect", "hours_to_repair").row(0)
('repaired', 1.0, 8.0)
"""

from __future__ import annotations

from datetime import timedelta
from functools import lru_cache
from importlib import resources

import numpy as np
import polars as pl
from scipy.stats import binom

from gpusre.models.vocabulary import class_of
from gpusre.models.failures.drain_reasons import load_drain_reason_rules

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
    "reason_classes": pl.List(pl.String()),  # every merged state's reason class, in start order
}

#: ``marts.incident_repairs``: one row per hardware incident.
INCIDENT_REPAIR_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(),
    "component": pl.String(),
    "component_class": pl.String(),
    "scope": pl.String(),
    "incident_start_ts": _UTC,
    "nodes": pl.List(pl.String()),
    "linked_nodes": pl.Int64(),
    "drain_start_ts": _UTC,
    "back_in_service_ts": _UTC,
    "hours_to_detect": pl.Float64(),
    "hours_to_repair": pl.Float64(),
    "repair_state": pl.String(),          # repaired | ongoing | not_drained | no_nodes
    "repair_source": pl.String(),         # node_states | recovery_events | health_checks | job_completed
    "repaired_ts": _UTC,                  # the repair end hours_to_repair runs to
    "drain_reason_class": pl.String(),    # reason class of the first linked outage's first event
    "drain_reason": pl.String(),
}

#: ``marts.repair_times``: one row per component class, plus ``all``.
REPAIR_TIMES_SCHEMA: dict[str, pl.DataType] = {
    "component_class": pl.String(),
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
    "from_node_states": pl.Int64(),       # repairs timed by node states; the rest fell back (see repair_source)
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
            last[6].append(rclass)  # type: ignore[union-attr]
        else:
            out.append([node, start, end, rclass, reason, 1, [rclass]])
    return pl.DataFrame(out, schema=OUTAGE_SCHEMA, orient="row")


def link_incidents(
    incidents: pl.DataFrame,
    states: pl.DataFrame,
    *,
    before: timedelta = timedelta(minutes=30),
    window: timedelta = timedelta(hours=24),
    after_end: timedelta = timedelta(hours=1),
    recoveries: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per incident (:data:`INCIDENT_REPAIR_SCHEMA`) with its detection and repair times.

    An outage is the incident's only on one of its own nodes, starting from ``before`` its first
    evidence to ``after_end`` after its last (at most ``window`` after its start), and not drained
    for another class of fault only: a drain whose reasons name only a different component class (a
    GPU Xid drain during a storage outage) belongs to another incident.

    Args:
        incidents: ``incident_id``, ``component``, ``start_ts``, ``nodes`` (List; empty = no node);
            optionally ``component_class``, ``scope``, ``end_ts``, ``n_health_check_episodes`` and
            ``recovered_ts`` for the fallbacks (module docstring).
        states: core.node_states (see :func:`node_outages`); may be empty.
        recoveries: :func:`recovery_ends` output (``incident_id``, ``recovered_ts``), or None.
    """
    def optional(name: str, dtype: pl.DataType) -> pl.Expr:
        return pl.col(name).cast(dtype) if name in incidents.columns else pl.lit(None, dtype)

    outages = node_outages(states).with_columns(
        _reason_class_of(pl.col("first_reason_class")).alias("_reason_cc"),
        pl.col("reason_classes").list.eval(_reason_class_of(pl.element())).alias("_reason_ccs"))
    if recoveries is None:
        recoveries = pl.DataFrame(schema={"incident_id": pl.String, "recovered_ts": _UTC})
    inc = incidents.join(recoveries.select("incident_id", pl.col("recovered_ts").cast(_UTC).alias("_logged_up")),
                         on="incident_id", how="left", maintain_order="left").select(
        "incident_id", "component",
        pl.coalesce(optional("component_class", pl.String()), class_of(pl.col("component"))).alias("component_class"),
        optional("scope", pl.String()).alias("scope"),
        pl.col("start_ts").alias("incident_start_ts"), "nodes",
        optional("end_ts", _UTC).alias("_evidence_end"),
        optional("n_health_check_episodes", pl.Int64()).fill_null(0).alias("_hc"),
        optional("recovered_ts", _UTC).alias("_recovered"),
        "_logged_up",
    )
    pairs = (
        inc.explode("nodes").rename({"nodes": "node"}).filter(pl.col("node").is_not_null())
        .join(outages, on="node", how="inner")
        .filter((pl.col("outage_start_ts") >= pl.col("incident_start_ts") - before)
                & (pl.col("outage_start_ts") <= pl.min_horizontal(
                    pl.col("incident_start_ts") + window,
                    pl.max_horizontal("_evidence_end", "incident_start_ts") + after_end))
                # Another class's drain is another incident's, unless the outage's drains (merged when
                # they overlap: a GPU ECC drain, then the IB link's) name this incident's class too.
                & (pl.col("_reason_cc").is_null() | (pl.col("_reason_cc") == pl.col("component_class"))
                   | pl.col("_reason_ccs").list.contains(pl.col("component_class"))))
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
    drained = pl.col("drain_start_ts").is_not_null()
    one_node = pl.col("nodes").list.len().fill_null(0) == 1
    source = (pl.when(drained).then(pl.lit("node_states"))
              .when(pl.col("_logged_up").is_not_null()).then(pl.lit("recovery_events"))
              .when(pl.col("_hc") > 0).then(pl.lit("health_checks"))
              .when(one_node & pl.col("_recovered").is_not_null()).then(pl.lit("job_completed")))
    repaired_at = (pl.when(drained).then(pl.col("back_in_service_ts"))
                   .when(pl.col("_logged_up").is_not_null()).then(pl.col("_logged_up"))
                   .when(pl.col("_hc") > 0).then(pl.col("_evidence_end"))
                   .when(one_node).then(pl.col("_recovered")))
    out = inc.join(per_incident, on="incident_id", how="left", maintain_order="left").with_columns(
        pl.col("linked_nodes").fill_null(0),
        hours("drain_start_ts", "incident_start_ts").clip(lower_bound=0.0).alias("hours_to_detect"),
        source.alias("repair_source"),
        repaired_at.alias("repaired_ts"),
    ).with_columns(
        hours("repaired_ts", "incident_start_ts").clip(lower_bound=0.0).alias("hours_to_repair"),
        pl.when(pl.col("nodes").list.len().fill_null(0) == 0).then(pl.lit("no_nodes"))
        .when(drained & pl.col("back_in_service_ts").is_null()).then(pl.lit("ongoing"))
        .when(pl.col("repaired_ts").is_not_null()).then(pl.lit("repaired"))
        .otherwise(pl.lit("not_drained")).alias("repair_state"),
    )
    return out.select(list(INCIDENT_REPAIR_SCHEMA)).cast(INCIDENT_REPAIR_SCHEMA)  # type: ignore[arg-type]


#: Drain-reason components that any fault can show (a dead node is "Not responding" whatever broke).
_GENERIC_REASON_COMPONENTS = frozenset({"os", "slurm", "other"})


def _reason_class_of(reason_class: pl.Expr) -> pl.Expr:
    """Component class a drain reason class names (drain-reason catalog); null when the reason names
    none or only a symptom any fault has (Not responding, a reboot, a Slurm error)."""
    rules = load_drain_reason_rules().select("reason_class", "component").unique("reason_class", keep="first")
    mapping = dict(zip(rules["reason_class"].to_list(),
                       [None if c in _GENERIC_REASON_COMPONENTS else c for c in rules["component"].to_list()],
                       strict=True))
    component = reason_class.replace_strict(mapping, default=None, return_dtype=pl.String)
    return pl.when(component.is_not_null()).then(class_of(component))


#: How long after a node's last evidence a recovery line still counts as that fault's repair.
RECOVERY_HORIZON = timedelta(days=7)


@lru_cache(maxsize=1)
def load_recovery_kinds() -> pl.DataFrame:
    """``kind``, ``component_class``: event kinds that say a node recovered from a fault of that class."""
    text = resources.files("gpusre.models.catalog").joinpath("recovery_events.csv").read_bytes()
    return pl.read_csv(text).select("kind", "component_class")


def recovery_lines(events: pl.DataFrame) -> pl.DataFrame:
    """``node``, ``component_class``, ``_up``: the recovery lines among node events (a port back
    ``ACTIVE``, a Lustre client reconnected: ``catalog/recovery_events.csv``).

    Args:
        events: node events with ``node``, ``ts``, ``kind`` (other columns are ignored).
    """
    return (events.select("node", pl.col("ts").cast(_UTC).alias("_up"), "kind").join(load_recovery_kinds(), on="kind")
            .select("node", "component_class", "_up"))


def recovery_ends(evidence: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """``incident_id``, ``recovered_ts``: when every node of an incident had logged a recovery of the
    incident's class (``catalog/recovery_events.csv``) after its own last evidence, within
    :data:`RECOVERY_HORIZON`; incidents with a node that logged none are left out.

    Args:
        evidence: one row per incident and node: ``incident_id``, ``component_class``, ``node``, ``last_ts``.
        events: node events with ``node``, ``ts``, ``kind`` (others are ignored).
    """
    rec = recovery_lines(events).sort("_up")
    if evidence.is_empty() or rec.is_empty():
        return pl.DataFrame(schema={"incident_id": pl.String, "recovered_ts": _UTC})
    per_node = (evidence.select("incident_id", "component_class", "node", pl.col("last_ts").cast(_UTC))
                .drop_nulls("node").sort("last_ts")
                .join_asof(rec, left_on="last_ts", right_on="_up", by=["node", "component_class"],
                           strategy="forward", tolerance=RECOVERY_HORIZON, check_sortedness=False))
    return (per_node.group_by("incident_id")
            .agg(pl.col("_up").null_count().alias("_missing"), pl.col("_up").max().alias("recovered_ts"))
            .filter(pl.col("_missing") == 0).select("incident_id", "recovered_ts").sort("incident_id"))


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


def _summary(component_class: str, part: pl.DataFrame) -> dict[str, object]:
    linked = part.filter(pl.col("drain_start_ts").is_not_null())
    repaired = part.filter(pl.col("repair_state") == "repaired")
    ttr = repaired["hours_to_repair"].to_numpy()
    ttd = linked["hours_to_detect"].to_numpy()
    low, high = median_ci(ttr)
    q = lambda a, p: float(np.quantile(a, p)) if a.size else None  # noqa: E731
    note = None
    if ttr.size == 0:
        note = "no repaired incident"
    elif low is None:
        note = f"{ttr.size} repaired incidents: too few for a 95% interval of the median"
    return {
        "component_class": component_class,
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
        "from_node_states": int((repaired["repair_source"] == "node_states").sum()),
        "note": note,
    }


def repair_times(linked: pl.DataFrame) -> pl.DataFrame:
    """:data:`REPAIR_TIMES_SCHEMA`: ``all`` first, then one row per component class (by incidents, descending)."""
    if linked.height == 0:
        return pl.DataFrame(schema=REPAIR_TIMES_SCHEMA)
    linked = linked.with_columns(pl.col("component_class").fill_null("other"))
    rows = [_summary("all", linked)]
    counts = linked.group_by("component_class").len().sort(["len", "component_class"], descending=[True, False])
    for klass in counts["component_class"].to_list():
        rows.append(_summary(klass, linked.filter(pl.col("component_class") == klass)))
    return pl.DataFrame(rows, schema=REPAIR_TIMES_SCHEMA)
