"""The parts of the per-version node-log summaries, computed by the parse while a batch's lines are in
memory (:class:`~gpusre.models.ingest.version_summaries.PartsQuery`).

Why: ``core.node_events``, ``core.log_template_files`` and the node logs' ``raw.record_days`` were built
by reading the night's new lines back from the lake, once each: three scans of 10 M lines, ~5.7 s of
a nightly run on 2 cores (2026-12-07). A batch's lines are all in memory in the parse, in one frame, and
a landing file's lines never span two batches; its parts are a few thousand rows:

* ``event_rows``: the lines the catalog recognized (``kind`` set), with the columns ``core.node_events``
  reads and ``message_key`` (the template id is known only after the publish step mines);
* ``template_parts``: per file and masked message (``message_key``), what ``core.log_template_files``
  keeps per file and template: lines, nodes, first and last time, the earliest line's message and its
  (time, line) key, the earliest recognized event's kind and key;
* ``day_parts``: per file, UTC day and node, the lines and the first and last time (``raw.record_days``).

The queries in ``sql/core/*_from_parts.sql`` and :mod:`gpusre.models.ingest.record_days` turn them into
the rows the summaries' own queries give over the lines (``tests/test_syslog_summary_parts.py``)."""

from __future__ import annotations

import polars as pl

__all__ = ["EVENT_ROWS", "PART_KINDS", "TEMPLATE_PARTS", "DAY_PARTS", "empty_parts", "summary_parts"]

EVENT_ROWS = "event_rows"
TEMPLATE_PARTS = "template_parts"
DAY_PARTS = "day_parts"
PART_KINDS = (EVENT_ROWS, TEMPLATE_PARTS, DAY_PARTS)

#: The lake row columns the parts are made of (their lake types): those core.node_events reads
#: (sql/core/node_events.sql) and the key of the line's masked message.
_ROW_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(), "line_no": pl.Int64(), "ts": pl.Datetime("us", "UTC"), "node": pl.String(),
    "kind": pl.String(), "code": pl.Int32(), **{c: pl.String() for c in (
        "gpu_pci", "device_pci", "port", "component", "cause_class", "severity", "action", "message", "program")},
    "message_key": pl.Int64(),
}


def summary_parts(rows: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The parts of the lake rows ``rows`` (whole landing files: every line of each file in it), by kind."""
    # In (time, line) order per file: each group's first row is then its earliest line, the order
    # arg_min(…, (ts, line_no)) picks by.
    ordered = rows.select("source_file", "line_no", "ts", "node", "message", "kind", "message_key").sort(
        "source_file", "ts", "line_no")
    event = pl.col("kind").is_not_null()
    templates = ordered.group_by("source_file", "message_key").agg(
        pl.len().alias("lines"),
        pl.col("node").drop_nulls().unique().alias("nodes"),
        pl.col("ts").first().alias("first_seen_ts"),
        pl.col("ts").last().alias("last_seen_ts"),
        pl.col("message").first().alias("example"),
        pl.col("line_no").first().alias("example_line_no"),
        pl.col("kind").filter(event).first().alias("kind"),
        pl.col("ts").filter(event).first().alias("first_event_ts"),
        pl.col("line_no").filter(event).first().alias("event_line_no"),
    )
    days = rows.group_by("source_file", pl.col("ts").dt.date().alias("day"), "node").agg(
        pl.len().alias("records"), pl.col("ts").min().alias("first_ts"), pl.col("ts").max().alias("last_ts"))
    return {EVENT_ROWS: rows.filter(event).select(list(_ROW_SCHEMA)), TEMPLATE_PARTS: templates, DAY_PARTS: days}


def empty_parts() -> dict[str, pl.DataFrame]:
    """Parts of no lines, typed: the parts of a kind no file had a row of."""
    return summary_parts(pl.DataFrame(schema=_ROW_SCHEMA))
