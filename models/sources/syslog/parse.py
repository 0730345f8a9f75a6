"""Parse node log files (syslog, dmesg, /dev/kmsg, journald JSON, Fabric Manager, slurmd) into one
row per timestamped line, plus one reject row per line that cannot be placed in time.

Every line is classified by anchored Polars regexes (no per-line Python): each format's regex
captures only the *header* (timestamp, host, tag) and the message is the rest of the line, sliced
by the header's length, so the regex engine never scans long messages.

Formats (the ``format`` column):

============== ============================================================================ ========
format         example                                                                      time
============== ============================================================================ ========
rfc3164        ``[<pri>]Jan 15 03:04:05[.123456] host prog[pid]: msg`` (also ``Jan 15 2025``)  local
rfc5424        ``<34>1 2025-01-15T03:04:05.123Z host app procid msgid [sd] msg``           offset
iso8601        ``2025-01-15T03:04:05.123456+09:00 host prog[pid]: msg`` (rsyslog precise,   offset
               ``journalctl -o short-iso``; a space for the ``T`` too); without an offset  or local
               it is local time
dmesg_iso      ``[kern  :warn  : ]2025-01-21T04:41:44,283575+00:00 msg`` (comma decimal)      offset
dmesg_ctime    ``[kern  :warn  : ][Sun Feb 23 16:24:18 2025] msg`` (``dmesg -T``)             local
dmesg_uptime   ``[kern  :warn  : ][<6>][  123.456789] msg`` (dmesg, dmesg -r, pstore)         boot
kmsg           ``6,1234,5678901,-;msg`` (/dev/kmsg: priority,seq,µs since boot,flags)       boot
fabricmanager  ``[Feb 25 2025 13:59:45] [INFO] [tid 1803] msg`` (nv-fabricmanager.log)       local
slurm          ``[2026-04-29T23:36:37.809] error: msg`` (slurmd/slurmctld log)               local
journald_json  ``journalctl -o json``: one JSON object per line                             epoch
journal_full   ``Thu 2025-01-15 03:04:05 UTC host prog[pid]: msg`` (``journalctl -o          zone or
               short-full``; UTC/GMT, ``+0900`` and the cluster zone's own abbreviations    local
               (CST/CDT in America/Chicago) are offsets, other zone names local time)
journal_unix   ``1736910245.123456 host prog[pid]: msg`` (``journalctl -o short-unix``)      epoch
continuation   an indented line (or any line after a Fabric Manager line) that continues the
               line above: ts, host, program and pid are copied from it
============== ============================================================================ ========

Conventions:

* ``ts`` is ``Datetime('us','UTC')``. Local times are read in ``timezone``. In the autumn DST
  fall-back hour, a local time maps to the earlier instant unless the file's clock visibly went
  back (a drop of more than 5 minutes within that hour), after which it maps to the later one.
  A local time in the spring-forward gap does not exist and the line is rejected. A ``journal_full``
  stamp naming one of ``timezone``'s own abbreviations (``01:30:00 CST`` in America/Chicago) is not
  local time but the offset that abbreviation had in the line's year (UTC-6): it says which pass of
  the repeated hour the line is from. An abbreviation the zone used with two offsets in those years,
  or one that is not the zone's (``EST`` in a cluster set to America/Chicago), is read as local time.
* RFC 3164 has no year: the year comes from ``year_hint`` (the time range the data is expected to
  cover, e.g. the cluster's sacct range or ``(mtime - 1 year, mtime)``; default: the year before
  now); the year putting most lines inside it wins, the later one on a tie. Within one file a month
  going backwards by more than half a year (Dec -> Jan) starts the next year; ``Jan -> Dec``
  (jitter on a central server at New Year) goes back one.
* Uptime stamps (``dmesg``, pstore, /dev/kmsg) are placed at ``boot_time + uptime`` when
  ``boot_time`` is given, else rejected: without it they cannot be put on the wall clock.
* ``host`` comes from the line when it has one, else ``host_from_name``. A log-level word (``ERROR``,
  ``warn``, ``Info``...) where the header has its host is no host (DCGM's nv-hostengine.log
  ``2026-11-17 12:10:03.624 ERROR [3125:3190] msg``): with no tag after it, it stays the message's first
  word. ``program`` is the syslog
  tag (``kernel`` for kernel-ring-buffer formats, ``nv-fabricmanager`` for Fabric Manager).
* The kernel's own ``[123.456]`` uptime prefix at the start of a syslog/journald message is
  removed, so that it does not leak into templates; the rest of the message is kept verbatim
  (trailing whitespace stripped). RFC 5424 structured data is dropped.
* Invalid UTF-8 is replaced (U+FFFD) and the line kept; NUL bytes (left by a crash in a
  preallocated log file) are dropped; CRLF endings are accepted. Blank lines are not records.
* A last line without a line break that is not a complete record of the file's shape (no format,
  a JSON line that does not parse, no message, no program tag or host where the line before has
  one) was cut while the file was written or copied: it is rejected (:data:`CUT_LAST_LINE`).

>>> r = parse_syslog_bytes(b"Jan 15 03:04:05 gpu017 kernel: [12.5] NVRM: Xid 79\\n", "x.log",
...     year_hint=(datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 2, 1, tzinfo=UTC)))
>>> r.lines.select("ts", "host", "program", "message").row(0)
(datetime.datetime(2025, 1, 15, 3, 4, 5, tzinfo=zoneinfo.ZoneInfo(key='UTC')), 'gpu017', 'kernel', 'NVRM: Xid 79')
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import zoneinfo
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePath

import numpy as np
import polars as pl
import pyarrow as pa

from gpusre.models.sources.sacct.parse import REJECT_SCHEMA
from gpusre.models.ingest.landing_files import CUT_LAST_LINE, unterminated_last_line
from gpusre.models.ingest.slurm_values import check_timezone

__all__ = [
    "LINE_SCHEMA",
    "REJECT_SCHEMA",
    "FILE_COUNTS_SCHEMA",
    "FORMATS",
    "UPTIME_WITHOUT_BOOT",
    "CUT_LAST_LINE",
    "NUL_ONLY_LINE",
    "SyslogBatchResult",
    "SyslogInput",
    "SyslogParseResult",
    "YearHint",
    "host_from_filename",
    "parse_syslog_batch",
    "parse_syslog_bytes",
    "parse_syslog_file",
]

#: ``(start, end)`` of the time the data is expected to cover (naive = UTC).
YearHint = tuple[datetime, datetime]

_UTC = pl.Datetime("us", "UTC")

#: Polars schema of parsed lines.
LINE_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "ts": _UTC,
    "host": pl.String(),
    "program": pl.String(),
    "pid": pl.Int64(),
    "message": pl.String(),
    "format": pl.String(),
}

#: Reject reason for uptime-only stamps when the boot time is unknown.
UPTIME_WITHOUT_BOOT = "dmesg uptime timestamp without a known boot time"
_NO_FORMAT = "no recognised log line format (no timestamp)"

# Building blocks of the header regexes (Rust regex syntax: no look-around, named groups).
_PRI = r"(?:<(?P<pri>\d{1,3})>)?"
_DECODE = r"(?:(?P<fac>[a-z]+) *:(?P<lvl>[a-z]+) *: )?"  # dmesg --decode "kern  :warn  : "
_MON = r"(?P<b>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_HMS = r"(?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})"
_DATE = r"(?P<Y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})"
_ISO = _DATE + "T" + _HMS
# Syslog-like ISO stamps also come with a space for the T (custom rsyslog/syslog-ng templates, exports).
_ISO_T_OR_SPACE = _DATE + "[T ]" + _HMS
_FRAC = r"(?:\.(?P<frac>\d{1,9}))?"
_OFF = r"(?P<off>Z|[+-]\d{2}:?\d{2})"
# Log-level words (any case) a program writes where a syslog header has its host: DCGM's nv-hostengine.log
# "2026-11-17 12:10:03.624 ERROR [3125:3190] msg", a template printing the severity text. Never a host: the
# level alternative comes first (Rust regex has no look-ahead; leftmost-first takes it), the host is then
# the file's (its name or folder), and a level word with no tag after it goes back to the message.
_LEVEL = r"(?i:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERR|ERROR|CRIT|CRITICAL|ALERT|EMERG|FATAL)"
# Optional host: never contains ':' or '[' so that "Jan 15 03:04:05 sshd[1]: x" has no host.
_HOST = r"(?:(?P<level>" + _LEVEL + r") |(?P<host>[^\s:\[\]]+) )?"
# Syslog tag "prog[pid]: "; "syslogd 1.4.1: " (name + version) is a tag too (sysklogd).
_TAG = r"(?:(?P<prog>[^\s:\[\]]+(?: \d[\d.]*)?)(?:\[(?P<pid>\d+)\])?: ?)?"
# RFC 5424 STRUCTURED-DATA: "-" or one or more [id k="v"] elements (quoted values may hold ']').
_SD = r'(?:-|(?:\[(?:[^\]"\\]|\\.|"(?:[^"\\]|\\.)*")*\])+)'

#: Header regex of each line format, tried in this order (they are mutually exclusive).
FORMATS: dict[str, str] = {
    "rfc3164": (
        r"^" + _PRI + _MON + r" {1,2}(?P<d>\d{1,2}) (?:(?P<Y>\d{4}) )?" + _HMS + _FRAC + " "
        + _HOST + _TAG
    ),
    "iso8601": r"^" + _PRI + _ISO_T_OR_SPACE + _FRAC + _OFF + "? " + _HOST + _TAG,
    "dmesg_iso": r"^" + _DECODE + _ISO + r",(?P<frac>\d{1,9})" + _OFF + r"(?: |$)",
    "rfc5424": (
        r"^<(?P<pri>\d{1,3})>\d{1,2} (?:-|" + _ISO + _FRAC + _OFF + r"?) (?P<host>\S+) "
        r"(?P<prog>\S+) (?P<pid>\S+) \S+ " + _SD + r"(?: |$)"
    ),
    "dmesg_ctime": (
        r"^" + _DECODE + r"\[[A-Z][a-z]{2} " + _MON + r" {1,2}(?P<d>\d{1,2}) " + _HMS
        + r" (?P<Y>\d{4})\](?: |$)"
    ),
    "dmesg_uptime": r"^" + _DECODE + _PRI + r"\[ *(?P<up>\d+)\.(?P<upf>\d{1,9})\](?: |$)",
    "kmsg": r"^(?P<pri>\d{1,3}),\d+,(?P<usec>\d+),[^;]*;",
    "fabricmanager": r"^\[" + _MON + r" (?P<d>\d{1,2}) (?P<Y>\d{4}) " + _HMS + r"\] ",
    "slurm": r"^\[" + _ISO + _FRAC + _OFF + r"?\] ",
    "journald_json": r"^\{",
    # journalctl -o short-full: the zone is journalctl's own (an abbreviation, or a numeric offset)
    "journal_full": (
        r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) " + _ISO_T_OR_SPACE + _FRAC
        + r" (?P<zone>[A-Za-z][A-Za-z0-9+\-]{1,9}|[+-]\d{4}) " + _HOST + _TAG
    ),
    # journalctl -o short-unix: seconds since the epoch
    "journal_unix": r"^(?P<epoch>\d{9,11})\.(?P<frac>\d{1,9}) " + _HOST + _TAG,
    # IBM Storage Scale (GPFS) daemon log, mmfs.log: "2026-11-30_13:59:00.123+0000: [E] ..."; the node
    # is the file's (its name or folder), the program mmfs
    "gpfs": r"^" + _DATE + "_" + _HMS + _FRAC + _OFF + ": ",
}

# Formats whose messages may carry the kernel's "[123.456] " uptime prefix (forwarded kernel lines).
_SYSLOG_LIKE = {"rfc3164", "iso8601", "rfc5424", "journald_json", "journal_full", "journal_unix"}
# Formats read from the kernel ring buffer: the program is the kernel unless the facility says not.
_KERNEL_RING = {"dmesg_iso", "dmesg_ctime", "dmesg_uptime", "kmsg"}
_MONTHS = {m: i for i, m in enumerate(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1
)}
_KERNEL_UPTIME_PREFIX = r"^\[ *\d+\.\d+\] ?"
# A drop of the local wall clock larger than this inside the DST fall-back hour means the
# repeated hour has started (smaller drops are delivery jitter on central syslog servers).
_FALL_BACK_MIN_DROP = timedelta(minutes=5)
# Year arithmetic without a year: a month-day-time key, 32 "days" per month, half a year apart.
_KEY_DAY = 86_400
_HALF_YEAR = 6 * 32 * _KEY_DAY


@dataclass(frozen=True)
class SyslogParseResult:
    """Outcome of parsing one node log file.

    ``lines`` follows :data:`LINE_SCHEMA` (file order), ``rejects`` :data:`REJECT_SCHEMA`;
    ``rows_read == len(lines) + len(rejects)`` (blank lines excluded).
    """

    lines: pl.DataFrame
    rejects: pl.DataFrame
    rows_read: int


# ---------------------------------------------------------------------------------------------
# Host names from file names


# Log names that are never a host: "kern.log", "syslog", "messages", "gpu017/dmesg.log", ...
_GENERIC_NAMES = frozenset(
    """syslog messages kern kernel dmesg daemon auth authpriv user debug cron mail secure boot
    journal journald kmsg pstore console all log logs var remote rsyslog hosts nodes node_logs
    slurm slurmd slurmctld slurmdbd nvidia fabricmanager nv-fabricmanager nvidia-fabricmanager
    landing archive""".split()
)
_HOSTNAME_RE = re.compile(r"^(?=.*\d)[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*$")
_DATE_RE = re.compile(r"^\d{4}(?:-?\d{2}(?:-?\d{2})?)?$|^\d{1,2}$")
_ROTATION_RE = re.compile(r"(?:\.\d+|-\d{8}|[.-]\d{4}-\d{2}-\d{2})$")
_COMPRESSION_RE = re.compile(r"\.(?:gz|bz2|xz)$")
_EXTENSION_RE = re.compile(r"\.(?:log|txt|json|jsonl|out|err)$")
_SEPARATORS_RE = re.compile(r"[._]")


def _host_from_part(part: str, *, is_file: bool) -> str | None:
    """The host named by one path component, or None. File names lose compression, rotation
    and extension suffixes and generic log-name tokens joined by ``.``/``_`` (``gpu017_dmesg``)."""
    name = part
    if is_file:
        for _ in range(3):  # e.g. gpu017.log.1.gz: compression, rotation, extension, in any order
            name = _COMPRESSION_RE.sub("", name)
            name = _ROTATION_RE.sub("", name)
            name = _EXTENSION_RE.sub("", name)
        tokens = _SEPARATORS_RE.split(name)
        # Drop generic tokens at either end (gpu017_kern, kern.gpu017) but keep FQDN dots inside.
        while len(tokens) > 1 and tokens[-1].lower() in _GENERIC_NAMES:
            tokens.pop()
        while len(tokens) > 1 and tokens[0].lower() in _GENERIC_NAMES:
            tokens.pop(0)
        name = ".".join(tokens) if "_" not in name else "_".join(tokens)
    if not name or name.lower() in _GENERIC_NAMES or _DATE_RE.match(name):
        return None
    return name if _HOSTNAME_RE.match(name) else None


#: Hosts that name no node: localhost, an IPv4 or IPv6 address (Rust regex, case-insensitive). A line
#: from such a host belongs to the node its file is named after (see the syslog ingest's node naming).
PLACEHOLDER_HOST = r"(?i)^(?:localhost(?:\.localdomain)?|\(none\)|\d{1,3}(?:\.\d{1,3}){3}|[0-9a-f]*:[0-9a-f:.]*)$"


def host_from_filename(name: str) -> str | None:
    """Guess the node a log file belongs to from its landing-relative path, or None.

    The file name is tried first (``gpu017.log.1.gz``, ``gpu017_dmesg.log``,
    ``kern.log-gpu017``-style names are *not* split on ``-`` because host names contain
    hyphens), then the directories from the nearest up (``syslog/2026-09-01/gpu017/kern.log``),
    skipping generic log names (``kern``, ``syslog``, ``messages``...) and dates. A candidate must
    be a valid RFC 1123 host name containing a digit (cluster node names do; this keeps words such
    as ``archive`` or ``gpud`` out).

    >>> host_from_filename("gpu017.log.1.gz")
    'gpu017'
    >>> host_from_filename("syslog/2026-09-01/gpu017/kern.log")
    'gpu017'
    >>> host_from_filename("syslog/messages-20250101.gz") is None
    True
    """
    parts = PurePath(name).parts
    for i, part in enumerate(reversed(parts)):
        host = _host_from_part(part, is_file=(i == 0))
        if host is not None:
            return host
    return None


# ---------------------------------------------------------------------------------------------
# Time helpers (vectorised)


def _to_utc_boundary(value: datetime) -> datetime:
    """Aware UTC datetime (naive values are UTC)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _int(name: str) -> pl.Expr:
    return pl.col(name).cast(pl.Int64, strict=False)


def _micros(frac: pl.Expr) -> pl.Expr:
    """Fraction digits ("123", "283575", "123456789") -> microseconds (0 when absent)."""
    return frac.str.slice(0, 6).str.pad_end(6, "0").cast(pl.Int64, strict=False).fill_null(0)


def _with_naive(df: pl.DataFrame, year: pl.Expr, month: pl.Expr, day: pl.Expr) -> pl.DataFrame:
    """Add ``_naive`` (naive Datetime('us')) and ``_valid`` from integer parts plus columns H, M,
    S, frac.

    The instant is calendar arithmetic on integers (:func:`_epoch_days`), not ``pl.datetime``, which
    builds a date per row (~4x slower) and raises on impossible dates (Feb 30): invalid rows are
    flagged and get no time. ``_valid`` is materialized first, as the caller reads it too.
    """
    hour, minute, second = _int("H"), _int("M"), _int("S")
    days_in_month = (_days_before_month(month + 1) - _days_before_month(month)
                     + ((month == 2) & _is_leap(year)).cast(pl.Int64))
    valid = (
        year.is_between(1900, 2200)
        & month.is_between(1, 12)
        & day.is_between(1, days_in_month)
        & hour.is_between(0, 23)
        & minute.is_between(0, 59)
        & second.is_between(0, 60)
    ).fill_null(False)
    df = df.with_columns(valid.alias("_valid"))
    # A leap second (":60") is folded onto ":59" rather than rejecting the line.
    seconds = (_epoch_days(year, month, day) * _KEY_DAY + hour * 3600 + minute * 60
               + second.clip(upper_bound=59))
    no_fraction = "frac" not in df.columns or df.get_column("frac").null_count() == df.height
    micros = seconds * 1_000_000 + (0 if no_fraction else _micros(pl.col("frac")))
    return df.with_columns(pl.when(pl.col("_valid")).then(micros.cast(pl.Datetime("us"))).alias("_naive"))


def _epoch_days(year: pl.Expr, month: pl.Expr, day: pl.Expr) -> pl.Expr:
    """Days from 1970-01-01 to (year, month, day) of the proleptic Gregorian calendar (a valid date)."""
    return _days_before_year(year) + _days_before_month(month) + ((month > 2) & _is_leap(year)).cast(pl.Int64) + day - 1


def _offset_seconds(off: pl.Expr) -> pl.Expr:
    """"Z", "+09:00", "-0500" -> seconds east of UTC."""
    digits = off.str.replace(":", "", literal=True)
    magnitude = digits.str.slice(1, 2).cast(pl.Int64, strict=False) * 3600 + digits.str.slice(
        3, 2
    ).cast(pl.Int64, strict=False) * 60
    return (
        pl.when(off == "Z")
        .then(0)
        .when(digits.str.starts_with("-"))
        .then(-magnitude)
        .otherwise(magnitude)
    )


def _offset_valid(off: pl.Expr) -> pl.Expr:
    """A UTC offset that exists: "Z", or at most 14 hours (UTC+14, Kiribati) with minutes below 60;
    "+99:00" would silently shift the line by days."""
    digits = off.str.replace(":", "", literal=True)
    hours = digits.str.slice(1, 2).cast(pl.Int64, strict=False)
    minutes = digits.str.slice(3, 2).cast(pl.Int64, strict=False)
    return (off == "Z") | ((hours <= 14) & (minutes < 60)).fill_null(False)


#: How often :func:`_abbreviations_of_year` samples a zone: every abbreviation lasts months (a DST
#: period) or years, so four samples a day see each one; a year costs ~1,500 zoneinfo look-ups.
_ABBREVIATION_SAMPLE = timedelta(hours=6)


@lru_cache(maxsize=256)
def _abbreviations_of_year(timezone: str, year: int) -> frozenset[tuple[str, int]]:
    """``(abbreviation, UTC offset in seconds)`` pairs ``timezone`` (IANA) shows during ``year``, a
    day either side included (a line of local New Year's night is the old year in UTC)."""
    zone = zoneinfo.ZoneInfo(timezone)
    t = datetime(year, 1, 1, tzinfo=UTC) - timedelta(days=1)
    end = datetime(year + 1, 1, 1, tzinfo=UTC) + timedelta(days=1)
    pairs: set[tuple[str, int]] = set()
    while t <= end:
        local = t.astimezone(zone)
        offset, name = local.utcoffset(), local.tzname()
        if offset is not None and name:
            pairs.add((name, int(offset.total_seconds())))
        t += _ABBREVIATION_SAMPLE
    return frozenset(pairs)


def _zone_abbreviation_offsets(timezone: str, years: Iterable[int]) -> dict[str, str]:
    """The abbreviations of ``timezone`` (IANA, from zoneinfo) in ``years`` that each had one UTC
    offset then, as ``+HHMM`` offsets: what ``journalctl -o short-full`` prints after a local time
    says which instant it is. An abbreviation with two offsets in those years (Europe/Moscow's MSK
    in 2014: +04, then +03) is left out: it says nothing about the instant.

    >>> _zone_abbreviation_offsets("America/Chicago", [2026])
    {'CDT': '-0500', 'CST': '-0600'}
    >>> _zone_abbreviation_offsets("Europe/Berlin", [2026]), _zone_abbreviation_offsets("Asia/Tokyo", [2026])
    ({'CEST': '+0200', 'CET': '+0100'}, {'JST': '+0900'})
    """
    offsets: dict[str, set[int]] = {}
    for year in set(years):
        for name, seconds in _abbreviations_of_year(timezone, year):
            offsets.setdefault(name, set()).add(seconds)
    out: dict[str, str] = {}
    for name, found in sorted(offsets.items()):
        # only letters: tzdata spells zones without an abbreviation as their offset ("+04"); and whole minutes
        if len(found) == 1 and name.isalpha() and (seconds := next(iter(found))) % 60 == 0:
            sign, magnitude = ("-" if seconds < 0 else "+"), abs(seconds) // 60
            out[name] = f"{sign}{magnitude // 60:02d}{magnitude % 60:02d}"
    return out


def _localize(df: pl.DataFrame, timezone: str) -> pl.DataFrame:
    """Column ``_naive`` (local wall clock, file order) -> ``_local_ts`` (UTC), ``_gap`` and ``_dst_guess``.

    Ambiguous (fall-back) times take the earlier instant until the clock visibly goes back inside
    the repeated hour of that day, then the later one. ``_gap`` flags non-existent local times;
    ``_dst_guess`` the ambiguous ones of a file whose clock never visibly went back in that hour (a
    quiet node): nothing in the file says which pass they were logged in, so the earlier is a guess.
    """
    naive = pl.col("_naive")
    if timezone == "UTC":
        return df.with_columns(
            naive.dt.replace_time_zone("UTC").alias("_local_ts"), pl.lit(False).alias("_gap"),
            pl.lit(False).alias("_dst_guess"),
        )
    early = naive.dt.replace_time_zone(timezone, ambiguous="earliest", non_existent="null")
    late = naive.dt.replace_time_zone(timezone, ambiguous="latest", non_existent="null")
    df = df.with_columns(early.alias("_early"), late.alias("_late"))
    ambiguous = pl.col("_early") != pl.col("_late")
    df = df.with_columns(pl.when(ambiguous).then(naive.dt.date()).alias("_amb_day"))
    prev_max = naive.cum_max().shift(1).over("_file", "_amb_day")
    went_back = (ambiguous & ((prev_max - naive) > _FALL_BACK_MIN_DROP)).fill_null(False)
    df = df.with_columns(went_back.cast(pl.Int32).cum_sum().over("_file", "_amb_day").alias("_after_back"))
    return df.with_columns(
        pl.when(ambiguous & (pl.col("_after_back") > 0))
        .then(pl.col("_late"))
        .otherwise(pl.col("_early"))
        .dt.convert_time_zone("UTC")
        .alias("_local_ts"),
        (naive.is_not_null() & pl.col("_early").is_null()).alias("_gap"),
        (ambiguous & (pl.col("_after_back").max().over("_file", "_amb_day") == 0)).fill_null(False).alias("_dst_guess"),
    ).drop("_early", "_late", "_amb_day", "_after_back")


def _year_hints(hints: list[YearHint]) -> pl.DataFrame:
    """One row per file of a batch: ``_file``, the hint's bounds widened by 3 days (epoch seconds
    ``_lo``, ``_hi``) and the candidate years ``_y0`` .. ``_y1`` (the hint's years and one either side)."""
    bounds = [tuple(_to_utc_boundary(v) for v in hint) for hint in hints]
    return pl.DataFrame(
        {
            "_file": pl.Series(range(len(hints)), dtype=pl.UInt32),
            "_lo": [start.timestamp() - 3 * _KEY_DAY for start, _ in bounds],
            "_hi": [end.timestamp() + 3 * _KEY_DAY for _, end in bounds],
            "_y0": [start.year - 1 for start, _ in bounds],
            "_y1": [end.year + 1 for _, end in bounds],
        },
        schema={"_file": pl.UInt32, "_lo": pl.Float64, "_hi": pl.Float64, "_y0": pl.Int64, "_y1": pl.Int64},
    )


def _days_before_month(month: pl.Expr) -> pl.Expr:
    """Days before the first of ``month`` (1-12) in a common year (0, 31, 59, ..., 334), by arithmetic: a
    lookup per row costs more than the whole date. Also right for month 13 (365), so the days of month m
    are the difference of m + 1 and m."""
    return (367 * month - 362) // 12 - 2 * (month > 2).cast(pl.Int64)


def _is_leap(year: pl.Expr) -> pl.Expr:
    return (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))


def _days_before_year(year: pl.Expr) -> pl.Expr:
    """Days from 1970-01-01 to January 1 of ``year`` (proleptic Gregorian, any year)."""
    p = year - 1
    return 365 * (year - 1970) + (p // 4 - 1969 // 4) - (p // 100 - 1969 // 100) + (p // 400 - 1969 // 400)


def _infer_years(df: pl.DataFrame, hints: pl.DataFrame, *, by_row: bool = False) -> pl.DataFrame:
    """Add ``_year`` to year-less rows (columns ``_file``, ``_mon``, ``d``, H, M, S in file order;
    ``_w``: how many lines each row stands for).

    Per file: the in-file offset counts New Year crossings (month-day-time going back more than
    half a year); the base year is the candidate putting most rows inside the file's hint (see
    :func:`_year_hints`; ties: the last row closest to it, then the later year).

    Why the later year on a tie: a hint a year long (the default, the year before now; a year of
    accounting) admits both years for rows within its tolerance of the hint's end and start, and the
    new files of a nightly run are the newest days — the default hint's earlier year would put
    yesterday's lines a year back.

    The rows inside the hint are counted per (file, year offset, after February) group from the
    group's earliest and latest time of year: a group wholly inside or outside a candidate year's
    hint needs no row. Only files with a group that straddles a hint bound are counted row by row.
    ``by_row``: the definition, which the tests compare with — every file row by row, and each row's
    predecessor and New Year count taken per file.
    """
    seconds_of_day = _int("H") * 3600 + _int("M") * 60 + _int("S")
    key = (pl.col("_mon") * 32 + _int("d")) * _KEY_DAY + seconds_of_day
    # Seconds since January 1 in a common year; a candidate leap year adds a day after February.
    # Exact, not approximate: a tie between the years at both ends of a year-long hint is decided
    # within the hint's 3-day tolerance (the average month length used before was off by up to ~2 days).
    in_year = (_days_before_month(pl.col("_mon")) + _int("d") - 1) * _KEY_DAY + seconds_of_day
    # Both are materialized once: the candidate years below would otherwise re-parse the strings.
    df = df.with_columns(key.alias("_key"), in_year.alias("_in_year"), (pl.col("_mon") > 2).alias("_after_feb"))
    # A file's rows are contiguous (file order), so the previous row of the file is the previous row
    # unless the file changes there: a plain shift, not a window per file (~10x cheaper on 10 M rows).
    contiguous = not by_row and df.get_column("_file").is_sorted()
    same_file = pl.col("_file") == pl.col("_file").shift(1)
    previous = (pl.when(same_file).then(pl.col("_key").shift(1)) if contiguous
                else pl.col("_key").shift(1).over("_file"))
    previous_mon = (pl.when(same_file).then(pl.col("_mon").shift(1)) if contiguous
                    else pl.col("_mon").shift(1).over("_file"))
    delta = pl.col("_key") - previous
    wrap = (
        pl.when(delta < -_HALF_YEAR)
        .then(1)
        .when((delta > _HALF_YEAR) & (pl.col("_mon") == 12) & (previous_mon == 1))
        .then(-1)
        .otherwise(0)
    )
    wraps = df.select(wrap.alias("_wrap")).to_series()
    # Most files never cross New Year: no offset to accumulate.
    yoff = (pl.col("_wrap").cum_sum().over("_file") if by_row or (wraps != 0).any()
            else pl.lit(0, dtype=pl.Int32)).alias("_yoff")
    df = df.with_columns(wraps).with_columns(yoff)
    # Every candidate year k of every file (year _y0 + k): a file has few candidates, so k runs over the
    # batch's widest range. A row's instant in year k is its seconds into the year plus a start of year
    # (and leap day) that depends only on (file, year offset, after February).
    width = int(hints.select((pl.col("_y1") - pl.col("_y0")).max()).item() or 0) + 1
    year_of = [pl.col("_y0") + k + pl.col("_yoff") for k in range(width)]
    group = ["_file", "_yoff", "_after_feb"]
    groups = (df.group_by(group).agg(pl.col("_in_year").min().alias("_min"), pl.col("_in_year").max().alias("_max"),
                                     pl.col("_w").filter(pl.col("_in_year").is_not_null()).sum().alias("_n"))
              .join(hints, on="_file")
              .with_columns(*((_days_before_year(year) * _KEY_DAY
                               + pl.when(_is_leap(year) & pl.col("_after_feb")).then(_KEY_DAY).otherwise(0))
                              .alias(f"_start{k}") for k, year in enumerate(year_of))))
    # Per file and k: the rows inside the hint, from the groups wholly inside it; a group across a bound
    # sends its file to the row-by-row count.
    inside = [((pl.col(f"_start{k}") + pl.col("_min")) >= pl.col("_lo"))
              & ((pl.col(f"_start{k}") + pl.col("_max")) <= pl.col("_hi")) for k in range(width)]
    outside = [((pl.col(f"_start{k}") + pl.col("_max")) < pl.col("_lo"))
               | ((pl.col(f"_start{k}") + pl.col("_min")) > pl.col("_hi")) for k in range(width)]
    straddles = pl.any_horizontal(*(~(i | o) for i, o in zip(inside, outside, strict=True)))
    per_file = groups.group_by("_file").agg(
        pl.lit(by_row).or_(straddles.any()).alias("_by_row"),
        *((pl.col("_n") * inside[k]).sum().alias(f"n{k}") for k in range(width)))
    starts = groups.select(*group, *(f"_start{k}" for k in range(width)))
    last = (df.group_by("_file").agg(pl.col("_yoff", "_after_feb", "_in_year").last())
            .join(starts, on=group, how="left", nulls_equal=True)
            .select("_file", *((pl.col(f"_start{k}") + pl.col("_in_year")).alias(f"last{k}") for k in range(width))))
    stats = per_file.join(last, on="_file", how="left")
    row_files = stats.filter("_by_row").get_column("_file")
    if len(row_files):
        # The definition: each row's instant in each candidate year against the hint.
        rows = df.filter(pl.col("_file").is_in(row_files.implode())).select(
            *group, "_in_year", "_w").join(
            starts.join(hints.select("_file", "_lo", "_hi"), on="_file"),
            on=group, how="left", maintain_order="left", nulls_equal=True)
        exprs: list[pl.Expr] = []
        for k in range(width):
            instant = pl.col(f"_start{k}") + pl.col("_in_year")
            exprs += [(instant.is_between(pl.col("_lo"), pl.col("_hi")) * pl.col("_w")).sum().alias(f"n{k}"),
                      instant.last().alias(f"last{k}")]
        by_rows = rows.group_by("_file").agg(*exprs)
        stats = pl.concat([stats.filter(~pl.col("_by_row")).drop("_by_row"), by_rows], how="diagonal_relaxed")
    else:
        stats = stats.drop("_by_row")
    stats = stats.join(hints, on="_file")
    candidates = pl.concat(
        stats.select("_file", "_lo", "_hi", (pl.col("_y0") + k).alias("_base"), pl.col("_y1"),
                     pl.col(f"n{k}").cast(pl.Int64).alias("_n"),
                     pl.col(f"last{k}").cast(pl.Float64).fill_null(0.0).alias("_last"))
        for k in range(width)
    ).filter(pl.col("_base") <= pl.col("_y1"))
    distance = pl.max_horizontal(pl.col("_lo") - pl.col("_last"), pl.col("_last") - pl.col("_hi"), pl.lit(0.0))
    best = (
        candidates.with_columns(distance.alias("_distance"))
        .sort("_file", "_n", "_distance", "_base", descending=[False, True, False, True])
        .unique("_file", keep="first")
        .select("_file", "_base")
    )
    return (
        df.join(best, on="_file", how="left", maintain_order="left")
        .with_columns((pl.col("_base") + pl.col("_yoff")).alias("_year"))
        .drop("_key", "_in_year", "_after_feb", "_wrap", "_yoff", "_base", "_w")
    )


# ---------------------------------------------------------------------------------------------
# Per-format parsing


_OUT_COLS = ["_file", "line_no", "line", "ts", "host", "program", "pid", "message", "format", "error", "_dst_guess"]


# Fast path for the dominant header shapes "Mmm dd HH:MM:SS host prog[pid]: msg" (RFC 3164) and
# "YYYY-MM-DDTHH:MM:SS[.frac][off] host prog[pid]: msg" (rsyslog ISO): the timestamp is read by
# position and host/tag by a split on spaces, with a short regex only on the tag. Lines routed here
# already match the format's header regex; the route checks pin the same decomposition, so the
# groups are identical to extract_groups (tests compare both). Other lines take the regex.
_FAST_PATH = True
_FAST_ROUTE = {
    "rfc3164": r"^[A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} ",
    "iso8601": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}",
}
_FAST_HOST = r"^[^\s:\[\]]+$"
_FAST_LEVEL = r"^" + _LEVEL + r"$"  # a level word where the host goes: the regex path reads it
_FAST_TAG = r"^(?P<prog>[^\s:\[\]]+)(?:\[(?P<pid>\d+)\])?:$"
_FAST_ISO_SUFFIX = r"^(?:\.(?P<frac>\d{1,9}))?(?P<off>Z|[+-]\d{2}:?\d{2})?$"


def _header_groups_regex(sub: pl.DataFrame, fmt: str) -> pl.DataFrame:
    """``_file``, ``line_no``, ``line``, the header regex's named groups and ``_msg`` (rest of the line)."""
    pattern = FORMATS[fmt]
    # The outer group gives the header length; the message is sliced off without regex work.
    groups = sub.select(
        "_file", "line_no", "line", pl.col("line").str.extract_groups(f"(?P<_hdr>{pattern[1:]})").alias("g")
    ).unnest("g")
    return groups.with_columns(
        pl.col("line").str.slice(pl.col("_hdr").str.len_chars()).alias("_msg")
    ).drop("_hdr")


def _header_groups(sub: pl.DataFrame, fmt: str, *, fast: bool) -> pl.DataFrame:
    """:func:`_header_groups_regex`, with the fast path for lines of the common shapes."""
    if not fast or fmt not in _FAST_ROUTE or sub.is_empty():
        return _header_groups_regex(sub, fmt)
    line = pl.col("line")
    if fmt == "rfc3164":
        # "Mmm dd HH:MM:SS " is 16 characters; then host, tag, message.
        head = 16
        parts = line.str.slice(head).str.split_exact(" ", 1)
        ts_cols = [
            line.str.slice(0, 3).alias("b"),
            line.str.slice(4, 2).str.strip_chars_start(" ").alias("d"),
            pl.lit(None, dtype=pl.String).alias("Y"),
        ]
        host_f, tag_f = "field_0", "field_1"
    else:
        head = 0
        parts = line.str.split_exact(" ", 2)
        ts_cols = [
            line.str.slice(0, 4).alias("Y"),
            line.str.slice(5, 2).alias("m"),
            line.str.slice(8, 2).alias("d"),
        ]
        host_f, tag_f = "field_1", "field_2"
    # Split tokens only (no copy of the long message); the message starts after "host tag ".
    tokens = [f"field_{i}" for i in range(3 if fmt == "iso8601" else 2)]
    msg_start = pl.sum_horizontal(pl.col(c).str.len_chars() + 1 for c in tokens) + head
    cand = sub.with_columns(
        line.str.contains(_FAST_ROUTE[fmt]).alias("_route"), parts.alias("_p")
    ).unnest("_p")
    tag = pl.col(tag_f).str.extract_groups(_FAST_TAG)
    cand = cand.with_columns(
        tag.struct.field("prog").alias("prog"), tag.struct.field("pid").alias("pid")
    )
    extra: list[pl.Expr] = []
    ok = (pl.col("_route") & pl.col(host_f).str.contains(_FAST_HOST) & ~pl.col(host_f).str.contains(_FAST_LEVEL)
          & pl.col("prog").is_not_null())
    if fmt == "iso8601":
        suffix = pl.col("field_0").str.slice(19).str.extract_groups(_FAST_ISO_SUFFIX)
        cand = cand.with_columns(suffix.alias("_sfx")).with_columns(
            pl.col("_sfx").struct.field("frac").alias("frac"),
            pl.col("_sfx").struct.field("off").alias("off"),
            # An unmatched suffix gives a null struct; all-null fields also mean "no suffix".
            (pl.col("field_0").str.slice(19) == "")
            .or_(pl.col("_sfx").struct.field("frac").is_not_null())
            .or_(pl.col("_sfx").struct.field("off").is_not_null())
            .alias("_sfx_ok"),
        )
        ok = ok & pl.col("_sfx_ok")
        extra = [pl.col("frac"), pl.col("off")]
    else:
        extra = [pl.lit(None, dtype=pl.String).alias("frac")]
    cand = cand.with_columns(ok.fill_null(False).alias("_ok"))
    fast_rows = cand.filter("_ok").select(
        "_file",
        "line_no",
        "line",
        pl.lit(None, dtype=pl.String).alias("pri"),
        *ts_cols,
        line.str.slice(7 if fmt == "rfc3164" else 11, 2).alias("H"),
        line.str.slice(10 if fmt == "rfc3164" else 14, 2).alias("M"),
        line.str.slice(13 if fmt == "rfc3164" else 17, 2).alias("S"),
        *extra,
        pl.lit(None, dtype=pl.String).alias("level"),
        pl.col(host_f).alias("host"),
        "prog",
        "pid",
        line.str.slice(msg_start).alias("_msg"),
    )
    rest = cand.filter(~pl.col("_ok")).select("_file", "line_no", "line")
    if rest.is_empty():
        return fast_rows
    slow = _header_groups_regex(rest, fmt)
    return pl.concat([fast_rows, slow.select(fast_rows.columns)]).sort("_file", "line_no")


#: The header fields a line's timestamp (and its reject reason) is computed from.
_STAMP_COLUMNS = ("b", "m", "Y", "d", "H", "M", "S", "frac", "off")
#: Lines of the sample :func:`_stamp_runs` looks at, and the mean run length in it from which
#: rows are collapsed into runs (below it, finding the runs costs more than it saves).
_RUN_SAMPLE = 4096
_MIN_MEAN_RUN = 2


def _stamp_runs(stamps: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series] | None:
    """The first row of each run of consecutive rows with the same file and timestamp fields, with
    the run's length ``_w``, and per row the index of its run; None when runs are short.

    Why: a central syslog server's file holds a cluster's lines in time order, a dozen or more per
    second, and the year, validity, time zone and offset of a line depend only on its file and
    these fields and on the runs before it (in file order). Computing them once per run does the
    same work on a tenth of the rows. A per-node file has runs of about one line; its sample says
    so and the rows are used as they are. Either way the result is the same."""
    if stamps.is_empty():
        return None
    key = pl.struct(pl.exclude("line_no"))
    sample = stamps.head(_RUN_SAMPLE)
    if sample.height < _MIN_MEAN_RUN * (sample.select(key.rle_id().max()).item() + 1):
        return None
    run_of_row = stamps.select(key.rle_id().alias("_run")).to_series()
    starts = (run_of_row.diff() != 0).fill_null(True).arg_true()
    lengths = starts.diff(null_behavior="drop").cast(pl.Int64).append(
        pl.Series([stamps.height - starts[-1]], dtype=pl.Int64))
    first_rows = stamps[starts].with_columns(lengths.alias("_w"))
    return first_rows, run_of_row


def _stamp_times(stamps: pl.DataFrame, fmt: str, timezone: str, hints: pl.DataFrame) -> pl.DataFrame:
    """``ts``, the reject reason ``_error`` (null when the time is good) and ``_dst_guess`` (a local time
    of the repeated DST hour placed by a guess: :func:`_localize`) of timestamp rows
    (``_file``, ``line_no``, the header's time fields, ``_w``: how many lines each row stands for),
    in file and line order; one row out per row in."""
    names = set(stamps.columns)

    def col(name: str) -> pl.Expr:
        return pl.col(name) if name in names else pl.lit(None, dtype=pl.String)

    # Day and time fields as numbers once: year inference and the datetime both read them (a string cast of
    # four columns costs ~0.5 s per 10 M lines each time).
    df = stamps.with_columns(_int(c) for c in ("d", "H", "M", "S") if c in names)
    if "b" in names:
        df = df.with_columns(pl.col("b").replace_strict(_MONTHS, return_dtype=pl.Int64).alias("_mon"))
    else:
        df = df.with_columns(_int("m").alias("_mon"))
    if fmt == "rfc3164":
        missing = df.filter(pl.col("Y").is_null())
        if len(missing):
            years = _infer_years(missing.select("_file", "line_no", "_w", "_mon", "d", "H", "M", "S"), hints)
            if len(missing) == len(df):
                # Every row (the usual RFC 3164 file): _infer_years keeps the row order, so
                # the column attaches as is; the join costs ~0.2 s per million lines.
                df = df.with_columns(years["_year"])
            else:
                df = df.join(years.select("_file", "line_no", "_year"), on=["_file", "line_no"], how="left",
                             maintain_order="left")
        else:
            df = df.with_columns(pl.lit(None, dtype=pl.Int64).alias("_year"))
        year = pl.coalesce(_int("Y"), pl.col("_year"))
    else:
        year = _int("Y")
    df = _with_naive(df, year, pl.col("_mon"), _int("d"))
    df = _localize(df, timezone)
    off = col("off")
    return df.select(
        pl.when(off.is_not_null())
        .then(pl.col("_naive").dt.replace_time_zone("UTC") - pl.duration(seconds=_offset_seconds(off)))
        .otherwise(pl.col("_local_ts"))
        .alias("ts"),
        pl.when(year.is_null() & pl.lit(fmt == "rfc5424"))
        .then(pl.lit("RFC 5424 line without a timestamp (NILVALUE)"))
        .when(~pl.col("_valid"))
        .then(pl.lit("invalid date or time"))
        .when(off.is_not_null() & ~_offset_valid(off))
        .then(pl.format("impossible UTC offset {}", off))
        .when(off.is_null() & pl.col("_gap"))
        .then(pl.lit(f"local time does not exist in {timezone} (DST gap)"))
        .alias("_error"),
        (off.is_null() & pl.col("_dst_guess")).alias("_dst_guess"),
    )


def _without_uptime_prefix(message: pl.Series) -> pl.Series:
    """``message`` without the kernel's ``[123.456]`` uptime prefix (:data:`_KERNEL_UPTIME_PREFIX`). The
    regex runs on the messages that start with ``[`` only: a replace over every message copies them all
    (~1 s per 10 M lines), and few have the prefix."""
    rows = message.str.starts_with("[").arg_true()
    if rows.is_empty():
        return message
    return message.scatter(rows, message.gather(rows).str.replace(_KERNEL_UPTIME_PREFIX, ""))


def _parse_header_format(
    sub: pl.DataFrame,
    fmt: str,
    *,
    timezone: str,
    hints: pl.DataFrame,
    boot_time: datetime | None,
) -> pl.DataFrame:
    """Rows of one header-regex format (any files of a batch, in file and line order) ->
    :data:`_OUT_COLS` (``error`` set when rejected); ``hints``: :func:`_year_hints`."""
    groups = _header_groups(sub, fmt, fast=_FAST_PATH)
    names = set(groups.columns)

    def col(name: str) -> pl.Expr:
        return pl.col(name) if name in names else pl.lit(None, dtype=pl.String)

    df = groups.with_columns(
        pl.col("_msg").str.strip_chars_end().alias("message"), col("frac").alias("frac")
    )
    if fmt in _SYSLOG_LIKE:
        df = df.with_columns(_without_uptime_prefix(df.get_column("message")))
    if "level" in names:
        # A level word with no tag after it starts the program's own line ("ERROR [3125:3190] ..."): it is
        # the message's. Before a tag it is the header's severity field, dropped as the <PRI> is.
        df = df.with_columns(pl.when(pl.col("level").is_not_null() & col("prog").is_null())
                             .then(pl.concat_str([pl.col("level"), pl.lit(" "), pl.col("message")]))
                             .otherwise(pl.col("message")).alias("message"))
    if fmt == "rfc5424":
        # NILVALUE "-" means absent; the message may start with a UTF-8 BOM.
        df = df.with_columns(
            pl.when(col(c) != "-").then(col(c)).alias(c) for c in ("host", "prog", "pid")
        ).with_columns(pl.col("message").str.strip_prefix("\ufeff"))

    if fmt == "journal_full":
        # UTC/GMT and numeric zones are offsets, and so is an abbreviation of the cluster's own zone
        # (CST/CDT in America/Chicago): journalctl prints the one in force at the line's instant, so in
        # the repeated hour of a fall-back it says which pass the line is from. Another abbreviation
        # (EST in a cluster set to Chicago) is read as the cluster's local time, as before.
        zone = pl.col("zone")
        years = df.get_column("Y").cast(pl.Int64, strict=False).drop_nulls().unique()
        own = _zone_abbreviation_offsets(timezone, years.filter(years.is_between(1900, 2200)).to_list())
        df = df.with_columns(pl.when(zone.is_in(["UTC", "GMT", "Z"])).then(pl.lit("Z"))
                             .when(zone.str.contains(r"^[+-]\d{4}$")).then(zone)
                             .when(zone.is_in(list(own))).then(zone.replace_strict(own, default=None))
                             .alias("off"))
    error = pl.lit(None, dtype=pl.String)
    if fmt == "journal_unix":
        epoch_us = _int("epoch") * 1_000_000 + _micros(pl.col("frac"))
        df = df.with_columns(pl.from_epoch(epoch_us, time_unit="us").dt.replace_time_zone("UTC").alias("ts"))
    elif fmt in ("dmesg_uptime", "kmsg"):
        uptime_us = (
            _int("up") * 1_000_000 + _micros(pl.col("upf"))
            if fmt == "dmesg_uptime"
            else _int("usec")
        )
        if boot_time is None:
            ts = pl.lit(None, dtype=_UTC)
            error = pl.lit(UPTIME_WITHOUT_BOOT)
        else:
            boot = pl.lit(_to_utc_boundary(boot_time)).cast(_UTC)
            ts = boot + pl.duration(microseconds=uptime_us)
        df = df.with_columns(ts.alias("ts"))
    else:
        stamps = df.select("_file", "line_no", *(c for c in _STAMP_COLUMNS if c in df.columns))
        runs = _stamp_runs(stamps)
        if runs is None:
            timed = _stamp_times(stamps.with_columns(pl.lit(1, dtype=pl.Int64).alias("_w")), fmt, timezone, hints)
            df = df.with_columns(timed)
        else:
            first_rows, run_of_row = runs
            timed = _stamp_times(first_rows, fmt, timezone, hints)
            df = df.with_columns(timed.get_column(c).gather(run_of_row) for c in timed.columns)
        error = pl.col("_error")

    if fmt in _KERNEL_RING:
        # Facility from dmesg --decode or from the priority (facility * 8 + level); 0 = kern.
        facility = col("fac")
        not_kernel = (facility.is_not_null() & (facility != "kern")) | (
            _int("pri") >= 8 if "pri" in names else pl.lit(False)
        )
        program = pl.when(not_kernel.fill_null(False)).then(None).otherwise(pl.lit("kernel"))
    elif fmt == "fabricmanager":
        program = pl.lit("nv-fabricmanager")
    elif fmt == "gpfs":
        program = pl.lit("mmfs")
    elif fmt == "slurm":
        # A node's Slurm daemon log (slurmd.log) names no program: its lines are slurmd's, so the
        # catalog's `slurmd: error:` rows (and NHC output slurmd relays) classify them as in syslog.
        program = pl.lit("slurmd")
    else:
        program = col("prog")
    return df.select(
        "_file",
        "line_no",
        "line",
        "ts",
        col("host").alias("host"),
        program.cast(pl.String).alias("program"),
        col("pid").cast(pl.Int64, strict=False).alias("pid"),
        "message",
        pl.lit(fmt).alias("format"),
        error.alias("error"),
        (pl.col("_dst_guess") if "_dst_guess" in df.columns else pl.lit(False)).alias("_dst_guess"),
    )


def _decode_byte_array(text: str | None) -> str | None:
    """journald stores non-UTF-8 or binary MESSAGE fields as a JSON array of byte values."""
    if text is None:
        return None
    try:
        values = [int(v) for v in text.strip("[] ").split(",") if v.strip()]
        return bytes(values).decode("utf-8", errors="replace")
    except ValueError:
        return None


def _parse_journald(sub: pl.DataFrame) -> pl.DataFrame:
    """``journalctl -o json`` rows -> :data:`_OUT_COLS`."""
    line = pl.col("line")

    def field(name: str) -> pl.Expr:
        return line.str.json_path_match(f"$.{name}")

    df = sub.with_columns(
        field("__REALTIME_TIMESTAMP").cast(pl.Int64, strict=False).alias("_us"),
        field("_HOSTNAME").alias("host"),
        pl.coalesce(field("SYSLOG_IDENTIFIER"), field("_COMM")).alias("program"),
        pl.coalesce(field("_PID"), field("SYSLOG_PID")).cast(pl.Int64, strict=False).alias("pid"),
        field("MESSAGE").alias("message"),
        line.str.contains(r'"MESSAGE"\s*:\s*\[').alias("_bytes"),
    )
    if df["_bytes"].any():
        # Rare (binary or non-UTF-8 messages): decode only those rows in Python.
        decoded = df.filter("_bytes").select(
            "_file",
            "line_no",
            pl.col("message")
            .map_elements(_decode_byte_array, return_dtype=pl.String)
            .alias("_decoded"),
        )
        df = df.join(decoded, on=["_file", "line_no"], how="left", maintain_order="left").with_columns(
            pl.when("_bytes").then(pl.col("_decoded")).otherwise(pl.col("message")).alias("message")
        )
    return df.select(
        "_file",
        "line_no",
        "line",
        pl.from_epoch(pl.col("_us"), time_unit="us").dt.replace_time_zone("UTC").alias("ts"),
        "host",
        "program",
        "pid",
        pl.col("message")
        .fill_null("")
        .str.replace(_KERNEL_UPTIME_PREFIX, "")
        .str.strip_chars_end()
        .alias("message"),
        pl.lit("journald_json").alias("format"),
        pl.when(pl.col("_us").is_null())
        .then(pl.lit("not a journald JSON entry with __REALTIME_TIMESTAMP"))
        .alias("error"),
        pl.lit(False).alias("_dst_guess"),  # journald stamps are epoch microseconds: never ambiguous
    )


def _format_order(lines: pl.DataFrame) -> list[str]:
    """Formats sorted by how often they match a sample of the lines: most files hold one format,
    so the first regex usually claims everything and later ones run on (almost) nothing. The
    formats are mutually exclusive, so the order changes the speed, never the result."""
    sample = lines.gather_every(max(1, lines.height // 1000)).head(1000)
    # One select for every format: a batch costs one Polars query here, not one per format.
    hits = sample.select(
        pl.col("line").str.contains(pattern).sum().alias(fmt) for fmt, pattern in FORMATS.items()
    ).row(0, named=True)
    return sorted(FORMATS, key=lambda f: -int(hits[f] or 0))


#: Larger inputs take the Python path: a Polars string column addresses its text in buffers of
#: at most 4 GiB, and the fast path below keeps each file's lines in one buffer.
_MAX_SINGLE_STRING = 1 << 30
_BOM = "\ufeff".encode()
_NEWLINE = np.uint8(ord("\n"))


def _split_text(data: bytes) -> pl.Series:
    """Physical lines as Python would split the decoded text (invalid UTF-8 replaced, NULs
    dropped, CRLF accepted); the exact reference for :func:`_split_lines`.

    A line of NULs and blanks only keeps its NULs: dropped, it would be a blank line, skipped
    without a trace, and it is the trace of a crash (:data:`_NUL_ONLY`), which the parse rejects."""
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if "\r" in text:  # CRLF: cheaper on the whole text than per line
        text = text.replace("\r\n", "\n")
    lines = pl.Series(text.split("\n"), dtype=pl.String)
    if "\x00" not in text:
        return lines
    # NULs inside a record (a NUL run before the first line written after a reboot) are dropped,
    # the record loads.
    return pl.select(pl.when(lines.str.contains(_NUL_ONLY)).then(lines)
                     .otherwise(lines.str.replace_all("\x00", "", literal=True))).to_series()


def _valid_utf8(data: bytes, bounds: np.ndarray) -> list[bool]:
    """Per file, whether it is valid UTF-8: ``data`` holds the files back to back, file ``i`` being
    ``data[bounds[i]:bounds[i + 1]]``. One Arrow validation of them all, each file an element."""
    def validate(lo: int, hi: int) -> bool:
        offsets = bounds[lo:hi + 1] - bounds[lo]
        view = memoryview(data)[bounds[lo]:bounds[hi]]
        try:
            pa.LargeStringArray.from_buffers(hi - lo, pa.py_buffer(offsets), pa.py_buffer(view)).validate(full=True)
        except pa.ArrowInvalid:
            return False
        return True

    files = len(bounds) - 1
    if validate(0, files):
        return [True] * files
    return [validate(i, i + 1) for i in range(files)]  # rare: find the invalid ones


#: Bytes scanned for LF at a time (see :func:`_after_newlines`).
_SCAN_BYTES = 1 << 20


def _after_newlines(data: bytes) -> np.ndarray:
    """The positions just past each LF in ``data`` (int64, ascending).

    Scanned in 1 MiB pieces into one reused mask: a mask of the whole input (a fresh array as
    large as the file) cost more in page faults than the comparison itself."""
    buf = np.frombuffer(data, dtype=np.uint8)
    mask = np.empty(min(len(buf), _SCAN_BYTES), dtype=bool)
    found = [np.zeros(0, dtype=np.int64)]
    for lo in range(0, len(buf), _SCAN_BYTES):
        piece = buf[lo:lo + _SCAN_BYTES]
        hit = mask[:len(piece)]
        np.equal(piece, _NEWLINE, out=hit)
        found.append(np.flatnonzero(hit).astype(np.int64) + (lo + 1))
    return np.concatenate(found)


def _split_utf8(data: bytes | memoryview, bounds: np.ndarray) -> pl.DataFrame:
    """Files of valid UTF-8 split at LF: ``(_file, line_no, line)``. ``data`` holds the files back to
    back, file ``i`` being ``data[bounds[i]:bounds[i + 1]]`` (``bounds[0] == 0``); ``_file`` is ``i``.

    Each line is a slice of the files' bytes themselves: the offsets of one Arrow string array are
    the file starts and the positions just past each LF, so no byte is copied before Polars takes
    the array, and the LF that ends each line is then cut (3-4x faster than ``str.split`` +
    ``explode``, which copies the text twice). LF never occurs inside a multi-byte UTF-8
    sequence, and each file is valid on its own, so every line is valid UTF-8.
    """
    line_starts = _after_newlines(data)
    # A file start goes after a line start at the same position: that one begins the (empty) last
    # line of the file before, whose text ended with LF.
    at = np.searchsorted(line_starts, bounds[:-1], side="right")
    starts = np.insert(line_starts, at, bounds[:-1])
    is_file_start = np.zeros(len(starts), dtype=bool)
    is_file_start[at + np.arange(len(at))] = True
    index = np.arange(len(starts), dtype=np.int64)
    first_line = np.maximum.accumulate(np.where(is_file_start, index, 0))
    lines = pa.LargeStringArray.from_buffers(
        len(starts), pa.py_buffer(np.append(starts, len(data))), pa.py_buffer(data))
    return pl.DataFrame({
        "_file": pl.Series(np.cumsum(is_file_start) - 1, dtype=pl.UInt32),
        "line_no": pl.Series(index - first_line + 1, dtype=pl.Int64),
        "line": pl.Series(lines, dtype=pl.String).str.strip_suffix("\n"),
    })


def _split_batch(datas: list[bytes]) -> pl.DataFrame:
    """The contents of a batch of files -> their non-blank physical lines ``(_file, line_no, line)``
    (``_file``: the index in ``datas``), in file and line order; decoding and splitting vectorized.

    Common case (valid UTF-8, no NUL byte): Arrow validates the bytes and :func:`_split_utf8`
    splits every file of the batch at once, without copying the text (2x faster than
    ``bytes.decode`` + ``str.split`` + building a Series from a million Python strings, on top of
    its own gain; one query for a batch of small per-node files rather than one each). On valid
    UTF-8, removing the BOM and turning CRLF into LF on bytes is the same as on text. Other input
    takes :func:`_split_text`: there, dropping NULs before decoding could join the bytes around
    them into a different character, so the text-level order is kept.
    """
    fast: list[int] = []
    raws: list[bytes] = []
    for index, data in enumerate(datas):
        if len(data) < _MAX_SINGLE_STRING and b"\x00" not in data:
            raw = data.removeprefix(_BOM)
            fast.append(index)
            raws.append(raw.replace(b"\r\n", b"\n") if b"\r" in raw else raw)
    # The files back to back, joined once for the validation and the split (one file: not copied).
    data = raws[0] if len(raws) == 1 else b"".join(raws)
    bounds = np.cumsum([0] + [len(r) for r in raws], dtype=np.int64)
    valid = _valid_utf8(data, bounds) if raws else []
    parts: list[pl.DataFrame] = []
    # Runs of consecutive valid files, raws[first:position], stay under _MAX_SINGLE_STRING
    # together, so that their lines share one buffer.
    first: int | None = None
    for position, ok in enumerate([*valid, False]):
        if first is not None and (not ok or bounds[position + 1] - bounds[first] >= _MAX_SINGLE_STRING):
            part = _split_utf8(memoryview(data)[bounds[first]:bounds[position]],
                               bounds[first:position + 1] - bounds[first])
            files = pl.Series(fast[first:position], dtype=pl.UInt32)
            parts.append(part.with_columns(files.gather(part["_file"]).alias("_file")))
            first = None
        if ok and first is None:
            first = position
    slow = sorted(set(range(len(datas))) - {fast[p] for p, ok in enumerate(valid) if ok})
    parts += [
        _split_text(datas[index]).alias("line").to_frame().select(
            pl.lit(index, dtype=pl.UInt32).alias("_file"),
            pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("line_no"),
            "line",
        )
        for index in slow
    ]
    if not parts:
        return pl.DataFrame(schema={"_file": pl.UInt32, "line_no": pl.Int64, "line": pl.String})
    lines = pl.concat(parts).sort("_file", maintain_order=True) if slow else pl.concat(parts)
    # Anchored, so the regex stops at the first non-blank character of ordinary lines. journalctl's
    # own marker lines (`-- Boot 3f2c… --`, `-- Journal begins at … --`, `-- No entries --`) are not
    # records either: as rejects they inflated every journal export's reject count.
    return lines.filter(~pl.col("line").str.contains(_NOT_A_RECORD))


#: A line of NUL bytes (and blanks) only: a block the file system allocated to the log but whose
#: data never reached the disk — what a node that crashed (or lost power) while its logger wrote
#: leaves, where the last records were. Rejected (:data:`NUL_ONLY_LINE`), never skipped as blank:
#: the Data quality section is where the SRE sees that a node's log has a hole.
_NUL_ONLY = r"^[\s\x00]*\x00[\s\x00]*$"

#: Reject reason of a :data:`_NUL_ONLY` line (``{}``: its number of NUL bytes).
NUL_ONLY_LINE = "NUL bytes only ({}): the file was cut while written — a crash?"

#: Lines that are no log record: blank, or a journalctl marker.
_NOT_A_RECORD = r"^(?:\s*$|-- (?:Journal begins at |Logs begin at |Boot [0-9a-f]+ --|Reboot --|No entries --))"


def _split_lines(data: bytes) -> pl.DataFrame:
    """One file's non-blank physical lines ``(line_no, line)`` (see :func:`_split_batch`)."""
    return _split_batch([data]).drop("_file")


@dataclass(frozen=True)
class SyslogInput:
    """One node log file of a batch (see :func:`parse_syslog_batch`).

    ``data`` is the uncompressed content, ``source_file`` the landing-relative name recorded with
    each row, ``host_from_name`` the host of lines that do not name one, ``year_hint`` the time
    range RFC 3164 lines (no year) fall in (default: the last 12 months).
    """

    data: bytes
    source_file: str
    host_from_name: str | None = None
    year_hint: YearHint | None = None


#: Polars schema of :attr:`SyslogBatchResult.files`: one row per input file.
FILE_COUNTS_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(), "rows_read": pl.Int64(), "rows_loaded": pl.Int64(), "rows_rejected": pl.Int64(),
    "rows_dst_guessed": pl.Int64(),
}


@dataclass(frozen=True)
class SyslogBatchResult:
    """Outcome of parsing a batch of node log files.

    ``lines`` follows :data:`LINE_SCHEMA` and ``rejects`` :data:`REJECT_SCHEMA`, both in input-file
    order, then line order. ``files`` has one row per input, in input order: ``source_file``,
    ``rows_read`` (non-blank lines), ``rows_loaded``, ``rows_rejected``, ``rows_dst_guessed`` (loaded
    lines of the repeated DST hour that nothing in their file placed: read as the earlier instant).
    """

    lines: pl.DataFrame
    rejects: pl.DataFrame
    files: pl.DataFrame


_LAST_REPEATED = r"^last message repeated (\d+) times?$"


def _unfold_last_message_repeated(lines: pl.DataFrame) -> pl.DataFrame:
    """sysklogd's and busybox's ``last message repeated 9 times`` names no message: it stands for 9 more
    copies of the host's previous line in that file. It is rewritten into rsyslog's form, ``message
    repeated 9 times: [ <previous message> ]``, which the event catalog classifies and the failure marts
    count as 9 lines (ten Xid 63 lines cross the repeat threshold however the logger folds them)."""
    folded = pl.col("message").str.starts_with("last message repeated")
    if lines.is_empty() or not lines.select(folded.any()).item():
        return lines  # the common case: one cheap prefix test
    order = lines.columns
    n = pl.col("message").str.extract(_LAST_REPEATED, 1)
    own = pl.when(n.is_null()).then(pl.col("message"))  # the lines a fold can refer to
    previous = own.forward_fill().shift(1).over("_file", "host")
    out = (lines.with_row_index("_pos").sort("_file", "line_no", "_pos")
           .with_columns(pl.when(n.is_not_null() & previous.is_not_null())
                         .then(pl.format("message repeated {} times: [ {}]", n, previous))
                         .otherwise(pl.col("message")).alias("message"))
           .sort("_pos"))
    return out.select(order)


def parse_syslog_batch(
    files: list[SyslogInput], *, timezone: str = "UTC", boot_time: datetime | None = None
) -> SyslogBatchResult:
    """Parse many node log files as one frame; formats may be mixed per line.

    Each file is parsed exactly as on its own (years, DST fall-back, continuations and the host
    fall back per file), but a batch costs one set of Polars queries rather than one per file: a
    cluster writes thousands of small per-node files a day, and per-file query overheads would
    dominate. ``timezone`` is the IANA zone of local-time formats, ``boot_time`` the boot instant
    uptime stamps count from (naive = UTC); both hold for the whole batch. Raises ``ValueError``
    for an unknown timezone.
    """
    check_timezone(timezone)
    now = datetime.now(UTC)
    hints = _year_hints([f.year_hint or (now - timedelta(days=365), now) for f in files])
    meta = pl.DataFrame(
        {
            "_file": pl.Series(range(len(files)), dtype=pl.UInt32),
            "source_file": pl.Series([f.source_file for f in files], dtype=pl.String),
            "_host_from_name": pl.Series([f.host_from_name for f in files], dtype=pl.String),
        }
    )
    lines = _split_batch([f.data for f in files])

    parsed: list[pl.DataFrame] = []
    remaining = lines
    for fmt in _format_order(lines):
        if remaining.is_empty():
            break
        mask = remaining.get_column("line").str.contains(FORMATS[fmt])  # once for both filters
        sub = remaining.filter(mask)
        if sub.is_empty():
            continue
        remaining = remaining.filter(~mask)
        if fmt == "journald_json":
            parsed.append(_parse_journald(sub))
        else:
            parsed.append(_parse_header_format(sub, fmt, timezone=timezone, hints=hints, boot_time=boot_time))
    out_schema = {
        "_file": pl.UInt32(), "line_no": pl.Int64(), "line": pl.String(),
        **{k: LINE_SCHEMA[k] for k in LINE_SCHEMA if k not in ("source_file", "line_no")},
        "error": pl.String(), "_dst_guess": pl.Boolean(),
    }
    matched = pl.concat(
        [p.select(_OUT_COLS).cast(out_schema) for p in parsed]
        or [pl.DataFrame(schema=out_schema)]
    )
    # NUL-only lines match no format: picked from the (few) unmatched lines, not from every line.
    is_nul_only = remaining.get_column("line").str.contains(_NUL_ONLY)
    nul_only = remaining.filter(is_nul_only)
    result = _reject_cut_last_lines(_resolve_continuations(matched, remaining.filter(~is_nul_only), out_schema),
                                    _unterminated_last_lines([f.data for f in files]))
    if not nul_only.is_empty():
        # Added after continuations and cut last lines: they are no record to continue or to cut,
        # a line below them continues the record above them.
        result = pl.concat([result, _nul_only_rejects(nul_only, out_schema)]).sort("_file", "line_no")
    result = result.join(meta, on="_file", how="left", maintain_order="left")
    result = result.with_columns(pl.coalesce(pl.col("host"), pl.col("_host_from_name")).alias("host"))
    ok = _unfold_last_message_repeated(result.filter(pl.col("error").is_null()))
    bad = result.filter(pl.col("error").is_not_null())
    counts = (
        lines.group_by("_file").agg(pl.len().alias("rows_read"))
        .join(bad.group_by("_file").agg(pl.len().alias("rows_rejected")), on="_file", how="left")
        .join(ok.group_by("_file").agg(pl.col("_dst_guess").sum().alias("rows_dst_guessed")), on="_file", how="left")
    )
    return SyslogBatchResult(
        lines=ok.select(list(LINE_SCHEMA)),
        rejects=bad.select("source_file", "line_no", pl.col("line").alias("raw"), "error"),
        files=meta.join(counts, on="_file", how="left", maintain_order="left").select(
            "source_file",
            pl.col("rows_read").fill_null(0),
            (pl.col("rows_read").fill_null(0) - pl.col("rows_rejected").fill_null(0)).alias("rows_loaded"),
            pl.col("rows_rejected").fill_null(0),
            pl.col("rows_dst_guessed").fill_null(0),
        ).cast(FILE_COUNTS_SCHEMA),
    )


def _nul_only_rejects(nul_only: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """:data:`_NUL_ONLY` lines ``(_file, line_no, line)`` -> rejected result rows (:data:`_OUT_COLS`):
    the reason counts the NULs, the raw line is what is left without them (blanks, or nothing)."""
    return nul_only.select(
        "_file",
        "line_no",
        pl.col("line").str.replace_all("\x00", "", literal=True),
        *[pl.lit(None, dtype=schema[c]).alias(c) for c in _OUT_COLS[3:-2]],
        pl.format(NUL_ONLY_LINE, pl.col("line").str.count_matches("\x00", literal=True)).alias("error"),
        pl.lit(False).alias("_dst_guess"),
    ).cast(schema)


def _unterminated_last_lines(datas: list[bytes]) -> pl.DataFrame:
    """``(_file, _last_line)``: the files whose content does not end with a line break, and the
    number of that last physical line (:func:`~gpusre.models.ingest.landing_files.unterminated_last_line`)."""
    cut = [(index, line) for index, data in enumerate(datas) if (line := unterminated_last_line(data)) is not None]
    return pl.DataFrame({"_file": [f for f, _ in cut], "_last_line": [n for _, n in cut]},
                        schema={"_file": pl.UInt32, "_last_line": pl.Int64})


def _reject_cut_last_lines(result: pl.DataFrame, unterminated: pl.DataFrame) -> pl.DataFrame:
    """Reject (:data:`CUT_LAST_LINE`) the last line of a file without a final line break when it is
    not a complete record of the file's own shape.

    Why: rsyslog, syslog-ng, journald's exports and dmesg end every record with a line break, so an
    unterminated last line was written (or copied) in part: ``...gpu13 CRON[3`` loaded as a line
    at 23:59:01 made a day whose real last line was at 22:10 look complete. It is rejected, the
    lines before it load, and the file is read whole again once it changes (its hash does).

    But downloaded and hand-made samples often lack only the final line break after a complete
    record, so the line is rejected only when it is not one: it matches no format (a cut inside the
    timestamp), is a journald JSON line that does not parse, has no message, or lacks a part that
    the file's record before it has — another format, no program tag (``CRON[3``), no host. A
    record cut inside its message text cannot be told from a whole one and loads. A continuation
    line (indented) carries no header to check and keeps its anchor's verdict.
    """
    if unterminated.is_empty() or result.is_empty():
        return result
    rows = result.with_row_index("_pos")
    last = rows.join(unterminated, left_on=["_file", "line_no"], right_on=["_file", "_last_line"], how="inner")
    if last.is_empty():
        return result  # the unterminated line was blank
    header = pl.col("format").is_not_null() & (pl.col("format") != "continuation")
    before = (rows.join(unterminated, on="_file", how="inner")
              .filter(header & (pl.col("line_no") < pl.col("_last_line")))
              .sort("_file", "line_no")
              .group_by("_file").agg(pl.col("format", "program", "host").last().name.prefix("_prev_")))
    last = last.join(before, on="_file", how="left")
    cut = last.filter(
        pl.col("format").is_null()
        | ((pl.col("format") == "journald_json") & pl.col("error").is_not_null())
        | ((pl.col("format") != "continuation") & (
            pl.col("message").str.strip_chars().fill_null("").eq("")
            | (pl.col("_prev_format").is_not_null() & (pl.col("format") != pl.col("_prev_format")))
            | (pl.col("_prev_program").is_not_null() & pl.col("program").is_null())
            | (pl.col("_prev_host").is_not_null() & pl.col("host").is_null())))
    )["_pos"]
    if cut.is_empty():
        return result
    return rows.with_columns(
        pl.when(pl.col("_pos").is_in(cut.implode())).then(pl.lit(CUT_LAST_LINE)).otherwise(pl.col("error")).alias("error")
    ).drop("_pos")


def parse_syslog_bytes(
    data: bytes,
    source_file: str,
    *,
    timezone: str = "UTC",
    year_hint: YearHint | None = None,
    host_from_name: str | None = None,
    boot_time: datetime | None = None,
) -> SyslogParseResult:
    """Parse the (uncompressed) content of one node log file; formats may be mixed per line.

    ``timezone`` is the IANA zone of local-time formats; ``year_hint`` the time range used to
    place RFC 3164 lines in a year (default: the last 12 months); ``host_from_name`` the host of
    lines that do not name one; ``boot_time`` the boot instant that uptime stamps count from
    (naive = UTC). Raises ``ValueError`` for an unknown timezone. A batch of one
    :func:`parse_syslog_batch`.
    """
    batch = parse_syslog_batch(
        [SyslogInput(data, source_file, host_from_name, year_hint)], timezone=timezone, boot_time=boot_time
    )
    return SyslogParseResult(batch.lines, batch.rejects, int(batch.files["rows_read"][0]))


def _in_line_order(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` sorted by ``(_file, line_no)``; as is when it already is (the usual batch, whose
    lines all took one format): a sort moves every column, the check only two integer ones."""
    step = pl.col("_file").cast(pl.Int64).diff()
    ordered = frame.select(((step > 0) | ((step == 0) & (pl.col("line_no").diff() > 0))).fill_null(True).all()).item()
    return frame if ordered else frame.sort("_file", "line_no")


def _resolve_continuations(
    matched: pl.DataFrame, unmatched: pl.DataFrame, schema: dict[str, pl.DataType]
) -> pl.DataFrame:
    """Turn unmatched lines into continuations of the line above, or rejects (per file).

    A line continues the one above when it is indented (multi-line kernel messages) or follows a
    Fabric Manager line (whose messages span lines). It inherits ts/host/program/pid from the
    nearest line above that is not itself a continuation, and is rejected when that line was.
    """
    if unmatched.is_empty():
        return _in_line_order(matched)
    allrows = pl.concat(
        [
            matched.with_columns(pl.lit(True).alias("_matched")),
            unmatched.with_columns(
                *[pl.lit(None, dtype=schema[c]).alias(c) for c in _OUT_COLS[3:]],
                pl.lit(False).alias("_matched"),
            ).select(*_OUT_COLS, "_matched"),
        ]
    ).sort("_file", "line_no")
    last_fmt = pl.when("_matched").then(pl.col("format")).forward_fill().over("_file")
    allrows = allrows.with_columns(last_fmt.alias("_last_fmt"))
    cont = (
        ~pl.col("_matched")
        & pl.col("_last_fmt").is_not_null()
        & (pl.col("line").str.contains(r"^\s") | (pl.col("_last_fmt") == "fabricmanager"))
    )
    allrows = allrows.with_columns(cont.alias("_cont")).with_columns(
        pl.when(~pl.col("_cont")).then(pl.col("line_no")).forward_fill().over("_file").alias("_anchor"),
    )
    anchors = allrows.select(
        "_file",
        pl.col("line_no").alias("_anchor"),
        pl.col("ts").alias("_a_ts"),
        pl.col("host").alias("_a_host"),
        pl.col("program").alias("_a_program"),
        pl.col("pid").alias("_a_pid"),
        (pl.col("_matched") & pl.col("error").is_null()).alias("_a_ok"),
    )
    allrows = allrows.join(anchors, on=["_file", "_anchor"], how="left", maintain_order="left")
    c = pl.col("_cont")
    return allrows.select(
        "_file",
        "line_no",
        "line",
        pl.when(c).then(pl.col("_a_ts")).otherwise(pl.col("ts")).alias("ts"),
        pl.when(c).then(pl.col("_a_host")).otherwise(pl.col("host")).alias("host"),
        pl.when(c).then(pl.col("_a_program")).otherwise(pl.col("program")).alias("program"),
        pl.when(c).then(pl.col("_a_pid")).otherwise(pl.col("pid")).alias("pid"),
        pl.when(c)
        .then(pl.col("line").str.strip_chars())
        .otherwise(pl.col("message"))
        .alias("message"),
        pl.when(c).then(pl.lit("continuation")).otherwise(pl.col("format")).alias("format"),
        pl.when(c & ~pl.col("_a_ok"))
        .then(pl.format("continuation of line {}, which was rejected", pl.col("_anchor")))
        .when(~c & ~pl.col("_matched"))
        .then(pl.lit(_NO_FORMAT))
        .otherwise(pl.col("error"))
        .alias("error"),
        (~c & pl.col("_dst_guess").fill_null(False)).alias("_dst_guess"),
    )


def _decompress(data: bytes) -> bytes:
    """Transparent gzip / bzip2 / xz by magic bytes (rotated logs are compressed by logrotate)."""
    if data[:2] == b"\x1f\x8b":
        return gzip.decompress(data)
    if data[:3] == b"BZh":
        return bz2.decompress(data)
    if data[:6] == b"\xfd7zXZ\x00":
        return lzma.decompress(data)
    return data


def parse_syslog_file(
    path: Path,
    source_file: str,
    *,
    timezone: str = "UTC",
    year_hint: YearHint | None = None,
    host_from_name: str | None = None,
    boot_time: datetime | None = None,
) -> SyslogParseResult:
    """Parse one node log file (``*.log``, rotated ``*.log.1``, ``*.gz``/``.bz2``/``.xz``,
    journald ``*.json``/``*.jsonl``); compression is detected from the content, not the name.

    ``source_file`` is the landing-relative name recorded with each row; when ``host_from_name``
    is None it is guessed from ``source_file`` by :func:`host_from_filename`.
    """
    data = _decompress(Path(path).read_bytes())
    return parse_syslog_bytes(
        data,
        source_file,
        timezone=timezone,
        year_hint=year_hint,
        host_from_name=host_from_name if host_from_name is not None else host_from_filename(source_file),
        boot_time=boot_time,
    )
