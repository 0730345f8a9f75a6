"""Incident retrospective section "Blast radius" (``#blast-radius``).

Reads marts.alert_incidents, marts.hw_incidents, marts.job_failure_attribution; formats, computes nothing."""

from __future__ import annotations

from gpusre.models.failures.hw_incidents import gpu_id_label
from gpusre.reports.incident.incident import Incident
from gpusre.reports.incident.terms import (UNKNOWN_NO_ACCOUNTING, alert_location, at_text, incident_missing,
                                           killed_text, when_text)
from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (MISSING, fmt_int, fmt_num, gpuh, jobs_and_requeued_runs, nodes_text, plural,
                                            truncate)
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table

_MAX_JOB_ROWS = 40


# -- blast radius ------------------------------------------------------------------------------


def _attributed_text(inc: Incident) -> str:
    """The second part of the job list: the runs job-failure attribution gives to the linked hardware
    incident(s), listed whenever they ended — ', plus the runs attribution gives to the linked hardware
    incident inc-…'."""
    ids = inc.hw_incident_ids
    if inc.kind == "hw":
        return ", plus the runs attribution gives to this hardware incident, whenever they ended"
    if not ids:
        return ""
    return (f", plus the runs attribution gives to the linked hardware incident{'s' if len(ids) > 1 else ''} "
            f"{', '.join(ids)}, whenever they ended")


def build(inc: Incident) -> Section:
    sec = Section("blast-radius", "Blast radius")
    r = inc.row
    jobs = inc.failed_jobs
    counted = [j for j in jobs if j["counted"]]
    lost_rows = sum(float(j["lost_gpu_hours"] or 0.0) for j in counted)
    # A job killed twice (a requeued instance, then the job) is one killed job of its GPUs, as in the mart.
    job_gpus: dict[str, int] = {}
    for j in counted:
        job_gpus[j["job_id"]] = max(job_gpus.get(j["job_id"], 0), int(j["n_gpus"] or 0))
    if inc.kind == "alert":
        n_mart, lost_mart = r.get("n_jobs_killed"), r.get("lost_gpu_hours")
        matched = inc.hw_incident_ids
        rule = ("jobs with a run (the final one, or an earlier one Slurm requeued) that ended FAILED or NODE_FAIL, "
                "or that attribution gives to a hardware incident whatever its state (a run Slurm requeued), on "
                "its nodes from 15 min before its start to 5 min after its last alert started, unless attributed to "
                "the user"
                + (f", plus every such run attribution gives to the linked hardware "
                   f"incident{'s' if len(matched) > 1 else ''} {', '.join(matched)}, whenever it ended" if matched else "")
                + " (marts.alert_incidents.n_jobs_killed, the requeued runs among them n_runs_requeued; "
                  "a job killed twice counts once)")
    else:
        n_mart, lost_mart = r.get("affected_jobs"), r.get("lost_gpu_hours")
        rule = ("jobs, and earlier instances of requeued jobs, that attribution gives to this incident "
                "(marts.hw_incidents.affected_jobs; a job killed twice counts once)")
    # Without accounting the jobs are unknown (the mart's NULL, or no sacct loaded): never "0 jobs killed".
    no_jobs = "sacct" in incident_missing(inc) or (inc.kind == "hw" and n_mart is None)
    users = sorted({j["user"] for j in counted if j["user"]})
    gpus = sum(job_gpus.values())
    # Faulty GPUs: the PCI addresses of the hardware incident(s), else the gpu label of the incident's alerts
    # that are about a GPU fault — GPU level (models/catalog/alert_levels.csv) or the root-cause alert. A
    # symptom carries a gpu label too (DCGMGPUIdleWhileAllocated on every GPU under a dead leaf switch): its
    # GPUs are not faulty.
    # A GPU is its node and address (hw_incidents.gpu_id): trays of one model share addresses, so four trays'
    # 0009:01:00.0 are four GPUs.
    faulty = {gpu_id_label(g) for h in inc.hw_incidents for g in (h.get("gpus") or [])}
    if not faulty:
        faulty = {f"{a['node'] or alert_location(a)} GPU {a['labels_map']['gpu']}" for a in inc.safe("alerts", [])
                  if a["in_incident"] and a["labels_map"].get("gpu") not in (None, "")
                  and (a.get("level") == "gpu" or a.get("is_root"))}
    faulty_text = f" ({truncate(', '.join(sorted(faulty)), 60)})" if faulty else ""
    # An alert incident on no Slurm node (a storage server, a PDU): the nodes of the hardware incidents it
    # is about, said so — "0 nodes" next to the 40 jobs they ran would read as a contradiction.
    from_hw = inc.kind == "alert" and not inc.anchor_nodes and bool(inc.nodes)
    shown = inc.nodes if from_hw else inc.anchor_nodes
    sec.lead = (f"{plural(len(shown), 'node')}"
                + (f" of hardware incident{'s' if len(inc.hw_incident_ids) > 1 else ''} "
                   f"{', '.join(inc.hw_incident_ids)}" if from_hw else "")
                + (f" ({truncate(nodes_text(shown), 40)})" if shown else "")
                + f", {plural(len(faulty), 'faulty GPU')} named by its evidence{faulty_text}, "
                + (f"and its job impact (jobs killed, their GPUs and users, lost GPU-hours) is {UNKNOWN_NO_ACCOUNTING}."
                   if no_jobs else
                   f"{killed_text(inc, n_mart, verb='killed')} ({fmt_int(gpus)} GPUs of {plural(len(users), 'user')}) and "
                   f"{gpuh(lost_mart)} lost GPU-hours."))
    if from_hw:
        sec.notes.append(f"The alert incident names no Slurm node; the nodes of its hardware incident "
                         f"({truncate(nodes_text(inc.nodes), 60)}) are counted and shown on the timeline.")
    if not no_jobs and n_mart is not None and (len(job_gpus) != int(n_mart) or abs(lost_rows - float(lost_mart or 0.0)) > 0.05):
        sec.notes.append(f"The jobs listed below add up to {len(job_gpus)} jobs and {gpuh(lost_rows)} GPU-hours, the "
                         f"mart says {fmt_int(n_mart)} and {gpuh(lost_mart)}: the marts were built before the latest "
                         "accounting or attribution changes; rerun the pipeline.")
    requeued = [j for j in jobs if j["instance_no"] and not j["counted"]]
    if requeued:
        sec.notes.append(f"{plural(len(requeued), 'earlier job instance')} ({fmt_int(sum(int(j['n_gpus'] or 0) for j in requeued))}"
                         f" GPUs) {'was' if len(requeued) == 1 else 'were'} interrupted and requeued by Slurm"
                         + (f", losing {gpuh(sum(float(j['lost_gpu_hours'] or 0.0) for j in requeued))} GPU-hours by "
                            "instance attribution" if any(j["lost_gpu_hours"] for j in requeued) else "")
                         + f"; the job went on, so the marts do not count {'it' if len(requeued) == 1 else 'them'} "
                           "as killed.")
    for h in (inc.hw_incidents if inc.kind == "alert" and not no_jobs else []):
        # Its runs in the job list, split as the lead splits them ("0 jobs + 1 requeued run"): a requeued run
        # worded "killed 1 job" here beside "0 jobs + 1 requeued run" above would be one kill with two counts.
        own = [j for j in jobs if j["attribution"] == "infrastructure" and j["attributed_incident"] == h["incident_id"]]
        n_final = len({j["job_id"] for j in own if not j["instance_no"]})
        killed = (jobs_and_requeued_runs(n_final, n_final + sum(1 for j in own if j["instance_no"])) if own
                  else plural(h.get("affected_jobs") or 0, "job"))
        sec.notes.append(f"Linked hardware incident {h['incident_id']} killed {killed} "
                         f"and lost {gpuh(h.get('lost_gpu_hours'))} GPU-hours by its own attribution.")
    if not jobs and no_jobs:
        sec.items.append(Table([Column("Measure"), Column("Value", True)], [
            [Cell("Nodes"), Cell(fmt_int(len(shown)))],
            [Cell("Jobs killed"), Cell(UNKNOWN_NO_ACCOUNTING)], [Cell("Lost GPU-hours"), Cell(UNKNOWN_NO_ACCOUNTING)]],
            caption="No Slurm accounting was loaded (landing/sacct/): which jobs ran on these nodes "
                    f"in {when_text(inc.job_window[0])} … {when_text(inc.job_window[1])} and which the incident killed "
                    "is not known."))
        return sec
    if not jobs:
        sec.items.append(Table([Column("Measure"), Column("Value", True)], [
            [Cell("Nodes"), Cell(fmt_int(len(shown)))], [Cell("Jobs killed"), Cell(fmt_int(n_mart or 0))],
            [Cell("Lost GPU-hours"), Cell(gpuh(lost_mart))]],
            caption=f"No job ended FAILED or NODE_FAIL on these nodes in {when_text(inc.job_window[0])} … "
                    f"{when_text(inc.job_window[1])}"
                    + (", and attribution gives no run to " + ("this hardware incident" if inc.kind == "hw" else
                       f"the linked hardware incident{'s' if len(inc.hw_incident_ids) > 1 else ''} "
                       f"{', '.join(inc.hw_incident_ids)}") if inc.hw_incident_ids else "")
                    + f". Counted: {rule}."))
        return sec
    jobs_sorted = sorted(jobs, key=lambda j: (not j["counted"], -(j["lost_gpu_hours"] or 0.0), j["end_ts"] or inc.t0))
    sec.items.append(Table(
        [Column("Job", nowrap=True), Column("Name"), Column("User"), Column("State", nowrap=True),
         Column("End (UTC)", nowrap=True), Column("GPUs", True), Column("Nodes", nowrap=True), Column("Attribution"),
         Column("Lost GPU-h", True), Column("Counted")],
        [[Cell(f"{j['job_id']} #{j['instance_no']}" if j["instance_no"] else str(j["job_id"]), mono=True,
               title="an earlier instance, requeued by Slurm" if j["instance_no"] else None),
          Cell(truncate(j["name"], 32), title=j["name"]),
          Cell(truncate(j["user"], 20), title=j["user"]),
          Cell(j["state"] or MISSING, swatch=charts.state_colour(j["state"] or "")), Cell(at_text(j["end_ts"])),
          Cell(fmt_int(j["n_gpus"])),
          Cell(truncate(nodes_text(j["nodes"]), 18), mono=True, title=nodes_text(j["nodes"])),
          Cell(truncate(" · ".join(str(x) for x in (j["attribution"], j["attributed_component"], j["attributed_incident"])
                                  if x) or "not attributed", 48),
               title=" · ".join(str(x) for x in (j["attribution"], j["rule"], j["attributed_component"],
                                                 j["attributed_incident"]) if x) or None),
          Cell(fmt_num(j["lost_gpu_hours"]) if j["lost_gpu_hours"] is not None else MISSING),
          Cell("yes" if j["counted"] else "no (requeued)" if j["instance_no"] else "no")]
         for j in jobs_sorted[:_MAX_JOB_ROWS]],
        caption=f"Jobs that ended FAILED or NODE_FAIL on the affected nodes from {when_text(inc.job_window[0])} to "
                f"{when_text(inc.job_window[1])}{_attributed_text(inc)}, and interrupted earlier instances of requeued "
                f"jobs (job #instance). Counted: {rule}. "
                "Lost GPU-hours: GPUs × (work since the last checkpoint + restart overhead)."
                + (f" First {_MAX_JOB_ROWS} of {len(jobs)}." if len(jobs) > _MAX_JOB_ROWS else ""),
    ))
    if users:
        # jobs (final runs) and requeued runs apart, as the lead: a requeued run is no killed job
        per_user: dict[str, list[float]] = {}
        for j in counted:
            u = per_user.setdefault(j["user"] or MISSING, [0, 0, 0.0, 0])
            u[3 if j["instance_no"] else 0] += 1
            u[1] += int(j["n_gpus"] or 0)
            u[2] += float(j["lost_gpu_hours"] or 0.0)
        any_requeued = any(v[3] for v in per_user.values())
        sec.items.append(Table(
            [Column("User"), Column("Jobs killed", True)] + ([Column("Requeued runs", True)] if any_requeued else [])
            + [Column("GPUs", True), Column("Lost GPU-h", True)],
            [[Cell(truncate(u, 32), title=u), Cell(fmt_int(v[0]))] + ([Cell(fmt_int(v[3]))] if any_requeued else [])
             + [Cell(fmt_int(v[1])), Cell(fmt_num(v[2]))]
             for u, v in sorted(per_user.items(), key=lambda kv: (-kv[1][2], kv[0]))],
            caption="Users of the counted jobs"
                    + (" and requeued runs (an earlier run Slurm ran again: no killed job)." if any_requeued else ".")))
    return sec


SECTION: SectionSpec[Incident] = SectionSpec("blast-radius", "Blast radius", lambda con, inc: build(inc))
