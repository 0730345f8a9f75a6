"""Trace-driven Slurm GPU cluster simulator (``gpusre simulate``).

``simulate_cluster(out_dir, SimulationConfig(...))`` writes a landing directory the pipeline can
ingest, plus the ground truth to check it against::

    out_dir/cluster.yaml                 cluster, timezone, nodes, gpus_per_node, gpu_type, racks,
                                         leaf_switches, maintenance[{start, end, nodes, reason}],
                                         reliability{checkpoint, checkpoint_overrides} (checkpointing.py)
    out_dir/sacct/sacct_YYYY-MM-DD.psv   nightly `sacct -a -P -D` dump of that local day (see sacct_writer)
    out_dir/truth/jobs.csv               one row per job id (its last printed instance)
    out_dir/truth/faults.csv             hardware faults that hit a live node, with the jobs they killed
    out_dir/truth/runs.csv               one row per training run: instances, restart overhead, lost work, ETTR
    out_dir/truth/goodput_daily.csv      per UTC day: capacity, allocated, lost (failure, restart), productive
    out_dir/truth/summary.json           exact totals (GPU-hours by state, per UTC day, goodput, ETTR, fault rates)

Checkpointing (runs.csv, goodput_daily.csv) is accounting truth computed after the simulation from the
instance records with its own random stream (see checkpointing, reliability_truth): it never changes the
job stream, so a seed's sacct and syslog output is the same with or without it.

With ``write_logs`` (default) also node logs and their truth (see syslog_writer, incident_truth)::

    out_dir/syslog/YYYY-MM-DD/<node>.log per node and UTC day, RFC 3164 or rsyslog ISO-8601 lines
    out_dir/truth/incidents.csv          node faults and fabric (leaf switch / storage) incidents, each with its
                                         component_class (the product's classes, thermal and power included)
    out_dir/truth/job_attribution.csv    every ended job: infrastructure | user | none | unknown
    out_dir/truth/log_summary.json       lines per kind and node, formats

With ``node_state_events`` (default) also Slurm node-state history (see node_events_writer)::

    out_dir/slurm_events/events_YYYY-MM-DD.txt  nightly `sacctmgr show event -P` dump (fault drains, Not responding,
                                         maintenance windows, admin drains, false-positive health checks)
    out_dir/truth/node_states.csv        every node event with its cause; faults.csv gains detect_ts; summary.json
                                         gains in_service_node_hours (+ by UTC day), node_hours_by_cause, ...

It draws from its own random stream after the simulation, so sacct dumps and the node-log lines above
do not change; ``health_check_logs`` adds only the NHC lines of the false-positive drains to syslog/.

With ``write_alerts`` (default) also Prometheus/Alertmanager alerts (see alert_writer), from their own stream::

    out_dir/alerts/YYYY-MM-DD.jsonl      Alertmanager webhook payloads (version 4), one per line, per UTC day
    out_dir/truth/alerts.csv             every notified alert occurrence with its truth incident (or noise-<n>);
                                         summary.json gains n_alert_payloads, n_alert_notifications, n_alerts

Same config (including seed) -> byte-identical files. Named scenario configs (NHC conventions, flapping
alerts, second waves, label and naming conventions, thermal/power faults, quiet and noisy clusters) are in
``scenarios.py``; ``incident_scoring.py`` scores a warehouse built from one against its truth.
"""

from __future__ import annotations

from gpusre.models.polars_allocator import keep_freed_memory

keep_freed_memory()  # before anything below loads Polars (see polars_allocator)

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from gpusre.simulate.alert_writer import write_alerts
from gpusre.simulate.clock import LocalClock
from gpusre.simulate.config import SimulationConfig
from gpusre.simulate.faults import add_second_waves, fabric_node_faults, plan_fabric_faults, plan_faults
from gpusre.simulate.incident_truth import build_incidents, write_incidents, write_job_attribution
from gpusre.simulate.node_events_writer import NodeBusy, plan_node_states, write_node_states
from gpusre.simulate.node_timeline import NodeTimeline
from gpusre.simulate.reliability_truth import GOODPUT_DAILY_COLUMNS, RUNS_COLUMNS
from gpusre.simulate.sacct_writer import SACCT_FIELDS, SACCT_HEADER, SacctDumpWriter
from gpusre.simulate.scheduler import ClusterSimulation
from gpusre.simulate.syslog_writer import fault_events, write_node_logs
from gpusre.simulate.topology import cluster_yaml, node_names, plan_maintenance
from gpusre.simulate.truth import FAULTS_COLUMNS, JOBS_COLUMNS, TruthRecorder
from gpusre.simulate.workload import generate_workload

__all__ = ["SimulationConfig", "simulate_cluster", "SACCT_FIELDS", "SACCT_HEADER", "JOBS_COLUMNS",
           "FAULTS_COLUMNS", "RUNS_COLUMNS", "GOODPUT_DAILY_COLUMNS"]


def simulate_cluster(out_dir: Path, config: SimulationConfig,
                     progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Simulate ``config`` and write cluster.yaml, nightly sacct dumps and truth under ``out_dir``.

    Returns the summary written to ``truth/summary.json`` (counts, GPU-hours, timings).
    """
    say = progress or (lambda _msg: None)
    t_wall = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # Independent streams per concern: changing the fault model does not reshuffle the job mix.
    # Streams 3 and 4 (fabric faults, logs) were added later; spawn keeps the first three unchanged.
    seeds = np.random.SeedSequence(config.seed).spawn(5)
    rng_work, rng_fault = np.random.default_rng(seeds[0]), np.random.default_rng(seeds[1])
    rnd = random.Random(int(seeds[2].generate_state(1)[0]))

    clock = LocalClock(config.timezone, config.start, config.days)
    names = node_names(config)
    windows = plan_maintenance(config, clock)
    (out_dir / "cluster.yaml").write_text(
        yaml.safe_dump(cluster_yaml(config, names, windows, clock), sort_keys=False), encoding="utf-8")

    workload = generate_workload(config, clock, rng_work)
    faults, lemons = plan_faults(config.nodes, clock.day_start[0], clock.day_start[-1],
                                 config.node_failures_per_1000_node_days, rng_fault, config.thermal_power_fault_share)
    fabric = plan_fabric_faults(config.nodes, config.nodes_per_leaf, clock.day_start[0], clock.day_start[-1],
                                config.leaf_switch_failures_per_1000_switch_days,
                                config.storage_outages_per_1000_days, np.random.default_rng(seeds[3]))
    if config.leaf_second_wave_share > 0:  # own stream: without second waves nothing else moves
        fabric = add_second_waves(fabric, config.leaf_second_wave_share, np.random.default_rng([config.seed, 7171]))
    if config.fabric_faults_kill_jobs:
        faults = fabric_node_faults(fabric, faults)
    say(f"workload: {len(workload)} submissions, runtime scale {workload.runtime_scale:.3f}, {len(faults)} faults")
    t_gen = time.perf_counter()

    writer = SacctDumpWriter(out_dir, config, clock, names)
    truth = TruthRecorder(out_dir, config, clock, names)

    def on_dump(day: int, at: int, instances: list) -> None:
        writer.write_day(day, at, instances)
        if day % 30 == 29:
            say(f"day {day + 1}/{config.days}: {writer.rows_written} allocation rows")

    busy = NodeBusy(config.nodes)

    def on_alloc(inst, t0: int, t1: int) -> None:  # noqa: ANN001 - an Instance
        truth.record_alloc(inst, t0, t1)
        busy.add(inst.nodes, t0, t1)

    sim = ClusterSimulation(config, clock, workload, faults, windows, rnd, on_dump=on_dump,
                            on_final=lambda inst: truth.record_final(inst, clock.dump_time[-1]),
                            on_fault=truth.record_fault, on_alloc=on_alloc)
    stats = sim.run()
    t_sim = time.perf_counter()
    for inst in sim.remaining_live():
        if inst.start is not None:
            busy.add(inst.nodes, inst.start, clock.dump_time[-1])
    maint_node_hours = sum(len(w.nodes) * (w.end - w.start) for w in windows) / 3600
    summary = truth.finish(sim.remaining_live(), clock.dump_time[-1], {
        "n_instances": stats.instances,
        "n_requeues": stats.requeues,
        "n_preemptions": stats.preemptions,
        "n_runs": stats.runs,
        "n_pending_cancels": stats.pending_cancels,
        "max_queue_length": stats.max_queue,
        "sacct_allocation_rows": writer.rows_written,
        "sacct_lines": writer.lines_written,
        "maintenance_node_hours": round(maint_node_hours, 6),
        "lemon_nodes": [names[i] for i in lemons],
        "runtime_scale": round(workload.runtime_scale, 6),
    })
    node_plan = None
    if config.node_state_events:
        busy.finish()
        node_plan = plan_node_states(config, clock, names, truth.faults, windows, busy)
    logs = None
    if config.write_logs:
        rng_log = np.random.default_rng(seeds[4])
        applied = [f for f, _ in truth.faults]
        timeline = NodeTimeline(config.nodes, clock.day_start[0], clock.day_start[-1], applied, windows, rng_log)
        extra = node_plan.health_check_lines if node_plan is not None and config.health_check_logs else None
        logs = write_node_logs(out_dir, config, clock, names, truth.faults, fabric, timeline, rng_log, say, extra)
        incidents = build_incidents(truth.faults, fabric, logs.fabric_nodes, config.fabric_faults_kill_jobs)
        write_incidents(out_dir / "truth" / "incidents.csv", incidents, names, clock)
        write_job_attribution(out_dir / "truth" / "job_attribution.csv", out_dir / "truth" / "jobs.csv", truth.faults,
                              incidents, logs.user_xid, clock)
        say(f"syslog: {logs.lines} lines in {logs.files} files ({logs.bytes / 1e6:.0f} MB) in {logs.seconds:.1f}s, "
            f"{logs.lines_per_s / 1e6:.2f} M lines/s; {len(incidents)} incidents")
    if node_plan is not None:
        if logs is None:
            # The drains start at NHC's first failing run: replay the (cheap) fault part of the log
            # generator for those times, so node states are the same with or without node logs.
            rng_log = np.random.default_rng(seeds[4])
            applied = [f for f, _ in truth.faults]
            timeline = NodeTimeline(config.nodes, clock.day_start[0], clock.day_start[-1], applied, windows, rng_log)
            _, logs, _, _ = fault_events(config, truth.faults, fabric, timeline, rng_log)
        keys = write_node_states(out_dir, node_plan, logs.nhc_first, logs.fabric_nhc_first, logs.fault_devices)
        summary.update(keys)
        say(f"slurm_events: {keys['node_state_events']} node events, "
            f"{keys['in_service_node_hours']:.0f} node-hours in service")
    if config.write_alerts:
        t_alerts = time.perf_counter()
        if logs is None:  # the fabric victims and fault devices come from the (cheap) fault part of the logs
            rng_log = np.random.default_rng(seeds[4])
            applied = [f for f, _ in truth.faults]
            timeline = NodeTimeline(config.nodes, clock.day_start[0], clock.day_start[-1], applied, windows, rng_log)
            _, logs, _, _ = fault_events(config, truth.faults, fabric, timeline, rng_log)
        incidents = build_incidents(truth.faults, fabric, logs.fabric_nodes, config.fabric_faults_kill_jobs)
        keys = write_alerts(out_dir, config, clock, names, truth.faults, fabric, incidents, logs.fabric_nodes,
                            logs.fault_devices, timeline)
        summary.update(keys)
        say(f"alerts: {keys['n_alerts']} alerts in {keys['n_alert_notifications']} notifications "
            f"({keys['n_alert_payloads']} payloads) in {time.perf_counter() - t_alerts:.1f}s")
    say(f"done: {summary['n_jobs']} jobs, {writer.rows_written} allocation rows, utilization "
        f"{summary['utilization']:.2f}; generate {t_gen - t_wall:.1f}s, simulate+write {t_sim - t_gen:.1f}s, "
        f"total {time.perf_counter() - t_wall:.1f}s")
    return summary
