"""marts.data_freshness and marts.log_coverage_daily on a hand-made landing directory (real sacct
and syslog files, real Dagster materializations), and the nightly report's data warnings."""

from __future__ import annotations

import shutil
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpusre.assets.core_jobs import core_jobs
from gpusre.assets.data_coverage import (data_coverage_marts, dense_sources_have_no_empty_days, no_refused_files,
                                         no_silent_nodes)
from gpusre.assets.ingest_alerts import raw_alert_notifications
from gpusre.assets.ingest_sacct import raw_sacct
from gpusre.assets.ingest_syslog import raw_syslog
from gpusre.assets.ingest_node_states import raw_slurm_events
from gpusre.assets.report_marts import report_marts
from gpusre.reports.nightly import render_nightly_report
from gpusre.reports.slo import render_slo_report
from gpusre.models.warehouse import connect
from gpusre.pipelines.resources import default_resources
from gpusre.pipelines.runner import run_pipeline
from report_html import visible_text

# Job 3 holds gpu[001-003] on 2026-03-03; job 4 ends after midnight, so accounting covers that day.
DUMP = """JobID|State|Submit|Start|End|Elapsed|AllocTRES|NNodes|NodeList
1|COMPLETED|2026-03-01T09:00:00|2026-03-01T10:00:00|2026-03-01T12:00:00|02:00:00|gres/gpu=8|1|gpu001
2|COMPLETED|2026-03-02T09:00:00|2026-03-02T10:00:00|2026-03-02T12:00:00|02:00:00|gres/gpu=16|2|gpu[001-002]
3|FAILED|2026-03-03T08:00:00|2026-03-03T09:00:00|2026-03-03T23:30:00|14:30:00|gres/gpu=24|3|gpu[001-003]
4|COMPLETED|2026-03-03T22:00:00|2026-03-03T23:00:00|2026-03-04T00:30:00|01:30:00|gres/gpu=8|1|gpu002
"""
# Node logs: 03-01 and 03-03 only (the 03-02 file is missing); gpu003 never logs; the last line
# is at 20:00 on 03-03.
SYSLOG = {
    "2026-03-01": ["Mar  1 10:00:00 gpu001 kernel: eth0: link up", "Mar  1 11:00:00 gpu002 sshd[42]: Accepted key"],
    "2026-03-03": ["Mar  3 09:00:00 gpu001 kernel: eth0: link up", "Mar  3 20:00:00 gpu002 sshd[42]: Accepted key"],
}


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-03-03.psv").write_text(DUMP)
    for day, lines in SYSLOG.items():
        (landing / "syslog" / day).mkdir(parents=True)
        (landing / "syslog" / day / "central.log").write_text("\n".join(lines) + "\n")
    (landing / "cluster.yaml").write_text("nodes: gpu[001-003]\n")
    wh = tmp_path / "w.duckdb"
    result = dg.materialize(
        [raw_sacct, core_jobs, raw_syslog, raw_slurm_events, raw_alert_notifications, data_coverage_marts,
         dense_sources_have_no_empty_days, no_silent_nodes],
        resources=default_resources(str(wh), str(landing), str(tmp_path / "reports")))
    assert result.success
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    # Both warn (a missing day of node logs; nodes silent on 03-02, the last full log day).
    assert not checks["dense_sources_have_no_empty_days"].passed
    assert checks["dense_sources_have_no_empty_days"].metadata["syslog"].value == "1 day(s): 2026-03-02"
    assert not checks["no_silent_nodes"].passed
    assert checks["no_silent_nodes"].metadata["nodes"].value == "gpu001, gpu002"
    return wh


def test_freshness_per_source(warehouse: Path) -> None:
    con = connect(warehouse, read_only=True)
    rows = {r["source_kind"]: r for r in con.sql("SELECT * FROM marts.data_freshness").pl().iter_rows(named=True)}
    con.close()
    assert set(rows) == {"sacct", "syslog"}  # no node-state or alert files: nothing to judge
    sy, sa = rows["syslog"], rows["sacct"]
    assert (sy["files"], sy["records"], sy["dense"]) == (2, 4, True)
    assert sy["first_record_ts"] == datetime(2026, 3, 1, 10, tzinfo=timezone.utc)
    assert sy["last_record_ts"] == datetime(2026, 3, 3, 20, tzinfo=timezone.utc)
    assert (sy["days_with_records"], sy["n_empty_days"], sy["empty_days"]) == (2, 1, [date(2026, 3, 2)])
    # sacct: per record the latest moment it speaks for (end, or start + elapsed; submit when later);
    # every day from 03-01 to 03-04 has one.
    assert (sa["records"], sa["n_empty_days"]) == (4, 0)
    assert sa["last_record_ts"] == datetime(2026, 3, 4, 0, 30, tzinfo=timezone.utc)


def test_log_coverage_names_the_silent_nodes(warehouse: Path) -> None:
    con = connect(warehouse, read_only=True)
    rows = con.sql("SELECT day, nodes_with_jobs, nodes_with_jobs_logging, n_silent_nodes, silent_nodes, nodes_logging "
                   "FROM marts.log_coverage_daily ORDER BY day").fetchall()
    con.close()
    assert rows == [
        (date(2026, 3, 1), 1, 1, 0, [], 2),                  # gpu001 ran job 1 and logged
        (date(2026, 3, 2), 2, 0, 2, ["gpu001", "gpu002"], 0),  # the missing file
        (date(2026, 3, 3), 3, 2, 1, ["gpu003"], 2),          # job 3 on gpu003, which never logs
    ]


def test_nightly_report_warns_about_incomplete_inputs(warehouse: Path, tmp_path: Path) -> None:
    con = connect(warehouse)
    try:
        paths = render_nightly_report(con, tmp_path / "out", report_date=date(2026, 3, 3))
        quiet = render_nightly_report(con, tmp_path / "quiet", report_date=date(2026, 3, 1))
        before = render_nightly_report(con, tmp_path / "before", report_date=date(2026, 2, 27))
    finally:
        con.close()
    text = visible_text(paths.html.read_text())
    assert ("Data warning: Node logs end at 2026-03-03 20:00 UTC (the last record), before the end of 2026-03-03: node events, "
            "hardware incidents and failure attribution after that are incomplete — unless the cluster was quiet.") in text
    assert "Data warning: Node logs: no records at all on 2026-03-02" in text
    assert "Data warning: 1 node of 3 that ran jobs on 2026-03-03 logged nothing (gpu003)" in text
    assert "Slurm accounting ends" not in text  # accounting runs past the day's end
    assert "> **Data warning:** 1 node of 3 that ran jobs on 2026-03-03 logged nothing" in paths.markdown.read_text()
    # 2026-03-01: complete inputs, no warning (the 03-02 gap is after it).
    assert "Data warning" not in quiet.html.read_text()
    # A day before the data is no quiet night.
    early = visible_text(before.html.read_text())
    assert ("Data warning: Slurm accounting begins on 2026-03-01, after the start of 2026-02-27: there are no job "
            "figures for the days before.") in early
    assert "Data warning: Node logs begin on 2026-03-01" in early


def test_the_default_nightly_day_names_the_later_partial_day(warehouse: Path, tmp_path: Path) -> None:
    """The default report day is the last day Slurm accounting covers completely (03-03 here), even when
    another dense source stops inside it (the node logs' last record is 03-03 20:00): the report says so
    at the top — events after 20:00 are unknown — and names the later day the dump reaches into (03-04)
    with the command to render it. An explicit --date says nothing of it."""
    con = connect(warehouse)
    try:
        default = render_nightly_report(con, tmp_path / "default")
        explicit = render_nightly_report(con, tmp_path / "explicit", report_date=date(2026, 3, 2))
    finally:
        con.close()
    text = visible_text(default.html.read_text())
    assert "nightly-2026-03-03" in default.html.name
    assert ("Data warning: This report is for 2026-03-03, not 2026-03-04, the last day with data (Slurm "
            "accounting): no day after 2026-03-03 is covered completely by Slurm accounting") in text
    assert "gpusre report nightly --date 2026-03-04" in text
    assert ("Data warning: Node logs end at 2026-03-03 20:00 UTC (the last record), before the end of "
            "2026-03-03: node events, hardware incidents and failure attribution after that are incomplete") in text
    assert "This report is for" not in visible_text(explicit.html.read_text())


def test_slo_report_warns_about_gaps_in_its_window(warehouse: Path, tmp_path: Path) -> None:
    con = connect(warehouse)
    try:
        paths = render_slo_report(con, tmp_path / "slo", date(2026, 3, 1), date(2026, 3, 3))
    finally:
        con.close()
    text = visible_text(paths.html.read_text())
    assert "Data warning: Node logs end at 2026-03-03 20:00 UTC (the last record), before the end of 2026-03-03" in text
    assert "Data warning: Node logs: no records at all on 2026-03-02" in text
    # Silent node-days in the window: gpu001 and gpu002 on 03-02 (the missing file), gpu003 on 03-03.
    assert ("Data warning: On 2 days of 2026-03-01 … 2026-03-03, nodes that ran jobs logged nothing "
            "(3 node-days; most on 2026-03-02: gpu[001-002])") in text
    assert "> **Data warning:** Node logs: no records at all on 2026-03-02" in paths.markdown.read_text()


def test_missing_days_are_shown_as_runs() -> None:
    from gpusre.reports.coverage import _day_ranges

    d = [date(2026, 3, x) for x in (2, 3, 4, 5, 9)]
    assert _day_ranges(d) == "2026-03-02 … 2026-03-05, 2026-03-09"
    many = [date(2026, 3, x) for x in range(1, 20, 2)]  # ten single days
    assert _day_ranges(many) == ("2026-03-01, 2026-03-03, 2026-03-05, 2026-03-07, 2026-03-09, 2026-03-11 "
                                 "and 4 more days")


def test_day_coverage_and_partial_flags(warehouse: Path) -> None:
    """Hand-computed: the accounting's span 03-01 10:00 (job 1's start: the earliest start on the day of
    the first record, job 1's end at 12:00) .. 03-04 00:30, node logs 03-01 10:00 .. 03-03 20:00;
    covered = their intersection, each from its first day's midnight (the first day counts whole,
    models/accounting_span.py): 03-01 00:00 .. 03-03 20:00."""
    con = connect(warehouse, read_only=True)
    try:
        cov = con.sql("SELECT day, covered_hours, partial, sources FROM marts.day_coverage ORDER BY day").fetchall()
        log_partial = con.sql("SELECT day, partial FROM marts.log_coverage_daily ORDER BY day").fetchall()
    finally:
        con.close()
    assert cov == [(date(2026, 3, 1), 24.0, False, "sacct, syslog"),  # the first day whole, from midnight
                   (date(2026, 3, 2), 24.0, False, "sacct, syslog"),
                   (date(2026, 3, 3), 20.0, True, "sacct, syslog"),   # node logs end at 20:00: 4 h > 1 h
                   (date(2026, 3, 4), 0.0, True, "sacct, syslog")]    # only accounting reaches past midnight
    assert log_partial == [(date(2026, 3, 1), False), (date(2026, 3, 2), False), (date(2026, 3, 3), True)]


#: The definition of "busy" before it was generated per job: a range join of jobs and days. Kept as
#: the reference the mart must agree with.
_BUSY_REFERENCE = """
WITH span AS (SELECT min(day) AS first_day, max(day) AS last_day FROM raw.record_days WHERE source_kind = 'syslog'),
days AS (SELECT unnest(generate_series(first_day, last_day, INTERVAL 1 DAY))::DATE AS day FROM span),
held AS (SELECT nodes, start_ts, coalesce(end_ts, start_ts + to_seconds(coalesce(elapsed_s, 0))) AS until_ts
         FROM core.jobs WHERE start_ts IS NOT NULL AND len(nodes) > 0)
SELECT d.day, count(DISTINCT n) AS nodes_with_jobs
FROM held AS h JOIN days AS d
  ON h.start_ts < (d.day + INTERVAL 1 DAY)::TIMESTAMPTZ AND h.until_ts >= d.day::TIMESTAMPTZ,
  unnest(h.nodes) AS u(n)
GROUP BY d.day
"""


@settings(max_examples=40, deadline=None)
# the edges by name: an end before the start on the same day, an end at midnight, a running job
@example(jobs=[(4 * 24 + 40, -2, False, ["gpu001"])])
@example(jobs=[(4 * 24 + 92, 4, False, ["gpu002"]), (4 * 48 + 8, 0, True, ["gpu003"])])
@given(jobs=st.lists(st.tuples(st.integers(0, 5 * 96), st.integers(-8, 3 * 96), st.booleans(),
                               st.lists(st.sampled_from(["gpu001", "gpu002", "gpu003"]), min_size=1, max_size=3)),
                     min_size=1, max_size=12))
def test_busy_nodes_per_day_match_the_range_join_definition(jobs: list, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Jobs on 15-minute marks over five days, ending at midnight, running (no end), or with an end
    before their start (bad clocks): the mart's per-job day expansion counts the nodes with jobs of
    each day exactly as the range join of jobs and days did."""
    from gpusre.models.marts_runner import run_mart_sql

    con = connect(tmp_path_factory.mktemp("busy") / "w.duckdb")
    try:
        t0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
        con.execute("INSERT INTO raw.record_days (source_kind, source_file, day, records, first_ts, last_ts, nodes) "
                    "VALUES ('syslog', 'a', DATE '2026-03-02', 1, ?, ?, ['gpu001']), "
                    "       ('syslog', 'b', DATE '2026-03-04', 1, ?, ?, ['gpu002'])", [t0, t0, t0, t0])
        for i, (start, length, running, nodes) in enumerate(jobs):
            start_ts = t0 + timedelta(minutes=15 * start)
            end_ts = None if running else start_ts + timedelta(minutes=15 * length)
            con.execute("INSERT INTO core.jobs BY NAME SELECT ? AS job_id, 'RUNNING' AS state, 0 AS restarts, "
                        "'f' AS source_file, ? AS line_no, ? AS start_ts, ? AS end_ts, ? AS elapsed_s, ? AS nodes",
                        [str(i), i, start_ts, end_ts, max(length, 0) * 900, nodes])
        run_mart_sql(con, "log_coverage_daily")
        got = {d: n for d, n in con.sql("SELECT day, nodes_with_jobs FROM marts.log_coverage_daily").fetchall() if n}
        want = dict(con.sql(_BUSY_REFERENCE).fetchall())
        assert got == want
    finally:
        con.close()


@pytest.mark.parametrize(("cluster_yaml", "expected", "warnings"), [
    # (fleet_source, configured_nodes, nodes_outside_fleet, outside_examples, max_gpus_per_node_seen, understated)
    ("nodes: gpu[001-003]\n", ("cluster.yaml", 3, 0, [], 8, False), []),
    ("", ("default", 100, 0, [], 8, False),
     ["cluster.yaml does not set nodes: capacity, utilization and goodput assume the default fleet of 100 nodes × "
      "8 GPUs, and the accounting shows jobs on 3 nodes: set nodes and gpus_per_node in cluster.yaml "
      "(marts.fleet_coverage)."]),
    ("nodes: gpu[001-002]\n", ("cluster.yaml", 2, 1, ["gpu003"], 8, True),
     ["Slurm accounting shows jobs on 3 nodes, 1 beyond the 2-node fleet that capacity, utilization, goodput and "
      "MTBF assume (cluster.yaml, e.g. gpu003): set nodes in cluster.yaml (marts.fleet_coverage)."]),
    ("nodes: 2\ngpus_per_node: 4\n", ("cluster.yaml", 2, 1, [], 8, True),
     ["Slurm accounting shows jobs on 3 nodes, 1 beyond the 2-node fleet that capacity, utilization and goodput "
      "assume (cluster.yaml): set nodes in cluster.yaml (marts.fleet_coverage).",
      "Jobs used up to 8 GPUs per node, but capacity assumes 4: set gpus_per_node in cluster.yaml "
      "(marts.fleet_coverage)."]),
])
def test_fleet_coverage_warns_when_the_accounting_shows_more_than_the_fleet(
        tmp_path: Path, cluster_yaml: str, expected: tuple, warnings: list[str]) -> None:
    # DUMP: jobs on gpu001, gpu[001-002], gpu[001-003], gpu002, each with 8 GPUs per node.
    from gpusre.reports.coverage import coverage_warnings

    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-03-03.psv").write_text(DUMP)
    (landing / "cluster.yaml").write_text(cluster_yaml)
    wh = tmp_path / "w.duckdb"
    result = dg.materialize([raw_sacct, core_jobs, data_coverage_marts],
                            resources=default_resources(str(wh), str(landing), str(tmp_path / "reports")))
    assert result.success
    con = connect(wh, read_only=True)
    try:
        row = con.sql("SELECT fleet_source, configured_nodes, nodes_outside_fleet, outside_examples, "
                      "max_gpus_per_node_seen, fleet_understated FROM marts.fleet_coverage").fetchall()
        assert row == [expected]
        fleet = [w for w in coverage_warnings(con, date(2026, 3, 3), date(2026, 3, 3)) if "fleet_coverage" in w]
        assert fleet == warnings
    finally:
        con.close()


@pytest.mark.parametrize(("folder", "fixture", "day"), [
    ("alerts", "alerts/prometheus-msteams_prom_post_request_12_alerts.json", date(2018, 3, 7)),
    ("slurm_events", "slurm_events/events_2026-11-02.txt", date(2026, 11, 2)),
])
def test_a_landing_without_accounting_or_logs_reports_its_own_last_day(folder: str, fixture: str, day: date,
                                                                        tmp_path: Path) -> None:
    """Alerts only, node states only: the nightly and the SLO window end on the data's last day (the
    last record's day), not on today — which read as 'nothing happened' months after the data."""
    from gpusre.reports.slo.window import default_window

    landing = tmp_path / "landing"
    (landing / folder).mkdir(parents=True)
    shutil.copy(Path(__file__).parent / "fixtures" / fixture, landing / folder)
    wh = tmp_path / "w.duckdb"
    run_pipeline(landing, wh, tmp_path / "reports")
    assert [p.name for p in (tmp_path / "reports").glob("nightly-*.md")] == [f"nightly-{day}.md"]
    con = connect(wh, read_only=True)
    try:
        assert default_window(con)[1] == day
    finally:
        con.close()


@pytest.mark.parametrize(("leaves", "incidents", "warned"), [
    ("", [("network_switch", "fabric", 4)], True),
    ('leaf_switches: {leaf01: "gpu[001-004]"}\n', [("network_switch", "leaf_switch", 4)], False),
])
def test_without_leaf_switches_a_switch_failure_is_one_fabric_incident_and_the_report_says_so(
        tmp_path: Path, leaves: str, incidents: list[tuple[str, str, int]], warned: bool) -> None:
    """gpu001-gpu004 lose their InfiniBand links within 3 s (a leaf switch died). cluster.yaml with the
    leaf: one network_switch incident of 4 nodes under leaf01. Without it the links lost within a minute
    are still one incident, an upstream `fabric` one naming no switch, and the reports' data warnings say
    so and what to set."""
    from gpusre.reports.coverage import coverage_warnings

    landing = tmp_path / "landing"
    (landing / "syslog" / "2026-11-30").mkdir(parents=True)
    (landing / "cluster.yaml").write_text('cluster: t\ntimezone: UTC\nnodes: "gpu[001-008]"\n' + leaves)
    lines = [f"Nov 30 0{h}:00:00 gpu00{n} systemd[1]: Started Session {h} of user root." for h in (0, 9) for n in range(1, 9)]
    lines += [f"Nov 30 04:00:0{n - 1} gpu00{n} kernel: mlx5_core 0000:08:00.0 mlx5_0: Port: 1 Link DOWN" for n in range(1, 5)]
    (landing / "syslog" / "2026-11-30" / "central.log").write_text("\n".join(sorted(lines)) + "\n")
    wh = tmp_path / "wh" / "gpusre.duckdb"
    run_pipeline(landing, wh, tmp_path / "reports")
    con = connect(wh.with_name("gpusre.snapshot.duckdb"), read_only=True)
    try:
        assert con.sql("SELECT component, scope, len(nodes) FROM marts.hw_incidents ORDER BY ALL").fetchall() == incidents
        said = [w for w in coverage_warnings(con, date(2026, 11, 30), date(2026, 11, 30)) if "leaf_switches" in w]
        assert said == ([
            "cluster.yaml names no leaf_switches, so links lost on several nodes within a minute count as one upstream "
            "fabric incident that names no switch (1 fabric incident here), though it may be one leaf switch: list the "
            "nodes under each leaf switch in cluster.yaml leaf_switches (marts.fleet_coverage)."] if warned else [])
    finally:
        con.close()


def test_without_leaf_switches_link_faults_minutes_apart_are_one_incident_per_node_and_the_report_says_so(
        tmp_path: Path) -> None:
    """gpu001-gpu004 lose their links 5 min apart (cable faults, or a leaf switch failing slowly): no
    simultaneity, so one network incident per node, and the warning says what cluster.yaml must name."""
    from gpusre.reports.coverage import coverage_warnings

    landing = tmp_path / "landing"
    (landing / "syslog" / "2026-11-30").mkdir(parents=True)
    (landing / "cluster.yaml").write_text('cluster: t\ntimezone: UTC\nnodes: "gpu[001-008]"\n')
    lines = [f"Nov 30 0{h}:00:00 gpu00{n} systemd[1]: Started Session {h} of user root." for h in (0, 9) for n in range(1, 9)]
    lines += [f"Nov 30 04:{5 * (n - 1):02d}:00 gpu00{n} kernel: mlx5_core 0000:08:00.0 mlx5_0: Port: 1 Link DOWN"
              for n in range(1, 5)]
    (landing / "syslog" / "2026-11-30" / "central.log").write_text("\n".join(sorted(lines)) + "\n")
    wh = tmp_path / "wh" / "gpusre.duckdb"
    run_pipeline(landing, wh, tmp_path / "reports")
    con = connect(wh.with_name("gpusre.snapshot.duckdb"), read_only=True)
    try:
        assert con.sql("SELECT component, scope, len(nodes) FROM marts.hw_incidents ORDER BY ALL").fetchall() == \
            [("network", "node", 1)] * 4
        said = [w for w in coverage_warnings(con, date(2026, 11, 30), date(2026, 11, 30)) if "leaf_switches" in w]
        assert said == [
            "cluster.yaml names no leaf_switches, so a leaf switch that fails counts as one network incident per node "
            "it cut off (4 network incidents on 4 nodes here): list the nodes under each leaf switch in cluster.yaml "
            "leaf_switches (marts.fleet_coverage)."]
    finally:
        con.close()


def test_a_source_whose_every_record_was_rejected_says_so_with_the_reason(tmp_path: Path) -> None:
    """sacct printed with SLURM_TIME_FORMAT=%s (epoch seconds): the file is read, every record is a
    reject. The warning says that, with the commonest reason, not "missing, empty or refused"."""
    from gpusre.reports.coverage import coverage_warnings

    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-03-03.psv").write_text(
        "JobID|State|Start|End|Elapsed|AllocTRES|NodeList\n"
        "1|COMPLETED|1772524800|1772528400|01:00:00|gres/gpu=8|gpu001\n"
        "2|FAILED|1772524800|1772526600|00:30:00|gres/gpu=8|gpu002\n")
    wh = tmp_path / "w.duckdb"
    assert dg.materialize([raw_sacct, report_marts],
                          resources=default_resources(str(wh), str(landing), str(tmp_path / "r"))).success
    con = connect(wh, read_only=True)
    try:
        said = [w for w in coverage_warnings(con, date(2026, 3, 3), date(2026, 3, 3)) if "Slurm accounting" in w]
        reason = con.sql("SELECT mode(error) FROM raw.rejects").fetchall()[0][0]
    finally:
        con.close()
    assert said and said[0].startswith("No Slurm accounting (sacct) records were loaded: all 2 were rejected (commonest reason: ")
    assert reason[:40] in said[0] and "missing, empty or refused" not in said[0]


def test_accounting_that_begins_with_a_running_job_begins_when_it_started(tmp_path: Path) -> None:
    """The first dump (cut 2026-11-02 00:00) lists one job, RUNNING since 11-01 12:00: the accounting
    speaks from 12:00 on 11-01 — the data warnings must not say it begins on 11-02 (the record is
    stamped at the dump's end), as the day coverage and every analytic already agree."""
    from gpusre.reports.coverage import coverage_warnings

    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    head = "JobID|State|Submit|Start|End|Elapsed|AllocTRES|NodeList\n"
    (landing / "sacct" / "sacct_2026-11-01.psv").write_text(
        head + "1|RUNNING|2026-11-01T11:50:00|2026-11-01T12:00:00|Unknown|12:00:00|gres/gpu=8|gpu001\n")
    (landing / "sacct" / "sacct_2026-11-02.psv").write_text(
        head + "1|COMPLETED|2026-11-01T11:50:00|2026-11-01T12:00:00|2026-11-02T06:00:00|18:00:00|gres/gpu=8|gpu001\n"
        "2|COMPLETED|2026-11-02T07:00:00|2026-11-02T07:00:00|2026-11-02T23:50:00|16:50:00|gres/gpu=8|gpu002\n")
    (landing / "cluster.yaml").write_text('nodes: "gpu[001-002]"\n')
    wh = tmp_path / "w.duckdb"
    assert dg.materialize([raw_sacct, core_jobs, data_coverage_marts],
                          resources=default_resources(str(wh), str(landing), str(tmp_path / "r"))).success
    con = connect(wh, read_only=True)
    try:
        first = con.sql("SELECT first_record_ts FROM marts.data_freshness WHERE source_kind = 'sacct'").fetchall()[0][0]
        said = [w for w in coverage_warnings(con, date(2026, 11, 1), date(2026, 11, 2)) if "begins on" in w]
    finally:
        con.close()
    assert first == datetime(2026, 11, 1, 12, tzinfo=timezone.utc)
    assert said == []


def _run_check(landing: Path, wh: Path, check_def: dg.AssetChecksDefinition
               ) -> tuple[dg.ExecuteInProcessResult, dg.AssetCheckEvaluation]:
    """Materialize the sources and the coverage marts of ``landing`` (a 3-node cluster.yaml is written)
    with ``check_def``; the run's result and that check's evaluation."""
    (landing / "cluster.yaml").write_text("nodes: gpu[001-003]\n")
    result = dg.materialize(
        [raw_sacct, core_jobs, raw_syslog, raw_slurm_events, raw_alert_notifications, data_coverage_marts, check_def],
        resources=default_resources(str(wh), str(landing), str(wh.parent / "reports")))
    check = next(e for e in result.get_asset_check_evaluations() if e.check_name == check_def.check_key.name)
    return result, check


def test_a_day_whose_file_loaded_empty_is_no_missing_day(tmp_path: Path) -> None:
    """The 03-02 node-log file is there but holds no line (a quiet day, a maintenance day's empty dump): the
    day has no record, but it was read, not lost — the check passes and names nothing (the reports say the
    file "holds no" records rather than "probably missing")."""
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-03-03.psv").write_text(DUMP)
    for day, lines in {**SYSLOG, "2026-03-02": []}.items():
        (landing / "syslog" / day).mkdir(parents=True)
        (landing / "syslog" / day / "central.log").write_text("".join(f"{line}\n" for line in lines))
    wh = tmp_path / "w.duckdb"
    result, check = _run_check(landing, wh, dense_sources_have_no_empty_days)
    con = connect(wh, read_only=True)
    try:
        empty = con.sql("SELECT empty_days FROM marts.data_freshness WHERE source_kind = 'syslog'").fetchall()
    finally:
        con.close()
    assert [d.isoformat() for d in empty[0][0]] == ["2026-03-02"]  # no record that day: the mart says so
    assert check.passed and not check.metadata


def test_a_refused_file_turns_the_check_yellow(tmp_path: Path) -> None:
    """A refused landing file makes `gpusre run` exit 1; under Dagster the run succeeds with every other
    file loaded, so a WARN check names the file (an operator alerting on checks would hear nothing else)."""
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-03-03.psv").write_text(DUMP)
    (landing / "sacct" / "sacct_2026-03-04.psv.gz").write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    result, check = _run_check(landing, tmp_path / "w.duckdb", no_refused_files)
    assert result.success
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["refused_files"].value == 1
    assert "sacct/sacct_2026-03-04.psv.gz" in check.metadata


_FLEET_NODES = ["n1", "n2", "n3", "n4"]


def _understated_oracle(jobs: list[tuple[int, int, int, list[str]]], default: int,
                        gpus_by_node: dict[str, int]) -> list[str]:
    """marts.fleet_coverage's understated nodes by its header's words, one job at a time: a job with
    more GPUs than its nodes' mean configured count × its node count names each of its nodes whose
    per-node share (rounded up) exceeds that node's own count."""
    named: set[str] = set()
    for _, gpus, n_nodes, nodes in jobs:
        per_node = n_nodes or len(nodes)
        if gpus <= 0 or not nodes or not per_node:
            continue
        configured = [gpus_by_node.get(n, default) for n in nodes]
        if gpus > sum(configured) / len(configured) * per_node:
            share = -(-gpus // per_node)
            named |= {n for n, c in zip(nodes, configured) if share > c}
    return sorted(named)


@pytest.fixture(scope="module")
def fleet_warehouse(tmp_path_factory: pytest.TempPathFactory):
    """One empty warehouse for the examples below (each replaces core.jobs)."""
    con = connect(tmp_path_factory.mktemp("fleet") / "w.duckdb")
    yield con
    con.close()


@settings(max_examples=60, deadline=None)
@given(jobs=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3),
                               st.lists(st.sampled_from(_FLEET_NODES), min_size=0, max_size=4, unique=True)),
                     max_size=12),
       default=st.sampled_from([4, 8]),
       counts=st.dictionaries(st.sampled_from(_FLEET_NODES), st.sampled_from([2, 4, 8]), max_size=4))
def test_fleet_coverage_understated_nodes_match_their_definition(
        fleet_warehouse: duckdb.DuckDBPyConnection, jobs: list[tuple[int, int, list[str]]], default: int,
        counts: dict[str, int]) -> None:
    """The mart skips the jobs that cannot be over their nodes (fewer GPUs per node than the fleet's
    smallest count): the nodes it names are the ones the definition names, on any mixed fleet."""
    from gpusre.models.marts_runner import run_mart_sql
    rows = [(i, g, n, nodes) for i, (g, n, nodes) in enumerate(jobs, start=1)]
    con = fleet_warehouse
    con.execute("DELETE FROM core.jobs")
    for i, g, n, nodes in rows:
        con.execute("INSERT INTO core.jobs BY NAME SELECT ? AS job_id, 'COMPLETED' AS state, 0 AS restarts, "
                    "'sacct.psv' AS source_file, ? AS line_no, ? AS n_gpus, ? AS n_nodes, ?::VARCHAR[] AS nodes",
                    [str(i), i, g, n, nodes])
    run_mart_sql(con, "fleet_coverage", {
        "fleet_source": "cluster.yaml", "configured_nodes": len(_FLEET_NODES), "fleet": _FLEET_NODES,
        "gpus_per_node": default, "gpu_nodes": list(counts), "gpu_counts": list(counts.values()),
        "capacity_gpus": 0, "leaf_switches": 0, "timezone": "UTC"})
    n, examples = con.sql("SELECT gpus_understated_nodes, gpus_understated_examples "
                          "FROM marts.fleet_coverage").fetchall()[0]
    expected = _understated_oracle(rows, default, counts)
    assert (n, examples) == (len(expected), expected)
