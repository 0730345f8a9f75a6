"""MTBF per period for the cluster, each component class, each component and each node.

* **Failures** are hardware incidents (``marts.hw_incidents``: one incident per fault, its evidence of
  every kind merged by the co-occurrence catalog, fabric- and storage-wide incidents counted once)
  that started in the period; the nightly, SLO and retrospective reports count the same rows. An
  incident the operator marked not a failure (``incidents.csv`` component ``none`` / ``false_positive``
  / ``not_a_failure``: cause class ``not_a_failure``) is no failure: every function here drops it
  (:func:`~gpusre.models.vocabulary.failure_incidents`) when the frame carries ``cause_class``. Only the
  fleet's incidents count (:func:`in_fleet`: touching a node ``cluster.yaml`` lists, or on no node), the
  population time to repair counts too.
* **Exposure** is node-hours in service: every node of ``cluster.yaml`` for the whole period (clipped
  to the observed span of data) minus its planned maintenance windows (:func:`node_exposure`), or,
  with node-state history, minus the down time it records (:func:`exposure_from_availability`). The
  before/after-maintenance comparison uses the same rule, so its node-hours add up to the mart's. GPU
  components also get GPU-hours (node-hours × GPUs per node).
* **Intervals** are exact Poisson (Garwood) 95 % limits
  (:func:`~gpusre.models.reliability.failure_rates.add_mtbf_columns`); with fewer than ``min_failures`` failures
  the point estimate is withheld ("insufficient data") and only the lower MTBF bound is given. Every
  hardware class of the catalog (:func:`failure_classes`) has a row per period, also with 0 failures: its
  lower limit T / 3.689 (the same two-sided 95 % Garwood interval) is the finding, said in ``note``.

Component classes come from ``catalog/component_classes.csv`` (gpu, nvlink, network, storage, host,
thermal, power, other), so a new catalog component needs one line there, not code.

Also here: time between failures per node with a censored Weibull fit, and the month-over-month trend
test (is the rate of this month different from the previous one?).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import math
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

import numpy as np
import polars as pl
from scipy.stats import binomtest

from gpusre.models.vocabulary import class_of, failure_incidents, load_component_classes, with_component_class
from gpusre.models.reliability.failure_rates import add_mtbf_columns, zero_failure_note
from gpusre.models.reliability.weibull_fit import fit_weibull
from gpusre.models.span_islands import span_islands

__all__ = ["MaintenanceSpan", "MTBF_SCHEMA", "in_fleet", "fleet_incidents", "failure_classes", "periods", "node_exposure", "exposure_from_availability", "mtbf_table", "tbf_weibull", "mtbf_trend", "mtbf_around_maintenance",
           "maintenance_from_node_states", "with_state_maintenance"]

MTBF_SCHEMA: dict[str, pl.DataType] = {
    "period_type": pl.String(), "period": pl.String(), "scope": pl.String(), "component": pl.String(),
    "node": pl.String(), "failures": pl.Int64(), "exposure_hours": pl.Float64(),
    "exposure_gpu_hours": pl.Float64(), "mtbf_hours": pl.Float64(), "ci_low": pl.Float64(),
    "ci_high": pl.Float64(), "mtbf_gpu_hours": pl.Float64(), "rate_per_1000_node_days": pl.Float64(),
    "sufficient": pl.Boolean(), "note": pl.String(), "exposure_source": pl.String(),
}


@dataclass(frozen=True)
class MaintenanceSpan:
    """A planned window; ``nodes`` None means the whole cluster."""

    start: datetime
    end: datetime
    nodes: frozenset[str] | None
    reason: str = ""


def in_fleet(node_names: Sequence[str] | None, nodes: str = "nodes") -> pl.Expr:
    """Whether an incident is one of the fleet's: the one population MTBF, r_f and time to repair count.

    Exposure is node-hours of the nodes ``cluster.yaml`` lists, so an incident only on hosts outside
    that list (a spare Slurm knows, a login node, a file server, an address a central syslog could not
    resolve) is no failure of the fleet; one touching a listed node is (an NVSwitch tray's SXid with the
    compute trays it took down), and so is one with no node at all (an operator's cluster-wide row).
    Without a node list (``node_names`` empty or None) the fleet is whatever the data shows: every incident
    counts. ``nodes``: the incidents' List column of hosts.

    >>> f = pl.DataFrame({"nodes": [["gpu001"], ["gpu049"], ["tray1", "gpu002"], []]})
    >>> f.select(in_fleet(["gpu001", "gpu002"])).to_series().to_list()
    [True, False, True, True]
    >>> f.select(in_fleet(())).to_series().to_list()
    [True, True, True, True]
    """
    if not node_names:
        return pl.col(nodes).is_null() | pl.col(nodes).is_not_null()  # True on every row
    fleet = pl.lit(list(node_names), dtype=pl.List(pl.String))
    return (pl.col(nodes).list.len().fill_null(0).eq(0)
            | pl.col(nodes).list.set_intersection(fleet).list.len().gt(0)).fill_null(True)


def fleet_incidents(incidents: pl.DataFrame, node_names: Sequence[str] | None) -> pl.DataFrame:
    """The rows of ``incidents`` (with a ``nodes`` List column) that are the fleet's (:func:`in_fleet`);
    a frame without ``nodes`` is returned whole."""
    return incidents.filter(in_fleet(node_names)) if "nodes" in incidents.columns else incidents


def failure_classes() -> pl.DataFrame:
    """``component_class``, ``per_gpu``: the hardware classes of ``catalog/component_classes.csv``, each of
    which can fail whether or not it did in a period — every class a catalog component belongs to except
    the one an unknown component falls to (``other``, "not classified": a bucket, not a part that has a
    failure rate). ``per_gpu`` when all of the class's components fail per GPU. ``marts.mtbf`` gives each
    of them a row per period, so a class that never failed reads "0 failures: MTBF ≥ lower limit", not
    nothing.

    >>> "nvlink" in failure_classes()["component_class"].to_list()
    True
    """
    unclassified = pl.select(class_of(pl.lit(None, pl.String))).item()
    return (load_component_classes().filter(pl.col("component_class") != unclassified)
            .group_by("component_class", maintain_order=True).agg(pl.col("per_gpu").all()))


def periods(t0: datetime, t1: datetime) -> list[tuple[str, str, datetime, datetime]]:
    """``(period_type, period, start, end)``: ``all`` and every calendar month (UTC) meeting [t0, t1)."""
    out = [("all", "all", t0, t1)]
    m = date(t0.year, t0.month, 1)
    while datetime(m.year, m.month, 1, tzinfo=timezone.utc) < t1:
        nxt = date(m.year + (m.month == 12), m.month % 12 + 1, 1)
        lo = max(t0, datetime(m.year, m.month, 1, tzinfo=timezone.utc))
        hi = min(t1, datetime(nxt.year, nxt.month, 1, tzinfo=timezone.utc))
        out.append(("month", f"{m:%Y-%m}", lo, hi))
        m = nxt
    return out


def _overlap_h(a0: datetime, a1: datetime, b0: datetime, b1: datetime) -> float:
    return max(0.0, (min(a1, b1) - max(a0, b0)).total_seconds() / 3600)


def node_exposure(nodes: Sequence[str], t0: datetime, t1: datetime,
                  maintenance: Sequence[MaintenanceSpan] = ()) -> pl.DataFrame:
    """Node-hours in service per period and node: ``period_type``, ``period``, ``node``, ``exposure_hours``."""
    rows_p = []
    names = list(nodes)
    for ptype, period, lo, hi in periods(t0, t1):
        hours = np.full(len(names), (hi - lo).total_seconds() / 3600)
        for w in maintenance:
            cut = _overlap_h(lo, hi, w.start, w.end)
            if cut <= 0:
                continue
            mask = np.ones(len(names), bool) if w.nodes is None else np.fromiter((n in w.nodes for n in names), bool)
            hours[mask] -= cut
        rows_p.append(pl.DataFrame({"period_type": ptype, "period": period, "node": names,
                                    "exposure_hours": np.clip(hours, 0, None)}))
    return pl.concat(rows_p) if rows_p else pl.DataFrame(schema={
        "period_type": pl.String, "period": pl.String, "node": pl.String, "exposure_hours": pl.Float64})


def exposure_from_availability(availability: pl.DataFrame, nodes: Sequence[str], t0: datetime, t1: datetime,
                               maintenance: Sequence[MaintenanceSpan] = ()) -> pl.DataFrame:
    """Like :func:`node_exposure`, but with the in-service hours Slurm node states record.

    One rule for planned maintenance, shared with the ``node_availability`` SLI's total
    (:func:`gpusre.models.reliability.slo.daily_sli_counts`): exposure is node-hours *in service*
    (README "Exposure is node-hours in service"), so a planned window takes out only the time a node
    was actually down in it when node states cover the node-day (a node that stayed up and ran jobs
    through the window could fail and is exposed), and the whole window only where there is no
    node-state row for the node-day (nothing shows it stayed up).

    A node-day's exposure is the part of the day inside ``[t0, t1)`` minus, with a row of
    ``marts.node_availability_daily``, its down hours (``observed_hours - in_service_hours``: unplanned
    and planned alike), else minus the planned windows. ``[t0, t1)`` is the observation span (the
    accounting's first to last moment, cut to the node logs'), so hours before the data began count
    nothing."""
    grid = _node_day_exposure(availability, nodes, t0, t1, maintenance)
    frames = [grid.filter((pl.col("_d0") >= lo.replace(hour=0, minute=0, second=0, microsecond=0)) & (pl.col("_d0") < hi))
              .group_by("node").agg(pl.col("exposure_hours").sum())
              .with_columns(pl.lit(pt).alias("period_type"), pl.lit(p).alias("period"))
              for pt, p, lo, hi in periods(t0, t1)]
    return pl.concat(frames).select("period_type", "period", "node", "exposure_hours")


#: An availability frame without rows: every node-day falls back to "the day minus the planned windows".
_NO_AVAILABILITY = pl.DataFrame(schema={"node": pl.String, "day": pl.Date, "observed_hours": pl.Float64,
                                        "in_service_hours": pl.Float64, "down_maintenance_hours": pl.Float64})


def _node_day_exposure(availability: pl.DataFrame | None, nodes: Sequence[str], t0: datetime, t1: datetime,
                       maintenance: Sequence[MaintenanceSpan] = ()) -> pl.DataFrame:
    """Per node and UTC day inside ``[t0, t1)``: ``_d0`` (the day's midnight), ``_hours`` (the day's part
    in the span), ``_maint`` (planned-window hours), ``_has_row``, ``_down``, ``_dmaint`` (node-state down
    hours, all and inside planned windows) and ``exposure_hours`` — the rule of
    :func:`exposure_from_availability`, kept per day so a comparison can cut the span mid-day."""
    if availability is None:
        availability = _NO_AVAILABILITY
    base = pl.DataFrame({"node": list(nodes)}, schema={"node": pl.String})
    day0 = t0.replace(hour=0, minute=0, second=0, microsecond=0)
    days = pl.DataFrame({"day": pl.date_range(day0.date(), (t1 - timedelta(microseconds=1)).date(), "1d",
                                             eager=True)})
    grid = base.join(days, how="cross").with_columns(
        pl.col("day").cast(pl.Datetime("us")).dt.replace_time_zone("UTC").alias("_d0"))
    grid = grid.with_columns(_day_overlap_h(t0, t1).alias("_hours"))
    maint_rows = []
    for w in maintenance:
        d = max(w.start, t0).replace(hour=0, minute=0, second=0, microsecond=0)
        while d < min(w.end, t1):
            h = _overlap_h(d, d + timedelta(days=1), max(w.start, t0), min(w.end, t1))
            targets = nodes if w.nodes is None else [n for n in nodes if n in w.nodes]
            maint_rows.extend((n, d.date(), h) for n in targets)
            d += timedelta(days=1)
    maint = (pl.DataFrame(maint_rows, schema={"node": pl.String, "day": pl.Date, "_maint": pl.Float64}, orient="row")
             .group_by("node", "day").agg(pl.col("_maint").sum()))
    down_maint = (pl.col("down_maintenance_hours").fill_null(0.0) if "down_maintenance_hours" in availability.columns
                  else pl.lit(0.0))
    avail = availability.select("node", pl.col("day").cast(pl.Date),
                                (pl.col("observed_hours") - pl.col("in_service_hours")).clip(lower_bound=0).alias("_down"),
                                down_maint.alias("_dmaint"))
    return (grid.join(maint, on=["node", "day"], how="left").join(avail, on=["node", "day"], how="left")
            .sort("node", "day")  # fixed order for the float sums
            .with_columns(pl.col("_down").is_not_null().alias("_has_row"), pl.col("_maint").fill_null(0.0),
                          pl.col("_down").fill_null(0.0), pl.col("_dmaint").fill_null(0.0))
            # with a node-state row: every recorded down hour (inside a planned window or not) is out;
            # without one: the planned windows are
            .with_columns(pl.when(pl.col("_has_row")).then(pl.col("_hours") - pl.col("_down"))
                          .otherwise(pl.col("_hours") - pl.col("_maint")).clip(lower_bound=0).alias("exposure_hours")))


def _day_overlap_h(lo: datetime, hi: datetime) -> pl.Expr:
    """Hours of the UTC day starting at ``_d0`` that lie inside ``[lo, hi)``."""
    return ((pl.min_horizontal(pl.col("_d0") + pl.duration(days=1), pl.lit(hi).cast(pl.Datetime("us", "UTC")))
             - pl.max_horizontal(pl.col("_d0"), pl.lit(lo).cast(pl.Datetime("us", "UTC"))))
            .dt.total_seconds().clip(lower_bound=0) / 3600)


def _incident_periods(incidents: pl.DataFrame, spans: list[tuple[str, str, datetime, datetime]]) -> pl.DataFrame:
    """One row per (incident, period) whose span contains the incident's start."""
    frames = [incidents.filter((pl.col("start_ts") >= lo) & (pl.col("start_ts") < hi))
              .with_columns(pl.lit(pt).alias("period_type"), pl.lit(p).alias("period"))
              for pt, p, lo, hi in spans]
    return pl.concat(frames, how="vertical") if frames else incidents.clear()


def mtbf_table(incidents: pl.DataFrame, exposure: pl.DataFrame, gpus_per_node: int, t0: datetime, t1: datetime,
               min_failures: int = 3, exposure_source: str = "cluster.yaml nodes minus planned maintenance",
               node_gpus: Mapping[str, int] | None = None) -> pl.DataFrame:
    """:data:`MTBF_SCHEMA` rows: scopes ``cluster``, ``component_class``, ``component`` per period, and
    ``node`` for the ``all`` period. ``component_class`` rows cover every class of :func:`failure_classes`
    (and any other class an incident has), failed or not; ``component`` rows only the components that failed.

    Args:
        incidents: ``incident_id``, ``component``, ``start_ts``, ``nodes`` (List), ``scope``; with
            ``cause_class``, those marked not a failure are left out.
        exposure: :func:`node_exposure` output.
        gpus_per_node: GPUs of a node ``node_gpus`` does not name.
        node_gpus: node -> GPUs (cluster.yaml ``node_gpus``, a mixed fleet); None or {}: every node has
            ``gpus_per_node``.

    ``exposure_gpu_hours`` of per-GPU components is Σ over nodes of the node's exposure hours × its GPUs:
    exact, because ``exposure`` is always per node (the ``node`` scope needs it too), so no fleet-mean
    GPUs-per-node approximation is needed. Nodes ``node_gpus`` does not name (the ``(unseen-i)`` padding of
    a count-only fleet) have ``gpus_per_node``.
    """
    incidents = failure_incidents(incidents)  # an operator's "not a failure" is none
    cols = [c for c in ("incident_id", "component", "start_ts", "nodes", "scope", "severity") if c in incidents.columns]
    inc = with_component_class(incidents.select(cols))
    inc_p = _incident_periods(inc, periods(t0, t1))
    per_period = exposure.group_by("period_type", "period").agg(pl.col("exposure_hours").sum())
    base = per_period.with_columns(pl.lit(None, dtype=pl.String).alias("node"))

    def scoped(scope: str, key: pl.Expr | None, per_gpu: pl.Expr) -> pl.DataFrame:
        if key is None:
            counts = inc_p.group_by("period_type", "period").agg(pl.len().alias("failures"), pl.lit(True).alias("_g"))
            keys = base.with_columns(pl.lit("all").alias("component"))
            out = keys.join(counts.drop("_g"), on=["period_type", "period"], how="left")
            return out.with_columns(pl.lit(scope).alias("scope"), pl.lit(False).alias("per_gpu"))
        counts = inc_p.with_columns(key.alias("component")).group_by("period_type", "period", "component").agg(
            pl.len().alias("failures"), per_gpu.first().alias("per_gpu"))
        names = counts.select("component", "per_gpu").unique("component")
        if scope == "component_class":
            # Every hardware class of the catalog, failed or not: zero failures over T node-hours is a
            # result (MTBF >= the Garwood lower limit T / 3.689), not a missing row.
            names = pl.concat([names, failure_classes().rename({"component_class": "component"})],
                              how="vertical").unique("component", keep="first", maintain_order=True)
        keys = base.join(names, how="cross")
        out = keys.join(counts.drop("per_gpu"), on=["period_type", "period", "component"], how="left")
        return out.with_columns(pl.lit(scope).alias("scope"))

    cluster = scoped("cluster", None, pl.lit(False))
    klass = scoped("component_class", pl.col("component_class"), pl.col("per_gpu"))
    comp = scoped("component", pl.col("component"), pl.col("per_gpu"))
    node_inc = (inc_p.filter((pl.col("period_type") == "all") & (pl.col("scope") == "node"))
                .explode("nodes").group_by("nodes").agg(pl.len().alias("failures")).rename({"nodes": "node"}))
    node = (exposure.filter(pl.col("period_type") == "all")
            .join(node_inc, on="node", how="left")
            .with_columns(pl.lit("node").alias("scope"), pl.lit("all").alias("component"), pl.lit(False).alias("per_gpu")))
    cols = ["period_type", "period", "scope", "component", "node", "failures", "exposure_hours", "per_gpu"]
    table = pl.concat([f.select(cols) for f in (cluster, klass, comp, node)], how="vertical").with_columns(
        pl.col("failures").fill_null(0).cast(pl.Int64))
    table = add_mtbf_columns(table, min_failures=min_failures)
    # No failure in the period: the lower limit is the whole finding, so the note says it in words.
    # (row by row, as add_mtbf_columns builds its note: one formatting of hours for both texts)
    zero_notes = pl.Series([zero_failure_note(t, low) if k == 0 and low is not None else None
                            for k, t, low in table.select("failures", "exposure_hours", "ci_low").iter_rows()],
                           dtype=pl.String)
    table = table.with_columns(pl.coalesce(zero_notes, pl.col("note")).alias("note"))
    if node_gpus and any(g != gpus_per_node for g in node_gpus.values()):
        # Mixed fleet: each node's in-service hours weigh its own GPUs (a 4-GPU node's hour is 4 GPU-hours).
        gpus = pl.DataFrame({"node": list(node_gpus), "_gpus": [float(g) for g in node_gpus.values()]},
                            schema={"node": pl.String, "_gpus": pl.Float64})
        gpu_h = (exposure.join(gpus, on="node", how="left").sort("period_type", "period", "node")
                 .group_by("period_type", "period")
                 .agg((pl.col("exposure_hours") * pl.col("_gpus").fill_null(float(gpus_per_node))).sum()
                      .alias("_gpu_h")))
        table = table.join(gpu_h, on=["period_type", "period"], how="left", maintain_order="left")
        gpu_exposure = pl.col("_gpu_h")
    else:  # one GPU count: unchanged single-value arithmetic (bit-identical marts)
        gpu_exposure = pl.col("exposure_hours") * gpus_per_node
    table = table.with_columns(
        pl.when(pl.col("per_gpu")).then(gpu_exposure).alias("exposure_gpu_hours"),
    ).with_columns(
        pl.when(pl.col("per_gpu") & pl.col("sufficient"))
        .then(pl.col("exposure_gpu_hours") / pl.col("failures")).alias("mtbf_gpu_hours"),
        pl.lit(exposure_source).alias("exposure_source"),
    )
    order = {"cluster": 0, "component_class": 1, "component": 2, "node": 3}
    return (table.select([pl.col(c).cast(t) for c, t in MTBF_SCHEMA.items()])
            .sort(pl.col("period_type") != "all", "period", pl.col("scope").replace_strict(order, default=9),
                  "component", "node", nulls_last=True))


def tbf_weibull(incidents: pl.DataFrame, nodes: Sequence[str], t0: datetime, t1: datetime,
                same_failure_h: float = 1.0) -> pl.DataFrame:
    """Weibull fit of time between node-level failures, per component class and for ``all``.

    Per node: gaps between consecutive failures are observed; the time from the last failure (or
    from ``t0`` for a node that never failed) to ``t1`` is right-censored. The time before a node's
    first failure is left out: the previous failure is unknown (left-censored). Shape < 1 means a
    few nodes fail again and again (lemons, infant mortality); > 1 wear-out. Failures of one node
    less than ``same_failure_h`` apart are one failure: one fault often shows as incidents of several
    components (an Xid 79 and the PCIe AER beside it), and near-zero gaps would fake infant mortality.
    """
    incidents = failure_incidents(incidents)  # an operator's "not a failure" is none
    cols = [c for c in ("incident_id", "component", "start_ts", "nodes", "scope", "severity") if c in incidents.columns]
    inc = with_component_class(incidents.select(cols).filter(pl.col("scope") == "node")
                               .select("component", "start_ts", "nodes"))
    inc = inc.explode("nodes").rename({"nodes": "node"})
    horizon_h = (t1 - t0).total_seconds() / 3600
    rows = []
    classes = ["all", *sorted(inc.get_column("component_class").unique().to_list())]
    for klass in classes:
        sub = inc if klass == "all" else inc.filter(pl.col("component_class") == klass)
        g = (sub.sort("node", "start_ts")
             .with_columns(((pl.col("start_ts") - pl.col("start_ts").shift(1).over("node")).dt.total_seconds() / 3600)
                           .alias("gap_h"))
             .filter(pl.col("gap_h").is_null() | (pl.col("gap_h") >= same_failure_h))
             # gaps are recomputed between the failures that remain
             .with_columns(((pl.col("start_ts") - pl.col("start_ts").shift(1).over("node")).dt.total_seconds() / 3600)
                           .alias("gap_h")))
        observed = g.get_column("gap_h").drop_nulls().to_numpy()
        last = g.group_by("node").agg(pl.col("start_ts").max()).sort("node")
        tail_h = last.select(((pl.lit(t1).cast(pl.Datetime("us", "UTC")) - pl.col("start_ts")).dt.total_seconds()
                              / 3600).alias("h")).get_column("h").to_numpy()
        n_never = max(0, len(set(nodes)) - last.height)
        censored = np.concatenate([tail_h[tail_h > 0], np.full(n_never, horizon_h)])
        durations = np.concatenate([observed, censored])
        flags = np.concatenate([np.ones(observed.size, bool), np.zeros(censored.size, bool)])
        fit = fit_weibull(durations, flags) if durations.size else None
        rows.append({
            "component_class": klass, "n_failures": int(observed.size), "n_censored": int(censored.size),
            "shape": fit.shape if fit else None, "shape_ci_low": fit.shape_ci_low if fit else None,
            "shape_ci_high": fit.shape_ci_high if fit else None, "scale_hours": fit.scale if fit else None,
            "interpretation": fit.interpretation if fit else "insufficient data (< 3 repeat failures)",
        })
    return pl.DataFrame(rows, schema={
        "component_class": pl.String, "n_failures": pl.Int64, "n_censored": pl.Int64, "shape": pl.Float64,
        "shape_ci_low": pl.Float64, "shape_ci_high": pl.Float64, "scale_hours": pl.Float64,
        "interpretation": pl.String})


_TREND_SCHEMA = {"comparison": pl.String, "scope": pl.String, "component": pl.String, "period": pl.String,
                 "previous_period": pl.String, "failures": pl.Int64, "previous_failures": pl.Int64,
                 "mtbf_hours": pl.Float64, "previous_mtbf_hours": pl.Float64, "rate_ratio": pl.Float64,
                 "p_value": pl.Float64, "direction": pl.String}


def _rate_change(k1: int, e1: float, k2: int, e2: float, alpha: float,
                 enough: bool = True) -> tuple[float | None, float | None, str]:
    """(rate ratio, p-value, direction) of rate k1/e1 against k2/e2 (exact conditional binomial test).

    ``enough`` False (neither side reached ``min_failures``): ``insufficient data`` with the statistics
    NULL, the value README documents for too few failures — 0 vs 1 failure can never be significant,
    and "no significant change" would read as a tested, stable rate. One side with enough failures is
    tested: 0 after vs 12 before is a real improvement."""
    if not enough or k1 + k2 == 0 or e1 <= 0 or e2 <= 0:
        return None, None, "insufficient data"
    p = float(binomtest(k1, k1 + k2, e1 / (e1 + e2)).pvalue)
    ratio = (k1 / e1) / (k2 / e2) if k2 > 0 else None
    return ratio, p, (("worse" if k1 / e1 > k2 / e2 else "better") if p < alpha else "no significant change")


def mtbf_trend(mtbf: pl.DataFrame, alpha: float = 0.05) -> pl.DataFrame:
    """Last month vs the month before, per cluster and component class (``comparison`` = ``month over month``).

    Conditional exact test of equal Poisson rates: given k1 + k2 failures, k1 ~ Binomial(k1 + k2,
    e1 / (e1 + e2)) under H0. ``direction`` is ``worse``/``better`` (MTBF down/up) at p < alpha, else
    ``no significant change``; ``insufficient data`` (rate ratio and p-value NULL) with fewer than 2
    months, no failures, or neither month ``sufficient`` (``mtbf.sufficient``: ``min_failures`` reached,
    the rule of the MTBF rows themselves).
    """
    m = mtbf.filter((pl.col("period_type") == "month") & pl.col("scope").is_in(["cluster", "component_class"]))
    months = sorted(m.get_column("period").unique().to_list())
    if len(months) < 2:
        return pl.DataFrame(schema=_TREND_SCHEMA)
    cur, prev = months[-1], months[-2]
    a = m.filter(pl.col("period") == cur).select("scope", "component", "failures", "exposure_hours", "mtbf_hours",
                                                 "sufficient")
    b = m.filter(pl.col("period") == prev).select("scope", "component", pl.col("failures").alias("pf"),
                                                  pl.col("exposure_hours").alias("pe"), pl.col("mtbf_hours").alias("pm"),
                                                  pl.col("sufficient").alias("ps"))
    rows = []
    for r in a.join(b, on=["scope", "component"], how="full", coalesce=True).iter_rows(named=True):
        k1, k2 = int(r["failures"] or 0), int(r["pf"] or 0)
        if r["scope"] == "component_class" and k1 + k2 == 0:
            continue  # a class that failed in neither month (its zero rows in marts.mtbf): nothing to compare
        ratio, p, direction = _rate_change(k1, float(r["exposure_hours"] or 0), k2, float(r["pe"] or 0), alpha,
                                           bool(r["sufficient"]) or bool(r["ps"]))
        rows.append(("month over month", r["scope"], r["component"], cur, prev, k1, k2, r["mtbf_hours"], r["pm"],
                     ratio, p, direction))
    return pl.DataFrame(rows, schema=_TREND_SCHEMA, orient="row").sort("scope", "component")


def _side_exposure(daily: pl.DataFrame, t0: datetime, t1: datetime, w: MaintenanceSpan) -> tuple[float, float]:
    """In-service node-hours (before ``w``, after ``w``) from :func:`_node_day_exposure` rows.

    A node-day wholly on one side counts its exposure there, the same value ``marts.mtbf`` sums. The
    days the window cuts are split: their in-service hours in the window (the window's hours minus the
    planned down time node states record, none without a node-state row since the window is already
    out) belong to neither side, and the rest is shared by the hours each side has that day — node
    states give down hours per day, not per hour, so unplanned down time that day is spread evenly."""
    before_h = _day_overlap_h(t0, min(w.start, t1))
    after_h = _day_overlap_h(max(w.end, t0), t1)
    in_w = _day_overlap_h(max(w.start, t0), min(w.end, t1))
    in_w_service = pl.when(pl.col("_has_row")).then((in_w - pl.col("_dmaint")).clip(lower_bound=0)).otherwise(0.0)
    outside = (pl.col("exposure_hours") - in_w_service).clip(lower_bound=0)
    sides = before_h + after_h
    got = daily.select(
        pl.when(sides > 0).then(outside * before_h / sides).otherwise(0.0).sum().alias("before"),
        pl.when(sides > 0).then(outside * after_h / sides).otherwise(0.0).sum().alias("after"))
    return float(got.item(0, "before") or 0.0), float(got.item(0, "after") or 0.0)


def _stamp(t: datetime) -> str:
    """A period bound to the minute: the maintenance sides start and end mid-day."""
    return f"{t:%Y-%m-%d %H:%M}"


def mtbf_around_maintenance(incidents: pl.DataFrame, nodes: Sequence[str], t0: datetime, t1: datetime,
                            maintenance: Sequence[MaintenanceSpan], min_failures: int = 3,
                            alpha: float = 0.05, availability: pl.DataFrame | None = None) -> pl.DataFrame:
    """Failure rate of the nodes a planned window touched, after it vs before it (``comparison`` =
    ``after <reason> (<date>)``): did the driver or firmware upgrade make the GPUs fail more often?

    Same test as :func:`mtbf_trend`, per cluster (the window's nodes) and component class. Exposure is
    those nodes' in-service hours in ``[t0, window start)`` and ``[window end, t1)`` by the rule of
    ``marts.mtbf`` — pass the same ``availability`` (``marts.node_availability_daily`` rows when node
    states exist, else None: ``cluster.yaml`` nodes minus planned windows) so one quantity has one
    value. ``period`` / ``previous_period`` name the sides to the minute ("2026-10-01 18:00 to
    2026-10-31 23:59"). ``direction`` is ``insufficient data`` when neither side has ``min_failures``.
    """
    incidents = failure_incidents(incidents)  # an operator's "not a failure" is none
    cols = [c for c in ("incident_id", "component", "start_ts", "nodes", "scope", "severity") if c in incidents.columns]
    inc = with_component_class(incidents.select(cols))
    rows = []
    daily: pl.DataFrame | None = None  # every node's days, built once: a node's rows do not depend on the others
    for w in maintenance:
        if not (t0 < w.start and w.end < t1):
            continue
        touched = sorted(set(nodes) if w.nodes is None else set(nodes) & set(w.nodes))
        if not touched:
            continue
        label = f"after {w.reason or 'maintenance'} ({w.start:%Y-%m-%d})"
        if daily is None:
            daily = _node_day_exposure(availability, sorted(set(nodes)), t0, t1, maintenance)
        exp_before, exp_after = _side_exposure(daily.filter(pl.col("node").is_in(touched)).rechunk(), t0, t1, w)
        on_nodes = inc.filter(pl.col("nodes").list.eval(pl.element().is_in(touched)).list.any())
        before = on_nodes.filter(pl.col("start_ts") < w.start)
        after = on_nodes.filter(pl.col("start_ts") >= w.end)
        groups = [("cluster", "all", before, after)] + [
            ("component_class", k, before.filter(pl.col("component_class") == k),
             after.filter(pl.col("component_class") == k))
            for k in sorted(set(on_nodes.get_column("component_class").to_list()))]
        for scope, comp, b, a in groups:
            k1, k2 = a.height, b.height
            ratio, p, direction = _rate_change(k1, exp_after, k2, exp_before, alpha,
                                               k1 >= min_failures or k2 >= min_failures)
            mt_a = exp_after / k1 if k1 >= min_failures else None
            mt_b = exp_before / k2 if k2 >= min_failures else None
            rows.append((label, scope, comp, f"{_stamp(w.end)} to {_stamp(t1)}", f"{_stamp(t0)} to {_stamp(w.start)}",
                         k1, k2, mt_a, mt_b, ratio, p, direction))
    return pl.DataFrame(rows, schema=_TREND_SCHEMA, orient="row")


#: A fleet maintenance seen in node states touches at least this share of the fleet (and
#: :data:`STATE_MAINTENANCE_MIN_NODES` nodes): one node drained to swap a part is a repair, not a window
#: whose before/after says anything about an upgrade.
STATE_MAINTENANCE_MIN_SHARE = 0.1
STATE_MAINTENANCE_MIN_NODES = 2
#: Planned outages that start within this long after earlier ones ended belong to one window: a rolling
#: upgrade drains its batches one after another, not all at once.
STATE_MAINTENANCE_GAP = timedelta(hours=12)
#: "Planned maintenance: OS image upgrade" -> "OS image upgrade": the label already says maintenance.
_MAINT_PREFIX = re.compile(r"^\s*(?:planned\s+)?maint(?:enance)?\s*[:\-\u2013\u2014]\s*", re.I)


def maintenance_from_node_states(outages: pl.DataFrame, fleet_size: int, *,
                                 min_share: float = STATE_MAINTENANCE_MIN_SHARE,
                                 min_nodes: int = STATE_MAINTENANCE_MIN_NODES,
                                 gap: timedelta = STATE_MAINTENANCE_GAP) -> list[MaintenanceSpan]:
    """Planned maintenance windows recorded only in Slurm node states.

    ``outages``: ``node``, ``start_ts``, ``end_ts``, ``reason`` of the node states classed maintenance
    (``core.node_states.availability_class = 'maintenance'``: a planned-maintenance drain reason or a
    maintenance state). Outages that overlap, or start within ``gap`` after the earlier ones ended, are
    merged into one window (start of the first .. end of the last); a window counts when it touched at
    least ``max(min_nodes, ceil(min_share × fleet_size))`` distinct nodes. Its nodes are the nodes it
    touched, its reason the most frequent outage reason (ties: the earliest) without a leading "Planned
    maintenance:". Outages still open (no ``end_ts``) are left out: nothing after them can be compared.
    """
    need = max(min_nodes, math.ceil(min_share * fleet_size))
    o = outages.filter(pl.col("start_ts").is_not_null() & pl.col("end_ts").is_not_null()
                       & (pl.col("end_ts") > pl.col("start_ts")))
    if not o.height:
        return []
    o = o.sort("start_ts", "node").with_columns(span_islands([], gap, end="end_ts", start="start_ts").alias("_w"))
    reasons = (o.filter(pl.col("reason").is_not_null() & (pl.col("reason").str.strip_chars() != ""))
               .group_by("_w", "reason").agg(pl.len().alias("_n"), pl.col("start_ts").min().alias("_first"))
               .sort("_w", "_n", "_first", descending=[False, True, False])
               .unique("_w", keep="first", maintain_order=True).select("_w", "reason"))
    wins = (o.group_by("_w").agg(pl.col("start_ts").min(), pl.col("end_ts").max(),
                                 pl.col("node").unique().sort().alias("nodes"))
            .filter(pl.col("nodes").list.len() >= need)
            .join(reasons, on="_w", how="left").sort("start_ts"))
    return [MaintenanceSpan(r["start_ts"], r["end_ts"], frozenset(r["nodes"]),
                            _MAINT_PREFIX.sub("", r["reason"] or "").strip())
            for r in wins.iter_rows(named=True)]


def with_state_maintenance(configured: Sequence[MaintenanceSpan],
                           from_states: Sequence[MaintenanceSpan]) -> list[MaintenanceSpan]:
    """``configured`` (cluster.yaml) windows plus the node-state windows that overlap none of them in
    time: the same maintenance recorded in both places is compared once, under the operator's reason."""
    extra = [s for s in from_states if not any(c.start < s.end and s.start < c.end for c in configured)]
    return sorted([*configured, *extra], key=lambda w: w.start)
