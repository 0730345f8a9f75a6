"""``core.node_events``, ``core.log_template_files`` and ``core.log_templates``, kept per node-log file
version: a night reads its new node-log files, not the whole history
(:mod:`gpusre.models.ingest.version_summaries`)."""

from __future__ import annotations

import duckdb
import polars as pl

from gpusre.models.ingest.version_summaries import VersionSummary, refresh_version_summary, version_changes
from gpusre.models.logs.node_event_copies import in_step, note_changed_events, refresh_node_event_copies
from gpusre.models.sources.registry import lake_table
from gpusre.models.warehouse import read_sql

__all__ = ["NODE_EVENT_SUMMARIES", "refresh_node_event_tables"]

#: The per-version tables of the node logs, with the query that makes one version's rows.
NODE_EVENT_SUMMARIES: tuple[VersionSummary, ...] = (
    VersionSummary("core.node_events", "syslog", lake_table("syslog"), read_sql("core/node_events.sql")),
    VersionSummary("core.log_template_files", "syslog", lake_table("syslog"), read_sql("core/log_template_files.sql")),
)


def refresh_node_event_tables(con: duckdb.DuckDBPyConnection, miner_templates: pl.DataFrame) -> None:
    """Bring the per-version tables in step with the ledger and core.node_event_copies with
    core.node_events (redone from each changed node's earliest inserted or removed event on), then
    rebuild ``core.log_templates`` from ``core.log_template_files`` and ``miner_templates``
    (``template_id``, ``template``: the persisted miner's current texts). Call it inside a transaction."""
    events = NODE_EVENT_SUMMARIES[0]
    changes = version_changes(con, events) if in_step(con) else None
    if changes is not None:
        note_changed_events(con, changes[0])  # the rows about to be removed
    for summary in NODE_EVENT_SUMMARIES:
        refresh_version_summary(con, summary)
    if changes is not None:
        note_changed_events(con, changes[1])  # the rows just inserted
    refresh_node_event_copies(con, whole=changes is None)
    con.register("_miner_templates", miner_templates.to_arrow())
    try:
        con.execute(read_sql("core/log_templates.sql"))
    finally:
        con.unregister("_miner_templates")
