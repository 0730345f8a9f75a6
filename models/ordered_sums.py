"""Float sums that give the same bits on every run.

Why: a float sum depends in its last bits on the order of its terms, and Polars' parallel group-by
gathers a group's rows in an order that varies from run to run (measured on the benchmark year: two
roll-ups of the same warehouse gave alert incidents' lost GPU-hours and availability hours that differed
in the last bits). A rerun must change nothing, so a float sum a mart stores adds its terms in one
fixed order: ascending.
"""

from __future__ import annotations

import polars as pl

__all__ = ["ordered_sum"]


def ordered_sum(expr: pl.Expr | str) -> pl.Expr:
    """The sum of ``expr`` over its values sorted ascending (nulls ignored, as ``sum``): the same bits
    whatever order the rows arrive in. Use it in ``agg`` wherever a float sum is stored."""
    column = pl.col(expr) if isinstance(expr, str) else expr
    return column.sort().sum()
