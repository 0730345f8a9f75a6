"""Node logs of a simulated cluster: ``syslog/<YYYY-MM-DD>/<node>.log``, one file per node and UTC day
(``syslog_layout="per_node"``), or ``syslog/<YYYY-MM-DD>/central.log`` with every node's lines in
time order, as an rsyslog central server writes them (``"central"``; far fewer files to ingest).

Lines are what rsyslog writes on each node, in the cluster's time zone::

    Sep  1 03:04:05 gpu017 kernel: [123456.789012] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', ...   RFC 3164
    2026-09-01T03:04:05.123456+00:00 gpu017 sshd[4242]: Accepted publickey for ...              high-precision ISO

A seeded ``log_iso_node_share`` of nodes use the ISO template, the rest RFC 3164 (a fleet rarely has
one format). Content: background noise (:mod:`log_noise`, ``log_lines_per_node_day``), a burst per
applied fault (:mod:`log_bursts`) plus NHC health-check failures while the node is drained, fabric
incidents on every node they hit, user-application Xids / OOM kills / time-limit lines at the end of
user-failed jobs, occasional benign Xids, and boot banners after every reboot. Nodes that are powered
off (:mod:`node_timeline`) log nothing.

Speed: lines are built column-wise in Polars per chunk of UTC days (timestamps by ``strftime`` on a
Datetime column, one ``concat_str`` per chunk), and each file's text is joined in Polars, so Python
touches files, not lines. Same seed -> byte-identical files.
"""

from __future__ import annotations

import json
import random
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gpusre.models.ingest.hostlist import expand_hostlist
from gpusre.simulate.clock import LocalClock
from gpusre.simulate.config import SimulationConfig
from gpusre.simulate.faults import SILENT_POWER_KINDS, FabricFault, FaultEvent
from gpusre.simulate.log_bursts import (EventLines, NodeHardware, benign_xid_line, boot_burst, fabric_burst,
                                               fault_burst, health_check_burst, oom_burst, timeout_line, user_xid_burst)
from gpusre.simulate.log_noise import NOISE_SHAPES, NoiseTemplates
from gpusre.simulate.node_timeline import NodeTimeline

__all__ = ["RFC3164_FORMAT", "ISO_FORMAT", "USER_XID_SHARE", "BENIGN_XID_PER_NODE_DAY", "NodeLogs",
           "fault_events", "collect_events", "write_syslog", "write_node_logs"]

#: strftime patterns of the two rsyslog templates (RSYSLOG_TraditionalFileFormat / RSYSLOG_FileFormat).
RFC3164_FORMAT = "%b %e %H:%M:%S"
ISO_FORMAT = "%Y-%m-%dT%H:%M:%S%.6f%:z"
#: Share of user-failed GPU jobs whose crash shows an application Xid (13/31/43) on one of their nodes.
USER_XID_SHARE = 0.3
#: Informational Xids (63 single row remap, 92) per node and day: not failures, must not count as ones.
BENIGN_XID_PER_NODE_DAY = 0.015
#: Upper bound on lines built at once (memory stays ~1 GB even for the 10 M-line benchmark).
_CHUNK_LINES = 1_000_000


@dataclass
class NodeLogs:
    """What the log writer produced: counts, truth it decided (user Xids, fabric victims), timing."""

    lines: int = 0
    files: int = 0
    seconds: float = 0.0
    bytes: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    by_node: list[int] = field(default_factory=list)
    iso_nodes: list[int] = field(default_factory=list)
    user_xid: dict[str, int] = field(default_factory=dict)
    fabric_nodes: dict[int, tuple[int, ...]] = field(default_factory=dict)
    #: First failing NHC run (when NHC drains the node) per node fault id, and per (fabric incident, node).
    nhc_first: dict[int, float] = field(default_factory=dict)
    fabric_nhc_first: dict[tuple[int, int], float] = field(default_factory=dict)
    #: Device each node fault hit (``gpu``, ``link``, ``hca`` indices, as fault_burst picked them).
    fault_devices: dict[int, dict[str, int]] = field(default_factory=dict)

    @property
    def lines_per_s(self) -> float:
        """Writing throughput (all lines, noise and events, including file I/O)."""
        return self.lines / self.seconds if self.seconds else 0.0


def _hardware(n_nodes: int, gpus_per_node: int, rng: np.random.Generator) -> list[NodeHardware]:
    pids = rng.integers(900, 4000, size=(n_nodes, 2))
    clients = rng.integers(0, 1 << 48, size=n_nodes)
    return [NodeHardware(gpus_per_node, int(p[0]), int(p[1]) * 100, f"ffff{int(c):012x}")
            for p, c in zip(pids, clients, strict=True)]


def _uid(user: str) -> int:
    # Stable per user name, in the range sacct dumps use for human users.
    return 10_000 + zlib.crc32(user.encode()) % 50_000


def fault_events(config: SimulationConfig, faults: list[tuple[FaultEvent, list[str]]], fabric: list[FabricFault],
                 timeline: NodeTimeline, rng: np.random.Generator) -> tuple[
                     EventLines, NodeLogs, random.Random, list[NodeHardware]]:
    """The first part of :func:`collect_events`: fault bursts, health checks and fabric incidents, with
    the random state it leaves for the rest. Cheap (a few lines per fault), so the node-state writer can
    replay it for the NHC times when no logs are written (``NodeLogs.nhc_first`` and friends)."""
    rnd = random.Random(int(rng.integers(0, 1 << 62)))
    hw = _hardware(config.nodes, config.gpus_per_node, rng)
    out = EventLines()
    res = NodeLogs()
    t1 = timeline.t1
    repaired = {f.fault_id: f.ts + f.repair_s for f, _ in faults}
    nhc: dict[str, Any] = {"interval_s": config.nhc_interval_s, "style": config.nhc_message_style,
                           "max_runs": None if config.nhc_repeat_until_repair else 12}
    for f, _jobs in faults:
        if f.incident:
            continue  # rendered once per fabric incident below
        # Repeats stop at the reboot that ends the repair (or the horizon).
        until = min(t1, repaired[f.fault_id] - 240)
        # A silent power fault still draws its burst (the device and the random stream stay as they were),
        # but no line reaches the log: the host lost power before forwarding it.
        silent = (config.silent_power_fault_share > 0 and f.kind in SILENT_POWER_KINDS
                  and rnd.random() < config.silent_power_fault_share)
        device = fault_burst(EventLines() if silent else out, f.kind, f.ts + rnd.random() * 0.9, f.node, until,
                             hw[f.node], rnd, config.fabric_manager_logs)
        res.fault_devices[f.fault_id] = device
        if f.effect == "job_fail":
            res.nhc_first[f.fault_id] = health_check_burst(out, f.kind, f.ts, f.node, until, hw[f.node], device, rnd,
                                                           **nhc)
    for ff in fabric:
        hit = tuple(n for n in ff.nodes if timeline.is_up(n, ff.ts))
        res.fabric_nodes[ff.incident] = hit
        spread = 20.0 if ff.kind == "leaf_switch_down" else 45.0  # all ports drop at once; clients notice over ~1 min
        first_end, second = ff.second_wave
        for n in hit:
            t = ff.ts + rnd.random() * spread
            end = min(t1 - 1, ff.ts + ff.duration_s + rnd.random() * spread)
            if second:  # links back after the first wave, down again in the second, until the repair
                fabric_burst(out, ff.kind, t, n, min(end, t + first_end), hw[n], rnd)
                fabric_burst(out, ff.kind, t + second, n, end, hw[n], rnd)
            else:
                fabric_burst(out, ff.kind, t, n, end, hw[n], rnd)
            if config.fabric_faults_kill_jobs:
                res.fabric_nhc_first[(ff.incident, n)] = health_check_burst(
                    out, ff.kind, t, n, min(t1, ff.ts + ff.duration_s), hw[n], {}, rnd, **nhc)
    return out, res, rnd, hw


def collect_events(config: SimulationConfig, clock: LocalClock, names: list[str],
                   faults: list[tuple[FaultEvent, list[str]]], fabric: list[FabricFault], timeline: NodeTimeline,
                   jobs_csv: Path, rng: np.random.Generator,
                   extra: Callable[[EventLines, list[NodeHardware]], None] | None = None,
                   ) -> tuple[EventLines, NodeLogs]:
    """Every non-noise line: fault bursts, health checks, fabric incidents, job endings, benign Xids, boots.

    ``extra`` adds more lines last (it must draw from its own random stream, so that the lines above
    stay the same with or without it); it gets the per-node hardware (pids) for consistent lines."""
    out, res, rnd, hw = fault_events(config, faults, fabric, timeline, rng)
    t1 = timeline.t1
    jobs = (pl.read_csv(jobs_csv, infer_schema=False)
            .filter(pl.col("cause").is_in(["user_error", "oom", "timeout"]) & (pl.col("nodes") != ""))
            .with_columns(end=pl.col("end_ts").str.to_datetime("%Y-%m-%dT%H:%M:%SZ", time_zone="UTC").dt.epoch("s")))
    index = {name: i for i, name in enumerate(names)}
    for r in jobs.iter_rows(named=True):
        nodes = [index[h] for h in expand_hostlist(r["nodes"])]
        end = float(r["end"])
        if r["cause"] == "user_error":
            if int(r["n_gpus"]) == 0 or rnd.random() >= USER_XID_SHARE:
                continue
            n = rnd.choice(nodes)
            gpu = rnd.randrange(max(1, int(r["n_gpus"]) // len(nodes)))
            res.user_xid[r["job_id"]] = user_xid_burst(out, end, n, gpu, hw[n], rnd)
        elif r["cause"] == "oom":
            n = rnd.choice(nodes)
            oom_burst(out, end, n, r["job_id_raw"], _uid(r["user"]), hw[n], rnd)
        else:
            for n in nodes:
                timeout_line(out, end, n, r["job_id_raw"], names[n], clock.local(int(end)), rnd)
    n_days = (t1 - timeline.t0) / 86400
    n_benign = rng.poisson(BENIGN_XID_PER_NODE_DAY * n_days * config.nodes)
    for ts, n in zip(rng.uniform(timeline.t0, t1, size=n_benign), rng.integers(0, config.nodes, size=n_benign),
                     strict=True):
        benign_xid_line(out, float(ts), int(n), hw[int(n)], rnd)
    for b, n in timeline.boots_in_horizon:
        boot_burst(out, float(b) + rnd.random() * 0.5, n, hw[n])
    if extra is not None:
        extra(out, hw)
    return out, res


def _event_frame(ev: EventLines, kinds: list[str]) -> pl.DataFrame:
    code = {k: i + 1 for i, k in enumerate(kinds)}  # 0 = noise
    return pl.DataFrame({
        "ts_us": np.round(np.array(ev.ts, dtype=np.float64) * 1e6).astype(np.int64),
        "node": np.array(ev.node, dtype=np.int32),
        "kernel": np.array(ev.kernel, dtype=bool),
        "body": pl.Series(ev.body, dtype=pl.String),
        "kind": np.array([code[k] for k in ev.kind], dtype=np.int16),
    }).sort("ts_us", maintain_order=True)


#: File name of a day's log under the central layout.
CENTRAL_FILE = "central.log"


def write_syslog(out_dir: Path, config: SimulationConfig, clock: LocalClock, names: list[str], events: EventLines,
                 res: NodeLogs, timeline: NodeTimeline, rng: np.random.Generator,
                 progress: Callable[[str], None] | None = None) -> NodeLogs:
    """Render noise, merge the event lines, and write the day files (see module doc); fills ``res``."""
    t_start = time.perf_counter()
    n = config.nodes
    central = config.syslog_layout == "central"
    iso = rng.random(n) < config.log_iso_node_share
    res.iso_nodes = [int(i) for i in np.flatnonzero(iso)]
    noise = NoiseTemplates.build(rng)
    kinds = sorted(set(events.kind))
    all_kinds = ["noise", *kinds]
    ev = _event_frame(events, kinds)
    ev_ts = ev["ts_us"].to_numpy()
    hosts = pl.Series("host", names, dtype=pl.String)
    kind_counts = np.zeros(len(all_kinds), dtype=np.int64)
    node_counts = np.zeros(n, dtype=np.int64)
    t0, t1 = timeline.t0, timeline.t1
    day0, day_end = t0 // 86400, (t1 - 1) // 86400 + 1
    rate = config.log_lines_per_node_day
    days_per_chunk = max(1, int(_CHUNK_LINES // max(1.0, rate * n)))
    # When one day of all nodes is too many lines, a chunk is one day of a slice of the nodes.
    nodes_per_chunk = n if days_per_chunk > 1 else max(1, min(n, int(_CHUNK_LINES // max(1.0, rate))))
    root = out_dir / "syslog"
    chunks = [(c0, k0) for c0 in range(day0, day_end, days_per_chunk) for k0 in range(0, n, nodes_per_chunk)]
    for c0, k0 in chunks:
        c1 = min(day_end, c0 + days_per_chunk)
        k1 = min(n, k0 + nodes_per_chunk)
        lo, hi = max(t0, c0 * 86400), min(t1, c1 * 86400)
        # Noise: Poisson count per node and UTC day, uniform times inside the horizon part of that day.
        d_lo = np.maximum(np.arange(c0, c1) * 86400, lo)
        d_hi = np.minimum(np.arange(c0 + 1, c1 + 1) * 86400, hi)
        counts = rng.poisson(rate * (d_hi - d_lo)[:, None] / 86400, size=(c1 - c0, k1 - k0))
        day_idx = np.repeat(np.arange(c1 - c0), counts.sum(axis=1))
        node_idx = np.concatenate([np.repeat(np.arange(k0, k1, dtype=np.int32), row) for row in counts]) \
            if counts.size else np.zeros(0, np.int32)
        ts_us = (d_lo[day_idx] * 1_000_000 + (rng.random(day_idx.size) * (d_hi - d_lo)[day_idx] * 1e6)).astype(np.int64)
        tids = noise.draw(day_idx.size, rng)
        frame = pl.DataFrame({"ts_us": ts_us, "node": node_idx.astype(np.int32), "kernel": noise.is_kernel[tids],
                              "body": noise.render(tids, rng), "kind": np.zeros(day_idx.size, np.int16)})
        a, b = np.searchsorted(ev_ts, lo * 1_000_000), np.searchsorted(ev_ts, hi * 1_000_000)
        events_here = ev.slice(int(a), int(b - a))
        frame = pl.concat([frame, events_here.filter(pl.col("node").is_between(k0, k1 - 1))])
        node_np = frame["node"].to_numpy()
        sec = frame["ts_us"].to_numpy() // 1_000_000
        keep = timeline.up_mask(node_np, sec)
        boot = timeline.boot_of(node_np, sec)
        frame = frame.with_columns(keep=keep, up_us=frame["ts_us"].to_numpy() - boot * 1_000_000).filter("keep")
        kind_counts += np.bincount(frame["kind"].to_numpy(), minlength=len(all_kinds))
        node_counts += np.bincount(frame["node"].to_numpy(), minlength=n)
        stamp = pl.col("ts_us").cast(pl.Datetime("us", "UTC")).dt.convert_time_zone(config.timezone)
        kernel_tag = pl.when(pl.col("kernel")).then(pl.concat_str(
            pl.lit("kernel: ["), (pl.col("up_us") // 1_000_000).cast(pl.String).str.pad_start(5),
            pl.lit("."), (pl.col("up_us") % 1_000_000).cast(pl.String).str.zfill(6), pl.lit("] "))).otherwise(pl.lit(""))
        is_iso = pl.Series(iso).gather(frame["node"])
        parts = []
        # per_node: one file per (day, node); central: one file per day, all nodes in time order.
        per_day, node_key = (1, pl.lit(0)) if central else (n, pl.col("node"))
        # Each node has one format: format the two groups separately (strftime is the costly step).
        for fmt, sel in ((ISO_FORMAT, is_iso), (RFC3164_FORMAT, ~is_iso)):
            part = frame.filter(sel)
            parts.append(part.select(
                # One int64 key orders by (UTC day, node, time): day offset x nodes, then us within the day.
                key=((pl.col("ts_us") // 86_400_000_000 - c0) * per_day + node_key) * (1 << 37)
                + pl.col("ts_us") % 86_400_000_000,
                line=pl.concat_str(stamp.dt.strftime(fmt), pl.lit(" "), hosts.gather(part["node"]), pl.lit(" "),
                                   kernel_tag, pl.col("body"))))
        lines = pl.concat(parts).sort("key", maintain_order=True)
        # One joined text per chunk, cut into files at the (day, node) boundaries by byte offset.
        file_key = (lines["key"].to_numpy() >> 37)
        ends = np.flatnonzero(np.diff(file_key)) + 1
        starts = np.concatenate([[0], ends])
        stops = np.concatenate([ends, [len(file_key)]]) if len(file_key) else np.zeros(0, np.int64)
        offsets = np.concatenate([[0], np.cumsum(lines["line"].str.len_bytes().to_numpy().astype(np.int64) + 1)])
        blob = memoryview((lines["line"].str.join("\n").item() + "\n").encode()) if len(file_key) else memoryview(b"")
        for a, b in zip(starts, stops, strict=True):
            fk = int(file_key[a])
            day, node = c0 + fk // per_day, fk % per_day
            name = CENTRAL_FILE if central else f"{names[node]}.log"
            path = root / clock.utc(int(day) * 86400)[:10] / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(blob[offsets[a]:offsets[b]])
            res.files += 1
            res.bytes += int(offsets[b] - offsets[a])
        if progress is not None and days_per_chunk > 1:
            progress(f"syslog: {clock.utc(c1 * 86400)[:10]} ({int(node_counts.sum())} lines)")
    res.by_kind = Counter({k: int(v) for k, v in zip(all_kinds, kind_counts, strict=True) if v})
    res.by_node = [int(v) for v in node_counts]
    res.lines = int(node_counts.sum())
    res.seconds = time.perf_counter() - t_start
    return res


def write_node_logs(out_dir: Path, config: SimulationConfig, clock: LocalClock, names: list[str],
                    faults: list[tuple[FaultEvent, list[str]]], fabric: list[FabricFault], timeline: NodeTimeline,
                    rng: np.random.Generator, progress: Callable[[str], None] | None = None,
                    extra: Callable[[EventLines, list[NodeHardware]], None] | None = None) -> NodeLogs:
    """Collect events, write ``syslog/`` and ``truth/log_summary.json``; returns counts and decided truth.
    ``extra``: see :func:`collect_events`."""
    t = time.perf_counter()
    events, res = collect_events(config, clock, names, faults, fabric, timeline, out_dir / "truth" / "jobs.csv", rng,
                                 extra)
    write_syslog(out_dir, config, clock, names, events, res, timeline, rng, progress)
    res.seconds = time.perf_counter() - t
    summary: dict[str, Any] = {
        "lines": res.lines,
        "files": res.files,
        "bytes": res.bytes,
        "noise_shapes": len(NOISE_SHAPES),
        "formats": {"iso8601": [names[i] for i in res.iso_nodes],
                    "rfc3164_nodes": config.nodes - len(res.iso_nodes)},
        "lines_by_kind": dict(sorted(res.by_kind.items())),
        "lines_by_node": {names[i]: c for i, c in enumerate(res.by_node)},
        "user_xid_jobs": len(res.user_xid),
    }
    (out_dir / "truth" / "log_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return res
