"""The operator's incident log ``landing/incidents.csv``: what humans know about root causes.

Columns: ``id, start, end, component, root_cause, nodes, notes`` (``nodes`` a Slurm hostlist,
empty = whole cluster; times ISO-8601, naive = UTC). Bad rows are returned as rejects with their
line number (a row whose id a later row repeats is one: the later row is kept); good rows take
precedence over log-derived labels in incident merging.

The file is kept by hand, often in a spreadsheet, so the header is read case-insensitively with
spaces or hyphens for underscores (``ID,Start,End,Component,Root cause,Nodes``), values are
stripped, and ``component`` is put into the catalog's vocabulary: a catalog component in any case
(``GPU`` -> ``gpu``), else the component the drain-reason rules give its words (``InfiniBand`` ->
``network``, ``Lustre`` -> ``storage``, ``PSU`` -> ``host_power``), else kept as written (class
``other``, e.g. ``ip_configuration``). Otherwise an operator's ``GPU`` incident would count under
``other`` in MTBF per class.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from gpusre.models.component_classes import load_component_classes
from gpusre.models.failures.drain_reasons import classify_reasons
from gpusre.models.failures.hw_incidents import OPERATOR_SCHEMA
from gpusre.models.ingest.hostlist import HostlistError, expand_hostlist
from gpusre.models.ingest.landing_files import LandingRead, read_landing_file

__all__ = ["INCIDENTS_FILE", "parse_operator_incidents", "read_operator_incidents"]

INCIDENTS_FILE = "incidents.csv"
_REQUIRED = ("id", "start", "end", "component", "root_cause", "nodes")


def _ts(col: str) -> pl.Expr:
    text = pl.col(col).str.strip_chars()
    aware = text.str.to_datetime(time_zone="UTC", strict=False)
    naive = text.str.to_datetime(strict=False).dt.replace_time_zone("UTC")
    return pl.coalesce(aware, naive).dt.cast_time_unit("us")


def _header_name(name: str) -> str:
    """``' Root cause'`` -> ``'root_cause'``: how a spreadsheet may spell a column."""
    return "_".join(name.strip().lower().replace("-", " ").split())


def catalog_component(component: pl.Series) -> pl.Series:
    """Operator component text in the catalog's vocabulary (see the module docstring); null stays null.

    >>> catalog_component(pl.Series(["GPU", " InfiniBand", "ip_configuration"])).to_list()
    ['gpu', 'network', 'ip_configuration']
    """
    text = component.str.strip_chars()
    known = load_component_classes()["component"]
    lowered = text.str.to_lowercase()
    by_rules = classify_reasons(text)["reason_component"]
    return (pl.select(
        pl.when(lowered.is_in(known.implode())).then(lowered)
        .when(by_rules.ne("other") & by_rules.is_not_null()).then(by_rules)
        .otherwise(text)
    ).to_series().alias(component.name))


def read_operator_incidents(path: Path, source_file: str = INCIDENTS_FILE) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(incidents, rejects)``: incidents in :data:`OPERATOR_SCHEMA`, rejects as in raw.rejects."""
    return parse_operator_incidents(read_landing_file(path), source_file)


def parse_operator_incidents(read: LandingRead, source_file: str = INCIDENTS_FILE) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`read_operator_incidents` of a file already read (the ingest hashes the same bytes);
    a whole-file fault is one line-0 reject."""
    def refused(reason: str) -> tuple[pl.DataFrame, pl.DataFrame]:
        reject = pl.DataFrame({"source_file": [source_file], "line_no": [0], "raw": [None], "error": [reason]},
                              schema={"source_file": pl.String, "line_no": pl.Int64, "raw": pl.String, "error": pl.String})
        return pl.DataFrame(schema=OPERATOR_SCHEMA), reject

    if read.fault:
        return refused(read.fault)
    try:
        raw = pl.read_csv(read.data, infer_schema=False).with_columns(pl.all().fill_null(""))
        raw = raw.rename(_header_name).with_columns(pl.all().str.strip_chars())
    except (pl.exceptions.PolarsError, ValueError) as exc:  # empty, ragged rows, bad quoting
        return refused(f"not a readable CSV: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    missing = [c for c in _REQUIRED if c not in raw.columns]
    if missing:
        return refused(f"missing column(s): {', '.join(missing)}")
    if "notes" not in raw.columns:
        raw = raw.with_columns(notes=pl.lit(""))
    frame = raw.with_row_index("line_no", offset=2).with_columns(
        start_ts=_ts("start"), end_ts=_ts("end"), line_no=pl.col("line_no").cast(pl.Int64)
    )

    def _hostlist_error(expr: str) -> str:
        try:
            expand_hostlist(expr)
        except HostlistError as exc:
            return str(exc)
        return ""

    host_errors = {h: _hostlist_error(h) for h in frame["nodes"].unique().to_list()}
    frame = frame.with_columns(
        error=pl.when(pl.col("id").str.strip_chars() == "").then(pl.lit("empty id"))
        .when(pl.col("start_ts").is_null()).then(pl.lit("start is not an ISO-8601 time"))
        .when(pl.col("end_ts").is_null()).then(pl.lit("end is not an ISO-8601 time"))
        .when(pl.col("end_ts") < pl.col("start_ts")).then(pl.lit("end before start"))
        .when(pl.col("nodes").replace_strict(host_errors, default="") != "")
        .then(pl.lit("bad hostlist: ") + pl.col("nodes").replace_strict(host_errors, default=""))
        .otherwise(None)
    )
    # An id is the incident's name in tickets and a no-evidence incident's key (hw_incidents hashes it):
    # two rows with one id would be two incidents under one name. The log is kept by hand, so the last
    # good row is taken as the current one and earlier good rows are refused (the reject names the kept line).
    last_line = pl.col("line_no").filter(pl.col("error").is_null()).max().over("id")
    frame = frame.with_columns(
        error=pl.when(pl.col("error").is_null() & (pl.col("line_no") < last_line))
        .then(pl.lit("id ") + pl.col("id") + pl.lit(" is repeated on line ") + last_line.cast(pl.String)
              + pl.lit(" (that row is kept)"))
        .otherwise(pl.col("error"))
    )
    rejects = frame.filter(pl.col("error").is_not_null()).select(
        pl.lit(source_file).alias("source_file"), "line_no",
        pl.concat_str([pl.col(c) for c in raw.columns], separator=",").alias("raw"), "error",
    )
    good = frame.filter(pl.col("error").is_null())
    incidents = good.select(
        pl.col("id"), pl.col("start_ts").alias("start"), pl.col("end_ts").alias("end"),
        catalog_component(good["component"]), "root_cause", pl.col("nodes").replace("", None), "notes",
    )
    return incidents.cast(OPERATOR_SCHEMA), rejects  # type: ignore[arg-type]
