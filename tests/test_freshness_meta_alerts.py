"""Data freshness never dates the alert data by a meta-alert's start: Alertmanager re-sends an
always-firing Watchdog with its first ``startsAt`` (here 2026-11-01), and a webhook log without a logger
time or a date in its name has nothing else to date it by (outside probe Q: "Alerts: first record
2026-11-01, 21 days without records")."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from hand_landing import query_rows, run_hand_landing


_FINGERPRINTS = {"Watchdog": "00000000000000a1", "NodeDown": "00000000000000b2"}


def _payload(name: str, starts: str) -> str:
    return json.dumps({"version": "4", "status": "firing", "receiver": "sre", "groupKey": f"{{}}:{{alertname=\"{name}\"}}",
                       "alerts": [{"status": "firing", "labels": {"alertname": name, "instance": "gpu001:9100"},
                                   "annotations": {}, "startsAt": starts, "endsAt": "0001-01-01T00:00:00Z",
                                   "fingerprint": _FINGERPRINTS[name]}]})


def test_a_watchdog_start_does_not_date_the_alert_data(tmp_path: Path) -> None:
    wh = run_hand_landing(tmp_path, {
        "cluster.yaml": 'nodes: "gpu[001-002]"\n',
        # no logger prefix, no date in the file's name
        "alerts/webhook.log": "\n".join([_payload("Watchdog", "2026-11-01T00:00:00Z"),
                                         _payload("NodeDown", "2026-11-23T05:00:00Z"),
                                         _payload("Watchdog", "2026-11-01T00:00:00Z")]) + "\n",
    })
    [(first, last)] = query_rows(wh, "SELECT first_record_ts, last_record_ts FROM marts.data_freshness "
                                     "WHERE source_kind = 'alerts'")
    # only the NodeDown dates a delivery: 11-23 05:00 (the Watchdog lines date nothing)
    at = datetime(2026, 11, 23, 5, tzinfo=timezone.utc)
    assert (first, last) == (at, at)
