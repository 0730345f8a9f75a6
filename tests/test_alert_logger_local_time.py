"""A webhook logger's time without a UTC offset is the cluster's local time (cluster.yaml ``timezone``),
as every naive stamp of the product (sacct, node logs): Python logging's default ``asctime`` is the
host's local clock. An explicit offset wins. In the repeated hour of a DST fall-back the earlier reading
stands unless it is before the latest ``startsAt`` of the alerts the payload carries (beyond 60 s):
nothing is delivered before it starts, so the later reading is the one.

An outside probe (2026-12-06, America/Chicago): ``2026-11-01 01:31:02,512 INFO webhook POST /alerts``
carrying an alert that started ``01:30:40.157076235-06:00`` (07:30:40Z) was stored as received 01:31Z,
six hours before the alert started; alert_data_span and alert_daily moved a day.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest

from gpusre.models.sources.alerts.parse import EARLY_DELIVERY_SQL, parse_alert_file

UTC = timezone.utc
#: The probe's first Grafana delivery, as its receiver.log has it.
PROBE_LINE = (
    '2026-11-01 01:31:02,512 INFO webhook POST /alerts {"receiver":"gpu-oncall","status":"firing","orgId":1,'
    '"version":"1","alerts":[{"status":"firing","labels":{"alertname":"GPU fell off the bus","grafana_folder":"GPU",'
    '"instance":"gpu12:9400","Hostname":"gpu12","gpu":"0","severity":"critical"},"annotations":{"summary":'
    '"Xid 79 on gpu12"},"startsAt":"2026-11-01T01:30:40.157076235-06:00","endsAt":"0001-01-01T00:00:00Z",'
    '"generatorURL":"","fingerprint":"5b1f0c2d9e8a7f60","values":{"A":1}}],"groupKey":"{}:{alertname=\\"GPU\\"}",'
    '"truncatedAlerts":0,"title":"[FIRING:1] GPU fell off the bus","state":"alerting","message":""}')


def _payload(starts: str, fp: str = "c0ffee0000000009") -> str:
    """An Alertmanager v4 webhook body carrying one firing alert that started at ``starts``."""
    return json.dumps({"receiver": "gpu-oncall", "status": "firing", "version": "4", "truncatedAlerts": 0,
                       "groupKey": "{}:{}", "alerts": [{
                           "status": "firing", "labels": {"alertname": "GPUXidError", "instance": "gpu09:9400"},
                           "annotations": {"summary": "Xid 48 on gpu09"}, "startsAt": starts,
                           "endsAt": "0001-01-01T00:00:00Z", "fingerprint": fp}]})


def _received(tmp_path: Path, lines: list[str], zone: str) -> list[datetime | None]:
    path = tmp_path / "receiver.log"
    path.write_text("\n".join(lines) + "\n")
    parsed = parse_alert_file(path, "alerts/receiver.log", timezone=zone)
    assert parsed.rejects.height == 0
    return parsed.notifications.sort("line_no")["received_at"].to_list()


def test_the_probes_delivery_is_the_second_pass(tmp_path: Path) -> None:
    # 01:31:02.512 local: CDT 06:31:02.512Z or CST 07:31:02.512Z; the alert started 07:30:40Z, so CST.
    assert _received(tmp_path, [PROBE_LINE], "America/Chicago") == [datetime(2026, 11, 1, 7, 31, 2, 512000, tzinfo=UTC)]


def test_a_naive_logger_time_is_local_time(tmp_path: Path) -> None:
    # 05:20 CST (not ambiguous) = 11:20Z; the same text with the cluster in UTC stays 05:20Z.
    line = "2026-11-01 05:20:00,001 INFO webhook POST /alerts " + _payload("2026-11-01T07:30:40Z")
    assert _received(tmp_path, [line], "America/Chicago") == [datetime(2026, 11, 1, 11, 20, 0, 1000, tzinfo=UTC)]
    assert _received(tmp_path, [line], "UTC") == [datetime(2026, 11, 1, 5, 20, 0, 1000, tzinfo=UTC)]


def test_an_explicit_offset_wins(tmp_path: Path) -> None:
    lines = ["2026-11-01T01:31:02.512-06:00 POST /alerts " + _payload("2026-11-01T07:30:40Z"),
             "[2026-11-01 06:31:02Z] " + _payload("2026-11-01T05:00:00Z")]
    assert _received(tmp_path, lines, "America/Chicago") == [datetime(2026, 11, 1, 7, 31, 2, 512000, tzinfo=UTC),
                                                            datetime(2026, 11, 1, 6, 31, 2, tzinfo=UTC)]


def test_the_earlier_reading_stands_when_the_alert_started_before_it(tmp_path: Path) -> None:
    # Started 05:00Z: both 06:40Z (CDT) and 07:40Z (CST) are after it; nothing says which, the earlier stands.
    line = "2026-11-01 01:40:00,000 INFO webhook POST /alerts " + _payload("2026-11-01T05:00:00Z")
    assert _received(tmp_path, [line], "America/Chicago") == [datetime(2026, 11, 1, 6, 40, tzinfo=UTC)]


def test_europe_berlin_bracketed_iso_prefix(tmp_path: Path) -> None:
    # Europe/Berlin repeats 02:00-03:00 on 2026-10-25 (CEST UTC+2, then CET UTC+1). Another logger spelling:
    # "[YYYY-MM-DDTHH:MM:SS.f]". 02:40 local = 00:40Z or 01:40Z; the alert started 01:39:30Z: the later one.
    lines = ["[2026-10-25T02:40:00.5] POST " + _payload("2026-10-25T01:39:30Z"),
             # a local time in the spring-forward gap (2026-03-29 02:30 does not exist): no delivery time
             "[2026-03-29T02:30:00] POST " + _payload("2026-03-29T00:10:00Z", "c0ffee000000000a")]
    assert _received(tmp_path, lines, "Europe/Berlin") == [datetime(2026, 10, 25, 1, 40, 0, 500000, tzinfo=UTC), None]


@pytest.mark.parametrize(("received", "early"), [("2026-11-01 10:59:00+00", True), ("2026-11-01 11:59:30+00", False),
                                                 ("2026-11-01 12:00:30+00", False)])
def test_early_delivery_is_beyond_a_minute_before_the_start(received: str, early: bool) -> None:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    got = con.sql(f"SELECT {EARLY_DELIVERY_SQL} FROM (SELECT TIMESTAMPTZ '{received}' AS received_at, "
                  "TIMESTAMPTZ '2026-11-01 12:00:00+00' AS starts_at)").fetchall()[0][0]
    assert got is early
