"""Nightly report section "Why jobs failed" (``#attribution``).

Reads marts.failure_attribution_summary, marts.job_failure_attribution (with its
minutes_since_link_recovery, for the collective-timeout hint) and marts.instance_failure_attribution (the
requeued runs the infrastructure killed); formats, computes nothing."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import duckdb

from gpusre.models.failures.attribution import NO_LOGS_RULE
from gpusre.models.ingest.hostlist import compress_hostlist
from gpusre.models.vocabulary import ATTRIBUTIONS, FAILED_STATES, INFRASTRUCTURE, PLANNED
from gpusre.models.warehouse import select_columns, table_columns
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_int,
    fmt_num,
    fmt_pct,
    gpuh,
    period_text,
    plural,
    sentence_case,
    shorten,
    truncate,
)
from gpusre.reports.kit.labels import cause_label, component_label, state_cell
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status, utc_day_sql
from gpusre.reports.nightly.meta import NightlyMeta, killed_runs, summary_through

_ATTRIBUTIONS = ATTRIBUTIONS
#: How the lead and the table name an attribution value (the others: as they are).
_LABELS = {PLANNED: "planned maintenance"}


def _label(attribution: str) -> str:
    """'planned maintenance' for ``planned``; other values as they are."""
    return _LABELS.get(attribution, attribution)

_TOP_N_INFRA_JOBS = 20
#: The total rows of marts.failure_attribution_summary.
ALL = "(all)"


def _requeued(row: dict[str, Any]) -> str:
    """' + 1 requeued run' for the attributed runs of requeued jobs (runs that are no job's final run)."""
    requeued = row["runs"] - row["n"]
    return f" + {plural(requeued, 'requeued run')}" if requeued else ""


def _attribution_phrase(counts: dict[str, dict[str, Any]], total: int) -> str:
    """'6 were infrastructure + 1 requeued run (2,310 GPU-h lost), 2 planned maintenance (8 GPU-h lost), 33 user,
    2 unknown': failed jobs by attribution, the requeued runs beside them, and the GPU-hours lost over all of
    those runs (planned maintenance named only when it ended a run)."""
    none = {"n": 0, "runs": 0, "lost": 0.0}
    infra = counts.get(INFRASTRUCTURE, none)
    parts = [f"{fmt_int(infra['n'])} {'was' if infra['n'] == 1 else 'were'} infrastructure" + _requeued(infra)
             + (f" ({gpuh(infra['lost'] or 0.0)} GPU-h lost)" if infra["runs"] else "")]
    for a in _ATTRIBUTIONS[1:]:
        c = counts.get(a, none)
        if a == PLANNED:  # named only when maintenance ended any: no failure, but lost work
            if c["runs"]:
                parts.append(f"{fmt_int(c['n'])} {_label(a)}" + _requeued(c) + f" ({gpuh(c['lost'] or 0.0)} GPU-h lost)")
            continue
        parts.append(f"{fmt_int(c['n'])} {a}" + _requeued(c))
    other = total - sum(counts.get(a, {"n": 0})["n"] for a in _ATTRIBUTIONS)
    if other:
        parts.append(f"{fmt_int(other)} other")
    return ", ".join(parts[:-1]) + f" and {parts[-1]}"


def attribution_counts(con: duckdb.DuckDBPyConnection, day: date | None = None, *,
                       through: date | None = None) -> tuple[int, dict[str, dict[str, Any]]]:
    """Failed jobs, attributed runs and lost GPU-hours by attribution (marts.failure_attribution_summary),
    over the whole record (up to the end day ``through`` when given: the report day) or one UTC end ``day``:
    (total failed jobs, {attribution: {"n": failed jobs, "runs": attributed runs — the jobs' final runs and
    the requeued jobs' earlier ones, "lost": GPU-hours lost over those runs}})."""
    if day:
        rows = query_rows(con, "SELECT attribution, state, jobs AS n, runs, lost_gpu_hours AS lost "
                               "FROM marts.failure_attribution_summary "
                               "WHERE state = '(all)' AND scope = 'day' AND day = ?", [day])
    else:
        rows = [r for r in summary_through(con, through) if r["state"] == ALL]
    total = next((r["n"] for r in rows if r["attribution"] == "(all)"), 0)
    return total, {r["attribution"]: r for r in rows if r["attribution"] != "(all)"}


def _unlogged_text(n: int, night_n: int, d: str) -> str:
    """' 3 unknown jobs (1 on 2026-11-20) could not be attributed for lack of node logs: …' (empty for 0)."""
    if not n:
        return ""
    return (f" {plural(n, 'unknown job')} ({fmt_int(night_n)} on {d}) could not be attributed for lack of node "
            f"logs: a node of {'it' if n == 1 else 'each'} logged no line on the day it ended, so a hardware "
            "fault there would have left no trace — unknown, not the user's.")


def _collective_timeout_hint(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> str:
    """' 2 multi-node jobs blamed on their users ended 34–52 min after a link on their nodes came back: …' —
    a multi-node job hangs until its collective times out, so when the site's timeout is longer than
    attribution.collective_timeout_min those are the link's failures; the reader is told which setting."""
    if "minutes_since_link_recovery" not in table_columns(con, "marts.job_failure_attribution"):
        return ""
    row = query_rows(con, f"""SELECT count(*) AS n, min(minutes_since_link_recovery) AS lo,
                                     max(minutes_since_link_recovery) AS hi
                              FROM marts.job_failure_attribution
                              WHERE attribution = 'user' AND minutes_since_link_recovery IS NOT NULL
                                AND {utc_day_sql('end_ts')} <= ?""", [meta.through])[0]
    if not row["n"]:
        return ""
    span = (f"{row['lo']:.0f} min" if round(row["lo"]) == round(row["hi"])
            else f"{row['lo']:.0f}–{row['hi']:.0f} min")
    return (f" {plural(row['n'], 'multi-node job')} blamed on {'its user' if row['n'] == 1 else 'their users'} "
            f"ended {span} after a link on {'its' if row['n'] == 1 else 'their'} nodes came back "
            "(marts.job_failure_attribution.minutes_since_link_recovery): if the site's NCCL / PyTorch collective "
            "timeout is longer than cluster.yaml attribution.collective_timeout_min (default 30), raise it and "
            "those become the link's failures.")


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("attribution", "Why jobs failed")
    reason = (table_status(con, "marts.job_failure_attribution")
              or table_status(con, "marts.failure_attribution_summary"))
    if reason:
        sec.no_data = reason
        return sec
    total, every = attribution_counts(con, through=meta.through)
    night_total, night = attribution_counts(con, meta.report_date)
    period = period_text(fmt_date(meta.period_first) if meta.period_first else None,
                          fmt_date(meta.period_last) if meta.period_last else None)
    # Attribution weighs every failed job (the vocabulary's INTERRUPTED_STATES, and jobs an
    # administrator cancelled): the states are said, since they are more than the headline's failures. Not
    # "interrupted jobs": a user's own failure (OOM, TIMEOUT) is no interruption (README, ETTR / goodput).
    # A requeued job's earlier run that failed (e.g. NODE_FAIL) is no failed job, but it failed and lost
    # work: shown beside the jobs (" + 1 requeued run"), its GPU-hours in the lost GPU-hours, as the
    # headline's infrastructure cards count it.
    night_runs = any(r["runs"] for r in night.values())
    # The unknown jobs the node logs did not cover (rule NO_LOGS_RULE): "0 infrastructure" must not read
    # as a fact where no log could have shown the fault.
    unlogged = scalar(con, "SELECT count(*) FROM marts.job_failure_attribution WHERE rule = ? AND "
                           f"{utc_day_sql('end_ts')} <= ?", [NO_LOGS_RULE, meta.through]) or 0
    night_unlogged = scalar(con, "SELECT count(*) FROM marts.job_failure_attribution WHERE rule = ? AND "
                                 f"{utc_day_sql('end_ts')} = ?", [NO_LOGS_RULE, meta.report_date]) or 0
    sec.lead = (f"Of {plural(total, 'failed job')} in {period} (failed, timed out, out of memory, node failure, "
                f"requeued, or cancelled by an administrator), {_attribution_phrase(every, total)}; ") + (
        f"on {d}, of {fmt_int(night_total)}, {_attribution_phrase(night, night_total)}." if night_total
        else f"none failed on {d}, but runs of requeued jobs did: {_attribution_phrase(night, night_total)}."
        if night_runs else f"none failed on {d}.") + _unlogged_text(unlogged, night_unlogged, d)
    sec.lead += _collective_timeout_hint(con, meta)

    cells = summary_through(con, meta.through)
    n = {(r["attribution"], r["state"]): r["n"] for r in cells}
    runs = {(r["attribution"], r["state"]): r["runs"] for r in cells}
    lost = {(r["attribution"], r["state"]): r["lost"] for r in cells}
    # The state columns count failed jobs by final state; a state only requeued runs ended in (REQUEUED)
    # has no job to show: those runs are in the "Requeued runs" column.
    seen = {r["state"] for r in cells if r["n"]} - {ALL}
    with_requeued = runs.get((ALL, ALL), 0) > n.get((ALL, ALL), 0)
    states = [s for s in FAILED_STATES if s in seen] + sorted(seen - set(FAILED_STATES), key=str)
    attrs = [a for a in _ATTRIBUTIONS if a in every] + sorted(set(every) - set(_ATTRIBUTIONS), key=str)
    rows = []
    for a in attrs + [ALL]:
        tot = n.get((a, ALL), 0)
        rows.append([Cell("Total" if a == ALL else sentence_case(_label(str(a))))]
                    + [Cell(fmt_int(n[(a, st)]) if n.get((a, st)) else MISSING) for st in states]
                    + [Cell(fmt_int(tot)), Cell(fmt_pct(tot / total if total else None))]
                    + ([Cell(fmt_int(runs.get((a, ALL), 0) - tot))] if with_requeued else [])
                    + [Cell(fmt_num(lost.get((a, ALL), 0.0)))])
    sec.add(Table(
        [Column("Attribution")] + [Column(s, True) for s in states]
        + [Column("Jobs", True), Column("Share", True)]
        + ([Column("Requeued runs", True)] if with_requeued else []) + [Column("Lost GPU-hours", True)],
        rows,
        caption=f"Failed jobs of {period} by attribution and final state. "
                + ("Requeued runs: earlier runs of requeued jobs that failed (e.g. NODE_FAIL), attributed the same "
                   "way; no failed job, as Slurm ran the job again. " if with_requeued else "")
                + "Lost GPU-hours count infrastructure failures and planned maintenance only (planned: jobs "
                  "maintenance on their nodes ended, no failure)"
                + (", over the jobs and the requeued runs" if with_requeued else "")
                + ": the work since the last checkpoint + the restart overhead, what goodput and ETTR charge "
                  "the interruption (planned maintenance as goodput's maintenance loss, not a failure's).",
    ))

    # evidence_node_state: NULL for a warehouse written before attribution read node states.
    cols = select_columns(con, "marts.job_failure_attribution", ["evidence_node_state", "evidence_nodes"])
    # The runs the infrastructure killed that day: the jobs' final runs and the earlier runs Slurm requeued
    # (marts.instance_failure_attribution) — the count the headline's card and "Last night" give, so a night
    # whose only kill was a requeued run does not read "no job failed because of the infrastructure".
    earlier = ""
    if {"instance_no", "attribution", "end_ts"} <= table_columns(con, "marts.instance_failure_attribution"):
        icols = select_columns(con, "marts.instance_failure_attribution", ["evidence_node_state", "evidence_nodes"])
        earlier = f"""UNION ALL
                      SELECT job_id, instance_no, state, end_ts, n_gpus, component, cause_class, incident_id,
                             len(evidence_event_ids) AS n_evidence, {icols}, rule, lost_gpu_hours
                      FROM marts.instance_failure_attribution
                      WHERE attribution = '{INFRASTRUCTURE}' AND {utc_day_sql('end_ts')} = ?"""
    jobs = query_rows(con, f"""SELECT job_id, NULL::INTEGER AS instance_no, state, end_ts, n_gpus, component,
                                 cause_class, incident_id, len(evidence_event_ids) AS n_evidence, {cols}, rule,
                                 lost_gpu_hours
                          FROM marts.job_failure_attribution
                          WHERE attribution = '{INFRASTRUCTURE}' AND {utc_day_sql('end_ts')} = ?
                          {earlier}
                          ORDER BY lost_gpu_hours DESC NULLS LAST, end_ts, job_id, instance_no NULLS LAST""",
                      [meta.report_date] * (2 if earlier else 1))
    if jobs:
        shown = jobs[:_TOP_N_INFRA_JOBS]
        requeued = sum(1 for r in jobs if r["instance_no"] is not None)
        what = f"Infrastructure-failed jobs that ended on {d}"
        if requeued:
            head, detail = killed_runs(len(jobs) - requeued, len(jobs))
            what = (f"Runs the infrastructure killed that ended on {d}: {head}" + (f" ({detail})" if detail else "")
                    + "; a requeued run, marked with its run number, is an earlier run of a job Slurm ran again")
        sec.add(Table(
            [Column("Job ID"), Column("Ended", nowrap=True), Column("State", nowrap=True), Column("GPUs", True),
             Column("Component"), Column("Cause class"), Column("Incident"), Column("Evidence"),
             Column("Lost GPU-hours", True)],
            [[Cell(str(r["job_id"]) + (f" (run {r['instance_no']}, requeued)" if r["instance_no"] is not None else ""),
                   mono=True), Cell(fmt_date(r["end_ts"])), state_cell(r["state"]),
              Cell(fmt_int(r["n_gpus"])), Cell(component_label(r["component"])), Cell(cause_label(r["cause_class"])),
              Cell(truncate(r["incident_id"], 24) if r["incident_id"] else f"none ({r['rule']})",
                   mono=bool(r["incident_id"]), title=r["incident_id"]),
              _evidence_cell(r["n_evidence"], r["evidence_node_state"], r["evidence_nodes"]),
              Cell(fmt_num(r["lost_gpu_hours"]))]
             for r in shown],
            caption=what + (f" (top {len(shown)} of {len(jobs)} by lost GPU-hours)." if len(jobs) > len(shown) else "."),
        ))
    elif night_unlogged:
        its = "its" if night_unlogged == 1 else "their"
        sec.notes.append(f"No job is known to have failed because of the infrastructure on {d}, but "
                         f"{plural(night_unlogged, 'failed job')} could not be attributed: no node logs from "
                         f"{its} nodes at {its} end.")
    else:
        sec.notes.append(f"No job failed because of the infrastructure on {d}.")
    return sec


#: Characters of the evidence cell before the drain reason's prose is shortened.
_EVIDENCE_LEN = 60
#: The Slurm node state attribution quotes: 'DRAIN "reason" since 2026-11-24 02:16:00Z'.
_NODE_STATE = re.compile(r'^(?P<state>\S+) "(?P<reason>.*)" since (?P<since>.+)$')


def _evidence_cell(n_events: int | None, node_state: str | None, nodes: list[str] | None = None) -> Cell:
    """'on gpu0907: 3 log events' and/or the Slurm node state (drain reason) that attributed the job:
    the nodes its evidence is on (``evidence_nodes``) first — which of a large job's nodes failed.

    Only the reason's prose is shortened: the state, the node names and the drain time stay whole
    (:func:`~gpusre.reports.kit.formatting.shorten`)."""
    where = f"on {truncate(compress_hostlist(nodes), 32)}: " if nodes else ""
    events = f"{fmt_int(n_events)} log event{'s' if n_events != 1 else ''}" if n_events else None
    text = "; ".join(p for p in (events, node_state) if p)
    if not text:
        return Cell(MISSING)
    budget = _EVIDENCE_LEN - (len(events) + 2 if events else 0)
    state = _short_state(node_state, budget) if node_state else None
    return Cell(where + "; ".join(p for p in (events, state) if p), title=where + text)


def _short_state(node_state: str, max_len: int) -> str:
    """'DRAIN "Xid 79 GPU fell off the bus" since 2026-11-24 02:16:00Z' within ``max_len``: only the
    quoted reason loses words (its last prose words), the state and the time stay whole."""
    m = _NODE_STATE.match(node_state)
    if not m:
        return shorten(node_state, max_len)
    frame = len(node_state) - len(m["reason"])
    return f'{m["state"]} "{shorten(m["reason"], max(max_len - frame, 1), keep_head=True)}" since {m["since"]}'


SECTION = SectionSpec("attribution", "Why jobs failed", build)
