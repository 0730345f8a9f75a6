"""Roll-ups of attributed failures over incidents: the failure taxonomy and each incident's impact.

Lost work (GPU-hours) is the common currency: the taxonomy puts it beside incident and event counts
per component ("GPU 9, NVLink 3, interconnect switch 5…"), and :func:`incident_impact` ranks
incidents by what they cost and says how long until their nodes ran a job successfully again.

Periods: an incident belongs to the period of its ``start_ts``, and so do the jobs attributed to
it (a job that failed just after midnight on the 1st counts in the month its incident began, so
one incident's cost is never split). Infrastructure-attributed jobs with no incident (NODE_FAIL
without evidence, component ``unknown (suspected)``) get their own rows, in the period of their
``end_ts``, with ``incidents`` = 0; so per period the taxonomy's ``lost_gpu_hours`` add up to the
attribution's infrastructure total.

Incidents an operator marked not a failure (``incidents.csv`` component ``none`` / ``false_positive`` /
``not_a_failure``: :func:`~gpusre.models.vocabulary.is_failure_incident` false) are no failures: the
taxonomy counts neither them nor their events. A job one of them killed stays attributed to the
infrastructure (the link really went down under it), so its lost GPU-hours keep a row — component and
cause class ``not_a_failure``, ``incidents`` = 0 — and the sum above still holds.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from gpusre.models.ordered_sums import ordered_sum
from gpusre.models.vocabulary import INFRASTRUCTURE, is_failure_incident

__all__ = ["IMPACT_SCHEMA", "TAXONOMY_SCHEMA", "failure_taxonomy", "incident_impact"]

#: Output of :func:`failure_taxonomy`.
TAXONOMY_SCHEMA: dict[str, pl.DataType] = {
    "period_type": pl.String(),
    "period": pl.String(),
    "component": pl.String(),
    "cause_class": pl.String(),
    "incidents": pl.Int64(),
    "events": pl.Int64(),
    "affected_jobs": pl.Int64(),
    "lost_gpu_hours": pl.Float64(),
}
#: Output of :func:`incident_impact`.
IMPACT_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(),
    "affected_jobs": pl.Int64(),
    "affected_gpus": pl.Int64(),
    "lost_gpu_hours": pl.Float64(),
    "nodes_recovered": pl.Int64(),
    "recovered_ts": pl.Datetime("us", "UTC"),
    "hours_to_recovery": pl.Float64(),
}

Period = Literal["all", "month", "week"]


def _period(ts: pl.Expr, period: Period) -> pl.Expr:
    """Period label of ``ts``: ``all``, ``YYYY-MM`` or ISO ``YYYY-Www`` (as in marts.gpu_time_by_state)."""
    if period == "all":
        return pl.lit("all")
    if period == "month":
        return ts.dt.strftime("%Y-%m")
    if period == "week":
        return ts.dt.strftime("%G-W%V")
    raise ValueError(f"period must be 'all', 'month' or 'week', not {period!r}")


def failure_taxonomy(incidents: pl.DataFrame, attribution: pl.DataFrame, period: Period = "all", *,
                     accounting: bool = True) -> pl.DataFrame:
    """Incidents, events, affected jobs and lost GPU-hours per period × component × cause class.

    Args:
        incidents: from :func:`~gpusre.models.failures.hw_incidents.merge_incidents` (``incident_id``,
            ``component``, ``cause_class``, ``start_ts``, ``n_events``).
        attribution: from :func:`~gpusre.models.failures.attribution.attribute_failures` (``job_id``,
            ``attribution``, ``incident_id``, ``component``, ``cause_class``, ``end_ts``, ``lost_gpu_hours``):
            rows of jobs and of their requeued instances — a job killed twice is one affected job, both
            losses count (as in :func:`incident_impact`).
        period: ``all``, ``month`` or ``week``.
        accounting: false when there is no Slurm accounting (``core.jobs`` empty): which jobs an
            incident killed is then unknown, so ``affected_jobs`` and ``lost_gpu_hours`` are null, not 0.

    Returns:
        :data:`TAXONOMY_SCHEMA`, sorted by period, then lost GPU-hours and incidents descending.
        A null cause class (e.g. an operator incident without events) is reported as ``unknown``.
        An incident marked not a failure counts no incident and no event (module docstring).
    """
    keys = ["period", "component", "cause_class"]
    inc = incidents.select(
        "incident_id",
        _period(pl.col("start_ts"), period).alias("period"),
        pl.col("component"),
        pl.col("cause_class").fill_null("unknown"),
        pl.col("n_events").cast(pl.Int64),
    )
    # Only failures are counted; the jobs below still find an incident marked not a failure by its id.
    per_incident = inc.filter(is_failure_incident()).group_by(keys).agg(
        pl.len().cast(pl.Int64).alias("incidents"), pl.col("n_events").sum().alias("events")
    )
    infra = attribution.filter(pl.col("attribution") == INFRASTRUCTURE)
    with_incident = infra.filter(pl.col("incident_id").is_not_null()).select(
        "job_id", "incident_id", "lost_gpu_hours").join(inc.select("incident_id", *keys), on="incident_id", how="inner")
    without_incident = infra.filter(pl.col("incident_id").is_null()).select(
        "job_id",
        _period(pl.col("end_ts"), period).alias("period"),
        pl.col("component").fill_null("unknown"),
        pl.col("cause_class").fill_null("unknown"),
        "lost_gpu_hours",
    )
    jobs = (pl.concat([with_incident.select("job_id", *keys, "lost_gpu_hours"), without_incident])
            .sort("job_id", *keys, "lost_gpu_hours")  # a fixed order for the float sums: reruns are bit-identical
            .group_by(keys).agg(pl.col("job_id").n_unique().cast(pl.Int64).alias("affected_jobs"),
                                pl.col("lost_gpu_hours").sum()))
    out = per_incident.join(jobs, on=keys, how="full", coalesce=True).with_columns(
        pl.lit(period).alias("period_type"),
        pl.col("incidents", "events", "affected_jobs").fill_null(0),
        pl.col("lost_gpu_hours").fill_null(0.0),
    )
    if not accounting:
        out = out.with_columns(pl.lit(None, pl.Int64).alias("affected_jobs"), pl.lit(None, pl.Float64).alias("lost_gpu_hours"))
    return out.select(pl.col(c).cast(t) for c, t in TAXONOMY_SCHEMA.items()).sort(
        ["period", "lost_gpu_hours", "incidents", "component", "cause_class"],
        descending=[False, True, True, False, False], nulls_last=True,
    )


def incident_impact(incidents: pl.DataFrame, attribution: pl.DataFrame, jobs: pl.DataFrame, *,
                    accounting: bool = True) -> pl.DataFrame:
    """Per incident: jobs it killed, their GPUs and lost GPU-hours, and when its nodes ran a job fine again.

    Recovery of a node is the start of the first COMPLETED job on it starting at or after the
    incident's ``end_ts``; the incident has recovered when every one of its nodes that ran any job in
    the accounting has (a switch tray or server a rack incident names runs none)
    (``recovered_ts`` = the latest of those starts, ``hours_to_recovery`` from ``end_ts``); while
    any node has not, both are null and ``nodes_recovered`` says how many have.

    Args:
        incidents: ``incident_id``, ``end_ts``, ``nodes``.
        attribution: ``job_id``, ``attribution``, ``incident_id``, ``n_gpus``, ``lost_gpu_hours``: rows of jobs
            and of their requeued instances (a job's rows are one affected job).
        jobs: ``core.jobs`` (``state``, ``start_ts``, ``nodes``).
        accounting: false when there is no Slurm accounting (``core.jobs`` empty): the jobs an incident
            killed and whether its nodes ran a job again are unknown, so every impact column is null
            (never 0: "no job was killed" would be a claim the data cannot support).

    Returns:
        :data:`IMPACT_SCHEMA`, one row per incident, sorted by lost GPU-hours descending.
    """
    if not accounting:
        return (incidents.select("incident_id")
                .with_columns(pl.lit(None, t).alias(c) for c, t in IMPACT_SCHEMA.items() if c != "incident_id")
                .select(pl.col(c).cast(t) for c, t in IMPACT_SCHEMA.items()).sort("incident_id"))
    kills = attribution.filter((pl.col("attribution") == INFRASTRUCTURE) & pl.col("incident_id").is_not_null())
    # A job killed twice by one incident (a requeued instance, then the job) is one affected job of
    # its GPUs; both losses count.
    per_job = kills.group_by("incident_id", "job_id").agg(pl.col("n_gpus").max(), ordered_sum("lost_gpu_hours"))
    hit = (
        per_job.group_by("incident_id")
        .agg(
            pl.len().cast(pl.Int64).alias("affected_jobs"),
            pl.col("n_gpus").sum().cast(pl.Int64).alias("affected_gpus"),
            ordered_sum("lost_gpu_hours"),
        )
    )
    successes = (
        jobs.filter((pl.col("state") == "COMPLETED") & pl.col("start_ts").is_not_null())
        .select(pl.col("start_ts").cast(pl.Datetime("us", "UTC")).alias("_ok_ts"), pl.col("nodes"))
        .explode("nodes")
        .rename({"nodes": "node"})
        .drop_nulls()
        .sort("_ok_ts")
    )
    # Only hosts that run jobs can show a recovery by running one: an NVSwitch tray or a server a
    # rack incident names never would, and would keep the incident "not yet recovered" forever.
    job_hosts = jobs.select(pl.col("nodes").explode().drop_nulls().unique().alias("node"))
    inc_nodes = (
        incidents.select("incident_id", pl.col("end_ts").cast(pl.Datetime("us", "UTC")), "nodes")
        .explode("nodes")
        .rename({"nodes": "node"})
        .drop_nulls()
        .join(job_hosts, on="node", how="semi")
        .sort("end_ts")
    )
    # First success at or after the incident end on each node: a forward as-of join per node.
    recovered = inc_nodes.join_asof(
        successes, left_on="end_ts", right_on="_ok_ts", by="node", strategy="forward", check_sortedness=False
    )
    per_incident = recovered.group_by("incident_id").agg(
        pl.col("_ok_ts").is_not_null().sum().cast(pl.Int64).alias("nodes_recovered"),
        pl.when(pl.col("_ok_ts").is_not_null().all()).then(pl.col("_ok_ts").max()).alias("recovered_ts"),
        pl.col("end_ts").first().alias("_end"),
    )
    out = (
        incidents.select("incident_id")
        .join(hit, on="incident_id", how="left")
        .join(per_incident, on="incident_id", how="left")
        .with_columns(
            pl.col("affected_jobs", "affected_gpus", "nodes_recovered").fill_null(0),
            pl.col("lost_gpu_hours").fill_null(0.0),
            ((pl.col("recovered_ts") - pl.col("_end")).dt.total_seconds() / 3600.0).alias("hours_to_recovery"),
        )
    )
    return out.select(pl.col(c).cast(t) for c, t in IMPACT_SCHEMA.items()).sort(
        ["lost_gpu_hours", "incident_id"], descending=[True, False]
    )
