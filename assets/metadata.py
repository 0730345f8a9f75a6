"""Materialization metadata shared by the assets: a Markdown preview of a small table."""


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
