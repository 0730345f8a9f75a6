"""Find the header of an arbitrary text log (timestamps, levels, hosts, pids, program tags) and set it
aside, so that only the message is templated.

A log nobody configured for has a header whose layout is the same on every line but differs from
log to log (Loghub's ``log_format``: ``<Date> <Time> <Pid> <Level> <Component>: <Content>``,
``[<Time>] [<Level>] <Content>``, ``<Time>|<Component>|<Pid>|<Content>`` ...). Templating the whole
line lets the header's constant words (host, level, program) weigh in the message similarity and
its varying words (component, thread) split groups, so the header is learned per file, from the
file itself, with no per-log setting:

1. every line of a sample is cut into *fields* (whitespace- or ``|``-separated; a bracketed group
   ``[...]``/``(...)`` is one field even with spaces inside) and each field gets a *kind* from its
   shape: ``V`` value (holds a digit: dates, times, pids, numeric ids, host names with digits;
   month and weekday names), ``L`` level word, ``B`` bracketed group, ``T`` tag (ends in ``:``,
   ``sshd[42]:``, ``org.apache.Foo:``), ``W`` any other word;
2. a line may end its header after field *c* when that field is a value, level, bracket or tag, or
   is followed by a strong separator (``|``, `` - ``); a tag or a strong separator *terminates* a
   header (``name[pid]:``, ``chrome.exe -``), the others merely may;
3. the header is the kinds of fields ``0..c`` that the most lines share: among the cuts that at
   least ``min_support`` of the sampled lines share (position constant across the file), a
   terminating one wins over a non-terminating one, then the longer wins. A message's own
   leading words rarely reach that share, because a log holds many events; a tag may be preceded
   by up to two optional fields (``host prog[pid] (addr):`` next to ``host prog[pid]:``);
4. the header is turned into one anchored Rust regex, and every line of the file is split with it
   in one vectorized Polars pass; a line it does not match (a stack-trace continuation, a line
   from another writer) keeps its whole text as its message.

Learning looks at a sample of at most ``sample_lines`` lines (spread evenly over the file) with
Python ``re``: that is a few milliseconds whatever the file's size; the split itself is Polars.

>>> lines = pl.Series(["2015-10-18 18:01:47,978 INFO [main] org.apache.App: Created app 7",
...                    "2015-10-18 18:01:48,963 WARN [main] org.apache.Rpc: Retrying connect"] * 5)
>>> split_header(lines)["message"].head(2).to_list()
['Created app 7', 'Retrying connect']
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

import polars as pl

__all__ = ["DEFAULT_MIN_SUPPORT", "End", "HeaderLayout", "detect_header", "split_header"]

#: Share of the sampled lines that must have a header of the same layout. Between 0.8 and 0.95
#: every Loghub-2k log gets the same header (``benchmarks/bench_loghub.py --whole-lines``); lower,
#: a frequent event's first words join the header, higher, a few odd lines block it.
DEFAULT_MIN_SUPPORT = 0.9
#: How many leading fields a header may have (BGL, the longest of Loghub's, has nine).
MAX_FIELDS = 12
#: Lines sampled to learn the layout.
SAMPLE_LINES = 4096
#: Optional fields allowed just before a terminating tag.
TAG_EXTRAS = 2

# Rust-regex and Python-re compatible pieces (no look-around). A field is a run of bracketed groups
# (one nesting level: ``[QuorumPeer[myid=1]/0:0@774]``) and other non-space, non-``|`` characters.
_BRACKET = r"(?:\[(?:[^\[\]]|\[[^\[\]]*\])*\]|\((?:[^()]|\([^()]*\))*\))"
_FIELD = rf"(?:{_BRACKET}|[^\s|])+"
_STRONG_SEP = r"\s*\|\s*|\s+-(?:\s+|$)"
_SEP = rf"(?:{_STRONG_SEP}|\s+|$)"
_MONTHS_DAYS = r"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?"
_LEVELS = (
    r"(?i:trace|debug|fine|finer|finest|verbose|info|notice|warn|warning|error|err|severe|"
    r"critical|crit|alert|emerg|emergency|fatal|panic)"
)

_FIELD_SEP_RE = re.compile(rf"({_FIELD})({_SEP})")
_BRACKET_RE = re.compile(_BRACKET)
_LEVEL_RE = re.compile(_LEVELS)
_MONTH_DAY_RE = re.compile(_MONTHS_DAYS)
_VALUE_RE = re.compile(r"[\w.:/,+\-]*\d[\w.:/,+\-]*")
_STRONG_SEP_RE = re.compile(_STRONG_SEP)

#: Per kind, the regex a field of that kind must match when the layout is applied. Looser than
#: the shapes that learn the layout: a value must hold a digit (so that a line without a header
#: does not match), but a level slot takes any word (BGL's ``FAILURE``, a ``[notice]``).
_APPLY = {
    "V": rf"(?:{_MONTHS_DAYS}|[^\s|]*\d[^\s|]*)",
    "L": _FIELD,
    "B": _BRACKET,
    "W": _FIELD,
    "T": rf"{_FIELD}:",
}

#: Kinds after which a header may end.
_MAY_END = frozenset("VLBT")


def _kind(field: str) -> str:
    """The shape of one header field: ``V``, ``L``, ``B``, ``T`` or ``W`` (see the module doc)."""
    if len(field) > 1 and field.endswith(":"):
        return "T"
    if _BRACKET_RE.fullmatch(field):
        return "B"
    if _LEVEL_RE.fullmatch(field):
        return "L"
    if _MONTH_DAY_RE.fullmatch(field) or _VALUE_RE.fullmatch(field):
        return "V"
    return "W"


#: How a header ends: in a tag (after up to :data:`TAG_EXTRAS` optional fields), before a strong
#: separator, or after a value, level or bracket with a plain space after it.
End = Literal["tag", "sep", "field"]


@dataclass(frozen=True, slots=True)
class HeaderLayout:
    """A learned header: the kinds of its fields, how it ends (a ``tag`` such as ``name[pid]:`` is
    not in ``kinds``; it may follow up to :data:`TAG_EXTRAS` optional fields), and the share of
    sampled lines that have it.
    """

    kinds: tuple[str, ...]
    end: End
    support: float

    def pattern(self) -> str:
        """An anchored Rust regex matching the header and the separator after it."""
        # The first field keeps its shape (a line without the header, a stack-trace continuation,
        # does not start with the header's timestamp); later values may be words on a few lines
        # (HPC's node column reads ``full`` on some), so only brackets stay strict there.
        body = "".join(
            f"{_APPLY[k] if i == 0 or k == 'B' else _FIELD}{_SEP}" for i, k in enumerate(self.kinds)
        )
        extras = rf"(?:{_FIELD}{_SEP}){{0,{TAG_EXTRAS}}}?"
        if self.end == "tag":
            body += rf"{extras}{_APPLY['T']}{_SEP}"
        elif self.end == "sep":
            body += rf"{extras}{_FIELD}(?:{_STRONG_SEP})"
        return f"^{body}"

    @property
    def n_fields(self) -> int:
        """Fields in the header, the terminal one (tag, or field before a strong separator) included."""
        return len(self.kinds) + (self.end != "field")


def _cuts(line: str, max_fields: int) -> set[tuple[tuple[str, ...], End]]:
    """The header layouts one line allows, ``(kinds, end)``: one per field after which its header
    may end leaving a non-empty message (and, for a tag, one per count of optional fields)."""
    fields: list[str] = []
    seps: list[str] = []
    pos = 0
    while len(fields) <= max_fields:
        m = _FIELD_SEP_RE.match(line, pos)
        if m is None or m.end() == pos:
            break
        fields.append(m.group(1))
        seps.append(m.group(2))
        pos = m.end()
        if pos >= len(line):
            break
    kinds = [_kind(f) for f in fields]
    # In the layout a level word is a word (HPC's state column holds ``error`` on some lines,
    # ``temperature`` on others); it only matters as a place where a header may end.
    shape = ["W" if k == "L" else k for k in kinds]
    out: set[tuple[tuple[str, ...], End]] = set()
    for c in range(1, min(len(fields) - 1, max_fields) + 1):  # leave at least one field
        kind = kinds[c - 1]
        end: End | None = (
            "tag" if kind == "T"
            else "sep" if _STRONG_SEP_RE.fullmatch(seps[c - 1])
            else None
        )
        if end is not None:
            # The terminal field, after 0..TAG_EXTRAS optional fields, ends the header.
            out.update((tuple(shape[: c - 1 - j]), end) for j in range(min(TAG_EXTRAS, c - 1) + 1))
        elif kind in _MAY_END:
            out.add((tuple(shape[:c]), "field"))
    return out


def detect_header(
    lines: pl.Series,
    *,
    min_support: float = DEFAULT_MIN_SUPPORT,
    max_fields: int = MAX_FIELDS,
    sample_lines: int = SAMPLE_LINES,
) -> HeaderLayout | None:
    """The header layout shared by at least ``min_support`` of the (sampled) non-empty lines, or
    ``None`` when the lines have no common header (each line is then its own message).

    Among the qualifying layouts, one that ends in a tag or a strong separator (``:``, ``|``,
    `` - ``) wins, then the one with more fields.
    """
    if not 0.0 < min_support <= 1.0:
        raise ValueError(f"min_support must be in (0, 1], got {min_support}")
    text = lines.cast(pl.String).drop_nulls()
    text = text.filter(text.str.strip_chars() != "")
    if len(text) == 0:
        return None
    step = max(1, len(text) // sample_lines)
    sample = text.gather_every(step).head(sample_lines).to_list()
    counts: Counter[tuple[tuple[str, ...], End]] = Counter()
    for line in sample:
        counts.update(_cuts(line, max_fields))
    need = min_support * len(sample)
    layouts = [HeaderLayout(kinds, end, n / len(sample)) for (kinds, end), n in counts.items() if n >= need]
    if not layouts:
        return None
    return max(layouts, key=lambda h: (h.end != "field", h.n_fields, h.support))


def split_header(lines: pl.Series, layout: HeaderLayout | None = None, **detect: float) -> pl.DataFrame:
    """``header`` and ``message`` of every line (one row per line, in order): the header is the
    part matched by ``layout`` (learned from ``lines`` with :func:`detect_header` and ``detect``'s
    settings when not given), ``""`` on a line it does not match, whose message is the whole line.
    """
    text = lines.cast(pl.String).fill_null("")
    if layout is None:
        layout = detect_header(text, **detect)  # type: ignore[arg-type]
    if layout is None:
        return pl.DataFrame({"header": pl.repeat("", len(text), dtype=pl.String, eager=True), "message": text})
    header = text.str.extract(f"({layout.pattern()})", 1).fill_null("")
    return pl.DataFrame({"header": header, "message": text.str.slice(header.str.len_chars())})
