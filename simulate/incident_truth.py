"""Ground truth of incidents and of why each job ended: ``truth/incidents.csv``, ``truth/job_attribution.csv``.

An incident is one thing that broke: a node fault (one node) or a fabric fault (a leaf switch and
every node under it; a storage outage and the clients it hung). The pipeline's incident merging and
job-failure attribution are scored against these files.

Attribution follows the simulator's own cause of each job's last instance: killed by a fault ->
``infrastructure`` (with the fault's component and incident); the user's own crash, OOM or time
limit -> ``user``; completed, user-cancelled or preempted -> ``none``; anything else ``unknown``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from gpusre.models.ingest.hostlist import compress_hostlist
from gpusre.simulate.clock import LocalClock
from gpusre.simulate.faults import FAULT_KIND_BY_NAME, FabricFault, FaultEvent

__all__ = ["INCIDENTS_COLUMNS", "ATTRIBUTION_COLUMNS", "ATTRIBUTION_BY_CAUSE", "Incident", "build_incidents",
           "write_incidents", "write_job_attribution"]

INCIDENTS_COLUMNS = ("incident_id", "component", "kind", "start_ts", "end_ts", "nodes", "n_nodes", "cause_class",
                     "affects_jobs", "fault_ids", "job_ids", "component_class")
ATTRIBUTION_COLUMNS = ("job_id", "state_final", "attribution", "component", "incident_id", "cause", "end_ts",
                       "nodes", "n_gpus", "gpu_hours", "user_xid")
#: Simulator cause of a job's last instance -> attribution.
ATTRIBUTION_BY_CAUSE = {"node_fail": "infrastructure", "user_error": "user", "oom": "user", "timeout": "user",
                        "completed": "none", "user_cancel": "none", "preempted": "none"}


@dataclass(frozen=True)
class Incident:
    """One incident; ``end`` is when the component was repaired (node back in service, link/mount restored).
    ``component_class`` is the product's class of the component (FaultKind.component_class)."""

    incident_id: str
    component: str
    kind: str
    cause_class: str
    start: int
    end: int
    nodes: tuple[int, ...]
    affects_jobs: bool
    fault_ids: tuple[int, ...]
    job_ids: tuple[str, ...]
    component_class: str = ""


def build_incidents(faults: list[tuple[FaultEvent, list[str]]], fabric: list[FabricFault],
                    fabric_nodes: dict[int, tuple[int, ...]], fabric_kills_jobs: bool) -> list[Incident]:
    """Incidents sorted by start, numbered ``I0001``...; ``fabric_nodes`` are the nodes that were up
    (and logged) when each fabric fault hit."""
    drafts: list[tuple[int, str, int, dict]] = []
    for f, jobs in faults:
        if f.incident:
            continue
        drafts.append((f.ts, f.kind, f.node, dict(component=f.component, kind=f.kind,
                                                  cause_class=FAULT_KIND_BY_NAME[f.kind].cause_class,
                                                  component_class=FAULT_KIND_BY_NAME[f.kind].component_class,
                                                  start=f.ts,
                                                  end=f.ts + f.repair_s, nodes=(f.node,), affects_jobs=True,
                                                  fault_ids=(f.fault_id,), job_ids=tuple(jobs))))
    for ff in fabric:
        members = [(f, jobs) for f, jobs in faults if f.incident == ff.incident]
        nodes = fabric_nodes.get(ff.incident, ())
        if not nodes:
            continue  # every node was already down: nothing noticed it
        drafts.append((ff.ts, ff.kind, nodes[0], dict(
            component=ff.component, kind=ff.kind, cause_class=ff.cause_class,
            component_class=FAULT_KIND_BY_NAME[ff.kind].component_class, start=ff.ts, end=ff.ts + ff.duration_s,
            nodes=nodes, affects_jobs=fabric_kills_jobs, fault_ids=tuple(f.fault_id for f, _ in members),
            job_ids=tuple(sorted({j for _, jobs in members for j in jobs})))))
    drafts.sort(key=lambda d: (d[0], d[1], d[2]))
    return [Incident(f"I{i:04d}", **d[3]) for i, d in enumerate(drafts, start=1)]


def write_incidents(path: Path, incidents: list[Incident], names: list[str], clock: LocalClock) -> None:
    """``truth/incidents.csv``: one row per incident (nodes as a hostlist, ids ``;``-separated)."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(INCIDENTS_COLUMNS)
        for inc in incidents:
            w.writerow((inc.incident_id, inc.component, inc.kind, clock.utc(inc.start), clock.utc(inc.end),
                        compress_hostlist(names[n] for n in inc.nodes), len(inc.nodes), inc.cause_class,
                        str(inc.affects_jobs).lower(), ";".join(map(str, inc.fault_ids)), ";".join(inc.job_ids),
                        inc.component_class))


def write_job_attribution(path: Path, jobs_csv: Path, faults: list[tuple[FaultEvent, list[str]]],
                          incidents: list[Incident], user_xid: dict[str, int], clock: LocalClock) -> pl.DataFrame:
    """``truth/job_attribution.csv``: one row per job id that ended (not running/pending), sorted as jobs.csv.

    A job killed by a fault ended at the fault's time, so the fault that ended its last instance is the
    one listing the job at exactly its end time.
    """
    incident_of_fault = {fid: inc for inc in incidents for fid in inc.fault_ids}
    killer: dict[tuple[str, str], Incident] = {}
    for f, jobs in faults:
        inc = incident_of_fault.get(f.fault_id)
        if inc is not None:
            for j in jobs:
                killer[(j, clock.utc(f.ts))] = inc
    jobs = pl.read_csv(jobs_csv, infer_schema=False).filter(~pl.col("state_final").is_in(["RUNNING", "PENDING"]))
    rows = []
    for r in jobs.iter_rows(named=True):
        attribution = ATTRIBUTION_BY_CAUSE.get(r["cause"], "unknown")
        component = incident_id = ""
        if attribution == "infrastructure":
            inc = killer.get((r["job_id"], r["end_ts"]))
            if inc is None:
                attribution = "unknown"
            else:
                component, incident_id = inc.component, inc.incident_id
        elif attribution == "user":
            component = "user_application"
        code = user_xid.get(r["job_id"])
        rows.append((r["job_id"], r["state_final"], attribution, component, incident_id, r["cause"], r["end_ts"],
                     r["nodes"], r["n_gpus"], r["gpu_hours"], "" if code is None else str(code)))
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(ATTRIBUTION_COLUMNS)
        w.writerows(rows)
    return pl.DataFrame(rows, schema={c: pl.String for c in ATTRIBUTION_COLUMNS}, orient="row")
