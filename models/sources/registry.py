"""Every input source, declared once: what the definitions, the landing sensor, data freshness, the
coverage warnings and the run summary read.

Adding a source is one folder ``models/sources/<source>/`` (parse + ingest) and one entry in
:data:`SOURCES`. References to code are ``"module:attribute"`` strings resolved on use
(:func:`resolve`), so this module imports no parser, no Dagster, and the warehouse can read the
lake tables from it without import cycles; ``tests/test_source_registry.py`` resolves every one.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from importlib import import_module
from pathlib import Path
from typing import Any

from gpusre.models.accounting_span import ACCOUNTING_RECORD_TS_SQL
from gpusre.models.ingest.lake import LakeTable, ensure_view

__all__ = ["SOURCES", "Source", "create_registry_views", "lake_table", "lake_tables", "record_sources", "resolve", "source", "watched_files"]


@dataclass(frozen=True)
class Source:
    """One input source.

    ``name`` is also its ``source_kind`` in ``raw.ingested_files``; ``landing`` the folder (or the
    single file) under the landing directory; ``patterns`` the file names the landing sensor
    watches there (fnmatch on the name, compression suffixes included); ``parser`` the function
    that loads new or changed files; ``lake`` the raw record table kept as Parquet (None for a
    source read directly, such as ``incidents.csv``); ``label`` what one record is (run summary);
    ``title`` the source's name in reports; ``record_ts`` the SQL expression of a record's own time
    over ``raw.<lake table>`` (data freshness); ``dense`` True when every UTC day has records, so an
    empty day is missing data; ``asset`` the key of the asset that ingests (or reads) it;
    ``record_node`` the SQL expression of the node a record comes from, where the coverage marts
    need it (node logs: which nodes logged each day), else None.
    """

    name: str
    landing: str
    patterns: tuple[str, ...]
    parser: str
    lake: LakeTable | None
    label: str
    title: str
    record_ts: str | None
    dense: bool
    asset: tuple[str, ...]
    record_node: str | None = None

    def __post_init__(self) -> None:
        # The lake table's ledger kind is the source's name, stated once here.
        if self.lake is not None and self.lake.source_kind != self.name:
            object.__setattr__(self, "lake", replace(self.lake, source_kind=self.name))

    def landing_files(self, root: Path) -> list[Path]:
        """The files of this source under the landing directory ``root`` that match its patterns."""
        base = root / self.landing
        if base.is_file() or base.is_symlink():
            candidates = [base]
        elif base.is_dir():
            candidates = sorted(p for p in base.rglob("*") if p.is_file() or p.is_symlink())
        else:
            return []
        return [p for p in candidates if any(fnmatch.fnmatch(p.name.lower(), pat) for pat in self.patterns)]

    def freshness_sql(self) -> str | None:
        """``SELECT '<name>' AS source_kind, <record time> AS ts FROM raw.<table>`` (None without records)."""
        if self.lake is None or self.record_ts is None:
            return None
        return f"SELECT '{self.name}' AS source_kind, {self.record_ts} AS ts FROM raw.{self.lake.name}"


SOURCES: tuple[Source, ...] = (
    Source(
        name="sacct", landing="sacct", patterns=("*",),
        parser="gpusre.models.sources.sacct.ingest:ingest_sacct_files",
        lake=LakeTable("sacct_records", ("end_ts", "start_ts", "submit_ts"), day_of_landing_file=True),
        label="sacct records", title="Slurm accounting (sacct)",
        record_ts=ACCOUNTING_RECORD_TS_SQL, dense=True,
        asset=("raw", "sacct_records"),
    ),
    Source(
        name="syslog", landing="syslog", patterns=("*",),
        parser="gpusre.models.sources.syslog.ingest:ingest_syslog_files",
        # Lines carry the key of their masked message; the view looks its template id up (the
        # template_id column itself is filled only in files written before parallel parsing).
        lake=LakeTable("syslog_lines", ("ts",), hidden=("message_key",),
                       join="LEFT JOIN raw.syslog_message_templates AS m ON m.message_key = l.message_key",
                       expressions=(("template_id", "COALESCE(l.template_id, m.template_id)"),),
                       # Shipped per node, a day is thousands of small files (gpusre compact).
                       compactable=True),
        label="node-log lines", title="Node logs", record_ts="ts", dense=True,
        asset=("raw", "syslog_lines"), record_node="node",
    ),
    Source(
        name="alerts", landing="alerts", patterns=("*",),
        parser="gpusre.models.sources.alerts.ingest:ingest_alert_files",
        # One file per payload file: a day's payloads repeat alerts that started days before, and
        # per start day a year made 1,437 files of ~200 notifications (opening them was most of a scan).
        lake=LakeTable("alert_notifications", ("starts_at",), day_of_landing_file=True),
        # A notification's own time is its delivery (the logger's or snapshot's time), else the alert's start:
        # an always-firing Watchdog started days before the first delivery, and its start made the alert
        # data look older than it is ("2 days without records" before any payload arrived).
        label="alert notifications", title="Alerts", record_ts="coalesce(received_at, starts_at)", dense=False,
        asset=("raw", "alert_notifications"),
    ),
    Source(
        name="slurm_events", landing="slurm_events", patterns=("*",),
        parser="gpusre.models.sources.slurm_events.ingest:ingest_slurm_event_files",
        # One file per dump: `sacctmgr show event` lists every event of a window of days, and per
        # start day a year made 3,938 files of ~30 rows (0.4 of the 0.9 s a scan took was opening them).
        lake=LakeTable("slurm_events", ("start_ts",), day_of_landing_file=True),
        label="node-state events", title="Node states (Slurm)", record_ts="start_ts", dense=False,
        asset=("raw", "slurm_events"),
    ),
    Source(
        name="incidents", landing="incidents.csv", patterns=("incidents.csv",),
        parser="gpusre.models.sources.incidents.parse:read_operator_incidents",
        lake=None, label="operator incidents", title="Operator incidents (incidents.csv)",
        record_ts=None, dense=False,
        asset=("marts", "hw_incidents"),
    ),
)


def source(name: str) -> Source:
    """The registry entry called ``name``; KeyError for an unknown source."""
    for entry in SOURCES:
        if entry.name == name:
            return entry
    raise KeyError(name)


def record_sources() -> tuple[Source, ...]:
    """The sources whose records land in the lake (ingested file by file, with a ledger)."""
    return tuple(s for s in SOURCES if s.lake is not None)


def lake_table(name: str) -> LakeTable:
    """The lake table of source ``name`` (KeyError when it has none)."""
    table = source(name).lake
    if table is None:
        raise KeyError(f"source {name!r} keeps no lake table")
    return table


def lake_tables() -> tuple[LakeTable, ...]:
    """Every raw table kept in the Parquet lake."""
    return tuple(s.lake for s in SOURCES if s.lake is not None)


def watched_files(root: Path) -> list[Path]:
    """Every landing file of every source (what the landing sensor fingerprints)."""
    return [p for s in SOURCES for p in s.landing_files(root)]


def resolve(reference: str) -> Any:
    """The object a ``"module:attribute"`` reference names (ImportError / AttributeError if none)."""
    module, _, attribute = reference.partition(":")
    return getattr(import_module(module), attribute)


def create_registry_views(con: Any) -> None:
    """``raw.sources`` (source_kind, label, title, dense per record source) and ``raw.record_times``
    (source_kind, ts: every record's own time): what data freshness and coverage read."""
    records = record_sources()
    values = ", ".join(f"('{s.name}', '{s.label}', '{s.title}', {str(s.dense).lower()})" for s in records)
    union = " UNION ALL ".join(q for s in records if (q := s.freshness_sql()))
    ensure_view(con, "raw", "sources", f"CREATE OR REPLACE VIEW raw.sources AS SELECT * FROM (VALUES {values}) "
                                       "AS t(source_kind, label, title, dense)")
    ensure_view(con, "raw", "record_times", f"CREATE OR REPLACE VIEW raw.record_times AS {union}")
