"""The SLO review as an ordered list of sections over a window of UTC days, and its entry points.

Adding a section: write ``sections/<name>.py`` with ``build(con, window) -> Section`` and
``SECTION = SectionSpec(key, title, build)``, then add it to :data:`SLO_SECTIONS`.
"""

from __future__ import annotations

import logging
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb

from gpusre.reports.coverage import coverage_warnings
from gpusre.reports.kit import zone
from gpusre.reports.kit.formatting import fmt_date, truncate
from gpusre.reports.kit.render import write_report
from gpusre.reports.kit.section import ReportPaths, SectionSpec, build_sections
from gpusre.reports.nightly.meta import check_inside_data
from gpusre.reports.slo.sections import (definitions, ettr, failure_rate, goodput, incidents, mtbf, mttf, repairs,
                                          status, summary)
from gpusre.reports.slo.window import DEFAULT_WINDOW_DAYS, SloWindow, default_window

log = logging.getLogger(__name__)


#: The SLO review, in reading order.
SLO_SECTIONS: tuple[SectionSpec[SloWindow], ...] = (
    summary.SECTION,
    status.SECTION,
    mtbf.SECTION,
    failure_rate.SECTION,
    repairs.SECTION,  # how long the failures above kept nodes out, and what is still open
    mttf.SECTION,
    ettr.SECTION,
    goodput.SECTION,
    incidents.SECTION,
    definitions.SECTION,
)


def build_slo_context(con: duckdb.DuckDBPyConnection, date_from: date, date_to: date, *, warehouse_label: str = "",
                      generated_at: datetime | None = None, cluster_timezone: str | None = None) -> dict[str, Any]:
    """Query the warehouse and build everything the SLO templates need: ``meta``, ``warnings``, ``sections``
    (list of kit :class:`~gpusre.reports.kit.section.Section`, in order) and ``by_key``. ``cluster_timezone``
    (cluster.yaml's ``timezone``, else :func:`~gpusre.reports.kit.zone.cluster_timezone`) is named in the
    header when it is not UTC, with the window's DST-change days."""
    if date_from > date_to:
        raise ValueError(f"the window starts after it ends: {date_from} > {date_to}")
    w = SloWindow(date_from, date_to, generated_at or datetime.now(timezone.utc), warehouse_label)
    sections = build_sections(con, w, SLO_SECTIONS, "SLO")
    try:
        warnings = coverage_warnings(con, w.start, w.end)
    except duckdb.Error as exc:
        log.warning("SLO report coverage warnings failed: %s", exc)
        warnings = [f"Input coverage could not be checked: {truncate(exc, 200)}"]
    return {
        "meta": {
            "date_from": fmt_date(w.start),
            "date_to": fmt_date(w.end),
            "window": w.text,
            "days": w.days,
            "months": ", ".join(w.months),
            "generated_at": w.generated_at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "warehouse": warehouse_label or "(in-memory or unnamed warehouse)",
            "zone_note": zone.zone_note(zone.cluster_timezone(cluster_timezone, con),
                                        [w.start + timedelta(days=i) for i in range(w.days)]),
        },
        "warnings": warnings,
        "sections": sections,
        "by_key": {s.key: s for s in sections},
    }


def render_slo_report(con: duckdb.DuckDBPyConnection, out_dir: Path, date_from: date | None = None,
                      date_to: date | None = None, warehouse_label: str = "",
                      cluster_timezone: str | None = None) -> ReportPaths:
    """Render the SLO review report for the UTC days ``[date_from, date_to]`` to
    ``out_dir/slo-<from>_<to>.html`` and ``.md``.

    Missing dates default to :func:`default_window` (30 days ending on the latest complete day with SLO
    data); only ``date_to`` given: the 30 days ending on it; only ``date_from``: from it to that latest day. Raises ``ValueError`` when ``date_from`` is
    after ``date_to``, :class:`~gpusre.reports.nightly.meta.OutsideDataError` when no day of the window has
    data (:func:`~gpusre.reports.nightly.meta.check_inside_data`). Missing or empty marts yield "No data yet" in their section. ``cluster_timezone``
    (cluster.yaml's ``timezone``) is named in the header when it is not UTC.
    """
    if date_from is None or date_to is None:
        d_from, d_to = default_window(con)
        if date_from is None and date_to is None:
            date_from, date_to = d_from, d_to
        elif date_from is None:
            date_from = date_to - timedelta(days=DEFAULT_WINDOW_DAYS - 1)  # type: ignore[operator]
        else:  # from a given day up to the latest data (a month on when the data ends before it)
            date_to = d_to if d_to >= date_from else date_from + timedelta(days=DEFAULT_WINDOW_DAYS - 1)
    # A window with no day of data would read as a perfect month ("Hardware incidents: 0"): refused, as the
    # nightly refuses such a day; a window that overlaps the data in part is reported with coverage warnings.
    if date_from <= date_to:  # type: ignore[operator]
        check_inside_data(con, date_from, date_to)  # type: ignore[arg-type]
    ctx = build_slo_context(con, date_from, date_to, warehouse_label=warehouse_label,  # type: ignore[arg-type]
                            cluster_timezone=cluster_timezone)
    return write_report(out_dir, f"slo-{ctx['meta']['date_from']}_{ctx['meta']['date_to']}", "slo", ctx)
