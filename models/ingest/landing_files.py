"""One landing file as a unit of failure: find it, open it, read, decompress and hash it, and say in
one line why it cannot be read whole.

Every source (sacct, syslog, alerts, slurm_events) reads its files through here, so a truncated
``.gz`` (log rotation copied mid-write), garbage after the gzip magic, a file without read
permission, a dangling symlink or a symlink loop, or a UTF-16 export never escapes as an
exception: :func:`read_landing_file` returns the complete lines it could read plus a *fault*, which
the ingest records as a line-0 reject and a ``refused`` ledger row while the lines before the fault
still load. A file fixed in place has a new SHA-256 (or had none), so the next run loads it again.

:func:`scan_source` lists a source folder so that nothing is skipped in silence: a file is either
for the source's reader or *ignored* with the reason (README, hidden, wrong name, not a regular
file), and the ingest writes the ignored ones to ``raw.ingested_files`` too.
"""

from __future__ import annotations

import bz2
import errno
import gzip
import hashlib
import lzma
import os
import stat
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "COMPRESSION_SUFFIXES",
    "CUT_LAST_LINE",
    "IgnoredFile",
    "LandingFileFault",
    "LandingRead",
    "SourceScan",
    "describe_fault",
    "file_identity",
    "encoding_fault",
    "open_landing_file",
    "read_landing_file",
    "scan_source",
    "strip_compression",
    "unterminated_last_line",
]

#: Compression suffixes looked through when a file name is matched against a source's endings;
#: the codec itself is chosen from the content (magic bytes), never from the name.
COMPRESSION_SUFFIXES: tuple[str, ...] = (".gz", ".bz2", ".xz")
_READ_BLOCK = 1 << 20


#: Reject reason of a file's last line that has no line break and cannot be shown to be a whole
#: record (node logs, alert lines, sacct and sacctmgr dumps, incidents.csv share it).
CUT_LAST_LINE = "last line has no line break: cut while written"


def unterminated_last_line(data: bytes | str) -> int | None:
    """The 1-based number of the last physical line of ``data`` when it has no line break, else
    None (also for empty data).

    Every writer of these files ends each record with a line break, so a last line without one
    was cut while written (a full disk, a copy of a file being written) -- unless the writer
    merely omitted the final break, which each reader tells apart by the shape of that line. NUL
    padding after the last line break (a crash in a preallocated file) is not a line.
    """
    nul, newline = (b"\x00", b"\n") if isinstance(data, bytes) else ("\x00", "\n")
    end = data.rstrip(nul)  # type: ignore[arg-type]
    if not end or end.endswith(newline):  # type: ignore[arg-type]
        return None
    return end.count(newline) + 1  # type: ignore[arg-type]


class LandingFileFault(Exception):
    """A landing file that cannot be read (whole); ``str()`` is the one-line reason."""


@dataclass(frozen=True)
class LandingRead:
    """What could be read of one landing file."""

    data: bytes  # decompressed; only complete lines when ``fault`` is set
    sha256: str  # of the bytes on disk ('' when they could not be read)
    size: int  # bytes on disk
    fault: str | None = None  # why the file is refused (a line-0 reject); None when read whole
    #: Of the decompressed content when read whole, else ``sha256``: a log and its compressed
    #: rotation (``messages-20261111`` -> ``messages-20261111.gz``) have the same content hash.
    content_sha256: str = ""


@dataclass(frozen=True)
class IgnoredFile:
    """A file under a source folder that no reader of that source takes, and why."""

    source_file: str
    reason: str
    size: int


@dataclass(frozen=True)
class SourceScan:
    """The files under one source folder: to read (in a stable order), and ignored."""

    files: list[Path]
    ignored: list[IgnoredFile]


def strip_compression(name: str) -> str:
    """``'x.psv.gz'`` → ``'x.psv'`` (lower-cased): the name a source's endings are matched against."""
    lower = name.lower()
    for suffix in COMPRESSION_SUFFIXES:
        if lower.endswith(suffix):
            return lower[: -len(suffix)]
    return lower


def scan_source(landing: Path, folder: str, accept: Callable[[str], str | None]) -> SourceScan:
    """Every file under ``landing/folder`` (recursively): those to read, and those ignored.

    ``accept(name)`` gets the lower-cased name without compression suffix and returns None to read
    the file, else the reason it is ignored. README files, hidden files (editor swap files, rsync
    partials) and non-regular files are ignored with their reason. A symlink that cannot be
    followed (dangling, a loop) is *read*, so its reader refuses it with the reason; symlinked
    directories are not followed (a loop would never end).
    """
    root = landing / folder
    if not root.is_dir():
        return SourceScan([], [])
    files: list[Path] = []
    ignored: list[IgnoredFile] = []
    for path in sorted(root.rglob("*")):
        source_file = path.relative_to(landing).as_posix()
        try:
            st = path.lstat()
        except OSError:
            continue  # vanished while listing
        if stat.S_ISDIR(st.st_mode):
            continue
        reason: str | None
        if stat.S_ISLNK(st.st_mode):
            try:
                target = path.stat()
            except OSError:
                target = None  # dangling or a loop: the reader says which
            if target is not None and stat.S_ISDIR(target.st_mode):
                ignored.append(IgnoredFile(source_file, "symlink to a directory (not followed)", st.st_size))
                continue
        elif not stat.S_ISREG(st.st_mode):
            ignored.append(IgnoredFile(source_file, "not a regular file", 0))
            continue
        name = path.name
        if name.lower().startswith("readme"):
            reason = "README file"
        elif name.startswith("."):
            reason = "hidden file (editor or partial transfer)"
        else:
            reason = accept(strip_compression(name))
        if reason is None:
            files.append(path)
        else:
            ignored.append(IgnoredFile(source_file, reason, st.st_size))
    return SourceScan(files, ignored)


def _open_fault(path: Path, exc: OSError) -> str:
    """The one-line reason a file could not be opened."""
    if isinstance(exc, PermissionError) or exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ELOOP:
        return "symlink loop: cannot be followed"
    if isinstance(exc, FileNotFoundError) and path.is_symlink():
        return f"dangling symlink to {os.readlink(path)}: target does not exist"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    return f"cannot read the file: {exc.strerror or exc}"


def _codec(head: bytes) -> str | None:
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head[:3] == b"BZh":
        return "bzip2"
    if head[:6] == b"\xfd7zXZ\x00":
        return "xz"
    return None


def encoding_fault(head: bytes) -> str | None:
    """"UTF-16 encoded: convert to UTF-8" (or UTF-32, or a systemd journal format that is not text
    lines) when the first bytes say so, else None.

    By byte-order mark, or without one by NUL bytes in every other position (ASCII text saved as
    UTF-16, as Windows tools do): read as UTF-8 such a file gives misleading per-line errors.
    """
    # systemd's own formats, copied from /var/log/journal or exported as other than lines: refused
    # whole with what to run, rather than read as text (dozens of per-line rejects, "loaded").
    if head.startswith(b"LPKSHHRH"):
        return "a binary systemd journal file: export it as text (journalctl -o short-iso, or -o json)"
    if head.startswith(b"__CURSOR="):
        return "journalctl -o export format: export with -o json (one entry per line) or -o short-iso"
    if head.lstrip().split(b"\n", 1)[0].strip() == b"{" and b'"__CURSOR"' in head[:256]:
        return "journalctl -o json-pretty format: export with -o json (one entry per line)"
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32 encoded: convert to UTF-8"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 encoded: convert to UTF-8"
    if _utf16_pattern(head[:4096]):
        return "UTF-16 encoded: convert to UTF-8"
    return None


def _utf16_pattern(sample: bytes) -> bool:
    """True when ``sample`` reads as BOM-less UTF-16 text: ASCII characters stored as 2-byte units
    put a NUL in every other position, so almost every 2-byte unit that is not all NUL holds exactly
    one NUL. A run of NULs (a crash in a preallocated log file) is units that are all NUL and says
    nothing; the text around it has no NUL units, so such a file is read as text (the NULs are
    dropped or the line rejected by its reader), never refused as UTF-16."""
    if b"\x00" not in sample:  # every text file: no unit holds a NUL (a byte loop cost 0.6 ms a file)
        return False
    even, odd = sample[0::2], sample[1::2]
    units = min(len(even), len(odd))
    one_nul = sum(1 for i in range(units) if (even[i] == 0) != (odd[i] == 0))
    not_nul = sum(1 for i in range(units) if even[i] or odd[i])
    return not_nul >= 4 and one_nul >= 0.9 * not_nul


def describe_fault(exc: BaseException, codec: str | None, complete_lines: int) -> str:
    """One line for a read or decompression error after ``complete_lines`` good lines."""
    after = f"after {complete_lines:,} complete line{'s' if complete_lines != 1 else ''}"
    if isinstance(exc, EOFError):
        return f"truncated {codec or 'compressed'} stream {after}"
    if isinstance(exc, (zlib.error, gzip.BadGzipFile, lzma.LZMAError)) or (codec and isinstance(exc, OSError)
                                                                          and not exc.errno):
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"corrupt {codec or 'compressed'} stream ({detail}) {after}"
    if isinstance(exc, OSError):
        return f"read error ({exc.strerror or exc}) {after}"
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} {after}"


def _decompressed_blocks(raw: bytes, codec: str) -> Iterator[bytes]:
    """The decompressed content of ``raw`` in blocks, over concatenated members/streams; raises
    ``EOFError`` on a truncated stream and the codec's error on corrupt data."""
    data = raw
    while data:
        dec: Any
        if codec == "gzip":
            dec = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif codec == "bzip2":
            dec = bz2.BZ2Decompressor()
        else:
            dec = lzma.LZMADecompressor()
        for start in range(0, len(data), _READ_BLOCK):
            block = dec.decompress(data[start:start + _READ_BLOCK])
            if block:
                yield block
            if dec.eof:
                break
        if codec == "gzip":
            rest = dec.flush()
            if rest:
                yield rest
        if not dec.eof:
            raise EOFError("compressed stream ended before its end-of-stream marker")
        data = dec.unused_data
        # Trailing zero padding after the last member (tape blocks, some rotators) is not a member.
        if not data.strip(b"\x00"):
            break


def file_identity(path: Path) -> tuple[str, int]:
    """``(sha256, size)`` of a file's bytes, streamed; ``('', 0)`` when it cannot be read (its
    reader then says why, and the empty hash never matches, so a fixed file is read again)."""
    digest = hashlib.sha256()
    size = 0
    try:
        with Path(path).open("rb") as fh:
            while block := fh.read(_READ_BLOCK):
                digest.update(block)
                size += len(block)
    except OSError:
        return "", 0
    return digest.hexdigest(), size


def read_landing_file(path: Path) -> LandingRead:
    """Read, hash and decompress (gzip/bzip2/xz by magic bytes, multi-member) one landing file.

    Never raises for a bad file: an unreadable file gives ``data=b''`` and its fault; a truncated or
    corrupt compressed stream gives the complete lines before the fault and the fault; a UTF-16
    file gives no data and "UTF-16 encoded: convert to UTF-8". ``content_sha256`` hashes the
    decompressed content of a file read whole (a plain file: its bytes), so that a rotated copy
    compressed later is recognised as the same content.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        return LandingRead(b"", "", 0, _open_fault(Path(path), exc))
    sha, size = hashlib.sha256(raw).hexdigest(), len(raw)
    codec = _codec(raw)
    if codec is None:
        fault = encoding_fault(raw)
        return LandingRead(b"" if fault else raw, sha, size, fault, sha)
    blocks: list[bytes] = []
    try:
        for block in _decompressed_blocks(raw, codec):
            blocks.append(block)
    except (EOFError, OSError, zlib.error, lzma.LZMAError, ValueError) as exc:
        partial = b"".join(blocks)
        complete = partial[: partial.rfind(b"\n") + 1]
        fault = encoding_fault(complete)
        # A part of the content is no content to compare: the hash of the bytes on disk.
        return LandingRead(b"" if fault else complete, sha, size,
                           fault or describe_fault(exc, codec, complete.count(b"\n")), sha)
    data = b"".join(blocks)
    fault = encoding_fault(data)
    return LandingRead(b"" if fault else data, sha, size, fault,
                       sha if fault else hashlib.sha256(data).hexdigest())


@contextmanager
def open_landing_file(path: Path) -> Iterator[tuple[BinaryIO, str | None]]:
    """``(stream, codec)`` of a landing file for streaming, decompressed by magic bytes (for large
    line files that should not sit in memory whole); codec None for plain files. Raises
    :class:`LandingFileFault` when it cannot be opened or is UTF-16; read and decompression errors
    surface while reading (see :func:`describe_fault`)."""
    path = Path(path)
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise LandingFileFault(_open_fault(path, exc)) from exc
    with fh:
        try:
            head = fh.read(4096)
        except OSError as exc:
            raise LandingFileFault(_open_fault(path, exc)) from exc
        fh.seek(0)
        codec = _codec(head)
        if codec is None and (fault := encoding_fault(head)):
            raise LandingFileFault(fault)
        if codec == "gzip":
            with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
                yield gz, codec  # type: ignore[misc]
        elif codec == "bzip2":
            with bz2.BZ2File(fh, "rb") as bzf:
                yield bzf, codec  # type: ignore[misc]
        elif codec == "xz":
            with lzma.LZMAFile(fh, "rb") as xzf:
                yield xzf, codec  # type: ignore[misc]
        else:
            yield fh, None
