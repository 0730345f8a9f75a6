"""Hand-made Alertmanager webhook payloads (v4, one alert each) and the core.alerts columns the alert
tests read: shared by the tests that build alert incidents from their own payloads."""

from __future__ import annotations

from datetime import datetime

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
