"""The operator's incident log ``landing/incidents.csv``: what humans know about root causes.

Columns: ``id, start, end, component, root_cause, nodes, notes`` (``nodes`` a Slurm hostlist,
an empty field = whole cluster; times ISO-8601, naive = UTC). Bad rows are returned as rejects with
their line number (a row with another field count than the header, a node outside cluster.yaml's
nodes, a last row without a line break that may have been cut are) (a row whose id a later row repeats is one: the later row is kept); good rows take
precedence over log-derived labels in incident merging.

The file is kept by hand, often in a spreadsheet, so the header is read case-insensitively with
spaces or hyphens for underscores (``ID,Start,End,Component,Root cause,Nodes``), values are
stripped, and ``component`` is put into the catalog's vocabulary: a catalog component in any case
(``GPU`` -> ``gpu``), else the component the drain-reason rules give its words (``InfiniBand`` ->
``network``, ``Lustre`` -> ``storage``, ``PSU`` -> ``host_power``), else kept as written (class
``other``, e.g. ``ip_configuration``). Otherwise an operator's ``GPU`` incident would count under
``other`` in MTBF per class.

A ``component`` of :data:`~gpusre.models.vocabulary.NOT_A_FAILURE_WORDS` (``none``, ``false_positive``,
``not_a_failure``; any case, spaces or hyphens for underscores) becomes
:data:`~gpusre.models.vocabulary.NOT_A_FAILURE`: the row says the tool-made incidents it overlaps were no
failure (a false positive), which :func:`~gpusre.models.failures.hw_incidents.merge_incidents` applies.
Before, ``none`` was kept as written and counted as a failure of class ``other``.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from gpusre.models.component_classes import load_component_classes
from gpusre.models.failures.drain_reasons import classify_reasons
from gpusre.models.failures.hw_incidents import OPERATOR_SCHEMA
from gpusre.models.ingest.hostlist import HostlistError, expand_hostlist
from gpusre.models.vocabulary import NOT_A_FAILURE, is_not_a_failure_word
from gpusre.models.ingest.landing_files import CUT_LAST_LINE, LandingRead, read_landing_file, unterminated_last_line

__all__ = ["INCIDENTS_FILE", "parse_operator_incidents", "read_operator_incidents"]

INCIDENTS_FILE = "incidents.csv"
_REQUIRED = ("id", "start", "end", "component", "root_cause", "nodes")
_REJECT_SCHEMA = {"source_file": pl.String, "line_no": pl.Int64, "raw": pl.String, "error": pl.String}


def _ts(col: str) -> pl.Expr:
    text = pl.col(col).str.strip_chars()
    aware = text.str.to_datetime(time_zone="UTC", strict=False)
    naive = text.str.to_datetime(strict=False).dt.replace_time_zone("UTC")
    return pl.coalesce(aware, naive).dt.cast_time_unit("us")


def _header_name(name: str) -> str:
    """``' Root cause'`` -> ``'root_cause'``: how a spreadsheet may spell a column."""
    return "_".join(name.strip().lower().replace("-", " ").split())


def catalog_component(component: pl.Series, node_names: Sequence[str] | None = None) -> pl.Series:
    """Operator component text in the catalog's vocabulary (see the module docstring); null stays null.
    ``node_names`` (cluster.yaml's and the rows' nodes) are host names, not component words, in the text
    (``gpu017 PSU``: ``host_power``; :func:`~gpusre.models.failures.drain_reasons.classify_reasons`).

    >>> catalog_component(pl.Series(["GPU", " InfiniBand", "ip_configuration", "None"])).to_list()
    ['gpu', 'network', 'ip_configuration', 'not_a_failure']
    """
    text = component.str.strip_chars()
    known = load_component_classes()["component"]
    lowered = text.str.to_lowercase()
    by_rules = classify_reasons(text, node_names=node_names)["reason_component"]
    return (pl.select(
        # checked first: a reserved word is the operator's verdict, not a component to look up
        pl.when(is_not_a_failure_word(pl.lit(text))).then(pl.lit(NOT_A_FAILURE))
        .when(lowered.is_in(known.implode())).then(lowered)
        .when(by_rules.ne("other") & by_rules.is_not_null()).then(by_rules)
        .otherwise(text)
    ).to_series().alias(component.name))


def read_operator_incidents(path: Path, source_file: str = INCIDENTS_FILE, *,
                            cluster_nodes: Sequence[str] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(incidents, rejects)``: incidents in :data:`OPERATOR_SCHEMA`, rejects as in raw.rejects."""
    return parse_operator_incidents(read_landing_file(path), source_file, cluster_nodes=cluster_nodes)


def _csv_rows(text: str) -> tuple[list[str], list[tuple[int, str, list[str]]]]:
    """``(header, [(line_no, raw, fields)])`` of CSV text: ``line_no`` is the physical line a row
    starts on (a quoted field may span lines), ``raw`` its text; blank lines are no rows."""
    lines = text.splitlines()
    reader = csv.reader(lines)
    header: list[str] | None = None
    rows: list[tuple[int, str, list[str]]] = []
    start = 1
    for fields in reader:
        end = reader.line_num
        if fields and any(f.strip() for f in fields):
            if header is None:
                header = fields
            else:
                rows.append((start, "\n".join(lines[start - 1:end]), fields))
        start = end + 1
    return header or [], rows


def _unknown_nodes(expr: str, known: set[str]) -> str:
    """The nodes of hostlist ``expr`` that are not in ``known``, as ``gpu9, gpu99``; '' when none."""
    names = expand_hostlist(expr) if expr else []
    outside = [n for n in names if n not in known]
    return ", ".join(outside[:5]) + (f" (and {len(outside) - 5} more)" if len(outside) > 5 else "")


def _cut_last_row(names: list[str]) -> pl.Expr:
    """Whether the file's last row, having no line break, is not shown whole (the rule of the
    other sources, :data:`CUT_LAST_LINE`): a row ending in free text (``notes``, or
    ``root_cause`` last) loads, as a node log's message does; one ending in ``nodes`` or a time
    may have lost characters of a valid value (``gpu12`` -> ``gpu1``) and is rejected. A
    spreadsheet or editor that omits the final break costs the last row only then: add ``notes``."""
    if names[-1] in ("notes", "root_cause"):
        return pl.col("_n") != len(names)  # a row cut short of the notes column
    return pl.lit(True)


def parse_operator_incidents(read: LandingRead, source_file: str = INCIDENTS_FILE, *,
                             cluster_nodes: Sequence[str] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`read_operator_incidents` of a file already read (the ingest hashes the same bytes);
    a whole-file fault is one line-0 reject.

    A row whose field count differs from the header's is rejected ("expected 7 fields, got 5"): an
    empty ``nodes`` *field* means the whole cluster, a missing one does not. With
    ``cluster_nodes`` (cluster.yaml's node names; None or empty when it gives only a count), a row
    naming any node outside them is rejected ("node(s) not in cluster.yaml nodes: gpu99"): a typo
    would otherwise be an incident on no node the reports know. An empty file has no incidents."""
    def refused(reason: str) -> tuple[pl.DataFrame, pl.DataFrame]:
        reject = pl.DataFrame({"source_file": [source_file], "line_no": [0], "raw": [None], "error": [reason]},
                              schema={"source_file": pl.String, "line_no": pl.Int64, "raw": pl.String, "error": pl.String})
        return pl.DataFrame(schema=OPERATOR_SCHEMA), reject

    if read.fault:
        return refused(read.fault)
    text = read.data.decode("utf-8", errors="replace").lstrip("\ufeff")
    if not text.strip():
        # No incidents to tell: an empty list is the operator's word as much as a header alone.
        return pl.DataFrame(schema=OPERATOR_SCHEMA), pl.DataFrame(schema=_REJECT_SCHEMA)
    try:
        header, rows = _csv_rows(text)
    except csv.Error as exc:  # bad quoting
        return refused(f"not a readable CSV: {exc}")
    names = [_header_name(n) for n in header]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        return refused(f"not a readable CSV: column(s) {', '.join(twice)} named twice")
    missing = [c for c in _REQUIRED if c not in names]
    if missing:
        return refused(f"missing column(s): {', '.join(missing)}")
    # A row with another field count than the header is misaligned (a comma lost or added in a
    # hand edit): reading it padded would make a missing `nodes` an empty one, "the whole cluster".
    n_fields = len(names)
    frame = pl.DataFrame(
        {"line_no": [n for n, _, _ in rows], "_raw": [r for _, r, _ in rows],
         "_n": [len(f) for _, _, f in rows],
         **{name: [f[i].strip() if i < len(f) else "" for _, _, f in rows] for i, name in enumerate(names)}},
        schema={"line_no": pl.Int64, "_raw": pl.String, "_n": pl.Int64, **{name: pl.String for name in names}},
    )
    if "notes" not in names:
        frame = frame.with_columns(notes=pl.lit(""))
    frame = frame.with_columns(start_ts=_ts("start"), end_ts=_ts("end"))

    def _hostlist_error(expr: str) -> str:
        try:
            expand_hostlist(expr)
        except HostlistError as exc:
            return str(exc)
        return ""

    known = set(cluster_nodes or ())
    host_errors = {h: _hostlist_error(h) for h in frame["nodes"].unique().to_list()}
    unknown = {h: _unknown_nodes(h, known) if known and not host_errors[h] else "" for h in host_errors}
    cut = unterminated_last_line(text)
    frame = frame.with_columns(
        error=pl.when((pl.col("line_no") == (cut or 0)) & _cut_last_row(names))
        .then(pl.lit(CUT_LAST_LINE))
        .when(pl.col("_n") != n_fields)
        .then(pl.format(f"expected {n_fields} fields, got {{}}", pl.col("_n")))
        .when(pl.col("id").str.strip_chars() == "").then(pl.lit("empty id"))
        .when(pl.col("start_ts").is_null()).then(pl.lit("start is not an ISO-8601 time"))
        .when(pl.col("end_ts").is_null()).then(pl.lit("end is not an ISO-8601 time"))
        .when(pl.col("end_ts") < pl.col("start_ts")).then(pl.lit("end before start"))
        .when(pl.col("nodes").replace_strict(host_errors, default="") != "")
        .then(pl.lit("bad hostlist: ") + pl.col("nodes").replace_strict(host_errors, default=""))
        .when(pl.col("nodes").replace_strict(unknown, default="") != "")
        .then(pl.lit("node(s) not in cluster.yaml nodes: ") + pl.col("nodes").replace_strict(unknown, default=""))
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
        pl.lit(source_file).alias("source_file"), "line_no", pl.col("_raw").alias("raw"), "error",
    )
    good = frame.filter(pl.col("error").is_null())
    # The rows' own nodes and cluster.yaml's: a host name in the component text names no component.
    row_nodes = {n for h, err in host_errors.items() if h and not err for n in expand_hostlist(h)}
    incidents = good.select(
        pl.col("id"), pl.col("start_ts").alias("start"), pl.col("end_ts").alias("end"),
        catalog_component(good["component"], sorted(known | row_nodes)), "root_cause", pl.col("nodes").replace("", None), "notes",
    )
    return incidents.cast(OPERATOR_SCHEMA), rejects  # type: ignore[arg-type]
