"""Build a warehouse's sacct layer from hand-written dumps the ways a site's nights can deliver them.

Shared by the tests of job figures that depend on how dumps arrive (one a night, all at once, one
re-read): each mode must give the same core.jobs / core.job_instances.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg

from gpusre.assets.core_jobs import core_jobs
from gpusre.assets.ingest_sacct import raw_sacct, sacct_rows_reconcile
from gpusre.pipelines.resources import default_resources

#: one run a night (merges over the old picks), one run over all dumps, all then the first re-read
MODES = ("nightly", "once", "rebuilt")


def materialize_sacct(landing: Path, warehouse: Path) -> None:
    """Materialize the sacct raw layer and core.jobs (real Dagster run) over ``landing``."""
    result = dg.materialize([raw_sacct, core_jobs, sacct_rows_reconcile],
                            resources=default_resources(str(warehouse), str(landing), str(warehouse.parent / "rep")))
    assert result.success


def build_sacct_nights(root: Path, mode: str, dumps: dict[str, str], cluster_yaml: str,
                       run: Callable[[Path, Path], None] = materialize_sacct) -> Path:
    """A warehouse under ``root/mode`` over ``dumps`` (file name -> text, in night order): one ``run`` a
    night (``nightly``), one over all (``once``), or all then the first dump re-read with a comment line
    added — the same records in a new file version (``rebuilt``: its jobs rebuilt from every record).
    Returns the warehouse path."""
    landing, wh = root / mode / "landing", root / mode / "w.duckdb"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text(cluster_yaml)
    for name, text in dumps.items():
        (landing / "sacct" / name).write_text(text)
        if mode == "nightly":
            run(landing, wh)
    if mode != "nightly":
        run(landing, wh)
    if mode == "rebuilt":
        first = landing / "sacct" / next(iter(dumps))
        first.write_text(first.read_text() + "# re-cut\n")
        run(landing, wh)
    return wh
