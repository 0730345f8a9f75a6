"""Benchmark: lake compaction of per-node node logs, and what it buys ad hoc queries.

Writes a landing where every node ships its own log file per day (``syslog/<day>/<node>.log``,
``--nodes`` x ``--days`` files of ``--lines-per-file`` RFC 3164 lines, the message mix of
``bench_templates.py``), ingests it with the pipeline's own ``ingest_syslog_files`` (one lake file
per node and day), then, each in a child process:

1. ad hoc queries over ``raw.syslog_lines`` as an SRE runs them on the snapshot — a fleet-wide
   count of events per node, and one node's lines (an incident retrospective) — on the lake as written;
2. ``compact_lake_table`` with the defaults (every day but the newest ``KEEP_DAYS`` merged), timed,
   with peak RSS: lines/s and files merged;
3. the same queries on the compacted lake (same results required).

The floor, in the same run: DuckDB alone (no gpusre code) copying the same day files into one
zstd Parquet file per day — what any merge of these files costs on this machine.

    python benchmarks/bench_lake_compaction.py [--nodes 2000] [--days 10] [--lines-per-file 250] [--workdir DIR]

No target was set for it (issue 15 lists none); the run prints its measurements only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import polars as pl

from gpusre.models.ingest.compaction_policy import KEEP_DAYS
from bench_templates import generate_messages  # sibling modules (run as a script)
from isolated_run import fresh_warehouse, run_child

INGEST = r"""
import json, sys, time
from pathlib import Path
from gpusre.models.warehouse import connect
from gpusre.models.sources.syslog.ingest import ingest_syslog_files
con = connect(Path(sys.argv[2]))
t0 = time.perf_counter()
ingest_syslog_files(con, Path(sys.argv[1]))
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""

QUERIES = r"""
import json, sys, time
from pathlib import Path
from gpusre.models.warehouse import connect
con = connect(Path(sys.argv[1]), read_only=True)
out = {}
for name, sql in (
    ("fleet: events per node", "SELECT node, count(kind) AS events, count(*) AS lines FROM raw.syslog_lines GROUP BY node"),
    ("one node's lines", "SELECT ts, program, message FROM raw.syslog_lines WHERE node = 'gpu0042'"),
):
    t0 = time.perf_counter()
    con.execute(f"CREATE TEMP TABLE q AS {sql}")  # materialized: a count(*) lets DuckDB skip columns
    out[name] = time.perf_counter() - t0
    out[name + " checksum"] = con.sql("SELECT count(*), sum(hash(COLUMNS(*))) FROM q").fetchall()[0]
    con.execute("DROP TABLE q")
print(json.dumps(out, default=str))
"""

COMPACT = r"""
import json, sys, time
from peak_memory import peak_rss_mb
from pathlib import Path
from gpusre.models.warehouse import connect
from gpusre.models.ingest.lake_compaction import compact_lake_table
from gpusre.models.sources.registry import lake_table
con = connect(Path(sys.argv[1]))
t0 = time.perf_counter()
r = compact_lake_table(con, lake_table("syslog"), today=__import__("datetime").date.fromisoformat(sys.argv[2]))
print(json.dumps({"seconds": time.perf_counter() - t0, "days": r.days, "files_merged": r.files_merged,
                  "rows": r.rows, "files_deleted": r.files_deleted,
                  "rss_mb": peak_rss_mb()}))
"""

FLOOR = r"""
import json, sys, time
from pathlib import Path
import duckdb
days = json.loads(Path(sys.argv[1]).read_text()); out = Path(sys.argv[2]); out.mkdir(parents=True, exist_ok=True)
con = duckdb.connect()
t0 = time.perf_counter()
for day, files in days.items():
    con.execute(f"COPY (SELECT * FROM read_parquet(?)) TO '{out}/{day}.parquet' "
                "(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE 122880)", [files])
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


def write_landing(landing: Path, nodes: int, days: int, lines_per_file: int, seed: int) -> date:
    """One RFC 3164 file per node and day; returns the last day."""
    messages, _ = generate_messages(nodes * lines_per_file, seed)
    day0 = date(2026, 9, 1)
    seconds = pl.int_range(lines_per_file, eager=True) * (86_399 // lines_per_file)
    stamps = [f"{(day0 + timedelta(days=d)).strftime('%b %e')} " for d in range(days)]
    clock = seconds.map_elements(lambda s: f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}",
                                 return_dtype=pl.String).to_list()
    for n in range(nodes):
        node = f"gpu{n + 1:04d}"
        # Each node a different slice of the message mix, the same every day (a shape per node).
        body = messages[n * lines_per_file:(n + 1) * lines_per_file]
        for d in range(days):
            out = landing / "syslog" / (day0 + timedelta(days=d)).isoformat() / f"{node}.log"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("".join(f"{stamps[d]}{c} {node} kernel: {m}\n" for c, m in zip(clock, body)))
    return day0 + timedelta(days=days - 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--lines-per-file", type=int, default=250)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-compaction-"))
    workdir.mkdir(parents=True, exist_ok=True)
    landing = workdir / f"landing-{args.nodes}x{args.days}x{args.lines_per_file}-s{args.seed}"
    if not (landing / "done").exists():
        t0 = time.perf_counter()
        write_landing(landing, args.nodes, args.days, args.lines_per_file, args.seed)
        (landing / "done").write_text("")
        print(f"wrote {args.nodes * args.days:,} per-node files in {time.perf_counter() - t0:.1f} s")
    last_day = date(2026, 9, 1) + timedelta(days=args.days - 1)
    lines = args.nodes * args.days * args.lines_per_file

    warehouse = fresh_warehouse(workdir)
    ingest = run_child(INGEST, str(landing), str(warehouse))
    if ingest is None:
        return 1
    lake_files = sorted((workdir / "bench.lake" / "syslog_lines").glob("day=*/*.parquet"))
    files = [p for p in lake_files if not p.name.startswith("_")]
    print(f"ingest of {lines:,} lines in {args.nodes * args.days:,} files: {ingest['seconds']:.1f} s; "
          f"lake: {len(files):,} files")
    by_day: dict[str, list[str]] = {}
    for p in files:
        by_day.setdefault(p.parent.name[4:], []).append(p.as_posix())
    # What compaction will merge: every day but the newest KEEP_DAYS (each holds --nodes files).
    old_days = [d for d in sorted(by_day) if date.fromisoformat(d) <= last_day - timedelta(days=KEEP_DAYS)]
    before = run_child(QUERIES, str(warehouse))
    listing = workdir / "floor-files.json"  # 16,000 paths do not fit on a command line
    listing.write_text(json.dumps({d: by_day[d] for d in old_days}))
    floor = run_child(FLOOR, str(listing), str(workdir / "floor"))
    compact = run_child(COMPACT, str(warehouse), last_day.isoformat())
    after = run_child(QUERIES, str(warehouse))
    if before is None or compact is None or after is None or floor is None:
        return 1
    if compact["days"] != len(old_days):
        print(f"compaction merged {compact['days']} days, expected {len(old_days)}", file=sys.stderr)
        return 1
    print(f"compaction: {compact['days']} day(s), {compact['files_merged']:,} files -> {compact['days']} "
          f"({compact['rows']:,} lines) in {compact['seconds']:.2f} s = {compact['rows'] / compact['seconds']:,.0f} "
          f"lines/s; peak RSS {compact['rss_mb']:,.0f} MB")
    print(f"floor: DuckDB alone copying the same files into one Parquet file per day: {floor['seconds']:.2f} s "
          f"(compaction = {compact['seconds'] / floor['seconds']:.2f}x the floor)")
    for name in ("fleet: events per node", "one node's lines"):
        same = before[name + " checksum"] == after[name + " checksum"]
        print(f"ad hoc query, {name}: {before[name]:.2f} s as written, {after[name]:.2f} s compacted "
              f"({before[name] / after[name]:.1f}x); same result: {same}")
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
