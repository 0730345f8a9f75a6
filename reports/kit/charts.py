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
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta, timezone  # noqa: E402  (kept with the chart that needs them)
from functools import wraps
from typing import ParamSpec, TypeVar

import matplotlib
import matplotlib.dates as mdates
import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch, PathPatch
from matplotlib.path import Path
from matplotlib.transforms import Bbox
from matplotlib.ticker import FuncFormatter, LogFormatter, MaxNLocator, PercentFormatter

__all__ = [
    "STATE_COLOURS",
    "BUCKET_COLOURS",
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
    # What savefig(bbox_inches="tight") shows, drawn once: it draws every figure twice (a layout pass,
    # then the output: 2-2.5x the time of a chart). The tight box is taken from the one draw instead
    # and the SVG's viewBox cropped to it; what lies outside the canvas (legends below the axes) is in
    # the SVG all the same, on the page's white. The figure's own background is not drawn: it would
    # span the whole canvas, beyond the crop.
    fig.patch.set_visible(False)
    boxes: list[Bbox] = []
    cid = fig.canvas.mpl_connect("draw_event", lambda event: boxes.append(fig.get_tightbbox(event.renderer)))
    buf = io.StringIO()
    try:
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    finally:
        fig.canvas.mpl_disconnect(cid)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, count=1, flags=re.S)
    svg = re.sub(r'(<svg[^>]*?)\s+width="[^"]*"\s+height="[^"]*"', r"\1", svg, count=1)
    if boxes:
        svg = re.sub(r'viewBox="[^"]*"', f'viewBox="{_tight_view_box(boxes[-1], fig.get_figheight())}"', svg, count=1)
    svg = svg.replace("<svg ", '<svg role="img" ', 1)
    for tag in _TAG.finditer(svg):  # defence in depth: never embed active content or external links
        if tag.group(1).lower() in _BAD_TAGS or _BAD_ATTR.search(tag.group(2)):
            raise ValueError(f"generated SVG contains active content ({tag.group(0)[:60]!r}); refusing to embed it")
    return svg


def _tight_view_box(box: Bbox, fig_height_in: float) -> str:
    """The SVG viewBox (points, y down) of ``box`` (the figure's tight box, inches, y up), padded as
    savefig pads a tight box (``savefig.pad_inches``)."""
    pad = matplotlib.rcParams["savefig.pad_inches"]
    x0, y0, x1, y1 = box.x0 - pad, box.y0 - pad, box.x1 + pad, box.y1 + pad
    return " ".join(f"{v * 72:.2f}" for v in (x0, fig_height_in - y1, x1 - x0, y1 - y0))


def _add_rectangles(ax: Axes, x: np.ndarray, y: np.ndarray, width: float, heights: np.ndarray,
                    **style: object) -> PathPatch:
    """Add axis-aligned rectangles (lower left ``x``, ``y``) to ``ax`` as one compound path: the SVG
    gets one ``<path>`` for all of them. A collection writes an element per rectangle (~0.1 ms each:
    a year of daily stacked bars took a third of a second to serialise), and ``add_patch`` walks a
    long path segment by segment for the data limits, which are set here from the corners instead."""
    x0, y0 = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    x1, y1 = x0 + width, y0 + np.asarray(heights, dtype=float)
    corners = np.stack([np.stack([x0, y0], -1), np.stack([x1, y0], -1), np.stack([x1, y1], -1),
                        np.stack([x0, y1], -1), np.stack([x0, y0], -1)], axis=1).reshape(-1, 2)
    codes = np.tile(np.array([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY],
                             dtype=Path.code_type), len(x0))
    patch = PathPatch(Path(corners, codes), **style)  # type: ignore[arg-type]
    ax.add_artist(patch)
    ax.update_datalim(corners)
    return patch


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
    half = (0.85 if len(days) < 120 else 1.0) / 2
    xs = mdates.date2num(list(days))
    bottom = np.zeros(len(days))
    # One shape of bars per state (:func:`_add_rectangles`): a year of days is thousands of bars.
    for state, vals in series.items():
        heights = np.array([v or 0.0 for v in vals], dtype=float)
        shown = heights > 0
        _add_rectangles(ax, xs[shown] - half, bottom[shown], 2 * half, heights[shown],
                        facecolor=state_colour(state), edgecolor="none", label=safe_label(state))
        bottom += heights
    ax.xaxis_date()
    ax.autoscale_view()
    ax.set_ylim(bottom=0)
    _whole_number_axis(ax.yaxis)
    ax.set_ylabel("GPU-hours per day")
    ax.set_xlabel("Job end day (UTC)")
    _date_axis(ax)
    ax.set_title(title)
    ax.legend(ncols=min(len(series), 6) or 1, loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=10)
    return figure_to_svg(fig)


def _date_tick(x: float, _pos: int | None = None, *, span_days: float = 0.0) -> str:
    """One self-contained label per tick: '29 Sep', or 'Sep 2026' on axes longer than a year.
    (ConciseDateFormatter wrote the month only on month ticks, so a first tick '29' next to 'Oct'
    read as 29 Oct when it was 29 Sep.)"""
    d = mdates.num2date(x)
    return d.strftime("%b %Y") if span_days > 366 else f"{d.day} {d:%b}"


#: Axes shorter than this tick every day: the automatic locator ticks hours there, and the day
#: labels repeat ('29 Nov, 29 Nov, 30 Nov' under a one-day trace).
_DAY_TICKS_MAX_SPAN = 10.0


def _whole_number_axis(axis: Axis) -> None:
    """Ticks at whole numbers, labelled '12,000': with small values (a day of a few GPU-hours) a
    '{:,.0f}' label on 0.2-steps read '0, 0, 0, 1, 1, 1'."""
    axis.set_major_locator(MaxNLocator(nbins="auto", integer=True))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))


def _date_axis(ax: Axes) -> None:
    x0, x1 = ax.dataLim.intervalx
    lo, hi = ax.get_xlim()
    if np.isfinite(x0) and np.isfinite(x1) and abs(hi - lo) > (x1 - x0) + 30:
        # A single day's point: matplotlib widens a one-value date axis to years around it.
        ax.set_xlim(x0 - 0.6, x1 + 0.6)
        lo, hi = ax.get_xlim()
    span = abs(hi - lo)
    loc = mdates.DayLocator() if span <= _DAY_TICKS_MAX_SPAN else mdates.AutoDateLocator(minticks=3, maxticks=8)
    ax.xaxis.set_major_locator(loc)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, pos: _date_tick(x, pos, span_days=span)))


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
    # Matplotlib labels the minor ticks of an axis spanning less than a decade as "6×10⁰": plain numbers.
    ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))
    ax.set_xticks(xs, [_bucket_label(r[0]) for r in rows])
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_xlabel("GPUs per job (size bucket)")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", which="major", color=_GRID)
    ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:  # all quantiles zero or missing (e.g. no queue wait): no legend
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
    # A line of one or two days shows nothing without its points (a short trace, a first week).
    pts = {"marker": "o", "markersize": 5} if len(days) <= 7 else {}
    ax.plot(days, capacity, color=_INK, linewidth=1.6, label="capacity", **pts)
    ax.plot(days, allocated, color="#1e88e5", linewidth=2.0, label="allocated", **pts)
    if mean_utilization is not None and not math.isnan(mean_utilization) and allocated:
        mean_alloc = sum(a or 0.0 for a in allocated) / len(allocated)
        ax.axhline(mean_alloc, color="#e65100", linestyle="--", linewidth=1.4,
                   label=f"mean allocated (utilization {mean_utilization * 100:.1f} %)")
    _whole_number_axis(ax.yaxis)
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
    _whole_number_axis(ax.xaxis)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    return figure_to_svg(fig)


# --------------------------------------------------------------------------------------------
# SLO review report charts (gpusre.reports.slo)

#: Status colours of an SLO (``marts.slo_daily.status``) and the "good / bad" pair used in its charts.
SLO_STATUS_COLOURS: dict[str, str] = {
    "ok": "#2e7d32",
    "warning": "#f9a825",
    "ticket": "#ef6c00",
    "page": "#c62828",
    "exhausted": "#6d1b1b",
    "no_data": "#90a4ae",
}
_GOOD = "#2e7d32"
_BAD = "#c62828"
_REF = "#6d4c41"  # published reference figures (hollow markers)
_SERIES = ("#1a3a5c", "#1e88e5", "#00897b", "#8e24aa", "#f4511e", "#6d4c41")


def slo_status_colour(status: str | None) -> str:
    """Colour for an SLO status ('ok', 'warning', 'ticket', 'page', 'exhausted', 'no_data')."""
    return SLO_STATUS_COLOURS.get(status or "no_data", _OTHER_STATE)


def _finite(v: float | None) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _nan(v: float | None) -> float:
    return float(v) if _finite(v) else float("nan")


def _hours_label(v: float) -> str:
    """Hours as the SLO report's sentences print them: 3,538 h / 412 h / 57.4 h / 1.97 h / 0.25 h."""
    if v >= 100:
        return f"{v:,.0f} h"
    if v >= 10:
        return f"{v:.1f} h"
    return f"{v:.2f} h"


def _log_hours_axis(ax: Axes, axis: str = "x") -> None:
    fmt = FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}")
    (ax.xaxis if axis == "x" else ax.yaxis).set_major_formatter(fmt)


@_styled
def burndown_chart(panels: Sequence[tuple[str, Sequence[date], Sequence[float | None], Sequence[float | None], str]],
                   title: str, rolling_label: str = "rolling-window budget (marts.slo_daily)") -> str:
    """Error-budget burn-down, one small panel per SLI (budget remaining as a fraction; < 0 = overspent).

    ``panels`` are ``(label, days, burndown, rolling, colour)``: ``burndown`` is the budget of the
    report window left after each day (starts near 1), ``rolling`` the mart's rolling-window budget
    (dashed); ``None`` values are gaps. Each panel has its own y range so an overspent SLI does not
    flatten the others.
    """
    n = max(len(panels), 1)
    ncols = 2 if n > 1 else 1
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(10, 0.6 + 2.45 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for i, (label, days, burn, rolling, colour) in enumerate(panels):
        ax = axes[i // ncols][i % ncols]
        ax.grid(axis="y", color=_GRID, linewidth=0.8)
        ax.set_axisbelow(True)
        b = [_nan(v) for v in burn]
        r = [_nan(v) for v in rolling]
        finite = [v for v in b + r if not math.isnan(v)]
        lo = min(finite + [0.0])
        hi = max(finite + [1.0])
        pad = (hi - lo) * 0.08 or 0.1
        ax.axhspan(lo - pad * 2, 0, color=_tint(_BAD, 0.88), linewidth=0, zorder=0)
        ax.axhline(0, color=_BAD, linewidth=1.0, zorder=1)
        ax.axhline(1, color=_GRID, linewidth=1.0, zorder=1)
        if any(not math.isnan(v) for v in r):
            ax.plot(days, r, color="#78909c", linewidth=1.3, linestyle="--", label=rolling_label, zorder=2)
        ax.plot(days, b, color=colour, linewidth=2.4, label="budget left in the report window", zorder=3)
        last_i = next((k for k in range(len(b) - 1, -1, -1) if not math.isnan(b[k])), None)
        if last_i is not None:
            ax.annotate(f"{b[last_i] * 100:.0f} %", (days[last_i], b[last_i]), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=10, fontweight="bold", color=colour)
        ax.set_ylim(lo - pad, hi + pad)
        _pct_axis(ax)
        _date_axis(ax)
        ax.set_title(safe_label(label, 60), fontsize=12)
        ax.tick_params(labelsize=9)
    for j in range(len(panels), nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.suptitle(title, x=0.01, ha="left", fontsize=13, fontweight="bold", color=_INK)
    fig.legend(handles[::-1], labels[::-1], loc="lower center", ncols=2, fontsize=10, bbox_to_anchor=(0.5, -0.01))
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    return figure_to_svg(fig)


def _dot_whisker(ax: Axes, y: float, est: float | None, lo: float | None, hi: float | None, colour: str,
                 marker: str, sufficient: bool, label: str | None, hi_cap: float) -> None:
    """One estimate with its CI on a horizontal axis; insufficient rows get a dashed interval, no point."""
    lo_v = lo if _finite(lo) and lo > 0 else None  # type: ignore[operator]
    hi_v = hi if _finite(hi) else None
    if lo_v is not None:
        right = hi_v if hi_v is not None else hi_cap
        ax.plot([lo_v, right], [y, y], color=colour, linewidth=2.2 if sufficient else 1.6,
                linestyle="-" if sufficient else (0, (3, 2)), solid_capstyle="butt", zorder=2)
        ax.plot([lo_v], [y], marker="|", color=colour, markersize=9, zorder=2)
        if hi_v is not None:
            ax.plot([hi_v], [y], marker="|", color=colour, markersize=9, zorder=2)
        else:
            ax.plot([right], [y], marker=">", color=colour, markersize=6, zorder=2)
    if sufficient and _finite(est):
        ax.plot([est], [y], marker=marker, color=colour, markersize=8, zorder=3, label=label,
                markeredgecolor="white", markeredgewidth=0.8)
    elif label is not None:
        ax.plot([], [], marker=marker, color=colour, markersize=8, label=label)


@_styled
def mtbf_chart(rows: Sequence[tuple[str, str, float | None, float | None, float | None, bool]], title: str,
               xlabel: str = "MTBF per node (hours, log scale), 95 % Garwood CI") -> str:
    """Dot-and-whisker MTBF per category (component class), one dodged marker per period.

    ``rows`` are ``(category, period, mtbf, ci_low, ci_high, sufficient)`` in display order (first
    category on top). Rows with ``sufficient`` False draw only their interval, dashed, and are labelled
    "insufficient data": no point estimate.
    """
    cats: list[str] = []
    periods: list[str] = []
    for c, p, *_ in rows:
        if c not in cats:
            cats.append(c)
        if p not in periods:
            periods.append(p)
    colours = {p: _SERIES[i % len(_SERIES)] for i, p in enumerate(periods)}
    markers = {p: "o" if i == 0 else ("s", "D", "^", "v", "P")[(i - 1) % 5] for i, p in enumerate(periods)}
    fig, ax = _new(10, 0.9 + 0.62 * max(len(cats), 1) + 0.1 * len(periods))
    ax.grid(False)
    ax.grid(axis="x", which="major", color=_GRID, linewidth=0.9)
    finite = [v for r in rows for v in r[2:5] if _finite(v) and v > 0]  # type: ignore[operator]
    lo_all, hi_all = (min(finite), max(finite)) if finite else (1.0, 10.0)
    hi_cap = hi_all * 1.6
    step = 0.7 / max(len(periods), 1)
    seen: set[str] = set()
    for c, p, est, lo, hi, ok in rows:
        y = len(cats) - 1 - cats.index(c) + (len(periods) - 1) / 2 * step - periods.index(p) * step
        label = None if p in seen else safe_label(p, 20)
        seen.add(p)
        _dot_whisker(ax, y, est, lo, hi, colours[p], markers[p], ok, label, hi_cap)
        if not ok and _finite(lo):
            ax.text(lo, y + step * 0.18, "insufficient data ", ha="right", va="center", fontsize=8.5,
                    color=colours[p], style="italic")
    ax.set_xscale("log")
    ax.set_xlim(lo_all / 3.5, hi_cap * 1.15)
    _log_hours_axis(ax)
    ax.set_yticks(range(len(cats)), [safe_label(c, 30) for c in reversed(cats)])
    ax.set_ylim(-0.6, len(cats) - 0.4)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=10, title="Period", title_fontsize=10)
    return figure_to_svg(fig)


@_styled
def rate_reference_chart(ours: Sequence[tuple[str, float | None, float | None, float | None, bool]],
                         references: Sequence[tuple[str, float] | tuple[str, float, str]], title: str,
                         xlabel: str = "Failures per 1,000 node-days (95 % CI)") -> str:
    """Our failure rates with CIs (filled dots) above published reference figures (hollow diamonds).

    ``ours`` are ``(label, rate, ci_low, ci_high, sufficient)``; insufficient rows show only their
    interval (dashed). ``references`` are ``(label, value)`` or ``(label, value, value as published)``.
    """
    labels = [safe_label(r[0], 40) for r in ours] + [safe_label(r[0], 40) for r in references]
    n = max(len(labels), 1)
    fig, ax = _new(10, 0.9 + 0.42 * n)
    ax.grid(False)
    ax.grid(axis="x", color=_GRID, linewidth=0.8)
    finite = [v for r in ours for v in r[1:4] if _finite(v)] + [r[1] for r in references]
    top = max(finite + [1.0]) * 1.15
    for i, (_, rate, lo, hi, ok) in enumerate(ours):
        y = n - 1 - i
        _dot_whisker(ax, y, rate, lo if _finite(lo) and lo > 0 else (1e-9 if _finite(hi) else None), hi,  # type: ignore[operator]
                     "#1a3a5c", "o", ok, None, top)
        if ok and _finite(rate):
            ax.text(rate, y + 0.28, f"{rate:.2f}", ha="center", va="bottom", fontsize=9, color="#1a3a5c")
        elif _finite(hi):
            ax.text(hi, y + 0.28, "insufficient data", ha="right", va="bottom", fontsize=8.5, style="italic",
                    color="#1a3a5c")
    for j, ref in enumerate(references):
        y = n - 1 - len(ours) - j
        v = ref[1]
        ax.plot([v], [y], marker="D", markersize=9, markerfacecolor="white", markeredgecolor=_REF,
                markeredgewidth=1.8, linestyle="none", zorder=3)
        text = safe_label(ref[2], 12) if len(ref) > 2 else f"{v:.2f}"  # type: ignore[misc]
        ax.text(v, y + 0.28, text, ha="center", va="bottom", fontsize=9, color=_REF)
    if references and ours:
        ax.axhline(n - len(ours) - 0.5, color="#b0bec5", linewidth=0.8, linestyle=":")
    ax.set_yticks(range(n), labels[::-1])
    ax.set_ylim(-0.6, n - 0.2)
    ax.set_xlim(0, top)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    return figure_to_svg(fig)


@_styled
def mttf_projection_chart(measured: Sequence[tuple[str, float, float | None, float | None, float | None, bool]],
                          fit: tuple[float, float | None, float | None] | None,
                          projected: Sequence[tuple[float, float | None, float | None, float | None]],
                          references: Sequence[tuple[float, float]], title: str,
                          reference_label: str = "Meta RSC-1 (published)") -> str:
    """Job MTTF vs job size on log-log axes: measured buckets, the 1/N fit, projections and references.

    * ``measured``: ``(bucket, n_gpus, mttf, ci_low, ci_high, sufficient)``: bucket colour, CI
      whiskers; insufficient buckets draw only their (dashed) interval.
    * ``fit``: ``(r_gpu_per_hour, r_ci_low, r_ci_high)``: the line MTTF = 1 / (N · r) with its band.
    * ``projected``: ``(n_gpus, mttf, ci_low, ci_high)``: squares, labelled with the value.
    * ``references``: ``(n_gpus, mttf)``: hollow markers labelled ``reference_label``.
    """
    fig, ax = _new(10, 4.6)
    ax.grid(axis="both", which="major", color=_GRID, linewidth=0.8)
    xs_all = [r[1] for r in measured] + [p[0] for p in projected] + [r[0] for r in references]
    x_lo = max(min(xs_all + [1.0]) / 1.6, 0.6)
    x_hi = max(xs_all + [2.0]) * 1.8
    if fit is not None and fit[0] and fit[0] > 0:
        r, r_lo, r_hi = fit
        grid = [x_lo * (x_hi / x_lo) ** (i / 60) for i in range(61)]
        ax.plot(grid, [1 / (n * r) for n in grid], color="#546e7a", linewidth=1.6, zorder=1,
                label="1/N fit: MTTF = 1 / (N · r)")
        if r_lo and r_hi and r_lo > 0:
            ax.fill_between(grid, [1 / (n * r_hi) for n in grid], [1 / (n * r_lo) for n in grid], color="#90a4ae",
                            alpha=0.18, linewidth=0, zorder=0, label="fit 95 % CI")
    first_meas = True
    for bucket, n, est, lo, hi, ok in measured:
        c = bucket_colour(bucket)
        if _finite(lo) and _finite(hi):
            ax.plot([n, n], [lo, hi], color=c, linewidth=2.2 if ok else 1.5, linestyle="-" if ok else (0, (3, 2)),
                    zorder=2)
            ax.plot([n, n], [lo, hi], marker="_", linestyle="none", color=c, markersize=10, zorder=2)
        if ok and _finite(est):
            ax.plot([n], [est], marker="o", markersize=9, color=c, markeredgecolor=_INK, markeredgewidth=0.8,
                    zorder=3, linestyle="none", label="measured (bucket median size)" if first_meas else None)
            first_meas = False
            ax.annotate(f"{_bucket_label(bucket)} GPU: {_hours_label(est)}", (n, est), xytext=(8, 0),
                        textcoords="offset points", fontsize=9, va="center")
        elif _finite(hi):
            ax.annotate(f"{_bucket_label(bucket)} GPU: insufficient data", (n, hi), xytext=(6, 2),
                        textcoords="offset points", fontsize=8.5, style="italic", va="bottom", color="#546e7a")
    for i, (n, est, lo, hi) in enumerate(projected):
        if not _finite(est):
            continue
        if _finite(lo) and _finite(hi):
            ax.plot([n, n], [lo, hi], color="#1a3a5c", linewidth=1.8, zorder=2)
        ax.plot([n], [est], marker="s", markersize=8, color="#1a3a5c", zorder=3, linestyle="none",
                label="projected (1/N)" if i == 0 else None)
        ax.annotate(_hours_label(est), (n, est), xytext=(8, 0), textcoords="offset points", fontsize=9.5,
                    va="center", color="#1a3a5c", fontweight="bold")
    for i, (n, v) in enumerate(references):
        ax.plot([n], [v], marker="D", markersize=9, markerfacecolor="white", markeredgecolor=_REF,
                markeredgewidth=1.8, linestyle="none", zorder=4, label=safe_label(reference_label, 40) if i == 0 else None)
        ax.annotate(f"{v:g} h", (n, v), xytext=(-8, 0), textcoords="offset points", fontsize=9, ha="right",
                    va="center", color=_REF)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else ""))
    _log_hours_axis(ax, "y")
    ax.set_xlabel("GPUs per job (log scale)")
    ax.set_ylabel("MTTF (hours, log scale)")
    ax.set_title(title)
    ax.legend(loc="lower left", fontsize=9.5, frameon=True, facecolor="white", edgecolor=_GRID, framealpha=0.9)
    return figure_to_svg(fig)


@_styled
def survival_chart(curves: Sequence[tuple[str, Sequence[float], Sequence[float], Sequence[float | None],
                                          Sequence[float | None]]], title: str) -> str:
    """Kaplan–Meier step curves (one per size bucket) of time to infrastructure failure, with CI bands.

    ``curves`` are ``(bucket, time_h, survival, ci_low, ci_high)``; each curve should start at (0, 1).
    """
    fig, ax = _new(10, 3.6)
    t_max = 1.0
    for bucket, t, s, lo, hi in curves:
        c = bucket_colour(bucket)
        if len(t) == 0:
            continue
        t_max = max(t_max, max(t))
        lo_v = [_nan(v) for v in lo]
        hi_v = [_nan(v) for v in hi]
        ax.fill_between(t, lo_v, hi_v, step="post", color=c, alpha=0.15, linewidth=0)
        ax.step(t, s, where="post", color=c if bucket not in ("1",) else "#c0a000", linewidth=2.0,
                label=f"{_bucket_label(bucket)} GPU")
    ax.set_xlim(0, t_max * 1.02)
    ax.set_ylim(0, 1.03)
    _pct_axis(ax)
    ax.set_xlabel("Hours since the job instance started")
    ax.set_ylabel("Still running without an\ninfrastructure failure (%)")
    ax.set_title(title)
    ax.legend(title="GPUs per job", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=10)
    return figure_to_svg(fig)


#: Dots drawn per group of a distribution chart: thousands of dots draw one blob, weigh megabytes
#: of SVG and take seconds to render; the box and median still come from every value.
MAX_DOTS = 400


def _thinned(values: np.ndarray) -> np.ndarray:
    """At most :data:`MAX_DOTS` of ``values``: the order statistics at evenly spaced ranks (minimum
    and maximum included), so the dots keep the distribution's shape."""
    if values.size <= MAX_DOTS:
        return values
    ranks = np.round(np.linspace(0, values.size - 1, MAX_DOTS)).astype(int)
    return np.sort(values)[ranks]


@_styled
def ettr_distribution_chart(rows: Sequence[tuple[str, Sequence[float], float | None]], title: str,
                            target: float | None = None) -> str:
    """Measured ETTR per run size bucket (one dot per run, p10–p90 box, median bar) vs the expected ETTR.

    ``rows`` are ``(bucket, ettr values of the runs, expected_ettr)`` in bucket order; the expectation
    is a hollow diamond. ``target`` draws the ETTR objective as a dashed line.
    """
    from matplotlib.patches import Rectangle

    fig, ax = _new(10, 3.8)
    rng = np.random.default_rng(0)  # fixed jitter: the same data gives the same SVG
    first = True
    for x, (bucket, vals, expected) in enumerate(rows):
        c = bucket_colour(bucket)
        v = np.asarray([float(a) for a in vals if _finite(a)])
        if v.size:
            dots = _thinned(v)
            jitter = rng.uniform(-0.28, 0.28, dots.size)
            ax.scatter(x + jitter, dots, s=9 if v.size > 50 else 26, color=c, alpha=0.35 if v.size > 200 else 0.7,
                       edgecolors=_INK if v.size <= 50 else "none", linewidths=0.4, zorder=5 if v.size <= 50 else 2)
            p10, p50, p90 = np.quantile(v, [0.1, 0.5, 0.9])
            ax.add_patch(Rectangle((x - 0.34, p10), 0.68, max(p90 - p10, 0.004), facecolor="none",
                                                      edgecolor=_INK, linewidth=1.4, zorder=3))
            ax.plot([x - 0.34, x + 0.34], [p50, p50], color=_INK, linewidth=3.0, zorder=4,
                    label="measured median, box p10–p90" if first else None)
            ax.annotate(f"{p50:.2f}", (x + 0.36, p50), xytext=(2, 0), textcoords="offset points", fontsize=9,
                        va="center", fontweight="bold")
            first = False
        if _finite(expected):
            ax.plot([x], [expected], marker="D", markersize=10, markerfacecolor="white", markeredgecolor=_BAD,
                    markeredgewidth=2.0, linestyle="none", zorder=5,
                    label="expected from failures alone (Kokolis et al.)" if x == 0 or not any(
                        _finite(r[2]) for r in rows[:x]) else None)
    if target is not None:
        ax.axhline(target, color=_GOOD, linestyle="--", linewidth=1.3, label=f"ETTR objective {target:.2f}")
    ax.set_xticks(range(len(rows)), [f"{_bucket_label(r[0])}\n({len(r[1]):,} runs)" for r in rows])
    ax.set_xlim(-0.6, len(rows) - 0.3)
    ax.set_ylim(-0.02, 1.05)
    thinned = any(len(r[1]) > MAX_DOTS for r in rows)
    ax.set_xlabel("GPUs per run (size bucket)" + (f"; over {MAX_DOTS} runs: {MAX_DOTS} dots at evenly spaced ranks"
                                                   if thinned else ""))
    ax.set_ylabel("ETTR (productive / wall-clock)")
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=3, fontsize=10)
    return figure_to_svg(fig)


@_styled
def waterfall_chart(steps: Sequence[tuple[str, float, str]], title: str, ylabel: str = "GPU-hours") -> str:
    """Waterfall of GPU-hours: ``steps`` are ``(label, value, kind)`` with kind ``total`` (a bar from 0)
    or ``loss`` (a floating bar hanging from the previous level). Each bar is labelled with its value
    and its share of the first total."""
    fig, ax = _new(10, 3.8)
    base = steps[0][1] if steps else 0.0
    level = 0.0
    for x, (label, value, kind) in enumerate(steps):
        v = max(value or 0.0, 0.0)
        if kind == "total":
            bottom, colour = 0.0, ("#1a3a5c" if x == 0 else _GOOD if x == len(steps) - 1 else "#1e88e5")
            level = v
        else:
            bottom, colour = level - v, _BAD if "fail" in label.lower() or "restart" in label.lower() else "#b0bec5"
            if x + 1 < len(steps):
                ax.plot([x - 0.4, x + 1.4], [level - v, level - v], color="#90a4ae", linewidth=0.8, linestyle=":")
            level -= v
        ax.bar(x, v, bottom=bottom, color=colour, width=0.62, edgecolor="white")
        share = v / base * 100 if base else 0.0
        txt = f"{v:,.0f}\n({share:.1f} %)" if share >= 0.1 or v == 0 else f"{v:,.0f}\n({share:.2f} %)"
        ax.text(x, bottom + v + base * 0.015, txt, ha="center", va="bottom", fontsize=9.5)
    ax.set_xticks(range(len(steps)), [safe_label(s[0], 30) for s in steps])
    ax.set_ylim(0, base * 1.22 if base else 1.0)
    _whole_number_axis(ax.yaxis)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return figure_to_svg(fig)


#: The utilization line of the goodput chart: orange, dashed, on top (it often coincides with goodput).
UTILIZATION_LINE_COLOUR = "#ef6c00"


@_styled
def goodput_daily_chart(days: Sequence[date], goodput: Sequence[float | None], objective: float | None,
                        title: str, utilization: Sequence[float | None] | None = None) -> str:
    """Daily goodput (productive / capacity GPU-hours) with the SLO objective; days below it in red.

    Utilization, when given, is drawn dashed in a contrasting colour *above* the goodput line: with
    little lost work the two coincide, and a line drawn underneath vanished though the legend listed it."""
    fig, ax = _new(10, 3.2)
    g = [_nan(v) for v in goodput]
    ax.plot(days, g, color="#1a3a5c", linewidth=2.4, label="goodput", zorder=3)
    if utilization is not None:
        ax.plot(days, [_nan(v) for v in utilization], color=UTILIZATION_LINE_COLOUR, linewidth=1.6,
                linestyle=(0, (4, 3)), label="allocated / capacity (utilization)", zorder=5)
    if objective is not None:
        ax.axhline(objective, color=_GOOD, linestyle="--", linewidth=1.3, label=f"objective {objective * 100:.0f} %")
        below = [(d, v) for d, v in zip(days, g) if not math.isnan(v) and v < objective]
        if below:
            ax.scatter([d for d, _ in below], [v for _, v in below], color=_BAD, s=22, zorder=4,
                       label="day below objective")
    ax.set_ylim(0, 1.02)
    _pct_axis(ax)
    _date_axis(ax)
    ax.set_ylabel("Share of capacity (%)")
    ax.set_xlabel("Day (UTC)")
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=4, fontsize=10)
    return figure_to_svg(fig)


__all__ += [
    "SLO_STATUS_COLOURS",
    "slo_status_colour",
    "burndown_chart",
    "mtbf_chart",
    "rate_reference_chart",
    "mttf_projection_chart",
    "survival_chart",
    "ettr_distribution_chart",
    "waterfall_chart",
    "goodput_daily_chart",
]


# --------------------------------------------------------------------------------------------
# node-state charts (nightly report: availability heat map, time to repair)

#: In-service share bins of the availability heat map, worst first, and their colours: discrete
#: steps read better on a meeting screen than a continuous ramp, and a day with a single hour down
#: (95.8 %) must not look like a fully in-service one.
AVAILABILITY_BINS: tuple[tuple[float, float, str, str], ...] = (
    (0.0, 0.25, "#7f0000", "< 25 %"),
    (0.25, 0.5, "#c62828", "25–50 %"),
    (0.5, 0.75, "#ef6c00", "50–75 %"),
    (0.75, 0.95, "#ffa726", "75–95 %"),
    (0.95, 1.0 - 1e-9, "#ffe082", "95 – <100 %"),
    (1.0 - 1e-9, 1.0001, "#e3f2e5", "100 % (no down time)"),
)
_NO_DATA_FILL = "#eceff1"


def availability_colour(share: float | None) -> str:
    """Heat-map colour of an in-service share in [0, 1] (grey for no data)."""
    if not _finite(share):
        return _NO_DATA_FILL
    for lo, hi, colour, _ in AVAILABILITY_BINS:
        if lo <= share < hi:  # type: ignore[operator]
            return colour
    return AVAILABILITY_BINS[-1][2] if share >= 1.0 else AVAILABILITY_BINS[0][2]  # type: ignore[operator]


def _hours_cell(v: float) -> str:
    """Down hours in a heat-map cell: '24', '3.5', '0.2'; node-hours of summary rows may be large."""
    if v < 0.05:
        return "<0.1"
    if v >= 999.5:
        return f"{v / 1000:.1f}k"
    if v >= 9.95 or abs(v - round(v)) < 0.05:
        return f"{v:.0f}"
    return f"{v:.1f}"


@_styled
def availability_heatmap_chart(days: Sequence[date],
                               rows: Sequence[tuple[str, Sequence[float | None], Sequence[float | None], bool]],
                               title: str, highlight_day: date | None = None) -> str:
    """Node × day heat map of the in-service share of each day, worst node on top.

    ``rows`` are ``(label, shares, down_hours, summary)`` with ``shares`` (fractions, ``None`` = no
    data) and ``down_hours`` aligned to ``days``; cells with down time show it as a number. Summary
    rows (the whole cluster, the other nodes) get bold labels and a separating line. Cells are
    vector rectangles (no raster image), so the SVG stays inline, scalable and searchable.
    """
    from matplotlib.patches import Rectangle

    n_rows = max(len(rows), 1)
    n_days = max(len(days), 1)
    fig = Figure(figsize=(10, 1.55 + 0.26 * n_rows))
    ax = fig.subplots()
    ax.set_facecolor("white")
    fs = 8.5 if n_days <= 16 else 7
    # The cells of one colour as one shape (:func:`_add_rectangles`): a patch per cell costs milliseconds
    # each to add and draw. (Their white outlines overlap their neighbours' alike in any order.)
    cells: dict[str, list[tuple[int, int]]] = {}
    for i, (_, shares, downs, summary) in enumerate(rows):
        for j in range(len(days)):
            share = shares[j] if j < len(shares) else None
            fill = availability_colour(share)
            cells.setdefault(fill, []).append((j, i))
            down = downs[j] if j < len(downs) else None
            if _finite(share) and _finite(down) and down > 0:  # type: ignore[operator]
                dark = fill in ("#7f0000", "#c62828", "#ef6c00")
                ax.text(j + 0.5, i + 0.52, _hours_cell(down),  # type: ignore[arg-type]
                        ha="center", va="center", fontsize=fs,
                        color="white" if dark else _INK, fontweight="bold" if summary else "normal")
    for fill, at in cells.items():
        x, y = np.asarray(at, dtype=float).T
        _add_rectangles(ax, x, y, 1.0, np.ones_like(x), facecolor=fill, edgecolor="white", linewidth=1.0)
    # Lines between the summary rows and the node rows.
    for i in range(1, len(rows)):
        if rows[i][3] != rows[i - 1][3]:
            ax.axhline(i, color=_INK, linewidth=1.6)
    if highlight_day is not None and highlight_day in days:
        j = list(days).index(highlight_day)
        ax.add_patch(Rectangle((j, 0), 1, n_rows, facecolor="none", edgecolor=_INK, linewidth=1.8, zorder=4))
    ax.set_xlim(0, n_days)
    ax.set_ylim(n_rows, 0)
    ax.set_yticks([i + 0.5 for i in range(len(rows))], [safe_label(r[0], 34) for r in rows])
    for lbl, r in zip(ax.get_yticklabels(), rows):
        if r[3]:
            lbl.set_fontweight("bold")
    ax.tick_params(axis="y", length=0, labelsize=10 if n_rows <= 30 else 9)
    labels = [f"{d:%a}\n{d:%d %b}" if n_days <= 16 else f"{d:%d}\n{d:%a}"[:5] for d in days]
    ax.set_xticks([j + 0.5 for j in range(len(days))], labels)
    ax.tick_params(axis="x", length=0, labelsize=9 if n_days <= 16 else 7.5, top=False, labeltop=True,
                   bottom=False, labelbottom=False)
    if highlight_day is not None and highlight_day in days:
        ax.get_xticklabels()[list(days).index(highlight_day)].set_fontweight("bold")
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.grid(False)
    handles = [Patch(facecolor=c, edgecolor="#b0bec5", linewidth=0.6, label=lbl)
               for _, _, c, lbl in reversed(AVAILABILITY_BINS)]
    handles.append(Patch(facecolor=_NO_DATA_FILL, edgecolor="#b0bec5", linewidth=0.6, label="no data"))
    ax.legend(handles=handles, title="In service, share of the day (cell number: hours down)", title_fontsize=10,
              loc="upper center", bbox_to_anchor=(0.5, -0.01 - 0.3 / n_rows),
              ncols=len(handles), fontsize=9.5, handlelength=1.6, columnspacing=1.2)
    ax.set_title(title, pad=34 if n_days <= 16 else 28)
    # Room for node labels on the left; the cells take the rest of the width.
    fig.subplots_adjust(left=0.2, right=0.99)
    return figure_to_svg(fig)


@_styled
def repair_time_chart(rows: Sequence[tuple[str, float | None, float | None, int, bool]], title: str,
                      xlabel: str = "Time to repair (hours): bar = median, whisker to p90") -> str:
    """Horizontal bars of the median time to repair per component with a whisker to the p90.

    ``rows`` are ``(label, p50_hours, p90_hours, repaired, is_total)`` in display order (first on
    top); the total row is dark. Each bar is labelled with the median, the p90 and the number of
    repairs it rests on.
    """
    n = max(len(rows), 1)
    fig, ax = _new(10, 1.0 + 0.46 * n)
    ax.grid(False)
    ax.grid(axis="x", color=_GRID, linewidth=0.8)
    ys = list(range(len(rows)))[::-1]
    top = max([v for r in rows for v in (r[1], r[2]) if _finite(v)] + [1.0])
    for y, (_, p50, p90, repaired, total) in zip(ys, rows):
        colour = "#1a3a5c" if total else "#5c8fbf"
        if _finite(p50):
            ax.barh(y, p50, color=colour, height=0.58)
        if _finite(p90) and _finite(p50) and p90 > p50:  # type: ignore[operator]
            ax.plot([p50, p90], [y, y], color=_INK, linewidth=1.4, zorder=3)
            ax.plot([p90], [y], marker="|", color=_INK, markersize=12, markeredgewidth=1.6, zorder=3)
        right = max(v for v in (p50, p90, 0.0) if _finite(v))  # type: ignore[type-var]
        text = (f"{p50:,.1f} h" + (f"  (p90 {p90:,.1f} h)" if _finite(p90) else "") if _finite(p50)
                else "no repair yet")
        text += f"  · {repaired:,} repair{'' if repaired == 1 else 's'}"
        ax.text(right + top * 0.012, y, text, va="center", fontsize=9.5,
                fontweight="bold" if total else "normal", color=_INK if _finite(p50) else "#78909c",
                style="normal" if _finite(p50) else "italic")
    ax.set_yticks(ys, [safe_label(r[0], 34) for r in rows])
    for lbl, r in zip(ax.get_yticklabels(), rows):
        if r[4]:
            lbl.set_fontweight("bold")
    ax.set_xlim(0, top * 1.45)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    _whole_number_axis(ax.xaxis)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    return figure_to_svg(fig)


__all__ += ["AVAILABILITY_BINS", "availability_colour", "availability_heatmap_chart", "repair_time_chart"]


# --------------------------------------------------------------------------------------------
# incident retrospective chart (gpusre.reports.incident)



#: One timeline item: ``(kind, start, end, colour, marker)``. ``kind`` "bar": a period from ``start``
#: to ``end`` (``end`` None: still open, drawn to the right edge with an arrow); "point": an instant
#: at ``start`` drawn with the matplotlib ``marker`` ("o", "x", "D", "|", "v", ...).
TimelineItem = tuple[str, datetime, "datetime | None", str, str]


def _naive_utc(t: datetime) -> datetime:
    return t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t


@_styled
def incident_timeline_chart(
    lanes: Sequence[tuple[str, str, Sequence[TimelineItem]]],
    window: tuple[datetime, datetime],
    title: str,
    *,
    spans: Sequence[tuple[datetime, datetime, str, str]] = (),
    marks: Sequence[tuple[datetime, str, str]] = (),
    legend: Sequence[tuple[str, str, str]] = (),
) -> str:
    """One incident timeline: time (UTC) on x, one row per lane, lanes grouped under bold headers.

    ``lanes`` are ``(group, label, items)`` in display order (first on top; a new ``group`` value
    starts a header row); ``items`` are :data:`TimelineItem` tuples, clipped to ``window`` (a bar
    that starts before it gets a left arrow, one that ends after it a right arrow). ``spans`` are
    shaded periods ``(start, end, colour, label)`` behind everything (the incident window);
    ``marks`` vertical lines ``(time, colour, label)`` labelled at the top (drain, back in service);
    ``legend`` entries ``(label, colour, kind)`` with ``kind`` "bar" or a marker. Lane labels,
    group names and mark labels are data: they go through :func:`safe_label`.
    """
    w0, w1 = (_naive_utc(t) for t in window)
    if w1 <= w0:
        w1 = w0 + timedelta(minutes=1)
    rows: list[tuple[str, str, Sequence[TimelineItem] | None]] = []  # (kind, label, items)
    group = None
    for g, label, items in lanes:
        if g != group:
            rows.append(("header", g, None))
            group = g
        rows.append(("lane", label, items))
    n = max(len(rows), 1)
    fig, ax = _new(12, 1.25 + 0.27 * n)
    ax.grid(False)
    ax.grid(axis="x", color=_GRID, linewidth=0.8)
    x0, x1 = mdates.date2num(w0), mdates.date2num(w1)
    lane_h = 0.56
    for s0, s1, colour, label in spans:
        a, b = max(mdates.date2num(_naive_utc(s0)), x0), min(mdates.date2num(_naive_utc(s1)), x1)
        if b >= a:
            ax.axvspan(a, max(b, a + (x1 - x0) * 0.002), color=colour, alpha=0.13, linewidth=0, zorder=0,
                       label=safe_label(label, 60) if label else None)
    ys = list(range(len(rows)))[::-1]
    for y, (kind, _, items) in zip(ys, rows):
        if kind == "header":
            ax.axhspan(y - 0.5, y + 0.5, color="#eef1f4", linewidth=0, zorder=0)
            continue
        for it_kind, t0, t1, colour, marker in items or ():
            a = mdates.date2num(_naive_utc(t0))
            if it_kind == "point":
                if x0 <= a <= x1:
                    ax.plot([a], [y], marker=marker or "o", color=colour, markersize=7, linestyle="none",
                            markeredgewidth=1.8 if marker in ("x", "+", "|") else 0.6,
                            markeredgecolor=colour if marker in ("x", "+", "|") else "white", zorder=4)
                continue
            b = x1 if t1 is None else mdates.date2num(_naive_utc(t1))
            if b < x0 or a > x1:
                continue
            left, right = max(a, x0), min(b, x1)
            width = max(right - left, (x1 - x0) * 0.003)
            ax.broken_barh([(left, width)], (y - lane_h / 2, lane_h), facecolors=colour, alpha=0.85,
                           edgecolor="white", linewidth=0.4, zorder=3)
            if a < x0:
                ax.plot([x0], [y], marker="<", color=colour, markersize=6, zorder=4, clip_on=False)
            if t1 is None or b > x1:
                ax.plot([x1], [y], marker=">", color=colour, markersize=6, zorder=4, clip_on=False)
    top = len(rows) - 0.5
    for t, colour, label in marks:
        a = mdates.date2num(_naive_utc(t))
        if x0 <= a <= x1:
            ax.axvline(a, color=colour, linewidth=1.3, linestyle=(0, (4, 2)), zorder=2)
            ax.text(a, top + 0.1, safe_label(label, 40), rotation=0, ha="left", va="bottom", fontsize=8.5,
                    color=colour, clip_on=False)
    ax.set_ylim(-0.6, top)
    ax.set_xlim(x0, x1)
    ax.set_yticks(ys, [safe_label(r[1], 44) for r in rows])
    for lbl, r in zip(ax.get_yticklabels(), rows):
        if r[0] == "header":
            lbl.set_fontweight("bold")
            lbl.set_color("#1a3a5c")
        else:
            lbl.set_fontsize(9.5)
    ax.tick_params(axis="y", length=0)
    loc = mdates.AutoDateLocator(minticks=5, maxticks=12, tz=timezone.utc)
    ax.xaxis.set_major_locator(loc)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc, tz=timezone.utc))
    ax.set_xlabel("Time (UTC)")
    handles = []
    for label, colour, kind in legend:
        if kind == "bar":
            handles.append(Patch(facecolor=colour, label=safe_label(label, 40)))
        else:
            handles.append(Line2D([], [], marker=kind, color=colour, linestyle="none", markersize=7,
                                  markeredgewidth=1.8 if kind in ("x", "+", "|") else 0.6,
                                  label=safe_label(label, 40)))
    if handles:
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.9 / (1.25 + 0.27 * n) - 0.04),
                  ncols=min(len(handles), 5), fontsize=9, handlelength=1.4, columnspacing=1.4)
    ax.set_title(title, pad=22 if marks else 10)
    return figure_to_svg(fig)


__all__ += ["TimelineItem", "incident_timeline_chart"]


# --------------------------------------------------------------------------------------------
# alert charts (nightly report: alert flood and compression)

_ALERT_BAR = "#5c8fbf"
_FLOOD_BAR = "#e65100"
_INCIDENT_BAR = "#1a3a5c"


@_styled
def alert_daily_chart(days: Sequence[date], alerts: Sequence[int | None], incidents: Sequence[int | None],
                      floods: Sequence[int | None], title: str, highlight_day: date | None = None) -> str:
    """Alerts (top panel) and the incidents they form (bottom panel) per UTC day.

    ``alerts``, ``incidents`` and ``floods`` (flood episodes that started that day) are aligned to
    ``days``; ``None`` means no alert data for the day (drawn as "no data", not as zero). Days with
    a flood episode get orange alert bars; each incident bar is labelled with its count and the
    compression ratio (alerts per incident). Two panels, each with its own linear scale: a flood of
    thousands of alerts must not flatten the incident counts to nothing.
    """
    n = max(len(days), 1)
    fig = Figure(figsize=(10, 4.3))
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [1.7, 1.0], "hspace": 0.12})
    xs = list(range(len(days)))
    hi = [j for j, d in enumerate(days) if d == highlight_day]
    a_max = max([v for v in alerts if _finite(v)] + [1])
    i_max = max([v for v in incidents if _finite(v)] + [1])
    for ax, vals, vmax in ((top, alerts, a_max), (bottom, incidents, i_max)):
        ax.grid(axis="y", color=_GRID, linewidth=0.8)
        ax.set_axisbelow(True)
        ax.set_ylim(0, vmax * (1.32 if ax is top else 1.6))
        _whole_number_axis(ax.yaxis)
        ax.yaxis.get_major_locator().set_params(integer=True, nbins=4)
        for j in hi:
            ax.axvspan(j - 0.5, j + 0.5, color="#fff3e0" if ax is top else "#eef1f4", zorder=0, linewidth=0)
        for x, v in zip(xs, vals):
            if not _finite(v):
                ax.text(x, vmax * 0.04, "no\ndata", ha="center", va="bottom", fontsize=7.5, color="#90a4ae",
                        style="italic")
    for x, v, fl in zip(xs, alerts, floods):
        if not _finite(v):
            continue
        flood = _finite(fl) and fl > 0  # type: ignore[operator]
        top.bar(x, v, width=0.72, color=_FLOOD_BAR if flood else _ALERT_BAR,
                edgecolor=_INK if x in hi else "none", linewidth=1.2)
        top.text(x, v + a_max * 0.025, f"{v:,.0f}", ha="center", va="bottom", fontsize=8.5,
                 fontweight="bold" if x in hi else "normal")
    for x, v, a in zip(xs, incidents, alerts):
        if not _finite(v):
            continue
        bottom.bar(x, v, width=0.72, color=_INCIDENT_BAR, edgecolor=_INK if x in hi else "none", linewidth=1.2)
        label = f"{v:,.0f}" + (f"\n×{a / v:,.1f}" if v and _finite(a) else "")
        bottom.text(x, v + i_max * 0.04, label, ha="center", va="bottom", fontsize=8, linespacing=1.0,
                    fontweight="bold" if x in hi else "normal")
    top.set_ylabel("Alerts")
    bottom.set_ylabel("Incidents")
    bottom.set_xlim(-0.6, n - 0.4)
    labels = [f"{d:%a}\n{d:%d %b}" if n <= 16 else f"{d:%d}\n{d:%a}"[:5] for d in days]
    bottom.set_xticks(xs, labels)
    bottom.tick_params(axis="x", length=0, labelsize=9 if n <= 16 else 7.5)
    for j in hi:
        bottom.get_xticklabels()[j].set_fontweight("bold")
    top.tick_params(axis="x", length=0)
    top.set_title(title)
    handles = [Patch(facecolor=_ALERT_BAR, label="alerts"),
               Patch(facecolor=_FLOOD_BAR, label="alerts, day with a flood episode"),
               Patch(facecolor=_INCIDENT_BAR, label="incidents (×: alerts per incident)")]
    bottom.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.42), ncols=3, fontsize=9.5)
    return figure_to_svg(fig)


__all__ += ["alert_daily_chart"]
