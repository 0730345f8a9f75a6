"""End to end: a warehouse grown night by night holds what one run over the same files gives.

The simulator's landing is cut at a day; the first run loads the days before it, the second the rest
(as the nightly does), and a one-shot run loads everything. The marts the reports read must agree:
an incremental run once kept yesterday's partial flags (the daily marts are written before the
roll-up rebuilds the day coverage), so the nightly's mean utilization differed (73.6 % vs 62.2 %).
"""

from __future__ import annotations

import re
import shutil
from datetime import date
from pathlib import Path

import pytest

from gpusre.models.warehouse import connect
from gpusre.pipelines.runner import run_pipeline
from gpusre.simulate import SimulationConfig, simulate_cluster

_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})")
#: Marts compared row for row (ids included: they are content hashes). Template ids are numbered in
#: mining order, which depends on the order files arrive in, so tables carrying them are left out.
COMPARED = ("marts.day_coverage", "marts.utilization_daily", "marts.job_usage_daily", "marts.goodput_daily",
            "marts.node_availability_daily", "marts.slo_daily", "marts.ettr_runs", "marts.hw_incidents",
            "marts.job_failure_attribution", "marts.failure_taxonomy", "marts.mtbf", "marts.incident_repairs",
            "core.jobs", "core.job_instances")


def _copy_until(src: Path, dst: Path, cut: date | None) -> None:
    """Copy the landing files of days before ``cut`` (all when None); files without a date always."""
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if path.is_dir() or rel.parts[0] == "truth":
            continue
        found = _DATE.search(rel.as_posix())
        if cut is not None and found and date.fromisoformat(found.group(1)) >= cut:
            continue
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dst / rel)


def _tables(wh: Path) -> dict[str, list[tuple]]:
    con = connect(wh, read_only=True)
    try:
        return {t: con.sql(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in COMPARED}
    finally:
        con.close()


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("incremental") / "sim"
    simulate_cluster(out, SimulationConfig(nodes=16, days=6, seed=5))
    return out


def test_a_warehouse_grown_night_by_night_equals_one_run(landing: Path, tmp_path: Path) -> None:
    days = sorted({date.fromisoformat(m.group(1)) for p in (landing / "sacct").iterdir()
                   if (m := _DATE.search(p.name))})
    assert len(days) >= 5
    grown, once = tmp_path / "grown", tmp_path / "once"
    for d in (grown, once):
        d.mkdir()
    _copy_until(landing, grown / "landing", days[3])
    run_pipeline(grown / "landing", grown / "w.duckdb", grown / "reports")
    _copy_until(landing, grown / "landing", None)
    run_pipeline(grown / "landing", grown / "w.duckdb", grown / "reports")
    _copy_until(landing, once / "landing", None)
    run_pipeline(once / "landing", once / "w.duckdb", once / "reports")
    a, b = _tables(grown / "w.duckdb"), _tables(once / "w.duckdb")
    assert [t for t in COMPARED if a[t] != b[t]] == []
    # the days the first night saw as partial are complete in both
    con = connect(grown / "w.duckdb", read_only=True)
    try:
        flags = con.sql("SELECT u.day FROM marts.utilization_daily AS u JOIN marts.day_coverage AS c USING (day) "
                        "WHERE u.partial IS DISTINCT FROM c.partial").fetchall()
    finally:
        con.close()
    assert flags == []


def test_data_dated_after_this_machines_clock_gets_daily_marts(tmp_path: Path) -> None:
    """Data is dated by the cluster that wrote it: a trace from 2028 (or a machine whose clock is
    behind) once ended the run with an IndexError (daily marts "2028-03-01 .. <today>")."""
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2028-03-01.psv").write_text(
        "JobID|State|Submit|Start|End|Elapsed|AllocTRES|NNodes|NodeList\n"
        "1|COMPLETED|2028-03-01T00:00:00|2028-03-01T01:00:00|2028-03-01T03:00:00|02:00:00|gres/gpu=8|1|gpu001\n")
    (landing / "cluster.yaml").write_text("nodes: gpu[001-002]\ngpus_per_node: 8\n")
    summary = run_pipeline(landing, tmp_path / "w.duckdb", tmp_path / "reports")
    assert summary.days_recomputed == 1
    con = connect(tmp_path / "w.duckdb", read_only=True)
    try:
        assert con.sql("SELECT day, allocated_gpu_hours FROM marts.utilization_daily").fetchall() == [
            (date(2028, 3, 1), 16.0)]
    finally:
        con.close()
