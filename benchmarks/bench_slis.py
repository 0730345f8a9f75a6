"""Benchmark: rebuild of the reliability SLI marts (MTBF, job MTTF, ETTR, goodput, SLOs) for a year.

Setup (not timed, cached in the work directory): simulate a 2,000-node × 365-day cluster (accounting
only), ingest it, compute the daily marts, and load the simulator's faults as hardware incidents and
its killed jobs as infrastructure attributions (stand-ins for the node-log marts, which would need
~100 M simulated log lines). Timed, in a child process on a copy of that warehouse: read the inputs,
compute every mart of ``gpusre.models.reliability.marts`` and write them in one transaction — what
the ``reliability_marts`` asset does.

    python benchmarks/bench_slis.py [--nodes 2000] [--days 365] [--workdir DIR]

Target (issue 4, 2-core machine): <= 60 s.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from isolated_run import run_child  # sibling module (run as a script)

CHILD = r"""
import json, sys, time
from peak_memory import peak_rss_mb
from pathlib import Path
from gpusre.models.warehouse import connect, replace_table, transaction
from gpusre.models.reliability.marts import compute_reliability_marts, read_reliability_inputs
from gpusre.pipelines.reliability_settings import reliability_settings
from gpusre.pipelines.config import load_cluster_config
landing, warehouse = Path(sys.argv[1]), Path(sys.argv[2])
settings = reliability_settings(load_cluster_config(landing))
con = connect(warehouse)
t0 = time.perf_counter()
inputs = read_reliability_inputs(con)
t1 = time.perf_counter()
marts = compute_reliability_marts(inputs, settings)
t2 = time.perf_counter()
with transaction(con):
    for name, frame in marts.items():
        replace_table(con, f"marts.{name}", frame)
t3 = time.perf_counter()
con.close()
print(json.dumps({"read_s": t1 - t0, "compute_s": t2 - t1, "write_s": t3 - t2,
                  "jobs": inputs.jobs.height, "instances": inputs.instances.height,
                  "rows": {k: v.height for k, v in marts.items()},
                  "peak_rss_mb": peak_rss_mb()}))
"""


def _build(landing: Path, warehouse: Path) -> None:
    """Ingest, daily marts, and the simulator's faults as incidents (the cached setup)."""
    import polars as pl

    from gpusre.models.marts_runner import run_daily_marts
    from gpusre.models.sources.sacct.ingest import ingest_sacct_files
    from gpusre.models.warehouse import connect, read_sql, replace_table, transaction
    from gpusre.pipelines.config import load_cluster_config

    config = load_cluster_config(landing)
    con = connect(warehouse)
    ingest_sacct_files(con, landing)
    with transaction(con):
        con.execute(read_sql("core/jobs_upsert.sql"))
    as_of = con.sql("SELECT max(greatest(end_ts, start_ts)) FROM core.jobs").fetchall()[0][0]
    first = con.sql("SELECT min(start_ts)::DATE FROM core.jobs").fetchall()[0][0]
    day: date = first
    with transaction(con):
        while day <= as_of.date():
            run_daily_marts(con, day, config.capacity_gpus, as_of)
            day += timedelta(days=1)
    faults = pl.read_csv(landing / "truth" / "faults.csv", infer_schema=False)
    incidents = faults.select(
        pl.concat_str(pl.lit("fault-"), "fault_id").alias("incident_id"), "component",
        pl.col("ts").str.to_datetime(time_zone="UTC").alias("start_ts"),
        pl.col("ts").str.to_datetime(time_zone="UTC").alias("end_ts"),
        pl.concat_list("node").alias("nodes"), pl.lit("node").alias("scope"), pl.lit("high").alias("severity"),
        pl.col("repair_end_ts").str.to_datetime(time_zone="UTC").alias("recovered_ts"))
    killed = (faults.select(pl.col("job_ids").str.split(";").alias("job_id")).explode("job_id")
              .filter(pl.col("job_id").str.len_chars() > 0).unique()
              .with_columns(pl.lit("infrastructure").alias("attribution"), pl.lit("FAILED").alias("state")))
    with transaction(con):
        for name, frame in (("hw_incidents", incidents), ("job_failure_attribution", killed)):
            replace_table(con, f"marts.{name}", frame)
    con.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--workdir", type=Path, help="keep the simulated landing and warehouse here (reused)")
    args = parser.parse_args()

    from gpusre.simulate import SimulationConfig, simulate_cluster

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gpusre-bench-"))
    landing = workdir / f"landing-{args.nodes}x{args.days}-s{args.seed}"
    if not (landing / "sacct").is_dir():
        t0 = time.perf_counter()
        simulate_cluster(landing, SimulationConfig(nodes=args.nodes, days=args.days, seed=args.seed, write_logs=False),
                         progress=lambda m: print(f"  simulate: {m}", file=sys.stderr))
        print(f"simulated {args.nodes} nodes x {args.days} days in {time.perf_counter() - t0:.1f} s")
    base = workdir / f"slis-{args.nodes}x{args.days}-s{args.seed}.duckdb"
    if not base.exists():
        t0 = time.perf_counter()
        tmp = base.with_suffix(".building")
        tmp.unlink(missing_ok=True)
        _build(landing, tmp)
        tmp.rename(base)
        print(f"built the input warehouse in {time.perf_counter() - t0:.1f} s (cached: {base})")
    work = workdir / "slis-run.duckdb"
    shutil.copyfile(base, work)
    import duckdb

    with duckdb.connect(str(work)) as con:  # input warehouses cached by older versions of this script
        con.execute("ALTER TABLE marts.hw_incidents ADD COLUMN IF NOT EXISTS severity VARCHAR DEFAULT 'high'")
    m = run_child(CHILD, str(landing), str(work))
    if m is None:
        return 1
    total = m["read_s"] + m["compute_s"] + m["write_s"]
    print(f"input: {m['jobs']:,} GPU jobs, {m['instances']:,} started instances")
    print(f"read: {m['read_s']:.2f} s   compute: {m['compute_s']:.2f} s   write: {m['write_s']:.2f} s   "
          f"total: {total:.2f} s")
    print("rows: " + ", ".join(f"{k} {v:,}" for k, v in m["rows"].items()))
    print(f"peak RSS: {m['peak_rss_mb']:,.0f} MB")
    print("target (<= 60 s):", "met" if total <= 60 else "NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
