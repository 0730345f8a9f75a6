"""Score the pipeline's incident metrics against the simulator's truth (issue 12, "Done when").

Input: an open DuckDB connection to the warehouse ``gpusre run`` built from a simulated landing, and
that landing's ``truth/`` directory. Output: one :class:`IncidentScore` per scenario with the product's
figure next to the truth's for every Done-when metric:

* hardware incidents (``marts.hw_incidents`` rows) vs true faults (``truth/incidents.csv`` rows), in
  total and per component class; incidents of class ``other`` whose first event is a health check;
* cluster and per-class MTBF (``marts.mtbf``, period ``all``) vs realized = true exposure / true faults,
  and whether the realized MTBF lies inside the mart's Garwood interval (classes with >= 5 true faults);
* MTTR p50 per class vs truth (fault start -> repair end, ``incidents.csv`` ``start_ts`` -> ``end_ts``, faults
  repaired by the last dump);
* MTBF exposure vs true in-service node-hours (``summary.json``), and the downtime the product
  removed from exposure vs the true down node-hours: the node-state down hours exposure subtracts
  (``marts.node_availability_daily`` observed − in service; without it, nodes x true span − exposure).
  Not the span difference: the product's span starts at the first day's UTC midnight, the simulator's
  at its local midnight (05:00 UTC in Chicago), 5 h per node of exposure the truth does not have —
  240 node-hours in a 48-node scenario whose whole downtime is ~500 (quiet: 0.56 by the span, 1.00 by
  the hours removed);
* alert grouping: adjusted Rand index of ``marts.alert_incident_members`` against ``truth/alerts.csv``
  ``episode_id`` (one label per fault incident, per flapping episode, per noise alert), alerts matched
  by (fingerprint, starts_at), and alerts per incident;
* suspect nodes (``marts.suspect_nodes``) against the nodes that really failed again: the product's own
  rule (robust z >= 3 against the fleet) applied to each node's *true* faults of its own (``truth/faults.csv``
  rows of one-node incidents: a leaf switch or a storage outage is the shared part's failure, not the
  nodes') in the 28 days before the last dump gives the nodes that should be flagged (recall) — the
  product is scored on measuring the faults, not on its threshold; a flagged node should be one of them,
  a node with at least :data:`SUSPECT_MIN_FAULTS` faults of its own in the window (3 failures in 28 days
  justify a look in any fleet), or one of the simulator's lemons (``summary.json`` ``lemon_nodes``, failing
  12x as often, which may have had fewer faults in the window) (precision);
* attribution precision / recall of ``infrastructure`` per killed job instance (``marts.job_failure_attribution``
  and ``marts.instance_failure_attribution`` vs the jobs ``truth/faults.csv`` lists per fault), and the share
  of instances both call infrastructure whose product component has the true fault's class.

Product components map to classes with ``catalog/component_classes.csv`` (read at run time; unknown
-> ``other``). Each mart is read by one small ``product_*`` function, so when a mart gains a
``component_class`` column only that function changes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
from sklearn.metrics import adjusted_rand_score

from gpusre.models.component_classes import load_component_classes
from gpusre.models.failures.suspect_nodes import MAD_SCALE

__all__ = ["IncidentScore", "score_scenario", "truth_incidents", "truth_exposure", "truth_job_kills",
           "product_incidents", "product_other_health_check_incidents", "product_mtbf", "product_mttr_p50_by_class",
           "product_exposure_hours", "product_attribution", "alert_grouping", "attribution_scores",
           "suspect_scores", "MIN_FAULTS_FOR_INTERVAL", "SUSPECT_LOOKBACK", "SUSPECT_MIN_FAULTS", "SUSPECT_Z"]

#: Classes with at least this many true faults must have their realized MTBF inside the Garwood interval.
MIN_FAULTS_FOR_INTERVAL = 5
#: The suspect-node lookback (``models/failures/suspect_nodes.LOOKBACK``) and threshold (robust z).
SUSPECT_LOOKBACK = timedelta(days=28)
SUSPECT_Z = 3.0
#: Faults of its own in the lookback that justify flagging a node whatever the fleet (precision only).
SUSPECT_MIN_FAULTS = 3


@dataclass(frozen=True)
class IncidentScore:
    """The Done-when metrics of one scenario: product figure and truth side by side.

    Per-class dicts are keyed by component class; a class missing on one side is absent from that dict.
    Ratios are product / truth (NaN when the truth is 0)."""

    true_faults: int
    hw_incidents: int
    true_faults_by_class: dict[str, int]
    hw_incidents_by_class: dict[str, int]
    other_health_check_incidents: int
    mtbf_hours: float | None
    realized_mtbf_hours: float
    mtbf_by_class: dict[str, float | None]
    realized_mtbf_by_class: dict[str, float]
    #: Classes with >= MIN_FAULTS_FOR_INTERVAL true faults -> realized MTBF inside [ci_low, ci_high].
    realized_in_interval: dict[str, bool]
    mttr_p50_by_class: dict[str, float]
    true_mttr_p50_by_class: dict[str, float]
    exposure_hours: float | None
    true_exposure_hours: float
    downtime_removed_hours: float | None
    true_downtime_hours: float
    alert_ari: float
    alerts_matched: int
    alerts_truth: int
    alerts_per_incident: float
    true_alerts_per_incident: float
    attribution_precision: float
    attribution_recall: float
    attribution_support: int
    class_match_share: float
    class_match_support: int
    #: Nodes ``marts.suspect_nodes`` flags, and how many of them failed again by the truth (or are lemons).
    suspects_flagged: int = 0
    suspect_precision: float = float("nan")
    #: Nodes whose true faults in the lookback stand out (robust z >= SUSPECT_Z), and the share of them flagged.
    suspect_support: int = 0
    suspect_recall: float = float("nan")
    notes: list[str] = field(default_factory=list)

    @property
    def incident_ratio(self) -> float:
        """Hardware incidents / true faults."""
        return _ratio(self.hw_incidents, self.true_faults)

    @property
    def mtbf_ratio(self) -> float:
        """Cluster MTBF / realized MTBF (NaN when the mart has no cluster figure)."""
        return _ratio(self.mtbf_hours, self.realized_mtbf_hours)

    @property
    def exposure_ratio(self) -> float:
        """MTBF exposure / true in-service node-hours."""
        return _ratio(self.exposure_hours, self.true_exposure_hours)

    @property
    def downtime_ratio(self) -> float:
        """Downtime the product removed / true down node-hours."""
        return _ratio(self.downtime_removed_hours, self.true_downtime_hours)

    @property
    def alerts_per_incident_ratio(self) -> float:
        """Alerts per alert incident, product / truth."""
        return _ratio(self.alerts_per_incident, self.true_alerts_per_incident)

    def mttr_ratios(self) -> dict[str, float]:
        """Per class with a true MTTR: product p50 / true p50 (NaN when the product has no figure)."""
        return {c: _ratio(self.mttr_p50_by_class.get(c), t) for c, t in self.true_mttr_p50_by_class.items()}

    def mtbf_class_ratios(self) -> dict[str, float]:
        """Per class with true faults: product MTBF / realized MTBF (NaN when the product has none)."""
        return {c: _ratio(self.mtbf_by_class.get(c), r) for c, r in self.realized_mtbf_by_class.items()}


def _ratio(a: float | None, b: float | None) -> float:
    if a is None or b is None or b == 0 or (isinstance(a, float) and math.isnan(a)):
        return float("nan")
    return float(a) / float(b)


def _classes() -> pl.DataFrame:
    return load_component_classes().select("component", "component_class")


def _with_class(frame: pl.DataFrame, classes: pl.DataFrame) -> pl.DataFrame:
    """Add ``component_class`` from ``component`` (unknown -> ``other``), unless the frame has it."""
    if "component_class" in frame.columns:
        return frame
    return frame.join(classes, on="component", how="left", maintain_order="left").with_columns(
        pl.col("component_class").fill_null("other"))


def _has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    schema, table = name.split(".")
    return bool(con.sql(f"SELECT count(*) FROM information_schema.tables WHERE table_schema = '{schema}' "
                        f"AND table_name = '{table}'").fetchall()[0][0])


def _columns(con: duckdb.DuckDBPyConnection, name: str) -> set[str]:
    return {r[0] for r in con.sql(f"DESCRIBE {name}").fetchall()}


# -- truth ------------------------------------------------------------------------------------------------


def truth_incidents(truth_dir: Path) -> pl.DataFrame:
    """``truth/incidents.csv`` with ``component_class`` and ``repair_hours`` (start -> repair end)."""
    df = pl.read_csv(Path(truth_dir) / "incidents.csv", infer_schema=False)
    ts = {c: pl.col(c).str.to_datetime("%Y-%m-%dT%H:%M:%SZ", time_zone="UTC") for c in ("start_ts", "end_ts")}
    return df.with_columns(**ts).with_columns(
        repair_hours=(pl.col("end_ts") - pl.col("start_ts")).dt.total_seconds() / 3600)


def truth_exposure(truth_dir: Path) -> tuple[float, float, float, datetime]:
    """(true in-service node-hours, true down node-hours, nodes x span hours, last dump) over the truth's
    horizon [horizon start, last dump] (``summary.json``, written with node states)."""
    summary = json.loads((Path(truth_dir) / "summary.json").read_text(encoding="utf-8"))
    in_service, down = float(summary["in_service_node_hours"]), float(summary["down_node_hours"])
    last = datetime.strptime(summary["last_dump_utc"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return in_service, down, in_service + down, last


# -- product (one small reader per mart) -------------------------------------------------------------------


def product_incidents(con: duckdb.DuckDBPyConnection, classes: pl.DataFrame) -> pl.DataFrame:
    """``marts.hw_incidents``: ``incident_id``, ``component``, ``component_class``, ``first_event_id``."""
    cols = _columns(con, "marts.hw_incidents")
    extra = ", component_class" if "component_class" in cols else ""
    df = con.sql(f"SELECT incident_id, component, first_event_id{extra} FROM marts.hw_incidents").pl()
    return _with_class(df, classes)


def product_other_health_check_incidents(con: duckdb.DuckDBPyConnection, incidents: pl.DataFrame) -> int:
    """Incidents of class ``other`` whose first event is an NHC health-check line (``core.node_events``
    kind ``health_check``): incidents made of health checks alone."""
    other = incidents.filter(pl.col("component_class") == "other").select("first_event_id")
    if other.is_empty():
        return 0
    table = other.to_arrow()  # keep a reference while DuckDB scans it
    con.register("_other_first", table)
    try:
        return int(con.sql("SELECT count(*) FROM _other_first o JOIN core.node_events e "
                           "ON e.event_id = o.first_event_id WHERE e.kind = 'health_check'").fetchall()[0][0])
    finally:
        con.unregister("_other_first")


def product_mtbf(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """``marts.mtbf`` over the whole span, cluster and class scopes: ``scope``, ``component`` (``all`` or
    the class), ``failures``, ``exposure_hours``, ``mtbf_hours``, ``ci_low``, ``ci_high``."""
    return con.sql("SELECT scope, component, failures, exposure_hours, mtbf_hours, ci_low, ci_high FROM marts.mtbf "
                   "WHERE period_type = 'all' AND scope IN ('cluster', 'component_class')").pl()


def product_downtime_hours(con: duckdb.DuckDBPyConnection, exposure: float | None, node_span: float) -> float | None:
    """The node-state down hours MTBF exposure takes out (``marts.node_availability_daily``: observed − in
    service, every node-day); without that mart, the true span less the product's exposure."""
    if _has_table(con, "marts.node_availability_daily"):
        hours = con.sql("SELECT sum(observed_hours - in_service_hours) FROM marts.node_availability_daily").fetchall()[0][0]
        if hours is not None:
            return float(hours)
    return None if exposure is None else node_span - exposure


def product_exposure_hours(mtbf: pl.DataFrame) -> float | None:
    """Cluster exposure (node-hours) of ``marts.mtbf``."""
    row = mtbf.filter(pl.col("scope") == "cluster")
    return None if row.is_empty() or row["exposure_hours"][0] is None else float(row["exposure_hours"][0])


def product_mttr_p50_by_class(con: duckdb.DuckDBPyConnection, classes: pl.DataFrame) -> dict[str, float]:
    """MTTR p50 (hours) per component class.

    ``marts.repair_times`` rows with a ``component_class`` scope when the mart has one; today it is per
    raw component (which no class median can be read from), so the median of ``marts.incident_repairs``
    ``hours_to_repair`` over repaired incidents, grouped by the class of their component, stands in."""
    cols = _columns(con, "marts.repair_times")
    if "component_class" in cols:
        df = con.sql("SELECT component_class, mttr_hours_p50 FROM marts.repair_times "
                     "WHERE component_class IS NOT NULL AND mttr_hours_p50 IS NOT NULL").pl()
        return {r["component_class"]: float(r["mttr_hours_p50"]) for r in df.iter_rows(named=True)}
    df = con.sql("SELECT component, hours_to_repair FROM marts.incident_repairs "
                 "WHERE repair_state = 'repaired' AND hours_to_repair IS NOT NULL").pl()
    med = _with_class(df, classes).group_by("component_class").agg(pl.col("hours_to_repair").median())
    return {r["component_class"]: float(r["hours_to_repair"]) for r in med.iter_rows(named=True)}


def alert_grouping(con: duckdb.DuckDBPyConnection, truth_dir: Path) -> tuple[float, int, int, float, float]:
    """(adjusted Rand index, alerts matched, truth alerts, alerts per incident, true alerts per incident).

    Alerts match truth by (fingerprint, starts_at); the truth label is ``episode_id`` (a fault incident,
    a flapping episode, or one noise alert). Alerts per incident: matched alerts over the product's
    incidents among them vs truth alerts over distinct episodes."""
    truth = pl.read_csv(Path(truth_dir) / "alerts.csv", infer_schema=False).select(
        "fingerprint", "starts_at", "episode_id")
    if truth.is_empty():
        return float("nan"), 0, 0, float("nan"), float("nan")
    table = truth.to_arrow()  # keep a reference while DuckDB scans it
    con.register("_truth_alerts", table)
    try:
        joined = con.sql(
            """SELECT t.episode_id, m.incident_id
               FROM core.alerts AS a
               JOIN _truth_alerts AS t ON t.fingerprint = a.fingerprint
                                      AND CAST(t.starts_at AS TIMESTAMPTZ) = a.starts_at
               JOIN marts.alert_incident_members AS m USING (alert_id)""").pl()
    finally:
        con.unregister("_truth_alerts")
    if joined.is_empty():
        return float("nan"), 0, truth.height, float("nan"), truth.height / truth["episode_id"].n_unique()
    ari = float(adjusted_rand_score(joined["episode_id"].to_list(), joined["incident_id"].to_list()))
    per_incident = joined.height / joined["incident_id"].n_unique()
    return ari, joined.height, truth.height, per_incident, truth.height / truth["episode_id"].n_unique()


def truth_job_kills(truth_dir: Path, incidents: pl.DataFrame) -> pl.DataFrame:
    """Every job instance a fault killed: ``job_id``, ``end_ts`` (the fault's time), ``true_class`` (the
    class of the fault's incident), from ``truth/faults.csv`` job lists and ``incidents.csv`` fault ids.
    Requeued instances count too: most jobs a fault kills are requeued and end well, so the final-state
    file alone (``job_attribution.csv``) holds few infrastructure rows."""
    faults = pl.read_csv(Path(truth_dir) / "faults.csv", infer_schema=False).filter(pl.col("job_ids") != "")
    of_fault = incidents.select("component_class", fault_id=pl.col("fault_ids").str.split(";")).explode("fault_id")
    return (faults.select("fault_id", end_ts=pl.col("ts").str.to_datetime("%Y-%m-%dT%H:%M:%SZ", time_zone="UTC"),
                          job_id=pl.col("job_ids").str.split(";")).explode("job_id")
            .join(of_fault, on="fault_id", how="left")
            .select("job_id", "end_ts", true_class=pl.col("component_class").fill_null("other"))
            .unique(["job_id", "end_ts"], keep="first", maintain_order=True))


def product_attribution(con: duckdb.DuckDBPyConnection, classes: pl.DataFrame) -> pl.DataFrame:
    """Failed job instances as the product attributes them: ``job_id``, ``end_ts``, ``predicted``,
    ``component``, ``component_class`` (the mart's, else the catalog's class of ``component``) from
    ``marts.job_failure_attribution`` (a job's last instance) and ``marts.instance_failure_attribution``
    (its earlier, requeued ones)."""
    def select(table: str) -> str:  # a mart's own component_class wins over the catalog lookup
        klass = ", component_class" if "component_class" in _columns(con, table) else ", NULL AS component_class"
        return f"SELECT job_id, end_ts, attribution AS predicted, component{klass} FROM {table}"

    parts = [select("marts.job_failure_attribution")]
    if _has_table(con, "marts.instance_failure_attribution"):
        parts.append(select("marts.instance_failure_attribution"))
    df = con.sql(" UNION ALL ".join(parts)).pl().with_columns(pl.col("end_ts").dt.convert_time_zone("UTC"))
    df = df.unique(["job_id", "end_ts"], keep="first", maintain_order=True)
    looked_up = _with_class(df.drop("component_class"), classes)["component_class"]
    return df.with_columns(pl.col("component_class").cast(pl.String).fill_null(looked_up))


def attribution_scores(con: duckdb.DuckDBPyConnection, truth_dir: Path, incidents: pl.DataFrame,
                       classes: pl.DataFrame) -> tuple[float, float, int, float, int]:
    """(precision, recall, support of ``infrastructure``, class-match share, instances both call
    infrastructure), per killed job instance (job id and end time, requeued instances included).

    Truth: the instances faults killed (:func:`truth_job_kills`). Product: instances attributed to the
    infrastructure (:func:`product_attribution`); one that no fault killed is a false positive. Class
    match: the class of the product's ``component`` equals the class of the fault's incident."""
    kills = truth_job_kills(truth_dir, incidents).with_columns(pl.col("end_ts").dt.cast_time_unit("us"))
    predicted = product_attribution(con, classes).with_columns(pl.col("end_ts").dt.cast_time_unit("us"))
    infra = predicted.filter(pl.col("predicted") == "infrastructure")
    hits = kills.join(infra, on=["job_id", "end_ts"], how="inner")
    tp = hits.height
    fp, fn = infra.height - tp, kills.height - tp
    match = hits.filter(pl.col("component_class") == pl.col("true_class")).height
    return (tp / max(tp + fp, 1), tp / max(tp + fn, 1), kills.height,
            match / tp if tp else float("nan"), tp)


# -- the score ---------------------------------------------------------------------------------------------


def suspect_scores(con: duckdb.DuckDBPyConnection, truth_dir: Path) -> tuple[int, float, int, float]:
    """(nodes flagged, precision, nodes that should be, recall) of ``marts.suspect_nodes`` (module doc)."""
    summary = json.loads((Path(truth_dir) / "summary.json").read_text(encoding="utf-8"))
    end = datetime.strptime(summary["last_dump_utc"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    faults = pl.read_csv(Path(truth_dir) / "faults.csv", infer_schema=False).with_columns(
        pl.col("ts").str.to_datetime("%Y-%m-%dT%H:%M:%SZ", time_zone="UTC"))
    own = (truth_incidents(truth_dir).filter(pl.col("n_nodes").cast(pl.Int64) == 1)
           .select(pl.col("fault_ids").str.split(";").alias("fault_id")).explode("fault_id"))
    counts = (faults.join(own, on="fault_id", how="semi")
              .filter(pl.col("ts").is_between(end - SUSPECT_LOOKBACK, end, closed="left")).group_by("node").len())
    n_quiet = int(summary["nodes"]) - counts.height  # nodes without a fault count 0, as in the product's fleet
    x = pl.concat([counts["len"].cast(pl.Float64), pl.Series([0.0] * max(n_quiet, 0))])
    med = float(x.median()) if len(x) else 0.0
    scale = max(MAD_SCALE * float((x - med).abs().median()), 1.0) if len(x) else 1.0
    failing = set(counts.filter((pl.col("len") - med) / scale >= SUSPECT_Z)["node"].to_list())
    flagged = (set(con.sql("SELECT node FROM marts.suspect_nodes").pl()["node"].to_list())
               if _has_table(con, "marts.suspect_nodes") else set())
    repeat = set(counts.filter(pl.col("len") >= SUSPECT_MIN_FAULTS)["node"].to_list())
    deserving = failing | repeat | set(summary.get("lemon_nodes", []))
    precision = len(flagged & deserving) / len(flagged) if flagged else float("nan")
    recall = len(flagged & failing) / len(failing) if failing else float("nan")
    return len(flagged), precision, len(failing), recall


def score_scenario(con: duckdb.DuckDBPyConnection, truth_dir: Path) -> IncidentScore:
    """Every Done-when metric of one simulated scenario (see the module doc)."""
    truth_dir = Path(truth_dir)
    classes = _classes()
    notes: list[str] = []
    con.execute("SET TimeZone = 'UTC'")
    truth = truth_incidents(truth_dir)
    true_by_class = dict(truth.group_by("component_class").len().iter_rows())
    in_service, down, node_span, last_dump = truth_exposure(truth_dir)

    incidents = product_incidents(con, classes) if _has_table(con, "marts.hw_incidents") else pl.DataFrame(
        schema={"incident_id": pl.String, "component": pl.String, "first_event_id": pl.Int64,
                "component_class": pl.String})
    hw_by_class = dict(incidents.group_by("component_class").len().iter_rows())

    mtbf = product_mtbf(con)
    cluster = mtbf.filter(pl.col("scope") == "cluster")
    mtbf_hours = None if cluster.is_empty() or cluster["mtbf_hours"][0] is None else float(cluster["mtbf_hours"][0])
    by_class = {r["component"]: r for r in mtbf.filter(pl.col("scope") == "component_class").iter_rows(named=True)}
    realized_by_class = {c: in_service / n for c, n in true_by_class.items()}
    in_interval: dict[str, bool] = {}
    for c, n in true_by_class.items():
        if n < MIN_FAULTS_FOR_INTERVAL:
            continue
        row = by_class.get(c)
        lo, hi = (row["ci_low"], row["ci_high"]) if row is not None else (None, None)
        in_interval[c] = lo is not None and hi is not None and lo <= realized_by_class[c] <= hi
    exposure = product_exposure_hours(mtbf)
    if exposure is None:
        notes.append("marts.mtbf has no cluster exposure")

    # Only repairs that ended by the last dump: the pipeline cannot see a repair after its data ends.
    true_mttr = dict(truth.filter(pl.col("end_ts") <= last_dump).group_by("component_class")
                     .agg(pl.col("repair_hours").median()).iter_rows())
    ari, matched, n_truth_alerts, per_inc, true_per_inc = alert_grouping(con, truth_dir)
    if matched < n_truth_alerts:
        notes.append(f"{n_truth_alerts - matched} of {n_truth_alerts} truth alerts not in an alert incident")
    precision, recall, support, share, both = attribution_scores(con, truth_dir, truth, classes)
    n_flagged, s_precision, s_support, s_recall = suspect_scores(con, truth_dir)

    return IncidentScore(
        true_faults=truth.height, hw_incidents=incidents.height,
        true_faults_by_class=true_by_class, hw_incidents_by_class=hw_by_class,
        other_health_check_incidents=product_other_health_check_incidents(con, incidents),
        mtbf_hours=mtbf_hours, realized_mtbf_hours=in_service / truth.height if truth.height else float("nan"),
        mtbf_by_class={c: (None if r["mtbf_hours"] is None else float(r["mtbf_hours"])) for c, r in by_class.items()},
        realized_mtbf_by_class=realized_by_class, realized_in_interval=in_interval,
        mttr_p50_by_class=product_mttr_p50_by_class(con, classes), true_mttr_p50_by_class=true_mttr,
        exposure_hours=exposure, true_exposure_hours=in_service,
        downtime_removed_hours=product_downtime_hours(con, exposure, node_span), true_downtime_hours=down,
        alert_ari=ari, alerts_matched=matched, alerts_truth=n_truth_alerts,
        alerts_per_incident=per_inc, true_alerts_per_incident=true_per_inc,
        attribution_precision=precision, attribution_recall=recall, attribution_support=support,
        class_match_share=share, class_match_support=both, suspects_flagged=n_flagged,
        suspect_precision=s_precision, suspect_support=s_support, suspect_recall=s_recall, notes=notes)
