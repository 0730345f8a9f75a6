"""Jobs not killed by the infrastructure, when failures could not be attributed (probe findings 3 and 4).

The SLI keeps its definition (good = not attributed to the infrastructure), so a failure of unknown cause
(no node logs to attribute it) counts good; marts.slo_daily says how many there were
(``unknown_failures``, job SLI rows only) and the SLO review calls the value an upper bound, with the value
were they all the infrastructure's. A 1/N job-MTTF projection through fewer failures than
reliability.min_failures is "insufficient data", not a bold projection.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import date, datetime, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hand_landing import SACCT_HEADER

from gpusre.models.reliability.marts import _with_fit_failures
from gpusre.models.reliability.slo import SloTarget, daily_sli_counts, slo_daily

UTC = timezone.utc
TS = pl.Datetime("us", "UTC")
D1, D2 = date(2026, 11, 10), date(2026, 11, 11)


def _inputs() -> dict[str, object]:
    """Five runs: D1 ends 1 (FAILED, unknown), 2 (COMPLETED), 3 (NODE_FAIL, infrastructure); D2 ends 4 (FAILED,
    unknown) and the earlier run 5#1 (requeued, unknown) of job 5, whose final run (5) ends D2 COMPLETED."""
    h = lambda d, hour: datetime(2026, 11, d, hour, tzinfo=UTC)  # noqa: E731
    jobs = pl.DataFrame({"job_id": ["1", "2", "3", "4", "5"],
                         "start_ts": [h(10, 1), h(10, 2), h(10, 3), h(11, 1), h(11, 5)],
                         "end_ts": [h(10, 4), h(10, 5), h(10, 6), h(11, 4), h(11, 9)]},
                        schema={"job_id": pl.String, "start_ts": TS, "end_ts": TS})
    attribution = pl.DataFrame({"job_id": ["1", "3", "4"], "attribution": ["unknown", "infrastructure", "unknown"]})
    earlier = pl.DataFrame({"job_id": ["5"], "instance_no": [1], "start_ts": [h(11, 1)], "end_ts": [h(11, 3)]},
                           schema={"job_id": pl.String, "instance_no": pl.Int32, "start_ts": TS, "end_ts": TS})
    earlier_attr = pl.DataFrame({"job_id": ["5"], "instance_no": [1], "attribution": ["unknown"]},
                                schema={"job_id": pl.String, "instance_no": pl.Int32, "attribution": pl.String})
    runs = pl.DataFrame(schema={"ongoing": pl.Boolean, "n_gpus": pl.Int64, "last_end_ts": TS,
                                "productive_s": pl.Float64, "wallclock_s": pl.Int64, "queue_s": pl.Int64})
    goodput = pl.DataFrame({"day": [D1, D2], "productive_gpu_hours": [10.0, 10.0], "capacity_gpu_hours": [100.0, 100.0]})
    return dict(node_count=4, maintenance_node_hours=pl.DataFrame(schema={"day": pl.Date, "maintenance_node_hours": pl.Float64}),
                down=pl.DataFrame(schema={"day": pl.Date, "down_node_hours": pl.Float64}), jobs=jobs,
                job_attribution=attribution, runs=runs, goodput=goodput, ettr_min_run_gpus=256,
                t0=datetime(2026, 11, 10, tzinfo=UTC), t1=datetime(2026, 11, 12, tzinfo=UTC),
                earlier_runs=earlier, earlier_attribution=earlier_attr, estimate_availability=False)


def test_unknown_failures_are_counted_on_the_job_sli_rows() -> None:
    c = daily_sli_counts(**_inputs()).filter(pl.col("sli") == "job_infra_success").sort("day")
    # D1: 3 runs, job 3 killed -> good 2, job 1 unknown; D2: 3 runs (4, 5#1, 5), none killed, 4 and 5#1 unknown
    assert c.select("day", "good", "total", "unknown_failures").rows() == [(D1, 2.0, 3.0, 1), (D2, 3.0, 3.0, 2)]


def test_slo_daily_carries_unknown_failures_on_the_job_sli_only() -> None:
    out = slo_daily(targets=[SloTarget("job_infra_success", 0.995), SloTarget("goodput", 0.7)], window_days=30,
                    **_inputs())
    jobs = out.filter(pl.col("sli") == "job_infra_success").sort("day")
    assert jobs.get_column("unknown_failures").to_list() == [1, 2]
    assert out.filter(pl.col("sli") == "goodput").get_column("unknown_failures").null_count() == 2


def test_the_projection_says_how_many_failures_it_rests_on() -> None:
    proj = pl.DataFrame({"kind": ["projected"], "n_gpus": [1024], "mttf_hours": [0.51]})
    inst = pl.DataFrame({"elapsed_eff_s": [3600.0, 7200.0, 0.0], "infra_failure": [True, False, True]})
    row = _with_fit_failures(proj, inst, 3).row(0, named=True)
    assert (row["failures"], row["sufficient"]) == (1, False)  # the zero-runtime instance is not fitted
    assert _with_fit_failures(proj, inst, 1).item(0, "sufficient") is True


# ------------------------------------------------------------------------------------- end to end

CLUSTER = """cluster: tiny
timezone: UTC
nodes: "gpu[01-04]"
gpus_per_node: 8
gpu_type: h100
slo:
  window_days: 30
  objectives:
    - {sli: job_infra_success, objective: 0.995}
"""
HEADER = SACCT_HEADER


def _job(jid, state, exit_code, start, end, elapsed, node):
    return (f"{jid}|{jid}|job{jid}|alice|2001|ml|ml|batch|normal|{state}|{exit_code}|{start}|{start}|{start}|{end}|"
            f"{elapsed}|1-00:00:00|1|64|billing=64,cpu=64,gres/gpu=8,mem=500G,node=1|{node}|")


SACCT = {
    "2026-11-10": [_job(3001, "FAILED", "1:0", "2026-11-10T01:00:00", "2026-11-10T03:00:00", "02:00:00", "gpu01"),
                   _job(3002, "COMPLETED", "0:0", "2026-11-10T04:00:00", "2026-11-10T06:00:00", "02:00:00", "gpu02"),
                   _job(3003, "NODE_FAIL", "0:0", "2026-11-10T07:00:00", "2026-11-10T09:00:00", "02:00:00", "gpu03")],
    "2026-11-11": [_job(3004, "FAILED", "1:0", "2026-11-11T01:00:00", "2026-11-11T03:00:00", "02:00:00", "gpu04"),
                   _job(3005, "COMPLETED", "0:0", "2026-11-11T12:00:00", "2026-11-11T23:50:00", "11:50:00", "gpu01")],
}


def test_sacct_only_review_says_the_job_sli_is_an_upper_bound(tmp_path: Path) -> None:
    """Sacct only: 3001 and 3004 FAILED with no node logs -> unknown; 3003 NODE_FAIL -> the infrastructure's.
    D1 good 2 of 3 (1 unknown), D2 good 2 of 2 (1 unknown); window 4/5 = 80.00 %, at most: were both unknown
    failures the infrastructure's, 2/5 = 40.00 %. One infrastructure failure: no 1/N projection."""
    root = tmp_path / "landing"
    (root / "sacct").mkdir(parents=True)
    (root / "cluster.yaml").write_text(CLUSTER)
    for day, rows in SACCT.items():
        (root / "sacct" / f"sacct_{day}.psv").write_text("\n".join([HEADER, *rows]) + "\n")
    wh, reports = tmp_path / "wh.duckdb", tmp_path / "r"
    gpusre = shutil.which("gpusre", path=str(Path(sys.executable).parent)) or "gpusre"
    out = subprocess.run([gpusre, "run", "--landing", str(root), "--warehouse", str(wh), "--reports", str(reports)],
                         check=True, capture_output=True, text=True, timeout=900)
    con = duckdb.connect(str(wh), read_only=True)
    try:
        rows = con.sql("SELECT day, good, total, unknown_failures FROM marts.slo_daily "
                       "WHERE sli = 'job_infra_success' ORDER BY day").fetchall()
    finally:
        con.close()
    assert rows == [(D1, 2.0, 3.0, 1), (D2, 2.0, 2.0, 1)]
    md = next(reports.glob("slo-*.md")).read_text()
    bound = "at most: 2 failed jobs of unknown cause (no node logs); 40.00 % if all were the infrastructure's"
    assert f"**Jobs not killed by the infrastructure:** 80.00 % (objective 99.5 % · budget left" in md, out.stdout
    assert f"· {bound})" in md                                   # the summary card
    assert f"| 80.00 % — {bound} |" in md                        # the status table's cell
    assert "80.00 % at most (2 failed jobs of unknown cause)" in md  # the status sentence
    assert "the 1/N projection to larger jobs: insufficient data (1 infrastructure failure;" in md
    lead = next(line for line in md.splitlines() if "the 1/N projection to larger jobs" in line)
    assert "1,024 GPUs" not in lead and "Meta RSC-1" not in lead
