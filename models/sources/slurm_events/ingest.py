"""Load Slurm node-state history from ``landing/slurm_events`` into ``raw.*`` and build ``core.*``.

Ingestion follows the sacct ingest (:mod:`gpusre.models.sources.sacct.ingest`): a file whose SHA-256 is
unchanged is skipped, a changed file replaces its own rows, bad lines go to ``raw.rejects`` with
file, line and reason, a file unusable as a whole is ``refused``; files are parsed into TEMP tables
and published with the ledger in one transaction.

:func:`build_node_states` then rebuilds ``core.node_states``, ``core.cluster_events`` and
``core.node_state_reasons`` in full from ``raw.slurm_events`` (node events are few — thousands a
year — so a full rebuild is cheaper than bookkeeping):

* **Supersession.** Nightly dumps overlap: the same event (node, start) appears in several. One
  version wins per (node, start): a closed version over an open one (Slurm fills in the end later,
  it never reopens a node event), then the latest end, sacctmgr over sinfo, the latest observation,
  the latest file and line.
* **sinfo snapshots** contribute open events; one that a later snapshot no longer lists ended, at
  the latest, at that snapshot (``end_source = 'sinfo_absent'``), unless a sacctmgr dump knows more.
  A snapshot with a rejected line ends nothing (the node on that line would look absent).
* **Outages only.** A node event that is no outage — power saving (``IDLE+POWERED_DOWN``, ``IDLE~``,
  ``DOWN~`` without a reason), a state that serves jobs (``IDLE``, ``MIXED``, ``RESERVED``,
  ``PLANNED``) — stays in raw.slurm_events and is left out of core.node_states (:func:`_is_outage`).
* **Reasons** get a Drain3 template (miner ``slurm_reasons`` in ``raw.template_miners``, separate
  from the node-log miner, so ids are stable across nights) and a class from
  ``catalog/drain_reasons.csv``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.failures.drain_reasons import NO_REASON_CLASS, classify_reasons
from gpusre.models.ingest.ledger import (FileIngest, LandingStats, ignored_results, known_files, log_parse_crash,
                                        record_files, record_mtimes, stat_landing, unchanged_by_stat)
from gpusre.models.ingest.landing_files import SourceScan, read_landing_file, scan_source
from gpusre.models.sources.slurm_events.parse import (IN_SERVICE_STATES, POWER_SAVING_PATTERN, POWER_SAVING_STATES,
                                                     SlurmEventsFormatError, dump_day_start, parse_slurm_events_file)
from gpusre.models.sources.syslog.ingest import load_miner, save_miner
from gpusre.models.ingest.lake import lake_of, remove_unlisted_files, write_file_sets
from gpusre.models.sources.registry import lake_table
from gpusre.models.warehouse import transaction

__all__ = [
    "REASON_MINER",
    "SLURM_EVENTS_DIR",
    "SLURM_EVENTS_KIND",
    "SLURM_EVENTS_SUFFIXES",
    "NodeStatesSummary",
    "StagedSlurmEvents",
    "build_node_states",
    "discover_slurm_event_files",
    "scan_slurm_event_files",
    "HISTORY_END_SLACK",
    "drop_staging",
    "dumps_cut",
    "events_as_of",
    "history_start",
    "ingest_slurm_event_files",
    "node_states_end",
    "publish_staged_slurm_events",
    "stage_slurm_event_files",
]

SLURM_EVENTS_DIR = "slurm_events"
#: ``raw.ingested_files.source_kind`` / ``raw.rejects.source_kind`` of these files.
SLURM_EVENTS_KIND = "slurm_events"
#: The lake table of node-state event lines (raw.slurm_events).
SLURM_EVENTS_LAKE = lake_table("slurm_events")
SLURM_EVENTS_SUFFIXES: tuple[str, ...] = (".txt", ".psv")
#: Drain3 miner of drain/down reasons (``raw.template_miners.miner``).
REASON_MINER = "slurm_reasons"

#: reason_class of the drain-reason rule for power saving (catalog/drain_reasons.csv ``power_save``).
POWER_SAVE_CLASS = "power_save"

_STAGE_EVENTS = "_stage_slurm_events"
_STAGE_REJECTS = "_stage_slurm_event_rejects"
_STAGE_SNAPSHOTS = "_stage_slurm_event_snapshots"


def _slurm_events_name(name: str) -> str | None:
    """None for a node-state dump name (compression suffix already stripped), else why it is ignored."""
    if name.endswith(SLURM_EVENTS_SUFFIXES):
        return None
    return "not a node-state dump name (expected *.txt or *.psv; .gz/.bz2/.xz ok)"


def scan_slurm_event_files(landing: Path) -> SourceScan:
    """The dumps under ``landing/slurm_events`` (recursively, stable order) and the ignored files."""
    return scan_source(landing, SLURM_EVENTS_DIR, _slurm_events_name)


def discover_slurm_event_files(landing: Path) -> list[Path]:
    """Every ``*.txt``/``*.psv`` under ``landing/slurm_events`` (recursively), in a stable order."""
    return scan_slurm_event_files(landing).files


@dataclass
class StagedSlurmEvents:
    """Files parsed into TEMP tables, waiting for :func:`publish_staged_slurm_events`."""

    results: list[FileIngest] = field(default_factory=list)
    ledger: list[tuple[FileIngest, str, int]] = field(default_factory=list)  # (result, sha256, size)
    replaced: list[str] = field(default_factory=list)
    stats: LandingStats = field(default_factory=lambda: LandingStats(0))  # taken before any read
    same: list[str] = field(default_factory=list)  # hashed and found unchanged: their mtime is recorded


def _insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame, select: str = "*") -> None:
    if frame.height == 0:
        return
    con.register("_slurm_events_batch", frame.to_arrow(compat_level=pl.CompatLevel.oldest()))
    con.execute(f"INSERT INTO {table} BY NAME SELECT {select} FROM _slurm_events_batch")
    con.unregister("_slurm_events_batch")


def stage_slurm_event_files(
    con: duckdb.DuckDBPyConnection,
    landing: Path,
    *,
    timezone: str = "UTC",
    cluster: str | None = None,
    fields: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> StagedSlurmEvents:
    """Parse every new or changed file into TEMP staging tables; the warehouse is untouched.
    ``fields``: cluster.yaml ``slurm_events.fields``, the fields of headerless dumps.

    Must run outside a transaction."""
    known = known_files(con, SLURM_EVENTS_KIND)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_STAGE_EVENTS} AS SELECT * FROM raw.slurm_events LIMIT 0")
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_STAGE_REJECTS} AS SELECT * FROM raw.rejects LIMIT 0")
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_STAGE_SNAPSHOTS} AS SELECT * FROM raw.slurm_event_snapshots LIMIT 0")
    staged = StagedSlurmEvents()
    scan = scan_slurm_event_files(landing)
    paths = scan.files
    staged.stats = stat_landing(landing, paths)
    skip = unchanged_by_stat(con, SLURM_EVENTS_KIND, staged.stats)
    staged.ledger.extend(ignored_results(scan.ignored))
    staged.results.extend(result for result, _, _ in staged.ledger)
    for index, path in enumerate(paths, start=1):
        source_file = path.relative_to(landing).as_posix()
        if source_file in skip:
            staged.results.append(FileIngest(source_file, "unchanged"))
            continue
        read = read_landing_file(path)
        sha = read.sha256
        if sha and known.get(source_file) == sha:
            staged.results.append(FileIngest(source_file, "unchanged"))
            staged.same.append(source_file)
            continue
        if source_file in known:
            staged.replaced.append(source_file)
        fault = read.fault
        parsed = None
        if read.data.strip() or not fault:
            try:
                parsed = parse_slurm_events_file(path, source_file, timezone=timezone, cluster=cluster,
                                                 data=read.data, fields=fields)
            except SlurmEventsFormatError as exc:
                fault = fault or str(exc)
            except Exception as exc:  # noqa: BLE001 - a parser failure refuses this file only
                fault = log_parse_crash(source_file, exc)
        if parsed is not None:
            _insert_frame(con, _STAGE_EVENTS, parsed.records)
            _insert_frame(con, _STAGE_REJECTS, parsed.rejects,
                          f"source_file, '{SLURM_EVENTS_KIND}' AS source_kind, line_no, raw, error, now() AS rejected_at")
            # A snapshot says which nodes are *not* drained only when every line was read: a node on
            # an unreadable line would look absent, and its open drain would end.
            if parsed.source_format == "sinfo" and parsed.observed_ts is not None and not parsed.rejects.height:
                con.execute(f"INSERT INTO {_STAGE_SNAPSHOTS} VALUES (?, ?, ?)",
                            [source_file, parsed.observed_ts, parsed.records.height])
            result = FileIngest(source_file, "refused" if fault else "loaded", parsed.rows_read,
                                parsed.records.height, parsed.rejects.height, fault)
        else:
            result = FileIngest(source_file, "refused", error=fault)
        if fault:  # refused whole, or past a fault (the complete lines before it are kept)
            con.execute(f"INSERT INTO {_STAGE_REJECTS} VALUES (?, ?, 0, NULL, ?, now())",
                        [source_file, SLURM_EVENTS_KIND, fault])
        staged.ledger.append((result, sha, read.size))
        staged.results.append(result)
        if progress:
            progress(f"slurm_events {index}/{len(paths)} {source_file}: {result.status}, "
                     f"{result.rows_loaded} loaded, {result.rows_rejected} rejected")
    return staged


def publish_staged_slurm_events(con: duckdb.DuckDBPyConnection, staged: StagedSlurmEvents) -> None:
    """Replace re-ingested files' rows, move the staged rows into raw.*, write the ledger — inside
    the caller's transaction."""
    for source_file in staged.replaced:
        for table in ("raw.rejects", "raw.slurm_event_snapshots"):
            con.execute(f"DELETE FROM {table} WHERE source_file = ?", [source_file])
    # The new file sets become visible with the ledger rows below (models/ingest/lake.py).
    write_file_sets(lake_of(con), SLURM_EVENTS_LAKE, con.sql(f"SELECT * FROM {_STAGE_EVENTS}").pl(),
                    {result.source_file: sha for result, sha, _ in staged.ledger})
    con.execute(f"INSERT INTO raw.rejects SELECT * FROM {_STAGE_REJECTS}")
    con.execute(f"INSERT INTO raw.slurm_event_snapshots SELECT * FROM {_STAGE_SNAPSHOTS}")
    record_files(con, SLURM_EVENTS_KIND, list(staged.ledger))
    record_mtimes(con, staged.stats, [*staged.same, *(result.source_file for result, _, _ in staged.ledger)])


def drop_staging(con: duckdb.DuckDBPyConnection) -> None:
    """Free the staging tables (they also vanish with the connection)."""
    for table in (_STAGE_EVENTS, _STAGE_REJECTS, _STAGE_SNAPSHOTS):
        con.execute(f"DROP TABLE IF EXISTS {table}")


def ingest_slurm_event_files(
    con: duckdb.DuckDBPyConnection,
    landing: Path,
    *,
    timezone: str = "UTC",
    cluster: str | None = None,
    fields: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[FileIngest]:
    """Stage, then publish in one transaction, every new or changed file under
    ``landing/slurm_events``. Call it outside a transaction. A file removed from the landing
    directory keeps its rows (the warehouse is the archive)."""
    staged = stage_slurm_event_files(con, landing, timezone=timezone, cluster=cluster, fields=fields,
                                     progress=progress)
    try:
        with transaction(con):
            publish_staged_slurm_events(con, staged)
    finally:
        drop_staging(con)
    remove_unlisted_files(con, lake_of(con), SLURM_EVENTS_LAKE.name)
    return staged.results


# ------------------------------------------------------------------------------------ core.*


def events_as_of(con: duckdb.DuckDBPyConnection, events: str = "raw.slurm_events") -> datetime | None:
    """The latest moment the node-state history speaks for: the latest start, end or observation
    (snapshot time, or start + Duration of an ongoing event) in raw.slurm_events (or ``events``, a
    copy of it) and the snapshots. Ongoing events are counted as down until here. None before any
    event was loaded."""
    row = con.sql(
        f"""SELECT max(start_ts), max(end_ts), max(observed_ts),
                   (SELECT max(observed_ts) FROM raw.slurm_event_snapshots)
            FROM {events}"""
    ).fetchall()[0]
    values = [v for v in row if v is not None]
    return max(values) if values else None


def history_start(con: duckdb.DuckDBPyConnection, timezone: str = "UTC",
                  events: str = "raw.slurm_events") -> datetime | None:
    """The earliest moment the loaded node-state dumps speak for *every* node, events or not; None when no
    loaded dump says.

    A loaded dump is an observation even when it holds no node line (a healthy cluster's first nights):
    a ``sacctmgr show event`` dump from the date its file name gives (:func:`dump_day_start`, the
    recommended cut's ``events_YYYY-MM-DD.txt``, cluster time zone: it lists every event from that day
    on), and any dump at the moments it was observed (start + ``Duration`` of an event still open — the
    dump's cut —, an sinfo snapshot's time: the state of every node then). The first event's start is not
    one of them: a drain open since weeks before the first dump says nothing about the other nodes then
    (callers take the earlier of the two, as before there was a dump date)."""
    starts = [dump_day_start(f, timezone) for (f,) in con.sql(
        "SELECT source_file FROM raw.ingested_files WHERE source_kind = ? AND status = 'loaded'",
        params=[SLURM_EVENTS_KIND]).fetchall()]
    observed = con.sql(f"""SELECT least(min(observed_ts), (SELECT min(observed_ts) FROM raw.slurm_event_snapshots))
                           FROM {events}""").fetchall()[0][0]
    found = [t for t in (*starts, observed) if t is not None]
    return min(found) if found else None


#: A node-state history that ends at most this long before the accounting does still speaks for the
#: accounting's end (the two nightly dumps are cut minutes apart).
HISTORY_END_SLACK = timedelta(hours=1)


def dumps_cut(con: duckdb.DuckDBPyConnection, events: str = "raw.slurm_events") -> datetime | None:
    """When the node-state history ends, as the dumps themselves say: the latest moment a dump is known
    to have been cut — start + ``Duration`` of an event still open in a sacctmgr dump (Slurm counts an
    ongoing event's Duration up to the dump time; ``sacctmgr show event`` prints the cluster's open
    "Cluster Registered TRES" event too), or an sinfo snapshot's time. None when no dump says when it
    was cut, or when a record is later than every known cut (the newest dump does not say when it was
    cut: it may be followed by quiet hours, not by a gap). ``sql/marts/data_freshness.sql`` applies the
    same rule (``history_end_ts``)."""
    cut, last = con.sql(
        f"""SELECT greatest(max(observed_ts), (SELECT max(observed_ts) FROM raw.slurm_event_snapshots)),
                   greatest(max(start_ts), max(end_ts))
            FROM {events}"""
    ).fetchall()[0]
    if cut is None or (last is not None and last > cut):
        return None
    return cut


def node_states_end(con: duckdb.DuckDBPyConnection, accounting_as_of: datetime | None,
                    events: str = "raw.slurm_events") -> tuple[datetime | None, bool]:
    """(the moment node-state history speaks for up to, whether it ends before the accounting).

    Without accounting, :func:`events_as_of`. With it, the accounting's last moment or the history's
    last moment when later — a node with no event after its last one is in service until then — unless
    the dumps say they were cut more than :data:`HISTORY_END_SLACK` before the accounting's end
    (:func:`dumps_cut`: a nightly dump is missing): then the history ends at that cut, and nothing after
    it is measured from node states (not "in service", not "still down")."""
    events_end = events_as_of(con, events)
    if events_end is None or accounting_as_of is None:
        return events_end, False
    cut = dumps_cut(con, events)
    if cut is not None and cut < accounting_as_of - HISTORY_END_SLACK:
        return cut, True
    return max(events_end, accounting_as_of), False


# Per (node, start) the version that knows most: closed over open, latest end, sacctmgr over sinfo,
# latest observation, latest file and line.
_NODE_WINNERS_SQL = """
CREATE OR REPLACE TEMP TABLE _ns_candidates AS
SELECT unnest(e.nodes) AS node,
       e.* EXCLUDE (nodes, node_name, cluster_nodes, event_type, cpus, tres)
FROM _ns_events AS e
WHERE e.event_type = 'node' AND e.nodes IS NOT NULL;

CREATE OR REPLACE TEMP TABLE _ns_winners AS
WITH ranked AS (
    SELECT * FROM _ns_candidates
    QUALIFY row_number() OVER (
        PARTITION BY node, start_ts
        ORDER BY end_ts IS NOT NULL DESC, end_ts DESC NULLS LAST, source_format = 'sacctmgr' DESC,
                 observed_ts DESC NULLS LAST, source_file DESC, line_no DESC) = 1
),
seen AS (
    SELECT node, start_ts, max(observed_ts) AS last_seen FROM _ns_candidates GROUP BY node, start_ts
),
inferred AS (
    -- An event only sinfo knows, open: it ended by the first later snapshot that did not list it.
    SELECT r.node, r.start_ts, min(s.observed_ts) AS end_ts
    FROM ranked AS r
    JOIN seen USING (node, start_ts)
    JOIN raw.slurm_event_snapshots AS s ON s.observed_ts > seen.last_seen
    WHERE r.end_ts IS NULL AND r.source_format = 'sinfo'
    GROUP BY r.node, r.start_ts
)
SELECT r.* REPLACE (COALESCE(r.end_ts, i.end_ts) AS end_ts),
       CASE WHEN r.end_ts IS NOT NULL THEN 'slurm' WHEN i.end_ts IS NOT NULL THEN 'sinfo_absent' END AS end_source
FROM ranked AS r LEFT JOIN inferred AS i USING (node, start_ts);
"""

_CLUSTER_EVENTS_SQL = """
DELETE FROM core.cluster_events;
INSERT INTO core.cluster_events BY NAME
SELECT cluster, start_ts, end_ts, state_raw, reason, cpus, tres, cluster_nodes, nodes,
       len(nodes)::INTEGER AS n_nodes, source_file, line_no
FROM _ns_events
WHERE event_type = 'cluster'
QUALIFY row_number() OVER (
    PARTITION BY cluster, start_ts
    ORDER BY end_ts IS NOT NULL DESC, end_ts DESC NULLS LAST, observed_ts DESC NULLS LAST,
             source_file DESC, line_no DESC) = 1;
"""


@dataclass(frozen=True)
class NodeStatesSummary:
    """What :func:`build_node_states` wrote."""

    node_states: int
    not_outages: int  # node events left out: power saving, states that serve jobs
    ongoing: int
    cluster_events: int
    templates: int
    as_of: datetime | None


def _reason_templates(con: duckdb.DuckDBPyConnection, reasons: pl.Series) -> pl.DataFrame:
    """``reason`` -> ``reason_template_id``, ``reason_template`` through the persisted miner."""
    distinct = reasons.drop_nulls().unique().sort()
    if distinct.is_empty():
        return pl.DataFrame(schema={"reason": pl.String, "reason_template_id": pl.Int64, "reason_template": pl.String})
    miner = load_miner(con, REASON_MINER)
    before = miner.templates().select("template_id", "template")
    assigned = miner.assign_messages(distinct)
    after = miner.templates().select("template_id", "template")
    if not after.equals(before):  # save only real changes: reruns leave the miner row alone
        save_miner(con, miner, REASON_MINER)
    # Final template text per id (a template generalizes as later reasons join it).
    return pl.DataFrame({"reason": distinct}).with_columns(
        assigned["template_id"].alias("reason_template_id")
    ).join(after.rename({"template_id": "reason_template_id", "template": "reason_template"}),
           on="reason_template_id", how="left")


def _is_outage(winners: pl.DataFrame, classes: pl.DataFrame) -> pl.Series:
    """Which node events are outages (time the node cannot serve jobs), one flag per row.

    Not outages:

    * **Power saving.** Slurm powers idle nodes down (``SuspendProgram``) and up again when a job needs
      them (``ResumeProgram``): ``POWERED_DOWN``/``POWERING_DOWN``/``POWER_UP`` and the ``~ % ! #``
      suffixes (``IDLE~``). The node is in service all the while — counting it as down would charge
      an outage to every site that saves power, and unplanned (no reason is given). A ``DOWN~`` or
      ``DRAIN~`` node is power saving too when its reason is empty or says power saving; with another
      reason (``ResumeTimeout reached``: it failed to power up, ``Not responding``) it is the outage
      its reason says.
    * **States that serve jobs**: ``IDLE``, ``ALLOCATED``, ``MIXED``, ``COMPLETING``, ``PLANNED``
      (the backfill scheduler's plan), ``RESERVED`` (a reservation is no outage), … — unless the node
      is also not responding (``IDLE*``). A maintenance reservation (``$``) is ``MAINT``: maintenance.
    """
    state = winners.get_column("state")
    not_responding = winners.get_column("not_responding").fill_null(False)
    in_service = state.is_in(list(IN_SERVICE_STATES)).fill_null(False) & ~(
        not_responding & ~state.is_in(list(POWER_SAVING_STATES)).fill_null(False))
    power_saving = (winners.get_column("state_text").str.contains(POWER_SAVING_PATTERN).fill_null(False)
                    & classes.get_column("reason_class").is_in([NO_REASON_CLASS, POWER_SAVE_CLASS]).fill_null(False))
    return ~(in_service | power_saving)


def build_node_states(con: duckdb.DuckDBPyConnection, *, as_of: datetime | None = None,
                      node_names: Sequence[str] | None = None) -> NodeStatesSummary:
    """Rebuild core.node_states, core.cluster_events and core.node_state_reasons from raw.* —
    inside the caller's transaction. ``as_of`` (default :func:`events_as_of`) bounds ongoing events
    in ``core.node_state_reasons.node_hours``. ``node_names`` (cluster.yaml ``nodes``, when it lists them)
    and every node of the events are host names, not component evidence, in the reasons
    (:func:`~gpusre.models.failures.drain_reasons.classify_reasons`)."""
    # raw.slurm_events read once: each scan of the lake view opens every file (~1 s on a year).
    con.execute("CREATE OR REPLACE TEMP TABLE _ns_events AS SELECT * EXCLUDE (raw_line) FROM raw.slurm_events")
    as_of = as_of or events_as_of(con, "_ns_events")
    con.execute(_NODE_WINNERS_SQL)
    winners = con.sql("SELECT * FROM _ns_winners ORDER BY node, start_ts").pl()
    classes = classify_reasons(winners.get_column("reason"), winners.get_column("state"),
                               nodes=winners.get_column("node"), node_names=node_names)
    # Only outages become core.node_states: not power saving, not a state that serves jobs.
    outage = _is_outage(winners, classes)
    not_outages = int((~outage).sum())
    winners, classes = winners.filter(outage), classes.filter(outage)
    templates = _reason_templates(con, winners.get_column("reason"))
    states = (
        pl.concat([winners, classes], how="horizontal")
        .join(templates, on="reason", how="left", maintain_order="left")
        .rename({"user_name": "user"})
    )
    con.execute("DELETE FROM core.node_states")
    if states.height:
        con.register("_node_states_df", states.to_arrow())
        con.execute(
            """INSERT INTO core.node_states BY NAME
               SELECT node, cluster, state, state_text, not_responding, start_ts, end_ts, end_source, reason,
                      "user", uid, reason_template_id, reason_template, reason_class, reason_component,
                      availability_class, source_format, source_file, line_no
               FROM _node_states_df"""
        )
        con.unregister("_node_states_df")
    con.execute(_CLUSTER_EVENTS_SQL)
    con.execute("DROP TABLE IF EXISTS _ns_candidates")
    con.execute("DROP TABLE IF EXISTS _ns_events")
    con.execute("DROP TABLE IF EXISTS _ns_winners")

    con.execute("DELETE FROM core.node_state_reasons")
    if states.height:
        end = pl.col("end_ts").fill_null(pl.lit(as_of, pl.Datetime("us", "UTC")))
        reasons = (
            states.filter(pl.col("reason_template_id").is_not_null())
            .with_columns(((pl.min_horizontal(end, pl.lit(as_of, pl.Datetime("us", "UTC"))) - pl.col("start_ts"))
                           .dt.total_microseconds().clip(lower_bound=0) / 3.6e9).alias("_h"))
            .group_by("reason_template_id")
            .agg(
                pl.col("reason_template").first().alias("template"),
                pl.col("reason").mode().sort().first().alias("example"),
                pl.col("reason_class").mode().sort().first().alias("reason_class"),
                pl.col("reason_component").mode().sort().first().alias("reason_component"),
                pl.col("availability_class").mode().sort().first().alias("availability_class"),
                pl.len().cast(pl.Int64).alias("events"),
                pl.col("node").n_unique().cast(pl.Int64).alias("nodes"),
                pl.col("_h").sum().alias("node_hours"),
                pl.col("start_ts").min().alias("first_start_ts"),
                pl.col("start_ts").max().alias("last_start_ts"),
            )
            .rename({"reason_template_id": "template_id"})
        )
        if reasons.height:
            con.register("_reasons_df", reasons.to_arrow())
            con.execute("INSERT INTO core.node_state_reasons BY NAME SELECT * FROM _reasons_df")
            con.unregister("_reasons_df")
    n_cluster = con.sql("SELECT count(*) FROM core.cluster_events").fetchall()[0][0]
    n_templates = con.sql("SELECT count(*) FROM core.node_state_reasons").fetchall()[0][0]
    return NodeStatesSummary(
        node_states=states.height,
        not_outages=not_outages,
        ongoing=int(states.get_column("end_ts").is_null().sum()) if states.height else 0,
        cluster_events=n_cluster,
        templates=n_templates,
        as_of=as_of,
    )
