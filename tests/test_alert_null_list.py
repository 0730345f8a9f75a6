"""An alert list of JSON ``null`` is an empty list (an outside probe's finding, 2026-12-06): Go marshals a
nil slice as ``null``, and Grafana sent ``"alerts": null`` in a notification holding no alert. Such a
payload carries 0 alerts, is loaded and is no reject (it raised the probe's alert reject rate to 37.5 %);
a list that is a string or an object stays a reject.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpusre.models.sources.alerts.ingest import ingest_alert_files
from gpusre.models.warehouse import connect

#: The probe's alerts/grafana_null.json, as it was landed.
GRAFANA_NULL = {
    "receiver": "grafana-oncall", "status": "firing", "orgId": 1, "alerts": None, "groupLabels": {},
    "commonLabels": {}, "commonAnnotations": {}, "externalURL": "https://grafana.probe.example/", "version": "1",
    "groupKey": "{}:{}", "truncatedAlerts": 0, "title": "[FIRING:0]", "state": "alerting", "message": "",
}
#: An Alertmanager webhook v4 notification with one alert (loaded, the control).
ONE_ALERT = {
    "version": "4", "groupKey": "{}:{alertname=\"GpuXid79\"}", "truncatedAlerts": 0, "status": "firing",
    "receiver": "sre-webhook", "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
    "externalURL": "http://alertmanager01:9093",
    "alerts": [{"status": "firing", "labels": {"alertname": "GpuXid79", "instance": "gpu04:9400"},
                "annotations": {"summary": "Xid 79 on gpu04"}, "startsAt": "2026-11-11T13:05:00Z",
                "endsAt": "0001-01-01T00:00:00Z", "fingerprint": "00000000000000a1"}],
}


def _ingest(tmp_path: Path, files: dict[str, str]) -> tuple[dict[str, tuple], list[tuple], list[tuple]]:
    """``files`` under ``alerts/`` of a landing, ingested into a real warehouse: the ledger per file
    (status, rows read, loaded, rejected), the rejects and the notifications loaded."""
    for name, text in files.items():
        (tmp_path / "landing" / "alerts" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "landing" / "alerts" / name).write_text(text)
    con = connect(tmp_path / "w.duckdb")
    try:
        ingest_alert_files(con, tmp_path / "landing")
        ledger = {f: rest for f, *rest in con.sql(
            "SELECT source_file, status, rows_read, rows_loaded, rows_rejected FROM raw.ingested_files").fetchall()}
        rejects = con.sql("SELECT source_file, line_no, error FROM raw.rejects ORDER BY ALL").fetchall()
        loaded = con.sql("SELECT source_file, line_no, alertname FROM raw.alert_notifications ORDER BY ALL").fetchall()
        return ledger, rejects, loaded
    finally:
        con.close()


def test_grafanas_null_alert_list_is_an_empty_notification(tmp_path: Path) -> None:
    ledger, rejects, loaded = _ingest(tmp_path, {"grafana_null.json": json.dumps(GRAFANA_NULL, indent=2) + "\n"})
    assert ledger == {"alerts/grafana_null.json": ["loaded", 0, 0, 0]}
    assert rejects == [] and loaded == []


def test_other_null_lists_are_empty_and_other_types_stay_rejects(tmp_path: Path) -> None:
    am_null = {**ONE_ALERT, "alerts": None}                               # Alertmanager's webhook (version 4)
    prom_null = {"status": "success", "data": {"alerts": None}}           # Prometheus /api/v1/alerts
    as_string = {**ONE_ALERT, "alerts": "none"}
    as_object = {**ONE_ALERT, "alerts": ONE_ALERT["alerts"][0]}
    lines = [ONE_ALERT, am_null, prom_null, as_string, as_object, ONE_ALERT]
    ledger, rejects, loaded = _ingest(tmp_path, {"2026-11-11.jsonl": "".join(json.dumps(p) + "\n" for p in lines)})
    f = "alerts/2026-11-11.jsonl"
    # 2 alerts loaded (lines 1, 6), lines 2 and 3 carry none, lines 4 and 5 are one reject each
    assert ledger == {f: ["loaded", 4, 2, 2]}
    assert loaded == [(f, 1, "GpuXid79"), (f, 6, "GpuXid79")]
    assert rejects == [(f, 4, "alerts is not an array"), (f, 5, "alerts is not an array")]
