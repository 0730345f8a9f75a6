"""MTBF and time to repair count one population: the fleet's incidents (outside probe AO, finding 1).

An Xid 79 on a spare Slurm knows but cluster.yaml does not list (probe: gpu049, ``nodes: "gpu[001-048]"``)
is no failure of the fleet for MTBF; ``marts.repair_times`` counted its repair all the same (gpu 6
incidents, p50 8.7064 h instead of 5 and 1.4136 h). ``mtbf.in_fleet`` is the one definition both use;
``marts.incident_repairs`` keeps the spare's row (an SRE may look its repair up) with ``in_fleet`` false.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models.reliability.mtbf import fleet_incidents, in_fleet
from gpusre.models.reliability.repair_times import link_incidents, repair_times

from hand_landing import SACCT_HEADER, run_hand_landing

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# ----------------------------------------------------------------------------------------- pure

def test_an_incident_of_the_fleet_touches_a_listed_node_or_none() -> None:
    # another naming convention than the probe's: hgx01..04 listed, a spare "hgx-spare2", an NVSwitch tray
    nodes = pl.DataFrame({"nodes": [["hgx02"], ["hgx-spare2"], ["hgx-nvsw1", "hgx03"], [], None]},
                         schema={"nodes": pl.List(pl.String)})
    listed = ["hgx01", "hgx02", "hgx03", "hgx04"]
    assert nodes.select(in_fleet(listed)).to_series().to_list() == [True, False, True, True, True]
    # without a node list the fleet is whatever the data shows: every incident counts
    assert nodes.select(in_fleet([])).to_series().to_list() == [True] * 5
    assert fleet_incidents(nodes, listed).height == 4


# Probe AO's GPU incidents: (node, first evidence, back in service). Hours to repair, by hand:
# gpu005 03:12:40 -> 11-03 14:40 = 35.4556; gpu030 10:05:11 -> 11:30 = 1.4136; gpu030 again 11-04 08:20:22 ->
# 11-06 10:00 = 49.6606; gpu020 14:00:05 -> 14:25:40 = 0.4264; gpu018 20:10:33 -> 20:41:10 = 0.5103;
# the spare gpu049 11-03 17:00:03 -> 11-04 09:00 = 15.9992.
PROBE = [("gpu005", "2026-11-02 03:12:40", "2026-11-03 14:40:00"),
         ("gpu030", "2026-11-03 10:05:11", "2026-11-03 11:30:00"),
         ("gpu030", "2026-11-04 08:20:22", "2026-11-06 10:00:00"),
         ("gpu020", "2026-11-05 14:00:05", "2026-11-05 14:25:40"),
         ("gpu018", "2026-11-06 20:10:33", "2026-11-06 20:41:10"),
         ("gpu049", "2026-11-03 17:00:03", "2026-11-04 09:00:00")]
FLEET = [f"gpu{i:03d}" for i in range(1, 49)]  # cluster.yaml nodes: "gpu[001-048]"


def _probe_repairs(node_names: list[str]) -> pl.DataFrame:
    incidents = pl.DataFrame({
        "incident_id": [f"i{k}" for k in range(len(PROBE))], "component": ["pcie_bus"] * len(PROBE),
        "start_ts": [_ts(s) for _, s, _ in PROBE], "nodes": [[n] for n, _, _ in PROBE]})
    # drained a few minutes after the first line ("Xid 79"), resumed when repaired
    states = pl.DataFrame({
        "node": [n for n, _, _ in PROBE], "start_ts": [_ts(s) + timedelta(minutes=3) for _, s, _ in PROBE],
        "end_ts": [_ts(e) for _, _, e in PROBE], "reason_class": ["gpu_xid"] * len(PROBE)},
        schema_overrides={"end_ts": DT})
    return link_incidents(incidents, states, node_names=node_names)


def test_repair_times_count_the_fleet_mtbf_counts() -> None:
    linked = _probe_repairs(FLEET)
    # the spare's repair keeps its row, timed as any other, flagged outside the fleet
    spare = linked.filter(pl.col("nodes").list.contains("gpu049")).row(0, named=True)
    assert spare["in_fleet"] is False and spare["hours_to_repair"] == pytest.approx(15.9992, abs=1e-4)
    rows = {r["component_class"]: r for r in repair_times(linked).iter_rows(named=True)}
    assert set(rows) == {"all", "gpu"}
    gpu = rows["gpu"]
    assert (gpu["incidents"], gpu["repaired"]) == (5, 5)
    assert gpu["mttr_hours_p50"] == pytest.approx(1.4136, abs=1e-4)  # median of 0.4264 0.5103 1.4136 35.46 49.66
    assert gpu["mttr_hours_mean"] == pytest.approx(17.4933, abs=1e-4)
    # the population MTBF counts: fleet_incidents of the same rows
    assert fleet_incidents(linked, FLEET).height == gpu["incidents"]


def test_without_a_node_list_every_incident_is_timed() -> None:
    gpu = repair_times(_probe_repairs([])).filter(pl.col("component_class") == "gpu").row(0, named=True)
    assert gpu["incidents"] == 6
    assert gpu["mttr_hours_p50"] == pytest.approx((1.4136 + 15.9992) / 2, abs=1e-4)  # 8.7064, the probe's old value


# ------------------------------------------------------------------------------------ end to end

CLUSTER = """cluster: tiny
timezone: UTC
nodes: "hgx[01-04]"
gpus_per_node: 8
gpu_type: h100
"""
HEADER = SACCT_HEADER


def _job(jid: int, start: str, end: str, elapsed: str) -> str:
    return (f"{jid}|{jid}|job{jid}|alice|2001|ml|ml|batch|normal|COMPLETED|0:0|{start}|{start}|{start}|{end}|"
            f"{elapsed}|1-00:00:00|1|64|billing=64,cpu=64,gres/gpu=8,mem=500G,node=1|hgx01|")


XID79 = ("{mon} {hms} {node} kernel: [ 8710.103715] NVRM: Xid (PCI:0000:ab:00): 79, pid='<unknown>', "
         "name=<unknown>, GPU has fallen off the bus.")
#: Xid 79 first lines: two on listed nodes, two on spares Slurm drains (hgx05 repaired, hgx-spare2 still open).
FAULTS = {("2026-12-01", "hgx02"): "03:00:00", ("2026-12-01", "hgx03"): "10:00:00",
          ("2026-12-01", "hgx05"): "08:00:00", ("2026-12-02", "hgx-spare2"): "09:00:00"}
EVENTS = {
    "events_2026-12-01.txt": """Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User
tiny|hgx02|2026-12-01T03:05:00|2026-12-01T05:00:00|01:55:00|DRAIN|Xid 79 GPU off bus|root(0)
tiny|hgx03|2026-12-01T10:02:00|2026-12-01T16:00:00|05:58:00|DRAIN|xid79 fell off bus, reseat|root(0)
tiny|hgx05|2026-12-01T08:05:00|Unknown|15:55:00|DRAIN|Xid 79|root(0)
""",
    "events_2026-12-02.txt": """Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User
tiny|hgx05|2026-12-01T08:05:00|2026-12-02T08:00:00|23:55:00|DRAIN|Xid 79|root(0)
tiny|hgx-spare2|2026-12-02T09:05:00|Unknown|14:55:00|DRAIN|Xid 79|root(0)
"""}


def _files() -> dict[str, str]:
    files = {"cluster.yaml": CLUSTER,
             "sacct/sacct_2026-12-01.psv": f"{HEADER}\n{_job(11, '2026-12-01T01:00:00', '2026-12-01T05:00:00', '04:00:00')}\n",
             "sacct/sacct_2026-12-02.psv": f"{HEADER}\n{_job(12, '2026-12-02T12:00:00', '2026-12-02T23:50:00', '11:50:00')}\n",
             **{f"slurm_events/{name}": text for name, text in EVENTS.items()}}
    for day, mon in (("2026-12-01", "Dec  1"), ("2026-12-02", "Dec  2")):
        for node in ("hgx01", "hgx02", "hgx03", "hgx04", "hgx05", "hgx-spare2"):
            lines = [f"{mon} 00:01:06 {node} CRON[2006]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)"]
            if (day, node) in FAULTS:
                lines.append(XID79.format(mon=mon, hms=FAULTS[(day, node)], node=node))
            lines.append(f"{mon} 23:58:06 {node} CRON[3006]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)")
            files[f"syslog/{day}/{node}.log"] = "\n".join(lines) + "\n"
    return files


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("fleet")
    return run_hand_landing(root, _files()), root / "reports"


def _rows(wh: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(wh), read_only=True)
    try:
        con.execute("SET TimeZone='UTC'")
        return con.sql(sql).fetchall()
    finally:
        con.close()


def test_pipeline_times_the_fleets_repairs_only(run: tuple[Path, Path]) -> None:
    """Hand values: hgx02 03:00 -> 05:00 = 2 h, hgx03 10:00 -> 16:00 = 6 h: 2 incidents, median = mean 4 h,
    none open. The spares' incidents (hgx05 24 h, hgx-spare2 still drained) keep their rows, out of the fleet
    (before: 4 incidents, 3 repaired, median 6 h, mean 10.67 h, 1 ongoing)."""
    wh, _ = run
    flags = dict(_rows(wh, "SELECT nodes[1], in_fleet FROM marts.incident_repairs"))
    assert flags == {"hgx02": True, "hgx03": True, "hgx05": False, "hgx-spare2": False}
    summary = {r[0]: r[1:] for r in _rows(wh, "SELECT component_class, incidents, repaired, ongoing, mttr_hours_p50, "
                                              "mttr_hours_mean FROM marts.repair_times")}
    assert summary == {"all": (2, 2, 0, 4.0, 4.0), "gpu": (2, 2, 0, 4.0, 4.0)}
    assert _rows(wh, "SELECT period, incidents, ongoing FROM marts.repair_times_monthly "
                     "WHERE component_class = 'all'") == [("2026-12", 2, 0)]
    # MTBF counts the same two failures
    assert _rows(wh, "SELECT failures FROM marts.mtbf WHERE period_type = 'all' AND scope = 'component_class' "
                     "AND component = 'gpu'") == [(2,)]


def test_reports_count_the_fleets_repairs(run: tuple[Path, Path]) -> None:
    _, reports = run
    nightly = (reports / "nightly-2026-12-02.md").read_text()
    assert "Of 2 hardware incidents, 2 were followed by a node drain; 2 repaired with a median time to repair of " \
           "4.0 h" in nightly
    slo = next(reports.glob("slo-*.md")).read_text()
    repairs = slo[slo.index("Time to repair by component class"):]
    repairs = repairs[:repairs.index("\n## ")] if "\n## " in repairs else repairs
    # hgx-spare2 is still drained at the end, but it is no repair of the fleet
    assert "No repair was open at the end of the window (2026-12-03 00:00 UTC)" in repairs
    assert "hgx-spare2" not in repairs and "hgx05" not in repairs
    assert "| All classes | whole record | 2 | 2 | 0 | 4.00 h | 4.00 h |" in repairs


def test_zero_failure_classes_have_their_lower_limit_in_the_pipeline(run: tuple[Path, Path]) -> None:
    """4 nodes x 48 h = 192 node-h minus the fleet's down time in node states (hgx02 03:05-05:00 = 1 55/60 h,
    hgx03 10:02-16:00 = 5 58/60 h): T = 184.1167 node-h; no NVLink, thermal, host, network, power or storage
    evidence: MTBF >= T / 3.6889 (chi2(0.975; 2) / 2, the two-sided Garwood limit of ci_low) = 49.91 h."""
    wh, reports = run
    rows = {r[0]: r[1:] for r in _rows(wh, "SELECT component, failures, exposure_hours, mtbf_hours, ci_low, ci_high, "
                                           "note FROM marts.mtbf WHERE period_type = 'all' "
                                           "AND scope = 'component_class'")}
    assert set(rows) == {"gpu", "nvlink", "thermal", "host", "network", "power", "storage"}
    k, t, mtbf, lo, hi, note = rows["nvlink"]
    assert (k, mtbf, hi) == (0, None, None)
    assert t == pytest.approx(184.1167, abs=1e-4) and lo == pytest.approx(184.1167 / 3.68888, rel=1e-5)
    assert note == "0 failures in 184.1 h: MTBF ≥ 49.9 h (95 % lower limit)"
    slo = next(reports.glob("slo-*.md")).read_text()
    assert "| Thermal | whole record (2026-12) | 0 | 184 | ≥ 49.9 h (0 failures) | ≥ 49.9 h |" in slo
