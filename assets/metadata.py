"""Materialization metadata shared by the assets: Markdown previews, and what a file ingestion did."""


import dagster as dg
import polars as pl


def markdown_preview(df: pl.DataFrame, limit: int = 10) -> dg.MetadataValue:
    """The first rows of ``df`` as a Markdown table (Dagster UI renders it)."""
    if df.height == 0:
        return dg.MetadataValue.md("_(no rows)_")
    with pl.Config(
        tbl_formatting="MARKDOWN",
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
        tbl_rows=limit,
        tbl_cols=-1,
        fmt_str_lengths=80,
    ):
        return dg.MetadataValue.md(str(df.head(limit)))


def latest_rejects(con, source_kind: str) -> pl.DataFrame:  # noqa: ANN001 - DuckDB connection
    """The 10 latest ``raw.rejects`` rows of one landing source (file, line, reason)."""
    return con.sql("SELECT source_file, line_no, error FROM raw.rejects WHERE source_kind = ? "
                   "ORDER BY rejected_at DESC, source_file, line_no LIMIT 10", params=[source_kind]).pl()


def file_ingest_metadata(context: dg.AssetExecutionContext, results: list, total_rows: int,
                         rejects: pl.DataFrame) -> dict[str, object]:
    """Metadata of an incremental file ingestion (``FileIngest`` results); logs every refused file."""
    changed = [r for r in results if r.status in ("loaded", "refused")]
    refused = [r for r in changed if r.status == "refused"]
    ignored = [r for r in results if r.status == "ignored"]
    for r in refused:
        context.log.error(f"{r.source_file}: refused: {r.error}")
    return {
        "dagster/row_count": total_rows,
        "files_seen": len(results),
        "files_changed": len(changed),
        "files_refused": len(refused),
        "files_ignored": len(ignored),
        "ignored_files": dg.MetadataValue.json([{"file": r.source_file, "why": r.error} for r in ignored]),
        "rows_read": sum(r.rows_read for r in changed),
        "rows_loaded": sum(r.rows_loaded for r in changed),
        "rows_rejected": sum(r.rows_rejected for r in changed),
        "refused_files": dg.MetadataValue.json([{"file": r.source_file, "error": r.error} for r in refused]),
        "latest_rejects": markdown_preview(rejects),
    }
