"""The SLO review's terms: SLI names (their definitions are marts.slo_daily.definition), size buckets, and how objectives, budgets, rates and
configured intervals are written."""

from __future__ import annotations

from gpusre.reports.kit.formatting import MISSING, fmt_num, fmt_pct, is_number
from gpusre.models.vocabulary import SIZE_BUCKET_LABELS

#: SLI names of ``marts.slo_daily`` -> what the meeting calls them (unknown SLIs are shown as stored).
SLI_LABELS: dict[str, str] = {
    "node_availability": "Node availability",
    "job_infra_success": "Jobs not killed by the infrastructure",
    "ettr_large_runs": "ETTR of large runs",
    "goodput": "Goodput",
}

SLI_ORDER = tuple(SLI_LABELS)

#: The GPU size buckets in order (the CPU-only bucket left out).
BUCKETS = SIZE_BUCKET_LABELS[1:]


def fmt_objective(x: float | None) -> str:
    """An objective as a short percentage: 0.995 -> '99.5 %', 0.7 -> '70 %'."""
    return MISSING if not is_number(x) else f"{float(x) * 100:.4g} %"  # type: ignore[arg-type]


def fmt_sli(x: float | None) -> str:
    return fmt_pct(x, 2)


def fmt_budget(x: float | None) -> str:
    """A budget fraction as a whole percentage with a true minus sign: -0.28 -> '−28 %'."""
    return MISSING if not is_number(x) else f"{float(x) * 100:.0f} %".replace("-", "\u2212")  # type: ignore[arg-type]


def fmt_rate(x: float | None) -> str:
    return fmt_num(x, 2)


def sli_label(sli: str) -> str:
    return SLI_LABELS.get(sli, sli)


def bucket_key(b: str | None) -> int:
    return BUCKETS.index(b) if b in BUCKETS else len(BUCKETS)


def change_phrase(ratio_mtbf: float) -> str:
    """MTBF now / before -> '18 % lower' / '20 % higher' / 'unchanged'."""
    pct = (ratio_mtbf - 1.0) * 100
    if abs(pct) < 0.5:
        return "unchanged"
    return f"{abs(pct):.0f} % {'higher' if pct > 0 else 'lower'}"


def unknown_bound_text(unknown: int, lower: float | None, node_logs: bool) -> str:
    """'at most: 4 failed jobs of unknown cause (no node logs); 61.54 % if all were the infrastructure's' —
    why the job SLI's value is an upper bound (its good events include failures nobody could attribute)."""
    why = "no node logs" if not node_logs else "the node logs show no cause"
    return (f"at most: {unknown:,} failed job{'s' if unknown != 1 else ''} of unknown cause ({why}); "
            f"{fmt_sli(lower)} if {'all were' if unknown != 1 else 'it was'} the infrastructure's")

