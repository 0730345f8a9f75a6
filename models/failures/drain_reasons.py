"""Reason taxonomy of Slurm drain/down events: rule file, classifier, and the top-reasons mart.

Drain and down reasons are free text written by people (``planned maintenance: BIOS upgrade``),
health checks (``NHC: check_gpu_xid: Xid 79 on GPU 3``) and Slurm itself (``Not responding``,
``Kill task failed``, ``Prolog error``). Two things are derived from them:

* a **template** (Drain3, miner ``slurm_reasons``; see ``node_states_ingest``) that groups reasons
  differing only in numbers, paths and node names;
* a **class** from ``catalog/drain_reasons.csv``: priority-ordered rules (first match wins, matched
  case-insensitively; a rule whose ``unless`` regex also matches the reason is passed over) giving
  ``reason_class`` (fine: ``gpu_xid``, ``network``, ``not_responding``…), ``component`` (the
  vocabulary of ``catalog/component_classes.csv``, so node-state history joins hardware incidents
  by component) and ``availability_class``, the coarse bucket availability
  reports use: ``hardware``, ``maintenance``, ``health_check``, ``software``, ``unknown``.

``unless`` is how a rule says "not when the reason also names a fault" without look-around (Polars'
Rust regex has none): the planned-work rule matches ``upgrade``/``firmware``/``patch``… unless the
reason names a fault (``GPU ECC errors, waiting for driver patch`` is a GPU ECC fault, the patch only
its remedy), and the rules after it classify the fault. Before it, rule ``declared_planned_work`` takes a
reason that *declares* the outage planned — leading with planned / scheduled maintenance or a maintenance
window, or citing a change ticket (``Planned maintenance: replace bad HGX baseboard (CHG-4412)``) — as
planned even when it names the fault the change fixes (the node served jobs until the change), unless it
says unplanned / emergency; a bare ``maintenance: GPU xid 79`` declares nothing and stays a GPU fault.

An Xid code in a reason a hardware rule classified names its component by the Xid catalog
(``catalog/xid.csv``, the one definition of the codes): ``NHC: check_gpu_xid: Xid 79 on GPU 3`` is the
GPU's PCIe link (``pcie_bus``), ``Xid 149 on GPU1`` NVLink — class ``nvlink``, the class of the first
hardware rule naming that component class, since readers take a reason class's component class from it.
A product or rack name (``NVL72``, ``nvl72-r2``) names no NVLink fault.

A node name in a reason is no evidence of a component: hosts are named after what they carry
(``gpu017``, ``dgx-a100-03``, ``hgx07``, ``gb-r1-c07``), so ``gpu017 PSU fail`` read whole is a GPU fault.
Before the rules run, every whole-word occurrence of a node name — the row's own node and the other nodes of
the batch, and any node the site declares (cluster.yaml ``nodes``) — is replaced by a space: the reason reads as
if the name were not written (``gpu017 PSU fail``: a PSU, ``host_power``; ``gpu017`` alone: ``unknown``). Names
match in their exact case: ``GPU3`` in a reason is a GPU's index on a site whose node is ``gpu3``.

A reason no rule matches is ``unknown``; an empty reason is ``no_reason``. Either way, an event in
state ``MAINT`` or ``REBOOT`` counts as ``maintenance`` (Slurm put it there on request).

The rule file is checked when loaded: exact header (a file without the ``unless`` column, as before it
existed, loads with no ``unless``), every regex compiles in Python *and* Polars
(Rust regex: no look-around), classes are snake_case, component and availability class come from
their vocabularies, rule ids are unique, and every rule's ``example`` is classified *by that rule*
— so a rule shadowed by an earlier, broader one is an error naming its line, not a silent miss.

>>> classify_reasons(pl.Series(["Not responding", "NHC: check_gpu_xid: Xid 79 on GPU 3", "ask bob"])).rows()
[('not_responding', 'os', 'unknown', 'slurm_not_responding'), ('gpu_xid', 'pcie_bus', 'hardware', 'gpu_xid'), ('unknown', 'other', 'unknown', None)]
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from pathlib import Path

import polars as pl

from gpusre.models.logs.event_catalog import CatalogError, load_xid_catalog
from gpusre.models.vocabulary import class_of, load_component_classes

__all__ = [
    "AVAILABILITY_CLASSES",
    "CLASSIFIED_REASON_SCHEMA",
    "DRAIN_REASONS_FILE",
    "DRAIN_REASONS_MART_SCHEMA",
    "MAINTENANCE_STATES",
    "NO_REASON_CLASS",
    "REBOOT_CLASS",
    "UNKNOWN_CLASS",
    "CatalogError",
    "classify_reasons",
    "load_drain_reason_rules",
    "reason_class_components",
    "top_drain_reasons",
]

DRAIN_REASONS_FILE = "drain_reasons.csv"
#: Coarse buckets of down time, in report order.
AVAILABILITY_CLASSES: tuple[str, ...] = ("hardware", "maintenance", "health_check", "software", "unknown")
#: Node states that mean "taken out on purpose" when the reason says nothing more.
MAINTENANCE_STATES: frozenset[str] = frozenset({"MAINT", "REBOOT"})
NO_REASON_CLASS = "no_reason"
UNKNOWN_CLASS = "unknown"
#: reason_class of rule ``reboot`` (``Reboot ASAP``, ``power cycle``): planned work by itself, but the repair
#: of a fault logged just before it on its node (:func:`~gpusre.models.reliability.node_availability.outage_causes`).
REBOOT_CLASS = "reboot"
_FALLBACK_COMPONENT = "other"

_COLUMNS = ("rule_id", "regex", "unless", "reason_class", "component", "availability_class", "example", "note")
#: The header of rule files written before the ``unless`` column (still accepted: no rule has an ``unless``).
_LEGACY_COLUMNS = tuple(c for c in _COLUMNS if c != "unless")
_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")

#: Output of :func:`classify_reasons`, one row per input reason.
CLASSIFIED_REASON_SCHEMA: dict[str, pl.DataType] = {
    "reason_class": pl.String(),
    "reason_component": pl.String(),
    "availability_class": pl.String(),
    "rule_id": pl.String(),
}

#: ``marts.drain_reasons``: one row per reason class × reason template.
DRAIN_REASONS_MART_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int64(),
    "reason_class": pl.String(),
    "availability_class": pl.String(),
    "component": pl.String(),
    "template_id": pl.Int64(),
    "template": pl.String(),
    "example": pl.String(),
    "events": pl.Int64(),
    "nodes": pl.Int64(),
    "node_hours_lost": pl.Float64(),
    "share_node_hours": pl.Float64(),
    "ongoing_events": pl.Int64(),
    "first_start_ts": pl.Datetime("us", "UTC"),
    "last_start_ts": pl.Datetime("us", "UTC"),
}


def _components() -> frozenset[str]:
    return frozenset(load_component_classes()["component"].to_list()) | {_FALLBACK_COMPONENT}


def _case_insensitive(regex: str) -> str:
    return regex if regex.startswith("(?i)") else f"(?i){regex}"


def _rule_index(text: pl.Expr, rules: pl.DataFrame) -> pl.Expr:
    """Index of the first rule whose regex matches ``text`` and whose ``unless`` (if any) does not
    (null when none does)."""
    if rules.height == 0:
        return pl.lit(None, pl.Int32)
    unless = rules["unless"].to_list() if "unless" in rules.columns else [""] * rules.height

    def hit(rx: str, veto: str | None) -> pl.Expr:
        matched = text.str.contains(_case_insensitive(rx))
        return matched & ~text.str.contains(_case_insensitive(veto)) if veto else matched

    return pl.coalesce([pl.when(hit(rx, veto)).then(pl.lit(i, pl.Int32))
                        for i, (rx, veto) in enumerate(zip(rules["regex"].to_list(), unless, strict=True))])


#: What a node name in a reason becomes before the rules run: a space, so the reason reads as if the name were
#: not written and the rules see no word the mask would add (``node``: ``node failed`` is rule not_responding's).
_NODE_MASK = " "


def _mask_node_names(text: pl.Expr, names: Iterable[str | None]) -> pl.Expr:
    """``text`` with every whole-word occurrence of one of ``names`` (exact case) replaced by :data:`_NODE_MASK`.

    One regex over all names (a node list of 20 000 names compiles and runs in well under a second): Polars
    takes no per-row pattern, and a name in one row's reason is a host of the same cluster in every row. Longer
    names come first, so ``gpu-12`` is not masked as ``gpu-1`` plus a stray ``2`` (the regex prefers the first
    alternative that matches)."""
    distinct = {n.strip() for n in names if n is not None and n.strip()}
    if not distinct:
        return text
    ordered = sorted(distinct, key=lambda n: (-len(n), n))
    return text.str.replace_all(r"\b(?:" + "|".join(re.escape(n) for n in ordered) + r")\b", _NODE_MASK)


def load_drain_reason_rules(source: Path | None = None) -> pl.DataFrame:
    """Load and check ``catalog/drain_reasons.csv`` (or ``source``): the rules in priority order.

    Columns: ``rule_id``, ``regex``, ``unless`` (empty: none), ``reason_class``, ``component``,
    ``availability_class``, ``example``, ``note`` (all String).

    Raises:
        CatalogError: the message names the file, the line and the column.
    """
    if source is None:
        label = f"catalog/{DRAIN_REASONS_FILE}"
        text = resources.files("gpusre.models.catalog").joinpath(DRAIN_REASONS_FILE).read_text(encoding="utf-8")
    else:
        label, text = str(source), Path(source).read_text(encoding="utf-8")
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or tuple(header) not in (_COLUMNS, _LEGACY_COLUMNS):
        raise CatalogError(f"{label}: line 1: header {header} does not match expected columns {list(_COLUMNS)}")
    columns = tuple(header)
    components = _components()
    rows: list[dict[str, str]] = []
    line_of: list[int] = []
    seen: dict[str, int] = {}
    for line_no, row in enumerate(reader, start=2):
        if not row or not any(cell.strip() for cell in row):
            continue
        if len(row) != len(columns):
            raise CatalogError(f"{label}: line {line_no}: {len(row)} fields, expected {len(columns)}")
        rec = {"unless": "", **dict(zip(columns, row, strict=True))}

        def fail(column: str, problem: str, line_no: int = line_no) -> CatalogError:
            return CatalogError(f"{label}: line {line_no}: column {column!r}: {problem}")

        for column in ("rule_id", "regex", "reason_class", "component", "availability_class", "example"):
            if not rec[column].strip():
                raise fail(column, "value is required")
        if not _SNAKE.match(rec["rule_id"]):
            raise fail("rule_id", f"{rec['rule_id']!r} is not snake_case")
        if rec["rule_id"] in seen:
            raise fail("rule_id", f"duplicate rule_id {rec['rule_id']!r} (first on line {seen[rec['rule_id']]})")
        seen[rec["rule_id"]] = line_no
        if not _SNAKE.match(rec["reason_class"]):
            raise fail("reason_class", f"{rec['reason_class']!r} is not snake_case")
        if rec["component"] not in components:
            raise fail("component", f"{rec['component']!r} is not one of {sorted(components)}")
        if rec["availability_class"] not in AVAILABILITY_CLASSES:
            raise fail("availability_class", f"{rec['availability_class']!r} is not one of {list(AVAILABILITY_CLASSES)}")
        rec["unless"] = rec["unless"].strip()
        compiled: dict[str, re.Pattern[str]] = {}
        for column in ("regex", "unless") if rec["unless"] else ("regex",):
            try:
                compiled[column] = re.compile(_case_insensitive(rec[column]))
            except re.error as exc:
                raise fail(column, f"invalid regex: {exc}") from None
            try:
                pl.Series([""], dtype=pl.String).str.contains(_case_insensitive(rec[column]))
            except pl.exceptions.PolarsError as exc:
                raise fail(column, f"regex not supported by Polars: {exc}") from None
        if not compiled["regex"].search(rec["example"]):
            raise fail("regex", f"does not match its example {rec['example']!r}")
        if "unless" in compiled and compiled["unless"].search(rec["example"]):
            raise fail("unless", f"matches the rule's own example {rec['example']!r}")
        rows.append(rec)
        line_of.append(line_no)
    frame = pl.DataFrame(rows, schema={c: pl.String for c in _COLUMNS})
    # Priority check: each example must be classified by its own rule, not an earlier one.
    hits = frame.select(_rule_index(pl.col("example"), frame).alias("hit"))["hit"].to_list()
    for i, hit in enumerate(hits):
        if hit != i:
            raise CatalogError(
                f"{label}: line {line_of[i]}: column 'example': {rows[i]['example']!r} is classified by the "
                f"earlier rule {rows[hit]['rule_id']!r} (line {line_of[hit]}): rule {rows[i]['rule_id']!r} is shadowed"
            )
    return frame


@lru_cache(maxsize=1)
def _packaged_rules() -> pl.DataFrame:
    return load_drain_reason_rules()


#: An Xid code as operators and health checks write it (``Xid 79``, ``xid79``, ``XID_79``, ``Xid-79``, ``Xid: 79``)
#: and as the driver logs it (``Xid (PCI:0000:3b:00): 79``); the code is the number the match ends with.
_XID_CODE = r"(?i)\bxids?\s*(\([^)]*\))?[\s_:#=-]*\d+\b"
_HARDWARE = "hardware"


@lru_cache(maxsize=1)
def _xid_components() -> dict[int, str]:
    """Xid code → the component ``catalog/xid.csv`` names for it, for the codes naming a component of the fleet
    vocabulary other than ``other`` (a user application's Xid 13 or the recovery-action Xid 154 names no part)."""
    known = _components() - {_FALLBACK_COMPONENT}
    xids = load_xid_catalog().filter(pl.col("component").is_in(sorted(known)))
    return dict(zip(xids["code"].to_list(), xids["component"].to_list(), strict=True))


def _with_xid_components(lookup: pl.DataFrame, rules: pl.DataFrame) -> pl.DataFrame:
    """``lookup`` (distinct reasons, their ``_text`` with node names masked, and their rule's ``_class``,
    ``_component``, ``_avail``) with the component of
    an Xid code named in a reason a hardware rule classified taken from the Xid catalog — the one definition of
    what each code means, so ``Xid 149 on GPU1`` is NVLink and ``Xid 79`` a GPU off the PCIe bus whatever words
    surround them. The first code naming a component wins. When that component is of another component class
    than the rule's, the class becomes the first hardware rule's of that class (``Xid 149``: ``nvlink``): the
    class names the component class everywhere a reason class is read (repair linking matches a drain to an
    incident by it)."""
    codes = _xid_components()
    first_of_class = (rules.filter(pl.col("availability_class") == _HARDWARE)
                      .with_columns(class_of(pl.col("component")).alias("_cc"))
                      .unique("_cc", keep="first", maintain_order=True))
    class_rule = dict(zip(first_of_class["_cc"].to_list(), first_of_class["reason_class"].to_list(), strict=True))
    named = (pl.col("_text").str.extract_all(_XID_CODE)
             .list.eval(pl.element().str.extract(r"(\d+)$").cast(pl.Int64, strict=False)
                        .replace_strict(codes, default=None, return_dtype=pl.String))
             .list.drop_nulls().list.first())
    xid_cc = class_of(pl.col("_xid_component"))
    same_class = xid_cc == class_of(pl.col("_component"))
    xid_class = xid_cc.replace_strict(class_rule, default=None, return_dtype=pl.String)
    # A component whose class no hardware rule names keeps the rule's class and component (the two agree).
    use = ((pl.col("_avail") == _HARDWARE) & pl.col("_xid_component").is_not_null()
           & (same_class | xid_class.is_not_null()))
    return (lookup.with_columns(named.alias("_xid_component"))
            .with_columns(
                pl.when(use & ~same_class).then(xid_class).otherwise(pl.col("_class")).alias("_class"),
                pl.when(use).then(pl.col("_xid_component")).otherwise(pl.col("_component")).alias("_component"))
            .drop("_xid_component"))


@lru_cache(maxsize=1)
def reason_class_components() -> dict[str, str]:
    """``reason_class`` → ``component`` of the packaged catalog (the first rule naming each class), loaded and
    checked once per process: readers map a class per expression, several times a night."""
    rules = _packaged_rules().select("reason_class", "component").unique("reason_class", keep="first")
    return dict(zip(rules["reason_class"].to_list(), rules["component"].to_list(), strict=True))


def classify_reasons(
    reasons: pl.Series, states: pl.Series | None = None, rules: pl.DataFrame | None = None, *,
    nodes: pl.Series | None = None, node_names: Iterable[str] | None = None,
) -> pl.DataFrame:
    """Classify reasons (first matching rule wins); one output row per input row.

    Returns :data:`CLASSIFIED_REASON_SCHEMA` columns. ``states`` (normalized node states, same
    length) turns an otherwise ``unknown`` reason of a ``MAINT``/``REBOOT`` event into
    ``maintenance``. ``nodes`` (each row's node, same length) and ``node_names`` (the nodes the site
    declares, cluster.yaml ``nodes``) are node names masked in the reasons before the rules run (see the
    module docstring): ``gpu017 PSU fail`` of node ``gpu017`` is a PSU fault, not a GPU's. Regexes run once
    per *distinct* reason.

    >>> out = classify_reasons(pl.Series(["gpu017 PSU fail", "gpu017"]), nodes=pl.Series(["gpu017", "gpu017"]))
    >>> out["reason_component"].to_list()
    ['host_power', 'other']
    """
    rules = _packaged_rules() if rules is None else rules
    frame = pl.DataFrame({"reason": reasons.cast(pl.String)})
    blank = pl.col("reason").is_null() | (pl.col("reason").str.strip_chars() == "")
    names = set(node_names or ()) | (set(nodes.cast(pl.String).drop_nulls().unique().to_list())
                                     if nodes is not None else set())
    distinct = frame.unique().filter(~blank).with_columns(_mask_node_names(pl.col("reason"), names).alias("_text"))
    attrs = rules.select(
        pl.int_range(pl.len(), dtype=pl.Int32).alias("_rule"),
        pl.col("reason_class").alias("_class"),
        pl.col("component").alias("_component"),
        pl.col("availability_class").alias("_avail"),
        "rule_id",
    )
    lookup = _with_xid_components(distinct.with_columns(_rule_index(pl.col("_text"), rules).alias("_rule")).join(
        attrs, on="_rule", how="left"), rules).drop("_text")
    out = frame.join(lookup, on="reason", how="left", maintain_order="left", nulls_equal=False)
    state = pl.Series("_state", states, dtype=pl.String) if states is not None else pl.Series(
        "_state", [None] * frame.height, dtype=pl.String)
    out = out.with_columns(state)
    unmatched = pl.col("_class").is_null()
    avail = (
        pl.when(unmatched & pl.col("_state").is_in(list(MAINTENANCE_STATES))).then(pl.lit("maintenance"))
        .otherwise(pl.col("_avail").fill_null(UNKNOWN_CLASS))
    )
    return out.select(
        pl.when(blank).then(pl.lit(NO_REASON_CLASS)).otherwise(pl.col("_class").fill_null(UNKNOWN_CLASS))
        .alias("reason_class"),
        pl.col("_component").fill_null(_FALLBACK_COMPONENT).alias("reason_component"),
        avail.alias("availability_class"),
        pl.col("rule_id"),
    ).cast(CLASSIFIED_REASON_SCHEMA)  # type: ignore[arg-type]


def top_drain_reasons(states: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """``marts.drain_reasons``: reason class × template, ranked by node-hours lost.

    Args:
        states: core.node_states (``node``, ``start_ts``, ``end_ts``, ``reason``,
            ``reason_template_id``, ``reason_template``, ``reason_class``, ``reason_component``,
            ``availability_class``).
        segments: down time attributed to events
            (:func:`gpusre.models.reliability.node_availability.down_segments`): ``node``, ``event_start_ts``,
            ``hours``. Overlapping events on a node are counted once (to the earliest), so the
            node-hours here add up to the down hours of ``marts.node_availability_daily``.

    ``events`` counts every event of the template (also those fully overlapped by an earlier
    one), ``nodes`` the distinct nodes, ``ongoing_events`` those without an end.
    """
    if states.height == 0:
        return pl.DataFrame(schema=DRAIN_REASONS_MART_SCHEMA)
    hours = (segments.sort(segments.columns).group_by("node", "event_start_ts")
             .agg(pl.col("hours").sum().alias("_hours")))
    # Sorted so first() and the float sums see rows in the same order on every run.
    keyed = (states.join(hours, left_on=["node", "start_ts"], right_on=["node", "event_start_ts"], how="left")
             .sort(["node", "start_ts", "reason", "reason_template_id"], nulls_last=True))
    keys = ["reason_class", "reason_template_id"]
    agg = (
        keyed.group_by(keys)
        .agg(
            pl.col("availability_class").mode().sort().first().alias("availability_class"),
            pl.col("reason_component").mode().sort().first().alias("component"),
            pl.col("reason_template").drop_nulls().first().alias("template"),
            pl.col("reason").drop_nulls().mode().sort().first().alias("example"),
            pl.len().cast(pl.Int64).alias("events"),
            pl.col("node").n_unique().cast(pl.Int64).alias("nodes"),
            pl.col("_hours").fill_null(0.0).sum().alias("node_hours_lost"),
            pl.col("end_ts").is_null().sum().cast(pl.Int64).alias("ongoing_events"),
            pl.col("start_ts").min().alias("first_start_ts"),
            pl.col("start_ts").max().alias("last_start_ts"),
        )
        .rename({"reason_template_id": "template_id"})
    )
    # Sorted before the total: group_by's row order varies, and a float sum's last bits follow it.
    agg = agg.sort(["node_hours_lost", "events", "reason_class", "template_id"],
                   descending=[True, True, False, False], nulls_last=True)
    total = agg["node_hours_lost"].sum()
    return agg.with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("rank"),
        (pl.col("node_hours_lost") / total if total > 0 else pl.lit(None, pl.Float64)).alias("share_node_hours"),
    ).select(list(DRAIN_REASONS_MART_SCHEMA)).cast(DRAIN_REASONS_MART_SCHEMA)  # type: ignore[arg-type]
