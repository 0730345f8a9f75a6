"""The ingestion ledger ``raw.ingested_files``: which landing file was loaded, from which bytes,
with what counts. It is what makes ingestion incremental (skip a file whose size and modification
time, else whose SHA-256, is unchanged) and auditable (rows read = loaded + rejected, per file).

A source whose files are rotated (node logs: ``messages`` -> ``messages.1`` -> ``messages.2.gz``,
or ``messages-20261111`` -> ``messages-20261111.gz``) records the SHA-256 of the *decompressed*
content, and :func:`same_content` finds a new file whose content another file already loaded:
it is ``ignored`` ("same content as <file>") rather than loaded twice.

A file loaded once and later deleted from the landing folder keeps its rows (the lake is the
archive), but the ledger says so: ``gone_since`` is when a run first found it missing (NULL while
it is there; a file that comes back is present again), set by :func:`mark_gone` for every source
whose ingest stats its landing files."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from gpusre.models.ingest.landing_files import IgnoredFile

__all__ = ["FileIngest", "LandingStats", "SAME_CONTENT", "ensure_gone_column", "file_sha256", "gone_files",
           "ignored_results", "known_files", "loaded_contents", "loaded_rows", "log_parse_crash", "mark_gone",
           "record_files", "record_mtimes", "same_content", "same_content_rechecks", "stat_landing",
           "unchanged_by_stat"]

_log = logging.getLogger("gpusre.ingest")


@dataclass(frozen=True)
class FileIngest:
    """What happened to one landing file in this run."""

    source_file: str
    status: str  # 'loaded' | 'refused' | 'ignored' | 'unchanged'
    rows_read: int = 0
    rows_loaded: int = 0
    rows_rejected: int = 0
    error: str | None = None
    #: Node logs: loaded lines of the repeated DST hour nothing in the file placed (read as the earlier
    #: instant, perhaps 1 h early); None for sources that resolve every such time (sacct, node states).
    rows_dst_guessed: int | None = None


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file, streamed so a large dump is not held in memory twice."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def known_files(con: duckdb.DuckDBPyConnection, source_kind: str) -> dict[str, str]:
    """``{source_file: sha256}`` of every file of this kind ingested so far."""
    rows = con.execute(
        "SELECT source_file, sha256 FROM raw.ingested_files WHERE source_kind = ?", [source_kind]
    ).fetchall()
    return dict(rows)


#: A file modified this close to the moment its stat was taken is not trusted by its mtime (the
#: file system may not tick between two writes; git's "racy" files): it is hashed again next time.
RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class LandingStats:
    """``(size, mtime_ns)`` of landing files, taken before any of them is read, and when."""

    taken_ns: int
    files: dict[str, tuple[int, int]] = field(default_factory=dict)  # source_file -> (size, mtime_ns)
    root: Path | None = None  # the landing directory the names are relative to (None: unknown)


def stat_landing(landing: Path, paths: Sequence[Path]) -> LandingStats:
    """Stat every landing file (a file that cannot be stat'ed is left out: its reader says why)."""
    taken = time.time_ns()
    files: dict[str, tuple[int, int]] = {}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        files[path.relative_to(landing).as_posix()] = (st.st_size, st.st_mtime_ns)
    return LandingStats(taken, files, landing)


def unchanged_by_stat(con: duckdb.DuckDBPyConnection, source_kind: str, stats: LandingStats) -> frozenset[str]:
    """The files whose size and modification time equal what the ledger recorded when they were
    read: they are skipped unread, as rsync's quick check does (reading and hashing a year of
    landing files every night cost more than the night's new files). Touch a file to have it read.

    Every source's ingest stats its landing files here first, so this is also where the ledger
    learns which of the source's files are gone from the landing folder (:func:`mark_gone`)."""
    mark_gone(con, source_kind, stats)
    rows = con.execute("SELECT source_file, size_bytes, mtime_ns FROM raw.ingested_files "
                       "WHERE source_kind = ? AND mtime_ns IS NOT NULL", [source_kind]).fetchall()
    return frozenset(name for name, size, mtime in rows if stats.files.get(name) == (size, mtime))


#: Added to a ledger that predates it (sql/ddl/010_raw.sql declares it for new warehouses).
_GONE_COLUMN_DDL = "ALTER TABLE raw.ingested_files ADD COLUMN IF NOT EXISTS gone_since TIMESTAMPTZ"
_DST_COLUMN_DDL = "ALTER TABLE raw.ingested_files ADD COLUMN IF NOT EXISTS rows_dst_guessed BIGINT"


def ensure_gone_column(con: duckdb.DuckDBPyConnection) -> None:
    """Give ``raw.ingested_files`` its ``gone_since`` and ``rows_dst_guessed`` columns when it lacks
    them (idempotent)."""
    con.execute(_GONE_COLUMN_DDL)
    con.execute(_DST_COLUMN_DDL)


def mark_gone(con: duckdb.DuckDBPyConnection, source_kind: str, stats: LandingStats) -> list[str]:
    """Set ``gone_since`` of the ledger files of ``source_kind`` that are no longer in the landing
    folder (to now, once: the first run that missed them) and clear it for those that are there
    again; returns the files found gone in this run.

    Present means stat'ed in ``stats`` or, for a file that could not be stat'ed (a dangling
    symlink, an ignored FIFO), still listed in the folder. Rows are never dropped: the lake is the
    archive, and a deletion must not silently rewrite history. Without ``stats.root`` nothing is
    marked (the names cannot be checked)."""
    if stats.root is None:
        return []
    ensure_gone_column(con)
    rows = con.execute("SELECT source_file, gone_since IS NOT NULL FROM raw.ingested_files WHERE source_kind = ?",
                       [source_kind]).fetchall()
    root = stats.root
    present = {name: name in stats.files or os.path.lexists(root / name) for name, _ in rows}
    newly_gone = sorted(name for name, was_gone in rows if not was_gone and not present[name])
    back = [name for name, was_gone in rows if was_gone and present[name]]
    if newly_gone:
        con.execute("UPDATE raw.ingested_files SET gone_since = now() WHERE source_file IN (SELECT unnest(?))",
                    [newly_gone])
    if back:
        con.execute("UPDATE raw.ingested_files SET gone_since = NULL WHERE source_file IN (SELECT unnest(?))", [back])
    return newly_gone


def gone_files(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The files that loaded rows and are gone from the landing folder, the most recently gone
    first (then by name). Their rows stay (the lake is the archive). The operator's incidents.csv
    is not among them: its labels go with the file (see gpusre.models.sources.incidents.ingest)."""
    ensure_gone_column(con)
    rows = con.execute("""SELECT source_file FROM raw.ingested_files
                          WHERE gone_since IS NOT NULL AND rows_loaded > 0 AND source_kind <> 'incidents'
                          ORDER BY gone_since DESC, source_file""").fetchall()
    return [name for (name,) in rows]


def record_mtimes(con: duckdb.DuckDBPyConnection, stats: LandingStats, names: Iterable[str]) -> None:
    """Set the ledger's ``mtime_ns`` of ``names`` (files read, or hashed and found unchanged, in this
    run, after :func:`record_files`) from ``stats``, taken before they were read. A file modified
    within :data:`RACY_NS` of the stat keeps NULL, and so does a file not stat'ed or unreadable."""
    rows = [(name, stats.files[name][1]) for name in names
            if name in stats.files and stats.files[name][1] < stats.taken_ns - RACY_NS]
    if not rows:
        return
    table = pa.table({"source_file": pa.array([n for n, _ in rows], pa.string()),
                      "mtime_ns": pa.array([m for _, m in rows], pa.int64())})
    con.register("_ledger_mtimes", table)
    try:
        con.execute("""UPDATE raw.ingested_files AS f SET mtime_ns = m.mtime_ns FROM _ledger_mtimes AS m
                       WHERE f.source_file = m.source_file AND f.sha256 <> ''""")
    finally:
        con.unregister("_ledger_mtimes")


def loaded_rows(con: duckdb.DuckDBPyConnection, source_kind: str) -> int:
    """Rows loaded from every file of this kind, by the ledger (what the raw view holds: the sources'
    rows-reconcile checks hold it to that; counting the view opens every lake file)."""
    return con.execute("SELECT coalesce(sum(rows_loaded), 0) FROM raw.ingested_files WHERE source_kind = ?",
                       [source_kind]).fetchall()[0][0]


def record_files(con: duckdb.DuckDBPyConnection, source_kind: str, rows: list[tuple[FileIngest, str, int]]) -> None:
    """Replace the ledger rows of the files ``(result, sha256, size)`` in two statements (inside the
    caller's transaction): one statement per file cost ~2 ms each, which dominated the publish of
    thousands of per-node log files or one-payload alert files."""
    if not rows:
        return
    ledger = pa.table({
        "source_file": pa.array([r.source_file for r, _, _ in rows], pa.string()),
        "sha256": pa.array([sha for _, sha, _ in rows], pa.string()),
        "size_bytes": pa.array([size for _, _, size in rows], pa.int64()),
        "rows_read": pa.array([r.rows_read for r, _, _ in rows], pa.int64()),
        "rows_loaded": pa.array([r.rows_loaded for r, _, _ in rows], pa.int64()),
        "rows_rejected": pa.array([r.rows_rejected for r, _, _ in rows], pa.int64()),
        "status": pa.array([r.status for r, _, _ in rows], pa.string()),
        "error": pa.array([r.error for r, _, _ in rows], pa.string()),
        "rows_dst_guessed": pa.array([r.rows_dst_guessed for r, _, _ in rows], pa.int64()),
    })
    con.register("_ledger_rows", ledger)
    try:
        con.execute("DELETE FROM raw.ingested_files WHERE source_file IN (SELECT source_file FROM _ledger_rows)")
        con.execute(
            """INSERT INTO raw.ingested_files
               (source_file, source_kind, sha256, size_bytes, rows_read, rows_loaded, rows_rejected,
                status, error, ingested_at, rows_dst_guessed)
               SELECT source_file, ?, sha256, size_bytes, rows_read, rows_loaded, rows_rejected, status, error, now(),
                      rows_dst_guessed
               FROM _ledger_rows""", [source_kind])
    finally:
        con.unregister("_ledger_rows")


def ignored_results(ignored: list[IgnoredFile]) -> list[tuple[FileIngest, str, int]]:
    """Ledger rows ``(result, sha256, size)`` for files a source's reader does not take: status
    ``ignored`` and the reason, so nothing under a source folder is skipped in silence."""
    return [(FileIngest(f.source_file, "ignored", error=f.reason), "", f.size) for f in ignored]


#: The ``error`` of a file ``ignored`` because another file already loaded its content.
SAME_CONTENT = "same content as {}"


def loaded_contents(con: duckdb.DuckDBPyConnection, source_kind: str,
                    exclude: Iterable[str] = ()) -> list[tuple[str, str]]:
    """``(source_file, sha256)`` of the files of this kind the ledger holds as ``loaded``, by name,
    but those in ``exclude`` (read again in this run: their content may change)."""
    return con.execute("SELECT source_file, sha256 FROM raw.ingested_files WHERE source_kind = ? "
                       "AND status = 'loaded' AND sha256 <> '' AND source_file NOT IN (SELECT unnest(?)) "
                       "ORDER BY source_file", [source_kind, list(exclude)]).fetchall()


def same_content(kept: Iterable[tuple[str, str]], read: Sequence[tuple[str, str, str]],
                 alike: Callable[[str], Hashable] = lambda _name: None) -> dict[str, str]:
    """Of the files ``read`` in this run (``(source_file, sha256, status)`` in landing order, sha256
    of the decompressed content), the loaded ones whose rows another file holds after this run:
    ``{source_file: that file}``.

    ``kept`` are ``(source_file, sha256)`` of the loaded files whose rows this run keeps: ledger rows
    of files not read again (unchanged, or gone from the landing folder: their rows stay). Of files
    read now with one content, the first in landing order loads. A file read again with new content
    no longer holds its old one: after ``messages`` -> ``messages.1`` and a new ``messages``, the
    old content loads once, from ``messages.1``. ``alike(name)`` is what else besides the content
    makes a file's rows (the node a per-node file's name gives its lines): two files are copies
    only when it is equal too.

    >>> same_content([("central/messages-20261111", "aa")],
    ...              [("central/messages-20261111.gz", "aa", "loaded"), ("central/messages", "bb", "loaded"),
    ...               ("central/messages.1", "bb", "loaded")])
    {'central/messages-20261111.gz': 'central/messages-20261111', 'central/messages.1': 'central/messages'}
    """
    holders: dict[tuple[str, Hashable], str] = {}
    for source_file, sha in kept:
        holders.setdefault((sha, alike(source_file)), source_file)
    twins: dict[str, str] = {}
    for source_file, sha, status in read:
        if status != "loaded" or not sha:
            continue
        holder = holders.setdefault((sha, alike(source_file)), source_file)
        if holder != source_file:
            twins[source_file] = holder
    return twins


def same_content_rechecks(con: duckdb.DuckDBPyConnection, source_kind: str, reread: Iterable[str]) -> dict[str, str]:
    """``{ignored file: its loaded twin}`` for the files ignored as the same content as a file that
    is read again in this run (``reread``): if that file changed, the ignored one holds the only
    copy of the content now (logrotate's ``copytruncate`` copies ``messages`` to ``messages.1``,
    then empties ``messages``), so it must be read again too."""
    rows = con.execute(
        """SELECT i.source_file, min(l.source_file) FROM raw.ingested_files AS i
           JOIN raw.ingested_files AS l ON l.sha256 = i.sha256 AND l.source_kind = i.source_kind
                AND l.status = 'loaded' AND l.source_file <> i.source_file
           WHERE i.source_kind = ? AND i.status = 'ignored' AND i.sha256 <> ''
             AND l.source_file IN (SELECT unnest(?)) GROUP BY ALL""", [source_kind, list(reread)]).fetchall()
    return dict(rows)


def log_parse_crash(source_file: str, exc: BaseException) -> str:
    """Log the traceback of a parser that failed on a file (the run's log file gets it) and return
    the one-line reason for the file's line-0 reject."""
    _log.debug("parser failed on %s", source_file, exc_info=exc)
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"cannot parse the file: {type(exc).__name__}: {first}".rstrip(": ")
