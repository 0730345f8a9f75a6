"""Alerts Alertmanager left out of a webhook delivery (``truncatedAlerts``: the receiver's ``max_alerts``)
never arrive: ``marts.alert_daily`` says how many deliveries of each day were cut and the most alerts one of
them dropped, and the nightly's alert sections say the day's alert counts are lower bounds (an outside
evaluator's probe AL: a 64-GPU ``DCGMGPUIdleWhileAllocated`` group sent with ``max_alerts: 50`` twice,
firing at 14:13:30 and resolved at 14:43:30, each ``"truncatedAlerts":14``; the nightly said "grouping 86
alerts" with no caveat).

Here, 2026-11-10 (Alertmanager, JSON lines with the receiver's timestamp): one delivery of 1 alert, then the
firing and the resolved delivery of a group of 2 alerts, each cut with ``truncatedAlerts`` 14 — 2 truncated
deliveries, 14 dropped at most from one (the same 14 twice: not 28). 2026-11-11 (Grafana, a JSON array in a
file named for the day): the second payload of the array carries 1 alert and ``truncatedAlerts`` 3 (its
reject reads "payload 2: Grafana truncated 3 alerts ...").
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from pathlib import Path

import polars as pl

from gpusre.models.alerts.clustering import NOTIFICATION_DAYS_SQL, alert_marts
from gpusre.models.ingest.hostlist import expand_hostlist
from gpusre.models.marts_runner import run_mart_sql
from gpusre.models.sources.alerts.ingest import build_core_alerts, ingest_alert_files
from gpusre.models.warehouse import connect, replace_table
from gpusre.reports.nightly.meta import NightlyMeta
from gpusre.reports.nightly.sections import alert_flood, alert_incidents

from alertmanager_payloads import ALERT_SQL

ZERO = "0001-01-01T00:00:00Z"


def _alert(name: str, node: str, starts: str, ends: str = ZERO, fp: str = "") -> dict:
    return {"status": "firing" if ends == ZERO else "resolved",
            "labels": {"alertname": name, "kubernetes_node": node, "gpu": "0", "severity": "warning"},
            "annotations": {"summary": f"{name} on {node}"}, "startsAt": starts, "endsAt": ends, "fingerprint": fp}


def _am(alerts: list[dict], truncated: int) -> dict:
    status = "firing" if any(a["status"] == "firing" for a in alerts) else "resolved"
    return {"receiver": "sre-oncall", "status": status, "alerts": alerts, "groupLabels": {}, "commonLabels": {},
            "externalURL": "http://alertmanager:9093", "version": "4",
            "groupKey": "{}:{alertname=\"DCGMGPUIdleWhileAllocated\"}", "truncatedAlerts": truncated}


def _grafana(alerts: list[dict], truncated: int) -> dict:
    return {**_am(alerts, truncated), "orgId": 1, "version": "1", "state": "alerting", "title": "[FIRING]",
            "receiver": "gpu-oncall"}


def _landing(root: Path) -> Path:
    idle = [_alert("DCGMGPUIdleWhileAllocated", f"gpu0{n}", "2026-11-10T14:08:00Z", fp=f"{n:016x}") for n in (17, 18)]
    resolved = [dict(a, status="resolved", endsAt="2026-11-10T14:40:00Z") for a in idle]
    lines = [("2026-11-10T03:14:40.000Z", _am([_alert("GPUXidCritical", "gpu005", "2026-11-10T03:14:10Z",
                                                       fp="00000000000000aa")], 0)),
             ("2026-11-10T14:13:30.000Z", _am(idle, 14)),
             ("2026-11-10T14:43:30.000Z", _am(resolved, 14))]
    alerts = root / "landing" / "alerts"
    alerts.mkdir(parents=True)
    (alerts / "alertmanager-2026-11-10.jsonl").write_text(
        "".join(f"{ts} POST /webhook {json.dumps(p)}\n" for ts, p in lines))
    (alerts / "grafana-2026-11-11.json").write_text(json.dumps([
        _grafana([_alert("GPU fell off the bus", "gpu012", "2026-11-11T09:20:00Z", fp="00000000000000bb")], 0),
        _grafana([_alert("GPU temperature high", "gpu013", "2026-11-11T09:30:00Z", fp="00000000000000cc")], 3)]))
    return root / "landing"


def test_truncated_deliveries_per_day_mart_and_nightly(tmp_path: Path) -> None:
    con = connect(tmp_path / "w.duckdb")
    try:
        ingest_alert_files(con, _landing(tmp_path))
        build_core_alerts(con, known_nodes=expand_hostlist("gpu[001-032]"))
        days = con.sql(NOTIFICATION_DAYS_SQL).pl()
        # (day, notifications, deliveries, truncated deliveries, most alerts one of them dropped)
        assert days.rows() == [(date(2026, 11, 10), 1 + 2 + 2, 3, 2, 14), (date(2026, 11, 11), 1 + 1, 2, 1, 3)]

        marts = alert_marts(con.sql(ALERT_SQL).pl(), notifications=days)
        daily = marts.daily.select("day", "alerts", "truncated_deliveries", "truncated_alerts")
        assert daily.rows() == [(date(2026, 11, 10), 3, 2, 14), (date(2026, 11, 11), 2, 1, 3)]
        # Without the notifications the truncation is unknown, not 0.
        unknown = alert_marts(con.sql(ALERT_SQL).pl()).daily
        assert unknown["truncated_alerts"].null_count() == unknown.height == 2

        replace_table(con, "marts.alert_daily", marts.daily)
        replace_table(con, "marts.alert_incidents", marts.incidents)
        replace_table(con, "marts.alert_floods", marts.floods)
        run_mart_sql(con, "alert_incident_scopes")

        def leads(day: date) -> tuple[str, str]:
            meta = NightlyMeta(report_date=day, period_first=date(2026, 11, 10), period_last=date(2026, 11, 11),
                               generated_at=datetime(2026, 11, 12, tzinfo=timezone.utc), warehouse_label="w.duckdb")
            return alert_incidents.build(con, meta).lead, alert_flood.build(con, meta).lead

        for lead in leads(date(2026, 11, 10)):
            assert ("Alertmanager truncated 2 webhook deliveries of 2026-11-10 (the receiver's max_alerts), dropping "
                    "14 alerts from the largest: alerts only they carried never arrived, so that day's alert counts "
                    "are lower bounds.") in lead
        for lead in leads(date(2026, 11, 11)):
            assert ("Alertmanager truncated 1 webhook delivery of 2026-11-11 (the receiver's max_alerts), dropping "
                    "3 alerts: alerts only it carried never arrived") in lead
        # A day without truncation says nothing about it.
        con.execute("UPDATE marts.alert_daily SET truncated_deliveries = 0, truncated_alerts = 0")
        assert not any("truncated" in lead for lead in leads(date(2026, 11, 10)))
        # A warehouse without the per-scope mart (written before it existed) renders the lead without the
        # "(by scope: …)" part instead of failing on an empty list.
        with_scopes = leads(date(2026, 11, 10))[0]
        assert "(by scope: " in with_scopes
        con.execute("DROP TABLE marts.alert_incident_scopes")
        assert leads(date(2026, 11, 10))[0] == with_scopes[:with_scopes.index(" (by scope: ")] + \
            with_scopes[with_scopes.index(");") + 1:]
    finally:
        con.close()
