"""One identity per NIC of a node: a line naming only its interface gets the NIC's PCI address.

A node's lines name one NIC four ways: its PCI address (``0000:1a:00.0``), its RDMA device (``mlx5_0``),
its network interface (``ibp26s0``, ``ib0``, ``enp26s0f0np0``) and its port number. The kernel's driver
prints (``netdev_printk`` / ``ibdev_printk``) name two at once — ``mlx5_core 0000:1a:00.0 ibp26s0: Port: 1
Link DOWN``, ``mlx5_core 0000:1a:00.0 mlx5_0: ...``, ``ice 0000:17:00.0 ens1f0: NIC Link is Down`` — while
systemd-networkd, NetworkManager, ifup or a health check name the interface only (catalog ``port``, no
``device_pci``). Read alone, such a line matches every part of its node
(:func:`~gpusre.models.reliability.repair_times.same_part`), so networkd's ``ibp26s0: Gained carrier`` would
clear ``ibp156s0``'s ``Link DOWN`` on the same node. :func:`with_nic_addresses` gives it the PCI address
the node's own kernel lines link its interface name to, so it names that NIC only.

Read within one ingest batch, which holds whole files (a node's day), like the port sequences
(:mod:`~gpusre.models.sources.syslog.link_states`): a name the batch's lines of that node never link to an
address — or link to two (an interface renamed across a reboot) — stays without one, and its lines match any
part of their node as before. Only the few lines that carry an address or name a part are read.
"""

from __future__ import annotations

import polars as pl

from gpusre.models.logs.event_catalog import normalize_pci

__all__ = ["DRIVER_PREFIX", "nic_names", "with_nic_addresses"]

#: The kernel's device-print prefix naming an address and an interface or RDMA device together:
#: ``<driver> <pci> <name>: `` (a bare ``<driver> <pci>: `` names the address only and links nothing).
DRIVER_PREFIX = r"(?P<pci>[0-9a-fA-F]+:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]) (?P<name>[A-Za-z][\w.-]*): "
#: A port that is a number (``Port: 1`` of an HCA, an NVSwitch link), not a name.
_NUMBER = r"^\d+$"


def nic_names(rows: pl.DataFrame) -> pl.DataFrame:
    """``node``, ``name``, ``device_pci``: each interface or RDMA device name the lines of ``rows`` link to
    one PCI address on their node (:data:`DRIVER_PREFIX` on a line carrying ``device_pci``); a name linked
    to two addresses on one node is left out (which one a line meant is not known).

    Args:
        rows: classified node-log lines with ``node``, ``message``, ``device_pci`` (others are ignored).
    """
    prefix = pl.col("message").str.extract_groups(DRIVER_PREFIX)
    linked = (rows.select("node", "message", "device_pci")
              .filter(pl.col("device_pci").is_not_null() & pl.col("node").is_not_null())
              .select("node", prefix.struct.field("name"), "device_pci",
                      normalize_pci(prefix.struct.field("pci")).alias("_pci"))
              # the prefix's address is the one the line is about (not a second address it quotes)
              .filter(pl.col("_pci") == pl.col("device_pci")).drop("_pci").unique())
    return (linked.filter(pl.len().over("node", "name") == 1)
            .select(pl.col("node").cast(pl.String), pl.col("name").cast(pl.String), pl.col("device_pci").cast(pl.String)))


def with_nic_addresses(rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` with ``device_pci`` set on each line that names a part by an interface or RDMA device name
    (``port``, not a number) and carries no address, where the node's lines link that name to one PCI
    address (:func:`nic_names`); every other line is unchanged.

    Args:
        rows: classified node-log lines with ``node``, ``message``, ``device_pci``, ``port``.
    """
    named = pl.col("port").is_not_null() & pl.col("device_pci").is_null() & ~pl.col("port").str.contains(_NUMBER)
    wanting = rows.select("node", "port", "device_pci").with_row_index("_row").filter(named & pl.col("node").is_not_null())
    if wanting.is_empty():
        return rows
    names = nic_names(rows)
    if names.is_empty():
        return rows
    found = (wanting.drop("device_pci").join(names, left_on=["node", "port"], right_on=["node", "name"], how="inner")
             .select("_row", "device_pci"))
    if found.is_empty():
        return rows
    device = rows["device_pci"].cast(pl.String).clone()
    device.scatter(found["_row"], found["device_pci"])
    return rows.with_columns(device.cast(rows.schema["device_pci"]).alias("device_pci"))
