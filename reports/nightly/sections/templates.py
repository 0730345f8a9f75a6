"""Nightly report section "New log templates" (``#templates``).

Reads core.log_templates; formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_int,
    plural,
    truncate,
)
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status, utc_day_sql
from gpusre.reports.nightly.meta import NightlyMeta

_TOP_N_TEMPLATES = 15


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("templates", "New log templates")
    reason = table_status(con, "core.log_templates")
    if reason:
        sec.no_data = reason
        return sec
    cols = """template_id, template, example, lines, nodes, first_seen_ts, has_event, kind"""
    # "New" means first seen in the logs on the report day; when no template was, fall back to those the
    # warehouse first ingested on its latest ingestion day (late logs, or a first load).
    basis = f"first seen on {d}"
    where, params = f"{utc_day_sql('first_seen_ts')} = ?", [meta.report_date]
    n = scalar(con, f"SELECT count(*) FROM core.log_templates WHERE {where}", params)
    total = scalar(con, "SELECT count(*) FROM core.log_templates")
    if not n:
        days = query_rows(con, f"""SELECT min({utc_day_sql('first_ingested_at')}) AS first,
                                     max({utc_day_sql('first_ingested_at')}) AS last FROM core.log_templates""")[0]
        if days["last"] is None or days["first"] == days["last"]:
            # Everything came with one load: "new" would just list the most common lines.
            sec.lead = (f"No node-log template was first seen on {d}"
                        + (f"; all {fmt_int(total)} templates came with the first load of node logs "
                           f"({fmt_date(days['last'])}), so none is new yet." if days["last"] else "."))
            return sec
        last = days["last"]
        where, params = f"{utc_day_sql('first_ingested_at')} = ?", [last]
        n = scalar(con, f"SELECT count(*) FROM core.log_templates WHERE {where}", params)
        basis = f"first ingested on {fmt_date(last)}, the latest ingestion day (none was first seen on {d})"
    rows = query_rows(con, f"""SELECT {cols} FROM core.log_templates WHERE {where}
                          ORDER BY lines DESC NULLS LAST, template_id LIMIT {_TOP_N_TEMPLATES}""", params)
    uncat = scalar(con, f"SELECT count(*) FROM core.log_templates WHERE {where} AND NOT coalesce(has_event, false)",
                    params)
    sec.lead = (f"{fmt_int(n)} of {plural(total, 'template')} {'was' if n == 1 else 'were'} {basis}; "
                + (f"{fmt_int(uncat)} of them {'matches' if uncat == 1 else 'match'} no catalogued event: check "
                   f"whether {'it is' if uncat == 1 else 'they are'} a failure mode the event catalog is missing."
                   if uncat else "every one of them is a catalogued event kind."))
    sec.add(Table(
        [Column("First seen", nowrap=True), Column("Lines", True), Column("Nodes", True), Column("Event kind"),
         Column("Template")],
        [[Cell(fmt_date(r["first_seen_ts"])), Cell(fmt_int(r["lines"])), Cell(fmt_int(r["nodes"])),
          Cell(r["kind"] or ("uncatalogued" if not r["has_event"] else MISSING)),
          Cell(truncate(r["template"] if r["template"] is not None else r["example"], 110), mono=True,
               title=r["template"] if r["template"] is not None else r["example"])] for r in rows],
        caption=f"Top {len(rows)} of {fmt_int(n)} new templates by lines; <*> marks a masked variable.",
    ))
    return sec


SECTION = SectionSpec("templates", "New log templates", build)
