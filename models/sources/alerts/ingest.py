"""Load alert notifications from ``landing/alerts`` into ``raw.alert_notifications`` and
deduplicate them into ``core.alerts`` — incrementally, losslessly, crash-safe.

Ingest (:func:`ingest_alert_files`), like the node-log ingest: a file whose SHA-256 is unchanged is
skipped; a changed file replaces its own rows. New files are read in name order, in rounds of
whole files (:data:`ROUND_BYTES` of record text, so memory stays bounded whatever a night holds): a
round is flattened (:mod:`gpusre.models.sources.alerts.parse`) into a TEMP staging table;
notifications without a fingerprint get Alertmanager's hash of their labels; every distinct alert
text ``alertname: summary`` (else the description) is given a Drain3 template id by the ``alerts``
miner (its state kept in ``raw.template_miners``, separate from the node-log miner), each masked
text once per ingest, so the ids are the same whatever the rounds; the round's rows go to the
lake, invisible until published. Then one transaction publishes the rejects, the ledger and the
miner state: a crash leaves the warehouse as it was; a rerun over the same files changes nothing.

Dedupe (:func:`build_core_alerts`): one ``core.alerts`` row per occurrence, ``(fingerprint,
starts_at to the millisecond)`` — an alert that fires, resolves and fires again is two alerts,
Alertmanager gives the second a new ``startsAt``. The millisecond: a webhook prints ``startsAt`` to
the nanosecond (Go's RFC 3339 nano), Alertmanager's ``/api/v2/alerts`` to the millisecond; the row
keeps the most precise start. A Prometheus ``/api/v1/alerts`` ``activeAt`` is when the rule became
pending, not when it fired (``for:`` later): a firing activation joins the first Alertmanager-side
occurrence of its fingerprint that starts at or after it, before the next activation Prometheus
showed and at most ``alerts.max_for_minutes`` (60) later; else it is an occurrence of its own.
**Status rule**: the payloads do not say when a notification was sent, and a firing notification's
``endsAt`` is only Alertmanager's resolve-timeout guess, so an alert is ``resolved`` when *any* notification of it was resolved (``ends_at`` = the earliest ``endsAt`` of
its resolved notifications), else ``firing`` with ``ends_at`` NULL. A Grafana resolve whose
``grafana_state_reason`` says Grafana stopped looking (:data:`NOT_A_RECOVERY`: ``MissingSeries`` —
the series vanished, often because the node or its exporter died —, a paused, deleted or edited
rule) is no recovery: the alert stays ``firing`` (end unknown) unless a normal resolve ends it, or
until the next occurrence of its fingerprint starts (then ``resolved`` at that start, the latest
it can have ended). A zero-time endsAt
(``0001-01-01T00:00:00Z``) is "not ended". Fields that can vary between notifications (labels
order, summary, description, template) come from the first notification received, in received
order (file name order, then ``seq``, the position in the file). An ``/api/v2/alerts`` snapshot shows
what was firing at its time (``received_at``): an alert a snapshot showed and a later snapshot of the
same source (folder) no longer shows had ended by then — ``resolved``, ``ends_at`` the ``endsAt`` the
last snapshot showing it gave (Alertmanager's resolve time unless the rule re-sent it), kept between
that snapshot's time and the later one's — unless a notification received after it still showed it. Alerts seen only ``pending`` (Prometheus
API) are not alerts yet and are left out. ``node``/``target`` follow :mod:`gpusre.models.alerts.nodes`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from gpusre.models.alerts.clustering import AlertClusteringSettings
from gpusre.models.alerts.floods import FloodSettings
from gpusre.models.alerts.nodes import (NodeMapping, annotation_values_sql, host_names, label_values_sql,
                                       location_sql, node_lists, node_names)
from gpusre.models.ingest.background_writer import BackgroundWriter
from gpusre.models.sources.alerts.parse import (
    DESCRIPTION_SQL,
    SEQ_SQL,
    STAGE_COLUMNS_SQL,
    SNAPSHOT_SQL,
    SUMMARY_SQL,
    TEMPLATE_TEXT_SQL,
    scan_alert_files,
    fill_fingerprints,
    iter_alert_records,
    stage_records,
    unordered_inserts,
)
from gpusre.models.ingest.ledger import (FileIngest, ignored_results, known_files, log_parse_crash, record_files,
                                        record_mtimes, stat_landing, unchanged_by_stat)
from gpusre.models.ingest.landing_files import LandingFileFault, file_identity
from gpusre.models.logs.masking import mask_messages
from gpusre.models.sources.syslog.ingest import load_miner, save_miner
from gpusre.models.logs.templates import TemplateMiner
from gpusre.models.warehouse import transaction
from gpusre.models.ingest.lake import LAKE_JOIN_BUILD_SIDE, lake_of, remove_unlisted_files, write_file_sets
from gpusre.models.sources.registry import lake_table

__all__ = [
    "ALERT_MINER",
    "AlertSettings",
    "NOT_A_RECOVERY",
    "SOURCE_KIND",
    "SUPPRESSED_SQL",
    "alert_settings",
    "build_core_alerts",
    "ingest_alert_files",
]

#: ``raw.template_miners.miner`` of the alert-text miner (the node-log one is ``syslog``).
ALERT_MINER = "alerts"
#: ``raw.ingested_files.source_kind`` / ``raw.rejects.source_kind`` of alert files.
SOURCE_KIND = "alerts"
#: The lake table of alert notifications (raw.alert_notifications).
ALERT_LAKE = lake_table("alerts")
#: Record text flattened per DuckDB batch: per-call overheads dominate for many small payload
#: files, so files are flattened together.
BATCH_BYTES = 64 << 20

_STAGE = "_stage_alert_notifications"

#: Grafana's ``grafana_state_reason`` annotation on a resolved notification that is no recovery:
#: Grafana resolved the alert because it stopped looking, not because the condition cleared —
#: ``MissingSeries`` (the series vanished: often the node or its exporter died), ``Paused``,
#: ``RuleDeleted``, ``Updated`` (the rule was paused, deleted or edited). Such a resolve does not
#: end the alert (:func:`build_core_alerts`).
NOT_A_RECOVERY: tuple[str, ...] = ("MissingSeries", "Paused", "RuleDeleted", "Updated")


class AlertSettings(BaseModel):
    """cluster.yaml ``alerts:``: node mapping, flood detection and clustering into incidents."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    nodes: NodeMapping = Field(default_factory=NodeMapping)
    floods: FloodSettings = Field(default_factory=FloodSettings)
    clustering: AlertClusteringSettings = Field(default_factory=AlertClusteringSettings)
    #: The longest ``for:`` of the Prometheus alert rules: a Prometheus ``/api/v1/alerts`` activation
    #: (``activeAt``, the start of pending) joins the Alertmanager occurrence that fired at most
    #: this long after it (see :func:`build_core_alerts`).
    max_for_minutes: float = Field(default=60.0, ge=0)

    @property
    def max_for_us(self) -> int:
        return int(round(self.max_for_minutes * 60_000_000))


def alert_settings(config: Any) -> AlertSettings:
    """The ``alerts`` section of a cluster config, or the defaults while it has none."""
    settings = getattr(config, "alerts", None)
    return settings if isinstance(settings, AlertSettings) else AlertSettings()


# -- ingest --------------------------------------------------------------------------------------


class _Batcher:
    """Collects record frames of many files and flattens them into the staging table in batches.

    A batch is flattened on a worker thread (DuckDB releases the GIL) while the caller reads the
    next files in Python: reading and flattening overlap instead of taking turns. At most one
    flatten runs at a time, and every other use of the connection waits for it (:meth:`wait`).
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, max_bytes: int | None = None, timezone: str = "UTC") -> None:
        self._con, self._max_bytes, self._timezone = con, max_bytes or BATCH_BYTES, timezone
        self._frames: list[pl.DataFrame] = []
        self._bytes = 0
        #: Record text added since the caller last reset it (the ingest's rounds).
        self.added_bytes = 0
        self._writer = BackgroundWriter("alert-stage")

    def add(self, records: pl.DataFrame) -> None:
        if records.height == 0:
            return
        self._frames.append(records)
        n = int(records["body"].str.len_bytes().sum() or 0)
        self._bytes += n
        self.added_bytes += n
        if self._bytes >= self._max_bytes:
            self._submit()

    def discard(self, source_file: str) -> None:
        """Forget a file's records, pending or already staged (the file is refused)."""
        self.wait()
        self._frames = [f for f in self._frames if f["source_file"][0] != source_file]
        self._con.execute(f"DELETE FROM {_STAGE} WHERE source_file = ?", [source_file])

    def _submit(self) -> None:
        self.wait()
        if self._frames:
            records = pl.concat(self._frames, how="vertical", rechunk=False)
            self._writer.submit(stage_records, self._con, records, target=_STAGE, timezone=self._timezone)
        self._frames, self._bytes = [], 0

    def wait(self) -> None:
        """Wait for the running flatten, if any; re-raises its exception."""
        self._writer.drain()

    def flush(self) -> None:
        """Stage every collected record, and wait until all of them are staged."""
        self._submit()
        self.wait()

    def close(self) -> None:
        """Wait for the running flatten (ignoring its failure: the caller is failing already) and
        stop the worker."""
        self._writer.close()


#: The templates mined by the earlier rounds of one ingest (:func:`_mine_templates`).
_MINED_SCHEMA = {"template_key": pl.UInt64, "masked": pl.String, "template_id": pl.Int64}


def _mine_templates(con: duckdb.DuckDBPyConnection, miner: TemplateMiner, mined: pl.DataFrame) -> pl.DataFrame:
    """``(template_key, masked, template_id)`` for every distinct staged text that the earlier
    rounds of this ingest (``mined``, same columns) did not mine, in received order.

    Drain3 sees each distinct masked text once per ingest, in order of first appearance, whatever
    the rounds: a text masked as one an earlier round mined gets that template without reaching
    Drain3 again (which would count it twice). The alert name stays verbatim (it names the rule:
    ``GpuXid79`` must not become ``<NODE>``); only the summary/description after it is masked.
    """
    texts = con.sql(
        f"""SELECT template_key, alertname, coalesce({SUMMARY_SQL}, {DESCRIPTION_SQL}) AS body
            FROM (SELECT template_key, any_value(coalesce(alertname, '')) AS alertname,
                         any_value(annotations) AS annotations,
                         min((source_file, line_no, payload_no, alert_no)) AS first_seen
                  FROM {_STAGE} WHERE error IS NULL GROUP BY template_key)
            ORDER BY first_seen"""
    ).pl().filter(~pl.col("template_key").is_in(mined["template_key"].implode()))
    if texts.height == 0:
        return pl.DataFrame(schema=_MINED_SCHEMA)
    masked = texts.select(
        pl.when(pl.col("body").is_not_null())
        .then(pl.concat_str([pl.col("alertname"), pl.lit(": "),
                             mask_messages(texts["body"], node_pattern=miner.config.node_pattern)]))
        .otherwise(pl.col("alertname"))
        .alias("masked")
    ).with_columns(texts["template_key"]).join(
        mined.select("masked", pl.col("template_id").alias("_known")).unique("masked"),
        on="masked", how="left", maintain_order="left")
    new = masked.filter(pl.col("_known").is_null())
    assigned = miner.assign(new["masked"]) if new.height else pl.DataFrame(schema={"template_id": pl.Int64})
    ids = new.select("masked").with_columns(assigned["template_id"]).unique("masked")
    return (masked.join(ids, on="masked", how="left", maintain_order="left")
            .select("template_key", "masked", pl.coalesce("_known", "template_id").alias("template_id"))
            .cast(_MINED_SCHEMA))  # type: ignore[arg-type]


#: Notifications read from the stage and written to the lake at a time (whole landing files).
_WRITE_ROWS = 200_000
#: Record text staged per round (whole landing files): each round is flattened, fingerprinted,
#: mined and written to the lake, then its staging table is dropped. Staging a month of 1.1 M
#: notifications at once held ~1.1 GB in DuckDB beside the lake writes.
ROUND_BYTES = 128 << 20


def _file_groups(sizes: Sequence[tuple[str, int]], limit: int) -> list[list[str]]:
    """Consecutive files in groups of at most ``limit`` rows (a larger file alone in its group).

    >>> _file_groups([("a", 150), ("b", 60), ("c", 300), ("d", 10)], 200)
    [['a'], ['b'], ['c'], ['d']]
    >>> _file_groups([("a", 50), ("b", 60), ("c", 90), ("d", 10)], 200)
    [['a', 'b', 'c'], ['d']]
    """
    groups: list[list[str]] = []
    rows = 0
    for name, n in sizes:
        if groups and rows + n <= limit:
            groups[-1].append(name)
            rows += n
        else:
            groups.append([name])
            rows = n
    return groups


def ingest_alert_files(
    con: duckdb.DuckDBPyConnection,
    landing: Path,
    *,
    progress: Callable[[str], None] | None = None,
    timezone: str = "UTC",
) -> list[FileIngest]:
    """Ingest every new or changed file under ``landing/alerts``; call it outside a transaction.
    ``timezone`` (cluster.yaml's, IANA) is the zone a webhook logger's time without an offset is read in.

    Per file, ``rows_read`` (notifications read, plus payloads rejected whole) = ``rows_loaded``
    (rows in ``raw.alert_notifications``) + ``rows_rejected`` (rows in ``raw.rejects``). A file
    that cannot be read or decompressed is ``refused`` (one reject with ``line_no`` 0), keeping the
    notifications of its complete lines before the fault; files that are not alert files are
    ``ignored`` (with the reason) in the ledger.
    """
    known = known_files(con, SOURCE_KIND)
    lake = lake_of(con)
    scan = scan_alert_files(landing)
    paths = scan.files
    stats = stat_landing(landing, paths)
    skip = unchanged_by_stat(con, SOURCE_KIND, stats)
    same: list[str] = []  # hashed and found unchanged: their mtime is recorded
    changed: list[tuple[str, str, int]] = []  # (source_file, sha256, size)
    refused: dict[str, str] = {}
    replaced: list[str] = []
    results: dict[str, FileIngest] = {}
    ignored = ignored_results(scan.ignored)
    loaded: dict[str, int] = {}
    rejected: dict[str, int] = {}
    round_files: list[str] = []
    miner: TemplateMiner | None = None
    template_ids = pl.DataFrame(schema=_MINED_SCHEMA)

    def stage_round() -> None:
        """The files staged since the last round: fingerprints, templates (in received order: rounds
        follow the files' name order), per-file counts, the lake files (invisible until the ledger
        commit below) and the rejects kept aside; then an empty staging table."""
        nonlocal miner, template_ids
        batcher.flush()
        if not round_files:
            return
        fill_fingerprints(con, _STAGE)
        miner = miner or load_miner(con, ALERT_MINER)
        template_ids = pl.concat([template_ids, _mine_templates(con, miner, template_ids)])
        for source_file, n_loaded, n_rejected in con.sql(
                f"""SELECT source_file, count(*) FILTER (WHERE error IS NULL), count(*) FILTER (WHERE error IS NOT NULL)
                    FROM {_STAGE} GROUP BY ALL""").fetchall():
            loaded[source_file], rejected[source_file] = n_loaded, n_rejected
        con.register("_alert_template_ids", template_ids.select("template_key", "template_id").to_arrow())
        con.execute(f"CREATE OR REPLACE TEMP TABLE _alert_seq AS {SEQ_SQL.replace('__STAGE__', _STAGE)}")
        # A few files' notifications at a time: all of them as one frame, beside the staged
        # table, took a month of 1.1 M notifications to 2.8 GB.
        for group in _file_groups([(f, loaded.get(f, 0)) for f in round_files], _WRITE_ROWS):
            notifications = con.sql(
                f"""SELECT s.* EXCLUDE (seq, template_key, error, reject_raw), q.seq, t.template_id
                    FROM {_STAGE} AS s
                    JOIN _alert_seq AS q ON q.stage_row = s.rowid
                    LEFT JOIN _alert_template_ids AS t USING (template_key)
                    WHERE s.error IS NULL AND s.source_file IN (SELECT unnest(?))""", params=[group]).pl()
            write_file_sets(lake, ALERT_LAKE, notifications, {f: sha for f, sha, _ in changed})
            del notifications
        con.execute(f"INSERT INTO _alert_stage_rejects SELECT source_file, line_no, reject_raw, error "
                    f"FROM {_STAGE} WHERE error IS NOT NULL")
        con.execute(f"CREATE OR REPLACE TEMP TABLE {_STAGE} ({STAGE_COLUMNS_SQL})")
        round_files.clear()
        batcher.added_bytes = 0

    con.execute(f"CREATE OR REPLACE TEMP TABLE {_STAGE} ({STAGE_COLUMNS_SQL})")
    con.execute("CREATE OR REPLACE TEMP TABLE _alert_stage_rejects "
                "(source_file VARCHAR, line_no BIGINT, reject_raw VARCHAR, error VARCHAR)")
    batcher = _Batcher(con, timezone=timezone)
    try:
        # In name order, the received order templates are mined in (see stage_round).
        for index, path in enumerate(sorted(paths, key=lambda p: p.relative_to(landing).as_posix()), start=1):
            source_file = path.relative_to(landing).as_posix()
            if source_file in skip:
                results[source_file] = FileIngest(source_file, "unchanged")
                continue
            sha, size = file_identity(path)
            if sha and known.get(source_file) == sha:
                results[source_file] = FileIngest(source_file, "unchanged")
                same.append(source_file)
                continue
            if source_file in known:
                replaced.append(source_file)
            changed.append((source_file, sha, size))
            round_files.append(source_file)
            try:
                for records in iter_alert_records(path, source_file):
                    batcher.add(records)
            except LandingFileFault as exc:  # the complete lines before the fault are kept
                refused[source_file] = str(exc)
            except Exception as exc:  # noqa: BLE001 - a reader failure refuses this file only
                batcher.discard(source_file)
                refused[source_file] = log_parse_crash(source_file, exc)
            if progress:
                progress(f"alerts {index}/{len(paths)} {source_file}: "
                         f"{'refused' if source_file in refused else 'read'}")
            if batcher.added_bytes >= ROUND_BYTES:
                stage_round()
        if not changed:
            if ignored or same:
                with transaction(con):
                    record_files(con, SOURCE_KIND, ignored)
                    record_mtimes(con, stats, same)
            return [r for r, _, _ in ignored] + [results[p.relative_to(landing).as_posix()] for p in paths]
        stage_round()
        for source_file, _, _ in changed:
            n_loaded, n_rejected = loaded.get(source_file, 0), rejected.get(source_file, 0)
            results[source_file] = FileIngest(source_file, "refused" if source_file in refused else "loaded",
                                              n_loaded + n_rejected, n_loaded, n_rejected, refused.get(source_file))
        with transaction(con):
            if replaced:
                con.execute("DELETE FROM raw.rejects WHERE source_file IN (SELECT unnest(?))", [replaced])
            # The lake file sets written by the rounds become visible with the ledger rows below
            # (models/ingest/lake.py).
            con.execute(
                f"""INSERT INTO raw.rejects
                    SELECT source_file, '{SOURCE_KIND}', line_no, reject_raw, error, now()
                    FROM _alert_stage_rejects"""
            )
            for source_file, error in refused.items():
                con.execute(f"INSERT INTO raw.rejects VALUES (?, '{SOURCE_KIND}', 0, NULL, ?, now())",
                            [source_file, error])
            record_files(con, SOURCE_KIND, ignored + [(results[source_file], sha, size) for source_file, sha, size in changed])
            record_mtimes(con, stats, [*same, *(source_file for source_file, _, _ in changed)])
            if miner is not None:
                save_miner(con, miner, ALERT_MINER)
    finally:
        batcher.close()
        con.execute(f"DROP TABLE IF EXISTS {_STAGE}; DROP TABLE IF EXISTS _alert_seq; "
                    "DROP TABLE IF EXISTS _alert_stage_rejects")
        try:
            con.unregister("_alert_template_ids")
        except duckdb.Error:
            pass
    remove_unlisted_files(con, lake, ALERT_LAKE.name)
    return [r for r, _, _ in ignored] + [results[p.relative_to(landing).as_posix()] for p in paths]


# -- core ----------------------------------------------------------------------------------------


# Received order as one BIGINT per notification: (rank of its file by name) << 32 | seq. The
# first notification of an alert (its labels, texts, template) and the one that decided its status
# (the first resolved one, else the last) are found with min/max of it and joined back: far cheaper
# than one arg_min per field over a million rows.
# The lake view is read once (each scan opens every file: ~0.6 s on a year); the files are ranked
# from the ledger (a file without rows only leaves a gap in the ranks).
_DEDUP_SQL = f"""
CREATE OR REPLACE TEMP TABLE _alert_files AS
SELECT source_file, row_number() OVER (ORDER BY source_file) AS file_rank
FROM raw.ingested_files WHERE source_kind = '{SOURCE_KIND}';

-- (The hash join builds on the ledger's files as written: the lake view's row estimate, first file
-- x files, can fall below theirs, and the optimizer would then build on every notification.)
{LAKE_JOIN_BUILD_SIDE};
CREATE OR REPLACE TEMP TABLE _alert_rows AS
SELECT (f.file_rank << 32) + r.seq AS ord, r.fingerprint, r.starts_at,
       date_trunc('millisecond', r.starts_at) AS start_ms, r.format = 'prometheus_api' AS from_prometheus,
       -- A Grafana resolve that is no recovery (NOT_A_RECOVERY: the series vanished, the rule was paused...)
       CASE WHEN r.status = 'resolved' AND r.annotations->>'grafana_state_reason' IN (__NOT_A_RECOVERY__)
            THEN 'lost' ELSE r.status END AS status,
       r.ends_at, r.alertname, r.labels, r.annotations, r.template_id,
       r.received_at, {SNAPSHOT_SQL} AS from_snapshot, regexp_replace(source_file, '/[^/]*$', '') AS source_dir
FROM raw.alert_notifications AS r JOIN _alert_files AS f USING (source_file);
RESET disabled_optimizers;

-- A Prometheus /api/v1/alerts activeAt is when the rule became pending; Alertmanager's startsAt is
-- when it fired, `for:` later. The rule stays active in between, so no other occurrence of the
-- fingerprint can start there: the activation is the first Alertmanager-side occurrence starting
-- at or after it — unless that one starts at or after the next activation Prometheus showed, or
-- more than the longest `for:` (max_for_us) later (then Alertmanager missed the firing).
CREATE OR REPLACE TEMP TABLE _alert_activations AS
WITH prom AS (
    SELECT fingerprint, start_ms, lead(start_ms) OVER (PARTITION BY fingerprint ORDER BY start_ms) AS next_ms
    FROM (SELECT DISTINCT fingerprint, start_ms FROM _alert_rows WHERE from_prometheus AND status = 'firing')
), fired AS (
    SELECT DISTINCT fingerprint, start_ms AS fired_ms FROM _alert_rows
    WHERE NOT from_prometheus AND status IN ('firing', 'resolved', 'lost')
)
SELECT p.fingerprint, p.start_ms, f.fired_ms
FROM prom AS p ASOF JOIN fired AS f ON f.fingerprint = p.fingerprint AND f.fired_ms >= p.start_ms
WHERE f.fired_ms <= p.start_ms + to_microseconds(__MAX_FOR_US__)
  AND (p.next_ms IS NULL OR f.fired_ms < p.next_ms);

CREATE OR REPLACE TEMP TABLE _alerts_dedup AS
WITH n AS (
    -- The occurrence: fingerprint and start to the millisecond. Webhooks print startsAt to the
    -- nanosecond, Alertmanager's /api/v2/alerts to the millisecond: one alert, two precisions.
    SELECT r.fingerprint, r.starts_at, r.start_ms, coalesce(a.fired_ms, r.start_ms) AS occurrence_ms,
           r.from_prometheus, r.status, r.ends_at, r.ord, r.received_at, r.from_snapshot, r.source_dir
    FROM _alert_rows AS r
    LEFT JOIN _alert_activations AS a
           ON r.from_prometheus AND a.fingerprint = r.fingerprint AND a.start_ms = r.start_ms
    WHERE r.status IN ('firing', 'resolved', 'lost')
), g AS (
    SELECT fingerprint, occurrence_ms,
           -- The most precise start of the firing (a truncated one is never later); an activeAt
           -- is the start only of an activation Alertmanager did not report.
           coalesce(max(starts_at) FILTER (WHERE start_ms = occurrence_ms AND NOT from_prometheus),
                    max(starts_at) FILTER (WHERE start_ms = occurrence_ms)) AS starts_at,
           count(*) AS n_notifications,
           bool_or(status = 'resolved') AS resolved,
           min(ends_at) FILTER (WHERE status = 'resolved') AS resolved_ends_at,
           min(ord) AS first_ord,
           coalesce(min(ord) FILTER (WHERE status = 'resolved'), max(ord)) AS deciding_ord,
           max(received_at) FILTER (WHERE NOT from_snapshot) AS last_notified,
           bool_or(status = 'lost') AS lost
    FROM n
    GROUP BY fingerprint, occurrence_ms
), lost AS (
    -- An occurrence whose only resolves were no recovery (its series vanished): its end is unknown,
    -- it still fires — until the fingerprint's next occurrence starts (the series came back and
    -- the rule fired anew), the latest it can have lasted as this occurrence.
    SELECT fingerprint, occurrence_ms,
           lead(starts_at) OVER (PARTITION BY fingerprint ORDER BY occurrence_ms) AS next_start, lost
    FROM g
), snapshots AS (
    SELECT DISTINCT source_dir, received_at AS snap_ts FROM _alert_rows WHERE from_snapshot AND received_at IS NOT NULL
), seen AS (
    -- The last snapshot of each source (folder) that showed the occurrence, and the endsAt it showed.
    SELECT fingerprint, occurrence_ms, source_dir, max(received_at) AS last_seen,
           arg_max(ends_at, received_at) AS last_ends
    FROM n WHERE from_snapshot AND received_at IS NOT NULL
    GROUP BY fingerprint, occurrence_ms, source_dir
), gone AS (
    -- A later snapshot of the same source without it: the alert had ended by then, after the last
    -- one that showed it. Within those bounds, the endsAt that one showed — Alertmanager's time to
    -- resolve it unless the rule sent it again, which it did not.
    SELECT s.fingerprint, s.occurrence_ms,
           min(least(x.snap_ts, greatest(s.last_seen, coalesce(s.last_ends, x.snap_ts)))) AS gone_at,
           min(x.snap_ts) AS gone_by
    FROM seen AS s ASOF JOIN snapshots AS x ON x.source_dir = s.source_dir AND x.snap_ts > s.last_seen
    GROUP BY s.fingerprint, s.occurrence_ms
), first AS (
    SELECT ord, alertname, labels, annotations, template_id FROM _alert_rows
)
SELECT ('0x' || left(md5(g.fingerprint || '|' || epoch_us(g.occurrence_ms)::VARCHAR), 15))::BIGINT AS alert_id,
       g.fingerprint, g.starts_at, first.alertname,
       CASE WHEN g.resolved OR e.gone_at IS NOT NULL OR (l.lost AND l.next_start IS NOT NULL) THEN 'resolved'
            ELSE 'firing' END AS status,
       CASE WHEN g.resolved THEN g.resolved_ends_at
            WHEN e.gone_at IS NOT NULL THEN e.gone_at
            WHEN l.lost THEN l.next_start END AS ends_at,
       first.labels, first.annotations, first.template_id,
       deciding.source_file, g.n_notifications, first_file.source_file AS first_received_file
FROM g
-- (unless a notification received after that snapshot still showed it)
LEFT JOIN gone AS e ON e.fingerprint = g.fingerprint AND e.occurrence_ms = g.occurrence_ms
                   AND (g.last_notified IS NULL OR g.last_notified <= e.gone_by)
JOIN lost AS l ON l.fingerprint = g.fingerprint AND l.occurrence_ms = g.occurrence_ms
JOIN first ON first.ord = g.first_ord
JOIN _alert_files AS first_file ON first_file.file_rank = g.first_ord >> 32
JOIN _alert_files AS deciding ON deciding.file_rank = g.deciding_ord >> 32;
"""


#: Per ``core.alerts`` row that Alertmanager last showed held back (``alert_id``, ``suppressed``):
#: ``inhibited`` — an inhibit rule muted it as a consequence of another firing alert (its
#: ``status.inhibitedBy``) —, else ``silenced`` (``status.silencedBy``: an operator's silence). Read
#: from the latest bare-alert notification of the occurrence (an ``/api/v2/alerts`` snapshot), whose
#: ``status`` object ``raw.alert_notifications.payload_status`` keeps (lower-cased).
SUPPRESSED_SQL = r"""
WITH s AS (
    SELECT fingerprint, date_trunc('millisecond', starts_at) AS start_ms,
           arg_max(payload_status, (coalesce(received_at, TIMESTAMPTZ '1970-01-01 00:00:00+00'), source_file, seq))::JSON
               AS st
    FROM raw.alert_notifications
    WHERE format = 'alert' AND starts_with(payload_status, '{')
    GROUP BY ALL
)
SELECT a.alert_id,
       CASE WHEN json_array_length(s.st->'inhibitedby') > 0 THEN 'inhibited'
            WHEN json_array_length(s.st->'silencedby') > 0 THEN 'silenced' END AS suppressed
FROM core.alerts AS a JOIN s ON s.fingerprint = a.fingerprint AND s.start_ms = date_trunc('millisecond', a.starts_at)
WHERE json_array_length(s.st->'inhibitedby') > 0 OR json_array_length(s.st->'silencedby') > 0
"""


_NAMES_SCHEMA = {"value": pl.String, "node": pl.String, "host": pl.String, "nodes": pl.String}


def _map_values(con: duckdb.DuckDBPyConnection, mapping: NodeMapping, known_nodes: Sequence[str],
                mapped: pl.DataFrame) -> pl.DataFrame:
    """``mapped`` and the node, host and node list of every candidate value of ``_alert_label_values``
    not in it yet (each distinct value mapped once)."""
    values = con.sql(
        """SELECT DISTINCT value FROM (SELECT unnest(node_values) AS value FROM _alert_label_values)
           WHERE value IS NOT NULL AND value <> '' ORDER BY value"""
    ).pl()["value"]
    values = values.filter(~values.is_in(mapped["value"].implode()))
    new = pl.DataFrame({"value": values, "node": node_names(values, mapping, known_nodes),
                        "host": host_names(values, mapping),
                        "nodes": node_lists(values, mapping, known_nodes)}, schema=_NAMES_SCHEMA)
    return pl.concat([mapped, new])


def build_core_alerts(
    con: duckdb.DuckDBPyConnection,
    settings: AlertSettings | None = None,
    known_nodes: Sequence[str] = (),
) -> tuple[int, int]:
    """Rebuild ``core.alerts`` and ``core.alert_templates`` from ``raw.alert_notifications`` in one
    transaction (a deterministic function of raw and the settings); returns their row counts.

    ``known_nodes``: the cluster's node names (``ClusterConfig.node_names``); empty = no list, any
    host name that is not an address counts as a node.
    """
    settings = settings or AlertSettings()
    mapping = settings.nodes
    templates = load_miner(con, ALERT_MINER).templates().select("template_id", "template")
    try:
        # TEMP tables first (the warehouse is untouched), then one transaction replaces the tables.
        with unordered_inserts(con):  # TEMP tables: their row order does not matter
            con.execute(_DEDUP_SQL.replace("__MAX_FOR_US__", str(settings.max_for_us))
                        .replace("__NOT_A_RECOVERY__", ", ".join(f"'{r}'" for r in NOT_A_RECOVERY)))
            con.execute(f"CREATE OR REPLACE TEMP TABLE _alert_label_values AS "
                        f"{label_values_sql(mapping, alerts='_alerts_dedup', annotations=None)}")
        names = _map_values(con, mapping, known_nodes, pl.DataFrame(schema=_NAMES_SCHEMA))
        if known_nodes:
            # Step 5 of the node rule (annotation fallback): the annotation words of the alerts whose
            # labels named no node, then the mapping of the words not mapped yet.
            con.register("_alert_node_names", names.to_arrow())
            with unordered_inserts(con):
                con.execute("CREATE OR REPLACE TEMP TABLE _alert_note_values AS "
                            + annotation_values_sql(mapping, values="_alert_label_values", alerts="_alerts_dedup",
                                                    names="_alert_node_names"))
            con.unregister("_alert_node_names")
            con.execute("DROP TABLE _alert_label_values; ALTER TABLE _alert_note_values RENAME TO _alert_label_values")
            names = _map_values(con, mapping, known_nodes, names)
        con.register("_alert_node_names", names.to_arrow())
        con.register("_miner_templates", templates.to_arrow())
        with transaction(con):
            con.execute("DELETE FROM core.alerts")
            con.execute(
                f"""INSERT INTO core.alerts BY NAME
                    WITH loc AS ({location_sql(mapping, values='_alert_label_values', names='_alert_node_names',
                                               without_node_list=not known_nodes)})
                    SELECT d.alert_id, d.fingerprint, d.alertname, d.status,
                           NULLIF(d.labels->>'severity', '') AS severity,
                           loc.node, loc.target, loc.target_label, d.starts_at, d.ends_at, d.labels,
                           {SUMMARY_SQL.replace("annotations", "d.annotations")} AS summary,
                           {DESCRIPTION_SQL.replace("annotations", "d.annotations")} AS description,
                           d.template_id, d.source_file, d.n_notifications,
                           d.first_received_file
                    FROM _alerts_dedup AS d JOIN loc USING (alert_id)
                    ORDER BY d.starts_at, d.alert_id"""
            )
            con.execute("DELETE FROM core.alert_templates")
            con.execute(
                f"""INSERT INTO core.alert_templates
                    SELECT a.template_id, any_value(t.template) AS template,
                           arg_min({TEMPLATE_TEXT_SQL}, (a.starts_at, a.alert_id)) AS example,
                           count(*) AS alerts, min(a.starts_at) AS first_seen_ts, max(a.starts_at) AS last_seen_ts
                    FROM core.alerts AS a LEFT JOIN _miner_templates AS t USING (template_id)
                    WHERE a.template_id IS NOT NULL
                    GROUP BY a.template_id
                    ORDER BY a.template_id"""
            )
    finally:
        for view in ("_alert_node_names", "_miner_templates"):
            try:
                con.unregister(view)
            except duckdb.Error:
                pass
        con.execute("DROP TABLE IF EXISTS _alerts_dedup; DROP TABLE IF EXISTS _alert_files; "
                    "DROP TABLE IF EXISTS _alert_rows; DROP TABLE IF EXISTS _alert_label_values; "
                    "DROP TABLE IF EXISTS _alert_note_values; "
                    "DROP TABLE IF EXISTS _alert_activations")
    n_alerts = con.sql("SELECT count(*) FROM core.alerts").fetchall()[0][0]
    n_templates = con.sql("SELECT count(*) FROM core.alert_templates").fetchall()[0][0]
    return n_alerts, n_templates
