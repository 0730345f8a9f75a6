"""A nightly re-rendered for a past night shows what that night showed: every count bounded by the end of
the report day, the snapshot marts (no per-day rows) said to be snapshots; and the infrastructure's victims
worded one way ("3 jobs + 1 requeued run") in every section, the SLO review's two budgets named apart.

A hand-made warehouse of three complete days, 2026-11-24 … 2026-11-26 (values below, computed by hand)."""

from __future__ import annotations

from datetime import date, datetime, timezone

import duckdb
import pytest
from report_html import section, visible_text

from gpusre.reports.kit.formatting import jobs_and_requeued_runs
from gpusre.reports.kit.render import write_report
from gpusre.reports.nightly.meta import NightlyMeta, job_totals, summary_through, unbounded_note
from gpusre.reports.nightly.report import build_nightly_context
from gpusre.reports.slo.sections.status import _gone_text, _rolling_gone
from gpusre.reports.slo.window import SliWindow

D24, D25, D26 = date(2026, 11, 24), date(2026, 11, 25), date(2026, 11, 26)

#: marts.job_totals 'day' rows: (day, jobs, runs, GPU-h, failed jobs, failed runs, failed GPU-h).
_DAYS = [(D24, 10, 10, 100.0, 2, 2, 20.0), (D25, 20, 21, 300.0, 4, 5, 60.0), (D26, 30, 30, 600.0, 6, 6, 90.0)]
#: marts.failure_attribution_summary 'day' rows, state '(all)': (day, attribution, jobs, runs, lost GPU-h).
_ATTR = [(D24, "infrastructure", 1, 1, 2.0), (D24, "user", 1, 1, 0.0),
         (D25, "infrastructure", 2, 3, 5.0), (D25, "user", 2, 2, 0.0),
         (D26, "infrastructure", 3, 3, 6.0), (D26, "user", 3, 3, 0.0)]


def _warehouse(partial_last_day: bool = False) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA core; CREATE SCHEMA marts")
    # one failed GPU job a day (the marts above are the counts; these rows only name the jobs)
    con.execute("""CREATE TABLE core.jobs (job_id VARCHAR, "user" VARCHAR, name VARCHAR, n_gpus INTEGER,
                   elapsed_s BIGINT, state VARCHAR, exit_code INTEGER, exit_signal INTEGER, gpu_hours DOUBLE,
                   end_ts TIMESTAMPTZ, end_day DATE)""")
    con.executemany("INSERT INTO core.jobs VALUES (?, 'u', 'train', 8, 3600, 'FAILED', 1, 0, 8.0, ?, ?)",
                    [(f"j{d.day}", f"{d} 12:00:00+00", d) for d, *_ in _DAYS])
    con.execute("""CREATE TABLE marts.job_failure_attribution (job_id VARCHAR, state VARCHAR, end_ts TIMESTAMPTZ,
                   n_gpus INTEGER, attribution VARCHAR, rule VARCHAR, component VARCHAR, cause_class VARCHAR,
                   incident_id VARCHAR, evidence_event_ids BIGINT[], evidence_node_state VARCHAR, lost_gpu_hours DOUBLE)""")
    con.execute("""INSERT INTO marts.job_failure_attribution SELECT job_id, state, end_ts, n_gpus, 'infrastructure',
                   'xid', 'gpu_xid', 'hardware', NULL, [1], NULL, 2.0 FROM core.jobs""")
    con.execute("CREATE TABLE marts.day_coverage (day DATE, covered_hours DOUBLE, partial BOOLEAN)")
    con.executemany("INSERT INTO marts.day_coverage VALUES (?, ?, ?)",
                    [(D24, 24.0, False), (D25, 24.0, False), (D26, 0.1 if partial_last_day else 24.0, partial_last_day)])
    con.execute("""CREATE TABLE marts.job_totals (scope VARCHAR, day DATE, first_day DATE, last_day DATE, gpu_jobs BIGINT,
                   gpu_runs BIGINT, gpu_hours DOUBLE, failed_jobs BIGINT, failed_runs BIGINT, failed_gpu_hours DOUBLE,
                   failed_share_gpu_hours DOUBLE)""")
    con.executemany("INSERT INTO marts.job_totals VALUES ('day', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(d, d, d, j, r, h, fj, fr, fh, fh / h) for d, j, r, h, fj, fr, fh in _DAYS])
    # the whole record: 60 jobs, 61 runs, 1,000 GPU-h, 12 failed jobs, 13 failed runs, 170 GPU-h failed (17 %)
    con.execute("INSERT INTO marts.job_totals VALUES ('all', NULL, ?, ?, 60, 61, 1000.0, 12, 13, 170.0, 0.17)", [D24, D26])
    con.execute("""CREATE TABLE marts.failure_attribution_summary (scope VARCHAR, day DATE, attribution VARCHAR,
                   state VARCHAR, jobs BIGINT, runs BIGINT, lost_gpu_hours DOUBLE)""")
    for d, a, j, r, lost in _ATTR:
        con.execute("INSERT INTO marts.failure_attribution_summary VALUES ('day', ?, ?, '(all)', ?, ?, ?), "
                    "('day', ?, ?, 'FAILED', ?, ?, ?)", [d, a, j, r, lost, d, a, j, r, lost])
    con.execute("""INSERT INTO marts.failure_attribution_summary
                   SELECT DISTINCT 'day', day, '(all)', state, sum(jobs) OVER w, sum(runs) OVER w, sum(lost_gpu_hours) OVER w
                   FROM marts.failure_attribution_summary WINDOW w AS (PARTITION BY day, state)""")
    con.execute("""INSERT INTO marts.failure_attribution_summary
                   SELECT DISTINCT 'all', NULL, attribution, state, sum(jobs) OVER w, sum(runs) OVER w,
                          sum(lost_gpu_hours) OVER w
                   FROM marts.failure_attribution_summary WINDOW w AS (PARTITION BY attribution, state)""")
    con.execute("""CREATE TABLE marts.hw_incidents (incident_id VARCHAR, component VARCHAR, scope VARCHAR,
                   cause_class VARCHAR, start_ts TIMESTAMPTZ, nodes VARCHAR[], n_events INTEGER, label_source VARCHAR,
                   root_cause VARCHAR, leaf_switch VARCHAR, affected_jobs INTEGER, lost_gpu_hours DOUBLE,
                   nodes_recovered INTEGER, recovered_ts TIMESTAMPTZ, hours_to_recovery DOUBLE)""")
    # one incident a day; the 11-25 one's nodes ran a completing job only on 11-26 (after that night)
    con.execute("""INSERT INTO marts.hw_incidents VALUES
        ('inc-a', 'gpu_xid', 'node', 'hardware', '2026-11-24 10:00:00+00', ['n1'], 1, 'catalog', NULL, NULL, 1, 2.0, 1,
         '2026-11-24 14:00:00+00', 4.0),
        ('inc-b', 'gpu_xid', 'node', 'hardware', '2026-11-25 10:00:00+00', ['n2'], 1, 'catalog', NULL, NULL, 3, 5.0, 1,
         '2026-11-26 02:00:00+00', 16.0),
        ('inc-c', 'gpu_xid', 'node', 'hardware', '2026-11-26 10:00:00+00', ['n3'], 1, 'catalog', NULL, NULL, 3, 6.0, 0,
         NULL, NULL)""")
    return con


def test_totals_through_the_report_day_are_the_day_rows_up_to_it() -> None:
    con = _warehouse()
    # 11-24 + 11-25: 10 + 20 jobs, 10 + 21 runs, 100 + 300 GPU-h, 2 + 4 failed, 20 + 60 failed GPU-h = 20 %
    tot = job_totals(con, through=D25)
    assert (tot["gpu_jobs"], tot["gpu_runs"], tot["gpu_hours"], tot["failed_jobs"], tot["failed_runs"]) == (30, 31, 400.0, 6, 7)
    assert tot["failed_share_gpu_hours"] == pytest.approx(0.20)
    assert (tot["first_day"], tot["last_day"]) == (D24, D25)
    # nothing ends after 11-26: the mart's own 'all' row
    assert job_totals(con, through=D26)["failed_share_gpu_hours"] == 0.17
    infra = next(r for r in summary_through(con, D25) if r["attribution"] == "infrastructure" and r["state"] == "(all)")
    assert (infra["n"], infra["runs"], infra["lost"]) == (3, 4, 7.0)  # 1 + 2 jobs, 1 + 3 runs, 2 + 5 GPU-h


def test_past_night_rerender_bounds_every_count(tmp_path) -> None:
    con = _warehouse()
    ctx = build_nightly_context(con, report_date=D25, generated_at=datetime(2026, 12, 1, tzinfo=timezone.utc))
    assert ctx["meta"]["period"] == "2026-11-24 … 2026-11-25"
    page = write_report(tmp_path, "nightly-2026-11-25", "nightly", ctx).html.read_text(encoding="utf-8")
    head = visible_text(section(page, "headline"))
    assert "From 2026-11-24 … 2026-11-25, 30 GPU jobs ended, having used 400 GPU-hours" in head
    assert "GPU jobs ended 30 whole period" in head and "GPU-hours 400 whole period" in head
    # incidents that began by the end of 11-25: inc-a, inc-b
    assert "Hardware incidents 2 whole period · 1 began 2026-11-25" in head
    # 3 jobs + 1 requeued run = 4 runs, 2 + 5 = 7 GPU-h lost, of 2 + 4 = 6 failed jobs
    assert "Infra failures, whole period 4 7.0 GPU-h lost · 3 of 6 failed jobs + 1 requeued run" in head
    attribution = visible_text(section(page, "attribution"))
    assert "Of 6 failed jobs in 2026-11-24 … 2026-11-25" in attribution
    assert "3 were infrastructure + 1 requeued run (7.0 GPU-h lost)" in attribution
    failures = visible_text(section(page, "failures"))
    assert "over 2026-11-24 … 2026-11-25 failed runs hold 20.0 % of GPU-hours" in failures
    incidents = visible_text(section(page, "incidents"))
    assert "The top 2 of 2 incidents lost 7.0 GPU-hours" in incidents
    assert "inc-c" not in incidents
    # inc-b's nodes completed a job only on 11-26: that night had not seen it
    assert "not yet by the end of 2026-11-25" in incidents


def test_latest_night_keeps_a_trailing_partial_day() -> None:
    # 11-26 is the dump's sliver (partial): the 11-25 night's own report counted it, and so does a re-render
    con = _warehouse(partial_last_day=True)
    meta = build_nightly_context(con, report_date=D25)["meta"]
    assert meta["period"] == "2026-11-24 … 2026-11-26"


def test_snapshot_note_only_on_a_past_night() -> None:
    now = datetime(2026, 12, 1, tzinfo=timezone.utc)
    past = NightlyMeta(D25, D24, D25, now, "wh", D26)
    assert past.past and past.through == D25
    assert unbounded_note(past, "This table") == (" This table is a snapshot of the whole record, through 2026-11-26: "
                                                  "it cannot be bounded by the report day 2026-11-25.")
    latest = NightlyMeta(D26, D24, D26, now, "wh", D26)
    assert not latest.past and latest.through == date.max and unbounded_note(latest, "This table") == ""


def test_infrastructure_victims_have_one_wording() -> None:
    # the probe's case: 13 failed jobs and the NODE_FAIL run of a job that completed after its requeue
    assert jobs_and_requeued_runs(13, 14) == "13 jobs + 1 requeued run"
    assert jobs_and_requeued_runs(3, 3, "infrastructure-failed job") == "3 infrastructure-failed jobs"
    assert jobs_and_requeued_runs(1, 3) == "1 job + 2 requeued runs"


def test_slo_budget_gone_names_both_budgets() -> None:
    # the mart's rolling budget exhausted from the window's first day; the window's own budget (0.5 % of 312
    # events = 1.56 bad allowed) overspent on day 2 (1 + 2 = 3 bad > 1.56)
    s = SliWindow("job_infra_success", 0.995, [D24, D25], 309.0, 312.0, [], [], D25, {}, 2, window_days=30,
                  exhausted_spans=[{"from_day": D24, "start_day": D24, "to_day": D25, "end_day": D26,
                                    "days_in_window": 2, "worst_budget_remaining": -11.6, "worst_day": D25}])
    assert _rolling_gone(s) == "2026-11-24"
    assert _gone_text(s) == (", its 30-day rolling budget exhausted from 2026-11-24; "
                             "the window's budget overspent from 2026-11-25")
    s.exhausted_spans[0]["start_day"] = date(2026, 11, 20)
    assert _rolling_gone(s) == "2026-11-24 (since 2026-11-20)"
