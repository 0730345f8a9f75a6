"""Grafana-managed alerting, hand-written webhook payloads (``version`` "1", ``orgId``) with expectations
computed by hand:

1. ``truncatedAlerts`` (the contact point's "Max alerts") is a reject, as Alertmanager's is.
2. ``DatasourceNoData`` / ``DatasourceError`` (the rule named by ``rulename`` was blind) and the contact-point
   Test button (``TestAlert``, ``instance=Grafana``) are meta-alerts (``models/catalog/alert_meta.csv``): no
   incident, rule or daily count; the blind rules are ``marts.alert_monitoring_gaps``.
3. A resolve with ``grafana_state_reason: MissingSeries`` is no recovery.
4. One rule on five nodes of a rack at the same second: the root is the first node, named with the others.
5. The description falls back to ``description``, ``message``, ``Error``, then the summary.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timezone
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.alerts.clustering import (
    Topology,
    alert_marts,
    is_meta_alert,
    load_meta_alerts,
    meta_alert_kind,
    meta_alert_pattern,
)
from gpusre.models.sources.alerts.ingest import build_core_alerts, ingest_alert_files
from gpusre.models.sources.alerts.parse import parse_alert_file
from gpusre.models.warehouse import connect

UTC = timezone.utc
ZERO = "0001-01-01T00:00:00Z"
NODES = [f"h200-{i:03d}" for i in range(1, 17)]
TOPO = Topology.from_groups({"r01": "h200-[001-008]", "r02": "h200-[009-016]"})
# As the asset reads core.alerts (assets/alert_incidents.py).
ALERT_SQL = ("SELECT alert_id, fingerprint, alertname, status, severity, node, target, target_label, starts_at, "
             "ends_at, CAST(labels AS VARCHAR) AS labels, template_id, n_notifications, description FROM core.alerts")


def g_alert(labels: dict, starts: str, *, status: str = "firing", ends: str = ZERO, annotations: dict | None = None,
            fingerprint: str | None = None) -> dict:
    """One alert of a Grafana webhook."""
    a = {"status": status, "labels": labels, "annotations": annotations or {}, "startsAt": starts, "endsAt": ends,
         "generatorURL": "https://grafana.example/alerting/grafana/x/view", "silenceURL": "", "dashboardURL": "",
         "panelURL": "", "values": None, "valueString": ""}
    if fingerprint:
        a["fingerprint"] = fingerprint
    return a


def grafana(*alerts: dict, truncated: int = 0) -> dict:
    """A Grafana unified-alerting webhook payload."""
    status = "firing" if any(a["status"] == "firing" for a in alerts) else "resolved"
    return {"receiver": "sre-webhook", "status": status, "orgId": 1, "alerts": list(alerts), "groupLabels": {},
            "commonLabels": {}, "commonAnnotations": {}, "externalURL": "https://grafana.example/", "version": "1",
            "groupKey": "{}:{}", "truncatedAlerts": truncated, "title": "", "state": "alerting", "message": ""}


def landing(tmp_path: Path, lines: list[tuple[str, dict]]) -> Path:
    """``landing/alerts/grafana.log``: one payload per line behind a logger's receive time."""
    path = tmp_path / "landing" / "alerts" / "grafana.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{ts} webhook: {json.dumps(p)}\n" for ts, p in lines))
    return tmp_path / "landing"


def load(tmp_path: Path, lines: list[tuple[str, dict]]):  # noqa: ANN201 - DuckDB connection
    con = connect(tmp_path / "w.duckdb")
    ingest_alert_files(con, landing(tmp_path, lines))
    build_core_alerts(con, known_nodes=NODES)
    return con


def gpu(name: str, node: str, **labels: str) -> dict:
    return {"alertname": name, "grafana_folder": "GPU", "Hostname": node, "instance": f"{node}:9400", **labels}


def gap(name: str, rule: str, uid: str) -> dict:
    return {"alertname": name, "grafana_folder": "GPU", "__alert_rule_uid__": uid, "datasource_uid": "P1809F7",
            "ref_id": "A", "rulename": rule}


# -- 1. truncatedAlerts ----------------------------------------------------------------------------


def test_grafana_truncated_alerts_are_a_reject_and_the_alerts_sent_load(tmp_path: Path) -> None:
    sent = [g_alert(gpu("NodeFilesystemAlmostFull", n), "2026-11-29T10:00:00Z") for n in ("h200-010", "h200-011")]
    con = connect(tmp_path / "w.duckdb")
    (result,) = ingest_alert_files(con, landing(tmp_path, [("2026-11-29T10:00:30Z", grafana(*sent, truncated=2)),
                                                           ("2026-11-29T10:01:00Z", grafana(*sent))]))
    rejects = con.sql("SELECT line_no, error FROM raw.rejects").fetchall()
    con.close()
    # 2 + 2 notifications load; line 1 adds one reject for the 2 alerts Grafana dropped; line 2 (0) none.
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (5, 4, 1)
    assert rejects == [(1, "Grafana truncated 2 alerts from this notification (the contact point's Max alerts); "
                           "the alerts it sent are loaded")]


# -- 2. meta-alerts: the catalog --------------------------------------------------------------------


def _example(example: str) -> tuple[str, str | None]:
    """``name{label=value}`` → (name, labels JSON)."""
    m = re.fullmatch(r"([^{]+)(?:\{([^=]+)=(.*)\})?", example)
    assert m, example
    return m[1], (json.dumps({m[2]: m[3]}) if m[2] else None)


def test_every_meta_alert_rule_matches_its_example_with_its_kind() -> None:
    rules = load_meta_alerts()
    for rule in rules:
        name, labels = _example(rule.example)
        kind = pl.select(meta_alert_kind(pl.lit(name), pl.lit(labels, dtype=pl.String), rules)).item()
        assert kind == rule.kind, rule.rule_id
    assert {r.rule_id: r.kind for r in rules if r.kind != "heartbeat"} == {
        "grafana_nodata": "monitoring_gap", "grafana_error": "monitoring_gap", "grafana_test": "test"}


def test_the_label_conditions_keep_look_alikes_out() -> None:
    names = ["DatasourceNoData", "DatasourceError", "DatasourceError", "TestAlert", "TestAlert", "watchdog", "NodeDown"]
    labels = ['{"rulename": "GPU fell off bus"}', '{"instance": "db01"}', None,
              '{"instance": "Grafana"}', '{"instance": "gpu001:9100"}', None, '{"rulename": "x"}']
    frame = pl.DataFrame({"n": names, "l": labels}, schema={"n": pl.String, "l": pl.String})
    got = frame.select(meta_alert_kind(pl.col("n"), pl.col("l"))).to_series().to_list()
    # A DatasourceError without Grafana's rulename label (a user's own rule so named), a TestAlert that is
    # not Grafana's: ordinary alerts.
    assert got == ["monitoring_gap", None, None, "test", None, "heartbeat", None]
    # Without labels, a rule with a label condition matches nothing; the alert name alone still works.
    assert pl.select(is_meta_alert(pl.lit("DatasourceNoData"))).item() is False
    assert pl.select(is_meta_alert(pl.lit("Watchdog"))).item() is True
    # The SQL pattern (dating the alert data) covers the heartbeats only: a DatasourceNoData starts when sent.
    assert re.fullmatch(meta_alert_pattern().removeprefix("(?i)"), "deadmansswitch", re.IGNORECASE)
    assert not re.fullmatch(meta_alert_pattern().removeprefix("(?i)"), "DatasourceNoData", re.IGNORECASE)


# -- 2. meta-alerts: no incident, the monitoring gap reported --------------------------------------


def test_datasource_alerts_and_the_test_button_are_no_incidents_and_the_gaps_are_reported(tmp_path: Path) -> None:
    nodata = g_alert(gap("DatasourceNoData", "GPU fell off bus", "xid79rule"), "2026-11-29T20:00:00Z")
    error = g_alert(gap("DatasourceError", "GPU temperature high", "gputemp"), "2026-11-29T20:05:00Z",
                    annotations={"Error": "failed to execute query [A]: connection refused"})
    test = g_alert({"alertname": "TestAlert", "instance": "Grafana"}, "2026-11-29T20:10:00Z",
                   annotations={"summary": "Notification test"})
    real = g_alert(gpu("GPU fell off bus", "h200-004"), "2026-11-29T20:02:00Z")
    con = load(tmp_path, [
        ("2026-11-29T20:01:00Z", grafana(nodata)),
        ("2026-11-29T20:02:30Z", grafana(real)),
        ("2026-11-29T20:06:00Z", grafana(error)),
        ("2026-11-29T20:10:00Z", grafana(test)),
        ("2026-11-29T20:31:00Z", grafana(dict(nodata, status="resolved", endsAt="2026-11-29T20:30:00Z"))),
        ("2026-11-29T20:40:00Z", grafana(dict(real, status="resolved", endsAt="2026-11-29T20:35:00Z"))),
    ])
    alerts = con.sql(ALERT_SQL).pl()
    con.close()
    as_of = datetime(2026, 11, 29, 20, 40, tzinfo=UTC)  # the last delivery
    marts = alert_marts(alerts, topology=TOPO, as_of=as_of)
    # One incident: the real alert. Not the two blind rules (which share no node, and would have been two
    # `service` incidents), not the test.
    assert marts.incidents["root_cause_candidate"].to_list() == ["GPU fell off bus on h200-004"]
    assert marts.rule_quality["alertname"].to_list() == ["GPU fell off bus"]
    assert marts.daily.select("day", "alerts", "incidents").rows() == [(datetime(2026, 11, 29).date(), 1, 1)]
    gaps = marts.monitoring_gaps.drop("alert_id").rows()
    assert gaps == [
        # NoData 20:00 → 20:30: 1800 s.
        ("GPU fell off bus", "xid79rule", "DatasourceNoData", "P1809F7",
         datetime(2026, 11, 29, 20, 0, tzinfo=UTC), datetime(2026, 11, 29, 20, 30, tzinfo=UTC), False, 1800.0, None),
        # Error from 20:05, never resolved: ongoing to the end of the data (20:40), no duration yet; its
        # reason is the annotation Error.
        ("GPU temperature high", "gputemp", "DatasourceError", "P1809F7",
         datetime(2026, 11, 29, 20, 5, tzinfo=UTC), as_of, True, None,
         "failed to execute query [A]: connection refused"),
    ]


# -- 3. MissingSeries ------------------------------------------------------------------------------


def _missing(a: dict, ends: str) -> dict:
    return dict(a, status="resolved", endsAt=ends, annotations={**a["annotations"], "grafana_state_reason": "MissingSeries"})


def _core(con) -> list[tuple]:  # noqa: ANN001
    return con.sql("SELECT status, starts_at, ends_at FROM core.alerts ORDER BY starts_at").fetchall()


def test_a_missing_series_resolve_is_no_recovery(tmp_path: Path) -> None:
    xid = g_alert(gpu("GPU XID error", "h200-007"), "2026-11-28T06:00:00Z", annotations={"summary": "Xid 79"},
                  fingerprint="77aa00000000d001")
    con = load(tmp_path, [("2026-11-28T06:00:30Z", grafana(xid)),
                          ("2026-11-28T06:04:30Z", grafana(_missing(xid, "2026-11-28T06:04:00Z")))])
    assert _core(con) == [("firing", datetime(2026, 11, 28, 6, 0, tzinfo=UTC), None)]
    alerts = con.sql(ALERT_SQL).pl()
    con.close()
    inc = alert_marts(alerts, topology=TOPO, as_of=datetime(2026, 11, 28, 6, 4, 30, tzinfo=UTC)).incidents
    assert inc.select("ongoing", "firing_alerts").rows() == [(True, 1)]


def test_a_normal_resolve_after_a_missing_series_one_ends_the_alert(tmp_path: Path) -> None:
    xid = g_alert(gpu("GPU XID error", "h200-007"), "2026-11-28T06:00:00Z", fingerprint="77aa00000000d001")
    con = load(tmp_path, [("2026-11-28T06:00:30Z", grafana(xid)),
                          ("2026-11-28T06:04:30Z", grafana(_missing(xid, "2026-11-28T06:04:00Z"))),
                          ("2026-11-28T06:30:30Z", grafana(dict(xid, status="resolved", endsAt="2026-11-28T06:30:00Z")))])
    assert _core(con) == [("resolved", datetime(2026, 11, 28, 6, 0, tzinfo=UTC), datetime(2026, 11, 28, 6, 30, tzinfo=UTC))]
    con.close()


def test_a_missing_series_alert_ends_at_latest_when_its_series_fires_anew(tmp_path: Path) -> None:
    xid = g_alert(gpu("GPU XID error", "h200-007"), "2026-11-28T06:00:00Z", fingerprint="77aa00000000d001")
    again = dict(xid, startsAt="2026-11-28T07:00:00Z")
    con = load(tmp_path, [("2026-11-28T06:00:30Z", grafana(xid)),
                          ("2026-11-28T06:04:30Z", grafana(_missing(xid, "2026-11-28T06:04:00Z"))),
                          ("2026-11-28T07:00:30Z", grafana(again))])
    # The first occurrence lasted at most until the second started (07:00); the second still fires.
    assert _core(con) == [("resolved", datetime(2026, 11, 28, 6, 0, tzinfo=UTC), datetime(2026, 11, 28, 7, 0, tzinfo=UTC)),
                          ("firing", datetime(2026, 11, 28, 7, 0, tzinfo=UTC), None)]
    con.close()


# -- 4. one rule on a rack at the same second -------------------------------------------------------


def test_a_rack_wide_rule_is_named_on_all_its_nodes_and_rooted_on_the_first(tmp_path: Path) -> None:
    # Sent in reverse node order: the root must not depend on input order nor on the alert id hash.
    alerts = [g_alert(gpu("GPU temperature high", n), "2026-11-29T15:00:00Z") for n in reversed(NODES[:5])]
    con = load(tmp_path, [("2026-11-29T15:00:30Z", grafana(*alerts))])
    frame = con.sql(ALERT_SQL).pl()
    first = con.sql("SELECT alert_id FROM core.alerts WHERE node = 'h200-001'").fetchall()[0][0]
    con.close()
    marts = alert_marts(frame, topology=TOPO, as_of=datetime(2026, 11, 29, 15, 0, 30, tzinfo=UTC))
    row = marts.incidents.row(0, named=True)
    assert marts.incidents.height == 1 and row["scope"] == "rack" and row["n_nodes"] == 5
    assert row["root_alert_id"] == first
    assert row["root_cause_candidate"] == "GPU temperature high on h200-[001-005]"
    assert row["root_cause_reason"] == "earliest alert at the most upstream level (GPU on h200-[001-005])"


def test_a_root_alone_at_its_moment_keeps_its_own_node(tmp_path: Path) -> None:
    # h200-002 at 15:00:00, h200-001 at 15:00:10: the root is the earlier one, on its own node.
    alerts = [g_alert(gpu("GPU temperature high", "h200-002"), "2026-11-29T15:00:00Z"),
              g_alert(gpu("GPU temperature high", "h200-001"), "2026-11-29T15:00:10Z")]
    con = load(tmp_path, [("2026-11-29T15:00:30Z", grafana(*alerts))])
    frame = con.sql(ALERT_SQL).pl()
    con.close()
    inc = alert_marts(frame, topology=TOPO, as_of=datetime(2026, 11, 29, 15, 0, 30, tzinfo=UTC)).incidents
    assert inc["root_cause_candidate"].to_list() == ["GPU temperature high on h200-002"]


# -- 5. description fallback -----------------------------------------------------------------------


def test_the_description_falls_back_to_message_error_then_summary(tmp_path: Path) -> None:
    notes = [{"description": "d", "message": "m", "Error": "e", "summary": "s"},
             {"message": "m", "Error": "e", "summary": "s"},
             {"Error": "e", "summary": "s"},
             {"summary": "s"},
             {"description": "", "Error": "e"},
             {}]
    path = tmp_path / "g.json"
    path.write_text(json.dumps(grafana(*[g_alert(gpu(f"R{i}", "h200-001"), "2026-11-29T15:00:00Z", annotations=a)
                                         for i, a in enumerate(notes)])))
    parsed = parse_alert_file(path)
    assert parsed.notifications["description"].to_list() == ["d", "m", "e", "s", "e", None]


def test_the_nightly_data_quality_names_the_day_s_blind_alert_rules() -> None:
    """marts.alert_monitoring_gaps rows meeting the report day: one sentence and a table row each; a gap of
    another day is not listed."""
    from gpusre.reports.nightly.meta import NightlyMeta
    from gpusre.reports.nightly.sections.quality import _monitoring_gaps

    con = duckdb.connect()
    con.sql("SET TimeZone='UTC'")
    con.sql("CREATE SCHEMA marts")
    con.sql("""CREATE TABLE marts.alert_monitoring_gaps AS SELECT * FROM (VALUES
        (1, 'GPU fell off bus', 'DatasourceNoData', TIMESTAMPTZ '2026-11-29 20:00:00+00',
         TIMESTAMPTZ '2026-11-29 20:30:00+00', false, 1800, NULL),
        (2, 'GPU temperature high', 'DatasourceError', TIMESTAMPTZ '2026-11-29 20:05:00+00',
         TIMESTAMPTZ '2026-11-30 00:00:00+00', true, NULL, 'connection refused'),
        (3, 'Old rule', 'DatasourceNoData', TIMESTAMPTZ '2026-11-27 01:00:00+00',
         TIMESTAMPTZ '2026-11-27 02:00:00+00', false, 3600, NULL))
        AS t(alert_id, rule_name, gap_kind, start_ts, end_ts, ongoing, duration_s, reason)""")
    day = date(2026, 11, 29)
    meta = NightlyMeta(day, date(2026, 11, 27), day, datetime(2026, 11, 30, 6, tzinfo=timezone.utc), "wh")
    text, table = _monitoring_gaps(con, meta)
    assert text == ("2 alert rules could not be evaluated for part of 2026-11-29 (Grafana DatasourceNoData / "
                    "DatasourceError): the faults they watch would have gone unalerted.")
    assert [row[0].text for row in table.rows] == ["GPU fell off bus", "GPU temperature high"]
    assert table.rows[1][3].text == "ongoing" and table.rows[1][5].text == "connection refused"
