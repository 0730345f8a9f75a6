"""The SLO review report: SLO status and error budgets, MTBF, failure rates, job MTTF, ETTR, goodput
and top incidents over a window of UTC days, built from the section list
:data:`~gpusre.reports.slo.report.SLO_SECTIONS`."""

from gpusre.reports.slo.report import SLO_SECTIONS, build_slo_context, render_slo_report
from gpusre.reports.slo.window import DEFAULT_WINDOW_DAYS, default_window

__all__ = ["DEFAULT_WINDOW_DAYS", "SLO_SECTIONS", "build_slo_context", "default_window", "render_slo_report"]
