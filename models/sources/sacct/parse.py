"""Parse Slurm accounting dumps (``sacct -P``, ``sacct --parsable``, ``sacct --json``) into rows of
``raw.sacct_records`` (see ``sql/ddl/010_raw.sql``), plus one reject row per unloadable record.

Text dumps are parsed column-wise with Polars: lines are split once, the field count is checked, and
each field is typed by one vectorised expression (see :mod:`gpusre.models.ingest.slurm_values`). Only
pending array ranges and unusual hostlists go through Python, once per *distinct* value (the common
hostlist forms are expanded by Polars: :func:`~gpusre.models.ingest.hostlist.expand_hostlists`).

Conventions (lossless but typed):

* ``job_id`` is the JobID as printed without the step (``123``, ``123_4``, ``123_[1-5]``,
  ``123+0``); ``job_id_raw`` is JobIDRaw exactly as printed (it keeps the step suffix for steps,
  e.g. ``24221219.batch``), null when the dump has no JobIDRaw column.
* Empty text in optional string fields (name, user, partition, comment...) becomes null.
* Timestamps are read in the cluster's IANA ``timezone`` and stored in UTC. An ambiguous local time
  (DST fall-back) takes the earliest instant, except that an ambiguous Start or End takes the
  reading (earliest or latest) whose End - Start equals the record's Elapsed/ElapsedRaw (first
  match in the order earliest/earliest, earliest/latest, latest/earliest, latest/latest), and an
  ambiguous Submit or Eligible takes the latest reading that is not after the record's Start as
  resolved (Slurm has Submit <= Eligible <= Start), the earliest when that one is after Start or
  there is no Start (a pending job); a non-existent one (spring-forward gap) is stored null without
  rejecting the record.
* A timestamp with a UTC offset, as Slurm prints under ``SLURM_TIME_FORMAT="%FT%T%z"``
  (``2026-11-01T01:45:00-0600``; ``-06:00`` and ``Z`` are read too), is an exact instant: it is
  converted with its own offset, no zone rule or DST guess applies. This is the DST-safe format to
  dump with; a dump may mix such stamps with local ones (``%FT%T``, ``"%F %T"``).
* A stamp within a day of the Unix epoch (``1970-01-01T00:00:00``, ``1969-12-31T17:00:00``...) is
  Slurm's unset time 0 printed in some zone: stored null, like ``Unknown``. A finished record
  (terminal state) with End and Elapsed > 0 but no Start started at End - Elapsed (Slurm's own
  fields; exact unless it was suspended); Elapsed 0 (cancelled while pending) stays unstarted. A
  record whose End is before its Start, or whose End - Start exceeds Elapsed by more than any
  suspension (:data:`~gpusre.models.ingest.slurm_values.MAX_SUSPENDED_S`), is rejected naming the
  three values: one of its stamps is wrong and which cannot be told.
* GPUs come from AllocTRES/AllocGRES whenever the dump has one of them and the row's value is not
  empty; else from ReqTRES/ReqGRES. A source that lists TRES/GRES without a GPU entry is 0 GPUs;
  one whose every column is empty or missing is null (unknown: a pending record's allocation
  states no count). A GPU entry whose count is not a whole number
  (``gres/gpu=8x``) rejects the record. ``sacct --json`` follows the same rule: ``tres.allocated``
  when it lists any TRES, else ``tres.requested`` (a pending job's ``allocated`` is ``[]``), null
  when both are empty.
* Slurm does not escape the delimiter inside text in ``-P`` output (``--wrap="a | b"``). A record
  with more fields than the header is repaired by rejoining the extra fields, with the
  delimiter, into a column of user-typed text (:data:`PIPE_TEXT_FIELDS`: JobName, SubmitLine,
  Comment, WorkDir, Constraints...). When the header has exactly one such column they go to it.
  When it has several, each column is tried with all the extra fields; a try is valid when every
  other field then has its form (it types as any record: stamps, durations, states, JobIDs,
  numbers, and :data:`_FIELD_FORMS` for TRES/GRES and NodeList). The record loads when one try is
  valid, or several that read every other typed field alike (text columns side by side); the
  text then goes to the first of them in :data:`PIPE_TEXT_FIELDS`' order (SubmitLine, Comment,
  WorkDir, ..., JobName last). Tries that read the other fields differently, or no valid try,
  reject the record, the reason naming the columns (re-dump with ``--delimiter``).
* A TRES/GRES or NodeList field that is not of its form (a space or quote in a host name, a TRES
  entry without ``=``) rejects the record.
* Given a ``cluster`` (the pipeline passes cluster.yaml's), a dump whose Cluster column names
  several clusters (``sacct -M all``) keeps only the rows of ``cluster`` (compared
  case-insensitively); the other clusters' rows are rejects, and all rows are when none of the
  names is ``cluster``. A dump naming one cluster loads whatever its name.
* A header line, when present, defines the fields even if ``fields`` is also given. A later line
  that is a header too (a field named JobID or JobIDRaw: dumps concatenated, ``cat a.psv b.psv``)
  is not a record: the same header again is skipped, another one defines the fields of the lines
  under it (:func:`read_sacct_dumps`).
* A last line without a line break was cut while written (``gres/gpu=16`` left as ``gres/gpu=1``)
  unless it is shown whole: its field count is right and it ends with ``--parsable``'s trailing
  delimiter, or its last field is free text (JobName, Comment) where a cut changes no number. Else
  it is rejected (``CUT_LAST_LINE``) and the lines before it load.
* Lines starting with ``#`` and blank lines are not records (``rows_read`` excludes them).

>>> r = parse_sacct_text("JobID|State|ExitCode\\n123.batch|CANCELLED by 0|0:15\\n", "x.psv")
>>> r.records.select("job_id", "step_id", "state", "cancelled_by", "exit_signal").row(0)
('123', 'batch', 'CANCELLED', 0, 15)
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from gpusre.models.ingest.hostlist import expand_hostlist, expand_hostlists
from gpusre.models.ingest.landing_files import CUT_LAST_LINE, unterminated_last_line
from gpusre.models.ingest.slurm_values import (
    DURATION_NULL_TOKENS,
    SLURM_BASE_STATES,
    SLURM_STATES,
    TIMELIMIT_NULL_TOKENS,
    TIMESTAMP_NULL_TOKENS,
    check_timezone,
    gres_gpus,
    gres_gpus_error,
    has_ambiguous_times,
    has_space_for_t,
    has_utc_offsets,
    invalid_value,
    localize_to_utc,
    parse_duration_s,
    parse_exit_code,
    parse_int,
    parse_job_id,
    parse_naive_timestamp,
    parse_offset_timestamp,
    parse_state,
    run_span_error,
    start_from_end,
    tres_count,
    tres_gpus,
    tres_gpus_error,
    unset_time_to_null,
)
from gpusre.models.vocabulary import TERMINAL_STATES

__all__ = [
    "SACCT_RECORD_SCHEMA",
    "REJECT_SCHEMA",
    "PIPE_TEXT_FIELDS",
    "SLURM_STATES",
    "SacctFormatError",
    "SacctParseResult",
    "SacctTextDump",
    "SplitLayout",
    "expand_array_tasks",
    "is_json_dump",
    "parse_sacct_text",
    "parse_sacct_json",
    "parse_sacct_json_bytes",
    "parse_sacct_file",
    "read_sacct_text",
    "type_sacct_dumps",
]

_UTC = pl.Datetime("us", "UTC")

#: Polars schema of ``raw.sacct_records`` (same columns, same order).
SACCT_RECORD_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "record_type": pl.String(),
    "cluster": pl.String(),
    "job_id": pl.String(),
    "job_id_raw": pl.String(),
    "array_job_id": pl.Int64(),
    "array_task_id": pl.Int64(),
    "array_task_ids": pl.List(pl.Int64),
    "het_job_id": pl.Int64(),
    "het_job_offset": pl.Int32(),
    "step_id": pl.String(),
    "name": pl.String(),
    "user": pl.String(),
    "uid": pl.Int64(),
    "account": pl.String(),
    "group": pl.String(),
    "partition": pl.String(),
    "qos": pl.String(),
    "state": pl.String(),
    "state_raw": pl.String(),
    "cancelled_by": pl.Int64(),
    "exit_code": pl.Int32(),
    "exit_signal": pl.Int32(),
    "submit_ts": _UTC,
    "eligible_ts": _UTC,
    "start_ts": _UTC,
    "end_ts": _UTC,
    "elapsed_s": pl.Int64(),
    "timelimit_s": pl.Int64(),
    "n_nodes": pl.Int32(),
    "n_cpus": pl.Int32(),
    "n_gpus": pl.Int32(),
    "gpu_type": pl.String(),
    "nodelist": pl.String(),
    "nodes": pl.List(pl.String),
    "restart_cnt": pl.Int32(),
    "comment": pl.String(),
    "raw_line": pl.String(),
}

#: Polars schema of rejected records (``raw.rejects`` minus the columns the loader adds).
REJECT_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "raw": pl.String(),
    "error": pl.String(),
}

#: Largest pending-array range expanded (Slurm's MaxArraySize cannot exceed 4,000,001).
MAX_ARRAY_TASKS = 4_000_001


class SacctFormatError(ValueError):
    """The whole file is refused: not ``sacct -P``/``--json`` output, or missing JobID/State."""


@dataclass(frozen=True)
class SacctParseResult:
    """Outcome of parsing one sacct dump.

    ``records`` follows :data:`SACCT_RECORD_SCHEMA`, ``rejects`` :data:`REJECT_SCHEMA`;
    ``rows_read == len(records) + len(rejects)`` (header, blank and comment lines excluded).
    """

    records: pl.DataFrame
    rejects: pl.DataFrame
    rows_read: int


# Header name (lower case) -> internal field key. Names not listed here are ignored.
_FIELD_KEYS: dict[str, str] = {
    "jobid": "jobid",
    "jobidraw": "jobidraw",
    "cluster": "cluster",
    "partition": "partition",
    "qos": "qos",
    "account": "account",
    "group": "group",
    "user": "user",
    "uid": "uid",
    "submit": "submit",
    "eligible": "eligible",
    "start": "start",
    "end": "end",
    "elapsed": "elapsed",
    "elapsedraw": "elapsedraw",
    "timelimit": "timelimit",
    "timelimitraw": "timelimitraw",
    "exitcode": "exitcode",
    "state": "state",
    "nnodes": "nnodes",
    "allocnodes": "nnodes",
    "ncpus": "ncpus",
    "alloccpus": "ncpus",
    "nodelist": "nodelist",
    "jobname": "name",
    "alloctres": "alloctres",
    "allocgres": "allocgres",
    "reqtres": "reqtres",
    "reqgres": "reqgres",
    "comment": "comment",
    "restarts": "restarts",
}
# Printed names used in reject messages.
_DISPLAY: dict[str, str] = {
    "jobid": "JobID", "uid": "UID", "submit": "Submit", "eligible": "Eligible", "start": "Start",
    "end": "End", "elapsed": "Elapsed", "elapsedraw": "ElapsedRaw", "timelimit": "Timelimit",
    "timelimitraw": "TimelimitRaw", "exitcode": "ExitCode", "nnodes": "NNodes", "ncpus": "NCPUS",
    "restarts": "Restarts",
}
_ALL_KEYS: tuple[str, ...] = tuple(dict.fromkeys(_FIELD_KEYS.values()))
_HEADER_FIRST_FIELDS = frozenset({"jobid", "jobidraw"})
# The dashes line under a fixed-width sacct header: '------------ ---------- --------'.
_RULER_RE = re.compile(r"^\s*-{3,}(?:\s+-{3,})*\s*$")
_SNIFF_LINES = 64
_FIXED_WIDTH_MSG = "fixed-width sacct output; re-run sacct with -P/--parsable2"


@dataclass(frozen=True)
class _Layout:
    fields: tuple[str, ...]  # as given or printed in the header
    header_line_no: int  # 0 when headerless
    trailing_delimiter: bool  # sacct --parsable: every line ends with the delimiter


def _head_lines(text: str, limit: int) -> Iterator[tuple[int, str]]:
    """First ``limit`` physical lines as (1-based line number, line without CR/LF)."""
    start = 0
    for line_no in range(1, limit + 1):
        end = text.find("\n", start)
        yield line_no, text[start: len(text) if end < 0 else end].rstrip("\r")
        if end < 0:
            return
        start = end + 1


#: How sacct begins its own messages (`sacct: error: Problem talking to the database: …`), which a
#: dump made with `2>&1` holds among the records.
_SACCT_MESSAGE = "sacct: "


def _is_record_line(line: str) -> bool:
    return bool(line.strip()) and not line.startswith("#") and not line.startswith(_SACCT_MESSAGE)


def _detect_layout(
    text: str, source_file: str, delimiter: str, fields: Sequence[str] | None
) -> _Layout:
    head = [(n, line) for n, line in _head_lines(text, _SNIFF_LINES) if _is_record_line(line)]
    for _, line in head:
        if delimiter not in line and _RULER_RE.match(line):
            raise SacctFormatError(f"{source_file}: {_FIXED_WIDTH_MSG}")
    if not head:
        if fields is None:
            raise SacctFormatError(f"{source_file}: no sacct header and no field list given")
        return _Layout(tuple(fields), 0, False)
    first_no, first = head[0]
    first_field = first.split(delimiter, 1)[0].strip().lower()
    if delimiter not in first and re.match(r"jobid(?:raw)?\b", first_field):
        if re.match(r"jobid(?:raw)?\s+\w", first_field):
            raise SacctFormatError(f"{source_file}: {_FIXED_WIDTH_MSG}")
        # Name the separator the header does use: a CSV export is the usual case, and quoted
        # AllocTRES lists ("cpu=8,gres/gpu=8") cannot be split on a plain comma.
        seen = next((c for c in (",", ";", "\t", "^") if c in first), None)
        hint = (f" (it is {seen!r}-separated: export with sacct -P, or set sacct.delimiter in cluster.yaml "
                "when no field contains it)") if seen else ""
        raise SacctFormatError(f"{source_file}: header line has no delimiter {delimiter!r}{hint}: {first!r}")
    # A header names JobID/JobIDRaw; any field order is valid (`--format=User,JobID,...`), and no
    # record's fields are the literal names.
    if any(name.strip().lower() in _HEADER_FIRST_FIELDS for name in first.split(delimiter)):
        trailing = first.endswith(delimiter)
        names = first.split(delimiter)
        return _Layout(tuple(names[:-1] if trailing else names), first_no, trailing)
    if fields is None:
        raise SacctFormatError(
            f"{source_file}: no sacct header line (naming JobID or JobIDRaw) and no field list "
            "given; pass fields= (cluster.yaml sacct.fields) for headerless dumps"
        )
    # Headerless --parsable: most lines carry one extra, empty field after the last delimiter.
    n = len(fields)
    counts = [line.split(delimiter) for _, line in head]
    n_trailing = sum(len(p) == n + 1 and p[-1] == "" for p in counts)
    n_exact = sum(len(p) == n for p in counts)
    return _Layout(tuple(fields), 0, n_trailing > n_exact)


def _field_index(layout: _Layout, source_file: str) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, name in enumerate(layout.fields):
        key = _FIELD_KEYS.get(name.strip().lower())
        if key is not None and key not in index:  # first occurrence wins on duplicates
            index[key] = i
    missing = [label for key, label in (("jobid", "JobID"), ("state", "State")) if key not in index]
    if missing:
        raise SacctFormatError(
            f"{source_file}: sacct fields {list(layout.fields)!r} lack required "
            f"{' and '.join(missing)} column"
        )
    return index


def expand_array_tasks(spec: str) -> list[int]:
    """Expand a pending array range body like ``9-11,13`` (``%`` throttle allowed) to task ids.

    >>> expand_array_tasks("9-11,13,16-17%4")
    [9, 10, 11, 13, 16, 17]

    Raises ``ValueError`` on descending or oversized ranges and on non-numeric parts.
    """
    spec = spec.split("%", 1)[0]
    out: list[int] = []
    for part in spec.split(","):
        lo_text, _, hi_text = part.partition("-")
        lo, hi = int(lo_text), int(hi_text or lo_text)
        if hi < lo or len(out) + hi - lo >= MAX_ARRAY_TASKS:
            raise ValueError(f"bad array task range {part!r}")
        out.extend(range(lo, hi + 1))
    return out


def _distinct_lookup(
    values: pl.Series, key: str, fn: Callable[[str], Any], value_dtype: pl.DataType, out: str
) -> pl.DataFrame:
    """Apply a Python ``fn`` once per distinct non-null value.

    Returns a frame (``key``, ``out``, ``out + '_err'``) to left-join on ``key``; ``fn`` raising
    ``ValueError`` gives a null result and its message.
    """
    keys = values.drop_nulls().unique()
    results: list[Any] = []
    errors: list[str | None] = []
    for k in keys.to_list():
        try:
            results.append(fn(k))
            errors.append(None)
        except ValueError as exc:
            results.append(None)
            errors.append(str(exc))
    return pl.DataFrame(
        [
            keys.alias(key),
            pl.Series(out, results, dtype=value_dtype),
            pl.Series(f"{out}_err", errors, dtype=pl.String),
        ]
    )


def _empty_to_null(e: pl.Expr) -> pl.Expr:
    return pl.when(e == "").then(None).otherwise(e)


_TS_KEYS = ("submit", "eligible", "start", "end")
# The plans here are hand-arranged (every subexpression computed once already): the optimizer's
# passes cost more than they save, ~10 ms per collect on a plan this size.
_PLAIN = pl.QueryOptFlags(comm_subplan_elim=False, comm_subexpr_elim=False, cluster_with_columns=False)
_JOB_ID_PARTS = ("job_id", "base", "task", "tasks", "het", "step")  # fields of parse_job_id
_GPU_KEYS = ("alloctres", "allocgres", "reqtres", "reqgres")
_GPU_DISPLAY = {"alloctres": "AllocTRES", "allocgres": "AllocGRES", "reqtres": "ReqTRES", "reqgres": "ReqGRES"}
_FORM_DISPLAY = {**_GPU_DISPLAY, "nodelist": "NodeList"}


_TRES_FORM = r"^(?:[^,=\s]+=[^,=\s]*(?:,[^,=\s]+=[^,=\s]*)*)?$"  # cpu=8,mem=64G,gres/gpu:h100=4
_GRES_FORM = r"^[^\s\"']*$"  # gpu:8, gpu:h100:4(IDX:0-1,4-5): no space or quote
#: The form of the fields whose typing reads any text (a hostlist is any name, a TRES string
#: without a GPU entry is 0 GPUs); every other typed field is checked by parsing it (stamps,
#: durations, states, JobIDs, integers). A record whose field lacks its form is rejected, and a
#: candidate placement of a ``|`` in free text is only valid with these forms
#: (:func:`_pick_text_column`): one definition for both.
_FIELD_FORMS: dict[str, str] = {
    "alloctres": _TRES_FORM, "reqtres": _TRES_FORM, "allocgres": _GRES_FORM, "reqgres": _GRES_FORM,
    # Host names and ranges (gpu[01-04,07],n2), or what sacct prints when there are none.
    "nodelist": r"^(?:[\w.\-\[\],]*|None assigned|\(null\)|None)$",
}


def _form_bad(key: str) -> pl.Expr:
    """``_{key}_bad``: the field holds text without the form of :data:`_FIELD_FORMS`."""
    return (~pl.col(key).str.contains(_FIELD_FORMS[key])).fill_null(False).alias(f"_{key}_bad")


def _gpu_exprs(present: set[str]) -> list[pl.Expr]:
    """GPU count, type and malformed-entry message (``_gpu_n``, ``_gpu_type``, ``_gpu_err``) from the
    dump's TRES/GRES columns: AllocTRES/AllocGRES when the row has a non-empty one, else
    ReqTRES/ReqGRES; 0 GPUs when the source lists TRES/GRES but no GPU entry, null (unknown) when
    every column of the source is empty or missing (a pending record's allocation states nothing)."""
    def col(k: str) -> pl.Expr:
        return pl.col(k) if k in present else pl.lit(None, pl.String)

    def non_empty(*keys: str) -> pl.Expr:
        return pl.any_horizontal([(col(k) != "").fill_null(False) for k in keys])

    def source(tres: str, gres: str) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
        tg, gg = tres_gpus(col(tres)), gres_gpus(col(gres))
        # An empty allocation (a pending or cancelled-while-pending record: AllocTRES and NodeList
        # empty) is no statement of 0 GPUs: null, so the job's count comes from the records that
        # state one (sql/core/jobs_upsert.sql).
        n = pl.coalesce(tg.struct.field("n_gpus"), gg.struct.field("n_gpus"),
                        pl.when(non_empty(tres, gres)).then(pl.lit(0, pl.Int64)))
        gpu_type = pl.coalesce(tg.struct.field("gpu_type"), gg.struct.field("gpu_type"))
        errors = [
            pl.format(f"malformed GPU count in {_GPU_DISPLAY[k]} '{{}}'", fn(col(k)))
            for k, fn in ((tres, tres_gpus_error), (gres, gres_gpus_error)) if k in present
        ]
        err = pl.coalesce(errors) if errors else pl.lit(None, pl.String)
        return n, gpu_type, err

    alloc, req = source("alloctres", "allocgres"), source("reqtres", "reqgres")
    if not present & {"reqtres", "reqgres"}:
        picked = alloc
    elif not present & {"alloctres", "allocgres"}:
        picked = req
    else:
        use_alloc = non_empty("alloctres", "allocgres") | ~non_empty("reqtres", "reqgres")
        picked = tuple(pl.when(use_alloc).then(a).otherwise(r) for a, r in zip(alloc, req, strict=True))
    return [e.alias(name) for e, name in zip(picked, ("_gpu_n", "_gpu_type", "_gpu_err"), strict=True)]


def _cluster_rejects(pairs: pl.DataFrame, cluster: str | None) -> pl.DataFrame | None:
    """From the distinct (source_file, cluster) pairs of the rows: (source_file, cluster,
    ``_cluster_err``) for rows to reject because their dump mixes Slurm clusters (``sacct -M``),
    or None when no dump does or no ``cluster`` is given (a library call outside a warehouse: the
    pipeline always passes cluster.yaml's name).

    A dump naming several clusters keeps the rows of ``cluster`` (case-insensitive) and rows with
    an empty Cluster; the other clusters' rows are rejected. When none of its names is ``cluster``,
    every row of it is rejected: which one is this warehouse's cannot be told.
    """
    if cluster is None:
        return None
    wanted = cluster.lower()
    out: list[tuple[str, str | None, str]] = []
    for (source_file,), group in pairs.group_by("source_file", maintain_order=True):
        values = group.get_column("cluster").to_list()
        names: dict[str, str] = {}  # lower-case name -> name as printed (first seen)
        for v in sorted(v for v in values if v):
            names.setdefault(v.lower(), v)
        if len(names) < 2:
            continue
        if wanted in names:
            out += [(source_file, v, f"record of Slurm cluster '{v}'; this warehouse is cluster "
                                     f"'{cluster}' (cluster.yaml cluster)")
                    for v in values if v and v.lower() != wanted]
        else:
            seen = ", ".join(f"'{n}'" for n in sorted(names.values()))
            reason = (f"dump holds records of several Slurm clusters ({seen}) and none is this warehouse's "
                      f"cluster '{cluster}': set cluster.yaml cluster to the Slurm cluster name this "
                      "warehouse is for")
            out += [(source_file, v, reason) for v in values]
    if not out:
        return None
    return pl.DataFrame(out, schema={"source_file": pl.String, "cluster": pl.String, "_cluster_err": pl.String},
                        orient="row")


def _space_for_t(df: pl.DataFrame, present: Iterable[str]) -> bool:
    """Whether the dumps of ``df`` (string fields by key) print stamps as ``"%F %T"``: a site's
    SLURM_TIME_FORMAT or a converted trace (``2026-11-30 01:00:00``). A sample of the first lines
    of every dump is enough: each prints its stamps one way."""
    sample = df.filter(pl.col("line_no") <= 100)
    return any(has_space_for_t(sample.get_column(k)) for k in _TS_KEYS if k in present)


def _typed_text_records(
    df: pl.DataFrame, present: set[str], timezone: str, cluster: str | None, *, space_for_t: bool | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """From string columns named by field key (+ source_file, line_no, raw_line) to
    (records in :data:`SACCT_RECORD_SCHEMA` order, rejects with their reasons).

    ``space_for_t`` overrides the stamp form read off ``df`` (:func:`_space_for_t`), for a frame
    of a few lines typed on their dump's behalf."""
    c = pl.col
    df = df.with_columns(pl.lit(None, pl.String).alias(k) for k in _ALL_KEYS if k not in present)
    base = df.lazy()

    # Low-cardinality fields (State, ExitCode, Elapsed, Timelimit, AllocTRES...) repeat a handful
    # of values over millions of rows: parse each distinct value once and look it up per row,
    # ~10x cheaper than parsing every row. Lookup tables: (keys, exprs on the distinct keys).
    distinct_specs: list[tuple[list[str], list[pl.Expr]]] = []
    st = parse_state(c("state"))
    distinct_specs.append((["state"], [
        st.struct.field("state").alias("_state"),
        st.struct.field("cancelled_by").alias("_cancelled_by"),
    ]))
    if "exitcode" in present:
        ex = parse_exit_code(c("exitcode"))
        distinct_specs.append((["exitcode"], [
            ex.struct.field("exit_code").alias("_exit_code"),
            ex.struct.field("exit_signal").alias("_exit_signal"),
            invalid_value(c("exitcode"), ex.struct.field("exit_code"), {""}).alias("_exitcode_bad"),
        ]))
    for k, tokens in (("elapsed", DURATION_NULL_TOKENS), ("timelimit", TIMELIMIT_NULL_TOKENS)):
        if k in present:
            distinct_specs.append(([k], [
                parse_duration_s(c(k)).alias(f"_{k}"),
                invalid_value(c(k), parse_duration_s(c(k)), tokens).alias(f"_{k}_bad"),
            ]))
    gpu_keys = [k for k in _GPU_KEYS if k in present]
    if gpu_keys:
        tres_exprs = [
            tres_count(c("alloctres"), key).cast(pl.Int32, strict=False).alias(f"_tres_{key}")
            for key in ("cpu", "node") if "alloctres" in present
        ]
        distinct_specs.append((gpu_keys, [*_gpu_exprs(present), *tres_exprs, *(_form_bad(k) for k in gpu_keys)]))
    # The Slurm clusters each dump names (`sacct -M all` dumps name several).
    cluster_pairs = [base.select("source_file", "cluster").unique()] if "cluster" in present else []
    # One collect_all per stage: fewer round trips (they dominate small daily files) and the
    # independent queries run in parallel.
    tables = pl.collect_all(
        [base.select(keys).unique().with_columns(exprs) for keys, exprs in distinct_specs] + cluster_pairs,
        optimizations=_PLAIN,
    )
    lookups: list[tuple[list[str], pl.DataFrame]] = [
        (keys, table) for (keys, _), table in zip(distinct_specs, tables, strict=False)
    ]
    if cluster_pairs:
        cluster_table = _cluster_rejects(tables[-1].sort("source_file", "cluster"), cluster)
        if cluster_table is not None:
            lookups.append((["source_file", "cluster"], cluster_table))
    # Once per distinct value only: hostlists (Polars, unusual forms in Python) and pending array ranges.
    if "nodelist" in present:
        lookups.append((["nodelist"], expand_hostlists(df.get_column("nodelist"), out="_nodes")
                        .with_columns(_form_bad("nodelist"))))
    # Joins on the key columns only, then hstack: joining the wide frame (raw_line included)
    # would gather every column once per lookup.
    queries = [
        base.select(keys)
        .join(table.lazy(), on=keys, how="left", nulls_equal=True, maintain_order="left")
        .drop(keys)
        for keys, table in lookups
    ]
    # Row-wise: JobID (nearly unique per row), one regex pass giving all its parts.
    queries.append(
        base.select(
            parse_job_id(c("jobid")).struct.rename_fields([f"_{k}" for k in _JOB_ID_PARTS]).alias("_jid")
        ).unnest("_jid")
    )
    # (Separate collects: collect_all of these joins measured ~4x slower on 1M rows.)
    looked = [q.collect(optimizations=_PLAIN) for q in queries]
    jid_parts = looked[-1]
    columns = [s for frame in looked for s in frame.get_columns()]
    jobids = df.get_column("jobid")
    pending = jobids.filter(jobids.str.contains("[", literal=True))
    if not pending.is_empty():
        task_table = _distinct_lookup(
            pending.str.extract(r"_\[([0-9,\-]+)", 1), "_tasks", expand_array_tasks, pl.List(pl.Int64), "_task_ids"
        )
        columns += (
            jid_parts.lazy().select("_tasks")
            .join(task_table.lazy(), on="_tasks", how="left", nulls_equal=True, maintain_order="left")
            .drop("_tasks")
            .collect(optimizations=_PLAIN)
            .get_columns()
        )
    missing = {
        "_exit_code": pl.Int32, "_exit_signal": pl.Int32, "_exitcode_bad": pl.Boolean,
        "_elapsed": pl.Int64, "_elapsed_bad": pl.Boolean, "_timelimit": pl.Int64, "_timelimit_bad": pl.Boolean,
        "_gpu_n": pl.Int64, "_gpu_type": pl.String, "_gpu_err": pl.String, "_cluster_err": pl.String,
        "_tres_cpu": pl.Int32, "_tres_node": pl.Int32, "_nodes": pl.List(pl.String), "_nodes_err": pl.String,
        "_task_ids": pl.List(pl.Int64), "_task_ids_err": pl.String,
        **{f"_{k}_bad": pl.Boolean for k in _FIELD_FORMS},
    }
    have = {s.name for s in columns}
    lf = df.hstack(columns).lazy().with_columns(
        pl.lit(None, dtype).alias(name) for name, dtype in missing.items() if name not in have
    )
    if space_for_t is None:
        space_for_t = _space_for_t(df, present)
    # SLURM_TIME_FORMAT="%FT%T%z" stamps carry their UTC offset: exact instants (`_{k}_exact`), never
    # localized. Checked on every value (lengths only): a dump may mix both forms. The naive parse
    # is null for them, so each stamp has at most one of `_{k}` and `_{k}_exact`.
    offsets = any(has_utc_offsets(df.get_column(k)) for k in _TS_KEYS if k in present)
    lf = lf.with_columns(
        *(parse_naive_timestamp(c(k), space_for_t=space_for_t).alias(f"_{k}") for k in _TS_KEYS),
        *(
            parse_offset_timestamp(c(k), space_for_t=space_for_t).alias(f"_{k}_exact")
            for k in _TS_KEYS if offsets
        ),
        *(
            parse_int(c(k), dtype).alias(f"_{k}")
            for k, dtype in (
                ("elapsedraw", pl.Int64), ("timelimitraw", pl.Int64), ("uid", pl.Int64),
                ("nnodes", pl.Int32), ("ncpus", pl.Int32), ("restarts", pl.Int32),
            )
        ),
    )
    # (condition, message) per check; messages are only built for the rows that fail.
    checks: list[tuple[pl.Expr, pl.Expr]] = [
        (c("_job_id").is_null(), pl.format("malformed JobID '{}'", c("jobid"))),
        (c("_state").is_null(), pl.format("unknown Slurm state '{}'", c("state"))),
        (c("_exitcode_bad").fill_null(False), pl.format("malformed ExitCode '{}'", c("exitcode"))),
        *(
            (
                invalid_value(
                    c(k),
                    # (the exact stamp made naive only to share a type: this checks for null)
                    pl.coalesce(c(f"_{k}"), c(f"_{k}_exact").dt.replace_time_zone(None)) if offsets else c(f"_{k}"),
                    TIMESTAMP_NULL_TOKENS,
                ),
                pl.format(f"malformed {_DISPLAY[k]} timestamp '{{}}'", c(k)),
            )
            for k in _TS_KEYS
            if k in present
        ),
        *(
            (c(f"_{k}_bad").fill_null(False), pl.format(f"malformed {_DISPLAY[k]} '{{}}'", c(k)))
            for k in ("elapsed", "timelimit")
            if k in present
        ),
        *(
            (invalid_value(c(k), c(f"_{k}"), tokens), pl.format(f"malformed {_DISPLAY[k]} '{{}}'", c(k)))
            for k, tokens in (
                ("elapsedraw", {""}),
                ("timelimitraw", TIMELIMIT_NULL_TOKENS),
                ("uid", {""}),
                ("nnodes", {""}),
                ("ncpus", {""}),
                ("restarts", {""}),
            )
            if k in present
        ),
        *(
            (c(f"_{k}_bad").fill_null(False), pl.format(f"malformed {_FORM_DISPLAY[k]} '{{}}'", c(k)))
            for k in _FIELD_FORMS
            if k in present
        ),
        (
            c("_nodes_err").is_not_null(),
            pl.format("malformed NodeList '{}': {}", c("nodelist"), c("_nodes_err")),
        ),
        (
            c("_task_ids_err").is_not_null(),
            pl.format("malformed JobID '{}': {}", c("jobid"), c("_task_ids_err")),
        ),
        (c("_gpu_err").is_not_null(), c("_gpu_err")),
        (c("_cluster_err").is_not_null(), c("_cluster_err")),
    ]

    def to_utc(k: str, ambiguous: str = "earliest") -> pl.Expr:
        """Stamp ``k`` in UTC: its exact instant when it has an offset, else the local time localized."""
        local = localize_to_utc(c(f"_{k}"), timezone, ambiguous=ambiguous)
        # Slurm's unset time 0 (the epoch, in whatever zone it was printed) is unknown, like `Unknown`.
        return unset_time_to_null(pl.coalesce(c(f"_{k}_exact"), local) if offsets else local)

    # DST fall-back: an ambiguous Start/End takes the reading that agrees with Elapsed. Only in zones
    # that turn their clocks back (never on the UTC path: two more localizations per stamp).
    ambiguous_zone = has_ambiguous_times(timezone)
    resolve_dst = ambiguous_zone and {"start", "end"} <= present and bool(present & {"elapsed", "elapsedraw"})
    if resolve_dst:
        lf = lf.with_columns(
            to_utc(k, amb).alias(f"_{k}_{amb}") for k in ("start", "end") for amb in ("earliest", "latest")
        )
        se, sl, ee, el = c("_start_earliest"), c("_start_latest"), c("_end_earliest"), c("_end_latest")
        secs = pl.coalesce(c("_elapsedraw"), c("_elapsed"))

        def fits(s: pl.Expr, e: pl.Expr) -> pl.Expr:
            return (e - s).dt.total_seconds() == secs

        lf = lf.with_columns(
            pl.when(fits(se, ee) | fits(se, el)).then(se)
            .when(fits(sl, ee) | fits(sl, el)).then(sl).otherwise(se).alias("_start_utc"),
            pl.when(fits(se, ee)).then(ee).when(fits(se, el)).then(el)
            .when(fits(sl, ee)).then(ee).when(fits(sl, el)).then(el).otherwise(ee).alias("_end_utc"),
        )
    elif ambiguous_zone and {"start", "end"} <= present:
        # No Elapsed to resolve with, but Slurm has End >= Start: an ambiguous End before Start takes
        # its latest reading when that one is not (01:50 CDT .. 01:10 CST), else it stays (and is
        # rejected below: End before Start).
        lf = lf.with_columns(
            to_utc("start").alias("_start_utc"), to_utc("end").alias("_end_earliest"),
            to_utc("end", "latest").alias("_end_latest"),
        )
        se, ee, el = c("_start_utc"), c("_end_earliest"), c("_end_latest")
        lf = lf.with_columns(pl.when((ee < se) & (el >= se)).then(el).otherwise(ee).alias("_end_utc"))
        resolve_dst = True
    # A --format without Elapsed (or without Start) still has the span: End - Start (or End - Elapsed),
    # else such a job held its GPUs for 0 GPU-hours while utilization counted its span.
    # (Only then: the default path localizes each stamp once.)
    ts = {k: to_utc(k) for k in _TS_KEYS}
    if resolve_dst:
        ts["start"], ts["end"] = c("_start_utc"), c("_end_utc")
    elapsed = pl.coalesce(c("_elapsedraw"), c("_elapsed"))
    if not present & {"elapsed", "elapsedraw"}:
        elapsed = (ts["end"] - ts["start"]).dt.total_seconds().clip(lower_bound=0)
    if "start" not in present:
        ts["start"] = ts["end"] - pl.duration(seconds=elapsed)
    else:
        # Start unknown on a finished record that ran: End - Elapsed, Slurm's own fields (else its
        # GPU-hours count in core.jobs but in no day). Elapsed 0 (cancelled while pending) stays unstarted.
        ts["start"] = start_from_end(ts["start"], ts["end"], elapsed, c("_state"), TERMINAL_STATES)
    # A Start/End/Elapsed that cannot all be true (End in 2099 after a 1-hour run) rejects the record:
    # loaded, it would stretch the accounting span over decades.
    span_err = run_span_error(
        ts["start"], ts["end"], elapsed,
        start_text=c("start") if "start" in present else None,
        end_text=c("end") if "end" in present else None,
        elapsed_text=c("elapsed") if "elapsed" in present and "elapsedraw" not in present else None,
    )
    checks.append((span_err.is_not_null(), span_err))
    # DST fall-back, Submit/Eligible: Slurm has Submit <= Eligible <= Start, so an ambiguous one takes
    # its latest reading not after the job's resolved Start (the earliest put a 5-min wait in the
    # repeated hour at 65 min); the earliest when that reading is after Start or there is no Start
    # (a pending job: nothing to bound it).
    queued = [k for k in ("submit", "eligible") if k in present]
    if ambiguous_zone and queued:
        lf = lf.with_columns(
            ts["start"].alias("_start_bound"),
            *(to_utc(k, amb).alias(f"_{k}_{amb}") for k in queued for amb in ("earliest", "latest")),
        )
        lf = lf.with_columns(
            pl.when(c(f"_{k}_latest") <= c("_start_bound")).then(c(f"_{k}_latest"))
            .otherwise(c(f"_{k}_earliest")).alias(f"_{k}_utc")
            for k in queued
        )
        ts.update({k: c(f"_{k}_utc") for k in queued})
    full = lf.with_columns(pl.any_horizontal(cond for cond, _ in checks).alias("_bad")).collect(
        optimizations=_PLAIN
    )

    n_gpus = c("_gpu_n") if gpu_keys else pl.lit(None, pl.Int64)
    task, het = c("_task"), c("_het")
    base = c("_base").cast(pl.Int64, strict=False)
    is_array = task.is_not_null() | c("_tasks").is_not_null()
    task_id = task.cast(pl.Int64, strict=False)
    record_exprs = [
        c("source_file"),
        c("line_no"),
        pl.when(c("_step").is_null())
        .then(pl.lit("allocation"))
        .otherwise(pl.lit("step"))
        .alias("record_type"),
        pl.coalesce(_empty_to_null(c("cluster")), pl.lit(cluster, pl.String)).alias("cluster"),
        c("_job_id").alias("job_id"),
        _empty_to_null(c("jobidraw")).alias("job_id_raw"),
        pl.when(is_array).then(base).alias("array_job_id"),
        task_id.alias("array_task_id"),
        pl.when(task.is_not_null())
        .then(pl.concat_list(task_id))
        .otherwise(c("_task_ids"))
        .alias("array_task_ids"),
        pl.when(het.is_not_null()).then(base).alias("het_job_id"),
        het.cast(pl.Int32, strict=False).alias("het_job_offset"),
        c("_step").alias("step_id"),
        _empty_to_null(c("name")).alias("name"),
        _empty_to_null(c("user")).alias("user"),
        c("_uid").alias("uid"),
        *(_empty_to_null(c(k)).alias(k) for k in ("account", "group", "partition", "qos")),
        c("_state").alias("state"),
        c("state").alias("state_raw"),
        c("_cancelled_by").alias("cancelled_by"),
        c("_exit_code").alias("exit_code"),
        c("_exit_signal").alias("exit_signal"),
        *(ts[k].alias(f"{k}_ts") for k in _TS_KEYS),
        elapsed.alias("elapsed_s"),
        pl.coalesce(c("_timelimitraw") * 60, c("_timelimit")).alias("timelimit_s"),
        pl.coalesce(c("_nnodes"), c("_tres_node")).alias("n_nodes"),
        pl.coalesce(c("_ncpus"), c("_tres_cpu")).alias("n_cpus"),
        n_gpus.cast(pl.Int32, strict=False).alias("n_gpus"),
        c("_gpu_type").alias("gpu_type"),
        _empty_to_null(c("nodelist")).alias("nodelist"),
        c("_nodes").alias("nodes"),
        c("_restarts").alias("restart_cnt"),
        _empty_to_null(c("comment")).alias("comment"),
        c("raw_line"),
    ]
    bad_mask = full.get_column("_bad")
    if not bad_mask.any():
        # The common case: no per-row filtering (and copying) of the whole frame.
        return full.lazy().select(record_exprs).collect(), pl.DataFrame(schema=REJECT_SCHEMA)
    # (Lazy selects throughout: an eager select on this many-chunked frame rechunks it first.)
    bad = full.lazy().filter(c("_bad")).collect()
    errors = bad.lazy().select(
        pl.concat_str(
            [pl.when(cond).then(msg) for cond, msg in checks], separator="; ", ignore_nulls=True
        ).alias("_error")
    ).collect().to_series()
    records = full.lazy().filter(~c("_bad")).select(record_exprs).collect()
    rejects = bad.select("source_file", "line_no", c("raw_line").alias("raw")).with_columns(
        errors.alias("error")
    )
    if "_rejoined" in bad.columns:  # a record repaired by _rejoin_free_text: say so first
        rejects = rejects.with_columns(
            pl.concat_str([bad.get_column("_rejoined"), c("error")], separator=": ", ignore_nulls=True)
            .alias("error"))
    return records, rejects


def _read_lines(data: bytes) -> pl.DataFrame:
    """Physical lines of ``data`` as (line_no Int64 1-based, raw_line String without CR/LF).

    Uses Polars' CSV reader with a separator that never occurs (unit separator, checked), which is
    several times faster than splitting in Python; invalid UTF-8 is replaced by U+FFFD.
    """
    if b"\x1f" in data:
        text = data.decode("utf-8", errors="replace")
        lines = pl.Series("raw_line", text.split("\n"), pl.String).str.strip_suffix("\r")
        if text.endswith("\n"):
            lines = lines.head(-1)
        frame = lines.to_frame()
    elif not data:
        frame = pl.DataFrame({"raw_line": []}, schema={"raw_line": pl.String})
    else:
        frame = pl.read_csv(
            io.BytesIO(data),
            has_header=False,
            separator="\x1f",
            quote_char=None,
            new_columns=["raw_line"],
            infer_schema=False,
            encoding="utf8-lossy",
        ).with_columns(pl.col("raw_line").fill_null(""))
    return frame.with_row_index("line_no", offset=1).with_columns(pl.col("line_no").cast(pl.Int64))


class SplitLayout(NamedTuple):
    """How a text dump's record lines split into fields; dumps with equal layouts are split together."""

    delimiter: str
    n_fields: int
    trailing_delimiter: bool  # sacct --parsable: every line ends with the delimiter
    positions: tuple[tuple[str, int], ...]  # (field key, index in the split line), by key
    #: (Slurm's field name, index) of the columns whose text may hold the delimiter (:data:`PIPE_TEXT_FIELDS`).
    text_columns: tuple[tuple[str, int], ...] = ()
    #: (header name, index of its first copy, index of a repeat) per field the header names again:
    #: sacct prints a field given twice in --format twice, with the same value, so the first is read
    #: and a record whose copies differ (a hand-made file) is rejected (:func:`_split_fields`).
    repeats: tuple[tuple[str, int, int], ...] = ()


@dataclass(frozen=True)
class SacctTextDump:
    """One text dump's record lines with its layout, not yet split (see :func:`read_sacct_text`).

    ``lines`` has ``line_no``, ``raw_line`` and ``source_file`` for every line after the header;
    dumps with the same ``layout`` (delimiter, field count, trailing delimiter, field positions)
    are split and typed together by :func:`type_sacct_dumps`.
    """

    source_file: str
    lines: pl.DataFrame
    layout: SplitLayout
    #: Lines rejected before splitting (a cut last line, lines under an unusable second header).
    rejects: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=REJECT_SCHEMA))

    @property
    def present(self) -> frozenset[str]:
        """Field keys the dump has."""
        return frozenset(key for key, _ in self.layout.positions)


#: Fields whose value is free text: a record cut inside one changes no number, so a last line
#: without a line break that ends in one is read as whole (as a node log's message text is).
_FREE_TEXT_KEYS = frozenset({"name", "comment"})

#: sacct fields (lower case -> Slurm's spelling) holding strings a user or admin typed, which may contain ``|``: sacct
#: ``-P`` prints them unescaped (``--wrap="a | b"`` in SubmitLine, ``--constraint="a100|h100"``,
#: ``-L "lic1|lic2"``). Names, accounts, states and hostlists cannot hold it.
#: Listed from the likeliest to hold a shell pipe to the least: when a record's extra fields fit
#: several of a dump's columns alike, they go to the first (JobName last: a ``|`` in a job name is
#: rare, and the name groups training runs).
PIPE_TEXT_FIELDS: dict[str, str] = {name.lower(): name for name in (
    "SubmitLine", "Comment", "WorkDir", "AdminComment", "SystemComment", "Constraints", "WCKey", "Extra",
    "Container", "StdIn", "StdOut", "StdErr", "Licenses", "JobName",
)}


def read_sacct_text(
    data: bytes,
    source_file: str,
    *,
    fields: Sequence[str] | None = None,
    delimiter: str | None = None,
) -> SacctTextDump:
    """The first dump of :func:`read_sacct_dumps` (a file holds one unless dumps with different
    ``--format`` headers were concatenated): kept for callers that read one-header dumps."""
    return read_sacct_dumps(data, source_file, fields=fields, delimiter=delimiter)[0]


def read_sacct_dumps(
    data: bytes,
    source_file: str,
    *,
    fields: Sequence[str] | None = None,
    delimiter: str | None = None,
) -> list[SacctTextDump]:
    """Detect the layout of a ``sacct -P``/``--parsable`` dump and read its record lines.

    The cheap, per-file part of :func:`parse_sacct_text`; :func:`type_sacct_dumps` splits and
    types many dumps at once (one Polars pass over a day's worth of small nightly dumps costs a
    fraction of one pass per dump). One :class:`SacctTextDump` per header: a later header line
    with another field list (dumps with different ``--format`` concatenated) starts a dump of the
    lines under it; a header that lacks JobID or State rejects its lines with that reason.

    Raises:
        SacctFormatError: as :func:`parse_sacct_text`.
    """
    delim = delimiter or "|"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        raise SacctFormatError(f"{source_file}: empty sacct file")
    head = data[: 1 << 16].decode("utf-8", errors="replace")
    layout = _detect_layout(head, source_file, delim, fields)
    index = _field_index(layout, source_file)
    every = _read_lines(data)
    # Lines after the header (line_no is 1-based and consecutive, so a slice drops the header), and
    # sacct's own messages before it: they become rejects that say the dump may be incomplete.
    lines = every.slice(layout.header_line_no)
    if layout.header_line_no > 1:
        before = every.head(layout.header_line_no - 1).filter(pl.col("raw_line").str.starts_with(_SACCT_MESSAGE))
        lines = pl.concat([before, lines]) if before.height else lines
    lines = lines.with_columns(pl.lit(source_file, pl.String).alias("source_file"))
    first_header = every.item(layout.header_line_no - 1, "raw_line") if layout.header_line_no else None
    # A header names JobID/JobIDRaw in a field (as _detect_layout finds the first); no record does.
    # Only lines naming "jobid" at all are split and checked: splitting every line of a year of dumps
    # doubled the parse (bench_sacct 8.4 -> 17.6 s).
    is_header = (pl.col("raw_line").str.split(delim).list.eval(
        pl.element().str.strip_chars().str.to_lowercase().is_in(list(_HEADER_FIRST_FIELDS))).list.any())
    headers = (lines.filter(pl.col("raw_line").str.contains("(?i)jobid")).filter(is_header)
               .select("line_no", "raw_line"))
    # Each header line that differs from the one in force starts a new part; the same one again
    # (`cat a.psv b.psv` of one format) is merely skipped.
    starts: list[tuple[int, str]] = []
    current = first_header
    for line_no, text in headers.iter_rows():
        if text != current:
            starts.append((line_no, text))
            current = text
    if headers.height:
        lines = lines.join(headers, on="line_no", how="anti")
    cut_line = unterminated_last_line(data)
    bounds = [(0, None), *((n, t) for n, t in starts)]
    dumps: list[SacctTextDump] = []
    for i, (from_no, header) in enumerate(bounds):
        until = bounds[i + 1][0] if i + 1 < len(bounds) else None
        part = lines if len(bounds) == 1 else lines.filter(pl.col("line_no") > from_no)
        if until is not None:
            part = part.filter(pl.col("line_no") < until)
        part_layout, part_index, rejects = layout, index, pl.DataFrame(schema=REJECT_SCHEMA)
        if header is not None:
            trailing = header.endswith(delim)
            names = header.split(delim)
            part_layout = _Layout(tuple(names[:-1] if trailing else names), from_no, trailing)
            try:
                part_index = _field_index(part_layout, source_file)
            except SacctFormatError as exc:
                # Not the whole file's fault: the lines under this header alone are unusable.
                why = str(exc).removeprefix(f"{source_file}: ")
                bad = pl.concat([pl.DataFrame({"line_no": [from_no], "raw_line": [header],
                                               "source_file": [source_file]}, schema=part.schema), part])
                rejects = bad.filter(~pl.col("raw_line").str.contains(r"^(?:\s*$|#)")).select(
                    "source_file", "line_no", pl.col("raw_line").alias("raw"),
                    pl.lit(f"under a second header with another field list (two dumps concatenated?): {why}")
                    .alias("error"))
                dumps.append(SacctTextDump(source_file, part.clear(), dumps[0].layout if dumps else
                                           _split_layout(delim, layout, index), rejects.cast(REJECT_SCHEMA)))
                continue
        split = _split_layout(delim, part_layout, part_index)
        if cut_line is not None and (until is None or cut_line < until):
            part, rejects = _reject_cut_last_line(part, cut_line, split)
        dumps.append(SacctTextDump(source_file, part, split, rejects))
    return dumps


def _split_layout(delim: str, layout: _Layout, index: dict[str, int]) -> SplitLayout:
    # Slurm's spelling, not the header's: dumps differing only in the case of their names type together.
    text_columns = tuple((PIPE_TEXT_FIELDS[name.strip().lower()], i) for i, name in enumerate(layout.fields)
                         if name.strip().lower() in PIPE_TEXT_FIELDS)
    # The same name only: an alias is another field (NNodes is requested nodes, AllocNodes 0 while pending).
    names = [name.strip().lower() for name in layout.fields]
    repeats = tuple((layout.fields[i].strip(), names.index(name), i) for i, name in enumerate(names)
                    if name in _FIELD_KEYS and names.index(name) != i)
    return SplitLayout(delim, len(layout.fields), layout.trailing_delimiter, tuple(sorted(index.items())),
                       text_columns, repeats)


def _field_count(parts: list[str], layout: SplitLayout) -> int:
    """Fields of a split line, as :func:`_split_fields` counts them: ``--parsable``'s trailing
    delimiter is not one, and the extra fields a delimiter inside a free-text column made are not
    either (they rejoin into that column, :func:`_rejoin_free_text`, or the record is rejected
    for them)."""
    n = len(parts) - (layout.trailing_delimiter and parts[-1] == "")
    return layout.n_fields if n > layout.n_fields and layout.text_columns else n


def _reject_cut_last_line(lines: pl.DataFrame, cut_line: int, layout: SplitLayout) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``lines`` without the unterminated last line ``cut_line`` unless it is shown whole, and its
    reject (:data:`CUT_LAST_LINE`).

    Why: sacct ends every line with a line break, and a cut inside the last field usually leaves
    a valid, wrong value (``gres/gpu=16`` -> ``gres/gpu=1``, ``02:00:00`` -> ``02:00:0``). But
    writers that capture sacct's output and strip it drop the final break of a whole dump, so
    the line loads when it is shown whole: the right field count and ``--parsable``'s trailing
    delimiter at its end, or a last field of free text (a cut there changes no number; the same
    rule as a node log's message text). Comment and blank lines are not records either way.
    """
    delim, n_fields, trailing, positions = layout[:4]
    last = lines.filter(pl.col("line_no") == cut_line)
    if last.is_empty():
        return lines, pl.DataFrame(schema=REJECT_SCHEMA)
    raw = last.item(0, "raw_line")
    if not raw.strip() or raw.startswith("#"):
        return lines, pl.DataFrame(schema=REJECT_SCHEMA)
    parts = raw.split(delim)
    last_key = next((key for key, i in positions if i == n_fields - 1), None)
    if trailing:
        whole = parts[-1] == "" and _field_count(parts, layout) == n_fields
    else:
        whole = _field_count(parts, layout) == n_fields and last_key in _FREE_TEXT_KEYS
    if whole:
        return lines, pl.DataFrame(schema=REJECT_SCHEMA)
    reject = last.select("source_file", "line_no", pl.col("raw_line").alias("raw"),
                         pl.lit(CUT_LAST_LINE).alias("error"))
    return lines.filter(pl.col("line_no") != cut_line), reject.cast(REJECT_SCHEMA)  # type: ignore[arg-type]


_NO_REJOIN = pl.DataFrame(schema={"_into": pl.String, "_readings": pl.String})


def _placed(col: int, extra: pl.Expr, delim: str) -> pl.Expr:
    """``_parts`` (a split line with ``extra`` fields too many) with field ``col`` and the
    ``extra`` fields after it joined back into one with ``delim``: the other fields keep their place."""
    p = pl.col("_parts")
    return pl.concat_list(p.list.slice(0, col), p.list.slice(col, extra + 1).list.join(delim),
                          p.list.slice(extra + col + 1))


def _rejoin_free_text(
    lines: pl.DataFrame, parts: pl.Series, n_parts: pl.Series, good: pl.Series, layout: SplitLayout
) -> tuple[pl.Series, pl.Series, pl.DataFrame]:
    """(``parts``, ``good``, notes): records with too many fields repaired. Slurm does not escape
    the delimiter in ``-P`` output, so the extra fields are pieces of a free-text column
    (:data:`PIPE_TEXT_FIELDS`), rejoined into it with the delimiter; every other field keeps its
    position. With one such column in the dump they go to it (a record that then does not type
    is rejected saying so). With several, see :func:`_pick_text_column`.

    ``notes`` (one row per line, or no rows when nothing was tried) has ``_into``, the column the
    extra fields were rejoined into, and ``_readings``, the columns whose readings all type but
    disagree on the other fields (the record stays rejected). Runs on the few rejected lines only.
    """
    delim, n_fields, _, _, text_columns, _ = layout
    if not text_columns:
        return parts, good, _NO_REJOIN
    raw = lines.get_column("raw_line")
    fix = (~good & (n_parts > n_fields) & ~raw.str.contains(r"^(?:\s*$|#)")
           & ~raw.str.starts_with(_SACCT_MESSAGE))
    if not fix.any():
        return parts, good, _NO_REJOIN
    frame = pl.DataFrame([pl.int_range(len(parts), eager=True).alias("_i"), lines.get_column("line_no"),
                          parts.alias("_parts"), n_parts.alias("_n")])
    if len(text_columns) == 1:
        name, col = text_columns[0]
        chosen = frame.filter(fix).select(
            "_i", _placed(col, (pl.col("_n") - n_fields).cast(pl.Int64), delim).alias("_parts"),
            pl.lit(name).alias("_into"), pl.lit(None, pl.String).alias("_readings"))
    else:
        first_good = frame.filter(good & (pl.col("line_no") <= 100)).select("line_no", "_parts")
        chosen = _pick_text_column(lines.filter(fix), frame.filter(fix), first_good, layout)
    merged = frame.join(chosen, on="_i", how="left", maintain_order="left", suffix="_new")
    repaired = merged.get_column("_into").is_not_null()
    parts = merged.select(pl.when(repaired).then(pl.col("_parts_new")).otherwise(pl.col("_parts"))).to_series()
    return parts.alias(parts.name), good | repaired, merged.select("_into", "_readings")


def _pick_text_column(
    lines: pl.DataFrame, frame: pl.DataFrame, first_good: pl.DataFrame, layout: SplitLayout
) -> pl.DataFrame:
    """Which free-text column a record's extra fields belong to, when the dump has several.

    ``lines`` are the records with extra fields, ``frame`` their (``_i``, ``line_no``, ``_parts``,
    ``_n``), ``first_good`` the (``line_no``, ``_parts``) of the dump's first well-formed lines.
    A candidate puts all the extra fields in one text column (a delimiter in two text fields of
    one record is rare: mixes are not tried); it is valid when the record then types as the
    parser types every record (:func:`_typed_text_records`: stamps, durations, states, job ids,
    TRES, numbers, hostlists). One valid candidate, or several that agree on every typed field
    outside the text columns (text columns side by side: JobName|SubmitLine), repairs the record,
    the text going to the candidate column first in :data:`PIPE_TEXT_FIELDS`. Valid candidates
    that disagree, or none, leave it rejected. Returns (``_i``, ``_parts``, ``_into``,
    ``_readings``) per repaired or disagreeing record (see :func:`_rejoin_free_text`).
    """
    delim, n_fields, _, index, text_columns, _ = layout
    preference = list(PIPE_TEXT_FIELDS.values())
    extra = (pl.col("_n") - n_fields).cast(pl.Int64)
    candidates = pl.concat([
        frame.select("_i", "line_no", _placed(col, extra, delim).alias("_parts"), pl.lit(name).alias("_into"),
                     pl.lit(preference.index(name)).alias("_rank"), pl.lit(col).alias("_col"))
        for name, col in text_columns
    ]).with_row_index("_cid").with_columns(pl.col("_cid").cast(pl.Int64))
    present = {key for key, _ in index}
    # The stamp form the dump's typing will read: from its first lines and these records.
    stamps = [pl.col("_parts").list.get(i).alias(key) for key, i in index if key in _TS_KEYS]
    space_for_t = _space_for_t(pl.concat([first_good, candidates.select("line_no", "_parts")])
                               .select("line_no", *stamps), present)
    meta = lines.select("source_file", "raw_line").hstack([frame.get_column("_i")])
    typed, _ = _typed_text_records(
        candidates.join(meta, on="_i", maintain_order="left").select(
            # Each candidate's id as its line number: records come back by line number.
            pl.col("_cid").alias("line_no"), "source_file", "raw_line",
            *(pl.col("_parts").list.get(i).alias(key) for key, i in index)),
        present, "UTC", None, space_for_t=space_for_t)  # (neither zone nor cluster makes a field malformed)
    text_at = {col for _, col in text_columns}
    # The typed fields outside the text columns; split on the delimiter, none holds it, so joined
    # with it they compare as a whole.
    reading = pl.concat_str([pl.col("_parts").list.get(i) for _, i in index if i not in text_at], separator=delim)
    per_record = (
        candidates.filter(pl.col("_cid").is_in(typed.get_column("line_no").implode()))
        .with_columns(reading.alias("_reading"))
        .sort("_rank")
        .group_by("_i", maintain_order=True)
        .agg(pl.col("_reading").n_unique().alias("_n_readings"), pl.col("_parts").first(),
             pl.col("_into").first(), pl.col("_into").sort_by("_col").str.join(" or ").alias("_all"))
    )
    agree = pl.col("_n_readings") == 1
    return per_record.select(
        "_i",
        pl.when(agree).then(pl.col("_parts")).alias("_parts"),
        pl.when(agree).then(pl.col("_into")).alias("_into"),
        pl.when(~agree).then(pl.col("_all")).alias("_readings"),
    )


def _split_fields(lines: pl.DataFrame, layout: SplitLayout) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Record lines -> (String columns by field key + source_file/line_no/raw_line, field-count rejects)."""
    delim, n_fields, trailing, index, text_columns, repeats = layout
    raw = lines.get_column("raw_line")
    # One split gives both the field count and the fields (no separate delimiter count).
    parts = raw.str.split(delim)
    n_parts = parts.list.len()
    if trailing:
        # sacct --parsable ends every line with the delimiter: that last empty field is not data.
        n_parts = n_parts - raw.str.ends_with(delim).cast(pl.UInt32)
    good = (n_parts == n_fields) & ~raw.str.starts_with("#")
    if not delim.strip():
        # A whitespace delimiter lets a blank line have the right field count.
        good = good & ~raw.str.contains(r"^\s*$")
    if bool(good.all()):
        count_rejects = pl.DataFrame(schema=REJECT_SCHEMA)
    else:
        # Few lines: blank/comment lines are skipped, a delimiter inside free text is rejoined when
        # the column it was in can be told, the rest are rejected for their field count.
        parts, good, notes = _rejoin_free_text(lines, parts, n_parts, good, layout)
        if notes.height:
            # Kept for the reject reason should the rejoined record still not type.
            lines = lines.with_columns(
                pl.when(notes.get_column("_into").is_not_null()).then(pl.format(
                    f"expected {n_fields} fields, got {{}} (the extra ones rejoined into {{}} as text holding "
                    f"'{delim}')", n_parts, notes.get_column("_into"))).alias("_rejoined"),
                notes.get_column("_readings"))
        count_error = pl.format(f"expected {n_fields} fields, got {{}}", pl.col("_n"))
        if len(text_columns) > 1:
            names = ", ".join(name for name, _ in text_columns)
            # Several columns could hold it, and the record reads differently with each.
            readings = pl.format(" (it fits {}, with other fields read differently)",
                                 pl.col("_readings")) if notes.height else pl.lit(None, pl.String)
            count_error = (
                pl.when(pl.col("_n") > n_fields)
                .then(pl.format(f"expected {n_fields} fields, got {{}}: a '{delim}' inside a free-text field "
                                f"({names}) cannot be told apart from the delimiter{{}}; re-dump with --delimiter "
                                "set to a string no field holds", pl.col("_n"), readings.fill_null("")))
                .otherwise(count_error)
            )
        count_rejects = (
            lines.with_columns(n_parts.alias("_n"))
            .filter(~good)
            .filter(~pl.col("raw_line").str.contains(r"^(?:\s*$|#)"))
            .select(
                "source_file",
                "line_no",
                pl.col("raw_line").alias("raw"),
                pl.when(pl.col("raw_line").str.starts_with(_SACCT_MESSAGE))
                .then(pl.lit("sacct's own message, not a record: the dump may be incomplete"))
                .otherwise(count_error).alias("error"),
            )
        )
        lines = lines.filter(good)
        parts = parts.filter(good)
    if repeats:
        lines, parts, repeat_rejects = _reject_differing_repeats(lines, parts, repeats)
        if repeat_rejects.height:
            count_rejects = pl.concat([count_rejects.cast(REJECT_SCHEMA), repeat_rejects.cast(REJECT_SCHEMA)])
    fields_df = (
        lines.lazy()
        .with_columns(parts.alias("_parts"))
        .select(
            "line_no",
            "raw_line",
            "source_file",
            *(pl.col("_parts").list.get(i).alias(key) for key, i in index),
            *(["_rejoined"] if "_rejoined" in lines.columns else []),
        )
        .collect(optimizations=_PLAIN)
        # Single-chunk columns: hstacking lookups onto many-chunk columns makes every later query
        # realign (copy) the whole frame, several times over.
        .rechunk()
    )
    return fields_df, count_rejects.cast(REJECT_SCHEMA)  # type: ignore[arg-type]


def _reject_differing_repeats(
    lines: pl.DataFrame, parts: pl.Series, repeats: tuple[tuple[str, int, int], ...]
) -> tuple[pl.DataFrame, pl.Series, pl.DataFrame]:
    """(lines, parts, rejects): the records whose copies of a field the header names twice differ,
    rejected naming the field and both values (which one is the record's cannot be told)."""
    checks = [(parts.list.get(first, null_on_oob=True) != parts.list.get(other, null_on_oob=True)).fill_null(False)
              .alias(f"_{n}") for n, (_, first, other) in enumerate(repeats)]
    flags = pl.DataFrame(checks)
    bad = flags.select(pl.any_horizontal(pl.all())).to_series()
    if not bool(bad.any()):
        return lines, parts, pl.DataFrame(schema=REJECT_SCHEMA)
    withparts = lines.with_columns(parts.alias("_parts"), *flags.get_columns())
    error = pl.coalesce([
        pl.when(pl.col(f"_{n}")).then(pl.format(
            f"the header names {name} twice (fields {first + 1} and {other + 1}) and this record's copies differ "
            "('{}' and '{}'): sacct prints a repeated --format field with the same value, so the file was "
            "edited by hand — which value is the record's cannot be told",
            pl.col("_parts").list.get(first), pl.col("_parts").list.get(other)))
        for n, (name, first, other) in enumerate(repeats)])
    rejects = withparts.filter(bad).select("source_file", "line_no", pl.col("raw_line").alias("raw"),
                                           error.alias("error"))
    return lines.filter(~bad), parts.filter(~bad), rejects


def type_sacct_dumps(
    dumps: Sequence[SacctTextDump], *, timezone: str = "UTC", cluster: str | None = None
) -> SacctParseResult:
    """Split and type the record lines of one or more dumps that have the same layout.

    Returns records and rejects of all of them (each row keeps its ``source_file``); rejects are
    ordered by file and line. ``rows_read`` is the total over the dumps.

    Raises:
        ValueError: the dumps' layouts differ, or ``timezone`` is not an IANA zone.
    """
    check_timezone(timezone)
    if not dumps:
        return SacctParseResult(pl.DataFrame(schema=SACCT_RECORD_SCHEMA), pl.DataFrame(schema=REJECT_SCHEMA), 0)
    layout = dumps[0].layout
    if any(d.layout != layout for d in dumps):
        raise ValueError("type_sacct_dumps: dumps with different layouts cannot be typed together")
    lines = pl.concat([d.lines for d in dumps], how="vertical") if len(dumps) > 1 else dumps[0].lines
    fields_df, count_rejects = _split_fields(lines, layout)
    records, rejects = _typed_text_records(fields_df, set(dumps[0].present), timezone, cluster)
    early = [d.rejects for d in dumps if d.rejects.height]
    if not count_rejects.is_empty() or early:
        rejects = pl.concat([count_rejects, *early, rejects.cast(REJECT_SCHEMA)]).sort(  # type: ignore[arg-type]
            "source_file", "line_no", maintain_order=True
        )
    return SacctParseResult(
        records=records.cast(SACCT_RECORD_SCHEMA),  # type: ignore[arg-type]
        rejects=rejects.cast(REJECT_SCHEMA),  # type: ignore[arg-type]
        rows_read=len(records) + len(rejects),
    )


def _parse_text_bytes(
    data: bytes,
    source_file: str,
    *,
    timezone: str,
    fields: Sequence[str] | None,
    delimiter: str | None,
    cluster: str | None,
) -> SacctParseResult:
    check_timezone(timezone)
    groups: dict[SplitLayout, list[SacctTextDump]] = {}
    for dump in read_sacct_dumps(data, source_file, fields=fields, delimiter=delimiter):
        groups.setdefault(dump.layout, []).append(dump)
    results = [type_sacct_dumps(group, timezone=timezone, cluster=cluster) for group in groups.values()]
    if len(results) == 1:
        return results[0]
    return SacctParseResult(
        records=pl.concat([r.records for r in results]).sort("line_no", maintain_order=True),
        rejects=pl.concat([r.rejects for r in results]).sort("line_no", maintain_order=True),
        rows_read=sum(r.rows_read for r in results),
    )


def parse_sacct_text(
    text: str,
    source_file: str,
    *,
    timezone: str = "UTC",
    fields: Sequence[str] | None = None,
    delimiter: str | None = None,
    cluster: str | None = None,
) -> SacctParseResult:
    """Parse ``sacct -P``/``--parsable2`` or ``--parsable`` text into typed records and rejects.

    Args:
        text: the whole dump. A header line (naming JobID or JobIDRaw, any case, in any column) defines the
            fields; otherwise ``fields`` must name them in order. CRLF line ends are accepted.
        source_file: stored in every row (path relative to the landing directory).
        timezone: IANA zone the dump's timestamps are in (the cluster's local time).
        fields: field names for headerless dumps (e.g. Open XDMoD's order).
        delimiter: field separator, default ``|``; may be several characters (``^|^``).
        cluster: cluster name used when the dump has no (non-empty) Cluster column; in a dump whose
            Cluster column names several clusters, the one whose rows load (the others' are rejects;
            all rows are when none of the names is ``cluster``); None loads every cluster's rows.

    Records with a wrong field count (unless a delimiter inside a free-text column made it and the
    column can be told, above), malformed JobID/ExitCode/timestamp/duration/integer/hostlist/TRES/
    GPU count, an unknown state or another cluster's name (above) become rejects with ``line_no``
    and a reason; the rest load.

    Raises:
        SacctFormatError: empty input, fixed-width sacct output, no header and no ``fields``,
            or no JobID/State field.
        ValueError: ``timezone`` is not an IANA zone.
    """
    return _parse_text_bytes(
        text.encode("utf-8", errors="surrogatepass"),
        source_file,
        timezone=timezone,
        fields=fields,
        delimiter=delimiter,
        cluster=cluster,
    )


# ---------------------------------------------------------------- sacct --json / slurmrestd


def _number(value: Any) -> int | None:
    """slurmrestd numbers are plain ints or ``{set, infinite, number}``; unset/infinite -> None."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    return int(value)


def _epoch(value: Any) -> int | None:
    n = _number(value)
    return n if n else None  # Slurm uses 0 for "not yet"


def _json_state(states: Any) -> tuple[str, str]:
    """state.current list -> (state, state_raw): first base state, else the first known flag."""
    if isinstance(states, dict):
        states = states.get("current")
    if isinstance(states, str):
        states = [states]
    if not states:
        raise ValueError("missing job state")
    raw = ",".join(str(s) for s in states)
    for s in states:
        if s in SLURM_BASE_STATES:
            return s, raw
    for s in states:
        if s in SLURM_STATES:
            return s, raw
    raise ValueError(f"unknown Slurm state '{raw}'")


def _json_exit(exit_code: Any) -> tuple[int | None, int | None]:
    if not isinstance(exit_code, dict):
        return None, None
    rc = exit_code.get("return_code")
    code = rc.get("number") if isinstance(rc, dict) else rc
    sig = exit_code.get("signal", {}).get("id")
    signal = sig.get("number") if isinstance(sig, dict) else sig
    return (None if code is None else int(code)), (None if signal is None else int(signal))


def _json_job_tres(tres: Any) -> tuple[int | None, str | None, int | None, int | None]:
    """A job's ``tres`` object -> (n_gpus, gpu_type, n_cpus, n_nodes), by the text dumps' rule:
    GPUs from ``tres.allocated`` when it lists any TRES, else from ``tres.requested`` (a pending
    job has ``allocated: []``), as AllocTRES else ReqTRES; CPUs and nodes from the allocation only.

    Slurm 21.08-25.x (data_parser v0.0.37-v0.0.43) print both as lists of ``{type, name, id,
    count}``; a step's ``requested`` is usage statistics (``{max, min, average, total}``), never
    a request, so it is not read (steps use :func:`_json_tres` of ``allocated``).
    """
    if not isinstance(tres, dict):
        return None, None, None, None
    allocated, requested = tres.get("allocated"), tres.get("requested")
    n_gpus, gpu_type, cpus, nodes = _json_tres(allocated)
    if not (isinstance(allocated, list) and allocated) and isinstance(requested, list) and requested:
        n_gpus, gpu_type, _, _ = _json_tres(requested)
    return n_gpus, gpu_type, cpus, nodes


def _json_tres(allocated: Any) -> tuple[int | None, str | None, int | None, int | None]:
    """A TRES list (``tres.allocated`` / ``tres.requested``) -> (n_gpus, gpu_type, n_cpus, n_nodes):
    the untyped ``gres/gpu`` count wins, else typed ``gpu:TYPE`` entries are summed (as
    :func:`~gpusre.models.ingest.slurm_values.tres_gpus`); None when not a list or empty (an
    empty allocation states no GPU count, as an empty AllocTRES)."""
    if not isinstance(allocated, list) or not allocated:
        return None, None, None, None
    total: int | None = None
    typed = 0
    gpu_type: str | None = None
    cpus = nodes = None
    for t in allocated:
        kind, name, count = t.get("type"), t.get("name") or "", int(t.get("count", 0))
        if kind == "gres" and name == "gpu":
            total = count
        elif kind == "gres" and name.startswith("gpu:"):
            typed += count
            gpu_type = gpu_type or name.split(":", 1)[1]
        elif kind == "cpu":
            cpus = count
        elif kind == "node":
            nodes = count
    return (total if total is not None else typed), gpu_type, cpus, nodes


def _json_job_id(job: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Printed JobID and its array/het parts, following sacct's text form."""
    job_id = int(job["job_id"])
    parts: dict[str, Any] = {
        "array_job_id": None, "array_task_id": None, "array_task_ids": None,
        "het_job_id": None, "het_job_offset": None,
    }
    array = job.get("array") or {}
    het = job.get("het") or {}
    array_job = int(array.get("job_id") or 0)
    task = _number(array.get("task_id"))
    het_job = int(het.get("job_id") or 0)
    if array_job and task is not None:
        parts.update(array_job_id=array_job, array_task_id=task, array_task_ids=[task])
        return f"{array_job}_{task}", parts
    if array_job and array.get("task"):
        body = str(array["task"])
        parts.update(array_job_id=array_job, array_task_ids=expand_array_tasks(body))
        return f"{array_job}_[{body}]", parts
    if het_job:
        offset = _number(het.get("job_offset"))
        if offset is not None:
            parts.update(het_job_id=het_job, het_job_offset=offset)
            return f"{het_job}+{offset}", parts
    return str(job_id), parts


def _nodes(expr: Any) -> tuple[str | None, list[str] | None]:
    if expr is None:
        return None, None
    text = str(expr)
    return (text or None), expand_hostlist(text)


def _json_records(job: dict[str, Any], line_no: int, source_file: str, cluster: str | None) -> list[dict[str, Any]]:
    """One allocation row plus one row per step; raises on anything that must be rejected."""
    job_id, id_parts = _json_job_id(job)
    state, state_raw = _json_state(job.get("state"))
    exit_code, exit_signal = _json_exit(job.get("exit_code"))
    t = job.get("time") or {}
    n_gpus, gpu_type, n_cpus, n_nodes = _json_job_tres(job.get("tres"))
    nodelist, nodes = _nodes(job.get("nodes"))
    limit_min = _number(t.get("limit"))
    comment = job.get("comment")
    common = {
        "source_file": source_file,
        "line_no": line_no,
        "cluster": job.get("cluster") or cluster,
        "job_id": job_id,
        **id_parts,
        "user": job.get("user") or None,
        "uid": None,
        "account": job.get("account") or None,
        "group": job.get("group") or None,
        "partition": job.get("partition") or None,
        "qos": job.get("qos") or None,
    }
    job_without_steps = {k: v for k, v in job.items() if k != "steps"}
    rows = [
        {
            **common,
            "record_type": "allocation",
            "job_id_raw": str(job["job_id"]),
            "step_id": None,
            "name": job.get("name") or None,
            "state": state,
            "state_raw": state_raw,
            "cancelled_by": None,
            "exit_code": exit_code,
            "exit_signal": exit_signal,
            "submit_ts": _epoch(t.get("submission")),
            "eligible_ts": _epoch(t.get("eligible")),
            "start_ts": _epoch(t.get("start")),
            "end_ts": _epoch(t.get("end")),
            "elapsed_s": _number(t.get("elapsed")),
            "timelimit_s": None if limit_min is None else limit_min * 60,
            "n_nodes": n_nodes if n_nodes is not None else job.get("allocation_nodes"),
            "n_cpus": n_cpus,
            "n_gpus": n_gpus,
            "gpu_type": gpu_type,
            "nodelist": nodelist,
            "nodes": nodes,
            "restart_cnt": job.get("restart_cnt"),
            "comment": (comment.get("job") if isinstance(comment, dict) else comment) or None,
            "raw_line": json.dumps(job_without_steps, separators=(",", ":"), ensure_ascii=False),
        }
    ]
    for step in job.get("steps") or []:
        sid = str((step.get("step") or {}).get("id") or "")
        if "." not in sid:
            raise ValueError(f"malformed step id {sid!r}")
        s_state, s_raw = _json_state(step.get("state"))
        s_code, s_signal = _json_exit(step.get("exit_code"))
        st = step.get("time") or {}
        s_gpus, s_type, s_cpus, s_nodes = _json_tres((step.get("tres") or {}).get("allocated"))
        s_nodelist, s_node_names = _nodes((step.get("nodes") or {}).get("range"))
        s_limit = _number(st.get("limit"))
        rows.append(
            {
                **common,
                "record_type": "step",
                "job_id_raw": sid,
                "step_id": sid.split(".", 1)[1],
                "name": (step.get("step") or {}).get("name") or None,
                "state": s_state,
                "state_raw": s_raw,
                "cancelled_by": None,
                "exit_code": s_code,
                "exit_signal": s_signal,
                "submit_ts": None,
                "eligible_ts": None,
                "start_ts": _epoch(st.get("start")),
                "end_ts": _epoch(st.get("end")),
                "elapsed_s": _number(st.get("elapsed")),
                "timelimit_s": None if s_limit is None else s_limit * 60,
                "n_nodes": s_nodes if s_nodes is not None else (step.get("nodes") or {}).get("count"),
                "n_cpus": s_cpus,
                "n_gpus": s_gpus,
                "gpu_type": s_type,
                "nodelist": s_nodelist,
                "nodes": s_node_names,
                "restart_cnt": None,
                "comment": None,
                "raw_line": json.dumps(step, separators=(",", ":"), ensure_ascii=False),
            }
        )
    return rows


#: Bounds of the Polars types a JSON record's values must fit (checked per job, so one job with a
#: wrongly typed or out-of-range field is a reject instead of failing the file's DataFrame).
_INT_BOUNDS: dict[type[pl.DataType], tuple[int, int]] = {
    pl.Int32: (-(2**31), 2**31 - 1), pl.Int64: (-(2**63), 2**63 - 1),
}
#: Epoch seconds after 2200-01-01 are not seconds (slurmrestd plugins that print milliseconds).
_MAX_EPOCH_S = 7_258_118_400
_JSON_EPOCH_FIELDS = ("submit_ts", "eligible_ts", "start_ts", "end_ts")


def _check_json_row(row: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the field when a value does not fit its column's type."""
    for key, value in row.items():
        if value is None:
            continue
        if key in _JSON_EPOCH_FIELDS:
            dtype: pl.DataType = pl.Int64()
            if isinstance(value, int) and not 0 <= value <= _MAX_EPOCH_S:
                raise ValueError(f"{key}: {value} is not a time in epoch seconds (milliseconds?)")
        else:
            dtype = SACCT_RECORD_SCHEMA[key]
        if isinstance(dtype, pl.List):
            if not isinstance(value, list) or not all(
                    isinstance(v, str) if dtype.inner == pl.String else (isinstance(v, int) and not isinstance(v, bool))
                    for v in value):
                raise ValueError(f"{key}: not a list of {dtype.inner}: {value!r:.80}")
        elif dtype == pl.String:
            if not isinstance(value, str):
                raise ValueError(f"{key}: expected a string, got {type(value).__name__} {value!r:.80}")
        elif type(dtype) in _INT_BOUNDS:
            lo, hi = _INT_BOUNDS[type(dtype)]
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{key}: expected an integer, got {type(value).__name__} {value!r:.80}")
            if not lo <= value <= hi:
                raise ValueError(f"{key}: {value} is out of range")


def parse_sacct_json(text: str, source_file: str, *, cluster: str | None = None) -> SacctParseResult:
    """Parse ``sacct --json`` / slurmrestd ``/slurmdb/v0.0.4x/job(s)`` output (top-level ``jobs[]``).

    Each job gives an allocation record and one record per ``steps[]`` entry; ``line_no`` is the
    job's 1-based index in ``jobs[]`` (shared by its steps). Times within a day of epoch 0 are null
    and Start/End/Elapsed follow the text path's rules (module docstring), time limits
    (minutes) become seconds. A job that cannot be read (unknown state, bad hostlist, missing
    job_id) is one reject row and its steps are not counted separately; so is a job of another
    Slurm cluster in a document naming several (the rule of :func:`parse_sacct_text`).

    Raises:
        SacctFormatError: not JSON, or no ``jobs`` list.
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SacctFormatError(f"{source_file}: not valid JSON: {exc}") from exc
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, list):
        raise SacctFormatError(f"{source_file}: sacct JSON has no 'jobs' list")
    rows: list[dict[str, Any]] = []
    rejects: list[dict[str, Any]] = []
    names = sorted({str(j.get("cluster") or "") for j in jobs if isinstance(j, dict)})
    table = _cluster_rejects(pl.DataFrame({"source_file": [source_file] * len(names), "cluster": names},
                                          schema={"source_file": pl.String, "cluster": pl.String}), cluster)
    other_cluster = dict(zip(table["cluster"], table["_cluster_err"], strict=True)) if table is not None else {}
    for line_no, job in enumerate(jobs, start=1):
        try:
            if not isinstance(job, dict):
                raise ValueError("job entry is not an object")
            if other_cluster and str(job.get("cluster") or "") in other_cluster:
                raise ValueError(other_cluster[str(job.get("cluster") or "")])
            job_rows = _json_records(job, line_no, source_file, cluster)
            for row in job_rows:
                _check_json_row(row)
            rows.extend(job_rows)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
            reason = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            rejects.append(
                {
                    "source_file": source_file,
                    "line_no": line_no,
                    "raw": json.dumps(job, separators=(",", ":"), ensure_ascii=False),
                    "error": reason,
                }
            )
    ts_cols = ("submit_ts", "eligible_ts", "start_ts", "end_ts")
    epoch_schema = {k: (pl.Int64() if k in ts_cols else v) for k, v in SACCT_RECORD_SCHEMA.items()}
    # The rules of the text path: a time near the epoch is Slurm's unset 0 (unknown), a finished job
    # without Start started at End - Elapsed, and a Start/End/Elapsed that cannot all be true rejects
    # the job (with its steps: one reject per job, as above).
    c = pl.col
    records = pl.DataFrame(rows, schema=epoch_schema).with_columns(
        unset_time_to_null(pl.from_epoch(c(k), "s").dt.replace_time_zone("UTC")).alias(k) for k in ts_cols
    ).with_columns(
        start_from_end(c("start_ts"), c("end_ts"), c("elapsed_s"), c("state"), TERMINAL_STATES).alias("start_ts")
    ).with_columns(run_span_error(c("start_ts"), c("end_ts"), c("elapsed_s")).alias("_span_err"))
    span_bad = records.filter(c("_span_err").is_not_null()).group_by("line_no", maintain_order=True).agg(
        c("raw_line").first().alias("raw"), c("_span_err").first().alias("error"))
    reject_frame = pl.DataFrame(rejects, schema=REJECT_SCHEMA)
    if span_bad.height:
        records = records.filter(~c("line_no").is_in(span_bad.get_column("line_no").implode()))
        reject_frame = pl.concat([
            reject_frame,
            span_bad.select(pl.lit(source_file).alias("source_file"), "line_no", "raw", "error").cast(REJECT_SCHEMA),
        ]).sort("line_no", maintain_order=True)
    return SacctParseResult(
        records=records.drop("_span_err").cast(SACCT_RECORD_SCHEMA),  # type: ignore[arg-type]
        rejects=reject_frame,
        rows_read=records.height + reject_frame.height,
    )


def parse_sacct_json_bytes(data: bytes, source_file: str, *, cluster: str | None = None) -> SacctParseResult:
    """:func:`parse_sacct_json` of a file's bytes: UTF-8 with invalid sequences replaced, BOM dropped."""
    return parse_sacct_json(data.decode("utf-8", errors="replace").lstrip("\ufeff"), source_file, cluster=cluster)


def is_json_dump(path: Path, data: bytes) -> bool:
    """True for ``sacct --json`` / slurmrestd output: a ``.json`` name or a leading ``{``."""
    return Path(path).suffix.lower() == ".json" or data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")


def parse_sacct_file(
    path: Path,
    source_file: str,
    *,
    timezone: str = "UTC",
    fields: Sequence[str] | None = None,
    delimiter: str | None = None,
    cluster: str | None = None,
) -> SacctParseResult:
    """Parse a sacct dump file: JSON when it ends in ``.json`` or starts with ``{``, else text.

    Bytes are decoded as UTF-8 with invalid sequences replaced by U+FFFD: a mis-encoded job name
    should not cost the accounting record (the replacement char marks the damage in ``name``).
    """
    data = Path(path).read_bytes()
    if is_json_dump(path, data):
        return parse_sacct_json_bytes(data, source_file, cluster=cluster)
    return _parse_text_bytes(
        data, source_file, timezone=timezone, fields=fields, delimiter=delimiter, cluster=cluster
    )
