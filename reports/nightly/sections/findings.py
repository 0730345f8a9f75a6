"""Nightly report section "Findings" (``#findings``).

Reads marts.findings; formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_int,
)
from gpusre.reports.kit.section import Section, SectionSpec
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.nightly.meta import NightlyMeta


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    """The operator findings of marts.findings, each marked supported / not / undecided."""
    sec = Section("findings", "Findings", template="findings")
    reason = table_status(con, "marts.findings")
    if reason:
        sec.no_data = reason
        return sec
    rows = query_rows(con, "SELECT finding_id, title, statement, metric, value, supported FROM marts.findings "
                      "ORDER BY finding_id")
    n_sup = sum(1 for r in rows if r["supported"] is True)
    n_unknown = sum(1 for r in rows if r["supported"] is None)
    sec.lead = (f"{n_sup} of {len(rows)} operator findings are supported by this period's data"
                + (f"; the data cannot decide {n_unknown}." if n_unknown else "."))
    items = []
    for r in rows:
        v = r["value"]
        if isinstance(v, (int, float)) and v is not None:
            value = fmt_int(v) if float(v).is_integer() and abs(v) >= 10 else f"{float(v):,.4g}"
        else:
            value = MISSING if v is None else str(v)
        items.append({
            "id": str(r["finding_id"]),
            "title": r["title"] or "",
            "statement": r["statement"] or "",
            "metric": r["metric"] or "",
            "value": value,
            "supported": r["supported"],  # NULL: the data cannot tell
            "mark": "✓" if r["supported"] else ("?" if r["supported"] is None else "–"),
        })
    sec.entries = items
    return sec


SECTION = SectionSpec("findings", "Findings", build)
