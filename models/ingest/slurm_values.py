"""Slurm value parsers as Polars expressions (durations, timestamps, states, exit codes, TRES).

Each parser maps a ``pl.String`` expression to a typed expression that is **null when the input
does not parse**. Callers decide whether a null is fine (``Unknown``, empty) or an error, with
:func:`invalid_value`: a value is invalid when the text is present, is not one of the field's
null tokens, and still parsed to null. This keeps one regex pass per field instead of one for
the value and another for the error.

>>> import polars as pl
>>> df = pl.DataFrame({"t": ["1-02:03:04", "05:06", "UNLIMITED", "bogus"]})
>>> df.select(parse_duration_s(pl.col("t"))).to_series().to_list()
[93784, 306, None, None]
>>> df.select(invalid_value(pl.col("t"), parse_duration_s(pl.col("t")), TIMELIMIT_NULL_TOKENS)).to_series().to_list()
[False, False, False, True]
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone as dt_timezone
from functools import lru_cache

import polars as pl

__all__ = [
    "SLURM_BASE_STATES",
    "SLURM_STATE_FLAGS",
    "SLURM_STATES",
    "DURATION_NULL_TOKENS",
    "TIMELIMIT_NULL_TOKENS",
    "TIMESTAMP_NULL_TOKENS",
    "invalid_value",
    "parse_int",
    "parse_duration_s",
    "parse_naive_timestamp",
    "parse_offset_timestamp",
    "has_space_for_t",
    "has_utc_offsets",
    "localize_to_utc",
    "parse_state",
    "parse_exit_code",
    "parse_job_id",
    "tres_count",
    "tres_gpus",
    "gres_gpus",
    "tres_gpus_error",
    "gres_gpus_error",
    "check_timezone",
    "has_ambiguous_times",
    "UNSET_TIME_WINDOW_S",
    "MAX_SUSPENDED_S",
    "unset_time_to_null",
    "format_duration",
    "start_from_end",
    "run_span_error",
]

#: Base job states (``JOB_STATE_BASE`` in slurm.h): every job has exactly one.
SLURM_BASE_STATES: frozenset[str] = frozenset(
    {
        "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
        "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "RUNNING", "SUSPENDED", "TIMEOUT",
    }
)
#: State flags; sacct prints a recognised flag *instead of* the base state
#: (https://slurm.schedmd.com/job_state_codes.html).
SLURM_STATE_FLAGS: frozenset[str] = frozenset(
    {
        "COMPLETING", "CONFIGURING", "EXPEDITING", "LAUNCH_FAILED", "POWER_UP_NODE",
        "RECONFIG_FAIL", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING",
        "RESV_DEL_HOLD", "REVOKED", "SIGNALING", "SPECIAL_EXIT", "STAGE_OUT", "STOPPED",
        "UPDATE_DB",
    }
)
#: Every name sacct / slurmrestd may report as a job state.
SLURM_STATES: frozenset[str] = SLURM_BASE_STATES | SLURM_STATE_FLAGS

#: Texts that mean "no value" for Elapsed-like durations.
DURATION_NULL_TOKENS: frozenset[str] = frozenset({"", "Unknown", "INVALID", "None"})
#: Texts that mean "no limit / not known" for Timelimit.
TIMELIMIT_NULL_TOKENS: frozenset[str] = DURATION_NULL_TOKENS | {"UNLIMITED", "Partition_Limit"}
#: Texts that mean "no time" for Submit/Eligible/Start/End.
TIMESTAMP_NULL_TOKENS: frozenset[str] = frozenset({"", "Unknown", "None"})

# [D-]HH:MM:SS, HH:MM:SS, MM:SS, each with an optional .fraction (TotalCPU style). Days need hours:
# sacct never prints 'D-HH:MM', and accepting it would make 'D-MM:SS' ambiguous.
_DURATION_RE = r"^(?:(?:\d+-)?\d+:)?\d+:\d+(?:\.\d+)?$"
_TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S"
#: Characters of a bare ``YYYY-MM-DDTHH:MM:SS`` stamp; what follows may be a UTC offset.
_STAMP_LEN = 19
#: A UTC offset after a stamp, as ``%z`` prints it (``-0600``), in ISO form (``-06:00``) or ``Z``.
_UTC_OFFSET_RE = r"^(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)$"
_EXIT_RE = r"^\d+:\d+$"
# 123 | 123_4 | 123_[1-5,7%2] | 123+0, optionally followed by .batch/.extern/.interactive/.TBD/.0/.0+1
_JOB_ID_RE = (
    r"^\d+(?:_\d+|_\[[0-9,\-]+(?:%\d+)?\]|\+\d+)?"
    r"(?:\.(?:batch|extern|interactive|TBD|\d+(?:\+\d+)?))?$"
)
# The same grammar with the parts captured (non-participating groups give null).
_JOB_ID_GROUPS_RE = (
    r"^(?P<job_id>(?P<base>\d+)(?:_(?P<task>\d+)|_\[(?P<tasks>[0-9,\-]+)(?:%\d+)?\]|\+(?P<het>\d+))?)"
    r"(?:\.(?P<step>batch|extern|interactive|TBD|\d+(?:\+\d+)?))?$"
)
_JOB_ID_PARTS = ("job_id", "base", "task", "tasks", "het", "step")


def invalid_value(raw: pl.Expr, parsed: pl.Expr, null_tokens: Iterable[str]) -> pl.Expr:
    """True where ``raw`` holds text that is not a null token yet ``parsed`` came out null."""
    return (raw.is_not_null() & ~raw.is_in(list(null_tokens)) & parsed.is_null()).fill_null(False)


def parse_int(raw: pl.Expr, dtype: pl.DataType = pl.Int64) -> pl.Expr:
    """Decimal integer text -> ``dtype``; null when empty, non-numeric or out of range."""
    return raw.cast(dtype, strict=False)


def parse_duration_s(raw: pl.Expr) -> pl.Expr:
    """Slurm duration text -> whole seconds (Int64, fraction floored); null when not a duration.

    Accepts ``D-HH:MM:SS``, ``HH:MM:SS``, ``MM:SS`` and any of them with ``.mmm``. The clock part
    must be a valid time of day (hours < 24, minutes and seconds < 60), as Slurm prints it, so
    garbage does not pass as a duration.
    """
    # Regex captures cost ~4x more than this on millions of rows: a DFA match checks the shape,
    # a literal split takes the days off, and strptime(Time) reads and range-checks the clock.
    shape_ok = raw.str.contains(_DURATION_RE)
    whole = raw.str.replace(r"\.\d+$", "")
    day_split = whole.str.split_exact("-", 1)
    has_days = day_split.struct.field("field_1").is_not_null()
    clock = pl.coalesce(day_split.struct.field("field_1"), day_split.struct.field("field_0"))
    clock = pl.when(clock.str.len_bytes() <= 5).then(pl.concat_str(pl.lit("00:"), clock)).otherwise(clock)
    clock_s = clock.str.strptime(pl.Time, "%H:%M:%S", strict=False).cast(pl.Int64) // 1_000_000_000
    days = pl.when(has_days).then(day_split.struct.field("field_0").cast(pl.Int64, strict=False)).otherwise(0)
    return pl.when(shape_ok).then(days * 86_400 + clock_s).cast(pl.Int64)


def parse_naive_timestamp(raw: pl.Expr, *, space_for_t: bool = True) -> pl.Expr:
    """``YYYY-MM-DDTHH:MM:SS`` -> naive ``Datetime('us')``; null for ``Unknown`` or malformed text.

    With ``space_for_t`` (the default) ``YYYY-MM-DD HH:MM:SS`` is read too: Slurm prints it under a
    site's ``SLURM_TIME_FORMAT="%F %T"``, and so do traces converted with pandas. It costs a string
    copy per value, so the sacct parse asks for it only when a sample of each dump in its batch has
    such a stamp (:func:`has_space_for_t`)."""
    if space_for_t:
        raw = raw.str.replace(" ", "T", literal=True, n=1)
    return raw.str.strptime(pl.Datetime("us"), _TIMESTAMP_FORMAT, strict=False, exact=True)


def parse_offset_timestamp(raw: pl.Expr, *, space_for_t: bool = True) -> pl.Expr:
    """``YYYY-MM-DDTHH:MM:SS`` followed by a UTC offset -> exact ``Datetime('us', 'UTC')``; null for a
    stamp without an offset, ``Unknown`` or malformed text.

    Slurm prints such stamps under ``SLURM_TIME_FORMAT="%FT%T%z"`` (``2026-11-01T01:45:00-0600``);
    ``-06:00`` and ``Z`` are read too. The offset says which instant is meant, so no time-zone rule
    (and no DST guess) is applied. ``space_for_t`` as in :func:`parse_naive_timestamp`.

    >>> df = pl.DataFrame({"t": ["2026-11-01T01:45:00-0600", "2026-11-01T01:45:00-05:00",
    ...                          "2026-11-01T07:45:00Z", "2026-11-01T01:45:00", "2026-11-01T01:45:00-0660"]})
    >>> [t and t.isoformat() for t in df.select(parse_offset_timestamp(pl.col("t"))).to_series().to_list()]
    ['2026-11-01T07:45:00+00:00', '2026-11-01T06:45:00+00:00', '2026-11-01T07:45:00+00:00', None, None]
    """
    # Plain string slices rather than a capturing regex (see parse_duration_s): the local part is
    # the fixed-width stamp, the rest must be exactly an offset.
    local = parse_naive_timestamp(raw.str.slice(0, _STAMP_LEN), space_for_t=space_for_t)
    suffix = raw.str.slice(_STAMP_LEN)
    digits = suffix.str.replace(":", "", literal=True)  # "-0600" / "Z"
    offset_s = (
        digits.str.slice(1, 2).cast(pl.Int64, strict=False) * 3600
        + digits.str.slice(3, 2).cast(pl.Int64, strict=False) * 60
    )
    offset_s = (
        pl.when(suffix == "Z").then(pl.lit(0, pl.Int64))
        .when(suffix.str.starts_with("-")).then(-offset_s)
        .otherwise(offset_s)
    )
    # local = UTC + offset, so UTC = local - offset.
    utc = (local - pl.duration(seconds=offset_s)).dt.replace_time_zone("UTC")
    return pl.when(suffix.str.contains(_UTC_OFFSET_RE)).then(utc).otherwise(pl.lit(None, pl.Datetime("us", "UTC")))


def has_utc_offsets(values: pl.Series) -> bool:
    """Whether any of ``values`` is longer than a bare ``YYYY-MM-DDTHH:MM:SS`` stamp, so may carry a
    UTC offset (:func:`parse_offset_timestamp`). Reads only the lengths, so it checks every value: a
    dump may give offsets in some fields or rows only."""
    return bool((values.str.len_bytes() > _STAMP_LEN).any())


def has_space_for_t(values: pl.Series) -> bool:
    """Whether any value of ``values`` is a stamp with a space for the ``T`` (``YYYY-MM-DD HH:...``);
    pass a sample: a dump prints every stamp one way."""
    return bool(values.str.contains(r"^\d{4}-\d{2}-\d{2} \d").any())


def check_timezone(timezone: str) -> str:
    """Return ``timezone`` if it is a known IANA zone, else raise ``ValueError``."""
    try:
        zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown IANA timezone {timezone!r}") from exc
    return timezone


@lru_cache(maxsize=64)
def has_ambiguous_times(timezone: str) -> bool:
    """Whether ``timezone`` ever turns its clocks back (so some local times occur twice).

    False for ``UTC`` and fixed-offset zones (``Etc/GMT+5``): callers skip the work of resolving
    ambiguous local times there. Offsets are sampled weekly over 1970-2100 (a few ms per zone,
    cached), which sees every DST rule and lasting zone change.
    """
    if timezone == "UTC":
        return False
    zone = zoneinfo.ZoneInfo(check_timezone(timezone))
    t = datetime(1970, 1, 1, tzinfo=dt_timezone.utc)
    end = datetime(2100, 1, 1, tzinfo=dt_timezone.utc)
    step = timedelta(days=7)
    prev = t.astimezone(zone).utcoffset()
    while t < end:
        t += step
        offset = t.astimezone(zone).utcoffset()
        if offset is not None and prev is not None and offset < prev:
            return True
        prev = offset
    return False


def localize_to_utc(naive: pl.Expr, timezone: str, *, ambiguous: str = "earliest") -> pl.Expr:
    """Interpret naive wall-clock times in ``timezone`` and convert them to ``Datetime('us','UTC')``.

    DST: an ambiguous local time (the repeated hour in autumn) maps to the earliest instant (the
    latest with ``ambiguous="latest"``); a non-existent one (the skipped hour in spring) becomes
    null, since no instant matches it.
    """
    if timezone == "UTC":
        return naive.dt.replace_time_zone("UTC")
    return naive.dt.replace_time_zone(
        check_timezone(timezone), ambiguous=ambiguous, non_existent="null"
    ).dt.convert_time_zone("UTC")


def parse_state(raw: pl.Expr) -> pl.Expr:
    """State text -> struct ``{state: String, cancelled_by: Int64}``; state null when unknown.

    ``CANCELLED by 1234`` gives ``CANCELLED`` and 1234. Truncated fixed-width states such as
    ``OUT_OF_ME+`` and names outside :data:`SLURM_STATES` give a null state.
    """
    parts = raw.str.split_exact(" by ", 1)
    base = parts.struct.field("field_0")
    by_text = parts.struct.field("field_1")
    by = by_text.cast(pl.Int64, strict=False)
    ok = base.is_in(list(SLURM_STATES)) & (by_text.is_null() | by.is_not_null())
    return pl.struct(
        pl.when(ok).then(base).otherwise(None).alias("state"),
        pl.when(ok).then(by).otherwise(None).alias("cancelled_by"),
    )


def parse_exit_code(raw: pl.Expr) -> pl.Expr:
    """``N:S`` -> struct ``{exit_code: Int32, exit_signal: Int32}``; both null when malformed."""
    ok = raw.str.contains(_EXIT_RE)
    parts = raw.str.split_exact(":", 1)
    return pl.struct(
        pl.when(ok).then(parts.struct.field("field_0").cast(pl.Int32, strict=False)).alias("exit_code"),
        pl.when(ok).then(parts.struct.field("field_1").cast(pl.Int32, strict=False)).alias("exit_signal"),
    )


def parse_job_id(raw: pl.Expr) -> pl.Expr:
    """JobID text -> struct of its parts (all String; all null when malformed).

    Fields: ``job_id`` (without step), ``base`` (leading number), ``task`` (array task),
    ``tasks`` (pending array range body, ``%`` throttle dropped), ``het`` (het offset), ``step``.
    """
    # One anchored regex with named groups validates and splits in a single pass (~35% of the
    # cost of a validity regex plus separate splits and extracts on millions of rows).
    # The named groups are already in _JOB_ID_PARTS order: return the struct as extracted.
    # (Re-assembling it from struct.field() calls ran the regex once per field whenever the
    # caller collects without common-subexpression elimination, as the sacct parser does.)
    return raw.str.extract_groups(_JOB_ID_GROUPS_RE)


def tres_count(raw: pl.Expr, key: str) -> pl.Expr:
    """Integer count of ``key`` in a TRES string (``cpu=8,node=1,gres/gpu=4``) -> Int64 or null."""
    return raw.str.extract(rf"(?:^|,){re.escape(key)}=(\d+)(?:,|$)", 1).cast(pl.Int64, strict=False)


def tres_gpus(raw: pl.Expr) -> pl.Expr:
    """GPUs in a TRES string -> struct ``{n_gpus: Int64, gpu_type: String}``.

    The untyped total ``gres/gpu=N`` wins when present (Slurm prints it alongside the typed
    entries); otherwise typed entries ``gres/gpu:h100=N`` are summed. ``gpu_type`` is the type of
    the first typed entry. Both null when the string mentions no GPU.
    """
    typed = raw.str.extract_all(r"(?:^|,)gres/gpu:[^=,]+=\d+")
    typed_sum = typed.list.eval(pl.element().str.extract(r"=(\d+)$", 1).cast(pl.Int64)).list.sum()
    typed_sum = pl.when(typed.list.len() > 0).then(typed_sum).otherwise(None)
    return pl.struct(
        pl.coalesce(tres_count(raw, "gres/gpu"), typed_sum).alias("n_gpus"),
        raw.str.extract(r"(?:^|,)gres/gpu:([^=,]+)=", 1).alias("gpu_type"),
    )


def gres_gpus(raw: pl.Expr) -> pl.Expr:
    """GPUs in an AllocGRES string (``gpu:8``, ``gpu:h100:8(IDX:0-7)``) -> struct like :func:`tres_gpus`."""
    entries = raw.str.extract_all(r"(?:^|,)gpu(?::[^:,(]+)?:\d+")
    total = entries.list.eval(pl.element().str.extract(r":(\d+)$", 1).cast(pl.Int64)).list.sum()
    return pl.struct(
        pl.when(entries.list.len() > 0).then(total).otherwise(None).alias("n_gpus"),
        raw.str.extract(r"(?:^|,)gpu:([^:,(]+):\d+", 1).alias("gpu_type"),
    )


#: A GPU TRES entry: ``gres/gpu=N`` or ``gres/gpu:TYPE=N`` (not ``gres/gpumem=80G``).
_TRES_GPU_ENTRY_RE = r"^gres/gpu(?:[:=]|$)"
_TRES_GPU_OK_RE = r"^gres/gpu(?::[^=]+)?=\d+$"
#: A GPU AllocGRES entry: ``gpu:N``, ``gpu:TYPE:N``, optionally followed by ``(IDX:0-7)`` (not ``gpumem``).
_GRES_GPU_ENTRY_RE = r"^gpu(?:[:(]|$)"
_GRES_GPU_OK_RE = r"^gpu(?::[^:(]+)?:\d+(?:\(.*)?$"


def _first_bad_entry(raw: pl.Expr, entry_re: str, ok_re: str) -> pl.Expr:
    entries = raw.str.split(",").list.eval(
        pl.element().filter(pl.element().str.contains(entry_re) & ~pl.element().str.contains(ok_re))
    )
    return entries.list.first()


def tres_gpus_error(raw: pl.Expr) -> pl.Expr:
    """The first GPU entry of a TRES string whose count is not a whole number (``gres/gpu=8x``,
    ``gres/gpu:h100=abc``, ``gres/gpu=``) -> String; null when every GPU entry is well formed.

    Other TRES (``gres/gpumem=80G``, ``gres/shard=4``, ``mem=512G``) are not GPU counts and are
    not checked.

    >>> df = pl.DataFrame({"t": ["cpu=8,gres/gpu=8,gres/gpumem=80G", "gres/gpu:h100=abc,node=1", None]})
    >>> df.select(tres_gpus_error(pl.col("t"))).to_series().to_list()
    [None, 'gres/gpu:h100=abc', None]
    """
    return _first_bad_entry(raw, _TRES_GPU_ENTRY_RE, _TRES_GPU_OK_RE)


def gres_gpus_error(raw: pl.Expr) -> pl.Expr:
    """The first GPU entry of an AllocGRES/ReqGRES string that is not ``gpu[:TYPE]:N[(...)]``
    (``gpu:8x``, ``gpu:h100:abc``) -> String; null when every GPU entry is well formed.

    >>> df = pl.DataFrame({"g": ["gpu:h100:8(IDX:0-3,5-7)", "gpu:8x", "mps:100"]})
    >>> df.select(gres_gpus_error(pl.col("g"))).to_series().to_list()
    [None, 'gpu:8x', None]
    """
    return _first_bad_entry(raw, _GRES_GPU_ENTRY_RE, _GRES_GPU_OK_RE)


#: Slurm stores a time it does not have as 0 (``time_t`` unset), which sacct renders as the Unix
#: epoch in the zone it prints in: ``1970-01-01T00:00:00`` in UTC, ``1969-12-31T17:00:00`` in
#: Denver, ``1970-01-01T09:00:00`` in Tokyo. No UTC offset is more than a day, so any stamp within a
#: day of the epoch is that unset value (no Slurm cluster ran a job in 1970).
UNSET_TIME_WINDOW_S = 86_400

#: How much End - Start may exceed Elapsed. Elapsed is the run time (End - Start less the time the
#: job was suspended), so only suspension makes them differ. Suspended time does not count against
#: the TimeLimit (gang scheduling, PreemptMode=SUSPEND, ``scontrol suspend``), so the TimeLimit does
#: not bound it; 30 days is beyond any suspension a GPU cluster keeps a job for, yet a stamp off by
#: years (an End in 2099) is caught.
MAX_SUSPENDED_S = 30 * 86_400


def unset_time_to_null(ts: pl.Expr) -> pl.Expr:
    """A parsed stamp (naive or UTC ``Datetime``) -> itself, or null when it is Slurm's unset time 0
    rendered in any zone (within :data:`UNSET_TIME_WINDOW_S` of the epoch): unknown, like ``Unknown``.

    >>> from datetime import datetime
    >>> df = pl.DataFrame({"t": [datetime(1970, 1, 1), datetime(1969, 12, 31, 17), datetime(2026, 11, 11, 13)]})
    >>> df.select(unset_time_to_null(pl.col("t"))).to_series().to_list()
    [None, None, datetime.datetime(2026, 11, 11, 13, 0)]
    """
    return pl.when(ts.dt.epoch("s").abs() > UNSET_TIME_WINDOW_S).then(ts)


def format_duration(seconds: pl.Expr) -> pl.Expr:
    """Whole seconds -> Slurm's duration text ``[D-]HH:MM:SS`` (for messages).

    >>> pl.DataFrame({"s": [3600, 93784]}).select(format_duration(pl.col("s"))).to_series().to_list()
    ['01:00:00', '1-02:03:04']
    """
    s = seconds.abs()

    def two(e: pl.Expr) -> pl.Expr:
        return e.cast(pl.String).str.zfill(2)

    clock = pl.concat_str(two(s % 86_400 // 3600), two(s % 3600 // 60), two(s % 60), separator=":")
    sign = pl.when(seconds < 0).then(pl.lit("-")).otherwise(pl.lit(""))
    days = pl.when(s >= 86_400).then(pl.concat_str((s // 86_400).cast(pl.String), pl.lit("-"))).otherwise(pl.lit(""))
    return pl.concat_str(sign, days, clock)


def start_from_end(start: pl.Expr, end: pl.Expr, elapsed_s: pl.Expr, state: pl.Expr,
                   finished_states: Iterable[str]) -> pl.Expr:
    """Start, or End - Elapsed when Start is unknown on a finished record that ran.

    Elapsed is End - Start less suspended time, so End - Elapsed is the start Slurm's own fields
    give (exact unless the job was suspended). Only for ``finished_states`` with End known and
    Elapsed > 0: a job cancelled while pending has Elapsed 0 and never started, and a running one
    has no End.
    """
    ran = end.is_not_null() & (elapsed_s > 0) & state.is_in(list(finished_states))
    return pl.when(start.is_null() & ran).then(end - pl.duration(seconds=elapsed_s)).otherwise(start)


def _human_gap(seconds: pl.Expr) -> pl.Expr:
    year = 365.2425 * 86_400
    return (
        pl.when(seconds >= 2 * year).then(pl.format("{} years", (seconds / year).floor().cast(pl.Int64)))
        .when(seconds >= 2 * 86_400).then(pl.format("{} days", seconds // 86_400))
        .otherwise(format_duration(seconds))
    )


def run_span_error(start: pl.Expr, end: pl.Expr, elapsed_s: pl.Expr, *,
                   start_text: pl.Expr | None = None, end_text: pl.Expr | None = None,
                   elapsed_text: pl.Expr | None = None) -> pl.Expr:
    """Why Start, End and Elapsed of a record cannot all be true -> String; null when they can (or
    one is unknown).

    Slurm has End >= Start and End - Start = Elapsed + suspended time, so End before Start, or End -
    Start more than :data:`MAX_SUSPENDED_S` beyond Elapsed, means a stamp is wrong (an End in 2099);
    which one cannot be told, so the record is rejected. ``*_text`` are the values as printed, for
    the message (default: the typed values, stamps in their own zone).

    >>> from datetime import datetime
    >>> df = pl.DataFrame({"s": [datetime(2026, 11, 11, 13)], "e": [datetime(2099, 1, 1)], "el": [3600]})
    >>> df.select(run_span_error(pl.col("s"), pl.col("e"), pl.col("el"))).item()
    'End 2099-01-01T00:00:00 is 72 years after Start 2026-11-11T13:00:00 but Elapsed is 01:00:00'
    """
    fmt = "%Y-%m-%dT%H:%M:%S"
    start_text = start.dt.strftime(fmt) if start_text is None else start_text
    end_text = end.dt.strftime(fmt) if end_text is None else end_text
    elapsed_text = format_duration(elapsed_s) if elapsed_text is None else elapsed_text
    gap = (end - start).dt.total_seconds()
    return (
        pl.when(gap < 0).then(pl.format("End {} is before Start {}", end_text, start_text))
        .when(gap - elapsed_s > MAX_SUSPENDED_S)
        .then(pl.format("End {} is {} after Start {} but Elapsed is {}", end_text, _human_gap(gap), start_text,
                        elapsed_text))
    )
