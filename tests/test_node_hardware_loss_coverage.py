"""marts.node_hardware_loss decides "covered by node-state history" as marts.node_availability_daily does.

A node the history covers and never shows out was in service (0 h down), even with a hardware incident that no
completed job closed; only node-hours without a row in the availability mart (before the history starts inside
its first day, after it ends) are estimated from incidents. Hand-made warehouse; the availability rows come from
the real model (node_availability_daily), so both marts read one definition.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models.failures.node_loss import write_node_hardware_loss
from gpusre.models.reliability.node_availability import node_availability_daily
from gpusre.models.warehouse import apply_ddl

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")
NODES = ["n1", "n2", "n3"]


def t(day: int, hour: float = 0) -> datetime:
    return datetime(2026, 11, day, tzinfo=UTC) + timedelta(hours=hour)


def _warehouse(path: Path, states: pl.DataFrame, incidents: list[tuple], *, history_end: datetime,
               observed_from: datetime, as_of: datetime) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    con.execute("SET TimeZone = 'UTC'")
    apply_ddl(con)
    con.execute("INSERT INTO lake.sacct_records (source_file, line_no, record_type, job_id, end_ts) VALUES "
                "('s', 2, 'allocation', '1', ?), ('s', 3, 'allocation', '2', ?)", [t(16), as_of])
    daily = node_availability_daily(states, NODES, observed_from.date(), (history_end - timedelta(microseconds=1)).date(),
                                    as_of=history_end, observed_from=observed_from)
    con.register("_daily", daily.to_arrow())
    con.execute("INSERT INTO marts.node_availability_daily BY NAME SELECT * FROM _daily")
    con.unregister("_daily")
    con.execute("CREATE TABLE marts.hw_incidents (incident_id VARCHAR, nodes VARCHAR[], start_ts TIMESTAMPTZ, "
                "recovered_ts TIMESTAMPTZ, scope VARCHAR, cause_class VARCHAR)")
    con.executemany("INSERT INTO marts.hw_incidents VALUES (?, ?, ?, ?, 'node', 'hardware')", incidents)
    con.execute("INSERT INTO core.jobs (job_id, state, nodes, restarts, source_file, line_no) VALUES "
                "('j1', 'NODE_FAIL', ['n1'], 0, 's', 1)")
    con.execute("CREATE TABLE marts.job_failure_attribution (job_id VARCHAR, attribution VARCHAR, "
                "incident_id VARCHAR, end_ts TIMESTAMPTZ, lost_gpu_hours DOUBLE)")
    con.execute("INSERT INTO marts.job_failure_attribution VALUES ('j1', 'infrastructure', 'I1', ?, 16.0)",
                [t(16, 12.1)])
    con.execute("CREATE TABLE marts.instance_failure_attribution (job_id VARCHAR, instance_no INTEGER, "
                "attribution VARCHAR, incident_id VARCHAR, end_ts TIMESTAMPTZ, lost_gpu_hours DOUBLE)")
    return con


def _loss(con: duckdb.DuckDBPyConnection, as_of: datetime) -> dict[str, tuple]:
    write_node_hardware_loss(con, gpus_per_node=8, as_of=as_of)
    return {r[0]: r[1:] for r in con.sql("SELECT node, down_hardware_hours, down_source, down_gpu_hours, "
                                         "job_lost_gpu_hours FROM marts.node_hardware_loss").fetchall()}


def _states(rows: list[tuple[str, datetime, datetime | None]]) -> pl.DataFrame:
    return pl.DataFrame([(*r, "hardware", "gpu_xid") for r in rows], orient="row", schema={
        "node": pl.String, "start_ts": DT, "end_ts": DT, "availability_class": pl.String, "reason_class": pl.String})


@pytest.fixture
def covered(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    # History from 11-16 06:00 (the first day observed from then) to the end of the data, 11-18 00:00.
    states = _states([("n2", t(16, 10 + 5 / 60), t(16, 13 + 5 / 60))])   # n2 drained 3 h
    incidents = [
        ("I1", ["n1"], t(16, 12), None),          # never drained, no completed job since: in service (0 h)
        ("I2", ["n2"], t(16, 10), t(16, 14)),      # its drain measures it: 3 h from node states
        ("I3", ["n3"], t(16, 2), t(16, 8)),        # 02:00-08:00: on the first day, observed whole from midnight
    ]
    con = _warehouse(tmp_path / "w.duckdb", states, incidents, history_end=t(18), observed_from=t(16, 6), as_of=t(18))
    yield con
    con.close()


def test_node_the_history_covers_without_an_outage_lost_nothing(covered: duckdb.DuckDBPyConnection) -> None:
    loss = _loss(covered, t(18))
    # n1: a row only for its killed job's work; no down time (was 36 h = 11-16 12:00 -> 11-18 00:00, x 8 GPUs)
    assert loss["n1"] == (0.0, None, 0.0, 16.0)
    assert loss["n2"] == pytest.approx((3.0, "node_states", 24.0, 0.0))
    # n3: its incident lies on 11-16, which node availability observes whole from midnight (one day rule with
    # capacity, models/accounting_span.py) with no outage of n3: no down time, and no killed job: no row
    # (until 2026-12-05 the day was observed from the accounting's first moment, 06:00, and 02:00-06:00 was
    # estimated from the incident: 4 h)
    assert "n3" not in loss


def test_same_down_hours_as_the_availability_mart_where_it_covers(covered: duckdb.DuckDBPyConnection) -> None:
    _loss(covered, t(18))
    measured = dict(covered.sql("SELECT node, sum(down_hardware_hours) FROM marts.node_availability_daily "
                                "GROUP BY ALL").fetchall())
    lost = dict(covered.sql("SELECT node, sum(down_hardware_hours) FROM marts.node_hardware_loss "
                            "WHERE down_source = 'node_states' GROUP BY ALL").fetchall())
    assert measured == pytest.approx({"n1": 0.0, "n2": 3.0, "n3": 0.0})
    assert lost == pytest.approx({"n2": 3.0})


def test_after_the_history_ends_incidents_estimate_the_rest(tmp_path: Path) -> None:
    # History 11-16 00:00 .. 11-17 00:00 (a missing dump), data until 11-18 00:00.
    states = _states([("n2", t(16, 22), None)])     # open drain: 2 h measured on 11-16
    incidents = [
        ("I1", ["n1"], t(16, 12), None),            # covered until 11-17 00:00, then 24 h estimated
        ("I2", ["n2"], t(16, 21), None),            # 21:00-24:00 covered (the drain's 2 h), then 24 h estimated
    ]
    con = _warehouse(tmp_path / "w.duckdb", states, incidents, history_end=t(17), observed_from=t(16), as_of=t(18))
    try:
        loss = _loss(con, t(18))
        periods = {r[0] for r in con.sql("SELECT period FROM marts.node_hardware_loss").fetchall()}
    finally:
        con.close()
    assert loss["n1"] == pytest.approx((24.0, "incidents", 192.0, 16.0))
    assert loss["n2"] == pytest.approx((26.0, "node_states+incidents", 208.0, 0.0))
    assert "n3" not in loss
    assert periods == {"2026-11"}
