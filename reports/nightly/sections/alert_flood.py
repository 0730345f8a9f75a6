"""Nightly report section "Last night's alert flood" (``#alert_flood``).

Reads marts.alert_daily, marts.alert_floods; formats, computes nothing.

:func:`truncation_text` (also in "Alert incidents by size"): the webhook deliveries Alertmanager truncated
that day (``marts.alert_daily.truncated_deliveries`` / ``truncated_alerts``), without which a day's alert
counts read as complete."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import duckdb

from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_int,
    fmt_num,
    period_text,
    plural,
    ratio_text,
    span_hours,
    utc_hm,
)
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status, utc_day_sql
from gpusre.reports.nightly.meta import NightlyMeta, alert_history, alert_window, reason_text


def truncation_text(con: duckdb.DuckDBPyConnection, day: Any) -> str:
    """' Alertmanager truncated 2 webhook deliveries of D (...), dropping 14 alerts from the largest: ...' — or ''.

    From ``marts.alert_daily`` (a warehouse built before its truncation columns: ''). Alerts only those
    deliveries carried never arrived, so every alert count of the day is a lower bound; the mart's
    ``truncated_alerts`` is the most one delivery dropped (a group's firing and resolved notifications drop
    the same alerts), not a count of alerts missing."""
    rows = query_rows(con, "SELECT * FROM marts.alert_daily WHERE day = ?", [day])
    row = rows[0] if rows else {}
    cut, dropped = row.get("truncated_deliveries"), row.get("truncated_alerts")
    if not cut:
        return ""
    largest = " from the largest" if cut > 1 else ""
    return (f" Alertmanager truncated {plural(cut, 'webhook delivery', 'webhook deliveries')} of {fmt_date(day)} "
            f"(the receiver's max_alerts), dropping {plural(dropped, 'alert')}{largest}: alerts only "
            f"{'they' if cut > 1 else 'it'} carried never arrived, so that day's alert counts are lower bounds.")


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("alert_flood", f"Last night's alert flood ({d})")
    reason = alert_history(con) or table_status(con, "marts.alert_daily")
    if reason:
        sec.no_data = reason
        return sec
    first, last = alert_window(meta)
    rows = query_rows(con, """SELECT day, notifications, deliveries, alerts, incidents, compression_ratio, flood_episodes
                         FROM marts.alert_daily WHERE day BETWEEN ? AND ? ORDER BY day""", [first, last])
    span = query_rows(con, "SELECT min(day) AS a, max(day) AS b FROM marts.alert_daily")[0]
    if not rows:
        sec.no_data = (f"{NO_DATA}: marts.alert_daily has no rows for {fmt_date(first)} … {d} "
                       f"(the alerts cover {period_text(fmt_date(span['a']), fmt_date(span['b']))}).")
        return sec
    # A shorter alert history starts the chart at its first day; days after its last day stay "no data".
    first = max(first, rows[0]["day"])
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    by_day = {r["day"]: r for r in rows}
    window = period_text(fmt_date(days[0]), fmt_date(days[-1]))
    w_alerts = sum(r["alerts"] or 0 for r in rows)
    w_inc = sum(r["incidents"] or 0 for r in rows)
    w_ratio = w_alerts / w_inc if w_inc else None
    context = (f"the {plural(len(days), 'day')} {window} had {plural(w_alerts, 'alert')} in "
               f"{plural(w_inc, 'incident')}" + (f" ({ratio_text(w_ratio)} alerts per incident)" if w_ratio else ""))

    floods: list[dict[str, Any]] = []
    flood_status = table_status(con, "marts.alert_floods")
    if flood_status is None:
        floods = query_rows(con, f"""SELECT flood_id, start_ts, end_ts, n_buckets, n_alerts, peak_per_bucket,
                                       peak_rate_per_min, baseline, threshold, incidents, compression_ratio
                                FROM marts.alert_floods WHERE {utc_day_sql('start_ts')} = ?
                                ORDER BY start_ts, flood_id""", [meta.report_date])
    elif "has not been built" in flood_status:
        sec.notes.append(f"Flood episodes cannot be listed: {reason_text(flood_status)}.")

    night = by_day.get(meta.report_date)
    if night is None:
        lead = f"No alert data for {d} (the alerts end on {fmt_date(span['b'])}); {context}."
    elif not night["alerts"]:
        lead = f"No alert started on {d}; {context}."
    else:
        n_floods = night["flood_episodes"] or 0
        received = (f"{plural(night['notifications'], 'alert notification')} arrived"
                    + (f" in {plural(night['deliveries'], 'webhook delivery', 'webhook deliveries')}"
                       if night.get("deliveries") is not None else "")
                    if night["notifications"] is not None else "the notifications received are unknown")
        lead = (f"On {d}, {received}; {plural(night['alerts'], 'alert')} started and "
                f"{plural(night['incidents'], 'incident')} began"
                + (f", {ratio_text(night['compression_ratio'])} alerts per incident" if night["compression_ratio"] else "")
                + (f" ({ratio_text(w_ratio)} over the {len(days)} days {window})" if w_ratio else ""))
        if floods:
            big = max(floods, key=lambda r: (r["n_alerts"] or 0, -r["start_ts"].timestamp()))
            lead += (f"; {plural(len(floods), 'flood episode')} began, the largest at {utc_hm(big['start_ts'])} UTC "
                     f"with {plural(big['n_alerts'], 'alert')} (up to {fmt_num(big['peak_rate_per_min'])} a minute) "
                     f"in {plural(big['incidents'], 'incident')}.")
        elif n_floods:
            lead += f"; {plural(n_floods, 'flood episode')} began."
        else:
            lead += "; no flood episode."
        lead += truncation_text(con, meta.report_date)
    sec.lead = lead

    sec.add(svg(charts.alert_daily_chart(
        days, [by_day[x]["alerts"] if x in by_day else None for x in days],
        [by_day[x]["incidents"] if x in by_day else None for x in days],
        [by_day[x]["flood_episodes"] if x in by_day else None for x in days],
        f"Alerts and the incidents they form per day, {window}", highlight_day=meta.report_date)))

    if floods:
        def bucket_min(r: dict[str, Any]) -> float | None:
            if not r["n_buckets"] or r["start_ts"] is None or r["end_ts"] is None:
                return None
            return (r["end_ts"] - r["start_ts"]).total_seconds() / 60 / r["n_buckets"]

        bm = {bucket_min(r) for r in floods} - {None}
        per = f"per {fmt_num(bm.pop(), 0)} min" if len(bm) == 1 else "per bucket"  # bucket length: cluster.yaml
        sec.add(Table(
            [Column("Flood", nowrap=True), Column("Start (UTC)", nowrap=True), Column("Lasted", True),
             Column("Alerts", True), Column(f"Peak {per}", True), Column("Baseline → threshold", True),
             Column("Incidents", True), Column("Alerts per incident", True)],
            [[Cell(str(r["flood_id"]), mono=True), Cell(utc_hm(r["start_ts"]), title=fmt_date(r["start_ts"])),
              Cell(span_hours((r["end_ts"] - r["start_ts"]).total_seconds() / 3600)
                   if r["start_ts"] is not None and r["end_ts"] is not None else MISSING),
              Cell(fmt_int(r["n_alerts"])),
              Cell(f"{fmt_int(r['peak_per_bucket'])} ({fmt_num(r['peak_rate_per_min'])}/min)"),
              Cell(f"{fmt_num(r['baseline'])} → {fmt_num(r['threshold'])}"), Cell(fmt_int(r["incidents"])),
              Cell(ratio_text(r["compression_ratio"]))] for r in floods],
            caption=f"Flood episodes that began on {d}: alert arrivals {per} above a threshold over a robust baseline "
                    "of the previous 24 h (median + k × MAD, and at least a minimum count). Alerts per incident: how "
                    "many of its alerts the clustering folded into each incident.",
        ))
    recent = [by_day.get(x) for x in reversed(days)]
    sec.add(Table(
        [Column("Day"), Column("Notifications", True), Column("Alerts", True), Column("Incidents", True),
         Column("Alerts per incident", True), Column("Flood episodes", True)],
        [[Cell(fmt_date(x))] + ([Cell(fmt_int(r["notifications"])), Cell(fmt_int(r["alerts"])),
                                  Cell(fmt_int(r["incidents"])), Cell(ratio_text(r["compression_ratio"])),
                                  Cell(fmt_int(r["flood_episodes"]))] if r else [Cell(MISSING)] * 5)
         for x, r in zip(reversed(days), recent)],
        caption=f"{window}, newest first (UTC days). Notifications: alert entries of the webhook payloads received "
                "that day (every alert of every delivery: repeats, resolves and other receivers included; the day of "
                "the receiver's timestamp, else the date the file is named for), whatever day the alerts started; "
                "alerts: distinct alert occurrences that started that day; incidents: alert incidents that started "
                "that day.",
    ))
    return sec


SECTION = SectionSpec("alert_flood", "Last night's alert flood", build)
