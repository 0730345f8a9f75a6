"""Write a small hand-made landing (file path → text) and run the real pipeline over it."""

from __future__ import annotations

from pathlib import Path

import duckdb

from gpusre.pipelines.runner import run_pipeline


def run_hand_landing(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (paths relative to the landing, e.g. ``sacct/sacct_2026-12-01.psv``) under
    ``root/landing``, run every asset into ``root/wh/gpusre.duckdb`` (reports in ``root/reports``) and
    return the warehouse path."""
    landing = root / "landing"
    for name, text in files.items():
        (landing / name).parent.mkdir(parents=True, exist_ok=True)
        (landing / name).write_text(text)
    wh = root / "wh" / "gpusre.duckdb"
    run_pipeline(landing, wh, root / "reports")
    return wh


def query_rows(warehouse: Path, sql: str) -> list[tuple]:
    """``sql``'s rows from ``warehouse``, opened read-only and closed again."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.sql(sql).fetchall()
    finally:
        con.close()
