"""The retrospective tells the log evidence's times from an operator's (incidents.csv), runs its timeline to
the repair, and keeps the recovery in the Markdown (an outside evaluator's probe, on a small hand-made
warehouse).

* inc-rack (OPS-1187): rack r02's PDU trips. 4 power-loss lines 15:30:00, :05, :10, :15 on dgx[17-20];
  the operator wrote 15:30:00 → 17:35:00 (``marts.hw_incidents`` joins the two: 15:30:00 → 17:35:00).
  Slurm: DOWN "Not responding" 15:35:00 → 17:33:15 → repaired 17:33:15, 2 h 3 min 15 s = 2.1 h after
  15:30:00. Jobs 41102, 41103 NODE_FAIL 15:35 (16.0 GPU-h each).
* inc-mds (OPS-1180): the Lustre MDS hangs. 12 "connection lost" lines 01:10:00 + 2 s·k on dgx[01-12]
  and one rc=-107 line at 01:11:04 (13 events, 64 s); every client logs "Connection restored" by
  01:55:31 (never drained) → repaired 01:55:31, 45 min 31 s = 46 min after 01:10:00. The operator wrote
  01:08:00 → 01:56:00: no log line at either time. 12 jobs FAILED 01:20 + 2 min·k (the last 01:42),
  4.0 GPU-h each. Alert incident ainc-mds: LustreMDTDown on mds1:9100 (no Slurm node) 01:11:30 → 01:56:00,
  about inc-mds, 12 jobs / 48.0 GPU-h.

Hand values: the MDS timeline runs from 01:10:00 − 10 min = 01:00:00 to the repair 01:55:31 + 10 min
(margin max(10 min, 10 % of 45 min 31 s)) = 02:05:31, 66 min; its job list from 01:10:00 − 15 min = 00:55:00
to 01:55:31 + 5 min = 02:00:31. 19 key moments, so the Markdown's second table holds the last 4 (job 41011
at 01:42, the recovery at 01:55:31, the last alert resolved and the operator's end at 01:56:00).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from report_html import section, visible_text

from gpusre.models.alerts.clustering import INCIDENT_SCHEMA as ALERT_INCIDENT_SCHEMA
from gpusre.models.alerts.clustering import MEMBER_SCHEMA
from gpusre.models.failures.attribution import ATTRIBUTION_SCHEMA
from gpusre.models.failures.hw_incidents import INCIDENT_SCHEMA as HW_SCHEMA
from gpusre.models.failures.taxonomy import IMPACT_SCHEMA
from gpusre.models.reliability.repair_times import link_incidents
from gpusre.models.warehouse import apply_ddl, replace_table
from gpusre.reports.incident import build_incident_context, render_incident_report
from gpusre.reports.kit.formatting import fmt_span
from gpusre.reports.kit.zone import LANDING_ENV

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")
RACK, MDS, ALERT = "inc-rack", "inc-mds", "ainc-mds"
RACK_NODES = [f"dgx{i:02d}" for i in range(17, 21)]
MDS_NODES = [f"dgx{i:02d}" for i in range(1, 13)]
OPERATOR = "the operator's window (incidents.csv {}, joined with the log evidence)"


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _frame(schema: dict[str, pl.DataType], rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame([[r.get(c) for c in schema] for r in rows], schema=schema, orient="row")


def _hw_incidents() -> pl.DataFrame:
    schema = {**HW_SCHEMA, **{c: d for c, d in IMPACT_SCHEMA.items() if c != "incident_id"}}
    common = {"cause_class": "hardware", "severity": "high", "gpus": [], "label_source": "operator",
              "n_health_check_episodes": 0, "single_symptom": True}
    rack = {**common, "incident_id": RACK, "component": "host_power", "component_class": "power", "action": "CHECK_PSU",
            "start_ts": t("2026-12-01 15:30:00"), "end_ts": t("2026-12-01 17:35:00"), "nodes": RACK_NODES,
            "n_events": 4, "first_event_id": 1, "scope": "rack", "operator_id": "OPS-1187",
            "root_cause": "rack r02 PDU A breaker trip", "evidence_kinds": ["ipmi_power"], "affected_jobs": 2,
            "affected_gpus": 64, "lost_gpu_hours": 32.0}
    mds = {**common, "incident_id": MDS, "component": "storage", "component_class": "storage", "action": "CHECK_FS",
           "cause_class": "system_software", "start_ts": t("2026-11-30 01:08:00"), "end_ts": t("2026-11-30 01:56:00"),
           "nodes": MDS_NODES, "n_events": 13, "first_event_id": 101, "scope": "cluster", "operator_id": "OPS-1180",
           "root_cause": "MDS mds1 kernel panic", "evidence_kinds": ["lustre_disconnect"], "affected_jobs": 12,
           "affected_gpus": 96, "lost_gpu_hours": 48.0}
    return _frame(schema, [rack, mds])


def _node_events(con: duckdb.DuckDBPyConnection) -> None:
    rows = [(1 + k, t("2026-12-01 15:30:00") + timedelta(seconds=5 * k), node, "ipmi_power", None, "host_power",
             "hardware", "high", "CHECK_PSU", "Power Supply sensor PS1 Status, Power Supply AC lost Asserted",
             "syslog/x.log", 1 + k) for k, node in enumerate(RACK_NODES)]
    rows += [(101 + k, t("2026-11-30 01:10:00") + timedelta(seconds=2 * k), node, "lustre_disconnect", None, "storage",
              "system_software", "high", "CHECK_FS", "Lustre: Connection to scratch-MDT0000 was lost", "syslog/x.log",
              101 + k) for k, node in enumerate(MDS_NODES)]
    rows.append((113, t("2026-11-30 01:11:04"), "dgx05", "lustre_error", None, "storage", "system_software", "high",
                 "CHECK_FS", "LustreError: scratch-MDT0000-mdc: rc = -107", "syslog/x.log", 113))
    con.executemany("""INSERT INTO core.node_events (event_id, ts, node, kind, code, component, cause_class, severity,
                           action, message, source_file, line_no) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", rows)
    replace_table(con, "marts.hw_incident_members", pl.DataFrame(
        {"event_id": [1, 2, 3, 4] + list(range(101, 114)), "incident_id": [RACK] * 4 + [MDS] * 13},
        schema={"event_id": pl.Int64, "incident_id": pl.String}))


def _repairs(con: duckdb.DuckDBPyConnection) -> None:
    """marts.incident_repairs as the repair-time asset builds it: the rack drained (DOWN 15:35:00 → 17:33:15),
    the MDS never drained but its clients logged the recovery (the last at 01:55:31)."""
    incidents = pl.DataFrame({
        "incident_id": [RACK, MDS], "component": ["host_power", "storage"], "component_class": ["power", "storage"],
        "scope": ["rack", "cluster"], "start_ts": [t("2026-12-01 15:30:00"), t("2026-11-30 01:08:00")],
        "first_evidence_ts": [t("2026-12-01 15:30:00"), t("2026-11-30 01:10:00")],
        "end_ts": [t("2026-12-01 17:35:00"), t("2026-11-30 01:56:00")], "nodes": [RACK_NODES, MDS_NODES]},
        schema={"incident_id": pl.String, "component": pl.String, "component_class": pl.String, "scope": pl.String,
                "start_ts": DT, "first_evidence_ts": DT, "end_ts": DT, "nodes": pl.List(pl.String)})
    states = pl.DataFrame({"node": RACK_NODES, "start_ts": [t("2026-12-01 15:35:00")] * 4,
                           "end_ts": [t("2026-12-01 17:33:15")] * 4, "reason": ["Not responding"] * 4,
                           "reason_class": ["not_responding"] * 4},
                          schema={"node": pl.String, "start_ts": DT, "end_ts": DT, "reason": pl.String,
                                  "reason_class": pl.String})
    recoveries = pl.DataFrame({"incident_id": [MDS], "recovered_ts": [t("2026-11-30 01:55:31")]},
                              schema={"incident_id": pl.String, "recovered_ts": DT})
    replace_table(con, "marts.incident_repairs", link_incidents(incidents, states, recoveries=recoveries))


def _jobs(con: duckdb.DuckDBPyConnection) -> None:
    def job(job_id: str, state: str, start: datetime, end: datetime, nodes: list[str], n_gpus: int) -> tuple:
        elapsed = int((end - start).total_seconds())
        return (job_id, f"train-{job_id}", "alice", "acct-ml", state, start - timedelta(minutes=5), start, end, elapsed,
                n_gpus, "9-64", nodes, n_gpus * elapsed / 3600, end.date())

    jobs = [job(f"{41000 + k}", "FAILED", t("2026-11-29 20:00:00"), t("2026-11-30 01:20:00") + timedelta(minutes=2 * k),
                [MDS_NODES[k]], 8) for k in range(12)]
    jobs += [job("41102", "NODE_FAIL", t("2026-12-01 10:00:00"), t("2026-12-01 15:35:00"), RACK_NODES[:2], 16),
             job("41103", "NODE_FAIL", t("2026-12-01 10:00:00"), t("2026-12-01 15:35:00"), RACK_NODES[2:], 16)]
    con.executemany("""INSERT INTO core.jobs (job_id, name, "user", account, state, submit_ts, start_ts, end_ts,
                           elapsed_s, n_gpus, size_bucket, nodes, gpu_hours, end_day, restarts, source_file, line_no)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 'sacct/x.psv', 1)""", jobs)
    con.execute("""INSERT INTO core.job_instances (job_id, instance_no, is_latest, state, start_ts, end_ts, elapsed_s,
                       n_gpus, nodes, source_file, line_no)
                   SELECT job_id, 1, true, state, start_ts, end_ts, elapsed_s, n_gpus, nodes, source_file, line_no
                   FROM core.jobs""")
    attribution = [{"job_id": j[0], "state": j[4], "end_ts": j[7], "n_gpus": j[9], "attribution": "infrastructure",
                    "rule": "incident covers job end", "component": "storage" if j[0] < "41100" else "host_power",
                    "cause_class": "hardware", "incident_id": MDS if j[0] < "41100" else RACK,
                    "evidence_event_ids": [1], "lost_gpu_hours": 4.0 if j[0] < "41100" else 16.0} for j in jobs]
    replace_table(con, "marts.job_failure_attribution", _frame(ATTRIBUTION_SCHEMA, attribution))
    replace_table(con, "marts.instance_failure_attribution",
                  _frame({"job_id": pl.String(), "instance_no": pl.Int64(),
                          **{c: d for c, d in ATTRIBUTION_SCHEMA.items() if c != "job_id"}}, []))


def _alerts(con: duckdb.DuckDBPyConnection) -> None:
    """The MDS server's alert (on no Slurm node), about inc-mds: the alert incident ainc-mds."""
    con.execute("""INSERT INTO core.alerts (alert_id, fingerprint, alertname, status, severity, node, target,
                       target_label, starts_at, ends_at, labels, summary, source_file, n_notifications,
                       first_received_file)
                   VALUES (1, 'fp1', 'LustreMDTDown', 'resolved', 'critical', NULL, 'mds1:9100', 'instance',
                           TIMESTAMPTZ '2026-11-30 01:11:30+00', TIMESTAMPTZ '2026-11-30 01:56:00+00',
                           '{"alertname": "LustreMDTDown", "instance": "mds1:9100", "fsname": "scratch"}'::JSON,
                           'MDT scratch-MDT0000 on mds1 is down', 'alerts/x.jsonl', 2, 'alerts/x.jsonl')""")
    replace_table(con, "marts.alert_incidents", _frame(ALERT_INCIDENT_SCHEMA, [{
        "incident_id": ALERT, "start_ts": t("2026-11-30 01:11:30"), "end_ts": t("2026-11-30 01:56:00"),
        "ongoing": False, "firing_alerts": 0, "n_alerts": 1, "flaps": 0, "n_nodes": 0, "nodes": [], "root_alert_id": 1,
        "root_level": "storage", "root_cause_candidate": "LustreMDTDown on mds1:9100",
        "root_cause_reason": "hardware incident inc-mds (storage) on mds1:9100", "alertnames": ["LustreMDTDown"],
        "hw_incident_id": MDS, "scope": "storage", "in_flood": False, "n_jobs_killed": 12, "lost_gpu_hours": 48.0}]))
    replace_table(con, "marts.alert_incident_members", _frame(MEMBER_SCHEMA, [
        {"alert_id": 1, "incident_id": ALERT, "is_root": True, "level": "storage", "hw_incident_id": MDS}]))


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("evidence_times") / "w.duckdb"
    con = duckdb.connect(str(path))
    apply_ddl(con)
    replace_table(con, "marts.hw_incidents", _hw_incidents())
    _node_events(con)
    _repairs(con)
    _jobs(con)
    _alerts(con)
    con.executemany("""INSERT INTO raw.ingested_files (source_file, source_kind, sha256, size_bytes, rows_read,
                           rows_loaded, rows_rejected, status, ingested_at)
                       VALUES (?, ?, 'x', 100, 10, 10, 0, 'loaded', TIMESTAMPTZ '2026-12-02 08:00:00+00')""",
                    [("sacct/x.psv", "sacct"), ("syslog/x.log", "syslog"), ("slurm_events/x.txt", "slurm_events"),
                     ("alerts/x.jsonl", "alerts")])
    con.close()
    return path


@pytest.fixture
def con(warehouse: Path):
    c = duckdb.connect(str(warehouse), read_only=True)
    yield c
    c.close()


@pytest.fixture(autouse=True)
def _no_landing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LANDING_ENV, raising=False)


def _moments(ctx: dict) -> list[tuple[str, str, str]]:
    """(time, offset, what) of every key-moment table of the timeline, in order."""
    return [(r[0].text, r[1].text, r[2].title or r[2].text) for tb in ctx["by_key"]["timeline"].items
            if hasattr(tb, "rows") for r in tb.rows]


def test_the_operator_window_is_not_called_evidence(con: duckdb.DuckDBPyConnection) -> None:
    ctx = build_incident_context(con, "OPS-1187", cluster_timezone="UTC")
    assert ctx["meta"]["span"] == (
        "log evidence 2026-12-01 15:30:00 UTC → 2026-12-01 15:30:15 UTC · " + OPERATOR.format("OPS-1187")
        + " 2026-12-01 15:30:00 UTC → 2026-12-01 17:35:00 UTC · last linked node back in service 2026-12-01 17:33:15 UTC")
    lead = ctx["by_key"]["summary"].lead
    assert lead == (
        "Hardware incident inc-rack, Rack power loss on dgx[17-20] (rack r02 PDU A breaker trip), started "
        "2026-12-01 15:30:00 UTC, its first log line; " + OPERATOR.format("OPS-1187") + " is 2026-12-01 15:30:00 UTC → "
        "2026-12-01 17:35:00 UTC; it was down until every node was back in service 2.1 h after the first evidence, at "
        "2026-12-01 17:33:15 UTC; its failure lines span 15 s (4 events), the last at 2026-12-01 15:30:15 UTC; it "
        "killed 2 jobs and lost 32.0 GPU-hours.")
    started = next(c for c in ctx["by_key"]["summary"].cards if c["label"] == "Started")
    assert started["sub"] == "UTC · failure lines span 15 s"
    moments = _moments(ctx)
    # the last line is named by what it is (dgx20's power-loss line, the 4th at 15:30:00 + 5 s·3)
    assert ("2026-12-01 15:30:15", "+0:00:15",
            "last evidence of hardware incident inc-rack (its last log line: ipmi power on dgx20)") in moments
    assert ("2026-12-01 17:35:00", "+2:05:00",
            f"end of {OPERATOR.format('OPS-1187')} for hardware incident inc-rack") in moments
    assert not any(what.startswith("last evidence") and when == "2026-12-01 17:35:00" for when, _, what in moments)


def test_an_operator_start_without_a_log_line_is_the_operators(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    ctx = build_incident_context(con, "OPS-1180", cluster_timezone="UTC")
    # The incident starts where marts.hw_incidents.start_ts does, the operator's 01:08:00 — as the nightly and
    # the SLO review show it — labelled as the operator's, with the first log line (01:10:00) beside it.
    assert ctx["meta"]["span"] == (
        "started 2026-11-30 01:08:00 UTC (operator's window; first log line 01:10:00) · "
        "log evidence 2026-11-30 01:10:00 UTC → 2026-11-30 01:11:04 UTC · " + OPERATOR.format("OPS-1180")
        + " 2026-11-30 01:08:00 UTC → 2026-11-30 01:56:00 UTC · file system back on its clients 2026-11-30 01:55:31 UTC")
    lead = ctx["by_key"]["summary"].lead
    # Down from the first log line 01:10:00 (45 min 31 s to 01:55:31: "46 min"), said so beside the earlier start.
    assert lead.startswith("Hardware incident inc-mds, Storage failure on dgx[01-12] (MDS mds1 kernel panic), started "
                           "2026-11-30 01:08:00 UTC (operator's window; first log line 01:10:00); "
                           + OPERATOR.format("OPS-1180")
                           + " is 2026-11-30 01:08:00 UTC → 2026-11-30 01:56:00 UTC; it was down 46 min from the "
                           "first evidence, to the file system's recovery on its clients at 2026-11-30 01:55:31 UTC; "
                           "no drain linked: its nodes stayed in service; its failure lines span 64 s (13 events), the "
                           "last at 2026-11-30 01:11:04 UTC;")
    started = next(c for c in ctx["by_key"]["summary"].cards if c["label"] == "Started")
    assert (started["value"], started["sub"]) == ("11-30 01:08:00", "UTC · operator's window; first log line 01:10:00")
    assert "evidence spans 48 min" not in lead
    # The timeline began with the first log line, not with the operator's start.
    assert ctx["by_key"]["timeline"].lead.endswith("it began with the first event of hardware incident inc-mds at "
                                                   "01:10:00.")
    moments = _moments(ctx)
    assert ("2026-11-30 01:08:00", "−0:02:00",
            f"start of {OPERATOR.format('OPS-1180')} for hardware incident inc-mds") in moments
    # The first alert (01:11:30) came 90 s after the first log line, not 3 min 30 s after the operator's start.
    assert f"the first alert fired {fmt_span(90)} after the first hardware event" in ctx["by_key"]["repair"].lead
    repair_row = ctx["by_key"]["repair"].items[0].rows[0]
    assert repair_row[1].text == "2026-11-30 01:10:00"  # First evidence (UTC)


def test_the_timeline_runs_to_the_repair_and_lists_the_jobs_inside_it(con: duckdb.DuckDBPyConnection,
                                                                      tmp_path: Path) -> None:
    ctx = build_incident_context(con, MDS, cluster_timezone="UTC")
    assert ctx["by_key"]["timeline"].lead.startswith(
        "Between 2026-11-30 01:00:00 UTC and 2026-11-30 02:05:31 UTC (66 min) the 12 affected nodes saw ")
    assert ctx["meta"]["window"] == "2026-11-30 01:00:00 UTC … 2026-11-30 02:05:31 UTC"
    blast = ctx["by_key"]["blast-radius"]
    caption = blast.items[0].caption
    assert caption.startswith("Jobs that ended FAILED or NODE_FAIL on the affected nodes from 2026-11-30 00:55:00 UTC "
                              "to 2026-11-30 02:00:31 UTC")
    ends = sorted(r[4].text for r in blast.items[0].rows)
    assert len(ends) == 12 and ends[0] == "2026-11-30 01:20:00" and ends[-1] == "2026-11-30 01:42:00"
    assert all("2026-11-30 00:55:00" <= e <= "2026-11-30 02:00:31" for e in ends)
    # The leaf of 19 moments: the Markdown keeps the recovery (the second table holds the last 4).
    moments = _moments(ctx)
    assert len(moments) == 19
    tail = ctx["by_key"]["timeline"].items[-1]
    assert [r[0].text for r in tail.rows] == ["2026-11-30 01:42:00", "2026-11-30 01:55:31", "2026-11-30 01:56:00",
                                              "2026-11-30 01:56:00"]
    md = render_incident_report(con, tmp_path, MDS, cluster_timezone="UTC").markdown.read_text()
    assert ("| 2026-11-30 01:55:31 | +0:45:31 | file system back on its clients: hardware incident inc-mds repaired |"
            in md)


def test_a_server_alert_incident_shows_its_hardware_incidents_nodes(con: duckdb.DuckDBPyConnection) -> None:
    ctx = build_incident_context(con, ALERT, cluster_timezone="UTC")
    nodes = next(c for c in ctx["by_key"]["summary"].cards if c["label"] == "Nodes")
    assert (nodes["value"], nodes["sub"]) == ("12", "of hardware incident inc-mds: dgx[01-12]")
    assert ctx["by_key"]["blast-radius"].lead.startswith(
        "12 nodes of hardware incident inc-mds (dgx[01-12]), 0 faulty GPUs named by its evidence, 12 jobs killed")
    # The alert incident's timeline: from the first log line of the incident it is about (01:10:00) to its
    # last alert's end (01:56:00, after the repair at 01:55:31), 10 min either side.
    assert ctx["meta"]["window"] == "2026-11-30 01:00:00 UTC … 2026-11-30 02:06:00 UTC"
