"""InfiniBand port states read in sequence: a port that leaves ``ACTIVE`` for ``INIT`` / ``ARMED`` lost its link.

The kernel prints every port-state change (``mlx5_core <pci> mlx5_0: Port: 1 Link <STATE>``). A port
whose cable or peer goes away logs ``Link DOWN`` (catalog kind ``ib_link_down``); one the subnet manager
drops (an SM failover or heavy re-sweep, a partition change) falls back to the *logical* states
``INIT`` / ``ARMED`` without going physically down, and no traffic passes until it is ``ACTIVE``
again: for a job the same link loss. The same ``INIT`` / ``ARMED`` lines are printed at every
bring-up — after a boot or a driver load, and after a physical ``Link DOWN`` as the link trains again
(``DOWN -> INIT -> ARMED -> ACTIVE``) — where they are no fault. One line cannot tell which; the
port's previous state can. So the catalog (``log_patterns.csv`` ``mlx5_port_state``) classes the line
informational, and :func:`logical_link_losses` re-reads it in its port's sequence: an ``INIT`` /
``ARMED`` whose previous line about that port (or the node's last boot line, which resets every port)
is ``Link ACTIVE`` — or that has none in the batch and no boot before it: a running node's port — is a
link loss and takes the classes of the catalog's ``ib_link_down`` row (kind ``ib_link_down``: the same
fault, cleared by the port's ``Link ACTIVE``, grouped by the leaf / fabric rules). The sequence is
read within one ingest batch, which holds whole files (a node's day): a ``DOWN`` logged in the
previous day's file just before midnight leaves the ``INIT`` after it a second loss line of the same
outage, a few seconds later (one incident either way).

The same reading settles the boot's own ``Link DOWN``: a port that prints ``DOWN`` within
:data:`BRING_UP` of its node's boot and before its first ``ACTIVE`` since is starting up, not losing a
link (:func:`bring_up_downs`): it takes the classes of the catalog's ``mlx5_port_state`` row, so a
fleet rebooted at once makes no fabric incident. A port that was ``ACTIVE`` after the boot and then goes
``DOWN`` lost its link, as always.
"""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from gpusre.models.logs.event_catalog import load_log_patterns

__all__ = ["BOOT_KINDS", "BRING_UP", "LOGICAL_LOSS_STATES", "bring_up_downs", "logical_link_losses",
           "with_logical_link_losses"]

#: Catalog kinds that mean the node (re)booted or its drivers loaded: every port comes up from scratch
#: after them (``recovery_events.csv`` evidence ``reboot``).
BOOT_KINDS: tuple[str, ...] = ("kernel_boot", "driver_loaded")
#: The logical port states a port falls back to when the subnet manager drops it (``ACTIVE_DEFER`` is
#: still forwarding: not a loss).
LOGICAL_LOSS_STATES: tuple[str, ...] = ("INIT", "ARMED")
#: Catalog rows of the port-state lines: a port down (physical), back ACTIVE, or in a logical state.
_DOWN, _ACTIVE, _LOGICAL = "ib_link_down", "ib_link_up", "mlx5_port_state"
#: The catalog row whose classes a logical link loss takes, and the one a boot's bring-up DOWN takes.
_LOSS_ROW, _BRING_UP_ROW = "ib_link_down", "mlx5_port_state"
#: How long after a node's boot (or driver load) a port's ``Link DOWN`` before its first ``ACTIVE`` is the
#: bring-up's initial state: the HCA driver loads within a minute or two of the boot banner, and no
#: job runs on the node before slurmd registers it, later still.
BRING_UP = timedelta(minutes=10)
_CLASS_COLUMNS = ("kind", "component", "cause_class", "severity", "action")


def _port_sequences(rows: pl.DataFrame) -> pl.DataFrame:
    """The port-state lines of ``rows`` (``_row``: their position) with each port's previous state
    (``_prev``) and its last boot or ``ACTIVE`` before them (``_anchor``, ``_anchor_ts``); a boot line
    counts for every port of its node."""
    state = (pl.when(pl.col("kind").is_in(list(BOOT_KINDS))).then(pl.lit("boot"))
             .when(pl.col("pattern_id") == _DOWN).then(pl.lit("down"))
             .when((pl.col("pattern_id") == _ACTIVE) & pl.col("device_pci").is_not_null()).then(pl.lit("active"))
             .when((pl.col("pattern_id") == _LOGICAL)
                   & pl.col("message").str.contains(r"Link (?:" + "|".join(LOGICAL_LOSS_STATES) + r")\b"))
             .then(pl.lit("logical")))
    # The few port-state and boot lines first: the state's regex then reads them only, not a night's 10 M.
    candidate = (pl.col("kind").is_in(list(BOOT_KINDS)) | pl.col("pattern_id").is_in([_DOWN, _ACTIVE, _LOGICAL]))
    lines = (rows.select("node", "ts", "device_pci", "port", "kind", "pattern_id", "message")
             .with_row_index("_row").filter(candidate & pl.col("node").is_not_null())
             .select("_row", "node", pl.col("ts").cast(pl.Datetime("us", "UTC")), "device_pci", "port",
                     state.alias("_state"))
             .filter(pl.col("_state").is_not_null()))
    ports = lines.filter(pl.col("_state") != "boot")
    # A boot resets every port of its node: one copy of the boot line per port the node logged.
    boots = (lines.filter(pl.col("_state") == "boot").drop("device_pci", "port")
             .join(ports.select("node", "device_pci", "port").unique(), on="node"))
    port = ["node", "device_pci", "port"]
    anchor = pl.col("_state").is_in(["boot", "active"])
    return (pl.concat([ports, boots.select(ports.columns)])
            .sort(*port, "ts", "_row", nulls_last=True)
            .with_columns(pl.col("_state").shift(1).over(port).alias("_prev"),
                          pl.when(anchor).then(pl.col("_state")).shift(1).forward_fill().over(port).alias("_anchor"),
                          pl.when(anchor).then(pl.col("ts")).shift(1).forward_fill().over(port).alias("_anchor_ts")))


def _mask(rows: pl.DataFrame, picked: pl.Series) -> pl.Series:
    return pl.int_range(rows.height, eager=True, dtype=pl.UInt32).is_in(picked.implode())


def logical_link_losses(rows: pl.DataFrame, seq: pl.DataFrame | None = None) -> pl.Series:
    """Boolean per row of ``rows``: the line is a port leaving ``ACTIVE`` for ``INIT`` / ``ARMED`` (module
    docstring), not a bring-up.

    Args:
        rows: classified node-log lines in log order, with ``node``, ``ts``, ``message``, ``kind``,
            ``pattern_id``, ``device_pci``, ``port`` (other columns are ignored).
        seq: ``_port_sequences(rows)`` when the caller has it already.
    """
    seq = _port_sequences(rows) if seq is None else seq
    lost = seq.filter((pl.col("_state") == "logical")
                      & (pl.col("_prev").is_null() | (pl.col("_prev") == "active")))["_row"]
    return _mask(rows, lost).alias("logical_link_loss")


def bring_up_downs(rows: pl.DataFrame, seq: pl.DataFrame | None = None) -> pl.Series:
    """Boolean per row of ``rows`` (as :func:`logical_link_losses`): a ``Link DOWN`` its port printed within
    :data:`BRING_UP` after the node's boot and before the port was first ``ACTIVE`` since: the initial
    state of a port being brought up (``DOWN -> INIT -> ARMED -> ACTIVE``), no link lost."""
    seq = _port_sequences(rows) if seq is None else seq
    up = seq.filter((pl.col("_state") == "down") & (pl.col("_anchor") == "boot")
                    & (pl.col("ts") - pl.col("_anchor_ts") <= BRING_UP))["_row"]
    return _mask(rows, up).alias("bring_up_down")


def with_logical_link_losses(rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` (as :func:`logical_link_losses`) with each logical link loss given the classes of the
    catalog's ``ib_link_down`` row, and each bring-up ``Link DOWN`` (:func:`bring_up_downs`) those of its
    ``mlx5_port_state`` row (``kind``, ``component``, ``cause_class``, ``severity``, ``action``);
    ``pattern_id`` stays the line's own pattern."""
    if rows.filter(pl.col("pattern_id").is_in([_DOWN, _LOGICAL])).is_empty():
        return rows
    seq = _port_sequences(rows)
    loss, up = logical_link_losses(rows, seq), bring_up_downs(rows, seq)
    if not (loss.any() or up.any()):
        return rows
    catalog = load_log_patterns()
    lost_row, up_row = (catalog.filter(pl.col("pattern_id") == p).row(0, named=True) for p in (_LOSS_ROW, _BRING_UP_ROW))
    return rows.with_columns(
        pl.when(loss).then(pl.lit(lost_row[c], dtype=rows.schema[c]))
        .when(up).then(pl.lit(up_row[c], dtype=rows.schema[c]))
        .otherwise(pl.col(c)).alias(c)
        for c in _CLASS_COLUMNS)
