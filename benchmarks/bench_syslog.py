"""Benchmark: node-log ingestion end to end (parse → events → Drain3 templates → raw.syslog_lines).

Generates realistic syslog lines — the message mix of ``bench_templates.py`` (~98 % noise from a few
hundred shapes, ~2 % Xid/SXid/ECC/IB/PCIe/storage lines) behind RFC 3164 headers on 2,000 nodes —
as one aggregated file per day (an rsyslog central server), then ingests them into a fresh DuckDB
warehouse with the pipeline's own ``ingest_syslog_files`` in a child process, and prints lines/s and
the child's peak RSS. The per-line Drain3 comparison is ``bench_templates.py``.

    python benchmarks/bench_syslog.py [--lines 10000000] [--files 10] [--workdir DIR]

Targets (issue 3, 2-core machine): >= 500,000 lines/s, peak RSS <= 3 GB.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl

from isolated_run import fresh_warehouse, run_child  # sibling module (run as a script)

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from gpusre.models.warehouse import connect
from gpusre.models.syslog_ingest import ingest_syslog_files
landing, warehouse = Path(sys.argv[1]), Path(sys.argv[2])
con = connect(warehouse)
t0 = time.perf_counter()
results = ingest_syslog_files(con, landing)  # stages, then publishes in one transaction
seconds = time.perf_counter() - t0
lines, events, templates = con.sql("SELECT count(*), count(kind), count(DISTINCT template_id) FROM raw.syslog_lines").fetchall()[0]
con.close()
print(json.dumps({"files": len(results), "lines": lines, "events": events, "templates": templates,
                  "rejected": sum(r.rows_rejected for r in results), "seconds": seconds,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _generator():  # noqa: ANN202 - the sibling benchmark module
    spec = importlib.util.spec_from_file_location("bench_templates", Path(__file__).with_name("bench_templates.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    assert spec and spec.loader
    spec.loader.exec_module(module)
    return module.generate_messages


def write_landing(landing: Path, lines: int, files: int, seed: int) -> None:
    """Write ``files`` daily syslog files totalling ``lines`` RFC 3164 lines."""
    messages, _ = _generator()(lines, seed)
    per_file = -(-lines // files)
    day0 = datetime(2026, 9, 1, tzinfo=timezone.utc)
    for i in range(files):
        chunk = pl.Series("message", messages[i * per_file:(i + 1) * per_file], dtype=pl.String)
        n = len(chunk)
        if n == 0:
            break
        day = day0 + timedelta(days=i)
        frame = pl.DataFrame({"message": chunk}).with_columns(
            ts=pl.datetime_range(day, day + timedelta(days=1), interval="1s", eager=True, time_zone="UTC")
            .sample(n, with_replacement=True, seed=seed + i).sort(),
            node=pl.format("gpu{}", (pl.int_range(n) * 7919 % 2000 + 1).cast(pl.String).str.zfill(4)),
            program=pl.lit("kernel"),
        )
        text = frame.select(
            pl.format("{} {} {}: {}", pl.col("ts").dt.strftime("%b %e %H:%M:%S"), "node", "program", "message")
        ).to_series()
        out = landing / "syslog" / day.strftime("%Y-%m-%d") / "central.log"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(text.to_list()) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gpusre-bench-syslog-"))
    landing = workdir / f"landing-{args.lines}-{args.files}-s{args.seed}"
    if not (landing / "syslog").is_dir():
        t0 = time.perf_counter()
        write_landing(landing, args.lines, args.files, args.seed)
        print(f"generated {args.lines:,} lines in {time.perf_counter() - t0:.1f} s")
    m = run_child(CHILD, str(landing), str(fresh_warehouse(workdir)))
    if m is None:
        return 1
    rate = m["lines"] / m["seconds"]
    print(f"input: {m['files']} files, {m['lines']:,} lines loaded ({m['rejected']} rejected), "
          f"{m['events']:,} events, {m['templates']:,} templates")
    print(f"ingest (parse + events + templates + load): {m['seconds']:.1f} s = {rate:,.0f} lines/s")
    print(f"peak RSS (ingest process): {m['peak_rss_mb']:,.0f} MB")
    print("target (>= 500,000 lines/s, <= 3 GB):", "met" if rate >= 500_000 and m["peak_rss_mb"] <= 3072 else "NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
