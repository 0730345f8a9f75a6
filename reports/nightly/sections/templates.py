"""Nightly report section "New log templates" (``#templates``).

Reads core.log_templates and marts.uncatalogued_codes (Xid / SXid codes the event catalog does not
know, seen on the report day); formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_int,
    nodes_text,
    plural,
    truncate,
    utc_date,
    utc_hm,
)
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status, utc_day_sql
from gpusre.reports.nightly.meta import NightlyMeta

_TOP_N_TEMPLATES = 15
#: Uncatalogued Xid / SXid codes named one by one; the rest are counted.
_TOP_N_CODES = 5
#: Where an SRE reads what a code means, by catalog.
_CODE_DOCS = {"xid": ("Xid", "NVIDIA's Xid documentation (Xid Errors, docs.nvidia.com/deploy/xid-errors)"),
              "sxid": ("SXid", "the SXid list of NVIDIA's Fabric Manager User Guide")}


def uncatalogued_notes(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> list[str]:
    """One sentence per Xid / SXid code seen on the report day that the event catalog does not list
    (marts.uncatalogued_codes; none when the mart is not built), the most frequent first, at most
    :data:`_TOP_N_CODES` and a count of the rest."""
    if table_status(con, "marts.uncatalogued_codes"):
        return []
    rows = query_rows(con, """SELECT catalog, code, events, nodes, first_ts, last_ts, first_seen_ts, catalog_file
                              FROM marts.uncatalogued_codes WHERE day = ?
                              ORDER BY events DESC, catalog, code""", [meta.report_date])
    notes = []
    for r in rows[:_TOP_N_CODES]:
        name, docs = _CODE_DOCS.get(r["catalog"], (r["catalog"], "NVIDIA's documentation"))
        when = f"{fmt_date(meta.report_date)} {utc_hm(r['first_ts'])}"
        if r["events"] != 1:
            when += f"–{utc_hm(r['last_ts'])} UTC"
        else:
            when += " UTC"
        earlier = (f"; first seen {fmt_date(utc_date(r['first_seen_ts']))}"
                   if r["first_seen_ts"] is not None and r["first_seen_ts"] < r["first_ts"] else "")
        notes.append(f"{name} {r['code']} ({plural(r['events'], 'event')} on {nodes_text(r['nodes'])}, {when}{earlier}) "
                     f"is not in the event catalog, so its events are classed 'unknown' and count as no failure "
                     f"evidence: read {docs} and add it to {r['catalog_file']}.")
    if len(rows) > _TOP_N_CODES:
        rest = len(rows) - _TOP_N_CODES
        notes.append(f"{plural(rest, 'more uncatalogued code')} seen on {fmt_date(meta.report_date)} "
                     f"(marts.uncatalogued_codes).")
    return notes


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("templates", "New log templates")
    # Independent of the templates: a new Xid must be visible even on a night with no new template.
    sec.notes.extend(uncatalogued_notes(con, meta))
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
                   if uncat else "every one of them is a catalogued event kind.")
                + (" The event catalog does not know an Xid / SXid code seen that day: see the note below."
                   if sec.notes else ""))
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
