"""This cluster's job mix next to published GPU-cluster traces (``marts.cluster_comparison``).

An SRE asked "is 52 % of GPU time in cancelled jobs normal?" needs reference points. AcmeTrace's
``cluster_summary.csv`` (InternLM/AcmeTrace, CC-BY-4.0) gives the same figures for five published
traces: Seren and Kalos (Shanghai AI Laboratory, 2023, NSDI '24), Philly (Microsoft, 2017, ATC '19),
Helios (SenseTime, 2020, SC '21) and PAI (Alibaba, 2020, NSDI '22; no final-state shares). The
file is shipped unchanged as ``catalog/published_clusters.csv``, with who published each trace in
``catalog/published_cluster_sources.csv``; times in it are seconds, shares fractions.
"""

from __future__ import annotations

from importlib.resources import files

import duckdb
import polars as pl

from gpusre.models.marts_runner import run_mart_sql

__all__ = ["PUBLISHED_COLUMNS", "published_clusters", "write_cluster_comparison"]

#: AcmeTrace column -> marts.cluster_comparison column (GPU jobs only; the CPU-job columns are not used).
PUBLISHED_COLUMNS: dict[str, str] = {
    "gpu_job_num": "gpu_jobs",
    "avg_run_time_gpu": "avg_run_time_s",
    "med_run_time_gpu": "med_run_time_s",
    "max_run_time_gpu": "max_run_time_s",
    "avg_que_time_gpu": "avg_queue_s",
    "med_que_time_gpu": "med_queue_s",
    "avg_gpu_num": "avg_gpus",
    "med_gpu_num": "med_gpus",
    "max_gpu": "max_gpus",
    "complete_rate_gpu": "completed_share_jobs",
    "cancel_rate_gpu": "cancelled_share_jobs",
    "fail_rate_gpu": "failed_share_jobs",
    "complete_rate_gpu_time": "completed_share_gpu_time",
    "cancel_rate_gpu_time": "cancelled_share_gpu_time",
    "fail_rate_gpu_time": "failed_share_gpu_time",
}


def _catalog_csv(name: str) -> pl.DataFrame:
    with files("gpusre.models.catalog").joinpath(name).open("rb") as fh:
        return pl.read_csv(fh.read(), infer_schema=False)


def published_clusters() -> pl.DataFrame:
    """One row per published cluster in the mart's columns (``cluster``, ``organisation``,
    ``trace_period``, ``reference``, then :data:`PUBLISHED_COLUMNS`' targets); missing figures null."""
    figures = _catalog_csv("published_clusters.csv")
    sources = _catalog_csv("published_cluster_sources.csv")
    numeric = [pl.col(src).cast(pl.Float64).alias(dst) for src, dst in PUBLISHED_COLUMNS.items()]
    return (
        figures.select(pl.col("id").alias("cluster"), *numeric)
        .with_columns(pl.col("gpu_jobs").cast(pl.Int64))
        .join(sources.rename({"id": "cluster"}), on="cluster", how="left", maintain_order="left")
        .select("cluster", "organisation", "trace_period", "reference", *PUBLISHED_COLUMNS.values())
    )


def write_cluster_comparison(con: duckdb.DuckDBPyConnection, cluster: str) -> int:
    """Recompute and replace ``marts.cluster_comparison`` (``cluster``: this cluster's name, from
    cluster.yaml); return its number of rows. Call inside the caller's transaction."""
    con.register("_published_clusters", published_clusters().to_arrow())
    try:
        run_mart_sql(con, "cluster_comparison", {"cluster": cluster})
    finally:
        con.unregister("_published_clusters")
    return con.sql("SELECT count(*) FROM marts.cluster_comparison").fetchall()[0][0]
