"""An operator-labelled incident shows one start in every report, with one label (outside probe AK, finding 2).

Probe AK: ``incidents.csv`` ``INC-2041,2026-11-15T05:25:00Z,2026-11-15T07:00:00Z,network_switch,…`` over log
evidence from 05:30:00. ``marts.hw_incidents.start_ts`` is the union of the operator's window and the evidence
(05:25, deliberately: attribution and repairs count from it); the nightly said "at 05:25 UTC", the SLO review
"05:25" — no label — and the retrospective "started 05:30:00 UTC, its first log line". Now every report shows
start_ts and, when the operator's window starts before the first log line, says so with the first line beside it:
"05:25 UTC (operator's window; first log line 05:30)".

Hand landing (UTC cluster gpu[01-04], day 2026-11-15), three operator rows in a spreadsheet's spelling:

========  =====  =============================  ========================  =======================================
operator  node   incidents.csv window           log evidence (Xid)        start shown
========  =====  =============================  ========================  =======================================
INC-7     gpu02  05:25:00Z → 07:00:00Z          79 at 05:30:00            05:25 (operator's window; first log line 05:30)
INC-8     gpu03  08:05:00-06:00 → 09:30:00-06   48 at 14:10:00Z           14:05 (operator's window; first log line 14:10)
INC-9     gpu04  20:10:00+00:00 → 21:00:00+00  79 at 20:00:00, 20:15:00  20:00 (the first log line: no label)
========  =====  =============================  ========================  =======================================
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from pathlib import Path

import pytest
from alertmanager_payloads import webhook_payload
from hand_landing import run_hand_landing

from gpusre.models.warehouse import connect
from gpusre.reports.incident import build_incident_context
from gpusre.reports.nightly import build_nightly_context
from gpusre.reports.slo.report import build_slo_context

D15 = date(2026, 11, 15)
UTC = timezone.utc
XID = "Nov 15 {t} {node} kernel: NVRM: Xid (PCI:0000:18:00): {code}, pid='<unknown>', name=<unknown>, {text}\n"
INCIDENTS = ("ID,Start,End,Component,Root cause,Nodes,Notes\n"
             "INC-7,2026-11-15T05:25:00Z,2026-11-15T07:00:00Z,GPU,GPU fell off the bus,gpu02,paged by DCGM\n"
             "INC-8,2026-11-15T08:05:00-06:00,2026-11-15T09:30:00-06:00,gpu,double-bit ECC error,gpu03,\n"
             "INC-9,2026-11-15T20:10:00+00:00,2026-11-15T21:00:00+00:00,gpu,GPU fell off the bus,gpu04,\n")
EVIDENCE = {"gpu02": XID.format(t="05:30:00", node="gpu02", code=79, text="GPU has fallen off the bus."),
            "gpu03": XID.format(t="14:10:00", node="gpu03", code=48, text="An uncorrectable double bit error (DBE)."),
            "gpu04": XID.format(t="20:00:00", node="gpu04", code=79, text="GPU has fallen off the bus.")
            + XID.format(t="20:15:00", node="gpu04", code=79, text="GPU has fallen off the bus.")}
ALERT = {"alertname": "DCGMXidError", "Hostname": "gpu02", "instance": "gpu02:9400", "severity": "critical"}
LABEL_7 = "(operator's window; first log line 05:30)"
LABEL_8 = "(operator's window; first log line 14:10)"


def _log(node: str) -> str:
    return (f"Nov 15 00:00:01 {node} CRON[1]: (root) CMD (run-parts)\n" + EVIDENCE.get(node, "")
            + f"Nov 15 23:59:59 {node} CRON[2]: (root) CMD (run-parts)\n")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"cluster.yaml": "cluster: t\ntimezone: UTC\nnodes: \"gpu[01-04]\"\ngpus_per_node: 8\n",
             "sacct/sacct_2026-11-15.psv": "JobID|State|ExitCode|Submit|Start|End|Elapsed|AllocTRES|NNodes|NodeList\n"
             "5001|COMPLETED|0:0|2026-11-15T00:00:30|2026-11-15T00:01:00|2026-11-15T23:59:00|23:58:00|gres/gpu=8|1|gpu01\n",
             "incidents.csv": INCIDENTS,
             # DCGM's alert on INC-7's GPU, delivered firing then resolved: its retrospective lists the incident
             "alerts/2026-11-15.jsonl": "".join(json.dumps(webhook_payload(ALERT, *span, "00000000000000a7")) + "\n"
                                                for span in ((datetime(2026, 11, 15, 5, 31, tzinfo=UTC), None),
                                                             (datetime(2026, 11, 15, 5, 31, tzinfo=UTC),
                                                              datetime(2026, 11, 15, 6, 50, tzinfo=UTC)))),
             **{f"syslog/2026-11-15/{n}.log": _log(n) for n in ("gpu01", "gpu02", "gpu03", "gpu04")}}
    return run_hand_landing(tmp_path_factory.mktemp("opstart"), files)


@pytest.fixture
def con(warehouse: Path):  # noqa: ANN201 - DuckDB connection
    c = connect(warehouse, read_only=True)
    yield c
    c.close()


def test_the_mart_keeps_the_union_and_the_repairs_the_first_line(con) -> None:  # noqa: ANN001
    got = con.sql("""SELECT h.operator_id, h.start_ts, r.first_evidence_ts FROM marts.hw_incidents AS h
                     JOIN marts.incident_repairs AS r USING (incident_id) ORDER BY h.start_ts""").fetchall()
    t = lambda h, m: datetime(2026, 11, 15, h, m, tzinfo=UTC)  # noqa: E731
    assert got == [("INC-7", t(5, 25), t(5, 30)), ("INC-8", t(14, 5), t(14, 10)), ("INC-9", t(20, 0), t(20, 0))]


def test_the_nightly_labels_the_operators_start(con) -> None:  # noqa: ANN001
    ctx = build_nightly_context(con, report_date=D15)
    night = ctx["by_key"]["last_night"]
    entries = {e["term"]: e["text"] for e in night.entries}
    # the costliest of three incidents that lost nothing: the earliest (COSTLIEST_ORDER)
    assert f"on gpu02 at 05:25 UTC {LABEL_7}, killed 0 jobs" in entries["Hardware incidents"]
    starts = {r[-1].text: r[0].text for r in night.tables[0].rows}
    assert sorted(starts.values()) == [f"05:25 {LABEL_7}", f"14:05 {LABEL_8}", "20:00"]
    listed = [r[0].text for r in ctx["by_key"]["incidents"].tables[0].rows]
    assert sorted(listed) == [f"2026-11-15 05:25 UTC {LABEL_7}", f"2026-11-15 14:05 UTC {LABEL_8}",
                              "2026-11-15 20:00 UTC"]


def test_the_slo_review_labels_the_operators_start(con) -> None:  # noqa: ANN001
    ctx = build_slo_context(con, D15, D15)
    table = next(i for i in ctx["by_key"]["incidents"].items if hasattr(i, "rows"))
    assert sorted(r[0].text for r in table.rows) == [f"2026-11-15 05:25 UTC {LABEL_7}",
                                                      f"2026-11-15 14:05 UTC {LABEL_8}", "2026-11-15 20:00 UTC"]


def test_the_retrospective_starts_where_the_other_reports_do(con) -> None:  # noqa: ANN001
    ctx = build_incident_context(con, "INC-7", cluster_timezone="UTC")
    assert ctx["meta"]["span"].startswith(
        "started 2026-11-15 05:25:00 UTC (operator's window; first log line 05:30:00) · log evidence at "
        "2026-11-15 05:30:00 UTC · ")
    lead = ctx["by_key"]["summary"].lead
    assert "started 2026-11-15 05:25:00 UTC (operator's window; first log line 05:30:00); " in lead
    assert "started 2026-11-15 05:30:00" not in lead
    card = next(c for c in ctx["by_key"]["summary"].cards if c["label"] == "Started")
    assert (card["value"], card["sub"]) == ("11-15 05:25:00", "UTC · operator's window; first log line 05:30:00")
    # the operator's window opens after the first log line: the start is that line, no label
    ctx = build_incident_context(con, "INC-9", cluster_timezone="UTC")
    assert "started 2026-11-15 20:00:00 UTC, its first log line; " in ctx["by_key"]["summary"].lead
    assert not ctx["meta"]["span"].startswith("started")


def test_an_alert_retrospective_names_the_same_start(con) -> None:  # noqa: ANN001
    (alert_incident,) = con.sql("SELECT incident_id FROM marts.alert_incidents").fetchall()[0]
    ctx = build_incident_context(con, alert_incident, cluster_timezone="UTC")
    (evidence,) = [t for t in ctx["by_key"]["root-cause"].tables if t.columns[0].label == "Evidence"]
    rows = {r[0].text: r[1].title or r[1].text for r in evidence.rows}
    hw = next(v for k, v in rows.items() if k.startswith("Hardware incident inc-"))
    assert "started 2026-11-15 05:25:00 UTC (operator's window; first log line 05:30:00), 1 event" in hw
