"""Rendering a report: the Jinja2 environments (HTML with autoescape, Markdown with every expression
escaped), the filters the base templates use, and the atomic write of the two files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from gpusre.reports.kit.formatting import md_escape
from gpusre.reports.kit.section import ReportPaths

__all__ = ["svg", "nbsp", "code_markup", "environment", "write_report"]


def svg(svg: str) -> Markup:
    """Mark chart SVG as safe. Only SVG produced by ``charts.figure_to_svg`` reaches here: labels
    sanitised, active content refused."""
    return Markup(svg)


_UNIT_SPACE = re.compile(r"(?<=\d) (?=%|pp\b|h\b|min\b|d\b)|(?<=\bp) (?=[<=])|(?<=[<=]) (?=\d)")


def nbsp(text: str) -> str:
    """Glue numbers to their unit ('41.2 %') so a sentence never wraps between them."""
    return _UNIT_SPACE.sub("\u00a0", text)


_BACKTICKS = re.compile(r"`([^`]+)`")


def code_markup(text: str) -> Markup:
    """Escape ``text``, then show `backticked` parts (commands, paths) as code."""
    return Markup(_BACKTICKS.sub(r"<code>\1</code>", str(escape(text))))


def environment(markdown: bool) -> Environment:
    """The Jinja2 environment for the report templates (``reports/templates``)."""
    if markdown:
        # Every {{ expression }} is escaped for Markdown; literal template text is not.
        return Environment(loader=PackageLoader("gpusre.reports", "templates"), autoescape=False,
                           finalize=md_escape, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                           keep_trailing_newline=True)
    env = Environment(loader=PackageLoader("gpusre.reports", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["nbsp"] = nbsp
    env.filters["code"] = code_markup
    return env


def write_report(out_dir: Path, stem: str, template: str, ctx: dict[str, Any]) -> ReportPaths:
    """Render ``<template>.html.j2`` and ``<template>.md.j2`` with ``ctx`` to ``out_dir/stem.html``
    and ``.md``. Each file is written then renamed, so a mail job never sees a half-written report."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(html=out_dir / f"{stem}.html", markdown=out_dir / f"{stem}.md")
    html = environment(markdown=False).get_template(f"{template}.html.j2").render(**ctx)
    md = environment(markdown=True).get_template(f"{template}.md.j2").render(**ctx)
    for path, text in ((paths.html, html), (paths.markdown, md)):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return paths
