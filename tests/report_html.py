"""Reading rendered HTML reports in tests: one section's inner HTML, and its visible text."""

from __future__ import annotations

import html as htmllib
import re


def visible_text(fragment: str) -> str:
    """Visible text: no SVG, no tags, entities decoded, no-break spaces as spaces, whitespace collapsed."""
    text = re.sub(r"<[^>]+>", " ", re.sub(r"<svg.*?</svg>", " ", fragment, flags=re.S))
    return re.sub(r"\s+", " ", htmllib.unescape(text).replace("\u00a0", " ")).strip()


def section(page: str, key: str) -> str:
    """Inner HTML of ``<section id="key">``; fails the test when the section is missing."""
    m = re.search(rf'<section id="{re.escape(key)}">(.*?)</section>', page, flags=re.S)
    assert m, f"section {key} missing"
    return m.group(1)
