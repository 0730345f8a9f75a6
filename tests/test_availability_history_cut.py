"""A node-state history that ends before the data does (probe findings 1 and 2).

1. A missing nightly ``sacctmgr`` dump (the history is cut at 00:05 while the accounting runs to 23:50): an
   outage open at the cut is open only because the history ends there. Its repair is timed by the node logs'
   evidence after the cut (``marts.incident_repairs``), the node-availability SLO's estimate of the rest of
   the day uses it, and the nightly's "Nodes out of service now" speaks of the state at the history's end.
2. Node states only (no accounting): a dump named for its day covers that day, so the history runs to the
   end of the last dump's day (not to its last event), never past the newest record's day.

Hand-made 4-node landing (gpu[01-04], 8 GPUs): gpu02 logs Xid 48 at 11-10 18:30, is drained 18:35, reboots
11-11 02:20 (the D2 dump, when present, closes the drain at 02:35); gpu03 is drained 11-11 06:10-08:10.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hand_landing import SACCT_HEADER

from gpusre.models.accounting_span import node_history_end
from gpusre.models.reliability.repair_times import link_incidents

UTC = timezone.utc


def t(day: int, h: int, m: int = 0) -> datetime:
    return datetime(2026, 11, day, h, m, tzinfo=UTC)


# ------------------------------------------------------------------------------- pure: link_incidents

INCIDENT = pl.DataFrame({"incident_id": ["i1"], "component": ["gpu_memory"], "start_ts": [t(10, 18, 30)],
                         "end_ts": [t(10, 18, 35)], "nodes": [["gpu02"]]})
OPEN_DRAIN = pl.DataFrame({"node": ["gpu02"], "start_ts": [t(10, 18, 35)], "end_ts": [None],
                           "reason_class": ["gpu_xid"]}, schema_overrides={"end_ts": pl.Datetime("us", "UTC")})


def _reboot(ts: datetime) -> pl.DataFrame:
    return pl.DataFrame({"incident_id": ["i1"], "recovered_ts": [ts], "repair_source": ["reboot"]})


def test_an_open_drain_at_a_cut_history_is_repaired_by_the_reboot_after_the_cut() -> None:
    row = link_incidents(INCIDENT, OPEN_DRAIN, recoveries=_reboot(t(11, 2, 20)),
                         history_end=t(11, 0, 5)).row(0, named=True)
    assert (row["repair_state"], row["repair_source"], row["repaired_ts"]) == ("repaired", "reboot", t(11, 2, 20))
    assert row["hours_to_repair"] == pytest.approx(7 + 50 / 60)  # 18:30 -> 02:20
    assert row["drain_start_ts"] == t(10, 18, 35) and row["back_in_service_ts"] is None


def test_an_open_drain_without_a_cut_stays_ongoing() -> None:
    # the history is not cut (the node is still drained when the data ends): the reboot does not end it
    row = link_incidents(INCIDENT, OPEN_DRAIN, recoveries=_reboot(t(11, 2, 20))).row(0, named=True)
    assert (row["repair_state"], row["repair_source"], row["repaired_ts"]) == ("ongoing", "node_states", None)


def test_evidence_before_the_cut_does_not_end_an_outage_still_open_at_it() -> None:
    # a reboot at 23:00 while the node was still drained at the 00:05 cut is no repair
    row = link_incidents(INCIDENT, OPEN_DRAIN, recoveries=_reboot(t(10, 23)),
                         history_end=t(11, 0, 5)).row(0, named=True)
    assert row["repair_state"] == "ongoing" and row["repaired_ts"] is None


# ------------------------------------------------------------------------- pure: node_history_end (DuckDB)

def _history_db(files: list[str], events: list[tuple], others: list[datetime] = ()) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA raw")
    con.execute("CREATE TABLE raw.slurm_events (start_ts TIMESTAMPTZ, end_ts TIMESTAMPTZ, observed_ts TIMESTAMPTZ)")
    con.execute("CREATE TABLE raw.slurm_event_snapshots (observed_ts TIMESTAMPTZ)")
    con.execute("CREATE TABLE raw.ingested_files (source_kind VARCHAR, source_file VARCHAR, status VARCHAR)")
    con.execute("CREATE TABLE raw.record_days (source_kind VARCHAR, last_ts TIMESTAMPTZ)")
    for f in files:
        con.execute("INSERT INTO raw.ingested_files VALUES ('slurm_events', ?, 'loaded')", [f])
    for e in events:
        con.execute("INSERT INTO raw.slurm_events VALUES (?, ?, ?)", list(e))
        con.execute("INSERT INTO raw.record_days VALUES ('slurm_events', ?)", [e[0]])
    for ts in others:
        con.execute("INSERT INTO raw.record_days VALUES ('syslog', ?)", [ts])
    return con


EVENTS_D1_D2 = [(t(10, 18, 35), t(11, 2, 35), None), (t(11, 6, 10), t(11, 8, 10), None)]


def test_a_name_dated_dump_covers_its_day() -> None:
    con = _history_db(["slurm_events/events_2026-11-10.txt", "slurm_events/events_2026-11-11.txt"], EVENTS_D1_D2)
    assert node_history_end(con) == t(12, 0)  # not the last event's end, 11-11 08:10


def test_an_undated_dump_ends_at_its_last_event() -> None:
    con = _history_db(["slurm_events/dump.txt"], EVENTS_D1_D2)
    assert node_history_end(con) == t(11, 8, 10)


def test_a_later_file_name_does_not_stretch_the_history_past_the_newest_records_day() -> None:
    con = _history_db(["slurm_events/events_2026-11-10.txt", "slurm_events/events_2026-11-20.txt"], EVENTS_D1_D2)
    assert node_history_end(con) == t(12, 0)
    # a node log that ran on to 11-12 lets the 11-12 dump's day count
    con = _history_db(["slurm_events/events_2026-11-12.txt"], EVENTS_D1_D2, others=[t(12, 23, 58)])
    assert node_history_end(con) == t(13, 0)


# ------------------------------------------------------------------------------------- end to end

CLUSTER = """cluster: tiny
timezone: UTC
nodes: "gpu[01-04]"
gpus_per_node: 8
gpu_type: h100
slo:
  window_days: 30
  objectives:
    - {sli: node_availability, objective: 0.98}
    - {sli: job_infra_success, objective: 0.995}
"""
HEADER = SACCT_HEADER


def _job(jid, state, start, end, elapsed, node):
    return (f"{jid}|{jid}|job{jid}|alice|2001|ml|ml|batch|normal|{state}|0:0|{start}|{start}|{start}|{end}|{elapsed}|"
            f"1-00:00:00|1|64|billing=64,cpu=64,gres/gpu=8,mem=500G,node=1|{node}|")


SACCT = {  # gpu01 only: the accounting runs to 11-11 23:50 (a complete day)
    "2026-11-10": [_job(2001, "COMPLETED", "2026-11-10T01:00:00", "2026-11-10T05:00:00", "04:00:00", "gpu01")],
    "2026-11-11": [_job(2002, "COMPLETED", "2026-11-11T12:00:00", "2026-11-11T23:50:00", "11:50:00", "gpu01")],
}
EVENTS_D1 = """Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User
tiny|gpu02|2026-11-10T18:35:00|Unknown|05:30:00|DRAIN|Xid 48 DBE on GPU 0000:3a:00|root(0)
"""
EVENTS_D2 = """Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User
tiny|gpu02|2026-11-10T18:35:00|2026-11-11T02:35:00|08:00:00|DRAIN|Xid 48 DBE on GPU 0000:3a:00|root(0)
tiny|gpu03|2026-11-11T06:10:00|2026-11-11T08:10:00|02:00:00|DRAIN|IB port mlx5_2 down|root(0)
"""
XID48 = ("Nov 10 18:30:00 gpu02 kernel: NVRM: Xid (PCI:0000:3a:00): 48, pid=55123, name=python3, Ch 00000008, "
         "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, "
         "subpartition 0.")
BOOT = ("Nov 11 02:20:00 gpu02 kernel: Linux version 5.15.0-119-generic (buildd@lcy02-amd64-012) (gcc (Ubuntu "
        "11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #129-Ubuntu SMP Fri Aug 2 19:25:20 "
        "UTC 2024 (Ubuntu 5.15.0-119.129-generic 5.15.160)")


def _landing(root: Path, *, sacct: bool, syslog: bool, events: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    (root / "cluster.yaml").write_text(CLUSTER)
    if sacct:
        (root / "sacct").mkdir()
        for day, rows in SACCT.items():
            (root / "sacct" / f"sacct_{day}.psv").write_text("\n".join([HEADER, *rows]) + "\n")
    if syslog:
        for day, mon in (("2026-11-10", "Nov 10"), ("2026-11-11", "Nov 11")):
            (root / "syslog" / day).mkdir(parents=True)
            for n in range(1, 5):
                node = f"gpu{n:02d}"
                lines = [f"{mon} 00:01:06 {node} CRON[2006]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)"]
                if node == "gpu02":
                    lines += [XID48] if day == "2026-11-10" else [BOOT]
                lines.append(f"{mon} 23:58:06 {node} CRON[3006]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)")
                (root / "syslog" / day / f"{node}.log").write_text("\n".join(lines) + "\n")
    (root / "slurm_events").mkdir()
    for name, text in events.items():
        (root / "slurm_events" / name).write_text(text)
    return root


def _gpusre() -> str:
    return shutil.which("gpusre", path=str(Path(sys.executable).parent)) or "gpusre"


def _run(tmp: Path, **landing: object) -> Path:
    root = _landing(tmp / "landing", **landing)  # type: ignore[arg-type]
    wh = tmp / "wh.duckdb"
    subprocess.run([_gpusre(), "run", "--landing", str(root), "--warehouse", str(wh), "--reports", str(tmp / "r")],
                   check=True, capture_output=True, text=True, timeout=900)
    return wh


def test_a_missing_dump_times_the_repair_from_the_logs_and_keeps_the_slo(tmp_path: Path) -> None:
    """The D2 dump is missing: the history ends at the D1 dump's cut, 11-11 00:05 (gpu02's open drain:
    18:35 + 05:30). Hand values, 4 nodes = 96 node-h a day:

    * marts.incident_repairs: gpu02's Xid 48 repaired by its reboot at 02:20 (was ``ongoing``);
    * node availability 11-10: gpu02 down 18:35-24:00 = 5 5/12 h -> 90 7/12 / 96 (node states);
    * 11-11: measured 00:00-00:05 (gpu02 down 1/12 h), estimated 00:05-24:00 from the incident, down until
      its repair at 02:20 (2.25 h): good 96 - 1/12 - 2.25 = 93 2/3 of 96 (before: gpu02 down all day, 72/96).
    """
    wh = _run(tmp_path, sacct=True, syslog=True, events={"events_2026-11-10.txt": EVENTS_D1})
    con = duckdb.connect(str(wh), read_only=True)
    try:
        rep = con.sql("SELECT repair_state, repair_source, repaired_ts FROM marts.incident_repairs "
                      "WHERE list_contains(nodes, 'gpu02')").fetchall()
        na = {str(d): (g, tot, s) for d, g, tot, s in con.sql(
            "SELECT day, good, total, source FROM marts.slo_daily WHERE sli = 'node_availability' ORDER BY day").fetchall()}
    finally:
        con.close()
    assert rep == [("repaired", "reboot", t(11, 2, 20))]
    assert na["2026-11-10"] == (pytest.approx(96 - 65 / 12), pytest.approx(96.0), "node_states")
    assert na["2026-11-11"] == (pytest.approx(96 - 1 / 12 - 2.25), pytest.approx(96.0), "node_states+incidents")
    out = subprocess.run([_gpusre(), "report", "nightly", "--warehouse", str(wh), "--out", str(tmp_path / "n"),
                          "--date", "2026-11-11"], check=True, capture_output=True, text=True, timeout=600)
    md = next((tmp_path / "n").glob("nightly-2026-11-11.md")).read_text()
    section = md.split("## Nodes out of service now", 1)[1].split("\n## ", 1)[0]
    assert "the node-state history's end, 2026-11-11 00:05 UTC" in section, out.stderr
    assert "since 2026-11-10 18:35 UTC, 5.5 h by that end" in section
    assert "the node logs show a reboot at 2026-11-11 02:20 UTC" in section
    assert "has been DRAIN" not in section and "29.4 h" not in section


def test_node_states_only_run_to_the_end_of_the_last_dumps_day(tmp_path: Path) -> None:
    """No accounting, no logs: the D2 dump (``events_2026-11-11.txt``) closes every event, so 11-11 is
    observed whole: gpu02 down 00:00-02:35, gpu03 06:10-08:10 -> 96 - 31/12 - 2 = 91 5/12 of 96 (before:
    the day ended at 08:10, 32 2/3 node-hours observed). 11-10: 90 7/12 of 96."""
    wh = _run(tmp_path, sacct=False, syslog=False,
              events={"events_2026-11-10.txt": EVENTS_D1, "events_2026-11-11.txt": EVENTS_D2})
    con = duckdb.connect(str(wh), read_only=True)
    try:
        daily = {str(d): (o, i) for d, o, i in con.sql(
            "SELECT day, sum(observed_hours), sum(in_service_hours) FROM marts.node_availability_daily "
            "GROUP BY day ORDER BY day").fetchall()}
        na = {str(d): (g, tot) for d, g, tot in con.sql(
            "SELECT day, good, total FROM marts.slo_daily WHERE sli = 'node_availability' ORDER BY day").fetchall()}
        con.execute("SET TimeZone = 'UTC'")
        (history_end,), = con.sql("SELECT CAST(history_end_ts AS VARCHAR) FROM marts.data_freshness "
                                   "WHERE source_kind = 'slurm_events'").fetchall()
    finally:
        con.close()
    # the freshness mart says where that history ends, as node availability reads it
    assert history_end == "2026-11-12 00:00:00+00"
    assert daily == {"2026-11-10": (pytest.approx(96.0), pytest.approx(96 - 65 / 12)),
                     "2026-11-11": (pytest.approx(96.0), pytest.approx(96 - 31 / 12 - 2))}
    assert na["2026-11-11"] == (pytest.approx(96 - 31 / 12 - 2), pytest.approx(96.0))
    two_days = (96 - 65 / 12 + 96 - 31 / 12 - 2) / 192
    assert sum(g for g, _ in na.values()) / sum(tot for _, tot in na.values()) == pytest.approx(two_days)
