"""Nightly section "Last night" (``#last_night``): what happened on the report day and what to do, on the
first screen, before the period-wide context.

Reads marts.hw_incidents (and marts.incident_repairs' first log line), marts.failure_attribution_summary,
marts.job_failure_attribution (and core.jobs for a job's name), marts.suspect_nodes, marts.alert_incidents;
formats, computes nothing. Each part degrades on
its own: a missing mart makes its line say "no data", the others still speak."""

from __future__ import annotations

from typing import Any

import duckdb

from gpusre.models.failures.suspect_nodes import LOOKBACK
from gpusre.models.warehouse import select_columns, table_columns
from gpusre.reports.incident.terms import (
    COSTLIEST_ORDER,
    NOT_LOADED,
    UNKNOWN_NO_ACCOUNTING,
    first_evidence_sql,
    missing_sources,
    nodes_phrase,
    start_note,
    tie_text,
)
from gpusre.reports.kit.formatting import (
    MISSING,
    days_of_data_text,
    fmt_date,
    fmt_int,
    gpuh,
    is_number,
    nodes_text,
    or_unknown,
    plural,
    sentence_case,
    truncate,
    utc_hm,
)
from gpusre.reports.kit.labels import incident_action, incident_kind
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status, utc_day_sql
from gpusre.reports.nightly.meta import (
    NightlyMeta,
    alert_history,
    killed_runs,
    reason_text,
    sources_without_day,
    unbounded_note,
)
from gpusre.reports.nightly.sections.attribution import attribution_counts
from gpusre.models.vocabulary import failure_incident_sql

#: Last night's hardware incidents listed (most lost GPU-hours first); the rest are counted ("N more").
TOP_N_INCIDENTS = 8
#: Nodes that failed again, listed by suspicion score.
TOP_N_NODES = 5
#: Actions named in the "To do" line (the table lists them all).
TOP_N_ACTIONS = 4

_ON_DAY = f"{utc_day_sql('start_ts')} = ?"
#: The night's hardware incidents: those the operator marked not a failure (incidents.csv) stay out.
_HW_ON_DAY = f"{_ON_DAY} AND {failure_incident_sql()}"


def _lower_first(text: str) -> str:
    """'No alerts yet (…)' -> 'no alerts yet (…)', inside a sentence."""
    return text[:1].lower() + text[1:]


def _where(r: dict[str, Any], max_len: int = 40) -> str:
    """'leaf05 (gpu[0065-0080])', 'gpu0778': where an incident happened, in a few words; a long node list
    is shortened by whole names to about ``max_len`` characters (:func:`nodes_phrase`), never cut inside one."""
    switch = f"{r['leaf_switch']} ()" if r.get("leaf_switch") else ""
    nodes = nodes_phrase(r["nodes"], max_len - len(switch)) if r["nodes"] else ""
    if r.get("leaf_switch"):
        return f"{r['leaf_switch']} ({nodes})" if nodes else str(r["leaf_switch"])
    return nodes or MISSING


def _where_phrase(r: dict[str, Any]) -> str:
    """' under leaf05 (gpu[0065-0080])', ' on gpu0778', or '' for an incident that names no node."""
    where = _where(r)
    if where == MISSING:
        return ""
    return f" {'under' if r.get('leaf_switch') else 'on'} {where}"


def _silent_nodes(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> dict[str, Any] | None:
    """marts.log_coverage_daily's row of the report day when nodes that ran jobs logged nothing (the nodes
    that logged, the silent ones), else None: "none began" holds only for the nodes that logged."""
    if table_status(con, "marts.log_coverage_daily") is not None:
        return None
    rows = query_rows(con, "SELECT nodes_logging, n_silent_nodes, silent_nodes FROM marts.log_coverage_daily "
                           "WHERE day = ? AND n_silent_nodes > 0", [meta.report_date])
    return rows[0] if rows else None


def _incidents(con: duckdb.DuckDBPyConnection, meta: NightlyMeta, missing: frozenset[str],
               gaps: dict[str, str]) -> dict[str, Any]:
    """Last night's hardware incidents: count, the top rows, the sentence; ``reason`` when unknown (no node
    logs, or none for the report day: ``gaps`` is :func:`~gpusre.reports.nightly.meta.sources_without_day`);
    ``silent`` when nodes that ran jobs logged nothing that day."""
    reason = table_status(con, "marts.hw_incidents")
    if reason and "has not been built" in reason:
        return {"reason": reason, "n": None, "rows": []}
    n = 0 if reason else scalar(con, f"SELECT count(*) FROM marts.hw_incidents WHERE {_HW_ON_DAY}", [meta.report_date])
    if not n and "syslog" in missing:
        # Incidents come from the node logs: none seen without them is no evidence that none happened.
        return {"reason": f"{NOT_LOADED['syslog']} were loaded (landing/syslog/): whether one began is unknown",
                "n": None, "rows": []}
    if not n and "syslog" in gaps:
        # Logs that stopped (or not yet begun) say nothing of that day either.
        return {"reason": f"no node log line on {fmt_date(meta.report_date)} ({gaps['syslog']}): whether one "
                          "began is unknown", "n": None, "rows": []}
    cols = select_columns(con, "marts.hw_incidents", ["affected_gpus", "leaf_switch", "action", "label_source",
                                                      "n_events"])
    # affected_jobs counts runs (a requeued job's killed run too): the jobs' final runs attributed to it
    # (marts.job_failure_attribution) and the requeued runs (marts.instance_failure_attribution), worded as
    # such (killed_runs) when the two add up to it; else (a mart missing) the split is unknown (NULL).
    per = "WHERE x.incident_id = hw_incidents.incident_id AND x.attribution = 'infrastructure'"
    have = [t for t in ("job_failure_attribution", "instance_failure_attribution")
            if {"incident_id", "attribution"} <= table_columns(con, f"marts.{t}")]
    finals = ("NULL AS killed_jobs" if len(have) < 2 else
              f"CASE WHEN (SELECT count(*) FROM marts.job_failure_attribution AS x {per}) "
              f"+ (SELECT count(*) FROM marts.instance_failure_attribution AS x {per}) = affected_jobs "
              f"THEN (SELECT count(*) FROM marts.job_failure_attribution AS x {per}) END AS killed_jobs")
    rows = [] if not n else query_rows(con, f"""SELECT incident_id, component, scope, start_ts, nodes, affected_jobs,
                                                   lost_gpu_hours, {cols}, {first_evidence_sql(con)}, {finals}
                                            FROM marts.hw_incidents WHERE {_HW_ON_DAY}
                                            ORDER BY {COSTLIEST_ORDER}
                                            LIMIT {TOP_N_INCIDENTS}""", [meta.report_date])
    # The night's incidents that lost as much as its costliest: the one order picks it, the sentence says so.
    lost = rows[0]["lost_gpu_hours"] if rows else None
    tied = (scalar(con, f"SELECT count(*) FROM marts.hw_incidents WHERE {_HW_ON_DAY} AND lost_gpu_hours = ?",
                   [meta.report_date, lost]) if is_number(lost) and lost > 0 else 0)
    return {"reason": None, "n": n, "rows": rows, "tied": tied, "silent": _silent_nodes(con, meta)}


def _silent_text(silent: dict[str, Any]) -> str:
    """'15 nodes logged; 1 node that ran jobs logged nothing (gpu12)' — whose night nothing is known of."""
    return (f"{plural(silent['n_silent_nodes'], 'node')} that ran jobs logged nothing "
            f"({nodes_phrase(silent['silent_nodes'], 60)})")


def _killed_phrase(jobs: int | None, runs: int | None) -> str:
    """'2 jobs', '1 requeued run', '2 runs (1 job + 1 requeued run)': :func:`~gpusre.reports.nightly.meta.killed_runs`
    in a sentence."""
    head, detail = killed_runs(jobs, runs)
    return head + (f" ({detail})" if detail else "")


def _incident_text(inc: dict[str, Any]) -> str:
    if inc["reason"]:
        return reason_text(inc["reason"])
    if not inc["n"] and inc.get("silent"):
        return (f"none began on the {plural(inc['silent']['nodes_logging'], 'node')} that logged; "
                f"{_silent_text(inc['silent'])}: whether one began there is unknown.")
    if not inc["n"]:
        return "none began."
    top = inc["rows"][0]
    impact = ("its job impact is " + UNKNOWN_NO_ACCOUNTING if top["affected_jobs"] is None else
              "killed " + _killed_phrase(top["killed_jobs"], top["affected_jobs"])
              + (f" on {plural(top['affected_gpus'], 'GPU')}" if top["affected_jobs"] and top["affected_gpus"] else "")
              + f" and lost {gpuh(top['lost_gpu_hours'] or 0.0)} GPU-h"
              + tie_text(inc.get("tied"), top["lost_gpu_hours"]))
    which = "the costliest" if inc["n"] > 1 else "it"
    return (f"{fmt_int(inc['n'])} began; {which}, {incident_kind(top['component'], top['scope'])}"
            f"{_where_phrase(top)} at {utc_hm(top['start_ts'])} UTC{start_note(top, utc_hm)}, {impact}.")


def _jobs(con: duckdb.DuckDBPyConnection, meta: NightlyMeta, missing: frozenset[str]) -> dict[str, Any]:
    """Last night's failed jobs by attribution and the infrastructure-failed job that lost the most."""
    reason = (table_status(con, "marts.job_failure_attribution")
              or table_status(con, "marts.failure_attribution_summary"))
    if "sacct" in missing:
        return {"reason": UNKNOWN_NO_ACCOUNTING}
    if reason and "has not been built" in reason:
        return {"reason": reason}
    total, counts = (0, {}) if reason else attribution_counts(con, meta.report_date)
    top = None if reason else (query_rows(con, f"""SELECT a.job_id, a.n_gpus, a.lost_gpu_hours,
                                                        (SELECT j.name FROM core.jobs AS j WHERE j.job_id = a.job_id
                                                         LIMIT 1) AS name
                                                 FROM marts.job_failure_attribution AS a
                                                 WHERE a.attribution = 'infrastructure'
                                                   AND {utc_day_sql('a.end_ts')} = ?
                                                 ORDER BY a.lost_gpu_hours DESC NULLS LAST, a.n_gpus DESC, a.job_id
                                                 LIMIT 1""", [meta.report_date]) or [None])[0]
    # What the user's own failures were that day, by the state they ended in (most first).
    user_states = [] if reason else query_rows(con, """SELECT state, jobs FROM marts.failure_attribution_summary
                                                     WHERE scope = 'day' AND day = ? AND attribution = 'user'
                                                       AND state <> '(all)' AND jobs > 0
                                                     ORDER BY jobs DESC, state""", [meta.report_date])
    return {"reason": None, "total": total, "counts": counts, "top": top, "user_states": user_states}


#: How the nightly names a user's own failure by its Slurm end state (singular, plural).
_USER_STATE_WORDS: dict[str, tuple[str, str]] = {
    "FAILED": ("non-zero exit", "non-zero exits"),
    "TIMEOUT": ("time limit", "time limits"),
    "OUT_OF_MEMORY": ("out of memory", "out of memory"),
    "CANCELLED": ("cancel", "cancels"),
    "NODE_FAIL": ("node failure", "node failures"),
    "BOOT_FAIL": ("boot failure", "boot failures"),
    "DEADLINE": ("deadline", "deadlines"),
}


def _user_states_text(rows: list[dict[str, Any]]) -> str:
    """'40 non-zero exits, 7 time limits, 1 out of memory' from (state, jobs) rows."""
    def words(state: str, n: int) -> str:
        one, many = _USER_STATE_WORDS.get(state, (state.lower().replace("_", " "),) * 2)
        return f"{fmt_int(n)} {one if n == 1 else many}"
    return ", ".join(words(r["state"], r["jobs"]) for r in rows)


def _jobs_text(jobs: dict[str, Any]) -> str:
    if jobs["reason"]:
        return reason_text(jobs["reason"])
    none = {"n": 0, "runs": 0, "lost": 0.0}
    infra, user, unknown = (jobs["counts"].get(a, none) for a in ("infrastructure", "user", "unknown"))
    if not jobs["total"] and not any(c["runs"] for c in jobs["counts"].values()):
        return "no job failed."
    # The runs it killed, a requeued job's run included: the count of the summary line and the headline's card.
    text = (f"{_killed_phrase(infra['n'], infra['runs'])} failed because of the infrastructure"
            + (f", losing {gpuh(infra['lost'] or 0.0)} GPU-h" if infra["runs"] else ""))
    top = jobs["top"]
    if top is not None and infra["n"] > 1:
        name = f" \u201c{truncate(top['name'], 40)}\u201d" if top["name"] else ""
        text += (f"; the largest, job {top['job_id']}{name} on {plural(top['n_gpus'], 'GPU')}, lost "
                 f"{gpuh(top['lost_gpu_hours'] or 0.0)} GPU-h")
    # The user's own failures (time limits, out of memory, exit codes) are routine: counted, not alarmed —
    # with what they were that day, not a fixed list of what they could be.
    kinds = _user_states_text(jobs.get("user_states") or [])
    return text + (f". {fmt_int(user['n'])} failed on {'its' if user['n'] == 1 else 'their'} own"
                   + (f" (user: {kinds})" if kinds and user["n"] else "")
                   + (f" and {fmt_int(unknown['n'])} for an unknown reason" if unknown["n"] else "") + ".")


def _repeat_nodes(con: duckdb.DuckDBPyConnection, meta: NightlyMeta, inc: dict[str, Any]) -> dict[str, Any]:
    """Suspect nodes (marts.suspect_nodes: far above the fleet over the lookback (LOOKBACK, 28 days)) among the nodes of last night's
    hardware incidents: the nodes that failed again."""
    status = table_status(con, "marts.suspect_nodes")
    if status and "has not been built" in status:
        return {"reason": status, "rows": [], "n": 0}
    if inc["reason"]:
        return {"reason": inc["reason"], "rows": [], "n": 0}
    if status or not inc["n"]:
        return {"reason": None, "rows": [], "n": 0, "no_incident": not inc["n"], "silent": inc.get("silent")}
    where = (f"s.node IN (SELECT unnest(i.nodes) FROM marts.hw_incidents AS i WHERE {utc_day_sql('i.start_ts')} = ? "
             f"AND {failure_incident_sql('i.cause_class')})")
    n = scalar(con, f"SELECT count(*) FROM marts.suspect_nodes AS s WHERE {where}", [meta.report_date])
    rows = query_rows(con, f"""SELECT s.node, s.hw_episodes, s.xid_episodes, s.infra_failed_jobs, s.worst_event,
                                  s.recommended_action, s.score
                           FROM marts.suspect_nodes AS s WHERE {where}
                           ORDER BY s.score DESC NULLS LAST, s.node LIMIT {TOP_N_NODES}""", [meta.report_date])
    return {"reason": None, "rows": rows, "n": n}


def _signals(r: dict[str, Any]) -> str:
    """'4 hardware episodes, 3 infrastructure-failed jobs' (the non-zero signals of a suspect node)."""
    parts = [plural(r["hw_episodes"], "hardware episode") if r["hw_episodes"] else "",
             plural(r["xid_episodes"], "Xid episode") if r["xid_episodes"] and not r["hw_episodes"] else "",
             plural(r["infra_failed_jobs"], "infrastructure-failed job") if r["infra_failed_jobs"] else ""]
    return ", ".join(p for p in parts if p) or "far above the fleet"


def _over(meta: NightlyMeta) -> str:
    """'the last 28 days' of marts.suspect_nodes' lookback, or the days of data when fewer (a week's
    warehouse: 'the 7 days of data, 2026-11-18 … 2026-11-24, of a 28-day window'). The mart's lookback ends
    at the data's last day, after the report day on a past night's re-render: named as it is, and said a
    snapshot (:func:`~gpusre.reports.nightly.meta.unbounded_note`) where the text is used."""
    return days_of_data_text(LOOKBACK.days, meta.period_first, meta.data_last or meta.report_date)


def _lookback_days(meta: NightlyMeta) -> int:
    """Days of the suspect-node lookback the data covers (28, or fewer in a younger warehouse)."""
    if meta.period_first is None:
        return LOOKBACK.days
    return max(1, min(LOOKBACK.days, ((meta.data_last or meta.report_date) - meta.period_first).days + 1))


def _repeat_text(rep: dict[str, Any], meta: NightlyMeta) -> str:
    if rep["reason"]:
        return reason_text(rep["reason"])
    if rep.get("no_incident"):
        return ("none among the nodes that logged: no hardware incident began there." if rep.get("silent")
                else "none: no hardware incident began.")
    over = _over(meta)
    snapshot = unbounded_note(meta, "The suspect-node list")
    if not rep["rows"]:
        return f"no node of last night's incidents stands out from the fleet over {over}." + snapshot
    full = over == f"the last {LOOKBACK.days} days"
    # A younger warehouse says its days once, before the nodes, not "in the last 28 days" after each one.
    named = "; ".join(f"{r['node']} ({_signals(r)}{' in ' + over if full else ''}) \u2014 recommended: "
                      f"{r['recommended_action'] or MISSING}" for r in rep["rows"])
    more = f"; and {fmt_int(rep['n'] - len(rep['rows']))} more" if rep["n"] > len(rep["rows"]) else ""
    return ("" if full else f"over {over}: ") + named + more + "." + snapshot


def _alerts(con: duckdb.DuckDBPyConnection, meta: NightlyMeta, gaps: dict[str, str]) -> dict[str, Any]:
    reason = alert_history(con) or table_status(con, "marts.alert_incidents")
    if reason:
        return {"reason": reason}
    if "alerts" in gaps:
        # Alerts that stopped before the report day: none seen that day is no evidence that none fired.
        return {"reason": f"no alert data for {fmt_date(meta.report_date)} ({gaps['alerts']}): whether one "
                          "started is unknown"}
    n = scalar(con, f"SELECT count(*) FROM marts.alert_incidents WHERE {_ON_DAY}", [meta.report_date])
    # The largest as "Alert incidents by size" orders them: most alerts first.
    top = (query_rows(con, f"""SELECT incident_id, n_alerts, n_nodes, root_cause_candidate FROM marts.alert_incidents
                               WHERE {_ON_DAY}
                               ORDER BY n_alerts DESC NULLS LAST, lost_gpu_hours DESC NULLS LAST, start_ts, incident_id
                               LIMIT 1""", [meta.report_date]) or [None])[0]
    return {"reason": None, "n": n, "top": top}


def _alerts_text(al: dict[str, Any]) -> str:
    if al["reason"]:
        return reason_text(al["reason"])
    if not al["n"]:
        return "none started."
    top = al["top"]
    return (f"{fmt_int(al['n'])} started; {'the largest' if al['n'] > 1 else 'it'}, "
            f"\u201c{truncate(top['root_cause_candidate'] or top['incident_id'], 70)}\u201d, grouped "
            f"{plural(top['n_alerts'], 'alert')} on {plural(top['n_nodes'] or 0, 'node')}.")


def _todo(inc: dict[str, Any], rep: dict[str, Any]) -> list[str]:
    """The marts' recommended actions, costliest incident first, then the nodes that failed again."""
    todo = [f"{incident_action(r['action'], r['component'], r['scope'])} "
            f"({r.get('leaf_switch') or nodes_phrase(r['nodes'], 40)})" for r in inc["rows"]]
    todo += [f"{sentence_case(r['recommended_action'])} ({r['node']})" for r in rep["rows"] if r["recommended_action"]]
    return todo


def _todo_text(todo: list[str], inc: dict[str, Any]) -> str:
    """The first :data:`TOP_N_ACTIONS` actions ('; and 3 more below'), or why there is none to name."""
    if not todo:
        if inc["reason"]:
            return reason_text(inc["reason"]) + "."
        if inc.get("silent"):
            # Nothing seen is not nothing to do: the silent nodes' log shipping is the action.
            return (f"check the log shipping of the {plural(inc['silent']['n_silent_nodes'], 'node')} that logged "
                    f"nothing ({nodes_phrase(inc['silent']['silent_nodes'], 60)}); no hardware "
                    "incident or node failing again on the nodes that logged.")
        return "nothing: no hardware incident or node failing again to act on."
    more = len(todo) - TOP_N_ACTIONS
    return "; ".join(todo[:TOP_N_ACTIONS]) + (f"; and {fmt_int(more)} more below" if more > 0 else "") + "."


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    """Last night in a few lines: its hardware incidents, the jobs the infrastructure killed, the nodes that
    failed again, the alert incidents, and the actions the marts recommend; then the night's incidents and
    the repeat nodes as tables."""
    d = fmt_date(meta.report_date)
    sec = Section("last_night", f"Last night ({d})", template="definitions")
    missing = missing_sources(con)
    gaps = sources_without_day(con, meta.report_date)
    inc = _incidents(con, meta, missing, gaps)
    jobs = _jobs(con, meta, missing)
    rep = _repeat_nodes(con, meta, inc)
    al = _alerts(con, meta, gaps)
    reasons = [p["reason"] for p in (inc, jobs, al)]
    if all(reasons):  # nothing to say about last night: one line, as the other sections say it
        sec.no_data = f"{NO_DATA}: " + "; ".join(_lower_first(reason_text(r)) for r in reasons) + "."
        return sec

    summary = []
    if inc["n"] is not None:
        summary.append(plural(inc["n"], "hardware incident")
                       + (f" on the nodes that logged ({fmt_int(inc['silent']['n_silent_nodes'])} logged nothing)"
                          if not inc["n"] and inc.get("silent") else ""))
    elif not inc["reason"].startswith(NO_DATA):
        summary.append("hardware incidents unknown")
    if not jobs["reason"]:
        none = {"n": 0, "runs": 0, "lost": 0.0}
        infra, unknown = (jobs["counts"].get(a, none) for a in ("infrastructure", "unknown"))
        # One count: the runs the infrastructure killed, a requeued job's run included — the headline's
        # "Infra failures" card and the incident line count the same runs, and their GPU-hours are all in the loss.
        head, detail = killed_runs(infra["n"], infra["runs"])
        said = [p for p in (detail, f"{gpuh(infra['lost'] or 0.0)} GPU-h lost" if infra["runs"] else "") if p]
        if unknown["n"]:
            # Failed jobs of unknown cause (failed, or an admin cancel without evidence) may be the infrastructure's: the count is a floor, not a fact.
            summary.append((f"at least {head}" if infra["runs"] else "an unknown number of jobs")
                           + " killed by the infrastructure ("
                           + "; ".join(said + [f"{plural(unknown['n'], 'failed job')} of unknown cause"]) + ")")
        else:
            summary.append(f"{head} killed by the infrastructure" + (f" ({'; '.join(said)})" if said else ""))
    if rep["n"]:
        summary.append(f"{plural(rep['n'], 'node')} failing again")
    if not al["reason"]:
        summary.append(plural(al["n"], "alert incident"))
    elif "alerts" in gaps:
        summary.append("alert incidents unknown")
    sec.lead = (f"On {d}: " + ", ".join(summary) + ".") if summary else ""
    todo = _todo(inc, rep)
    sec.entries = [
        # What to do first: the meeting reads it before the details that justify it.
        {"term": "To do", "text": _todo_text(todo, inc)},
        {"term": "Hardware incidents", "text": _incident_text(inc)},
        {"term": "Jobs the infrastructure killed", "text": _jobs_text(jobs)},
        {"term": "Nodes failing again", "text": _repeat_text(rep, meta)},
        {"term": "Alert incidents", "text": _alerts_text(al)},
    ]
    if inc["rows"]:
        more = inc["n"] - len(inc["rows"])
        sec.add(Table(
            # a start labelled as an operator's (start_note) wraps rather than widen the table past the page
            [Column("Start (UTC)", nowrap=not any(start_note(r, utc_hm) for r in inc["rows"])),
             Column("What failed"), Column("Where", nowrap=True),
             # the runs each incident killed; "Runs" as soon as one of them was a requeued job's earlier run
             Column("Runs killed" if any(r["killed_jobs"] is not None and (r["affected_jobs"] or 0) > r["killed_jobs"]
                                         for r in inc["rows"]) else "Jobs killed", True),
             Column("Lost GPU-h", True), Column("Recommended action"),
             Column("Incident", nowrap=True)],
            [[Cell(utc_hm(r["start_ts"]) + start_note(r, utc_hm), title=fmt_date(r["start_ts"])),
              Cell(incident_kind(r["component"], r["scope"])),
              Cell(_where(r), mono=True, title=nodes_text(r["nodes"])),
              Cell(or_unknown(r["affected_jobs"], fmt_int)), Cell(or_unknown(r["lost_gpu_hours"], gpuh)),
              Cell(incident_action(r["action"], r["component"], r["scope"])),
              Cell(str(r["incident_id"]), mono=True)] for r in inc["rows"]],
            caption=f"Hardware incidents that began on {d}, most lost GPU-hours first"
                    + (f" (top {len(inc['rows'])}; {fmt_int(more)} more in \u201cTop incidents by lost GPU-hours\u201d "
                       "and the incident retrospectives)." if more > 0 else "."),
        ))
    if rep["rows"]:
        sec.add(Table(
            [Column("Node"), Column(f"HW episodes, {_lookback_days(meta)} d", True),
             Column(f"Infra-failed jobs, {_lookback_days(meta)} d", True),
             Column("Worst event"), Column("Recommended action")],
            [[Cell(str(r["node"]), mono=True), Cell(fmt_int(r["hw_episodes"])),
              Cell(or_unknown(r["infra_failed_jobs"], fmt_int)), Cell(r["worst_event"] or MISSING),
              Cell(r["recommended_action"] or MISSING)] for r in rep["rows"]],
            caption=f"Nodes of last night's incidents that also stand out from the fleet over {_over(meta)} "
                    "(marts.suspect_nodes; see \u201cSuspect nodes\u201d).",
        ))
    return sec


SECTION = SectionSpec("last_night", "Last night", build)
