"""Parse Slurm node-state history: ``sacctmgr show event -P`` dumps and ``sinfo -R`` snapshots into
rows of ``raw.slurm_events`` (see ``sql/ddl/050_node_states.sql``), plus one reject row per bad line.

``sacctmgr -P show event`` prints a header line of the requested fields (any order, any subset):
``Cluster``, ``ClusterNodes``, ``CPU Cnt`` (format name ``CPUCount``), ``Duration``, ``Event``,
``EventRaw``, ``NodeName``, ``Reason``, ``State``, ``StateRaw``, ``TimeStart`` (``Start``),
``TimeEnd`` (``End``), ``TRES``, ``User``. The default node format is
``Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User``. Values, as Slurm prints them
(``src/sacctmgr/event_functions.c``):

* ``TimeStart``/``TimeEnd`` in the cluster's local time, ``YYYY-MM-DDTHH:MM:SS``, or with a UTC
  offset (``2026-11-01T01:25:00-0600``, ``-06:00``, ``Z``: ``SLURM_TIME_FORMAT="%FT%T%z"``, which
  sacctmgr follows as sacct does) — an exact instant, no DST rule; ``TimeEnd`` is ``Unknown`` while
  the event is ongoing;
* ``Duration`` ``[D-]HH:MM:SS``, up to *now* for an ongoing event (so start + duration is the moment
  the dump was cut: kept as ``observed_ts``);
* ``State`` the compact node state (``DOWN``, ``DOWN*``, ``DRAIN``, ``DRNG``, ``FAIL``, ``MAINT``,
  ``BOOT``…; newer releases and ``sinfo`` print long, ``+``-joined forms such as ``IDLE+DRAIN`` or
  ``drained*``), empty for cluster events; ``StateRaw`` the numeric state;
* ``User`` ``name(uid)``, e.g. ``root(0)`` or ``slurm(64030)``; empty when Slurm set no user;
* ``Reason`` free text, spaces included (a ``|`` inside a reason is put back together when the
  line has too many fields).

**Node events** have a ``NodeName``. **Cluster events** (``Event`` = ``Cluster``, empty
``NodeName``) are not node outages: slurmdbd writes one per change of the cluster's registered
TRES ("Cluster Registered TRES", ``ClusterNodes`` = every node then registered) and one while
slurmctld is disconnected. They are kept (``event_type = 'cluster'``) for the node inventory and
controller outages, and never expanded into per-node down time.

``sinfo -R -h -o "%n|%E|%u|%H|%T"`` snapshots (node, reason, user, since, state) become open node
events starting at the reason time, observed at the snapshot time (the time in the file's name, else
its mtime).

Conventions match :mod:`gpusre.models.sources.sacct.parse`: timestamps are read in the cluster's IANA zone and
stored in UTC; ``rows_read`` excludes blank and ``#`` lines; unknown states are rejected, never
guessed; a dump whose Cluster column names several clusters (``sacctmgr show event clusters=all``)
loads only the given ``cluster`` (the others' rows are rejects: their nodes may share this cluster's
node names); a headerless dump (``sacctmgr -n -P``) is read with the fields cluster.yaml
``slurm_events.fields`` names, else refused with a reason naming that setting. A DST-ambiguous local time takes the earliest instant unless ``Duration`` (or an end
before the start) says otherwise; a non-existent local time (spring-forward gap) rejects the line.
An ambiguous start of an *open* event (``Unknown`` end) is placed by the dump's cut: within one file,
start + Duration of every open event is the moment the dump was taken, so the cut is the median
start + Duration of the file's open events with an unambiguous start (a cluster event open for weeks
is one), and the ambiguous event takes the reading whose start + Duration is nearest it. When no open
event of the file has an unambiguous start, the latest reading is taken only if the earliest would
put the cut more than a minute before a start or end the file prints (no event starts or ends after
the dump); otherwise the earliest (a dump of such open events alone cannot tell the readings apart).

>>> r = parse_slurm_events_text(
...     "NodeName|TimeStart|TimeEnd|State|Reason|User\\n"
...     "gpu001|2026-09-01T10:00:00|Unknown|DRAIN|Kill task failed|root(0)\\n", "slurm_events/d.txt")
>>> r.records.select("node_name", "state", "end_ts", "reason", "user_name", "uid").row(0)
('gpu001', 'DRAIN', None, 'Kill task failed', 'root', 0)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone
from pathlib import Path
from zoneinfo import ZoneInfo
from typing import Any

import polars as pl

from gpusre.models.ingest.hostlist import EMPTY_HOSTLISTS, expand_hostlist
from gpusre.models.ingest.landing_files import CUT_LAST_LINE, unterminated_last_line
from gpusre.models.sources.sacct.parse import REJECT_SCHEMA, _cluster_rejects
from gpusre.models.ingest.slurm_values import (
    DURATION_NULL_TOKENS,
    TIMESTAMP_NULL_TOKENS,
    check_timezone,
    invalid_value,
    localize_to_utc,
    parse_duration_s,
    parse_int,
    parse_naive_timestamp,
    parse_offset_timestamp,
)

__all__ = [
    "FIELDS_SETTING",
    "IN_SERVICE_STATES",
    "NODE_STATES",
    "OUT_OF_SERVICE_STATES",
    "POWER_SAVING_PATTERN",
    "POWER_SAVING_STATES",
    "REJECT_SCHEMA",
    "SLURM_EVENT_SCHEMA",
    "SlurmEventsFormatError",
    "SlurmEventsParseResult",
    "check_event_fields",
    "decode_state_raw",
    "dump_day_start",
    "is_sinfo_snapshot",
    "normalize_node_state",
    "parse_sinfo_reasons_text",
    "parse_slurm_events_file",
    "parse_slurm_events_text",
    "power_saving_flag",
    "runs_jobs",
]

_UTC = pl.Datetime("us", "UTC")

#: Polars schema of ``raw.slurm_events`` (same columns, same order).
SLURM_EVENT_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "source_format": pl.String(),   # 'sacctmgr' | 'sinfo'
    "event_type": pl.String(),      # 'node' | 'cluster'
    "cluster": pl.String(),
    "node_name": pl.String(),       # NodeName as printed
    "cluster_nodes": pl.String(),   # ClusterNodes hostlist as printed (cluster events)
    "nodes": pl.List(pl.String),    # expanded NodeName (node events) or ClusterNodes (cluster events)
    "start_ts": _UTC,
    "end_ts": _UTC,                 # null: ongoing ('Unknown')
    "duration_s": pl.Int64(),
    "state": pl.String(),           # normalized: DOWN, DRAIN, FAIL, MAINT, REBOOT, ... (see NODE_STATES)
    "state_text": pl.String(),      # State as printed, e.g. 'DOWN*', 'IDLE+DRAIN', 'drained'
    "state_raw": pl.Int64(),        # StateRaw
    "not_responding": pl.Boolean(),  # '*' suffix / NOT_RESPONDING flag
    "reason": pl.String(),
    "user_name": pl.String(),
    "uid": pl.Int64(),
    "cpus": pl.Int64(),
    "tres": pl.String(),
    "observed_ts": _UTC,            # when the line was known true: sinfo snapshot time; start + Duration of an ongoing sacctmgr event
    "raw_line": pl.String(),
}


class SlurmEventsFormatError(ValueError):
    """The whole file is refused: not ``sacctmgr -P show event`` / ``sinfo -R`` output."""


@dataclass(frozen=True)
class SlurmEventsParseResult:
    """Outcome of parsing one file; ``rows_read == len(records) + len(rejects)``.

    ``observed_ts`` is the snapshot time of an ``sinfo`` file (None for sacctmgr dumps).
    """

    records: pl.DataFrame
    rejects: pl.DataFrame
    rows_read: int
    source_format: str
    observed_ts: datetime | None = None


# ----------------------------------------------------------------------------------- node states

# Words Slurm prints in node states (compact, long and '+'-joined flag forms, any case), mapped to a
# normalized name. Names in _FLAG_ONLY only qualify another state.
_STATE_WORDS: dict[str, str] = {
    "DOWN": "DOWN",
    "DRAIN": "DRAIN", "DRAINED": "DRAIN", "DRAINING": "DRAIN", "DRNG": "DRAIN", "POWER_DRAIN": "DRAIN",
    "FAIL": "FAIL", "FAILING": "FAIL", "FAILG": "FAIL",
    "MAINT": "MAINT",
    "BOOT": "REBOOT", "REBOOT": "REBOOT", "REBOOT_REQUESTED": "REBOOT", "REBOOT_ISSUED": "REBOOT",
    "ERROR": "ERROR",
    "POW_DN": "POWER_DOWN", "POWER_DOWN": "POWER_DOWN", "POWERED_DOWN": "POWER_DOWN",
    "POWERING_DOWN": "POWER_DOWN",
    "IDLE": "IDLE", "ALLOC": "ALLOCATED", "ALLOCATED": "ALLOCATED", "MIX": "MIXED", "MIXED": "MIXED",
    "COMP": "COMPLETING", "COMPLETING": "COMPLETING", "FUTR": "FUTURE", "FUTURE": "FUTURE",
    "UNK": "UNKNOWN", "UNKNOWN": "UNKNOWN", "RESV": "RESERVED", "RESERVED": "RESERVED",
    "NPC": "PERFCTRS", "PERFCTRS": "PERFCTRS", "RESM": "RESUME", "RESUME": "RESUME",
    "CANC_R": "CANCEL_REBOOT", "CANCEL_REBOOT": "CANCEL_REBOOT", "REBOOT_CANCEL": "CANCEL_REBOOT",
    "POW_UP": "POWER_UP", "POWER_UP": "POWER_UP", "POWERING_UP": "POWER_UP",
    "CLOUD": "CLOUD", "PLANNED": "PLANNED", "PLND": "PLANNED", "INVAL": "INVALID_REG",
    "INVALID_REG": "INVALID_REG", "BLOCKED": "BLOCKED", "DYNAMIC_FUTURE": "FUTURE",
    "DYNAMIC_NORM": "IDLE", "EXTERNAL": "EXTERNAL", "UNDRAIN": "UNDRAIN",
    "NOT_RESPONDING": "NOT_RESPONDING", "NO_RESPOND": "NOT_RESPONDING",
}
_FLAG_ONLY = frozenset({"NOT_RESPONDING", "UNDRAIN"})
# Suffix characters of compact states: '*' not responding, '$' maintenance reservation, '@' reboot
# requested, '^' reboot issued, '~' '%' '!' powered/powering down, '#' powering up, '-' planned.
_SUFFIX_FLAGS: dict[str, str | None] = {
    "*": "NOT_RESPONDING", "$": "MAINT", "@": "REBOOT", "^": "REBOOT", "~": "POWER_DOWN",
    "%": "POWER_DOWN", "!": "POWER_DOWN", "#": None, "-": None,
}
#: The state a node event is reported in: the first of these present wins, else its base state.
_PRIORITY: tuple[str, ...] = ("DOWN", "FAIL", "DRAIN", "MAINT", "REBOOT", "ERROR", "POWER_DOWN")
#: Every normalized state name.
NODE_STATES: frozenset[str] = frozenset(v for v in _STATE_WORDS.values() if v not in _FLAG_ONLY)
#: States in which a node takes no new work (every node event of slurmdbd is one of them or a
#: not-responding variant of a base state). ``POWER_DOWN`` is power saving, not an outage: see
#: :data:`IN_SERVICE_STATES`.
OUT_OF_SERVICE_STATES: frozenset[str] = frozenset(_PRIORITY) - {"POWER_DOWN"}
#: States in which the node serves jobs: Slurm schedules it (idle, allocated, mixed, completing, planned
#: by the backfill scheduler, reserved — a reservation is no outage), or powers it up for a job on
#: demand (power saving: powered down, powering down or up, cloud). A node event in one of them is no
#: outage (core.node_states leaves it out) unless the node is also not responding.
IN_SERVICE_STATES: frozenset[str] = frozenset({
    "IDLE", "ALLOCATED", "MIXED", "COMPLETING", "PLANNED", "RESERVED", "RESUME", "POWER_DOWN", "POWER_UP", "CLOUD",
    "PERFCTRS", "BLOCKED", "CANCEL_REBOOT"})
#: Power-saving states: in service (Slurm resumes the node when a job needs it; README "Node states").
POWER_SAVING_STATES: frozenset[str] = frozenset({"POWER_DOWN", "POWER_UP"})
#: A power-saving flag in a printed state (Polars/Rust regex): the long words (``POWERED_DOWN``,
#: ``POWERING_DOWN``, ``POWER_DOWN``, ``POW_DN``, their ``UP`` forms) and the compact suffixes ``~``
#: (powered off), ``%`` (powering down), ``!`` (power-down pending) and ``#`` (powering up). Not
#: ``POWER_DRAIN`` (power down *after* draining: the node is drained, out of service).
POWER_SAVING_PATTERN = r"(?i)(^|[+\s])POW(ER|ERED|ERING)?_(DOWN|DN|UP)([+\s*~%!#$@^-]|$)|[~%!#]"


def power_saving_flag(text: str | None) -> bool:
    """Does a printed node state carry a power-saving flag?

    >>> [power_saving_flag(t) for t in ("IDLE+POWERED_DOWN", "down~", "IDLE%", "DRAIN", "POWER_DRAIN", None)]
    [True, True, True, False, False, False]
    """
    return bool(text) and re.search(POWER_SAVING_PATTERN, text) is not None


def normalize_node_state(text: str) -> tuple[str | None, bool]:
    """Printed node state -> (normalized state, not responding). Empty text gives (None, False).

    >>> normalize_node_state("DOWN*")
    ('DOWN', True)
    >>> normalize_node_state("IDLE+DRAIN")
    ('DRAIN', False)
    >>> normalize_node_state("drained*")
    ('DRAIN', True)
    >>> normalize_node_state("MIX@")
    ('REBOOT', False)

    Raises ``ValueError`` for a word Slurm does not print (e.g. a truncated ``DRAIN+DO``).
    """
    text = text.strip()
    if not text:
        return None, False
    found: list[str] = []
    not_responding = False
    for token in text.upper().split("+"):
        word = token.rstrip("".join(_SUFFIX_FLAGS))
        for ch in token[len(word):]:
            flag = _SUFFIX_FLAGS[ch]
            if flag == "NOT_RESPONDING":
                not_responding = True
            elif flag:
                found.append(flag)
        if not word:  # 'ALLOC+' (completing) leaves an empty token
            continue
        name = _STATE_WORDS.get(word)
        if name is None:
            raise ValueError(f"unknown node state '{text}'")
        if name == "NOT_RESPONDING":
            not_responding = True
        elif name not in _FLAG_ONLY:
            found.append(name)
    for state in _PRIORITY:
        if state in found:
            return state, not_responding
    if not found:
        if not_responding:
            return "NOT_RESPONDING", True
        raise ValueError(f"unknown node state '{text}'")
    return found[0], not_responding


#: Printed state words that say the node was running jobs: its base state (allocated, mixed, completing) or
#: Slurm's name for a drain or fail flag on such a node (``DRAINING``/``DRNG``, ``FAILING``/``FAILG``). A drain
#: there lets the running jobs finish and starts no new one (``scontrol update state=DRAIN``): the node is
#: drained only when the last of them ends. (:data:`_STATE_WORDS` maps DRAINING and DRAINED alike to DRAIN.)
_BUSY_WORDS = frozenset({"ALLOC", "ALLOCATED", "MIX", "MIXED", "COMP", "COMPLETING", "DRAINING", "DRNG",
                         "FAILING", "FAILG"})
#: Printed state words that say the node ran no job: idle, drained (the drain in effect), down, future.
_IDLE_WORDS = frozenset({"IDLE", "DRAINED", "DOWN", "FUTR", "FUTURE"})


def runs_jobs(text: str | None) -> bool | None:
    """Does a printed node state say the node was still running jobs (so a drain or fail flag on it waits for
    them)? True: allocated, mixed, completing, ``DRAINING``, ``FAILING``; False: idle, ``DRAINED``, down or not
    responding (out of service at once); None: the text does not say (a bare ``DRAIN`` or ``FAIL``, ``MAINT``,
    no text) — read as written: out of service from its start.

    >>> [runs_jobs(t) for t in ("MIXED+DRAIN", "drng", "ALLOC$", "IDLE+DRAIN", "DOWN+DRAIN", "mix*", "DRAIN", None)]
    [True, True, True, False, False, False, None, None]
    """
    if not text or not text.strip():
        return None
    words: set[str] = set()
    for token in text.strip().upper().split("+"):
        word = token.rstrip("".join(_SUFFIX_FLAGS))
        if any(_SUFFIX_FLAGS.get(ch) == "NOT_RESPONDING" for ch in token[len(word):]):
            return False  # slurmctld cannot reach the node: nothing says it still serves its jobs
        words.add(word)
    if words & {"NOT_RESPONDING", "NO_RESPOND"} or words & _IDLE_WORDS:
        return False
    return True if words & _BUSY_WORDS else None


# NODE_STATE_* of slurm.h (Slurm 17.11+): the base state in the low 4 bits, flags above.
_RAW_BASE = {0: "UNKNOWN", 1: "DOWN", 2: "IDLE", 3: "ALLOCATED", 4: "ERROR", 5: "MIXED", 6: "FUTURE"}
_RAW_FLAGS = ((1 << 9, "DRAIN"), (1 << 13, "FAIL"), (1 << 15, "MAINT"), (1 << 16, "REBOOT"),
              (1 << 20, "REBOOT"), (1 << 12, "POWER_DOWN"))
_RAW_NO_RESPOND = 1 << 11


def decode_state_raw(raw: int) -> tuple[str | None, bool]:
    """``StateRaw`` (numeric node state, Slurm >= 17.11 bit layout) -> (normalized state, not responding).

    >>> decode_state_raw(513)   # DOWN | DRAIN
    ('DOWN', False)
    >>> decode_state_raw(2 | 512 | 2048)  # IDLE | DRAIN | NO_RESPOND
    ('DRAIN', True)
    """
    found = [name for bit, name in _RAW_FLAGS if raw & bit]
    base = _RAW_BASE.get(raw & 0xF)
    if base is None:
        raise ValueError(f"unknown StateRaw {raw}")
    found.append(base)
    for state in _PRIORITY:
        if state in found:
            return state, bool(raw & _RAW_NO_RESPOND)
    return base, bool(raw & _RAW_NO_RESPOND)


# ------------------------------------------------------------------------------------- layout

# Header name (lower case, spaces dropped) -> field key. Unlisted names are ignored.
_FIELD_KEYS: dict[str, str] = {
    "cluster": "cluster",
    "clusternodes": "clusternodes",
    "cpucnt": "cpus", "cpucount": "cpus", "cpus": "cpus",
    "duration": "duration",
    "event": "event",
    "eventraw": "eventraw",
    "nodename": "nodename", "nodenames": "nodename",
    "reason": "reason",
    "state": "state",
    "stateraw": "stateraw",
    "timestart": "start", "start": "start",
    "timeend": "end", "end": "end",
    "tres": "tres",
    "user": "user",
}
_ALL_KEYS: tuple[str, ...] = tuple(dict.fromkeys(_FIELD_KEYS.values()))
_DISPLAY = {"start": "TimeStart", "end": "TimeEnd", "duration": "Duration", "stateraw": "StateRaw",
            "cpus": "CPU Cnt", "eventraw": "EventRaw"}
#: ``sinfo -R -h -o "%n|%E|%u|%H|%T"``: node, reason, user, since, state.
SINFO_FIELDS: tuple[str, ...] = ("nodename", "reason", "user", "start", "state")
_SINFO_HEADER_FIRST = frozenset({"hostnames", "hostname", "nodelist", "node", "nodes"})
#: First header word of sinfo's default (fixed-width) output: `sinfo -R` (REASON USER TIMESTAMP NODELIST)
#: and `sinfo -N`/`sinfo` (NODELIST / PARTITION ...).
_SINFO_FIXED_WIDTH_FIRST = frozenset({"reason", "partition", *_SINFO_HEADER_FIRST})
_USER_RE = r"^(?P<name>.*?)\((?P<uid>\d+)\)$"


def is_sinfo_snapshot(path: Path | str) -> bool:
    """True for ``sinfo-*`` files (``sinfo -R`` snapshots); every other file is a sacctmgr dump."""
    return Path(path).name.lower().startswith("sinfo")


_NAMED_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T_ ](\d{2})(?:[:-]?(\d{2}))?(?:[:-]?(\d{2}))?")


def snapshot_time(path: Path | str, timezone: str = "UTC") -> datetime:
    """When an ``sinfo`` snapshot was taken: the date and time its name gives
    (``sinfo-2026-11-10T12.txt``, ``sinfo-2026-11-10_1205.txt``; cluster time zone), else the file's
    mtime. The name survives a copy of the landing; the mtime does not (``cp`` without ``-p`` made an
    old drain look open until the copy).

    >>> snapshot_time("slurm_events/sinfo-2026-11-10T12.txt", "America/Chicago").isoformat()
    '2026-11-10T18:00:00+00:00'
    """
    found = _NAMED_TIME.search(Path(path).name)
    if found:
        y, mo, d, h, mi, se = (int(g) if g else 0 for g in found.groups())
        try:
            local = datetime(y, mo, d, h, mi, se, tzinfo=ZoneInfo(check_timezone(timezone)))
            return local.astimezone(dt_timezone.utc)
        except ValueError:  # not a date (2026-13-40): the mtime
            pass
    return datetime.fromtimestamp(Path(path).stat().st_mtime, tz=dt_timezone.utc).replace(microsecond=0)


#: A calendar date in a dump's file name: ``2026-09-01`` or ``20260901``, not part of a longer number.
_NAMED_DAY = re.compile(r"(?<!\d)(\d{4})-?(\d{2})-?(\d{2})(?!\d)")


def dump_day_start(path: Path | str, timezone: str = "UTC") -> datetime | None:
    """Where a ``sacctmgr show event`` dump's history begins, as its file name says: midnight (cluster
    time zone, returned in UTC) of the first date in the name, as the recommended nightly cut names its
    ``Start=`` day (``events_2026-09-01.txt``, also ``events_20260901.txt``); None for a name without a
    valid date and for ``sinfo`` snapshots (observed at one moment: :func:`snapshot_time`).

    Such a dump lists every node event of that day onwards, so a dump with no node line still says every
    node was in service from then on (a healthy cluster's first nights have no event at all).

    >>> dump_day_start("slurm_events/events_2026-09-01.txt", "America/Chicago").isoformat()
    '2026-09-01T05:00:00+00:00'
    >>> dump_day_start("slurm_events/sinfo-2026-11-10T12.txt") is None
    True
    """
    name = Path(path).name
    if is_sinfo_snapshot(name):
        return None
    for found in _NAMED_DAY.finditer(name):
        y, mo, d = (int(g) for g in found.groups())
        try:
            return datetime(y, mo, d, tzinfo=ZoneInfo(check_timezone(timezone))).astimezone(dt_timezone.utc)
        except ValueError:  # not a date (2026-13-40, a job id): try the next one
            continue
    return None


def _record_lines(text: str) -> pl.DataFrame:
    """``line_no`` (1-based physical line) and ``raw_line`` of every line that is not blank or a
    ``#`` comment."""
    raw = pl.Series("raw_line", text.split("\n"), dtype=pl.String).str.strip_suffix("\r")
    frame = raw.to_frame().with_row_index("line_no", offset=1).with_columns(pl.col("line_no").cast(pl.Int64))
    return frame.filter((pl.col("raw_line").str.strip_chars() != "") & ~pl.col("raw_line").str.starts_with("#"))


#: The cluster.yaml setting that names the fields of headerless dumps (``sacctmgr -n -P``).
FIELDS_SETTING = "slurm_events.fields"


def _keys_of(names: list[str]) -> list[str]:
    """Field keys of header names ('' for an ignored column; the first of duplicates wins)."""
    keys = [_FIELD_KEYS.get(re.sub(r"\s+", "", n).lower(), "") for n in names]
    seen: set[str] = set()
    return [k if k and not (k in seen or seen.add(k)) else "" for k in keys]


def check_event_fields(fields: Sequence[str]) -> list[str]:
    """Field keys of ``slurm_events.fields`` (the fields of a headerless dump, in order); ValueError
    when they cannot place an event (no TimeStart, or no NodeName/ClusterNodes/Event).

    >>> check_event_fields(["Cluster", "NodeName", "TimeStart", "TimeEnd", "State", "Reason", "User"])
    ['cluster', 'nodename', 'start', 'end', 'state', 'reason', 'user']
    """
    names = [str(f) for f in fields]
    keys = _keys_of(names)
    if "start" not in keys:
        raise ValueError(f"fields {names!r} lack TimeStart (or Start)")
    if not {"nodename", "clusternodes", "event", "eventraw"} & set(keys):
        raise ValueError(f"fields {names!r} have neither NodeName nor ClusterNodes nor Event")
    return keys


def _header(first: str, source_file: str, fields: Sequence[str] | None = None) -> tuple[list[str], bool, bool]:
    """(field keys or '' for ignored columns, trailing delimiter, the first line is a header) of a
    sacctmgr dump. A first line that names no TimeStart is data when ``fields`` (cluster.yaml
    ``slurm_events.fields``) gives the fields of a headerless ``sacctmgr -n -P`` dump."""
    if "|" not in first:
        if re.search(r"\b(TimeStart|NodeName)\b", first, re.IGNORECASE):
            raise SlurmEventsFormatError(
                f"{source_file}: fixed-width sacctmgr output; re-run 'sacctmgr -P show event'")
        raise SlurmEventsFormatError(f"{source_file}: no sacctmgr -P header line (fields separated by '|')")
    names = first.split("|")
    trailing = names[-1] == ""
    if trailing:
        names = names[:-1]
    keys = _keys_of(names)
    if "start" not in keys:
        if fields:
            try:
                return check_event_fields(fields), False, False
            except ValueError as exc:
                raise SlurmEventsFormatError(f"{source_file}: cluster.yaml {FIELDS_SETTING}: {exc}") from None
        raise SlurmEventsFormatError(
            f"{source_file}: header {names!r} lacks TimeStart (is this 'sacctmgr -P show event' output? "
            f"for a headerless 'sacctmgr -n -P' dump, list its fields in cluster.yaml {FIELDS_SETTING})")
    if not {"nodename", "clusternodes", "event", "eventraw"} & set(keys):
        raise SlurmEventsFormatError(f"{source_file}: header {names!r} has neither NodeName nor ClusterNodes nor Event")
    return keys, trailing, True


def _headerless_trailing(lines: pl.DataFrame, n: int) -> bool:
    """Headerless ``--parsable`` (``-p``) output: most lines carry one more, empty field after the last
    delimiter than ``--parsable2`` (``-P``) gives (sacct's rule for headerless dumps)."""
    parts = lines.get_column("raw_line").str.split("|")
    n_trailing = int(((parts.list.len() == n + 1) & (parts.list.last() == "")).sum())
    n_exact = int((parts.list.len() == n).sum())
    return n_trailing > n_exact


def _reject_cut_last_line(text: str, lines: pl.DataFrame, keys: list[str], trailing: bool,
                          source_file: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``lines`` without the last line when it has no line break and is not shown whole, and its
    reject (:data:`CUT_LAST_LINE`): the rule of sacct dumps. sacctmgr and sinfo end every line
    with a break, and a cut inside the last field leaves a valid, wrong value (``DOWN*`` ->
    ``DOWN``, ``gpu[1-12]`` -> ``gpu[1-1``); but a whole dump whose writer dropped the final break
    loads when its last line ends with ``--parsable``'s trailing ``|`` or in the free-text Reason."""
    cut = unterminated_last_line(text)
    empty = pl.DataFrame(schema=REJECT_SCHEMA)
    last = lines.filter(pl.col("line_no") == cut) if cut is not None else lines.clear()
    if last.is_empty():
        return lines, empty
    n_parts = len(last.item(0, "raw_line").split("|"))
    enough = n_parts - 1 >= len(keys) if "reason" in keys else n_parts - 1 == len(keys)
    if (trailing and last.item(0, "raw_line").endswith("|") and enough) or (
            not trailing and keys and keys[-1] == "reason" and n_parts >= len(keys)):
        return lines, empty
    reject = last.select(pl.lit(source_file, pl.String).alias("source_file"), "line_no",
                         pl.col("raw_line").alias("raw"), pl.lit(CUT_LAST_LINE).alias("error"))
    return lines.filter(pl.col("line_no") != cut), reject.cast(REJECT_SCHEMA)  # type: ignore[arg-type]


def _split_fields(
    frame: pl.DataFrame, keys: list[str], trailing: bool, source_file: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split ``raw_line`` on '|' into one String column per key; a reason holding '|' is joined back."""
    n = len(keys)
    reason_at = keys.index("reason") if "reason" in keys else None
    raw = pl.col("raw_line")
    parts = raw.str.split("|")
    n_parts = parts.list.len().cast(pl.Int64)
    if trailing:
        n_parts = n_parts - raw.str.ends_with("|").cast(pl.Int64)
    frame = frame.with_columns(parts.alias("_parts"), (n_parts - n).alias("_extra"))
    ok = pl.col("_extra") == 0 if reason_at is None else pl.col("_extra") >= 0
    rejects = frame.filter(~ok).select(
        pl.lit(source_file, pl.String).alias("source_file"), "line_no", raw.alias("raw"),
        pl.format(f"expected {n} fields, got {{}}", pl.col("_extra") + n).alias("error"),
    )
    good = frame.filter(ok)
    extra = pl.col("_extra")
    cols = []
    for i, key in enumerate(keys):
        if not key:
            continue
        if reason_at is None or i < reason_at:
            expr = pl.col("_parts").list.get(i)
        elif i == reason_at:
            expr = pl.col("_parts").list.slice(i, extra + 1).list.join("|")
        else:
            expr = pl.col("_parts").list.get(extra + i)
        cols.append(expr.alias(key))
    fields = good.select("line_no", "raw_line", *cols)
    return fields, rejects


# ------------------------------------------------------------------------------------- typing


def _distinct_lookup(values: pl.Series, fn: Callable[[str], Any], dtypes: dict[str, pl.DataType]) -> pl.DataFrame:
    """Apply ``fn`` once per distinct non-null value: (key, outputs..., '_err'); ValueError -> error text."""
    keys = values.drop_nulls().unique().to_list()
    rows: dict[str, list[Any]] = {name: [] for name in dtypes}
    errors: list[str | None] = []
    for k in keys:
        try:
            out = fn(k)
            errors.append(None)
        except ValueError as exc:
            out = (None,) * len(dtypes)
            errors.append(str(exc))
        for name, value in zip(dtypes, out, strict=True):
            rows[name].append(value)
    return pl.DataFrame(
        {"_key": keys, **rows, "_err": errors},
        schema={"_key": pl.String, **dtypes, "_err": pl.String},
    )


def _lookup(frame: pl.DataFrame, column: str, fn: Callable[[str], Any], dtypes: dict[str, pl.DataType],
            err_name: str) -> pl.DataFrame:
    table = _distinct_lookup(frame.get_column(column), fn, dtypes).rename({"_err": err_name})
    return frame.join(table, left_on=column, right_on="_key", how="left", maintain_order="left")


def _hostlist(value: str) -> tuple[list[str] | None]:
    return (None if value.strip() in EMPTY_HOSTLISTS else expand_hostlist(value.strip()),)


def _localize(naive: pl.Expr, timezone: str, ambiguous: str) -> pl.Expr:
    """Like :func:`~gpusre.models.ingest.slurm_values.localize_to_utc` with a choice for ambiguous times."""
    if timezone == "UTC":
        return naive.dt.replace_time_zone("UTC")
    return naive.dt.replace_time_zone(
        check_timezone(timezone), ambiguous=ambiguous, non_existent="null"  # type: ignore[arg-type]
    ).dt.convert_time_zone("UTC")


def _empty_to_null(e: pl.Expr) -> pl.Expr:
    return pl.when(e.str.strip_chars() == "").then(None).otherwise(e)


#: Seconds by which a time a dump prints may pass the dump's cut (start + Duration of its open events):
#: sacctmgr computes Duration on its own host's clock, the times come from slurmctld's.
_CUT_SKEW_S = 60


def _typed_events(
    df: pl.DataFrame,
    present: set[str],
    source_file: str,
    source_format: str,
    timezone: str,
    cluster: str | None,
    observed_ts: datetime | None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """String columns by key (+ line_no, raw_line) -> (records in SLURM_EVENT_SCHEMA, rejects)."""
    c = pl.col
    df = df.with_columns(pl.lit(None, pl.String).alias(k) for k in _ALL_KEYS if k not in present)
    # Python work once per distinct value: states and hostlists.
    df = _lookup(df, "state", normalize_node_state, {"_state": pl.String, "_nr": pl.Boolean}, "_state_err")
    df = df.with_columns(parse_int(c("stateraw")).alias("_stateraw"))
    raw_states = df.get_column("_stateraw").cast(pl.String)
    raw_table = _distinct_lookup(raw_states, lambda v: decode_state_raw(int(v)),
                                 {"_rstate": pl.String, "_rnr": pl.Boolean}).rename({"_err": "_raw_err"})
    df = df.with_columns(raw_states.alias("_stateraw_text")).join(
        raw_table, left_on="_stateraw_text", right_on="_key", how="left", maintain_order="left")
    df = _lookup(df, "nodename", _hostlist, {"_node_list": pl.List(pl.String)}, "_node_err")
    df = _lookup(df, "clusternodes", _hostlist, {"_cluster_list": pl.List(pl.String)}, "_cnodes_err")
    # `sacctmgr show event clusters=all` (or -M a,b): a dump naming several Slurm clusters loads only
    # cluster.yaml's cluster, as sacct dumps do; the other clusters' nodes may share its node names.
    df = df.with_columns(_empty_to_null(c("cluster")).str.strip_chars().alias("_cluster_name"))
    table = (_cluster_rejects(df.select(pl.lit(source_file, pl.String).alias("source_file"),
                                        c("_cluster_name").alias("cluster")).unique().sort("cluster"), cluster)
             if "cluster" in present and cluster is not None else None)
    if table is not None:
        df = df.join(table.select(pl.col("cluster").alias("_cluster_name"), "_cluster_err"), on="_cluster_name",
                     how="left", maintain_order="left")
    else:
        df = df.with_columns(pl.lit(None, pl.String).alias("_cluster_err"))

    event_text = c("event").str.strip_chars().str.to_lowercase()
    event_type = (
        pl.when(event_text.is_in(["node", "cluster"])).then(event_text)
        .when(c("eventraw").str.strip_chars() == "1").then(pl.lit("cluster"))
        .when(c("eventraw").str.strip_chars() == "2").then(pl.lit("node"))
        .when(_empty_to_null(c("nodename")).is_not_null()).then(pl.lit("node"))
        .otherwise(pl.lit("cluster"))
    )
    user = c("user").str.strip_chars()
    user_parts = user.str.extract_groups(_USER_RE)
    lf = df.lazy().with_columns(
        event_type.alias("_event_type"),
        parse_naive_timestamp(c("start").str.strip_chars()).alias("_start_naive"),
        parse_naive_timestamp(c("end").str.strip_chars()).alias("_end_naive"),
        # SLURM_TIME_FORMAT="%FT%T%z" (sacctmgr follows it as sacct does): an exact instant, no DST rule.
        parse_offset_timestamp(c("start").str.strip_chars()).alias("_start_x"),
        parse_offset_timestamp(c("end").str.strip_chars()).alias("_end_x"),
        parse_duration_s(c("duration").str.strip_chars()).alias("_duration"),
        parse_int(c("cpus").str.strip_chars()).alias("_cpus"),
        pl.coalesce(user_parts.struct.field("name"), user).alias("_user_name"),
        user_parts.struct.field("uid").cast(pl.Int64, strict=False).alias("_uid"),
    ).with_columns(
        pl.coalesce(c("_start_x"), localize_to_utc(c("_start_naive"), timezone)).alias("_start_e"),
        pl.coalesce(c("_start_x"), _localize(c("_start_naive"), timezone, "latest")).alias("_start_l"),
        pl.coalesce(c("_end_x"), localize_to_utc(c("_end_naive"), timezone)).alias("_end_e"),
        pl.coalesce(c("_end_x"), _localize(c("_end_naive"), timezone, "latest")).alias("_end_l"),
        pl.duration(seconds=c("_duration")).alias("_dur"),
    )
    # DST fall-back: the repeated hour is ambiguous. Take the earliest instant unless the end would
    # precede the start, or Duration says which one was meant.
    end_ts = (
        pl.when((c("_end_l") != c("_end_e"))
                & ((c("_end_e") < c("_start_e")) | ((c("_end_l") - c("_start_e")) == c("_dur"))))
        .then(c("_end_l")).otherwise(c("_end_e"))
    )
    lf = lf.with_columns(end_ts.alias("_end_ts"))
    # An open event's Duration runs up to the moment of the dump, so start + Duration is the same cut
    # (to a few seconds) on every open line of the file. An ambiguous open start takes the reading
    # whose start + Duration is nearest the cut of the file's unambiguous open events (median: robust
    # to one odd line); without one, the reading whose start + Duration is not before a time the file
    # prints (no event starts or ends after the dump), else the earliest.
    ambiguous_start = c("_start_l") != c("_start_e")
    end_unknown = c("end").is_null() | c("end").str.strip_chars().is_in(list(TIMESTAMP_NULL_TOKENS))
    is_open = end_unknown & c("_dur").is_not_null()
    cut_e, cut_l = c("_start_e") + c("_dur"), c("_start_l") + c("_dur")
    lf = lf.with_columns(
        cut_e.filter(is_open & ~ambiguous_start).median().alias("_cut"),
        # Nothing the dump prints is after its cut: the latest start (earliest readings, never after
        # the truth) or resolved end is a lower bound on it.
        pl.max_horizontal(c("_start_e"), c("_end_ts")).max().alias("_cut_floor"),
    )
    open_latest = is_open & ambiguous_start & (
        pl.when(c("_cut").is_not_null())
        .then((cut_l - c("_cut")).abs() < (cut_e - c("_cut")).abs())
        .otherwise(cut_e < c("_cut_floor") - pl.duration(seconds=_CUT_SKEW_S))
    )
    start_ts = (
        pl.when(ambiguous_start & ((c("_end_ts") - c("_start_l")) == c("_dur"))).then(c("_start_l"))
        .when(open_latest.fill_null(False)).then(c("_start_l"))
        .otherwise(c("_start_e"))
    )
    lf = lf.with_columns(start_ts.alias("_start_ts"))
    state_present = _empty_to_null(c("state")).is_not_null()
    checks: list[tuple[pl.Expr, pl.Expr]] = [
        (c("start").is_null() | c("start").str.strip_chars().is_in(list(TIMESTAMP_NULL_TOKENS)),
         pl.format("TimeStart is '{}': the event cannot be placed in time", c("start").fill_null(""))),
        (invalid_value(c("start").str.strip_chars(), pl.coalesce(c("_start_e"), c("_start_naive").dt.replace_time_zone("UTC")),
                       TIMESTAMP_NULL_TOKENS),
         pl.format("malformed TimeStart timestamp '{}'", c("start"))),
        (c("_start_naive").is_not_null() & c("_start_e").is_null(),
         pl.format(f"TimeStart '{{}}' does not exist in {timezone} (DST gap)", c("start"))),
        (invalid_value(c("end").str.strip_chars(), pl.coalesce(c("_end_e"), c("_end_naive").dt.replace_time_zone("UTC")),
                       TIMESTAMP_NULL_TOKENS),
         pl.format("malformed TimeEnd timestamp '{}'", c("end"))),
        (c("_end_naive").is_not_null() & c("_end_e").is_null(),
         pl.format(f"TimeEnd '{{}}' does not exist in {timezone} (DST gap)", c("end"))),
        ((c("_end_ts") < c("_start_ts")).fill_null(False),
         pl.format("TimeEnd '{}' before TimeStart '{}'", c("end"), c("start"))),
        (invalid_value(c("duration").str.strip_chars(), c("_duration"), DURATION_NULL_TOKENS),
         pl.format("malformed Duration '{}'", c("duration"))),
        (invalid_value(c("cpus").str.strip_chars(), c("_cpus"), {""}),
         pl.format("malformed CPU count '{}'", c("cpus"))),
        (invalid_value(c("stateraw").str.strip_chars(), c("_stateraw"), {""}),
         pl.format("malformed StateRaw '{}'", c("stateraw"))),
        (c("_state_err").is_not_null(), c("_state_err")),
        (~state_present & c("_raw_err").is_not_null(), c("_raw_err")),
        (c("_node_err").is_not_null(), pl.format("malformed NodeName '{}': {}", c("nodename"), c("_node_err"))),
        (c("_cnodes_err").is_not_null(),
         pl.format("malformed ClusterNodes '{}': {}", c("clusternodes"), c("_cnodes_err"))),
        ((c("_event_type") == "node") & c("_node_list").is_null(), pl.lit("node event without NodeName")),
        (c("event").is_not_null() & ~c("event").str.strip_chars().str.to_lowercase().is_in(["node", "cluster", ""]),
         pl.format("unknown Event '{}'", c("event"))),
        (c("_cluster_err").is_not_null(), c("_cluster_err")),
    ]
    full = lf.with_columns(pl.any_horizontal(cond.fill_null(False) for cond, _ in checks).alias("_bad")).collect()

    observed = pl.lit(observed_ts, _UTC) if observed_ts is not None else (
        pl.when(c("_end_ts").is_null()).then(c("_start_ts") + c("_dur")))
    is_node = c("_event_type") == "node"
    records = full.lazy().filter(~c("_bad")).select(
        pl.lit(source_file, pl.String).alias("source_file"),
        c("line_no"),
        pl.lit(source_format, pl.String).alias("source_format"),
        c("_event_type").alias("event_type"),
        pl.coalesce(_empty_to_null(c("cluster")).str.strip_chars(), pl.lit(cluster, pl.String)).alias("cluster"),
        _empty_to_null(c("nodename")).str.strip_chars().alias("node_name"),
        _empty_to_null(c("clusternodes")).str.strip_chars().alias("cluster_nodes"),
        pl.when(is_node).then(c("_node_list")).otherwise(c("_cluster_list")).alias("nodes"),
        c("_start_ts").alias("start_ts"),
        c("_end_ts").alias("end_ts"),
        c("_duration").alias("duration_s"),
        pl.when(is_node).then(pl.coalesce(c("_state"), c("_rstate"))).alias("state"),
        _empty_to_null(c("state")).str.strip_chars().alias("state_text"),
        c("_stateraw").alias("state_raw"),
        pl.when(is_node).then(pl.coalesce(c("_nr"), c("_rnr"), pl.lit(False))).alias("not_responding"),
        _empty_to_null(c("reason")).alias("reason"),
        _empty_to_null(c("_user_name")).alias("user_name"),
        c("_uid").alias("uid"),
        c("_cpus").alias("cpus"),
        _empty_to_null(c("tres")).str.strip_chars().alias("tres"),
        observed.alias("observed_ts"),
        c("raw_line"),
    ).collect()
    bad = full.filter(c("_bad"))
    rejects = bad.select(
        pl.lit(source_file, pl.String).alias("source_file"),
        "line_no",
        c("raw_line").alias("raw"),
        pl.concat_str([pl.when(cond.fill_null(False)).then(msg) for cond, msg in checks],
                      separator="; ", ignore_nulls=True).alias("error"),
    )
    return records.cast(SLURM_EVENT_SCHEMA), rejects.cast(REJECT_SCHEMA)  # type: ignore[arg-type]


def _finish(source_file: str, source_format: str, records: pl.DataFrame, rejects: list[pl.DataFrame],
            observed_ts: datetime | None) -> SlurmEventsParseResult:
    all_rejects = pl.concat([pl.DataFrame(schema=REJECT_SCHEMA), *rejects]).sort("line_no")
    return SlurmEventsParseResult(records.sort("line_no"), all_rejects, records.height + all_rejects.height,
                                  source_format, observed_ts)


def parse_slurm_events_text(
    text: str, source_file: str, *, timezone: str = "UTC", cluster: str | None = None,
    fields: Sequence[str] | None = None,
) -> SlurmEventsParseResult:
    """Parse ``sacctmgr show event -P`` (or ``--parsable``, trailing ``|``) output with its header line,
    or without one (``-n``) when ``fields`` names its fields.

    Args:
        text: the whole dump. The first non-blank, non-``#`` line is the header; any field order
            and subset with ``TimeStart`` and one of ``NodeName``/``ClusterNodes``/``Event``.
        source_file: stored in every row (path relative to the landing directory).
        timezone: IANA zone of the timestamps (cluster.yaml ``timezone``).
        cluster: cluster name used when the dump has no (non-empty) Cluster column; in a dump whose
            Cluster column names several clusters (``sacctmgr show event clusters=all``), the one whose
            rows load — the other clusters' rows are rejects, and all rows are when none of the names
            is ``cluster`` (the rule of sacct dumps, :mod:`gpusre.models.sources.sacct.parse`). A dump
            naming one cluster loads whatever its name. None loads every cluster's rows.
        fields: the fields of a headerless dump (cluster.yaml ``slurm_events.fields``), used when the
            first line names no ``TimeStart`` (a dump with a header is read by its header).

    Lines with a wrong field count, a malformed or non-existent timestamp, an end before the start,
    an unknown state, a bad hostlist, a node event without a node or another cluster's name are
    rejects with a reason.

    Raises:
        SlurmEventsFormatError: fixed-width output, no usable header (and no ``fields``).
        ValueError: ``timezone`` is not an IANA zone.
    """
    check_timezone(timezone)
    text = text.lstrip("\ufeff")
    lines = _record_lines(text)
    if lines.height == 0:
        # An empty dump (a quiet day's cut, a script that wrote nothing) loads with no rows, as in every
        # source: the ledger's row (rows_read 0) is its trace.
        return _finish(source_file, "sacctmgr", pl.DataFrame(schema=SLURM_EVENT_SCHEMA), [], None)
    keys, trailing, has_header = _header(lines.item(0, "raw_line"), source_file, fields)
    if not has_header:
        trailing = _headerless_trailing(lines, len(keys))
    body, cut_rejects = _reject_cut_last_line(text, lines.slice(1) if has_header else lines, keys, trailing,
                                              source_file)
    parts, count_rejects = _split_fields(body, keys, trailing, source_file)
    records, rejects = _typed_events(parts, {k for k in keys if k}, source_file, "sacctmgr", timezone,
                                     cluster, None)
    return _finish(source_file, "sacctmgr", records, [cut_rejects, count_rejects, rejects], None)


def parse_sinfo_reasons_text(
    text: str, source_file: str, *, observed_ts: datetime, timezone: str = "UTC", cluster: str | None = None
) -> SlurmEventsParseResult:
    """Parse a ``sinfo -R -h -o "%n|%E|%u|%H|%T"`` snapshot: node, reason, user, since, state.

    Every line is an open node event (``end_ts`` null) starting at the reason time ``%H`` and
    observed at ``observed_ts`` (the snapshot time). A header line (``HOSTNAMES|REASON|...``, from
    running without ``-h``) is skipped. A reason time of ``Unknown`` is rejected: without a start
    the event cannot be placed in time.

    Raises:
        SlurmEventsFormatError: sinfo's default fixed-width output (no ``-o``).
    """
    check_timezone(timezone)
    if observed_ts.tzinfo is None:
        raise ValueError("observed_ts must be timezone-aware")
    lines = _record_lines(text.lstrip("\ufeff"))
    first = lines.item(0, "raw_line") if lines.height else ""
    if "|" not in first and first.split()[:1] and first.split()[0].lower() in _SINFO_FIXED_WIDTH_FIRST:
        # `sinfo -R` without -o: padded columns, reasons cut at 20 characters. Read as a snapshot of
        # unreadable lines it listed no node, which ended every open drain.
        raise SlurmEventsFormatError(
            f"{source_file}: fixed-width sinfo output; re-run 'sinfo -R -h -o \"%n|%E|%u|%H|%T\"'")
    if lines.height and first.split("|", 1)[0].strip().lower() in _SINFO_HEADER_FIRST:
        lines = lines.slice(1)
    keys = list(SINFO_FIELDS)
    lines, cut_rejects = _reject_cut_last_line(text.lstrip("\ufeff"), lines, keys, False, source_file)
    fields, count_rejects = _split_fields(lines, keys, False, source_file)
    records, rejects = _typed_events(fields, set(keys), source_file, "sinfo", timezone, cluster,
                                     observed_ts.astimezone(dt_timezone.utc))
    return _finish(source_file, "sinfo", records, [cut_rejects, count_rejects, rejects], observed_ts)


def parse_slurm_events_file(
    path: Path, source_file: str, *, timezone: str = "UTC", cluster: str | None = None, data: bytes | None = None,
    fields: Sequence[str] | None = None,
) -> SlurmEventsParseResult:
    """Parse a file of ``landing/slurm_events``: an ``sinfo-*`` snapshot (observed at the time its name
    gives, else the file's mtime: :func:`snapshot_time`) or a sacctmgr dump. Bytes (``data``, else the file's) are decoded as UTF-8, invalid
    sequences replaced (U+FFFD)."""
    path = Path(path)
    text = (path.read_bytes() if data is None else data).decode("utf-8", errors="replace")
    if is_sinfo_snapshot(path):
        observed = snapshot_time(path, timezone)
        return parse_sinfo_reasons_text(text, source_file, observed_ts=observed, timezone=timezone, cluster=cluster)
    return parse_slurm_events_text(text, source_file, timezone=timezone, cluster=cluster, fields=fields)
