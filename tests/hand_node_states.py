"""Hand-made node states and one-node hardware incidents for the node-availability and repair-link tests:
``core.node_states`` rows classified by the drain-reason catalog, and incidents in the shape
``merge_incidents`` gives them (one node, first evidence = start = end)."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from gpusre.models.failures.drain_reasons import classify_reasons

_UTC_TS = pl.Datetime("us", "UTC")


def classified_states(rows: list[tuple[str, datetime, datetime | None, str]]) -> pl.DataFrame:
    """``core.node_states`` rows (node, start, end, reason) with the catalog's class of each reason."""
    frame = pl.DataFrame(rows, schema={"node": pl.String, "start_ts": _UTC_TS, "end_ts": _UTC_TS,
                                       "reason": pl.String}, orient="row")
    classes = classify_reasons(frame["reason"])
    return frame.with_columns(classes["reason_class"], classes["reason_component"], classes["availability_class"])


def one_node_incidents(rows: list[tuple[str, str, datetime, str]]) -> pl.DataFrame:
    """One-node incidents from (id, component, first evidence = start = end, node)."""
    return pl.DataFrame([(i, c, "node", s, s, s, [n]) for i, c, s, n in rows],
                        schema={"incident_id": pl.String, "component": pl.String, "scope": pl.String,
                                "start_ts": _UTC_TS, "first_evidence_ts": _UTC_TS, "end_ts": _UTC_TS,
                                "nodes": pl.List(pl.String)}, orient="row")
