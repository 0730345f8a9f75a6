"""Attribution blames the user for the ABSENCE of infrastructure evidence only where node logs could have
shown it (outside probe M, 2026-12-05: without node logs, job 1004, killed by an Xid 79, was attributed
`user` by "non-zero exit without infrastructure evidence", and the nightly said "No job failed because of
the infrastructure"). A job a node of which logged no line on its end day is `unknown` (rule
``NO_LOGS_RULE``); rules on positive evidence (a job limit, NODE_FAIL, events, node states) are unchanged.

Landing (real formats): sacct for gpu[1-3], node logs for gpu1 and gpu2 only, 2026-12-01 UTC.

====  ===============  ========  ========  ==========================================================
job   state (exit)     nodes     ends      expected
====  ===============  ========  ========  ==========================================================
101   FAILED 1:0       gpu1      10:00     user, "non-zero exit without infrastructure evidence"
102   FAILED 1:0       gpu3      11:00     unknown, no node logs (gpu3 logged nothing)
103   OUT_OF_MEMORY    gpu3      12:00     user, job limit (host_memory)
104   NODE_FAIL        gpu3      13:00     infrastructure, "node failure without evidence"; 2 h × 8 GPUs,
                                           Δ = 1 h: lost Δ/2 × 8 = 4.0 GPU-h
105   COMPLETED        gpu2      14:00     not a failure
106   FAILED 1:0       gpu[2-3]  15:00     unknown: evidence on either node would count, gpu3 is silent
====  ===============  ========  ========  ==========================================================
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing

from gpusre.models.failures.attribution import LOG_DAYS_SCHEMA, NO_LOGS_RULE, attribute_failures
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, merge_incidents

HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
          "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")
CLUSTER = 'cluster: nologs\ntimezone: UTC\nnodes: "gpu[1-3]"\ngpus_per_node: 8\n'


def _job(job_id: int, state: str, exit_code: str, end_hour: int, nodes: str, n_nodes: int = 1) -> str:
    """A 2-hour allocation ending at ``end_hour``:00 on 2026-12-01, 8 GPUs per node."""
    start, end = f"2026-12-01T{end_hour - 2:02d}:00:00", f"2026-12-01T{end_hour:02d}:00:00"
    gpus = 8 * n_nodes
    return (f"{job_id}|{job_id}|train|alice|2001|ml|llm|gpu|normal|{state}|{exit_code}|{start}|{start}|{start}|{end}|"
            f"02:00:00|1-00:00:00|{n_nodes}|{112 * n_nodes}|"
            f"billing={112 * n_nodes},cpu={112 * n_nodes},gres/gpu={gpus},mem=1000G,node={n_nodes}|{nodes}|")


JOBS = {
    101: _job(101, "FAILED", "1:0", 10, "gpu1"),
    102: _job(102, "FAILED", "1:0", 11, "gpu3"),
    103: _job(103, "OUT_OF_MEMORY", "0:125", 12, "gpu3"),
    104: _job(104, "NODE_FAIL", "0:0", 13, "gpu3"),
    105: _job(105, "COMPLETED", "0:0", 14, "gpu2"),
    106: _job(106, "FAILED", "1:0", 15, "gpu[2-3]", n_nodes=2),
}


def _log(node: str) -> str:
    """Benign lines only: the node logged all day, with nothing to blame."""
    return "".join(f"2026-12-01T{t}.000000+00:00 {node} {msg}\n" for t, msg in (
        ("00:00:05", "systemd[1]: Started Session 1 of user root."),
        ("12:00:00", "CRON[4242]: (root) CMD (/usr/sbin/nhc)"),
        ("23:59:50", "systemd[1]: Starting Daily apt upgrade and clean activities...")))


def _sacct(ids: list[int]) -> str:
    return "\n".join([HEADER, *(JOBS[i] for i in ids)]) + "\n"


_rows = query_rows


def _nightly(root: Path) -> str:
    (md,) = sorted((root / "reports").glob("nightly-*.md"))
    return md.read_text()


def _section(md: str, title: str) -> str:
    start = md.index(f"## {title}")
    end = md.find("\n## ", start + 3)
    return re.sub(r"\s+", " ", md[start:end if end > 0 else None].replace("**", ""))


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sacct for gpu[1-3], node logs for gpu1 and gpu2 only."""
    root = tmp_path_factory.mktemp("mixed")
    run_hand_landing(root, {"cluster.yaml": CLUSTER, "sacct/sacct_2026-12-01.psv": _sacct(sorted(JOBS)),
                            "syslog/2026-12-01/gpu1.log": _log("gpu1"), "syslog/2026-12-01/gpu2.log": _log("gpu2")})
    return root


def test_absence_of_evidence_blames_the_user_only_where_logs_covered_the_nodes(mixed: Path) -> None:
    got = {r[0]: r[1:] for r in _rows(mixed / "wh" / "gpusre.duckdb",
                                      "SELECT job_id, attribution, rule, component, lost_gpu_hours "
                                      "FROM marts.job_failure_attribution ORDER BY job_id")}
    assert got == {
        "101": ("user", "non-zero exit without infrastructure evidence", "user_application", 0.0),
        "102": ("unknown", NO_LOGS_RULE, None, 0.0),
        "103": ("user", "job limit (memory/time)", "host_memory", 0.0),
        "104": ("infrastructure", "node failure without evidence", "unknown (suspected)", 8 * 0.5),
        "106": ("unknown", NO_LOGS_RULE, None, 0.0),
    }


def test_the_nightly_counts_the_unlogged_jobs_as_unknown(mixed: Path) -> None:
    sec = _section(_nightly(mixed), "Why jobs failed")
    assert ("Of 5 failed jobs in 2026-12-01 (failed, timed out, out of memory, node failure, requeued, or "
            "cancelled by an administrator), 1 was infrastructure (4.0 GPU-h lost), 2 user and 2 unknown") in sec
    assert "2 unknown jobs (2 on 2026-12-01) could not be attributed for lack of node logs" in sec


@pytest.fixture(scope="module")
def only_sacct(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same dump without node logs and without the NODE_FAIL job (so no job is infrastructure's)."""
    root = tmp_path_factory.mktemp("only_sacct")
    run_hand_landing(root, {"cluster.yaml": CLUSTER, "sacct/sacct_2026-12-01.psv": _sacct([101, 102, 103, 105, 106])})
    return root


def test_only_sacct_attributes_no_failure_to_the_user_for_lack_of_evidence(only_sacct: Path) -> None:
    got = dict(_rows(only_sacct / "wh" / "gpusre.duckdb",
                     "SELECT job_id, attribution FROM marts.job_failure_attribution ORDER BY job_id"))
    # 101 was the user's with gpu1's logs; without them it cannot be told from an infrastructure kill
    assert got == {"101": "unknown", "102": "unknown", "103": "user", "106": "unknown"}


def test_only_sacct_nightly_says_unknown_not_no_infrastructure_failure(only_sacct: Path) -> None:
    md = _nightly(only_sacct)
    why = _section(md, "Why jobs failed")
    assert "0 were infrastructure, 1 user and 3 unknown" in why
    assert "3 unknown jobs (3 on 2026-12-01) could not be attributed for lack of node logs" in why
    assert ("No job is known to have failed because of the infrastructure on 2026-12-01, but 3 failed jobs could "
            "not be attributed: no node logs from their nodes at their end.") in why
    assert "No job failed because of the infrastructure" not in md
    head = _section(md, "Headline")
    assert "Infra failures 2026-12-01: 0 (0.0 GPU-h lost · 0 of 4 failed jobs · 3 unknown: no node logs)" in head
    assert "Hardware incidents: – (unknown: no node logs)" in head
    assert "Hardware incidents: 0" not in head


@pytest.fixture(scope="module")
def only_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("only_logs")
    run_hand_landing(root, {"cluster.yaml": CLUSTER, "syslog/2026-12-01/gpu1.log": _log("gpu1"),
                            "syslog/2026-12-01/gpu2.log": _log("gpu2")})
    return root


def test_no_accounting_headline_says_unknown_not_zero(only_logs: Path) -> None:
    head = _section(_nightly(only_logs), "Headline")
    assert "no Slurm accounting was loaded (landing/sacct/)" in head
    for label in ("GPU jobs ended", "GPU-hours", "Failures 2026-12-01", "GPU jobs ended 2026-12-01",
                  "Infra failures 2026-12-01", "Infra failures, whole period", "Mean utilization",
                  "Utilization 2026-12-01"):
        assert f"- {label}: – (unknown: no Slurm accounting)" in head, label
    for zero in ("GPU jobs ended: 0", "Failures 2026-12-01: 0", "Infra failures 2026-12-01: 0", "(none)"):
        assert zero not in head, zero


# --- The model on its own: the coverage test is the job's nodes on its UTC end day. ---------------------------

END = datetime(2026, 12, 2, 0, 30, tzinfo=timezone.utc)


def _attribute(job_rows: list[dict], log_days: pl.DataFrame | None, event_rows: list[dict] | None = None) -> dict:
    events = pl.DataFrame(event_rows or [], schema=EVENT_SCHEMA)
    incidents, _ = merge_incidents(events)
    jobs = pl.DataFrame(job_rows, schema={"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String),
                                          "n_gpus": pl.Int64, "start_ts": pl.Datetime("us", "UTC"),
                                          "end_ts": pl.Datetime("us", "UTC"), "exit_code": pl.Int64})
    out = attribute_failures(jobs, events, incidents, log_days=log_days)
    return {r["job_id"]: (r["attribution"], r["rule"]) for r in out.iter_rows(named=True)}


def _j(job_id: str, state: str, nodes: list[str], exit_code: int = 1) -> dict:
    return {"job_id": job_id, "state": state, "nodes": nodes, "n_gpus": 8, "start_ts": END - timedelta(hours=2),
            "end_ts": END, "exit_code": exit_code}


def test_coverage_is_the_end_day_of_every_node() -> None:
    # a and b logged on 12-01 only; the jobs end 12-02 00:30; c logged on 12-02.
    days = pl.DataFrame({"node": ["a", "b", "c"], "day": [date(2026, 12, 1), date(2026, 12, 1), date(2026, 12, 2)]},
                        schema=LOG_DAYS_SCHEMA)
    rows = [_j("on_a", "FAILED", ["a"]), _j("on_c", "FAILED", ["c"]), _j("on_ac", "FAILED", ["a", "c"]),
            _j("rq_a", "REQUEUED", ["a"]), _j("rq_c", "REQUEUED", ["c"]), _j("zero_a", "FAILED", ["a"], 0)]
    assert _attribute(rows, days) == {
        "on_a": ("unknown", NO_LOGS_RULE),  # its node logged the day before, not the end day
        "on_c": ("user", "non-zero exit without infrastructure evidence"),
        "on_ac": ("unknown", NO_LOGS_RULE),  # one silent node is enough
        # a requeue is taken as normal (none) only where the logs could have shown a fault
        "rq_a": ("unknown", NO_LOGS_RULE),
        "rq_c": ("none", "requeued without evidence"),
        "zero_a": ("unknown", NO_LOGS_RULE),
    }
    # coverage unknown (None): every node counts as covered, as before
    assert _attribute(rows, None)["on_a"] == ("user", "non-zero exit without infrastructure evidence")
    # no node logs at all: nothing is blamed on the user for lack of evidence
    assert _attribute(rows, pl.DataFrame(schema=LOG_DAYS_SCHEMA))["on_c"] == ("unknown", NO_LOGS_RULE)


def test_a_node_event_is_a_logged_line() -> None:
    # No record days, but node a logged an Xid 13 (the user's) 2 min before the end: user, by the event;
    # node b logged a benign-class event that day: covered, so the non-zero exit is the user's.
    xid13 = {"event_id": 1, "ts": END - timedelta(minutes=2), "node": "a", "kind": "xid", "code": 13,
             "gpu_pci": None, "component": "user_application", "cause_class": "user_application",
             "severity": "medium", "action": "RESTART_APP"}
    info = {**xid13, "event_id": 2, "node": "b", "ts": END + timedelta(hours=3), "code": 63,
            "component": "gpu_memory", "cause_class": "informational", "severity": "info", "action": "IGNORE"}
    got = _attribute([_j("a", "FAILED", ["a"]), _j("b", "FAILED", ["b"])], pl.DataFrame(schema=LOG_DAYS_SCHEMA),
                     [xid13, info])
    assert got == {"a": ("user", "user-application event in window"),
                   "b": ("user", "non-zero exit without infrastructure evidence")}
