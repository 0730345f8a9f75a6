"""``marts.node_hardware_loss``: GPU-hours each node lost to hardware per month, by both definitions side by side.

"Which nodes lost the most GPU-hours to hardware last month" has two reasonable answers that disagree: the
capacity lost while the node was down for a hardware reason (down time x GPUs), and the work of the jobs a
hardware incident on the node killed. The mart (``sql/marts/node_hardware_loss.sql``, whose header defines both)
carries the two in one row per node and month, so a reader sees both numbers instead of picking a join.

Only nodes of the fleet have rows when cluster.yaml lists it: a host outside ``nodes`` that logged a failure (an
NVSwitch tray, a file server) has no GPUs to lose; its incidents stay in ``marts.hw_incidents`` (and join a rack
incident when ``racks`` lists the host), while MTBF, availability and this mart count the fleet's nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import duckdb

from gpusre.models.day_coverage import build_day_coverage
from gpusre.models.marts_runner import run_mart_sql
from gpusre.models.warehouse import table_exists

__all__ = ["write_node_hardware_loss"]

#: Tables the mart reads besides core.*; a warehouse without one (no node logs yet) gets an empty mart.
_INPUTS = ("marts.hw_incidents", "marts.job_failure_attribution", "marts.instance_failure_attribution")


def write_node_hardware_loss(con: duckdb.DuckDBPyConnection, gpus_per_node: int, as_of: datetime | None,
                             node_gpus: Mapping[str, int] | None = None) -> int:
    """(Re)build ``marts.node_hardware_loss``; return its row count (0 and no table change without the inputs).

    ``node_gpus``: node -> GPUs of every fleet node (cluster.yaml ``gpus_by_node``); when given, rows of hosts it
    does not name are dropped (outside the fleet: no GPUs, no capacity to lose); when empty (a fleet known only
    by its node count) every node has ``gpus_per_node``."""
    if not all(table_exists(con, t) for t in _INPUTS):
        return 0
    if not table_exists(con, "marts.day_coverage"):
        build_day_coverage(con)
    gpus = dict(node_gpus or {})
    run_mart_sql(con, "node_hardware_loss", {"gpus_per_node": gpus_per_node, "as_of": as_of,
                                             "gpu_nodes": list(gpus), "gpu_counts": list(gpus.values())})
    if gpus:
        con.execute("DELETE FROM marts.node_hardware_loss WHERE NOT list_contains($fleet::VARCHAR[], node)",
                    {"fleet": list(gpus)})
    return con.sql("SELECT count(*) FROM marts.node_hardware_loss").fetchall()[0][0]
