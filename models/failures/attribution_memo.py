"""Attribution kept between nights: a job is attributed again only when its own record, or the evidence
within reach of its end, changed since the last build.

Why: attribution weighs every failed job of the history against every piece of evidence, each night
(2026-12-07, the benchmark year: 1 M jobs and 12 k earlier instances, 2.8 + 1.5 s of the night's 75 s),
though a night changes the evidence of a day or two.

What a job's attribution depends on (:func:`~gpusre.models.failures.attribution.attribute_failures_with`):

* its own row (state, times, nodes, exit, checkpoint interval);
* evidence on its nodes in a window bounded around its end: events from ``end - max(OPEN_FAULT_LOOKBACK,
  collective timeout) - before`` to ``end + max(after, clock skew)``, and the recoveries and clearings
  between them and the end;
* rows with a span (incidents, hardware outages, planned maintenance) that overlap that window, however
  long ago they began: a span that a new event extends changes every job whose end lies in it;
* its nodes' log coverage on the day of its end;
* the het-job siblings it is torn down with (rule 2d), within the clock skew of it.

So each evidence frame is summarised per UTC day (:func:`evidence_signature`): the rows whose time, or
span, touches the day, counted and hashed. A day whose summary differs from the last build's is dirty.
A job keeps its attribution when its row is the one attributed then and no dirty day lies within
:data:`REACH_BEFORE` before its start (or its end, if earlier) to :data:`REACH_AFTER` after its end; a
het-job component is attributed again with every sibling when one of them is. Anything else — the first
build, another version of gpusre or Polars (the row hashes are Polars'), other rules — attributes every job.

The contract stays "the same rows as attributing every job": ``tests/test_attribution_memo.py`` checks it
night by night against the full computation.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from datetime import date, timedelta
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gpusre.models.failures.attribution import (ATTRIBUTION_SCHEMA, OPEN_FAULT_LOOKBACK,
                                                AttributionEvidence, attribute_failures_with, failure_candidates)

__all__ = ["BASIS_SCHEMA", "MEMO_SCHEMA", "REACH_AFTER", "REACH_BEFORE", "attribute_reusing", "dirty_days",
           "evidence_signature", "rules_fingerprint"]

#: How far before a job's start (or end, if earlier) and after its end its evidence can lie, with an hour
#: to spare over the defaults' 60 min lookback, 10 min window and 60 s skew (the rules' own reach is added).
REACH_BEFORE = OPEN_FAULT_LOOKBACK + timedelta(hours=1)
REACH_AFTER = timedelta(hours=1)

#: ``core.attribution_memo``: the attribution of every job and instance that could have failed (``kind``
#: ``job`` or ``instance``; ``instance_no`` null for jobs), and the hash of the input row it was computed from.
MEMO_SCHEMA: dict[str, pl.DataType] = {"kind": pl.String(), "input_hash": pl.UInt64(), "instance_no": pl.Int64(),
                                       **ATTRIBUTION_SCHEMA}
#: ``core.attribution_memo_basis``: per evidence frame (``part``) and UTC day, the rows touching it and two
#: sums of their hashes; ``fingerprint``: :func:`rules_fingerprint` of the build.
BASIS_SCHEMA: dict[str, pl.DataType] = {"fingerprint": pl.String(), "part": pl.String(), "day": pl.Date(),
                                        "rows": pl.Int64(), "sum_lo": pl.Int64(), "sum_hi": pl.Int64()}


#: One hash per row (a job's input row, an evidence row): Polars', stable within a Polars version.
_ROW_HASH = pl.struct(pl.all()).hash(seed=20261207)


@lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """SHA-256 of the analytics' code and catalogs (``models/``, ``sql/``) and the Polars version: a new
    release attributes every job once."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256(metadata.version("polars").encode())
    for path in sorted(p for folder in ("models", "sql") for ext in ("py", "csv", "yaml", "sql")
                       for p in (root / folder).rglob(f"*.{ext}")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def rules_fingerprint(**rules: Any) -> str:
    """The fingerprint a memo is valid for: the code's (:func:`_code_fingerprint`) and the keyword
    arguments of :func:`~gpusre.models.failures.attribution.attribute_failures_with`."""
    text = _code_fingerprint() + repr(sorted((k, repr(v)) for k, v in rules.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _day_span(frame: pl.DataFrame, first: date, last: date) -> tuple[pl.Expr, pl.Expr] | None:
    """The first and last UTC day a row of ``frame`` touches: [earliest, latest] of its time columns, to
    ``last`` when one is null (an open span), from ``first`` when all are; None for a frame without time."""
    times = [c for c, t in frame.schema.items() if isinstance(t, (pl.Datetime, pl.Date))]
    if not times:
        return None
    days = [pl.col(c).cast(pl.Datetime("us", "UTC")).dt.date() if isinstance(frame.schema[c], pl.Datetime)
            else pl.col(c) for c in times]
    open_span = pl.any_horizontal(pl.col(c).is_null() for c in times)
    return (pl.min_horizontal(days).fill_null(first),
            pl.when(open_span).then(pl.lit(last)).otherwise(pl.max_horizontal(days)))


def _day_summary(part: str, frame: pl.DataFrame, first: date, last: date) -> pl.DataFrame:
    """Per UTC day the rows of ``frame`` that touch it (:func:`_day_span`), counted and hashed."""
    frame = frame.drop("_i", strict=False)  # a position in the sorted frame: shifts with every insert
    span = _day_span(frame, first, last)
    if span is None or frame.is_empty():
        return pl.DataFrame(schema={k: v for k, v in BASIS_SCHEMA.items() if k != "fingerprint"})
    h = frame.select(_ROW_HASH.alias("h"), span[0].alias("lo"), span[1].alias("hi"))
    one_day = pl.col("lo") >= pl.col("hi")
    # Most rows are events, on one day: only spans are expanded into their days.
    days_of = pl.concat([h.filter(one_day).select(pl.col("hi").alias("day"), "h"),
                         h.filter(~one_day).select(pl.date_ranges("lo", "hi").alias("day"), "h").explode("day")])
    return (days_of.group_by("day").agg(pl.len().cast(pl.Int64).alias("rows"),
                                        (pl.col("h") % (1 << 32)).cast(pl.Int64).sum().alias("sum_lo"),
                                        (pl.col("h") // (1 << 32)).cast(pl.Int64).sum().alias("sum_hi"))
            .select(pl.lit(part).alias("part"), "day", "rows", "sum_lo", "sum_hi"))


def _frames(evidence: AttributionEvidence) -> dict[str, pl.DataFrame]:
    return {f.name: v for f in dataclasses.fields(evidence) if isinstance(v := getattr(evidence, f.name), pl.DataFrame)}


def _bounds(frames: dict[str, pl.DataFrame]) -> tuple[date, date] | None:
    """The first and last UTC day of any time in ``frames``."""
    bounds = [frame.select(pl.min_horizontal(pl.col(c).min() for c in cols).alias("lo"),
                           pl.max_horizontal(pl.col(c).max() for c in cols).alias("hi")).row(0)
              for frame in frames.values()
              if (cols := [c for c, t in frame.schema.items() if isinstance(t, pl.Datetime)]) and not frame.is_empty()]
    lows, highs = [b[0] for b in bounds if b[0] is not None], [b[1] for b in bounds if b[1] is not None]
    return (min(lows).date(), max(highs).date()) if lows and highs else None


def _within(evidence: AttributionEvidence, lo: date, hi: date) -> AttributionEvidence:
    """``evidence`` cut to the rows that touch a UTC day of [``lo``, ``hi``] (positions ``_i`` renumbered):
    what jobs whose reach lies in those days can see (module docstring)."""
    frames = _frames(evidence)
    bounds = _bounds(frames)
    if bounds is None:
        return evidence
    cut = {}
    for name, frame in frames.items():
        span = _day_span(frame, *bounds)
        if span is None:
            continue
        kept = frame.filter((span[0] <= hi) & (span[1] >= lo))
        cut[name] = kept.drop("_i").with_row_index("_i") if "_i" in frame.columns else kept
    return dataclasses.replace(evidence, **cut)


def evidence_signature(evidence: AttributionEvidence, fingerprint: str) -> pl.DataFrame:
    """:data:`BASIS_SCHEMA` rows of ``evidence``: per frame and UTC day, the rows touching the day."""
    frames = _frames(evidence)
    bounds = _bounds(frames)
    if bounds is None:
        return pl.DataFrame(schema=BASIS_SCHEMA)
    parts = [_day_summary(name, frame, *bounds) for name, frame in frames.items()]
    return pl.concat(parts).select(pl.lit(fingerprint).alias("fingerprint"), pl.all()).cast(BASIS_SCHEMA)  # type: ignore[arg-type]


def dirty_days(previous: pl.DataFrame | None, current: pl.DataFrame) -> pl.Series | None:
    """The UTC days whose evidence differs between two :func:`evidence_signature` frames, sorted; None when
    nothing can be kept (no previous build, or one of other code or rules)."""
    if previous is None or previous.is_empty() or current.is_empty():
        return None
    fingerprint = current.get_column("fingerprint")[0]
    if previous.get_column("fingerprint").unique().to_list() != [fingerprint]:
        return None
    both = previous.drop("fingerprint").join(current.drop("fingerprint"), on=["part", "day"], how="full",
                                             coalesce=True, suffix="_new")
    changed = pl.any_horizontal(pl.col(c).ne_missing(pl.col(f"{c}_new")) for c in ("rows", "sum_lo", "sum_hi"))
    return both.filter(changed).get_column("day").unique().sort()


def _input_hash(jobs: pl.DataFrame) -> pl.Series:
    return jobs.select(_ROW_HASH).to_series()


def attribute_reusing(jobs: pl.DataFrame, evidence: AttributionEvidence, *, kind: str, memo: pl.DataFrame | None,
                      dirty: pl.Series | None, **rules: Any) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`~gpusre.models.failures.attribution.attribute_failures_with` of ``jobs``, taking from ``memo``
    (:data:`MEMO_SCHEMA` rows of ``kind``) the rows of the jobs whose input row is unchanged and whose reach
    holds no ``dirty`` day (:func:`dirty_days`; None: attribute every job). The jobs attributed again are
    weighed against the evidence within their reach only.

    Returns the attribution (the rows, columns and order of ``attribute_failures_with``) and the
    :data:`MEMO_SCHEMA` rows of ``kind`` to keep for the next build.
    """
    keys = ["job_id", "instance_no"] if "instance_no" in jobs.columns else ["job_id"]
    # Only candidates rest on evidence; every other row is "not a failure", from the job alone (not kept,
    # not hashed: most of a year's jobs completed).
    effective = {**_RULE_DEFAULTS, **rules}  # the windows and uids attribute_failures_with will use
    candidate = failure_candidates(jobs, effective["slurm_user_uids"]).to_numpy()
    at = np.flatnonzero(candidate)
    candidates = jobs[at]
    hashes = pl.Series("input_hash", np.zeros(jobs.height, dtype=np.uint64)).scatter(at, _input_hash(candidates))
    before = REACH_BEFORE + max(effective["before"], effective["clock_skew"], effective["collective_timeout"])
    after = REACH_AFTER + max(effective["after"], effective["before"], effective["clock_skew"])
    end = pl.col("end_ts").cast(pl.Datetime("us", "UTC"))
    reach = jobs.select(
        (pl.min_horizontal(pl.col("start_ts").cast(pl.Datetime("us", "UTC")), end) - before).dt.date().cast(pl.Int32)
        .fill_null(np.iinfo(np.int32).min).alias("lo"),
        (end + after).dt.date().cast(pl.Int32).fill_null(np.iinfo(np.int32).max).alias("hi"))
    lo, hi = reach.get_column("lo").to_numpy(), reach.get_column("hi").to_numpy()
    redo = np.ones(jobs.height, dtype=bool)
    memo = memo.filter(pl.col("kind") == kind) if memo is not None else None
    if dirty is not None and memo is not None and not memo.is_empty():
        stored = memo.select(
            pl.col("job_id"), *([pl.col("instance_no").cast(jobs.schema["instance_no"])] if len(keys) == 2 else []),
            "input_hash", pl.lit(True).alias("_kept"))
        kept = np.zeros(jobs.height, dtype=bool)
        kept[at] = (candidates.select(keys).with_columns(hashes.gather(at))
                    .join(stored, on=[*keys, "input_hash"], how="left", maintain_order="left")
                    .get_column("_kept").fill_null(False).to_numpy())
        days = dirty.cast(pl.Int32).to_numpy()  # days since the epoch, sorted
        touched = np.searchsorted(days, hi, side="right") > np.searchsorted(days, lo, side="left")
        redo = ~kept | touched | ~candidate
        if "het_job_id" in jobs.columns:
            # rule 2d: a component torn down with a sibling is attributed as it; siblings are attributed together
            group = ["het_job_id", *(["instance_no"] if len(keys) == 2 else [])]
            redo = jobs.select(pl.lit(pl.Series(redo)).alias("_redo"), pl.lit(pl.Series(candidate)).alias("_cand"),
                               *group).select(
                pl.when(pl.col("het_job_id").is_null() | ~pl.col("_cand")).then(pl.col("_redo"))
                .otherwise((pl.col("_redo") & pl.col("_cand")).any().over(group))).to_series().to_numpy()
    weighed = redo & candidate
    if redo.all() or not weighed.any():
        cut = evidence
    else:
        cut = _within(evidence, date.fromordinal(_EPOCH + int(lo[weighed].min())),
                      date.fromordinal(_EPOCH + int(hi[weighed].max())))
    mask = pl.Series(redo)
    fresh = attribute_failures_with(jobs.filter(mask), cut, **rules)
    out_schema = dict(fresh.schema)
    order = pl.Series("_row", np.arange(jobs.height, dtype=np.int64))
    parts = [fresh.with_columns(order.filter(mask))]
    if not redo.all():
        reused = (jobs.select(keys).with_columns(order, hashes).filter(~mask)
                  .join(memo.with_columns(  # type: ignore[union-attr]
                        pl.col("instance_no").cast(jobs.schema.get("instance_no", pl.Int64)))
                        .drop("kind", *(["instance_no"] if len(keys) == 1 else [])),
                        on=[*keys, "input_hash"], how="left"))
        parts.append(reused.select(*out_schema, "_row").cast(out_schema))  # type: ignore[arg-type]
    result = pl.concat([p.select(*out_schema, "_row") for p in parts]).sort("_row").drop("_row")
    rows = (result.with_columns(hashes).filter(pl.Series(candidate))
            .with_columns(pl.lit(kind).alias("kind"),
                          *([] if len(keys) == 2 else [pl.lit(None, pl.Int64).alias("instance_no")]))
            .select(pl.col(c).cast(t) for c, t in MEMO_SCHEMA.items()))
    return result, rows


#: The keyword defaults of attribute_failures_with (its windows, skew, uids): the reach is taken from them.
_RULE_DEFAULTS = {name: p.default for name, p in inspect.signature(attribute_failures_with).parameters.items()
                  if p.kind is inspect.Parameter.KEYWORD_ONLY}

#: date.toordinal() of 1970-01-01: Polars' dates are days since the epoch.
_EPOCH = date(1970, 1, 1).toordinal()
