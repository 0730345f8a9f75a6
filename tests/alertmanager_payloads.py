"""Hand-made Alertmanager webhook payloads (v4, one alert each) and the core.alerts columns the alert
tests read: shared by the tests that build alert incidents from their own payloads."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import polars as pl

from gpusre.models.sources.alerts.ingest import build_core_alerts, ingest_alert_files
from gpusre.models.warehouse import connect

#: Alertmanager's endsAt of a firing alert (Go's zero time).
ZERO = "0001-01-01T00:00:00Z"
#: The core.alerts columns the clustering reads, labels as JSON text.
ALERT_SQL = ("SELECT alert_id, fingerprint, alertname, status, severity, node, target, target_label, starts_at, "
             "ends_at, CAST(labels AS VARCHAR) AS labels, template_id, n_notifications, description FROM core.alerts")


def iso(t: datetime) -> str:
    """Alertmanager's timestamp form (UTC, milliseconds, ``Z``)."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def webhook_payload(labels: dict, start: datetime, end: datetime | None, fp: str) -> dict:
    """One webhook notification carrying one alert: firing while ``end`` is None, else resolved at ``end``."""
    status = "resolved" if end is not None else "firing"
    alert = {"status": status, "labels": labels, "annotations": {"summary": labels["alertname"]},
             "startsAt": iso(start), "endsAt": iso(end) if end else ZERO,
             "generatorURL": "http://prometheus01:9090/graph", "fingerprint": fp}
    return {"version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0, "status": status, "receiver": "sre-webhook",
            "groupLabels": {"alertname": labels["alertname"]}, "commonLabels": labels, "commonAnnotations": {},
            "externalURL": "http://alertmanager01:9093", "alerts": [alert]}


def ingest_alerts(tmp: Path, day: str, alerts: list[tuple[dict, datetime, datetime]],
                  known_nodes: list[str]) -> pl.DataFrame:
    """``alerts`` (labels, start, end) delivered firing then resolved in ``alerts/<day>.jsonl`` of a landing
    under ``tmp``, ingested into a real warehouse there: core.alerts as the clustering reads it (:data:`ALERT_SQL`)."""
    path = tmp / "landing" / "alerts" / f"{day}.jsonl"
    path.parent.mkdir(parents=True)
    lines = []
    for i, (labels, start, end) in enumerate(alerts):
        fp = f"{i + 1:016x}"
        lines += [webhook_payload(labels, start, None, fp), webhook_payload(labels, start, end, fp)]
    path.write_text("".join(json.dumps(p) + "\n" for p in lines))
    con = connect(tmp / "w.duckdb")
    try:
        ingest_alert_files(con, tmp / "landing")
        build_core_alerts(con, known_nodes=known_nodes)
        return con.sql(ALERT_SQL).pl()
    finally:
        con.close()
