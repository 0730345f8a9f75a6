"""Nightly report section "Alert hygiene: noisy rules and missing coverage" (``#alert_hygiene``).

Reads core.alerts, marts.alert_rule_quality, marts.alert_rule_verdicts, marts.alert_coverage,
marts.hw_incidents_without_alert, marts.hw_incidents, marts.alert_data_span (the span the coverage
mart was judged in, and the rules' alert period); formats, computes nothing."""

from __future__ import annotations

import logging
from typing import Any

import duckdb

from gpusre.reports.kit.formatting import (
    MISSING,
    count_phrase,
    fmt_date,
    fmt_int,
    fmt_pct,
    nodes_text,
    period_text,
    plural,
    sentence_case,
    span_hours,
    truncate,
    utc_date,
)
from gpusre.reports.incident.terms import missing_sources, nodes_phrase
from gpusre.reports.kit.labels import component_label
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status, utc_day_sql
from gpusre.reports.nightly.meta import NightlyMeta, alert_history, alert_window, reason_text

log = logging.getLogger(__name__)


_TOP_N_RULES = 10  # per verdict: the noisiest rules, then the flapping ones

_TOP_N_UNCOVERED = 20

_NOISE = "noise: consider silencing"

_FLAPPING = "flapping"

_VERDICTS = (_NOISE, _FLAPPING, "useful", "too few to judge")


_VERDICT_WORDS = {_NOISE: ("looks like noise", "look like noise"), _FLAPPING: ("flaps", "flap"),
                  "useful": ("is useful", "are useful"),
                  "too few to judge": ("fired too rarely to judge", "fired too rarely to judge")}


def _verdict_phrase(verdict: str | None, n: int) -> str:
    """'look like noise', 'flaps', ...; verdicts this report does not know are quoted as stored."""
    if verdict in _VERDICT_WORDS:
        return _VERDICT_WORDS[verdict][n != 1]
    if verdict is None:
        return "have no verdict" if n != 1 else "has no verdict"
    return f"{'is' if n == 1 else 'are'} \u201c{verdict}\u201d"


def _built(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """The table exists (empty or not): an empty coverage mart means nothing was judged, not unknown."""
    status = table_status(con, table)
    return status is None or "has not been built" not in status


def _alert_data_span(con: duckdb.DuckDBPyConnection) -> tuple[Any, Any]:
    """The span marts.alert_coverage was judged in (marts.alert_data_span); (None, None) without it."""
    if table_status(con, "marts.alert_data_span") is not None:
        return None, None
    rows = query_rows(con, "SELECT first_ts, last_ts FROM marts.alert_data_span")
    return (rows[0]["first_ts"], rows[0]["last_ts"]) if rows else (None, None)


def _unjudged_text(con: duckdb.DuckDBPyConnection, first: Any, last: Any, window: tuple[Any, Any]) -> str:
    """'Alert coverage is judged on … A … B (…); not judged, …: 1 that started after the last
    delivery.' — the span, and the hardware incidents of the report window outside it: without
    alert data then, whether they alerted is unknown, neither covered nor missed."""
    text = (f"Alert coverage is judged on the hardware incidents that started while alert notifications were "
            f"arriving, {period_text(fmt_date(first), fmt_date(last))} (first to last delivery, resolves and "
            "repeats included; a file dated by its name covers its day, up to the data's end), and on any an alert "
            "was about")
    if table_status(con, "marts.hw_incidents") is not None or not _built(con, "marts.alert_coverage"):
        return text + "."
    row = query_rows(con, f"""SELECT count(*) FILTER (WHERE h.start_ts < ?) AS before,
                                     count(*) FILTER (WHERE h.start_ts > ?) AS after
                              FROM marts.hw_incidents h
                              WHERE {utc_day_sql('h.start_ts')} BETWEEN ? AND ?
                                AND NOT EXISTS (SELECT 1 FROM marts.alert_coverage c
                                                WHERE c.incident_id = h.incident_id)""",
                     [first, last, *window])[0]
    out = [f"{fmt_int(n)} that started {when}" for n, when in
           ((row["before"], "before the first delivery"), (row["after"], "after the end of the alert data")) if n]
    if out:
        text += f"; not judged, the alert data not reaching them: {' and '.join(out)}"
    return text + "."


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("alert_hygiene", "Alert hygiene: noisy rules and missing coverage")
    reason = alert_history(con)
    if reason:
        sec.no_data = reason
        return sec
    q_status = table_status(con, "marts.alert_rule_quality") or table_status(con, "marts.alert_rule_verdicts")
    c_status = table_status(con, "marts.hw_incidents_without_alert")
    c_built = c_status is None or "has not been built" not in c_status  # built and empty: full coverage
    if q_status and not c_built:
        sec.no_data = q_status
        return sec
    first, last = alert_window(meta)
    window = f"{fmt_date(first)} … {fmt_date(last)}"
    parts: list[str] = []
    rules: list[dict[str, Any]] = []
    if q_status is None:
        counted = query_rows(con, "SELECT verdict, rules AS n, fired, judged FROM marts.alert_rule_verdicts")
        verdicts = {r["verdict"]: r for r in counted if r["verdict"] != "(all)"}
        tot = next(r for r in counted if r["verdict"] == "(all)")
        # The period the alert data covers (first to last delivery): the alerts' own starts reach back to
        # an always-firing Watchdog's start, days before the first payload arrived.
        spans = (query_rows(con, "SELECT first_ts AS a, last_ts AS b FROM marts.alert_data_span WHERE first_ts IS NOT NULL")
                 if table_status(con, "marts.alert_data_span") is None else [])
        span = spans[0] if spans else query_rows(con, "SELECT min(starts_at) AS a, max(starts_at) AS b FROM core.alerts")[0]
        rules = query_rows(con, f"""SELECT alertname, fired, fingerprints, incidents, with_hw_incident, with_job_impact,
                                      precision, median_duration_s, flapping, flap_share, verdict
                               FROM (SELECT *, row_number() OVER (PARTITION BY verdict
                                                                  ORDER BY fired DESC NULLS LAST, alertname) AS k
                                     FROM marts.alert_rule_quality WHERE verdict IN (?, ?))
                               WHERE k <= {_TOP_N_RULES}
                               ORDER BY (verdict <> ?), fired DESC NULLS LAST, alertname""",
                      [_NOISE, _FLAPPING, _NOISE])
        span_txt = period_text(fmt_date(utc_date(span["a"])), fmt_date(utc_date(span["b"])))
        order = [v for v in _VERDICTS if v in verdicts]
        order += sorted((v for v in verdicts if v not in _VERDICTS), key=lambda v: (v is None, str(v)))
        part = (f"of {plural(tot['n'], 'alert rule')} ({plural(tot['fired'], 'alert')} in {span_txt}), "
                + count_phrase([(_verdict_phrase(v, verdicts[v]["n"]), verdicts[v]["n"]) for v in order]))
        noisy = [r for r in rules if r["verdict"] == _NOISE]
        if noisy:
            w = noisy[0]
            part += (f"; the noisiest, \u201c{truncate(w['alertname'], 60)}\u201d, fired {plural(w['fired'], 'time')} "
                     + ("and none of its alerts" if not w["precision"]
                        else f"and only {fmt_pct(w['precision'])} of them")
                     + " came with a hardware incident or killed jobs")
        elif not tot["judged"]:
            part += " (precision cannot be judged: no hardware incident or failed job in the span of the alerts)"
        parts.append(part)
    else:
        parts.append(f"rule quality is not available ({reason_text(q_status)})")

    uncovered: list[dict[str, Any]] = []
    if c_status is None:
        uncovered = query_rows(con, f"""SELECT incident_id, component, start_ts, end_ts, nodes, scope, duration_s
                                   FROM marts.hw_incidents_without_alert
                                   WHERE {utc_day_sql('start_ts')} BETWEEN ? AND ?
                                   ORDER BY start_ts DESC, incident_id""", [first, last])
    if c_built and "syslog" in missing_sources(con) and not (
            table_status(con, "marts.hw_incidents") is None and scalar(con, "SELECT count(*) FROM marts.hw_incidents")):
        # no node logs: no hardware incident could be seen, so "every incident had an alert" would be empty praise
        parts.append("alert coverage is unknown: no node logs were loaded, so there are no hardware incidents to "
                     "check the alerts against")
    elif c_built:
        checked = None
        if _built(con, "marts.alert_coverage"):  # the incidents the alerts could judge (none: 0, not unknown)
            checked = scalar(con, f"""SELECT count(*) FROM marts.alert_coverage
                                       WHERE {utc_day_sql('start_ts')} BETWEEN ? AND ?""", [first, last])
        n_checked = max(checked, len(uncovered)) if checked is not None else None
        of = f" of {fmt_int(n_checked)}" if n_checked is not None else ""
        if uncovered:
            comps: dict[str, int] = {}
            for r in uncovered:
                comps[component_label(r["component"])] = comps.get(component_label(r["component"]), 0) + 1
            by = sorted(comps.items(), key=lambda kv: (-kv[1], kv[0]))
            parts.append((f"{fmt_int(len(uncovered))}{of} hardware incidents" if of
                          else plural(len(uncovered), "hardware incident"))
                         + f" in {window} had no alert on their nodes "
                         f"(missing coverage: {', '.join(f'{k} {fmt_int(v)}' for k, v in by)})")
        elif checked == 0:
            parts.append(f"no hardware incident in {window} to check alert coverage against")
        else:
            parts.append(f"the one hardware incident in {window} had an alert on its nodes" if n_checked == 1 else
                         f"all {plural(n_checked, 'hardware incident')} in {window} had an alert on their nodes"
                         if n_checked else f"every hardware incident in {window} had an alert on its nodes")
    else:
        parts.append(f"alert coverage is unknown ({reason_text(c_status)})")
    sec.lead = sentence_case("; ".join(parts) + ".")
    if c_built and not parts[-1].startswith("alert coverage is unknown"):
        span_first, span_last = _alert_data_span(con)
        if span_first is not None:
            sec.lead += " " + _unjudged_text(con, span_first, span_last, (first, last))

    if rules:
        def dur(s: float | None) -> str:
            return MISSING if s is None else span_hours(s / 3600)

        sec.add(Table(
            [Column("Alert rule"), Column("Verdict", nowrap=True), Column("Fired", True), Column("Series", True),
             Column("Incidents", True), Column("Precision", True), Column("Median duration", True),
             Column("Flap days", True), Column("On flap days", True)],
            [[Cell(truncate(r["alertname"], 48), mono=True, title=r["alertname"]), Cell(r["verdict"] or MISSING),
              Cell(fmt_int(r["fired"])), Cell(fmt_int(r["fingerprints"])), Cell(fmt_int(r["incidents"])),
              Cell(fmt_pct(r["precision"])), Cell(dur(r["median_duration_s"])), Cell(fmt_int(r["flapping"])),
              Cell(fmt_pct(r["flap_share"]))] for r in rules],
            caption=f"Rules to review over the whole alert history: the {_TOP_N_RULES} noisiest (\u201cnoise: consider "
                    f"silencing\u201d), then the {_TOP_N_RULES} flapping rules with the most alerts. Series: distinct "
                    "label sets (fingerprints). Precision: share of its alerts in incidents with a hardware incident "
                    "or killed jobs. Flap days: (series, day) pairs with repeated fire/resolve cycles; on flap days: "
                    "share of its alerts fired on one. A rule is judged only once it fired in "
                    "alerts.clustering.min_incidents (default 3) alert incidents outside maintenance: one event, "
                    "however many alerts it fired (a maintenance that took 8 nodes down), is too few to call a "
                    "rule noise.",
        ))
    if uncovered:
        shown = uncovered[:_TOP_N_UNCOVERED]
        sec.add(Table(
            [Column("Incident", nowrap=True), Column("Component"), Column("Start", nowrap=True), Column("Lasted", True),
             Column("Nodes", nowrap=True), Column("Scope")],
            [[Cell(str(r["incident_id"]), mono=True), Cell(component_label(r["component"])),
              Cell(fmt_date(r["start_ts"])),
              Cell(span_hours(r["duration_s"] / 3600) if r["duration_s"] is not None else MISSING),
              Cell(nodes_phrase(r["nodes"], 30), mono=True, title=nodes_text(r["nodes"])),
              Cell(str(r["scope"] or MISSING))] for r in shown],
            caption=(f"Latest {len(shown)} of {fmt_int(len(uncovered))}" if len(uncovered) > len(shown) else "The")
                    + f" hardware incidents (marts.hw_incidents) of {window} with no alert on their nodes from 10 min "
                      "before to 30 min after them (nor on their leaf switch), newest first: the alert rules miss "
                      "these failures. Lasted: from the first evidence to the repair where known "
                      "(marts.incident_repairs: a restored connection, the node back in service), else to the last "
                      "evidence. Only incidents the alert data can judge are checked: those that started within its span (first to last webhook delivery), and any an alert was about.",
        ))
    return sec


SECTION = SectionSpec("alert_hygiene", "Alert hygiene: noisy rules and missing coverage", build)
