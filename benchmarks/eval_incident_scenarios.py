"""Score the incident analytics on every simulated scenario (issue 12, "Generalize, don't tune").

For each scenario of ``gpusre.simulate.scenarios``: simulate it into a temporary directory, run the
whole pipeline (``gpusre run``), score the warehouse against the simulator's truth
(``incident_scoring.score_scenario``), and print one markdown table row per scenario, then the per-class
detail. Also prints the wall time and peak memory of each scenario (the measured run's own process).

    .venv/bin/python benchmarks/eval_incident_scenarios.py [--scenarios a,b] [--seed 11] [--keep DIR [--rescore]]

``--keep DIR`` keeps each scenario's landing and warehouse under ``DIR/<scenario>``; ``--rescore`` then only
scores those warehouses again (after a change to the scoring, or to compare marts by hand).
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

import duckdb
from peak_memory import peak_rss_mb  # sibling module (run as a script)

from gpusre.simulate import simulate_cluster
from gpusre.simulate.incident_scoring import IncidentScore, score_scenario
from gpusre.simulate.scenarios import SCENARIOS, scenario_config
from gpusre.pipelines.runner import run_pipeline

HEADER = ("| scenario | faults | hw inc (ratio) | other NHC-only | MTBF h / realized | exposure ratio | "
          "downtime ratio | alert ARI | alerts/inc (truth) | attr P / R | class match | suspects (P / R of n) | "
          "MTTR p50 ratio by class | realized in CI |")


def _f(x: float | None, fmt: str = ".2f") -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def run_scenario(name: str, seed: int, root: Path, rescore: bool = False) -> tuple[IncidentScore, float]:
    """Simulate, run the pipeline and score scenario ``name`` under ``root`` (``rescore``: only score the
    warehouse already there); returns (score, seconds)."""
    t0 = time.perf_counter()
    landing = root / name / "landing"
    warehouse = root / name / "w.duckdb"
    if not rescore:
        shutil.rmtree(root / name, ignore_errors=True)  # a kept landing from an earlier run would mix in
        simulate_cluster(landing, scenario_config(name, seed))
        run_pipeline(landing, warehouse, root / name / "reports")
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        score = score_scenario(con, landing / "truth")
    finally:
        con.close()
    return score, time.perf_counter() - t0


def table_row(name: str, s: IncidentScore) -> str:
    """One markdown row of the summary table."""
    mttr = ", ".join(f"{c} {_f(r)}" for c, r in sorted(s.mttr_ratios().items()))
    ci = ", ".join(f"{c} {'yes' if ok else 'NO'}" for c, ok in sorted(s.realized_in_interval.items())) or "—"
    return (f"| {name} | {s.true_faults} | {s.hw_incidents} ({_f(s.incident_ratio)}) | "
            f"{s.other_health_check_incidents} | {_f(s.mtbf_hours, '.0f')} / {_f(s.realized_mtbf_hours, '.0f')} "
            f"({_f(s.mtbf_ratio)}) | {_f(s.exposure_ratio, '.3f')} | {_f(s.downtime_ratio)} | "
            f"{_f(s.alert_ari, '.3f')} | "
            f"{_f(s.alerts_per_incident)} ({_f(s.true_alerts_per_incident)}) | {_f(s.attribution_precision, '.3f')} / "
            f"{_f(s.attribution_recall, '.3f')} | {_f(s.class_match_share)} | "
            f"{s.suspects_flagged} ({_f(s.suspect_precision)} / {_f(s.suspect_recall)} of {s.suspect_support}) | "
            f"{mttr} | {ci} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated scenario names")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep", type=Path, default=None, help="write landings and warehouses here and keep them")
    parser.add_argument("--rescore", action="store_true", help="only score the warehouses already under --keep")
    args = parser.parse_args(argv)
    if args.rescore and args.keep is None:
        print("error: --rescore needs --keep DIR", file=sys.stderr)
        return 2
    names = [n for n in args.scenarios.split(",") if n]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"error: unknown scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    rows, details = [], []
    with tempfile.TemporaryDirectory(prefix="gpusre-scenarios-") as tmp:
        root = args.keep or Path(tmp)
        for name in names:
            score, seconds = run_scenario(name, args.seed, root, args.rescore)
            peak_mb = peak_rss_mb()
            print(f"{name}: {seconds:.1f} s, peak RSS so far {peak_mb:.0f} MB", file=sys.stderr)
            rows.append(table_row(name, score))
            classes = sorted(set(score.true_faults_by_class) | set(score.hw_incidents_by_class))
            details.append(f"- {name}: incidents by class (product/truth) " + ", ".join(
                f"{c} {score.hw_incidents_by_class.get(c, 0)}/{score.true_faults_by_class.get(c, 0)}" for c in classes)
                + "; MTBF ratio by class " + ", ".join(
                f"{c} {_f(r)}" for c, r in sorted(score.mtbf_class_ratios().items()))
                + (f"; notes: {'; '.join(score.notes)}" if score.notes else ""))
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|")
    print("\n".join(rows))
    print()
    print("\n".join(details))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
