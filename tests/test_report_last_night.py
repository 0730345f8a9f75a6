"""Nightly "Last night" section: what happened on the report day and what to do, right after the headline and
before the period-wide context; the headline's failure cards toned by attribution.

The warehouse is tests/test_report.py's hand-made one (report day 2026-10-31: incident inc-aaa on gpu017 killed
job 200, 256 GPU-h lost; job 201 NODE_FAIL, infrastructure, 8 GPU-h lost; job 203 TIMEOUT, the user's; suspect
nodes gpu017 and gpu033), plus, on the report day, a leaf-switch incident under leaf02 (gpu[033-064], 2 jobs
on 4,096 GPUs, 1,024 GPU-h lost) and two alert incidents (31 and 1 alerts); one alert incident the day before.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from pathlib import Path

import duckdb
import pytest

from gpusre.models.report_marts import build_report_marts
from gpusre.reports.nightly import build_nightly_context
from gpusre.reports.nightly.meta import NightlyMeta
from gpusre.reports.nightly.report import NIGHTLY_SECTIONS
from gpusre.reports.nightly.sections import last_night
from test_report import _core_and_raw, _ddl, _failure_marts, _marts, _section, _visible_text, render_nightly_report

DAY = date(2026, 10, 31)


def _leaf_incident(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""INSERT INTO marts.hw_incidents BY NAME SELECT
        'inc-ddd' AS incident_id, 'network_switch' AS component, 'hardware' AS cause_class, 'high' AS severity,
        'CHECK_LINK' AS action, TIMESTAMPTZ '2026-10-31 02:52:00+00' AS start_ts,
        TIMESTAMPTZ '2026-10-31 03:30:00+00' AS end_ts,
        (SELECT list('gpu' || lpad(i::VARCHAR, 3, '0') ORDER BY i) FROM range(33, 65) r(i)) AS nodes,
        []::VARCHAR[] AS gpus, 31 AS n_events, 'leaf_switch' AS scope, 'leaf02' AS leaf_switch,
        'events' AS label_source, 'ib_link_down' AS root_cause, 2 AS affected_jobs, 4096 AS affected_gpus,
        1024.0 AS lost_gpu_hours, 32 AS nodes_recovered, TIMESTAMPTZ '2026-10-31 06:00:00+00' AS recovered_ts,
        2.5 AS hours_to_recovery""")


def _alerts(con: duckdb.DuckDBPyConnection) -> None:
    """One alert in core.alerts (alerts were ingested) and hand-made alert incidents: two on the report day."""
    con.execute("""INSERT INTO core.alerts (alert_id, fingerprint, alertname, status, starts_at, ends_at, labels,
                                            source_file, n_notifications, first_received_file)
                   VALUES (1, 'fp1', 'InfinibandSwitchDown', 'resolved', TIMESTAMPTZ '2026-10-31 02:53:00+00',
                           TIMESTAMPTZ '2026-10-31 03:20:00+00', '{}', 'alerts/x.json', 2, 'alerts/x.json')""")
    con.execute("""CREATE TABLE marts.alert_incidents AS SELECT * FROM (VALUES
        ('ainc-1', TIMESTAMPTZ '2026-10-31 02:52:00+00', TIMESTAMPTZ '2026-10-31 03:20:00+00', false, 0, 31, 0, 30,
         ['gpu033'], 1, 'fabric', 'InfinibandSwitchDown on leaf02', 'most upstream', []::BIGINT[],
         ['InfinibandSwitchDown', 'NodeInfinibandLinkDown'], 'inc-ddd', 'leaf_switch', true, 2, 1024.0),
        ('ainc-2', TIMESTAMPTZ '2026-10-31 02:58:00+00', TIMESTAMPTZ '2026-10-31 03:10:00+00', false, 0, 1, 0, 1,
         ['gpu017'], 2, 'gpu', 'GpuXidError on gpu017', 'matched hardware incident', []::BIGINT[],
         ['GpuXidError'], 'inc-aaa', 'node', false, 1, 256.0),
        ('ainc-0', TIMESTAMPTZ '2026-10-30 10:00:00+00', TIMESTAMPTZ '2026-10-30 10:10:00+00', false, 0, 99, 0, 1,
         ['gpu099'], 3, 'node', 'HostDown on gpu099', 'earliest', []::BIGINT[], ['HostDown'], NULL, 'node', false,
         0, 0.0))
        t(incident_id, start_ts, end_ts, ongoing, firing_alerts, n_alerts, flaps, n_nodes, nodes, root_alert_id,
          root_level, root_cause_candidate, root_cause_reason, templates, alertnames, hw_incident_id, scope,
          in_flood, n_jobs_killed, lost_gpu_hours)""")


LEAF = "Check the leaf switch (power, management state, uplinks), not one node's link"
HTML_LEAF = LEAF.replace("'", "&#39;")  # as the page escapes it (_visible_text keeps entities)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    tmp = tmp_path_factory.mktemp("wh")
    con = duckdb.connect(str(tmp / "wh.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _marts(con)
    _failure_marts(con)
    _leaf_incident(con)
    _alerts(con)
    paths = render_nightly_report(con, tmp / "out", report_date=DAY, warehouse_label="wh.duckdb")
    con.close()
    return paths.html.read_text(encoding="utf-8"), paths.markdown.read_text(encoding="utf-8")


def test_last_night_says_what_happened_and_what_to_do(page: tuple[str, str]) -> None:
    html, md = page
    text = _visible_text(_section(html, "last_night"))
    assert "Last night (2026-10-31)" in text
    # 2 incidents began on 10-31 (inc-bbb and inc-ccc began earlier); infrastructure: jobs 200 + 201,
    # 256 + 8 = 264 GPU-h lost; gpu017 (inc-aaa) and gpu033 (under leaf02) are suspect nodes; 2 alert
    # incidents started on 10-31 (ainc-0 on 10-30 is not counted).
    assert ("On 2026-10-31: 2 hardware incidents, 2 jobs killed by the infrastructure (264 GPU-h lost), "
            "2 nodes failing again, 2 alert incidents.") in text
    # The actions, costliest incident first (inc-ddd 1,024 GPU-h, inc-aaa 256), then the repeat nodes by score.
    # A leaf switch's outage points at the switch, not at one node's link (labels.LEAF_SWITCH_ACTION).
    assert (f"To do {HTML_LEAF} (leaf02); Reboot the node (gpu017); Drain, RMA (gpu017); "
            "Drain (gpu033).") in text
    assert ("Hardware incidents 2 began; the costliest, Interconnect switch failure under leaf02 (gpu[033-064]) "
            "at 02:52 UTC, killed 2 jobs on 4,096 GPUs and lost 1,024 GPU-h.") in text
    # The largest infrastructure-failed job by lost GPU-hours: 200 (256) over 201 (8); its name is escaped.
    assert ("Jobs the infrastructure killed 2 jobs failed because of the infrastructure, losing 264 GPU-h; the "
            "largest, job 200 \u201c&lt;script&gt;alert(1)&lt;/script&gt;\u201d on 512 GPUs, lost 256 GPU-h. "
            "1 failed on its own (user: 1 time limit).") in text
    assert ("Nodes failing again gpu017 (6 hardware episodes, 1 infrastructure-failed job in the last 28 days) "
            "\u2014 recommended: drain, RMA; gpu033 (4 infrastructure-failed jobs in the last 28 days) \u2014 "
            "recommended: drain.") in text
    # The largest by alerts (31 over 1), as "Alert incidents by size" orders them.
    assert ("Alert incidents 2 started; the largest, \u201cInfinibandSwitchDown on leaf02\u201d, grouped 31 "
            "alerts on 30 nodes.") in text
    # The night's incidents, most lost GPU-hours first, with their actions; the repeat nodes.
    assert f"02:52 Interconnect switch failure leaf02 (gpu[033-064]) 2 1,024 {HTML_LEAF} inc-ddd" in text
    assert "02:50 GPU failure gpu017 1 256 Reboot the node inc-aaa" in text
    assert "inc-bbb" not in text and "inc-ccc" not in text  # began on other days
    assert "gpu017 6 1 xid 48 drain, RMA" in text and "gpu033 0 4 – drain" in text
    assert "<script>" not in html
    # Markdown: the same lines.
    assert "## Last night (2026-10-31)" in md
    assert f"- **To do:** {LEAF} (leaf02); Reboot the node (gpu017);" in md
    assert f"| 02:52 | Interconnect switch failure | leaf02 (gpu[033-064]) | 2 | 1,024 | {LEAF} |" in md


def test_last_night_comes_before_the_period_wide_context(page: tuple[str, str]) -> None:
    html, _ = page
    at = {key: html.index(f'<section id="{key}">') for key in
          ("headline", "last_night", "failures", "attribution", "incidents", "suspects", "alert_incidents",
           "findings", "states", "shift", "published", "top", "quality")}
    assert at["headline"] < at["last_night"] < at["failures"] < at["attribution"] < at["incidents"] \
        < at["suspects"] < at["alert_incidents"] < at["findings"] < at["states"] < at["shift"] \
        < at["published"] < at["top"] < at["quality"]
    keys = [s.key for s in NIGHTLY_SECTIONS]
    assert keys[:2] == ["headline", "last_night"]


def _card(html: str, label: str) -> tuple[str, str]:
    """(tone, visible text) of the headline card with ``label``."""
    m = re.search(r'<div class="card ([a-z]*)">\s*<div class="label">' + re.escape(label)
                  + r'</div>(.*?)</div>\s*</div>', html, flags=re.S)
    assert m, label
    return m.group(1), _visible_text(m.group(2)).strip()


def test_failure_cards_are_toned_by_attribution(page: tuple[str, str]) -> None:
    html, _ = page
    # 3 failures on 10-31 (FAILED 200, NODE_FAIL 201, TIMEOUT 203): neutral — most failures are the users'.
    assert _card(html, "Failures 2026-10-31") == ("", "3 FAILED 1, NODE_FAIL 1, TIMEOUT 1 · 1-day median 0")
    # 2 of them the infrastructure's: the alarm colour.
    assert _card(html, "Infra failures 2026-10-31")[0] == "bad"
    # Last night's cards lead; the whole period's come last.
    labels = re.findall(r'<div class="label">([^<]*)</div>', _section(html, "headline"))
    assert labels[:4] == ["GPU jobs ended 2026-10-31", "Failures 2026-10-31", "Infra failures 2026-10-31",
                          "Hardware incidents"]
    assert labels[-4:] == ["Period covered", "GPU jobs ended", "GPU-hours", "Mean utilization"]


def test_user_failures_alone_raise_no_alarm(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _marts(con)
    _failure_marts(con)
    con.execute("UPDATE marts.job_failure_attribution SET attribution = 'user', lost_gpu_hours = 0 "
                "WHERE job_id IN ('200', '201')")
    build_report_marts(con)
    cards = {c["label"]: c for c in build_nightly_context(con, report_date=DAY)["by_key"]["headline"].cards}
    assert cards["Failures 2026-10-31"]["value"] == "3" and cards["Failures 2026-10-31"]["tone"] == ""
    assert cards["Infra failures 2026-10-31"]["value"] == "0" and cards["Infra failures 2026-10-31"]["tone"] == "good"
    sec = last_night.build(con, NightlyMeta(DAY, date(2026, 8, 3), DAY, datetime.now(timezone.utc), ""))
    entries = {e["term"]: e["text"] for e in sec.entries}
    assert entries["Jobs the infrastructure killed"] == (
        "0 jobs failed because of the infrastructure. 3 failed on their own "
        "(user: 1 non-zero exit, 1 node failure, 1 time limit).")
    # 10-30: no incident, but no node logs were loaded either: unknown, not "none".
    sec = last_night.build(con, NightlyMeta(date(2026, 10, 30), date(2026, 8, 3), DAY, datetime.now(timezone.utc), ""))
    entries = {e["term"]: e["text"] for e in sec.entries}
    unknown = "no node logs were loaded (landing/syslog/): whether one began is unknown"
    assert entries["Hardware incidents"] == entries["Nodes failing again"] == unknown
    assert entries["To do"] == unknown + "."
    assert entries["Jobs the infrastructure killed"] == "no job failed."
    assert sec.lead == "On 2026-10-30: hardware incidents unknown, 0 jobs killed by the infrastructure."
    con.close()


def test_incident_list_is_capped_and_says_how_many_more(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _marts(con)
    _failure_marts(con)
    _leaf_incident(con)
    build_report_marts(con)
    monkeypatch.setattr(last_night, "TOP_N_INCIDENTS", 1)
    sec = last_night.build(con, NightlyMeta(DAY, date(2026, 8, 3), DAY, datetime.now(timezone.utc), ""))
    (incidents, _nodes) = sec.tables
    assert [r[-1].text for r in incidents.rows] == ["inc-ddd"]
    assert incidents.caption == ("Hardware incidents that began on 2026-10-31, most lost GPU-hours first (top 1; "
                                 "1 more in \u201cTop incidents by lost GPU-hours\u201d and the incident "
                                 "retrospectives).")
    # No alerts were ingested: that line says so, the others still speak.
    entries = {e["term"]: e["text"] for e in sec.entries}
    assert entries["Alert incidents"] == "No alerts yet (land Alertmanager webhook payloads in alerts/)"
    assert sec.lead == ("On 2026-10-31: 2 hardware incidents, 2 jobs killed by the infrastructure (264 GPU-h lost), "
                        "2 nodes failing again.")
    con.close()


def test_without_the_failure_and_alert_marts_one_no_data_line(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _marts(con)
    paths = render_nightly_report(con, tmp_path / "out", report_date=DAY)
    text = _visible_text(_section(paths.html.read_text(encoding="utf-8"), "last_night"))
    assert ("No data yet: marts.hw_incidents has not been built; marts.job_failure_attribution has not been built; "
            "no alerts yet (land Alertmanager webhook payloads in alerts/).") in text
    con.close()
