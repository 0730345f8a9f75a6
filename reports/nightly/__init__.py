"""The nightly SRE report: one self-contained HTML page plus a Markdown summary, built from the
ordered section list :data:`~gpusre.reports.nightly.report.NIGHTLY_SECTIONS`."""

from gpusre.reports.kit.section import ReportPaths
from gpusre.reports.nightly.report import NIGHTLY_SECTIONS, build_nightly_context, render_nightly_report

__all__ = ["NIGHTLY_SECTIONS", "ReportPaths", "build_nightly_context", "render_nightly_report"]
