"""Health checks as evidence, and how good each check is.

Node health checks (LBNL NHC ``Health check failed:  <check>:  <message>`` lines, catalogued as
``core.node_events`` of kind ``health_check``) drain a node when they fail. Job failure attribution
already takes a failed check on a job's node near its end as infrastructure evidence; this module
answers the SRE's next questions:

* **How often did each check fire, and how often did a firing precede a job failure?** A *firing* is
  one episode of a check on a node: NHC repeats every few minutes while the condition lasts, so events
  of one check on one node less than ``episode_gap`` apart are one firing. A firing *preceded a job
  failure* when a job on that node ended FAILED / NODE_FAIL / REQUEUED (any attribution) between ``before``
  (5 min) before the firing and ``after`` (10 min) after it — the check detected what killed the job,
  or fired just before. ``precision`` = firings that preceded a failure / firings; a check that fires
  often and never precedes one drains healthy nodes (a false-positive drain costs node-hours).
* **Which infrastructure failures did no check see?** Jobs attributed to the infrastructure with no
  failing check on any of their nodes from ``miss_before`` (10 min) before their end to ``miss_after``
  (30 min) after it — missed detections (or failures no check covers, like a PSU). Only a check that can
  detect a failure counts: one at the failure threshold, as failure evidence is everywhere
  (:func:`~gpusre.models.failures.hw_incidents.failure_events`); a capacity check (``check_fs_free``: /tmp
  filling up, catalog severity medium) is housekeeping and detected no GPU fault beside it.

Events are ``core.node_events_once``: a run NHC and slurmd's HealthCheckProgram report both logged is
one event there, so ``events`` counts runs.

Without Slurm accounting there are no job outcomes: firings still count, but whether one preceded a
failure is unknown, so ``preceded_job_failure`` and ``precision`` are null (not 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import polars as pl

from gpusre.models.component_classes import load_component_classes
from gpusre.models.vocabulary import HEALTH_CHECK_KIND, KILLED_STATES, RESTART_STATES

__all__ = ["CHECK_NAME_PATTERN", "QUALITY_SCHEMA", "MISSES_SCHEMA", "check_component", "check_name",
           "health_check_quality", "missed_detections"]

#: The failed check's name in an NHC line (``check_nv_healthmon``, ``check_fs_mount_rw``, ...).
CHECK_NAME_PATTERN = r"Health check failed:\s+([A-Za-z0-9_]+):"

QUALITY_SCHEMA: dict[str, pl.DataType] = {
    "check_name": pl.String(), "component": pl.String(), "firings": pl.Int64(), "events": pl.Int64(),
    "nodes": pl.Int64(), "preceded_job_failure": pl.Int64(), "precision": pl.Float64(),
    "first_ts": pl.Datetime("us", "UTC"), "last_ts": pl.Datetime("us", "UTC"),
}
MISSES_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.String(), "state": pl.String(), "end_ts": pl.Datetime("us", "UTC"), "n_gpus": pl.Int64(),
    "nodes": pl.List(pl.String()), "component": pl.String(), "rule": pl.String(),
}


def check_name(message: pl.Expr) -> pl.Expr:
    """The NHC check name in a message (``unknown`` when the line does not name one)."""
    return message.str.extract(CHECK_NAME_PATTERN, 1).fill_null("unknown")


#: Component classes reported as one family by a check that fires on several of their components: NVLink and
#: NVSwitch sit on the GPU baseboard, and a GPU health monitor (NHC ``check_nv_healthmon``) reports their
#: faults beside ECC and fallen-off-the-bus GPUs — one GPU check, not an NVLink or a PCIe one.
_CLASS_FAMILY = {"nvlink": "gpu"}
#: What a check spanning several families (or a family without a generic component) is labelled.
_SEVERAL = "other"


def check_component(components: Sequence[str | None], most_common: str | None = None) -> str | None:
    """The component a health check tests, from the components of its firings.

    One component: that one (``most_common`` when given). Several of one class
    (``catalog/component_classes.csv``): the class's generic component, the one named like it (``nvlink``
    for nvlink + nvswitch); several classes of one family (the nvlink class counts with gpu): the family's
    (``gpu`` for gpu_memory + pcie_bus + nvlink — not the most common of them, which named NHC's
    check_nv_healthmon "PCIe bus"); a class without a generic component (host: host_cpu + host_memory),
    or several families: ``other``.

    >>> check_component(["gpu_memory", "pcie_bus", "nvlink"], "pcie_bus")
    'gpu'
    >>> check_component(["os"], "os")
    'os'
    """
    seen = sorted({c for c in components if c})
    if len(seen) <= 1:
        return most_common if most_common is not None else (seen[0] if seen else None)
    catalog = load_component_classes()
    klass = dict(zip(catalog["component"].to_list(), catalog["component_class"].to_list(), strict=True))
    classes = {klass.get(c, "other") for c in seen}
    if len(classes) == 1:
        one = classes.pop()
        return one if one in klass else _SEVERAL
    families = {_CLASS_FAMILY.get(c, c) for c in classes}
    if len(families) > 1:
        return _SEVERAL
    family = families.pop()
    return family if family in klass else _SEVERAL


def _with_check_component(out: pl.DataFrame) -> pl.DataFrame:
    """``component`` from ``_mode`` (the most common) and ``_comps`` (all) of each check: :func:`check_component`."""
    named = [check_component(comps or [], mode) for mode, comps in zip(out["_mode"].to_list(), out["_comps"].to_list(),
                                                                         strict=True)]
    return out.with_columns(pl.Series("component", named, dtype=pl.String)).drop("_mode", "_comps")


def _firings(events: pl.DataFrame, episode_gap: timedelta) -> pl.DataFrame:
    """One row per firing episode: its first failing run (``ts``), its last (``last_ts``) and its runs."""
    hc = (events.filter(pl.col("kind") == HEALTH_CHECK_KIND)
          .select("node", pl.col("ts").cast(pl.Datetime("us", "UTC")), "component",
                  check_name(pl.col("message")).alias("check_name"))
          .sort("check_name", "node", "ts"))
    return (hc.with_columns(((pl.col("ts") - pl.col("ts").shift(1).over("check_name", "node")) > episode_gap)
                            .fill_null(True).cum_sum().over("check_name", "node").alias("_ep"))
            .group_by("check_name", "node", "_ep")
            .agg(pl.col("ts").min().alias("ts"), pl.col("ts").max().alias("last_ts"), pl.col("component").first(),
                 pl.len().alias("events"))
            .sort("check_name", "node", "ts"))


def health_check_quality(events: pl.DataFrame, jobs: pl.DataFrame | None, *,
                         episode_gap: timedelta = timedelta(minutes=30),
                         before: timedelta = timedelta(minutes=5),
                         after: timedelta = timedelta(minutes=10),
                         killed_states: Sequence[str] = KILLED_STATES) -> pl.DataFrame:
    """:data:`QUALITY_SCHEMA` rows, one per check, most firings first.

    ``first_ts`` is the first failing run, ``last_ts`` the last one (the end of the latest firing, not its start).

    Args:
        events: ``core.node_events_once`` (``node``, ``ts``, ``kind``, ``component``, ``message``): each run once.
        jobs: job instances or jobs with ``state``, ``end_ts``, ``nodes`` (List[String]); None without
            Slurm accounting: whether a firing preceded a job failure is then unknown, so
            ``preceded_job_failure`` and ``precision`` are null (firings, events and nodes still count).
        killed_states: ends that count as a job failure (cluster.yaml ``alerts.clustering.killed_states``);
            a restart (REQUEUED, BOOT_FAIL: a health-check requeue under the same id) always counts.
    """
    fir = _firings(events, episode_gap)
    if not fir.height:
        return pl.DataFrame(schema=QUALITY_SCHEMA)
    if jobs is None:
        out = (fir.sort("check_name", "node", "ts").group_by("check_name")
               .agg(pl.col("component").mode().sort().first().alias("_mode"),
                    pl.col("component").drop_nulls().unique().sort().alias("_comps"),
                    pl.len().alias("firings"), pl.col("events").sum(),
                    pl.col("node").n_unique().alias("nodes"), pl.col("ts").min().alias("first_ts"),
                    pl.col("last_ts").max())
               .pipe(_with_check_component)
               .with_columns(pl.lit(None, pl.Int64).alias("preceded_job_failure"),
                             pl.lit(None, pl.Float64).alias("precision")))
        return (out.select([pl.col(c).cast(t) for c, t in QUALITY_SCHEMA.items()])
                .sort("firings", "check_name", descending=[True, False]))
    ends = (jobs.filter(pl.col("state").is_in([*killed_states, *RESTART_STATES]) & pl.col("end_ts").is_not_null())
            .select(pl.col("end_ts").cast(pl.Datetime("us", "UTC")), pl.col("nodes"))
            .explode("nodes").rename({"nodes": "node"}).drop_nulls("node").sort("node", "end_ts"))
    # the first failed-job end at or after (firing - before), per node: preceded when it is <= firing + after
    fir = fir.with_columns((pl.col("ts") - before).alias("_lo")).sort("_lo")
    nxt = fir.join_asof(ends.rename({"end_ts": "_end"}), left_on="_lo", right_on="_end", by="node",
                        strategy="forward", check_sortedness=False)
    nxt = nxt.with_columns((pl.col("_end").is_not_null() & (pl.col("_end") <= pl.col("ts") + after)).alias("_hit"))
    out = (nxt.sort("check_name", "node", "ts").group_by("check_name")
           .agg(pl.col("component").mode().sort().first().alias("_mode"),
                pl.col("component").drop_nulls().unique().sort().alias("_comps"),
                pl.len().alias("firings"), pl.col("events").sum(),
                pl.col("node").n_unique().alias("nodes"), pl.col("_hit").sum().alias("preceded_job_failure"),
                pl.col("ts").min().alias("first_ts"), pl.col("last_ts").max())
           .pipe(_with_check_component)
           .with_columns((pl.col("preceded_job_failure") / pl.col("firings")).alias("precision")))
    return (out.select([pl.col(c).cast(t) for c, t in QUALITY_SCHEMA.items()])
            .sort("firings", "check_name", descending=[True, False]))


def missed_detections(attribution: pl.DataFrame, jobs: pl.DataFrame, events: pl.DataFrame, *,
                      miss_before: timedelta = timedelta(minutes=10),
                      miss_after: timedelta = timedelta(minutes=30)) -> pl.DataFrame:
    """:data:`MISSES_SCHEMA` rows: infrastructure-attributed jobs with no failing check on their nodes
    in [end − ``miss_before``, end + ``miss_after``].

    A failing check is a health-check event at the failure threshold, the one test of failure evidence
    (:func:`~gpusre.models.failures.hw_incidents.failure_events`: cause class hardware / driver-firmware /
    system software, severity at least high): a capacity check (``log_patterns.csv`` ``nhc_fs_capacity*``,
    ``nhc_capacity*_text``: severity medium) is housekeeping — /tmp filling up detects no Xid 95 beside it.
    Any such check on any of the job's nodes counts, whatever its component (the README's definition: no
    failing check on its nodes).

    Args:
        events: ``core.node_events_once`` with the columns of
            :data:`~gpusre.models.failures.hw_incidents.EVENT_SCHEMA`.
    """
    # hw_incidents imports this module (check_name): imported here, not at the top, to break the cycle.
    from gpusre.models.failures.hw_incidents import failure_events
    infra = (attribution.filter(pl.col("attribution") == "infrastructure")
             .select("job_id", "state", pl.col("end_ts").cast(pl.Datetime("us", "UTC")), "n_gpus", "component", "rule")
             .join(jobs.select("job_id", "nodes"), on="job_id", how="left"))
    if not infra.height:
        return pl.DataFrame(schema=MISSES_SCHEMA)
    hc = (failure_events(events.filter(pl.col("kind") == HEALTH_CHECK_KIND))
          .select("node", pl.col("ts").cast(pl.Datetime("us", "UTC"))).sort("node", "ts"))
    pairs = (infra.select("job_id", "end_ts", "nodes").explode("nodes").rename({"nodes": "node"})
             .drop_nulls("node").with_columns((pl.col("end_ts") - miss_before).alias("_lo")).sort("_lo"))
    seen = (pairs.join_asof(hc.rename({"ts": "_ts"}), left_on="_lo", right_on="_ts", by="node",
                            strategy="forward", check_sortedness=False)
            .filter(pl.col("_ts").is_not_null() & (pl.col("_ts") <= pl.col("end_ts") + miss_after))
            .select("job_id").unique())
    missed = infra.join(seen, on="job_id", how="anti")
    return missed.select([pl.col(c).cast(t) for c, t in MISSES_SCHEMA.items()]).sort("end_ts", "job_id")
