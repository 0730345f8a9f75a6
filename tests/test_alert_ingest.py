"""Alert payloads → raw.alert_notifications → core.alerts: real samples, dedupe and resolve
semantics, malformed payloads, reruns, crash safety, and real Dagster materializations."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg
import pytest

from gpusre.assets.ingest_alerts import alert_rows_reconcile, core_alerts, raw_alert_notifications
from gpusre.models.sources.alerts.ingest import ALERT_MINER, AlertSettings, build_core_alerts, ingest_alert_files
from gpusre.models.sources.alerts.parse import alertmanager_fingerprint, discover_alert_files, parse_alert_file
from gpusre.models.warehouse import connect
from gpusre.pipelines.resources import default_resources

FIXTURES = Path(__file__).parent / "fixtures" / "alerts"
UTC = timezone.utc
ZERO = "0001-01-01T00:00:00Z"


# -- payload builders ----------------------------------------------------------------------------


def alert(name: str, node: str, starts: str, *, status: str = "firing", ends: str = ZERO,
          fingerprint: str | None = None, summary: str | None = None, **labels: str) -> dict:
    """One Alertmanager webhook alert on ``node`` (node-exporter style instance label)."""
    all_labels = {"alertname": name, "instance": f"{node}.cluster.local:9100", "severity": "critical", **labels}
    a = {"status": status, "labels": all_labels,
         "annotations": {"summary": summary or f"{name} on {node}"},
         "startsAt": starts, "endsAt": ends, "generatorURL": "http://prometheus:9090/graph"}
    if fingerprint is not None:
        a["fingerprint"] = fingerprint
    return a


def webhook(*alerts: dict, status: str | None = None, receiver: str = "slack") -> dict:
    """An Alertmanager webhook v4 payload."""
    status = status or ("firing" if any(a["status"] == "firing" for a in alerts) else "resolved")
    return {"version": "4", "groupKey": "{}:{alertname=\"x\"}", "truncatedAlerts": 0, "status": status,
            "receiver": receiver, "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
            "externalURL": "http://alertmanager:9093", "alerts": list(alerts)}


def jsonl(path: Path, *lines: dict | str) -> Path:
    """Write one payload (or raw text) per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


# -- every real sample ---------------------------------------------------------------------------

# Counted by hand from the files:
#   alertmonitor_example_with_external_labels.json: one v4 payload, alerts[] has 10 firing alerts,
#     each with a fingerprint and endsAt 0001-01-01 (still firing).
#   prometheus-msteams_prom_post_request.json: one payload, 1 alert without status/fingerprint.
#   prometheus-msteams_prom_post_request_12_alerts.json: one payload, 12 alerts (high_memory_load,
#     high_memory_load2 … 12), no status/fingerprint on the alerts.
#   grafana_docs_webhook_payload_example.json: Grafana payload (orgId 1, version "1"), 2 alerts.
#   netinvent_grafana_webhook_api_test_notification.json: Grafana test notification, 1 alert.
#   alertmonitor_example_syslog.txt: no alert at all: prose on line 1, pretty-printed objects on
#     lines 5-10 and 12-17, one-line objects on lines 19, 20, 21 → 6 rejects.
SAMPLES = {
    "alertmonitor_example_with_external_labels.json": ("alertmanager", 10, 0),
    "prometheus-msteams_prom_post_request.json": ("alertmanager", 1, 0),
    "prometheus-msteams_prom_post_request_12_alerts.json": ("alertmanager", 12, 0),
    "grafana_docs_webhook_payload_example.json": ("grafana", 2, 0),
    "netinvent_grafana_webhook_api_test_notification.json": ("grafana", 1, 0),
    "alertmonitor_example_syslog.txt": (None, 0, 6),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_sample_parses_to_its_hand_counted_alerts(name: str) -> None:
    fmt, n_alerts, n_rejects = SAMPLES[name]
    parsed = parse_alert_file(FIXTURES / name)
    assert parsed.notifications.height == n_alerts
    assert parsed.rejects.height == n_rejects
    if n_alerts:
        n = parsed.notifications
        assert set(n["format"]) == {fmt}
        assert set(n["status"]) == {"firing"}
        assert n["ends_at"].null_count() == n_alerts  # every endsAt is the zero time
        assert n["alert_no"].to_list() == list(range(1, n_alerts + 1))
        assert n["fingerprint"].str.len_chars().to_list() == [16] * n_alerts


def test_the_fluentd_capture_is_rejected_line_by_line_with_reasons() -> None:
    rejects = parse_alert_file(FIXTURES / "alertmonitor_example_syslog.txt").rejects
    assert rejects["line_no"].to_list() == [1, 5, 12, 19, 20, 21]
    assert rejects["error"][0].startswith("not valid JSON")
    assert all(e.startswith("not an alert payload") for e in rejects["error"][1:])
    assert rejects["raw"][1].startswith("{\n\"host\":\"almavm\"")  # the stitched multi-line object


def test_computed_fingerprint_is_alertmanagers() -> None:
    n = parse_alert_file(FIXTURES / "alertmonitor_example_with_external_labels.json").notifications
    assert not n["fingerprint_computed"].any()
    for labels, fingerprint in zip(n["labels"].to_list(), n["fingerprint"].to_list()):
        assert alertmanager_fingerprint(json.loads(labels)) == fingerprint
    # msteams alerts carry none: computed from the labels, same hash.
    m = parse_alert_file(FIXTURES / "prometheus-msteams_prom_post_request.json").notifications
    assert m["fingerprint_computed"].to_list() == [True]
    assert m["fingerprint"][0] == alertmanager_fingerprint(json.loads(m["labels"][0]))


def test_sample_fields() -> None:
    n = parse_alert_file(FIXTURES / "netinvent_grafana_webhook_api_test_notification.json").notifications.row(0, named=True)
    assert n["receiver"] == "test" and n["fingerprint"] == "57c6d9296de2ad39"
    assert n["starts_at"] == datetime(2024, 3, 9, 10, 10, 16, 318976, tzinfo=UTC)  # +01:00 → UTC, ns → µs
    assert n["value"] == "[ metric='foo' labels={instance=bar} value=10 ]"
    assert n["summary"] == "Notification test" and n["template_text"] == "TestAlert: Notification test"
    m = parse_alert_file(FIXTURES / "alertmonitor_example_with_external_labels.json").notifications.row(0, named=True)
    assert m["summary"] == "Instance 192.168.91.91:9000 down"  # 'title' when there is no summary
    assert json.loads(m["labels"])["cluster"] == "cluster-A" and m["receiver"] == "alertmonitor"


def test_all_samples_ingest_together(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "alerts").mkdir(parents=True)
    for name in SAMPLES:
        shutil.copy(FIXTURES / name, landing / "alerts" / name)
    con = connect(tmp_path / "w.duckdb")
    results = {r.source_file: r for r in ingest_alert_files(con, landing)}
    assert build_core_alerts(con)[0] == 26  # 10 + 1 + 12 + 2 + 1, no two with the same labels and start
    con.close()
    for name, (_, n_alerts, n_rejects) in SAMPLES.items():
        r = results[f"alerts/{name}"]
        assert (r.status, r.rows_read, r.rows_loaded, r.rows_rejected) == ("loaded", n_alerts + n_rejects, n_alerts, n_rejects)


def test_files_staged_and_written_a_few_at_a_time_give_what_one_round_gives(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Notifications are staged, fingerprinted, mined and written to the lake a few landing files
    at a time (bounded memory). With one file per round and per lake write, every table, the
    ledger, the rejects and the template miner's state are what one round gives: templates are
    mined once per text, in received (file name) order, also when a text recurs in later files
    and when nested folders sort differently as paths ("a/x" before "a-b/x") than as names."""
    import gpusre.models.sources.alerts.ingest as alert_ingest

    assert alert_ingest._file_groups([("a", 50), ("b", 60), ("c", 90), ("d", 10), ("e", 500)], 200) == [
        ["a", "b", "c"], ["d"], ["e"]]
    t0, t1 = "2026-09-01T10:00:00Z", "2026-09-01T11:00:00Z"
    landing = _landing_with(tmp_path, {
        "a/x.jsonl": [webhook(alert("GpuXid", "gpu001", t0, summary="Xid 79 on GPU 0000:1b:00"))],
        "a-b/x.jsonl": [webhook(alert("IbLinkDown", "gpu002", t0, summary="port mlx5_0/1 down"),
                                alert("GpuXid", "gpu002", t0, summary="Xid 79 on GPU 0000:2c:00")), "{broken"],
        "b.jsonl": [webhook(alert("GpuXid", "gpu003", t1, summary="Xid 48 on GPU 0000:1b:00")), "",
                    webhook(alert("IbLinkDown", "gpu004", t1, summary="port mlx5_3/1 down", fingerprint="f00d"))],
        "c.jsonl": [webhook(alert("GpuXid", "gpu001", t0, status="resolved", ends=t1,
                                  summary="Xid 79 on GPU 0000:1b:00"), status="resolved")],
    })
    for name in SAMPLES:
        shutil.copy(FIXTURES / name, landing / "alerts" / name)
    (landing / "alerts" / "d.jsonl.gz").write_bytes(gzip.compress(
        (json.dumps(webhook(alert("NodeDown", "gpu009", t1))) + "\n").encode())[:-12])  # cut: refused

    def snapshot(con) -> list:
        queries = ["SELECT * FROM raw.alert_notifications ORDER BY source_file, seq",
                   "SELECT source_file, status, rows_read, rows_loaded, rows_rejected, error FROM raw.ingested_files "
                   "ORDER BY ALL",
                   "SELECT source_file, line_no, raw, error FROM raw.rejects ORDER BY ALL",
                   "SELECT state FROM raw.template_miners WHERE miner = 'alerts'",
                   "SELECT * FROM core.alerts ORDER BY ALL", "SELECT * FROM core.alert_templates ORDER BY ALL"]
        return [con.sql(q).fetchall() for q in queries]

    snapshots = []
    for round_bytes, write_rows in ((alert_ingest.ROUND_BYTES, alert_ingest._WRITE_ROWS), (1, 1)):
        monkeypatch.setattr(alert_ingest, "ROUND_BYTES", round_bytes)
        monkeypatch.setattr(alert_ingest, "_WRITE_ROWS", write_rows)
        con = connect(tmp_path / f"w{round_bytes}.duckdb")
        ingest_alert_files(con, landing)
        build_core_alerts(con)
        snapshots.append(snapshot(con))
        con.close()
    whole, rounds = snapshots
    assert rounds == whole
    notifications, ledger, rejects, miner_state, alerts, templates = whole
    assert len(notifications) == 26 + 6 and len(ledger) == len(SAMPLES) + 5
    assert [r[:2] for r in ledger if r[0] == "alerts/d.jsonl.gz"] == [("alerts/d.jsonl.gz", "refused")]
    assert {r[:2] for r in rejects} >= {("alerts/a-b/x.jsonl", 2), ("alerts/d.jsonl.gz", 0)}
    # Four distinct texts of the synthetic files -> three templates (the two Xid 79 texts are one
    # text; Xid 48 differs only in masked numbers; the two link texts differ only in masked parts).
    synthetic = {r for r in templates if any(k in str(r) for k in ("GpuXid", "IbLinkDown"))}
    assert len(synthetic) == 2 and miner_state


# -- formats -------------------------------------------------------------------------------------


def test_prometheus_api_dump_gets_alertmanager_fingerprints_and_pending_is_not_an_alert(tmp_path: Path) -> None:
    dump = {"status": "success", "data": {"alerts": [
        {"labels": {"alertname": "GpuXidError", "instance": "gpu007:9400", "xid": "79"},
         "annotations": {"summary": "Xid 79 on gpu007"}, "state": "firing",
         "activeAt": "2026-09-01T10:00:00.123456789Z", "value": "1e+00"},
        {"labels": {"alertname": "HostHighCpuLoad", "instance": "gpu008:9100"},
         "annotations": {}, "state": "pending", "activeAt": "2026-09-01T10:05:00Z", "value": "0.95"},
    ]}}
    landing = tmp_path / "landing"
    (landing / "alerts").mkdir(parents=True)
    (landing / "alerts" / "prom_2026-09-01.json").write_text(json.dumps(dump, indent=2))
    (landing / "alerts" / "prom_error.json").write_text(
        json.dumps({"status": "error", "errorType": "timeout", "error": "query timed out"}))
    parsed = parse_alert_file(landing / "alerts" / "prom_2026-09-01.json")
    n = parsed.notifications
    assert n["format"].to_list() == ["prometheus_api"] * 2 and n["status"].to_list() == ["firing", "pending"]
    assert n["fingerprint"][0] == alertmanager_fingerprint({"alertname": "GpuXidError", "instance": "gpu007:9400", "xid": "79"})
    assert n["value"].to_list() == ["1e+00", "0.95"] and n["ends_at"].null_count() == 2
    assert parse_alert_file(landing / "alerts" / "prom_error.json").rejects["error"].to_list() == [
        "Prometheus API error: timeout: query timed out"]
    con = connect(tmp_path / "w.duckdb")
    ingest_alert_files(con, landing)
    build_core_alerts(con, known_nodes=["gpu007", "gpu008"])
    assert con.sql("SELECT alertname, node, status FROM core.alerts").fetchall() == [("GpuXidError", "gpu007", "firing")]
    con.close()


def test_json_array_bare_alerts_prefixed_lines_and_pretty_payloads(tmp_path: Path) -> None:
    # Alertmanager /api/v2/alerts: a JSON array of alerts whose status is an object.
    v2 = [{"labels": {"alertname": "NodeDown", "instance": "gpu001:9100"}, "annotations": {},
           "startsAt": "2026-09-01T10:00:00Z", "endsAt": "2026-09-01T10:05:00Z", "fingerprint": "00000000000000aa",
           "status": {"state": "suppressed", "silencedBy": ["x"], "inhibitedBy": []}, "receivers": [{"name": "x"}]},
          {"labels": {"alertname": "NodeDown", "instance": "gpu002:9100"}, "annotations": {},
           "startsAt": "2026-09-01T10:00:00Z", "endsAt": "2026-09-01T10:05:00Z", "fingerprint": "00000000000000bb",
           "status": {"state": "active"}}]
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(v2))
    n = parse_alert_file(path).notifications
    assert n.select("payload_no", "alert_no", "format", "status").rows() == [
        (1, 1, "alert", "firing"), (2, 1, "alert", "firing")]
    # A webhook logger that prefixes each body with a time; and a pretty-printed payload.
    log = tmp_path / "receiver.log"
    body = webhook(alert("NodeDown", "gpu003", "2026-09-01T10:00:00Z"))
    log.write_text(f"2026-09-01T10:00:05.5Z INFO webhook received {json.dumps(body)}\n\n"
                   f"[2026-09-01 10:01:00] {json.dumps(body)}\n" + json.dumps(body, indent=2) + "\n")
    n = parse_alert_file(log).notifications
    assert n["line_no"].to_list() == [1, 3, 4]
    assert n["received_at"].to_list() == [datetime(2026, 9, 1, 10, 0, 5, 500000, tzinfo=UTC),
                                          datetime(2026, 9, 1, 10, 1, tzinfo=UTC), None]
    # JSON lines under a .json name are read as lines.
    lines = jsonl(tmp_path / "lines.json", body, body)
    assert parse_alert_file(lines).notifications["line_no"].to_list() == [1, 2]


# -- dedupe and resolve semantics ----------------------------------------------------------------


def _landing_with(tmp_path: Path, files: dict[str, list[dict | str]]) -> Path:
    landing = tmp_path / "landing"
    for name, lines in files.items():
        jsonl(landing / "alerts" / name, *lines)
    return landing


def _core(con) -> dict[tuple[str, str], dict]:
    rows = con.sql("SELECT * FROM core.alerts").pl().to_dicts()
    return {(r["alertname"], r["node"]): r for r in rows}


def test_firing_then_resolved_is_one_resolved_alert_and_repeats_count(tmp_path: Path) -> None:
    t0 = "2026-09-01T10:00:00Z"
    xid = dict(name="GpuXid79", node="gpu001", starts=t0)
    landing = _landing_with(tmp_path, {
        "2026-09-01.jsonl": [
            webhook(alert(**xid)),                                            # first notification
            webhook(alert(**xid, ends="2026-09-01T10:20:00Z")),               # repeat; endsAt = resolve timeout
            webhook(alert("NodeDown", "gpu002", t0), alert(**xid)),           # grouped with another alert
        ],
        "2026-09-02.jsonl": [
            webhook(alert(**xid, status="resolved", ends="2026-09-01T11:00:00Z")),
            webhook(alert(**xid, status="resolved", ends="2026-09-01T11:00:00Z"), receiver="pagerduty"),
            webhook(alert("NodeDown", "gpu002", t0)),                        # still firing, repeated
            webhook(alert("GpuXid79", "gpu001", "2026-09-02T08:00:00Z")),   # fires again: a new alert
        ],
    })
    con = connect(tmp_path / "w.duckdb")
    ingest_alert_files(con, landing)
    assert build_core_alerts(con, known_nodes=["gpu001", "gpu002"]) == (3, 2)
    assert con.sql("SELECT count(*) FROM raw.alert_notifications").fetchall()[0][0] == 8
    alerts = con.sql("SELECT alertname, node, status, ends_at, n_notifications, source_file, first_received_file "
                     "FROM core.alerts ORDER BY starts_at, alertname").fetchall()
    templates = con.sql("SELECT template, alerts FROM core.alert_templates ORDER BY template").fetchall()
    con.close()
    assert alerts == [
        ("GpuXid79", "gpu001", "resolved", datetime(2026, 9, 1, 11, tzinfo=UTC), 5,
         "alerts/2026-09-02.jsonl", "alerts/2026-09-01.jsonl"),
        ("NodeDown", "gpu002", "firing", None, 2, "alerts/2026-09-02.jsonl", "alerts/2026-09-01.jsonl"),
        ("GpuXid79", "gpu001", "firing", None, 1, "alerts/2026-09-02.jsonl", "alerts/2026-09-02.jsonl"),
    ]
    # The alert name stays verbatim; the summary is masked (GpuXid79 in it looks like a host name).
    assert templates == [("GpuXid79: <NODE> on <NODE>", 2), ("NodeDown: NodeDown on <NODE>", 1)]


def test_zero_time_and_future_ends_at_of_firing_notifications_are_not_ends(tmp_path: Path) -> None:
    landing = _landing_with(tmp_path, {"a.jsonl": [
        webhook(alert("A", "gpu001", "2026-09-01T10:00:00Z", ends=ZERO)),
        webhook(alert("B", "gpu002", "2026-09-01T10:00:00Z", ends="2026-09-01T10:04:00Z")),
    ]})
    con = connect(tmp_path / "w.duckdb")
    ingest_alert_files(con, landing)
    raw_ends = con.sql("SELECT alertname, ends_at FROM raw.alert_notifications ORDER BY alertname").fetchall()
    build_core_alerts(con)
    core = con.sql("SELECT alertname, status, ends_at FROM core.alerts ORDER BY alertname").fetchall()
    con.close()
    assert raw_ends == [("A", None), ("B", datetime(2026, 9, 1, 10, 4, tzinfo=UTC))]
    assert core == [("A", "firing", None), ("B", "firing", None)]


def test_node_and_target_from_labels(tmp_path: Path) -> None:
    t0 = "2026-09-01T10:00:00Z"
    bmc = alert("IpmiFanSpeedSensorCritical", "x", t0)
    bmc["labels"]["instance"] = "gpu003-bmc.mgmt.cluster.local:9290"
    switch = {"status": "firing", "labels": {"alertname": "IbPortDown", "instance": "10.0.0.5:9100", "switch": "leaf07"},
              "annotations": {}, "startsAt": t0, "endsAt": ZERO}
    unknown = alert("NodeDown", "login01", t0)
    disk = alert("HostDiskFull", "gpu004", t0, device="/dev/nvme0n1")
    landing = _landing_with(tmp_path, {"a.jsonl": [webhook(bmc, switch, unknown, disk)]})
    con = connect(tmp_path / "w.duckdb")
    ingest_alert_files(con, landing)
    build_core_alerts(con, known_nodes=[f"gpu{i:03d}" for i in range(1, 9)])
    rows = set(con.sql("SELECT alertname, node, target, target_label FROM core.alerts").fetchall())
    con.close()
    assert rows == {
        ("IpmiFanSpeedSensorCritical", "gpu003", None, None),
        ("IbPortDown", None, "leaf07", "switch"),
        ("NodeDown", None, "login01.cluster.local:9100", "instance"),  # not a Slurm node: kept as target
        ("HostDiskFull", "gpu004", "/dev/nvme0n1", "device"),
    }


def test_files_read_in_pieces_and_batches_keep_line_numbers_and_received_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpusre.models.sources.alerts.ingest as alert_ingest
    import gpusre.models.sources.alerts.parse as alert_payloads

    t0 = "2026-09-01T10:00:00Z"
    lines: list[dict | str] = []
    for i in range(40):
        lines.append(webhook(alert("A", f"gpu{i:03d}", t0), alert("B", f"gpu{i:03d}", t0)))
        if i % 7 == 3:
            lines += ["", "{broken"]
    landing = _landing_with(tmp_path, {"a.jsonl": lines, "b.jsonl": lines[:5]})
    whole = parse_alert_file(landing / "alerts" / "a.jsonl")
    # Pieces of ~1 KB (about two lines) and batches of ~2 KB: every file is cut many times.
    monkeypatch.setattr(alert_payloads, "CHUNK_BYTES", 1000)
    monkeypatch.setattr(alert_ingest, "BATCH_BYTES", 2000)
    pieces = parse_alert_file(landing / "alerts" / "a.jsonl")
    assert pieces.notifications.equals(whole.notifications) and pieces.rejects.equals(whole.rejects)
    assert whole.notifications.height == 80 and whole.rejects.height == 6
    con = connect(tmp_path / "w.duckdb")
    results = ingest_alert_files(con, landing)
    rows = con.sql("SELECT source_file, seq, line_no, alert_no FROM raw.alert_notifications "
                   "ORDER BY source_file, seq").fetchall()
    con.close()
    assert [(r.rows_loaded, r.rows_rejected) for r in results] == [(80, 6), (8, 0)]  # b: 4 payloads + a blank line
    a = [r[1:] for r in rows if r[0] == "alerts/a.jsonl"]
    assert [r[0] for r in a] == list(range(1, 81))                 # dense received order
    assert [r[1:] for r in a] == sorted(r[1:] for r in a)           # in file order
    assert a[:3] == [(1, 1, 1), (2, 1, 2), (3, 2, 1)]


# -- malformed input -----------------------------------------------------------------------------


def test_malformed_payloads_in_the_middle_do_not_stop_the_rest(tmp_path: Path) -> None:
    t0 = "2026-09-01T10:00:00Z"
    good = webhook(alert("NodeDown", "gpu001", t0))
    no_labels = {"status": "firing", "annotations": {}, "startsAt": t0}
    bad_start = alert("NodeDown", "gpu002", "yesterday")
    no_start = alert("NodeDown", "gpu003", t0)
    del no_start["startsAt"]
    landing = _landing_with(tmp_path, {"a.jsonl": [
        good,                                                   # 1: loaded
        '{"version": "4", "alerts": [ {"status": "firing"',     # 2: truncated JSON
        {"version": "4", "status": "firing", "receiver": "x"},  # 3: no alerts[]
        webhook(no_labels, alert("NodeDown", "gpu004", t0)),    # 4: alert 1 rejected, alert 2 loaded
        webhook(bad_start, no_start),                           # 5: both alerts rejected
        {"version": "4", "status": "firing", "alerts": {"oops": 1}},  # 6: alerts not an array
        webhook(alert("NodeDown", "gpu005", t0, ends="soon")),  # 7: bad endsAt
        "",                                                     # 8: blank, not a record
        good,                                                   # 9: loaded (a repeat)
    ]})
    con = connect(tmp_path / "w.duckdb")
    [result] = ingest_alert_files(con, landing)
    rejects = con.sql("SELECT source_file, line_no, error FROM raw.rejects ORDER BY line_no, error").fetchall()
    loaded = con.sql("SELECT line_no, alert_no FROM raw.alert_notifications ORDER BY seq").fetchall()
    con.close()
    assert loaded == [(1, 1), (4, 2), (9, 1)]
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (10, 3, 7)
    f = "alerts/a.jsonl"
    assert rejects[0][:2] == (f, 2) and rejects[0][2].startswith("not valid JSON: Expecting")
    assert rejects[1:] == [
        (f, 3, "not an alert payload: no alerts[] (Alertmanager/Grafana webhook), data.alerts[] "
               "(Prometheus /api/v1/alerts) or labels (one alert)"),
        (f, 4, "alert 1: no labels (missing or not an object)"),
        (f, 5, "alert 1: startsAt \"yesterday\" is not an RFC 3339 time"),
        (f, 5, "alert 2: no startsAt"),
        (f, 6, "alerts is not an array"),
        (f, 7, "alert 1: endsAt \"soon\" is not an RFC 3339 time"),
    ]


def test_broken_json_document_and_unreadable_file(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "alerts").mkdir(parents=True)
    (landing / "alerts" / "broken.json").write_text('{\n  "version": "4",\n  "alerts": [\n    {"labels": }\n  ]\n}\n')
    (landing / "alerts" / "corrupt.jsonl.gz").write_bytes(b"\x1f\x8b\x08 this is not gzip data")
    good = landing / "alerts" / "good.jsonl.gz"
    good.write_bytes(gzip.compress((json.dumps(webhook(alert("A", "gpu001", "2026-09-01T10:00:00Z"))) + "\n").encode()))
    assert [p.name for p in discover_alert_files(landing)] == ["broken.json", "corrupt.jsonl.gz", "good.jsonl.gz"]
    con = connect(tmp_path / "w.duckdb")
    results = {r.source_file: r for r in ingest_alert_files(con, landing)}
    rejects = con.sql("SELECT source_file, line_no, error FROM raw.rejects ORDER BY source_file").fetchall()
    files = con.sql("SELECT source_file, status FROM raw.ingested_files ORDER BY source_file").fetchall()
    con.close()
    assert results["alerts/good.jsonl.gz"].rows_loaded == 1
    assert rejects[0][:2] == ("alerts/broken.json", 4) and "line 4, column 16" in rejects[0][2]
    assert rejects[1][:2] == ("alerts/corrupt.jsonl.gz", 0) and rejects[1][2].startswith("corrupt gzip stream")
    assert files == [("alerts/broken.json", "loaded"), ("alerts/corrupt.jsonl.gz", "refused"),
                     ("alerts/good.jsonl.gz", "loaded")]


# -- Dagster, reruns, crash safety ---------------------------------------------------------------


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    root = tmp_path / "landing"
    (root / "alerts").mkdir(parents=True)
    for name in SAMPLES:
        shutil.copy(FIXTURES / name, root / "alerts" / name)
    t0 = "2026-09-01T10:00:00Z"
    jsonl(root / "alerts" / "receiver" / "2026-09-01.jsonl",
          webhook(alert("GpuXid79", "gpu001", t0)),
          "{not json",
          webhook(alert("GpuXid79", "gpu001", t0, status="resolved", ends="2026-09-01T10:30:00Z")))
    (root / "cluster.yaml").write_text('nodes: "gpu[001-008]"\n')
    # Files written just now are "racy" (RACY_NS): the first run would leave their mtime unrecorded and the
    # rerun record it, so whether a rerun changes the ledger would depend on how fast the run starts.
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (1_700_000_000, 1_700_000_000))
    return root


def _run(landing: Path, wh: Path) -> dg.ExecuteInProcessResult:
    return dg.materialize([raw_alert_notifications, alert_rows_reconcile, core_alerts],
                          resources=default_resources(str(wh), str(landing), str(wh.parent / "r")))


TABLES = ("raw.alert_notifications", "raw.rejects", "raw.ingested_files", "raw.template_miners",
          "core.alerts", "core.alert_templates")
_LAKE_VIEWS = {"raw.alert_notifications"}


def _state(wh: Path) -> dict[str, list[tuple]]:
    con = connect(wh, read_only=True)
    try:
        # A table's row order is part of it; raw.alert_notifications is a view over the lake's files,
        # scanned in parallel, whose order SQL leaves open (it was fixed only while DuckDB estimated
        # every lake scan at 0 rows and ran it on one thread).
        return {t: con.sql(f"SELECT * FROM {t}" + (" ORDER BY ALL" if t in _LAKE_VIEWS else "")).fetchall()
                for t in TABLES}
    finally:
        con.close()


def test_dagster_materialization_counts_and_check(landing: Path, tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    result = _run(landing, wh)
    assert result.success
    [check] = result.get_asset_check_evaluations()
    assert check.passed
    raw_meta = result.asset_materializations_for_node("raw__alert_notifications")[0].metadata
    assert raw_meta["dagster/row_count"].value == 28 and raw_meta["rows_rejected"].value == 7
    assert raw_meta["files_changed"].value == 7
    core_meta = {m.asset_key.to_user_string(): m.metadata for m in result.asset_materializations_for_node("core_alerts")}
    assert core_meta["core/alerts"]["dagster/row_count"].value == 27
    con = connect(wh, read_only=True)
    xid = con.sql("SELECT node, status, n_notifications FROM core.alerts WHERE alertname = 'GpuXid79'").fetchall()
    miners = con.sql("SELECT miner FROM raw.template_miners").fetchall()
    unknown = con.sql("SELECT count(*) FROM core.alerts WHERE node IS NOT NULL AND alertname <> 'GpuXid79'").fetchall()
    con.close()
    assert xid == [("gpu001", "resolved", 2)]
    assert miners == [(ALERT_MINER,)]
    assert unknown == [(0,)]  # minio, thanos_*, Grafana … are not in cluster.yaml's nodes


def _template_ids(wh: Path) -> dict[tuple[str, int, int], int]:
    con = connect(wh, read_only=True)
    try:
        return {(f, line, alert_no): t for f, line, alert_no, t in con.sql(
            "SELECT source_file, line_no, alert_no, template_id FROM raw.alert_notifications").fetchall()}
    finally:
        con.close()


def test_rerun_changes_nothing_and_a_changed_file_replaces_its_rows(landing: Path, tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    _run(landing, wh)
    before = _state(wh)
    before_ids = _template_ids(wh)
    assert _run(landing, wh).success
    assert _state(wh) == before  # bit-identical, tables' row order included
    # The receiver appends a notification: the file is re-read and replaces its rows; template ids
    # and the samples' rows stay as they were.
    path = landing / "alerts" / "receiver" / "2026-09-01.jsonl"
    with path.open("a") as fh:
        fh.write(json.dumps(webhook(alert("GpuXid79", "gpu002", "2026-09-01T12:00:00Z"))) + "\n")
    assert _run(landing, wh).success
    after = _state(wh)
    assert len(after["raw.alert_notifications"]) == len(before["raw.alert_notifications"]) + 1
    template_ids = _template_ids(wh)
    assert {k: template_ids[k] for k in before_ids} == before_ids
    assert template_ids[("alerts/receiver/2026-09-01.jsonl", 4, 1)] == before_ids[("alerts/receiver/2026-09-01.jsonl", 1, 1)]
    rejects = [r for r in after["raw.rejects"] if r[0] == "alerts/receiver/2026-09-01.jsonl"]
    assert [r[2] for r in rejects] == [2] and rejects[0][4].startswith("not valid JSON: Expecting property name")


CRASHING_ALERT_INGEST = """
import os, sys
from pathlib import Path
import gpusre.models.sources.alerts.ingest as ai
from gpusre.models.warehouse import connect
con = connect(Path(sys.argv[1]))
def die(*args, **kwargs):
    os._exit(3)  # the process dies while publishing, before COMMIT (kill -9, OOM kill, power loss)
ai.save_miner = die
ai.ingest_alert_files(con, Path(sys.argv[2]))
"""


def test_crash_while_publishing_leaves_the_warehouse_as_it_was(landing: Path, tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    _run(landing, wh)
    before = _state(wh)
    jsonl(landing / "alerts" / "receiver" / "2026-09-02.jsonl", webhook(alert("NodeDown", "gpu003", "2026-09-02T01:00:00Z")))
    proc = subprocess.run([sys.executable, "-c", CRASHING_ALERT_INGEST, str(wh), str(landing)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert _state(wh) == before
    assert _run(landing, wh).success
    assert len(_state(wh)["raw.alert_notifications"]) == len(before["raw.alert_notifications"]) + 1


def test_assets_are_in_the_project_definitions_and_the_ingest_job() -> None:
    from gpusre.pipelines import definitions

    defs = definitions.defs
    dg.Definitions.validate_loadable(defs)
    keys = {k.to_user_string() for k in defs.resolve_job_def("ingest_job").asset_layer.executable_asset_keys}
    assert {"raw/alert_notifications", "core/alerts", "core/alert_templates"} <= keys
    checks = {c.name for c in defs.get_repository_def().asset_graph.asset_check_keys}
    assert "alert_rows_reconcile" in checks


def test_cluster_yaml_alerts_section() -> None:
    from gpusre.models.sources.alerts.ingest import AlertSettings, alert_settings
    from gpusre.pipelines.config import ClusterConfigError, parse_cluster_config

    config = parse_cluster_config(
        'nodes: "gpu[001-004]"\n'
        "alerts:\n"
        "  nodes: {node_labels: [node, instance], strip_domain: false,\n"
        "          rewrites: [{pattern: '^(gpu\\d+)-oob$', replacement: '\\1'}]}\n"
        "  floods: {bucket_minutes: 10, k: 4}\n")
    settings = alert_settings(config)
    assert settings.nodes.node_labels == ["node", "instance"] and not settings.nodes.strip_domain
    assert settings.floods.bucket_minutes == 10 and settings.floods.window_buckets == 288
    assert alert_settings(parse_cluster_config("")) == AlertSettings()
    with pytest.raises(ClusterConfigError, match=r"alerts\.nodes\.rewrites\[0\]\.pattern: not a valid regular"):
        parse_cluster_config("alerts: {nodes: {rewrites: [{pattern: '(unclosed'}]}}")


def test_pretty_printed_payloads_appended_to_one_json_file_all_load(tmp_path: Path) -> None:
    # A receiver that appends each webhook body, pretty-printed, to one .json file (`>>`): two documents
    # back to back are not one JSON value, but each is an alert payload.
    path = tmp_path / "appended.json"
    first = webhook(alert("GPUXid79", "gpu001", "2026-11-30T10:00:15Z"))
    second = webhook(alert("GPUXid79", "gpu001", "2026-11-30T10:00:15Z", status="resolved",
                           ends="2026-11-30T10:30:00Z"), status="resolved")
    text = json.dumps(first, indent=2) + "\n" + json.dumps(second, indent=2) + "\n"
    path.write_text(text)
    parsed = parse_alert_file(path)
    assert parsed.rejects.height == 0
    assert parsed.notifications["status"].to_list() == ["firing", "resolved"]
    assert parsed.notifications["line_no"].to_list() == [1, text[: text.index("\n{") + 1].count("\n") + 1]


def _prometheus_dump(*alerts: tuple[dict, str]) -> dict:
    """A Prometheus /api/v1/alerts response of firing alerts ``(labels, activeAt)``."""
    return {"status": "success", "data": {"alerts": [
        {"labels": labels, "annotations": {}, "state": "firing", "activeAt": active, "value": "1e+00"}
        for labels, active in alerts]}}


def test_one_alert_in_two_formats_and_precisions_is_one_occurrence(tmp_path: Path) -> None:
    # The webhook prints startsAt to the nanosecond, Alertmanager's /api/v2/alerts to the
    # millisecond (DuckDB keeps microseconds: .123456789 -> .123456, .123 -> .123000).
    xid = alert("GpuXidError", "gpu003", "2026-11-10T02:00:30.123456789Z")
    fp = alertmanager_fingerprint(xid["labels"])
    api_v2 = {"labels": xid["labels"], "annotations": {}, "fingerprint": fp,
              "startsAt": "2026-11-10T02:00:30.123Z", "endsAt": "2026-11-10T02:14:30.123Z",
              "status": {"state": "active", "silencedBy": [], "inhibitedBy": []}}
    landing = _landing_with(tmp_path, {
        "a-webhook.jsonl": [webhook(dict(xid, fingerprint=fp)),
                            webhook(dict(xid, fingerprint=fp), receiver="pagerduty"),
                            webhook(dict(xid, fingerprint=fp, status="resolved", endsAt="2026-11-10T02:40:00.5Z"))],
        "b-amapi.jsonl": [json.dumps([api_v2])],
    })
    con = connect(tmp_path / "w.duckdb")
    ingest_alert_files(con, landing)
    assert build_core_alerts(con, known_nodes=["gpu003"])[0] == 1
    row = con.sql("SELECT status, starts_at, ends_at, n_notifications FROM core.alerts").fetchall()
    con.close()
    # 3 webhook notifications + 1 API entry; the most precise start; resolved by the webhook.
    assert row == [("resolved", datetime(2026, 11, 10, 2, 0, 30, 123456, tzinfo=UTC),
                    datetime(2026, 11, 10, 2, 40, 0, 500000, tzinfo=UTC), 4)]


def test_a_prometheus_activation_joins_the_alertmanager_firing_after_its_for(tmp_path: Path) -> None:
    labels = {"alertname": "NodeDown", "instance": "gpu001:9100"}
    other = {"alertname": "NodeDown", "instance": "gpu002:9100"}
    am = {"labels": labels, "annotations": {}, "startsAt": "2026-11-10T10:05:00.25Z", "endsAt": ZERO,
          "status": "firing"}
    landing = _landing_with(tmp_path, {
        # Activations: gpu001 pending from 10:00:00.5, firing (Alertmanager) at 10:05:00.25 -> one alert;
        # gpu001 again at 12:00 with no Alertmanager firing -> its own alert; gpu002 active at 13:00,
        # Alertmanager fires at 14:30 (90 min > max_for_minutes 60: not this activation) -> two alerts;
        # gpu002 active at 15:00 and shown again active from 15:20 (re-activated): the firing at
        # 15:25 belongs to the second activation only -> 15:00 alone, 15:20 + 15:25 one alert.
        "prom.jsonl": [json.dumps(_prometheus_dump((labels, "2026-11-10T10:00:00.5Z"),
                                                   (labels, "2026-11-10T12:00:00Z"),
                                                   (other, "2026-11-10T13:00:00Z"),
                                                   (other, "2026-11-10T15:00:00Z"),
                                                   (other, "2026-11-10T15:20:00Z")))],
        "webhook.jsonl": [webhook(am), webhook(dict(am, labels=other, startsAt="2026-11-10T14:30:00Z")),
                          webhook(dict(am, labels=other, startsAt="2026-11-10T15:25:00Z"))],
    })
    con = connect(tmp_path / "w.duckdb")
    ingest_alert_files(con, landing)
    query = ("SELECT node, strftime(starts_at, '%H:%M:%S.%f'), n_notifications FROM core.alerts "
             "ORDER BY node, starts_at")
    build_core_alerts(con, known_nodes=["gpu001", "gpu002"])
    rows = con.sql(query).fetchall()
    # With rules whose `for:` reaches 2 h (cluster.yaml alerts.max_for_minutes), 13:00 fired at 14:30.
    build_core_alerts(con, AlertSettings(max_for_minutes=120), known_nodes=["gpu001", "gpu002"])
    rows_2h = con.sql(query).fetchall()
    con.close()
    assert rows == [("gpu001", "10:05:00.250000", 2), ("gpu001", "12:00:00.000000", 1),
                    ("gpu002", "13:00:00.000000", 1), ("gpu002", "14:30:00.000000", 1),
                    ("gpu002", "15:00:00.000000", 1), ("gpu002", "15:25:00.000000", 2)]
    assert rows_2h == [*rows[:2], ("gpu002", "14:30:00.000000", 2), *rows[4:]]


def test_a_utf8_bom_before_the_json_is_dropped(tmp_path: Path) -> None:
    payload = webhook(alert("BomTest", "gpu001", "2026-11-10T05:00:00Z"))
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(payload).encode())
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + (json.dumps(payload) + "\n").encode() * 2)
    for name, n in (("bom.json", 1), ("bom.jsonl", 2)):
        parsed = parse_alert_file(tmp_path / name)
        assert parsed.rejects.height == 0, parsed.rejects
        assert parsed.notifications["alertname"].to_list() == ["BomTest"] * n
        assert parsed.notifications["received_at"].null_count() == n  # the BOM is no logger prefix


def test_alerts_alertmanager_truncated_are_a_reject_and_the_payload_loads(tmp_path: Path) -> None:
    from gpusre.models.ingest.reconcile import mismatched_files

    sent = webhook(alert("NodeMemoryHigh", "gpu006", "2026-11-10T15:03:00Z"),
                   alert("NodeMemoryHigh", "gpu007", "2026-11-10T15:03:00Z"))
    landing = _landing_with(tmp_path, {"a.jsonl": [webhook(alert("A", "gpu001", "2026-11-10T15:00:00Z")),
                                                    dict(sent, truncatedAlerts=4),
                                                    dict(sent, truncatedAlerts=1)]})
    con = connect(tmp_path / "w.duckdb")
    (result,) = ingest_alert_files(con, landing)
    rejects = con.sql("SELECT line_no, error FROM raw.rejects ORDER BY line_no").fetchall()
    loaded = con.sql("SELECT count(*) FROM raw.alert_notifications").fetchall()[0][0]
    assert mismatched_files(con, "alerts", "alert_notifications") == []
    con.close()
    # 1 + 2 + 2 notifications load; lines 2 and 3 each add one reject naming what was dropped.
    assert loaded == 5 and (result.rows_read, result.rows_loaded, result.rows_rejected) == (7, 5, 2)
    assert rejects == [
        (2, "Alertmanager truncated 4 alerts from this notification (max_alerts); the alerts it sent are loaded"),
        (3, "Alertmanager truncated 1 alert from this notification (max_alerts); the alerts it sent are loaded")]


def test_devices_of_two_hosts_outside_the_node_list_are_two_targets_and_two_incidents(tmp_path: Path) -> None:
    from gpusre.models.alerts.clustering import cluster_alerts

    def host_alert(name: str, instance: str, starts: str) -> dict:
        return {"status": "firing", "labels": {"alertname": name, "instance": instance, "device": "eth0"},
                "annotations": {}, "startsAt": starts, "endsAt": ZERO}

    landing = _landing_with(tmp_path, {"a.jsonl": [
        webhook(host_alert("NodeNetworkReceiveErrs", "10.0.0.21:9100", "2026-11-10T12:00:00Z")),
        webhook(host_alert("NodeNetworkTransmitErrs", "10.0.0.35:9100", "2026-11-10T12:04:00Z"))]})
    con = connect(tmp_path / "w.duckdb")
    ingest_alert_files(con, landing)
    build_core_alerts(con, known_nodes=["gpu001"])
    alerts = con.sql("SELECT * FROM core.alerts ORDER BY starts_at").pl()
    con.close()
    assert alerts.select("node", "target", "target_label").rows() == [
        (None, "10.0.0.21/eth0", "device"), (None, "10.0.0.35/eth0", "device")]
    # 4 min apart, nothing shared: two incidents (one target key `eth0` made them one before).
    assert cluster_alerts(alerts)[0].height == 2
