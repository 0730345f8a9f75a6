"""Server-side charts for the reports: matplotlib figures (no pyplot, no GUI) serialised to inline SVG.

Every chart function takes plain Python data and returns an SVG fragment (no XML prolog) that the
HTML report embeds as-is, so the report opens offline. Labels that come from the warehouse (user
names, accounts) go through :func:`safe_label` first, and :func:`figure_to_svg` refuses output that
contains markup a browser would execute; the SVG is therefore safe to mark as trusted markup.

Colours are fixed per Slurm job state (:data:`STATE_COLOURS`) and per job-size bucket
(:data:`BUCKET_COLOURS`) so the same state or bucket looks the same in every chart and table.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from datetime import date

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

import matplotlib
import matplotlib.dates as mdates
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, PercentFormatter

__all__ = [
    "STATE_COLOURS",
    "BUCKET_COLOURS",
    "FAILURE_STATES",
    "state_colour",
    "bucket_colour",
    "safe_label",
    "figure_to_svg",
    "state_share_chart",
    "daily_state_chart",
    "size_share_chart",
    "quantile_chart",
    "monthly_bucket_share_chart",
    "utilization_chart",
    "top_consumers_chart",
    "lost_gpu_hours_chart",
]

#: States counted as failures in the report (the job did not finish its work through no choice of
#: the user).
FAILURE_STATES: tuple[str, ...] = ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT")

#: One colour per final Slurm state; failure states are warm, user/admin actions neutral/blue.
STATE_COLOURS: dict[str, str] = {
    "COMPLETED": "#2e7d32",
    "CANCELLED": "#f9a825",
    "FAILED": "#c62828",
    "TIMEOUT": "#8e24aa",
    "NODE_FAIL": "#6d1b1b",
    "OUT_OF_MEMORY": "#ec407a",
    "PREEMPTED": "#1e88e5",
    "RUNNING": "#4fc3f7",
    "PENDING": "#b0bec5",
    "REQUEUED": "#5c6bc0",
    "BOOT_FAIL": "#8d6e63",
    "DEADLINE": "#ff7043",
}
_OTHER_STATE = "#78909c"

#: One colour per size bucket: a sequential (viridis-like) ramp, so larger jobs are darker.
BUCKET_COLOURS: dict[str, str] = {
    "0": "#bdbdbd",
    "1": "#fde725",
    "2-8": "#7ad151",
    "9-64": "#22a884",
    "65-256": "#2a788e",
    "257-1024": "#414487",
    ">1024": "#440154",
}
_OTHER_BUCKET = "#9e9e9e"

_INK = "#263238"
_GRID = "#dde3e8"
_MAX_LABEL = 28
# Markup a browser would act on; generated SVG must never contain it. Checked on tags only: text
# content is escaped by matplotlib, so a label such as "a onclick=b" is harmless text.
_TAG = re.compile(r"<\s*/?\s*([A-Za-z][\w:.-]*)([^>]*)>")
_BAD_TAGS = frozenset({"script", "iframe", "object", "embed", "foreignobject", "a", "image"})
_BAD_ATTR = re.compile(r"(^|\s)on\w+\s*=|javascript:|(?<![\w:])(xlink:)?href\s*=\s*[\"'](?!#)", re.I)

# Applied per chart through rc_context so importing this module never changes global matplotlib
# state. Figures are built with Figure() (no pyplot), which renders headless without a backend switch.
_STYLE: dict[str, object] = {
        "svg.fonttype": "none",  # text stays text: small, crisp and searchable in the browser
        "font.family": "DejaVu Sans",
        "font.size": 11,
        "axes.edgecolor": "#90a4ae",
        "axes.labelcolor": _INK,
        "axes.titlesize": 13,
        "axes.titleweight": "bold",
        "axes.titlecolor": _INK,
        "axes.titlelocation": "left",
        "axes.titlepad": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "xtick.color": _INK,
        "ytick.color": _INK,
        "legend.frameon": False,
        "text.usetex": False,
}

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _styled(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    @wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with matplotlib.rc_context(_STYLE):
            return fn(*args, **kwargs)

    return wrapper


def state_colour(state: str) -> str:
    """Colour for a Slurm job state (grey for states without a fixed colour)."""
    return STATE_COLOURS.get(state, _OTHER_STATE)


def bucket_colour(bucket: str) -> str:
    """Colour for a job-size bucket ('1', '2-8', ..., '>1024'); grey for unknown buckets."""
    return BUCKET_COLOURS.get(bucket, _OTHER_BUCKET)


def safe_label(text: object, max_len: int = _MAX_LABEL) -> str:
    """Make warehouse text safe and short for use as a chart label.

    Angle brackets and ampersands become look-alike characters (so nothing resembling markup
    reaches the SVG even before matplotlib's own escaping), control characters are dropped,
    ``$`` is escaped so matplotlib does not parse mathtext, and long text is cut with an ellipsis.
    """
    s = "" if text is None else str(text)
    s = "".join(ch if ch.isprintable() else " " for ch in s)
    s = s.replace("<", "‹").replace(">", "›").replace("&", "+").replace('"', "”")
    if len(s) > max_len:
        s = s[: max_len - 1] + "…"
    return s.replace("$", r"\$")


def _bucket_label(bucket: str) -> str:
    # Known bucket names are our own constants ('>1024' must stay readable); anything else is data.
    return bucket if bucket in BUCKET_COLOURS else safe_label(bucket)


def _tint(colour: str, amount: float = 0.6) -> str:
    """Blend a hex colour with white (amount 1 = white): light fill that keeps the hue."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(c + (255 - c) * amount):02x}" for c in (r, g, b))


def figure_to_svg(fig: Figure) -> str:
    """Serialise a figure to an inline SVG fragment and close it.

    The XML prolog, DOCTYPE and metadata are dropped and the fixed width/height removed so CSS
    can scale the chart to its container (the viewBox keeps the aspect ratio).
    """
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, count=1, flags=re.S)
    svg = re.sub(r'(<svg[^>]*?)\s+width="[^"]*"\s+height="[^"]*"', r"\1", svg, count=1)
    svg = svg.replace("<svg ", '<svg role="img" ', 1)
    for tag in _TAG.finditer(svg):  # defence in depth: never embed active content or external links
        if tag.group(1).lower() in _BAD_TAGS or _BAD_ATTR.search(tag.group(2)):
            raise ValueError(f"generated SVG contains active content ({tag.group(0)[:60]!r}); refusing to embed it")
    return svg


def _new(width: float = 10.0, height: float = 4.0) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(width, height))
    ax = fig.subplots()
    ax.grid(axis="y", color=_GRID, linewidth=0.8)
    ax.set_axisbelow(True)
    return fig, ax


def _pct_axis(ax: Axes, axis: str = "y") -> None:
    fmt = PercentFormatter(xmax=1.0, decimals=0)
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(fmt)


@_styled
def state_share_chart(rows: Sequence[tuple[str, float, float]], title: str) -> str:
    """100 % stacked horizontal bars: share of jobs vs share of GPU-hours, one segment per state.

    ``rows`` are ``(state, share_jobs, share_gpu_hours)`` with shares as fractions in [0, 1].
    """
    fig, ax = _new(10, 2.1)
    ax.grid(False)
    ax.grid(axis="x", color=_GRID, linewidth=0.8)
    bars = ["GPU-hours", "Jobs"]
    left = [0.0, 0.0]
    for state, share_jobs, share_gpuh in rows:
        vals = [share_gpuh or 0.0, share_jobs or 0.0]
        ax.barh(bars, vals, left=left, color=state_colour(state), label=safe_label(state),
                edgecolor="white", linewidth=0.8, height=0.6)
        for i, v in enumerate(vals):
            if v >= 0.06:  # label only segments wide enough to hold the text
                dark = state in ("COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT", "PREEMPTED")
                ax.text(left[i] + v / 2, i, f"{v * 100:.1f} %", ha="center", va="center",
                        color="white" if dark else _INK, fontsize=10)
            left[i] += v
    ax.set_xlim(0, 1)
    _pct_axis(ax, "x")
    ax.set_xlabel("Share of total (%)")
    ax.set_title(title)
    ax.legend(ncols=min(len(rows), 6) or 1, loc="upper center", bbox_to_anchor=(0.5, -0.4), fontsize=10)
    return figure_to_svg(fig)


@_styled
def daily_state_chart(days: Sequence[date], series: dict[str, Sequence[float]], title: str) -> str:
    """Stacked daily bars of GPU-hours by final state (``series``: state -> values aligned to days)."""
    fig, ax = _new(10, 3.0)
    bottom = [0.0] * len(days)
    width = 0.85 if len(days) < 120 else 1.0
    for state, vals in series.items():
        ax.bar(days, vals, bottom=bottom, color=state_colour(state), label=safe_label(state), width=width)
        bottom = [b + (v or 0.0) for b, v in zip(bottom, vals)]
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_ylabel("GPU-hours per day")
    ax.set_xlabel("Job end day (UTC)")
    _date_axis(ax)
    ax.set_title(title)
    ax.legend(ncols=min(len(series), 6) or 1, loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=10)
    return figure_to_svg(fig)


def _date_axis(ax: Axes) -> None:
    loc = mdates.AutoDateLocator(maxticks=10)
    ax.xaxis.set_major_locator(loc)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc))


@_styled
def size_share_chart(rows: Sequence[tuple[str, float, float]], title: str) -> str:
    """Grouped bars per size bucket: share of jobs (light, hatched) next to share of GPU-hours (solid).

    ``rows`` are ``(bucket, share_jobs, share_gpu_hours)`` in bucket order, shares in [0, 1].
    """
    fig, ax = _new(10, 3.3)
    xs = list(range(len(rows)))
    w = 0.38
    for x, (bucket, share_jobs, share_gpuh) in zip(xs, rows):
        c = bucket_colour(bucket)
        ax.bar(x - w / 2, share_jobs or 0.0, w, color=_tint(c), hatch="///", edgecolor=c, linewidth=0.8)
        ax.bar(x + w / 2, share_gpuh or 0.0, w, color=c, edgecolor=_INK, linewidth=0.5)
        for dx, v in ((-w / 2, share_jobs), (w / 2, share_gpuh)):
            ax.text(x + dx, (v or 0.0) + 0.01, f"{(v or 0.0) * 100:.1f} %", ha="center", va="bottom", fontsize=9)
    ax.set_xticks(xs, [_bucket_label(r[0]) for r in rows])
    ax.set_xlabel("GPUs per job (size bucket)")
    ax.set_ylabel("Share of total (%)")
    top = max([max(r[1] or 0.0, r[2] or 0.0) for r in rows] + [0.05])
    ax.set_ylim(0, min(1.0, top * 1.18 + 0.02))
    _pct_axis(ax)
    ax.set_title(title)
    handles = [Patch(facecolor=_tint("#607d8b"), hatch="///", edgecolor="#607d8b", label="share of jobs (light)"),
               Patch(facecolor="#607d8b", edgecolor=_INK, label="share of GPU-hours (solid)")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.24), ncols=2, fontsize=10)
    return figure_to_svg(fig)


@_styled
def quantile_chart(rows: Sequence[tuple[str, float | None, float | None, float | None, float | None]],
                   title: str, ylabel: str) -> str:
    """Log-scale range plot per size bucket: p50, p90, p99 and max markers on a p50..max line.

    ``rows`` are ``(bucket, p50, p90, p99, max)``; non-positive values are not drawn (log scale).
    """
    fig, ax = _new(10, 3.4)
    xs = list(range(len(rows)))
    markers = (("p50", "o", 1), ("p90", "s", 2), ("p99", "D", 3), ("max", "^", 4))
    for x, row in zip(xs, rows):
        c = bucket_colour(row[0])
        vals = [v for v in row[1:] if v is not None and v > 0]
        if len(vals) >= 2:
            ax.plot([x, x], [min(vals), max(vals)], color=c, linewidth=6, alpha=0.45, solid_capstyle="round")
    for name, marker, idx in markers:
        pts = [(x, r[idx]) for x, r in zip(xs, rows) if r[idx] is not None and r[idx] > 0]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, s=46, color=_INK,
                       facecolor="white" if name == "max" else _INK, zorder=3, label=name)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    ax.set_xticks(xs, [_bucket_label(r[0]) for r in rows])
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_xlabel("GPUs per job (size bucket)")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", which="major", color=_GRID)
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.24), ncols=4, fontsize=10)
    return figure_to_svg(fig)


@_styled
def monthly_bucket_share_chart(periods: Sequence[str], series: dict[str, Sequence[float]], title: str) -> str:
    """100 % stacked bars of GPU-hour share per month, one segment per size bucket.

    ``series`` maps bucket -> shares (fractions) aligned to ``periods``, in bucket order.
    """
    fig, ax = _new(10, 3.3)
    xs = list(range(len(periods)))
    bottom = [0.0] * len(periods)
    for bucket, vals in series.items():
        clean = [v or 0.0 for v in vals]
        ax.bar(xs, clean, bottom=bottom, color=bucket_colour(bucket), label=_bucket_label(bucket),
               edgecolor="white", linewidth=0.6, width=0.72)
        bottom = [b + v for b, v in zip(bottom, clean)]
    ax.set_xticks(xs, [safe_label(p) for p in periods])
    if len(periods) > 12:
        for lbl in ax.get_xticklabels():
            lbl.set_rotation(45)
            lbl.set_horizontalalignment("right")
    ax.set_ylim(0, 1.0)
    _pct_axis(ax)
    ax.set_ylabel("Share of GPU-hours (%)")
    ax.set_xlabel("Month")
    ax.set_title(title)
    ax.legend(title="GPUs per job", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=10)
    return figure_to_svg(fig)


@_styled
def utilization_chart(days: Sequence[date], capacity: Sequence[float], allocated: Sequence[float],
                      mean_utilization: float | None, title: str) -> str:
    """Daily allocated vs capacity GPU-hours (lines), with mean allocation as a dashed reference."""
    fig, ax = _new(10, 3.3)
    ax.fill_between(days, allocated, color="#1e88e5", alpha=0.15, linewidth=0)
    ax.plot(days, capacity, color=_INK, linewidth=1.6, label="capacity")
    ax.plot(days, allocated, color="#1e88e5", linewidth=2.0, label="allocated")
    if mean_utilization is not None and not math.isnan(mean_utilization) and allocated:
        mean_alloc = sum(a or 0.0 for a in allocated) / len(allocated)
        ax.axhline(mean_alloc, color="#e65100", linestyle="--", linewidth=1.4,
                   label=f"mean allocated (utilization {mean_utilization * 100:.1f} %)")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    finite = [v for v in list(capacity) + list(allocated) if v is not None and not math.isnan(v)]
    ax.set_ylim(0, max(finite + [1.0]) * 1.1)
    ax.set_ylabel("GPU-hours per day")
    ax.set_xlabel("Day (UTC)")
    _date_axis(ax)
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=3, fontsize=10)
    return figure_to_svg(fig)


@_styled
def top_consumers_chart(rows: Sequence[tuple[str, float]], title: str, xlabel: str) -> str:
    """Horizontal bars of GPU-hour share for the top consumers (largest on top).

    ``rows`` are ``(name, share_gpu_hours)``; names are sanitised with :func:`safe_label`.
    """
    n = max(len(rows), 1)
    fig, ax = _new(10, 0.9 + 0.3 * n)
    ax.grid(False)
    ax.grid(axis="x", color=_GRID, linewidth=0.8)
    names = [f"{i + 1}. {safe_label(r[0])}" for i, r in enumerate(rows)]
    vals = [r[1] or 0.0 for r in rows]
    ys = list(range(len(rows)))[::-1]
    ax.barh(ys, vals, color="#3949ab", height=0.65)
    for y, v in zip(ys, vals):
        ax.text(v + 0.003, y, f"{v * 100:.1f} %", va="center", fontsize=9)
    ax.set_yticks(ys, names)
    ax.set_xlim(0, max(vals + [0.05]) * 1.15)
    _pct_axis(ax, "x")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    return figure_to_svg(fig)


@_styled
def lost_gpu_hours_chart(rows: Sequence[tuple[str, float]], title: str, xlabel: str) -> str:
    """Horizontal bars of lost GPU-hours per component (largest on top), labelled with value and share.

    ``rows`` are ``(component label, lost_gpu_hours)`` in display order; labels go through
    :func:`safe_label` (operator-entered components are data).
    """
    n = max(len(rows), 1)
    fig, ax = _new(10, 1.0 + 0.36 * n)
    ax.grid(False)
    ax.grid(axis="x", color=_GRID, linewidth=0.8)
    vals = [max(r[1] or 0.0, 0.0) for r in rows]
    total = sum(vals)
    ys = list(range(len(rows)))[::-1]
    ax.barh(ys, vals, color="#c62828", height=0.62)
    top = max(vals + [1.0])
    for y, v in zip(ys, vals):
        pct = v / total * 100 if total else None
        share = "" if pct is None else f" ({pct:.0f} %)" if pct >= 10 else f" ({pct:.1f} %)"
        ax.text(v + top * 0.01, y, f"{v:,.1f}{share}", va="center", fontsize=9)
    ax.set_yticks(ys, [safe_label(r[0], 34) for r in rows])
    ax.set_xlim(0, top * 1.18)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    return figure_to_svg(fig)
