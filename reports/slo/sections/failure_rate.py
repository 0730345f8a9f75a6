"""SLO review section "Node failure rate vs published figures" (``#failure-rate``).

Reads marts.mtbf, marts.node_failure_rate, marts.tbf_weibull; formats, computes nothing."""

from __future__ import annotations

from typing import Any

import duckdb

from gpusre.models.vocabulary import class_label
from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import MISSING, fmt_ci, fmt_hours, fmt_int, fmt_num, is_number, plural, sentence_case
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Chart, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.slo.terms import fmt_rate
from gpusre.reports.slo.sections.mtbf import only_month
from gpusre.reports.slo.window import SloWindow, mart_period, source_status

#: Published failure rates per 1,000 node-days: (label, value, as published, citation).
REFERENCE_RF: tuple[tuple[str, float, str, str], ...] = (
    ("Meta RSC-1", 6.50, "6.50", "Kokolis et al., HPCA 2025"),
    ("Meta RSC-2", 2.34, "2.34", "Kokolis et al., HPCA 2025"),
    ("Llama 3", 3.8, "≈ 3.8", "Llama 3 Herd of Models §3.3.4"),
)

_WEIBULL_SCALE_CAP_H = 1e6  # a fitted scale beyond ~114 years says "the fit is unstable", not a lifetime


def _exposure_source(con: duckdb.DuckDBPyConnection) -> str:
    """Where marts.mtbf's node-hours came from (node states, or cluster.yaml), for captions."""
    try:
        got = query_rows(con, "SELECT exposure_source FROM marts.mtbf WHERE exposure_source IS NOT NULL LIMIT 1")
    except duckdb.Error:
        return "exposure source unknown"
    return got[0]["exposure_source"] if got else "exposure source unknown"


def build(con: duckdb.DuckDBPyConnection, w: SloWindow) -> Section:
    months = w.months
    sec = Section("failure-rate", "Node failure rate vs published figures",
                     scope="Whole record and the months overlapping the window, from marts.node_failure_rate; "
                           "time between failures from marts.tbf_weibull (whole record).")
    reason = source_status(con, "node_failure_rate")
    if reason:
        sec.no_data = reason
        return sec
    rows = query_rows(con, """SELECT period_type, period, variant, failures, node_days, rate_per_1000_node_days, ci_low,
                                ci_high, sufficient
                         FROM marts.node_failure_rate ORDER BY period_type <> 'all', variant <> 'hw_incidents',
                                                             variant, period""")
    rows = [r for r in rows if r["period_type"] == "all" or r["period"] in months]
    fetched = rows  # the window's own row is looked up here, whichever the table shows
    if only_month(con, "node_failure_rate") and any(r["period_type"] == "all" for r in rows):
        # One month of data: its rows repeat the whole record's; show them once.
        rows = [r for r in rows if r["period_type"] == "all"]
    if not rows:
        sec.no_data = f"{NO_DATA}: marts.node_failure_rate has no whole-record or window rows."
        return sec

    def label(r: dict[str, Any]) -> str:
        what = ("all hardware incidents" if r["variant"] == "hw_incidents" else
                f"jobs > {r['variant'].removeprefix('jobs_gt_').removesuffix('_gpus')} GPUs"
                if r["variant"].startswith("jobs_gt_") else r["variant"])
        return f"{sentence_case(what)}, {'whole record' if r['period_type'] == 'all' else r['period']}"

    refs = [(f"{name} (published)", v, t) for name, v, t, _ in REFERENCE_RF]
    # The window's own row when the mart holds one (a calendar month, or the whole record), else the whole
    # record, named with its span: a monthly review must not headline a rate that includes other months.
    mp = mart_period(con, w, "node_failure_rate", "variant = 'hw_incidents'")
    main = next((r for r in fetched if (r["period_type"], r["period"]) == (mp.period_type, mp.period)
                 and r["variant"] == "hw_incidents"), rows[0])
    over = (mp.label if mp.is_window else
            f"{mp.label}, not the window {w.text} alone (marts.node_failure_rate holds calendar months and the "
            "whole record)")
    if main["sufficient"] and is_number(main["rate_per_1000_node_days"]):
        lo, hi = main["ci_low"], main["ci_high"]
        def group(names: list[str], where: str) -> str:
            if not names:
                return ""
            joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
            return f"{joined} {'lies' if len(names) == 1 else 'lie'} {where}"

        inside = [f"{n}'s {t}" for n, v, t, _ in REFERENCE_RF if is_number(lo) and is_number(hi) and lo <= v <= hi]
        below = [f"{n}'s {t}" for n, v, t, _ in REFERENCE_RF if is_number(lo) and v < lo]
        above = [f"{n}'s {t}" for n, v, t, _ in REFERENCE_RF if is_number(hi) and v > hi]
        rel = "; ".join(p for p in (group(inside, "inside that interval"), group(below, "below it"),
                                    group(above, "above it")) if p)
        take = (f"The cluster had {fmt_rate(main['rate_per_1000_node_days'])} hardware failures per 1,000 node-days "
                f"(95 % CI {fmt_ci(lo, hi, '', fmt_rate)}) {'in' if mp.is_window else 'over the'} "
                f"{over}"
                + (f"; {rel}" if rel else "") + " (Kokolis et al., HPCA 2025; Llama 3 Herd of Models §3.3.4).")
    else:
        take = (f"Too few failures for a rate {'in' if mp.is_window else 'over the'} {over}: "
                f"insufficient data ({plural(main['failures'], 'failure')} in "
                f"{fmt_int(main['node_days'])} node-days; 95 % CI {fmt_ci(main['ci_low'], main['ci_high'], '', fmt_rate)}).")
    sec.lead = take
    sec.items.append(Chart(svg(charts.rate_reference_chart(
        [(label(r), r["rate_per_1000_node_days"] if r["sufficient"] else None, r["ci_low"], r["ci_high"],
          bool(r["sufficient"])) for r in rows], refs,
        "Failures per 1,000 node-days: this cluster vs published figures")), take))
    sec.items.append(Table(
        [Column("Rate"), Column("Failures", True), Column("Node-days", True), Column("per 1,000 node-days", True),
         Column("95 % CI", True)],
        [[Cell(label(r)), Cell(fmt_int(r["failures"])), Cell(fmt_num(r["node_days"], 0)),
          Cell(fmt_rate(r["rate_per_1000_node_days"]) if r["sufficient"] else "insufficient data"),
          Cell(fmt_ci(r["ci_low"], r["ci_high"], "", fmt_rate))] for r in rows]
        + [[Cell(f"{n} (published, {cite})"), Cell(MISSING), Cell(MISSING), Cell(t), Cell(MISSING)]
           for n, _, t, cite in REFERENCE_RF],
        caption="r_f = failures per 1,000 node-days. Hardware incidents: every incident over in-service node-days "
                f"({_exposure_source(con)}). Meta's variant: infrastructure failures of jobs "
                "with more than N GPUs (reliability.rf_min_job_gpus, default 128) over those jobs' node-days of "
                "runtime. 95 % CI: exact Poisson (Garwood). Published: Meta RSC-1 6.50 and RSC-2 2.34 (Kokolis "
                "et al., HPCA 2025); Llama 3 ≈ 3.8 (419 unexpected interruptions in 54 days on 16,384 GPUs, "
                "Llama 3 Herd of Models §3.3.4).",
    ))
    if table_status(con, "marts.tbf_weibull") is None:
        wb = query_rows(con, """SELECT component_class, n_failures, n_censored, shape, shape_ci_low, shape_ci_high,
                                  scale_hours, interpretation
                           FROM marts.tbf_weibull ORDER BY component_class <> 'all', component_class""")

        def scale(x: float | None) -> str:
            if not is_number(x):
                return MISSING
            return f"> {_WEIBULL_SCALE_CAP_H:,.0f} h (unstable fit)" if x > _WEIBULL_SCALE_CAP_H else fmt_hours(x)

        sec.items.append(Table(
            [Column("Component class"), Column("Repeat failures", True), Column("Censored", True),
             Column("Weibull shape k", True), Column("95 % CI", True), Column("Scale", True),
             Column("Interpretation")],
            [[Cell(class_label(r["component_class"])), Cell(fmt_int(r["n_failures"])), Cell(fmt_int(r["n_censored"])),
              Cell(fmt_num(r["shape"], 2)), Cell(fmt_ci(r["shape_ci_low"], r["shape_ci_high"], "",
                                                     lambda v: fmt_num(v, 2))),
              Cell(scale(r["scale_hours"])), Cell(r["interpretation"] or MISSING)] for r in wb],
            caption="Time between failures of the same node, whole record: Weibull fit with right-censoring (time "
                    "from a node's last failure, or from the start for a node that never failed, to the end of the "
                    "data). Shape k < 1: failures repeat on the same nodes soon after (lemon nodes, infant "
                    "mortality); k ≈ 1: constant rate; k > 1: wear-out. A scale beyond 10⁶ h means the fit did not "
                    "converge to a usable lifetime.",
        ))
        a = next((r for r in wb if r["component_class"] == "all"), None)
        if a and is_number(a["shape"]) and is_number(a["shape_ci_high"]):
            sec.notes.append(
                f"Repeat failures: Weibull shape over all classes k = {fmt_num(a['shape'], 2)} (95 % CI "
                f"{fmt_ci(a['shape_ci_low'], a['shape_ci_high'], '', lambda v: fmt_num(v, 2))}) from "
                f"{plural(a['n_failures'], 'repeat failure')}: "
                + ("nodes that failed once tend to fail again soon — check for lemon nodes before returning them "
                   "to service." if a["shape_ci_high"] < 1 else
                   "no evidence against a constant failure rate." if a["shape_ci_low"] <= 1 else
                   "failures become more frequent with time since the last one (wear-out)."))
    return sec


SECTION = SectionSpec("failure-rate", "Node failure rate vs published figures", build)
