"""The America/Chicago fall-back of 2026-11-01 end to end (an outside probe's landing, 2026-12-06, cut
down): local 01:00-01:59 happens twice, first CDT (UTC-5), then CST (UTC-6).

* gpu12's ``journalctl -o short-full`` stamps name CST: the Xid is 07:30Z, the second pass, so job 7012
  (FAILED 1:0, end 07:31Z) was killed by the infrastructure and the repair (Xid -> boot 08:15Z) is 0.75 h;
  nothing of that file is a DST guess. gpu04's plain syslog Xid of 01:50 has nothing to place it: the
  guess (the first pass) is counted.
* A webhook logger's naive ``asctime`` (01:31:02,512) is local time and, its alert having started at
  07:30:40Z, the CST pass: received 07:31:02.512Z. A relay whose clock is an hour behind logged a delivery
  before its alert started: the nightly of that day says so, no reject.
* The nightly's DST sentence is said on 2026-11-01, the UTC day of the repeated hour's first pass, not on
  2026-11-02, though gpu04's file has records then too.
* Job 7001 started 2026-10-28, days before the first dump's window: utilization_daily starts on the
  accounting's first day (2026-10-31), as goodput_daily and node_availability_daily do.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from pathlib import Path

import duckdb
import pytest
from hand_landing import query_rows, run_hand_landing

from gpusre.reports.nightly.report import render_nightly_report

UTC = timezone.utc
CLUSTER = 'cluster: chi\ntimezone: America/Chicago\nnodes: "gpu[01-12]"\ngpus_per_node: 8\ngpu_type: h100\n'
HEADER = "JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|NNodes|AllocTRES|NodeList"
TRES = "cpu=128,gres/gpu=8,node=1"
#: Dumps of the local days 10-31 and 11-01, run at 00:05 local: cuts 11-01 05:05Z and 11-02 06:05Z.
DUMP_1031 = [
    f"7001|7001|pretrain|alee|llm|gpu|RUNNING|0:0|2026-10-28T08:50:00|2026-10-28T08:50:00|2026-10-28T09:00:00|Unknown|3-15:05:00|1|{TRES}|gpu03",
    f"7030|7030|eval|bkim|eval|gpu|COMPLETED|0:0|2026-10-31T00:50:00|2026-10-31T00:50:00|2026-10-31T01:00:00|2026-10-31T09:00:00|08:00:00|1|{TRES}|gpu05",
    f"7012|7012|sft|elim|eval|gpu|RUNNING|0:0|2026-10-31T22:50:00|2026-10-31T22:50:00|2026-10-31T23:00:00|Unknown|01:05:00|1|{TRES}|gpu12",
]
DUMP_1101 = [
    f"7001|7001|pretrain|alee|llm|gpu|RUNNING|0:0|2026-10-28T08:50:00|2026-10-28T08:50:00|2026-10-28T09:00:00|Unknown|4-16:05:00|1|{TRES}|gpu03",
    f"7012|7012|sft|elim|eval|gpu|FAILED|1:0|2026-10-31T22:50:00|2026-10-31T22:50:00|2026-10-31T23:00:00|2026-11-01T01:31:00|03:31:00|1|{TRES}|gpu12",
]
CRON = "CRON[1305]: (root) CMD (/usr/lib/nagios/plugins/check_gpu_health.sh >/dev/null 2>&1)"
XID = "kernel: NVRM: Xid (PCI:0000:bb:00): 79, pid=41002, name=python3, GPU has fallen off the bus."
BOOT = "kernel: Linux version 5.15.0-126-generic (buildd@lcy02-amd64-032) #136-Ubuntu SMP Wed Nov 6 10:38:22 UTC 2024"
GPU12 = [f"Sun 2026-11-01 00:30:00 CDT gpu12 {CRON}", f"Sun 2026-11-01 01:30:00 CST gpu12 {XID}",
         f"Sun 2026-11-01 02:15:00 CST gpu12 {BOOT}", f"Sun 2026-11-01 02:30:00 CST gpu12 {CRON}"]
#: A quiet node: nothing in the file says which pass 01:50 is (the guess: 06:50Z); 20:30 CST is 11-02 02:30Z.
GPU04 = [f"Nov  1 00:30:00 gpu04 {CRON}", f"Nov  1 01:50:00 gpu04 {XID.replace('bb:00', '2a:00')}",
         f"Nov  1 02:30:00 gpu04 {CRON}", f"Nov  1 02:30:10 gpu04 {BOOT}", f"Nov  1 20:30:00 gpu04 {CRON}"]
#: The probe's Grafana delivery: Python logging's local asctime.
GRAFANA = (
    '2026-11-01 01:31:02,512 INFO webhook POST /alerts {"receiver":"gpu-oncall","status":"firing","orgId":1,'
    '"version":"1","alerts":[{"status":"firing","labels":{"alertname":"GPU fell off the bus","grafana_folder":"GPU",'
    '"instance":"gpu12:9400","Hostname":"gpu12","gpu":"0","severity":"critical"},"annotations":{"summary":'
    '"Xid 79 on gpu12"},"startsAt":"2026-11-01T01:30:40.157076235-06:00","endsAt":"0001-01-01T00:00:00Z",'
    '"generatorURL":"","fingerprint":"5b1f0c2d9e8a7f60","values":{"A":1}}],"truncatedAlerts":0}')


def _relay(logged: str) -> str:
    """A relay's line (explicit UTC) carrying gpu09's alert that started 12:00:00Z."""
    body = {"receiver": "gpu-oncall", "status": "firing", "version": "4", "truncatedAlerts": 0, "groupKey": "{}:{}",
            "alerts": [{"status": "firing", "labels": {"alertname": "GPUXidError", "instance": "gpu09:9400"},
                        "annotations": {"summary": "Xid 48 on gpu09"}, "startsAt": "2026-11-01T12:00:00Z",
                        "endsAt": "0001-01-01T00:00:00Z", "fingerprint": "c0ffee0000000009"}]}
    return f"{logged} POST /alerts {json.dumps(body)}"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dst")
    return run_hand_landing(root, {
        "cluster.yaml": CLUSTER,
        "sacct/sacct_2026-10-31.psv": "\n".join([HEADER, *DUMP_1031]) + "\n",
        "sacct/sacct_2026-11-01.psv": "\n".join([HEADER, *DUMP_1101]) + "\n",
        "syslog/gpu12/journal-short-full.log": "\n".join(GPU12) + "\n",
        "syslog/2026-11-01/gpu04.log": "\n".join(GPU04) + "\n",
        "alerts/receiver.log": GRAFANA + "\n",
        # an hour behind: 10:59Z for an alert that started 12:00Z (early), then 12:00:30Z (not)
        "alerts/relay.log": _relay("2026-11-01T10:59:00Z") + "\n" + _relay("2026-11-01T12:00:30Z") + "\n",
    })


def test_journal_cst_is_the_second_pass(warehouse: Path) -> None:
    assert query_rows(warehouse, "SELECT node, ts FROM core.node_events WHERE kind = 'xid' ORDER BY node") == [
        ("gpu04", datetime(2026, 11, 1, 6, 50, tzinfo=UTC)),   # the documented guess
        ("gpu12", datetime(2026, 11, 1, 7, 30, tzinfo=UTC))]
    assert dict(query_rows(warehouse, "SELECT source_file, rows_dst_guessed FROM raw.ingested_files "
                                      "WHERE source_kind = 'syslog'")) == {
        "syslog/gpu12/journal-short-full.log": 0, "syslog/2026-11-01/gpu04.log": 1}
    assert query_rows(warehouse, "SELECT attribution FROM marts.job_failure_attribution WHERE job_id = '7012'") == [
        ("infrastructure",)]
    assert query_rows(warehouse, "SELECT round(hours_to_repair, 6) FROM marts.incident_repairs "
                                 "WHERE nodes = ['gpu12']") == [(0.75,)]


def test_logger_local_time_is_the_cluster_zone(warehouse: Path) -> None:
    assert query_rows(warehouse, "SELECT received_at FROM raw.alert_notifications "
                                 "WHERE fingerprint = '5b1f0c2d9e8a7f60'") == [
        (datetime(2026, 11, 1, 7, 31, 2, 512000, tzinfo=UTC),)]
    # the early relay delivery is loaded, not rejected
    assert query_rows(warehouse, "SELECT count(*) FROM raw.rejects WHERE source_kind = 'alerts'") == [(0,)]


def test_nightly_notes_are_dated_by_their_own_records(warehouse: Path, tmp_path: Path) -> None:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        md = {d: " ".join(render_nightly_report(con, tmp_path / d.isoformat(), report_date=d).markdown.read_text()
                          .split()) for d in (date(2026, 11, 1), date(2026, 11, 2))}
    finally:
        con.close()
    dst = ("1 node-log file of 2026-11-01 has lines in the hour the DST change repeated with nothing in the file to "
           "say which pass: read as the first (daylight-time) pass, they may be 1 h early, and so may incidents, "
           "detect and repair times built on them: syslog/2026-11-01/gpu04.log (1) lines "
           "(raw.ingested_files.rows_dst_guessed).")
    assert dst in md[date(2026, 11, 1)]
    # gpu04's file has records on 11-02 (20:30 CST = 02:30Z) but its guessed line is of 11-01
    assert "DST change repeated" not in md[date(2026, 11, 2)]


def test_utilization_starts_on_the_accountings_first_day(warehouse: Path) -> None:
    # First record: 7030's end 10-31 14:00Z. 10-31: 7001 24 h x 8 = 192 + 7030 06:00-14:00Z 8 x 8 = 64 -> 256;
    # 11-01: 7001 192 + 7012 04:00-07:31Z 3.516667 x 8 = 28.133333 -> 220.133333; 11-02 to the cut 06:05Z:
    # 7001 6.083333 x 8 = 48.666667 of 96 x 6.083333 = 584. 7001's 80 + 192 + 192 GPU-h of 10-28..10-30: no rows.
    rows = query_rows(warehouse, "SELECT day, round(capacity_gpu_hours, 4), round(allocated_gpu_hours, 4) "
                                 "FROM marts.utilization_daily ORDER BY day")
    assert rows == [(date(2026, 10, 31), 2304.0, 256.0), (date(2026, 11, 1), 2304.0, 220.1333),
                    (date(2026, 11, 2), 584.0, 48.6667)]
    assert query_rows(warehouse, "SELECT min(day) FROM marts.goodput_daily") == [(date(2026, 10, 31),)]


def test_the_repeated_hours_first_pass_is_a_utc_day_of_its_own() -> None:
    from gpusre.models.dst_calendar import repeated_hour_first_passes as _first_passes

    def at(*args: int) -> datetime:
        return datetime(*args, tzinfo=UTC)

    assert _first_passes("America/Chicago", date(2026, 11, 1)) == [(at(2026, 11, 1, 6), at(2026, 11, 1, 7))]
    assert _first_passes("America/Chicago", date(2026, 11, 2)) == []
    assert _first_passes("Europe/Berlin", date(2026, 10, 25)) == [(at(2026, 10, 25, 0), at(2026, 10, 25, 1))]
    # Sydney falls back on Sunday 2026-04-05 03:00 AEDT (UTC+11) -> 02:00 AEST: the UTC Saturday, 15:00-16:00
    assert _first_passes("Australia/Sydney", date(2026, 4, 4)) == [(at(2026, 4, 4, 15), at(2026, 4, 4, 16))]
    assert _first_passes("Australia/Sydney", date(2026, 4, 5)) == []
    assert _first_passes("Asia/Tokyo", date(2027, 1, 1)) == [] and _first_passes(None, date(2027, 1, 1)) == []
