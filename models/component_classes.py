"""Component classes: the one mapping from a catalog component to the class MTBF, MTTR and reports use.

``catalog/component_classes.csv`` lists every component the event, drain-reason and health-check
catalogs can name, with its class (gpu, nvlink, network, storage, host, thermal, power, other) and
whether it fails per GPU, whether a burst of its class across a rack is one rack incident
(``rack_wide``, read through :func:`rack_wide_components`: a PDU, a rack's cooling) and whether a burst across
one NVLink domain is (``nvlink_domain_wide``, read through :func:`nvlink_domain_components`: the domain is a
cluster.yaml fact — a GB200 NVL72 rack, two racks of an NVL36x2, one HGX node — so NVLink is not rack-wide).
Every layer reads it through this module, so a new component needs one line in that file, not code.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import polars as pl

__all__ = ["COMPONENT_CLASSES", "CLASS_LABELS", "load_component_classes", "nvlink_domain_components",
           "rack_wide_components", "with_component_class", "class_of", "class_label"]

#: The catalog's boolean columns saying which shared part a burst of a component's class is one incident of.
_WIDE_COLUMNS = ("rack_wide", "nvlink_domain_wide")


@lru_cache(maxsize=1)
def _catalog() -> pl.DataFrame:
    text = resources.files("gpusre.models.catalog").joinpath("component_classes.csv").read_bytes()
    frame = pl.read_csv(text, schema_overrides={"per_gpu": pl.Boolean} | {c: pl.Boolean for c in _WIDE_COLUMNS})
    missing = {"component", "component_class", "per_gpu", *_WIDE_COLUMNS} - set(frame.columns)
    if missing:
        raise ValueError(f"component_classes.csv lacks columns {sorted(missing)}")
    return frame


@lru_cache(maxsize=1)
def _classes() -> pl.DataFrame:
    return _catalog().select("component", "component_class", "per_gpu")


def _wide_components(column: str) -> dict[str, tuple[str, ...]]:
    """Component class -> its components flagged in the boolean catalog ``column``, in catalog order."""
    rows = _catalog().filter(pl.col(column).fill_null(False)).select("component_class", "component").rows()
    out: dict[str, tuple[str, ...]] = {}
    for klass, component in rows:
        out[klass] = (*out.get(klass, ()), component)
    return out


def rack_wide_components() -> dict[str, tuple[str, ...]]:
    """Component class -> its ``rack_wide`` components, in catalog order: failures of such a class on several
    nodes of one rack at once are one rack incident (a PDU trip, a cooling loss), named by the first component
    listed unless the incident's earliest evidence names another one of the list.

    >>> rack_wide_components()["power"]
    ('host_power',)
    """
    return _wide_components("rack_wide")


def nvlink_domain_components() -> dict[str, tuple[str, ...]]:
    """Component class -> its ``nvlink_domain_wide`` components, in catalog order: failures of such a class on
    several hosts of one cluster.yaml ``nvlink_domains`` domain at once are one incident of that domain (an
    NVSwitch tray or Fabric Manager failing), named as :func:`rack_wide_components` names a rack's.

    >>> nvlink_domain_components()
    {'nvlink': ('nvlink', 'nvswitch')}
    """
    return _wide_components("nvlink_domain_wide")


def load_component_classes() -> pl.DataFrame:
    """``component``, ``component_class``, ``per_gpu`` from the packaged catalog."""
    return _classes().clone()


#: Every class of the catalog, in catalog order (``other`` last).
COMPONENT_CLASSES: tuple[str, ...] = tuple(dict.fromkeys(_classes()["component_class"].to_list()))


def with_component_class(frame: pl.DataFrame, classes: pl.DataFrame | None = None,
                         column: str = "component") -> pl.DataFrame:
    """Add ``component_class`` and ``per_gpu`` to a frame with ``column`` (unknown -> ``other``)."""
    classes = load_component_classes() if classes is None else classes
    classes = classes.rename({"component": column}) if column != "component" else classes
    extra = [c for c in ("component_class", "per_gpu") if c in frame.columns]
    return frame.drop(extra).join(classes, on=column, how="left", maintain_order="left").with_columns(
        pl.col("component_class").fill_null("other"), pl.col("per_gpu").fill_null(False))


def class_of(component: pl.Expr) -> pl.Expr:
    """The class of a component expression (unknown or null -> ``other``).

    >>> pl.select(class_of(pl.lit("nvswitch"))).item()
    'nvlink'
    """
    mapping = dict(zip(_classes()["component"].to_list(), _classes()["component_class"].to_list(), strict=True))
    return component.replace_strict(mapping, default="other", return_dtype=pl.String)


#: What the reports call each class (and ``all``, the whole cluster).
CLASS_LABELS: dict[str, str] = {
    "all": "Cluster (all classes)", "gpu": "GPU", "nvlink": "NVLink / NVSwitch", "network": "Network",
    "storage": "Storage", "host": "Host (CPU, memory, OS)", "thermal": "Thermal", "power": "Power",
    "other": "Other / unclassified",
}


def class_label(component_class: str | None) -> str:
    """'nvlink' -> 'NVLink / NVSwitch'; NULL -> the ``other`` label; unknown text as stored."""
    return CLASS_LABELS.get(component_class or "other", component_class or CLASS_LABELS["other"])
