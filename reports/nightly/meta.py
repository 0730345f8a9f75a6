"""What every nightly section shares: the report day and period (:class:`NightlyMeta`), which inputs
the warehouse holds (node states, alerts), and the one GPU job total (marts.job_totals)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any

import duckdb

from gpusre.models.accounting_span import ACCOUNTING_RECORD_TS_SQL
from gpusre.models.sources.registry import SOURCES
from gpusre.reports.kit.formatting import fmt_int, fmt_num, fmt_pct, jobs_and_requeued_runs, plural
from gpusre.reports.kit.section import NO_DATA, Cell
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status


@dataclass(frozen=True)
class NightlyMeta:
    """The report day and the period the report covers: ``period_last`` ends at the report day when the
    data holds a complete day after it (a re-render for a past night shows what that night showed; the
    dump's trailing partial day stays in, as the night's own report had it); ``data_last`` is the data's own
    last job end day (None: the same as ``period_last``), for the snapshot marts that cannot be bounded."""

    report_date: date
    period_first: date | None
    period_last: date | None
    generated_at: datetime
    warehouse_label: str
    data_last: date | None = None

    @property
    def past(self) -> bool:
        """True when the period stops before the data's last job end day: a retrospective re-render."""
        return self.data_last is not None and self.period_last is not None and self.data_last > self.period_last

    @property
    def through(self) -> date:
        """The last UTC day the report counts: the report day on a retrospective re-render, else every
        day (``date.max``) — the night's own report counted the dump's trailing sliver too."""
        return self.report_date if self.past else date.max


def unbounded_note(meta: NightlyMeta, what: str) -> str:
    """' {what} is a snapshot of the whole record, through 2026-11-28: it cannot be bounded by the report
    day 2026-11-26.' on a retrospective re-render (:attr:`NightlyMeta.past`), else ''. Said in the section
    rather than mixing periods silently: a mart computed as of the data's end has no per-day rows to cut."""
    if not meta.past or meta.data_last is None:
        return ""
    return (f" {what} is a snapshot of the whole record, through {meta.data_last.isoformat()}: it cannot be "
            f"bounded by the report day {meta.report_date.isoformat()}.")


#: The nightly sections whose marts are whole-record snapshots (no per-day rows to cut at the report day),
#: by section key, with the subject of the note :func:`unbounded_note` adds on a past night's re-render.
#: Suspect nodes and the taxonomy say it in their own text.
SNAPSHOT_SECTIONS: dict[str, str] = {
    "findings": "Each finding",
    "states": "This table",
    "sizes": "This table",
    "runtime": "This table",
    "queue": "This table",
    "shift": "The size shift",
    "published": "This cluster's column",
    "top": "This ranking",
    "repairs": "The repair-time table",
    "drain_reasons": "This ranking",
    "health_checks": "The health-check table",
    "alert_hygiene": "The rule table",
}


#: Shown by every node-state section when no Slurm node-state history has been ingested.
NO_NODE_STATES = "No node-state history yet (land `sacctmgr show event -P` dumps in slurm_events/)."


def node_state_history(con: duckdb.DuckDBPyConnection) -> str | None:
    """None when Slurm node-state history has been ingested, otherwise :data:`NO_NODE_STATES`."""
    for table in ("raw.slurm_events", "core.node_states"):
        if table_status(con, table) is None:
            return None
    return NO_NODE_STATES


#: Shown by every alert section when no alert has been ingested.
NO_ALERTS = "No alerts yet (land Alertmanager webhook payloads in alerts/)."

ALERT_DAYS = 14


def alert_history(con: duckdb.DuckDBPyConnection) -> str | None:
    """None when alerts have been ingested (``core.alerts`` has rows), otherwise :data:`NO_ALERTS`."""
    return None if table_status(con, "core.alerts") is None else NO_ALERTS


def reason_text(reason: str) -> str:
    """'No data yet: marts.x is empty.' -> 'marts.x is empty' (for use inside a sentence)."""
    prefix = f"{NO_DATA}: "
    return (reason[len(prefix):] if reason.startswith(prefix) else reason).rstrip(".")


def alert_window(meta: NightlyMeta) -> tuple[date, date]:
    """The last :data:`ALERT_DAYS` days up to the report day, starting no earlier than the data's first
    day: "in the 14 days" of a warehouse that holds 3 would claim 11 quiet days nobody observed."""
    first = meta.report_date - timedelta(days=ALERT_DAYS - 1)
    if meta.period_first is not None and first < meta.period_first <= meta.report_date:
        first = meta.period_first
    return first, meta.report_date


def latest_complete_day(con: duckdb.DuckDBPyConnection) -> date | None:
    """The last UTC day the dumps cover completely: a dump cut at 00:15 shows only a sliver of
    the new day, and reporting that sliver as "last night" would show near-zero utilization.
    marts.day_coverage decides (the last day it does not label partial); when no day is complete (a
    trace shorter than a day, a first dump), its best-covered day, the later on a tie — the report's
    data warnings say it is partial, where the day before would be an empty report. Before that mart
    exists, the day before the dumps' last record."""
    if table_status(con, "marts.day_coverage") is None:
        day = scalar(con, "SELECT COALESCE(max(day) FILTER (WHERE NOT partial), "
                          "arg_max(day, (covered_hours, day))) FROM marts.day_coverage")
        if day is not None:
            return day
    rows = query_rows(con, """SELECT (max(COALESCE(end_ts, start_ts + to_seconds(COALESCE(elapsed_s, 0))))::DATE - 1) AS d,
                                 max(end_day) AS last_end FROM core.jobs""")
    if not rows or rows[0]["d"] is None:
        return None
    return min(rows[0]["d"], rows[0]["last_end"]) if rows[0]["last_end"] else rows[0]["d"]


def latest_complete_log_day(con: duckdb.DuckDBPyConnection) -> date | None:
    """The day before the last node-log line: the report day of a landing without Slurm accounting."""
    for table, column in (("raw.syslog_lines", "ts"), ("core.node_events", "ts")):
        if table_status(con, table) is None:
            rows = query_rows(con, f"SELECT (max({column}) AT TIME ZONE 'UTC')::DATE - 1 AS d FROM {table}")
            if rows and rows[0]["d"] is not None:
                return rows[0]["d"]
    return None


def latest_record_day(con: duckdb.DuckDBPyConnection) -> date | None:
    """The last UTC day any source has a record on (``raw.record_days``): the report day of a landing
    with neither accounting nor node logs (alerts or node states only), instead of today."""
    if table_status(con, "raw.record_days") is not None:
        return None
    return scalar(con, "SELECT max(day) FROM raw.record_days")


def killed_runs(jobs: int | None, runs: int | None) -> tuple[str, str]:
    """The one count of what the infrastructure killed — runs, a requeued job's killed run included, as the
    headline's "Infra failures" card and ``marts.hw_incidents.affected_jobs`` count them — worded by what they
    are: ``('2 jobs', '')`` when every run was a job's final run, ``('1 requeued run', '')`` when each was
    an earlier run Slurm requeued, else ``('3 runs', '2 jobs + 1 requeued run')`` (the detail in the kit's
    one wording, :func:`~gpusre.reports.kit.formatting.jobs_and_requeued_runs`). ``jobs`` (the jobs' final
    runs) None or above ``runs``: the split is unknown, ``runs`` are worded as jobs.

    >>> killed_runs(2, 2), killed_runs(0, 1), killed_runs(1, 2)
    (('2 jobs', ''), ('1 requeued run', ''), ('2 runs', '1 job + 1 requeued run'))
    """
    runs = runs or 0
    if jobs is None or jobs >= runs:
        return plural(runs, "job"), ""
    if not jobs:
        return plural(runs, "requeued run"), ""
    return plural(runs, "run"), jobs_and_requeued_runs(jobs, runs)


#: The 'all' row of marts.job_totals cut at a day: the sum of its 'day' rows up to it (a plain scalar
#: sum of a mart's rows, no grouping), each column as the mart's 'all' row has it.
_TOTALS_THROUGH = """SELECT 'all' AS scope, NULL::DATE AS day, min(day) AS first_day, max(day) AS last_day,
    coalesce(sum(gpu_jobs), 0) AS gpu_jobs, coalesce(sum(gpu_runs), 0) AS gpu_runs, sum(gpu_hours) AS gpu_hours,
    coalesce(sum(failed_jobs), 0) AS failed_jobs, coalesce(sum(failed_runs), 0) AS failed_runs,
    sum(failed_gpu_hours) AS failed_gpu_hours,
    sum(failed_gpu_hours) / nullif(sum(gpu_hours), 0) AS failed_share_gpu_hours
    FROM marts.job_totals WHERE scope = 'day' AND day <= ?"""


def job_totals(con: duckdb.DuckDBPyConnection, day: date | None = None, *,
               through: date | None = None) -> dict[str, Any] | None:
    """The marts.job_totals row of the whole record (or of one UTC end ``day``): the one GPU job count,
    GPU-hours and failed share every nightly section quotes; None when the mart is missing or has no row.
    ``through``: the whole record up to that end day (the report day), the mart's day rows summed; the
    mart's own 'all' row when nothing ends after it."""
    if table_status(con, "marts.job_totals") is not None:
        return None
    if day:
        rows = query_rows(con, "SELECT * FROM marts.job_totals WHERE scope = 'day' AND day = ?", [day])
    elif through is not None and scalar(con, "SELECT count(*) FROM marts.job_totals WHERE scope = 'day' AND day > ?",
                                        [through]):
        rows = [r for r in query_rows(con, _TOTALS_THROUGH, [through]) if r["first_day"] is not None]
    else:
        rows = query_rows(con, "SELECT * FROM marts.job_totals WHERE scope = 'all'")
    return rows[0] if rows else None


def summary_through(con: duckdb.DuckDBPyConnection, through: date | None) -> list[dict[str, Any]]:
    """marts.failure_attribution_summary's whole-record rows (attribution, state, n, runs, lost), or — on a
    retrospective re-render (``through`` before the data's last day) — its 'day' rows up to ``through``
    added up per attribution and state (a window sum over the mart's own rows: counts and GPU-hours add
    across days, nothing is re-derived), so a past night's report counts what that night's did."""
    later = through is not None and scalar(
        con, "SELECT count(*) FROM marts.failure_attribution_summary WHERE scope = 'day' AND day > ?", [through])
    if not later:
        return query_rows(con, "SELECT attribution, state, jobs AS n, runs, lost_gpu_hours AS lost "
                               "FROM marts.failure_attribution_summary WHERE scope = 'all'")
    return query_rows(con, """SELECT DISTINCT attribution, state,
                                     sum(jobs) OVER w AS n, sum(runs) OVER w AS runs, sum(lost_gpu_hours) OVER w AS lost
                              FROM marts.failure_attribution_summary WHERE scope = 'day' AND day <= ?
                              WINDOW w AS (PARTITION BY attribution, state)""", [through])


def total_cells(con: duckdb.DuckDBPyConnection, *, runs: bool = False) -> list[Cell] | None:
    """The 'All GPU jobs' row of a jobs / share / [runs /] GPU-hours / share table, from marts.job_totals
    (the whole record: the tables it ends are whole-record snapshots too)."""
    tot = job_totals(con)
    if tot is None:
        return None
    return [Cell("All GPU jobs"), Cell(fmt_int(tot["gpu_jobs"])), Cell(fmt_pct(1.0 if tot["gpu_jobs"] else None)),
            *([Cell(fmt_int(tot["gpu_runs"]))] if runs else []),
            Cell(fmt_num(tot["gpu_hours"])), Cell(fmt_pct(1.0 if tot["gpu_hours"] else None))]


def nightly_report_day(con: duckdb.DuckDBPyConnection) -> date | None:
    """The default report day of the nightly: the last UTC day Slurm accounting covers completely
    (marts.day_coverage.accounting_complete) or every dense source does — a node log that stopped at
    midnight leaves the next day without node data, and re-rendering the day before in silence read as a
    quiet night; the report then says at the top which sources have nothing for the day
    (:func:`sources_without_day`). Without accounting, :func:`latest_complete_day`'s rule."""
    if table_status(con, "marts.day_coverage") is None and scalar(
            con, "SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'marts' AND table_name = 'day_coverage' "
                 "AND column_name = 'accounting_complete'"):
        day = scalar(con, "SELECT max(day) FROM marts.day_coverage WHERE accounting_complete OR NOT partial")
        if day is not None:
            return day
    return latest_complete_day(con)


def data_days(con: duckdb.DuckDBPyConnection) -> tuple[date | None, date | None]:
    """The first and last UTC day any source covers (:func:`source_days`; ``None, None`` when none): the
    days a nightly can report on, and the span a refused ``--date`` names."""
    spans = source_days(con).values()
    if not spans:
        return None, None
    return min(a for a, _ in spans), max(b for _, b in spans)


class OutsideDataError(Exception):
    """A report asked for days no source covers (:func:`check_inside_data`): a one-line user error, exit 1."""


def check_inside_data(con: duckdb.DuckDBPyConnection, first: date, last: date) -> None:
    """Raise :class:`OutsideDataError` naming the data's span (:func:`data_days`) when no day of ``first`` …
    ``last`` lies in it: every count of such a report would read as a quiet night ("no job failed", "Hardware
    incidents: 0") nobody observed. A partial overlap is reported, with the coverage warnings saying which
    days have no data; nothing is refused when the warehouse holds no record at all."""
    a, b = data_days(con)
    if a is None or b is None or (first <= b and last >= a):
        return
    asked, when = ((first.isoformat(), "that day") if first == last
                   else (f"{first.isoformat()} … {last.isoformat()}", "in that window"))
    raise OutsideDataError(f"{asked} is outside the data ({a.isoformat()} … {b.isoformat()}): "
                           f"no source has a record {when} to report on")


def _covered_days(row: dict[str, Any]) -> tuple[date, date] | None:
    """The first and last UTC day of one ``marts.data_freshness`` row's records (None without records)."""
    if not row["records"] or row["first_record_ts"] is None or row["last_record_ts"] is None:
        return None
    last_ts = row["last_record_ts"].astimezone(timezone.utc)
    # Slurm accounting's last record time ends an interval (a job's end, a running job at the dump's cut):
    # at exactly midnight it closes the day before, as raw.record_days dates it (ACCOUNTING_RECORD_DAY_SQL).
    if row["source_kind"] in _END_TIMED:
        last_ts -= timedelta(microseconds=1)
    return row["first_record_ts"].astimezone(timezone.utc).date(), last_ts.date()


def source_days(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[date, date]]:
    """Per source with records, the first and last UTC day its records cover, as ``marts.data_freshness``
    spans them — the one definition of what dates a record: a day is covered by a record observed on it
    (a sacct dump's job records, a node-log line, a node's state event, an alert notification received
    that day), not by the node-less "Cluster Registered TRES" event every ``sacctmgr show event`` dump lists
    (it says since when the cluster exists: weeks of "quiet nights" before the first dump) nor by the
    weeks-old ``startsAt`` Alertmanager re-sends with a long-firing alert. Before that mart is built (a
    warehouse mid-run), the days of ``raw.record_days``."""
    from gpusre.reports.coverage import freshness_rows

    rows = freshness_rows(con)
    if rows:
        return {r["source_kind"]: days for r in rows if (days := _covered_days(r)) is not None}
    if table_status(con, "raw.record_days") is not None:
        return {}
    # A handful of sources: one span query each (report code reads spans, it does not aggregate per group).
    kinds = [r["source_kind"] for r in query_rows(
        con, "SELECT DISTINCT source_kind FROM raw.record_days WHERE records > 0 ORDER BY source_kind")]
    spans = {k: query_rows(con, "SELECT min(day) AS a, max(day) AS b FROM raw.record_days "
                                "WHERE records > 0 AND source_kind = ?", [k])[0] for k in kinds}
    return {k: (r["a"], r["b"]) for k, r in spans.items()}


#: What a source that has nothing for the report day leaves unknown, by source kind.
SOURCE_UNKNOWNS: dict[str, str] = {
    "sacct": "the jobs that ended, failed or were killed by the infrastructure are unknown",
    "syslog": "hardware incidents, node events and the cause of failed jobs are unknown",
    "slurm_events": "node availability and drains are unknown",
    "alerts": "alert incidents are unknown",
}
#: A source's name inside a sentence, by source kind.
SOURCE_NAMES: dict[str, str] = {"sacct": "Slurm accounting", "syslog": "node logs",
                                "slurm_events": "node-state history", "alerts": "alert data"}


#: The sources whose record time only ends an interval (the registry's record time is the accounting's):
#: their last record's day is the day it closes (models/ingest/record_days.py dates their records so).
_END_TIMED = frozenset(s.name for s in SOURCES if s.record_ts == ACCOUNTING_RECORD_TS_SQL)


def sources_without_day(con: duckdb.DuckDBPyConnection, day: date) -> dict[str, str]:
    """The sources that loaded records but have none for ``day``, each with why ('they end on 2026-11-10',
    'they begin on 2026-11-12', 'none that day'), from marts.data_freshness (first and last record, empty
    days). A day a loaded file is named for (or a later one, past the last record) counts as covered (a file read and found empty: a quiet day);
    a sparse source (alerts, node states) is quiet, not missing, on an empty day inside its span."""
    from gpusre.models.day_coverage import loaded_file_days
    from gpusre.reports.coverage import freshness_rows

    out: dict[str, str] = {}
    for r in freshness_rows(con):
        if (days := _covered_days(r)) is None:
            continue
        first, last = days
        if day > last:
            why = f"the last record is on {last.isoformat()}"
        elif day < first:
            why = f"the first record is on {first.isoformat()}"
        elif r["dense"] and day in (r["empty_days"] or []):
            why = "no record that day"
        else:
            continue
        cut = r.get("history_end_ts")
        if cut is not None and cut >= datetime.combine(day + timedelta(days=1), datetime.min.time(), timezone.utc) \
                - timedelta(hours=1):
            continue  # a node-state dump cut at that day's end saw all of it: no event is a quiet day
        named = loaded_file_days(con, r["source_kind"])
        if day in named or (day > last and any(d >= day for d in named)):
            continue  # a file for that day (or later) was read and held nothing for it: quiet, not missing
        out[r["source_kind"]] = why
    return out


def day_source_warnings(con: duckdb.DuckDBPyConnection, day: date) -> list[str]:
    """A sentence for the top of the report per source with no data for ``day`` (:func:`sources_without_day`),
    with what that leaves unknown; [] when every loaded source has some."""
    return [f"No {SOURCE_NAMES.get(k, k)} for {day.isoformat()} ({why}): {SOURCE_UNKNOWNS.get(k, 'its figures are unknown')} "
            "for that day, not zero — land the missing files and run again."
            for k, why in sorted(sources_without_day(con, day).items())]


def later_data_note(con: duckdb.DuckDBPyConnection, report_day: date) -> list[str]:
    """A sentence when some source has records after ``report_day``: the day reported is not the last day
    with data (the accounting does not cover a later day completely), said with the command for that day —
    a run must never re-render an older day in silence. [] when the report day is the last day of data."""
    spans = source_days(con)
    sources = sorted(k for k, (_, b) in spans.items() if b > report_day)
    if not sources:
        return []
    last = max(spans[k][1] for k in sources)
    named = ", ".join(SOURCE_NAMES.get(s, s) for s in sources)
    return [f"This report is for {report_day.isoformat()}, not {last.isoformat()}, the last day with data ({named}): "
            f"no day after {report_day.isoformat()} is covered completely by Slurm accounting (or, without it, by "
            f"every dense source). For {last.isoformat()} as it stands: "
            f"`gpusre report nightly --date {last.isoformat()}`."]
