"""SLO review section "Time to repair by component class" (``#repairs``).

Reads marts.repair_times_monthly, marts.repair_times, marts.incident_repairs, marts.day_coverage;
formats, computes nothing: the medians and means are the marts' (per month of the incidents' start, and
the whole record — a window's own median would need the incidents, which is the marts' job). The age of a
repair still open at the end of the window is the window's end minus the incident's first evidence, one
subtraction per row."""

from __future__ import annotations

from datetime import datetime, time, timedelta, timezone
from typing import Any

import duckdb

from gpusre.models.vocabulary import class_label
from gpusre.models.warehouse import select_columns
from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_ci,
    fmt_hours,
    fmt_int,
    is_number,
    lower_first,
    nodes_text,
    period_text,
    plural,
    sentence_case,
    span_hours,
    truncate,
    utc_hm,
)
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Chart, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status
from gpusre.reports.slo.window import SloWindow

_SUMMARY_COLUMNS = ("component_class", "incidents", "repaired", "ongoing", "mttr_hours_p50", "mttr_hours_p90",
                    "mttr_hours_mean", "ci_low", "ci_high", "from_node_states", "note")
_OPEN_COLUMNS = ("incident_id", "component", "component_class", "nodes", "incident_start_ts", "drain_start_ts",
                 "drain_reason", "repair_state", "repair_source", "repaired_ts", "in_fleet")
RECORD = "whole record"


def repair_hours(h: float | None) -> str:
    """A repair time: hours with the precision the MTBF section uses ('15.0 h', '7.67 h'), a sub-hour one
    in minutes ('40 min', never '0.0 h').

    >>> repair_hours(15.0), repair_hours(23 / 3), repair_hours(2 / 3), repair_hours(None)
    ('15.0 h', '7.67 h', '40 min', '–')
    """
    if not is_number(h):
        return MISSING
    return span_hours(h) if float(h) < 1 else fmt_hours(h)  # type: ignore[arg-type]


def window_end(con: duckdb.DuckDBPyConnection, w: SloWindow) -> datetime:
    """The moment the window ends: midnight after its last day, or the data's last moment before that
    (marts.day_coverage), so that an open repair's age is what the data saw, not hours yet to come."""
    end = datetime.combine(w.end + timedelta(days=1), time(), tzinfo=timezone.utc)
    if table_status(con, "marts.day_coverage") is None:
        covered = scalar(con, "SELECT max(covered_to) FROM marts.day_coverage WHERE day <= ?", [w.end])
        if isinstance(covered, datetime) and covered < end:
            return covered
    return end


def _class_order(record: dict[str, dict[str, Any]], rows: list[dict[str, Any]]) -> list[str]:
    """'all' first, then the classes with the most incidents over the whole record."""
    klasses = {r["component_class"] for r in rows}
    return sorted(klasses, key=lambda c: (c != "all", -int((record.get(c) or {}).get("incidents") or 0),
                                          -max(int(r["incidents"] or 0) for r in rows if r["component_class"] == c), c))


def _label(klass: str) -> str:
    return class_label(klass) if klass != "all" else "All classes"


def _month_clause(period: str, by_class: dict[str, dict[str, Any]]) -> str:
    """'2026-09: median time to repair 12.0 h over 14 repairs (mean 16.3 h); GPU 15.0 h (mean 18.0 h, 8 repairs)'."""
    total = by_class.get("all")
    if not total or not int(total["repaired"] or 0):
        return f"{period}: no repair finished" + (f" ({plural(total['ongoing'], 'repair')} still open at the end of "
                                                  "the data)" if total and total["ongoing"] else "")
    text = (f"{period}: median time to repair {repair_hours(total['mttr_hours_p50'])} over "
            f"{plural(total['repaired'], 'repair')} (mean {repair_hours(total['mttr_hours_mean'])})")
    classes = sorted((r for k, r in by_class.items() if k != "all" and int(r["repaired"] or 0)),
                     key=lambda r: (-int(r["repaired"] or 0), r["component_class"]))
    parts = [f"{lower_first(_label(r['component_class']))} {repair_hours(r['mttr_hours_p50'])} "
             f"(mean {repair_hours(r['mttr_hours_mean'])}, {plural(r['repaired'], 'repair')})" for r in classes[:3]]
    # The classes past the third are named by count, never dropped in silence (the table lists them all).
    rest = [lower_first(_label(r["component_class"])) for r in classes[3:]]
    more = (f" and {plural(len(rest), 'more class', 'more classes')} ({', '.join(rest)})" if rest else "")
    return text + ("; " + ", ".join(parts) + more if parts else "")


def build(con: duckdb.DuckDBPyConnection, w: SloWindow) -> Section:
    months = w.months
    sec = Section("repairs", "Time to repair by component class",
                  scope=f"Calendar months overlapping the window ({', '.join(months)}) by the incidents' start, and "
                        "the whole record, from marts.repair_times_monthly and marts.repair_times; repairs open at "
                        f"the end of the window ({w.text}) from marts.incident_repairs.")
    reason = table_status(con, "marts.repair_times_monthly")
    if reason:
        sec.no_data = reason
        return sec
    ph = ",".join("?" * len(months))
    monthly = query_rows(con, f"""SELECT period, {select_columns(con, 'marts.repair_times_monthly', _SUMMARY_COLUMNS)}
                               FROM marts.repair_times_monthly WHERE period IN ({ph})
                               ORDER BY period""", months)
    whole: list[dict[str, Any]] = []
    if table_status(con, "marts.repair_times") is None:
        whole = [dict(r, period=RECORD) for r in query_rows(
            con, f"SELECT {select_columns(con, 'marts.repair_times', _SUMMARY_COLUMNS)} FROM marts.repair_times")]
    span = query_rows(con, "SELECT min(period) AS a, max(period) AS b FROM marts.repair_times_monthly")[0]
    # One month of incidents: its rows repeat the whole record's; the table shows them once.
    one_month = bool(whole) and span["a"] is not None and span["a"] == span["b"]
    rows = ([] if one_month else monthly) + whole
    # The months that hold repairs, said as such: "whole record (2026-08 … 2026-09)" beside MTBF's
    # "whole record (2026-08 … 2026-10)" read as two records (outside probe N).
    record = (f"{RECORD} (incidents starting {period_text(span['a'], span['b'])})" if span["a"] else RECORD)
    end = window_end(con, w)
    open_rows: list[dict[str, Any]] = []
    if table_status(con, "marts.incident_repairs") is None:
        # Open at the window's end: started before it and not back in service by then (still ongoing, or
        # repaired only after it). Incidents never drained and without other repair evidence have no
        # repair to time and are left out, as in the medians; so are incidents outside the fleet (in_fleet
        # false: only on hosts cluster.yaml does not list), which the medians do not count either.
        open_rows = query_rows(con, f"""SELECT * EXCLUDE (in_fleet),
                                      date_diff('second', incident_start_ts, ?::TIMESTAMPTZ) / 3600.0 AS open_hours
                               FROM (SELECT {select_columns(con, 'marts.incident_repairs', _OPEN_COLUMNS)}
                                     FROM marts.incident_repairs)
                               WHERE incident_start_ts < ?::TIMESTAMPTZ AND in_fleet IS NOT FALSE
                                 AND (repair_state = 'ongoing'
                                      OR (repair_state = 'repaired' AND repaired_ts > ?::TIMESTAMPTZ))
                               ORDER BY incident_start_ts, incident_id""", [end, end, end])
    if not rows and not open_rows:
        sec.no_data = f"{NO_DATA}: no hardware incident started in {', '.join(months)} (marts.repair_times_monthly)."
        return sec

    record_by_class = {r["component_class"]: r for r in whole}
    classes = _class_order(record_by_class, rows) if rows else []
    periods = [m for m in months if any(r["period"] == m for r in rows)] + ([RECORD] if whole else [])
    ordered = sorted(rows, key=lambda r: (classes.index(r["component_class"]), periods.index(r["period"])))

    t = record_by_class.get("all")
    if t and int(t["repaired"] or 0):
        lead = (f"Over the {record} {plural(t['repaired'], 'repair')} took a median "
                f"{repair_hours(t['mttr_hours_p50'])} from first evidence to back in service (mean "
                f"{repair_hours(t['mttr_hours_mean'])}, p90 {repair_hours(t['mttr_hours_p90'])})")
        timed = [r for k, r in record_by_class.items() if k != "all" and is_number(r["mttr_hours_p50"])]
        if len(timed) > 1:
            slow = max(timed, key=lambda r: (r["mttr_hours_p50"], r["component_class"]))
            lead += (f"; {lower_first(_label(slow['component_class']))} is slowest to repair (median "
                     f"{repair_hours(slow['mttr_hours_p50'])}, {plural(slow['repaired'], 'repair')})")
        if int(t["ongoing"] or 0):
            lead += f"; {plural(t['ongoing'], 'repair')} still open at the end of the data (not averaged)"
        sec.lead = lead + "."
    elif whole:
        sec.lead = f"No repair has finished over the {record}."

    # Takeaway: each window month's repairs, then what is still open when the window ends.
    clauses = [_month_clause(m, {r["component_class"]: r for r in monthly if r["period"] == m})
               for m in months if any(r["period"] == m for r in monthly)]
    if not clauses:
        clauses = [f"no hardware incident started in {', '.join(months)}"]
    at = f"{end.strftime('%Y-%m-%d %H:%M')} UTC"
    if open_rows:
        shown = [f"{nodes_text(r['nodes'])} ({lower_first(_label(r['component_class'] or 'other'))}, since "
                 f"{r['incident_start_ts'].astimezone(timezone.utc).strftime('%Y-%m-%d')} {utc_hm(r['incident_start_ts'])}, "
                 f"open {repair_hours(r['open_hours'])})" for r in open_rows[:3]]
        more = f" and {len(open_rows) - 3} more" if len(open_rows) > 3 else ""
        tail = (f"{plural(len(open_rows), 'repair')} still open at the end of the window ({at}): "
                + ", ".join(shown) + more)
    else:
        tail = f"no repair was open at the end of the window ({at})"
    take = sentence_case("; ".join(clauses)) + ". " + sentence_case(tail) + "."

    if any(is_number(r["mttr_hours_p50"]) or int(r["ongoing"] or 0) for r in ordered):
        sec.items.append(Chart(svg(charts.repair_time_chart(
            [(f"{_label(r['component_class'])} · {r['period']}", r["mttr_hours_p50"], r["mttr_hours_p90"],
              int(r["repaired"] or 0), r["component_class"] == "all") for r in ordered],
            "Time to repair by component class and month: median, whisker to p90")), take))
    else:
        sec.lead = (sec.lead + " " + take).strip()

    def ci(r: dict[str, Any]) -> Cell:
        if is_number(r["ci_low"]):
            return Cell(fmt_ci(r["ci_low"], r["ci_high"]), title=r["note"] or None)
        return Cell(f"{MISSING} (too few)" if int(r["repaired"] or 0) else MISSING, title=r["note"] or None)

    if ordered:
        sec.items.append(Table(
            [Column("Component class"), Column("Period", nowrap=True), Column("Incidents", True),
             Column("Repaired", True), Column("Open at data end", True), Column("TTR median", True),
             Column("TTR mean", True), Column("TTR p90", True), Column("95 % CI of median", True),
             Column("Timed by node states", True)],
            [[Cell(_label(r["component_class"])), Cell(r["period"]), Cell(fmt_int(r["incidents"])),
              Cell(fmt_int(r["repaired"])), Cell(fmt_int(r["ongoing"])), Cell(repair_hours(r["mttr_hours_p50"])),
              Cell(repair_hours(r["mttr_hours_mean"])), Cell(repair_hours(r["mttr_hours_p90"])), ci(r),
              Cell(f"{fmt_int(r['from_node_states'])} of {fmt_int(r['repaired'])}")] for r in ordered],
            caption="Time to repair (TTR) = first evidence of the hardware incident to every linked node back in "
                    "service (its drain/down ended in the Slurm node states); an incident whose nodes were never "
                    "drained is timed by a logged recovery of its class (a link back ACTIVE, a Lustre client "
                    "reconnected), the end of its health-check evidence, the end the operator wrote in incidents.csv "
                    "or the first job that completed on its node (marts.incident_repairs.repair_source). Months are the incidents' start (UTC); a "
                    "month's numbers cover its incidents whole, also the days outside the window. Open at data "
                    "end: not yet back in service when the data ends (right-censored: counted, left out of the "
                    "median and mean). 95 % CI: distribution-free interval of the median (needs at least 6 "
                    "repairs).",
        ))
    if open_rows:
        sec.items.append(Table(
            [Column("Incident"), Column("Class"), Column("Nodes"), Column("First evidence (UTC)", nowrap=True),
             Column("Drained (UTC)", nowrap=True), Column("Drain reason"), Column("Open for", True),
             Column("Later")],
            [[Cell(r["incident_id"], mono=True), Cell(_label(r["component_class"] or "other")),
              Cell(nodes_text(r["nodes"])),
              Cell(r["incident_start_ts"].astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")),
              Cell(r["drain_start_ts"].astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")
                   if isinstance(r["drain_start_ts"], datetime) else MISSING),
              Cell(truncate(r["drain_reason"], 60) if r["drain_reason"] else MISSING, title=r["drain_reason"] or None),
              Cell(repair_hours(r["open_hours"])),
              Cell("still open at the end of the data" if r["repair_state"] == "ongoing" else
                   f"back in service {r['repaired_ts'].astimezone(timezone.utc).strftime('%Y-%m-%d %H:%M')}")]
             for r in open_rows],
            caption=f"Hardware incidents not yet repaired at the end of the window ({at}: the end of its last day, "
                    "or the data's last moment if earlier), oldest first. Open for = that moment − first evidence.",
        ))
    return sec


SECTION = SectionSpec("repairs", "Time to repair by component class", build)
