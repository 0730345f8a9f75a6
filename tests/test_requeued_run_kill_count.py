"""The nightly gives one count of what the infrastructure killed: runs, a requeued job's run included — as the
headline's "Infra failures" card and the incident line count them (outside probe AK, finding 4).

Probe AK (landing_v2), 2026-11-14: the only kill was the NODE_FAIL run of 2041007 that Slurm requeued. The
"Last night" lead said "0 jobs killed by the infrastructure (53.3 GPU-h lost)" beside the card "Infra failures: 1"
and the incident line "killed 1 job on 128 GPUs"; "Why jobs failed" said "No job failed because of the
infrastructure". The GPU-hours were the requeued run's, the count left it out.

Hand landing (UTC, gpu[01-04] × 8 GPUs, checkpoint Δ = 3600 s, u0 = 300 s):

====  =========================================  ===========================  ================================
job   runs (UTC)                                 evidence                     lost GPU-h (8 GPUs)
====  =========================================  ===========================  ================================
7007  11-14 01:00–02:25 NODE_FAIL on gpu01, then  EDAC UE + fatal machine      8 × Δ/2 (85 min ≥ Δ) + 8 × u0
      02:30–14:00 COMPLETED on gpu02 (sacct -D)   check on gpu01 at 02:20      = 4.0 + 0.667 = 4.667
7011  11-15 09:00–10:01 FAILED 1:0 on gpu03       Xid 79 on gpu03 at 10:00:30  8 × Δ/2 = 4.0 (not resubmitted)
7010  11-15 11:00–12:01 REQUEUED on gpu04, then   Xid 79 on gpu04 at 12:00:30  8 × Δ/2 + 8 × u0 = 4.667
      12:05–20:00 COMPLETED on gpu02
====  =========================================  ===========================  ================================

11-14: 1 run killed, a requeued one (4.7 GPU-h). 11-15: 2 runs, 1 job + 1 requeued run (8.7 GPU-h); the costliest
incident is gpu04's (4.667 > 4.0), which killed the requeued run. Two requeue conventions: NODE_FAIL then the
next run (``sacct -D``), and Slurm's REQUEUED state.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from hand_landing import run_hand_landing

from gpusre.models.warehouse import connect
from gpusre.reports.nightly import build_nightly_context
from gpusre.reports.nightly.meta import killed_runs

D14, D15 = date(2026, 11, 14), date(2026, 11, 15)
# distinct job names: no job reads as another's resubmission (its restart overhead stays its own)
HEADER = "JobID|JobName|State|ExitCode|Submit|Start|End|Elapsed|AllocTRES|NNodes|NodeList\n"
SACCT = {
    "sacct/sacct_2026-11-14.psv": HEADER
    + "7001|fill-a|COMPLETED|0:0|2026-11-14T00:00:30|2026-11-14T00:01:00|2026-11-14T23:59:00|23:58:00|gres/gpu=8|1|gpu03\n"
    + "7007|pt-a|NODE_FAIL|0:0|2026-11-14T00:59:00|2026-11-14T01:00:00|2026-11-14T02:25:00|01:25:00|gres/gpu=8|1|gpu01\n"
    + "7007|pt-a|COMPLETED|0:0|2026-11-14T02:25:00|2026-11-14T02:30:00|2026-11-14T14:00:00|11:30:00|gres/gpu=8|1|gpu02\n",
    "sacct/sacct_2026-11-15.psv": HEADER
    + "7002|fill-b|COMPLETED|0:0|2026-11-15T00:00:30|2026-11-15T00:01:00|2026-11-15T23:59:00|23:58:00|gres/gpu=8|1|gpu01\n"
    + "7011|ft-b|FAILED|1:0|2026-11-15T08:59:00|2026-11-15T09:00:00|2026-11-15T10:01:00|01:01:00|gres/gpu=8|1|gpu03\n"
    + "7010|ft-c|REQUEUED|0:0|2026-11-15T10:59:00|2026-11-15T11:00:00|2026-11-15T12:01:00|01:01:00|gres/gpu=8|1|gpu04\n"
    + "7010|ft-c|COMPLETED|0:0|2026-11-15T12:01:00|2026-11-15T12:05:00|2026-11-15T20:00:00|07:55:00|gres/gpu=8|1|gpu02\n",
}
PANIC = ("Nov 14 02:20:11 gpu01 kernel: [1686978.000000] EDAC MC1: 1 UE memory read error on "
         "CPU_SrcID#1_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x3f2a1c0 offset:0x0 grain:32 -  OVERFLOW "
         "err_code:0000:009f socket:1 ha:0 channel_mask:2 rank:1)\n"
         "Nov 14 02:20:12 gpu01 kernel: [1686979.000000] mce: [Hardware Error]: Machine check: Processor context corrupt\n"
         "Nov 14 02:20:12 gpu01 kernel: [1686979.000000] Kernel panic - not syncing: Fatal machine check\n")
XID = ("Nov 15 {t} {node} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, "
       "GPU has fallen off the bus.\n")
EVIDENCE = {(D14, "gpu01"): PANIC, (D15, "gpu03"): XID.format(t="10:00:30", node="gpu03"),
            (D15, "gpu04"): XID.format(t="12:00:30", node="gpu04")}


def _log(day: date, node: str) -> str:
    m = f"Nov {day.day}"
    return (f"{m} 00:00:01 {node} CRON[1]: (root) CMD (run-parts)\n" + EVIDENCE.get((day, node), "")
            + f"{m} 23:59:59 {node} CRON[2]: (root) CMD (run-parts)\n")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"cluster.yaml": "cluster: t\ntimezone: UTC\nnodes: \"gpu[01-04]\"\ngpus_per_node: 8\n"
                             "reliability:\n  checkpoint: {interval_s: 3600, restart_overhead_s: 300, write_s: 0}\n",
             **SACCT, **{f"syslog/{d}/{n}.log": _log(d, n) for d in (D14, D15) for n in ("gpu01", "gpu02", "gpu03",
                                                                                          "gpu04")}}
    return run_hand_landing(tmp_path_factory.mktemp("requeued"), files)


def _night(warehouse: Path, day: date) -> dict:
    con = connect(warehouse, read_only=True)
    try:
        return build_nightly_context(con, report_date=day)
    finally:
        con.close()


def test_killed_runs_wording() -> None:
    assert killed_runs(3, 3) == ("3 jobs", "")
    assert killed_runs(0, 2) == ("2 requeued runs", "")
    assert killed_runs(2, 3) == ("3 runs", "2 jobs + 1 requeued run")
    assert killed_runs(None, 4) == ("4 jobs", "")  # the split unknown: worded as before


def test_a_night_whose_only_kill_was_a_requeued_run(warehouse: Path) -> None:
    ctx = _night(warehouse, D14)
    card = next(c for c in ctx["by_key"]["headline"].cards if c["label"] == "Infra failures 2026-11-14")
    assert card["value"] == "1"
    night = ctx["by_key"]["last_night"]
    assert "1 requeued run killed by the infrastructure (4.7 GPU-h lost)" in night.lead
    assert "0 jobs killed" not in night.lead
    entries = {e["term"]: e["text"] for e in night.entries}
    assert entries["Jobs the infrastructure killed"].startswith(
        "1 requeued run failed because of the infrastructure, losing 4.7 GPU-h.")
    assert "on gpu01 at 02:20 UTC, killed 1 requeued run on 8 GPUs and lost 4.7 GPU-h." in entries["Hardware incidents"]
    (incidents,) = night.tables[:1]
    assert [c.label for c in incidents.columns][3] == "Runs killed"
    assert [r[3].text for r in incidents.rows] == ["1"]
    why = ctx["by_key"]["attribution"]
    assert not any("No job failed because of the infrastructure" in n for n in why.notes)
    runs = why.tables[-1]
    assert runs.caption.startswith("Runs the infrastructure killed that ended on 2026-11-14: 1 requeued run;")
    assert [(r[0].text, r[2].text) for r in runs.rows] == [("7007 (run 1, requeued)", "NODE_FAIL")]


def test_a_night_with_a_job_and_a_requeued_run(warehouse: Path) -> None:
    ctx = _night(warehouse, D15)
    card = next(c for c in ctx["by_key"]["headline"].cards if c["label"] == "Infra failures 2026-11-15")
    assert card["value"] == "2"
    night = ctx["by_key"]["last_night"]
    assert "2 runs killed by the infrastructure (1 job + 1 requeued run; 8.7 GPU-h lost)" in night.lead
    entries = {e["term"]: e["text"] for e in night.entries}
    assert entries["Jobs the infrastructure killed"].startswith(
        "2 runs (1 job + 1 requeued run) failed because of the infrastructure, losing 8.7 GPU-h")
    # the costliest incident (gpu04, 4.667 GPU-h) killed the requeued run of 7010
    assert "on gpu04 at 12:00 UTC, killed 1 requeued run on 8 GPUs and lost 4.7 GPU-h." in entries["Hardware incidents"]
    runs = ctx["by_key"]["attribution"].tables[-1]
    assert runs.caption.startswith("Runs the infrastructure killed that ended on 2026-11-15: 2 runs (1 job + 1 "
                                   "requeued run);")
    assert sorted(r[0].text for r in runs.rows) == ["7010 (run 1, requeued)", "7011"]


def test_doctests() -> None:
    import doctest

    from gpusre.reports.nightly import meta
    assert doctest.testmod(meta).failed == 0
