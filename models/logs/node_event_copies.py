"""``core.node_event_copies``: the events of ``core.node_events`` that are a second copy of a logged event
(the rule: ``sql/core/node_event_copies.sql``), kept in step with it as node-log files come and go.

Why a table: the failure marts and the incident report take each logged event once, and working the
copies out over a year of events (a window over every event's node and message) cost ~0.9 s a night.
Whether an event is a copy depends only on the event before it of its node and key, and only when that
one is at most 30 s earlier; so when the files of some nodes change, the copies of those nodes are
redone from their earliest changed event on (inserted or removed), and the rest stand. A reader checks
that the table is in step (:func:`node_events_once_sql`) and otherwise works the copies out itself.
"""

from __future__ import annotations

import hashlib

import duckdb

from gpusre.models.warehouse import read_sql, table_exists

__all__ = ["in_step", "node_events_once_sql", "note_changed_events", "refresh_node_event_copies"]

_COPIES_SQL = read_sql("core/node_event_copies.sql")
#: The copy rule's fingerprint: a basis written by another rule is out of step.
DEFINITION = hashlib.sha1(_COPIES_SQL.encode()).hexdigest()[:12]
#: The (node, earliest changed event) notes of :func:`note_changed_events`, for this session only.
_SCOPE_TABLE = "CREATE TEMP TABLE IF NOT EXISTS _copy_scope (node VARCHAR, from_ts TIMESTAMPTZ)"
#: Every node from the first event on.
_ALL_NODES = "SELECT DISTINCT node, '-infinity'::TIMESTAMPTZ AS from_ts FROM core.node_events"


def _copies(scope: str) -> str:
    """The copy rule over the nodes and times of the relation ``scope`` (``node``, ``from_ts``)."""
    return f"WITH scope AS ({scope}), copies AS ({_COPIES_SQL}) SELECT * FROM copies"


def _basis(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """What identifies core.node_events' rows for the basis: their count and the sum of their ids."""
    n, total = con.sql("SELECT count(*), coalesce(sum(event_id::HUGEINT), 0) FROM core.node_events").fetchall()[0]
    return int(n), int(total)


def in_step(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether core.node_event_copies was last brought in step with core.node_events as it is now, by
    this copy rule."""
    if not table_exists(con, "core.node_event_copies_basis"):  # a warehouse from before, opened read-only
        return False
    rows = con.sql("SELECT events, event_id_sum, definition FROM core.node_event_copies_basis").fetchall()
    return len(rows) == 1 and rows[0][2] == DEFINITION and (int(rows[0][0]), int(rows[0][1])) == _basis(con)


def node_events_once_sql(con: duckdb.DuckDBPyConnection) -> str:
    """A query of core.node_events with each logged event once (``sql/core/node_events_once.sql``): the
    stored copies left out when they are in step, else the copies worked out in the query."""
    if in_step(con):
        return read_sql("core/node_events_once.sql")
    return (f"WITH _copies AS ({_copies(_ALL_NODES)}) "
            "SELECT * FROM core.node_events ANTI JOIN _copies USING (event_id)")


def note_changed_events(con: duckdb.DuckDBPyConnection, source_files: list[str]) -> None:
    """Note ``(node, earliest ts)`` of the events core.node_events holds from ``source_files`` now, for
    :func:`refresh_node_event_copies`: call it before their rows are removed and after new rows are
    inserted — the nodes, and from when, whose copies may have changed."""
    con.execute(_SCOPE_TABLE)
    if source_files:
        con.execute("INSERT INTO _copy_scope SELECT node, min(ts) FROM core.node_events "
                    "WHERE source_file IN (SELECT unnest(?)) GROUP BY node", [source_files])


def refresh_node_event_copies(con: duckdb.DuckDBPyConnection, *, whole: bool) -> None:
    """Bring core.node_event_copies in step with core.node_events: redo the nodes noted by
    :func:`note_changed_events` from their earliest noted event on, or with ``whole`` every node (the
    caller's changes were not all noted, or the table was not in step before them). Call it inside a
    transaction."""
    con.execute(_SCOPE_TABLE)
    try:
        if whole:
            con.execute("DELETE FROM core.node_event_copies")
            con.execute(f"INSERT INTO core.node_event_copies {_copies(_ALL_NODES)}")
        elif con.sql("SELECT count(*) FROM _copy_scope").fetchall()[0][0]:
            con.execute("CREATE OR REPLACE TEMP TABLE _copy_from AS "
                        "SELECT node, min(from_ts) AS from_ts FROM _copy_scope GROUP BY node")
            con.execute("DELETE FROM core.node_event_copies AS c USING _copy_from AS s "
                        "WHERE c.node IS NOT DISTINCT FROM s.node AND c.ts >= s.from_ts")
            con.execute(f"INSERT INTO core.node_event_copies {_copies('SELECT * FROM _copy_from')}")
    finally:
        con.execute("DROP TABLE IF EXISTS _copy_scope; DROP TABLE IF EXISTS _copy_from")
    n, total = _basis(con)
    con.execute("DELETE FROM core.node_event_copies_basis")
    con.execute("INSERT INTO core.node_event_copies_basis VALUES (?, ?, ?)", [n, total, DEFINITION])
