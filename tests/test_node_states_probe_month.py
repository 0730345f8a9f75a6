"""An outside probe's findings on node states, on a small hand-made landing run through the real pipeline.

4 nodes gpu[001-004], 2026-09-01 00:00 .. 09-05 00:00 UTC (the accounting's first and last moment), no
cluster.yaml maintenance window. Nightly ``sacctmgr show event`` dumps named by their day:

* ``events_2026-09-01.txt``: the header only; ``events_2026-09-02.txt``: only the cluster's open "Cluster
  Registered TRES" event — two healthy nights, no node event at all;
* ``events_2026-09-03.txt``: gpu002 ``DOWN*`` "Not responding" 14:10-14:40, then ``DOWN`` "DIMM UE …" from
  14:40, open at the cut (Duration 9:20:00 → 09-04 00:00);
* ``events_2026-09-04.txt``: gpu002's DOWN closed at 09-04 08:40; gpu003 drained 06:00-18:00 for
  "Planned maintenance: replace bad HGX baseboard batch (CHG-4412)"; gpu004 drained 10:00-14:00 for
  "maintenance: GPU xid 79" (a repair logged as maintenance).

The accounting dump of 09-03 is loaded with its header only (no job that day).

Hand values:

* observed: 4 nodes x 4 days x 24 h = 384 node-hours, all from node states (the history starts at the first
  loaded dump's day, 09-01, not at the first event's day, 09-03);
* planned maintenance: gpu003 12 h (the change's reason names a fault, "bad", but declares itself planned);
* unplanned down: gpu002 14:10 → 08:40 = 18.5 h (09-03 9 h 50 min = 9.8333 h, 09-04 8 h 40 min = 8.6667 h),
  gpu004 4 h → 22.5 h;
* scheduled = 384 − 12 = 372 node-hours; availability = 1 − 22.5 / 372 = 0.939516;
* SLO per day (good, total): 09-01 (96, 96), 09-02 (96, 96), 09-03 (86.1667, 96), 09-04 (71.3333, 84).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import duckdb
import pytest

from gpusre.models.warehouse import connect
from gpusre.reports.nightly import render_nightly_report
from hand_landing import run_hand_landing
from report_html import visible_text

SACCT_HEADER = "JobID|JobName|User|State|Submit|Start|End|Elapsed|AllocTRES|NNodes|NodeList\n"
EVENTS_HEADER = "Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User\n"
FILES = {
    "cluster.yaml": "cluster: probe\ntimezone: UTC\nnodes: \"gpu[001-004]\"\ngpus_per_node: 8\n",
    "sacct/sacct_2026-09-01.psv": SACCT_HEADER
    + "1|train|alice|COMPLETED|2026-09-01T00:00:00|2026-09-01T00:00:00|2026-09-01T06:00:00|06:00:00|gres/gpu=8|1|gpu001\n",
    "sacct/sacct_2026-09-02.psv": SACCT_HEADER
    + "2|train|alice|COMPLETED|2026-09-02T08:00:00|2026-09-02T08:00:00|2026-09-02T10:00:00|02:00:00|gres/gpu=8|1|gpu001\n",
    "sacct/sacct_2026-09-03.psv": SACCT_HEADER,
    "sacct/sacct_2026-09-04.psv": SACCT_HEADER
    + "3|train|alice|COMPLETED|2026-09-04T12:00:00|2026-09-04T12:00:00|2026-09-05T00:00:00|12:00:00|gres/gpu=8|1|gpu001\n",
    "slurm_events/events_2026-09-01.txt": EVENTS_HEADER,
    "slurm_events/events_2026-09-02.txt": EVENTS_HEADER
    + "probe||2026-08-01T00:00:00|Unknown|33-00:00:00||Cluster Registered TRES|\n",
    "slurm_events/events_2026-09-03.txt": EVENTS_HEADER
    + "probe|gpu002|2026-09-03T14:10:00|2026-09-03T14:40:00|00:30:00|DOWN*|Not responding|slurm(64030)\n"
    + "probe|gpu002|2026-09-03T14:40:00|Unknown|09:20:00|DOWN|DIMM UE on B2 - replace DIMM|root(0)\n",
    "slurm_events/events_2026-09-04.txt": EVENTS_HEADER
    + "probe|gpu002|2026-09-03T14:40:00|2026-09-04T08:40:00|18:00:00|DOWN|DIMM UE on B2 - replace DIMM|root(0)\n"
    + "probe|gpu003|2026-09-04T06:00:00|2026-09-04T18:00:00|12:00:00|DRAIN|"
      "Planned maintenance: replace bad HGX baseboard batch (CHG-4412)|root(0)\n"
    + "probe|gpu004|2026-09-04T10:00:00|2026-09-04T14:00:00|04:00:00|DRAIN|maintenance: GPU xid 79|root(0)\n",
}
# Node logs every day on every node (a dense source that covers the whole span).
for _d in range(1, 5):
    FILES[f"syslog/2026-09-0{_d}/messages.log"] = "".join(
        f"2026-09-0{_d}T{t}+00:00 gpu00{n} sshd[42]: Accepted publickey for alice\n"
        for t in ("00:00:05", "12:00:00", "23:59:00") for n in range(1, 5))


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("probe_month"), FILES)


@pytest.fixture
def con(warehouse: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(warehouse, read_only=True)
    yield con
    con.close()


def test_empty_first_dumps_are_observed_nights(con: duckdb.DuckDBPyConnection) -> None:
    loaded = dict(con.sql("SELECT source_file, status FROM raw.ingested_files "
                          "WHERE source_kind = 'slurm_events'").fetchall())
    assert loaded["slurm_events/events_2026-09-01.txt"] == "loaded"
    days = con.sql("SELECT day::VARCHAR, count(*), sum(observed_hours), sum(down_hours) "
                   "FROM marts.node_availability_daily GROUP BY ALL ORDER BY 1").fetchall()
    assert [d[:3] for d in days] == [("2026-09-01", 4, 96.0), ("2026-09-02", 4, 96.0), ("2026-09-03", 4, 96.0),
                                     ("2026-09-04", 4, 96.0)]
    assert [d[3] for d in days] == pytest.approx([0.0, 0.0, 9 + 50 / 60, 8 + 40 / 60 + 12 + 4])


def test_availability_marts_agree_on_hand_values(con: duckdb.DuckDBPyConnection) -> None:
    rows = {p: (down, sched, a) for p, down, sched, a in con.sql(
        "SELECT period, down_node_hours, scheduled_node_hours, availability FROM marts.availability_by_component "
        "WHERE component_class = 'all'").fetchall()}
    for period in ("all", "2026-09"):
        assert rows[period] == pytest.approx((22.5, 372.0, 1 - 22.5 / 372))
    slo = con.sql("SELECT day::VARCHAR, good, total, source FROM marts.slo_daily "
                  "WHERE sli = 'node_availability' ORDER BY day").fetchall()
    assert slo == [("2026-09-01", pytest.approx(96.0), pytest.approx(96.0), "node_states"),
                   ("2026-09-02", pytest.approx(96.0), pytest.approx(96.0), "node_states"),
                   ("2026-09-03", pytest.approx(96 - 59 / 6), pytest.approx(96.0), "node_states"),
                   ("2026-09-04", pytest.approx(84 - 26 / 3 - 4), pytest.approx(84.0), "node_states")]
    # One quantity, one value: the SLI's total is the mart's scheduled node-hours.
    assert sum(r[2] for r in slo) == pytest.approx(rows["2026-09"][1])
    assert sum(r[2] - r[1] for r in slo) == pytest.approx(rows["2026-09"][0])


def test_declared_planned_change_is_maintenance_and_a_logged_repair_is_not(con: duckdb.DuckDBPyConnection) -> None:
    reasons = {c: (a, h) for c, a, h in con.sql(
        "SELECT reason_class, availability_class, node_hours_lost FROM marts.drain_reasons").fetchall()}
    assert reasons["planned_maintenance"] == ("maintenance", pytest.approx(12.0))
    assert reasons["gpu_xid"] == ("hardware", pytest.approx(4.0))
    assert reasons["host_memory"] == ("hardware", pytest.approx(18.0))
    assert reasons["not_responding"] == ("unknown", pytest.approx(0.5))
    maint = con.sql("SELECT sum(down_maintenance_hours), sum(down_hardware_hours) "
                    "FROM marts.node_availability_daily WHERE day = '2026-09-04'").fetchall()[0]
    assert maint == pytest.approx((12.0, 8 + 40 / 60 + 4))


def test_nightly_names_an_empty_dump_and_the_outage_start(warehouse: Path, tmp_path: Path) -> None:
    con = connect(warehouse)
    try:
        paths = render_nightly_report(con, tmp_path / "n", report_date=date(2026, 9, 3))
    finally:
        con.close()
    text = visible_text(paths.html.read_text())
    assert "Slurm accounting: the dump for 2026-09-03 holds no jobs" in text
    assert "probably missing" not in text
    # gpu002 out since 14:10 (DOWN* Not responding, then DOWN "DIMM UE"): 9 h 50 min to the day's end.
    assert ("At the end of 2026-09-03 (UTC) 1 of 4 nodes was out of service (1 hardware); the longest, gpu002, "
            "has been DOWN since 2026-09-03 14:10 UTC (9.8 h)") in text
