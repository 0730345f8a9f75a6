"""Incident retrospective report: rendered from a real warehouse (a small simulation with Alertmanager
payloads written for its faults, through the whole pipeline) for an alert incident and for a hardware
incident; the numbers are checked against the marts, hostile alert text, labels, job names and drain
reasons are escaped, a warehouse without alerts still gives a hardware-incident report, a broken mart only
breaks its section, and CLI errors are one line."""

from __future__ import annotations

import csv
import json
import random
import re
import shutil
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest
from report_html import section, visible_text
import yaml

from gpusre.models.ingest.hostlist import compress_hostlist, expand_hostlist
from gpusre.reports.incident import UnknownIncidentError, find_incident, render_incident_report
from gpusre.reports.nightly import ReportPaths
from gpusre.simulate import SimulationConfig, simulate_cluster
from gpusre.models.warehouse import connect
from gpusre.pipelines.cli import main
from gpusre.pipelines.runner import run_pipeline

# Small and fast (~30 s), with fault rates raised so that alert incidents are linked to hardware incidents
# that killed jobs, and every incident kind of the simulator is there.
CONFIG = SimulationConfig(nodes=40, days=30, seed=11, node_failures_per_1000_node_days=60,
                          fabric_faults_kill_jobs=True, syslog_layout="central", log_lines_per_node_day=20)
XSS = "<script>alert(1)</script>"
EVIL_LABEL = "<img src=x onerror=alert(2)>"
EVIL_JOB = "<b onmouseover=alert(3)>train</b>"
EVIL_REASON = "NHC: <iframe src=//evil> | ok"
SECTIONS = {
    "timeline": "Timeline",
    "root-cause": "Root-cause candidate and evidence",
    "blast-radius": "Blast radius",
    "repair": "Time to detect and repair",
    "alerts": "Alerts",
    "similar": "Similar past incidents",
}


# --------------------------------------------------------------------------------------------
# synthetic alert payloads for the simulator's incidents


def _ts(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def write_alert_payloads(landing: Path, *, seed: int = 3, skip_every: int = 4) -> None:
    """Alertmanager v4 webhook JSON lines in ``landing/alerts/<day>.jsonl`` for the simulator's truth incidents
    (every ``skip_every``-th left without alerts: missing coverage), node drains and memory-pressure noise.
    The first alert of the first covered GPU incident gets the hostile summary and label."""
    rng = random.Random(seed)
    incidents = list(csv.DictReader((landing / "truth" / "incidents.csv").open()))
    states = list(csv.DictReader((landing / "truth" / "node_states.csv").open()))
    cluster = yaml.safe_load((landing / "cluster.yaml").read_text())
    leaf_of = {n: leaf for leaf, hl in (cluster.get("leaf_switches") or {}).items() for n in expand_hostlist(hl)}
    alerts: list[dict[str, Any]] = []

    def add(name: str, labels: dict, start: datetime, end: datetime | None, summary: str, severity: str = "critical",
            description: str = "") -> dict:
        a = {"labels": {"alertname": name, "severity": severity, **labels},
             "annotations": {"summary": summary, **({"description": description} if description else {})},
             "startsAt": start, "endsAt": end}
        alerts.append(a)
        return a

    hostile_done = False
    for k, inc in enumerate(incidents):
        if k % skip_every == skip_every - 1:
            continue
        start, end = _ts(inc["start_ts"]), _ts(inc["end_ts"])
        nodes = expand_hostlist(inc["nodes"]) if inc["nodes"] else []
        short_end = min(end, start + timedelta(hours=2)) + timedelta(minutes=5)
        comp, kind = inc["component"], inc["kind"]
        for i, node in enumerate(nodes):
            at = start + timedelta(seconds=40 + 30 * i)
            dcgm = {"Hostname": node, "instance": f"10.1.0.{i + 1}:9400", "job": "dcgm-exporter", "gpu": str(rng.randrange(8))}
            nodeexp = {"instance": f"{node}:9100", "job": "node-exporter"}
            if comp == "gpu":
                code = kind[3:].split("_")[0]
                name = {"79": "GPUFellOffBus", "48": "GPUDoubleBitECC"}.get(code, "DCGMXidError")
                a = add(name, {**dcgm, "xid": code}, at, short_end, f"GPU {dcgm['gpu']} on {node} reported Xid {code}",
                        description=f"DCGM_FI_DEV_XID_ERRORS={code} on {node}")
                if not hostile_done:
                    a["annotations"]["summary"] = XSS
                    a["labels"] = {"team": EVIL_LABEL, **a["labels"]}
                    hostile_done = True
            elif comp == "nvlink":
                add("NVLinkErrors", dcgm, at, short_end, f"NVLink errors on {node} GPU {dcgm['gpu']}")
            elif comp == "host":
                if kind == "dimm_uncorrectable":
                    add("NodeMemoryECCUncorrectable", nodeexp, at, short_end, f"Uncorrectable memory error on {node}")
                add("NodeDown", nodeexp, at + timedelta(minutes=2), end, f"{node} is unreachable")
            elif comp in ("infiniband", "interconnect_switch"):
                add("InfinibandLinkDown", {**nodeexp, "device": "mlx5_0"}, at, short_end,
                    f"InfiniBand port mlx5_0 down on {node}", "warning")
            elif comp == "storage":
                add("NodeFilesystemMissing", {**nodeexp, "mountpoint": "/lustre", "fstype": "lustre"}, at, short_end,
                    f"/lustre is not mounted on {node}", "warning")
        if comp == "interconnect_switch" and nodes:
            leaf = leaf_of.get(nodes[0], "leaf01")
            add("InfinibandSwitchDown", {"switch": leaf, "instance": f"{leaf}-mgmt:161", "job": "snmp"},
                start + timedelta(seconds=20), short_end, f"Leaf switch {leaf} is down")
        for s in states:
            if s["node"] in nodes and s["cause"] == "fault" and start - timedelta(minutes=5) <= _ts(s["start_ts"]) <= end:
                add("SlurmNodeDrained", {"instance": "slurmctld:8080", "node": s["node"], "job": "slurm-exporter",
                                         "reason": s["reason"]}, _ts(s["start_ts"]) + timedelta(seconds=30),
                    _ts(s["end_ts"]) if s["end_ts"] else None, f"{s['node']} is {s['state']}: {s['reason']}", "warning")
    nodes_all = sorted({s["node"] for s in states})
    t = _ts(incidents[0]["start_ts"]).replace(hour=0, minute=0, second=0)
    stop = _ts(incidents[-1]["start_ts"]) + timedelta(days=1)
    while (t := t + timedelta(hours=rng.expovariate(3 / 24))) < stop:
        node = rng.choice(nodes_all)
        add("HighMemoryLoad", {"instance": f"{node}:9100", "job": "node-exporter"}, t,
            t + timedelta(minutes=rng.randint(10, 60)), f"High memory load on {node}", "warning")
    by_day: dict[str, list[tuple[datetime, str]]] = defaultdict(list)
    for a in alerts:
        fire = {"labels": a["labels"], "annotations": a["annotations"], "startsAt": _iso(a["startsAt"]),
                "endsAt": "0001-01-01T00:00:00Z", "status": "firing"}
        events = [(a["startsAt"], fire)]
        if a["endsAt"] is not None:
            events.append((a["endsAt"], {**fire, "status": "resolved", "endsAt": _iso(a["endsAt"])}))
        for when, alert in events:
            payload = {"version": "4", "status": alert["status"], "receiver": "sre", "groupKey": "{}:{}",
                       "groupLabels": {"alertname": a["labels"]["alertname"]}, "alerts": [alert]}
            by_day[when.date().isoformat()].append((when, json.dumps(payload, separators=(",", ":"))))
    (landing / "alerts").mkdir(parents=True, exist_ok=True)
    for day, lines in by_day.items():
        (landing / "alerts" / f"{day}.jsonl").write_text("".join(f"{x}\n" for _, x in sorted(lines)), encoding="utf-8")


# --------------------------------------------------------------------------------------------
# fixtures and helpers


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("incident")
    simulate_cluster(root / "landing", CONFIG)
    write_alert_payloads(root / "landing")
    run_pipeline(root / "landing", root / "w.duckdb", root / "reports")
    return root / "w.duckdb"


@pytest.fixture
def mart(warehouse: Path):
    con = connect(warehouse, read_only=True)
    yield con
    con.close()


def _render(warehouse: Path, incident_id: str, out: Path) -> tuple[ReportPaths, str, str]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        paths = render_incident_report(con, out, incident_id, warehouse_label=str(warehouse))
    finally:
        con.close()
    return paths, paths.html.read_text(encoding="utf-8"), paths.markdown.read_text(encoding="utf-8")


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> dict[str, Any]:
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    row = cur.fetchone()
    assert row is not None, sql
    return dict(zip(names, row))


@pytest.fixture(scope="module")
def alert_incident(warehouse: Path) -> dict[str, Any]:
    """The costliest alert incident linked to a hardware incident."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return _one(con, """SELECT * FROM marts.alert_incidents WHERE hw_incident_id IS NOT NULL AND n_jobs_killed > 0
                            ORDER BY lost_gpu_hours DESC, n_alerts DESC, incident_id LIMIT 1""")
    finally:
        con.close()


@pytest.fixture(scope="module")
def hw_incident(warehouse: Path) -> dict[str, Any]:
    """The costliest hardware incident that has an earlier one of the same component (similar incidents)."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return _one(con, """SELECT * FROM marts.hw_incidents h WHERE affected_jobs > 0 AND EXISTS (
                                SELECT 1 FROM marts.hw_incidents o WHERE o.component = h.component
                                AND o.start_ts < h.start_ts)
                            ORDER BY lost_gpu_hours DESC, incident_id LIMIT 1""")
    finally:
        con.close()


@pytest.fixture(scope="module")
def alert_report(warehouse: Path, alert_incident: dict[str, Any],
                 tmp_path_factory: pytest.TempPathFactory) -> tuple[ReportPaths, str, str]:
    return _render(warehouse, alert_incident["incident_id"], tmp_path_factory.mktemp("alert-out"))


@pytest.fixture(scope="module")
def hw_report(warehouse: Path, hw_incident: dict[str, Any],
              tmp_path_factory: pytest.TempPathFactory) -> tuple[ReportPaths, str, str]:
    return _render(warehouse, hw_incident["incident_id"], tmp_path_factory.mktemp("hw-out"))


def _lead(fragment: str) -> str:
    m = re.search(r'<p class="lead">(.*?)</p>', fragment, flags=re.S)
    assert m, "no lead sentence"
    return visible_text(m.group(1))


def _tables(fragment: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every table of an HTML fragment: (header texts, body rows of visible cell texts)."""
    out = []
    for table in re.findall(r"<table>(.*?)</table>", fragment, flags=re.S):
        heads = [visible_text(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", table, flags=re.S)]
        rows = [[visible_text(td) for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, flags=re.S)]
                for body in re.findall(r"<tbody>(.*?)</tbody>", table, flags=re.S)
                for tr in re.findall(r"<tr>(.*?)</tr>", body, flags=re.S)]
        out.append((heads, rows))
    return out


def _table(fragment: str, first_header: str) -> list[dict[str, str]]:
    for heads, rows in _tables(fragment):
        if heads and heads[0] == first_header:
            return [dict(zip(heads, r)) for r in rows]
    raise AssertionError(f"no table starting with column {first_header!r}")


def _gpuh(x: float | None) -> str:
    x = x or 0.0
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.1f}"


def _jobs(n: int) -> str:
    return f"{n} job" if n == 1 else f"{n:,} jobs"


def _killed_split(mart: duckdb.DuckDBPyConnection, hw_incident_id: str | list[str]) -> tuple[int, int, int]:
    """(jobs, requeued runs, distinct jobs) attribution gives the hardware incident(s): the jobs' final runs
    (marts.job_failure_attribution) and earlier runs Slurm requeued (marts.instance_failure_attribution)."""
    ids = [hw_incident_id] if isinstance(hw_incident_id, str) else hw_incident_id
    where = f"list_contains({ids!r}, incident_id) AND attribution = 'infrastructure'"
    return mart.sql(f"""SELECT (SELECT count(*) FROM marts.job_failure_attribution WHERE {where}),
                               (SELECT count(*) FROM marts.instance_failure_attribution WHERE {where}),
                               (SELECT count(DISTINCT job_id) FROM (
                                    SELECT job_id FROM marts.job_failure_attribution WHERE {where}
                                    UNION ALL SELECT job_id FROM marts.instance_failure_attribution WHERE {where}))
                    """).fetchall()[0]


def _killed(jobs: int, requeued: int) -> str:
    """'2 jobs', '0 jobs + 1 requeued run': a requeued run Slurm ran again is no killed job (README
    hw_incidents.affected_jobs, "N jobs + M requeued runs")."""
    return _jobs(jobs) + (f" + {requeued} requeued run{'s' if requeued != 1 else ''}" if requeued else "")


def _hours(h: float) -> str:
    s = h * 3600
    return (f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h" if s < 172800
            else f"{s / 86400:.1f} days")


def _at(ts: datetime | None) -> str:
    return "–" if ts is None else ts.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r"<script\b", page, re.I)
    assert not re.search(r"<(link|img|iframe)\b", page, re.I)
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", page, re.I)
    assert refs and all(r.startswith("#") for r in refs), "only in-page references allowed"
    assert "https://" not in page and "http://" not in page.replace("http://www.w3.org/", "")


# --------------------------------------------------------------------------------------------
# an alert incident


def test_alert_incident_report_sections_and_file_names(alert_report: tuple[ReportPaths, str, str],
                                                       alert_incident: dict[str, Any]) -> None:
    paths, page, md = alert_report
    iid = alert_incident["incident_id"]
    assert iid.startswith("ainc-")
    assert paths.html.name == f"incident-{iid}.html" and paths.markdown == paths.html.with_suffix(".md")
    assert not list(paths.html.parent.glob("*.tmp"))
    _self_contained(page)
    assert "Could not be computed" not in page
    for key, title in SECTIONS.items():
        sec = section(page, key)
        assert title in visible_text(sec), key
        assert "No data" not in sec, key
        assert re.search(r"\d", _lead(sec) if key != "timeline" else visible_text(sec)), f"{key}: lead needs numbers"
        assert f"## {title}" in md
    timeline = section(page, "timeline")
    assert "<svg" in timeline and "Alerts" in timeline and "Node events" in timeline
    assert md.startswith(f"# Incident retrospective — {iid}") and paths.html.name in md


def test_alert_incident_numbers_match_the_marts(alert_report: tuple[ReportPaths, str, str],
                                                alert_incident: dict[str, Any], mart: duckdb.DuckDBPyConnection) -> None:
    _, page, md = alert_report
    a = alert_incident
    summary = _lead(section(page, "summary"))
    assert f"{a['n_alerts']} alert" in summary
    # the jobs it killed are those of the hardware incidents it is about (its members' matches) here: the same
    # runs, split into jobs and requeued runs (a requeued run attribution gives them counts, as theirs do)
    about = [r[0] for r in mart.execute("SELECT DISTINCT hw_incident_id FROM marts.alert_incident_members "
                                        "WHERE incident_id = ? AND hw_incident_id IS NOT NULL", [a["incident_id"]]
                                        ).fetchall()]
    jobs, requeued, distinct = _killed_split(mart, about)
    assert (distinct, requeued) == (a["n_jobs_killed"], a["n_runs_requeued"])
    assert f"killed {_killed(jobs, requeued)} and lost {_gpuh(a['lost_gpu_hours'])} GPU-hours" in summary
    assert f"hardware incident {a['hw_incident_id']}" in summary
    assert f"killed {_killed(jobs, requeued)} and lost {_gpuh(a['lost_gpu_hours'])} GPU-hours" in md

    # Root cause: the mart's candidate and reason, the root alert, the linked hardware incident.
    sec = section(page, "root-cause")
    assert _lead(sec).startswith(f"The root-cause candidate is {a['root_cause_candidate']}: {a['root_cause_reason']}")
    evidence = {r["Evidence"]: r["Value"] for r in _table(sec, "Evidence")}
    root = _one(mart, "SELECT alertname, node, target, starts_at FROM core.alerts WHERE alert_id = ?", [a["root_alert_id"]])
    assert evidence["Root alert"].startswith(f"{root['alertname']} on {root['node'] or root['target']} from "
                                             f"{_at(root['starts_at'])} UTC")
    hw = _one(mart, "SELECT * FROM marts.hw_incidents WHERE incident_id = ?", [a["hw_incident_id"]])
    assert f"Hardware incident {a['hw_incident_id']}" in evidence
    assert f"{hw['n_events']} event{'' if hw['n_events'] == 1 else 's'}" in evidence[f"Hardware incident {a['hw_incident_id']}"]

    # Blast radius: the mart's rule, recomputed here.
    last_start = mart.execute("""SELECT max(starts_at) FROM core.alerts JOIN marts.alert_incident_members USING (alert_id)
                                 WHERE incident_id = ?""", [a["incident_id"]]).fetchone()[0]
    # The runs that ended killed on its nodes in the window, and every run (an earlier run Slurm requeued
    # too, whatever state it ended in: REQUEUED) attribution gives to a hardware incident it is about, whenever
    # it ended — what those incidents' affected_jobs count.
    expected = mart.execute("""SELECT job_id, any_value(lost) FROM (
                                 SELECT j.job_id, coalesce(f.lost_gpu_hours, 0) AS lost FROM core.jobs j
                                 LEFT JOIN marts.job_failure_attribution f USING (job_id)
                                 WHERE j.state IN ('FAILED', 'NODE_FAIL') AND len(list_intersect(j.nodes, ?)) > 0
                                   AND j.end_ts BETWEEN ? AND ? AND f.attribution IS DISTINCT FROM 'user'
                                 UNION ALL
                                 SELECT job_id, lost_gpu_hours FROM marts.job_failure_attribution
                                 WHERE list_contains(?, incident_id) AND attribution = 'infrastructure'
                                 UNION ALL
                                 SELECT job_id || '#' || instance_no, lost_gpu_hours FROM marts.instance_failure_attribution
                                 WHERE list_contains(?, incident_id) AND attribution = 'infrastructure')
                               GROUP BY job_id""",
                            [a["nodes"], a["start_ts"] - timedelta(minutes=15), last_start + timedelta(minutes=5),
                             about, about]).fetchall()
    killed_jobs = {x[0].split("#")[0] for x in expected}
    assert len(killed_jobs) == a["n_jobs_killed"] and sum(x[1] for x in expected) == pytest.approx(a["lost_gpu_hours"])
    sec = section(page, "blast-radius")
    rows = _table(sec, "Job")
    counted = {r["Job"].replace(" #", "#") for r in rows if r["Counted"] == "yes"}  # an earlier run: '100231 #1'
    assert counted == {x[0] for x in expected}
    counted = {c.split("#")[0] for c in counted}
    assert sum(float(r["Lost GPU-h"].replace(",", "")) for r in rows if r["Counted"] == "yes") == pytest.approx(
        a["lost_gpu_hours"], abs=0.05 * max(len(counted), 1))
    users = {r[0] for r in mart.execute("SELECT DISTINCT \"user\" FROM core.jobs WHERE list_contains(?, job_id)",
                                        [list(counted)]).fetchall()}
    gpus = mart.execute("SELECT sum(n_gpus) FROM core.jobs WHERE list_contains(?, job_id)", [list(counted)]).fetchone()[0]
    finals = sum(1 for x in expected if "#" not in x[0])
    requeued = f" + {len(expected) - finals} requeued run{'s' if len(expected) - finals != 1 else ''}" if len(
        expected) > finals else ""
    assert f"{_jobs(finals)} killed{requeued} ({gpus:,} GPUs of {len(users)} user" in _lead(sec)
    assert {r["User"] for r in _table(sec, "User")} == users

    # Detection and repair: marts.incident_repairs of the linked hardware incident.
    rep = _one(mart, "SELECT * FROM marts.incident_repairs WHERE incident_id = ?", [a["hw_incident_id"]])
    sec = section(page, "repair")
    row = _table(sec, "Hardware incident")[0]
    assert row["Hardware incident"] == a["hw_incident_id"]
    assert row["Drained (UTC)"] == _at(rep["drain_start_ts"]) and row["Back in service (UTC)"] == _at(rep["back_in_service_ts"])
    if rep["hours_to_detect"] is not None:
        assert row["Detect"] == _hours(rep["hours_to_detect"])
        assert f"drained {_hours(rep['hours_to_detect'])} after the first event" in _lead(sec)
    if rep["hours_to_repair"] is not None:
        assert row["Repair"] == _hours(rep["hours_to_repair"])
    delay = (a["start_ts"] - hw["start_ts"]).total_seconds()
    assert "the first alert fired" in _lead(sec) and ("after" if delay >= 0 else "before") in _lead(sec)

    # Alerts: every member alert, the root marked.
    rows = _table(section(page, "alerts"), "Start (UTC)")
    members = [r for r in rows if r["Role"] != "other"]
    assert len(members) == a["n_alerts"] and sum(r["Role"] == "root" for r in members) == 1


def test_similar_alert_incidents_are_earlier_and_ranked(alert_report: tuple[ReportPaths, str, str],
                                                        alert_incident: dict[str, Any],
                                                        mart: duckdb.DuckDBPyConnection) -> None:
    _, page, _ = alert_report
    sec = section(page, "similar")
    rows = _table(sec, "Incident")
    assert 1 <= len(rows) <= 5
    sims = [float(r["Similarity"]) for r in rows]
    assert sims == sorted(sims, reverse=True)
    a = alert_incident
    for r in rows:
        if r["Kind"] == "alert":
            o = _one(mart, "SELECT * FROM marts.alert_incidents WHERE incident_id = ?", [r["Incident"]])
            t1, t2 = set(a["templates"]), set(o["templates"])
            n1, n2 = set(a["alertnames"]), set(o["alertnames"])
            expected = (len(t1 & t2) / len(t1 | t2) + len(n1 & n2) / len(n1 | n2)) / 2
            assert o["start_ts"] < a["start_ts"] and float(r["Similarity"]) == pytest.approx(expected, abs=0.005 + 1e-9)  # shown to 2 places: 0.125 → 0.12
            assert r["Lost GPU-h"] == f"{o['lost_gpu_hours']:,.1f}"
        else:
            o = _one(mart, "SELECT * FROM marts.hw_incidents WHERE incident_id = ?", [r["Incident"]])
            hw = _one(mart, "SELECT component FROM marts.hw_incidents WHERE incident_id = ?", [a["hw_incident_id"]])
            assert o["component"] == hw["component"] and o["start_ts"] < a["start_ts"]
    best = rows[0]
    assert _lead(sec).split("; the closest is ")[1].startswith(f"{best['Incident']} on ")


# --------------------------------------------------------------------------------------------
# a hardware incident


def test_hw_incident_numbers_match_the_marts(hw_report: tuple[ReportPaths, str, str], hw_incident: dict[str, Any],
                                             mart: duckdb.DuckDBPyConnection) -> None:
    paths, page, md = hw_report
    h = hw_incident
    iid = h["incident_id"]
    assert iid.startswith("inc-") and paths.html.name == f"incident-{iid}.html"
    _self_contained(page)
    assert "Could not be computed" not in page
    for key in ("timeline", "root-cause", "blast-radius", "repair", "similar"):
        assert "No data" not in section(page, key), key
    assert "<svg" in section(page, "timeline")
    summary = _lead(section(page, "summary"))
    assert summary.startswith(f"Hardware incident {iid}, ")
    jobs, requeued, distinct = _killed_split(mart, iid)
    assert distinct == h["affected_jobs"]
    assert f"killed {_killed(jobs, requeued)} and lost {_gpuh(h['lost_gpu_hours'])} GPU-hours" in summary
    assert f"({h['n_events']} events)" in summary

    # Root cause: component, root cause, the first event and its message.
    sec = section(page, "root-cause")
    evidence = {r["Evidence"]: r["Value"] for r in _table(sec, "Evidence")}
    assert f"({h['component']})" in evidence["Component"] and evidence["Root cause"].startswith(h["root_cause"])
    first = _one(mart, "SELECT ts, node, message FROM core.node_events WHERE event_id = ?", [h["first_event_id"]])
    assert evidence["First event"].startswith(f"{_at(first['ts'])} UTC on {first['node']}: ")
    assert first["message"][:60] in evidence["First event"]
    n_member = mart.execute("SELECT count(*) FROM marts.hw_incident_members WHERE incident_id = ?", [iid]).fetchone()[0]
    assert sum(int(r["Count"].replace(",", "")) for r in _table(sec, "Event")) == n_member == h["n_events"]
    # The link to alert incidents, both ways (incident row and member rows).
    linked = {r[0] for r in mart.execute("""SELECT incident_id FROM marts.alert_incidents WHERE hw_incident_id = ?
                                            UNION SELECT incident_id FROM marts.alert_incident_members
                                            WHERE hw_incident_id = ?""", [iid, iid]).fetchall()}
    for aid in linked:
        assert f"Alert incident {aid}" in evidence
    if not linked:
        assert evidence["Alert incident"].startswith("none")

    # Blast radius: exactly the jobs and requeued instances attribution gives to the incident.
    expected = {r[0] for r in mart.execute(
        """SELECT job_id FROM marts.job_failure_attribution WHERE incident_id = ? AND attribution = 'infrastructure'
           UNION ALL
           SELECT job_id || ' #' || instance_no FROM marts.instance_failure_attribution
           WHERE incident_id = ? AND attribution = 'infrastructure'""", [iid, iid]).fetchall()}
    sec = section(page, "blast-radius")
    rows = _table(sec, "Job")
    assert {r["Job"] for r in rows if r["Counted"] == "yes"} == expected
    assert len({label.split(" #")[0] for label in expected}) == h["affected_jobs"]
    gpus = h["affected_gpus"]
    finals = sum(1 for label in expected if " #" not in label)
    requeued = f" + {len(expected) - finals} requeued run{'s' if len(expected) - finals != 1 else ''}" if len(
        expected) > finals else ""
    assert f"{_jobs(finals)} killed{requeued} ({gpus:,} GPUs of " in _lead(sec)
    assert f"and {_gpuh(h['lost_gpu_hours'])} lost GPU-hours" in _lead(sec)
    assert _lead(sec).startswith(f"{len(h['nodes'])} node") and compress_hostlist(h["nodes"])[:30] in _lead(sec)

    # Repair: marts.incident_repairs against marts.repair_times.
    rep = _one(mart, "SELECT * FROM marts.incident_repairs WHERE incident_id = ?", [iid])
    sec = section(page, "repair")
    row = _table(sec, "Hardware incident")[0]
    assert row["Drained (UTC)"] == _at(rep["drain_start_ts"])
    assert row["State"] == (rep["repair_state"] or "–").replace("_", " ")
    if rep["hours_to_repair"] is not None:
        assert row["Repair"] == _hours(rep["hours_to_repair"]) and \
            f"back in service {_hours(rep['hours_to_repair'])} after the first evidence" in _lead(sec)
    # The MTTR compared with is the class's, the row the nightly and SLO reports show.
    times = _one(mart, "SELECT * FROM marts.repair_times WHERE component_class = ?", [h["component_class"]])
    if times["mttr_hours_p50"] is not None and rep["hours_to_repair"] is not None:
        assert f"(median {_hours(times['mttr_hours_p50'])}" in _lead(sec)

    # Timeline: the story in words, in time order, offsets from the first event (a job may die just before it).
    moments = _table(section(page, "timeline"), "Time (UTC)")
    assert [m["Time (UTC)"] for m in moments] == sorted(m["Time (UTC)"] for m in moments)
    first_event = next(m for m in moments if m["What happened"].startswith(f"first event of hardware incident {iid}"))
    assert first_event["From start"] == "+0:00:00" and first_event["Time (UTC)"] == _at(h["start_ts"])
    for job in expected:
        jid, _, instance = job.partition(" #")
        start = f"job {jid} instance #{instance} (" if instance else f"job {job} ("
        assert any(m["What happened"].startswith(start) for m in moments)
    assert f"## Blast radius" in md


def test_similar_hw_incidents_share_the_component(hw_report: tuple[ReportPaths, str, str], hw_incident: dict[str, Any],
                                                  mart: duckdb.DuckDBPyConnection) -> None:
    _, page, _ = hw_report
    sec = section(page, "similar")
    rows = _table(sec, "Incident")
    h = hw_incident
    earlier = mart.execute("SELECT count(*) FROM marts.hw_incidents WHERE component = ? AND start_ts < ?",
                           [h["component"], h["start_ts"]]).fetchone()[0]
    assert earlier, "the simulation should have an earlier incident of the same component"
    sims = [float(r["Similarity"]) for r in rows]
    assert sims == sorted(sims, reverse=True) and len(rows) <= 5
    for r in (r for r in rows if r["Kind"] == "hardware"):
        o = _one(mart, "SELECT * FROM marts.hw_incidents WHERE incident_id = ?", [r["Incident"]])
        a, b = set(h["nodes"]), set(o["nodes"])
        assert o["component"] == h["component"] and o["start_ts"] < h["start_ts"]
        assert float(r["Similarity"]) == pytest.approx(0.5 + 0.5 * len(a & b) / len(a | b), abs=0.005)
        assert r["Lost GPU-h"] == f"{o['lost_gpu_hours']:,.1f}"


def test_hw_incident_report_without_any_alerts(warehouse: Path, hw_incident: dict[str, Any], tmp_path: Path) -> None:
    copy = tmp_path / "no-alerts.duckdb"
    shutil.copy(warehouse, copy)
    con = duckdb.connect(str(copy))
    for table in ("core.alerts", "marts.alert_incidents", "marts.alert_incident_members",
                  "marts.hw_incidents_without_alert"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    con.close()
    _, page, md = _render(copy, hw_incident["incident_id"], tmp_path / "out")
    assert "Could not be computed" not in page
    assert "No data yet: core.alerts has not been built" in visible_text(section(page, "alerts"))
    assert "<svg" in section(page, "timeline")
    rows = _table(section(page, "blast-radius"), "Job")
    assert len({r["Job"].split(" #")[0] for r in rows if r["Counted"] == "yes"}) == hw_incident["affected_jobs"]
    assert "No data yet: core.alerts has not been built" in md
    # The DDL's empty alert tables (a warehouse whose landing never had alerts) read the same way.
    con = duckdb.connect(str(copy))
    con.execute("CREATE TABLE core.alerts AS SELECT 1::BIGINT AS alert_id WHERE false")
    con.close()
    _, page, _ = _render(copy, hw_incident["incident_id"], tmp_path / "out2")
    assert "core.alerts is empty" in visible_text(section(page, "alerts")) and "Could not be computed" not in page


# --------------------------------------------------------------------------------------------
# escaping


def test_hostile_alert_text_labels_job_names_and_drain_reasons_are_escaped(warehouse: Path, tmp_path: Path) -> None:
    copy = tmp_path / "evil.duckdb"
    shutil.copy(warehouse, copy)
    con = duckdb.connect(str(copy))
    iid, node = con.execute("""SELECT m.incident_id, a.node FROM core.alerts a JOIN marts.alert_incident_members m
                               USING (alert_id) WHERE a.summary = ?""", [XSS]).fetchone()
    # A hostile job name on every job of the node around the incident, and a hostile drain reason.
    con.execute("""UPDATE core.jobs SET name = ? WHERE list_contains(nodes, ?) AND end_ts BETWEEN
                   (SELECT start_ts - INTERVAL 1 DAY FROM marts.alert_incidents WHERE incident_id = ?) AND
                   (SELECT end_ts + INTERVAL 1 DAY FROM marts.alert_incidents WHERE incident_id = ?)""",
                [EVIL_JOB, node, iid, iid])
    con.execute("UPDATE core.node_states SET reason = ? WHERE node = ?", [EVIL_REASON, node])
    con.close()
    _, page, md = _render(copy, iid, tmp_path / "out")
    for evil in (XSS, EVIL_LABEL, EVIL_JOB, EVIL_REASON):
        assert evil not in page and evil not in md
    assert not re.search(r"<(script|img|iframe|b)\b", page, re.I)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "team=&lt;img src=x onerror=alert(2)&gt;" in page
    alerts = _table(section(page, "alerts"), "Start (UTC)")
    hostile = next(r for r in alerts if r["Summary"] == XSS)  # shown as text
    assert hostile["Labels"].startswith(f"team={EVIL_LABEL}")
    moments = visible_text(section(page, "timeline"))
    assert EVIL_REASON in moments  # the drain, as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md and "team=&lt;img src=x onerror=alert(2)&gt;" in md
    assert r"NHC: &lt;iframe src=//evil&gt; \| ok" in md  # a table cell cannot be split by the reason's '|'
    blast = _table(section(page, "blast-radius"), "Job")
    assert blast, "the simulation should have the hostile alert's incident kill a job"
    if blast:
        assert any(r["Name"] == EVIL_JOB or r["Name"].startswith("<b onmouseover") for r in blast)
        assert "&lt;b onmouseover=alert(3)&gt;" in page


def test_broken_mart_only_breaks_its_section(warehouse: Path, hw_incident: dict[str, Any], tmp_path: Path) -> None:
    copy = tmp_path / "broken.duckdb"
    shutil.copy(warehouse, copy)
    con = duckdb.connect(str(copy))
    con.execute("CREATE OR REPLACE TABLE marts.incident_repairs AS SELECT 1 AS unexpected")
    con.close()
    _, page, _ = _render(copy, hw_incident["incident_id"], tmp_path / "out")
    assert "Could not be computed" in section(page, "repair")
    for key in ("timeline", "root-cause", "blast-radius", "similar"):
        assert "Could not be computed" not in section(page, key), key
    assert "<svg" in section(page, "timeline")
    assert f"lost {_gpuh(hw_incident['lost_gpu_hours'])} GPU-hours" in _lead(section(page, "summary"))


# --------------------------------------------------------------------------------------------
# finding the incident and the command line


def test_unknown_id_names_the_most_recent_ids(mart: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(UnknownIncidentError) as err:
        find_incident(mart, "ainc-000000000000")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("unknown incident id 'ainc-000000000000'")
    for table in ("alert_incidents", "hw_incidents"):
        recent = [r[0] for r in mart.execute(f"SELECT incident_id FROM marts.{table} ORDER BY start_ts DESC, incident_id "
                                             "LIMIT 5").fetchall()]
        assert len(recent) == 5 and ", ".join(recent) in msg
    blank = duckdb.connect(":memory:")
    with pytest.raises(UnknownIncidentError, match="recent alert incidents: none; recent hardware incidents: none"):
        find_incident(blank, "inc-1")


def test_cli_writes_the_report(warehouse: Path, hw_incident: dict[str, Any], tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    iid = hw_incident["incident_id"]
    rc = main(["report", "incident", iid, "--warehouse", str(warehouse), "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    written = [Path(p) for p in out.split()]
    assert [p.name for p in written] == [f"incident-{iid}.html", f"incident-{iid}.md"]
    assert all(p.is_file() for p in written)


def test_cli_unknown_id_is_a_one_line_error(warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            mart: duckdb.DuckDBPyConnection) -> None:
    rc = main(["report", "incident", "inc-nope", "--warehouse", str(warehouse), "--out", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert rc != 0 and out == "" and "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("gpusre: error: unknown incident id 'inc-nope'")
    newest = mart.execute("SELECT incident_id FROM marts.alert_incidents ORDER BY start_ts DESC, incident_id LIMIT 1").fetchone()[0]
    assert f"recent alert incidents: {newest}, " in err and "recent hardware incidents: inc-" in err
    assert not (tmp_path / "o").exists()


def test_cli_missing_warehouse_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["report", "incident", "inc-1", "--warehouse", str(tmp_path / "nope.duckdb"), "--out", str(tmp_path / "o")])
    _, err = capsys.readouterr()
    assert rc == 1
    assert err.count("\n") == 1 and "nope.duckdb" in err and "does not exist" in err and "Traceback" not in err
    assert not (tmp_path / "nope.duckdb").exists() and not (tmp_path / "o").exists()


def test_cli_finds_a_hardware_incident_by_its_operator_id(warehouse: Path, hw_incident: dict[str, Any], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Tickets quote the operator's id of incidents.csv (OPS-9): the report resolves it to the incident and
    names the file by the incident id (found by a probe: ``gpusre report incident OPS-1`` was refused)."""
    copy = tmp_path / "wh"
    copy.mkdir()
    for f in warehouse.parent.glob(f"{warehouse.stem}*.duckdb"):
        shutil.copy(f, copy / f.name)
    iid = hw_incident["incident_id"]
    for f in copy.glob("*.duckdb"):
        con = duckdb.connect(str(f))
        try:
            if con.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'marts' "
                           "AND table_name = 'hw_incidents' AND table_type = 'BASE TABLE'").fetchall()[0][0]:
                con.execute("UPDATE marts.hw_incidents SET operator_id = 'OPS-9', label_source = 'operator' "
                            "WHERE incident_id = ?", [iid])
        finally:
            con.close()
    rc = main(["report", "incident", "OPS-9", "--warehouse", str(copy / warehouse.name), "--out", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert [Path(p).name for p in out.split()] == [f"incident-{iid}.html", f"incident-{iid}.md"]
    rc = main(["report", "incident", "OPS-10", "--warehouse", str(copy / warehouse.name), "--out", str(tmp_path / "x")])
    assert rc != 0 and "nor an operator id" in capsys.readouterr().err
