"""Islands of time spans: the union of overlapping (or nearly touching) spans, per key.

One expression for what incident merging, planned-maintenance periods, node outages, attribution's
outages and maintenance windows all need: number the spans so that each island (spans that overlap,
touch, or follow within a window) shares one number.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import polars as pl

__all__ = ["span_islands"]


def span_islands(keys: Sequence[str], window: timedelta = timedelta(0), end: str = "end",
                 start: str = "start") -> pl.Expr:
    """Island number per ``keys`` over time spans: a span starting more than ``window`` after every
    earlier span of its key ended starts a new island (``window`` 0: the union of overlapping or touching
    spans; no ``keys``: over the whole frame). The frame must be sorted by ``keys``, ``start``. A null ``end``
    is skipped by the running maximum: give an ongoing span a far end first if it is to absorb later spans.

    >>> from datetime import datetime
    >>> t = lambda h: datetime(2026, 11, 1, h)
    >>> df = pl.DataFrame({"node": ["a", "a", "a", "b"], "start": [t(1), t(2), t(5), t(1)],
    ...                    "end": [t(3), t(3), t(6), t(2)]})
    >>> df.with_columns(span_islands(["node"]).alias("island"))["island"].to_list()
    [1, 1, 2, 1]
    """
    reach = pl.col(end).cum_max().shift(1)
    if keys:
        reach = reach.over(list(keys))
    opens = ((reach + window).is_null() | (pl.col(start) > reach + window)).cast(pl.Int64).cum_sum()
    return opens.over(list(keys)) if keys else opens
