"""Which kinds of evidence belong to one fault: the co-occurrence catalog ``catalog/fault_signatures.csv``.

One fault often logs several kinds: an NVLink fault writes Xid 74 on the GPU, SXid on the NVSwitch
and Fabric Manager errors; an uncorrectable DIMM error comes with a machine check and the kernel
panic it causes; a dead leaf switch takes the ports of every node under it down. Each row of the
catalog says which evidence merges into one incident, and within what gap:

* ``scope`` ``node``: evidence on one node whose component *or* component class is ``cause`` and
  evidence whose component or class is ``effect``, with at most ``window_s`` between them (the gap
  between their time spans, so a health check failing for hours stays joined to its fault). When
  cause and effect differ, the incident is named after the cause when the cause was logged before
  the effect, or at most ``cause_after_effect_s`` after it (empty: :data:`DEFAULT_CAUSE_AFTER_EFFECT_S`,
  kernel and daemon lines of one fault reaching the log in either order within seconds; longer where
  the cause is only reported later, e.g. a DIMM error EDAC decodes at the boot after the panic it
  caused). It must not exceed ``window_s``: a cause the window does not join names nothing.
* ``scope`` ``leaf_switch``: ``cause``-class evidence on at least ``min_nodes`` nodes under one leaf
  switch, chained with gaps of at most ``window_s``, is one switch incident.
* ``scope`` ``storage``: the same across the cluster — a file-system server outage.

Each row carries an example line of both sides; ``tests/test_fault_signatures.py`` classifies them with
the event catalog and checks that the rule merges them (and no longer does beyond its window).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import polars as pl

from gpusre.models.vocabulary import load_component_classes

__all__ = ["DEFAULT_CAUSE_AFTER_EFFECT_S", "SCOPES", "Signature", "load_fault_signatures", "node_signatures",
           "wide_signature"]

SCOPES: tuple[str, ...] = ("node", "leaf_switch", "storage")
_COLUMNS = ("signature_id", "scope", "cause", "effect", "window_s", "cause_after_effect_s", "min_nodes",
            "example_cause", "example_effect", "note")
#: A cause logged this long after its effect still names the fault when the row leaves
#: ``cause_after_effect_s`` empty: lines of one fault reach the log in either order within seconds.
DEFAULT_CAUSE_AFTER_EFFECT_S = 60


class SignatureError(ValueError):
    """The catalog file is malformed (names the line)."""


@dataclass(frozen=True)
class Signature:
    """One catalog row (see the module docstring)."""

    signature_id: str
    scope: str
    cause: str
    effect: str
    window_s: int
    min_nodes: int
    example_cause: str
    example_effect: str
    note: str
    cause_after_effect_s: int = DEFAULT_CAUSE_AFTER_EFFECT_S


@lru_cache(maxsize=1)
def load_fault_signatures() -> tuple[Signature, ...]:
    """Every row of the packaged catalog, validated (known scope, names that are components or classes)."""
    text = resources.files("gpusre.models.catalog").joinpath("fault_signatures.csv").read_bytes()
    frame = pl.read_csv(text, infer_schema=False)
    if tuple(frame.columns) != _COLUMNS:
        raise SignatureError(f"fault_signatures.csv: header {frame.columns} is not {list(_COLUMNS)}")
    classes = load_component_classes()
    names = set(classes["component"].to_list()) | set(classes["component_class"].to_list())
    out = []
    for line_no, row in enumerate(frame.iter_rows(named=True), start=2):
        where = f"fault_signatures.csv: line {line_no}"
        if row["scope"] not in SCOPES:
            raise SignatureError(f"{where}: scope {row['scope']!r} is not one of {list(SCOPES)}")
        for side in ("cause", "effect"):
            if row[side] not in names:
                raise SignatureError(f"{where}: {side} {row[side]!r} is neither a component nor a component class")
        try:
            window, min_nodes = int(row["window_s"]), int(row["min_nodes"])
        except (TypeError, ValueError):
            raise SignatureError(f"{where}: window_s and min_nodes must be integers") from None
        if window <= 0 or min_nodes < 1:
            raise SignatureError(f"{where}: window_s must be > 0 and min_nodes >= 1")
        raw = row["cause_after_effect_s"]
        try:
            after = DEFAULT_CAUSE_AFTER_EFFECT_S if raw is None or not raw.strip() else int(raw)
        except ValueError:
            raise SignatureError(f"{where}: cause_after_effect_s must be an integer or empty") from None
        # Only where the window joins the two sides can the later cause name the incident.
        if not 0 <= after <= window:
            raise SignatureError(f"{where}: cause_after_effect_s must be between 0 and window_s ({window})")
        out.append(Signature(row["signature_id"], row["scope"], row["cause"], row["effect"], window, min_nodes,
                             row["example_cause"] or "", row["example_effect"] or "", row["note"] or "", after))
    ids = [s.signature_id for s in out]
    if len(set(ids)) != len(ids):
        raise SignatureError("fault_signatures.csv: duplicate signature_id")
    return tuple(out)


def node_signatures() -> tuple[Signature, ...]:
    """The node-scope rows."""
    return tuple(s for s in load_fault_signatures() if s.scope == "node")


def wide_signature(scope: str) -> Signature | None:
    """The (first) row of a multi-node scope, ``leaf_switch`` or ``storage``; None when the catalog has none."""
    return next((s for s in load_fault_signatures() if s.scope == scope), None)
