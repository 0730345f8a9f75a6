"""A webhook file named for day D covers day D: the span of the alert data reaches D+1 00:00 (or the
latest time a delivery shows when later), capped at the data's end (without one: the last delivery);
the day's last hardware incidents are judged. Hand-made inputs shaped like probe_z (a last day whose
only delivery is a Watchdog)."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import polars as pl

from gpusre.models.alerts.clustering import ALERT_DATA_SPAN_SQL, alert_coverage, alert_data_span_sql, data_end


def _t(day: int, h: int = 0, m: int = 0, s: int = 0) -> datetime:
    return datetime(2026, 11, day, h, m, s, tzinfo=UTC)


def _notifications(rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE SCHEMA raw")
    con.execute("""CREATE TABLE raw.alert_notifications (source_file VARCHAR, line_no BIGINT, payload_no INTEGER,
                   received_at TIMESTAMPTZ, alertname VARCHAR, status VARCHAR, starts_at TIMESTAMPTZ,
                   ends_at TIMESTAMPTZ)""")
    con.executemany("INSERT INTO raw.alert_notifications VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return con


#: 11-26: a NodeDown at 11:00:30 and its resolve (endsAt 11:40); 11-28: only the Watchdog (started 11-01).
ROWS = [
    ("alerts/alertmanager-2026-11-26.jsonl", 1, 1, None, "NodeDown", "firing", _t(26, 11, 0, 30), None),
    ("alerts/alertmanager-2026-11-26.jsonl", 2, 1, None, "NodeDown", "resolved", _t(26, 11, 0, 30), _t(26, 11, 40)),
    ("alerts/alertmanager-2026-11-28.jsonl", 1, 1, None, "Watchdog", "firing", _t(1), None),
]


def _capped(con: duckdb.DuckDBPyConnection, end: datetime | None) -> tuple:
    return con.sql(alert_data_span_sql("$data_end"), params={"data_end": end}).fetchall()[0]


def test_the_file_of_the_last_day_covers_that_day() -> None:
    con = _notifications(ROWS)
    # Without a data's end (an alerts-only landing): to the last delivery, the Watchdog's file day.
    assert con.sql(ALERT_DATA_SPAN_SQL).fetchall()[0] == (_t(26, 11, 0, 30), _t(28))
    # The data ends 11-29 00:05 (a dump cut after midnight): the day's end, 11-29 00:00.
    assert _capped(con, _t(29, 0, 5)) == (_t(26, 11, 0, 30), _t(29))
    # The data ends 11-28 23:30: the span stops there.
    assert _capped(con, _t(28, 23, 30)) == (_t(26, 11, 0, 30), _t(28, 23, 30))
    # The data ends before the file's day: the cap never pulls the span below what a delivery shows —
    # the Watchdog's file day 11-28 00:00, as before this rule.
    assert _capped(con, _t(27, 12)) == (_t(26, 11, 0, 30), _t(28))
    # The data's end unknown (NULL): no extension, as without one.
    assert _capped(con, None) == (_t(26, 11, 0, 30), _t(28))


def test_a_later_shown_time_or_a_logger_time_wins() -> None:
    # A resolve in the file of 11-28 whose endsAt is 11-29 02:00: later than the day's end.
    con = _notifications(ROWS + [("alerts/alertmanager-2026-11-28.jsonl", 2, 1, None, "NodeDown", "resolved",
                                  _t(28, 20), _t(29, 2))])
    assert _capped(con, _t(29, 0, 5)) == (_t(26, 11, 0, 30), _t(29, 2))
    # A logger's receive time is exact: its file's name adds nothing (received 11-28 06:10 in a file of 11-28).
    con = _notifications([("alerts/2026-11-28.log", 1, 1, _t(28, 6, 10), "NodeDown", "firing", _t(28, 6), None)])
    assert _capped(con, _t(29, 0, 5)) == (_t(28, 6, 10), _t(28, 6, 10))
    # A file without a date in its name: the deliveries' own times only.
    con = _notifications([("alerts/webhook.log", 1, 1, None, "NodeDown", "firing", _t(28, 6), None)])
    assert con.sql(ALERT_DATA_SPAN_SQL).fetchall()[0] == (_t(28, 6), _t(28, 6))


def test_the_last_days_incidents_are_judged() -> None:
    """probe_z's shape: hardware incidents 11-26 11:00 (alerted), 11-28 05:59:58 and 21:30 (no alert).
    With the span to 11-28 00:00 (the old rule) the two of 11-28 were not judged; to 11-29 00:00 they
    are, as missed."""
    alerts = pl.DataFrame({"alert_id": [1], "fingerprint": ["a1"], "alertname": ["NodeDown"], "status": ["resolved"],
                           "node": ["gpu020"], "starts_at": [_t(26, 11, 0, 30)], "ends_at": [_t(26, 11, 40)]})
    hw = pl.DataFrame({"incident_id": ["inc-f4", "inc-f7", "inc-f8"],
                       "start_ts": [_t(26, 11), _t(28, 5, 59, 58), _t(28, 21, 30)],
                       "nodes": [["gpu020"], ["gpu018"], ["gpu007"]]})
    old = alert_coverage(alerts, hw, data_span=(_t(24), _t(28)))
    assert old.select("incident_id", "covered").rows() == [("inc-f4", True)]
    new = alert_coverage(alerts, hw, data_span=(_t(24), _t(29)))
    assert new.select("incident_id", "covered").rows() == [("inc-f4", True), ("inc-f7", False), ("inc-f8", False)]


def test_data_end_is_the_latest_source_end() -> None:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    assert data_end(con) is None  # nothing but alerts: no data's end, no extension
    con.execute("CREATE SCHEMA core; CREATE SCHEMA raw")
    # Accounting: a job 11-28 20:00 -> 23:30 (its last moment 23:30).
    con.execute("CREATE TABLE core.jobs (start_ts TIMESTAMPTZ, end_ts TIMESTAMPTZ, elapsed_s BIGINT, "
                "submit_ts TIMESTAMPTZ)")
    con.execute("INSERT INTO core.jobs VALUES (?, ?, 12600, ?)", [_t(28, 20), _t(28, 23, 30), _t(28, 19)])
    assert data_end(con) == _t(28, 23, 30)
    # Node logs: the last line 11-28 23:47:01 (alerts' records do not count).
    con.execute("CREATE TABLE raw.record_days (source_kind VARCHAR, first_ts TIMESTAMPTZ, last_ts TIMESTAMPTZ)")
    con.executemany("INSERT INTO raw.record_days VALUES (?, ?, ?)", [
        ("syslog", _t(28, 0, 17, 1), _t(28, 23, 47, 1)), ("alerts", _t(28), _t(29, 3)),
        ("sacct", _t(28, 19), _t(28, 23, 30))])
    assert data_end(con) == _t(28, 23, 47, 1)
    # Node-state history: the last dump observed 11-29 00:05.
    con.execute("CREATE TABLE raw.slurm_events (start_ts TIMESTAMPTZ, end_ts TIMESTAMPTZ, observed_ts TIMESTAMPTZ)")
    con.execute("CREATE TABLE raw.slurm_event_snapshots (observed_ts TIMESTAMPTZ)")
    con.execute("INSERT INTO raw.slurm_events VALUES (?, NULL, ?)", [_t(28, 21, 35), _t(29, 0, 5)])
    assert data_end(con) == _t(29, 0, 5)
