"""Report wording an outside evaluation found wrong or missing, on one small hand-made warehouse.

An America/Chicago cluster, report day 2026-11-01 (UTC; the local day had 25 h: DST ended).

* Leaf switch leaf01 (gpu[001-004]): 16 IB port-DOWN lines 03:00:01–03:00:08 UTC, every port back
  ACTIVE by 03:12:08 (never drained: marts.incident_repairs times the repair by the recovery lines,
  12 min 7 s after the first evidence). It killed job 501 (ended 03:00:40) and job 502, which NCCL kept
  waiting until 03:06:10 — after the alert incident's blast-radius window (02:45:01 … 03:05:08) but
  attributed to the switch. Job 503 then ran 04:00–08:00 on all four nodes and completed.
* A GPU fault on gpu007 at 2026-10-31 10:00:00 (one line, no repair record); the node's next job ran
  12:00–16:00 and completed: marts.hw_incidents.recovered_ts is 12:00 (the job's start), 2.0 h after.
* Accounting and node logs start 2026-10-30 19:00 UTC (14:00 in Chicago): 10-30 is partial.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
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
from gpusre.models.report_marts import build_report_marts
from gpusre.models.warehouse import apply_ddl, replace_table
from gpusre.reports.incident import build_incident_context, render_incident_report
from gpusre.reports.kit.zone import LANDING_ENV, zone_note
from gpusre.reports.nightly import build_nightly_context, render_nightly_report
from gpusre.reports.slo import build_slo_context

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")
ZONE = "America/Chicago"
REPORT_DAY = date(2026, 11, 1)
LEAF = "inc-leaf01"
GPU = "inc-gpu007"
ALERT = "ainc-leaf01"
LEAF_NODES = ["gpu001", "gpu002", "gpu003", "gpu004"]


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _frame(schema: dict[str, pl.DataType], rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame([[r.get(c) for c in schema] for r in rows], schema=schema, orient="row")


def _hw_incidents() -> pl.DataFrame:
    schema = {**HW_SCHEMA, **{c: d for c, d in IMPACT_SCHEMA.items() if c != "incident_id"}}
    leaf = {"incident_id": LEAF, "component": "network_switch", "component_class": "network",
            "cause_class": "hardware", "severity": "high", "action": "CHECK_LINK",
            "start_ts": t("2026-11-01 03:00:01"), "end_ts": t("2026-11-01 03:00:08"), "nodes": LEAF_NODES,
            "gpus": [], "n_events": 16, "first_event_id": 1, "scope": "leaf_switch", "leaf_switch": "leaf01",
            "label_source": "events", "root_cause": "ib_link_down", "evidence_kinds": ["ib_link_down"],
            "n_health_check_episodes": 0, "single_symptom": True, "affected_jobs": 2, "affected_gpus": 32,
            "lost_gpu_hours": 24.0, "nodes_recovered": 4, "recovered_ts": t("2026-11-01 04:00:00"),
            "hours_to_recovery": (3600 - 8) / 3600}
    gpu = {"incident_id": GPU, "component": "pcie_bus", "component_class": "gpu", "cause_class": "hardware",
           "severity": "critical", "action": "RESTART_BM", "start_ts": t("2026-10-31 10:00:00"),
           "end_ts": t("2026-10-31 10:00:00"), "nodes": ["gpu007"], "gpus": ["0000:1b:00.0"], "n_events": 1,
           "first_event_id": 100, "scope": "node", "label_source": "events", "root_cause": "xid 79",
           "evidence_kinds": ["xid"], "n_health_check_episodes": 0, "single_symptom": True, "affected_jobs": 0,
           "affected_gpus": 0, "lost_gpu_hours": 0.0, "nodes_recovered": 1, "recovered_ts": t("2026-10-31 12:00:00"),
           "hours_to_recovery": 2.0}
    return _frame(schema, [leaf, gpu])


def _node_events(con: duckdb.DuckDBPyConnection) -> None:
    rows = []
    for k in range(16):  # two port-DOWN lines a second, 03:00:01 … 03:00:08
        node = LEAF_NODES[k % 4]
        rows.append((k + 1, t("2026-11-01 03:00:01") + timedelta(seconds=k // 2), node, "ib_link_down", None,
                     "network", "hardware", "high", "CHECK_LINK",
                     f"mlx5_core 0000:08:00.0 mlx5_{k // 4}: Port: 1 Link DOWN", "syslog/x.log", k + 1))
    for k, node in enumerate(LEAF_NODES):  # back ACTIVE, the last at 03:12:08
        rows.append((50 + k, t("2026-11-01 03:12:05") + timedelta(seconds=k), node, "ib_link_up", None, "network",
                     "informational", "info", "IGNORE", "mlx5_core 0000:08:00.0 mlx5_0: Port: 1 Link ACTIVE",
                     "syslog/x.log", 50 + k))
    rows.append((100, t("2026-10-31 10:00:00"), "gpu007", "xid", 79, "pcie_bus", "hardware", "critical", "RESTART_BM",
                 "NVRM: Xid (PCI:0000:1b:00): 79, GPU has fallen off the bus.", "syslog/x.log", 100))
    con.executemany("""INSERT INTO core.node_events (event_id, ts, node, kind, code, component, cause_class, severity,
                           action, message, source_file, line_no) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", rows)
    replace_table(con, "marts.hw_incident_members", pl.DataFrame(
        {"event_id": list(range(1, 17)) + [100], "incident_id": [LEAF] * 16 + [GPU]},
        schema={"event_id": pl.Int64, "incident_id": pl.String}))


def _repairs(con: duckdb.DuckDBPyConnection) -> None:
    """marts.incident_repairs of the leaf incident as the repair-time asset builds it: no drain, every
    node logged its port back ACTIVE (the last at 03:12:08). The GPU incident has no repair record."""
    incidents = pl.DataFrame({"incident_id": [LEAF], "component": ["network_switch"], "component_class": ["network"],
                              "scope": ["leaf_switch"], "start_ts": [t("2026-11-01 03:00:01")],
                              "first_evidence_ts": [t("2026-11-01 03:00:01")], "end_ts": [t("2026-11-01 03:00:08")],
                              "nodes": [LEAF_NODES]},
                             schema={"incident_id": pl.String, "component": pl.String, "component_class": pl.String,
                                     "scope": pl.String, "start_ts": DT, "first_evidence_ts": DT, "end_ts": DT,
                                     "nodes": pl.List(pl.String)})
    states = pl.DataFrame(schema={"node": pl.String, "start_ts": DT, "end_ts": DT, "reason": pl.String,
                                  "reason_class": pl.String})
    recoveries = pl.DataFrame({"incident_id": [LEAF], "recovered_ts": [t("2026-11-01 03:12:08")]},
                              schema={"incident_id": pl.String, "recovered_ts": DT})
    replace_table(con, "marts.incident_repairs", link_incidents(incidents, states, recoveries=recoveries))


def _jobs(con: duckdb.DuckDBPyConnection) -> None:
    def job(job_id: str, state: str, start: str, end: str, nodes: list[str], n_gpus: int) -> tuple:
        s, e = t(start), t(end)
        elapsed = int((e - s).total_seconds())
        return (job_id, f"train-{job_id}", "alice", "acct-ml", state, s - timedelta(minutes=5), s, e, elapsed, n_gpus,
                "9-64", nodes, n_gpus * elapsed / 3600, e.date())

    jobs = [job("501", "FAILED", "2026-11-01 01:00:00", "2026-11-01 03:00:40", LEAF_NODES[:2], 16),
            job("502", "FAILED", "2026-11-01 01:00:00", "2026-11-01 03:06:10", LEAF_NODES[2:], 16),
            job("503", "COMPLETED", "2026-11-01 04:00:00", "2026-11-01 08:00:00", LEAF_NODES, 32),
            job("601", "COMPLETED", "2026-10-31 12:00:00", "2026-10-31 16:00:00", ["gpu007"], 8)]
    con.executemany("""INSERT INTO core.jobs (job_id, name, "user", account, state, submit_ts, start_ts, end_ts,
                           elapsed_s, n_gpus, size_bucket, nodes, gpu_hours, end_day, restarts, source_file, line_no)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 'sacct/x.psv', 1)""", jobs)
    con.execute("""INSERT INTO core.job_instances (job_id, instance_no, is_latest, state, start_ts, end_ts, elapsed_s,
                       n_gpus, nodes, source_file, line_no)
                   SELECT job_id, 1, true, state, start_ts, end_ts, elapsed_s, n_gpus, nodes, source_file, line_no
                   FROM core.jobs""")
    attribution = [{"job_id": "501", "state": "FAILED", "end_ts": t("2026-11-01 03:00:40"), "n_gpus": 16,
                    "attribution": "infrastructure", "rule": "incident covers job end", "component": "network_switch",
                    "cause_class": "hardware", "incident_id": LEAF, "evidence_event_ids": [1], "lost_gpu_hours": 8.0},
                   {"job_id": "502", "state": "FAILED", "end_ts": t("2026-11-01 03:06:10"), "n_gpus": 16,
                    "attribution": "infrastructure", "rule": "incident covers job end", "component": "network_switch",
                    "cause_class": "hardware", "incident_id": LEAF, "evidence_event_ids": [3], "lost_gpu_hours": 16.0}]
    replace_table(con, "marts.job_failure_attribution", _frame(ATTRIBUTION_SCHEMA, attribution))
    replace_table(con, "marts.instance_failure_attribution",
                  _frame({"job_id": pl.String(), "instance_no": pl.Int64(),
                          **{c: d for c, d in ATTRIBUTION_SCHEMA.items() if c != "job_id"}}, []))


def _alerts(con: duckdb.DuckDBPyConnection) -> None:
    """The switch alert (root) at 03:00:01 and four link-down alerts, the last starting at 03:00:08."""
    alerts = [(1, "InfinibandSwitchDown", None, "leaf01", "switch", t("2026-11-01 03:00:01"), t("2026-11-01 03:13:00"),
               '{"alertname": "InfinibandSwitchDown", "switch": "leaf01"}', "Leaf switch leaf01 is down")]
    for k, node in enumerate(LEAF_NODES):
        alerts.append((2 + k, "InfinibandLinkDown", node, None, None, t("2026-11-01 03:00:02") + timedelta(seconds=2 * k),
                       t("2026-11-01 03:12:30"), f'{{"alertname": "InfinibandLinkDown", "instance": "{node}:9100"}}',
                       f"InfiniBand port mlx5_0 down on {node}"))
    con.executemany("""INSERT INTO core.alerts (alert_id, fingerprint, alertname, status, severity, node, target,
                           target_label, starts_at, ends_at, labels, summary, source_file, n_notifications,
                           first_received_file)
                       SELECT ?, 'fp' || ?::VARCHAR, ?, 'resolved', 'critical', ?, ?, ?, ?, ?, ?::JSON, ?,
                              'alerts/x.jsonl', 2, 'alerts/x.jsonl'""",
                    [(a[0], a[0], *a[1:]) for a in alerts])
    replace_table(con, "marts.alert_incidents", _frame(ALERT_INCIDENT_SCHEMA, [{
        "incident_id": ALERT, "start_ts": t("2026-11-01 03:00:01"), "end_ts": t("2026-11-01 03:13:00"), "ongoing": False,
        "firing_alerts": 0, "n_alerts": 5, "flaps": 0, "n_nodes": 4, "nodes": LEAF_NODES, "root_alert_id": 1,
        "root_level": "fabric", "root_cause_candidate": "InfinibandSwitchDown on leaf01",
        "root_cause_reason": "fabric alert on no Slurm node", "alertnames": ["InfinibandLinkDown", "InfinibandSwitchDown"],
        "hw_incident_id": LEAF, "scope": "leaf_switch", "in_flood": False, "n_jobs_killed": 2, "lost_gpu_hours": 24.0}]))
    replace_table(con, "marts.alert_incident_members", _frame(MEMBER_SCHEMA, [
        {"alert_id": i, "incident_id": ALERT, "is_root": i == 1, "level": "fabric" if i == 1 else "node",
         "hw_incident_id": LEAF} for i in range(1, 6)]))


def _daily_marts(con: duckdb.DuckDBPyConnection) -> None:
    """Jobs ended per day (10-30: 2, 10-31: 4 with 1 failed, 11-01: 5 with 2 failed), utilization, and the
    data's coverage: from 2026-10-30 19:00 UTC, so 10-30 is partial."""
    con.execute("""CREATE TABLE marts.job_usage_daily AS SELECT * FROM (VALUES
        (DATE '2026-10-30', 'COMPLETED', '2-8', 2, 2, 2, 16.0, true),
        (DATE '2026-10-31', 'COMPLETED', '2-8', 2, 3, 3, 24.0, false),
        (DATE '2026-10-31', 'FAILED', '2-8', 2, 1, 1, 8.0, false),
        (DATE '2026-11-01', 'COMPLETED', '9-64', 3, 3, 3, 128.0, false),
        (DATE '2026-11-01', 'FAILED', '9-64', 3, 2, 2, 66.0, false))
        t(day, state, size_bucket, bucket_order, jobs, runs, gpu_hours, partial)""")
    con.execute("""CREATE TABLE marts.utilization_daily AS SELECT * FROM (VALUES
        (DATE '2026-10-30', 192.0, 19.0, 0.099, 2, true),
        (DATE '2026-10-31', 192.0, 96.0, 0.5, 5, false),
        (DATE '2026-11-01', 200.0, 120.0, 0.6, 6, false))
        t(day, capacity_gpu_hours, allocated_gpu_hours, utilization, jobs_running, partial)""")
    con.execute("""CREATE OR REPLACE TABLE marts.day_coverage AS SELECT * FROM (VALUES
        (DATE '2026-10-30', TIMESTAMPTZ '2026-10-30 19:00:00+00', TIMESTAMPTZ '2026-10-31 00:00:00+00', 5.0, true),
        (DATE '2026-10-31', TIMESTAMPTZ '2026-10-31 00:00:00+00', TIMESTAMPTZ '2026-11-01 00:00:00+00', 24.0, false),
        (DATE '2026-11-01', TIMESTAMPTZ '2026-11-01 00:00:00+00', TIMESTAMPTZ '2026-11-01 23:59:00+00', 24.0, false))
        t(day, covered_from, covered_to, covered_hours, partial)""")
    con.execute("ALTER TABLE marts.day_coverage ADD COLUMN sources VARCHAR DEFAULT 'sacct, syslog'")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("probes") / "w.duckdb"
    con = duckdb.connect(str(path))
    apply_ddl(con)
    for name, frame in (("marts.hw_incidents", _hw_incidents()),):
        replace_table(con, name, frame)
    _node_events(con)
    _repairs(con)
    _jobs(con)
    _alerts(con)
    _daily_marts(con)
    # every source loaded (node states too: the leaf's nodes were simply never drained)
    con.executemany("""INSERT INTO raw.ingested_files (source_file, source_kind, sha256, size_bytes, rows_read,
                           rows_loaded, rows_rejected, status, ingested_at)
                       VALUES (?, ?, 'x', 100, 10, 10, 0, 'loaded', TIMESTAMPTZ '2026-11-02 08:00:00+00')""",
                    [("sacct/x.psv", "sacct"), ("syslog/x.log", "syslog"), ("slurm_events/x.txt", "slurm_events"),
                     ("alerts/x.jsonl", "alerts")])
    build_report_marts(con)
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


def _subheading(page: str) -> str:
    start = page.index('<div class="sub">', page.index("<header"))
    return visible_text(page[start:page.index("</div>", start)])


# -- 1. a leaf-switch outage is not "7 s" long ----------------------------------------------------


def test_hardware_incident_says_its_evidence_spans_7_s_and_it_was_down_12_min(con: duckdb.DuckDBPyConnection,
                                                                              tmp_path: Path) -> None:
    paths = render_incident_report(con, tmp_path, LEAF, cluster_timezone="UTC")
    page, md = paths.html.read_text(), " ".join(paths.markdown.read_text().split())
    summary = visible_text(section(page, "summary"))
    assert ("Hardware incident inc-leaf01, Interconnect switch failure under leaf01 (ib_link_down), started "
            "2026-11-01 03:00:01 UTC; it was down 12 min, to the links' "
            "recovery at 2026-11-01 03:12:08 UTC; no drain linked: its nodes stayed in service; its failure lines span "
            "7 s (16 events), the last at 2026-11-01 03:00:08 UTC; it killed 2 jobs and "
            "lost 24.0 GPU-hours.") in summary
    assert "lasted" not in summary and "UTC · failure lines span 7 s" in summary
    # The header: the log evidence's span, then the repair — not "03:00:01 UTC → 03:00:08 UTC" as the incident.
    assert _subheading(page) == ("hardware incident · Interconnect switch failure under leaf01 (ib_link_down) · "
                                 "log evidence 2026-11-01 03:00:01 UTC → 2026-11-01 03:00:08 UTC · links back ACTIVE "
                                 "2026-11-01 03:12:08 UTC")
    assert ("log evidence 2026-11-01 03:00:01 UTC → 2026-11-01 03:00:08 UTC · links back ACTIVE 2026-11-01 03:12:08 UTC"
            in md)
    # The key moments include the recovery, as a drained incident's "last linked node back in service".
    timeline = visible_text(section(page, "timeline"))
    assert "2026-11-01 03:12:08 +0:12:07 links back ACTIVE: hardware incident inc-leaf01 repaired" in timeline
    # Repaired without a drain: the nodes stayed in service (not "No drain … (repaired)").
    repair = visible_text(section(page, "repair"))
    assert "No drain of the incident's nodes followed within 24 h: Slurm kept them in service; " in repair


def test_incident_summary_says_when_the_last_node_started_a_completing_job(con: duckdb.DuckDBPyConnection) -> None:
    lead = build_incident_context(con, GPU, cluster_timezone="UTC")["by_key"]["summary"].lead
    ctx = build_incident_context(con, GPU, cluster_timezone="UTC")
    assert ctx["meta"]["span"] == "log evidence at 2026-10-31 10:00:00 UTC"
    assert lead == ("Hardware incident inc-gpu007, PCIe bus failure on gpu007 (xid 79), started 2026-10-31 10:00:00 "
                    "UTC; its log evidence is a single moment (1 event); the last of its nodes started a job that went "
                    "on to complete 2.0 h after its last evidence; it killed 0 jobs and lost 0.0 GPU-hours.")


# -- 2. recovered_ts is the start of the completing job -------------------------------------------


COMPLETING = ("Completing job started: hours from the incident's end (its last evidence, or the end of an operator's "
              "window when later) until the last of its nodes "
              "started a job that went on to complete — that job's start, not its end (a job that ran 12:00–16:00 "
              "counts at 12:00).")


def test_nightly_incident_table_says_the_completing_job_started(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    paths = render_nightly_report(con, tmp_path, report_date=REPORT_DAY)
    text = visible_text(section(paths.html.read_text(), "incidents"))
    assert "until every one of its nodes ran a job to completion again" not in text
    assert (COMPLETING + " (Back in service, as the repair-time table times it, may be earlier.)") in text
    assert "Completing job started" in text.split(COMPLETING)[1]  # the column, after the caption
    # the GPU incident's node started its completing job at 12:00, 2.0 h after the fault (not 16:00: 6.0 h)
    assert "inc-gpu007 PCIe bus xid 79 gpu007 1 0 0.0 2.0 h" in text
    assert "; on every incident's nodes a job started since its end has completed." in text


def test_slo_incident_table_says_the_completing_job_started(con: duckdb.DuckDBPyConnection) -> None:
    sec = build_slo_context(con, date(2026, 10, 30), REPORT_DAY)["by_key"]["incidents"]
    (table,) = [i for i in sec.items if hasattr(i, "caption")]
    assert COMPLETING in table.caption and "ran a job to completion" not in table.caption
    assert [c.label for c in table.columns][-1] == "Completing job started"


def test_contract_says_recovered_ts_is_the_completing_jobs_start() -> None:
    import yaml

    cols = yaml.safe_load((Path(__file__).resolve().parents[1] / "sql" / "contract" / "marts.yaml").read_text(
        encoding="utf-8"))["marts.hw_incidents"]["columns"]
    assert cols["recovered_ts"].startswith("time the last node started a job that went on to complete, UTC")
    assert cols["hours_to_recovery"].startswith("hours from the incident's end (its last evidence) until the last "
                                                "node started a job that went on to complete")


# -- 3. the alert blast radius lists (and counts) the attributed run that ended after the window ------


def test_alert_blast_radius_caption_names_the_window_and_the_attributed_runs(con: duckdb.DuckDBPyConnection) -> None:
    sec = build_incident_context(con, ALERT, cluster_timezone="UTC")["by_key"]["blast-radius"]
    (table, _users) = [i for i in sec.items if hasattr(i, "caption")]
    assert table.caption.startswith(
        "Jobs that ended FAILED or NODE_FAIL on the affected nodes from 2026-11-01 02:45:01 UTC to 2026-11-01 "
        "03:05:08 UTC, plus the runs attribution gives to the linked hardware incident inc-leaf01, whenever they "
        "ended, and interrupted earlier instances of requeued jobs (job #instance). Counted: ")
    assert ("unless attributed to the user, plus every such run attribution gives to the linked hardware incident "
            "inc-leaf01, whenever it ended (marts.alert_incidents.n_jobs_killed") in table.caption
    # job 502 ended 03:06:10, after the window: listed and counted, as the mart counts it (2 jobs, 24.0 GPU-h)
    counted = {row[0].text: row[-1].text for row in table.rows}
    assert counted == {"501": "yes", "502": "yes"}
    assert sec.lead.endswith("2 jobs killed (32 GPUs of 1 user) and 24.0 lost GPU-hours.")
    assert not any("add up to" in n for n in sec.notes)


# -- 4. the cluster's time zone in every report's header ---------------------------------------------


NOTE = "Times in UTC; the cluster's time zone is America/Chicago"


def test_zone_note_names_dst_days() -> None:
    assert zone_note(ZONE, [date(2026, 10, 31)]) == NOTE
    assert zone_note(ZONE, [REPORT_DAY]) == NOTE + " (the local day 2026-11-01 had 25 h)"
    assert zone_note(ZONE, [date(2026, 3, 8), REPORT_DAY]) == (
        NOTE + " (the local days 2026-03-08 had 23 h and 2026-11-01 had 25 h)")
    assert zone_note("UTC", [REPORT_DAY]) == "" and zone_note("Etc/UTC") == "" and zone_note(None) == ""
    assert zone_note("Not/AZone") == ""


def test_nightly_header_names_the_zone_and_the_25_hour_day(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    paths = render_nightly_report(con, tmp_path, report_date=REPORT_DAY, cluster_timezone=ZONE)
    page = paths.html.read_text()
    assert _subheading(page).endswith(" · " + NOTE + " (the local day 2026-11-01 had 25 h)")
    (sub,) = [line for line in paths.markdown.read_text().splitlines() if line.startswith("Period covered:")]
    assert sub.endswith(" · " + NOTE + " (the local day 2026-11-01 had 25 h)")
    # a day of 24 h: the zone only
    ctx = build_nightly_context(con, report_date=date(2026, 10, 31), cluster_timezone=ZONE)
    assert ctx["meta"]["zone_note"] == NOTE


def test_slo_and_incident_headers_name_the_zone(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    slo = build_slo_context(con, date(2026, 10, 5), date(2026, 11, 3), cluster_timezone=ZONE)
    assert slo["meta"]["zone_note"] == NOTE + " (the local day 2026-11-01 had 25 h)"
    paths = render_incident_report(con, tmp_path, LEAF, cluster_timezone=ZONE)
    assert _subheading(paths.html.read_text()).endswith(
        "links back ACTIVE 2026-11-01 03:12:08 UTC · " + NOTE + " (the local day 2026-11-01 had 25 h)")
    gpu = build_incident_context(con, GPU, cluster_timezone=ZONE)
    assert gpu["meta"]["zone_note"] == NOTE  # 2026-10-31: 24 h


def test_zone_from_the_landing_cluster_yaml(con: duckdb.DuckDBPyConnection, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an explicit zone the report reads timezone of $GPUSRE_LANDING/cluster.yaml (where the Dagster
    definitions read it); a UTC cluster, or no landing, adds nothing."""
    ctx = build_nightly_context(con, report_date=REPORT_DAY)
    assert ctx["meta"]["zone_note"] == ""
    (tmp_path / "cluster.yaml").write_text("cluster: h100-chi\ntimezone: America/Chicago\n", encoding="utf-8")
    monkeypatch.setenv(LANDING_ENV, str(tmp_path))
    assert build_nightly_context(con, report_date=REPORT_DAY)["meta"]["zone_note"] == (
        NOTE + " (the local day 2026-11-01 had 25 h)")
    (tmp_path / "cluster.yaml").write_text("timezone: UTC\n", encoding="utf-8")
    assert build_nightly_context(con, report_date=REPORT_DAY)["meta"]["zone_note"] == ""


# -- 5. the headline baseline leaves out partial days ---------------------------------------------


def test_headline_baseline_is_over_complete_days(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    paths = render_nightly_report(con, tmp_path, report_date=REPORT_DAY)
    text = visible_text(section(paths.html.read_text(), "headline"))
    # 10-30 (data from 19:00 UTC) is partial: the median is 10-31's alone, not of 10-30 and 10-31 (3 jobs)
    assert ("on 2026-11-01 5 GPU jobs ended and 2 of them failed (median of the 1 complete day before: 4 jobs "
            "ended, 1 failed; 1 partial day left out).") in text
    assert "1-day median 4" in text and "1-day median 50.0 %" in text


def test_headline_without_a_complete_day_before_says_so(con: duckdb.DuckDBPyConnection) -> None:
    lead = build_nightly_context(con, report_date=date(2026, 10, 31))["by_key"]["headline"].lead
    assert lead.endswith("on 2026-10-31 4 GPU jobs ended and 1 of them failed (no complete day before it to compare "
                         "with: 1 partial day left out).")
