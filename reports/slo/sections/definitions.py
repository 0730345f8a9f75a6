"""SLO review section "Definitions" (``#definitions``).

Reads marts.hw_incidents, marts.slo_daily; formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.reports.kit.section import Section, SectionSpec
from gpusre.reports.kit.formatting import lower_first
from gpusre.reports.slo.terms import sli_label
from gpusre.reports.slo.window import SloWindow, sli_windows, source_status

#: (term, definition) shown at the end of the report.
DEFINITIONS: tuple[tuple[str, str], ...] = (
    ("SLI, SLO", "An SLI is good events / total events per UTC day (marts.slo_daily); the SLO holds when the SLI over "
                 "a window is at least the objective."),
    ("Error budget", "Allowed bad events = (1 − objective) × total events; budget left = 1 − bad / allowed "
                     "(negative = overspent). The burn-down chart uses the report window's own budget; the mart's "
                     "rolling budget (dashed) covers the configured rolling window (slo.window_days)."),
    ("Burn rate", "(bad / total) / (1 − objective) over a trailing window: 1 spends the budget exactly over the SLO "
                  "period, 6 spends a 30-day budget in 5 days. Multiwindow alerting per the Google SRE Workbook, "
                  "ch. 5 \u201cAlerting on SLOs\u201d; with daily SLIs the windows are 1 day and 3 days (page: both > 6, "
                  "ticket: both > 1)."),
    ("MTBF", "Mean time between failures per node = node-hours in service / hardware incidents started in the "
             "period; node-hours in service from Slurm node states when they are ingested (planned maintenance out "
             "where a node was down in it), else cluster.yaml nodes minus planned maintenance "
             "(marts.mtbf.exposure_source). MTBF per GPU = GPU-hours / failures, GPU components only. The whole "
             "cluster sees a failure every MTBF / N nodes hours."),
    ("Garwood CI", "Exact Poisson 95 % interval of a rate from k events in exposure T: [χ²(0.025; 2k) / 2T, "
                   "χ²(0.975; 2k + 2) / 2T]; MTBF and MTTF intervals are its inverse. Below reliability.min_failures "
                   "(default 3) failures no point estimate is reported (\u201cinsufficient data\u201d)."),
    ("r_f", "Failures per 1,000 node-days (Kokolis et al., \u201cRevisiting Reliability in Large-Scale Machine "
            "Learning Research Clusters\u201d, HPCA 2025: RSC-1 6.50, RSC-2 2.34; Llama 3 ≈ 3.8 from Llama 3 Herd "
            "of Models §3.3.4)."),
    ("Job MTTF", "Runtime hours of job instances in a size bucket / infrastructure failures. Under the 1/N law a job "
                 "on N GPUs has MTTF(N) = 1 / (N · r), r = failures per GPU-hour; the free exponent of a Poisson GLM "
                 "tests the law (1 = holds)."),
    ("Kaplan–Meier", "Share of job instances still running without an infrastructure failure after t hours; "
                     "instances that ended for any other reason are censored. Pointwise 95 % log-log intervals."),
    ("ETTR", "Effective Training Time Ratio (Kokolis et al., HPCA 2025) = productive time / wall-clock time of a "
             "training run. Expected E[ETTR] ≈ (1 − N · r_f · (u0 + Δ/2)) / (1 + w_cp / Δ) for N nodes, "
             "checkpoint interval Δ, restart overhead u0 and blocking checkpoint write w_cp (all cluster.yaml "
             "assumptions)."),
    ("Goodput", "Productive GPU-hours / capacity GPU-hours: capacity − idle = allocated; allocated − lost to failures "
                "− lost to restarts = productive. Only interruptions by the infrastructure or preemption are charged as losses."),
    ("Weibull shape", "k of a Weibull fit to the time between failures of the same node (censored): k < 1 failures "
                      "cluster on a few nodes (lemons), k ≈ 1 constant rate, k > 1 wear-out."),
    ("Incident", "Hardware / system failure events merged per node and component (fabric- and storage-wide "
                 "incidents once), marts.hw_incidents; lost GPU-hours = GPUs × (work since the last checkpoint + restart "
                 "overhead) of the jobs and requeued runs it killed; goodput charges the two apart."),
)


def build(con: duckdb.DuckDBPyConnection, w: SloWindow) -> Section:
    """What each term of the report means, with its source."""
    # Each SLI's definition is the mart's (marts.slo_daily.definition): the ETTR one depends on settings.
    slis = [] if source_status(con, "slo_daily") else sli_windows(con, w)
    measured = " ".join(f"{sli_label(s.sli)}: {lower_first(s.definition)}" for s in slis if s.definition)
    entries = [{"term": term, "text": f"{text} {measured}" if term == "SLI, SLO" and measured else text}
               for term, text in DEFINITIONS]
    return Section("definitions", "Definitions", template="definitions", entries=entries)


SECTION = SectionSpec("definitions", "Definitions", build)
