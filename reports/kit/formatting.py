"""Number, duration and text formatting shared by the HTML and Markdown reports.

All functions accept ``None`` (SQL NULL) and NaN and return an en dash for them, so templates
never print 'None' or 'nan'. Shares and utilisation are fractions in [0, 1] in the warehouse and
are shown as percentages with one decimal ('41.2 %').
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from gpusre.models.ingest.hostlist import compress_hostlist

__all__ = [
    "MISSING",
    "or_unknown",
    "fmt_int",
    "fmt_num",
    "fmt_pct",
    "fmt_pp",
    "fmt_p",
    "fmt_duration",
    "fmt_date",
    "plural",
    "truncate",
    "shorten",
    "md_escape",
    "days_of_data_text",
    "months_or_days_text",
]

#: Shown for NULL / NaN values.
MISSING = "–"


def _bad(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt_int(x: float | int | None) -> str:
    """Integer with thousands separators: ``1234567 -> '1,234,567'``."""
    return MISSING if _bad(x) else f"{round(float(x)):,}"  # type: ignore[arg-type]


def fmt_num(x: float | int | None, decimals: int = 1) -> str:
    """Number with thousands separators and fixed decimals: ``1234.56 -> '1,234.6'``."""
    return MISSING if _bad(x) else f"{float(x):,.{decimals}f}"  # type: ignore[arg-type]


def fmt_pct(frac: float | None, decimals: int = 1) -> str:
    """A fraction as a percentage: ``0.4123 -> '41.2 %'``."""
    return MISSING if _bad(frac) else f"{float(frac) * 100:.{decimals}f} %"  # type: ignore[arg-type]


def fmt_pp(frac: float | None, decimals: int = 2) -> str:
    """A change of a fraction in signed percentage points: ``0.0042 -> '+0.42 pp'``."""
    return MISSING if _bad(frac) else f"{float(frac) * 100:+.{decimals}f} pp"  # type: ignore[arg-type]


def fmt_p(p: float | None) -> str:
    """A p-value with 3 decimals, or '< 0.001'."""
    if _bad(p):
        return MISSING
    return "< 0.001" if float(p) < 0.001 else f"{float(p):.3f}"  # type: ignore[arg-type]


def fmt_duration(seconds: float | int | None) -> str:
    """Seconds as Slurm prints elapsed time: ``93784 -> '1-02:03:04'``, ``3723 -> '01:02:03'``."""
    if _bad(seconds):
        return MISSING
    s = max(int(seconds), 0)  # type: ignore[arg-type]
    d, rem = divmod(s, 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    hms = f"{h:02d}:{m:02d}:{sec:02d}"
    return f"{d}-{hms}" if d else hms


def fmt_date(d: date | datetime | None) -> str:
    """ISO date (dates) or 'YYYY-MM-DD HH:MM UTC' (timestamps)."""
    if d is None:
        return MISSING
    if isinstance(d, datetime):
        # Naive timestamps in the warehouse are UTC by contract; aware ones are converted.
        utc = d if d.tzinfo is None else d.astimezone(timezone.utc)
        return utc.strftime("%Y-%m-%d %H:%M UTC")
    return d.isoformat()


def plural(n: int | float | None, word: str, plural_form: str | None = None) -> str:
    """'1 file', '3 files', '2 indices' (``plural_form``) with thousands separators."""
    return f"{fmt_int(n)} {word if n == 1 else (plural_form or word + 's')}"


def jobs_and_requeued_runs(jobs: int | None, runs: int | None, word: str = "job") -> str:
    """'13 jobs + 1 requeued run' (runs beyond the jobs are earlier runs of requeued jobs, e.g. a NODE_FAIL
    Slurm ran again), '3 jobs' when none was requeued: the one wording every report gives the infrastructure's
    victims, so a count of 14 runs never reads as 14 failed jobs beside a '13 + 1' elsewhere."""
    requeued = (runs or 0) - (jobs or 0)
    return plural(jobs or 0, word) + (f" + {plural(requeued, 'requeued run')}" if requeued > 0 else "")


def truncate(text: object, max_len: int) -> str:
    """Text cut to ``max_len`` characters with an ellipsis; control characters become spaces."""
    s = "" if text is None else str(text)
    s = "".join(ch if ch.isprintable() else " " for ch in s)
    return s if len(s) <= max_len else s[: max_len - 1] + "…"


def _is_identifier(token: str) -> bool:
    """A word truncation must not cut: it holds a digit or a hostlist bracket, joins words with '_', or
    has a capital past its first letter — a state or a product name (``leaf05``, ``gpu[0065-0080]``,
    ``2026-11-24``, ``03:08``, ``ib_link_down``, ``DRAIN``, ``NVLink``)."""
    return any(ch.isdigit() or ch in "[]_" for ch in token) or any(ch.isupper() for ch in token[1:])


def shorten(text: object, max_len: int, *, keep_head: bool = False) -> str:
    """Text within ``max_len`` characters by dropping whole prose words from its middle outwards (one
    ``…`` per dropped run); words holding an identifier (:func:`_is_identifier`: a switch, node,
    hostlist, code or timestamp) and words carrying a quote or parenthesis are never dropped or cut —
    "Interconnect switch failure under leaf05" keeps ``leaf05``, a drain reason keeps its time. When
    only identifiers are left the text stays longer than ``max_len`` (the cell's title has it whole).
    A word followed by a number belongs to it ("Xid 79"). ``keep_head``: drop the last prose words
    first instead (a reason's first words name the fault)."""
    s = truncate(text, 10**9)
    if len(s) <= max_len:
        return s
    words = s.split(" ")
    keep = [True] * len(words)
    mid = (len(words) - 1) / 2
    # Words inside a quotation (a drain reason) go first: the frame around it ("since") reads the time.
    quoted, inside = [], False
    for w in words:
        quoted.append(inside)
        inside ^= sum(w.count(q) for q in '"“”') % 2 == 1
    # A word naming the number after it ("Xid 79", "port 1") is part of that identifier.
    labels = {i for i in range(len(words) - 1) if words[i + 1].strip("\"'“”‘’(),;:.").isdigit()}
    droppable = sorted((i for i, w in enumerate(words)
                        if w and i not in labels and not _is_identifier(w)
                        and not any(ch in "\"'“”‘’()" for ch in w)),
                       key=lambda i: (not quoted[i], -i if keep_head else abs(i - mid), i))

    def joined() -> str:
        out: list[str] = []
        for i, w in enumerate(words):
            if keep[i]:
                out.append(w)
            elif not out or out[-1] != "…":
                out.append("…")
        return " ".join(out)

    for i in droppable:
        keep[i] = False
        if len(joined()) <= max_len:
            break
    return joined()


def days_of_data_text(days: int, first: date | None, last: date | None) -> str:
    """'the last 28 days', or what the data covers when it holds fewer days than that window:
    'the 7 days of data, 2026-11-18 … 2026-11-24, of a 28-day window' — a period labelled beyond the
    data claims quiet days nobody observed."""
    if first is None or last is None or (last - first).days + 1 >= days:
        return f"the last {days} days"
    n = (last - first).days + 1
    return (f"the {plural(n, 'day')} of data, {period_text(fmt_date(first), fmt_date(last))}, "
            f"of a {days}-day window")


def months_or_days_text(first_month: str | None, last_month: str | None, first: date | None,
                        last: date | None) -> str:
    """A period of monthly mart rows named no wider than the data: '2026-09 … 2026-10' when the data
    (``first`` … ``last``, its first and last day) covers those months whole, else the days it covers in
    them ('2026-11-18 … 2026-11-24'); 'the whole period' without months. "In 2026-11" of a week's data
    would claim 23 quiet days nobody observed."""
    if not first_month:
        return "the whole period"
    start = date.fromisoformat(f"{first_month}-01")
    y, m = (int(x) for x in str(last_month or first_month).split("-")[:2])
    end = date(y + m // 12, m % 12 + 1, 1) - timedelta(days=1)
    if first is None or (first <= start and (last or start) >= end):
        return period_text(first_month, last_month or first_month)
    return period_text(fmt_date(max(start, first)), fmt_date(min(end, last or end)))


def md_escape(value: object) -> str:
    """Escape a value for a Markdown table cell or paragraph.

    ``&``, ``<`` and ``>`` become entities (many wiki renderers and Slack pass raw HTML through or
    treat them specially), ``|`` is escaped so table cells cannot split, ``](`` is broken so untrusted
    text cannot become a link or an image (hostlists like ``gpu[001-004]`` stay readable), newlines
    become spaces.
    """
    s = "" if value is None else str(value)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = s.replace("|", r"\|").replace("](", r"]\(")
    s = s.replace("\r", " ").replace("\n", " ")
    return s


def p_phrase(p: float | None) -> str:
    """'p < 0.001' or 'p = 0.034'."""
    txt = fmt_p(p)
    return f"p {txt}" if txt.startswith("<") else f"p = {txt}"


def sentence_case(text: str) -> str:
    """Capitalise the first character only ('single-GPU' -> 'Single-GPU', not 'Single-gpu')."""
    return text[:1].upper() + text[1:]


def period_text(first: str | None, last: str | None) -> str:
    if not first:
        return MISSING
    return first if first == last else f"{first} … {last}"


def gpuh(x: float | None) -> str:
    """GPU-hours in a sentence: whole hours from 100 up ('2,310'), one decimal below ('7.5')."""
    return fmt_num(x, 0 if x is not None and abs(x) >= 100 else 1)


def nodes_text(nodes: Sequence[str] | None) -> str:
    if not nodes:
        return MISSING
    try:
        return compress_hostlist(nodes)
    except ValueError:  # names that do not fit the hostlist grammar: list them as they are
        return ",".join(nodes)


def hours_text(h: float | None) -> str:
    """Hours in a sentence: '3.5 h', '1,234 h'."""
    return MISSING if h is None else f"{gpuh(h)} h"


def utc_date(ts: datetime | None) -> date | None:
    """The UTC calendar day of a warehouse timestamp."""
    if ts is None:
        return None
    return (ts if ts.tzinfo is None else ts.astimezone(timezone.utc)).date()


def share(num: float, den: float) -> float | None:
    return num / den if den else None


def utc_hm(ts: datetime | None) -> str:
    """'HH:MM' of a warehouse timestamp in UTC."""
    return MISSING if ts is None else (ts if ts.tzinfo is None else ts.astimezone(timezone.utc)).strftime("%H:%M")


def ratio_text(x: float | None) -> str:
    """An alerts-per-incident ratio: '3.4'."""
    return fmt_num(x, 1)


def count_phrase(counts: Sequence[tuple[str, int]]) -> str:
    """'5 node, 2 leaf switch and 1 storage'."""
    parts = [f"{fmt_int(n)} {label}" for label, n in counts]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" and {parts[-1]}"


def is_number(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def hours_number(x: float | None) -> str:
    """Hours without unit, with precision that suits the magnitude: 3,538 / 412 / 57.4 / 1.97 / 0.25."""
    if not is_number(x):
        return MISSING
    x = float(x)  # type: ignore[arg-type]
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def fmt_hours(x: float | None) -> str:
    return MISSING if not is_number(x) else f"{hours_number(x)} h"


def fmt_ci(lo: float | None, hi: float | None, unit: str = " h", fmt: Callable[[float | None], str] = hours_number) -> str:
    if not is_number(lo) and not is_number(hi):
        return MISSING
    if not is_number(hi):
        return f"≥ {fmt(lo)}{unit}"
    return f"{fmt(lo)}–{fmt(hi)}{unit}"


def lower_first(label: str) -> str:
    """Lower-case a label's first letter for use inside a sentence, keeping acronyms ('ETTR of ...')."""
    first = label.split(" ", 1)[0]
    return label if first.isupper() or (len(first) > 1 and first[1].isupper()) else label[:1].lower() + label[1:]


def fmt_span(seconds: float | None) -> str:
    """The one duration formatter of the reports, with the unit that suits the length: '45 s',
    '12 min', '3.4 h', '2.1 days' — never '0.0 h' for a sub-hour duration."""
    if not is_number(seconds):
        return MISSING
    s = abs(float(seconds))  # type: ignore[arg-type]
    if s < 90:
        return f"{_half_up(s, 0)} s"
    if s < 5400:
        return f"{_half_up(s / 60, 0)} min"
    if s < 172800:
        return f"{_half_up(s / 3600, 1)} h"
    return f"{_half_up(s / 86400, 1)} days"


def _half_up(x: float, decimals: int) -> str:
    """``x`` with ``decimals`` decimals, a half rounded up as a reader rounds (a 0.075 h detect time, 4.5 min,
    is '5 min'), not to even as Python's format does ('4 min'); the float noise of a unit conversion
    (269.99999999999997 s for 0.075 h) is rounded off first, so it cannot tip a half down.

    >>> _half_up(4.5, 0), _half_up(2.5, 0), _half_up(3.45, 1), _half_up(269.99999999999997 / 60, 0)
    ('5', '3', '3.5', '5')
    """
    exact = Decimal(repr(round(x, 9)))
    return f"{exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP):f}"


def span_hours(h: float | None) -> str:
    """A duration given in hours, formatted by :func:`fmt_span`: 0.02 -> '1 min', 37.5 -> '37.5 h'."""
    return MISSING if not is_number(h) else fmt_span(float(h) * 3600)  # type: ignore[arg-type]


def or_unknown(value: Any, fmt: Callable[[Any], str]) -> str:
    """``fmt(value)``, or "unknown" for a mart's NULL that means unknown (job impact without Slurm
    accounting), never 0 or a dash."""
    return "unknown" if value is None else fmt(value)
