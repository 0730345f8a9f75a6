"""marts.node_hardware_loss on a hand-made warehouse: both definitions of GPU-hours lost to hardware per node and month."""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import duckdb
import pytest

from gpusre.models.failures.node_loss import write_node_hardware_loss
from gpusre.models.warehouse import apply_ddl, connect

UTC = timezone.utc
AS_OF = datetime(2026, 10, 5, 12, tzinfo=UTC)


def t(month: int, day: int, hour: float = 0) -> datetime:
    return datetime(2026, month, day, int(hour), int(round(hour % 1 * 60)), tzinfo=UTC)


@pytest.fixture
def con(tmp_path: Path):  # noqa: ANN201 - DuckDB connection
    # Bare DDL: raw.* are views over the typed lake.* tables, which the test fills by hand.
    c = duckdb.connect(str(tmp_path / "w.duckdb"))
    c.execute("SET TimeZone = 'UTC'")
    apply_ddl(c)
    # accounting from 09-01 00:00 to 10-05 12:00: September complete, October not
    c.execute("INSERT INTO lake.sacct_records (source_file, line_no, record_type, job_id, end_ts) VALUES "
              "('s', 2, 'allocation', '1', ?), ('s', 3, 'allocation', '2', ?)", [t(9, 1), AS_OF])
    c.execute("CREATE TABLE marts.hw_incidents (incident_id VARCHAR, nodes VARCHAR[], start_ts TIMESTAMPTZ, "
              "recovered_ts TIMESTAMPTZ, scope VARCHAR, cause_class VARCHAR)")
    c.executemany("INSERT INTO marts.hw_incidents VALUES (?, ?, ?, ?, ?, ?)", [
        ("A", ["n1"], t(9, 10, 12), t(9, 11), "node", "hardware"),          # 12 h in September
        ("B", ["n2"], t(9, 30, 18), t(10, 1, 6), "node", "hardware"),       # 6 h in September, 6 h in October
        ("C", ["n3"], t(9, 5, 10), t(9, 6, 12), "node", "hardware"),        # n3 has node states: they give its down time
        ("D", ["n1", "n2"], t(9, 20), t(9, 20, 1), "leaf_switch", "hardware"),  # not node scope: no down time
        # The operator marked it not a failure (incidents.csv): no down time, no incident count.
        ("E", ["n1"], t(9, 15), t(9, 15, 6), "node", "not_a_failure"),
    ])
    c.executemany("INSERT INTO marts.node_availability_daily (day, node, observed_hours, in_service_hours, down_hours, "
                  "down_hardware_hours, down_maintenance_hours, down_health_check_hours, down_other_hours, source) "
                  "VALUES (?, 'n3', 24, ?, ?, ?, 0, 0, 0, 'node_states')",
                  [(date(2026, 9, 5), 21.0, 3.0, 3.0), (date(2026, 9, 6), 22.0, 2.0, 2.0)])
    c.executemany("INSERT INTO core.jobs (job_id, state, nodes, restarts, source_file, line_no) VALUES "
                  "(?, 'FAILED', ?, 0, 's', 1)", [("j1", ["n1"]), ("jD", ["n1", "n2", "n4"]), ("j6", ["n1"]),
                                                   ("j5", ["n3"])])
    c.execute("INSERT INTO core.job_instances (job_id, instance_no, is_latest, state, start_ts, nodes, source_file, "
              "line_no) VALUES ('j5', 1, false, 'REQUEUED', ?, ['n3'], 's', 1)", [t(9, 5, 9)])
    c.execute("CREATE TABLE marts.job_failure_attribution (job_id VARCHAR, attribution VARCHAR, incident_id VARCHAR, "
              "end_ts TIMESTAMPTZ, lost_gpu_hours DOUBLE)")
    c.executemany("INSERT INTO marts.job_failure_attribution VALUES (?, ?, ?, ?, ?)", [
        ("j1", "infrastructure", "A", t(9, 10, 12.1), 20.0),
        ("jD", "infrastructure", "D", t(9, 20, 0.1), 30.0),   # split between n1 and n2 (n4 not in the incident)
        ("j6", "user", "A", t(9, 10, 13), 99.0),              # the user's: not a hardware loss
    ])
    c.execute("CREATE TABLE marts.instance_failure_attribution (job_id VARCHAR, instance_no INTEGER, "
              "attribution VARCHAR, incident_id VARCHAR, end_ts TIMESTAMPTZ, lost_gpu_hours DOUBLE)")
    c.execute("INSERT INTO marts.instance_failure_attribution VALUES ('j5', 1, 'infrastructure', 'C', ?, 10.0)",
              [t(9, 5, 10.2)])
    yield c
    c.close()


def test_both_definitions_by_hand(con: duckdb.DuckDBPyConnection) -> None:
    assert write_node_hardware_loss(con, gpus_per_node=8, as_of=AS_OF) == 4
    rows = con.sql("SELECT period, node, down_hardware_hours, down_source, down_gpu_hours, hw_incidents, jobs_killed, "
                   "job_lost_gpu_hours, month_complete FROM marts.node_hardware_loss ORDER BY month, node").fetchall()
    assert rows == [
        ("2026-09", "n1", 12.0, "incidents", 96.0, 2, 2, 35.0, True),      # A 12 h x 8; j1 20 + half of jD's 30
        ("2026-09", "n2", 6.0, "incidents", 48.0, 2, 1, 15.0, True),       # B until midnight; half of jD
        ("2026-09", "n3", 5.0, "node_states", 40.0, 1, 1, 10.0, True),     # 3 h + 2 h from node states; j5's instance
        ("2026-10", "n2", 6.0, "incidents", 48.0, 0, 0, 0.0, False),       # B from midnight to 06:00
    ]


def test_without_failure_marts_writes_nothing(tmp_path: Path) -> None:
    con = connect(tmp_path / "empty.duckdb")
    try:
        assert write_node_hardware_loss(con, 8, None) == 0
    finally:
        con.close()
