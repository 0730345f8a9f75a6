"""The report kit's building blocks: a section, the tables and charts it shows, and the spec that
puts a section into a report.

A report is an ordered tuple of :class:`SectionSpec`; :func:`build_sections` runs each spec's
``build(con, ctx)`` and turns a query error into a note in that section only, so one mart with an
unexpected shape never costs the SREs the whole report. Sections read marts and format them; they
compute nothing (``tests/test_report_layer.py`` greps report code for SQL aggregation).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import duckdb
from markupsafe import Markup

from gpusre.reports.kit.formatting import truncate

__all__ = ["NO_DATA", "ReportPaths", "Column", "Cell", "Table", "Chart", "Section", "SectionSpec", "build_sections"]

log = logging.getLogger(__name__)

NO_DATA = "No data yet"


@dataclass(frozen=True)
class ReportPaths:
    """Where a report was written: the HTML page and its Markdown summary."""

    html: Path
    markdown: Path


@dataclass(frozen=True)
class Column:
    """A table column; numeric columns are right-aligned."""

    label: str
    num: bool = False
    nowrap: bool = False


@dataclass(frozen=True)
class Cell:
    """A formatted table cell, optionally with a colour swatch (state / bucket) or monospace text."""

    text: str
    swatch: str | None = None
    mono: bool = False
    title: str | None = None  # full text when ``text`` was truncated
    sub: str | None = None  # a second, smaller line (HTML) / appended after a dash (Markdown)


@dataclass(frozen=True)
class Table:
    """A formatted table: column headers and rows of cells, plus an optional caption. The base
    template puts every table in a horizontally scrolling wrapper, so a wide table never widens
    the page and keeps its caption."""

    columns: Sequence[Column]
    rows: Sequence[Sequence[Cell]]
    caption: str = ""


@dataclass(frozen=True)
class Chart:
    """A chart (trusted SVG from :mod:`gpusre.reports.kit.charts`) with an optional one-sentence takeaway."""

    svg: Markup
    takeaway: str = ""


@dataclass
class Section:
    """One rendered report section: a lead sentence computed from the marts, then charts and
    tables in order, and notes. ``template`` names the macro of ``base.html.j2`` / ``base.md.j2``
    that renders it (``section``; ``cards`` and ``findings`` for the nightly headline blocks)."""

    key: str
    title: str
    lead: str = ""
    scope: str = ""  # what the numbers cover: the window, the whole record, ...
    items: list[Chart | Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    no_data: str | None = None  # set when the section has nothing to show, with the reason
    side_by_side: bool = False  # lay consecutive tables out in two columns
    template: str = "section"
    cards: list[dict[str, str]] = field(default_factory=list)  # KPI cards: label, value, sub, tone
    entries: list[dict[str, Any]] = field(default_factory=list)  # list blocks (findings)
    facts: dict[str, str] = field(default_factory=dict)  # values other parts of the page quote (provenance)

    def add(self, item: Chart | Table | Markup) -> None:
        """Append a chart (SVG markup or :class:`Chart`) or a table, in reading order."""
        self.items.append(Chart(item) if isinstance(item, Markup) else item)

    @property
    def charts(self) -> list[Chart]:
        return [i for i in self.items if isinstance(i, Chart)]

    @property
    def tables(self) -> list[Table]:
        return [i for i in self.items if isinstance(i, Table)]

    @property
    def takeaways(self) -> list[str]:
        return [i.takeaway for i in self.charts if i.takeaway]


C = TypeVar("C")


@dataclass(frozen=True)
class SectionSpec(Generic[C]):
    """One entry of a report's section list: the anchor ``key``, the ``title`` shown when the
    section could not be built, and ``build(con, ctx)`` returning the :class:`Section`.
    ``ctx`` is the report's own context (the nightly day, the SLO window, the incident)."""

    key: str
    title: str
    build: Callable[[duckdb.DuckDBPyConnection, C], Section]


def build_sections(con: duckdb.DuckDBPyConnection, ctx: C, specs: Sequence[SectionSpec[C]],
                   report: str, errors: tuple[type[Exception], ...] = (duckdb.Error,)) -> list[Section]:
    """Build every section of ``specs`` in order; an exception of ``errors`` in one (a DuckDB error by
    default) becomes that section's note."""
    out = []
    for spec in specs:
        try:
            out.append(spec.build(con, ctx))
        except errors as exc:
            log.warning("%s report section %s failed: %s", report, spec.key, exc)
            out.append(Section(spec.key, spec.title,
                               no_data=f"Could not be computed: {type(exc).__name__}: {truncate(exc, 300)}"))
    return out
