"""marts.cluster_comparison: this cluster's job mix next to the published traces (AcmeTrace).

Checked against a hand-computed small case through real Dagster materializations on a real DuckDB
file, against the published CSV itself, and in the rendered nightly report."""

from __future__ import annotations

import csv
from pathlib import Path

import dagster as dg
import pytest

from gpusre.assets.core_jobs import core_jobs
from gpusre.assets.ingest_sacct import raw_sacct
from gpusre.assets.job_trends import cluster_comparison
from gpusre.models.job_mix.cluster_comparison import PUBLISHED_COLUMNS, published_clusters
from gpusre.reports.nightly import render_nightly_report
from gpusre.models.warehouse import connect
from gpusre.pipelines.resources import default_resources
from report_html import section, visible_text

SAMPLE = Path(__file__).parent / "fixtures" / "traces" / "cluster_summary.csv"

# Submit, start, elapsed and GPUs chosen so every figure can be worked out by hand (below).
DUMP = """JobID|State|Submit|Start|End|Elapsed|AllocTRES
1|COMPLETED|2026-03-02T09:00:00|2026-03-02T10:00:00|2026-03-02T11:00:00|01:00:00|cpu=8,gres/gpu=8,node=1
2|CANCELLED by 1000|2026-03-02T10:00:00|2026-03-02T10:00:00|2026-03-02T10:30:00|00:30:00|cpu=16,gres/gpu=16,node=2
3|FAILED|2026-03-02T10:00:00|2026-03-02T10:01:00|2026-03-02T10:11:00|00:10:00|cpu=8,gres/gpu=8,node=1
4|TIMEOUT|2026-03-02T10:00:00|2026-03-02T10:02:00|2026-03-02T12:02:00|02:00:00|cpu=1,gres/gpu=1,node=1
5|PREEMPTED|2026-03-02T10:00:00|2026-03-02T10:00:00|2026-03-02T10:05:00|00:05:00|cpu=8,gres/gpu=8,node=1
6|COMPLETED|2026-03-02T10:00:00|2026-03-02T10:00:00|2026-03-02T15:00:00|05:00:00|cpu=4,node=1
"""


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-03-02.psv").write_text(DUMP)
    (landing / "cluster.yaml").write_text("cluster: tiny\nnodes: 4\n")
    wh = tmp_path / "w.duckdb"
    result = dg.materialize([raw_sacct, core_jobs, cluster_comparison],
                            resources=default_resources(str(wh), str(landing), str(tmp_path / "reports")))
    assert result.success
    return wh


def _table(wh: Path) -> list[tuple]:
    con = connect(wh, read_only=True)
    try:
        return con.sql("SELECT * FROM marts.cluster_comparison ORDER BY cluster").fetchall()
    finally:
        con.close()


def test_this_cluster_row_matches_a_hand_computed_case(warehouse: Path) -> None:
    con = connect(warehouse, read_only=True)
    row = con.sql("SELECT * FROM marts.cluster_comparison WHERE this_cluster").pl().row(0, named=True)
    con.close()
    # Jobs 1-5 count (6 has no GPU): every GPU job, as the other sections count them; 5 (PREEMPTED) is in
    # no class but in the denominators, as in marts.gpu_time_by_state. Elapsed 3600, 1800, 600, 7200,
    # 300 s; queue waits 3600, 0, 60, 120, 0 s; GPUs 8, 16, 8, 1, 8; GPU-seconds 28800, 28800, 4800, 7200,
    # 2400 (sum 72000).
    assert row["cluster"] == "tiny" and row["gpu_jobs"] == 5
    assert row["trace_period"] == "2026-03-02 … 2026-03-02"
    assert row["med_run_time_s"] == 1800 and row["avg_run_time_s"] == 2700 and row["max_run_time_s"] == 7200
    assert row["med_queue_s"] == 60 and row["avg_queue_s"] == 756
    assert row["avg_gpus"] == 8.2 and row["med_gpus"] == 8 and row["max_gpus"] == 16
    assert (row["completed_share_jobs"], row["cancelled_share_jobs"], row["failed_share_jobs"]) == (0.2, 0.2, 0.4)
    assert row["completed_share_gpu_time"] == pytest.approx(28800 / 72000)
    assert row["cancelled_share_gpu_time"] == pytest.approx(28800 / 72000)
    assert row["failed_share_gpu_time"] == pytest.approx((4800 + 7200) / 72000)


def test_published_rows_are_the_acmetrace_figures(warehouse: Path) -> None:
    """Every published cluster of the sample file, with its figures unchanged and who published it."""
    with SAMPLE.open(newline="") as fh:
        sample = {r["id"]: r for r in csv.DictReader(fh)}
    con = connect(warehouse, read_only=True)
    rows = {r["cluster"]: r for r in con.sql("SELECT * FROM marts.cluster_comparison WHERE NOT this_cluster").pl()
            .iter_rows(named=True)}
    con.close()
    assert set(rows) == set(sample) == {"Seren", "Kalos", "Philly", "Helios", "PAI"}
    for name, source in sample.items():
        for src, dst in PUBLISHED_COLUMNS.items():
            expected = float(source[src]) if source[src] else None
            assert rows[name][dst] == expected, (name, dst)
        assert rows[name]["organisation"] and rows[name]["reference"] and rows[name]["trace_period"]
    assert rows["Helios"]["cancelled_share_gpu_time"] == 0.394 and rows["PAI"]["failed_share_gpu_time"] is None
    assert published_clusters().height == len(sample)


def test_rerun_gives_identical_rows(warehouse: Path, tmp_path: Path) -> None:
    before = _table(warehouse)
    assert dg.materialize([cluster_comparison], resources=default_resources(
        str(warehouse), str(tmp_path / "landing"), str(tmp_path / "reports"))).success
    assert _table(warehouse) == before


def test_nightly_report_places_this_cluster_among_the_published_ones(warehouse: Path, tmp_path: Path) -> None:
    con = connect(warehouse)
    try:
        paths = render_nightly_report(con, tmp_path / "out")
    finally:
        con.close()
    text = visible_text(section(paths.html.read_text(), "published"))
    # cancelled 40.0 % of GPU time: inside Philly 29.4 % … Seren 66.4 %; failed 16.7 %: inside
    # Kalos 8.0 % … Philly 38.6 %; median runtime 30.0 min: above Philly's 14.6 min.
    assert ("Cancelled runs hold 40.0 % of GPU time here, within the published range, 29.4 % (Philly) "
            "to 66.4 % (Seren)") in text
    assert "failed runs 16.7 %, within the published range, 8.0 % (Kalos) to 38.6 % (Philly)" in text
    assert "the median GPU job runs 30.0 min, above every published cluster (highest Philly, 14.6 min)" in text
    assert "This cluster: tiny" in text and "Largest job (GPUs)" in text
    markdown = paths.markdown.read_text()
    assert "## Compared with published GPU clusters" in markdown and "| Cancelled, share of GPU time | 40.0 %" in markdown


def test_without_gpu_time_the_lead_leaves_out_what_it_cannot_say(tmp_path: Path) -> None:
    """A GPU job that ran 0 s gives no GPU time to share out: the lead compares what it can (the
    median runtime) and prints no sentence full of dashes; CPU jobs only: no row, and the section says so."""
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    header = "JobID|State|Submit|Start|End|Elapsed|AllocTRES\n"
    cpu_only = "1|COMPLETED|2026-03-02T09:00:00|2026-03-02T10:00:00|2026-03-02T11:00:00|01:00:00|cpu=4,node=1\n"
    gpu_zero = "2|CANCELLED by 7|2026-03-02T09:00:00|2026-03-02T10:00:00|2026-03-02T10:00:00|00:00:00|gres/gpu=8,node=1\n"
    texts = []
    for name, body in (("cpu", cpu_only), ("gpu", cpu_only + gpu_zero)):
        (landing / "sacct" / "d.psv").write_text(header + body)
        wh = tmp_path / f"{name}.duckdb"
        assert dg.materialize([raw_sacct, core_jobs, cluster_comparison],
                              resources=default_resources(str(wh), str(landing), str(tmp_path / "r"))).success
        con = connect(wh)
        try:
            texts.append(visible_text(section(render_nightly_report(con, tmp_path / name).html.read_text(), "published")))
        finally:
            con.close()
    assert "No finished GPU jobs in core.jobs yet" in texts[0]
    assert "The median GPU job runs 0 s, below every published cluster (lowest Seren, 2.0 min)." in texts[1]
    assert "GPU time here" not in texts[1] and ", ;" not in texts[1]
