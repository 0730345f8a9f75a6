"""Rows reconcile per landing file: what the ledger says was read, loaded and rejected against what
the raw tables and ``raw.rejects`` hold. The asset check of every record source runs it."""

from __future__ import annotations

import duckdb

from gpusre.models.ingest.lake import ledger_file_rows_sql
from gpusre.models.sources.sacct.orphan_steps import is_orphan_step_reject_sql

__all__ = ["mismatched_files"]


def mismatched_files(con: duckdb.DuckDBPyConnection, source_kind: str, table: str) -> list[tuple]:
    """Ledger rows of ``source_kind`` where rows read != loaded + rejected, loaded != the rows
    ``raw.<table>`` shows for the file, or rejected != its ``raw.rejects`` rows (line 0, a file's own
    refusal, excluded; so are the rejects of sacct steps whose job has no allocation record: those
    records are loaded, the reject is a finding across dumps made after core.jobs):
    ``(source_file, rows_read, rows_loaded, rows_rejected, in_raw, in_rejects)``."""
    return con.execute(
        f"""WITH loaded AS ({ledger_file_rows_sql(con, table, source_kind)}),
                 rejected AS (SELECT source_file, count(*) AS n FROM raw.rejects
                              WHERE source_kind = ? AND line_no > 0 AND NOT {is_orphan_step_reject_sql()}
                              GROUP BY ALL)
            SELECT f.source_file, f.rows_read, f.rows_loaded, f.rows_rejected,
                   coalesce(l.rows, 0) AS in_raw, coalesce(r.n, 0) AS in_rejects
            FROM raw.ingested_files AS f
            LEFT JOIN loaded AS l USING (source_file)
            LEFT JOIN rejected AS r USING (source_file)
            WHERE f.source_kind = ?
              AND (f.rows_read <> f.rows_loaded + f.rows_rejected
                   OR f.rows_loaded <> coalesce(l.rows, 0) OR f.rows_rejected <> coalesce(r.n, 0))
            ORDER BY f.source_file""", [source_kind, source_kind]).fetchall()
