"""A node whose log stops part-way through a day while it still runs a job is flagged
(marts.log_coverage_daily.stopped_nodes) and named in the reports' data warnings; quiet nodes whose
logs simply have few lines are not.

Hand-made landing, 2026-11-11, per-node RFC 3164 files (one node per file: exact last lines):

=======  ===============================  =====================  ======================================
node     log lines                        job held that day      flagged?
=======  ===============================  =====================  ======================================
gpu01    hourly 00:10 … 23:10 (24)        1012 10:00-23:30 (+)   no: logs up to 23:10
gpu02    00:05 and 06:00 only (2)         1013 08:00-23:00       no: quiet node — 17 h after its last
                                                                 line < 3 x its 5.92 h mean interval
gpu03    2-hourly 00:10 … 22:10 (12)      1014 00:30-22:00       no: job ends before its last line
gpu04    hourly 00:10 … 12:10 (13)        1011 14:00-23:00       YES: 10 h 50 m after 12:10 > 1 h, the
                                                                 fleet's median last line (17:10, half
                                                                 way 12:10-22:10) is 5 h later, and
                                                                 > 3 x its 1 h mean interval
=======  ===============================  =====================  ======================================
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import dagster as dg
import pytest

from gpusre.assets.core_jobs import core_jobs
from gpusre.assets.data_coverage import data_coverage_marts
from gpusre.assets.ingest_alerts import raw_alert_notifications
from gpusre.assets.ingest_sacct import raw_sacct
from gpusre.assets.ingest_syslog import raw_syslog
from gpusre.assets.ingest_node_states import raw_slurm_events
from gpusre.assets.report_marts import report_marts
from gpusre.models.warehouse import connect
from gpusre.pipelines.resources import default_resources
from gpusre.reports.coverage import coverage_warnings
from gpusre.reports.nightly import render_nightly_report
from report_html import visible_text

UTC = timezone.utc
# 1015 runs past midnight so the accounting covers all of 2026-11-11.
DUMP = """JobID|State|Submit|Start|End|Elapsed|AllocTRES|NNodes|NodeList
1011|COMPLETED|2026-11-11T13:00:00|2026-11-11T14:00:00|2026-11-11T23:00:00|09:00:00|gres/gpu=8|1|gpu04
1012|COMPLETED|2026-11-11T09:00:00|2026-11-11T10:00:00|2026-11-11T23:30:00|13:30:00|gres/gpu=8|1|gpu01
1013|COMPLETED|2026-11-11T07:00:00|2026-11-11T08:00:00|2026-11-11T23:00:00|15:00:00|gres/gpu=8|1|gpu02
1014|COMPLETED|2026-11-11T00:00:00|2026-11-11T00:30:00|2026-11-11T22:00:00|21:30:00|gres/gpu=8|1|gpu03
1015|COMPLETED|2026-11-11T22:00:00|2026-11-11T23:40:00|2026-11-12T00:30:00|00:50:00|gres/gpu=8|1|gpu01
"""


def _lines(node: str, stamps: list[str]) -> str:
    return "".join(f"Nov 11 {t}:00 {node} CRON[4242]: (root) CMD (run-parts /etc/cron.hourly)\n" for t in stamps)


LOGS = {
    "gpu01": [f"{h:02d}:10" for h in range(24)],
    "gpu02": ["00:05", "06:00"],
    "gpu03": [f"{h:02d}:10" for h in range(0, 24, 2)],
    "gpu04": [f"{h:02d}:10" for h in range(13)],
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("stops")
    landing = tmp / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-11-11.psv").write_text(DUMP)
    (landing / "syslog" / "2026-11-11").mkdir(parents=True)
    for node, stamps in LOGS.items():
        (landing / "syslog" / "2026-11-11" / f"{node}.log").write_text(_lines(node, stamps))
    (landing / "cluster.yaml").write_text("nodes: gpu[01-04]\n")
    wh = tmp / "w.duckdb"
    result = dg.materialize([raw_sacct, core_jobs, raw_syslog, raw_slurm_events, raw_alert_notifications,
                             data_coverage_marts, report_marts], resources=default_resources(str(wh), str(landing), str(tmp / "r")))
    assert result.success
    return wh


def test_the_node_whose_log_stops_while_it_runs_a_job_is_flagged(warehouse: Path) -> None:
    con = connect(warehouse, read_only=True)
    try:
        rows = con.sql("SELECT day, nodes_with_jobs, n_silent_nodes, n_stopped_nodes, stopped_nodes "
                       "FROM marts.log_coverage_daily ORDER BY day").fetchall()
    finally:
        con.close()
    assert len(rows) == 1
    day, with_jobs, silent, n_stopped, stopped = rows[0]
    assert (day, with_jobs, silent, n_stopped) == (date(2026, 11, 11), 4, 0, 1)
    assert stopped == [{"node": "gpu04", "last_line_ts": datetime(2026, 11, 11, 12, 10, tzinfo=UTC),
                        "job_id": "1011", "held_until_ts": datetime(2026, 11, 11, 23, 0, tzinfo=UTC)}]


def test_the_nightly_warns_with_the_last_line_and_the_job(warehouse: Path, tmp_path: Path) -> None:
    con = connect(warehouse)
    try:
        paths = render_nightly_report(con, tmp_path / "out", report_date=date(2026, 11, 11))
        window = coverage_warnings(con, date(2026, 11, 10), date(2026, 11, 11))
    finally:
        con.close()
    text = visible_text(paths.html.read_text())
    assert ("Data warning: gpu04's node log ends at 12:10 UTC although it ran job 1011 until 23:00 UTC: failures "
            "after that are unseen") in text
    # The "Data quality" section lists it with its last line and the job.
    assert "gpu04 2026-11-11 12:10 1011 2026-11-11 23:00" in " ".join(text.split())
    assert not any("gpu02" in w or "gpu01" in w or "gpu03" in w for w in window)  # quiet and busy nodes unnamed
    # A multi-day report (the SLO review) counts node-days and names the worst day's nodes.
    assert any(w.startswith("On 1 day of 2026-11-10 … 2026-11-11, node logs stopped part-way through the day "
                            "while the node still ran a job (1 node-day; most on 2026-11-11: gpu04)") for w in window)
