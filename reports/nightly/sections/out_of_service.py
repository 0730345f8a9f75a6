"""Nightly report section "Nodes out of service now" (``#out_of_service``).

Reads core.node_states, marts.node_availability_daily, marts.data_freshness (where a cut node-state history
ends), marts.incident_repairs (the log evidence after that end); formats, computes nothing (a node's outage is merged by
the repair-time model, :func:`gpusre.models.reliability.repair_times.node_outages`).

The count and the table are the fleet's nodes (:func:`gpusre.models.reliability.mtbf.in_fleet` over the nodes
marts.node_availability_daily holds: cluster.yaml's node list, or every node seen without one), the population
availability, MTBF and repair times count. A node out of service that cluster.yaml does not list (a spare Slurm
knows) is still named, in a note of its own, so that the fleet's figure agrees with availability."""

from __future__ import annotations

from datetime import datetime, time, timedelta, timezone
from typing import Any

import duckdb
import polars as pl

from gpusre.models.reliability.mtbf import in_fleet
from gpusre.models.reliability.repair_times import node_outages
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_int,
    span_hours,
    truncate,
)
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status
from gpusre.reports.nightly.meta import NightlyMeta, node_state_history

_TOP_N_OUT = 25


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("out_of_service", "Nodes out of service now")
    reason = node_state_history(con)
    if reason:
        sec.no_data = reason
        return sec
    # "Now" is the end of the report day (UTC): open events, and those that ended only afterwards — unless
    # the node-state history ends before it (a missing dump): then the state is known only up to that end.
    day_end = datetime.combine(meta.report_date + timedelta(days=1), time(), tzinfo=timezone.utc)
    cut = _history_cut(con)
    cut = cut if cut is not None and cut < day_end else None
    cutoff = cut or day_end
    rows = query_rows(con, """SELECT node, state, start_ts, end_ts, reason, reason_class, availability_class
                         FROM core.node_states
                         WHERE start_ts < ? AND (end_ts IS NULL OR end_ts > ?)
                         ORDER BY node, start_ts, state""", [cutoff, cutoff])
    # Since when each of those nodes has been out: its outage as time to repair merges it (overlapping or
    # touching states: DOWN* "Not responding" 14:10-14:40 then DOWN "DIMM UE" from 14:40 is out since 14:10).
    history = query_rows(con, """SELECT node, start_ts, end_ts, state FROM core.node_states
                            WHERE start_ts < ? AND node IN (SELECT node FROM core.node_states
                                                            WHERE start_ts < ? AND (end_ts IS NULL OR end_ts > ?))
                            ORDER BY node, start_ts, state""", [cutoff, cutoff, cutoff]) if rows else []
    schema = {"node": pl.String, "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"),
              "state": pl.String}
    outages = node_outages(pl.DataFrame(history, schema=schema))
    outage_start = {o["node"]: o["outage_start_ts"] for o in outages.filter(
        pl.col("outage_end_ts").is_null() | (pl.col("outage_end_ts") > cutoff)).iter_rows(named=True)}
    n_nodes = None
    if table_status(con, "marts.node_availability_daily") is None:
        n_nodes = scalar(con, "SELECT count(DISTINCT node) FROM marts.node_availability_daily WHERE day = ?",
                          [meta.report_date]) or None
    # One row per node: the earliest still-open event is the original cause (as in the availability mart);
    # the states of its outage's events show how it evolved (DRAIN → DOWN).
    nodes: dict[str, dict[str, Any]] = {}
    for r in rows:
        n = nodes.get(r["node"])
        if n is None:
            nodes[r["node"]] = {**r, "states": [r["state"] or MISSING], "back": r["end_ts"]}
            continue
        if r["state"] and r["state"] not in n["states"]:
            n["states"].append(r["state"])
        n["back"] = None if n["back"] is None or r["end_ts"] is None else max(n["back"], r["end_ts"])
    for n in nodes.values():
        since = min(n["start_ts"], outage_start.get(n["node"], n["start_ts"]))
        # The outage's states in order (DOWN → DRAIN), also those that ended before the night's end.
        states = [h["state"] or MISSING for h in history if h["node"] == n["node"] and since <= h["start_ts"] < cutoff]
        n["states"] = [x for i, x in enumerate(states) if x not in states[:i]] or n["states"]
        n["start_ts"] = since
        n["hours"] = (cutoff - since).total_seconds() / 3600
    out = sorted(nodes.values(), key=lambda n: (-n["hours"], n["node"]))
    out, outside = _split_fleet(out, _fleet_nodes(con))
    of = f" of {fmt_int(n_nodes)}" if n_nodes else ""
    when = (f"the end of {d} (UTC)" if cut is None else
            f"the node-state history's end, {fmt_date(cut)} (the dumps stop there; later state unknown)")
    if outside:
        sec.notes.append(_outside_note(outside))
    if not out:
        on = " on the fleet's nodes" if outside else ""
        sec.lead = (f"All{of} nodes were in service at {when}: no drain or down event was open{on}."
                    if of else f"No node was out of service at {when}: no drain or down event was open{on}.")
        return sec
    later = _later_evidence(con, cut) if cut is not None else {}
    by_class: dict[str, int] = {}
    for n in out:
        key = (n["availability_class"] or "unknown").replace("_", " ")
        by_class[key] = by_class.get(key, 0) + 1
    classes = ", ".join(f"{fmt_int(v)} {k}" for k, v in sorted(by_class.items(), key=lambda kv: (-kv[1], kv[0])))
    top = out[0]
    reason_text = (f" for \u201c{truncate(top['reason'], 80)}\u201d" if top["reason"] else ", with no reason given")
    if cut is None:
        sec.lead = (f"At the end of {d} (UTC) {fmt_int(len(out))}{of} node{'' if len(out) == 1 and not of else 's'} "
                    f"{'was' if len(out) == 1 else 'were'} out of service ({classes}); the longest, {top['node']}, "
                    f"has been {' → '.join(top['states'])} since {fmt_date(top['start_ts'])} "
                    f"({span_hours(top['hours'])}){reason_text}.")
    else:
        # The dumps end before the day does: the state at their end, and what the node logs show after it.
        ev = later.get(top["node"])
        sec.lead = (f"At {when} {fmt_int(len(out))}{of} node{'' if len(out) == 1 and not of else 's'} "
                    f"{'was' if len(out) == 1 else 'were'} out of service ({classes}); the longest, {top['node']}, "
                    f"was {' → '.join(top['states'])} then (since {fmt_date(top['start_ts'])}, "
                    f"{span_hours(top['hours'])} by that end){reason_text}"
                    + (f"; the node logs show {_EVIDENCE.get(ev[0], ev[0])} at {fmt_date(ev[1])}." if ev else
                       "; nothing after it says when it came back."))
    shown = out[:_TOP_N_OUT]
    sec.add(Table(
        [Column("Node"), Column("State", nowrap=True), Column("Since", nowrap=True), Column("Out for", True),
         Column("Reason"), Column("Reason class"), Column("Back in service", nowrap=True)],
        [[Cell(n["node"], mono=True), Cell(" → ".join(n["states"])), Cell(fmt_date(n["start_ts"])),
          Cell(span_hours(n["hours"])), Cell(truncate(n["reason"], 70) if n["reason"] else MISSING, title=n["reason"]),
          Cell(f"{n['reason_class'] or MISSING} ({(n['availability_class'] or 'unknown').replace('_', ' ')})"),
          Cell(fmt_date(n["back"]) if n["back"] else _back_text(n["node"], cut, later))] for n in shown],
        caption=(f"Longest {len(shown)} of {fmt_int(len(out))} nodes" if len(out) > len(shown) else "Nodes")
                + f" with a drain/down event open at {when}, longest first; since = the start of the node's "
                  "continuous outage (overlapping or touching drain/down events merged, as time to repair merges "
                  "them), out for = time from then up to "
                + ("the end of the day. " if cut is None else
                   "the node-state history's end (a later sacctmgr dump is missing; after it the state is "
                   "unknown, and Back in service gives the node logs' first sign of repair after it, as "
                   "marts.incident_repairs times it). ")
                + 
                  "One row per node: state, reason and class of its earliest open event (the original cause); "
                  "\u201cBack in service\u201d is known when a later dump closed the event.",
    ))
    return sec


def _fleet_nodes(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The fleet's nodes as availability counts them: the nodes of marts.node_availability_daily (cluster.yaml's
    node list, or every node the history shows when it has none); empty when the mart has no rows (no list known:
    every node is the fleet's, as :func:`~gpusre.models.reliability.mtbf.in_fleet` reads an empty list)."""
    if table_status(con, "marts.node_availability_daily") is not None:
        return []
    return [r["node"] for r in query_rows(con, "SELECT DISTINCT node FROM marts.node_availability_daily ORDER BY node")]


def _split_fleet(out: list[dict[str, Any]], fleet: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``out`` split into the fleet's nodes and the others (order kept), by :func:`in_fleet`."""
    if not out:
        return out, []
    flags = (pl.DataFrame({"nodes": [[n["node"]] for n in out]}, schema={"nodes": pl.List(pl.String)})
             .select(in_fleet(fleet)).to_series().to_list())
    return ([n for n, f in zip(out, flags, strict=True) if f], [n for n, f in zip(out, flags, strict=True) if not f])


def _outside_note(outside: list[dict[str, Any]]) -> str:
    """'Also out of service, not in cluster.yaml's node list (…): gpu049 (DRAIN since …, 14.0 h, “reason”).'"""
    shown = outside[:_TOP_N_OUT]
    items = "; ".join(
        f"{n['node']} ({' → '.join(n['states'])} since {fmt_date(n['start_ts'])}, {span_hours(n['hours'])}"
        + (f", \u201c{truncate(n['reason'], 70)}\u201d)" if n["reason"] else ")") for n in shown)
    more = f"; and {fmt_int(len(outside) - len(shown))} more" if len(outside) > len(shown) else ""
    return (f"Also out of service, not in cluster.yaml's node list (not counted above, nor in availability, MTBF or "
            f"repair times): {items}{more}.")


#: marts.incident_repairs.repair_source -> what the node logs show.
_EVIDENCE = {"reboot": "a reboot", "recovery_events": "a logged recovery", "health_check_pass": "a passing health check",
             "health_checks": "the health check's next run", "operator": "the end the operator wrote",
             "job_completed": "a job completed on it"}


def _history_cut(con: duckdb.DuckDBPyConnection) -> datetime | None:
    """Where the node-state history ends when its dumps end before the accounting does (a missing nightly
    dump: marts.data_freshness.history_end_ts with ends_before_accounting), else None."""
    if table_status(con, "marts.data_freshness") is not None or not scalar(
            con, "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'marts' "
                 "AND table_name = 'data_freshness' AND column_name = 'ends_before_accounting'"):
        return None
    cut = scalar(con, "SELECT history_end_ts FROM marts.data_freshness WHERE source_kind = 'slurm_events' "
                      "AND ends_before_accounting")
    return cut.astimezone(timezone.utc) if cut is not None else None


def _later_evidence(con: duckdb.DuckDBPyConnection, cut: datetime) -> dict[str, tuple[str, datetime]]:
    """node -> (repair_source, repaired_ts) of the incident repairs marts.incident_repairs timed from the node
    logs after the history's end ``cut`` (an outage open at the cut: repair_times' fallback)."""
    if table_status(con, "marts.incident_repairs") is not None:
        return {}
    rows = query_rows(con, """SELECT unnest(nodes) AS node, repair_source, repaired_ts FROM marts.incident_repairs
                              WHERE drain_start_ts IS NOT NULL AND back_in_service_ts IS NULL
                                AND repaired_ts >= ? AND repair_source <> 'node_states'
                              ORDER BY repaired_ts""", [cut])
    out: dict[str, tuple[str, datetime]] = {}
    for r in rows:
        out.setdefault(r["node"], (r["repair_source"], r["repaired_ts"]))
    return out


def _back_text(node: str, cut: datetime | None, later: dict[str, tuple[str, datetime]]) -> str:
    """'not yet'; after a cut history 'unknown after 2026-11-11 00:05 UTC; reboot 2026-11-11 02:20 UTC'."""
    if cut is None:
        return "not yet"
    ev = later.get(node)
    return f"unknown after {fmt_date(cut)}" + (f"; node logs: {_EVIDENCE.get(ev[0], ev[0])} {fmt_date(ev[1])}"
                                                if ev else "")


SECTION = SectionSpec("out_of_service", "Nodes out of service now", build)
