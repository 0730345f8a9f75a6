"""A line naming a NIC by its interface only gets the NIC's PCI address from the node's own kernel lines
(outside probe Y, 2026-12-05).

The probe's h200-003 runs systemd-networkd: every link change is logged twice, by the kernel
(``mlx5_core 0000:1a:00.0 ibp26s0: Port: 1 Link DOWN``: address, interface, port number) and by networkd
(``ibp26s0: Lost carrier``: the interface only). Rail ibp26s0 (0000:1a:00.0) went down 10:00:00 and came back
10:02:00; rail ibp156s0 (0000:9c:00.0) went down 10:00:05 and came back only at 13:00:00. networkd's
``ibp26s0: Gained carrier`` (10:02:01) named no address, so it matched every part of the node and cleared
ibp156s0's ``Link DOWN``: the incident was "repaired" at 10:02:01 (0.034 h) and job 1010 (h200-003, ending
10:30 while ibp156s0 was still down) was blamed on the user.

Rule (``models/sources/syslog/nic_identity.py``): at ingest, within one batch (whole files: a node's day), a
line whose part is an interface name and that carries no address takes the address the node's kernel lines
link that name to (``<driver> <pci> <name>: ``), else the address its systemd predictable name encodes
(``ibp26s0`` is ``0000:1a:00.0``); a name neither ties to an address (``ib0``; one linked to two addresses)
stays without one and then matches only lines of its own name or naming no part, never a NIC identified by
its address (outside probe AH, 2026-11-03; ``tests/test_nic_identity_spellings.py``). ``same_part`` compares
a port number with a port number and a name with a name, and two names only where a line lacks an address.

Hand-computed figures: the incident is repaired when ibp156s0 is back, 13:00:00 - 10:00:00 = 3.0 h; job 1010
(one node, 4 GPUs, 09:00 .. 10:30, 1.5 h >= the 1-h checkpoint interval) loses 4 x 0.5 = 2.0 GPU-h.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest

from gpusre.models.alerts.nodes import HostMapping
from gpusre.models.failures.attribution import attribute_failures
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, merge_incidents
from gpusre.models.logs.templates import TemplateMiner
from gpusre.models.reliability.repair_times import PART_COLUMNS, join_asof_same_part, recovery_ends, same_part
from gpusre.models.sources.syslog.ingest import _lines_frame
from gpusre.models.sources.syslog.nic_identity import nic_names, with_nic_addresses
from gpusre.models.sources.syslog.parse import SyslogInput, parse_syslog_batch
from tests.hand_landing import query_rows, run_hand_landing

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")
RAIL_A, RAIL_B = "0000:1a:00.0", "0000:9c:00.0"


def t(h: int, m: int = 0, s: int = 0) -> datetime:
    """2026-11-29 h:m:s UTC (the probe's day)."""
    return datetime(2026, 11, 29, h, m, s, tzinfo=UTC)


def line(at: datetime, node: str, text: str) -> str:
    return f"{at.isoformat(timespec='microseconds')} {node} {text}"


def kernel(pci: str, name: str, state: str) -> str:
    return f"kernel: mlx5_core {pci} {name}: Port: 1 Link {state}"


def networkd(name: str, what: str) -> str:
    return f"systemd-networkd[1187]: {name}: {what} carrier"


#: The probe's h200-003: both rails, kernel and networkd lines.
BOTH = [(t(10), kernel(RAIL_A, "ibp26s0", "DOWN")), (t(10, 0, 1), networkd("ibp26s0", "Lost")),
        (t(10, 0, 5), kernel(RAIL_B, "ibp156s0", "DOWN")), (t(10, 0, 6), networkd("ibp156s0", "Lost")),
        (t(10, 2), kernel(RAIL_A, "ibp26s0", "ACTIVE")), (t(10, 2, 1), networkd("ibp26s0", "Gained")),
        (t(13), kernel(RAIL_B, "ibp156s0", "ACTIVE")), (t(13, 0, 1), networkd("ibp156s0", "Gained"))]
#: The same outage logged by networkd only (landing_v2 of the probe): the names alone give the addresses.
NETWORKD_ONLY = [(at, text) for at, text in BOTH if text.startswith("systemd-networkd")]
#: The kernel names the RDMA devices (mlx5_0 / mlx5_1), never the interfaces networkd names: no kernel line
#: links ibp26s0 or ibp156s0, their spelling does (26 = 0x1a, 156 = 0x9c).
UNLINKED = [(at, text.replace("ibp26s0: Port", "mlx5_0: Port").replace("ibp156s0: Port", "mlx5_1: Port"))
            for at, text in BOTH]
#: As UNLINKED, with the kernel's own interface names (net.ifnames=0: ib0 / ib1, no rename line): nothing
#: ties ib0 or ib1 to an address.
UNNAMED = [(at, text.replace("ibp26s0", "ib0").replace("ibp156s0", "ib1")) for at, text in UNLINKED]


def ingest(files: dict[str, list[tuple[datetime, str]]]) -> pl.DataFrame:
    """core.node_events-like rows (``event_id`` 1.. over the recognized lines, EVENT_SCHEMA and the part
    columns) of per-node files of ``(ts, text)``, through the real ingest's parse and frame steps."""
    inputs = [SyslogInput(("\n".join(line(at, node, text) for at, text in lines) + "\n").encode(),
                          f"syslog/2026-11-29/{node}.log", node, None) for node, lines in files.items()]
    batch = parse_syslog_batch(inputs)
    assert batch.rejects.is_empty(), batch.rejects
    rows, _ = _lines_frame(batch.lines, TemplateMiner.new(), HostMapping())
    return (rows.filter(pl.col("kind").is_not_null()).with_row_index("event_id", offset=1)
            .select(pl.col("event_id").cast(pl.Int64), pl.col("ts").cast(DT), "node", "message",
                    *(c for c in dict.fromkeys((*EVENT_SCHEMA, *PART_COLUMNS)) if c not in ("event_id", "ts", "node"))))


def parts(ev: pl.DataFrame) -> list[tuple]:
    return ev.select("node", "kind", "device_pci", "port").rows()


# --- the ingest step ---------------------------------------------------------------------------------------


def test_networkd_lines_take_their_nics_address() -> None:
    ev = ingest({"h200-003": BOTH})
    assert parts(ev) == [
        ("h200-003", "ib_link_down", RAIL_A, "1"), ("h200-003", "ib_link_down", RAIL_A, "ibp26s0"),
        ("h200-003", "ib_link_down", RAIL_B, "1"), ("h200-003", "ib_link_down", RAIL_B, "ibp156s0"),
        ("h200-003", "ib_link_up", RAIL_A, "1"), ("h200-003", "ib_link_up", RAIL_A, "ibp26s0"),
        ("h200-003", "ib_link_up", RAIL_B, "1"), ("h200-003", "ib_link_up", RAIL_B, "ibp156s0")]


def test_networkd_only_and_unlinked_names_take_the_address_their_name_encodes() -> None:
    # (was: stayed without an address) ibp26s0 is bus 26 = 0x1a, slot 0: 0000:1a:00.0; ibp156s0 0000:9c:00.0
    assert ingest({"n1": NETWORKD_ONLY})["device_pci"].to_list() == [RAIL_A, RAIL_B, RAIL_A, RAIL_B]
    ev = ingest({"n1": UNLINKED})
    assert ev.filter(pl.col("port").str.starts_with("ib"))["device_pci"].to_list() == [RAIL_A, RAIL_B, RAIL_A, RAIL_B]


def test_kernel_names_stay_without_an_address() -> None:
    # the kernel's lines link mlx5_0 / mlx5_1, names no line of networkd uses, and ib0 / ib1 encode nothing
    ev = ingest({"n1": UNNAMED})
    assert ev.filter(pl.col("port").str.starts_with("ib"))["device_pci"].to_list() == [None] * 4


def test_a_link_counts_on_its_own_node_only() -> None:
    # h200-004 logs networkd lines for ib0 but no kernel line: h200-003's link of ib0 is not its own (and the
    # kernel's name ib0 encodes no address).
    ev = ingest({"h200-003": [(t(10), kernel(RAIL_A, "ib0", "DOWN")), (t(10, 0, 1), networkd("ib0", "Lost"))],
                 "h200-004": [(t(11), networkd("ib0", "Lost"))]})
    assert parts(ev) == [("h200-003", "ib_link_down", RAIL_A, "1"), ("h200-003", "ib_link_down", RAIL_A, "ib0"),
                         ("h200-004", "ib_link_down", None, "ib0")]


def test_a_name_linked_to_two_addresses_is_not_resolved() -> None:
    # After a re-enumeration the same interface name sits on another address: which one networkd meant is
    # not known. The RDMA device name (mlx5_0) and the interface name of one address both link to it.
    rows = pl.DataFrame({
        "node": ["n1"] * 5,
        "message": [f"mlx5_core {RAIL_A} ib0: Port: 1 Link DOWN", f"mlx5_core {RAIL_B} ib0: Port: 1 Link DOWN",
                    f"mlx5_core {RAIL_A} mlx5_0: Port: 1 Link DOWN", "systemd-networkd[1]: ib0: Lost carrier",
                    f"mlx5_core {RAIL_A}: mlx5_port_module_event: Port module event: module 0, Cable unplugged"],
        "device_pci": [RAIL_A, RAIL_B, RAIL_A, None, RAIL_A],
        "port": ["1", "1", "1", "ib0", "0"]})
    assert nic_names(rows).rows() == [("n1", "mlx5_0", RAIL_A)]
    assert with_nic_addresses(rows)["device_pci"].to_list() == [RAIL_A, RAIL_B, RAIL_A, None, RAIL_A]
    # A line naming the RDMA device only (a site's health check) takes its address.
    nhc = rows.with_columns(pl.Series("port", ["1", "1", "1", "mlx5_0", "0"]))
    assert with_nic_addresses(nhc)["device_pci"].to_list() == [RAIL_A, RAIL_B, RAIL_A, RAIL_A, RAIL_A]


# --- same_part over the resolved lines ----------------------------------------------------------------------

#: (device_pci, port) shapes of the lines above: kernel (address, number), networkd resolved (address, name)
#: and unresolved (no address, name), RDMA-device name with address, a Lustre target, a portless line.
SHAPES = [(RAIL_A, "1"), (RAIL_B, "1"), (RAIL_A, "2"), (RAIL_A, "ibp26s0"), (RAIL_A, "mlx5_0"), (RAIL_B, "ibp156s0"),
          (None, "ibp26s0"), (None, "ibp156s0"), (None, "lustre1-OST0003"), (None, None), (RAIL_A, None),
          (RAIL_A, "ib1"), (None, "ib1")]


@pytest.mark.parametrize(("a", "b", "same"), [
    ((RAIL_A, "1"), (RAIL_A, "ibp26s0"), True),        # one NIC: its port number and its interface
    ((RAIL_B, "1"), (RAIL_A, "ibp26s0"), False),       # the probe's bug: another NIC's interface
    ((RAIL_A, "1"), (RAIL_A, "2"), False),             # two ports of one HCA
    ((RAIL_A, "ibp26s0"), (RAIL_A, "mlx5_0"), True),   # two names of one address: the address decides
    ((None, "ibp26s0"), (RAIL_A, "ibp26s0"), True),    # a name unresolved in its batch, resolved in another
    ((None, "ibp156s0"), (RAIL_A, "ibp26s0"), False),  # two interfaces
    ((None, "ib1"), (RAIL_A, "1"), False),             # a name alone is no NIC identified by its address (was True)
    ((None, "ib1"), (RAIL_A, "ib1"), True),            # ... unless that line names it so
    ((None, "ib1"), (RAIL_A, None), False),            # (the kernel's 'enp24s0np0: Link down' carries no port)
    ((None, "ib1"), (None, None), True),               # a line naming no part still answers for it
    ((None, None), (RAIL_B, "1"), True),               # a line naming no part
])
def test_same_part(a: tuple, b: tuple, same: bool) -> None:
    frame = pl.DataFrame({"device_pci": [a[0]], "gpu_pci": [None], "port": [a[1]], "device_pci_r": [b[0]],
                          "gpu_pci_r": [None], "port_r": [b[1]]}, schema={c: pl.String for c in (
                              "device_pci", "gpu_pci", "port", "device_pci_r", "gpu_pci_r", "port_r")})
    assert frame.select(same_part("_r")).item() is same
    flipped = frame.select(pl.col("device_pci_r").alias("device_pci"), "gpu_pci", pl.col("port_r").alias("port"),
                           pl.col("device_pci").alias("device_pci_r"), "gpu_pci_r", pl.col("port").alias("port_r"))
    assert flipped.select(same_part("_r")).item() is same


def test_join_asof_same_part_agrees_with_same_part() -> None:
    # Every pair of shapes: the as-of join (grouped by shape) finds a right row exactly where same_part holds.
    left = pl.DataFrame({"node": ["n"] * len(SHAPES), "at": [t(10)] * len(SHAPES),
                         "device_pci": [d for d, _ in SHAPES], "gpu_pci": [None] * len(SHAPES),
                         "port": [p for _, p in SHAPES]},
                        schema={"node": pl.String, "at": DT, "device_pci": pl.String, "gpu_pci": pl.String,
                                "port": pl.String})
    for i, (device, port) in enumerate(SHAPES):
        right = left.slice(i, 1).select("node", pl.col("at").alias("up") + timedelta(minutes=1), "device_pci",
                                        "gpu_pci", "port")
        got = join_asof_same_part(left, right, left_on="at", right_on="up", by=["node"], strategy="forward")
        expected = left.with_columns(pl.lit(device, pl.String).alias("device_pci_r"), pl.lit(None, pl.String).alias("gpu_pci_r"),
                                     pl.lit(port, pl.String).alias("port_r")).select(same_part("_r"))
        assert got["up"].is_not_null().to_list() == expected.to_series().to_list(), (device, port)


# --- attribution and repair over the ingested lines ----------------------------------------------------------

JOB_SCHEMA = {"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
              "start_ts": DT, "end_ts": DT, "elapsed_s": pl.Int64, "exit_code": pl.Int64, "exit_signal": pl.Int64}
JOB_1010 = {"job_id": "1010", "state": "FAILED", "nodes": ["h200-003"], "n_gpus": 4, "start_ts": t(9),
            "end_ts": t(10, 30), "elapsed_s": 5400, "exit_code": 1, "exit_signal": 0}


def attribute_and_repair(ev: pl.DataFrame) -> tuple[dict, datetime | None]:
    incidents, members = merge_incidents(ev)
    assert incidents.height == 1
    row = attribute_failures(pl.DataFrame([JOB_1010], schema=JOB_SCHEMA), ev, incidents).row(0, named=True)
    # One evidence row per incident, node and part with its last evidence, as the repair mart gives it.
    evidence = (members.join(ev, on="event_id").group_by("incident_id", "node", *PART_COLUMNS)
                .agg(pl.col("ts").max().alias("last_ts")).with_columns(pl.lit("network").alias("component_class")))
    ends = recovery_ends(evidence, ev)
    return row, (ends["recovered_ts"].item() if ends.height else None)


def test_the_probe_node_is_repaired_when_its_last_rail_is_back() -> None:
    row, repaired = attribute_and_repair(ingest({"h200-003": BOTH}))
    assert repaired == t(13)  # 3.0 h after 10:00:00
    assert (row["attribution"], row["component"], row["lost_gpu_hours"]) == ("infrastructure", "network", 2.0)


def test_networkd_only_node_is_unchanged() -> None:
    # The interfaces' own lines: ibp156s0's Gained carrier (13:00:01) is its recovery, as before the fix.
    row, repaired = attribute_and_repair(ingest({"h200-003": NETWORKD_ONLY}))
    assert repaired == t(13, 0, 1)
    assert (row["attribution"], row["component"], row["lost_gpu_hours"]) == ("infrastructure", "network", 2.0)


def test_a_node_whose_interfaces_only_their_names_place_is_repaired_with_its_last_rail() -> None:
    # (was: repaired 10:02:01, job 'user') No kernel line links ibp26s0, its name places it on 0000:1a:00.0:
    # its Gained carrier (10:02:01) is no recovery of mlx5_1's (0000:9c:00.0) DOWN, mlx5_1's ACTIVE (13:00) is.
    row, repaired = attribute_and_repair(ingest({"h200-003": UNLINKED}))
    assert repaired == t(13)
    assert (row["attribution"], row["component"], row["lost_gpu_hours"]) == ("infrastructure", "network", 2.0)


def test_a_node_whose_interfaces_nothing_places_is_repaired_with_its_last_rail() -> None:
    # (was: ib0's Gained carrier cleared mlx5_1's DOWN) ib0 and ib1 are tied to no address: ib0's Gained
    # carrier (10:02:01) answers for ib0's own Lost carrier only; mlx5_1 waits for its ACTIVE (13:00:00) and
    # ib1's Lost carrier for ib1's Gained carrier (13:00:01), the last: 3 h 0 min 1 s.
    row, repaired = attribute_and_repair(ingest({"h200-003": UNNAMED}))
    assert repaired == t(13, 0, 1)
    assert (row["attribution"], row["component"], row["lost_gpu_hours"]) == ("infrastructure", "network", 2.0)


# --- end to end ----------------------------------------------------------------------------------------------

_SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
                 "Elapsed|Timelimit|NNodes|NCPUS|ReqTRES|AllocTRES|NodeList|Comment")
_TRES = "billing=96,cpu=96,gres/gpu=8,mem=512G,node=1"


def _job(job_id: int, node: str, state: str, exit_code: str, start: str, end: str, elapsed: str) -> str:
    return (f"{job_id}|{job_id}|job-{job_id}|bob|1002|llm|llm|gpu|normal|{state}|{exit_code}|{start}|{start}|{start}|"
            f"{end}|{elapsed}|20:00:00|1|96|{_TRES}|{_TRES}|{node}|")


def _log(node: str, extra: list[tuple[datetime, str]]) -> str:
    cron = [(t(h, 17, 1), f"CRON[{2000 + h}]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)")
            for h in (0, 6, 12, 18, 23)]
    return "\n".join(line(at, node, text) for at, text in sorted(cron + extra)) + "\n"


def _later(lines: list[tuple[datetime, str]], hours: int) -> list[tuple[datetime, str]]:
    return [(at + timedelta(hours=hours), text) for at, text in lines]


#: gpu01: the probe's h200-003 (kernel + networkd) from 10:00; gpu02: networkd only, 4 h later; gpu03: the
#: kernel names mlx5_N only and networkd the kernel's ib0 / ib1, 8 h later (apart in time: three nodes' links
#: down at once are a fabric incident).
#: One job per node, FAILED 30 min after its node's first DOWN after 1.5 h (8 GPUs: 8 x 0.5 = 4.0 GPU-h when
#: infrastructure).
LANDING = {
    "cluster.yaml": 'cluster: tiny\ntimezone: UTC\nnodes: "gpu[01-03]"\ngpus_per_node: 8\n',
    "sacct/sacct_2026-11-29.psv": "\n".join([_SACCT_HEADER] + [
        _job(1011 + i, f"gpu0{i + 1}", "FAILED", "1:0", f"2026-11-29T{9 + 4 * i:02d}:00:00",
             f"2026-11-29T{10 + 4 * i:02d}:30:00", "01:30:00") for i in (0, 1, 2)] + [
        _job(1020, "gpu01", "COMPLETED", "0:0", "2026-11-29T20:00:00", "2026-11-29T23:30:00", "03:30:00")]) + "\n",
    "syslog/2026-11-29/gpu01.log": _log("gpu01", BOTH),
    "syslog/2026-11-29/gpu02.log": _log("gpu02", _later(NETWORKD_ONLY, 4)),
    "syslog/2026-11-29/gpu03.log": _log("gpu03", _later(UNNAMED, 8)),
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("nic_identity"), LANDING)


def test_pipeline_stores_the_resolved_address(warehouse: Path) -> None:
    rows = query_rows(warehouse, "SELECT node, kind, device_pci, port FROM core.node_events "
                                 "WHERE component = 'network' ORDER BY node, ts")
    assert rows[:8] == parts(ingest({"gpu01": BOTH}))
    assert [r[2] for r in rows if r[0] == "gpu02"] == [RAIL_A, RAIL_B, RAIL_A, RAIL_B]  # by their names (was NULL)
    assert [r[2] for r in rows if r[0] == "gpu03" and r[3].startswith("ib")] == [None] * 4


def test_pipeline_repairs_and_attribution(warehouse: Path) -> None:
    repairs = query_rows(warehouse, "SELECT nodes[1], repaired_ts, round(hours_to_repair, 3), repair_source "
                                    "FROM marts.incident_repairs ORDER BY nodes[1]")
    assert [(n, ts.astimezone(UTC), h, s) for n, ts, h, s in repairs] == [
        ("gpu01", t(13), 3.0, "recovery_events"),          # was 10:02:01 (0.034 h)
        ("gpu02", t(17, 0, 1), 3.0, "recovery_events"),    # 14:00:01 .. 17:00:01, unchanged
        ("gpu03", t(21, 0, 1), 3.0, "recovery_events")]    # ib1 back 21:00:01 (was 18:02:01: ib0 cleared mlx5_1)
    jobs = query_rows(warehouse, "SELECT job_id, attribution, component, lost_gpu_hours "
                                 "FROM marts.job_failure_attribution ORDER BY job_id")
    assert jobs == [("1011", "infrastructure", "network", 4.0), ("1012", "infrastructure", "network", 4.0),
                    ("1013", "infrastructure", "network", 4.0)]  # was user
