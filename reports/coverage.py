"""Is a report's input complete? Data warnings from ``marts.data_freshness`` and
``marts.log_coverage_daily``, shared by the nightly and the SLO report.

A report over missing data reads like a quiet night (no failures, no hardware events). The
warnings say so instead: a dense source (Slurm accounting, node logs: records every few minutes on
any working cluster) that ends before the reported period does, a day without any record of one
(a missing dump or log file — or, when a file named for that day was loaded, a day it found empty:
said as such, not as missing), and nodes that ran jobs but sent no log line (broken log shipping:
hardware faults there leave no event, so jobs they kill cannot be attributed).
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from typing import Any

import duckdb

from gpusre.models.day_coverage import loaded_file_days
from gpusre.models.ingest.hostlist import compress_hostlist
from gpusre.models.warehouse import table_exists
from gpusre.reports.kit.formatting import fmt_date, fmt_int, plural, truncate
from gpusre.reports.kit.warehouse import query_rows, scalar
from gpusre.models.vocabulary import failure_incident_sql

__all__ = ["DAY_FILES", "DENSE_SOURCES", "FRESH_SLACK", "GAP_WARN_DAYS", "SOURCES", "SOURCE_LABELS", "coverage_warnings",
           "ends_early", "freshness_rows", "history_ends_early", "later_partial_days", "loaded_sources"]

#: Dense sources: (subject, its verb 'end(s)', what depends on it).
DENSE_SOURCES: dict[str, tuple[str, str, str, str]] = {
    "sacct": ("Slurm accounting", "begins", "ends", "job figures"),
    "syslog": ("Node logs", "begin", "end", "node events, hardware incidents and failure attribution"),
}
#: A dense source's file(s) for one day, for several days, and what they hold ("the dump for D holds no jobs").
DAY_FILES: dict[str, tuple[str, str, str]] = {
    "sacct": ("the dump holds", "the dumps hold", "jobs"),
    "syslog": ("the log files hold", "the log files hold", "log lines"),
}
SOURCE_LABELS = {"sacct": "Slurm accounting (sacct)", "syslog": "Node logs", "slurm_events": "Node states (Slurm)",
                 "alerts": "Alerts"}
#: Every source a report figure can come from.
SOURCES = tuple(SOURCE_LABELS)
#: How far before the period's end a dense source may stop (a dump cut a little early).
FRESH_SLACK = timedelta(hours=1)
#: The nightly report warns about empty days this close to the report day.
GAP_WARN_DAYS = 7


def _sources_with_records(con: duckdb.DuckDBPyConnection) -> frozenset[str] | None:
    """Source kinds (``incidents`` too) that loaded at least one record (``raw.ingested_files``); None
    when the ledger is missing or empty."""
    if not table_exists(con, "raw.ingested_files") or not scalar(con, "SELECT count(*) FROM raw.ingested_files"):
        return None
    return frozenset(k for (k,) in con.sql(
        "SELECT DISTINCT source_kind FROM raw.ingested_files WHERE rows_loaded > 0").fetchall())


def loaded_sources(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """The sources that loaded at least one record: what the reports may count (a source never loaded
    makes its figures unknown, not 0). A warehouse without the ledger, or with an empty one (marts built
    by other means: tests, imports), counts every source of :data:`SOURCES` as loaded."""
    found = _sources_with_records(con)
    return frozenset(SOURCES) if found is None else found


def freshness_rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The rows of ``marts.data_freshness`` (none while it has not been built)."""
    if not table_exists(con, "marts.data_freshness"):
        return []
    return query_rows(con, "SELECT * FROM marts.data_freshness ORDER BY source_kind")


def _day_ranges(days: list[date], shown: int = 6) -> str:
    """Sorted days as runs: '2026-03-02', '2026-03-02 … 2026-03-08, 2026-03-11' (the first ``shown``
    runs, then how many more days)."""
    runs: list[list[date]] = []
    for day in days:
        if runs and day - runs[-1][-1] == timedelta(days=1):
            runs[-1].append(day)
        else:
            runs.append([day])
    text = ", ".join(fmt_date(r[0]) if len(r) == 1 else f"{fmt_date(r[0])} … {fmt_date(r[-1])}" for r in runs[:shown])
    rest = sum(len(r) for r in runs[shown:])
    return text + (f" and {plural(rest, 'more day')}" if rest else "")


def ends_early(row: dict[str, Any], last: date) -> bool:
    """Does this ``marts.data_freshness`` row's last record fall before the end of the UTC day ``last``
    (less :data:`FRESH_SLACK`)?"""
    period_end = datetime.combine(last + timedelta(days=1), time(0), tzinfo=timezone.utc)
    return row["last_record_ts"] is not None and row["last_record_ts"] < period_end - FRESH_SLACK


#: What is empty in the reports when a dense source never loaded a record (each source is optional;
#: node states and alerts are extras many sites do not collect, so their absence is not warned about).
MISSING_SOURCE_EFFECTS: dict[str, str] = {
    "sacct": "job figures, failure attribution, ETTR and goodput are empty",
    "syslog": "there are no node events or hardware incidents, and job failures cannot be attributed",
}



def _without_path(error: str, path: str) -> str:
    """``error`` without a leading ``<path>: `` (the ledger's errors name their file; the warning already does)."""
    for prefix in (f"{path}: ", f"{path.rsplit('/', 1)[-1]}: "):
        if error.startswith(prefix):
            return error[len(prefix):]
    return error

def _input_file_warnings(con: duckdb.DuckDBPyConnection) -> list[str]:
    """A source that never loaded a record, and landing files refused (their ledger row says so
    now): a missing input must not read as a quiet night."""
    if not table_exists(con, "raw.ingested_files"):
        return []
    loaded = _sources_with_records(con) or frozenset()  # an empty ledger: nothing was loaded
    # A source whose files were read but every record rejected (sacct with SLURM_TIME_FORMAT=%s) says
    # so, with the commonest reason: "missing, empty or refused" sent readers to look for files.
    all_rejected = {kind: (n, reason) for kind, n, reason in con.sql(
        "SELECT source_kind, rows_rejected, top_reject_reason FROM marts.ingestion_by_source "
        "WHERE rows_loaded = 0 AND rows_rejected > 0").fetchall()} if table_exists(con, "marts.ingestion_by_source") else {}
    warnings = [(f"No {SOURCE_LABELS[kind]} records were loaded: all {fmt_int(all_rejected[kind][0])} were rejected "
                 f"(commonest reason: {truncate(all_rejected[kind][1] or 'see raw.rejects', 120)}): {effect}.")
                if kind in all_rejected else
                f"No {SOURCE_LABELS[kind]} records were loaded (landing/{kind}/ is missing, empty or refused): {effect}."
                for kind, effect in MISSING_SOURCE_EFFECTS.items() if kind not in loaded]
    refused = con.sql("SELECT source_file, error FROM raw.ingested_files WHERE status = 'refused' "
                      "ORDER BY ingested_at DESC, source_file").fetchall()
    if refused:
        # The error often starts with the file's own path: shown once.
        shown = "; ".join(f"{f} ({truncate(_without_path(e or '', f), 60)})" for f, e in refused[:3])
        more = f" and {fmt_int(len(refused) - 3)} more" if len(refused) > 3 else ""
        warnings.append(f"{plural(len(refused), 'landing file')} refused, so their records are missing or "
                        f"incomplete: {shown}{more} — see raw.ingested_files and raw.rejects.")
    return warnings


def _fleet_warnings(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The accounting shows more nodes or GPUs per node than the fleet behind every capacity figure
    (``marts.fleet_coverage``): utilization and goodput would read too high (and MTBF too short
    when the fleet is a node list)."""
    if not table_exists(con, "marts.fleet_coverage"):
        return []
    rows = query_rows(con, "SELECT * FROM marts.fleet_coverage")
    if not rows or not rows[0]["nodes_with_jobs"]:
        return []
    r = rows[0]
    if not r["fleet_understated"]:
        if r["fleet_source"] != "default":
            return []
        # The default may be far too large as well (a 4-node trace read 0.2 % utilization).
        return [f"cluster.yaml does not set nodes: capacity, utilization and goodput assume the default fleet of "
                f"{fmt_int(r['configured_nodes'])} nodes × {fmt_int(r['gpus_per_node'])} GPUs, and the accounting "
                f"shows jobs on {plural(r['nodes_with_jobs'], 'node')}: set nodes and gpus_per_node in "
                "cluster.yaml (marts.fleet_coverage)."]
    origin = "cluster.yaml" if r["fleet_source"] == "cluster.yaml" else "the default: cluster.yaml sets no nodes"
    warnings = []
    if r["nodes_outside_fleet"]:
        examples = f", e.g. {truncate(compress_hostlist(r['outside_examples']), 60)}" if r["outside_examples"] else ""
        # A node list is also the set MTBF exposes; a count is only a floor for it (models/reliability/marts.py).
        assumed = "capacity, utilization, goodput and MTBF assume" if r["outside_examples"] else \
            "capacity, utilization and goodput assume"
        warnings.append(f"Slurm accounting shows jobs on {plural(r['nodes_with_jobs'], 'node')}, "
                        f"{fmt_int(r['nodes_outside_fleet'])} beyond the {fmt_int(r['configured_nodes'])}-node fleet "
                        f"that {assumed} ({origin}{examples}): set nodes in cluster.yaml (marts.fleet_coverage).")
    if not r.get("nodes_other_gpus"):
        # One GPU count for every node: gpus_per_node is the setting to fix.
        if r["max_gpus_per_node_seen"] is not None and r["max_gpus_per_node_seen"] > r["gpus_per_node"]:
            warnings.append(f"Jobs used up to {fmt_int(r['max_gpus_per_node_seen'])} GPUs per node, but capacity "
                            f"assumes {fmt_int(r['gpus_per_node'])}: set gpus_per_node in cluster.yaml "
                            "(marts.fleet_coverage).")
    elif r.get("gpus_understated_nodes"):
        # Mixed fleet: name the nodes, whose count lives in node_gpus (or is the gpus_per_node default).
        examples = truncate(compress_hostlist(r["gpus_understated_examples"]), 60)
        warnings.append(f"Jobs on {plural(r['gpus_understated_nodes'], 'node')} ({examples}) used more GPUs per node "
                        f"than cluster.yaml gives them (node_gpus, else gpus_per_node {fmt_int(r['gpus_per_node'])}): "
                        "fix their counts in node_gpus in cluster.yaml (marts.fleet_coverage).")
    elif not r["nodes_outside_fleet"]:
        # Jobs without a node list cannot name a node: only the fleet's largest count bounds them.
        warnings.append(f"Jobs used up to {fmt_int(r['max_gpus_per_node_seen'])} GPUs per node, more than "
                        "cluster.yaml gives any node: fix gpus_per_node or node_gpus in cluster.yaml "
                        "(marts.fleet_coverage).")
    return warnings


def _topology_warnings(con: duckdb.DuckDBPyConnection) -> list[str]:
    """cluster.yaml names no leaf switches while network incidents hit several nodes: a leaf switch
    that failed would read as one link fault per node it cut off (and MTBF as that many failures), or,
    when its links dropped within the same minute, as one upstream ``fabric`` incident naming no switch."""
    if not (table_exists(con, "marts.fleet_coverage") and table_exists(con, "marts.hw_incidents")):
        return []
    rows = query_rows(con, "SELECT leaf_switches FROM marts.fleet_coverage")
    if not rows or rows[0].get("leaf_switches") is None or rows[0]["leaf_switches"] > 0:
        return []
    n_inc, n_nodes = con.sql("SELECT count(DISTINCT incident_id), count(DISTINCT node) FROM "
                             "(SELECT incident_id, unnest(nodes) AS node FROM marts.hw_incidents "
                             f"WHERE component_class = 'network' AND scope = 'node' AND {failure_incident_sql()})"
                             ).fetchall()[0]
    n_fabric = scalar(con, "SELECT count(*) FROM marts.hw_incidents WHERE scope = 'fabric' "
                           f"AND {failure_incident_sql()}") or 0
    said: list[str] = []
    if n_nodes >= 2:
        said.append(f"a leaf switch that fails counts as one network incident per node it cut off "
                    f"({plural(n_inc, 'network incident')} on {plural(n_nodes, 'node')} here)")
    if n_fabric:
        said.append(f"links lost on several nodes within a minute count as one upstream fabric incident that names "
                    f"no switch ({plural(n_fabric, 'fabric incident')} here), though it may be one leaf switch")
    if not said:
        return []
    return [f"cluster.yaml names no leaf_switches, so {'; and '.join(said)}: list the nodes under each leaf switch "
            "in cluster.yaml leaf_switches (marts.fleet_coverage)."]


def coverage_warnings(con: duckdb.DuckDBPyConnection, first: date, last: date, *,
                      gaps_since: date | None = None) -> list[str]:
    """Sentences for the top of a report on the UTC days ``first`` … ``last`` when its inputs are
    incomplete; empty days of dense sources are reported from ``gaps_since`` (default ``first``)."""
    since = gaps_since or first
    warnings: list[str] = _input_file_warnings(con) + _fleet_warnings(con) + _topology_warnings(con)
    history = history_ends_early(con)
    if history:
        warnings.append(history)
    for r in freshness_rows(con):
        if r["source_kind"] not in DENSE_SOURCES or not r["records"]:
            continue
        label, begins, ends, depends = DENSE_SOURCES[r["source_kind"]]
        # A window reaching before the data (a 30-day SLO window over a week of dumps, a nightly for a
        # day before the first dump) must not read as quiet days.
        if r["first_record_ts"] is not None and r["first_record_ts"].astimezone(timezone.utc).date() > first:
            warnings.append(f"{label} {begins} on {fmt_date(r['first_record_ts'].astimezone(timezone.utc).date())}, "
                            f"after the start of {fmt_date(first)}: there are no {depends} for the days before.")
        if ends_early(r, last):
            warnings.append(f"{label} {ends} at {r['last_record_ts'].astimezone(timezone.utc):%Y-%m-%d %H:%M} UTC "
                            f"(the last record), before the end of {fmt_date(last)}: {depends} after that are "
                            "incomplete — unless the cluster was quiet.")
        empty = [day for day in r["empty_days"] or [] if since <= day <= last]
        # A day a loaded file is named for was read and found empty (a closed cluster's accounting on a
        # maintenance day): say that, not "missing" — the warning stays for days no file names.
        named = loaded_file_days(con, r["source_kind"]) if empty else frozenset()
        missing = [day for day in empty if day not in named]
        if missing:
            warnings.append(f"{label}: no records at all on {_day_ranges(missing)} — a dump or log file is probably "
                            "missing (marts.data_freshness).")
        read_empty = [day for day in empty if day in named]
        if read_empty:
            one, several, items = DAY_FILES.get(r["source_kind"], ("the file holds", "the files hold", "records"))
            subject, verb = (one if len(read_empty) == 1 else several).rsplit(" ", 1)
            warnings.append(f"{label}: {subject} for {_day_ranges(read_empty)} {verb} no {items} (loaded, with "
                            f"no record of {'that day' if len(read_empty) == 1 else 'those days'}: an idle or closed "
                            "cluster, e.g. a maintenance day — if it was not, check how the dump was cut; "
                            "marts.data_freshness).")
    if table_exists(con, "marts.log_coverage_daily"):
        days = query_rows(con, "SELECT day, n_silent_nodes, silent_nodes, nodes_with_jobs FROM marts.log_coverage_daily "
                               "WHERE day BETWEEN ? AND ? AND n_silent_nodes > 0 ORDER BY n_silent_nodes DESC, day",
                          [first, last])
        if days and first == last:
            r = days[0]
            warnings.append(f"{plural(r['n_silent_nodes'], 'node')} of {fmt_int(r['nodes_with_jobs'])} that ran jobs "
                            f"on {fmt_date(first)} logged nothing ({truncate(compress_hostlist(r['silent_nodes']), 60)}): "
                            "hardware faults there leave no event, so jobs they kill cannot be attributed — check "
                            "their log shipping.")
        elif days:
            worst = days[0]
            node_days = sum(r["n_silent_nodes"] for r in days)
            warnings.append(f"On {plural(len(days), 'day')} of {fmt_date(first)} … {fmt_date(last)}, nodes that ran jobs "
                            f"logged nothing ({plural(node_days, 'node-day')}; most on {fmt_date(worst['day'])}: "
                            f"{truncate(compress_hostlist(worst['silent_nodes']), 60)}): hardware faults there leave "
                            "no event, so failure attribution and MTBF undercount them — check their log shipping "
                            "(marts.log_coverage_daily).")
        warnings += _stopped_log_warnings(con, first, last)
    return warnings


#: Nodes named one by one in a stopped-log warning; more are counted.
_STOPPED_SHOWN = 3


def _stopped_log_warnings(con: duckdb.DuckDBPyConnection, first: date, last: date) -> list[str]:
    """Nodes whose log stopped part-way through a day while they still ran a job
    (``marts.log_coverage_daily.stopped_nodes``): after the last line they are as blind as a silent
    node, so a job that failed there later reads as the user's failure."""
    if "stopped_nodes" not in {c for (c,) in con.sql(
            "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'marts' "
            "AND table_name = 'log_coverage_daily'").fetchall()}:
        return []  # a warehouse built before the column existed
    days = query_rows(con, "SELECT day, n_stopped_nodes, stopped_nodes FROM marts.log_coverage_daily "
                           "WHERE day BETWEEN ? AND ? AND n_stopped_nodes > 0 ORDER BY day", [first, last])
    if not days:
        return []
    if first == last:
        items = days[0]["stopped_nodes"]
        shown = [f"{s['node']}'s node log ends at {s['last_line_ts'].astimezone(timezone.utc):%H:%M} UTC although it "
                 f"ran job {s['job_id']} until {_until(s['held_until_ts'], first)}" for s in items[:_STOPPED_SHOWN]]
        more = len(items) - len(shown)
        return ["; ".join(shown) + (f" (and {plural(more, 'more node')})" if more > 0 else "")
                + ": failures after that are unseen, so a job that failed there reads as the user's — check "
                "their log shipping (marts.log_coverage_daily)."]
    node_days = sum(r["n_stopped_nodes"] for r in days)
    worst = max(days, key=lambda r: r["n_stopped_nodes"])
    return [f"On {plural(len(days), 'day')} of {fmt_date(first)} … {fmt_date(last)}, node logs stopped part-way "
            f"through the day while the node still ran a job ({plural(node_days, 'node-day')}; most on "
            f"{fmt_date(worst['day'])}: {truncate(compress_hostlist([s['node'] for s in worst['stopped_nodes']]), 60)}): "
            "failures after the last line are unseen — check their log shipping (marts.log_coverage_daily)."]


def _until(ts: datetime, day: date) -> str:
    """``23:00`` within the day, ``the end of 2026-11-11`` when the job held the node past midnight."""
    ts = ts.astimezone(timezone.utc)
    return f"{ts:%H:%M} UTC" if ts.date() == day else f"the end of {fmt_date(day)}"


def later_partial_days(con: duckdb.DuckDBPyConnection, report_day: date) -> list[str]:
    """A sentence when data exists after ``report_day`` but covers its days only in part
    (``marts.day_coverage``): the default report day is the last *complete* one, so last night may not
    be the night reported — a dump cut at local midnight east of UTC ends the UTC day an hour or two
    early, and a quiet cluster's last record may lie hours before its dump was cut. Say so, with the
    command for the partial day, instead of reporting the day before in silence."""
    if not table_exists(con, "marts.day_coverage"):
        return []
    rows = query_rows(con, "SELECT day, covered_to, covered_hours, sources FROM marts.day_coverage "
                           "WHERE day > ? AND covered_hours > 0 ORDER BY day DESC LIMIT 1", [report_day])
    if not rows:
        return []
    r = rows[0]
    to = r["covered_to"].astimezone(timezone.utc) if r["covered_to"] else None
    until = f" only until {to:%H:%M} UTC" if to else " only in part"
    return [f"This report is for {fmt_date(report_day)}, the last day every dense source covers completely: "
            f"{fmt_date(r['day'])} is covered{until} ({r['covered_hours']:.1f} h; the earliest last record of "
            f"{r['sources']}: a dump cut before midnight UTC, a source that stopped, or a quiet cluster). "
            f"For that day as it stands: `gpusre report nightly --date {r['day']:%Y-%m-%d}`."]


def history_ends_early(con: duckdb.DuckDBPyConnection) -> str | None:
    """A sentence when the node-state history ends before the accounting does
    (``marts.data_freshness.ends_before_accounting``: a node-state dump is probably missing), else None."""
    if not table_exists(con, "marts.data_freshness") or not scalar(
            con, "SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'marts' AND table_name = 'data_freshness' "
                 "AND column_name = 'ends_before_accounting'"):
        return None
    rows = query_rows(con, "SELECT source_kind, last_record_ts, history_end_ts, ends_before_accounting "
                           "FROM marts.data_freshness WHERE source_kind IN ('slurm_events', 'sacct')")
    by_kind = {r["source_kind"]: r for r in rows}
    states, acct = by_kind.get("slurm_events"), by_kind.get("sacct")
    if not states or not states["ends_before_accounting"] or states["history_end_ts"] is None:
        return None

    def utc(ts: datetime) -> str:
        return f"{ts.astimezone(timezone.utc):%Y-%m-%d %H:%M} UTC"

    until = f", while Slurm accounting runs to {utc(acct['last_record_ts'])}" if acct and acct["last_record_ts"] else ""
    return (f"The node-state history ends at {utc(states['history_end_ts'])} (the last slurm_events dump's cut)"
            f"{until} — a node-state dump is probably missing. Node availability after it is not measured from "
            "node states (the node-availability SLO estimates it from hardware incidents); land the missing "
            "sacctmgr show event dump to measure it.")
