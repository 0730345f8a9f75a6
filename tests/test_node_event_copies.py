"""core.node_event_copies — the second copies of logged events — kept in step per node from the earliest
changed event on, equals the copy rule worked out over all events (the rule: a Python reference below,
written from sql/core/node_event_copies.sql's header), whatever files come and go; and the failure marts'
read of each event once takes it only while it is in step."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusre.models.logs.node_event_copies import (in_step, node_events_once_sql, note_changed_events,
                                                  refresh_node_event_copies)
from gpusre.models.warehouse import connect, transaction

T0 = datetime(2026, 11, 10, 6, 0, tzinfo=timezone.utc)
NHC = "Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE"
#: What a node logs: kernel lines (a copy within a second), NHC's verdict and slurmd's report of it.
MESSAGES = [("xid", "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."),
            ("xid", "NVRM: Xid (PCI:0000:3b:00): 74, NVLink error"),
            ("health_check", NHC),
            ("health_check", "error: health_check failed: rc:1 output:" + NHC.replace("  ", " #012 ", 1)),
            ("health_check", "Health check failed:  check_fs_mount:  /scratch not mounted")]


def _verdict(kind: str, message: str) -> str:
    if kind == "health_check" and "Health check failed:" in message:
        return re.sub(r"(\s|#01[12])+", " ", message[message.index("Health check failed:"):]).rstrip()
    return message


def _copies_by_rule(events: list[tuple]) -> set[int]:
    """The copy rule, event by event: the event before in its (node, key) group at most 1 s earlier, or
    30 s when one of the two is slurmd's report and the other NHC's own line."""
    groups: dict[tuple, list[tuple]] = {}
    for e in events:
        event_id, node, ts, kind, message, source_file, line_no = e
        groups.setdefault((node, _verdict(kind, message)), []).append((ts, source_file, line_no, event_id, kind, message))
    out: set[int] = set()
    for rows in groups.values():
        rows.sort()
        for prev, cur in zip(rows, rows[1:]):
            gap = cur[0] - prev[0]
            slurmd = [r[4] == "health_check" and "health_check failed: rc:" in r[5] for r in (prev, cur)]
            if gap <= timedelta(seconds=1) or (slurmd[0] != slurmd[1] and gap <= timedelta(seconds=30)):
                out.add(cur[3])
    return out


_event = st.tuples(st.sampled_from(["gpu1", "gpu2", None]), st.integers(0, 120), st.integers(0, len(MESSAGES) - 1),
                   st.integers(0, 3))  # node, half-seconds from T0, message, file


def _rows(raw: list[tuple], first_id: int, tag: str) -> list[tuple]:
    return [(first_id + i, node, T0 + timedelta(seconds=half / 2), MESSAGES[m][0], MESSAGES[m][1],
             f"syslog/{tag}{f}.log", i) for i, (node, half, m, f) in enumerate(raw)]


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    c = connect(Path(tmp_path_factory.mktemp("copies")) / "w.duckdb")
    yield c
    c.close()


def _insert(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    if rows:
        con.executemany("INSERT INTO core.node_events (event_id, node, ts, kind, message, source_file, line_no) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def _stored(con: duckdb.DuckDBPyConnection) -> set[int]:
    return {r[0] for r in con.sql("SELECT event_id FROM core.node_event_copies").fetchall()}


def _all(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return [(i, n, t.astimezone(timezone.utc), k, m, f, ln) for i, n, t, k, m, f, ln in con.sql(
        "SELECT event_id, node, ts, kind, message, source_file, line_no FROM core.node_events").fetchall()]


@settings(max_examples=120, deadline=None)
@given(before=st.lists(_event, max_size=30), after=st.lists(_event, max_size=20),
       removed=st.sets(st.integers(0, 3), max_size=2))
def test_copies_kept_per_node_equal_the_rule_over_all_events(con: duckdb.DuckDBPyConnection, before: list[tuple],
                                                             after: list[tuple], removed: set[int]) -> None:
    """Night 1 loads some files; night 2 removes some (a re-ingested or deleted file) and adds others
    whose lines fall anywhere in time, before, among and after night 1's (late files, relays, ties)."""
    with transaction(con):
        con.execute("DELETE FROM core.node_events; DELETE FROM core.node_event_copies; "
                    "DELETE FROM core.node_event_copies_basis")
        _insert(con, _rows(before, 0, "a"))
        refresh_node_event_copies(con, whole=True)
    assert _stored(con) == _copies_by_rule(_all(con))
    assert in_step(con)

    gone = [f"syslog/a{f}.log" for f in sorted(removed)]
    with transaction(con):
        note_changed_events(con, gone)
        con.execute("DELETE FROM core.node_events WHERE source_file IN (SELECT unnest(?))", [gone])
        added = _rows(after, 1000, "b")
        _insert(con, added)
        note_changed_events(con, sorted({r[5] for r in added}))
        refresh_node_event_copies(con, whole=False)
    assert _stored(con) == _copies_by_rule(_all(con))
    assert in_step(con)
    once = {r[0] for r in con.sql(node_events_once_sql(con)).fetchall()}
    assert once == {e[0] for e in _all(con)} - _copies_by_rule(_all(con))


def test_out_of_step_copies_are_not_used(con: duckdb.DuckDBPyConnection) -> None:
    """Events written by hand after the copies were brought in step (a test, a repair): the read of each
    event once works the copies out itself rather than trust a stale table."""
    kernel = MESSAGES[0]
    with transaction(con):
        con.execute("DELETE FROM core.node_events; DELETE FROM core.node_event_copies; "
                    "DELETE FROM core.node_event_copies_basis")
        _insert(con, [(1, "gpu1", T0, *kernel, "syslog/a.log", 1)])
        refresh_node_event_copies(con, whole=True)
    _insert(con, [(2, "gpu1", T0 + timedelta(milliseconds=300), *kernel, "syslog/kern.log", 1)])
    assert not in_step(con)
    assert "node_event_copies USING" not in node_events_once_sql(con)
    assert [r[0] for r in con.sql(node_events_once_sql(con)).fetchall()] == [1]
    with transaction(con):
        refresh_node_event_copies(con, whole=True)
    assert in_step(con) and _stored(con) == {2}
    assert [r[0] for r in con.sql(node_events_once_sql(con)).fetchall()] == [1]


def test_a_report_in_a_later_file_30_s_after_the_line_it_repeats_is_a_copy(con: duckdb.DuckDBPyConnection) -> None:
    """The edge of the reach: slurmd's report of an NHC run arrives in the next night's file, 30 s after
    NHC's own line of the night before (its run timeout); the copies redone from the new line on must
    still see the old one."""
    nhc, slurmd = MESSAGES[2], MESSAGES[3]
    with transaction(con):
        con.execute("DELETE FROM core.node_events; DELETE FROM core.node_event_copies; "
                    "DELETE FROM core.node_event_copies_basis")
        _insert(con, [(1, "gpu1", T0, *nhc, "syslog/a.log", 1)])
        refresh_node_event_copies(con, whole=True)
    with transaction(con):
        _insert(con, [(2, "gpu1", T0 + timedelta(seconds=30), *slurmd, "syslog/b.log", 1),
                      (3, "gpu1", T0 + timedelta(seconds=60), *slurmd, "syslog/b.log", 2)])
        note_changed_events(con, ["syslog/b.log"])
        refresh_node_event_copies(con, whole=False)
    assert _stored(con) == {2} == _copies_by_rule(_all(con))
