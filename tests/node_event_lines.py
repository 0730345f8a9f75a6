"""Node events built from raw log lines, classified by the event catalog as the ingest does (for tests)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl

from gpusre.models.logs.event_catalog import classify_messages
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA
from gpusre.models.reliability.repair_times import PART_COLUMNS

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def events_from_lines(lines: list[tuple[timedelta, str, str]]) -> pl.DataFrame:
    """core.node_events rows for ``(offset from T0, node, raw message)``, classified like the ingest does."""
    classified = classify_messages(pl.Series([m for _, _, m in lines]))
    frame = pl.DataFrame({
        "event_id": list(range(1, len(lines) + 1)),
        "ts": [T0 + at for at, _, _ in lines],
        "node": [n for _, n, _ in lines],
        "message": [m for _, _, m in lines],
    }, schema={"event_id": pl.Int64, "ts": pl.Datetime("us", "UTC"), "node": pl.String, "message": pl.String})
    return pl.concat([frame, classified.select([c for c in EVENT_SCHEMA if c in classified.columns])],
                     how="horizontal").filter(pl.col("kind").is_not_null())


def events_with_parts(lines: list[tuple[datetime, str, str]]) -> pl.DataFrame:
    """core.node_events rows (:data:`EVENT_SCHEMA` and the part columns ``device_pci``, ``gpu_pci``, ``port``;
    event ids 1.. in order) of ``(ts, node, raw line)``, classified as the ingest does; every line must be an event."""
    classified = classify_messages(pl.Series([m for _, _, m in lines]))
    frame = pl.concat([
        pl.DataFrame({"event_id": list(range(1, len(lines) + 1)), "ts": [ts for ts, _, _ in lines],
                      "node": [n for _, n, _ in lines]},
                     schema={"event_id": pl.Int64, "ts": pl.Datetime("us", "UTC"), "node": pl.String}),
        classified.select(c for c in dict.fromkeys((*EVENT_SCHEMA, *PART_COLUMNS))
                          if c in classified.columns and c not in ("event_id", "ts", "node"))], how="horizontal")
    assert frame["kind"].null_count() == 0
    return frame
