"""Nightly report section "Health checks: precision and missed detections" (``#health_checks``).

Reads marts.health_check_misses, marts.health_check_quality; formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.reports.incident.terms import NOT_LOADED, UNKNOWN_NO_ACCOUNTING, missing_sources, nodes_phrase
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_int,
    fmt_pct,
    nodes_text,
    utc_date,
)
from gpusre.reports.kit.labels import component_label
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.nightly.meta import NightlyMeta


def _or_unknown(text: str, value: object) -> str:
    """A mart value, or 'unknown' where the mart has NULL (no Slurm accounting)."""
    return "unknown" if value is None else text


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("health_checks", "Health checks: precision and missed detections")
    reason = table_status(con, "marts.health_check_quality")
    if reason:
        sec.no_data = (reason + (f" {NOT_LOADED['syslog'].capitalize()} were loaded (landing/syslog/): health "
                                 "checks are read from the node logs, so whether any failed is unknown."
                                 if "syslog" in missing_sources(con) else ""))
        return sec
    rows = query_rows(con, """SELECT check_name, component, firings, events, nodes, preceded_job_failure, precision,
                                last_ts
                         FROM marts.health_check_quality ORDER BY firings DESC, check_name""")
    if not rows:
        sec.no_data = "No failed health check in the node logs (LBNL NHC 'Health check failed' lines)."
        return sec
    misses = (query_rows(con, """SELECT job_id, state, end_ts, n_gpus, nodes, component, rule
                            FROM marts.health_check_misses ORDER BY end_ts DESC, job_id LIMIT 15""")
              if table_status(con, "marts.health_check_misses") is None else [])
    n_miss = (query_rows(con, "SELECT count(*) AS n FROM marts.health_check_misses")[0]["n"]
              if table_status(con, "marts.health_check_misses") is None else 0)
    fired = sum(r["firings"] for r in rows)
    # Without Slurm accounting the mart has no job outcomes: precision is NULL, and so are missed detections.
    unknown = all(r["preceded_job_failure"] is None for r in rows)
    hits = sum(r["preceded_job_failure"] or 0 for r in rows)
    worst = min(rows, key=lambda r: (r["precision"] if r["precision"] is not None else 2.0, -r["firings"]))
    if unknown:
        sec.lead = (f"{fmt_int(len(rows))} health check{'s' if len(rows) != 1 else ''} fired {fmt_int(fired)} times; "
                    f"whether a firing came with a job failure, and so each check's precision, is "
                    f"{UNKNOWN_NO_ACCOUNTING} (precision needs job outcomes); missed detections (infrastructure "
                    "failures no check saw) are unknown too.")
    else:
        sec.lead = (f"{fmt_int(len(rows))} health check{'s' if len(rows) != 1 else ''} fired {fmt_int(fired)} times; "
                    f"{fmt_int(hits)} firings ({fmt_pct(hits / fired if fired else None)}) came with a job failure on "
                    f"the node; the least precise, {worst['check_name']}, preceded a failure in "
                    f"{fmt_pct(worst['precision'])} of its {fmt_int(worst['firings'])} firings. "
                    f"{fmt_int(n_miss)} infrastructure-attributed job failure{'s' if n_miss != 1 else ''} had no "
                    "failing check on their nodes (missed detections).")
    sec.add(Table(
        [Column("Check"), Column("Component"), Column("Firings", True), Column("Events", True), Column("Nodes", True),
         Column("Preceded a failure", True), Column("Precision", True), Column("Last fired", nowrap=True)],
        [[Cell(r["check_name"]), Cell(component_label(r["component"])), Cell(fmt_int(r["firings"])),
          Cell(fmt_int(r["events"])), Cell(fmt_int(r["nodes"])),
          Cell(_or_unknown(fmt_int(r["preceded_job_failure"]), r["preceded_job_failure"])),
          Cell(_or_unknown(fmt_pct(r["precision"]), r["precision"])), Cell(fmt_date(utc_date(r["last_ts"])))]
         for r in rows],
        caption="marts.health_check_quality: a firing is one episode of a check on a node (runs at most 30 min apart); it "
                "preceded a failure when a job on the node ended FAILED/NODE_FAIL/REQUEUED from 5 min before to "
                "10 min after it. A check that fires often and rarely precedes a failure drains healthy nodes."
                + (f" Preceded a failure and precision: {UNKNOWN_NO_ACCOUNTING}." if unknown else ""),
    ))
    if misses:
        sec.add(Table(
            [Column("Job"), Column("State"), Column("End (UTC)", nowrap=True), Column("GPUs", True), Column("Nodes"),
             Column("Component"), Column("Attribution rule")],
            [[Cell(r["job_id"]), Cell(r["state"]), Cell(str(r["end_ts"])[:19]), Cell(fmt_int(r["n_gpus"])),
              Cell(nodes_phrase(r["nodes"], 40), mono=True, title=nodes_text(r["nodes"])),
              Cell(component_label(r["component"])),
              Cell(r["rule"] or MISSING)] for r in misses],
            caption="marts.health_check_misses (latest 15): infrastructure-attributed jobs with no failing check on "
                    "their nodes from 10 min before to 30 min after their end.",
        ))
    return sec


SECTION = SectionSpec("health_checks", "Health checks: precision and missed detections", build)
