"""SLIs and MTBF on landings that lack a source or begin mid-day (probe issues 1-5), end to end with
`gpusre run` on a hand-written 4-node landing (the probe's L_slo3):

* cluster.yaml: gpu[001-004], 8 GPUs each, planned window 11-02 06:00-12:00 on all four nodes;
* sacct: job 1001 32 GPUs 11-01 12:00 → 11-02 06:00 COMPLETED; 1002 8 GPUs on gpu004 11-02 06:00-12:00;
  1003 32 GPUs 11-02 12:00 → 11-03 02:00 NODE_FAIL; 1004 24 GPUs 11-03 03:00 → 11-04 12:00 COMPLETED.
  The accounting speaks for 11-01 12:00 .. 11-04 12:00.
* node states: gpu001-003 drained 11-02 06-12 (maintenance), gpu001 DIMM 11-02 11-13, gpu002 DOWN
  11-03 02-08; gpu004 stayed up through the planned window (it ran job 1002).
* node logs: a harmless line per node every 10 min from 11-01 12:00 to 11-04 11:50.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest
from hand_landing import SACCT_HEADER


HEADER = SACCT_HEADER


def _job(jid, name, state, start, end, elapsed, nodes, gpus, nodelist):
    return (f"{jid}|{jid}|{name}|alice|2001|ml|ml|batch|normal|{state}|0:0|{start}|{start}|{start}|{end}|{elapsed}|"
            f"2-00:00:00|{nodes}|{nodes * 128}|billing={nodes * 128},cpu={nodes * 128},gres/gpu:h100={gpus},"
            f"gres/gpu={gpus},mem=8000G,node={nodes}|{nodelist}|")


SACCT = {
    "2026-11-01": [_job(1001, "trainA", "RUNNING", "2026-11-01T12:00:00", "Unknown", "12:00:00", 4, 32, "gpu[001-004]")],
    "2026-11-02": [_job(1001, "trainA", "COMPLETED", "2026-11-01T12:00:00", "2026-11-02T06:00:00", "18:00:00", 4, 32, "gpu[001-004]"),
                   _job(1002, "evalB", "COMPLETED", "2026-11-02T06:00:00", "2026-11-02T12:00:00", "06:00:00", 1, 8, "gpu004"),
                   _job(1003, "trainC", "NODE_FAIL", "2026-11-02T12:00:00", "2026-11-03T02:00:00", "14:00:00", 4, 32, "gpu[001-004]")],
    "2026-11-03": [_job(1003, "trainC", "NODE_FAIL", "2026-11-02T12:00:00", "2026-11-03T02:00:00", "14:00:00", 4, 32, "gpu[001-004]"),
                   _job(1004, "trainD", "RUNNING", "2026-11-03T03:00:00", "Unknown", "21:00:00", 3, 24, "gpu[001,003-004]")],
    "2026-11-04": [_job(1004, "trainD", "COMPLETED", "2026-11-03T03:00:00", "2026-11-04T12:00:00", "1-09:00:00", 3, 24, "gpu[001,003-004]")],
}
EVENTS = """Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User
tiny|gpu001|2026-11-02T06:00:00|2026-11-02T12:00:00|06:00:00|DRAIN|planned maintenance: kernel upgrade|root(0)
tiny|gpu002|2026-11-02T06:00:00|2026-11-02T12:00:00|06:00:00|DRAIN|planned maintenance: kernel upgrade|root(0)
tiny|gpu003|2026-11-02T06:00:00|2026-11-02T12:00:00|06:00:00|DRAIN|planned maintenance: kernel upgrade|root(0)
tiny|gpu001|2026-11-02T11:00:00|2026-11-02T13:00:00|02:00:00|DRAIN|bad DIMM - replace|root(0)
tiny|gpu002|2026-11-03T02:00:00|2026-11-03T08:00:00|06:00:00|DOWN|GPU fell off the bus - Xid 79|root(0)
"""
CLUSTER = """cluster: tiny
timezone: UTC
nodes: "gpu[001-004]"
gpus_per_node: 8
gpu_type: h100
maintenance:
  - {start: "2026-11-02T06:00:00Z", end: "2026-11-02T12:00:00Z", nodes: "gpu[001-004]", reason: "kernel upgrade"}
slo:
  window_days: 30
  objectives:
    - {sli: node_availability, objective: 0.99}
    - {sli: job_infra_success, objective: 0.995}
    - {sli: ettr_large_runs, objective: 0.90}
    - {sli: goodput, objective: 0.70}
"""


def _landing(root: Path, *, sacct: bool = True, logs: bool = True, states: bool = True) -> Path:
    root.mkdir(parents=True)
    (root / "cluster.yaml").write_text(CLUSTER)
    if sacct:
        (root / "sacct").mkdir()
        for day, rows in SACCT.items():
            (root / "sacct" / f"sacct_{day}.psv").write_text("\n".join([HEADER, *rows]) + "\n")
    if states:
        (root / "slurm_events").mkdir()
        (root / "slurm_events" / "events_2026-11-04.txt").write_text(EVENTS)
    if logs:
        t, end = datetime(2026, 11, 1, 12), datetime(2026, 11, 4, 12)
        by_day: dict[str, list[str]] = {}
        while t < end:
            for n in range(1, 5):
                by_day.setdefault(t.strftime("%Y-%m-%d"), []).append(
                    f"{t.strftime('%b %e %H:%M:%S')} gpu00{n} systemd[1]: Started Session {t.minute} of user root.")
            t += timedelta(minutes=10)
        for day, lines in by_day.items():
            (root / "syslog" / day).mkdir(parents=True)
            (root / "syslog" / day / "central.log").write_text("\n".join(lines) + "\n")
    return root


def _run(tmp: Path, **sources: bool) -> tuple[duckdb.DuckDBPyConnection, str]:
    landing = _landing(tmp / "landing", **sources)
    wh = tmp / "wh.duckdb"
    gpusre = shutil.which("gpusre", path=str(Path(sys.executable).parent)) or "gpusre"
    subprocess.run([gpusre, "run", "--landing", str(landing), "--warehouse", str(wh), "--reports", str(tmp / "r")],
                   check=True, capture_output=True, text=True, timeout=600)
    slo_md = "\n".join(p.read_text() for p in sorted((tmp / "r").glob("slo-*.md")))
    return duckdb.connect(str(wh), read_only=True), slo_md


def _sli(con, sli):
    return {str(d): (g, t, s) for d, g, t, s in con.sql(
        "SELECT day, good, total, source FROM marts.slo_daily WHERE sli = ? ORDER BY day", params=[sli]).fetchall()}


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("full"))


def test_partial_first_day_counts_its_covered_hours(full):
    con, _ = full
    gp = _sli(con, "goodput")
    # 11-01: the data begins at 12:00, but a day's capacity is one definition for utilization, goodput and
    # the SLIs (models/accounting_span.py): every day whole from its midnight, 32 GPUs × 24 h = 768, the day
    # flagged partial; job 1001 ran 12:00-24:00 on 32 GPUs = 384 productive. The last day 11-04 ends at
    # 12:00, more than 60 min before midnight, so it is cut there: 384, 24 GPUs × 12 h = 288.
    assert gp["2026-11-01"][:2] == pytest.approx((384.0, 768.0))
    assert gp["2026-11-04"][:2] == pytest.approx((288.0, 384.0))
    # window: capacity 768 + 768 + 768 + 384 = 2688, less the planned maintenance the goodput SLO leaves out
    # (gpu001-003 drained 11-02 06:00-12:00: 3 × 6 h × 8 GPUs = 144) = 2544; productive 384 + 624 + 552 + 288
    # = 1848 (11-03: 568 allocated − 16 GPU-h of work lost at job 1003's NODE_FAIL) → 72.6 %, above the 70 %
    # objective. (marts.goodput_daily keeps the maintenance in its capacity: checked below.)
    good, total = (sum(v[i] for v in gp.values()) for i in (0, 1))
    assert (good, total) == pytest.approx((1848.0, 2544.0))
    cap = dict(con.sql("SELECT day::VARCHAR, capacity_gpu_hours FROM marts.goodput_daily").fetchall())
    util = dict(con.sql("SELECT day::VARCHAR, capacity_gpu_hours FROM marts.utilization_daily").fetchall())
    assert cap["2026-11-01"] == pytest.approx(768.0) and cap["2026-11-04"] == pytest.approx(384.0)
    assert cap == pytest.approx(util)  # one capacity
    na = _sli(con, "node_availability")
    # 11-01: no node-state history yet (first event 11-02) → estimated from incidents (none): 4 nodes × 24 h = 96
    assert na["2026-11-01"] == pytest.approx((96.0, 96.0, "incidents"))
    # 11-02 from node states: 96 − 18 h of planned drain (gpu001-003, 06-12) = 78 scheduled; gpu001's DIMM
    # drain 11-13 is unplanned for 12-13 = 1 h → 77 / 78
    assert na["2026-11-02"] == pytest.approx((77.0, 78.0, "node_states"))
    assert na["2026-11-03"] == pytest.approx((90.0, 96.0, "node_states"))  # gpu002 DOWN 02-08: 6 h
    assert na["2026-11-04"][:2] == pytest.approx((48.0, 48.0))


def test_mtbf_exposure_is_the_sli_in_service_hours(full):
    con, _ = full
    exposure = con.sql("SELECT exposure_hours FROM marts.mtbf WHERE scope = 'cluster' AND period = 'all'").fetchall()[0][0]
    # The SLI's good hours count whole days from 11-01 00:00 (one day definition with capacity): 96 + 77 +
    # 90 + 48 = 311; gpu004 stayed up through the planned window and is exposed (the old rule subtracted its
    # 6 h too). MTBF exposure runs over the same days (models/accounting_span.py: the node logs' first day
    # counts whole from its midnight too — outside probe z: exposure once left out the first day's hours
    # before the first line, and MTBF disagreed with the availability) up to the logs' last line 11-04 11:50
    # (more than an hour before midnight: the failure window stops there): the SLI's hours less 4 nodes × 10 min.
    good = sum(v[0] for v in _sli(con, "node_availability").values())
    assert good == pytest.approx(311.0)
    assert exposure == pytest.approx(311.0 - 4 / 6)


def test_status_is_quoted_from_the_last_complete_day(full):
    _, md = full
    assert "values on 2026-11-03, the last complete day" in md
    # the default window ends on the last complete day 11-03: 11-01 .. 11-03 are complete days — 11-01 too,
    # although its data begins at 12:00 (the first day counts whole, models/accounting_span.py)
    row = next(line for line in md.splitlines() if line.startswith("| Node availability |"))
    assert row.endswith("| 3 / 30 |")


def test_accounting_only_leaves_mtbf_and_availability_unknown(tmp_path):
    con, md = _run(tmp_path, logs=False, states=False)
    assert con.sql("SELECT count(*) FROM marts.slo_daily WHERE sli = 'node_availability'").fetchall()[0][0] == 0
    assert con.sql("SELECT count(*) FROM marts.mtbf").fetchall()[0][0] == 0
    assert con.sql("SELECT count(*) FROM marts.node_failure_rate WHERE variant = 'hw_incidents'").fetchall()[0][0] == 0
    assert "**MTBF per node:** unknown (no node logs)" in md
    assert "**Node availability:** unknown (no node states and no node logs)" in md
    assert "100.00 %" not in md.split("## SLO status")[0].split("Node availability")[1].splitlines()[0]


def test_node_logs_without_states_say_estimated(tmp_path):
    con, md = _run(tmp_path, states=False)
    assert {s for _, _, s in _sli(con, "node_availability").values()} == {"incidents"}
    assert "estimated from hardware incidents (no node-state history)" in md


def test_without_accounting_the_failure_marts_and_availability_exist(tmp_path):
    con, md = _run(tmp_path, sacct=False)
    assert {r[0] for r in con.sql("SELECT DISTINCT sli FROM marts.slo_daily").fetchall()} == {"node_availability"}
    # exposure over the node logs' span from its first day's midnight, 11-01 00:00 .. 11-04 11:50 (4 × 83 h 50 min
    # = 335 1/3 node-hours) less the node states' down hours (gpu001 06-13, gpu002 06-12 and 02-08, gpu003 06-12:
    # 25 h) — the same as with accounting
    exposure = con.sql("SELECT exposure_hours FROM marts.mtbf WHERE scope = 'cluster' AND period = 'all'").fetchall()[0][0]
    assert exposure == pytest.approx(311.0 - 4 / 6)
    assert con.sql("SELECT count(*) FROM marts.node_failure_rate WHERE variant = 'hw_incidents'").fetchall()[0][0] > 0
    assert "no Slurm accounting" in md


def test_an_incident_only_on_hosts_outside_the_fleet_is_no_fleet_failure(tmp_path: Path) -> None:
    """cluster.yaml lists gpu[001-004]. A GPU falls off the bus on gpu001, and the same kind of line comes
    from login01 (a login node outside the fleet) and from 10.1.0.12 (an address a central syslog could
    not resolve): MTBF's exposure is the four fleet nodes, so it counts gpu001's failure only."""
    from gpusre.pipelines.runner import run_pipeline

    xid = "kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    landing = tmp_path / "landing"
    (landing / "syslog" / "2026-11-30").mkdir(parents=True)
    (landing / "cluster.yaml").write_text('cluster: t\ntimezone: UTC\nnodes: "gpu[001-004]"\nreliability:\n  min_failures: 1\n')
    lines = [f"Nov 30 {h:02d}:00:00 gpu00{n} systemd[1]: Started Session {h} of user root." for h in (0, 23) for n in range(1, 5)]
    lines += [f"Nov 30 06:00:00 gpu001 {xid}", f"Nov 30 08:00:00 login01 {xid}", f"Nov 30 10:00:00 10.1.0.12 {xid}"]
    (landing / "syslog" / "2026-11-30" / "messages").write_text("\n".join(sorted(lines)) + "\n")
    wh = tmp_path / "wh" / "gpusre.duckdb"
    run_pipeline(landing, wh, tmp_path / "reports")
    con = duckdb.connect(str(wh.with_name("gpusre.snapshot.duckdb")), read_only=True)
    try:
        assert sorted(n for (n,) in con.sql("SELECT nodes[1] FROM marts.hw_incidents").fetchall()) == [
            "10.1.0.12", "gpu001", "login01"]
        assert con.sql("SELECT failures FROM marts.mtbf WHERE period_type = 'all' AND scope = 'cluster'").fetchall() == [(1,)]
    finally:
        con.close()


# The nightly sacctmgr dumps stop after 11-02's (cut 11-03 00:05: the cluster's open "Cluster Registered
# TRES" event, started 10-20 00:00, has run 14-00:05:00) while the accounting goes on to 11-04 12:00.
EVENTS_CUT = """Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User|Event|ClusterNodes
tiny||2026-10-20T00:00:00|Unknown|14-00:05:00|||||Cluster|gpu[001-004]
tiny|gpu001|2026-11-02T06:00:00|2026-11-02T12:00:00|06:00:00|DRAIN|planned maintenance: kernel upgrade|root(0)|Node|
tiny|gpu002|2026-11-02T06:00:00|2026-11-02T12:00:00|06:00:00|DRAIN|planned maintenance: kernel upgrade|root(0)|Node|
tiny|gpu003|2026-11-02T06:00:00|2026-11-02T12:00:00|06:00:00|DRAIN|planned maintenance: kernel upgrade|root(0)|Node|
tiny|gpu001|2026-11-02T11:00:00|2026-11-02T13:00:00|02:00:00|DRAIN|bad DIMM - replace|root(0)|Node|
"""


def test_the_day_the_node_state_history_ends_inside_is_a_whole_day(tmp_path: Path) -> None:
    """Probe finding: a missing sacctmgr dump made 11-03 a day of the 5 minutes before the cut. The rest of
    the day is estimated from incidents like a day without node states.

    11-03 measured 00:00-00:05: 4 nodes in service, 4 × 5 min = 1/3 node-hour, all good. Rest 00:05-24:00 =
    23 h 55 min × 4 = 95 2/3 node-hours; gpu002's GPU falls off the bus at 02:00 (job 1003 NODE_FAIL) and the
    node runs no job again (1004 holds gpu[001,003-004]), so the estimate has it down 02:00 → the data's end:
    22 h of the rest. 11-03 = (1/3 + 95 2/3 − 22) / 96 = 74 / 96 = 0.770833, source node_states+incidents
    (before: 1/3 of 1/3 = 100 % on 5 minutes)."""
    landing = _landing(tmp_path / "landing", states=False)
    (landing / "slurm_events").mkdir()
    (landing / "slurm_events" / "events_2026-11-02.txt").write_text(EVENTS_CUT)
    with (landing / "syslog" / "2026-11-03" / "central.log").open("a") as f:
        f.write("Nov  3 02:00:00 gpu002 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
                "GPU has fallen off the bus.\n")
    wh = tmp_path / "wh.duckdb"
    gpusre = shutil.which("gpusre", path=str(Path(sys.executable).parent)) or "gpusre"
    subprocess.run([gpusre, "run", "--landing", str(landing), "--warehouse", str(wh), "--reports", str(tmp_path / "r")],
                   check=True, capture_output=True, text=True, timeout=600)
    con = duckdb.connect(str(wh), read_only=True)
    try:
        na = _sli(con, "node_availability")
        end = con.sql("SELECT history_end_ts FROM marts.data_freshness WHERE source_kind = 'slurm_events'").fetchall()
    finally:
        con.close()
    assert end[0][0] == datetime(2026, 11, 3, 0, 5, tzinfo=timezone.utc)
    good, total, source = na["2026-11-03"]
    # The reliability marts pass the incidents' down spans (models/reliability/marts.py _down_spans), so the
    # rest's down time is exactly gpu002's 22 h after 00:05 (its Xid 79 at 02:00): 74 / 96.
    assert (good, total, source) == (pytest.approx(74.0), pytest.approx(96.0), "node_states+incidents")
    assert na["2026-11-02"] == pytest.approx((77.0, 78.0, "node_states"))  # covered in full: as before
    # 11-04 (after the history, up to 12:00): 4 × 12 = 48, gpu002 down all 12 h -> 36 / 48, estimated
    assert na["2026-11-04"] == pytest.approx((36.0, 48.0, "incidents"))
    # The nightly's in-service share of 11-03 is of the 5 minutes the node states saw, and says so.
    out = subprocess.run([gpusre, "report", "nightly", "--warehouse", str(wh), "--out", str(tmp_path / "n"),
                          "--date", "2026-11-03"], check=True, capture_output=True, text=True, timeout=600)
    md = next((tmp_path / "n").glob("nightly-2026-11-03.md")).read_text()
    assert "100.00 % on 2026-11-03 (node states cover 0.1 h of it per node)" in md, out.stderr  # 5 min
