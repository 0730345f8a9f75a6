"""Benchmark: node-log ingestion end to end (parse → events → Drain3 templates → the Parquet lake
behind raw.syslog_lines).

Generates realistic syslog lines — the message mix of ``bench_templates.py`` (~98 % noise from a few
hundred shapes, ~2 % Xid/SXid/ECC/IB/PCIe/storage lines) behind RFC 3164 headers on 2,000 nodes —
as one aggregated file per day (an rsyslog central server), then ingests them into a fresh DuckDB
warehouse with the pipeline's own ``ingest_syslog_files`` in a child process, and prints lines/s and
the child's peak RSS.

In the same run, a second child times calling Drain3 on each line with the same masking
(``mask_messages`` then ``add_log_message``) on the first ``--baseline-lines`` messages of the same
landing directory, and the end-to-end ingest is compared with it. (``bench_templates.py`` compares
the template step alone, fast path against per-line Drain3.)

``--floor`` also measures, on the same files: the pipeline's parse + events + templates with
nothing stored (what the ingest costs before DuckDB), and DuckDB alone with no gpusre code — every
line stored as one VARCHAR, (timestamp, host, message) split and typed in SQL, and the lines
written as zstd Parquet (the lake's own storage cost) — so the share of the time that storing the
lines costs on this machine is on record.

``--scaling`` measures how the pipeline's parse step (``parse_syslog_shard``: read, parse, events,
masked-message keys, lake Parquet files written and fsynced, rejects and messages staged — what
each ``syslog_parse`` step of ``gpusre run --workers N`` does) scales with worker processes: the
files split into 2 shards by the pipeline's own shard plan, parsed by 2 concurrent processes,
against 1 process parsing all of them, on the same files in the same run. Then the same with one
core per process (1 process pinned to a core, 2 processes pinned to a core each), and from the
1-core run's cost (fixed per process, and per byte) a projection to N workers with a core each over
the pipeline's shard plan of the same files (``parse_projection.py``), checked against the measured
2-core run and stated as a projection beyond it.

    python benchmarks/bench_syslog.py [--lines 10000000] [--files 10] [--workdir DIR]
                                      [--baseline-lines 200000] [--repeat 1] [--floor] [--scaling]

``--repeat N`` runs the ingest and the per-line baseline N times, alternating, and judges the
target on the median ratio: on a shared VM one pair of runs moves by more than the target's margin.

Targets (issue 15, restated against floors measured in the same run; 2-core machine): >= 4x the
speed of per-line Drain3 with the same masking, within 1.3x of the same pipeline with nothing stored
(``--floor``), peak RSS <= 3 GB. (Issue 3's absolute >= 500,000 lines/s and >= 7x were replaced by
these.)
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl

from isolated_run import fresh_warehouse, run_child, run_per_core, run_scaling  # sibling module (run as a script)

CHILD = r"""
import json, sys, time
from peak_memory import peak_rss_mb
from pathlib import Path
from gpusre.models.warehouse import connect
from gpusre.models.sources.syslog.ingest import ingest_syslog_files
landing, warehouse = Path(sys.argv[1]), Path(sys.argv[2])
con = connect(warehouse)
t0 = time.perf_counter()
results = ingest_syslog_files(con, landing)  # stages, then publishes in one transaction
seconds = time.perf_counter() - t0
lines, events, templates = con.sql("SELECT count(*), count(kind), count(DISTINCT template_id) FROM raw.syslog_lines").fetchall()[0]
con.close()
lake_mb = sum(p.stat().st_size for p in (warehouse.parent / (warehouse.stem + ".lake")).rglob("*.parquet")) / 2**20
print(json.dumps({"files": len(results), "lines": lines, "events": events, "templates": templates, "lake_mb": lake_mb,
                  "rejected": sum(r.rows_rejected for r in results), "seconds": seconds,
                  "peak_rss_mb": peak_rss_mb()}))
"""

# The ingest's own steps (ingest_syslog_files without the writer): parse files in batches, classify and
# template in batches, keep nothing.
NO_STORE_CHILD = r"""
import json, sys, time
from peak_memory import peak_rss_mb
from pathlib import Path
import polars as pl
from gpusre.models.alerts.nodes import HostMapping
from gpusre.models.ingest.landing_files import read_landing_file
from gpusre.models.sources.syslog.parse import SyslogInput, host_from_filename, parse_syslog_batch
from gpusre.models.sources.syslog.ingest import BATCH_LINES, PARSE_BATCH_BYTES, _lines_frame, discover_syslog_files
from gpusre.models.logs.templates import TemplateMiner
landing, shard, shards = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
miner = TemplateMiner.new()
lines = 0
inputs, input_bytes, pending, pending_rows = [], 0, [], 0
t0 = time.perf_counter()

def parse():
    global inputs, input_bytes, pending_rows, lines
    parsed = parse_syslog_batch(inputs)
    pending.append(parsed.lines)
    pending_rows += parsed.lines.height
    lines += parsed.lines.height
    inputs, input_bytes = [], 0

for path in discover_syslog_files(landing)[shard::shards]:
    name = path.relative_to(landing).as_posix()
    data = read_landing_file(path).data
    inputs.append(SyslogInput(data, name, host_from_filename(name)))
    input_bytes += len(data)
    if input_bytes >= PARSE_BATCH_BYTES:
        parse()
    if pending_rows >= BATCH_LINES:
        _lines_frame(pl.concat(pending), miner, HostMapping())
        pending.clear()
        pending_rows = 0
if inputs:
    parse()
if pending:
    _lines_frame(pl.concat(pending), miner, HostMapping())
print(json.dumps({"lines": lines, "seconds": time.perf_counter() - t0,
                  "peak_rss_mb": peak_rss_mb()}))
"""

# Per-line Drain3 with the pipeline's masking, on the messages of the first lines of the landing.
BASELINE_CHILD = r"""
import json, sys, time
from pathlib import Path
from drain3 import TemplateMiner as Drain3Miner
from gpusre.models.logs.masking import mask_messages
from gpusre.models.sources.syslog.parse import parse_syslog_file
from gpusre.models.sources.syslog.ingest import discover_syslog_files
from gpusre.models.logs.templates import TemplateMiner
landing, limit = Path(sys.argv[1]), int(sys.argv[2])
path = discover_syslog_files(landing)[0]
messages = parse_syslog_file(path, path.relative_to(landing).as_posix()).lines["message"].head(limit)
d3 = Drain3Miner(config=TemplateMiner.new().config.to_drain3())
t0 = time.perf_counter()
for m in mask_messages(messages.fill_null("")).to_list():
    d3.add_log_message(m)
print(json.dumps({"lines": len(messages), "seconds": time.perf_counter() - t0,
                  "templates": len(d3.drain.clusters)}))
"""

FLOOR_CHILD = r"""
import json, sys, time
import duckdb
glob, warehouse = sys.argv[1], sys.argv[2]
con = duckdb.connect(warehouse)
lines = f"read_csv('{glob}', delim=chr(31), header=false, columns={{'line': 'VARCHAR'}}, quote='', escape='', filename=true)"
out = {}
t0 = time.perf_counter()
con.execute(f"COPY (SELECT * FROM {lines}) TO '{warehouse}.parquet' (FORMAT parquet, COMPRESSION zstd)")
out["lines_as_parquet"] = time.perf_counter() - t0
for name, select in (
    ("lines_as_text", f"SELECT * FROM {lines}"),
    # RFC 3164 'Mmm dd hh:mm:ss host program: message', the year from the file's directory name
    ("ts_host_message", "SELECT strptime(substr(line, 1, 15) || ' ' || regexp_extract(filename, '(\d{4})-', 1), "
                        "'%b %d %H:%M:%S %Y') AS ts, split_part(substr(line, 17), ' ', 1) AS host, "
                        f"substr(line, 18 + strpos(substr(line, 17), ' ')) AS message FROM {lines}"),
):
    t0 = time.perf_counter()
    con.execute(f"BEGIN; CREATE TABLE {name} AS {select}; COMMIT")
    out[name] = time.perf_counter() - t0
print(json.dumps(out))
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
    parser.add_argument("--baseline-lines", type=int, default=200_000,
                        help="messages for the per-line Drain3 comparison (0 = skip it)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="ingest and per-line baseline runs, alternating; the target is judged on the median")
    parser.add_argument("--floor", action="store_true",
                        help="also time the ingest with nothing stored, and DuckDB alone storing the same files")
    parser.add_argument("--scaling", action="store_true",
                        help="also time the parse step with 1 and with 2 worker processes")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gpusre-bench-syslog-"))
    landing = workdir / f"landing-{args.lines}-{args.files}-s{args.seed}"
    if not (landing / "syslog").is_dir():
        t0 = time.perf_counter()
        write_landing(landing, args.lines, args.files, args.seed)
        print(f"generated {args.lines:,} lines in {time.perf_counter() - t0:.1f} s")
    ratios: list[float] = []
    ingest_seconds: list[float] = []
    ok = True
    for attempt in range(1, args.repeat + 1):
        label = f"[{attempt}/{args.repeat}] " if args.repeat > 1 else ""
        m = run_child(CHILD, str(landing), str(fresh_warehouse(workdir)))
        if m is None:
            return 1
        rate = m["lines"] / m["seconds"]
        ingest_seconds.append(m["seconds"])
        if attempt == 1:
            print(f"input: {m['files']} files, {m['lines']:,} lines loaded ({m['rejected']} rejected), "
                  f"{m['events']:,} events, {m['templates']:,} templates")
        print(f"{label}ingest (parse + events + templates + load): {m['seconds']:.1f} s = {rate:,.0f} lines/s")
        print(f"{label}peak RSS (ingest process): {m['peak_rss_mb']:,.0f} MB; lake: {m['lake_mb']:,.0f} MB of Parquet")
        ok = ok and m["peak_rss_mb"] <= 3072
        if args.baseline_lines > 0:
            b = run_child(BASELINE_CHILD, str(landing), str(args.baseline_lines))
            if b is None:
                return 1
            base_rate = b["lines"] / b["seconds"]
            ratios.append(rate / base_rate)
            print(f"{label}per-line Drain3, same masking, first {b['lines']:,} messages: {b['seconds']:.1f} s = "
                  f"{base_rate:,.0f} lines/s ({b['templates']} templates); "
                  f"end-to-end ingest / per-line Drain3 = {ratios[-1]:.1f}x")
    if ratios:
        ratio = statistics.median(ratios)
        if len(ratios) > 1:
            print(f"ratios: {', '.join(f'{r:.2f}x' for r in ratios)}; median {ratio:.2f}x")
        ok = ok and ratio >= 4
    print("target (>= 4x per-line Drain3" + (" in the median" if len(ratios) > 1 else "") + ", <= 3 GB):",
          ("met" if ok else "NOT met") if ratios else "not judged (no per-line baseline: --baseline-lines 0)")
    seconds = statistics.median(ingest_seconds)  # the ingest the floors are compared with
    if args.floor:
        n = run_child(NO_STORE_CHILD, str(landing), "0", "1")
        f = run_child(FLOOR_CHILD, str(landing / "syslog" / "*" / "*.log"), str(fresh_warehouse(workdir)))
        if n is None or f is None:
            return 1
        print(f"parse + events + templates, nothing stored: {n['seconds']:.1f} s = "
              f"{n['lines'] / n['seconds']:,.0f} lines/s, peak RSS {n['peak_rss_mb']:,.0f} MB; "
              f"end-to-end ingest / nothing stored = {seconds / n['seconds']:.2f}x "
              f"(target <= 1.3x): {'met' if seconds <= 1.3 * n['seconds'] else 'NOT met'}")
        for name, label in (("lines_as_parquet", "each line as one VARCHAR written as zstd Parquet"),
                            ("lines_as_text", "each line as one VARCHAR, no parsing"),
                            ("ts_host_message", "timestamp, host, message split and typed in SQL")):
            print(f"DuckDB alone, {label}: {f[name]:.1f} s = {m['lines'] / f[name]:,.0f} lines/s")
    if args.scaling:
        scaling(landing)
    return 0


# The pipeline's parse step over one shard of the plan (args: landing, shard, shards); the lake is
# next to the landing (made by scaling()).
PARSE_STEP_CHILD = r"""
import os, sys
if len(sys.argv) > 4:  # pinned to one core before Polars starts its threads (it sizes its pool by the affinity)
    os.sched_setaffinity(0, {int(sys.argv[4])})
import json, time
from peak_memory import peak_rss_mb
from pathlib import Path
from gpusre.models.alerts.nodes import HostMapping
from gpusre.models.ingest.staging import IngestPlan, shard_files
from gpusre.models.logs.templates import TemplateConfig
from gpusre.models.sources.syslog.ingest import parse_syslog_shard, scan_syslog_files
landing, shard, shards = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
files = [p.relative_to(landing).as_posix() for p in scan_syslog_files(landing).files]
sizes = [(f, (landing / f).stat().st_size) for f in files]
plan = IngestPlan("syslog", str(landing), str(landing.parent / "scaling.lake"), tuple(files),
                  tuple(tuple(s) for s in shard_files(sizes, shards)), {}, (),
                  {"timezone": "UTC", "hosts": HostMapping(), "jobs_span": None,
                   "template_config": TemplateConfig().to_json_dict()})
t0 = time.perf_counter()
staged = parse_syslog_shard(plan, shard)
print(json.dumps({"lines": sum(s.result.rows_loaded for s in staged), "seconds": time.perf_counter() - t0,
                  "peak_rss_mb": peak_rss_mb()}))
"""


def scaling(landing: Path) -> None:
    """Parse step with 1 process over all files vs 2 concurrent processes over half each; then the
    same with every process pinned to a core of its own, and the projection to N workers."""
    from gpusre.models.warehouse import connect

    connect(landing.parent / "scaling.duckdb").close()  # creates scaling.lake with its table schemas
    measured = run_scaling(PARSE_STEP_CHILD, landing)
    if measured is None:
        return
    report_scaling(*measured)
    per_core(landing)


def report_scaling(one: dict[str, float], wall: float, halves: list[dict[str, float]]) -> None:
    """Print the unpinned 1-process vs 2-process parse step (what ``run_scaling`` measured)."""
    lines = sum(h["lines"] for h in halves)
    print(f"parse step, 1 process: {one['seconds']:.1f} s = {one['lines'] / one['seconds']:,.0f} lines/s")
    print(f"parse step, 2 processes: {wall:.1f} s wall (incl. process start) = {lines / wall:,.0f} lines/s; "
          f"speed-up {one['seconds'] / wall:.2f}x (target >= 1.7x); per-process peak RSS "
          f"{max(h['peak_rss_mb'] for h in halves):,.0f} MB; parse work only (slowest half) "
          f"{one['seconds'] / max(h['seconds'] for h in halves):.2f}x")


def per_core(landing: Path) -> None:
    """The parse step with one core per worker process and the projection to N workers (``run_per_core``)."""
    from gpusre.models.sources.syslog.ingest import scan_syslog_files

    files = [p.relative_to(landing).as_posix() for p in scan_syslog_files(landing).files]
    run_per_core(PARSE_STEP_CHILD, landing, [(f, (landing / f).stat().st_size) for f in files], "lines")


if __name__ == "__main__":
    sys.exit(main())
