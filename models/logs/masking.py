"""Vectorized masking of node-log messages before template mining.

Drain3 groups messages by their literal tokens, so every variable part of a message (a PCI
address, a node name, a pid, a job id, a number) must be replaced by a placeholder first or each
value would look like a new template. Drain3 can mask by itself, but it runs Python ``re`` on one
line at a time; here the same idea runs as Polars (Rust ``regex``) expressions over a whole
column, which is what lets the pipeline mask millions of lines per second and then feed Drain3
only the distinct masked messages.

Masking is deliberately aggressive: codes that matter (the Xid code, SXid, ECC counts) are parsed
into columns by the event catalog *before* masking, so nothing of value is lost by turning every
remaining number into ``<NUM>``.

Rules apply in order, most specific first, so that e.g. a PCI address is not half-eaten by the
number rule. The rule set is one production configuration, not tuned per data set.

>>> mask_messages(pl.Series(["NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python"])).to_list()
['NVRM: Xid (PCI:<PCI>): <NUM>, pid=<PID>, name=python']
>>> mask_messages(pl.Series(["slurmstepd: error: *** JOB 123456 ON gpu017 CANCELLED"])).to_list()
['slurmstepd: error: *** JOB <JOB> ON <NODE> CANCELLED']
>>> mask_messages(pl.Series(["scheduled maintenance CHG0012345 on gpu017", "OPS-4411"])).to_list()
['scheduled maintenance <TICKET> on <NODE>', '<TICKET>']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "DIGIT_RUN_CAP",
    "DEFAULT_NODE_PATTERN",
    "canonical_digits",
    "mask_canonical",
    "MaskRule",
    "PLACEHOLDERS",
    "mask_expr",
    "mask_messages",
    "mask_rules",
]

#: Node names as clusters name them: a word followed by at least two digits (``gpu017``,
#: ``dgx-a100-03``) or by a dash and digits (``node-7``, ``node-246``). A word with a single
#: glued digit is not a node: it would mask device names such as ``eth0`` or ``sda1``.
DEFAULT_NODE_PATTERN = r"\b[a-zA-Z][a-zA-Z0-9]*(?:-[a-zA-Z0-9]+)*(?:-\d+|\d{2,})\b"

_HEX = "[0-9a-fA-F]"


@dataclass(frozen=True, slots=True)
class MaskRule:
    """One masking step: every match of ``pattern`` (Rust regex syntax) becomes ``replacement``.

    ``replacement`` may refer to capture groups as ``${1}``; rules use that instead of
    look-behind, which the Rust regex engine does not support.
    """

    name: str
    pattern: str
    replacement: str


#: Top-level domains that make a dotted word a host name (``proxy.cse.cuhk.edu.hk``) rather than
#: a Java class (``org.apache.hadoop.mapred.Task``) or a file name (``dfs.data.dir``): the label
#: after the last dot must be one of these.
_TLDS = (
    "com|net|org|edu|gov|mil|int|io|info|biz|cloud|local|lan|internal|localdomain|arpa|"
    "cn|hk|tw|jp|kr|in|sg|uk|de|fr|nl|ru|ch|se|it|es|eu|us|ca|au|br"
)

#: Record-type prefixes of ITSM ticket numbers (ServiceNow: incident, change, problem, request item,
#: request, (change/project/catalog) task; BMC Remedy: change request, work order).
_ITSM_PREFIXES = "INC|CHG|PRB|RITM|REQ|SCTASK|CTASK|PTASK|TASK|CRQ|WO"

#: Size and duration units a number is glued or spaced to (``5.2 KB``, ``512MB``, ``250ms``).
_SIZE_UNIT = r"(?:[KMGTP]i?B|[kK]B|bytes?|B)"
_TIME_UNIT = r"(?:ms|us|µs|ns|sec|secs|s|min|mins)"


def mask_rules(node_pattern: str = DEFAULT_NODE_PATTERN, extra: Sequence[MaskRule] = ()) -> tuple[MaskRule, ...]:
    """The ordered masking rules, with a site-specific node-name regex and extra per-source rules.

    Rules (and ``node_pattern``, and ``extra``) see messages in :func:`canonical_digits` form:
    they may use ``\\d``/``[0-9]`` and count up to four digits, but must not test a digit's value
    or count five or more (``gpu\\d{3}`` is fine, ``gpu0\\d\\d`` or ``\\d{6}`` is not).
    ``extra`` rules run first, so a site can claim a value before the generic rules split it.

    The rules follow the Loghub preprocessing studies (He et al. 2016; Zhu et al. 2019; Jiang et
    al. 2024): mask what is a variable by its *shape* in any log — time stamps, UUIDs, MAC, PCI,
    IP (with port), host names (with port), paths and URLs, sizes and durations with their unit,
    hex, numbers — rather than by the words around it in one particular log.

    Order matters: structured identifiers (UUID, MAC, PCI, IP) go before the generic hex and
    number rules, which would otherwise split them into several placeholders; key-value rules
    (pid, job) go before the node and number rules so they keep their own placeholder.
    """
    return (
        *extra,
        # Dates written with month names (``Fri Jun 17 07:07:00 2005``, ``Jun 17, 2005``), as
        # ctime(), syslog and Java print them.
        MaskRule(
            "date_text",
            r"\b(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,?\s+)?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2}(?:,?\s+\d{4})?(?:\s+\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s+\d{4})?)?\b",
            "<TS>",
        ),
        # Dates and times (ISO-8601, syslog ``03:04:05``, dmesg ``,283575``), before PCI/IPv6
        # whose colon-separated hex groups a time of day would otherwise resemble.
        MaskRule(
            "ts",
            r"\b(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?|\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?)\b",
            "<TS>",
        ),
        # 8-4-4-4-12 GUIDs/UUIDs: GPU UUIDs (``GPU-5c1e...``), MIG instances, boot ids.
        # Groups of 8 and 12 may be shorter after digit canonicalization (runs cut to 4).
        MaskRule("uuid", rf"\b{_HEX}{{4,8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4,12}}\b", "<UUID>"),
        # MAC and InfiniBand GID/GUID byte strings (6 or more colon-separated bytes).
        MaskRule("mac", rf"\b{_HEX}{{2}}(?::{_HEX}{{2}}){{5,}}\b", "<MAC>"),
        # PCI addresses: ``0000:3b:00.0`` and ``00000000:3B:00.0`` (nvidia-smi), ``3b:00.0``
        # (lspci), and the function-less ``0000:3b:00`` NVRM prints in Xid lines.
        MaskRule(
            "pci",
            rf"\b(?:{_HEX}{{4,8}}:{_HEX}{{2}}:{_HEX}{{2}}(?:\.[0-7])?|{_HEX}{{2}}:{_HEX}{{2}}\.[0-7])\b",
            "<PCI>",
        ),
        # URLs, before IPs and hosts which they contain.
        MaskRule("url", r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>]+", "<PATH>"),
        # IPv4 with an optional port (``10.1.2.3:5070``, ``/10.1.2.3:33425`` as Java prints a socket
        # address), and its IPv6-mapped form ``::ffff:10.0.0.1``.
        MaskRule("ipv4", r"/?(?:::ffff:)?\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b", "<IP>"),
        # IPv6: full eight-group form, or any compressed form with ``::``. Times of day
        # (``03:04:05``) have three groups and no ``::`` so they do not match.
        MaskRule(
            "ipv6",
            rf"(?:\b(?:{_HEX}{{1,4}}:){{7}}{_HEX}{{1,4}}\b|(?:\b{_HEX}{{1,4}}:){{1,6}}:(?:{_HEX}{{1,4}}\b(?::{_HEX}{{1,4}}\b)*)?|::(?:{_HEX}{{1,4}}\b|<IP>)(?::{_HEX}{{1,4}}\b)*)",
            "<IP>",
        ),
        # Host names with a known top-level domain, with an optional port.
        MaskRule("host", rf"\b(?:[a-zA-Z0-9][a-zA-Z0-9_-]*\.)+(?i:{_TLDS})(?::\d+)?\b", "<HOST>"),
        # Clock times without seconds and mm:ss durations (``23:20``, ``lifetime 00:01``), after
        # PCI and IPv6 so their hex groups are already gone.
        MaskRule("clock", r"\b\d{1,2}:\d{2}\b", "<TS>"),
        # Absolute paths, only at the start of a token: ``I/O`` or ``x+/y`` are words, not paths.
        MaskRule("path", r"(^|[\s=(\[\"'])/[^\s:,;()\[\]\"']*", "${1}<PATH>"),
        # Process ids: ``pid=123``, ``pid 123``, ``PID: 123`` and the syslog ``sshd[123]``.
        MaskRule("pid_kv", r"(?i)\b(pid[=: ]\s*)\d+\b", "${1}<PID>"),
        MaskRule("pid_bracket", r"\[\d+\]", "[<PID>]"),
        # Slurm job ids: ``JobId=123``, ``job 123``, ``JOB 123``, ``job_123``, ``StepId=123.0``.
        MaskRule(
            "job",
            r"(?i)\b((?:job_?id|step_?id|job|step)[=: _#]\s*)\d+(?:[._+]\w+)?\b",
            "${1}<JOB>",
        ),
        # Ticket ids, as operators cite them in drain reasons and change notes: an issue tracker's key
        # (Jira and its like: an upper-case project key, a dash, the issue number: ``OPS-4411``,
        # ``JIRA-12``) or an ITSM record number (ServiceNow / BMC Remedy: the record type's prefix glued
        # to its number: ``CHG0012345``, ``INC123``, ``RITM0001234``, ``CRQ000000012345``). Before the
        # node rule, whose shape (a word, then digits) they share: a ticket is not a node. Upper case
        # only, as the tools print them (node names are lower case), and at least two digits, so a
        # part's index (``PSU-1``) stays what it was.
        MaskRule("ticket", rf"\b(?:[A-Z][A-Z0-9_]+-\d{{2,}}|(?:{_ITSM_PREFIXES})\d{{3,}})\b", "<TICKET>"),
        MaskRule("node", node_pattern, "<NODE>"),
        # Sizes with their unit, and the same size repeated in another unit as Windows and Java
        # print it (``1234 bytes (1.2 KB)``): one value, whatever its unit or wording.
        MaskRule(
            "size",
            rf"\b\d+(?:\.\d+)?\s?{_SIZE_UNIT}\b(?:\s*\(\d+(?:\.\d+)?\s?{_SIZE_UNIT}\))?",
            "<SIZE>",
        ),
        # Durations with a short unit (``250ms``, ``1.5 s``, ``<1 sec``): the unit changes with the
        # magnitude, so it belongs to the value.
        MaskRule("duration", rf"(?:<\s?)?\b\d+(?:\.\d+)?\s?{_TIME_UNIT}\b", "<DUR>"),
        # Hex literals (addresses, registers, IB GUIDs).
        # A word made only of hex digits that mixes digits and letters (``00544eb8``, ``1a2b``)
        # is one value: the number rule would otherwise cut it into ``<NUM>a<NUM>``.
        MaskRule("hex", rf"\b0[xX]{_HEX}+\b", "<HEX>"),
        MaskRule("bare_hex", rf"\b(?:\d+[a-fA-F]|[a-fA-F]+\d){_HEX}*\b", "<NUM>"),
        # A minus sign belongs to the number when it does not join two words (``blk_-123``,
        # ``offset -4``), unlike ``0--1`` or ``x-86``.
        MaskRule("signed", r"(^|[\s_=:(\[,])-\d+(?:\.\d+)*", "${1}<NUM>"),
        # Every remaining number, decimal or dotted (no sign: ``-`` is as often a separator), also
        # glued to a unit or a word (``300MHz``, ``CPU#1``, ``x86_64``): the token's shape is what
        # identifies the template.
        MaskRule("num", r"\d+(?:\.\d+)*", "<NUM>"),
        # A list of values (``delete blk_<NUM> blk_<NUM> ...``) is one value whatever its length:
        # otherwise every length would be a template of its own.
        MaskRule("list", r"([A-Za-z_]*<[A-Z]+>)(?:,?\s+[A-Za-z_]*<[A-Z]+>)+", "${1}"),
    )


#: Placeholder tokens the rules produce (Drain3's own wildcard ``<*>`` is added by the miner).
PLACEHOLDERS: tuple[str, ...] = (
    "<TS>", "<UUID>", "<MAC>", "<PCI>", "<IP>", "<HOST>", "<PATH>", "<PID>", "<JOB>", "<TICKET>", "<NODE>", "<SIZE>",
    "<DUR>", "<HEX>", "<NUM>",
)


#: Digit runs are canonicalized to at most this many zeros (see :func:`canonical_digits`).
DIGIT_RUN_CAP = 4

_ZERO = np.uint8(ord("0"))
_TEN = np.uint8(10)
#: Offsets 0..DIGIT_RUN_CAP-1 from a string's first byte: positions whose look-back would leave it.
_LOOK_BACK = np.arange(DIGIT_RUN_CAP, dtype=np.int64)


def _compact(values: np.ndarray, keep: np.ndarray, kept: int) -> np.ndarray:
    """``values[keep]`` for a mostly-true ``keep``, through Arrow's filter kernel.

    Arrow copies whole 64-byte blocks whose selection bits are all set; NumPy tests every byte,
    which made this the most expensive step of :func:`canonical_digits` (0.7 vs 0.4 ns/byte).
    """
    bitmap = pa.py_buffer(np.packbits(keep, bitorder="little"))
    mask = pa.Array.from_buffers(pa.bool_(), len(keep), [None, bitmap])
    source = pa.Array.from_buffers(pa.uint8(), len(values), [None, pa.py_buffer(values)])
    # The result's buffer may be padded beyond its length.
    return np.frombuffer(pc.filter(source, mask).buffers()[1], dtype=np.uint8)[:kept]


def canonical_digits(messages: pl.Series, *, chunk_bytes: int = 1 << 20) -> pl.Series:
    """Every ASCII digit becomes ``0`` and digit runs longer than 4 are cut to 4.

    Why: every digit ends up inside a placeholder anyway, and no masking rule looks at a digit's
    value or counts more than four digits in a run, so the mask of a message is a function of
    this canonical form. Lines that differ only in their numbers (the bulk of node logs) share
    one canonical form, so the pipeline can deduplicate *before* the regexes and run them on a
    few thousand distinct strings instead of millions of lines.

    It is a byte-level NumPy pass over the Arrow buffer (ASCII digits never occur inside a
    multi-byte UTF-8 sequence, so editing bytes keeps the text valid), processed in chunks of
    about ``chunk_bytes`` so the temporaries stay in cache. Digit runs never span two strings.
    Nulls stay null; the result keeps the input's name and length.
    """
    arr = messages.cast(pl.String).to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = arr.cast(pa.large_string())
    n = len(arr)
    if n == 0:
        return pl.Series(messages.name, [], dtype=pl.String)
    if arr.offset:
        # A sliced array's validity bitmap starts mid-buffer; rebuild it at offset 0 so the
        # result can reuse the buffer as is.
        arr = pa.concat_arrays([arr])
    validity, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[: n + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    base = int(offsets[0])
    # Work buffers are allocated once and reused per chunk: fresh large arrays cost page faults
    # that, on small VMs, take longer than the arithmetic.
    cap = int(min(max(chunk_bytes, 1), max(len(data), 1))) + int(np.max(np.diff(offsets), initial=0))
    zeroed = np.empty(cap, dtype=np.uint8)
    digit_delta = np.empty(cap, dtype=np.uint8)
    is_digit = np.empty(cap, dtype=bool)
    # DIGIT_RUN_CAP spare bytes: the string-start fix below writes up to that far past a chunk.
    drop_buf = np.empty(cap + DIGIT_RUN_CAP, dtype=bool)
    out = np.empty(int(offsets[n]) - base, dtype=np.uint8)
    removed = np.zeros(n, dtype=np.int64)  # dropped bytes per string
    written = 0
    i = 0
    while i < n:
        j = min(max(int(np.searchsorted(offsets, offsets[i] + chunk_bytes, side="right")) - 1, i + 1), n)
        lo = int(offsets[i])
        m = int(offsets[j]) - lo
        buf = data[lo : lo + m]
        z, delta, d, drop = zeroed[:m], digit_delta[:m], is_digit[:m], drop_buf[:m]
        # Branch-free "digit -> '0'": subtract (byte - '0') from digits only. Five vectorized
        # passes cost less than one lookup-table gather or masked copy (2 and 1.3 ns/byte).
        np.subtract(buf, _ZERO, out=z)
        np.less(z, _TEN, out=d)  # uint8 wrap-around makes bytes below '0' large
        np.negative(d.view(np.uint8), out=delta)  # 0xFF on digits, 0 elsewhere
        np.bitwise_and(delta, z, out=delta)
        np.subtract(buf, delta, out=z)
        # Drop a digit when the DIGIT_RUN_CAP bytes before it are digits of the same string.
        np.copyto(drop, d)
        for k in range(1, min(DIGIT_RUN_CAP, m - 1) + 1):
            np.logical_and(drop[k:], d[:-k], out=drop[k:])
        starts = offsets[i:j] - lo
        # The look-back would leave the string (the chunk starts at a string start, so this also
        # covers the chunk's first bytes). A position past a short string lies in the next one,
        # within DIGIT_RUN_CAP of its start, so clearing it is right there too.
        drop_buf[(starts[:, None] + _LOOK_BACK).ravel()] = False
        # Dropped digits are few (only beyond the fourth of a run): locate them and count them
        # per string by their position among the string starts, instead of a running count.
        dropped_at = np.flatnonzero(drop)
        if len(dropped_at):
            removed[i:j] = np.diff(np.searchsorted(dropped_at, starts), append=len(dropped_at))
            np.logical_not(drop, out=d)  # d now means "keep"
            kept = _compact(z, d, m - len(dropped_at))
        else:
            kept = z
        out[written : written + len(kept)] = kept
        written += len(kept)
        i = j
    new_offsets = offsets - base
    new_offsets[1:] -= np.cumsum(removed)
    result = pa.LargeStringArray.from_buffers(
        n, pa.py_buffer(new_offsets), pa.py_buffer(out[:written]), validity, arr.null_count
    )
    return pl.Series(messages.name, result, dtype=pl.String)


def mask_expr(expr: pl.Expr, node_pattern: str = DEFAULT_NODE_PATTERN, extra: Sequence[MaskRule] = ()) -> pl.Expr:
    """Polars expression applying the rules to a column already passed through
    :func:`canonical_digits` (the rules are written for canonical digit runs)."""
    out = expr
    for rule in mask_rules(node_pattern, extra):
        out = out.str.replace_all(rule.pattern, rule.replacement)
    return out


def mask_canonical(
    canonical: pl.Series, *, node_pattern: str = DEFAULT_NODE_PATTERN, extra: Sequence[MaskRule] = ()
) -> pl.Series:
    """Apply the masking rules to messages already in :func:`canonical_digits` form."""
    return pl.select(mask_expr(pl.lit(canonical), node_pattern, extra)).to_series().alias(canonical.name)


def mask_messages(
    messages: pl.Series, *, node_pattern: str = DEFAULT_NODE_PATTERN, extra: Sequence[MaskRule] = ()
) -> pl.Series:
    """Replace the variable parts of each message by placeholders; nulls stay null.

    Defined as the rules applied to :func:`canonical_digits` of the message, so that the fast
    path (canonicalize, deduplicate, mask the distinct forms) gives exactly this result.
    The result keeps the input's name and length, one masked message per input row.
    ``extra`` are per-source rules (see :func:`mask_rules`).
    """
    return mask_canonical(canonical_digits(messages), node_pattern=node_pattern, extra=extra)
