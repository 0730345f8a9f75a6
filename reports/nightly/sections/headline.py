"""Nightly section "Headline": the KPI cards.

Reads marts.job_totals, marts.day_coverage (which days are partial), marts.utilization_daily,
marts.utilization_summary, marts.job_states_daily, marts.ingestion_by_source and the failure marts;
formats, computes nothing but the baseline medians of a few rows."""

from __future__ import annotations

import logging
import statistics
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import duckdb

from gpusre.models.failures.attribution import NO_LOGS_RULE
from gpusre.models.failures.hw_incidents import NODE_STATE_LABEL
from gpusre.models.ingest.hostlist import compress_hostlist
from gpusre.models.vocabulary import FAILED_STATES, failure_incident_sql
from gpusre.models.warehouse import table_columns
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_int,
    fmt_num,
    fmt_pct,
    gpuh,
    period_text,
    plural,
    truncate,
)
from gpusre.reports.incident.terms import UNKNOWN_NO_ACCOUNTING, missing_sources
from gpusre.reports.kit.section import NO_DATA, Section, SectionSpec
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status, utc_day_sql
from gpusre.reports.nightly.meta import NightlyMeta, job_totals, sources_without_day
from gpusre.reports.nightly.sections.attribution import attribution_counts

#: Last night is compared with the median of this many days before it (those the data covers).
_BASELINE_DAYS = 7

log = logging.getLogger(__name__)


def _baseline(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> dict[str, Any]:
    """Medians of GPU jobs ended, failures and utilization over the (up to) :data:`_BASELINE_DAYS`
    days before the report day that the data covers completely (rows of marts.job_totals and
    marts.utilization_daily; a day marts.day_coverage calls partial — the data starting at 14:00 — is
    left out, as the utilization median leaves it out, and ``partial_days`` counts it); ``{}`` when no
    day is before the report day, ``{"days": 0, ...}`` when every one is partial. Without
    marts.day_coverage (a warehouse built before it) every day counts and ``complete`` is False. A
    median, not a mean: one big incident night should not move the yardstick."""
    last = meta.report_date - timedelta(days=1)
    first = meta.report_date - timedelta(days=_BASELINE_DAYS)
    covered = table_status(con, "marts.day_coverage") is None
    # A day outside marts.day_coverage has no dense data at all: partial, as models/day_coverage.py marks it.
    partial_sql = ("coalesce((SELECT c.partial FROM marts.day_coverage AS c WHERE c.day = t.day), true)"
                   if covered else "false")
    every = query_rows(con, f"SELECT t.gpu_jobs, t.failed_jobs, {partial_sql} AS partial FROM marts.job_totals AS t "
                            "WHERE t.scope = 'day' AND t.day BETWEEN ? AND ? ORDER BY t.day", [first, last])
    if not every:
        return {}
    rows = [r for r in every if not r["partial"]]
    if not rows:
        return {"days": 0, "partial_days": len(every), "complete": covered, "jobs": None, "failures": None,
                "util": None, "util_days": 0}
    utils = []
    if table_status(con, "marts.utilization_daily") is None:
        utils = [r["utilization"] for r in query_rows(con, "SELECT utilization FROM marts.utilization_daily "
                                                           "WHERE day BETWEEN ? AND ? AND utilization IS NOT NULL "
                                                           "AND NOT coalesce(partial, false)",
                                                      [first, last])]
    return {
        "days": len(rows),
        "partial_days": len(every) - len(rows),
        "complete": covered,
        "jobs": statistics.median(r["gpu_jobs"] for r in rows),
        "failures": statistics.median(r["failed_jobs"] for r in rows),
        "util": statistics.median(utils) if utils else None,
        "util_days": len(utils),
    }


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    """Headline KPI cards: GPU jobs and GPU-hours (marts.job_totals, the one count every section
    quotes), utilization, last night's failures by state, rejects, then the failure-mart cards; shown last
    night's first, the whole period's last. Failures are toned by attribution: the infrastructure's card is
    red when it counts any, the all-failures card (mostly the users' own) stays neutral."""
    sec = Section("headline", "Headline", template="cards")
    reason = table_status(con, "marts.job_totals")
    empty = {"gpu_jobs": 0, "gpu_hours": None, "failed_jobs": 0, "failed_gpu_hours": None,
             "first_day": None, "last_day": None}
    tot = night = empty
    if reason is None:
        # Up to the report day: a re-render for a past night counts what that night's report counted.
        tot = job_totals(con, through=meta.through) or empty
        night = (query_rows(con, "SELECT * FROM marts.job_totals WHERE scope = 'day' AND day = ?",
                            [meta.report_date]) or [empty])[0]
    util = night_util = None
    if table_status(con, "marts.utilization_daily") is None:
        # The mean the Utilization section quotes: complete days up to the report day.
        util_row = (query_rows(con, "SELECT utilization, days, first_day, last_day FROM marts.utilization_summary(?, 1) "
                                    "WHERE scope = 'all'", [meta.report_date]) or [{}])[0]
        util = util_row.get("utilization")
        night_util = scalar(con, "SELECT utilization FROM marts.utilization_daily WHERE day = ?",
                            [meta.report_date])
    fail_by_state = {}
    if table_status(con, "marts.job_states_daily") is None:
        fail_by_state = {r["state"]: (r["jobs"], r["runs"] - r["jobs"]) for r in query_rows(
            con, "SELECT state, jobs, runs FROM marts.job_states_daily WHERE day = ? AND in_failure_set",
            [meta.report_date])}
    last_run = {"files": 0, "rows_rejected": 0, "rows_read": 0, "last_ingested_at": None}
    if table_status(con, "marts.ingestion_by_source") is None:
        last_run = (query_rows(con, "SELECT * FROM marts.ingestion_by_source WHERE source_kind = '(last day)'")
                    or [last_run])[0]

    period = period_text(fmt_date(tot["first_day"]) if tot["first_day"] else None,
                         fmt_date(tot["last_day"]) if tot["last_day"] else None)
    base = _baseline(con, meta) if tot["gpu_jobs"] else {}

    def vs_base(key: str, fmt: Callable[[Any], str]) -> str:
        days = base.get("util_days") if key == "util" else base.get("days")
        return f" · {days}-day median {fmt(base[key])}" if base.get(key) is not None else ""

    missing = missing_sources(con)
    no_accounting = "sacct" in missing
    if no_accounting:
        # Nothing was loaded to count: the job figures are unknown, not 0 (a quiet night looks the same).
        sec.lead = (f"{NO_DATA}: no Slurm accounting was loaded (landing/sacct/), so the jobs that ended, "
                    "failed or were killed by the infrastructure are unknown.")
    elif reason:
        sec.lead = reason
    elif not tot["gpu_jobs"]:
        sec.lead = f"{NO_DATA}: no GPU job has finished (marts.job_totals counts none)."
    else:
        sec.lead = (
            # Two measures: the ended jobs' GPU-hours (by end day) and the cluster's allocation per day.
            f"From {period}, {plural(tot['gpu_jobs'], 'GPU job')} ended, having used {fmt_int(tot['gpu_hours'])} GPU-hours"
            # Its own span, said: the mean counts complete days only (as the Utilization section's), the
            # job count every end day up to the report day — one sentence must not pass one off as the other.
            + (f"; the cluster's mean utilization was {fmt_pct(util)} over the "
               f"{plural(util_row['days'], 'complete day')} "
               f"{period_text(fmt_date(util_row['first_day']), fmt_date(util_row['last_day']))}"
               if util is not None else "")
            + f"; on {fmt_date(meta.report_date)} {plural(night['gpu_jobs'], 'GPU job')} ended"
            + f" and {fmt_int(night['failed_jobs'])} of them failed"
            + _baseline_text(base)
        )
    # States with no failure that night are left out: six zeros would bury the one that matters.
    # A failed run Slurm requeued is no failed job, but it failed that night: shown beside the jobs.
    def fail_part(state: str) -> str:
        jobs, requeued = fail_by_state.get(state, (0, 0))
        more = plural(requeued, "requeued run") if requeued else ""
        return (f"{state} {fmt_int(jobs)}" + (f" (+ {more})" if more else "")) if jobs else (f"{state}: {more}" if more else "")
    fail_detail = ", ".join(p for p in map(fail_part, FAILED_STATES) if p) or "none"
    sec.cards = [
        {"label": "Period covered", "value": period, "sub": "job end days, UTC", "tone": ""},
        {"label": "GPU jobs ended", "value": fmt_int(tot["gpu_jobs"]), "sub": "whole period", "tone": ""},
        {"label": "GPU-hours", "value": fmt_int(tot["gpu_hours"]), "sub": "whole period", "tone": ""},
        {"label": "Mean utilization", "value": fmt_pct(util),
         "sub": "allocated / capacity GPU-hours, complete days", "tone": ""},
        {"label": f"Utilization {fmt_date(meta.report_date)}", "value": fmt_pct(night_util),
         "sub": "allocated / capacity GPU-hours" + vs_base("util", fmt_pct), "tone": ""},
        {"label": f"GPU jobs ended {fmt_date(meta.report_date)}", "value": fmt_int(night["gpu_jobs"]),
         "sub": f"{fmt_num(night['gpu_hours'] or 0.0)} GPU-hours" + vs_base("jobs", lambda v: fmt_num(v, 0)),
         "tone": ""},
        {"label": f"Failures {fmt_date(meta.report_date)}", "value": fmt_int(night["failed_jobs"]),
         "sub": fail_detail + vs_base("failures", lambda v: fmt_num(v, 0)),
         # Neutral: most failures are the users' own (time limits, memory, exit codes); the alarm colour is
         # the infrastructure card's, by attribution, so a routine night of TIMEOUTs does not read as an outage.
         "tone": ""},
        {"label": "Rejects, last ingestion", "value": fmt_int(last_run["rows_rejected"]),
         "sub": f"of {plural(last_run['rows_read'], 'row')} in {plural(last_run['files'], 'file')}"
                + (f", {fmt_date(last_run['last_ingested_at'])}" if last_run["last_ingested_at"] else ""),
         "tone": "bad" if last_run["rows_rejected"] else "good"},
    ] + failure_cards(con, meta, missing)
    sec.cards = _night_first(sec.cards, meta)
    if no_accounting:
        unknown = {"GPU jobs ended", "GPU-hours", f"GPU jobs ended {fmt_date(meta.report_date)}",
                   "Mean utilization", f"Utilization {fmt_date(meta.report_date)}",
                   f"Failures {fmt_date(meta.report_date)}", f"Infra failures {fmt_date(meta.report_date)}",
                   "Infra failures, whole period"}
        for card in sec.cards:
            if card["label"] in unknown:
                card.update(value=MISSING, sub=UNKNOWN_NO_ACCOUNTING, tone="")
    return sec


def _night_first(cards: list[dict[str, str]], meta: NightlyMeta) -> list[dict[str, str]]:
    """The cards in reading order: last night's first (jobs, failures, infrastructure failures, incidents),
    then the rest of the night's state, the whole period last — a meeting's first screen is last night."""
    d = fmt_date(meta.report_date)
    order = [f"GPU jobs ended {d}", f"Failures {d}", f"Infra failures {d}", "Hardware incidents",
             f"Utilization {d}", "Suspect nodes", "Rejects, last ingestion", "Infra failures, whole period",
             "Period covered", "GPU jobs ended", "GPU-hours", "Mean utilization"]
    return sorted(cards, key=lambda c: order.index(c["label"]) if c["label"] in order else len(order))


def _baseline_text(base: dict[str, Any]) -> str:
    """' (median of the 1 complete day before: 3 jobs ended, 0 failed; 1 partial day left out).' — the end
    of the headline sentence."""
    if not base:
        return "."
    left_out = f"{plural(base['partial_days'], 'partial day')} left out" if base.get("partial_days") else ""
    if not base["days"]:
        return f" (no complete day before it to compare with: {left_out})."
    days = plural(base["days"], "complete day" if base.get("complete") else "day")
    return (f" (median of the {days} before: {fmt_num(base['jobs'], 0)} jobs ended, {fmt_num(base['failures'], 0)} "
            f"failed{'; ' + left_out if left_out else ''}).")


def _infra_card(label: str, infra: dict[str, Any], total: int, tone: bool) -> dict[str, str]:
    """An infrastructure-failure card: the jobs it ended and the runs of requeued jobs it killed
    (a simulator or a site that requeues on NODE_FAIL shows 0 failed jobs and the cost in the runs), with
    the GPU-hours lost over all of those runs — marts.failure_attribution_summary's row, which "Why jobs
    failed", the incidents and the taxonomy count alike, so the card's figures and theirs reconcile."""
    runs = infra["runs"]
    requeued = runs - infra["n"]
    sub = (f"{gpuh(infra['lost'])} GPU-h lost · {fmt_int(infra['n'])} of {plural(total, 'failed job')}"
           + (f" + {plural(requeued, 'requeued run')}" if requeued else ""))
    return {"label": label, "value": fmt_int(runs), "sub": sub, "tone": ("bad" if runs else "good") if tone else ""}


def failure_cards(con: duckdb.DuckDBPyConnection, meta: NightlyMeta,
                  missing: frozenset[str] = frozenset()) -> list[dict[str, str]]:
    """KPI cards from the failure marts; '–' with the reason when a mart is missing or broken.
    ``missing``: the sources never loaded (:func:`~gpusre.reports.incident.terms.missing_sources`):
    without node logs no hardware incident seen is unknown, not 0. The infrastructure cards say how
    many failed jobs the node logs did not cover (left unknown)."""
    d = fmt_date(meta.report_date)
    no_logs = "syslog" in missing
    cards: list[dict[str, str]] = []
    try:
        reason = (table_status(con, "marts.job_failure_attribution")
                  or table_status(con, "marts.failure_attribution_summary"))
        if reason and "has not been built" in reason:
            raise LookupError(reason)
        night_total, night = (0, {}) if reason else attribution_counts(con, meta.report_date)
        all_total, every = (0, {}) if reason else attribution_counts(con, through=meta.through)
        none = {"n": 0, "runs": 0, "lost": 0.0}
        # Failed jobs left unknown because the node logs did not cover their nodes (NO_LOGS_RULE): "0"
        # infrastructure failures must not read as a fact where no log could have shown one.
        unlogged = {} if reason else {
            f"Infra failures {d}": scalar(con, "SELECT count(*) FROM marts.job_failure_attribution WHERE rule = ? "
                                               f"AND {utc_day_sql('end_ts')} = ?", [NO_LOGS_RULE, meta.report_date]),
            "Infra failures, whole period": scalar(con, "SELECT count(*) FROM marts.job_failure_attribution "
                                                        f"WHERE rule = ? AND {utc_day_sql('end_ts')} <= ?",
                                                   [NO_LOGS_RULE, meta.through])}
        for label, counts, total, tone in ((f"Infra failures {d}", night, night_total, True),
                                           ("Infra failures, whole period", every, all_total, False)):
            card = _infra_card(label, counts.get("infrastructure", none), total, tone)
            if unlogged.get(label):
                card["sub"] += f" · {fmt_int(unlogged[label])} unknown: no node logs"
                card["tone"] = ""
            cards.append(card)
    except (duckdb.Error, LookupError) as exc:
        log.warning("nightly report attribution cards: %s", exc)
        sub = "marts.job_failure_attribution not available"
        cards += [{"label": f"Infra failures {d}", "value": MISSING, "sub": sub, "tone": ""},
                  {"label": "Infra failures, whole period", "value": MISSING, "sub": sub, "tone": ""}]
    try:
        status = table_status(con, "marts.hw_incidents")
        if status and "has not been built" in status:
            raise LookupError(status)
        inc = {"n": scalar(con, f"SELECT count(*) FROM marts.hw_incidents WHERE {utc_day_sql('start_ts')} <= ? "
                                f"AND {failure_incident_sql()}",
                           [meta.through]),
               "night": scalar(con, f"SELECT count(*) FROM marts.hw_incidents WHERE {utc_day_sql('start_ts')} = ? "
                                    f"AND {failure_incident_sql()}",
                               [meta.report_date])}
        # Node logs that stopped before the report day (or not yet begun) know nothing of its incidents.
        day_gap = "syslog" in sources_without_day(con, meta.report_date)
        if no_logs and not inc["n"]:
            # Incidents come from the node logs: without them none seen is no evidence that none happened.
            cards.append({"label": "Hardware incidents", "value": MISSING, "sub": "unknown: no node logs", "tone": ""})
        else:
            night = (f"unknown for {d}: no node logs that day" if day_gap and not inc["night"]
                     else f"{fmt_int(inc['night'])} began {d}")
            # Without node logs the incidents are the hardware outages Slurm's node states name (hw_incidents
            # rule 7): a floor, since a fault that no drain named is not among them.
            from_states = no_logs and "label_source" in table_columns(con, "marts.hw_incidents") and bool(scalar(
                con, "SELECT count(*) FROM marts.hw_incidents WHERE label_source = ?", [NODE_STATE_LABEL]))
            floor = " · at least: node states only, no node logs" if from_states else ""
            cards.append({"label": "Hardware incidents", "value": fmt_int(inc["n"]),
                          "sub": f"whole period · {night}{floor}", "tone": "bad" if inc["night"] else ""})
    except (duckdb.Error, LookupError) as exc:
        log.warning("nightly report incident card: %s", exc)
        cards.append({"label": "Hardware incidents", "value": MISSING, "sub": "marts.hw_incidents not available",
                      "tone": ""})
    try:
        status = table_status(con, "marts.suspect_nodes")
        if status and "has not been built" in status:
            raise LookupError(status)
        nodes = [] if status else [r["node"] for r in query_rows(con, "SELECT node FROM marts.suspect_nodes "
                                                                 "ORDER BY score DESC, node")]
        if not nodes and table_status(con, "core.node_events") is not None:
            # Suspects are scored on node-log episodes (as the section says): none flagged without any is no
            # evidence of a healthy fleet.
            raise LookupError("unknown: no node logs")
        # A snapshot as of the data's end (no per-day rows): a past night's card says so.
        asof = f" · as of {fmt_date(meta.data_last)}" if meta.past else ""
        cards.append({"label": "Suspect nodes", "value": fmt_int(len(nodes)),
                      "sub": (truncate(compress_hostlist(nodes), 40) if nodes else "none stands out from the fleet")
                             + asof,
                      "tone": "bad" if nodes else "good"})
    except (duckdb.Error, LookupError) as exc:
        unknown = str(exc).startswith("unknown")
        if not unknown:
            log.warning("nightly report suspect-node card: %s", exc)
        cards.append({"label": "Suspect nodes", "value": MISSING,
                      "sub": str(exc) if unknown else "marts.suspect_nodes not available", "tone": ""})
    return cards


SECTION = SectionSpec("headline", "Headline", build)
