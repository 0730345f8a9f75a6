"""Slurm hostlist expressions: ``gpu[001-004,010]`` <-> ``['gpu001', ..., 'gpu010']``.

Slurm prints node sets compressed (``NodeList`` in sacct, ``nodes`` in slurmrestd JSON). The
grammar handled here is the one Slurm itself emits and accepts:

* comma-separated items at top level (commas inside brackets do not split),
* each item may hold several bracket groups (``rack[1-2]-node[01-04]``, cartesian product),
* a bracket holds comma-separated numbers or ``lo-hi`` ranges; zero padding of ``lo`` is kept,
* ``None assigned`` / ``(null)`` / empty means no nodes.

>>> expand_hostlist("gpu[001-003,010]")
['gpu001', 'gpu002', 'gpu003', 'gpu010']
>>> expand_hostlist("d09n04s[01-02],d13n[03,05]")
['d09n04s01', 'd09n04s02', 'd13n03', 'd13n05']
>>> compress_hostlist(["gpu001", "gpu002", "gpu003", "gpu010"])
'gpu[001-003,010]'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from itertools import product

import polars as pl

__all__ = ["HostlistError", "expand_hostlist", "expand_hostlists", "compress_hostlist", "EMPTY_HOSTLISTS"]

#: Values Slurm prints when a job has no nodes (pending, or cancelled before start).
EMPTY_HOSTLISTS: frozenset[str] = frozenset({"", "None assigned", "(null)", "None", "Unknown"})

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")
#: Guard against a typo such as ``n[1-999999999]`` exhausting memory.
MAX_RANGE = 1_000_000


class HostlistError(ValueError):
    """A hostlist expression that Slurm would not accept (unbalanced brackets, bad range)."""


def _split_top_level(expr: str) -> list[str]:
    items: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(expr):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested '[' in hostlist {expr!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in hostlist {expr!r}")
        elif ch == "," and depth == 0:
            items.append(expr[start:i])
            start = i + 1
    if depth != 0:
        raise HostlistError(f"unbalanced '[' in hostlist {expr!r}")
    items.append(expr[start:])
    return [item.strip() for item in items if item.strip()]


def _expand_bracket(body: str, expr: str) -> list[str]:
    out: list[str] = []
    for part in body.split(","):
        part = part.strip()
        m = _RANGE.match(part)
        if not m:
            raise HostlistError(f"bad range {part!r} in hostlist {expr!r}")
        lo_text, hi_text = m.group(1), m.group(2)
        if hi_text is None:
            out.append(lo_text)
            continue
        lo, hi = int(lo_text), int(hi_text)
        if hi < lo:
            raise HostlistError(f"descending range {part!r} in hostlist {expr!r}")
        if hi - lo >= MAX_RANGE:
            raise HostlistError(f"range {part!r} too large in hostlist {expr!r}")
        width = len(lo_text)
        out.extend(str(n).zfill(width) for n in range(lo, hi + 1))
    return out


def _expand_item(item: str, expr: str) -> list[str]:
    if "[" not in item:
        if "]" in item:
            raise HostlistError(f"unbalanced ']' in hostlist {expr!r}")
        return [item]
    # Split into literal text and bracket bodies: 'a[1-2]b[3]' -> ['a', '1-2', 'b', '3', '']
    pieces = re.split(r"\[([^\]]*)\]", item)
    choices: list[list[str]] = []
    for idx, piece in enumerate(pieces):
        if idx % 2 == 0:
            if "[" in piece or "]" in piece:
                raise HostlistError(f"unbalanced brackets in hostlist {expr!r}")
            choices.append([piece])
        else:
            choices.append(_expand_bracket(piece, expr))
    return ["".join(parts) for parts in product(*choices)]


@lru_cache(maxsize=262_144)
def _expand_cached(expr: str) -> tuple[str, ...]:
    names: list[str] = []
    for item in _split_top_level(expr):
        names.extend(_expand_item(item, expr))
    return tuple(names)


def expand_hostlist(expr: str | None) -> list[str]:
    """Expand a Slurm hostlist expression into node names, in Slurm's order.

    Raises :class:`HostlistError` on malformed input. ``None assigned`` and empty give ``[]``.
    Results are cached: sacct repeats the same hostlist for every step of a job.
    """
    if expr is None:
        return []
    expr = expr.strip()
    if expr in EMPTY_HOSTLISTS:
        return []
    return list(_expand_cached(expr))


#: The forms a GPU cluster's sacct prints for nearly every job, expanded by Polars in
#: :func:`expand_hostlists`: names without brackets (``gpu0001``, ``a,b``), and one prefix with one
#: bracket of numbers and ranges (``gpu[0001-0004,0010]``). Anything else goes through
#: :func:`expand_hostlist`, which also raises for what is malformed.
_NO_BRACKETS = r"^[^\[\]]*$"
_ONE_BRACKET = r"^([^\[\],]*)\[((?:\d{1,18}(?:-\d{1,18})?,)*\d{1,18}(?:-\d{1,18})?)\]$"


def _expand_or_error(expr: str) -> tuple[list[str] | None, str | None]:
    """(names, None), or (None, why) when ``expr`` is malformed."""
    try:
        return expand_hostlist(expr), None
    except HostlistError as exc:
        return None, str(exc)


def expand_hostlists(values: pl.Series, *, out: str = "nodes") -> pl.DataFrame:
    """:func:`expand_hostlist` of every distinct non-null value of ``values``, as a frame of
    ``values.name`` (the value), ``out`` (its node names, null when malformed) and ``out + '_err'``
    (why it is malformed, else null), to left-join on the value.

    A year of sacct dumps has ~27,000 distinct hostlists standing for 1.3 M names; expanding them
    one by one in Python cost ~1 s of the parse, so the common forms are expanded in Polars.
    """
    key = values.name
    keys = values.cast(pl.String).drop_nulls().unique()
    text = keys.str.strip_chars()
    frame = pl.DataFrame({key: keys, "_text": text}).with_row_index("_k")
    empty = pl.col("_text").is_in(list(EMPTY_HOSTLISTS))
    plain = (frame.filter(~empty & pl.col("_text").str.contains(_NO_BRACKETS))
             .select("_k", pl.col("_text").str.split(",").alias("_name")).explode("_name")
             .with_columns(pl.col("_name").str.strip_chars()).filter(pl.col("_name") != "")
             .select("_k", "_name"))
    # One regex pass: a value that does not match has a null body.
    parts = (frame.filter(~empty)
             .select("_k", pl.col("_text").str.extract_groups(_ONE_BRACKET).alias("_g")).unnest("_g")
             .filter(pl.col("2").is_not_null())
             .select("_k", pl.col("1").alias("_prefix"), pl.col("2").str.split(",").alias("_part"))
             .explode("_part")
             .with_columns(pl.col("_part").str.split_exact("-", 1).struct.rename_fields(["_lo", "_hi"]))
             .unnest("_part")
             .with_columns(pl.col("_lo").str.len_chars().alias("_width"), pl.col("_lo").cast(pl.Int64).alias("_lo_n"),
                           pl.coalesce(pl.col("_hi"), pl.col("_lo")).cast(pl.Int64).alias("_hi_n")))
    # A descending or oversized range is malformed: the whole value goes to expand_hostlist, which says why.
    bad = parts.filter((pl.col("_hi_n") < pl.col("_lo_n")) | (pl.col("_hi_n") - pl.col("_lo_n") >= MAX_RANGE))
    parts = parts.join(bad.select("_k").unique(), on="_k", how="anti")
    ranged = (parts.select("_k", "_prefix", "_width", pl.int_ranges("_lo_n", pl.col("_hi_n") + 1).alias("_n"))
              .explode("_n")
              .select("_k", (pl.col("_prefix") + pl.col("_n").cast(pl.String).str.zfill(pl.col("_width"))).alias("_name")))
    names = pl.concat([plain, ranged]).group_by("_k", maintain_order=True).agg(pl.col("_name"))
    done = pl.concat([frame.filter(empty).select("_k"), plain.select("_k"), parts.select("_k")]).unique()
    rest = frame.join(done, on="_k", how="anti")
    expanded = [_expand_or_error(value) for value in rest.get_column(key).to_list()]
    fallback = rest.select("_k", pl.Series("_fb", [names for names, _ in expanded], dtype=pl.List(pl.String)),
                           pl.Series("_err", [error for _, error in expanded], dtype=pl.String))
    return (frame.join(names, on="_k", how="left").join(fallback, on="_k", how="left")
            .select(key,
                    pl.when(empty).then(pl.lit([], dtype=pl.List(pl.String)))
                    .otherwise(pl.coalesce("_name", "_fb",
                                           pl.when(pl.col("_err").is_null()).then(pl.lit([], dtype=pl.List(pl.String)))))
                    .alias(out),
                    pl.col("_err").alias(f"{out}_err")))


def compress_hostlist(names: Iterable[str]) -> str:
    """Compress node names into a Slurm hostlist expression (inverse of :func:`expand_hostlist`).

    Names are grouped by prefix and digit width; numbers are sorted and merged into ranges.
    Names without a trailing number are kept verbatim. Order of groups follows first appearance.
    """
    groups: dict[tuple[str, int], set[int]] = {}
    plain: list[str] = []
    order: list[tuple[str, int] | str] = []
    for name in names:
        m = _TRAILING_NUMBER.match(name)
        if not m:
            if name not in plain:
                plain.append(name)
                order.append(name)
            continue
        key = (m.group(1), len(m.group(2)))
        if key not in groups:
            groups[key] = set()
            order.append(key)
        groups[key].add(int(m.group(2)))
    parts: list[str] = []
    for key in order:
        if isinstance(key, str):
            parts.append(key)
            continue
        prefix, width = key
        numbers = sorted(groups[key])
        # A number wider than the group's width would not round-trip: keep such names verbatim.
        ranges: list[str] = []
        run_start = prev = numbers[0]
        for n in numbers[1:] + [None]:  # type: ignore[list-item]
            if n is not None and n == prev + 1:
                prev = n
                continue
            lo, hi = str(run_start).zfill(width), str(prev).zfill(width)
            ranges.append(lo if run_start == prev else f"{lo}-{hi}")
            if n is not None:
                run_start = prev = n
        if len(numbers) == 1:
            parts.append(f"{prefix}{str(numbers[0]).zfill(width)}")
        else:
            parts.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts)
