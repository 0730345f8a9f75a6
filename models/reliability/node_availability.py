"""Node availability from Slurm node-state history: down time per node and UTC day, by cause.

Input is ``core.node_states``: one interval per node event (DRAIN, DOWN, FAIL, MAINT, REBOOT…),
each with an ``availability_class`` (``hardware``, ``maintenance``, ``health_check``,
``software``, ``unknown``; see :mod:`gpusre.models.failures.drain_reasons`). Every row is time out of
service: slurmdbd records node events only while a node takes no new work, and core.node_states leaves
out the lines that are no outage (power saving, states that serve jobs: ``_is_outage`` in
:mod:`gpusre.models.sources.slurm_events.ingest`).

Rules, in order:

0. **A drain on a node still running jobs takes effect when they end** (:func:`with_down_from`, applied by the
   assets before these rules): Slurm's ``DRAIN`` on an allocated node (``MIXED+DRAIN``, ``DRAINING``) lets the
   jobs running on it finish and starts no new one; the node is drained (out of service) when the last job
   running on it at the drain's start ends (``core.jobs``). Until then it is in service — not down, not
   maintenance. A state that shows the node idle, drained, down or not responding is out of service at once,
   and so is a bare ``DRAIN`` (the text does not say): ``sacctmgr show event`` lists the drain from when it was
   set, and a site's record that does not say the node was busy is read as it is written (an outside
   evaluator's hand values count a bare ``DRAIN`` from its start whatever jobs ran).
1. **Ongoing events end at ``as_of``** (an open event is down until we know better); nothing
   after ``as_of`` is counted.
2. **Overlaps are merged.** A node's down time is the union of its intervals, so a DRAIN that
   turns into a DOWN is not counted twice. Each piece of the union is **attributed to the
   earliest-started event still open** — the original cause: a node drained for
   ``NHC: Xid 79`` that later goes ``DOWN`` (``Not responding``) while being repaired stays a
   hardware outage.
3. **Planned maintenance windows** (cluster.yaml ``maintenance``) turn down time inside them into
   ``maintenance``, whatever the reason says.
4. **A generic reason takes its outage's cause** (:func:`outage_causes`, applied by the asset before
   these rules): a state whose own reason names no part (``Not responding``, ``Kill task failed``,
   an empty reason: component ``os``/``slurm``/``other``, class ``unknown``/``software``) takes the
   class and component of the part-naming reason of its outage chain (a ``DOWN*`` then a ``DRAIN
   "replace DIMM"`` minutes later: host memory), else of the hardware incident linked to its outage
   (``marts.incident_repairs``' rule: a rack's PDU trip makes its nodes' ``Not responding`` power
   down time). A reason that names a part's class but reads as software (a file-system mount or service check:
   ``check_fs_mount_rw: /lustre not mounted``, class ``software``, component ``storage``) on an outage linked to
   a hardware incident of that same component is that incident's symptom: it takes the incident's cause
   too (``hardware``, the incident's component: the Lustre client's error logged minutes before explains the
   mount check's drain, as ``marts.incident_repairs`` says); without such an incident it stays software (other
   down time). A bare reboot request on an outage linked to a hardware incident is that fault's repair
   (the same link), and so is a planned-looking reason (a change ticket, a reboot, an upgrade) on a state
   that continues a hardware outage of its outage chain (:func:`fault_repairs`). Any other state with a
   reason of its own keeps it (a planned drain set while the node was in service stays maintenance).
5. Time not covered by an event is **in service** (``source = 'assumed_in_service'`` marks node-days
   with no event at all; the history cannot tell an idle-but-healthy node from a missing dump).

**Coverage** (one definition for every reader): a node-day *is covered by node-state history* when
``marts.node_availability_daily`` has its row — whatever its ``source``: a covered node with no event was
in service. Its ``observed_hours`` run from midnight (on the mart's first day, up to midnight). The
``node_availability`` SLI, MTBF exposure and ``marts.node_hardware_loss`` measure covered node-hours from
these rows and estimate from incidents only the node-hours without one (no history, or after it ends).

>>> from datetime import date, datetime, timezone
>>> UTC = timezone.utc
>>> states = pl.DataFrame({
...     "node": ["n1", "n1"],
...     "start_ts": [datetime(2026, 1, 1, 22, tzinfo=UTC), datetime(2026, 1, 1, 23, tzinfo=UTC)],
...     "end_ts": [datetime(2026, 1, 2, 2, tzinfo=UTC), datetime(2026, 1, 2, 4, tzinfo=UTC)],
...     "availability_class": ["hardware", "unknown"]})
>>> daily = node_availability_daily(states, ["n1", "n2"], date(2026, 1, 1), date(2026, 1, 2),
...                                 as_of=datetime(2026, 1, 3, tzinfo=UTC))
>>> daily.filter(pl.col("node") == "n1").select("day", "down_hours", "down_hardware_hours", "down_other_hours").rows()
[(datetime.date(2026, 1, 1), 2.0, 2.0, 0.0), (datetime.date(2026, 1, 2), 4.0, 2.0, 2.0)]
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from datetime import date, datetime, time, timedelta, timezone

import polars as pl

from gpusre.models.accounting_span import MAX_GAP_MINUTES
from gpusre.models.failures.drain_reasons import REBOOT_CLASS
from gpusre.models.vocabulary import class_of, load_component_classes
from gpusre.models.reliability.mtbf import MaintenanceSpan
from gpusre.models.reliability.repair_times import GENERIC_COMPONENTS, chain_reason_states, node_outages, outage_chains
from gpusre.models.sources.slurm_events.parse import runs_jobs
from gpusre.models.warehouse import query_frames
from gpusre.models.ordered_sums import ordered_sum

__all__ = [
    "DAILY_SCHEMA",
    "SEGMENT_SCHEMA",
    "MaintenanceSpan",
    "AVAILABILITY_BY_COMPONENT_SCHEMA",
    "CONTINUES_FAULT",
    "DOWN_FROM",
    "availability_by_component",
    "down_segments",
    "fault_repairs",
    "node_availability_daily",
    "out_of_service_states",
    "outage_causes",
    "repair_states",
    "with_down_from",
]

_UTC_DT = pl.Datetime("us", "UTC")
#: The column :func:`with_down_from` adds: the moment a state took its node out of service.
DOWN_FROM = "down_from"
#: A job still running (no end) keeps its node in service past any date the data reaches.
_NEVER = datetime(9999, 1, 1, tzinfo=timezone.utc)

#: Down time attributed to one event, cut at maintenance-window edges.
SEGMENT_SCHEMA: dict[str, pl.DataType] = {
    "node": pl.String(),
    "start_ts": _UTC_DT,
    "end_ts": _UTC_DT,
    "hours": pl.Float64(),
    "event_start_ts": _UTC_DT,           # start_ts of the event the time is attributed to
    "availability_class": pl.String(),   # the event's, or 'maintenance' inside a planned window
    "reason_class": pl.String(),
    "in_maintenance_window": pl.Boolean(),
}

#: ``marts.node_availability_daily``: one row per node and UTC day.
DAILY_SCHEMA: dict[str, pl.DataType] = {
    "day": pl.Date(),
    "node": pl.String(),
    "observed_hours": pl.Float64(),      # 24, less on a partial day of as_of (or the first day of the range)
    "in_service_hours": pl.Float64(),
    "down_hours": pl.Float64(),
    "down_hardware_hours": pl.Float64(),
    "down_maintenance_hours": pl.Float64(),
    "down_health_check_hours": pl.Float64(),
    "down_other_hours": pl.Float64(),    # software + unknown
    "source": pl.String(),               # 'node_states' | 'assumed_in_service'
}

_BUCKET_COLUMNS = {
    "hardware": "down_hardware_hours",
    "maintenance": "down_maintenance_hours",
    "health_check": "down_health_check_hours",
}


#: Reason classes (``drain_reasons.csv``) of a full file system: housekeeping, never a part's symptom, whatever
#: incident its outage is linked to (as capacity health checks are no failure evidence).
CAPACITY_REASON_CLASSES = frozenset({"disk_full"})
GENERIC_CLASSES = frozenset({"unknown", "software"})
#: ``class_source`` of a planned-looking state that continues a hardware outage of its node (:func:`fault_repairs`).
CONTINUES_FAULT = "hardware_outage"


def outage_causes(states: pl.DataFrame, links: pl.DataFrame | None = None) -> pl.DataFrame:
    """``states`` with each generic-reason state's ``availability_class`` and ``reason_component`` taken
    from the cause of its outage; adds ``component_class`` (set when it comes from an incident, whose
    component may be outside the catalog) and ``class_source`` (``reason`` | ``outage_chain`` | ``incident`` |
    ``hardware_outage``).

    A state is *generic* when its ``reason_component`` is null or in :data:`~gpusre.models.reliability.repair_times.GENERIC_COMPONENTS` and its
    ``availability_class`` null or in :data:`GENERIC_CLASSES`. Its outage is the merged run of states it
    belongs to (:func:`~gpusre.models.reliability.repair_times.node_outages`), chained with the outages
    that follow within 30 min (:func:`~gpusre.models.reliability.repair_times.outage_chains`). In order:

    1. the first part-naming reason of the chain from its outage on (``chain_reason``): that state's
       class and component — README's rule, the node's own record of what was found;
    2. else the hardware incident linked to its outage or to an earlier outage of its chain (``links``,
       :func:`~gpusre.models.reliability.repair_times.incident_outage_links`, the incident_repairs
       linkage; the earliest incident when several are): ``hardware`` and the incident's component.

    A *software* state naming a component (``availability_class`` ``software``, ``reason_component`` outside
    :data:`~gpusre.models.reliability.repair_times.GENERIC_COMPONENTS`: ``NHC: check_fs_mount_rw: /lustre not mounted`` is ``storage``) whose outage (or
    an earlier outage of its chain) is linked to an incident of that same component (``links``; the earliest
    such incident; a full file system, :data:`CAPACITY_REASON_CLASSES`, never) is that incident's symptom — the reason says what failed to work, the incident what broke:
    ``hardware``, the incident's component and class, ``class_source`` ``incident``; a generic state of its
    chain then takes that cause by rule 1. Its component decides, not the link alone: a storage drain in an outage
    also linked to a GPU incident stays software, and so does a failed driver update beside an Xid.

    A bare reboot request (reason class ``reboot``, planned work by itself) on an outage linked to a hardware
    incident — the link rule ``marts.incident_repairs`` times the incident's repair by (``links``: from 30 min
    before its first evidence to 1 h after its last, at most 24 h), or an outage chained after it — is that
    fault's repair (Xid 79 at 20:10, ``Reboot ASAP`` at 21:05): it takes its outage's cause as a generic reason
    does. Then a planned-looking state that continues a hardware outage of its node is that fault's repair
    (:func:`fault_repairs`). Every other state keeps its own (a planned-maintenance drain set while the node was
    in service stays maintenance with an incident in it; ``Reboot ASAP for kernel update`` is no bare reboot).

    Args:
        states: ``node``, ``start_ts``, ``end_ts``, ``availability_class``, ``reason_component``,
            ``reason_class``, ``reason`` (core.node_states; missing optional columns count as null).
        links: ``incident_id``, ``component``, ``component_class``, ``incident_start_ts``, ``node``,
            ``outage_start_ts``, ``chain_start_ts``; None = no incidents.
    """
    states = states.drop("component_class", "class_source", strict=False)  # recomputed here
    for c in ("reason_component", "reason_class", "reason", "availability_class"):
        if c not in states.columns:
            states = states.with_columns(pl.lit(None, pl.String).alias(c))
    st = states.with_row_index("_row")
    if not st.height:
        return st.drop("_row").with_columns(pl.lit(None, pl.String).alias("component_class"),
                                            pl.lit(None, pl.String).alias("class_source"))
    chains = outage_chains(node_outages(st)).select(
        "node", "outage_start_ts", "chain_start_ts", "chain_end_ts", "chain_reason_class", "chain_reason")
    # Rule 2: the linked incidents, for their outage and the later outages of the same chain.
    if links is None or not links.height:
        linked = pl.DataFrame(schema={"node": pl.String, "outage_start_ts": chains.schema["outage_start_ts"],
                                      "incident_start_ts": chains.schema["outage_start_ts"], "incident_id": pl.String,
                                      "_inc_comp": pl.String, "_inc_class": pl.String})
    else:
        linked = (links.select("node", "chain_start_ts", pl.col("outage_start_ts").alias("_linked_ts"),
                               "incident_start_ts", "incident_id", pl.col("component").alias("_inc_comp"),
                               pl.coalesce(pl.col("component_class"), class_of(pl.col("component"))).alias("_inc_class"))
                  .with_columns(pl.col("chain_start_ts", "_linked_ts", "incident_start_ts").cast(chains.schema["outage_start_ts"]))
                  .join(chains.select("node", "chain_start_ts", "outage_start_ts"), on=["node", "chain_start_ts"])
                  .filter(pl.col("outage_start_ts") >= pl.col("_linked_ts"))
                  .sort("incident_start_ts", "incident_id")
                  .select("node", "outage_start_ts", "incident_start_ts", "incident_id", "_inc_comp", "_inc_class"))
    caused = linked.unique(["node", "outage_start_ts"], keep="first", maintain_order=True).select(
        "node", "outage_start_ts", "_inc_comp", "_inc_class")
    # A software reason naming a component (a file-system mount check: storage) on an outage linked to an incident
    # of that same component is the incident's symptom — the marts.incident_repairs link: hardware, its part.
    same_part = (linked.unique(["node", "outage_start_ts", "_inc_comp"], keep="first", maintain_order=True)
                 .select("node", pl.col("outage_start_ts").alias("_o"), pl.col("_inc_comp").alias("_own_class"),
                         pl.col("_inc_comp").alias("_sw_comp"), pl.col("_inc_class").alias("_sw_class")))
    # The same component, not just its class: a driver update that failed beside an Xid, or a full /tmp beside a
    # DIMM fault, is no symptom of the part; nor is a full file system ever (capacity is housekeeping).
    symptom = ((pl.col("availability_class") == "software") & pl.col("reason_component").is_not_null()
               & ~pl.col("reason_component").is_in(list(GENERIC_COMPONENTS))
               & ~pl.col("reason_class").is_in(list(CAPACITY_REASON_CLASSES)))
    st = (st.sort("start_ts")
          .join_asof(chains.select("node", pl.col("outage_start_ts").alias("_o")).sort("_o"), left_on="start_ts",
                     right_on="_o", by="node", strategy="backward", check_sortedness=False)
          .with_columns(pl.when(symptom).then(pl.col("reason_component")).alias("_own_class"))
          .join(same_part, on=["node", "_o", "_own_class"], how="left", maintain_order="left")
          .with_columns(pl.when(pl.col("_sw_class").is_not_null()).then(pl.lit("hardware"))
                        .otherwise(pl.col("availability_class")).alias("availability_class"),
                        pl.coalesce("_sw_comp", "reason_component").alias("reason_component"))
          .drop("_o", "_own_class", "_sw_comp")
          .sort("_row"))
    # Rule 1: the state carrying the chain's part-naming reason (the first one from the outage on), with the class
    # a software symptom took from its incident.
    named = (chain_reason_states(
                 chains, st.select("node", "start_ts", "reason_class", "reason",
                                   pl.col("availability_class").alias("_chain_avail"),
                                   pl.col("reason_component").alias("_chain_comp"), pl.col("_sw_class").alias("_chain_class")),
                 anchor="outage_start_ts")
             .select("node", "outage_start_ts", "_chain_avail", "_chain_comp", "_chain_class"))
    cause = (chains.select("node", "outage_start_ts")
             .join(named, on=["node", "outage_start_ts"], how="left")
             .join(caused, on=["node", "outage_start_ts"], how="left"))
    generic = ((pl.col("reason_component").is_null() | pl.col("reason_component").is_in(list(GENERIC_COMPONENTS)))
               & (pl.col("availability_class").is_null() | pl.col("availability_class").is_in(list(GENERIC_CLASSES))))
    # A bare reboot on an outage the incident_repairs rule links to a hardware incident (or chained after one) is
    # that fault's repair: the mart that times the incident's repair by this outage must not call it planned.
    repair_reboot = ((pl.col("reason_class") == REBOOT_CLASS) & pl.col("_inc_comp").is_not_null()).fill_null(False)
    generic = generic | repair_reboot
    from_chain = generic & pl.col("_chain_avail").is_not_null()
    from_incident = generic & ~from_chain & pl.col("_inc_comp").is_not_null()
    symptom_of_incident = pl.col("_sw_class").is_not_null()
    # Each state's outage: the node's last outage starting at or before it (outages partition the states).
    out = (st.sort("start_ts")
           .join_asof(cause.rename({"outage_start_ts": "_o"}).sort("_o"), left_on="start_ts", right_on="_o",
                      by="node", strategy="backward", check_sortedness=False)
           .with_columns(
               pl.when(from_chain).then(pl.col("_chain_avail")).when(from_incident).then(pl.lit("hardware"))
               .otherwise(pl.col("availability_class")).alias("availability_class"),
               pl.when(from_chain).then(pl.col("_chain_comp")).when(from_incident).then(pl.col("_inc_comp"))
               .otherwise(pl.col("reason_component")).alias("reason_component"),
               pl.when(from_chain).then(pl.col("_chain_class")).when(from_incident).then(pl.col("_inc_class"))
               .otherwise(pl.col("_sw_class")).alias("component_class"),
               pl.when(from_chain).then(pl.lit("outage_chain")).when(from_incident | symptom_of_incident)
               .then(pl.lit("incident")).otherwise(pl.lit("reason")).alias("class_source"))
           .sort("_row"))
    return fault_repairs(out.select(*states.columns, "component_class", "class_source"))


def fault_repairs(states: pl.DataFrame) -> pl.DataFrame:
    """``states`` with each planned-looking state that continues a hardware outage of its node made that fault's
    repair: ``availability_class`` ``hardware``, the ``reason_component`` and ``component_class`` of the hardware
    state before it, ``class_source`` :data:`CONTINUES_FAULT`.

    *Planned-looking*: ``availability_class`` ``maintenance`` by the state's own reason or Slurm state (a change
    ticket ``CHG-5512: swap GPU 3``, ``Reboot ASAP``, ``kernel upgrade``, a ``MAINT`` state). *Continues a hardware
    outage*: a state of the same outage chain (:func:`~gpusre.models.reliability.repair_times.outage_chains`: the
    node's outages with at most 30 min in service between them, the chain incident_repairs times a repair by)
    classed ``hardware`` started before it. An operator who rewrites an NHC drain's reason to the change ticket of
    the swap, or asks for a reboot minutes after the node came back from the drain, is repairing the fault the node
    is already out for: the node never returned to service for planned work. A maintenance state that opens its
    chain (set while the node was in service) stays maintenance, with a fault found in it or not, and a hardware
    drain that replaces it still ends it; cluster.yaml windows still count as maintenance (:func:`down_segments`).

    Args:
        states: ``node``, ``start_ts``, ``end_ts``, ``availability_class``, ``reason_component``; optionally
            ``component_class`` and ``class_source`` (:func:`outage_causes` output: a generic state resolved to
            hardware counts as hardware here).

    >>> t = lambda h: datetime(2026, 11, 2, h, tzinfo=timezone.utc)
    >>> states = pl.DataFrame({"node": ["n1", "n1", "n2"], "start_ts": [t(3), t(9), t(9)],
    ...                        "end_ts": [t(9), t(20), t(20)], "availability_class": ["hardware", "maintenance", "maintenance"],
    ...                        "reason_component": ["gpu", "other", "other"]})
    >>> fault_repairs(states).select("node", "availability_class", "reason_component").rows()
    [('n1', 'hardware', 'gpu'), ('n1', 'hardware', 'gpu'), ('n2', 'maintenance', 'other')]
    """
    st = states
    for c, dtype in (("component_class", pl.String), ("class_source", pl.String)):
        if c not in st.columns:
            st = st.with_columns(pl.lit(None, dtype).alias(c))
    if not st.height:
        return st
    st = st.with_row_index("_row")
    dtype = st.schema["start_ts"]
    # Each state's chain: its outage's (the node's last outage starting at or before it; outages partition states).
    chains = (outage_chains(node_outages(st))
              .select("node", pl.col("outage_start_ts").cast(dtype).alias("_o"), pl.col("chain_start_ts").cast(dtype).alias("_chain"))
              .sort("_o"))
    st = st.sort("start_ts").join_asof(chains, left_on="start_ts", right_on="_o", by="node", strategy="backward",
                                       check_sortedness=False)
    # The latest hardware state of the same chain that started before the state.
    hardware = (st.filter(pl.col("availability_class") == "hardware")
                .select("node", "_chain", pl.col("start_ts").alias("_hw_ts"),
                        pl.col("reason_component").alias("_hw_comp"), pl.col("component_class").alias("_hw_class"))
                .sort("_hw_ts"))
    st = st.join_asof(hardware, left_on="start_ts", right_on="_hw_ts", by=["node", "_chain"], strategy="backward",
                      allow_exact_matches=False, check_sortedness=False)
    repair = ((pl.col("availability_class") == "maintenance") & pl.col("_hw_ts").is_not_null()).fill_null(False)
    return (st.with_columns(
                pl.when(repair).then(pl.lit("hardware")).otherwise(pl.col("availability_class")).alias("availability_class"),
                pl.when(repair).then(pl.col("_hw_comp")).otherwise(pl.col("reason_component")).alias("reason_component"),
                pl.when(repair).then(pl.col("_hw_class")).otherwise(pl.col("component_class")).alias("component_class"),
                pl.when(repair).then(pl.lit(CONTINUES_FAULT)).otherwise(pl.col("class_source")).alias("class_source"))
            .sort("_row").select(*states.columns, *(c for c in ("component_class", "class_source") if c not in states.columns)))


def with_down_from(states: pl.DataFrame, jobs: pl.DataFrame | None) -> pl.DataFrame:
    """``states`` with :data:`DOWN_FROM`: when each state took its node out of service (rule 0).

    A drain (or fail) flag set on a node still running jobs lets them finish: the node is out of service from
    the end of the last job running on it at the state's start (``core.jobs``: ``start_ts`` at or before it,
    ``end_ts`` after it or null = still running), at most the state's end (a drain lifted before the jobs
    ended never took the node out: ``down_from`` = ``end_ts``). That applies to a state whose printed text
    shows the node running jobs (``MIXED+DRAIN``, ``ALLOCATED+DRAIN``, ``DRAINING``, ``FAILING``:
    :func:`~gpusre.models.sources.slurm_events.parse.runs_jobs`); one that shows it idle, ``DRAINED``,
    ``DOWN`` or not responding, or does not say (a bare ``DRAIN``), is out of service from its start,
    whatever ``core.jobs`` says — as is every state when no job ran on its node at its start.

    Args:
        states: ``node``, ``start_ts``, ``end_ts``; optionally ``state``, ``state_text``, ``not_responding``.
        jobs: ``nodes`` (List[String]), ``start_ts``, ``end_ts`` (null: running) — ``core.jobs``; None: no
            accounting (every state from its start).

    >>> t = lambda h: datetime(2026, 11, 12, h, tzinfo=timezone.utc)
    >>> states = pl.DataFrame({"node": ["n1", "n2"], "start_ts": [t(1), t(1)], "end_ts": [t(6), t(6)],
    ...                        "state_text": ["MIXED+DRAIN", "IDLE+DRAIN"]})
    >>> jobs = pl.DataFrame({"nodes": [["n1"], ["n2"]], "start_ts": [t(0), t(0)], "end_ts": [t(3), t(3)]})
    >>> [d.hour for d in with_down_from(states, jobs)["down_from"]]
    [3, 1]
    """
    st = states.drop(DOWN_FROM, strict=False)
    start = pl.col("start_ts").cast(_UTC_DT)
    if jobs is None or not jobs.height or not st.height:
        return st.with_columns(start.alias(DOWN_FROM))
    text = pl.col("state_text").cast(pl.String) if "state_text" in st.columns else pl.lit(None, pl.String)
    st = st.with_row_index("_r").with_columns(text.alias("_text"))
    # What the printed state says, looked up once per distinct text (a year of states has a few dozen).
    said = (st.select("_text").unique().drop_nulls()
            .with_columns(pl.col("_text").map_elements(runs_jobs, return_dtype=pl.Boolean).alias("_busy")))
    st = st.join(said, on="_text", how="left", maintain_order="left")
    at_once = ~pl.col("_busy").fill_null(False)
    if "not_responding" in st.columns:
        at_once = at_once | pl.col("not_responding").fill_null(False)
    if "state" in st.columns:
        at_once = at_once | (pl.col("state") == "DOWN").fill_null(False)
    waiting = st.filter(~at_once & pl.col("start_ts").is_not_null()).select(
        "_r", "node", start.alias("_t"))
    if waiting.height:
        # The latest end of the jobs running on the node at the drain's start (started by t, ending after t or
        # still running): a range join, in DuckDB because a year's 2 M (job, node) pairs sort slowly in Polars
        # (0.8 s against 0.1 s on a 2,000-node year); no job running: no row, the state counts from its start.
        job_nodes = jobs.select(pl.col("nodes").cast(pl.List(pl.String)),
                                pl.col("start_ts").cast(_UTC_DT), pl.col("end_ts").cast(_UTC_DT))
        busy = query_frames("""
            WITH running AS (
                SELECT unnest(nodes) AS node, start_ts, coalesce(end_ts, $never) AS end_ts
                FROM _jobs WHERE start_ts <= (SELECT max(_t) FROM _waiting))
            SELECT w._r, max(j.end_ts) AS _busy_until
            FROM _waiting w JOIN running j ON j.node = w.node AND j.start_ts <= w._t AND j.end_ts > w._t
            GROUP BY w._r""", {"_jobs": job_nodes, "_waiting": waiting}, {"never": _NEVER})
        busy = busy.with_columns(pl.col("_r").cast(pl.UInt32), pl.col("_busy_until").cast(_UTC_DT))
    else:
        busy = pl.DataFrame(schema={"_r": pl.UInt32, "_busy_until": _UTC_DT})
    end = pl.col("end_ts").cast(_UTC_DT).fill_null(_NEVER)
    return (st.join(busy, on="_r", how="left", maintain_order="left")
            .with_columns(pl.when(pl.col("_busy_until").is_not_null())
                          .then(pl.min_horizontal("_busy_until", end)).otherwise(start).alias(DOWN_FROM))
            .drop("_r", "_text", "_busy", "_busy_until"))


def out_of_service_states(states: pl.DataFrame) -> pl.DataFrame:
    """``states`` (with :data:`DOWN_FROM`, :func:`with_down_from`) re-timed to when they took their node out of
    service (``start_ts`` = ``down_from``), leaving out those that never did (the jobs outlasted the drain):
    for readers that merge states into outages (repair times). Without the column: ``states`` unchanged."""
    if DOWN_FROM not in states.columns:
        return states
    return (states.filter(pl.col("end_ts").is_null() | (pl.col(DOWN_FROM) < pl.col("end_ts")))
            .filter(pl.col(DOWN_FROM) < _NEVER)
            .with_columns(pl.col(DOWN_FROM).cast(states.schema["start_ts"]).alias("start_ts")))


def repair_states(states: pl.DataFrame) -> pl.DataFrame:
    """The node states repair times link incidents to (``marts.incident_repairs``): :func:`out_of_service_states`,
    less each planned-maintenance state (``availability_class`` ``maintenance``) that a hardware drain of its node
    replaces — one starting while it is open or as it ends (the operator rewrote the reason after finding a
    fault, or NHC drained the node for it). The fault's outage begins where the hardware drain does, as its
    planned period ends there (:func:`~gpusre.models.failures.hw_incidents.planned_maintenance`); merged with the
    maintenance drain before it, the outage would start hours before the fault and link to no incident.
    """
    st = out_of_service_states(states)
    if not st.height or "availability_class" not in st.columns:
        return st
    st = st.with_row_index("_r")
    hardware = st.filter(pl.col("availability_class") == "hardware").select("node", pl.col("start_ts").alias("_hw"))
    replaced = (st.filter(pl.col("availability_class") == "maintenance")
                .join(hardware, on="node")
                .filter((pl.col("_hw") > pl.col("start_ts"))
                        & (pl.col("end_ts").is_null() | (pl.col("_hw") <= pl.col("end_ts"))))
                .select("_r").unique())
    return st.join(replaced, on="_r", how="anti", maintain_order="left").drop("_r")


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError(f"naive datetime {value!r}: pass timezone-aware (UTC) times")
    return value.astimezone(timezone.utc)


def _attributed(events: list[tuple[datetime, datetime, int]]) -> list[tuple[datetime, datetime, int]]:
    """Union of one node's intervals, each piece tagged with the earliest-started open event.

    ``events``: (start, end, index) with start < end. Returns contiguous pieces (start, end, index),
    adjacent pieces of the same event merged.
    """
    events = sorted(events)
    bounds = sorted({t for s, e, _ in events for t in (s, e)})
    out: list[tuple[datetime, datetime, int]] = []
    heap: list[tuple[datetime, int, datetime]] = []  # (start, index, end): earliest start on top
    k = 0
    for t0, t1 in zip(bounds, bounds[1:], strict=False):
        while k < len(events) and events[k][0] <= t0:
            s, e, i = events[k]
            heapq.heappush(heap, (s, i, e))
            k += 1
        while heap and heap[0][2] <= t0:  # ended: drop lazily, only when it reaches the top
            heapq.heappop(heap)
        if not heap:
            continue
        index = heap[0][1]
        if out and out[-1][2] == index and out[-1][1] == t0:
            out[-1] = (out[-1][0], t1, index)
        else:
            out.append((t0, t1, index))
    return out


def _windows_by_node(maintenance: Iterable[MaintenanceSpan], nodes: Iterable[str]) -> dict[str, list[tuple[datetime, datetime]]]:
    """Merged maintenance windows per node (only nodes that have some)."""
    out: dict[str, list[tuple[datetime, datetime]]] = {}
    spans = [(_utc(w.start), _utc(w.end), w.nodes) for w in maintenance]
    for node in nodes:
        mine = sorted((s, e) for s, e, ns in spans if ns is None or node in ns)
        merged: list[tuple[datetime, datetime]] = []
        for s, e in mine:
            if merged and s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        if merged:
            out[node] = merged
    return out


def _cut(a: datetime, b: datetime, windows: list[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime, bool]]:
    """[a, b) cut at window edges: (start, end, inside a window)."""
    pieces: list[tuple[datetime, datetime, bool]] = []
    t = a
    for ws, we in windows:
        if we <= t or ws >= b:
            continue
        if ws > t:
            pieces.append((t, ws, False))
        pieces.append((max(t, ws), min(b, we), True))
        t = min(b, we)
        if t >= b:
            break
    if t < b:
        pieces.append((t, b, False))
    return pieces


def down_segments(
    states: pl.DataFrame,
    as_of: datetime,
    maintenance: Sequence[MaintenanceSpan] = (),
    *,
    since: datetime | None = None,
) -> pl.DataFrame:
    """Down time per node as non-overlapping segments attributed to events (:data:`SEGMENT_SCHEMA`).

    Args:
        states: ``node``, ``start_ts``, ``end_ts`` (null = ongoing), ``availability_class``, and
            optionally ``reason_class`` and :data:`DOWN_FROM` (:func:`with_down_from`: a drain on a node still
            running jobs is down from their end; ``event_start_ts`` stays the state's ``start_ts``).
        as_of: ongoing events end here; later time is dropped.
        maintenance: planned windows; down time inside them becomes ``maintenance``.
        since: time before this is dropped (attribution still sees the whole history).
    """
    as_of = _utc(as_of)
    lower = _utc(since) if since is not None else None
    if "reason_class" not in states.columns:
        states = states.with_columns(pl.lit(None, pl.String).alias("reason_class"))
    down_from = pl.col(DOWN_FROM) if DOWN_FROM in states.columns else pl.col("start_ts")
    rows = states.select("node", "start_ts", "end_ts", "availability_class", "reason_class",
                         down_from.alias("_from")).rows()
    by_node: dict[str, list[tuple[datetime, datetime, int]]] = {}
    for i, (node, _, end, _, _, start) in enumerate(rows):
        end = as_of if end is None or end > as_of else end
        if start is None or start >= end:
            continue
        by_node.setdefault(node, []).append((start, end, i))
    windows = _windows_by_node(maintenance, by_node)
    out: list[tuple[object, ...]] = []
    for node in sorted(by_node):
        for a, b, i in _attributed(by_node[node]):
            _, _, _, avail, reason_class, _ = rows[i]
            if lower is not None:
                if b <= lower:
                    continue
                a = max(a, lower)
            for s, e, inside in _cut(a, b, windows.get(node, [])):
                out.append((node, s, e, (e - s).total_seconds() / 3600, rows[i][1],
                            "maintenance" if inside else avail, reason_class, inside))
    return pl.DataFrame(out, schema=SEGMENT_SCHEMA, orient="row")


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=timezone.utc)


def node_availability_daily(
    states: pl.DataFrame,
    nodes: Sequence[str],
    start_day: date,
    end_day: date,
    *,
    as_of: datetime,
    maintenance: Sequence[MaintenanceSpan] = (),
    observed_from: datetime | None = None,
) -> pl.DataFrame:
    """In-service and down hours per node and UTC day (:data:`DAILY_SCHEMA`), days
    ``start_day``..``end_day`` cut at ``as_of`` (days after it are left out).

    Args:
        states: see :func:`down_segments`.
        nodes: the cluster's nodes (cluster.yaml, else nodes seen); nodes that only appear in
            ``states`` are added, so no down time is lost.
        observed_from: optional start of observation: its day is the first (default: ``start_day``).

    Observed hours follow the one capacity rule (:func:`~gpusre.models.accounting_span.capacity_hours_expr`):
    the first day is observed from its midnight (``observed_from`` only picks the day); the last day whole
    when ``as_of`` misses at most ``MAX_GAP_MINUTES`` of it (an ongoing event is down to the day's end), else
    up to ``as_of`` (the minutes a dump cut at 00:05 reaches: a short row, flagged partial by the asset).

    ``in_service_hours + down_hours = observed_hours``, and the four ``down_*`` buckets add up to
    ``down_hours`` (``down_other_hours`` = software + unknown).
    """
    as_of = _utc(as_of)
    lo = max(_day_start(start_day), _utc(observed_from)) if observed_from else _day_start(start_day)
    hi = min(as_of, _day_start(end_day) + timedelta(days=1))
    # The one capacity rule (models/accounting_span.py): whole days, the last one whole when the span misses
    # at most MAX_GAP_MINUTES of it (the last end at 23:30), as utilization and goodput count them —
    # node-hours of 23.5 h against GPU-hours of 24 h hid down time and split the SLI's totals.
    gap = timedelta(minutes=MAX_GAP_MINUTES)
    lo = _day_start(lo.date())  # the first day counts whole, as the capacity's does
    if timedelta(0) < (day_end := _day_start(hi.date()) + timedelta(days=1)) - hi <= gap and hi > lo:
        hi = min(day_end, _day_start(end_day) + timedelta(days=1))
    all_nodes = sorted(set(nodes) | set(states.get_column("node").drop_nulls().to_list()))
    if hi <= lo or not all_nodes:
        return pl.DataFrame(schema=DAILY_SCHEMA)
    days = pl.date_range(start_day, (hi - timedelta(microseconds=1)).date(), "1d", eager=True).alias("day")
    grid = (
        pl.DataFrame({"node": all_nodes}, schema={"node": pl.String})
        .join(days.to_frame(), how="cross")
        .with_columns(pl.col("day").cast(pl.Datetime("us")).dt.replace_time_zone("UTC").alias("_d0"))
        .with_columns(
            ((pl.min_horizontal(pl.col("_d0") + pl.duration(days=1), pl.lit(hi, _UTC_DT))
              - pl.max_horizontal(pl.col("_d0"), pl.lit(lo, _UTC_DT))).dt.total_microseconds() / 3.6e9)
            .clip(lower_bound=0.0).alias("observed_hours"))
        .filter(pl.col("observed_hours") > 0)
        .drop("_d0")
    )
    segs = down_segments(states, hi, maintenance, since=lo)
    per_day = (
        segs.with_columns(
            pl.date_ranges(pl.col("start_ts").dt.date(),
                           (pl.col("end_ts") - pl.duration(microseconds=1)).dt.date()).alias("day"))
        .explode("day")
        .with_columns(pl.col("day").cast(pl.Datetime("us")).dt.replace_time_zone("UTC").alias("_d0"))
        .with_columns(
            ((pl.min_horizontal("end_ts", pl.col("_d0") + pl.duration(days=1))
              - pl.max_horizontal("start_ts", "_d0")).dt.total_microseconds() / 3.6e9).alias("h"),
            pl.col("availability_class").replace_strict(_BUCKET_COLUMNS, default="down_other_hours").alias("bucket"))
        .group_by("node", "day", "bucket")
        .agg(pl.col("h").sum())
    )
    wide = per_day.pivot(on="bucket", index=["node", "day"], values="h") if per_day.height else pl.DataFrame(
        schema={"node": pl.String, "day": pl.Date})
    bucket_cols = [*_BUCKET_COLUMNS.values(), "down_other_hours"]
    wide = wide.with_columns(pl.lit(0.0).alias(c) for c in bucket_cols if c not in wide.columns)
    out = (
        grid.join(wide, on=["node", "day"], how="left")
        .with_columns(pl.col(c).cast(pl.Float64).fill_null(0.0) for c in bucket_cols)
        .with_columns(pl.sum_horizontal(bucket_cols).alias("down_hours"))
        .with_columns(
            (pl.col("observed_hours") - pl.col("down_hours")).clip(lower_bound=0.0).alias("in_service_hours"),
            pl.when(pl.col("down_hours") > 0).then(pl.lit("node_states")).otherwise(pl.lit("assumed_in_service"))
            .alias("source"))
    )
    return out.select(list(DAILY_SCHEMA)).cast(DAILY_SCHEMA).sort("day", "node")  # type: ignore[arg-type]


AVAILABILITY_BY_COMPONENT_SCHEMA: dict[str, pl.DataType] = {
    "period_type": pl.String(), "period": pl.String(), "component_class": pl.String(),
    "down_node_hours": pl.Float64(), "scheduled_node_hours": pl.Float64(), "availability": pl.Float64(),
}


def availability_by_component(daily: pl.DataFrame, segments: pl.DataFrame, states: pl.DataFrame) -> pl.DataFrame:
    """Availability per component class and period (``all`` and UTC months): ``1 − down / scheduled``.

    ``scheduled_node_hours`` = observed node-hours minus planned maintenance (``daily``); down hours are
    the unplanned :func:`down_segments` of each class — the class of the event the time is attributed
    to (its ``component_class`` when ``states`` has one, set by :func:`outage_causes` from an incident;
    else ``reason_component`` → ``catalog/component_classes.csv``; no component → ``unknown``). The row
    ``all`` is the cluster (1 − all unplanned down / scheduled), usable as an SLI.
    """
    if not daily.height:
        return pl.DataFrame(schema=AVAILABILITY_BY_COMPONENT_SCHEMA)
    sched = (daily.sort("day", "node")
             .with_columns(pl.col("day").dt.strftime("%Y-%m").alias("month"),
                           (pl.col("observed_hours") - pl.col("down_maintenance_hours")).alias("_s")))
    totals = pl.concat([
        sched.group_by(pl.lit("all").alias("period")).agg(ordered_sum("_s")).with_columns(pl.lit("all").alias("period_type")),
        sched.group_by(pl.col("month").alias("period")).agg(ordered_sum("_s")).with_columns(pl.lit("month").alias("period_type")),
    ], how="diagonal")
    # A state's own component_class (an incident's, from :func:`outage_causes`) wins over the catalog's.
    own = pl.col("component_class") if "component_class" in states.columns else pl.lit(None, pl.String)
    comp = states.select("node", pl.col("start_ts").alias("event_start_ts"), "reason_component",
                         own.alias("_own_class")).unique(["node", "event_start_ts"], keep="first", maintain_order=True)
    classes = load_component_classes().select(pl.col("component").alias("reason_component"), "component_class")
    seg = (segments.filter(pl.col("availability_class") != "maintenance")
           .join(comp, on=["node", "event_start_ts"], how="left")
           .join(classes, on="reason_component", how="left")
           .with_columns(pl.coalesce("_own_class", "component_class").fill_null("unknown").alias("component_class"))
           .sort("node", "start_ts"))
    # A segment across a month's end is down time of both months (as the daily rows count it).
    month_start = pl.col("_m")
    by_month = (seg.with_columns(pl.datetime_ranges(pl.col("start_ts").dt.truncate("1mo"), pl.col("end_ts"), "1mo",
                                                    time_unit="us", time_zone="UTC").alias("_m"))
                .explode("_m")
                .with_columns(((pl.min_horizontal("end_ts", month_start.dt.offset_by("1mo"))
                                - pl.max_horizontal("start_ts", month_start)).dt.total_microseconds() / 3.6e9)
                              .alias("hours"), pl.col("_m").dt.strftime("%Y-%m").alias("month"))
                .filter(pl.col("hours") > 0))
    down = pl.concat([
        seg.group_by("component_class").agg(ordered_sum("hours")).with_columns(
            pl.lit("all").alias("period_type"), pl.lit("all").alias("period")),
        by_month.group_by("month", "component_class").agg(ordered_sum("hours")).rename({"month": "period"})
        .with_columns(pl.lit("month").alias("period_type")),
    ], how="diagonal")
    # The class 'all' row of every period, with 0 h down in a month without an outage.
    cluster = (totals.join(pl.concat([
        seg.select(pl.lit("all").alias("period_type"), pl.lit("all").alias("period"), "hours"),
        by_month.select(pl.lit("month").alias("period_type"), pl.col("month").alias("period"), "hours"),
    ]).group_by("period_type", "period").agg(ordered_sum("hours")), on=["period_type", "period"], how="left")
        .with_columns(pl.col("hours").fill_null(0.0), pl.lit("all").alias("component_class")).drop("_s"))
    out = (pl.concat([down, cluster], how="diagonal").join(totals, on=["period_type", "period"], how="inner")
           .with_columns(pl.col("hours").alias("down_node_hours"), pl.col("_s").alias("scheduled_node_hours"))
           .with_columns(pl.when(pl.col("scheduled_node_hours") > 0)
                         .then(1 - pl.col("down_node_hours") / pl.col("scheduled_node_hours")).alias("availability")))
    return (out.select([pl.col(c).cast(t) for c, t in AVAILABILITY_BY_COMPONENT_SCHEMA.items()])
            .sort(pl.col("period_type") != "all", "period", pl.col("component_class") != "all", "component_class"))
