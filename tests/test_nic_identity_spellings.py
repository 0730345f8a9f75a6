"""An interface line clears only its own NIC, however the node spells the interface (outside probe AH,
2026-11-03).

The probe's gpu030 (DGX H200, 8 IB rails, NetworkManager): at the 05:00 boot the kernel printed
``mlx5_core 0000:18:00.0 ibp24s0: renamed from ib0`` (and the same for the other rails); later its port
lines name the RDMA devices only (``mlx5_core 0000:5e:00.0 mlx5_3: Port: 1 Link DOWN``). Rails 0 and 3
went down at 14:00; rail 0 was back ``ACTIVE`` at 14:03:00, rail 3 only at 16:10:00. NetworkManager's
``device (ibp24s0): carrier: link connected`` (14:03:02) carried no address: no catalog event linked
ibp24s0 (the rename line is none), so it matched every part of gpu030 and cleared rail 3's ``Link DOWN``:
job 200201 (gpu[030-031], FAILED 14:50) was the user's, the incident "repaired" at 14:03:02 (3 min).

Rule (``models/sources/syslog/nic_identity.py``, ``repair_times.same_part``): an interface name takes the
address the node's kernel lines link it to — the ``<driver> <pci> <name>: `` prefix of any line (a
``renamed from`` too) — else the address its systemd predictable name encodes (``ib``/``en``, ``P<domain>``
if not 0, ``p<bus>s<slot>``, ``f<function>``, ``n<port name>``/``d<dev_port>``, decimal:
systemd.net-naming-scheme(7)); a name still without an address (``ib0`` without a rename line) answers
only for lines of its own name or naming no part, never for a NIC identified by its address.

Hand-computed figures: job 200201 runs 08:00 .. 14:50 (6 h 50 min >= the 1-h checkpoint interval) on 2 x 8
GPUs: 16 x 0.5 = 8.0 GPU-h. Rail 0's flap is cleared (back 14:03:00, 47 min >= the 30-min collective
timeout before the end); rail 3 is open at the end (50 min <= 60) -> infrastructure/network. The gpu030
incident is repaired when rail 3 is back: 16:10:00 - 14:00:00 = 2 h 10 min = 13/6 h.
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
from gpusre.models.reliability.repair_times import PART_COLUMNS, recovery_ends
from gpusre.models.sources.syslog.ingest import _lines_frame
from gpusre.models.sources.syslog.nic_identity import nic_names, pci_of_interface_name, with_nic_addresses
from gpusre.models.sources.syslog.parse import SyslogInput, parse_syslog_batch
from tests.hand_landing import query_rows, run_hand_landing

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")
RAIL0, RAIL3 = "0000:18:00.0", "0000:5e:00.0"
YEAR = (datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))


def at(day: int, h: int, m: int = 0, s: int = 0) -> datetime:
    return datetime(2026, 11, day, h, m, s, tzinfo=UTC)


#: The probe's gpu030 lines (2026-11-03), verbatim, without the other rails and the cron lines.
PROBE_GPU030 = """\
Nov  3 05:00:14 gpu030 kernel: [   14.112231] mlx5_core 0000:18:00.0 ibp24s0: renamed from ib0
Nov  3 05:00:14 gpu030 kernel: [   14.112234] mlx5_core 0000:5e:00.0 ibp94s0: renamed from ib3
Nov  3 14:00:00 gpu030 kernel: mlx5_core 0000:18:00.0 mlx5_0: Port: 1 Link DOWN
Nov  3 14:00:00 gpu030 kernel: mlx5_core 0000:5e:00.0 mlx5_3: Port: 1 Link DOWN
Nov  3 14:00:02 gpu030 NetworkManager[1432]: <info>  [1793714402.0000] device (ibp24s0): state change: activated -> unavailable (reason 'carrier-changed', sys-iface-state: 'managed')
Nov  3 14:00:02 gpu030 NetworkManager[1432]: <info>  [1793714402.0000] device (ibp94s0): state change: activated -> unavailable (reason 'carrier-changed', sys-iface-state: 'managed')
Nov  3 14:03:00 gpu030 kernel: mlx5_core 0000:18:00.0 mlx5_0: Port: 1 Link ACTIVE
Nov  3 14:03:02 gpu030 NetworkManager[1432]: <info>  [1793714582.0000] device (ibp24s0): carrier: link connected
Nov  3 16:10:00 gpu030 kernel: mlx5_core 0000:5e:00.0 mlx5_3: Port: 1 Link ACTIVE
Nov  3 16:10:02 gpu030 NetworkManager[1432]: <info>  [1793722202.0000] device (ibp94s0): carrier: link connected
"""
#: The same day without the boot (a day whose file holds no rename line): the names alone place the rails.
NO_BOOT = "".join(line + "\n" for line in PROBE_GPU030.splitlines() if "renamed from" not in line)
#: Slot names (systemd prefers ID_NET_NAME_SLOT where the firmware numbers hotplug slots): ibs0 / ibs3 encode
#: no address, only the rename lines place them.
SLOT_NAMES = PROBE_GPU030.replace("ibp24s0", "ibs0").replace("ibp94s0", "ibs3")
#: RoCE (gpu029 of the probe, 2026-11-04) logged by systemd-networkd; the kernel names rail 3 only: rail 0's
#: interface enp24s0np0 (bus 24 = 0x18, port np0) is placed by its name alone.
ROCE = """\
Nov  4 14:00:00 gpu029 kernel: mlx5_core 0000:5e:00.0 enp94s0np0: Link down
Nov  4 14:00:01 gpu029 systemd-networkd[1187]: enp24s0np0: Lost carrier
Nov  4 14:03:01 gpu029 systemd-networkd[1187]: enp24s0np0: Gained carrier
Nov  4 16:10:00 gpu029 kernel: mlx5_core 0000:5e:00.0 enp94s0np0: Link up
"""
#: The kernel's own interface names (net.ifnames=0): ib0 with no rename line is tied to no address.
KERNEL_NAMES = NO_BOOT.replace("ibp24s0", "ib0").replace("ibp94s0", "ib3")
#: A node in PCI domain 1 (multi-segment host): ibP1p24s0 is 0001:18:00.0, not 0000:18:00.0.
DOMAIN_1 = NO_BOOT.replace("0000:", "0001:").replace("ibp24s0", "ibP1p24s0").replace("ibp94s0", "ibP1p94s0")


def ingest(files: dict[str, str]) -> pl.DataFrame:
    """core.node_events-like rows (event ids 1.., EVENT_SCHEMA and the part columns) of the literal node-log
    files ``{node: text}``, through the real ingest's parse and frame steps."""
    batch = parse_syslog_batch([SyslogInput(text.encode(), f"syslog/{node}.log", node, YEAR)
                                for node, text in files.items()])
    assert batch.rejects.is_empty(), batch.rejects
    rows, _ = _lines_frame(batch.lines, TemplateMiner.new(), HostMapping())
    return (rows.filter(pl.col("kind").is_not_null()).with_row_index("event_id", offset=1)
            .select(pl.col("event_id").cast(pl.Int64), pl.col("ts").cast(DT), "node", "message",
                    *(c for c in dict.fromkeys((*EVENT_SCHEMA, *PART_COLUMNS)) if c not in ("event_id", "ts", "node"))))


def interface_lines(ev: pl.DataFrame) -> list[tuple]:
    """(time, interface, address) of the lines naming an interface only (NetworkManager, networkd)."""
    return (ev.filter(pl.col("message").str.contains(r"^(?:<info>|\w+: (?:Lost|Gained))"))
            .select("ts", "port", "device_pci").rows())


JOB_SCHEMA = {"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
              "start_ts": DT, "end_ts": DT, "elapsed_s": pl.Int64, "exit_code": pl.Int64, "exit_signal": pl.Int64}


def attribute_and_repair(ev: pl.DataFrame, node: str, day: int) -> tuple[dict, datetime | None]:
    """The verdict on a 2-node job (``node`` and a quiet neighbour, 16 GPUs, 08:00 .. 14:50 FAILED 1:0 on
    ``day``) and the repair time of the node's one incident (as the repair mart reads its evidence)."""
    incidents, members = merge_incidents(ev)
    assert incidents.height == 1
    job = {"job_id": "200201", "state": "FAILED", "nodes": [node, "quiet"], "n_gpus": 16, "start_ts": at(day, 8),
           "end_ts": at(day, 14, 50), "elapsed_s": 24600, "exit_code": 1, "exit_signal": 0}
    row = attribute_failures(pl.DataFrame([job], schema=JOB_SCHEMA), ev, incidents).row(0, named=True)
    evidence = (members.join(ev, on="event_id").group_by("incident_id", "node", *PART_COLUMNS)
                .agg(pl.col("ts").max().alias("last_ts")).with_columns(pl.lit("network").alias("component_class")))
    ends = recovery_ends(evidence, ev)
    return row, (ends["recovered_ts"].item() if ends.height else None)


# --- the address a name encodes ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "address"), [
    ("ibp24s0", "0000:18:00.0"),          # the probe's rail 0: bus 24 = 0x18, slot 0
    ("ibp94s0", "0000:5e:00.0"),
    ("ibp220s0", "0000:dc:00.0"),
    ("enp24s0np0", "0000:18:00.0"),       # ConnectX in switchdev / RoCE: phys_port_name p0
    ("enp24s0f1np1", "0000:18:00.1"),     # second function of a dual-port card
    ("ibp24s0d1", "0000:18:00.0"),        # second port of one function (dev_port 1)
    ("ibP1p24s0", "0001:18:00.0"),        # PCI domain 1
    ("enP2p3s31f7", "0002:03:1f.7"),
    ("ibp24s0.8001", "0000:18:00.0"),     # an IPoIB P_Key child is on its parent's NIC
    ("ib0", None),                        # the kernel's own name
    ("ibs3", None),                       # hotplug slot name: the firmware's number, no address
    ("eno1", None),                       # onboard index
    ("enp0s20f0u1", None),                # a USB NIC behind the PCI controller
    ("ibp256s0", None),                   # no bus 256
    ("ibp24s32", None),                   # no slot 32
    ("mlx5_0", None),
])
def test_pci_of_interface_name(name: str, address: str | None) -> None:
    assert pl.select(pci_of_interface_name(pl.lit(name))).item() == address


# --- the ingest step ---------------------------------------------------------------------------------------


def test_probe_lines_take_their_rails_addresses() -> None:
    # (was: NULL) by the rename lines and, the same, by the names; without the boot, by the names alone.
    expected = [(at(3, 14, 0, 2), "ibp24s0", RAIL0), (at(3, 14, 0, 2), "ibp94s0", RAIL3),
                (at(3, 14, 3, 2), "ibp24s0", RAIL0), (at(3, 16, 10, 2), "ibp94s0", RAIL3)]
    assert interface_lines(ingest({"gpu030": PROBE_GPU030})) == expected
    assert interface_lines(ingest({"gpu030": NO_BOOT})) == expected


def test_rename_lines_place_names_that_encode_no_address() -> None:
    ev = ingest({"gpu030": SLOT_NAMES})
    assert [a for _, _, a in interface_lines(ev)] == [RAIL0, RAIL3, RAIL0, RAIL3]
    # The rename line is no event: it is read for its prefix only.
    assert ev.filter(pl.col("message").str.contains("renamed from")).is_empty()


def test_other_spellings() -> None:
    assert [a for _, _, a in interface_lines(ingest({"gpu029": ROCE}))] == [RAIL0, RAIL0]
    assert [a for _, _, a in interface_lines(ingest({"gpu030": KERNEL_NAMES}))] == [None] * 4
    assert [a for _, _, a in interface_lines(ingest({"gpu030": DOMAIN_1}))] == [
        "0001:18:00.0", "0001:5e:00.0", "0001:18:00.0", "0001:5e:00.0"]


def test_the_kernels_word_wins_over_the_spelling() -> None:
    nm = "NetworkManager[1]: <info>  [1.0] device (ibp24s0): carrier: link connected"
    rows = pl.DataFrame({"node": ["n1", "n1", "n2", "n2", "n2", "n3"],
                         "message": [f"mlx5_core {RAIL3} ibp24s0: renamed from ib3", nm,   # a site's udev rule
                                     f"mlx5_core {RAIL0} ibp24s0: renamed from ib0",       # renamed across
                                     f"mlx5_core {RAIL3} ibp24s0: renamed from ib3", nm,   # a reboot: which?
                                     nm],                                                 # no kernel line
                         "device_pci": [RAIL3, None, RAIL0, RAIL3, None, None],
                         "port": [None, "ibp24s0", None, None, "ibp24s0", "ibp24s0"]})
    assert nic_names(rows).rows() == [("n1", "ibp24s0", RAIL3)]
    assert with_nic_addresses(rows)["device_pci"].to_list() == [RAIL3, RAIL3, RAIL0, RAIL3, None, RAIL0]


# --- attribution and repair over the ingested lines ----------------------------------------------------------


@pytest.mark.parametrize(("node", "day", "text", "repaired"), [
    ("gpu030", 3, PROBE_GPU030, at(3, 16, 10)),       # the probe (was 14:03:02 and 'user')
    ("gpu030", 3, NO_BOOT, at(3, 16, 10)),
    ("gpu030", 3, SLOT_NAMES, at(3, 16, 10)),
    ("gpu029", 4, ROCE, at(4, 16, 10)),               # networkd's enp24s0np0 Gained carrier cleared rail 3 before
    ("gpu030", 3, DOMAIN_1, at(3, 16, 10)),
    # ib0 / ib3 tied to no address: ib0's carrier (14:03:02) clears neither rail; ib3's own 'unavailable'
    # (14:00:02) waits for ib3's carrier, 16:10:02 — the last line of the incident's parts.
    ("gpu030", 3, KERNEL_NAMES, at(3, 16, 10, 2)),
])
def test_job_and_repair(node: str, day: int, text: str, repaired: datetime) -> None:
    row, got = attribute_and_repair(ingest({node: text}), node, day)
    assert (row["attribution"], row["component"], row["lost_gpu_hours"]) == ("infrastructure", "network", 8.0)
    assert got == repaired


# --- end to end ----------------------------------------------------------------------------------------------

_SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
                 "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")


def _job(job_id: int, nodes: str, n_nodes: int, day: int) -> str:
    tres = f"billing={112 * n_nodes},cpu={112 * n_nodes},gres/gpu={8 * n_nodes},mem=2000G,node={n_nodes}"
    start, end = f"2026-11-{day:02d}T08:00:00", f"2026-11-{day:02d}T14:50:00"
    return (f"{job_id}|{job_id}|dpo-train|erin|20005|llm|llm|gpu|normal|FAILED|1:0|{start}|{start}|{start}|{end}|"
            f"06:50:00|1-00:00:00|{n_nodes}|{112 * n_nodes}|{tres}|{nodes}|")


def _day(node: str, day: int, extra: str = "") -> str:
    """A node's day: cron lines every hour, plus ``extra`` (literal lines of that day)."""
    cron = [f"Nov {day:2d} {h:02d}:17:01 {node} CRON[{4000 + h}]: (root) CMD (command -v debian-sa1 > /dev/null)"
            for h in range(24)]
    lines = cron + [line.replace(f"Nov  3 ", f"Nov {day:2d} ").replace(f"Nov  4 ", f"Nov {day:2d} ")
                    for line in extra.splitlines()]
    return "\n".join(sorted(lines)) + "\n"


#: One case a day (apart in time: two nodes' links down at once would be one fabric incident).
CASES = [(3, "gpu030", PROBE_GPU030), (4, "gpu029", ROCE), (5, "gpu030", KERNEL_NAMES), (6, "gpu030", DOMAIN_1)]
LANDING = {
    "cluster.yaml": 'cluster: h200c\ntimezone: UTC\nnodes: "gpu[028-031]"\ngpus_per_node: 8\n',
    "sacct/sacct_2026-11-03.psv": "\n".join([_SACCT_HEADER] + [
        _job(200200 + day, f"{node}," + ("gpu031" if node == "gpu030" else "gpu028"), 2, day)
        for day, node, _ in CASES]) + "\n",
    **{f"syslog/2026-11-{day:02d}/{n}.log": _day(n, day, text if n == node else "")
       for day, node, text in CASES for n in ("gpu028", "gpu029", "gpu030", "gpu031")},
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("nic_spellings"), LANDING)


def test_pipeline_jobs_and_repairs(warehouse: Path) -> None:
    jobs = query_rows(warehouse, "SELECT job_id, attribution, component, lost_gpu_hours "
                                 "FROM marts.job_failure_attribution ORDER BY job_id")
    assert jobs == [(str(200200 + day), "infrastructure", "network", 8.0) for day, _, _ in CASES]
    repairs = query_rows(warehouse, "SELECT nodes, repaired_ts, hours_to_repair FROM marts.incident_repairs "
                                    "WHERE component = 'network' ORDER BY incident_start_ts")
    assert [(nodes, ts.astimezone(UTC)) for nodes, ts, _ in repairs] == [
        (["gpu030"], at(3, 16, 10)), (["gpu029"], at(4, 16, 10)), (["gpu030"], at(5, 16, 10, 2)),
        (["gpu030"], at(6, 16, 10))]
    assert [h for _, _, h in repairs] == pytest.approx([13 / 6, 13 / 6, 13 / 6 + 2 / 3600, 13 / 6])
    stored = query_rows(warehouse, "SELECT ts, device_pci FROM core.node_events WHERE node = 'gpu030' "
                                   "AND message LIKE '%device (ibp24s0): carrier%'")
    assert [(ts.astimezone(UTC), pci) for ts, pci in stored] == [(at(3, 14, 3, 2), RAIL0)]
