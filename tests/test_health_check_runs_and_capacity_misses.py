"""One NHC run is one event however many programs log it; a capacity check detects no failure.

slurmd runs NHC as its HealthCheckProgram: NHC's die() syslogs ``Health check failed:  <check>:  <message>``
and exits 1, then slurmd logs ``error: health_check failed: rc:1 output:ERROR:  nhc:  Health check failed: …``
(Slurm's format) — one run, two lines. ``core/node_events_once.sql`` keeps one of them, so health-check
firings count runs, and incidents their events. A capacity check (``check_fs_free: /tmp has only 2% free``)
is housekeeping below the failure threshold (README): it did not detect the Xid 95 on the job's other node,
so the job stays a missed detection. Cases from probe AT's landing2 (2026-11-10 gpu005, 2026-11-12 job 1040).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing

from gpusre.models.failures.health_checks import health_check_quality, missed_detections
from gpusre.models.logs.node_event_copies import node_events_once_sql
from gpusre.models.logs.templates import canonical_forms
from gpusre.models.sources.syslog.ingest import _events
from gpusre.models.sources.syslog.parse import SyslogInput, parse_syslog_batch

YEAR = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 12, 31, tzinfo=UTC))
LOST = "Health check failed:  check_nv_healthmon:  GPU 0000:18:00.0 is lost (nvidia-smi: Unable to determine the device handle)"
RELAY = "error: health_check failed: rc:1 output:ERROR:  nhc:  " + LOST
XID79 = [
    "Nov 10 08:00:00 gpu005 kernel: [612345.118233] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.",
    "Nov 10 08:00:00 gpu005 kernel: [612345.118240] NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.",
]
# the probe's lines: each NHC run, then slurmd's report of it in the same second
PROBE_RUNS = [line for t, pid in (("08:05:02", 4007), ("08:10:02", 4014), ("08:15:02", 4021))
              for line in (f"Nov 10 {t} gpu005 nhc[{pid}]: {LOST}", f"Nov 10 {t} gpu005 slurmd[2210]: {RELAY}")]


def _node_events(lines: list[str]) -> pl.DataFrame:
    """The lines of one file as the syslog ingest parses and classifies them, with the key columns of
    core.node_events (event id, file and line number)."""
    batch = parse_syslog_batch([SyslogInput(("\n".join(lines) + "\n").encode(), "syslog/2026-11-10/gpu005.log",
                                            "gpu005", YEAR)])
    assert batch.rejects.is_empty(), batch.rejects
    parsed = batch.lines
    events = _events(parsed, *canonical_forms(parsed["message"]))
    return (pl.concat([parsed.select("ts", pl.col("host").alias("node"), "message"), events], how="horizontal")
            .with_row_index("line_no", offset=1)
            .with_columns(pl.col("line_no").cast(pl.Int64).alias("event_id"),
                          pl.lit("syslog/2026-11-10/gpu005.log").alias("source_file"))
            .filter(pl.col("kind").is_not_null()))


def _once(events: pl.DataFrame) -> pl.DataFrame:
    """``events`` through ``core/node_events_once.sql``, as the failure marts read them."""
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("CREATE SCHEMA core")
        con.register("_ev", events)
        con.execute("CREATE TABLE core.node_events AS SELECT * FROM _ev")
        return con.sql(node_events_once_sql(con)).pl().sort("ts", "line_no")
    finally:
        con.close()


def _runs(lines: list[str]) -> list[datetime]:
    """Stamps of the health-check events that stay in core.node_events_once."""
    once = _once(_node_events(lines))
    return once.filter(pl.col("kind") == "health_check")["ts"].to_list()


def _at(hms: str) -> datetime:
    return datetime.fromisoformat(f"2026-11-10T{hms}+00:00")


@pytest.mark.parametrize(("lines", "runs"), [
    # the probe: NHC's line, then slurmd's in the same second, three runs 5 min apart
    (PROBE_RUNS, ["08:05:02", "08:10:02", "08:15:02"]),
    # slurmd's line first in the file (a relay stamped it first), then NHC's
    ([f"Nov 10 08:05:02 gpu005 slurmd[2210]: {RELAY}", f"Nov 10 08:05:02 gpu005 nhc[4007]: {LOST}"], ["08:05:02"]),
    # `slurmd:` without a PID, 4 s after NHC (NHC marked the node offline with scontrol before it exited),
    # with rsyslog's escape of the output's trailing newline
    ([f"Nov 10 08:05:02 gpu005 nhc[4007]: {LOST}", f"Nov 10 08:05:06 gpu005 slurmd: {RELAY}#012"], ["08:05:02"]),
    # journald short-iso; slurmd's stamp 1 s before NHC's (two relays' clocks)
    ([f"2026-11-10T08:05:01+0000 gpu005 slurmd[2210]: {RELAY}", f"2026-11-10T08:05:02+0000 gpu005 nhc[4007]: {LOST}",
      f"2026-11-10T08:10:01+0000 gpu005 slurmd[2210]: {RELAY}", f"2026-11-10T08:10:02+0000 gpu005 nhc[4014]: {LOST}"],
     ["08:05:01", "08:10:01"]),
    # NHC's own ERROR-prefixed output line beside slurmd's report: one run
    ([f"Nov 10 08:05:02 gpu005 nhc: ERROR:  nhc:  {LOST}", f"Nov 10 08:05:03 gpu005 slurmd[2210]: {RELAY}"],
     ["08:05:02"]),
    # two NHC runs of their own 20 s apart (an operator ran nhc by hand): two runs, not a relay's copy
    ([f"Nov 10 08:05:02 gpu005 nhc[4007]: {LOST}", f"Nov 10 08:05:22 gpu005 nhc[4010]: {LOST}"], ["08:05:02", "08:05:22"]),
    # slurmd alone on every run (no NHC syslog): every run counts
    ([f"Nov 10 08:05:02 gpu005 slurmd[2210]: {RELAY}", f"Nov 10 08:10:02 gpu005 slurmd[2210]: {RELAY}"],
     ["08:05:02", "08:10:02"]),
    # slurmd's report a minute after NHC's line is no report of that run (past NHC's 30-s run timeout)
    ([f"Nov 10 08:05:02 gpu005 nhc[4007]: {LOST}", f"Nov 10 08:06:02 gpu005 slurmd[2210]: {RELAY}"],
     ["08:05:02", "08:06:02"]),
])
def test_one_run_logged_by_nhc_and_slurmd_is_one_event(lines: list[str], runs: list[str]) -> None:
    assert _runs(lines) == [_at(t) for t in runs]


def test_other_lines_keep_the_one_second_copy_rule() -> None:
    # the Xid line twice in its second (syslog + kern.log) is once; the same text 5 s later is another line
    # (the relay pairing is for health-check runs only)
    later = XID79[0].replace("08:00:00", "08:00:05")
    once = _once(_node_events([*XID79, XID79[0], later]))
    assert once.select("kind", "line_no").rows() == [("xid", 1), ("gpu_fallen_off_bus", 2), ("xid", 4)]


def test_health_check_quality_counts_runs_and_the_last_run() -> None:
    # the probe's three runs, each logged by NHC and slurmd: 1 firing of 3 runs (not 6 lines), from the first
    # run 08:05:02 to the last 08:15:02 (not the firing's start again)
    once = _once(_node_events([*XID79, *PROBE_RUNS]))
    row = health_check_quality(once, None).row(0, named=True)
    assert (row["check_name"], row["firings"], row["events"], row["nodes"]) == ("check_nv_healthmon", 1, 3, 1)
    assert (row["first_ts"], row["last_ts"]) == (_at("08:05:02"), _at("08:15:02"))


# --- missed detections: a capacity check detects nothing -------------------------------------------

def _job_1040(check_lines: list[str]) -> pl.DataFrame:
    """missed_detections for job 1040 (gpu[021-022], FAILED 15:58:40, attributed to the Xid 95 on gpu022)
    with ``check_lines`` logged on gpu021 after it."""
    events = _once(_node_events([
        "Nov 12 15:58:00 gpu022 kernel: [955001.223344] NVRM: Xid (PCI:0000:2a:00): 95, pid=88231, name=python3, "
        "Uncontained: FBHUB. RST: Yes, D-RST: No", *check_lines]))
    end = datetime(2026, 11, 12, 15, 58, 40, tzinfo=UTC)
    jobs = pl.DataFrame({"job_id": ["1040"], "nodes": [["gpu021", "gpu022"]]})
    attribution = pl.DataFrame({"job_id": ["1040"], "state": ["FAILED"], "end_ts": [end], "n_gpus": [16],
                                "attribution": ["infrastructure"], "component": ["gpu_memory"],
                                "rule": ["failure event in window"]})
    return missed_detections(attribution, jobs, events)


@pytest.mark.parametrize("check", [
    # the probe's NHC capacity check, 6 min 23 s after the job's end
    "Nov 12 16:05:03 gpu021 nhc[9911]: Health check failed:  check_fs_free:  /tmp has only 2% free (7.1GB), minimum is 5%",
    # relayed by slurmd, check_fs_used
    "Nov 12 16:05:03 gpu021 slurmd[1805]: error: health_check failed: rc:1 output:ERROR:  nhc:  Health check failed:  "
    "check_fs_used:  /var is 99% full (1.8TB), threshold is 95%",
    # a site's own check without an NHC check name
    "Nov 12 16:05:03 gpu021 nhc[9911]: Health check failed: /tmp is 99% full",
])
def test_a_capacity_check_on_the_jobs_node_is_no_detection(check: str) -> None:
    assert _job_1040([check])["job_id"].to_list() == ["1040"]


def test_a_failing_check_on_any_of_its_nodes_is_a_detection() -> None:
    # README: "no failing check on its nodes" — a check at the failure threshold on the job's other node counts,
    # whatever part it names
    ib = ("Nov 12 16:05:03 gpu021 nhc[9911]: Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE "
          "(LinkUp 400 Gb/sec).")
    assert _job_1040([ib]).is_empty()


# --- the pipeline over the probe's lines ----------------------------------------------------------

SACCT_HEAD = ("JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|NNodes|"
              "AllocTRES|NodeList\n")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nhc_runs")
    return run_hand_landing(root, {
        "cluster.yaml": 'cluster: probe\nnodes: "gpu[001-032]"\ngpus_per_node: 8\ntimezone: UTC\n',
        "sacct/sacct_2026-11-10.psv": SACCT_HEAD + (
            "1001|1001|llama-ft|carol|llm|gpu|FAILED|1:0|2026-11-10T05:57:00|2026-11-10T05:57:00|2026-11-10T06:00:00|"
            "2026-11-10T08:01:30|02:01:30|1|cpu=112,gres/gpu=8,node=1|gpu005\n"),
        "sacct/sacct_2026-11-12.psv": SACCT_HEAD + (
            "1040|1040|bert-distill|frank|nlp|gpu|FAILED|1:0|2026-11-12T11:57:00|2026-11-12T11:57:00|"
            "2026-11-12T12:00:00|2026-11-12T15:58:40|03:58:40|2|cpu=224,gres/gpu=16,node=2|gpu[021-022]\n"),
        "syslog/2026-11-10/gpu005.log": "\n".join([*XID79, *PROBE_RUNS]) + "\n",
        "syslog/2026-11-12/gpu022.log": "Nov 12 15:58:00 gpu022 kernel: [955001.223344] NVRM: Xid (PCI:0000:2a:00): 95, "
                                        "pid=88231, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No\n",
        "syslog/2026-11-12/gpu021.log": "Nov 12 16:05:03 gpu021 nhc[9911]: Health check failed:  check_fs_free:  "
                                        "/tmp has only 2% free (7.1GB), minimum is 5%\n",
    })


def test_the_pipeline_counts_runs_and_misses_the_xid_95(warehouse: Path) -> None:
    # core.node_events keeps every line as delivered: 6 health-check lines on gpu005
    assert query_rows(warehouse, "SELECT count(*) FROM core.node_events WHERE kind = 'health_check' "
                                 "AND node = 'gpu005'") == [(6,)]
    # 3 runs, first 08:05:02, last 08:15:02; the capacity check is a firing (1 run, no failure within -5/+10 min)
    rows = query_rows(warehouse, "SELECT check_name, firings, events, preceded_job_failure, "
                                 "strftime(timezone('UTC', first_ts), '%H:%M:%S'), "
                                 "strftime(timezone('UTC', last_ts), '%H:%M:%S') "
                                 "FROM marts.health_check_quality ORDER BY check_name")
    assert rows == [("check_fs_free", 1, 1, 0, "16:05:03", "16:05:03"),
                    ("check_nv_healthmon", 1, 3, 1, "08:05:02", "08:15:02")]
    # the Xid 79 incident: 2 kernel lines + 3 runs = 5 events, of which 3 health checks
    assert query_rows(warehouse, "SELECT n_events, n_health_check_episodes FROM marts.hw_incidents "
                                 "WHERE list_contains(nodes, 'gpu005')") == [(5, 1)]
    assert query_rows(warehouse, "SELECT count(*) FROM marts.hw_incident_members m JOIN core.node_events e "
                                 "USING (event_id) WHERE e.kind = 'health_check'") == [(3,)]
    # 1001: NHC failed 3.5 min after its end (detected); 1040: only a /tmp capacity check on gpu021 (missed)
    assert query_rows(warehouse, "SELECT job_id FROM marts.health_check_misses") == [("1040",)]
