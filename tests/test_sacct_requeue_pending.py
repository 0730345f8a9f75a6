"""core.jobs / core.job_instances from dumps that see a job's life only in part (hand-written dumps,
hand-computed values; cluster in UTC so every stamp reads as written).

* A run Slurm requeued and the job pending again (dumps cut without -D list only the latest record):
  the run ended at the requeue, it is no run still going (probe_c landing4, jobs 4100 and 4200).
* A later dump without UID/Group/QOS keeps the values an earlier dump gave (probe_c job 1008).
* A pending array range is one record of the array job: a newer, smaller range supersedes it
  (probe_c `1006_[4-9]`).
* A run's end a later -D dump records beats the end inferred from the requeue (probe_c landing3 4000).

Each case is checked the way the nightly builds the warehouse (one dump a night, merges), all at
once, and after a re-read of the first dump (its jobs rebuilt from every record).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from gpusre.models.warehouse import connect
from gpusre.pipelines.runner import run_pipeline
from tests.sacct_nights import MODES, build_sacct_nights, materialize_sacct

HEADER = ("JobID|JobIDRaw|User|Account|State|ExitCode|Submit|Eligible|Start|End|Elapsed|NNodes|AllocTRES|ReqTRES|"
          "NodeList")
CLUSTER_YAML = "cluster: t\ntimezone: UTC\nnodes: 'gpu[01-04]'\ngpus_per_node: 8\n"


def _ts(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=timezone.utc)


def _build(tmp_path: Path, mode: str, dumps: dict[str, str], run=materialize_sacct) -> Path:  # noqa: ANN001
    return build_sacct_nights(tmp_path, mode, dumps, CLUSTER_YAML, run)


def _rows(wh: Path, sql: str) -> list[tuple]:
    con = connect(wh, read_only=True)
    try:
        return con.sql(sql).fetchall()
    finally:
        con.close()


# --- 1. requeued, then pending again -------------------------------------------------------------------

#: 4200 runs on 8 GPUs from 11-26 10:00; the next night it is pending after a requeue (submit 11-27
#: 01:00) and is cancelled while pending at 09:00 (Start None). 4201 is another job of that night.
REQUEUED_THEN_CANCELLED = {
    "sacct_2026-11-26.psv": HEADER + "\n"
    "4200|4200|kim|llm|RUNNING|0:0|2026-11-26T09:50:00|2026-11-26T09:50:00|2026-11-26T10:00:00|Unknown|14:05:00|1|"
    "cpu=128,gres/gpu=8,node=1|cpu=128,gres/gpu=8,node=1|gpu01\n",
    "sacct_2026-11-27.psv": HEADER + "\n"
    "4200|4200|kim|llm|CANCELLED by 2100|0:0|2026-11-27T01:00:00|2026-11-27T01:02:00|None|2026-11-27T09:00:00|"
    "00:00:00|1||cpu=128,gres/gpu=8,node=1|None assigned\n"
    "4201|4201|kim|ml|COMPLETED|0:0|2026-11-27T20:00:00|2026-11-27T20:00:00|2026-11-27T20:00:00|2026-11-27T23:00:00|"
    "03:00:00|1|cpu=128,gres/gpu=8,node=1|cpu=128,gres/gpu=8,node=1|gpu02\n",
}


@pytest.mark.parametrize("mode", MODES)
def test_a_run_requeued_then_cancelled_while_pending_ends_at_the_requeue(tmp_path: Path, mode: str) -> None:
    """4200's run ended at the requeue (the pending record's submit, 11-27 01:00): 15 h x 8 GPUs =
    120 GPU-hours, REQUEUED, restarts 1; core.jobs shows the cancelled pending record."""
    wh = _build(tmp_path, mode, REQUEUED_THEN_CANCELLED)
    assert _rows(wh, "SELECT instance_no, is_latest, state, start_ts, end_ts, elapsed_s, n_gpus * elapsed_s / 3600 "
                     "FROM core.job_instances WHERE job_id = '4200'") == [
        (1, True, "REQUEUED", _ts(26, 10), _ts(27, 1), 15 * 3600, 120.0)]
    assert _rows(wh, "SELECT state, start_ts, end_ts, restarts, gpu_hours FROM core.jobs WHERE job_id = '4200'") == [
        ("CANCELLED", None, _ts(27, 9), 1, 0.0)]


#: 4100 runs from 11-23 10:00, is pending after a requeue (submit 11-24 01:00) for two nights, then
#: runs again 11-25 10:00-12:00.
REQUEUED_PENDING_THEN_RUN = {
    "sacct_2026-11-23.psv": HEADER + "\n"
    "4100|4100|kim|llm|RUNNING|0:0|2026-11-23T09:50:00|2026-11-23T09:50:00|2026-11-23T10:00:00|Unknown|14:05:00|1|"
    "cpu=128,gres/gpu=8,node=1|cpu=128,gres/gpu=8,node=1|gpu01\n",
    "sacct_2026-11-24.psv": HEADER + "\n"
    "4100|4100|kim|llm|PENDING|0:0|2026-11-24T01:00:00|2026-11-24T01:02:00|Unknown|Unknown|00:00:00|1||"
    "cpu=128,gres/gpu=8,node=1|None assigned\n",
    "sacct_2026-11-25.psv": HEADER + "\n"
    "4100|4100|kim|llm|PENDING|0:0|2026-11-24T01:00:00|2026-11-24T01:02:00|Unknown|Unknown|00:00:00|1||"
    "cpu=128,gres/gpu=8,node=1|None assigned\n",
}
RUN_AGAIN = {
    "sacct_2026-11-26.psv": HEADER + "\n"
    "4100|4100|kim|llm|COMPLETED|0:0|2026-11-24T01:00:00|2026-11-24T01:02:00|2026-11-25T10:00:00|2026-11-25T12:00:00|"
    "02:00:00|1|cpu=128,gres/gpu=8,node=1|cpu=128,gres/gpu=8,node=1|gpu03\n",
}


@pytest.mark.parametrize("mode", MODES)
def test_a_run_requeued_and_pending_is_over_while_pending_and_after(tmp_path: Path, mode: str) -> None:
    """While 4100 is pending its first run is closed at the requeue (11-23 10:00 -> 11-24 01:00, 120
    GPU-hours); once it runs again that run is instance 2 (2 h, 16 GPU-hours), the first unchanged."""
    first = (1, "REQUEUED", _ts(23, 10), _ts(24, 1), 15 * 3600, 120.0)
    query = ("SELECT instance_no, state, start_ts, end_ts, elapsed_s, n_gpus * elapsed_s / 3600 "
             "FROM core.job_instances WHERE job_id = '4100' ORDER BY instance_no")
    wh = _build(tmp_path / "pending", mode, REQUEUED_PENDING_THEN_RUN)
    assert _rows(wh, query) == [first]
    assert _rows(wh, "SELECT state, start_ts, restarts FROM core.jobs") == [("PENDING", None, 1)]
    wh = _build(tmp_path / "ran", mode, {**REQUEUED_PENDING_THEN_RUN, **RUN_AGAIN})
    assert _rows(wh, query) == [first, (2, "COMPLETED", _ts(25, 10), _ts(25, 12), 2 * 3600, 16.0)]
    assert _rows(wh, "SELECT state, start_ts, restarts, gpu_hours FROM core.jobs") == [
        ("COMPLETED", _ts(25, 10), 1, 16.0)]


def test_its_own_pending_record_before_the_start_does_not_end_a_run(tmp_path: Path) -> None:
    """A pending record older than the run (submitted 09:00, eligible 09:00, started 10:00; the dumps
    read in any order) is the same instance waiting, not a requeue: the run is still going."""
    dumps = {
        "sacct_b.psv": HEADER + "\n"
        "4300|4300|kim|llm|RUNNING|0:0|2026-11-26T09:00:00|2026-11-26T09:00:00|2026-11-26T10:00:00|Unknown|"
        "02:00:00|1|cpu=128,gres/gpu=8,node=1|cpu=128,gres/gpu=8,node=1|gpu01\n",
        "sacct_a.psv": HEADER + "\n"
        "4300|4300|kim|llm|PENDING|0:0|2026-11-26T09:00:00|2026-11-26T09:00:00|Unknown|Unknown|00:00:00|1||"
        "cpu=128,gres/gpu=8,node=1|None assigned\n",
    }
    for mode in ("nightly", "once"):
        wh = _build(tmp_path, mode, dumps)
        assert _rows(wh, "SELECT state, end_ts, restarts FROM core.jobs") == [("RUNNING", None, 0)]
        assert _rows(wh, "SELECT instance_no, is_latest, state, end_ts FROM core.job_instances") == [
            (1, True, "RUNNING", None)]


def test_utilization_counts_the_requeued_run_until_the_requeue_only(tmp_path: Path) -> None:
    """marts.utilization_daily over the nightly flow of 4200/4201: 11-27 = 8 x 1 h (4200 until its requeue
    at 01:00) + 8 x 3 h (4201) = 32; nothing on 11-28 (before: 192 on 11-27 from a run left open to the end
    of the data). Nothing on 11-26 either: the accounting's first record is the 11-26 dump's cut at 11-27
    00:05 (4200 RUNNING, 10:00 + 14:05), so its first day is 11-27, as goodput_daily's and the SLIs' (4200's
    14 h on 11-26 were once a utilization row no other mart had)."""

    def run(landing: Path, wh: Path) -> None:
        run_pipeline(landing, wh, wh.parent / "reports")

    wh = _build(tmp_path, "nightly", REQUEUED_THEN_CANCELLED, run=run)
    assert _rows(wh, "SELECT day, allocated_gpu_hours FROM marts.utilization_daily "
                     "WHERE allocated_gpu_hours > 0 ORDER BY day") == [(_ts(27, 0).date(), 32.0)]
    assert _rows(wh, "SELECT min(day) FROM marts.goodput_daily") == [(_ts(27, 0).date(),)]


# --- 2. a column a later dump does not have --------------------------------------------------------------

#: Night 1 (23.11 -P) has UID, Group, QOS; night 2 (22.05 -p, trailing pipe) has none of them, and the
#: account changed (ml -> llm): what night 2 prints wins, what it does not print stays.
WITHOUT_COLUMNS = {
    "sacct_2026-11-10.psv":
    "JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|Elapsed|"
    "NNodes|AllocTRES|NodeList\n"
    "1008|1008|long-sft|grace|2008|grace|ml|gpu|normal|RUNNING|0:0|2026-11-10T19:55:00|2026-11-10T19:55:00|"
    "2026-11-10T20:00:00|Unknown|04:05:00|2|cpu=256,gres/gpu=16,node=2|gpu[01-02]\n",
    "sacct_2026-11-11.txt":
    "JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|NNodes|"
    "AllocTRES|NodeList|\n"
    "1008|1008|long-sft|grace|llm|gpu|COMPLETED|0:0|2026-11-10T19:55:00|2026-11-10T19:55:00|2026-11-10T20:00:00|"
    "2026-11-11T08:00:00|12:00:00|2|cpu=256,gres/gpu:h100=16,gres/gpu=16,node=2|gpu[01-02]|\n",
}


@pytest.mark.parametrize("mode", MODES)
def test_a_column_a_later_dump_lacks_keeps_the_earlier_value(tmp_path: Path, mode: str) -> None:
    """1008: COMPLETED from night 2 (12 h x 16 GPUs = 192 GPU-hours), account llm from night 2, and uid
    2008, group grace, qos normal from night 1."""
    wh = _build(tmp_path, mode, WITHOUT_COLUMNS)
    assert _rows(wh, 'SELECT state, "user", uid, "group", account, qos, n_gpus, gpu_hours FROM core.jobs') == [
        ("COMPLETED", "grace", 2008, "grace", "llm", "normal", 16, 192.0)]


# --- 3. a pending array range superseded -----------------------------------------------------------------

PENDING_RANGE = ("{job}|1006|frank|ml|{state}|0:0|2026-11-10T01:00:00|2026-11-10T01:00:00|{start}|{end}|00:00:00|1||"
                 "{req}|None assigned")
ARRAY_NIGHTS = {
    # no ReqTRES in night 1's range: GPU count unknown
    "sacct_2026-11-10.psv": HEADER + "\n" + PENDING_RANGE.format(job="1006_[4-9]", state="PENDING", start="Unknown",
                                                                 end="Unknown", req="") + "\n",
    "sacct_2026-11-11.psv": HEADER + "\n"
    "1006_4|1104|frank|ml|COMPLETED|0:0|2026-11-10T01:00:00|2026-11-11T00:59:00|2026-11-11T01:00:00|"
    "2026-11-11T02:00:00|01:00:00|1|cpu=16,gres/gpu=1,node=1|cpu=16,gres/gpu=1,node=1|gpu01\n"
    + PENDING_RANGE.format(job="1006_[5-9%2]", state="PENDING", start="Unknown", end="Unknown",
                           req="cpu=16,gres/gpu=1,node=1") + "\n",
    # the same tasks spelled without the throttle, cancelled while pending
    "sacct_2026-11-12.psv": HEADER + "\n" + PENDING_RANGE.format(
        job="1006_[5-9]", state="CANCELLED by 1234", start="None", end="2026-11-12T09:00:00",
        req="cpu=16,gres/gpu=1,node=1") + "\n",
}


@pytest.mark.parametrize("mode", MODES)
def test_a_newer_smaller_range_of_an_array_supersedes_the_older(tmp_path: Path, mode: str) -> None:
    """After night 3: 1006_4 (1 GPU-hour) and the cancelled 1006_[5-9] (1 GPU each, never started);
    neither 1006_[4-9] (superseded by a smaller range of the same array) nor 1006_[5-9%2] (the same
    tasks, a later and final record) is a job still pending."""
    wh = _build(tmp_path, mode, ARRAY_NIGHTS)
    got = _rows(wh, "SELECT job_id, state, start_ts, n_gpus, size_bucket, gpu_hours FROM core.jobs ORDER BY job_id")
    assert got == [
        ("1006_4", "COMPLETED", _ts(11, 1), 1, "1", 1.0),
        ("1006_[5-9]", "CANCELLED", None, 1, "1", 0.0)]


def test_each_night_shows_the_array_as_sacct_did(tmp_path: Path) -> None:
    """Night by night: the range alone; task 4 and the shrunk range; task 4 and the cancelled range."""
    landing, wh = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text(CLUSTER_YAML)
    seen = []
    for name, text in ARRAY_NIGHTS.items():
        (landing / "sacct" / name).write_text(text)
        materialize_sacct(landing, wh)
        seen.append(_rows(wh, "SELECT job_id, state FROM core.jobs ORDER BY job_id"))
    assert seen == [[("1006_[4-9]", "PENDING")],
                    [("1006_4", "COMPLETED"), ("1006_[5-9%2]", "PENDING")],
                    [("1006_4", "COMPLETED"), ("1006_[5-9]", "CANCELLED")]]


def test_a_range_no_later_record_covers_stays_pending(tmp_path: Path) -> None:
    """Conservative: a later dump that lists one task of the array but no range (a partial cut) does
    not tell that the other tasks stopped pending: 1006_[4-9] stays while 5-9 have no record."""
    dumps = {"sacct_2026-11-10.psv": ARRAY_NIGHTS["sacct_2026-11-10.psv"],
             "sacct_2026-11-11.psv": ARRAY_NIGHTS["sacct_2026-11-11.psv"].splitlines()[0] + "\n"
             + ARRAY_NIGHTS["sacct_2026-11-11.psv"].splitlines()[1] + "\n"}
    wh = _build(tmp_path, "nightly", dumps)
    assert _rows(wh, "SELECT job_id, state FROM core.jobs ORDER BY job_id") == [
        ("1006_4", "COMPLETED"), ("1006_[4-9]", "PENDING")]


# --- 5. a recorded end beats an inferred one -------------------------------------------------------------

#: 4000 runs on 16 GPUs from 11-20 15:00; night 2 (no -D) shows only the run after the requeue
#: (submit 08:00, start 08:10, COMPLETED 14:10); night 3 (-D) lists the first run REQUEUED at 07:50.
RECORDED_END = {
    "sacct_2026-11-20.psv": HEADER + "\n"
    "4000|4000|kim|llm|RUNNING|0:0|2026-11-20T14:50:00|2026-11-20T14:50:00|2026-11-20T15:00:00|Unknown|09:00:00|2|"
    "cpu=256,gres/gpu=16,node=2|cpu=256,gres/gpu=16,node=2|gpu[01-02]\n",
    "sacct_2026-11-21.psv": HEADER + "\n"
    "4000|4000|kim|llm|COMPLETED|0:0|2026-11-21T08:00:00|2026-11-21T08:02:00|2026-11-21T08:10:00|2026-11-21T14:10:00|"
    "06:00:00|2|cpu=256,gres/gpu=16,node=2|cpu=256,gres/gpu=16,node=2|gpu[03-04]\n",
    "sacct_2026-11-21_D.psv": HEADER + "\n"
    "4000|4000|kim|llm|REQUEUED|0:0|2026-11-20T14:50:00|2026-11-20T14:50:00|2026-11-20T15:00:00|2026-11-21T07:50:00|"
    "16:50:00|2|cpu=256,gres/gpu=16,node=2|cpu=256,gres/gpu=16,node=2|gpu[01-02]\n"
    "4000|4000|kim|llm|COMPLETED|0:0|2026-11-21T08:00:00|2026-11-21T08:02:00|2026-11-21T08:10:00|2026-11-21T14:10:00|"
    "06:00:00|2|cpu=256,gres/gpu=16,node=2|cpu=256,gres/gpu=16,node=2|gpu[03-04]\n",
}


@pytest.mark.parametrize("mode", MODES)
def test_a_recorded_end_beats_the_inferred_one(tmp_path: Path, mode: str) -> None:
    """Instance 1 ends at the recorded 07:50 (16 h 50 min = 60,600 s, x 16 GPUs = 269.33 GPU-hours), not
    at the requeue inferred from night 2 (08:00, 61,200 s); instance 2: 6 h x 16 = 96."""
    wh = _build(tmp_path, mode, RECORDED_END)
    got = _rows(wh, "SELECT instance_no, state, start_ts, end_ts, elapsed_s, round(n_gpus * elapsed_s / 3600, 2) "
                    "FROM core.job_instances ORDER BY instance_no")
    assert got == [(1, "REQUEUED", _ts(20, 15), _ts(21, 7, 50), 60_600, 269.33),
                   (2, "COMPLETED", _ts(21, 8, 10), _ts(21, 14, 10), 6 * 3600, 96.0)]
    assert _rows(wh, "SELECT restarts FROM core.jobs") == [(1,)]


def test_an_inferred_end_follows_after_a_merge_with_no_recorded_end(tmp_path: Path) -> None:
    """Without the -D dump the first run keeps the inferred end (the next run's submit, 08:00: 17 h x 16
    = 272 GPU-hours) through later merges that bring nothing new about it."""
    dumps = {k: RECORDED_END[k] for k in ("sacct_2026-11-20.psv", "sacct_2026-11-21.psv")}
    dumps["sacct_2026-11-22.psv"] = RECORDED_END["sacct_2026-11-21.psv"]  # listed again the next night
    wh = _build(tmp_path, "nightly", dumps)
    assert _rows(wh, "SELECT instance_no, state, end_ts, elapsed_s, n_gpus * elapsed_s / 3600 "
                     "FROM core.job_instances ORDER BY instance_no") == [
        (1, "REQUEUED", _ts(21, 8), 17 * 3600, 272.0), (2, "COMPLETED", _ts(21, 14, 10), 6 * 3600, 96.0)]
