"""Nightly report section "Data quality" (``#quality``).

Reads marts.data_freshness, marts.ingestion_by_source, marts.log_coverage_daily (stopped nodes, hosts outside the
node list), marts.alert_monitoring_gaps (alert rules that could not be evaluated), marts.fleet_coverage.timezone (the
cluster's zone, whose DST calendar dates the repeated hour), raw.ingested_files, raw.record_days, raw.rejects;
formats, computes nothing."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import duckdb

from gpusre.models.dst_calendar import repeated_hour_first_passes
from gpusre.reports.coverage import SOURCE_LABELS, ends_early, freshness_rows
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_duration,
    fmt_int,
    fmt_pct,
    plural,
    truncate,
)
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status, utc_day_sql
from gpusre.reports.kit.zone import cluster_timezone
from gpusre.reports.nightly.meta import NightlyMeta

_TOP_N_REJECTS = 20
#: Gone files the section names (the count covers them all).
_GONE_NAMES_SHOWN = 5


def _gone_note(con: duckdb.DuckDBPyConnection) -> str | None:
    """The paragraph on landing files loaded earlier and deleted since: their rows stay and count in
    every figure, so the reader is told (the run summary says the same)."""
    has_column = scalar(con, "SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'raw' "
                             "AND table_name = 'ingested_files' AND column_name = 'gone_since'")
    if not has_column:
        return None
    gone = query_rows(con, """SELECT source_file FROM raw.ingested_files
                              WHERE gone_since IS NOT NULL AND rows_loaded > 0 AND source_kind <> 'incidents'
                              ORDER BY gone_since DESC, source_file""")
    if not gone:
        return None
    names = [r["source_file"] for r in gone]
    shown = ", ".join(names[:_GONE_NAMES_SHOWN]) + (", ..." if len(names) > _GONE_NAMES_SHOWN else "")
    return (f"{plural(len(names), 'landing file')} loaded earlier "
            f"{'is' if len(names) == 1 else 'are'} gone from the landing directory; "
            f"{'its' if len(names) == 1 else 'their'} rows stay "
            f"(the lake is the archive) and count in this report: {shown}. To remove a wrong file's rows, "
            "see README, \"Landing directory\".")


#: Files with DST-guessed lines the section names.
_DST_NAMES_SHOWN = 5


def _dst_note(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> str | None:
    """The sentence on node-log lines that fell in the repeated hour of a DST fall-back with nothing in
    their file to place them (``raw.ingested_files.rows_dst_guessed``): read as the earlier instant, they
    may be an hour early, and the incidents they make with them. Said on the UTC day that hour's first
    pass (where the guess put them) lies on, for the files whose records that day reach into it
    (``raw.record_days``): a file covering a month is not named on its other days. The count is the
    file's (a file spanning two fall-backs counts both)."""
    has_column = scalar(con, "SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'raw' "
                             "AND table_name = 'ingested_files' AND column_name = 'rows_dst_guessed'")
    if not has_column or table_status(con, "raw.record_days"):
        return None
    passes = repeated_hour_first_passes(cluster_timezone(None, con), meta.report_date)
    if not passes:
        return None
    rows = query_rows(con, """SELECT f.source_file, f.rows_dst_guessed AS n FROM raw.ingested_files f
                              WHERE f.rows_dst_guessed > 0 AND EXISTS (
                                  SELECT 1 FROM raw.record_days d, (SELECT unnest(?::TIMESTAMPTZ[]) AS lo,
                                                                           unnest(?::TIMESTAMPTZ[]) AS hi) AS p
                                  WHERE d.source_file = f.source_file AND d.day = ?
                                    AND d.first_ts < p.hi AND d.last_ts >= p.lo)
                              ORDER BY f.rows_dst_guessed DESC, f.source_file""",
                      [[lo for lo, _ in passes], [hi for _, hi in passes], meta.report_date])
    if not rows:
        return None
    shown = ", ".join(f"{r['source_file']} ({fmt_int(r['n'])})" for r in rows[:_DST_NAMES_SHOWN])
    more = ", ..." if len(rows) > _DST_NAMES_SHOWN else ""
    return (f"{plural(len(rows), 'node-log file')} of {fmt_date(meta.report_date)} "
            f"{'has' if len(rows) == 1 else 'have'} lines in the hour the DST change repeated with nothing in "
            f"the file to say which pass: read as the first (daylight-time) pass, they may be 1 h early, and so "
            f"may incidents, detect and repair times built on them: {shown}{more} lines "
            "(raw.ingested_files.rows_dst_guessed).")


#: Hosts outside the node list the section names (the count covers them all).
_OUTSIDE_SHOWN = 5


def _outside_hosts_note(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> str | None:
    """The sentence on hosts outside cluster.yaml's node list that logged on the report day
    (``marts.log_coverage_daily.outside_hosts``): their lines are loaded under the host, not a node —
    often a node's address a relay printed, whose node then looks silent."""
    if table_status(con, "marts.log_coverage_daily") or not scalar(
            con, "SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'marts' "
                 "AND table_name = 'log_coverage_daily' AND column_name = 'outside_hosts'"):
        return None
    rows = query_rows(con, "SELECT n_outside_hosts, outside_hosts, n_silent_nodes, silent_nodes "
                           "FROM marts.log_coverage_daily WHERE day = ? AND n_outside_hosts > 0", [meta.report_date])
    if not rows:
        return None
    r = rows[0]
    hosts = r["outside_hosts"]
    shown = ", ".join(hosts[:_OUTSIDE_SHOWN]) + (", ..." if len(hosts) > _OUTSIDE_SHOWN else "")
    silent = (f" — {plural(r['n_silent_nodes'], 'node')} that ran jobs logged nothing that day "
              f"({truncate(', '.join(r['silent_nodes']), 60)})" if r["n_silent_nodes"] else "")
    one = r["n_outside_hosts"] == 1
    return (f"{plural(r['n_outside_hosts'], 'host')} outside cluster.yaml's node list logged on "
            f"{fmt_date(meta.report_date)}: {shown}. {'Its' if one else 'Their'} lines are loaded under the host "
            f"name, not a node ({'its' if one else 'their'} events and incidents too){silent}: add "
            f"{'it' if one else 'them'} to cluster.yaml node_aliases if {'it is a node' if one else 'they are nodes'} "
            "(marts.log_coverage_daily.outside_hosts).")


def _monitoring_gaps(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> tuple[str, Table] | None:
    """The alert rules that could not be evaluated on the report day (Grafana DatasourceNoData /
    DatasourceError: ``marts.alert_monitoring_gaps``): a fault they watch would have gone unalerted, so the
    reader is told beside the other input gaps."""
    if table_status(con, "marts.alert_monitoring_gaps"):
        return None
    rows = query_rows(con, f"""SELECT rule_name, gap_kind, start_ts, end_ts, ongoing, duration_s, reason
                               FROM marts.alert_monitoring_gaps
                               WHERE {utc_day_sql('start_ts')} <= ? AND {utc_day_sql('end_ts')} >= ?
                               ORDER BY start_ts, rule_name""", [meta.report_date, meta.report_date])
    if not rows:
        return None
    n = len({r["rule_name"] for r in rows})
    text = (f"{plural(n, 'alert rule')} could not be evaluated for part of {fmt_date(meta.report_date)} (Grafana "
            "DatasourceNoData / DatasourceError): the faults they watch would have gone unalerted.")
    table = Table(
        [Column("Rule"), Column("Kind"), Column("From"), Column("To"), Column("Duration", True), Column("Reason")],
        [[Cell(r["rule_name"] or MISSING), Cell(r["gap_kind"] or MISSING), Cell(fmt_date(r["start_ts"])),
          Cell("ongoing" if r["ongoing"] else fmt_date(r["end_ts"])),
          Cell(MISSING if r["duration_s"] is None else fmt_duration(r["duration_s"])),
          Cell(truncate(r["reason"] or MISSING, 80), title=r["reason"])] for r in rows],
        caption="Monitoring gaps: alert rules that were blind (marts.alert_monitoring_gaps, UTC).",
    )
    return text, table


def _freshness_table(rows: list[dict[str, Any]], meta: NightlyMeta) -> Table:
    def status(r: dict[str, Any]) -> str:
        if not r["records"]:
            return "no records"
        if not r["dense"]:
            return "sparse: not judged"
        return "ends early" if ends_early(r, meta.report_date) else "complete"

    def when(ts: datetime | None) -> str:
        return MISSING if ts is None else f"{ts.astimezone(timezone.utc):%Y-%m-%d %H:%M}"

    return Table(
        [Column("Source"), Column("Files", True), Column("Records", True), Column("First record", nowrap=True),
         Column("Last record", nowrap=True), Column("Days without records", True),
         Column(f"For {fmt_date(meta.report_date)}")],
        [[Cell(SOURCE_LABELS.get(r["source_kind"], r["source_kind"])), Cell(fmt_int(r["files"])),
          Cell(fmt_int(r["records"])), Cell(when(r["first_record_ts"]), mono=True),
          Cell(when(r["last_record_ts"]), mono=True),
          Cell(fmt_int(r["n_empty_days"]), title=", ".join(fmt_date(x) for x in (r["empty_days"] or [])[:60]) or None),
          Cell(status(r))] for r in rows],
        caption="Input freshness (UTC; marts.data_freshness). Dense sources record every few minutes, so a day "
                "without records is missing input; for alerts and node states it may be a quiet day.",
    )


def _stopped_table(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Table | None:
    """The report day's nodes whose log stopped while they still ran a job
    (``marts.log_coverage_daily.stopped_nodes``); None when there are none or the column is missing."""
    if table_status(con, "marts.log_coverage_daily") or not scalar(
            con, "SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'marts' "
                 "AND table_name = 'log_coverage_daily' AND column_name = 'stopped_nodes'"):
        return None
    rows = query_rows(con, "SELECT s.node, s.last_line_ts, s.job_id, s.held_until_ts FROM "
                           "(SELECT unnest(stopped_nodes) AS s FROM marts.log_coverage_daily WHERE day = ?) "
                           "ORDER BY s.node", [meta.report_date])
    if not rows:
        return None

    def when(ts: datetime) -> str:
        return f"{ts.astimezone(timezone.utc):%Y-%m-%d %H:%M}"

    return Table(
        [Column("Node"), Column("Last log line", nowrap=True), Column("Job"), Column("Job held it until", nowrap=True)],
        [[Cell(r["node"], mono=True), Cell(when(r["last_line_ts"]), mono=True), Cell(str(r["job_id"]), mono=True),
          Cell(when(r["held_until_ts"]), mono=True)] for r in rows],
        caption="Node logs that stopped part-way through the day while the node still ran a job (UTC; "
                "marts.log_coverage_daily): failures after the last line are unseen, so a job that failed there "
                "reads as the user's.",
    )


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("quality", "Data quality")
    reason = table_status(con, "marts.ingestion_by_source")
    rows = [] if reason else query_rows(con, "SELECT * FROM marts.ingestion_by_source")
    kinds = [r for r in rows if not r["source_kind"].startswith("(")]
    tot = next((r for r in rows if r["source_kind"] == "(all)"), None)
    n_rejects = scalar(con, "SELECT count(*) FROM raw.rejects") or 0
    # Line-0 rejects are whole files refused, counted as files rather than rows (marts.ingestion_by_source).
    n_refusals = scalar(con, "SELECT count(*) FROM raw.rejects WHERE line_no = 0") or 0
    prov = {"files": fmt_int(tot["files"] if tot else 0), "rows_read": fmt_int(tot["rows_read"] if tot else 0),
            "rejects": fmt_int(tot["rows_rejected"] if tot else 0)}
    sec.facts = prov
    if tot is None and not n_rejects:
        sec.no_data = f"{NO_DATA}: no files have been ingested (raw.ingested_files is empty)."
        return sec
    if tot is not None:
        sec.lead = (f"{plural(tot['files'], 'file')} ingested: {fmt_int(tot['rows_read'])} rows read, "
                    f"{fmt_int(tot['rows_loaded'])} loaded and {fmt_int(tot['rows_rejected'])} rows rejected "
                    f"({fmt_pct(tot['reject_rate'], 2)})"
                    + (f"; {plural(tot['files_refused'], 'file')} refused as a whole." if tot["files_refused"] else "."))
        gone = _gone_note(con)
        if gone:
            sec.lead += " " + gone
        dst = _dst_note(con, meta)
        if dst:
            sec.lead += " " + dst
        outside = _outside_hosts_note(con, meta)
        if outside:
            sec.lead += " " + outside
        sec.add(Table(
            [Column("Source"), Column("Files", True), Column("Rows read", True), Column("Loaded", True),
             Column("Rows rejected", True), Column("Reject rate", True), Column("Files refused", True),
             Column("Files gone", True), Column("Last ingested")],
            [[Cell(r["source_kind"]), Cell(fmt_int(r["files"])), Cell(fmt_int(r["rows_read"])),
              Cell(fmt_int(r["rows_loaded"])), Cell(fmt_int(r["rows_rejected"])), Cell(fmt_pct(r["reject_rate"], 2)),
              Cell(fmt_int(r["files_refused"])), Cell(fmt_int(r.get("files_gone"))),
              Cell(fmt_date(r["last_ingested_at"]))] for r in kinds],
            caption="Ingestion by source kind (marts.ingestion_by_source; files gone: deleted from the landing "
                    "directory, their rows kept).",
        ))
    else:
        sec.lead = f"{plural(n_rejects, 'record')} rejected; the ingestion ledger is empty."
    freshness = freshness_rows(con)
    if freshness:
        sec.add(_freshness_table(freshness, meta))
    gaps = _monitoring_gaps(con, meta)
    if gaps is not None:
        sec.lead = f"{sec.lead} {gaps[0]}" if sec.lead else gaps[0]
        sec.add(gaps[1])
    stopped = _stopped_table(con, meta)
    if stopped is not None:
        sec.add(stopped)
    rejects = query_rows(con, f"""SELECT source_file, line_no, error, raw, rejected_at FROM raw.rejects
                             ORDER BY rejected_at DESC, source_file, line_no LIMIT {_TOP_N_REJECTS}""")
    if rejects:
        sec.add(Table(
            [Column("Rejected at"), Column("File:line"), Column("Reason"), Column("Raw record")],
            [[Cell(fmt_date(r["rejected_at"])),
              Cell(truncate(f"{r['source_file']}:{r['line_no']}", 60), mono=True,
                   title=f"{r['source_file']}:{r['line_no']}"),
              Cell(truncate(r["error"], 90), title=r["error"]),
              Cell(truncate(r["raw"], 70), mono=True, title=r["raw"])] for r in rejects],
            caption=f"Latest {len(rejects)} of {fmt_int(n_rejects)} records in raw.rejects: "
                    f"{fmt_int(n_rejects - n_refusals)} rejected rows and {plural(n_refusals, 'whole-file refusal')} "
                    "(line 0).",
        ))
    return sec


SECTION = SectionSpec("quality", "Data quality", build)
