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
   shape: ``V`` value (holds a digit: dates, times, pids, numeric ids, host names with digits,
   ``<6>[  201.65]``; month and weekday names), ``L`` level word, ``B`` bracketed group, ``T``
   tag (ends in ``:``, ``sshd[42]:``, ``org.apache.Foo:``), ``W`` any other word;
2. a line may end its header after field *c* when that field is a value, level, bracket or tag, or
   is followed by a strong separator (``|``, `` - ``); a tag or a strong separator *terminates* a
   header (``name[pid]:``, ``chrome.exe -``), the others merely may;
3. the header is the kinds of fields ``0..c`` that the most lines share: among the cuts that at
   least ``min_support`` of the sampled lines share (position constant across the file), a
   terminating one wins over a non-terminating one, then the longer wins. A message's own
   leading words rarely reach that share, because a log holds many events; a tag or a strong
   separator may follow up to two optional fields (``host prog[pid] (addr):`` next to
   ``host prog[pid]:``, ``svchost.exe *64 -`` next to ``chrome.exe -``);
4. the header is turned into one anchored Rust regex, and every line of the file is split with it
   in one vectorized Polars pass; a line it does not match (a stack-trace continuation, a line
   from another writer) keeps its whole text as its message. The regex checks the first field's
   shape (a line without the header does not start with its timestamp), brackets and the final
   tag or separator; other fields may be any field (a node column that reads ``full`` on a few
   lines, a level column with a word no list has).

Learning looks at a sample of at most :data:`SAMPLE_LINES` lines spread evenly over the file,
deduplicated on their digit-canonical form, and classifies fields with Polars expressions; only
the few distinct sequences of field kinds are cut in Python. Lines that start with a blank
(continuations) are left out of the count. Learning costs ~10-100 ms whatever the file's size.

>>> lines = pl.Series(["2015-10-18 18:01:47,978 INFO [main] org.apache.App: Created app 7",
...                    "2015-10-18 18:01:48,963 WARN [main] org.apache.Rpc: Retrying connect"] * 5)
>>> split_header(lines)["message"].head(2).to_list()
['Created app 7', 'Retrying connect']
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

import polars as pl

from gpusre.models.logs.masking import canonical_digits

__all__ = ["DEFAULT_MIN_SUPPORT", "End", "HeaderLayout", "detect_header", "split_header"]

#: Share of the sampled lines that must have a header of the same layout. Between 0.7 and 0.95
#: every line of every Loghub-2k log is split the same way (``benchmarks/bench_loghub.py --whole-lines``); lower,
#: a frequent event's first words join the header, higher, a few odd lines block it.
DEFAULT_MIN_SUPPORT = 0.9
#: How many leading fields a header may have (BGL, the longest of Loghub's, has nine).
MAX_FIELDS = 12
#: Lines sampled to learn the layout.
SAMPLE_LINES = 4096
#: Optional fields allowed just before a terminating tag or strong separator.
TAG_EXTRAS = 2

# Rust-regex pieces (no look-around). A field is a run of bracketed groups
# (one nesting level: ``[QuorumPeer[myid=1]/0:0@774]``) and other non-space, non-``|`` characters.
_BRACKET = r"(?:\[(?:[^\[\]]|\[[^\[\]]*\])*\]|\((?:[^()]|\([^()]*\))*\))"
# Plain characters are taken in runs (per-character alternation is slow in both engines).
_FIELD = rf"(?:[^\s|\[(]+|{_BRACKET}|[\[(])+"
_STRONG_SEP = r"\s*\|\s*|\s+-(?:\s+|$)"
_SEP = rf"(?:{_STRONG_SEP}|\s+|$)"
_MONTHS_DAYS = (
    r"(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t|tember)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|mon(?:day)?|tue(?:s|sday)?|wed(?:nesday)?|thu(?:rs|rsday)?|"
    r"fri(?:day)?|sat(?:urday)?|sun(?:day)?)\.?"
)
_LEVELS = (
    r"(?i:trace|debug|fine|finer|finest|verbose|info|notice|warn|warning|error|err|severe|"
    r"critical|crit|alert|emerg|emergency|fatal|panic)"
)

_FIELD_SEP = rf"{_FIELD}{_SEP}"
# A syslog priority may lead a value (``<6>[  201.650687]``, the kernel's ``dmesg -r``).
_PRIORITY = r"<\d{1,3}>"
# A value's characters; that it holds a digit is tested apart (``[...]*\d[...]*`` in one regex
# would backtrack on a long field in engines that backtrack).
_VALUE = rf"^(?:{_PRIORITY}{_BRACKET}|[\w.:/,+\-<>]+)$"

#: Per kind, the regex the header's first field must match when the layout is applied (later
#: fields: see :meth:`HeaderLayout.pattern`). A layout has no ``L``: a level word counts as a word.
_APPLY = {
    "V": rf"(?:{_MONTHS_DAYS}|{_PRIORITY}{_BRACKET}|[^\s|]*\d[^\s|]*)",
    "B": _BRACKET,
    "W": _FIELD,
    "T": rf"{_FIELD}:",
}

#: Kinds after which a header may end.
_MAY_END = frozenset("VLBT")


def _kind_expr(field: pl.Expr) -> pl.Expr:
    """The shape of each header field: ``V``, ``L``, ``B``, ``T`` or ``W`` (see the module doc)."""
    return (
        pl.when(field.str.contains(r"^.+:$")).then(pl.lit("T"))
        .when(field.str.contains(rf"^{_BRACKET}$")).then(pl.lit("B"))
        .when(field.str.contains(rf"^{_LEVELS}$")).then(pl.lit("L"))
        .when(field.str.contains(rf"^{_MONTHS_DAYS}$") | (field.str.contains(r"\d") & field.str.contains(_VALUE)))
        .then(pl.lit("V"))
        .otherwise(pl.lit("W"))
    )


def _field_kinds(forms: pl.Series, max_fields: int) -> pl.DataFrame:
    """Per line, the kinds of its first ``max_fields + 1`` fields (``kinds``, one letter each)
    and whether a strong separator (``|``, `` - ``) follows each (``strong``, ``1``/``0``), in
    one vectorized pass. A line starting with a blank has no fields (it continues a line above).
    """
    tokens = pl.when(pl.col("line").str.contains(r"^[^\s|]")).then(
        pl.col("line").str.extract_all(_FIELD_SEP).list.head(max_fields + 1)
    )  # (detect_header leaves such lines out before; the guard keeps this function honest alone)
    field = pl.col("token").str.extract(f"^({_FIELD})", 1)
    exploded = (
        pl.DataFrame({"line": forms})
        .with_row_index("row")
        .with_columns(tokens.alias("token"))
        .explode("token")
        .with_columns(field.alias("field"))
        .with_columns(
            pl.when(pl.col("field").is_not_null()).then(_kind_expr(pl.col("field"))).alias("kind"),
            pl.col("token").str.slice(pl.col("field").str.len_chars())
            .str.contains(f"^(?:{_STRONG_SEP})$").cast(pl.UInt8).cast(pl.String).alias("strong"),
        )
    )
    return (
        exploded.group_by("row", maintain_order=True)
        .agg(pl.col("kind").drop_nulls().str.join("").alias("kinds"), pl.col("strong").drop_nulls().str.join(""))
        .sort("row")
        .drop("row")
    )


#: How a header ends: in a tag (after up to :data:`TAG_EXTRAS` optional fields), before a strong
#: separator, or after a value, level or bracket with a plain space after it.
End = Literal["tag", "sep", "field"]


@dataclass(frozen=True, slots=True)
class HeaderLayout:
    """A learned header: the kinds of its fields (``V``, ``B``, ``W``), how it ends, and the share
    of sampled lines that have it. When it ends in a ``tag`` (``name[pid]:``) or a ``sep`` (a field
    then ``|`` or `` - ``), that terminal field is not in ``kinds`` and may follow up to
    :data:`TAG_EXTRAS` optional fields.
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


def _fields(line: str, max_fields: int, kind_of: dict[str, str]) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """The kinds of a line's first ``max_fields + 1`` fields, and per field whether a strong
    separator (``|``, `` - ``) follows it. ``kind_of`` caches :func:`_kind` (a log repeats its
    hosts, levels and components on every line)."""
    kinds: list[str] = []
    strong: list[bool] = []
    pos = 0
    while len(kinds) <= max_fields and pos < len(line):
        m = _FIELD_SEP_RE.match(line, pos)
        if m is None or m.end() == pos:
            break
        field = m.group(1)
        kind = kind_of.get(field)
        if kind is None:
            kind = kind_of[field] = _kind(field)
        kinds.append(kind)
        strong.append(_STRONG_SEP_RE.fullmatch(m.group(2)) is not None)
        pos = m.end()
    return tuple(kinds), tuple(strong)


def _cuts(kinds: str, strong: str) -> frozenset[tuple[tuple[str, ...], End]]:
    """The header layouts a line of these field kinds allows, ``(kinds, end)``: one per field
    after which its header may end leaving a non-empty message (and, before a tag or a strong
    separator, one per count of optional fields)."""
    # In the layout a level word is a word (HPC's state column holds ``error`` on some lines,
    # ``temperature`` on others); it only matters as a place where a header may end.
    shape = tuple("W" if k == "L" else k for k in kinds)
    out: set[tuple[tuple[str, ...], End]] = set()
    for c in range(1, len(kinds)):  # leave at least one field
        kind = kinds[c - 1]
        end: End | None = "tag" if kind == "T" else "sep" if strong[c - 1] == "1" else None
        if end is not None:
            # The terminal field, after 0..TAG_EXTRAS optional fields, ends the header.
            out.update((shape[: c - 1 - j], end) for j in range(min(TAG_EXTRAS, c - 1) + 1))
        elif kind in _MAY_END:
            out.add((shape[:c], "field"))
    return frozenset(out)


def detect_header(
    lines: pl.Series,
    *,
    min_support: float = DEFAULT_MIN_SUPPORT,
    max_fields: int = MAX_FIELDS,
    sample_lines: int = SAMPLE_LINES,
) -> HeaderLayout | None:
    """The header layout shared by at least ``min_support`` of the (sampled) lines that do not
    start with a blank, or ``None`` when they have no common header (each line is then its own
    message).

    Among the qualifying layouts, one that ends in a tag or a strong separator (``:``, ``|``,
    `` - ``) wins, then the one with more fields.
    """
    if not 0.0 < min_support <= 1.0:
        raise ValueError(f"min_support must be in (0, 1], got {min_support}")
    text = lines.cast(pl.String).drop_nulls()
    # A line starting with a blank continues the one above (a stack trace's ``\tat ...``): it has
    # no header of its own, and a log with long traces must not lose its header for them.
    text = text.filter(text.str.contains(r"^[^\s|]"))
    if len(text) == 0:
        return None
    step = max(1, len(text) // sample_lines)
    sample = text.gather_every(step).head(sample_lines)
    # Field kinds do not depend on which digits a line holds, so lines equal but for their digits
    # (most of a log: same event, other time) are looked at once and counted with their number.
    forms = canonical_digits(sample).alias("line").value_counts(name="n")
    # A log has few distinct sequences of field kinds: count lines per sequence, then cut each once.
    sequences = (
        _field_kinds(forms["line"], max_fields)
        .with_columns(forms["n"])
        .group_by("kinds", "strong")
        .agg(pl.col("n").sum())
    )
    counts: Counter[tuple[tuple[str, ...], End]] = Counter()
    for kinds, strong, n in sequences.iter_rows():
        for cut in _cuts(kinds, strong):
            counts[cut] += n
    # The share is of all sampled lines. Counting only the lines that start like most lines do
    # would keep a header for logs whose messages run over unindented lines, but on a message
    # column it let one frequent event (OpenStack's ``<ip> "GET ..." status: ...``, 52 % of its
    # lines, all those that start with a value) pass for a header.
    total = len(sample)
    need = min_support * total
    layouts = [HeaderLayout(kinds, end, n / total) for (kinds, end), n in counts.items() if n >= need]
    if not layouts:
        return None
    return max(layouts, key=lambda h: (h.end != "field", h.n_fields, h.support))


def split_header(
    lines: pl.Series, layout: HeaderLayout | None = None, *, min_support: float = DEFAULT_MIN_SUPPORT
) -> pl.DataFrame:
    """``header`` and ``message`` of every line (one row per line, in order): the header is the
    part matched by ``layout`` (learned from ``lines`` by :func:`detect_header` with
    ``min_support`` when not given), ``""`` on a line it does not match, whose message is then
    the whole line.
    """
    text = lines.cast(pl.String).fill_null("")
    if layout is None:
        layout = detect_header(text, min_support=min_support)
    if layout is None:
        return pl.DataFrame({"header": pl.repeat("", len(text), dtype=pl.String, eager=True), "message": text})
    # A replace needs only where the match ends, which the regex engine finds ~10x faster than
    # the capture an extract asks for.
    message = text.str.replace(layout.pattern(), "")
    header = text.str.slice(0, text.str.len_chars() - message.str.len_chars())
    return pl.DataFrame({"header": header, "message": message})
