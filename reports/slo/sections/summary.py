"""SLO review section "Summary" (``#summary``).

Reads marts.hw_incidents, marts.mtbf, marts.node_failure_rate, marts.slo_daily; formats, computes nothing."""

from __future__ import annotations

import logging

import duckdb

from gpusre.reports.coverage import loaded_sources
from gpusre.reports.kit.formatting import fmt_ci, fmt_hours, fmt_int, fmt_num
from gpusre.reports.kit.section import Section, SectionSpec
from gpusre.reports.kit.warehouse import query_rows, table_status, utc_day_sql
from gpusre.reports.slo.terms import fmt_budget, fmt_objective, fmt_rate, fmt_sli, sli_label, unknown_bound_text
from gpusre.reports.slo.window import SloWindow, failure_evidence, mart_period, sli_windows
from gpusre.models.vocabulary import failure_incident_sql

log = logging.getLogger(__name__)


def _cards(con: duckdb.DuckDBPyConnection, w: SloWindow) -> list[dict[str, str]]:
    cards: list[dict[str, str]] = []
    try:
        if table_status(con, "marts.slo_daily") is None:
            slis = sli_windows(con, w)
            node_logs = "syslog" in loaded_sources(con)
            for s in slis:
                est = ("" if s.sli != "node_availability" or "incidents" not in s.sources else
                       " · estimated from hardware incidents (no node-state history)" if len(s.sources) == 1 else
                       " · partly estimated from hardware incidents (days without node-state history)")
                if s.unknown_failures and s.value is not None:  # an upper bound: failures of unknown cause count good
                    est += " · " + unknown_bound_text(s.unknown_failures, s.value_if_unknown_bad, node_logs)
                cards.append({"label": sli_label(s.sli),
                              "value": fmt_sli(s.value),
                              "sub": (f"objective {fmt_objective(s.objective)} · budget left {fmt_budget(s.budget_left)}"
                                      if s.value is not None else f"objective {fmt_objective(s.objective)} · no events")
                              + est,
                              "tone": "" if s.met is None else ("good" if s.met else "bad")})
            loaded = loaded_sources(con)
            if loaded and not any(s.sli == "node_availability" for s in slis) and not loaded & {"syslog", "slurm_events"}:
                cards.append({"label": sli_label("node_availability"), "value": "unknown",
                              "sub": "no node states and no node logs", "tone": ""})
    except duckdb.Error as exc:
        log.warning("SLO report cards: %s", exc)
    try:
        if loaded_sources(con) and not failure_evidence(con):  # (an empty warehouse: "No data yet" below)
            cards.append({"label": "MTBF per node", "value": "unknown", "sub": "no node logs", "tone": ""})
            cards.append({"label": "Failures / 1,000 node-days", "value": "unknown", "sub": "no node logs · RSC-1 6.50",
                          "tone": ""})
        # The window's own row when the marts hold one (a calendar month, or the whole record), else the
        # whole-record row named as such: a monthly review must not headline a figure that includes other months.
        if failure_evidence(con) and table_status(con, "marts.mtbf") is None:
            mp = mart_period(con, w, "mtbf")
            c = query_rows(con, """SELECT mtbf_hours, ci_low, ci_high, sufficient, failures FROM marts.mtbf
                              WHERE period_type = ? AND period = ? AND scope = 'cluster' LIMIT 1""",
                           [mp.period_type, mp.period])
            if c:
                c0 = c[0]
                cards.append({"label": "MTBF per node", "value": fmt_hours(c0["mtbf_hours"]) if c0["sufficient"]
                              else "insufficient data",
                              "sub": f"95 % CI {fmt_ci(c0['ci_low'], c0['ci_high'])} · {mp.label}", "tone": ""})
        if failure_evidence(con) and table_status(con, "marts.node_failure_rate") is None:
            mp = mart_period(con, w, "node_failure_rate", "variant = 'hw_incidents'")
            r = query_rows(con, """SELECT rate_per_1000_node_days AS r, ci_low, ci_high, sufficient FROM marts.node_failure_rate
                              WHERE period_type = ? AND period = ? AND variant = 'hw_incidents' LIMIT 1""",
                           [mp.period_type, mp.period])
            if r:
                r0 = r[0]
                cards.append({"label": "Failures / 1,000 node-days",
                              "value": fmt_rate(r0["r"]) if r0["sufficient"] else "insufficient data",
                              "sub": f"95 % CI {fmt_ci(r0['ci_low'], r0['ci_high'], '', fmt_rate)} · {mp.label} · "
                                     "RSC-1 6.50", "tone": ""})
        if table_status(con, "marts.hw_incidents") is None:
            i = query_rows(con, f"""SELECT count(*) AS n, coalesce(sum(lost_gpu_hours), 0) AS lost,
                                      count(*) > 0 AND count(lost_gpu_hours) = 0 AS unknown FROM marts.hw_incidents
                               WHERE {utc_day_sql('start_ts')} BETWEEN ? AND ?
                                 AND {failure_incident_sql()}""", [w.start, w.end])[0]
            cards.append({"label": "Hardware incidents", "value": fmt_int(i["n"]),
                          "sub": ("GPU-h lost unknown: no Slurm accounting · window" if i["unknown"]
                                  else f"{fmt_num(i['lost'], 0)} GPU-h lost in them · window"), "tone": ""})
    except duckdb.Error as exc:
        log.warning("SLO report cards: %s", exc)
    return cards


def build(con: duckdb.DuckDBPyConnection, w: SloWindow) -> Section:
    """The summary cards: each SLO over the window; MTBF and failure rate of the window's mart period
    (:func:`~gpusre.reports.slo.window.mart_period`), labelled with the period they cover."""
    sec = Section("summary", "Summary", template="cards",
                  scope=f"Window {w.text}; SLIs are Σ good / Σ total over the window. MTBF and the failure rate "
                        "are the marts' row for the window when they hold one (a calendar month, or the whole "
                        "record), else the whole record, as each card says.")
    sec.cards = _cards(con, w)
    if not sec.cards:
        sec.no_data = "No data yet: the warehouse has no SLO or reliability marts."
    return sec


SECTION = SectionSpec("summary", "Summary", build)
