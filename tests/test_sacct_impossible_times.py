"""Impossible Slurm accounting times (outside probe AQ, findings 1 and 4).

Probe AQ's ``sacct/badrows_2026-11-11.psv`` had, among others::

    2007|…|COMPLETED|…|Unknown|2026-11-11T14:00:00|01:00:00|…              (Start unknown)
    2009|…|COMPLETED|…|1970-01-01T00:00:00|2026-11-11T14:00:00|01:00:00|…  (Start = Slurm's unset 0)
    2010|…|COMPLETED|…|2026-11-11T13:00:00|2099-01-01T00:00:00|01:00:00|…  (End 72 years after Start)

2009 and 2010 loaded as a 491,000-hour job from 1970 and one running to 2099: the daily marts recomputed
3,632 days (34 min instead of 75 s) and the nightly report was dated 2098-12-31. 2007 counted 8 GPU-h in
core.jobs but 0 in utilization (no start). Slurm's own fields say the truth: time 0 is "unset" (unknown),
Elapsed is End - Start less suspended time, so a finished job without Start started at End - Elapsed
(13:00) and an End 72 years after a 1-hour run's Start is wrong (rejected, naming the values).
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from pathlib import Path

import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing

from gpusre.models.ingest.slurm_values import MAX_SUSPENDED_S
from gpusre.models.sources.sacct.parse import parse_sacct_json, parse_sacct_text

UTC = timezone.utc
T13, T14 = datetime(2026, 11, 11, 13, tzinfo=UTC), datetime(2026, 11, 11, 14, tzinfo=UTC)

#: Probe AQ's header and rows (2007, 2008, 2009, 2010), verbatim.
PROBE_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|"
                "End|Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment\n")
_TAIL = "|1-00:00:00|1|128|billing=128,cpu=128,gres/gpu:h100=8,gres/gpu=8,mem=2000G,node=1|gpu12|\n"
PROBE_ROWS = {
    "2007": "2007|2007|bad-2007|hank|20008|research|research|gpu|normal|COMPLETED|0:0|2026-11-11T12:50:00|"
            "2026-11-11T12:50:00|Unknown|2026-11-11T14:00:00|01:00:00" + _TAIL,
    "2008": "2008|2008|bad-2008|hank|20008|research|research|gpu|normal|CANCELLED by 0|0:0|2026-11-11T12:50:00|"
            "2026-11-11T12:50:00|None|2026-11-11T14:00:00|00:00:00" + _TAIL,
    "2009": "2009|2009|bad-2009|hank|20008|research|research|gpu|normal|COMPLETED|0:0|2026-11-11T12:50:00|"
            "2026-11-11T12:50:00|1970-01-01T00:00:00|2026-11-11T14:00:00|01:00:00" + _TAIL,
    "2010": "2010|2010|bad-2010|hank|20008|research|research|gpu|normal|COMPLETED|0:0|2026-11-11T12:50:00|"
            "2026-11-11T12:50:00|2026-11-11T13:00:00|2099-01-01T00:00:00|01:00:00" + _TAIL,
}
MSG_2010 = "End 2099-01-01T00:00:00 is 72 years after Start 2026-11-11T13:00:00 but Elapsed is 01:00:00"


def _start(r, job_id: str) -> datetime | None:  # type: ignore[no-untyped-def]
    return r.records.filter(pl.col("job_id") == job_id).get_column("start_ts").item()


# ----------------------------------------------------------------------------- text dumps


def test_probe_rows() -> None:
    r = parse_sacct_text(PROBE_HEADER + "".join(PROBE_ROWS.values()), "badrows_2026-11-11.psv")
    assert r.rows_read == 4
    # 2007 (Unknown) and 2009 (epoch = unset): finished, End 14:00 - Elapsed 1 h = 13:00.
    assert _start(r, "2007") == T13 and _start(r, "2009") == T13
    # 2008 cancelled while pending (Elapsed 0): not started.
    assert _start(r, "2008") is None
    # 2010: End 2099 after a 1-hour run: rejected with file, line and the values.
    assert r.rejects.select("source_file", "line_no", "error").rows() == [("badrows_2026-11-11.psv", 5, MSG_2010)]


@pytest.mark.parametrize(
    ("zone", "start"),
    [
        ("America/Denver", "1969-12-31T17:00:00"),   # time 0 printed in a zone west of UTC (MST)
        ("Asia/Tokyo", "1970-01-01T09:00:00"),       # ... east of UTC (JST)
        ("UTC", "1970-01-01 00:00:00"),              # SLURM_TIME_FORMAT="%F %T"
        ("America/Denver", "1969-12-31T17:00:00-0700"),  # SLURM_TIME_FORMAT="%FT%T%z"
    ],
)
def test_epoch_in_any_zone_is_unknown(zone: str, start: str) -> None:
    """Time 0 in the dump's zone and spelling: unknown, then End - ElapsedRaw (a FAILED job, 90 min)."""
    end = "2026-11-11T14:00:00" if zone == "UTC" else ("2026-11-11T07:00:00" if zone == "America/Denver"
                                                        else "2026-11-11T23:00:00")
    if " " in start:
        end = end.replace("T", " ")
    text = f"JobID|State|Submit|Start|End|ElapsedRaw\n7|FAILED|{end}|{start}|{end}|5400\n"
    r = parse_sacct_text(text, "z.psv", timezone=zone)
    assert r.rejects.is_empty()
    row = r.records.row(0, named=True)
    assert row["end_ts"] == T14 and row["start_ts"] == datetime(2026, 11, 11, 12, 30, tzinfo=UTC)


def test_start_unknown_stays_unknown_without_a_run() -> None:
    """No inference for a running job (no End), Elapsed 0, or a state that is not final (REQUEUED)."""
    text = ("JobID|State|Start|End|Elapsed\n"
            "1|RUNNING|Unknown|Unknown|01:00:00\n"
            "2|CANCELLED by 1000|Unknown|2026-11-11T14:00:00|00:00:00\n"
            "3|REQUEUED|Unknown|2026-11-11T14:00:00|01:00:00\n"
            "4|TIMEOUT|None|2026-11-11T14:00:00|01:00:00\n")
    r = parse_sacct_text(text, "u.psv")
    assert dict(r.records.select("job_id", "start_ts").rows()) == {"1": None, "2": None, "3": None, "4": T13}


def test_end_before_start_and_suspension_bound() -> None:
    """End before Start is rejected; End - Start beyond Elapsed up to the suspension bound loads."""
    within = datetime.fromtimestamp(T13.timestamp() + 3600 + MAX_SUSPENDED_S, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    beyond = datetime.fromtimestamp(T13.timestamp() + 3601 + MAX_SUSPENDED_S, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    text = ("JobID|State|Start|End|Elapsed\n"
            "1|COMPLETED|2026-11-11T13:00:00|2026-11-11T12:00:00|01:00:00\n"
            f"2|COMPLETED|2026-11-11T13:00:00|{within}|01:00:00\n"
            f"3|COMPLETED|2026-11-11T13:00:00|{beyond}|01:00:00\n"
            "4.0|COMPLETED|2026-11-11T13:00:00|2026-11-11T12:59:59|00:00:00\n")
    r = parse_sacct_text(text, "s.psv")
    assert r.records.get_column("job_id").to_list() == ["2"]
    assert r.rejects.select("line_no", "error").rows() == [
        (2, "End 2026-11-11T12:00:00 is before Start 2026-11-11T13:00:00"),
        (4, f"End {beyond} is 30 days after Start 2026-11-11T13:00:00 but Elapsed is 01:00:00"),
        (5, "End 2026-11-11T12:59:59 is before Start 2026-11-11T13:00:00"),
    ]


# ----------------------------------------------------------------------------- sacct --json


def _json_job(job_id: int, start: int, end: int, elapsed: int, state: str = "COMPLETED") -> dict:
    return {
        "job_id": job_id, "name": "j", "user": "hank", "account": "research", "partition": "gpu",
        "state": {"current": [state]}, "exit_code": {"status": ["SUCCESS"], "return_code": 0},
        "time": {"submission": 1_794_400_000, "eligible": 1_794_400_000, "start": start, "end": end,
                 "elapsed": elapsed, "limit": {"set": True, "infinite": False, "number": 1440}},
        "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 8}], "requested": []},
        "nodes": "gpu12",
        "steps": [{"step": {"id": f"{job_id}.batch", "name": "batch"}, "state": "COMPLETED",
                   "exit_code": {"status": ["SUCCESS"], "return_code": 0},
                   "time": {"start": {"set": True, "number": start}, "end": {"set": True, "number": end},
                            "elapsed": elapsed},
                   "tres": {"allocated": []}, "nodes": {"range": "gpu12"}}],
    }


def test_json_same_rules() -> None:
    t13, t14, y2099 = int(T13.timestamp()), int(T14.timestamp()), int(datetime(2099, 1, 1, tzinfo=UTC).timestamp())
    doc = {"jobs": [_json_job(2007, 0, t14, 3600),       # start 0 (unset)
                    _json_job(2009, 3600, t14, 3600),    # start 01:00 1970-01-01: unset printed an hour off
                    _json_job(2010, t13, y2099, 3600)]}  # End 2099: the job and its step are one reject
    r = parse_sacct_json(json.dumps(doc), "j.json")
    assert r.records.select("job_id", "step_id", "start_ts").rows() == [
        ("2007", None, T13), ("2007", "batch", T13), ("2009", None, T13), ("2009", "batch", T13)]
    assert r.rejects.select("line_no", "error").rows() == [(3, MSG_2010)]
    assert r.rows_read == len(r.records) + len(r.rejects) == 5


# ----------------------------------------------------------------------------- the pipeline

CLUSTER = 'cluster: t\ntimezone: UTC\nnodes: "gpu[01-02]"\ngpus_per_node: 8\n'
CLEAN = PROBE_HEADER + (
    "3001|3001|ok|ann|20001|research|research|gpu|normal|COMPLETED|0:0|2026-11-11T09:50:00|2026-11-11T09:50:00|"
    "2026-11-11T10:00:00|2026-11-11T12:00:00|02:00:00|1-00:00:00|1|128|billing=128,cpu=128,gres/gpu=8,node=1|gpu01|\n"
)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    logs = {f"syslog/2026-11-11/{n}.log": f"2026-11-11T00:00:01Z {n} CRON[1]: (root) CMD (run-parts)\n"
                                           f"2026-11-11T23:59:59Z {n} CRON[2]: (root) CMD (run-parts)\n"
            for n in ("gpu01", "gpu02")}
    bad = PROBE_HEADER + PROBE_ROWS["2007"] + PROBE_ROWS["2009"] + PROBE_ROWS["2010"]
    return run_hand_landing(tmp_path_factory.mktemp("times"), {
        "cluster.yaml": CLUSTER, "sacct/sacct_2026-11-11.psv": CLEAN, "sacct/badrows_2026-11-11.psv": bad, **logs})


def test_pipeline_keeps_the_night(warehouse: Path) -> None:
    # One day of data, not 1970 .. 2099.
    assert query_rows(warehouse, "SELECT min(day), max(day), count(*) FROM marts.utilization_daily") == [
        (date(2026, 11, 11), date(2026, 11, 11), 1)]
    assert query_rows(warehouse, "SELECT max(day) FROM marts.day_coverage") == [(date(2026, 11, 11),)]
    # 3001 8 GPUs x 2 h = 16, 2007 and 2009 8 x 1 h (13:00-14:00) = 8 each: 32 GPU-h.
    assert query_rows(warehouse, "SELECT allocated_gpu_hours FROM marts.utilization_daily") == [(32.0,)]
    jobs = query_rows(warehouse, "SELECT job_id, start_ts, gpu_hours FROM core.jobs ORDER BY job_id")
    assert [(j, s.astimezone(UTC), g) for j, s, g in jobs] == [
        ("2007", T13, 8.0), ("2009", T13, 8.0), ("3001", datetime(2026, 11, 11, 10, tzinfo=UTC), 16.0)]
    # The same GPU-hours per user: hank 2007 + 2009 = 16, ann 16.
    assert query_rows(warehouse, "SELECT name, gpu_hours FROM marts.top_consumers WHERE kind = 'user' ORDER BY name"
                      ) == [("ann", 16.0), ("hank", 16.0)]
    assert query_rows(warehouse, "SELECT source_file, line_no, error FROM raw.rejects") == [
        ("sacct/badrows_2026-11-11.psv", 4, MSG_2010)]
