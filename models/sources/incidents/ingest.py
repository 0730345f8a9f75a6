"""The operator's ``landing/incidents.csv`` in the ingestion ledger, like every landing file.

The file is small and its labels are wanted whole on every run, so it is parsed every run (no lake,
no quick check), but it is *recorded* like the other sources' files: one ``raw.ingested_files``
row (SHA-256 and size of the bytes on disk, rows read = incidents loaded + rows rejected, status
``loaded`` or ``refused`` with a one-line reason) and its bad rows in ``raw.rejects``. The row and
the rejects are rewritten only when the file's bytes or its status change, so an unchanged file
keeps the ``ingested_at`` and ``rejected_at`` of the run that read it first, as other files do.

Unlike a lake source's file, a deleted incidents.csv takes its labels with it: the file is the
operator's current word, not an archive of records. Its ledger row stays, with ``gone_since``
set, no rows loaded, and the reason in ``error``; its rejects go.

Split in two so the caller can write inside its own transaction: :func:`read_incidents` reads the
ledger and the file (no writes), :func:`publish_incidents` writes what it found.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.failures.hw_incidents import OPERATOR_SCHEMA
from gpusre.models.ingest.landing_files import read_landing_file
from gpusre.models.ingest.ledger import FileIngest, ensure_gone_column, log_parse_crash, record_files
from gpusre.models.sources.incidents.parse import INCIDENTS_FILE, parse_operator_incidents

__all__ = ["GONE_REASON", "INCIDENTS_KIND", "IncidentsRead", "publish_incidents", "read_incidents"]

INCIDENTS_KIND = "incidents"
#: The ledger's ``error`` of a deleted incidents.csv.
GONE_REASON = "gone from the landing directory: its incident labels no longer apply"

_REJECT_SCHEMA = {"source_file": pl.String, "line_no": pl.Int64, "raw": pl.String, "error": pl.String}


@dataclass(frozen=True)
class IncidentsRead:
    """What this run found of incidents.csv.

    ``result.status``: ``loaded`` / ``refused`` (read in this run, new or changed), ``unchanged``
    (same bytes and outcome as the ledger holds), ``gone`` (deleted since the last run), or
    ``absent`` (no file, and none to forget)."""

    result: FileIngest
    incidents: pl.DataFrame | None  # OPERATOR_SCHEMA; None without a file (no labels at all)
    rejects: pl.DataFrame  # as raw.rejects (source_file, line_no, raw, error); line 0 = refused whole
    sha256: str = ""
    size: int = 0

    @property
    def changed(self) -> bool:
        """True when the ledger and raw.rejects must be rewritten."""
        return self.result.status in ("loaded", "refused", "gone")


def _ledger_row(con: duckdb.DuckDBPyConnection, source_file: str) -> tuple[str, str, object] | None:
    """``(sha256, status, gone_since)`` the ledger holds for the file, None when it holds none."""
    ensure_gone_column(con)
    rows = con.execute("SELECT sha256, status, gone_since FROM raw.ingested_files WHERE source_file = ?",
                       [source_file]).fetchall()
    return rows[0] if rows else None


def read_incidents(con: duckdb.DuckDBPyConnection, landing: Path, source_file: str = INCIDENTS_FILE, *,
                   cluster_nodes: Sequence[str] | None = None) -> IncidentsRead:
    """Read ``landing/<source_file>`` and compare it with the ledger; never raises for a bad file
    (an unreadable or unparsable file is ``refused`` with a one-line reason, its traceback in the
    run's log). ``cluster_nodes``: cluster.yaml's node names, when it lists them: a row naming
    another node is rejected."""
    path = landing / source_file
    no_rejects = pl.DataFrame(schema=_REJECT_SCHEMA)
    prior = _ledger_row(con, source_file)
    if not os.path.lexists(path):
        if prior is not None and prior[2] is None:
            return IncidentsRead(FileIngest(source_file, "gone", error=GONE_REASON), None, no_rejects)
        return IncidentsRead(FileIngest(source_file, "absent"), None, no_rejects)
    read = read_landing_file(path)
    try:
        incidents, rejects = parse_operator_incidents(read, source_file, cluster_nodes=cluster_nodes)
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the night
        incidents = pl.DataFrame(schema=OPERATOR_SCHEMA)
        rejects = pl.DataFrame({"source_file": [source_file], "line_no": [0], "raw": [None],
                                "error": [log_parse_crash(source_file, exc)]}, schema=_REJECT_SCHEMA)
    whole = rejects.filter(pl.col("line_no") == 0)
    # A refused file's line-0 reject is no row of it: rows_rejected counts the bad rows only, as
    # for every other source.
    n_bad = rejects.height - whole.height
    if whole.height:
        result = FileIngest(source_file, "refused", incidents.height + n_bad, incidents.height, n_bad,
                            whole.get_column("error")[0])
    else:
        result = FileIngest(source_file, "loaded", incidents.height + n_bad, incidents.height, n_bad)
    if prior is not None and prior[2] is None and read.sha256 and prior[:2] == (read.sha256, result.status):
        result = FileIngest(source_file, "unchanged", result.rows_read, result.rows_loaded, result.rows_rejected,
                            result.error)
    return IncidentsRead(result, incidents, rejects, read.sha256, read.size)


def publish_incidents(con: duckdb.DuckDBPyConnection, read: IncidentsRead) -> None:
    """Write the ledger row and the rejects of :func:`read_incidents`'s outcome (inside the
    caller's transaction); nothing when the file is unchanged or there never was one."""
    if not read.changed:
        return
    name = read.result.source_file
    con.execute("DELETE FROM raw.rejects WHERE source_file = ?", [name])
    if read.result.status == "gone":
        ensure_gone_column(con)
        con.execute("""UPDATE raw.ingested_files SET gone_since = now(), rows_read = 0, rows_loaded = 0,
                       rows_rejected = 0, error = ? WHERE source_file = ?""", [GONE_REASON, name])
        return
    record_files(con, INCIDENTS_KIND, [(read.result, read.sha256, read.size)])
    if read.rejects.height:
        con.register("_incident_rejects", read.rejects.to_arrow())
        try:
            con.execute("INSERT INTO raw.rejects BY NAME SELECT source_file, ? AS source_kind, line_no, raw, error, "
                        "now() AS rejected_at FROM _incident_rejects", [INCIDENTS_KIND])
        finally:
            con.unregister("_incident_rejects")
