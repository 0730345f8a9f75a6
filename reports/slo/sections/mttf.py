"""SLO review section "Job MTTF by size and projection" (``#mttf``).

Reads marts.job_mttf_by_size, marts.job_mttf_projection, marts.job_survival; formats, computes nothing."""

from __future__ import annotations

import math

from typing import Any

import duckdb

from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_ci,
    fmt_hours,
    fmt_int,
    fmt_num,
    fmt_pct,
    is_number,
    lower_first,
    period_text,
    truncate,
)
from gpusre.reports.kit.labels import bucket_cell, bucket_name
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import Cell, Chart, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.slo.terms import bucket_key
from gpusre.reports.slo.window import SloWindow, source_status
# The whole record's days as marts.day_coverage gives them: the one span MTBF's label names too.
from gpusre.reports.slo.window import _data_span as record_span
from gpusre.models.vocabulary import SIZE_BUCKETS

#: Meta RSC-1's published job MTTF by job size (GPUs, hours), Kokolis et al., HPCA 2025.
META_RSC1_MTTF: tuple[tuple[int, float], ...] = ((1024, 7.9), (16384, 1.8), (131072, 0.23))


#: A typical GPU count per size bucket, used only when the projection mart has no bucket median.
_BUCKET_MID = {label: round(math.sqrt(lo * hi)) if hi else 2 * lo for label, lo, hi in SIZE_BUCKETS}

_KM_HORIZON_H = 24.0


def whole_record_text(con: duckdb.DuckDBPyConnection) -> str:
    """'whole record 2026-11-09 … 2026-11-15': the days of the whole record, for the figures the marts hold
    only over it (job MTTF, expected ETTR), so none reads as the window's. The span is MTBF's (marts.day_coverage
    through :func:`~gpusre.reports.slo.window.mart_period`'s span): one record, one span in the whole review — a
    source's own last record time (a dump cut at midnight) once named a day after it. 'whole record' alone
    before that mart exists."""
    span = record_span(con)
    return f"whole record {period_text(fmt_date(span[0]), fmt_date(span[1]))}" if span else "whole record"


def build(con: duckdb.DuckDBPyConnection, w: SloWindow) -> Section:
    sec = Section("mttf", "Job MTTF by size and projection",
                     scope="Whole record (the job MTTF marts have no per-period rows): marts.job_mttf_by_size, "
                           "marts.job_mttf_projection, marts.job_survival.")
    reason = source_status(con, "job_mttf_by_size")
    if reason:
        sec.no_data = reason
        return sec
    size = query_rows(con, """SELECT gpus_bucket, bucket_order, jobs, instances, infra_failures, runtime_hours, gpu_hours,
                                mttf_hours, ci_low, ci_high, sufficient, note
                         FROM marts.job_mttf_by_size ORDER BY bucket_order""")
    proj: list[dict[str, Any]] = []
    if table_status(con, "marts.job_mttf_projection") is None:
        cols = {r["column_name"] for r in query_rows(
            con, "SELECT column_name FROM information_schema.columns "
                 "WHERE table_schema = 'marts' AND table_name = 'job_mttf_projection'")}
        # failures the fit rests on, and whether they reach reliability.min_failures (older marts: unknown, shown)
        extra = "failures, sufficient" if {"failures", "sufficient"} <= cols else "NULL AS failures, NULL AS sufficient"
        proj = query_rows(con, f"""SELECT kind, gpus_bucket, n_gpus, mttf_hours, ci_low, ci_high, r_gpu_per_hour, exponent,
                                    exponent_ci_low, exponent_ci_high, {extra}
                             FROM marts.job_mttf_projection ORDER BY n_gpus""")
    # Below reliability.min_failures the fit is noise (one failure: an exponent CI of ±50,000): no projection.
    thin = next((r for r in proj if r["sufficient"] is False), None)
    if thin is not None:
        proj = []
    medians = {r["gpus_bucket"]: r["n_gpus"] for r in proj if r["kind"] != "projected" and r["gpus_bucket"]}
    projected = [r for r in proj if r["kind"] == "projected"]
    measured = [(r["gpus_bucket"], float(medians.get(r["gpus_bucket"]) or _BUCKET_MID.get(r["gpus_bucket"], 1)),
                 r["mttf_hours"] if r["sufficient"] else None, r["ci_low"], r["ci_high"], bool(r["sufficient"]))
                for r in size if r["gpus_bucket"] in _BUCKET_MID]
    fit = None
    p0 = next((r for r in proj if is_number(r["r_gpu_per_hour"])), None)
    if p0:
        band = next((r for r in proj if is_number(r["ci_low"]) and is_number(r["ci_high"]) and r["ci_low"] > 0), None)
        r_hi = 1.0 / (band["n_gpus"] * band["ci_low"]) if band else None
        r_lo = 1.0 / (band["n_gpus"] * band["ci_high"]) if band else None
        fit = (p0["r_gpu_per_hour"], r_lo, r_hi)

    suff = [r for r in size if r["sufficient"] and is_number(r["mttf_hours"])]
    parts = []
    if len(suff) >= 2:
        a, b = suff[0], suff[-1]
        parts.append(f"Measured job MTTF falls from {fmt_hours(a['mttf_hours'])} for {bucket_name(a['gpus_bucket'])} "
                     f"jobs to {fmt_hours(b['mttf_hours'])} (95 % CI {fmt_ci(b['ci_low'], b['ci_high'])}) for "
                     f"{bucket_name(b['gpus_bucket'])} jobs")
    elif suff:
        b = suff[0]
        parts.append(f"Only the {bucket_name(b['gpus_bucket'])} bucket has enough failures for an MTTF: "
                     f"{fmt_hours(b['mttf_hours'])} (95 % CI {fmt_ci(b['ci_low'], b['ci_high'])})")
    else:
        parts.append("No size bucket has enough infrastructure failures for a measured MTTF")
    if thin is not None:
        n = thin["failures"]
        parts.append(f"the 1/N projection to larger jobs: insufficient data ({fmt_int(n)} "
                     f"infrastructure failure{'s' if n != 1 else ''}; below reliability.min_failures no projection "
                     "is given)")
    elif p0 and projected:
        meta = dict(META_RSC1_MTTF)
        shown = [r for r in projected if r["n_gpus"] in meta and is_number(r["mttf_hours"])]
        if shown:
            ex = ""
            if is_number(p0["exponent"]) and is_number(p0["exponent_ci_low"]) and is_number(p0["exponent_ci_high"]):
                fits = p0["exponent_ci_low"] <= 1 <= p0["exponent_ci_high"]
                ex = (f" (free exponent {fmt_num(p0['exponent'], 2)}, 95 % CI {fmt_num(p0['exponent_ci_low'], 2)}–"
                      f"{fmt_num(p0['exponent_ci_high'], 2)}: {'consistent with' if fits else 'not consistent with'} "
                      "1/N)")
            parts.append(f"the 1/N fit{ex} projects " + ", ".join(
                f"{fmt_hours(r['mttf_hours'])} at {fmt_int(r['n_gpus'])} GPUs" for r in shown)
                + " against Meta RSC-1's published " + ", ".join(f"{meta[r['n_gpus']]:g} h" for r in shown))
    # The job MTTF marts hold the whole record only: say so, with its span, so nobody reads it as the window's.
    take = (f"Over the {whole_record_text(con)} (the job MTTF marts have no per-period rows, so not the window {w.text} "
            f"alone): " + lower_first("; ".join(parts)) + ".")
    sec.lead = take
    sec.items.append(Chart(svg(charts.mttf_projection_chart(
        measured, fit, [(float(r["n_gpus"]), r["mttf_hours"], r["ci_low"], r["ci_high"]) for r in projected],
        [(float(n), v) for n, v in META_RSC1_MTTF],
        "Job MTTF vs job size: measured, 1/N fit and projection (log-log)")), take))

    if table_status(con, "marts.job_survival") is None:
        km = query_rows(con, """SELECT gpus_bucket, time_h, survival, ci_low, ci_high, at_risk FROM marts.job_survival
                           ORDER BY gpus_bucket, time_h""")
        curves: dict[str, list[dict[str, Any]]] = {}
        for r in km:
            curves.setdefault(r["gpus_bucket"], []).append(r)
        order = sorted(curves, key=bucket_key)
        series = [(b, [0.0] + [r["time_h"] for r in curves[b]], [1.0] + [r["survival"] for r in curves[b]],
                   [1.0] + [r["ci_low"] for r in curves[b]], [1.0] + [r["ci_high"] for r in curves[b]]) for b in order]
        at_h: list[tuple[str, dict[str, Any]]] = []
        for b in order:
            pts = curves[b]
            if pts and pts[-1]["time_h"] >= _KM_HORIZON_H:  # follow-up reaches the horizon
                before = [r for r in pts if r["time_h"] <= _KM_HORIZON_H]
                at_h.append((b, before[-1] if before else {"survival": 1.0, "ci_low": None, "ci_high": None}))
        if at_h:
            big, small = at_h[-1], at_h[0]
            km_take = (f"{fmt_pct(big[1]['survival'])} of {bucket_name(big[0])} job instances ran "
                       f"{_KM_HORIZON_H:.0f} h without an infrastructure failure (95 % CI "
                       f"{fmt_ci(big[1]['ci_low'], big[1]['ci_high'], '', lambda v: fmt_pct(v))})"
                       + (f", against {fmt_pct(small[1]['survival'])} of {bucket_name(small[0])} instances."
                          if small[0] != big[0] else "."))
        else:
            km_take = (f"No size bucket has infrastructure failures observed beyond {_KM_HORIZON_H:.0f} h; the curves "
                       "show survival up to the last failure seen.")
        sec.items.append(Chart(svg(charts.survival_chart(
            series, "Kaplan–Meier: job instances still running without an infrastructure failure")), km_take))

    sec.items.append(Table(
        [Column("GPUs per job"), Column("Jobs", True), Column("Instances", True), Column("Infra failures", True),
         Column("Runtime (h)", True), Column("MTTF", True), Column("95 % CI", True), Column("Note")],
        [[bucket_cell(r["gpus_bucket"]), Cell(fmt_int(r["jobs"])), Cell(fmt_int(r["instances"])),
          Cell(fmt_int(r["infra_failures"])), Cell(fmt_int(r["runtime_hours"])),
          Cell(fmt_hours(r["mttf_hours"]) if r["sufficient"] and is_number(r["mttf_hours"]) else "insufficient data"),
          Cell(fmt_ci(r["ci_low"], r["ci_high"])), Cell(truncate(r["note"], 60) if r["note"] else "",
                                                     title=r["note"] or None)] for r in size],
        caption="Jobs, instances: every GPU job (and run) that started, those still running at the end of the data "
                "included with their runtime so far — more than the finished jobs of the nightly's size and runtime "
                "tables. "
                "Job MTTF = runtime hours of the bucket's job instances / infrastructure failures (NODE_FAIL, "
                "BOOT_FAIL, or failures attributed to the infrastructure from node logs); a requeued job counts "
                "once per instance. 95 % CI: exact Poisson (Garwood). Below reliability.min_failures no point "
                "estimate is given.",
    ))
    if proj:
        meta = dict(META_RSC1_MTTF)
        sec.items.append(Table(
            [Column("GPUs", True), Column("Kind"), Column("MTTF (1/N fit)", True), Column("95 % CI", True),
             Column("Meta RSC-1 (published)", True)],
            [[Cell(fmt_int(r["n_gpus"])), Cell(r["kind"] + (f" ({r['gpus_bucket']})" if r["gpus_bucket"] else "")),
              Cell(fmt_hours(r["mttf_hours"])), Cell(fmt_ci(r["ci_low"], r["ci_high"])),
              Cell(f"{meta[r['n_gpus']]:g} h" if r["n_gpus"] in meta else MISSING)] for r in proj],
            caption="Projection under MTTF(N) = 1 / (N · r), r = infrastructure failures per GPU-hour of job runtime "
                    + (f"({p0['r_gpu_per_hour']:.3g}); " if p0 and is_number(p0["r_gpu_per_hour"]) else "; ")
                    + "interval from the Garwood interval of r. Meta RSC-1's published figures: Kokolis et al., "
                      "HPCA 2025.",
        ))
    return sec


SECTION = SectionSpec("mttf", "Job MTTF by size and projection", build)
