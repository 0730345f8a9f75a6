"""The nightly report as an ordered list of sections, and its entry points.

Adding a section: write ``sections/<name>.py`` with ``build(con, meta) -> Section`` and
``SECTION = SectionSpec(key, title, build)``, then add it to :data:`NIGHTLY_SECTIONS`.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb

from gpusre.models.vocabulary import FAILED_STATES
from gpusre.reports.coverage import GAP_WARN_DAYS, coverage_warnings, later_partial_days
from gpusre.reports.kit import zone
from gpusre.reports.kit.formatting import MISSING, fmt_date, period_text, truncate
from gpusre.reports.kit.render import write_report
from gpusre.reports.kit.section import ReportPaths, SectionSpec, build_sections
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status
from gpusre.reports.nightly.meta import (
    SNAPSHOT_SECTIONS,
    NightlyMeta,
    day_source_warnings,
    later_data_note,
    latest_complete_log_day,
    latest_record_day,
    nightly_report_day,
    unbounded_note,
)
from gpusre.reports.nightly.sections import (
    alert_flood,
    alert_hygiene,
    alert_incidents,
    attribution,
    availability,
    drain_reasons,
    failures,
    findings,
    headline,
    health_checks,
    incidents,
    last_night,
    out_of_service,
    published,
    quality,
    quantiles,
    repairs,
    shift,
    sizes,
    states,
    suspects,
    taxonomy,
    templates,
    top_consumers,
    utilization,
)

__all__ = ["NIGHTLY_SECTIONS", "build_nightly_context", "render_nightly_report"]

#: The nightly report, in reading order: the headline cards, then last night — what happened (failures,
#: incidents, alerts) and what to do — and only then the period-wide context (findings, workload shape,
#: the published comparison, top users), availability and data hygiene. A meeting reads the first screen.
NIGHTLY_SECTIONS: tuple[SectionSpec[NightlyMeta], ...] = (
    headline.SECTION,
    last_night.SECTION,
    failures.SECTION,
    attribution.SECTION,
    incidents.SECTION,
    suspects.SECTION,
    alert_incidents.SECTION,
    findings.SECTION,
    states.SECTION,
    sizes.SECTION,
    quantiles.RUNTIME,
    shift.SECTION,
    utilization.SECTION,
    quantiles.QUEUE,
    published.SECTION,
    top_consumers.SECTION,
    taxonomy.SECTION,
    availability.SECTION,
    out_of_service.SECTION,
    repairs.SECTION,
    drain_reasons.SECTION,
    health_checks.SECTION,
    alert_flood.SECTION,
    alert_hygiene.SECTION,
    templates.SECTION,
    quality.SECTION,
)


def build_nightly_context(
    con: duckdb.DuckDBPyConnection,
    *,
    report_date: date | None = None,
    warehouse_label: str = "",
    generated_at: datetime | None = None,
    cluster_timezone: str | None = None,
) -> dict[str, Any]:
    """Query the warehouse and build everything the nightly templates need.

    ``cluster_timezone`` is cluster.yaml's ``timezone`` (else :func:`~gpusre.reports.kit.zone.cluster_timezone`
    looks for it): times stay in UTC, and the header names the zone when it is not UTC.

    Returns a dict with ``meta`` (report date, period, provenance strings, ``zone_note``), ``warnings``,
    ``sections`` (list of :class:`~gpusre.reports.kit.section.Section`, in report order) and
    ``by_key``. Exposed so callers (e.g. an asset) can attach the headline numbers as metadata.
    """
    period = query_rows(con, "SELECT min(end_day) AS a, max(end_day) AS b FROM core.jobs")[0]
    defaulted = report_date is None
    if report_date is None:
        report_date = (nightly_report_day(con) or period["b"] or latest_complete_log_day(con)
                       or latest_record_day(con) or datetime.now(timezone.utc).date())
    # The period ends with the report day when a complete day follows it: a re-render for a past night
    # shows what that night showed. A trailing partial day (the dump's 00:05 sliver) is no later night: the
    # night's own report counted it, and so does its re-render.
    last = period["b"]
    if last is not None and last > report_date and _complete_day_after(con, report_date):
        last = report_date
    first = period["a"] if period["a"] is None or last is None or period["a"] <= last else None
    meta = NightlyMeta(report_date, first, last if first is not None else None,
                       generated_at or datetime.now(timezone.utc), warehouse_label, period["b"])
    sections = build_sections(con, meta, NIGHTLY_SECTIONS, "nightly")
    for sec in sections:
        # A past night's re-render: the snapshot marts run to the data's end, said rather than mixed in.
        note = unbounded_note(meta, SNAPSHOT_SECTIONS.get(sec.key, ""))
        if note and sec.key in SNAPSHOT_SECTIONS and not sec.no_data:
            sec.notes.append(note.strip())
    # Said first, never an older day re-rendered in silence: why the report day is not the last day with
    # data (the default day only: an explicit --date is the reader's choice). Then the sources with nothing
    # for the report day: their figures are unknown, and every section would read as a quiet night.
    later = (later_partial_days(con, meta.report_date) or later_data_note(con, meta.report_date)) if defaulted else []
    warnings = later + day_source_warnings(con, meta.report_date)
    try:
        warnings += coverage_warnings(con, meta.report_date, meta.report_date,
                                     gaps_since=meta.report_date - timedelta(days=GAP_WARN_DAYS - 1))
    except duckdb.Error as exc:
        warnings += [f"Input coverage could not be checked: {truncate(exc, 200)}"]
    by_key = {s.key: s for s in sections}
    prov = by_key["quality"].facts
    return {
        "meta": {
            "report_date": fmt_date(meta.report_date),
            "period": period_text(fmt_date(meta.period_first) if meta.period_first else None,
                                  fmt_date(meta.period_last) if meta.period_last else None),
            "generated_at": meta.generated_at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "warehouse": warehouse_label or "(in-memory or unnamed warehouse)",
            "files": prov.get("files", MISSING),
            "rows_read": prov.get("rows_read", MISSING),
            "rejects": prov.get("rejects", MISSING),
            "failure_states": ", ".join(FAILED_STATES),
            "zone_note": zone.zone_note(zone.cluster_timezone(cluster_timezone, con), [meta.report_date]),
        },
        "warnings": warnings,
        "sections": sections,
        "by_key": by_key,
    }


def _complete_day_after(con: duckdb.DuckDBPyConnection, day: date) -> bool:
    """Whether the data covers a complete UTC day after ``day`` (marts.day_coverage; without that mart, a
    job end day two or more days later — the day right after may be the dump's sliver)."""
    if table_status(con, "marts.day_coverage") is None:
        return bool(scalar(con, "SELECT count(*) FROM marts.day_coverage WHERE day > ? AND NOT partial", [day]))
    return bool(scalar(con, "SELECT count(*) FROM core.jobs WHERE end_day > ?", [day + timedelta(days=1)]))


def render_nightly_report(
    con: duckdb.DuckDBPyConnection,
    out_dir: Path,
    *,
    report_date: date | None = None,
    warehouse_label: str = "",
    cluster_timezone: str | None = None,
) -> ReportPaths:
    """Render the nightly report to ``out_dir/nightly-YYYY-MM-DD.html`` and ``.md``.

    ``report_date`` is "last night" (default: :func:`~gpusre.reports.nightly.meta.nightly_report_day`, the
    last UTC day Slurm accounting covers completely, or today in UTC for an empty warehouse); ``warehouse_label`` names the DuckDB file in the footer;
    ``cluster_timezone`` (cluster.yaml's ``timezone``) is named in the header when it is not UTC. Missing or
    empty marts yield "No data yet" in their section. Returns the two paths written.
    """
    ctx = build_nightly_context(con, report_date=report_date, warehouse_label=warehouse_label,
                                cluster_timezone=cluster_timezone)
    return write_report(out_dir, f"nightly-{ctx['meta']['report_date']}", "nightly", ctx)
