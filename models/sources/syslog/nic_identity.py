"""One identity per NIC of a node: a line naming only its interface gets the NIC's PCI address.

A node's lines name one NIC four ways: its PCI address (``0000:1a:00.0``), its RDMA device (``mlx5_0``),
its network interface (``ibp26s0``, ``ib0``, ``enp26s0f0np0``) and its port number. The kernel's driver
prints (``netdev_printk`` / ``ibdev_printk``) name two at once — ``mlx5_core 0000:1a:00.0 ibp26s0: Port: 1
Link DOWN``, ``mlx5_core 0000:1a:00.0 mlx5_0: ...``, ``ice 0000:17:00.0 ens1f0: NIC Link is Down``, the
boot's ``mlx5_core 0000:1a:00.0 ibp26s0: renamed from ib0`` — while systemd-networkd, NetworkManager,
ifup or a health check name the interface only (catalog ``port``, no ``device_pci``). Read alone, such a
line would match every part of its node, so NetworkManager's ``ibp26s0: carrier: link connected`` would
clear ``ibp156s0``'s ``Link DOWN`` on the same node. :func:`with_nic_addresses` gives it the PCI address
of its NIC, from two sources in this order:

1. the node's own kernel lines (:func:`nic_names`): any line opening with the device-print prefix
   ``<driver> <pci> <name>: ``, a catalog event or not (the boot's ``renamed from`` line is the one that
   links every interface of a node that logs its link changes by RDMA device name only);
2. the name itself, when it is systemd's predictable path name, which encodes the address
   (:func:`pci_of_interface_name`: ``ibp26s0`` is ``0000:1a:00.0``) — a day whose file holds no boot.

Read within one ingest batch, which holds whole files (a node's day), like the port sequences
(:mod:`~gpusre.models.sources.syslog.link_states`). A name the batch's kernel lines of that node link to
two addresses (an interface renamed across a reboot) is not resolved at all, not even from its spelling:
the kernel says that name is not where its spelling puts it. A name neither source ties to an address
(``ib0`` with no rename line, a site's own names) stays without one: such a line then answers only for
lines of its own name or naming no part, never for a part identified by its address
(:func:`~gpusre.models.reliability.repair_times.same_part`).

Cost: one anchored regex test over the batch's messages (a night is ~10 M lines; a line not opening with
``<word> <hex>:`` fails within its first word), group extraction on the few that pass.
"""

from __future__ import annotations

import polars as pl

from gpusre.models.logs.event_catalog import normalize_pci

__all__ = ["DRIVER_PREFIX", "PREDICTABLE_NAME", "nic_names", "pci_of_interface_name", "with_nic_addresses"]

#: The kernel's device-print prefix opening a message: ``dev_printk``'s driver and device (``mlx5_core
#: 0000:1a:00.0``), then ``netdev_printk``'s interface or ``ibdev_printk``'s RDMA device and ``: ``. Anchored:
#: an address later in the message may be another device the line quotes. A bare ``<driver> <pci>: ``
#: names the address only and links nothing; ``ibp26s0 (unregistering): `` is no name either.
DRIVER_PREFIX = r"^[\w-]+ (?P<pci>[0-9a-fA-F]+:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]) (?P<name>[A-Za-z][\w.-]*): "
#: systemd's predictable name of a PCI network device by its location (systemd.net-naming-scheme(7),
#: ``ID_NET_NAME_PATH``): ``ib`` (InfiniBand) or ``en`` (Ethernet), ``P<domain>`` when the domain is not 0,
#: ``p<bus>s<slot>``, ``f<function>`` for a multi-function device, then ``n<phys_port_name>`` or
#: ``d<dev_port>`` for a port of that function — every number in decimal. A child interface (IPoIB P_Key
#: ``ibp26s0.8001``, VLAN ``enp26s0np0.100``) is on its parent's NIC. USB (``u``) and other bus suffixes
#: name a device behind the PCI one and do not match; nor do slot (``ens1f0``) or onboard (``eno1``) names,
#: whose number is the firmware's, not an address.
PREDICTABLE_NAME = (r"^(?:ib|en)(?:P(?P<domain>\d+))?p(?P<bus>\d+)s(?P<slot>\d+)(?:f(?P<function>\d+))?"
                    r"(?:n[\w-]+|d\d+)?(?:\.\w+)?$")
#: A port that is a number (``Port: 1`` of an HCA, an NVSwitch link), not a name.
_NUMBER = r"^\d+$"
_HEX = "0123456789abcdef"


def _hex(number: pl.Expr, width: int) -> pl.Expr:
    """``number`` (non-negative) as ``width`` lower-case hex digits (Polars has no integer-to-hex cast)."""
    return pl.concat_str([pl.lit(_HEX).str.slice((number // 16 ** k) % 16, 1) for k in reversed(range(width))])


def pci_of_interface_name(name: pl.Expr) -> pl.Expr:
    """The normalized PCI address (``dddd:bb:dd.f``) a systemd predictable path name encodes
    (:data:`PREDICTABLE_NAME`), null for any other name or one whose numbers are no PCI location (bus
    above 255, slot above 31, function above 7).

    >>> pl.select(pci_of_interface_name(pl.lit("ibp24s0"))).item()
    '0000:18:00.0'
    >>> pl.select(pci_of_interface_name(pl.lit("enP1p24s0f1np1"))).item()
    '0001:18:00.1'
    >>> pl.select(pci_of_interface_name(pl.lit("ib0"))).item() is None
    True
    """
    groups = name.str.extract_groups(PREDICTABLE_NAME)

    def number(field: str) -> pl.Expr:
        return groups.struct.field(field).cast(pl.Int64, strict=False)

    domain, bus, slot = number("domain").fill_null(0), number("bus"), number("slot")
    function = number("function").fill_null(0)
    address = pl.format("{}:{}:{}.{}", _hex(domain, 8), _hex(bus, 2), _hex(slot, 2), _hex(function, 1))
    valid = (domain <= 0xFFFF_FFFF) & (bus <= 0xFF) & (slot <= 0x1F) & (function <= 7)
    return pl.when(valid).then(normalize_pci(address))


def _kernel_links(rows: pl.DataFrame) -> pl.DataFrame:
    """``node``, ``name``, ``device_pci``: every distinct (name, address) pair the device-print prefix
    (:data:`DRIVER_PREFIX`) of the lines of ``rows`` shows on their node."""
    message = pl.col("message")
    prefix = message.str.extract_groups(DRIVER_PREFIX)
    return (rows.lazy().select("node", "message")
            .filter(pl.col("node").is_not_null() & message.str.contains(DRIVER_PREFIX))
            .select(pl.col("node").cast(pl.String), prefix.struct.field("name").cast(pl.String),
                    prefix.struct.field("pci").alias("_pci"))
            # a NIC's every print repeats its prefix: the address is normalized once per distinct pair
            .unique()
            .select("node", "name", normalize_pci(pl.col("_pci")).alias("device_pci")).unique().collect())


def nic_names(rows: pl.DataFrame) -> pl.DataFrame:
    """``node``, ``name``, ``device_pci``: each interface or RDMA device name the kernel lines of ``rows``
    link to one PCI address on their node (the ``<driver> <pci> <name>: `` prefix, :data:`DRIVER_PREFIX`, of
    any line: an event, a ``renamed from`` at boot, any other driver print); a name linked to two
    addresses on one node is left out (which one a line meant is not known).

    Args:
        rows: node-log lines with ``node`` and ``message`` (others are ignored).
    """
    return _one_address(_kernel_links(rows))


def _one_address(links: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``links`` whose name has one address on its node."""
    return links.filter(pl.len().over("node", "name") == 1)


def with_nic_addresses(rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` with ``device_pci`` set on each line that names a part by an interface or RDMA device name
    (``port``, not a number) and carries no address: the address the node's kernel lines link that name
    to (:func:`nic_names`), else, when no kernel line of the node names it, the address its predictable
    name encodes (:func:`pci_of_interface_name`); every other line is unchanged.

    Args:
        rows: classified node-log lines with ``node``, ``message``, ``device_pci``, ``port``.
    """
    named = pl.col("port").is_not_null() & pl.col("device_pci").is_null() & ~pl.col("port").str.contains(_NUMBER)
    wanting = rows.select("node", "port", "device_pci").with_row_index("_row").filter(named & pl.col("node").is_not_null())
    if wanting.is_empty():
        return rows
    links = _kernel_links(rows)
    wanted = wanting.select(pl.col("node").cast(pl.String), pl.col("port").cast(pl.String).alias("name")).unique()
    # The kernel's word first (a site may name interfaces its own way); the spelling only for a name it
    # never printed on that node — one it printed on two addresses stays unresolved.
    spelled = (wanted.join(links, on=["node", "name"], how="anti")
               .with_columns(pci_of_interface_name(pl.col("name")).alias("device_pci")).drop_nulls("device_pci"))
    names = pl.concat([_one_address(links), spelled], how="diagonal_relaxed")
    found = (wanting.drop("device_pci").with_columns(pl.col("node").cast(pl.String), pl.col("port").cast(pl.String))
             .join(names, left_on=["node", "port"], right_on=["node", "name"], how="inner")
             .select("_row", "device_pci"))
    if found.is_empty():
        return rows
    device = rows["device_pci"].cast(pl.String).clone()
    device.scatter(found["_row"], found["device_pci"])
    return rows.with_columns(device.cast(rows.schema["device_pci"]).alias("device_pci"))
