"""Nightly report: renders from a real DuckDB warehouse file, is self-contained and escapes input."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

from gpusre.reports.kit.charts import safe_label, top_consumers_chart
from gpusre.reports.kit.formatting import fmt_date, fmt_duration, fmt_int, fmt_pct, md_escape
from gpusre.models.report_marts import build_report_marts
from gpusre.models.vocabulary import FAILED_STATES
from gpusre.models.warehouse import apply_ddl
from gpusre.reports.nightly import ReportPaths
from gpusre.reports.nightly import render_nightly_report as _render_nightly


def render_nightly_report(con: duckdb.DuckDBPyConnection, out_dir: Path, **kwargs) -> ReportPaths:
    """What a run does: the report marts are built from the (hand-made) marts, then the report renders."""
    build_report_marts(con)
    return _render_nightly(con, out_dir, **kwargs)

XSS = "<script>alert(1)</script>"
EVIL_USER = "<script>bob</script>"
REPORT_DAY = date(2026, 10, 31)

FINDINGS = [
    (1, "Cancelled jobs dominate", "Cancelled jobs consumed 41.2 % of GPU time in 2026-08 … 2026-10.",
     "share_gpu_hours_cancelled", 0.412, True),
    (2, "Failures are cheap", "Failed jobs used 0.3 % of GPU-hours.", "share_gpu_hours_failed", 0.003, True),
    (3, "Large jobs are rising", "The >1024 GPU bucket shows no significant trend.", "slope_pp", 0.1, False),
    (4, "Queue wait grows with size", "p50 queue wait rises from 2.0 min (1 GPU) to 95.0 min (>1024).",
     "ratio", 47.5, True),
]
SECTION_TITLES = [
    "Headline", "Findings", "GPU-hours by job state", "Job size: share of jobs vs share of GPU-hours",
    "Runtime tail by job size", "Monthly shift in job size", "Utilization", "Queue wait by job size",
    "Top users and accounts", "Last night&#39;s job failures", "Why jobs failed", "Failure taxonomy",
    "Top incidents by lost GPU-hours", "Suspect nodes", "New log templates", "Data quality",
]
XSS_TEMPLATE = "<script>alert(2)</script> rogue <*>"
FAILURE_MARTS = ("job_failure_attribution", "failure_taxonomy", "hw_incidents", "suspect_nodes", "log_templates",
                 "node_events")


def _ddl(con: duckdb.DuckDBPyConnection) -> None:
    apply_ddl(con)  # the vocabulary macros, then sql/ddl/*.sql


def _job(job_id: str, state: str, n_gpus: int, elapsed_s: int, end: datetime, *, user: str = "alice",
         name: str = "train", exit_code: int = 0) -> tuple:
    bucket = ("1" if n_gpus == 1 else "2-8" if n_gpus <= 8 else "9-64" if n_gpus <= 64 else "65-256"
              if n_gpus <= 256 else "257-1024" if n_gpus <= 1024 else ">1024")
    start = end - timedelta(seconds=elapsed_s)
    return (job_id, name, user, "acct-ml", state, exit_code, start - timedelta(minutes=5), start, end, elapsed_s,
            300, n_gpus, bucket, n_gpus * elapsed_s / 3600, end.date(), "sacct/x.psv", 2)


def _core_and_raw(con: duckdb.DuckDBPyConnection) -> None:
    night = datetime(2026, 10, 31, 3, 0, tzinfo=timezone.utc)
    jobs = [
        _job("100", "COMPLETED", 8, 7200, datetime(2026, 8, 3, 12, tzinfo=timezone.utc)),
        _job("101", "CANCELLED", 64, 3600, datetime(2026, 9, 10, 12, tzinfo=timezone.utc)),
        _job("200", "FAILED", 512, 5400, night, user=EVIL_USER, name=XSS, exit_code=1),
        _job("201", "NODE_FAIL", 16, 1800, night, name="pretrain-7b"),
        _job("202", "COMPLETED", 1, 600, night),
        _job("203", "TIMEOUT", 2, 86400 + 3723, night, name="long-eval"),
    ]
    con.executemany(
        """INSERT INTO core.jobs (job_id, name, "user", account, state, exit_code, submit_ts, start_ts, end_ts,
               elapsed_s, queue_wait_s, n_gpus, size_bucket, gpu_hours, end_day, source_file, line_no, restarts)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)""",
        jobs,
    )
    ts = datetime(2026, 10, 31, 5, 0, tzinfo=timezone.utc)
    con.executemany(
        "INSERT INTO raw.ingested_files (source_file, source_kind, sha256, size_bytes, rows_read, rows_loaded, rows_rejected, status, error, ingested_at) VALUES (?, 'sacct', 'abc', 100, ?, ?, ?, ?, ?, ?)",
        [("sacct/sacct_2026-10-30.psv", 1200, 1198, 2, "loaded", None, ts - timedelta(days=1)),
         ("sacct/<evil>.psv", 0, 0, 0, "refused", "fixed-width output", ts - timedelta(days=1)),
         ("sacct/sacct_2026-10-31.psv", 1500, 1497, 3, "loaded", None, ts)],
    )
    con.executemany(
        "INSERT INTO raw.rejects VALUES (?, 'sacct', ?, ?, ?, ?)",
        [("sacct/sacct_2026-10-31.psv", 17, "17|broken", "bad <b>timestamp</b> 'x'", ts),
         ("sacct/<evil>.psv", 0, None, "fixed-width output refused", ts - timedelta(days=1))],
    )


def _marts(con: duckdb.DuckDBPyConnection, skip: frozenset[str] = frozenset()) -> None:
    stmts = {
        "job_usage_daily": """CREATE TABLE marts.job_usage_daily AS SELECT * FROM (VALUES
            (DATE '2026-10-30', 'COMPLETED', '2-8', 2, 10, 10, 120.0), (DATE '2026-10-30', 'CANCELLED', '9-64', 3, 2, 2, 300.0),
            (DATE '2026-10-31', 'FAILED', '257-1024', 5, 1, 1, 768.0), (DATE '2026-10-31', 'COMPLETED', '1', 1, 1, 1, 0.2),
            (DATE '2026-10-31', 'NODE_FAIL', '9-64', 3, 1, 1, 8.0), (DATE '2026-10-31', 'TIMEOUT', '2-8', 2, 1, 1, 50.1))
            t(day, state, size_bucket, bucket_order, jobs, runs, gpu_hours)""",
        "utilization_daily": """CREATE TABLE marts.utilization_daily AS
            SELECT DATE '2026-10-01' + i::INTEGER AS day, 19200.0 AS capacity_gpu_hours,
                   19200.0 * (0.6 + 0.01 * i) AS allocated_gpu_hours, 0.6 + 0.01 * i AS utilization,
                   100 + i AS jobs_running, false AS partial
            FROM range(31) r(i)""",
        "gpu_time_by_state": """CREATE TABLE marts.gpu_time_by_state AS SELECT * FROM (VALUES
            ('all', 'all', 'COMPLETED', 900, 900, 5580.0, 0.75, 0.555),
            ('all', 'all', 'CANCELLED', 280, 280, 4142.3, 0.235, 0.412),
            ('all', 'all', 'FAILED', 15, 15, 30.2, 0.015, 0.003),
            ('all', 'all', 'TIMEOUT', 5, 5, 301.5, 0.0042, 0.030),
            ('month', '2026-08', 'COMPLETED', 300, 300, 2000.0, 0.7, 0.6),
            ('month', '2026-10', 'COMPLETED', 300, 300, 2000.0, 0.7, 0.6))
            t(period_type, period, state, jobs, runs, gpu_hours, share_jobs, share_gpu_hours)""",
        "size_buckets": """CREATE TABLE marts.size_buckets AS SELECT * FROM (VALUES
            ('all', 'all', '1', 1, 700, 100.0, 0.583, 0.01), ('all', 'all', '2-8', 2, 300, 900.0, 0.25, 0.09),
            ('all', 'all', '9-64', 3, 150, 2000.0, 0.125, 0.2), ('all', 'all', '257-1024', 5, 50, 7000.0, 0.042, 0.7),
            ('month', '2026-08', '1', 1, 300, 50.0, 0.6, 0.2), ('month', '2026-08', '257-1024', 5, 10, 200.0, 0.4, 0.8),
            ('month', '2026-09', '1', 1, 300, 50.0, 0.6, 0.1), ('month', '2026-09', '257-1024', 5, 10, 450.0, 0.4, 0.9))
            t(period_type, period, size_bucket, bucket_order, jobs, gpu_hours, share_jobs, share_gpu_hours)""",
        "runtime_quantiles": """CREATE TABLE marts.runtime_quantiles AS SELECT * FROM (VALUES
            ('1', 1, 700, 0.25, 2.0, 10.5, 48.0, 0.8), ('257-1024', 5, 50, 6.0, 20.0, 47.5, 72.0, 9.1),
            ('all', 99, 750, 0.5, 4.0, 23.25, 72.0, 1.4))
            t(size_bucket, bucket_order, jobs, p50_h, p90_h, p99_h, max_h, mean_h)""",
        "queue_wait_quantiles": """CREATE TABLE marts.queue_wait_quantiles AS SELECT * FROM (VALUES
            ('1', 1, 700, 2.0, 10.0, 60.0, 300.0, 5.5), ('257-1024', 5, 50, 95.0, 600.0, 1440.0, 2880.0, 200.0))
            t(size_bucket, bucket_order, jobs, p50_min, p90_min, p99_min, max_min, mean_min)""",
        "top_consumers": f"""CREATE TABLE marts.top_consumers AS SELECT * FROM (VALUES
            ('user', 1, '{EVIL_USER}', 40, 7000.0, 0.7), ('user', 2, 'carol', 900, 1234567.8, 0.2),
            ('account', 1, 'acct-ml', 940, 9000.0, 0.9))
            t(kind, rank, name, jobs, gpu_hours, share_gpu_hours)""",
        "size_share_trend": """CREATE TABLE marts.size_share_trend AS SELECT * FROM (VALUES
            ('month', '1', 1, 3, 0.2, 0.05, -0.075, -0.1, -0.05, 0.004, -1.0, 0.01, 'falling'),
            ('month', '257-1024', 5, 3, 0.8, 0.95, 0.075, 0.05, 0.1, 0.004, 1.0, 0.01, 'rising'),
            ('month', '>1024', 6, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'insufficient data'))
            t(granularity, size_bucket, bucket_order, n_periods, first_share, last_share, slope_per_period,
              slope_ci_low, slope_ci_high, p_value, kendall_tau, kendall_p, direction)""",
        "findings": "CREATE TABLE marts.findings (finding_id INTEGER, title VARCHAR, statement VARCHAR, "
                    "metric VARCHAR, value DOUBLE, supported BOOLEAN)",
    }
    for name, sql in stmts.items():
        if name not in skip:
            con.execute(sql)
    if "findings" not in skip:
        con.executemany("INSERT INTO marts.findings VALUES (?, ?, ?, ?, ?, ?)", FINDINGS)


def _failure_marts(con: duckdb.DuckDBPyConnection, skip: frozenset[str] = frozenset()) -> None:
    """Hand-made node-log failure marts: 8 failed jobs (3 infrastructure), 3 incidents, 2 suspect nodes."""
    stmts = {
        # 2 infrastructure + 1 user failure on the report day; 2,048 + 256 + 8 = 2,312 GPU-h lost in all.
        "job_failure_attribution": """CREATE TABLE marts.job_failure_attribution AS SELECT * FROM (VALUES
            ('200', 'FAILED', TIMESTAMPTZ '2026-10-31 03:00:00+00', 512, 'infrastructure', 'failure event in window',
             'gpu_compute', 'hardware', 'inc-aaa', [11, 12]::BIGINT[], 256.0),
            ('201', 'NODE_FAIL', TIMESTAMPTZ '2026-10-31 03:00:00+00', 16, 'infrastructure',
             'node failure without evidence', 'unknown (suspected)', 'unknown', NULL, []::BIGINT[], 8.0),
            ('150', 'NODE_FAIL', TIMESTAMPTZ '2026-10-12 01:30:00+00', 4096, 'infrastructure',
             'incident covers job end', 'network_switch', 'hardware', 'inc-bbb', [13]::BIGINT[], 2048.0),
            ('203', 'TIMEOUT', TIMESTAMPTZ '2026-10-31 03:00:00+00', 2, 'user', 'job limit (memory/time)',
             'user_application', 'user_application', NULL, []::BIGINT[], 0.0),
            ('120', 'FAILED', TIMESTAMPTZ '2026-10-02 10:00:00+00', 8, 'user', 'non-zero exit', 'user_application',
             'user_application', NULL, []::BIGINT[], 0.0),
            ('121', 'OUT_OF_MEMORY', TIMESTAMPTZ '2026-10-03 10:00:00+00', 8, 'user', 'job limit (memory/time)',
             'host_memory', 'user_application', NULL, []::BIGINT[], 0.0),
            ('122', 'FAILED', TIMESTAMPTZ '2026-10-04 10:00:00+00', 8, 'user', 'non-zero exit', 'user_application',
             'user_application', NULL, []::BIGINT[], 0.0),
            ('130', 'CANCELLED', TIMESTAMPTZ '2026-10-05 10:00:00+00', 8, 'unknown',
             'cancelled by system without evidence', NULL, NULL, NULL, []::BIGINT[], 0.0))
            t(job_id, state, end_ts, n_gpus, attribution, rule, component, cause_class, incident_id,
              evidence_event_ids, lost_gpu_hours)""",
        "failure_taxonomy": """CREATE TABLE marts.failure_taxonomy AS SELECT * FROM (VALUES
            ('all', 'all', 'gpu_compute', 'hardware', 9, 40, 1, 256.0),
            ('all', 'all', 'nvlink', 'hardware', 2, 10, 0, 0.0),
            ('all', 'all', 'nvswitch', 'hardware', 1, 3, 0, 0.0),
            ('all', 'all', 'network_switch', 'hardware', 5, 300, 1, 2048.0),
            ('all', 'all', 'storage', 'system_software', 1, 12, 0, 0.0),
            ('all', 'all', 'unknown (suspected)', 'unknown', 0, 0, 1, 8.0),
            ('month', '2026-09', 'gpu_compute', 'hardware', 4, 20, 0, 0.0),
            ('month', '2026-10', 'gpu_compute', 'hardware', 5, 20, 1, 256.0))
            t(period_type, period, component, cause_class, incidents, events, affected_jobs, lost_gpu_hours)""",
        "hw_incidents": """CREATE TABLE marts.hw_incidents AS SELECT * FROM (VALUES
            ('inc-bbb', 'network_switch', 'hardware', 'high', 'CHECK_LINK', TIMESTAMPTZ '2026-10-12 01:00:00+00',
             TIMESTAMPTZ '2026-10-12 02:00:00+00', (SELECT list('gpu' || lpad(i::VARCHAR, 3, '0') ORDER BY i)
                                                     FROM range(1, 33) r(i)),
             []::VARCHAR[], 300, 'leaf_switch', 'leaf01', 'events', 'ib_link_down', NULL, NULL, 1, 4096, 2048.0, 32,
             TIMESTAMPTZ '2026-10-12 07:30:00+00', 5.5),
            ('inc-aaa', 'gpu_compute', 'hardware', 'critical', 'RESTART_BM', TIMESTAMPTZ '2026-10-31 02:50:00+00',
             TIMESTAMPTZ '2026-10-31 03:05:00+00', ['gpu017'], ['0000:10:00.0'], 4, 'node', NULL, 'operator',
             'bad HBM <b>stack</b>', 'OPS-7', 'RMA opened', 1, 512, 256.0, 0, NULL, NULL),
            ('inc-ccc', 'storage', 'system_software', 'high', 'CHECK_STORAGE', TIMESTAMPTZ '2026-10-20 09:00:00+00',
             TIMESTAMPTZ '2026-10-20 09:20:00+00', ['gpu001', 'gpu002', 'gpu005'], []::VARCHAR[], 12, 'cluster',
             NULL, 'events', 'lustre_error', NULL, NULL, 0, 0, 0.0, 3, TIMESTAMPTZ '2026-10-20 10:20:00+00', 1.0))
            t(incident_id, component, cause_class, severity, action, start_ts, end_ts, nodes, gpus, n_events, scope,
              leaf_switch, label_source, root_cause, operator_id, notes, affected_jobs, affected_gpus,
              lost_gpu_hours, nodes_recovered, recovered_ts, hours_to_recovery)""",
        "suspect_nodes": """CREATE TABLE marts.suspect_nodes AS SELECT * FROM (VALUES
            ('gpu017', 9, 12, 5, 6, 1, 0, 6.0, 'hw_episodes 6 vs fleet median 0 (z 6.0)', 'xid 48',
             'CONTACT_SUPPORT', 'drain, RMA'),
            ('gpu033', 0, 0, 0, 0, 4, 1, 4.0, 'infra_failure_episodes 4 vs fleet median 0 (z 4.0)', NULL, NULL, 'drain'))
            t(node, xid_events, hw_events, xid_episodes, hw_episodes, infra_failed_jobs, node_fail_jobs, score,
              reason, worst_event, action, recommended_action)""",
        "log_templates": f"""CREATE TABLE core.log_templates AS SELECT * FROM (VALUES
            (101, 'NVRM: Xid (PCI:<*>): <NUM>, pid=<*>', 'NVRM: Xid (PCI:0000:10:00): 48, pid=77', 40, 3,
             TIMESTAMPTZ '2026-10-31 01:00:00+00', TIMESTAMPTZ '2026-10-31 04:00:00+00',
             TIMESTAMPTZ '2026-10-31 05:00:00+00', true, 'xid'),
            (102, '{XSS_TEMPLATE}', 'x', 7, 1, TIMESTAMPTZ '2026-10-31 02:00:00+00',
             TIMESTAMPTZ '2026-10-31 02:00:00+00', TIMESTAMPTZ '2026-10-31 05:00:00+00', false, NULL),
            (103, 'sshd: Accepted publickey for <*>', 'x', 9000, 40, TIMESTAMPTZ '2026-08-03 00:00:00+00',
             TIMESTAMPTZ '2026-10-31 04:00:00+00', TIMESTAMPTZ '2026-10-30 05:00:00+00', false, NULL))
            t(template_id, template, example, lines, nodes, first_seen_ts, last_seen_ts, first_ingested_at,
              has_event, kind)""",
        "node_events": """CREATE OR REPLACE TABLE core.node_events AS SELECT 11::BIGINT AS event_id,
            TIMESTAMPTZ '2026-10-31 02:55:00+00' AS ts, 'gpu017' AS node, 'xid' AS kind, 48 AS code,
            'gpu_memory' AS component, 'hardware' AS cause_class, 'critical' AS severity, 'CONTACT_SUPPORT' AS action,
            'NVRM: Xid (PCI:0000:10:00): 48' AS message""",
    }
    for name, sql in stmts.items():
        if name not in skip:
            con.execute(sql)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[ReportPaths, str, str]:
    # Rendering draws ~8 charts; build and render once for all read-only assertions on the output.
    tmp = tmp_path_factory.mktemp("wh")
    con = duckdb.connect(str(tmp / "wh.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _marts(con)
    _failure_marts(con)
    paths = render_nightly_report(con, tmp / "out", report_date=date(2026, 10, 31), warehouse_label="wh.duckdb")
    con.close()
    return paths, paths.html.read_text(encoding="utf-8"), paths.markdown.read_text(encoding="utf-8")


def _visible_text(html: str) -> str:
    # Sentences glue numbers to units with no-break spaces; compare them as plain spaces.
    text = re.sub(r"<[^>]+>", " ", re.sub(r"<svg.*?</svg>", " ", html, flags=re.S))
    return re.sub(r"\s+", " ", text.replace("\u00a0", " "))


def test_writes_dated_files_for_latest_end_day(report: tuple[ReportPaths, str, str]) -> None:
    paths, html, md = report
    assert paths.html.name == "nightly-2026-10-31.html" and paths.html.parent.name == "out"
    assert paths.markdown == paths.html.with_suffix(".md")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert not list(paths.html.parent.glob("*.tmp"))
    assert "wh.duckdb" in html and "Data provenance" in html  # footer
    assert "41.2\u00a0%" in html  # lead sentences never wrap between number and unit


def test_html_is_self_contained(report: tuple[ReportPaths, str, str]) -> None:
    _, html, _ = report
    assert "http://" not in html.replace("http://www.w3.org/", "")  # SVG namespace URIs are not fetched
    assert "https://" not in html
    assert not re.search(r"<script\b", html, re.I)
    assert not re.search(r"<(link|img|iframe)\b", html, re.I)
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", html, re.I) + re.findall(r"url\(([^)]*)\)", html)
    assert refs and all(r.startswith("#") for r in refs), "only in-page references allowed"
    assert html.count("<svg") >= 9  # state, daily, size, runtime, monthly, util, queue, top users, lost GPU-h
    assert "@import" not in html


def test_sections_and_formatted_numbers(report: tuple[ReportPaths, str, str]) -> None:
    _, html, _ = report
    for title in SECTION_TITLES:
        assert title in html, title
    text = _visible_text(html)
    # Lead sentence of the state section, computed from the marts rows.
    assert "Completed runs consumed 55.5 % of GPU time in 2026-08-03 … 2026-10-31" in text
    assert "cancelled runs 41.2 %" in text
    # marts.job_totals over job_usage_daily: 826.1 of 1,246.4 GPU-hours ended in a failure state
    assert f"runs that failed ({', '.join(FAILED_STATES)}) 66.3 %" in text
    assert "1,234,567.8" in text  # thousands separators in tables
    assert "Rejects, last ingestion" in text and "of 1,500 rows in 1 file" in text
    # Headline: 4 of the 6 jobs ended on the report day, 3 of them in failure states.
    assert "on 2026-10-31 4 GPU jobs ended and 3 of them failed" in text
    # Compared with the median of the 7 days before (2026-10-24 … 10-30): no job ended on any of
    # them; utilization 0.6 + 0.01 * i for i = 23 … 29, median 0.86.
    # the days before that marts.job_totals covers: the hand-made job_usage_daily starts on 2026-10-30
    assert "(median of the 1 day before: 12 jobs ended, 0 failed)" in text
    assert "allocated / capacity GPU-hours · 7-day median 86.0 %" in text
    assert "FAILED 1, NODE_FAIL 1, TIMEOUT 1 ·" in text
    # Mean utilization is capacity-weighted: (0.6 + 0.01 * mean(0..30)) = 0.75.
    assert "mean utilization was 75.0 % over the 31 complete days 2026-10-01 … 2026-10-31" in text
    # Trend table in percentage points; last night's failure table with Slurm-style elapsed time.
    assert "+7.50 pp" in text and "falling" in text and "insufficient data" in text
    assert "1-01:02:03" in text and "1:0" in text
    # Numeric cells are right-aligned.
    assert re.search(r'<td class="num">\s*55\.5 %</td>', html)


def test_failures_section_orders_by_gpu_hours(report: tuple[ReportPaths, str, str]) -> None:
    _, html, _ = report
    sec = _section(html, "failures")
    ids = re.findall(r'<td class=" mono">(\d{3})</td>', sec)
    # The infrastructure's failures first, by lost GPU-hours (200: 256, 201: 8), then the user's TIMEOUT 203
    # (50.1 GPU-hours, more than 201's 8): by size alone a routine TIMEOUT came before a NODE_FAIL. The
    # COMPLETED job is excluded.
    assert ids == ["200", "201", "203"]
    text = _visible_text(sec)
    assert "3 GPU jobs ended in a failure state on 2026-10-31" in text
    assert "the largest job was 200 (FAILED, 768.0 GPU-hours)" in text
    assert "FAILED 1:0 Infrastructure 768.0 256.0" in text and "NODE_FAIL 0:0 Infrastructure 8.0 8.0" in text
    assert "TIMEOUT 0:0 User 50.1 –" in text


def _section(html: str, key: str) -> str:
    start = html.index(f'<section id="{key}">')
    return html[start: html.index("</section>", start)]


def test_why_jobs_failed(report: tuple[ReportPaths, str, str]) -> None:
    _, html, md = report
    sec = _section(html, "attribution")
    text = _visible_text(sec)
    assert ("Of 8 failed jobs in 2026-08-03 … 2026-10-31 (failed, timed out, out of memory, node failure, "
            "requeued, or cancelled by an administrator), 3 were infrastructure (2,312 GPU-h lost), 4 user and "
            "1 unknown; on 2026-10-31, of 3, 2 were infrastructure (264 GPU-h lost), 1 user and 0 unknown.") in text
    # Attribution × state cross-tab: failure states first, then the others; Total row.
    assert "Attribution FAILED NODE_FAIL TIMEOUT OUT_OF_MEMORY CANCELLED Jobs Share Lost GPU-hours" in text
    assert "Infrastructure 1 2 – – – 3 37.5 % 2,312.0" in text
    assert "User 2 – 1 1 – 4 50.0 % 0.0" in text and "Unknown – – – – 1 1 12.5 % 0.0" in text
    assert "Total 3 2 1 1 1 8 100.0 % 2,312.0" in text
    # Last night's infrastructure-failed jobs, by lost GPU-hours, with friendly component labels.
    assert re.findall(r'<td class=" mono">(\d{3})</td>', sec) == ["200", "201"]
    assert "200 2026-10-31 03:00 UTC FAILED 512 GPU hardware inc-aaa 2 log events 256.0" in text
    # (This mart predates evidence_node_state: the column reads as NULL.)
    assert "Unknown (suspected NODE_FAIL) unknown none (node failure without evidence) – 8.0" in text
    assert "150" not in text  # failed on another day
    # Markdown: the lead, the cross-tab and the KPI cards.
    assert ("Of 8 failed jobs in 2026-08-03 … 2026-10-31 (failed, timed out, out of memory, node failure, "
            "requeued, or cancelled by an administrator), 3 were infrastructure (2,312 GPU-h lost)") in md
    assert "| Total | 3 | 2 | 1 | 1 | 1 | 8 | 100.0 % | 2,312.0 |" in md
    assert "- **Infra failures 2026-10-31:** 2 (264 GPU-h lost · 2 of 3 failed jobs)" in md
    assert "- **Infra failures, whole period:** 3 (2,312 GPU-h lost · 3 of 8 failed jobs)" in md
    assert "- **Hardware incidents:** 3 (whole period · 1 began 2026-10-31)" in md
    assert "- **Suspect nodes:** 2 (gpu[017,033])" in md
    cards = _visible_text(html[html.index('class="cards"'): html.index('id="findings"')])
    assert "Infra failures 2026-10-31 2 264 GPU-h lost · 2 of 3 failed jobs" in cards


def test_failure_taxonomy(report: tuple[ReportPaths, str, str]) -> None:
    _, html, md = report
    sec = _section(html, "taxonomy")
    text = _visible_text(sec)
    assert ("In 2026-09 … 2026-10 there were 18 incidents — GPU 9, Interconnect switch 5, NVLink/NVSwitch 3, "
            "Storage 1 — and 3 infrastructure-failed jobs, costing 2,312 GPU-hours; the most work was lost to "
            "Interconnect switch (2,048 GPU-h, 88.6 % of the 2,312 GPU-h lost to the infrastructure).") in text
    # One row per friendly component (nvlink + nvswitch merged), by lost GPU-hours; a total row.
    assert "Interconnect switch hardware 5 300 1 2,048.0 88.6 %" in text
    assert "GPU hardware 9 40 1 256.0 11.1 %" in text
    assert "Unknown (suspected NODE_FAIL) unknown 0 0 1 8.0 0.3 %" in text
    assert "NVLink/NVSwitch hardware 3 13 0 0.0 0.0 %" in text
    assert "Total 18 365 3 2,312.0 100.0 %" in text
    assert "network_switch" not in text and "nvswitch" not in text
    # Horizontal bar chart of lost GPU-hours (components with a loss only), labels in the SVG.
    svg = sec[sec.index("<svg"): sec.index("</svg>")]
    assert "Lost GPU-hours by component" in svg and "Interconnect switch" in svg and "2,048.0 (89 %)" in svg
    assert "Storage" not in svg
    assert "| Interconnect switch | hardware | 5 | 300 | 1 | 2,048.0 | 88.6 % |" in md


def test_top_incidents(report: tuple[ReportPaths, str, str]) -> None:
    _, html, md = report
    sec = _section(html, "incidents")
    text = _visible_text(sec)
    assert ("The top 3 of 3 incidents lost 2,304 GPU-hours (100.0 % of all incident losses); the costliest, "
            "Interconnect switch under leaf01 from 2026-10-12 01:00 UTC, killed 1 job and lost 2,048 GPU-hours; "
            "on the nodes of 1 incident no job started after the incident has completed yet.") in text
    assert re.findall(r'<td class=" mono nowrap">(inc-\w+)</td>', sec) == ["inc-bbb", "inc-aaa", "inc-ccc"]
    # Compressed hostlists, operator label marked (and escaped), recovery time or how far recovery got.
    assert "ib_link_down gpu[001-032] 300 1 2,048.0 5.5 h" in text
    assert "bad HBM &lt;b&gt;stack&lt;/b&gt; (operator) gpu017 4 1 256.0 not yet (0/1 nodes)" in text
    assert "Storage lustre_error gpu[001-002,005] 12 0 0.0 60 min" in text  # the one duration format
    assert "| 2026-10-12 01:00 UTC | inc-bbb | Interconnect switch | ib_link_down | gpu[001-032] |" in md


def test_suspect_nodes_and_new_templates(report: tuple[ReportPaths, str, str]) -> None:
    _, html, md = report
    text = _visible_text(_section(html, "suspects"))
    assert ("2 nodes stand out from the fleet over the last 28 days (gpu[017,033]); the worst, gpu017, has "
            "hw_episodes 6 vs fleet median 0 (z 6.0) — recommended: drain, RMA.") in text
    assert "gpu033 4.0 infra_failure_episodes 4 vs fleet median 0 (z 4.0) – drain 0 0 4 1" in text
    assert "| gpu017 | 6.0 | hw_episodes 6 vs fleet median 0 (z 6.0) | xid 48 | drain, RMA |" in md
    sec = _section(html, "templates")
    text = _visible_text(sec)
    assert ("2 of 3 templates were first seen on 2026-10-31; 1 of them matches no catalogued event") in text
    assert "2026-10-31 01:00 UTC 40 3 xid NVRM: Xid (PCI:&lt;*&gt;): &lt;NUM&gt;, pid=&lt;*&gt;" in text
    assert "2026-10-31 02:00 UTC 7 1 uncatalogued &lt;script&gt;alert(2)&lt;/script&gt; rogue &lt;*&gt;" in text
    assert "sshd" not in text  # first seen long before the report day


def test_input_text_is_escaped(report: tuple[ReportPaths, str, str]) -> None:
    _, html, md = report
    assert "<script>" not in html and "<b>timestamp" not in html and "<evil>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # job name in the failures table
    assert "&lt;script&gt;bob&lt;/script&gt;" in html  # user name in the top users table / sentence
    assert "sacct/&lt;evil&gt;.psv:0" in html
    assert "bad &lt;b&gt;timestamp&lt;/b&gt; &#39;x&#39;" in html
    # The chart label for the user is sanitised before it reaches the SVG.
    assert "‹script›bob‹/script›" in html
    assert "<script" not in md and "| &lt;script&gt;bob&lt;/script&gt; |" in md
    assert "&lt;script&gt;alert(2)&lt;/script&gt; rogue &lt;*&gt;" in html  # a log template
    assert "<b>stack" not in html and "<b>stack" not in md  # an operator root cause


def test_markdown_summary(report: tuple[ReportPaths, str, str]) -> None:
    _, _, md = report
    assert md.startswith("# GPU cluster nightly report — 2026-10-31")
    for _, title, statement, *_ in FINDINGS:
        assert md_escape(statement) in md
        assert title in md
    assert "- ✓ **Cancelled jobs dominate**" in md and "- – **Large jobs are rising**" in md
    assert "| State | Jobs | Share of jobs | Runs | GPU-hours | Share of GPU-hours |" in md
    assert "| ---: |" in md and "| COMPLETED | 900 | 75.0 % | 900 | 5,580.0 | 55.5 % |" in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md  # failures table, escaped for Markdown
    assert "<svg" not in md


def test_missing_and_empty_marts_say_no_data(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "partial.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _marts(con, skip=frozenset({"gpu_time_by_state", "findings", "runtime_quantiles"}))
    con.execute("DELETE FROM marts.top_consumers")
    paths = render_nightly_report(con, tmp_path / "out", report_date=date(2026, 10, 30))
    html = _visible_text(paths.html.read_text())
    assert paths.html.name == "nightly-2026-10-30.html"
    assert "No data yet: marts.gpu_time_by_state has not been built." in html
    assert "No data yet: marts.findings has not been built." in html
    assert "No data yet: marts.runtime_quantiles has not been built." in html
    assert "No data yet: marts.top_consumers is empty." in html
    assert f"No GPU job ended in {', '.join(FAILED_STATES[:-1])} or {FAILED_STATES[-1]} on 2026-10-30." in html
    # sections with data still render; the mean runs to the report day (0.6 + 0.01 i, i = 0 … 29)
    assert "Mean utilization was 74.5 %" in html
    assert "No data yet: marts.findings has not been built." in paths.markdown.read_text()
    con.close()


def test_failure_marts_missing_or_empty_say_no_data(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "nofail.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _marts(con)
    paths = render_nightly_report(con, tmp_path / "a", report_date=date(2026, 10, 31))
    html, md = _visible_text(paths.html.read_text()), paths.markdown.read_text()
    for table in ("marts.job_failure_attribution", "marts.failure_taxonomy", "marts.hw_incidents",
                  "marts.suspect_nodes", "core.log_templates"):
        assert f"No data yet: {table} has not been built." in html, table
    assert "No data yet: marts.job_failure_attribution has not been built." in md
    assert "Infra failures 2026-10-31 – marts.job_failure_attribution not available" in html
    assert "Mean utilization was 75.0 %" in html  # the other sections still render

    # Built but empty: "No data yet … is empty"; an empty suspect list with node logs = nobody flagged.
    _failure_marts(con)
    for table in ("marts.job_failure_attribution", "marts.failure_taxonomy", "marts.hw_incidents",
                  "marts.suspect_nodes", "core.log_templates"):
        con.execute(f"DELETE FROM {table}")
    html = _visible_text(render_nightly_report(con, tmp_path / "b", report_date=date(2026, 10, 31)).html.read_text())
    for table in ("marts.job_failure_attribution", "marts.failure_taxonomy", "marts.hw_incidents",
                  "core.log_templates"):
        assert f"No data yet: {table} is empty." in html, table
    assert "No node stands out from the fleet" in html
    assert "Suspect nodes 0 none stands out from the fleet" in html  # KPI card
    con.execute("DELETE FROM core.node_events")
    html = _visible_text(render_nightly_report(con, tmp_path / "c", report_date=date(2026, 10, 31)).html.read_text())
    assert "No data yet: core.node_events is empty." in html and "No node stands out" not in html

    # A mart of the wrong shape costs only its own section.
    con.execute("DROP TABLE marts.failure_taxonomy")
    con.execute("CREATE TABLE marts.failure_taxonomy (period_type VARCHAR, other INTEGER)")
    con.execute("INSERT INTO marts.failure_taxonomy VALUES ('all', 1)")
    html = _visible_text(render_nightly_report(con, tmp_path / "d", report_date=date(2026, 10, 31)).html.read_text())
    assert "Failure taxonomy Could not be computed: BinderException" in html
    assert "No data yet: marts.hw_incidents is empty." in html
    con.close()


def test_new_templates_fall_back_to_latest_ingestion(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "tpl.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _failure_marts(con, skip=frozenset(set(FAILURE_MARTS) - {"log_templates"}))
    # Nothing first seen on 2026-11-02: show what the latest ingestion day (2026-10-31) brought.
    html = _visible_text(render_nightly_report(con, tmp_path / "a", report_date=date(2026, 11, 2)).html.read_text())
    assert ("2 of 3 templates were first ingested on 2026-10-31, the latest ingestion day "
            "(none was first seen on 2026-11-02)") in html
    # Everything from one load: nothing is new yet, and no table of the most common lines.
    con.execute("UPDATE core.log_templates SET first_ingested_at = TIMESTAMPTZ '2026-10-31 05:00:00+00'")
    html = _visible_text(render_nightly_report(con, tmp_path / "b", report_date=date(2026, 11, 2)).html.read_text())
    assert ("No node-log template was first seen on 2026-11-02; all 3 templates came with the first load of "
            "node logs (2026-10-31), so none is new yet.") in html
    assert "sshd" not in html
    con.close()


def test_mart_with_wrong_shape_degrades_to_note(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "odd.duckdb"))
    _ddl(con)
    _marts(con, skip=frozenset({"size_buckets"}))
    con.execute("CREATE TABLE marts.size_buckets (period_type VARCHAR, other INTEGER)")
    con.execute("INSERT INTO marts.size_buckets VALUES ('all', 1)")
    html = _visible_text(render_nightly_report(con, tmp_path / "out").html.read_text())
    assert "Could not be computed: BinderException" in html
    assert "Mean utilization was" in html
    con.close()


def test_default_report_date_is_the_last_complete_day(tmp_path: Path) -> None:
    # The last dump was cut at 00:15 on 2026-11-01 (a running job's elapsed reaches it): 2026-10-31
    # is complete. Without that running job the data ends mid-2026-10-31, so 2026-10-30 is reported.
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _marts(con)
    assert render_nightly_report(con, tmp_path / "a").html.name == "nightly-2026-10-30.html"
    con.execute("""INSERT INTO core.jobs (job_id, state, start_ts, elapsed_s, n_gpus, restarts, source_file, line_no)
                   VALUES ('999', 'RUNNING', '2026-10-31 20:00:00+00', 15300, 8, 0, 'sacct/y.psv', 2)""")
    assert render_nightly_report(con, tmp_path / "b").html.name == "nightly-2026-10-31.html"
    con.close()


@pytest.mark.parametrize(("rows", "expected"), [
    # (day, covered hours, partial): the last complete day, even with a partial sliver after it
    ([(date(2026, 11, 29), 24.0, False), (date(2026, 11, 30), 0.25, True)], date(2026, 11, 29)),
    # a trace shorter than a day: its own day, not the empty day before it
    ([(date(2026, 11, 30), 0.6, True)], date(2026, 11, 30)),
    # a first dump from 08:00 to 00:15 the next day: the day it mostly covers, not the sliver
    ([(date(2026, 11, 30), 16.0, True), (date(2026, 12, 1), 0.25, True)], date(2026, 11, 30)),
    ([(date(2026, 11, 30), 6.0, True), (date(2026, 12, 1), 6.0, True)], date(2026, 12, 1)),
])
def test_default_report_date_without_a_complete_day_is_the_best_covered_one(
        tmp_path: Path, rows: list[tuple[date, float, bool]], expected: date) -> None:
    from gpusre.reports.nightly.meta import latest_complete_day

    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    _ddl(con)
    con.execute("CREATE OR REPLACE TABLE marts.day_coverage (day DATE, covered_hours DOUBLE, partial BOOLEAN)")
    con.executemany("INSERT INTO marts.day_coverage VALUES (?, ?, ?)", rows)
    assert latest_complete_day(con) == expected
    con.close()


def test_empty_warehouse_renders(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "empty.duckdb"))
    _ddl(con)
    paths = render_nightly_report(con, tmp_path / "out")
    html = paths.html.read_text()
    assert paths.html.name == f"nightly-{datetime.now(timezone.utc).date().isoformat()}.html"
    assert "No data yet: marts.job_totals has not been built." in html
    assert html.count("No data yet") >= 9
    assert "<svg" not in html
    assert "No data yet" in paths.markdown.read_text()
    con.close()


def test_formatting_and_labels() -> None:
    assert fmt_int(1234567.4) == "1,234,567" and fmt_int(None) == "–"
    assert fmt_pct(0.4123) == "41.2 %" and fmt_pct(float("nan")) == "–"
    assert fmt_duration(93784) == "1-02:03:04" and fmt_duration(59) == "00:00:59"
    assert md_escape("a|b<c>\nd") == r"a\|b&lt;c&gt; d"
    assert safe_label("<img onerror=f()>$x$") == "‹img onerror=f()›\\$x\\$"
    assert safe_label("x" * 40) == "x" * 27 + "…"
    svg = top_consumers_chart(
        [("<script>x</script>", 0.5), ("$\\frac{1}{0}$ & co", 0.2), ("a onmouseover=alert(1)", 0.1)], "t", "share")
    assert svg.startswith("<svg") and "<script" not in svg.lower() and "&lt;script" not in svg
    assert "a onmouseover=alert(1)" in svg  # harmless as escaped text content, and must not break the report


# --------------------------------------------------------------------------------------------
# node-state sections (marts.node_availability_daily, core.node_states, marts.repair_times, marts.drain_reasons)

EVIL_REASON = "<img src=x onerror=alert(1)>"
NODE_SECTIONS = ("availability", "out_of_service", "repairs", "drain_reasons")
NO_HISTORY = "No node-state history yet (land `sacctmgr show event -P` dumps in slurm_events/)"
NODE_DAYS = [REPORT_DAY - timedelta(days=i) for i in range(13, -1, -1)]  # 2026-10-18 … 2026-10-31


def _node_state_marts(con: duckdb.DuckDBPyConnection, *, n_nodes: int = 4, extra_down: int = 0) -> None:
    """Hand-made node-state history around the report day (2026-10-31).

    gpu017 drained (Xid) since 2026-10-29 00:00 and went DOWN on 2026-10-30: 72 h down; gpu033 drained
    with a hostile reason at 20:00 on the report day, back only at 02:00 the next day; gpu005 in
    maintenance 08:00-12:00 (over before the day ended); gpu040 drained after the report day. With
    ``n_nodes`` > 4, more nodes fully in service; ``extra_down`` of them with 1 h down on 2026-10-20.
    """
    con.execute("""INSERT INTO lake.slurm_events (source_file, line_no, source_format, event_type, node_name, nodes,
                       start_ts, state, reason)
                   VALUES ('slurm_events/events_2026-11-01.txt', 2, 'sacctmgr', 'node', 'gpu017', ['gpu017'],
                           TIMESTAMPTZ '2026-10-29 00:00:00+00', 'DRAIN', 'NHC: check_gpu_xid: Xid 79 on GPU 3')""")
    states = [
        ("gpu017", "DRAIN", "2026-10-29 00:00:00+00", None, "NHC: check_gpu_xid: Xid 79 on GPU 3", "gpu_xid", "hardware"),
        ("gpu017", "DOWN", "2026-10-30 00:00:00+00", None, "Not responding", "not_responding", "unknown"),
        ("gpu033", "DRAIN", "2026-10-31 20:00:00+00", "2026-11-01 02:00:00+00", EVIL_REASON, "unknown", "unknown"),
        ("gpu005", "MAINT", "2026-10-31 08:00:00+00", "2026-10-31 12:00:00+00", "planned maintenance: BIOS upgrade",
         "planned_maintenance", "maintenance"),
        ("gpu040", "DRAIN", "2026-11-01 01:00:00+00", None, "IB link down mlx5_0", "network", "hardware"),
    ]
    con.executemany(
        """INSERT INTO core.node_states (node, state, start_ts, end_ts, reason, reason_class, availability_class,
               source_format, source_file, line_no)
           VALUES (?, ?, CAST(? AS TIMESTAMPTZ), CAST(? AS TIMESTAMPTZ), ?, ?, ?, 'sacctmgr', 'x.txt', 1)""",
        states)
    # day, node, down by cause (hardware, maintenance, health check, other)
    down = {("gpu017", date(2026, 10, 29)): (24.0, 0, 0, 0), ("gpu017", date(2026, 10, 30)): (24.0, 0, 0, 0),
            ("gpu017", REPORT_DAY): (24.0, 0, 0, 0), ("gpu033", REPORT_DAY): (0, 0, 0, 4.0),
            ("gpu005", REPORT_DAY): (0, 4.0, 0, 0), ("gpu040", date(2026, 10, 25)): (0, 0, 1.5, 0)}
    for i in range(extra_down):
        down[(f"n{i:04d}", date(2026, 10, 20))] = (1.0, 0, 0, 0)
    con.execute("CREATE TEMP TABLE node_down (node VARCHAR, day DATE, hw DOUBLE, mnt DOUBLE, hc DOUBLE, oth DOUBLE)")
    con.executemany("INSERT INTO node_down VALUES (?, ?, ?, ?, ?, ?)", [(n, d, *v) for (n, d), v in down.items()])
    # Every node x day of the window; node-days without down time are assumed in service (as the mart does).
    con.execute("""
        INSERT INTO marts.node_availability_daily
        WITH nodes AS (SELECT unnest(['gpu005', 'gpu017', 'gpu033', 'gpu040']) AS node
                       UNION ALL SELECT 'n' || lpad(i::VARCHAR, 4, '0') FROM range(? - 4) r(i)),
             days AS (SELECT (DATE '2026-10-18' + i::INTEGER) AS day FROM range(14) r(i))
        SELECT day, node, 24.0, 24.0 - (hw + mnt + hc + oth), hw + mnt + hc + oth, hw, mnt, hc, oth,
               CASE WHEN hw + mnt + hc + oth > 0 THEN 'node_states' ELSE 'assumed_in_service' END
        FROM (SELECT n.node, d.day, coalesce(x.hw, 0) AS hw, coalesce(x.mnt, 0) AS mnt, coalesce(x.hc, 0) AS hc,
                     coalesce(x.oth, 0) AS oth
              FROM nodes n CROSS JOIN days d LEFT JOIN node_down x ON x.node = n.node AND x.day = d.day)""",
                [n_nodes])
    con.execute("DROP TABLE node_down")
    con.executemany(
        "INSERT INTO marts.repair_times VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [("all", 9, 8, 7, 1, 0.25, 0.5, 6.5, 30.0, 12.0, 2.0, 25.0, 6, None),
         ("gpu", 5, 5, 4, 1, 0.2, 0.4, 20.0, 30.0, 20.0, None, None, 3,
          "4 repaired incidents: too few for a 95% interval of the median"),
         ("nvlink", 3, 3, 3, 0, 0.5, 0.5, 2.0, 2.5, 2.0, None, None, 3, "3 repaired incidents: too few"),
         ("storage", 1, 0, 0, 0, None, None, None, None, None, None, None, 0, "no repaired incident")])
    # 100 node-hours in 12 reasons: 40 (the hostile one), 20, then 10 x 4.
    reasons = [(1, "unknown", "unknown", "other", 7, EVIL_REASON, EVIL_REASON, 3, 2, 40.0, 0.4, 1),
               (2, "gpu_xid", "hardware", "gpu", 3, "NHC: check_gpu_xid: Xid <NUM> on GPU <NUM>",
                "NHC: check_gpu_xid: Xid 79 on GPU 3", 2, 1, 20.0, 0.2, 1)]
    reasons += [(r, "os", "software", "os", 100 + r, f"reason {r} <*>", f"reason {r} x", 1, 1, 4.0, 0.04, 0)
                for r in range(3, 13)]
    con.executemany(
        """INSERT INTO marts.drain_reasons VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
               TIMESTAMPTZ '2026-10-01 00:00:00+00', TIMESTAMPTZ '2026-10-31 20:00:00+00')""", reasons)


@pytest.fixture(scope="module")
def node_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[duckdb.DuckDBPyConnection, str, str]:
    tmp = tmp_path_factory.mktemp("nodes")
    con = duckdb.connect(str(tmp / "wh.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _marts(con)
    _failure_marts(con)
    _node_state_marts(con)
    paths = render_nightly_report(con, tmp / "out", report_date=REPORT_DAY)
    yield con, paths.html.read_text(encoding="utf-8"), paths.markdown.read_text(encoding="utf-8")
    con.close()


def test_node_state_sections_present(node_report: tuple[duckdb.DuckDBPyConnection, str, str]) -> None:
    _, html, md = node_report
    for key, title in zip(NODE_SECTIONS, ("Node availability", "Nodes out of service now", "MTTR by component class",
                                          "Top drain reasons by node-hours")):
        sec = _section(html, key)
        assert title in sec and 'class="lead"' in sec and "nodata" not in sec, key
        assert f'href="#{key}"' in html  # table of contents
        assert f"## {title}" in md
    assert NO_HISTORY not in html
    # Heat map (every node of a 4-node cluster, the cluster row on top) and the time-to-repair chart.
    heat = _section(html, "availability")
    svg = heat[heat.index("<svg"): heat.index("</svg>")]
    assert "All 4 nodes" in svg and "gpu017" in svg and "gpu040" in svg and "other nodes" not in svg
    assert "Sat\n31 Oct" in svg or "31 Oct" in svg
    rep = _section(html, "repairs")
    svg = rep[rep.index("<svg"): rep.index("</svg>")]
    assert "All classes" in svg and "GPU" in svg and "6.5 h  (p90 30.0 h)" in svg
    # Worst-node table: cause breakdown, newest day last.
    text = _visible_text(heat)
    assert "gpu017 78.6 % 72.0 72.0 0.0 0.0 0.0 24.0" in text
    assert "gpu040 99.6 % 1.5 0.0 0.0 1.5 0.0 0.0" in text


def test_node_availability_lead_matches_mart(node_report: tuple[duckdb.DuckDBPyConnection, str, str]) -> None:
    con, html, md = node_report
    window = con.execute("""SELECT sum(in_service_hours) / sum(observed_hours) FROM marts.node_availability_daily
                            WHERE day BETWEEN ? AND ?""", [NODE_DAYS[0], REPORT_DAY]).fetchone()[0]
    night = con.execute("""SELECT sum(in_service_hours) / sum(observed_hours) FROM marts.node_availability_daily
                           WHERE day = ?""", [REPORT_DAY]).fetchone()[0]
    worst, w_avail, w_down = con.execute(
        """SELECT node, sum(in_service_hours) / sum(observed_hours), sum(down_hours)
           FROM marts.node_availability_daily GROUP BY node ORDER BY sum(down_hours) DESC LIMIT 1""").fetchone()
    n_down = con.execute("SELECT count(DISTINCT node) FROM marts.node_availability_daily WHERE down_hours > 0"
                         ).fetchone()[0]
    assert (worst, n_down) == ("gpu017", 4)
    lead = (f"In-service share of node-hours (planned maintenance counts as out of service here; the "
            f"node-availability SLO leaves it out) was {fmt_pct(window, 2)} over the 14 days "
            f"2026-10-18 … 2026-10-31 and {fmt_pct(night, 2)} on 2026-10-31; {n_down} of 4 nodes had down time, "
            f"the worst, gpu017, was in service {fmt_pct(w_avail)} of the time ({w_down:.1f} h down, mostly hardware).")
    assert lead == ("In-service share of node-hours (planned maintenance counts as out of service here; the "
                    "node-availability SLO leaves it out) was 93.94 % over the 14 days 2026-10-18 … "
                    "2026-10-31 and 66.67 % on 2026-10-31; 4 of 4 nodes had down time, the worst, gpu017, was in "
                    "service 78.6 % of the time (72.0 h down, mostly hardware).")
    assert lead in _visible_text(_section(html, "availability"))
    assert lead in md


def test_nodes_out_of_service_now(node_report: tuple[duckdb.DuckDBPyConnection, str, str]) -> None:
    con, html, md = node_report
    sec = _section(html, "out_of_service")
    text = _visible_text(sec)
    # Open at the end of the report day: gpu017 (two open events) and gpu033 (closed only the next day);
    # not gpu005 (back at 12:00) nor gpu040 (drained after midnight).
    open_nodes = [r[0] for r in con.execute(
        """SELECT DISTINCT node FROM core.node_states
           WHERE start_ts < TIMESTAMPTZ '2026-11-01 00:00:00+00'
             AND (end_ts IS NULL OR end_ts > TIMESTAMPTZ '2026-11-01 00:00:00+00') ORDER BY node""").fetchall()]
    assert open_nodes == ["gpu017", "gpu033"]
    assert ("At the end of 2026-10-31 (UTC) 2 of 4 nodes were out of service (1 hardware, 1 unknown); the longest, "
            "gpu017, has been DRAIN → DOWN since 2026-10-29 00:00 UTC (3.0 days) for "
            "“NHC: check_gpu_xid: Xid 79 on GPU 3”.") in text
    assert re.findall(r'<td class=" mono">(gpu\d+)</td>', sec) == ["gpu017", "gpu033"]  # longest first
    assert ("gpu017 DRAIN → DOWN 2026-10-29 00:00 UTC 3.0 days NHC: check_gpu_xid: Xid 79 on GPU 3 "
            "gpu_xid (hardware) not yet") in text
    assert ("gpu033 DRAIN 2026-10-31 20:00 UTC 4.0 h &lt;img src=x onerror=alert(1)&gt; unknown (unknown) "
            "2026-11-01 02:00 UTC") in text
    assert "gpu005" not in text and "gpu040" not in text
    assert "| gpu033 | DRAIN | 2026-10-31 20:00 UTC | 4.0 h | &lt;img src=x onerror=alert(1)&gt; |" in md


def test_mttr_by_component(node_report: tuple[duckdb.DuckDBPyConnection, str, str]) -> None:
    con, html, md = node_report
    t = con.execute("""SELECT incidents, linked_incidents, repaired, ongoing, mttd_hours_p50, mttr_hours_p50,
                              mttr_hours_p90, ci_low, ci_high FROM marts.repair_times WHERE component_class = 'all'"""
                    ).fetchone()
    assert t == (9, 8, 7, 1, 0.25, 6.5, 30.0, 2.0, 25.0)
    text = _visible_text(_section(html, "repairs"))
    assert ("Of 9 hardware incidents, 8 were followed by a node drain; 7 repaired with a median time to repair of "
            "6.5 h (p90 30.0 h, 95 % CI 2.0–25.0 h) after a median 15 min to detect; 1 is still under repair; "
            "slowest to repair: GPU (median 20.0 h).") in text
    # The pooled row first, then the classes MTBF uses, slowest first.
    assert "GPU 5 5 4 1 12 min / 24 min 20.0 h 30.0 h 20.0 h – (too few)" in text  # one duration format, with units
    assert "NVLink / NVSwitch 3 3 3 0" in text
    assert "Storage 1 0 0 0 – / – – – – –" in text
    assert text.index("All classes 9 8 7 1") < text.index("GPU 5") < text.index("NVLink / NVSwitch 3")
    # 7 repairs, 6 timed by node states: the caption says how the other was timed.
    assert "1 of the repairs had no node-state record" in text
    assert "| All classes | 9 | 8 | 7 | 1 | 15 min / 30 min | 6.5 h | 30.0 h | 12.0 h | 2.0 … 25.0 |" in md


def test_drain_reasons_and_escaping(node_report: tuple[duckdb.DuckDBPyConnection, str, str]) -> None:
    con, html, md = node_report
    total, top10 = con.execute("""SELECT sum(node_hours_lost),
                                         sum(share_node_hours) FILTER (WHERE rank <= 10) FROM marts.drain_reasons"""
                               ).fetchone()
    sec = _section(html, "drain_reasons")
    text = _visible_text(sec)
    assert (f"The top 10 of 12 drain/down reasons cost {fmt_pct(top10)} of {total:.0f} node-hours out of service; "
            "the largest, “&lt;img src=x onerror=alert(1)&gt;” (unknown, unknown), cost 40.0 node-hours (40.0 %) "
            "on 2 nodes in 3 events, 1 still open.") in text
    assert fmt_pct(top10) == "92.0 %"
    assert len(re.findall(r"<tr>", sec)) == 11  # header + top 10
    assert "2 NHC: check_gpu_xid: Xid &lt;NUM&gt; on GPU &lt;NUM&gt; gpu_xid (hardware) 2 1 20.0 20.0 % 1 2026-10-31" \
        in text
    assert "reason 11" not in text
    # The hostile reason is text everywhere: table cells, title attributes, lead sentences, Markdown.
    assert "<img" not in html and "<img" not in md
    assert 'title="&lt;img src=x onerror=alert(1)&gt; (e.g. &lt;img src=x onerror=alert(1)&gt;)"' in sec
    assert "onerror=alert(1)&gt;" in _section(html, "out_of_service")
    assert "| 1 | &lt;img src=x onerror=alert(1)&gt; | unknown (unknown) | 3 | 2 | 40.0 | 40.0 % | 1 |" in md


def test_no_node_state_history_says_so(report: tuple[ReportPaths, str, str]) -> None:
    # The shared fixture has the DDL (empty node-state tables) but no slurm_events landed.
    _, html, md = report
    for key in NODE_SECTIONS:
        sec = _section(html, key)
        assert ("No node-state history yet (land <code>sacctmgr show event -P</code> dumps in slurm_events/)."
                in sec), key
        assert "<svg" not in sec and "Could not be computed" not in sec
    assert md.count(f"*{NO_HISTORY}.*") == 4


def test_node_state_sections_degrade_independently(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _node_state_marts(con)
    con.execute("DELETE FROM marts.drain_reasons")
    con.execute("DROP TABLE marts.repair_times")
    # A mart that fails when read (here a view whose cast fails) costs only its own section.
    con.execute("CREATE VIEW marts.repair_times AS SELECT 'x'::INTEGER AS component_class, 1 AS incidents")
    html = _visible_text(render_nightly_report(con, tmp_path / "a", report_date=REPORT_DAY).html.read_text())
    assert "MTTR by component class Could not be computed: ConversionException" in html
    assert "No data yet: marts.drain_reasons is empty." in html
    assert ("In-service share of node-hours (planned maintenance counts as out of service here; the "
            "node-availability SLO leaves it out) was 93.94 %") in html
    assert "At the end of 2026-10-31 (UTC) 2 of 4 nodes were out of service" in html
    # A report day past the availability history, and one when every node was in service.
    html = _visible_text(render_nightly_report(con, tmp_path / "b", report_date=date(2026, 12, 31)).html.read_text())
    assert "No data yet: marts.node_availability_daily has no rows for 2026-12-18 … 2026-12-31 " \
           "(it covers 2026-10-18 … 2026-10-31)." in html
    html = _visible_text(render_nightly_report(con, tmp_path / "c", report_date=date(2026, 10, 20)).html.read_text())
    assert ("No node was out of service at the end of 2026-10-20 (UTC)" in html
            or "All of 4 nodes were in service at the end of 2026-10-20 (UTC)" in html)
    con.close()


@pytest.mark.parametrize(("n_nodes", "extra_down", "summary"), [
    (60, 0, "56 other nodes fully in service"),  # 4 nodes with down time, the rest summarised
    (2000, 45, "1,960 other nodes"),  # more than 40 nodes with down time: the worst 40, then the rest
])
def test_heat_map_stays_readable_for_large_clusters(tmp_path: Path, n_nodes: int, extra_down: int,
                                                    summary: str) -> None:
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    _ddl(con)
    _node_state_marts(con, n_nodes=n_nodes, extra_down=extra_down)
    html = render_nightly_report(con, tmp_path / "out", report_date=REPORT_DAY).html.read_text()
    sec = _section(html, "availability")
    svg = sec[sec.index("<svg"): sec.index("</svg>")]
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    node_rows = [lbl for lbl in labels if re.fullmatch(r"gpu\d+|n\d{4}", lbl)]
    assert len(node_rows) == min(4 + extra_down, 40)
    assert node_rows[0] == "gpu017"  # worst first
    assert f"All {fmt_int(n_nodes)} nodes" in labels and summary in labels
    assert len(re.findall(r"<tr>", sec)) == 1 + min(4 + extra_down, 15)  # worst-node table: top 15 at most
    assert f"of {fmt_int(n_nodes)} nodes had down time" in _visible_text(sec)
    con.close()


# --------------------------------------------------------------------------------------------
# alert sections (core.alerts; marts.alert_daily, alert_floods, alert_incidents, alert_rule_quality,
# hw_incidents_without_alert)

ALERT_SECTIONS = ("alert_flood", "alert_incidents", "alert_hygiene")
NO_ALERTS = "No alerts yet (land Alertmanager webhook payloads in alerts/)."
EVIL_RULE = "<script>alert(3)</script>Flap"
EVIL_ROOT_REASON = "earliest alert <img src=x onerror=alert(4)> | pipe"


def _alert_marts(con: duckdb.DuckDBPyConnection) -> None:
    """core.alerts around the report day (2026-10-31) and the alert marts computed from them, as the
    ``marts/alert_incidents`` asset does (with the hand-made marts.hw_incidents of :func:`_failure_marts`).

    From 2026-10-18: a CPU-load alert every 2 h on gpu1xx (noise); on the report day a leaf-switch
    flood at 02:52 (the switch and 30 link-down alerts under leaf02), a GPU alert on gpu017 matched to
    hardware incident inc-aaa (kills job 200), and a hostile rule flapping 6 times on gpu040. The
    storage incident inc-ccc (2026-10-20) gets no alert: missing coverage.
    """
    import hashlib
    import json

    import polars as pl

    from gpusre.models.alerts.clustering import Topology, alert_marts

    rows: list[dict] = []

    def add(alertname: str, at: datetime, *, node: str | None = None, target: str | None = None,
            target_label: str | None = None, minutes: float = 20, fingerprint: str | None = None) -> None:
        labels = {"alertname": alertname, **({"instance": f"{node}:9100"} if node else {}),
                  **({target_label: target} if target_label else {})}
        fp = fingerprint or hashlib.sha1(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16]
        rows.append({"alert_id": len(rows) + 1, "fingerprint": fp, "alertname": alertname, "status": "resolved",
                     "severity": "critical", "node": node, "target": target, "target_label": target_label,
                     "starts_at": at, "ends_at": at + timedelta(minutes=minutes),
                     "labels": json.dumps(labels), "template_id": None, "n_notifications": 2,
                     "source_file": "alerts/x.json", "first_received_file": "alerts/x.json"})

    start = datetime(2026, 10, 18, 1, tzinfo=timezone.utc)
    for k in range(14 * 12):
        add("HostHighCpuLoad", start + timedelta(hours=2 * k), node=f"gpu{100 + k % 28:03d}")
    flood = datetime(2026, 10, 31, 2, 52, tzinfo=timezone.utc)
    add("InfinibandSwitchDown", flood + timedelta(minutes=1), target="leaf02", target_label="switch")
    for k in range(30):
        add("NodeInfinibandLinkDown", flood + timedelta(seconds=5 * k), node=f"gpu{33 + k:03d}")
    add("GpuXidError", datetime(2026, 10, 31, 2, 58, tzinfo=timezone.utc), node="gpu017")
    for k in range(6):
        add(EVIL_RULE, datetime(2026, 10, 31, 12, 9 * k, tzinfo=timezone.utc), node="gpu040", minutes=3,
            fingerprint="flappy")
    alerts = pl.DataFrame(rows, schema={
        "alert_id": pl.Int64, "fingerprint": pl.String, "alertname": pl.String, "status": pl.String,
        "severity": pl.String, "node": pl.String, "target": pl.String, "target_label": pl.String,
        "starts_at": pl.Datetime("us", "UTC"), "ends_at": pl.Datetime("us", "UTC"), "labels": pl.String,
        "template_id": pl.Int64, "n_notifications": pl.Int64, "source_file": pl.String,
        "first_received_file": pl.String})
    con.register("_alerts", alerts.to_arrow())
    con.execute("INSERT INTO core.alerts BY NAME SELECT * REPLACE (labels::JSON AS labels) FROM _alerts")
    con.unregister("_alerts")
    hw = con.sql("SELECT * FROM marts.hw_incidents").pl()
    jobs = pl.DataFrame({"job_id": ["200"], "state": ["FAILED"], "nodes": [["gpu017"]],
                         "end_ts": [datetime(2026, 10, 31, 3, tzinfo=timezone.utc)]})
    attribution = con.sql("SELECT job_id, attribution, lost_gpu_hours FROM marts.job_failure_attribution").pl()
    topology = Topology.from_groups({f"r{r}": f"gpu[{16 * r + 1:03d}-{16 * r + 16:03d}]" for r in range(8)},
                                    {f"leaf{k + 1:02d}": f"gpu[{32 * k + 1:03d}-{32 * k + 32:03d}]" for k in range(4)})
    # Notifications by the day they were received (the asset reads them from raw.alert_notifications):
    # here each alert's two notifications arrive in one webhook delivery on its start day.
    received = alerts.group_by(pl.col("starts_at").dt.date().alias("day")).agg(
        (2 * pl.len()).cast(pl.Int64).alias("notifications"), pl.len().cast(pl.Int64).alias("deliveries"))
    marts = alert_marts(alerts.drop("source_file", "first_received_file"), topology=topology, hw_incidents=hw,
                        jobs=jobs, attribution=attribution, notifications=received)
    for name, frame in (("alert_incidents", marts.incidents), ("alert_incident_members", marts.members),
                        ("alert_daily", marts.daily), ("alert_floods", marts.floods),
                        ("alert_rule_quality", marts.rule_quality),
                        ("alert_coverage", marts.coverage),
                        ("hw_incidents_without_alert", marts.hw_without_alert)):
        con.register("_mart", frame.to_arrow())
        con.execute(f"CREATE OR REPLACE TABLE marts.{name} AS SELECT * FROM _mart")
        con.unregister("_mart")
    # A hostile root-cause reason, as a crafted label could make one.
    con.execute("UPDATE marts.alert_incidents SET root_cause_reason = ? WHERE root_cause_candidate LIKE 'GpuXidError%'",
                [EVIL_ROOT_REASON])


@pytest.fixture(scope="module")
def alert_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[duckdb.DuckDBPyConnection, str, str]:
    tmp = tmp_path_factory.mktemp("alerts")
    con = duckdb.connect(str(tmp / "wh.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _marts(con)
    _failure_marts(con)
    _alert_marts(con)
    paths = render_nightly_report(con, tmp / "out", report_date=REPORT_DAY, warehouse_label="wh.duckdb")
    yield con, paths.html.read_text(encoding="utf-8"), paths.markdown.read_text(encoding="utf-8")
    con.close()


def test_alert_sections_present(alert_report: tuple[duckdb.DuckDBPyConnection, str, str]) -> None:
    _, html, md = alert_report
    for key, title in zip(ALERT_SECTIONS, ("Last night&#39;s alert flood (2026-10-31)",
                                           "Alert incidents of 2026-10-31 by size",
                                           "Alert hygiene: noisy rules and missing coverage")):
        sec = _section(html, key)
        assert title in sec and 'class="lead"' in sec and "nodata" not in sec, key
        assert f'href="#{key}"' in html
        assert f"## {title.replace('&#39;', chr(39))}" in md
    assert NO_ALERTS not in html
    # The 14-day chart: alerts and incidents per day, the report day highlighted, the flood day orange.
    sec = _section(html, "alert_flood")
    svg = sec[sec.index("<svg"): sec.index("</svg>")]
    assert "Alerts and the incidents they form per day, 2026-10-18 … 2026-10-31" in svg
    assert "day with a flood episode" in svg and "31 Oct" in svg


def test_alert_flood_lead_matches_marts(alert_report: tuple[duckdb.DuckDBPyConnection, str, str]) -> None:
    con, html, md = alert_report
    notif, alerts, incidents, ratio, n_floods = con.execute(
        """SELECT notifications, alerts, incidents, compression_ratio, flood_episodes FROM marts.alert_daily
           WHERE day = ?""", [REPORT_DAY]).fetchone()
    w_alerts, w_inc = con.execute("SELECT sum(alerts), sum(incidents) FROM marts.alert_daily "
                                  "WHERE day BETWEEN DATE '2026-10-18' AND ?", [REPORT_DAY]).fetchone()
    flood = con.execute("""SELECT flood_id, n_alerts, peak_rate_per_min, incidents, start_ts FROM marts.alert_floods
                           WHERE CAST(timezone('UTC', start_ts) AS DATE) = ?""", [REPORT_DAY]).fetchall()
    assert n_floods == 1 and len(flood) == 1 and alerts == 12 + 31 + 1 + 6
    flood_id, f_alerts, rate, f_inc, f_start = flood[0]
    assert f_start.astimezone(timezone.utc).strftime("%H:%M") == "02:50"  # start of its 5-min bucket
    lead = (f"On 2026-10-31, {fmt_int(notif)} alert notifications arrived in {fmt_int(alerts)} webhook deliveries; "
            f"{fmt_int(alerts)} alerts started and {fmt_int(incidents)} incidents began, {ratio:.1f} alerts per incident ({w_alerts / w_inc:.1f} over the 14 days "
            f"2026-10-18 … 2026-10-31); 1 flood episode began, the largest at 02:50 UTC with {fmt_int(f_alerts)} "
            f"alerts (up to {rate:.1f} a minute) in {f_inc} incident{'' if f_inc == 1 else 's'}.")
    assert (notif, incidents) == (2 * alerts, 12 + 1 + 1 + 1)  # CPU load x 12, the leaf, the GPU, the flapping rule
    sec = _section(html, "alert_flood")
    assert lead in _visible_text(sec)
    assert lead in md
    text = _visible_text(sec)
    assert f"{flood_id} 02:50" in text and f"{fmt_int(f_alerts)} " in text
    # Daily table: newest first, 14 rows.
    assert text.index("2026-10-31 100 50 15 3.3 1") < text.index("2026-10-30 24 12 12 1.0 0")
    assert "2026-10-18 " in text and "2026-10-17" not in text


def test_alert_incidents_by_size(alert_report: tuple[duckdb.DuckDBPyConnection, str, str]) -> None:
    con, html, md = alert_report
    top = con.execute("""SELECT incident_id, n_alerts, n_nodes, root_cause_candidate, scope, in_flood
                         FROM marts.alert_incidents WHERE CAST(timezone('UTC', start_ts) AS DATE) = ?
                         ORDER BY n_alerts DESC, lost_gpu_hours DESC, start_ts, incident_id""", [REPORT_DAY]).fetchall()
    scopes = dict(con.execute("""SELECT scope, count(*) FROM marts.alert_incidents
                                 WHERE CAST(timezone('UTC', start_ts) AS DATE) = ? GROUP BY scope""",
                              [REPORT_DAY]).fetchall())
    assert len(top) == 15 and top[0][1:] == (31, 30, "InfinibandSwitchDown on leaf02", "leaf_switch", True)
    assert scopes == {"node": 14, "leaf_switch": 1}
    gpu = next(r for r in top if r[3] == "GpuXidError on gpu017")
    sec = _section(html, "alert_incidents")
    text = _visible_text(sec)
    lead = ("15 alert incidents started on 2026-10-31, grouping 50 alerts (by scope: 14 node and 1 leaf switch); "
            "the largest, “InfinibandSwitchDown on leaf02”, grouped 31 alerts on 30 nodes; 1 of the 15 had a "
            "hardware incident behind them and 1 killed 1 job (256 GPU-h lost).")
    assert lead in text and lead in md
    # Top 10 by alerts: the leaf first, then the flapping rule's incident (6 alerts, one node).
    ids = re.findall(r'<td class=" mono nowrap">(ainc-\w+)</td>', sec)
    assert len(ids) == 10 and ids[:2] == [top[0][0], top[1][0]]
    assert f"{top[0][0]} 02:52 31 30 leaf switch, flood InfinibandSwitchDown on leaf02" in text
    assert f"{gpu[0]}" in text and "inc-aaa 1 256.0" in text
    assert "Top 10 of 15 alert incidents that started on 2026-10-31" in text
    # Count by scope; the retrospective command with the largest incident's id.
    assert "leaf switch 1 31 31.0 1 0 0 0.0" in text and "node 14 19 1.4 0 1 1 256.0" in text
    cmd = f"gpusre report incident {top[0][0]} --warehouse wh.duckdb --out DIR"
    assert f"<code>{cmd}</code>" in sec
    assert f"`{cmd}`" in md


def test_alert_hygiene(alert_report: tuple[duckdb.DuckDBPyConnection, str, str]) -> None:
    con, html, md = alert_report
    q = {r[0]: r[1:] for r in con.execute("SELECT alertname, verdict, fired, precision FROM marts.alert_rule_quality"
                                          ).fetchall()}
    assert q["HostHighCpuLoad"] == ("noise: consider silencing", 168, 0.0)
    assert q[EVIL_RULE][0] == "flapping" and q["GpuXidError"][0] == "too few to judge"
    # 30 link-down alerts of one leaf-switch failure are one event: too few incidents to call the rule noise.
    assert q["NodeInfinibandLinkDown"][:2] == ("too few to judge", 30)
    assert con.execute("SELECT list(incident_id) FROM marts.hw_incidents_without_alert").fetchone()[0] == ["inc-ccc"]
    sec = _section(html, "alert_hygiene")
    text = _visible_text(sec)
    lead = (f"Of {len(q)} alert rules (206 alerts in 2026-10-18 … 2026-10-31), 1 looks like noise, 1 flaps and 3 "
            "fired too rarely to judge; the noisiest, “HostHighCpuLoad”, fired 168 times and none of its alerts "
            "came with a hardware incident or killed jobs; 1 of 2 hardware incidents in 2026-10-18 … 2026-10-31 "
            "had no alert on their nodes (missing coverage: Storage 1).")
    assert sum(v[1] for v in q.values()) == 206 and len(q) == 5
    assert lead in text and lead in md
    # Noisy rules first, then flapping; the uncovered incident; inc-bbb is older than the alerts.
    assert text.index("HostHighCpuLoad noise: consider silencing 168") \
        < text.index("&lt;script&gt;alert(3)&lt;/script&gt;Flap flapping 6 1 1")
    assert "NodeInfinibandLinkDown" not in text
    assert "inc-ccc Storage 2026-10-20 09:00 UTC 20 min gpu[001-002,005] cluster" in text
    assert "inc-bbb" not in text and "GpuXidError" not in text


def test_alert_text_is_escaped(alert_report: tuple[duckdb.DuckDBPyConnection, str, str]) -> None:
    _, html, md = alert_report
    for doc in (html, md):
        assert "<script>alert(3)" not in doc and "<img src=x" not in doc
    inc = _section(html, "alert_incidents")
    assert "earliest alert &lt;img src=x onerror=alert(4)&gt; | pipe" in inc  # the reason, under the candidate
    assert "&lt;script&gt;alert(3)&lt;/script&gt;Flap on gpu040" in inc  # the flapping rule's incident
    assert '<td class=" mono">&lt;script&gt;alert(3)&lt;/script&gt;Flap</td>' in _section(html, "alert_hygiene")
    # Title attributes (hover text) carry the same text, escaped.
    assert ('title="GpuXidError on gpu017: earliest alert &lt;img src=x onerror=alert(4)&gt; | pipe '
            '(rules: GpuXidError)"') in inc
    assert "(rules: &lt;script&gt;alert(3)&lt;/script&gt;Flap)" in inc
    assert "GpuXidError on gpu017 — earliest alert &lt;img src=x onerror=alert(4)&gt; \\| pipe" in md
    assert "| &lt;script&gt;alert(3)&lt;/script&gt;Flap | flapping |" in md


def test_no_alerts_yet(report: tuple[ReportPaths, str, str], tmp_path: Path) -> None:
    # The shared fixture has the DDL (an empty core.alerts) but no alerts landed.
    _, html, md = report
    for key in ALERT_SECTIONS:
        sec = _section(html, key)
        assert NO_ALERTS in sec and "<svg" not in sec and "Could not be computed" not in sec, key
    assert md.count(f"*{NO_ALERTS}*") == 3
    # A warehouse from before alerts existed (no core.alerts at all), even with stale alert marts.
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _failure_marts(con)
    _alert_marts(con)
    con.execute("DROP TABLE core.alerts")
    html = render_nightly_report(con, tmp_path / "out", report_date=REPORT_DAY).html.read_text()
    assert all(NO_ALERTS in _section(html, key) for key in ALERT_SECTIONS)
    con.close()


def test_alert_window_starts_no_earlier_than_the_data() -> None:
    """"The 14 days" of a warehouse holding 3 would count 11 days nobody observed as quiet."""
    from gpusre.reports.nightly.meta import ALERT_DAYS, NightlyMeta, alert_window

    now = datetime(2026, 11, 5, tzinfo=timezone.utc)
    young = NightlyMeta(date(2026, 11, 4), date(2026, 11, 2), date(2026, 11, 4), now, "wh")
    assert alert_window(young) == (date(2026, 11, 2), date(2026, 11, 4))
    old = NightlyMeta(date(2026, 11, 4), date(2026, 1, 1), date(2026, 11, 4), now, "wh")
    assert alert_window(old) == (date(2026, 11, 4) - timedelta(days=ALERT_DAYS - 1), date(2026, 11, 4))
    # A report day before the data's first day (asked for explicitly) keeps the full window.
    early = NightlyMeta(date(2026, 10, 30), date(2026, 11, 2), date(2026, 11, 4), now, "wh")
    assert alert_window(early) == (date(2026, 10, 17), date(2026, 10, 30))


def test_alert_sections_degrade_independently(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _failure_marts(con)
    _alert_marts(con)
    con.execute("DROP TABLE marts.alert_rule_quality")
    con.execute("CREATE TABLE marts.alert_rule_quality (alertname VARCHAR, other INTEGER)")
    con.execute("INSERT INTO marts.alert_rule_quality VALUES ('x', 1)")
    con.execute("DROP TABLE marts.alert_floods")
    html = render_nightly_report(con, tmp_path / "a", report_date=REPORT_DAY).html.read_text()
    text = {key: _visible_text(_section(html, key)) for key in ALERT_SECTIONS}
    # the verdict mart could not be built from the malformed rule-quality mart; the section says which
    assert "Rule quality is not available (marts.alert_rule_verdicts has not been built)" in text["alert_hygiene"]
    assert "On 2026-10-31, 100 alert notifications arrived in 50 webhook deliveries; 50 alerts started" \
        in text["alert_flood"]
    assert "Flood episodes cannot be listed: marts.alert_floods has not been built." in text["alert_flood"]
    assert "1 flood episode began." in text["alert_flood"]  # the count still comes from marts.alert_daily
    assert "15 alert incidents started on 2026-10-31" in text["alert_incidents"]
    # A report day past the alert history: "no data" for it (not zero alerts), the days before as context;
    # no alert incident that day.
    html = render_nightly_report(con, tmp_path / "c", report_date=date(2026, 11, 2)).html.read_text()
    sec = _section(html, "alert_flood")
    assert ("No alert data for 2026-11-02 (the alerts end on 2026-10-31); the 14 days 2026-10-20 … 2026-11-02 had "
            "182 alerts in 147 incidents (1.2 alerts per incident).") in _visible_text(sec)
    assert sec.count(">no</text>") == 4  # 2026-11-01 and -02: "no data" in both panels, not zero bars
    assert ("No alert incident started on 2026-11-02; 147 started in the 14 days 2026-10-20 … 2026-11-02."
            in _visible_text(_section(html, "alert_incidents")))
    # Empty marts say so.
    con.execute("DELETE FROM marts.alert_incidents")
    con.execute("DELETE FROM marts.alert_daily")
    html = render_nightly_report(con, tmp_path / "b", report_date=REPORT_DAY).html.read_text()
    assert "No data yet: marts.alert_daily is empty." in _section(html, "alert_flood")
    assert "No data yet: marts.alert_incidents is empty." in _section(html, "alert_incidents")
    con.close()


def test_markdown_escape_stops_links_but_keeps_hostlists() -> None:
    from gpusre.reports.kit.formatting import md_escape

    assert md_escape("[click](https://evil.example)") == r"[click]\(https://evil.example)"
    assert md_escape("![x](y)") == r"![x]\(y)"
    assert md_escape("gpu[001-004,010]") == "gpu[001-004,010]"
    assert md_escape("a|b<c>") == r"a\|b&lt;c&gt;"


def test_health_check_section_counts_and_precision(tmp_path: Path) -> None:
    from gpusre.reports.nightly import render_nightly_report
    from gpusre.models.warehouse import apply_ddl, connect

    wh = tmp_path / "hc.duckdb"
    con = connect(wh)
    apply_ddl(con)
    con.execute("""CREATE TABLE marts.health_check_quality AS SELECT * FROM (VALUES
        ('check_nv_healthmon', 'gpu_memory', 10, 40, 6, 7, 0.7, TIMESTAMPTZ '2026-05-01 10:00:00+00'),
        ('check_ps_service', 'os', 5, 9, 3, 0, 0.0, TIMESTAMPTZ '2026-05-01 11:00:00+00'))
        t(check_name, component, firings, events, nodes, preceded_job_failure, precision, last_ts)""")
    con.execute("""CREATE TABLE marts.health_check_misses AS SELECT '42' AS job_id, 'NODE_FAIL' AS state,
        TIMESTAMPTZ '2026-05-01 12:00:00+00' AS end_ts, 8 AS n_gpus, ['gpu007'] AS nodes,
        'unknown (suspected)' AS component, 'node failure without evidence' AS rule""")
    paths = render_nightly_report(con, tmp_path / "r", report_date=None, warehouse_label="hc")
    con.close()
    md = paths.markdown.read_text(encoding="utf-8")
    html = paths.html.read_text(encoding="utf-8")
    assert "15 times" in md and "7 firings" in md and "check_ps_service" in md
    assert "1 infrastructure-attributed job failure had no failing check" in md
    assert "gpu007" in html and "check_nv_healthmon" in html


def test_evidence_cell_names_log_events_and_the_slurm_node_state() -> None:
    from gpusre.reports.nightly.sections.attribution import _evidence_cell
    state = 'DOWN "PSU failure - replace PSU2" since 2026-10-31 03:01:00Z'
    assert _evidence_cell(1, None).text == "1 log event"
    assert _evidence_cell(0, state).text == state and _evidence_cell(0, state).title == state
    both = _evidence_cell(3, state)
    assert both.text.startswith("3 log events; DOWN") and len(both.text) <= 60 and both.title.endswith("03:01:00Z")
    assert _evidence_cell(0, None).text == "–"
    # Which of the job's nodes the evidence is on (marts.*_failure_attribution.evidence_nodes), first:
    # one node of a 1,000-node job failed, and the table says which.
    assert _evidence_cell(2, None, ["gpu0907"]).text == "on gpu0907: 2 log events"
    leaf = _evidence_cell(8, None, ["gpu025", "gpu026", "gpu027", "gpu028"])
    assert leaf.text == "on gpu[025-028]: 8 log events" and leaf.title == leaf.text
    assert _evidence_cell(0, state, ["gpu07"]).title == f"on gpu07: {state}"
    assert _evidence_cell(2, None, []).text == "2 log events"


def test_every_catalog_component_has_a_report_label() -> None:
    """A component added to a catalog must not reach a meeting screen as a raw key (host_power)."""
    import csv
    from importlib import resources

    from gpusre.models.logs.event_catalog import COMPONENTS
    from gpusre.reports.kit.labels import COMPONENT_LABELS
    with resources.files("gpusre.models.catalog").joinpath("component_classes.csv").open() as fh:
        classes = {r["component"] for r in csv.DictReader(fh)}
    assert classes | set(COMPONENTS) <= set(COMPONENT_LABELS), (classes | set(COMPONENTS)) - set(COMPONENT_LABELS)


def test_quantile_chart_with_nothing_to_mark_draws_without_a_legend_warning() -> None:
    """Queue waits of 0 s (a cluster that never queues, the xdmod sample) have no point on a log
    scale: the chart still renders, and matplotlib is not asked for an empty legend (it warned)."""
    import warnings

    from gpusre.reports.kit import charts

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        svg = charts.quantile_chart([("1", 0.0, 0.0, None, 0.0), ("2-8", None, 0.0, 0.0, 0.0)], "Queue wait", "min")
    assert svg.lstrip().startswith("<svg") and "Queue wait" in svg


def test_ettr_dots_are_thinned_to_evenly_spaced_ranks_and_the_axis_says_so() -> None:
    """Thousands of runs drew thousands of SVG dots (2.9 MB of report, seconds of rendering): a bucket
    shows at most MAX_DOTS dots, the order statistics at evenly spaced ranks (min and max kept), while
    its box and median still come from every run."""
    import numpy as np

    from gpusre.reports.kit import charts

    values = np.random.default_rng(3).beta(5, 2, 5000)
    dots = charts._thinned(values)
    assert dots.size == charts.MAX_DOTS and dots[0] == values.min() and dots[-1] == values.max()
    assert abs(float(np.median(dots)) - float(np.median(values))) < 0.01
    small = values[:50]
    assert charts._thinned(small) is small
    many = charts.ettr_distribution_chart([("2-8", values.tolist(), None), ("9-64", small.tolist(), 0.9)], "ETTR")
    few = charts.ettr_distribution_chart([("9-64", small.tolist(), 0.9)], "ETTR")
    assert "dots at evenly spaced ranks" in many and "dots at evenly spaced ranks" not in few
    assert "5,000 runs" in many  # the tick still counts every run
    # One <use> per drawn dot (matplotlib's SVG markers), plus a handful for the legend and the diamond.
    assert charts.MAX_DOTS + 50 <= many.count("<use ") <= charts.MAX_DOTS + 50 + 10


def test_no_gpu_hours_is_said_in_words_not_dashes(tmp_path: Path) -> None:
    """GPU jobs that all ran 0 s (seen in the XDMoD sample): the state and size leads say there were no
    GPU-hours instead of 'consumed – of GPU time'."""
    con = duckdb.connect(str(tmp_path / "zero.duckdb"))
    _ddl(con)
    _core_and_raw(con)
    _marts(con)
    con.execute("UPDATE marts.gpu_time_by_state SET gpu_hours = 0, share_gpu_hours = NULL")
    con.execute("UPDATE marts.size_buckets SET gpu_hours = 0, share_gpu_hours = NULL")
    paths = render_nightly_report(con, tmp_path / "out", report_date=date(2026, 10, 31))
    con.close()
    html = paths.html.read_text()
    states, sizes = _visible_text(_section(html, "states")), _visible_text(_section(html, "sizes"))
    # The size mart's 'all' row for 1-GPU jobs has share_jobs 0.583.
    assert "No GPU-hours were recorded in 2026-08-03 … 2026-10-31:" in states and "consumed –" not in states
    assert "No GPU-hours were recorded, so no size shares of GPU time; single-GPU jobs are 58.3 % of jobs." in sizes


def test_without_accounting_the_report_day_follows_the_node_logs(tmp_path: Path) -> None:
    from gpusre.reports.nightly import build_nightly_context

    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    _ddl(con)
    con.execute("""INSERT INTO lake.syslog_lines (source_file, line_no, ts, host, node, message)
                   VALUES ('syslog/a.log', 1, TIMESTAMPTZ '2026-10-30 00:07:00+00', 'gpu001', 'gpu001', 'x'),
                          ('syslog/a.log', 2, TIMESTAMPTZ '2026-10-28 12:00:00+00', 'gpu001', 'gpu001', 'y')""")
    ctx = build_nightly_context(con)
    # The logs end just after midnight: the last complete day is the 29th, not today.
    assert ctx["meta"]["report_date"] == fmt_date(date(2026, 10, 29))
    con.close()


def test_log_axis_labels_are_plain_numbers_and_a_one_day_line_shows_its_points() -> None:
    """Queue waits of 3.5–27 min span less than a decade: matplotlib labelled the minor ticks "4×10⁰",
    "6×10⁰", "2×10¹" — on a screen in a meeting they read as plain 4, 6, 20. A utilization chart of one
    day drew lines of one point (nothing visible): its points are marked."""
    import re
    from datetime import date as _date

    from gpusre.reports.kit import charts

    svg = charts.quantile_chart([("2-8", 3.5, 6.5, 9.6, 10.0), ("9-64", 5.0, 22.5, 26.5, 26.9)], "Queue wait", "min")
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert {"4", "6", "10", "20"} <= set(labels), labels
    assert not any("10^" in t or "\\times" in t or "×" in t for t in labels)
    one_day = charts.utilization_chart([_date(2026, 11, 17)], [3072.0], [1324.0], 0.431, "Utilization")
    week = charts.utilization_chart([_date(2026, 11, d) for d in range(1, 16)], [3072.0] * 15, [1324.0] * 15, 0.431, "U")
    assert one_day.count("<use ") > week.count("<use ")  # the markers of the short series


def test_charts_drawn_once_are_cropped_as_a_tight_savefig_crops_them(monkeypatch) -> None:
    """figure_to_svg draws a chart once and crops the viewBox to the figure's tight box, where
    savefig(bbox_inches="tight") drew it twice: the crop must be the box savefig would give, for a
    chart whose legend lies below its axes (outside the canvas) and one to the right of them."""
    import io

    from matplotlib.figure import Figure

    from gpusre.reports.kit import charts

    figures: list[Figure] = []
    once = charts.figure_to_svg
    monkeypatch.setattr(charts, "figure_to_svg", lambda fig: figures.append(fig) or once(fig))
    svgs = [charts.state_share_chart([("COMPLETED", 0.7, 0.6), ("FAILED", 0.2, 0.3), ("NODE_FAIL", 0.1, 0.1)], "t"),
            charts.mtbf_chart([("gpu", "all", 120.0, 80.0, 200.0, True), ("gpu", "2026-11", 90.0, 40.0, 200.0, True),
                               ("host_power", "all", 900.0, 300.0, 2000.0, False)], "MTBF")]
    for fig, svg in zip(figures, svgs):
        assert svg is not None
        x, y, w, h = (float(v) for v in re.search(r'viewBox="([^"]*)"', svg).group(1).split())
        reference = io.StringIO()
        fig.savefig(reference, format="svg", bbox_inches="tight")
        rw, rh = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', reference.getvalue()).groups())
        assert abs(w - rw) < 0.5 and abs(h - rh) < 0.5, ((w, h), (rw, rh))
    assert float(re.search(r'viewBox="[^ ]+ [^ ]+ [^ ]+ ([^"]+)"', svgs[0]).group(1)) > 2.1 * 72  # legend below kept


def test_dense_bar_charts_draw_one_path_per_colour() -> None:
    """A year of daily stacked bars and a node x day heat map are one SVG path per state / colour, not
    one element per bar or cell (the collection wrote ~2,000 elements for a year: a third of a second),
    and they still show what they did: the bar tops reach the day's total, the legend names every state,
    a heat-map cell's down hours stay text."""
    from datetime import date as _date, timedelta as _td

    from gpusre.reports.kit import charts

    days = [_date(2025, 12, 1) + _td(days=i) for i in range(365)]
    series = {"COMPLETED": [100.0 + i % 7 for i in range(365)], "FAILED": [0.0 if i % 3 else 40.0 for i in range(365)],
              "NODE_FAIL": [5.0] * 365}
    svg = charts.daily_state_chart(days, series, "GPU-hours by state")
    fills = {c: len(re.findall(rf'<path [^>]*style="fill: {c}', svg))
             for c in (charts.state_colour(s) for s in series)}
    # one path in the axes and one legend swatch per state
    assert all(n == 2 for n in fills.values()), fills
    assert {"COMPLETED", "FAILED", "NODE_FAIL"} <= set(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    assert max(int(t.replace(",", "")) for t in re.findall(r">(\d[\d,]*)<", svg)) >= 145  # the y axis reaches the top

    rows = [("cluster", [1.0, 0.5, None], [0.0, 12.0, None], True),
            ("gpu0001", [1.0, 0.0, 1.0], [0.0, 24.0, 0.0], False),
            ("gpu0002", [0.5, 1.0, 1.0], [12.0, 0.0, 0.0], False)]
    heat = charts.availability_heatmap_chart([_date(2026, 11, d) for d in (1, 2, 3)], rows, "Availability")
    colours = {charts.availability_colour(s) for _, shares, _, _ in rows for s in shares}
    cell_paths = [c for c in colours if re.search(rf'<path [^>]*style="fill: {c}[^"]*stroke: #ffffff', heat)]
    assert len(cell_paths) == len(colours), (colours, cell_paths)
    assert sum(len(re.findall(rf'style="fill: {c}[^"]*stroke: #ffffff', heat)) for c in colours) == len(colours)
    assert {"12", "24"} <= set(re.findall(r"<text[^>]*>([^<]*)</text>", heat))
