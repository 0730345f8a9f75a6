"""Alert payloads → notifications: read ``landing/alerts`` files, detect each payload's format and
flatten it to one row per alert notification (or one reject with the reason).

One *notification* is one element of a payload's alert list: the same alert arrives many times
(Alertmanager's ``repeat_interval``, its resolved notification, several receivers or groups), and
every arrival is a row here; :mod:`gpusre.models.sources.alerts.ingest` deduplicates them into alerts.

Formats, detected per payload (a file may mix them):

``alertmanager``
    Alertmanager webhook (``version`` ``"4"``): ``receiver``, ``status``, ``groupKey``,
    ``alerts[]`` of ``status``, ``labels``, ``annotations``, ``startsAt``, ``endsAt``,
    ``generatorURL``, ``fingerprint``. An alert without ``status`` takes the payload's. A
    ``truncatedAlerts`` above 0 (the receiver's ``max_alerts`` cut the list) loads the alerts sent
    and adds one reject naming how many Alertmanager dropped.
``grafana``
    Grafana-managed alerting webhook: the same envelope plus ``orgId``/``version`` ``"1"``; alerts
    also carry ``valueString``/``values`` (kept as ``value``). Its ``truncatedAlerts`` (the contact
    point's "Max alerts") is a reject as Alertmanager's is.
``prometheus_api``
    A Prometheus ``/api/v1/alerts`` response, ``{"status":"success","data":{"alerts":[...]}}``:
    ``state`` (``firing``/``pending``), ``activeAt`` (taken as ``startsAt``), ``value``; no
    fingerprint and no end time. ``"status":"error"`` responses are rejected with their error.
``alert``
    A bare alert object with ``labels`` (an element of Alertmanager's ``/api/v2/alerts``, whose
    ``status`` is an object with ``state`` — ``active``/``suppressed``/``unprocessed`` count as
    firing; the object is kept as ``payload_status``, whose ``inhibitedBy``/``silencedBy`` say why
    Alertmanager held it back — or a line of a webhook logger that writes one alert per line). A
    snapshot has no delivery time: ``received_at`` is the UTC time in its file name
    (``alerts-2026-11-24T021500Z.json``), else the latest ``updatedAt`` of its alerts.

Files (``.gz``/``.bz2``/``.xz`` compressed versions too; a leading UTF-8 BOM is dropped):

``*.json``
    One JSON document: an object is one payload, an array is a list of payloads (or of bare
    alerts). A ``.json`` file that is not one document but whose first line is (JSON lines under a
    ``.json`` name) is read as JSON lines.
``*.jsonl``, ``*.ndjson``, ``*.log``, ``*.txt``
    One payload per line — what a webhook receiver appending request bodies to a file writes.
    Blank lines are skipped. A line may start with a prefix a logger added before the JSON
    (``2026-09-01T10:00:00Z POST /alerts {...}``); an ISO-8601 time in the prefix becomes
    ``received_at``: with its offset when it has one, else it is the cluster's local time (cluster.yaml
    ``timezone``, as every naive stamp: Python logging's default ``asctime`` is local). In the repeated
    hour of a DST fall-back it is the earlier instant unless that is before the latest ``startsAt`` of
    the alerts the payload carries (by more than :data:`EARLY_DELIVERY_TOLERANCE_S`: nothing is
    delivered before it starts) and the later is not; a local time in the spring-forward gap gives
    none. :data:`EARLY_DELIVERY_SQL` says which deliveries are still before their alert (a logger's
    clock or zone is off). A JSON value pretty-printed over several lines (as in the fluentd capture
    ``alertmonitor_example_syslog.txt``) is stitched back into one record.

Numbering: ``line_no`` is the physical line a payload starts on (1 for a ``.json`` document),
``payload_no`` its 1-based index in a top-level JSON array (else 1), ``alert_no`` the 1-based index
in its alert list. A reject's ``line_no`` is that line and its error names the payload and alert.

Speed: no Python object per notification. NumPy splits the lines (zero-copy into Arrow), one
DuckDB statement per batch parses each payload once into typed structs (``json_transform``;
labels and annotations stay JSON text), unnests the alerts and checks them, all set-based.
Python only touches the rare odd lines (multi-line values, prefixes, invalid JSON) and the
distinct label sets that lack a fingerprint.

>>> alertmanager_fingerprint({"alertname": "InstanceDown", "instance": "gpu001:9100"})
'8301411030036a33'
"""

from __future__ import annotations

import json
import lzma
import re
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from gpusre.models.ingest.slurm_values import check_timezone, localize_to_utc
from gpusre.models.ingest.landing_files import (
    LandingFileFault,
    SourceScan,
    describe_fault,
    open_landing_file,
    scan_source,
    strip_compression,
)

__all__ = [
    "ALERT_SUFFIXES",
    "DESCRIPTION_SQL",
    "EARLY_DELIVERY_SQL",
    "EARLY_DELIVERY_TOLERANCE_S",
    "ParsedAlerts",
    "RECORD_SCHEMA",
    "SEQ_SQL",
    "SNAPSHOT_SQL",
    "STAGE_COLUMNS_SQL",
    "SUMMARY_SQL",
    "TEMPLATE_TEXT_SQL",
    "alert_file_layout",
    "alertmanager_fingerprint",
    "discover_alert_files",
    "scan_alert_files",
    "fill_fingerprints",
    "fingerprints_of",
    "iter_alert_records",
    "logger_times",
    "parse_alert_file",
    "stage_records",
    "unordered_inserts",
]

#: One JSON document per file.
DOCUMENT_SUFFIXES: tuple[str, ...] = (".json",)
#: One JSON value per line.
LINE_SUFFIXES: tuple[str, ...] = (".jsonl", ".ndjson", ".log", ".txt")
#: File name endings accepted under ``landing/alerts`` (each also with a compression suffix).
ALERT_SUFFIXES: tuple[str, ...] = DOCUMENT_SUFFIXES + LINE_SUFFIXES

#: The UTF-8 byte order mark some editors write first; dropped from a file's start.
_BOM = "\ufeff".encode()
#: Line-oriented files are read in pieces of about this many bytes (cut at a newline), so a large
#: file never sits in memory whole.
CHUNK_BYTES = 32 << 20
#: A reject keeps at most this many characters of its input.
MAX_RAW_CHARS = 10_000
#: A pretty-printed value may span at most this many lines, and is re-tried at most this many
#: times (at each line ending in ``}``/``]``), so a file of garbage stays linear.
MAX_STITCH_LINES = 10_000
MAX_STITCH_ATTEMPTS = 200

#: Columns of a record frame: one JSON value (a payload, or an array of payloads) per row.
RECORD_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "prefix": pl.String(),   # text a logger put before the JSON on the line, else null
    "body": pl.String(),     # the JSON text
    "raw": pl.String(),      # the line(s) as read (for rejects)
    "error": pl.String(),    # set when the reader already knows the record is unusable
}


# -- files ---------------------------------------------------------------------------------------


def alert_file_layout(name: str) -> str | None:
    """``'document'`` (``*.json``), ``'lines'`` (``*.jsonl``, ``*.ndjson``, ``*.log``, ``*.txt``) or
    None for other files; a ``.gz``/``.bz2``/``.xz`` suffix is looked through.

    >>> alert_file_layout("alerts/2026-09-01.jsonl.gz"), alert_file_layout("a.json"), alert_file_layout("x.yml")
    ('lines', 'document', None)
    """
    lower = strip_compression(name)
    if lower.endswith(DOCUMENT_SUFFIXES):
        return "document"
    if lower.endswith(LINE_SUFFIXES):
        return "lines"
    return None


def _alert_name(name: str) -> str | None:
    """None for an alert file name (compression suffix already stripped), else why it is ignored."""
    if alert_file_layout(name):
        return None
    return f"not an alert file name (expected {', '.join('*' + s for s in ALERT_SUFFIXES)}; .gz/.bz2/.xz ok)"


def scan_alert_files(landing: Path) -> SourceScan:
    """The alert files under ``landing/alerts`` (recursively, sorted) and the ignored ones, with why.

    The sorted order is the *received order* of files: name files so that it is chronological
    (``alerts/2026-09-01.jsonl``, ``alerts/2026-09-02.jsonl`` …).
    """
    return scan_source(landing, "alerts", _alert_name)


def discover_alert_files(landing: Path) -> list[Path]:
    """Every alert file under ``landing/alerts`` (recursively; README files excluded), sorted."""
    return scan_alert_files(landing).files


# -- records -------------------------------------------------------------------------------------


def _records_frame(rows: dict[str, list[object]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=RECORD_SCHEMA)


def _json_error(text: str) -> str | None:
    """None when ``text`` is one JSON value, else a readable reason with the position."""
    try:
        json.loads(text)
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            where = f"line {exc.lineno}, column {exc.colno}" if "\n" in text else f"column {exc.colno}"
            return f"not valid JSON: {exc.msg} ({where})"
        return f"not valid JSON: {exc}"
    return None


def _stitch(odd: pl.DataFrame) -> pl.DataFrame:
    """Records from the lines that are not one complete JSON value each.

    Consecutive such lines that together form one JSON value (pretty-printed JSON) become one
    record on the line where the value starts; every other odd line stays a record of its own,
    marked with the JSON error when it is not valid JSON (a bare ``5`` is valid JSON, and is
    rejected later as not an alert payload).
    """
    pos, files, line_nos = odd["pos"].to_list(), odd["source_file"].to_list(), odd["line_no"].to_list()
    prefixes, bodies, raws = odd["prefix"].to_list(), odd["body"].to_list(), odd["raw"].to_list()
    n = len(pos)

    def value_end(i: int) -> int | None:
        """Index of the line that completes the JSON value starting at line ``i``, if any."""
        parts, attempts = [bodies[i]], 0
        for j in range(i + 1, min(n, i + MAX_STITCH_LINES)):
            if pos[j] != pos[j - 1] + 1:  # a complete record lies between: not one value
                return None
            parts.append(raws[j])
            if raws[j].endswith(("}", "]")):
                if _json_error("\n".join(parts)) is None:
                    return j
                attempts += 1
                if attempts >= MAX_STITCH_ATTEMPTS:
                    return None
        return None

    rows: dict[str, list[object]] = {k: [] for k in RECORD_SCHEMA}
    i = 0
    while i < n:
        end = value_end(i) if bodies[i].startswith(("{", "[")) else None
        if end is None:
            record = (files[i], line_nos[i], prefixes[i], bodies[i], raws[i], _json_error(bodies[i]))
            i += 1
        else:
            body = "\n".join([bodies[i], *raws[i + 1 : end + 1]])
            record = (files[i], line_nos[i], prefixes[i], body, "\n".join(raws[i : end + 1]), None)
            i = end + 1
        for key, value in zip(RECORD_SCHEMA, record):
            rows[key].append(value[:MAX_RAW_CHARS] if key == "raw" else value)  # type: ignore[index]
    return _records_frame(rows)


def _split_lines(data: bytes) -> pl.Series:
    """The lines of UTF-8 ``data`` (newline kept), zero-copy into Arrow; invalid UTF-8 replaced."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        data = data.decode("utf-8", errors="replace").encode("utf-8")
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1
    if data and (len(ends) == 0 or ends[-1] != len(data)):
        ends = np.append(ends, len(data))
    offsets = np.concatenate([np.zeros(1, np.int64), ends.astype(np.int64)])
    lines = pa.LargeStringArray.from_buffers(len(ends), pa.py_buffer(offsets), pa.py_buffer(data))
    return pl.Series("raw", lines, dtype=pl.String)


def _line_records(data: bytes, first_line_no: int, source_file: str) -> pl.DataFrame:
    """Records of a piece of a line-oriented file (``data`` starts at line ``first_line_no``).

    Fast path, no copy of the text: a line that starts with ``{`` and ends with ``}`` (before its
    line break) is one record as it is — JSON allows the trailing line break. Every other line
    (blank, indented, prefixed by a logger, part of a pretty-printed value) takes the slow path.
    """
    lines = _split_lines(data)
    raw = pl.col("raw")
    fast = raw.str.starts_with("{") & (raw.str.ends_with("}\n") | raw.str.ends_with("}")
                                       | raw.str.ends_with("}\r\n"))
    frame = pl.DataFrame({"raw": lines}).with_columns(
        line_no=pl.int_range(first_line_no, first_line_no + len(lines), dtype=pl.Int64), fast=fast)
    if frame["fast"].all():
        return frame.select(
            source_file=pl.lit(source_file, dtype=pl.String), line_no="line_no",
            prefix=pl.lit(None, dtype=pl.String), body="raw", raw="raw", error=pl.lit(None, dtype=pl.String))
    # pos: position among the non-blank lines, so that a value pretty-printed over several lines
    # stays one run of adjacent lines even with blank lines inside it.
    frame = frame.with_columns(pos=(~raw.str.contains(r"^\s*$")).cum_sum())
    good = frame.filter("fast").select(
        source_file=pl.lit(source_file, dtype=pl.String), line_no="line_no",
        prefix=pl.lit(None, dtype=pl.String), body="raw", raw="raw", error=pl.lit(None, dtype=pl.String))
    slow = frame.filter(~pl.col("fast"))
    if slow.height == 0:
        return good
    slow = _slow_records(slow.select("raw", "line_no", "pos"), source_file)
    return pl.concat([good, slow], how="vertical").sort("line_no")


def _slow_records(lines: pl.DataFrame, source_file: str) -> pl.DataFrame:
    """Records of the lines off the fast path: strip, drop blank lines, split a logger's prefix
    from the JSON, stitch pretty-printed values."""
    raw = pl.col("raw")
    frame = (
        lines.with_columns(source_file=pl.lit(source_file, dtype=pl.String), raw=raw.str.strip_chars())
        .filter(raw != "")
    )
    # A JSON array starts with '[' then '{' or ']'; any other start before the first '{' is a
    # logger's prefix ('[2026-09-01 10:00:00] {...}' too).
    plain = raw.str.starts_with("{") | raw.str.contains(r"^\[\s*[{\]]")
    prefix = pl.when(~plain).then(raw.str.extract(r"^([^{]*)\{", 1))
    frame = frame.with_columns(prefix=prefix).with_columns(
        body=pl.when(pl.col("prefix").is_not_null())
        .then(raw.str.slice(pl.col("prefix").str.len_chars()))
        .otherwise(raw),
        prefix=pl.col("prefix").str.strip_chars(),
        error=pl.lit(None, dtype=pl.String),
    )
    body = pl.col("body")
    complete = (body.str.starts_with("{") & body.str.ends_with("}")) | (
        body.str.starts_with("[") & body.str.ends_with("]")
    )
    frame = frame.with_columns(complete=complete)
    good = frame.filter("complete").select(list(RECORD_SCHEMA))
    odd = frame.filter(~pl.col("complete"))
    if odd.height == 0:
        return good
    return pl.concat([good, _stitch(odd)], how="vertical")


#: Bytes per read of a (decompressing) stream: small, so a stream that breaks off loses at most
#: this much beyond its last complete line.
_READ_BYTES = 1 << 16


def _line_chunks(fh: BinaryIO, chunk_bytes: int) -> Iterator[tuple[int, bytes]]:
    """``(first line number, bytes)`` pieces of a file, each ending at a newline (but the last).

    When reading fails (a truncated or corrupt compressed stream), the complete lines read so far
    are yielded before the error is re-raised; the broken last line is dropped.
    """
    line_no, buf = 1, bytearray()
    try:
        while block := fh.read(min(chunk_bytes, _READ_BYTES)):
            buf += block
            if len(buf) >= chunk_bytes and (cut := buf.rfind(b"\n")) >= 0:
                piece = bytes(buf[: cut + 1])
                del buf[: cut + 1]
                yield line_no, piece
                line_no += piece.count(b"\n")
    except Exception:
        if (cut := buf.rfind(b"\n")) >= 0:
            yield line_no, bytes(buf[: cut + 1])
        raise
    if buf:
        yield line_no, bytes(buf)


#: A JSON string (escapes included), an unterminated one (a lone quote), or a bracket.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|"|[\[\]{}]')


def _open_at_end(text: str) -> str | None:
    """What JSON value ``text`` breaks off inside — ``'object'``, ``'array'`` or ``'string'`` — when
    it ends before that value is closed (a file cut off while it was written), else None.

    >>> _open_at_end('{"a": [1, {"b": "x'), _open_at_end('{"a": [1, 2'), _open_at_end('{"a": 1}'), _open_at_end('{"a": 1}}')
    ('string', 'array', None, None)
    """
    stack: list[str] = []
    for m in _JSON_TOKENS.finditer(text):
        tok = m.group()
        if tok == '"':
            return "string"  # a quote no closing quote follows: the text ends inside this string
        if tok in "{[":
            stack.append("object" if tok == "{" else "array")
        elif tok in "}]":
            if not stack:
                return None  # unbalanced: malformed, not cut off
            stack.pop()
    return stack[-1] if stack else None


def _complete_elements(body: str) -> list[str]:
    """The complete elements of a top-level JSON array cut off before its end (``[{..}, {..}, {..``)."""
    decoder = json.JSONDecoder()
    out: list[str] = []
    pos = 1
    while True:
        while pos < len(body) and body[pos] in " \t\r\n,":
            pos += 1
        try:
            _, end = decoder.raw_decode(body, pos)
        except ValueError:
            return out
        out.append(body[pos:end])
        pos = end


def _cut_off(text: str, line_no: int, complete: int, what: str = "complete lines") -> LandingFileFault:
    """The refusal of a file whose last JSON value breaks off (the file was cut while written)."""
    kind = _open_at_end(text) or "value"
    return LandingFileFault(f"truncated JSON: the value starting on line {line_no:,} breaks off inside an unclosed "
                            f"{kind} at the end of the file, after {complete:,} {what}")


def _document_records(text: str, source_file: str) -> pl.DataFrame | None:
    """The record of a one-document file, or None when it is JSON lines under a ``.json`` name."""
    body = text.strip()
    if not body:
        return _records_frame({k: [] for k in RECORD_SCHEMA})
    try:
        json.loads(body)
    except ValueError as exc:
        lines = [line.strip() for line in body.splitlines() if line.strip()]
        if len(lines) > 1 and _json_error(lines[0]) is None:
            return None
        # Several pretty-printed payloads one after another (a receiver appending with >>): read as
        # lines, which stitches each value back together, instead of refusing all of them.
        if isinstance(exc, json.JSONDecodeError) and exc.msg == "Extra data":
            return None
        lead = text[: len(text) - len(text.lstrip())].count("\n")
        if _open_at_end(body):
            # Cut off while written: refused (not one reject among loaded rows), keeping the complete
            # payloads of a top-level array before the cut.
            kept = _complete_elements(body) if body.startswith("[") else []
            raise _DocumentCut(
                _records_frame({"source_file": [source_file], "line_no": [lead + 1], "prefix": [None],
                                "body": ["[" + ",".join(kept) + "]"], "raw": [None], "error": [None]})
                if kept else None,
                _cut_off(body, lead + 1, len(kept), "complete payloads"))
        line_no = lead + (exc.lineno if isinstance(exc, json.JSONDecodeError) else 1)
        reason = _json_error(body) or f"not valid JSON: {exc}"
        return _records_frame({"source_file": [source_file], "line_no": [line_no], "prefix": [None],
                               "body": [body], "raw": [body[:MAX_RAW_CHARS]], "error": [reason]})
    line_no = text[: len(text) - len(text.lstrip())].count("\n") + 1
    return _records_frame({"source_file": [source_file], "line_no": [line_no], "prefix": [None],
                           "body": [body], "raw": [body[:MAX_RAW_CHARS]], "error": [None]})


class _DocumentCut(Exception):
    """A one-document file cut off: the records that are complete (or None) and the refusal."""

    def __init__(self, records: pl.DataFrame | None, fault: LandingFileFault) -> None:
        super().__init__(str(fault))
        self.records, self.fault = records, fault


def _without_cut_last(frame: pl.DataFrame, ends_with_newline: bool) -> tuple[pl.DataFrame, LandingFileFault | None]:
    """A line file's last records: when the last one breaks off inside an unclosed JSON value and the
    file does not end with a line break (it was cut while written), that record is dropped and the
    file is refused; the complete lines before it are kept."""
    if ends_with_newline or frame.height == 0:
        return frame, None
    last = frame.row(frame.height - 1, named=True)
    if last["error"] is None or not _open_at_end(last["body"] or ""):
        return frame, None
    return frame.head(frame.height - 1), _cut_off(last["body"], last["line_no"], last["line_no"] - 1)


def iter_alert_records(path: Path, source_file: str, *, chunk_bytes: int | None = None) -> Iterator[pl.DataFrame]:
    """Record frames (:data:`RECORD_SCHEMA`) of one alert file, in file order; a line-oriented
    file in pieces of about ``chunk_bytes`` (default :data:`CHUNK_BYTES`).

    Invalid UTF-8 is replaced (U+FFFD), not fatal. Raises
    :class:`~gpusre.models.ingest.landing_files.LandingFileFault` when the file cannot be opened, is
    UTF-16, or breaks off (a truncated or corrupt compressed stream; a JSON document, or the last line
    of a line file without a final line break, that ends inside an unclosed object, array or string:
    a webhook dump cut while written): the frames of its complete lines (payloads) were yielded
    before (the caller keeps them and refuses the file).
    """
    layout = alert_file_layout(strip_compression(path.name))
    lines_done = 0
    held: pl.DataFrame | None = None  # a line file's last piece waits: its last line may be cut off
    with open_landing_file(path) as (fh, codec):
        try:
            if layout == "document":
                # A BOM (an editor's or PowerShell's UTF-8) is not JSON: dropped, as other sources do.
                text = fh.read().decode("utf-8", errors="replace").removeprefix("\ufeff")
                try:
                    frame = _document_records(text, source_file)
                except _DocumentCut as cut:
                    if cut.records is not None:
                        yield cut.records
                    raise cut.fault from None
                if frame is not None:
                    yield frame
                    return
                # JSON lines under a .json name
                frame, fault = _without_cut_last(_line_records(text.encode("utf-8"), 1, source_file),
                                                 text.endswith("\n"))
                yield frame
                if fault is not None:
                    raise fault
                return
            ends_with_newline = True
            for first, piece in _line_chunks(fh, chunk_bytes or CHUNK_BYTES):
                if held is not None:
                    yield held
                held = _line_records(piece.removeprefix(_BOM) if first == 1 else piece, first, source_file)
                ends_with_newline = piece.endswith(b"\n")
                lines_done = first - 1 + piece.count(b"\n")
            if held is not None:
                last, held = held, None
                last, fault = _without_cut_last(last, ends_with_newline)
                yield last
                if fault is not None:
                    raise fault
        except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
            if held is not None:  # the complete lines read before the stream broke
                yield held
            raise LandingFileFault(describe_fault(exc, codec, lines_done)) from exc


# -- flattening (DuckDB) -------------------------------------------------------------------------

#: The fields of one alert, in every format (json_transform: missing or mistyped fields become
#: NULL, never an error). Labels and annotations stay JSON text: building DuckDB MAPs from JSON
#: costs ~10 µs per object, more than everything else here together.
_ALERT_FIELDS: dict[str, str] = {
    "status": "VARCHAR", "labels": "JSON", "annotations": "JSON", "startsAt": "VARCHAR",
    "endsAt": "VARCHAR", "activeAt": "VARCHAR", "state": "VARCHAR", "fingerprint": "VARCHAR",
    "generatorURL": "VARCHAR", "value": "VARCHAR", "valueString": "VARCHAR", "values": "VARCHAR",
    "updatedAt": "VARCHAR",
}
#: How one payload is read: the envelope of every format, its alert list, and the fields of a
#: bare alert (same names as in the list, so one struct type serves all formats).
_PAYLOAD_STRUCT: dict[str, object] = {
    "version": "VARCHAR", "orgId": "VARCHAR", "receiver": "VARCHAR", "groupKey": "VARCHAR",
    "error": "VARCHAR", "errorType": "VARCHAR", "truncatedAlerts": "BIGINT", **_ALERT_FIELDS,
    "alerts": [_ALERT_FIELDS], "data": {"alerts": [_ALERT_FIELDS]},
}
_PAYLOAD_JSON = json.dumps(_PAYLOAD_STRUCT)
_BARE_ALERT = "struct_pack(" + ", ".join(f'"{k}" := p."{k}"' for k in _ALERT_FIELDS) + ")"

#: ``summary`` and ``description`` of an alert from its ``annotations`` JSON (Grafana and some rule
#: sets say ``title`` / ``message``). The description falls back to ``description``, then ``message``,
#: then Grafana's ``Error`` (the query error a ``DatasourceError`` alert carries, its only text), then
#: the summary: an alert with any text has a description. Not stored in raw: derived where needed.
SUMMARY_SQL = "coalesce(NULLIF(annotations->>'summary', ''), NULLIF(annotations->>'title', ''))"
DESCRIPTION_SQL = ("coalesce(NULLIF(annotations->>'description', ''), NULLIF(annotations->>'message', ''), "
                   "NULLIF(annotations->>'Error', ''), " + SUMMARY_SQL + ")")
#: The text an alert is templated by: ``alertname: summary`` (else the description, else just
#: the alert name). Needs columns ``alertname``, ``summary``, ``description``.
TEMPLATE_TEXT_SQL = """CASE WHEN coalesce(summary, description) IS NULL THEN coalesce(alertname, '')
     ELSE coalesce(alertname, '') || ': ' || coalesce(summary, description) END"""

#: An ISO-8601 time inside a logger's line prefix.
#: A trailing UTC offset beyond ±14 h, or with 60+ minutes: no time zone has one.
_BAD_OFFSET = r"[+-](?:(?:1[5-9]|[2-9][0-9]):?[0-9][0-9]|[0-9][0-9]:?[6-9][0-9])$"
_PREFIX_TIME = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
#: A trailing UTC offset (``Z``, ``+09:00``, ``-0600``) of a prefix time: without one it is local time.
_PREFIX_OFFSET = r"(?:Z|[+-]\d{2}:?\d{2})$"
#: How far before an alert's ``startsAt`` a delivery of it may be logged (clocks of the logger and of
#: Prometheus a little apart) before it is a clock or time-zone problem: Alertmanager sends an alert
#: only once it started (and after ``group_wait``), so a delivery an hour before it is misdated.
EARLY_DELIVERY_TOLERANCE_S = 60
#: Over ``raw.alert_notifications``: a notification delivered (``received_at``) before the alert it
#: carries started, beyond :data:`EARLY_DELIVERY_TOLERANCE_S` — the logger's clock or zone is off.
EARLY_DELIVERY_SQL = f"(received_at < starts_at - INTERVAL {EARLY_DELIVERY_TOLERANCE_S} SECOND)"
#: A UTC time in a file's name, as a script polling ``/api/v2/alerts`` names its snapshots
#: (``alerts-2026-11-24T021500Z.json``, ``…T02:15:00Z``): basic or extended ISO 8601, ``Z`` or no zone.
_NAME_TIME = r"(\d{4}-?\d{2}-?\d{2}T\d{2}:?\d{2}:?\d{2})Z?[^/]*$"

#: The rows of ``raw.alert_notifications`` that come from a state snapshot, not a notification: a
#: JSON document (``.json``, line 1) of bare alerts — Alertmanager's ``/api/v2/alerts`` saved by a
#: poller. Alertmanager sent nothing: the snapshot is what it held at one moment.
SNAPSHOT_SQL = (r"(format = 'alert' AND line_no = 1 "
                r"AND regexp_matches(source_file, '\.json(\.(gz|bz2|xz))?$', 'i'))")

_ALERT_TYPE = "STRUCT(" + ", ".join(f'"{k}" {v}' for k, v in _ALERT_FIELDS.items()) + ")"

# One statement, one row per alert — or per unusable record or payload, with the reason:
#   payloads:  a record is one payload, or (starting with '[') an array of payloads;
#   typed:     each payload parsed once, into the typed struct p (the main cost);
#   formatted: the payload's format (NULL: not an alert payload);
#   listed:    its alert list and, for an unusable payload, the reason (and one NULL alert);
#   items:     one row per alert;
#   fields, parsed, checked: the time fields as printed and parsed, the status normalized to
#              firing / resolved / pending, and the reason an alert cannot be loaded.
# Rows with an error carry the input they came from (reject_raw) and go to raw.rejects.
_FLATTEN_SQL = f"""
INSERT INTO __TARGET__ BY NAME
WITH payloads AS (
    SELECT source_file, line_no, prefix, logger_local, logger_early, logger_late, raw, false AS in_array,
           1 AS payload_no, body AS payload,
           coalesce(error, CASE WHEN NOT json_valid(body) THEN 'not valid JSON' END) AS record_error,
           NULL::TIMESTAMPTZ AS doc_updated
    FROM __RECORDS__
    WHERE error IS NOT NULL OR NOT starts_with(body, '[') OR NOT json_valid(body)
    UNION ALL
    SELECT source_file, line_no, prefix, logger_local, logger_early, logger_late, NULL, true,
           generate_subscripts(l, 1), unnest(l), NULL, doc_updated
    FROM (SELECT source_file, line_no, prefix, logger_local, logger_early, logger_late, l,
                 -- an /api/v2/alerts snapshot's time when its name has none: the latest updatedAt of its
                 -- alerts, taken per document here (a window over every row of the batch ran out of memory)
                 list_max(list_transform(l, lambda x: try_cast(NULLIF(trim(json_extract_string(x, '$.updatedAt')), '')
                                                          AS TIMESTAMPTZ))) AS doc_updated
          FROM (SELECT source_file, line_no, prefix, logger_local, logger_early, logger_late,
                       json_extract(body, '$[*]')::VARCHAR[] AS l
                FROM __RECORDS__
                WHERE error IS NULL AND starts_with(body, '[') AND json_valid(body)))
), typed AS (
    SELECT *, starts_with(payload, '{{') AS is_object,
           CASE WHEN record_error IS NULL AND starts_with(payload, '{{')
                THEN json_transform(payload, '{_PAYLOAD_JSON}') END AS p
    FROM payloads
), formatted AS (
    SELECT *,
           -- An alert list of JSON null is an empty one: Go marshals a nil slice as null, and Grafana sends
           -- "alerts": null when a notification holds no alert. It carries no alert, as [] does (a string or
           -- an object there stays a reject).
           CASE WHEN record_error IS NOT NULL OR NOT is_object THEN NULL
                WHEN p.alerts IS NOT NULL OR json_type(payload, '$.alerts') = 'NULL' THEN
                    CASE WHEN p.orgId IS NOT NULL OR p.version = '1' THEN 'grafana' ELSE 'alertmanager' END
                WHEN p.status = 'success' AND (p.data.alerts IS NOT NULL OR json_type(payload, '$.data.alerts') = 'NULL')
                    THEN 'prometheus_api'
                WHEN p.labels IS NOT NULL AND p.data IS NULL AND NOT json_exists(payload, '$.alerts') THEN 'alert'
           END AS format
    FROM typed
), listed AS (
    -- Only scalars travel with each alert: unnest copies every carried column once per alert.
    SELECT source_file, line_no, prefix, logger_local, logger_early, logger_late, raw, in_array,
           payload_no::INTEGER AS payload_no, payload, format, doc_updated, p.receiver AS receiver, p.groupKey AS group_key, p.status AS payload_status,
           -- Both webhooks cut the list at the receiver's limit (Alertmanager's max_alerts, Grafana's
           -- contact-point "Max alerts") and say how many they dropped.
           CASE WHEN format IN ('alertmanager', 'grafana') THEN p.truncatedAlerts END AS truncated_alerts,
           CASE WHEN record_error IS NOT NULL THEN record_error
                WHEN NOT is_object THEN 'not an alert payload: a JSON ' || CASE json_type(payload)
                     WHEN 'ARRAY' THEN 'array' WHEN 'VARCHAR' THEN 'string' WHEN 'BOOLEAN' THEN 'boolean'
                     WHEN 'NULL' THEN 'null' ELSE 'number' END || ', not an object'
                WHEN format IS NOT NULL THEN NULL
                WHEN p.status = 'error' THEN 'Prometheus API error: '
                     || coalesce(p.errorType || ': ', '') || coalesce(p.error, '(no message)')
                WHEN json_exists(payload, '$.alerts') THEN 'alerts is not an array'
                WHEN json_exists(payload, '$.data.alerts') THEN 'data.alerts is not an array'
                ELSE 'not an alert payload: no alerts[] (Alertmanager/Grafana webhook), '
                     || 'data.alerts[] (Prometheus /api/v1/alerts) or labels (one alert)'
           END AS payload_error,
           CASE format WHEN 'alertmanager' THEN p.alerts
                       WHEN 'grafana' THEN p.alerts
                       WHEN 'prometheus_api' THEN p.data.alerts
                       WHEN 'alert' THEN [{_BARE_ALERT}]
                       ELSE [NULL::{_ALERT_TYPE}] END AS alerts
    FROM formatted
), started AS (
    -- The latest start of the alerts a payload carries, where a logger's local time of the repeated DST
    -- hour has two readings: the delivery cannot be before it (see the module docstring).
    SELECT *, CASE WHEN logger_late <> logger_early THEN list_max(list_transform(alerts, lambda a:
                   try_cast(NULLIF(trim(coalesce(a.startsAt, a.activeAt)), '') AS TIMESTAMPTZ))) END AS latest_start
    FROM listed
), items AS (
    SELECT * EXCLUDE (alerts), unnest(alerts) AS alert, generate_subscripts(alerts, 1)::INTEGER AS alert_no
    FROM started
), fields AS (
    SELECT *,
        CASE WHEN starts_with(alert.labels, '{{') AND alert.labels::VARCHAR <> '{{}}' THEN alert.labels END AS labels,
        CASE WHEN starts_with(alert.annotations, '{{') THEN alert.annotations END AS annotations,
        NULLIF(trim(CASE WHEN format = 'prometheus_api' THEN coalesce(alert.activeAt, alert.startsAt)
                         ELSE coalesce(alert.startsAt, alert.activeAt) END), '') AS starts_raw,
        NULLIF(trim(alert.endsAt), '') AS ends_raw,
        lower(trim(CASE WHEN format = 'prometheus_api' THEN coalesce(alert.state, alert.status)
                        WHEN starts_with(alert.status, '{{') THEN json_extract_string(alert.status, '$.state')
                        ELSE coalesce(alert.status, payload_status) END)) AS status_raw
    FROM items
), parsed AS (
    SELECT *,
        try_cast(starts_raw AS TIMESTAMPTZ) AS starts_at,
        try_cast(ends_raw AS TIMESTAMPTZ) AS ends_ts,
        CASE status_raw WHEN 'firing' THEN 'firing' WHEN 'resolved' THEN 'resolved'
                        WHEN 'pending' THEN 'pending' WHEN 'active' THEN 'firing'
                        WHEN 'suppressed' THEN 'firing' WHEN 'unprocessed' THEN 'firing' END AS status,
        NULLIF(labels->>'alertname', '') AS alertname
    FROM fields
), checked AS (
    SELECT *,
        CASE WHEN payload_error IS NOT NULL THEN NULL
             WHEN labels IS NULL THEN CASE WHEN alert.labels::VARCHAR = '{{}}' THEN 'labels are empty'
                                           ELSE 'no labels (missing or not an object)' END
             WHEN starts_raw IS NULL THEN CASE WHEN format = 'prometheus_api' THEN 'no activeAt' ELSE 'no startsAt' END
             WHEN starts_at IS NULL THEN 'startsAt ' || to_json(starts_raw)::VARCHAR || ' is not an RFC 3339 time'
             WHEN starts_at < TIMESTAMPTZ '1970-01-01 00:00:00+00' THEN 'startsAt is the zero time'
             -- DuckDB accepts '+99:00' and shifts the time by days: no real zone is beyond ±14 h.
             WHEN regexp_matches(starts_raw, '{_BAD_OFFSET}')
                  THEN 'startsAt ' || to_json(starts_raw)::VARCHAR || ' has an impossible UTC offset'
             WHEN ends_raw IS NOT NULL AND ends_ts IS NULL
                  THEN 'endsAt ' || to_json(ends_raw)::VARCHAR || ' is not an RFC 3339 time'
             WHEN regexp_matches(ends_raw, '{_BAD_OFFSET}')
                  THEN 'endsAt ' || to_json(ends_raw)::VARCHAR || ' has an impossible UTC offset'
             WHEN status_raw IS NULL THEN 'no status'
             WHEN status IS NULL THEN 'unknown status ' || to_json(status_raw)::VARCHAR
        END AS item_error
    FROM parsed
), flat AS (
    SELECT source_file, line_no, payload_no, alert_no, format,
       -- A logger's time before the JSON (its own offset, else the cluster's local time: the earlier reading
       -- of a repeated DST hour unless the payload's alerts started after it); else, for a bare alert (an
       -- /api/v2/alerts snapshot has no delivery time), the time in the snapshot file's name, else the
       -- latest updatedAt it shows.
       coalesce(CASE WHEN NOT logger_local
                     THEN try_cast(replace(NULLIF(regexp_extract(prefix, '{_PREFIX_TIME}'), ''), ',', '.') AS TIMESTAMPTZ)
                     WHEN logger_late > logger_early
                          AND logger_early < latest_start - INTERVAL {EARLY_DELIVERY_TOLERANCE_S} SECOND
                          AND logger_late >= latest_start - INTERVAL {EARLY_DELIVERY_TOLERANCE_S} SECOND
                     THEN logger_late
                     ELSE logger_early END,
                CASE WHEN format = 'alert' AND line_no = 1 THEN timezone('UTC', try_strptime(
                     NULLIF(regexp_replace(regexp_extract(source_file, '{_NAME_TIME}', 1), '[-:]', '', 'g'), ''),
                     '%Y%m%dT%H%M%S')) END,
                CASE WHEN format = 'alert' THEN coalesce(doc_updated, try_cast(NULLIF(trim(alert.updatedAt), '')
                                                                               AS TIMESTAMPTZ)) END) AS received_at,
       receiver, group_key, lower(payload_status) AS payload_status, status,
       NULLIF(trim(alert.fingerprint), '') AS fingerprint,
       NULLIF(trim(alert.fingerprint), '') IS NULL AS fingerprint_computed,
       alertname, starts_at,
       CASE WHEN ends_ts >= TIMESTAMPTZ '1970-01-01 00:00:00+00' THEN ends_ts END AS ends_at,
       labels, annotations,
       NULLIF(alert.generatorURL, '') AS generator_url,
       NULLIF(coalesce(alert.value, alert.valueString, alert."values"), '') AS value,
       -- The templated text is a function of (alertname, annotations): key by those, and extract
       -- the summary only for each distinct key when mining.
       hash(alertname, annotations::VARCHAR) AS template_key,
       CASE WHEN payload_error IS NOT NULL
                 THEN CASE WHEN in_array THEN 'payload ' || payload_no || ': ' ELSE '' END || payload_error
            WHEN item_error IS NOT NULL
                 THEN CASE WHEN in_array THEN 'payload ' || payload_no || ', ' ELSE '' END
                      || CASE WHEN format = 'alert' THEN 'alert' ELSE 'alert ' || alert_no END || ': ' || item_error
       END AS error,
       CASE WHEN payload_error IS NOT NULL THEN left(rtrim(coalesce(raw, payload), chr(13) || chr(10)), {MAX_RAW_CHARS})
            WHEN item_error IS NOT NULL THEN left(coalesce(json_extract(payload,
                CASE format WHEN 'prometheus_api' THEN '$.data.alerts[' || (alert_no - 1) || ']'
                            WHEN 'alert' THEN '$' ELSE '$.alerts[' || (alert_no - 1) || ']' END)::VARCHAR,
                payload), {MAX_RAW_CHARS})
       END AS reject_raw
    FROM checked
)
SELECT * FROM flat
UNION ALL BY NAME
-- Alertmanager (Grafana) dropped alerts from this notification (the receiver's max_alerts, the contact
-- point's "Max alerts"): the alerts it sent load; the ones it dropped are a reject of their own, so the loss shows.
SELECT source_file, line_no, payload_no, format,
       CASE WHEN in_array THEN 'payload ' || payload_no || ': ' ELSE '' END
       || CASE WHEN format = 'grafana' THEN 'Grafana' ELSE 'Alertmanager' END || ' truncated '
       || truncated_alerts || ' alert' || CASE WHEN truncated_alerts = 1 THEN '' ELSE 's' END
       || ' from this notification ('
       || CASE WHEN format = 'grafana' THEN 'the contact point''s Max alerts' ELSE 'max_alerts' END
       || '); the alerts it sent are loaded' AS error,
       left(rtrim(coalesce(raw, payload), chr(13) || chr(10)), {MAX_RAW_CHARS}) AS reject_raw
FROM listed
WHERE truncated_alerts > 0 AND payload_error IS NULL
"""

#: Columns the flattening writes (see ``sql/ddl/040_alerts.sql``): a notification when ``error``
#: is NULL, else a reject (``line_no``, ``error``, ``reject_raw``). ``template_key`` hashes what
#: the templated text is made of (alert name and annotations); ``fingerprint`` is NULL until
#: :func:`fill_fingerprints` computes it, ``seq`` until :data:`SEQ_SQL` numbers the rows.
STAGE_COLUMNS_SQL = """
    source_file VARCHAR, line_no BIGINT, payload_no INTEGER, alert_no INTEGER, seq BIGINT,
    format VARCHAR, received_at TIMESTAMPTZ, receiver VARCHAR, group_key VARCHAR,
    payload_status VARCHAR, status VARCHAR, fingerprint VARCHAR, fingerprint_computed BOOLEAN,
    alertname VARCHAR, starts_at TIMESTAMPTZ, ends_at TIMESTAMPTZ, labels JSON, annotations JSON,
    generator_url VARCHAR, value VARCHAR, template_key UBIGINT, error VARCHAR, reject_raw VARCHAR
"""

#: ``seq`` of every notification staged in ``__STAGE__``: 1-based received order within its file
#: (``rowid`` -> ``seq``; a narrow window, joined back by rowid when publishing).
SEQ_SQL = """
SELECT rowid AS stage_row,
       row_number() OVER (PARTITION BY source_file ORDER BY line_no, payload_no, alert_no) AS seq
FROM __STAGE__
WHERE error IS NULL
"""

#: Arrow record batches handed to DuckDB are cut to this many rows: DuckDB scans Arrow data in
#: parallel by batch, and one batch per file piece would leave the second core idle.
SCAN_BATCH_ROWS = 8192


@contextmanager
def unordered_inserts(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Let DuckDB append rows in any order (``preserve_insertion_order = false``) for the block.

    Keeping the order makes DuckDB merge its threads' output in sequence: 5x slower here, and the
    order of staged (or raw) rows carries no meaning — ``seq`` does. The previous value is restored.
    """
    before = con.execute("SELECT current_setting('preserve_insertion_order')").fetchall()[0][0]
    con.execute("SET preserve_insertion_order = false")
    try:
        yield
    finally:
        con.execute(f"SET preserve_insertion_order = {'true' if before else 'false'}")


def logger_times(records: pl.DataFrame, timezone: str = "UTC") -> pl.DataFrame:
    """``records`` (:data:`RECORD_SCHEMA`) with ``logger_local`` (the logger's prefix time has no UTC
    offset: it is local time) and its two readings in ``timezone`` (IANA), ``logger_early`` and
    ``logger_late`` (UTC; they differ in the repeated hour of a DST fall-back, both null in the
    spring-forward gap): the one definition of a naive stamp
    (:func:`~gpusre.models.ingest.slurm_values.localize_to_utc`), as sacct and node logs read theirs.

    >>> r = pl.DataFrame({"prefix": ["2026-11-01 01:31:02,512 INFO webhook POST /alerts", "2026-11-01T07:31:02Z"]})
    >>> logger_times(r, "America/Chicago").select("logger_local", "logger_early", "logger_late").rows()[0]
    (True, datetime.datetime(2026, 11, 1, 6, 31, 2, 512000, tzinfo=zoneinfo.ZoneInfo(key='UTC')), \
datetime.datetime(2026, 11, 1, 7, 31, 2, 512000, tzinfo=zoneinfo.ZoneInfo(key='UTC')))
    """
    check_timezone(timezone)
    text = pl.col("prefix").str.extract(f"({_PREFIX_TIME})", 1)
    local = text.is_not_null() & ~text.str.contains(_PREFIX_OFFSET)
    naive = (pl.when(local).then(text).str.replace("T", " ", literal=True).str.replace(",", ".", literal=True)
             .str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S%.f", strict=False))
    return records.with_columns(
        local.fill_null(False).alias("logger_local"),
        localize_to_utc(naive, timezone, ambiguous="earliest").alias("logger_early"),
        localize_to_utc(naive, timezone, ambiguous="latest").alias("logger_late"),
    )


def stage_records(con: duckdb.DuckDBPyConnection, records: pl.DataFrame, *, target: str,
                  timezone: str = "UTC") -> None:
    """Flatten a record frame into ``target`` (:data:`STAGE_COLUMNS_SQL`), appending; one
    set-based DuckDB statement. ``timezone`` (IANA, cluster.yaml's) is the zone a logger's time
    without an offset is read in (:func:`logger_times`).

    Every alert of every payload becomes one row; a record that is not valid JSON, or a payload
    that is not an alert payload, becomes one row with ``error`` set. ``fingerprint`` is left NULL
    where the payload had none (see :func:`fill_fingerprints`), ``seq`` NULL (see :data:`SEQ_SQL`).
    """
    if records.height == 0:
        return
    arrow = logger_times(records, timezone).to_arrow(compat_level=pl.CompatLevel.oldest())
    con.register("_alert_records", pa.Table.from_batches(arrow.to_batches(max_chunksize=SCAN_BATCH_ROWS)))
    try:
        with unordered_inserts(con):
            con.execute(_FLATTEN_SQL.replace("__TARGET__", target).replace("__RECORDS__", "_alert_records"))
    finally:
        con.unregister("_alert_records")


# -- fingerprints --------------------------------------------------------------------------------

_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211


def _label_bytes(labels: Mapping[str, object]) -> bytes:
    """``name 0xFF value 0xFF`` for every label sorted by name, empty values skipped."""
    return b"".join(
        name.encode() + b"\xff" + str(value).encode() + b"\xff"
        for name, value in sorted(labels.items()) if value is not None and value != ""
    )


def alertmanager_fingerprint(labels: Mapping[str, object]) -> str:
    """Alertmanager's fingerprint of a label set, as its webhook prints it (16 hex digits).

    Prometheus' ``model.LabelSet.Fingerprint``: 64-bit FNV-1a over the labels sorted by name,
    each as ``name 0xFF value 0xFF`` (UTF-8); empty values are absent labels. So an alert from a
    Prometheus ``/api/v1/alerts`` dump gets the fingerprint Alertmanager gives the same alert.
    """
    h = _FNV_OFFSET
    for byte in _label_bytes(labels):
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def fingerprints_of(label_sets: list[Mapping[str, object]]) -> list[str]:
    """:func:`alertmanager_fingerprint` of many label sets, vectorized: NumPy hashes all of them
    at once, one step per byte position."""
    blobs = [_label_bytes(labels) for labels in label_sets]
    n = len(blobs)
    if n == 0:
        return []
    lengths = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=n)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8).astype(np.uint64)
    h = np.full(n, _FNV_OFFSET, dtype=np.uint64)
    prime = np.uint64(_FNV_PRIME)
    for k in range(int(lengths.max())):
        live = np.flatnonzero(lengths > k)
        h[live] = (h[live] ^ data[starts[live] + k]) * prime  # uint64 arithmetic wraps: mod 2^64
    return [f"{x:016x}" for x in h.tolist()]


def fill_fingerprints(con: duckdb.DuckDBPyConnection, table: str) -> int:
    """Compute the fingerprint of every row of ``table`` that has none; returns how many distinct
    label texts were hashed (only distinct ones are, then joined back)."""
    texts = [t for (t,) in con.execute(f"SELECT DISTINCT labels::VARCHAR FROM {table} WHERE fingerprint IS NULL AND error IS NULL").fetchall()]
    if not texts:
        return 0
    hashed = pa.table({"labels": pa.array(texts, pa.string()),
                       "fp": pa.array(fingerprints_of([json.loads(t) for t in texts]), pa.string())})
    con.register("_alert_fingerprints", hashed)
    try:
        con.execute(
            f"""UPDATE {table} AS t SET fingerprint = f.fp
                FROM _alert_fingerprints AS f
                WHERE t.fingerprint IS NULL AND t.error IS NULL AND t.labels::VARCHAR = f.labels"""
        )
    finally:
        con.unregister("_alert_fingerprints")
    return len(texts)


# -- one file, for tests and ad hoc use -----------------------------------------------------------


@dataclass(frozen=True)
class ParsedAlerts:
    """The notifications and rejects of one file (``notifications`` ordered by line, payload, alert)."""

    notifications: pl.DataFrame
    rejects: pl.DataFrame

    @property
    def rows_read(self) -> int:
        return self.notifications.height + self.rejects.height


def parse_alert_file(path: Path, source_file: str | None = None, timezone: str = "UTC") -> ParsedAlerts:
    """Parse one alert file with an in-memory DuckDB (the ingest's own code path, no warehouse);
    ``timezone``: the cluster's, that a logger's time without an offset is read in.

    Fingerprints are filled in; ``summary``, ``description`` and ``template_text`` (the text the
    ingest templates) are added for convenience.
    """
    source_file = source_file or path.name
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(f"CREATE TEMP TABLE staged ({STAGE_COLUMNS_SQL})")
        for records in iter_alert_records(path, source_file):
            stage_records(con, records, target="staged", timezone=timezone)
        fill_fingerprints(con, "staged")
        notifications = con.sql(
            f"""SELECT s.* EXCLUDE (seq, template_key, error, reject_raw), q.seq,
                       {SUMMARY_SQL} AS summary, {DESCRIPTION_SQL} AS description
                FROM staged AS s JOIN ({SEQ_SQL.replace("__STAGE__", "staged")}) AS q ON q.stage_row = s.rowid
                ORDER BY q.seq"""
        ).pl()
        notifications = notifications.with_columns(template_text=pl.when(
            pl.coalesce("summary", "description").is_null()).then(pl.col("alertname").fill_null(""))
            .otherwise(pl.concat_str([pl.col("alertname").fill_null(""), pl.lit(": "),
                                      pl.coalesce("summary", "description")])))
        rejects = con.sql("SELECT source_file, line_no, reject_raw AS raw, error FROM staged "
                          "WHERE error IS NOT NULL ORDER BY line_no, error").pl()
    finally:
        con.close()
    return ParsedAlerts(notifications, rejects)
