"""What a node logs when something happens: multi-line bursts for faults, incidents, job endings, boots.

Each function appends timestamped message lines to an :class:`EventLines` for one happening. Line
shapes are copied from real logs (``shared/samples/xid``: gpud test data, Fabric Manager log, kernel
lines quoted in public issues; reliability-facts §6.5); shapes marked [U] there (mlx5/pciehp/AER) are
the typical kernel prints. A burst is a few lines within seconds of the fault, then repeats for a while
(the driver keeps reporting a dead GPU; NVSwitch SXid storms; NHC fails every few minutes while the
node is drained), as on real nodes. These are few lines (one per fault, job ending or boot), so plain
Python string formatting is fine here; the bulk noise is rendered column-wise in :mod:`log_noise`.

Kernel lines are stored as the bare message (``kernel=True``): the writer prefixes ``kernel: [uptime]``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["EventLines", "NodeHardware", "fault_burst", "health_check_burst", "health_check_text",
           "health_check_message", "false_positive_health_check", "fabric_burst", "user_xid_burst", "oom_burst",
           "timeout_line", "benign_xid_line", "boot_burst", "HEALTH_CHECKS", "SITE_HEALTH_CHECKS"]

#: Real HGX H100 GPU bus numbers (PCI 0000:<bus>:00.0), NIC buses, NVSwitch functions.
_GPU_BUS = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
_NIC_BUS = ("1a", "2c", "3c", "5f", "9c", "ad", "bc", "dd")
_NVSWITCH_PCI = ("0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0")
_PROCS = ("python", "python3", "pt_main_thread", "torchrun")
_KERNEL = "5.15.0-112-generic"

#: NHC check that fails after each fault kind, and its message (LBNL NHC wording).
HEALTH_CHECKS: dict[str, tuple[str, str]] = {
    "xid79_fallen_off_bus": ("check_nv_healthmon", "GPU {pci} is lost (nvidia-smi: Unable to determine the device handle)"),
    "xid48_dbe_ecc": ("check_nv_healthmon", "GPU {pci} has uncorrectable ECC errors (volatile DBE count 1)"),
    "xid94_contained_ecc": ("check_nv_healthmon", "GPU {pci} has pending row remaps; GPU reset required"),
    "xid119_gsp_timeout": ("check_nv_healthmon", "GPU {pci} is not responding (GSP RPC timeout)"),
    "xid74_nvlink": ("check_nv_healthmon", "GPU {pci} NVLink {link} is inactive"),
    "ib_link_down": ("check_hw_ib", "No IB port mlx5_{hca}:1 is ACTIVE (LinkUp 400 Gb/sec)."),
    "lustre_mount_missing": ("check_fs_mount_rw", "/lustre not mounted"),
    "leaf_switch_down": ("check_hw_ib", "No IB port mlx5_0:1 is ACTIVE (LinkUp 400 Gb/sec)."),
    "storage_outage": ("check_fs_mount_rw", "/lustre not mounted"),
    "gpu_overtemp": ("check_nv_healthmon", "GPU{gpu} temperature {temp}C exceeds limit 90C"),
}
#: The same failures at sites whose NHC configuration uses other checks and words (``check_prefix`` and
#: ``bare`` message styles): a file test instead of a mount check, a sensor check for temperatures.
SITE_HEALTH_CHECKS: dict[str, tuple[str, str]] = {
    **HEALTH_CHECKS,
    "xid79_fallen_off_bus": ("check_gpu", "GPU{gpu} lost: nvidia-smi reports 7 of 8 GPUs"),
    "xid74_nvlink": ("check_nvlink", "GPU{gpu} NVLink link {link} state Inactive"),
    "ib_link_down": ("check_hw_ib", "No IB port mlx5_{hca}:1 is ACTIVE"),
    "leaf_switch_down": ("check_hw_ib", "No IB port mlx5_0:1 is ACTIVE"),
    "lustre_mount_missing": ("check_file_test", "/lustre/scratch/.nhc_probe not readable"),
    "storage_outage": ("check_fs_mount", "/lustre not mounted"),
    "gpu_overtemp": ("check_hw_sensors", "GPU{gpu} temperature {temp}C exceeds limit 90C"),
}


@dataclass
class EventLines:
    """Accumulated event lines: epoch seconds (float), node index, kernel flag, message, kind label."""

    ts: list[float] = field(default_factory=list)
    node: list[int] = field(default_factory=list)
    kernel: list[bool] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)

    def add(self, ts: float, node: int, body: str, kind: str, kernel: bool = True) -> None:
        """Append one line."""
        self.ts.append(ts)
        self.node.append(node)
        self.kernel.append(kernel)
        self.body.append(body)
        self.kind.append(kind)

    def __len__(self) -> int:
        return len(self.ts)


@dataclass(frozen=True)
class NodeHardware:
    """Per-node device addresses and daemon pids (stable per node, so repeated lines agree)."""

    gpus_per_node: int
    slurmd_pid: int
    nhc_base_pid: int
    lustre_client: str

    def gpu_pci(self, i: int) -> str:
        """``0000:18:00`` style bus id of GPU ``i`` as printed in Xid lines."""
        bus = _GPU_BUS[i] if i < len(_GPU_BUS) else f"{0xe0 + i - len(_GPU_BUS):02x}"
        return f"0000:{bus}:00"

    def nic_pci(self, i: int) -> str:
        """PCI function of IB HCA ``mlx5_i``."""
        bus = _NIC_BUS[i % len(_NIC_BUS)]
        return f"0000:{bus}:00.{i // len(_NIC_BUS)}"


def _xid(hw: NodeHardware, gpu: int, code: int, pid: int | None, proc: str | None, msg: str) -> str:
    who = f"pid={pid}, name={proc}" if pid is not None else "pid='<unknown>', name=<unknown>"
    return f"NVRM: Xid (PCI:{hw.gpu_pci(gpu)}): {code}, {who}, {msg}"


def _repeat(out: EventLines, node: int, start: float, until: float, every: float, limit: int, kind: str,
            make: Callable[[int], str], rnd: random.Random, kernel: bool = True) -> None:
    t = start
    for k in range(limit):
        t += every * rnd.uniform(0.7, 1.3)
        if t >= until:
            return
        out.add(t, node, make(k), kind, kernel)


def _gpu_temp(gpu: int) -> int:
    # Stable per GPU index, so the log, NHC and the node-state reason agree on the reading.
    return 92 + (gpu * 5) % 9


def fault_burst(out: EventLines, kind: str, ts: float, node: int, until: float, hw: NodeHardware,
                rnd: random.Random, fabric_manager: bool = False) -> dict[str, int]:
    """Lines of one node fault of ``kind`` at ``ts``; repeats stop before ``until``. Returns the device
    picked (``gpu``, ``link``, ``hca``) for the health-check lines. ``fabric_manager``: NVLink faults also
    get nv-fabricmanager's lines."""
    label = f"fault:{kind}"
    gpu = rnd.randrange(hw.gpus_per_node)
    pci = hw.gpu_pci(gpu)
    pid, proc = rnd.randint(20_000, 4_000_000), rnd.choice(_PROCS)
    link, hca = rnd.randrange(18), rnd.randrange(8)
    add = lambda dt, body, kernel=True: out.add(ts + dt, node, body, label, kernel)  # noqa: E731
    if kind == "xid79_fallen_off_bus":
        port = f"0000:{int(pci[5:7], 16) - 2:02x}:01.0"
        add(0.0, _xid(hw, gpu, 79, None, None, "GPU has fallen off the bus."))
        add(0.000004, f"NVRM: GPU {pci}.0: GPU has fallen off the bus.")
        add(0.21, f"pcieport {port}: pciehp: Slot({gpu + 1}): Link Down")
        add(0.21, f"pcieport {port}: AER: Uncorrected (Fatal) error received: {pci}.0")
        u = f"{rnd.getrandbits(128):032x}"
        add(1.4, f"NVRM: GPU at PCI:{pci}: GPU-{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}")
        add(1.4, f"NVRM: GPU Board Serial Number: {rnd.randint(10**12, 10**13 - 1)}")
        _repeat(out, node, ts + 2, until, 300, 12, label, lambda _k: f"NVRM: GPU {pci}.0: GPU has fallen off the bus.", rnd)
    elif kind == "xid48_dbe_ecc":
        add(0.0, _xid(hw, gpu, 48, pid, proc, "An uncorrectable double bit error (DBE) has been detected on GPU in "
                      f"the framebuffer at partition {rnd.randrange(12)}, subpartition {rnd.randrange(2)}."))
        if rnd.random() < 0.7:
            add(0.00012, _xid(hw, gpu, 63, pid, proc, f"Row Remapper: New row (0x{rnd.getrandbits(32):08x}) marked "
                              "for remapping, reset gpu to activate."))
        else:
            add(0.00012, _xid(hw, gpu, 64, pid, proc, f"Row Remapper Error: Failed to remap row (0x{rnd.getrandbits(32):08x})."))
        if rnd.random() < 0.3:
            add(0.4, _xid(hw, gpu, 95, pid, proc, "Uncontained: FBHUB. RST: Yes, D-RST: No"))
        _repeat(out, node, ts + 1, until, 90, 4, label, lambda _k: _xid(
            hw, gpu, 48, None, None, "An uncorrectable double bit error (DBE) has been detected on GPU in the "
            f"framebuffer at partition {rnd.randrange(12)}, subpartition {rnd.randrange(2)}."), rnd)
    elif kind == "xid94_contained_ecc":
        add(0.0, _xid(hw, gpu, 94, pid, proc, "Contained: SM (0x1). RST: No, D-RST: No"))
        add(0.0002, _xid(hw, gpu, 63, pid, proc, f"Row Remapper: New row (0x{rnd.getrandbits(32):08x}) marked for "
                         "remapping, reset gpu to activate."))
    elif kind == "xid119_gsp_timeout":
        add(0.0, _xid(hw, gpu, 119, pid, "nvidia-smi", f"Timeout after 6s of waiting for RPC response from GPU{gpu} "
                      "GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4)."))
        add(0.0001, f"NVRM: GPU{gpu} GSP RPC buffer contains function 103 (GSP_RM_ALLOC) and data "
                    "0x0000000000002081 0x0000000000000004.")
        add(0.0002, f"NVRM: GPU{gpu} RPC history (CPU -> GSP):")
        if rnd.random() < 0.4:
            add(6.1, _xid(hw, gpu, 120, pid, proc, f"GSP Error: Task 1 raised error code 0x{rnd.randrange(1, 16):x} "
                          f"for reason 0x0 at 0x{rnd.getrandbits(28):07x} (0 more errors skipped)"))
        add(18.0, f"NVRM: Rate limiting GSP RPC error prints for GPU at PCI:{pci} (printing 1 of every 30).  "
                  "The GPU likely needs to be reset.")
        _repeat(out, node, ts + 18, until, 120, 10, label, lambda _k: _xid(
            hw, gpu, 119, rnd.randint(20_000, 4_000_000), "nvidia-smi", f"Timeout after 6s of waiting for RPC "
            f"response from GPU{gpu} GSP! Expected function 76 (GSP_RM_CONTROL) (0x20802a02 0x8)."), rnd)
    elif kind == "xid74_nvlink":
        sw = rnd.randrange(len(_NVSWITCH_PCI))
        sw_pci, sw_port = _NVSWITCH_PCI[sw], rnd.randrange(64)
        add(0.0, _xid(hw, gpu, 74, pid, proc, f"NVLink: fatal error detected on link {link}(0x0, 0x0, 0x10000, 0x0, "
                      "0x0, 0x0, 0x0)"))

        def sxid(k: int) -> str:
            tail = (f"Fatal, Link {sw_port} LTSSM Fault Up", f"Severity 1 Engine instance {sw_port} Sub-engine instance 00",
                    "Data {0x10000000, 0x10000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}")[k % 3]
            return f"nvidia-nvswitch{sw}: SXid (PCI:{sw_pci}): 20034, {tail}"

        for k in range(3):
            add(11.8 + k * 0.004, sxid(k))
        _repeat(out, node, ts + 12, until, 6, 30, label, sxid, rnd)  # the SXid storm
        if fabric_manager:  # Fabric Manager's own report of the same NVSwitch error (no draws: same lines else)
            fm = f"nv-fabricmanager[{hw.slurmd_pid + 11}]"
            add(12.3, f"{fm}: detected NVSwitch fatal error 20034 on fid 0 on NVSwitch pci bus id "
                      f"00000000:{sw_pci[5:7]}:00.0 physical id {sw} port {sw_port}", False)
            add(12.4, f"{fm}: NVSwitch fatal error: link {sw_port} LTSSM fault; GPU partition reset required", False)
    elif kind == "ib_link_down":
        nic = hw.nic_pci(hca)
        add(0.0, f"mlx5_core {nic} mlx5_{hca}: Port: 1 Link DOWN")
        add(0.002, f"mlx5_core {nic} ibp{int(nic[5:7], 16)}s0: Link down")
        states = ("INIT", "ACTIVE", "DOWN")
        _repeat(out, node, ts + 1, until, 40, 9, label, lambda k: f"mlx5_core {nic} mlx5_{hca}: Port: 1 Link {states[k % 3]}", rnd)
    elif kind == "lustre_mount_missing":
        client = f"lustre-MDT0000-mdc-{hw.lustre_client}"
        add(0.0, f"LustreError: 167-0: {client}: This client was evicted by lustre-MDT0000; in progress operations "
                 "using this service will fail.")
        add(0.003, f"LustreError: {rnd.randint(2000, 90000)}:0:(llite_lib.c:2901:ll_statfs_internal()) "
                   f"{client}: statfs failed: rc = -108")
        _repeat(out, node, ts + 1, until, 60, 10, label, lambda _k: f"LustreError: 11-0: {client}: operation "
                "mds_getattr to node 10.10.0.2@o2ib failed: rc = -107", rnd)
    elif kind == "kernel_panic":
        add(-0.9, f"BUG: unable to handle page fault for address: ffff{rnd.getrandbits(44):011x}0")
        add(-0.9, "#PF: supervisor read access in kernel mode")
        add(-0.9, "Oops: 0000 [#1] SMP NOPTI")
        add(-0.9, f"CPU: {rnd.randrange(224)} PID: {pid} Comm: {proc} Tainted: P           OE     {_KERNEL} #122-Ubuntu")
        add(-0.9, f"RIP: 0010:__list_del_entry_valid+0x{rnd.getrandbits(8):x}/0x{rnd.getrandbits(8) | 0x80:x}")
        add(0.0, "Kernel panic - not syncing: Fatal exception")
    elif kind == "dimm_uncorrectable":
        dimm = f"CPU_SrcID#{rnd.randrange(2)}_MC#{rnd.randrange(2)}_Chan#{rnd.randrange(4)}_DIMM#0"
        for dt in (-280.0, -95.0):
            add(dt, f"EDAC MC{dimm[10]}: 1 CE memory read error on {dimm} (channel:{dimm[-9]} slot:0 "
                    f"page:0x{rnd.getrandbits(24):x} offset:0x{rnd.getrandbits(12):x} grain:32 syndrome:0x0 - "
                    "err_code:0x0000:0x009f)")
        add(0.0, "mce: [Hardware Error]: Machine check events logged")
        add(0.0001, f"EDAC MC{dimm[10]}: 1 UE memory read error on {dimm} (channel:{dimm[-9]} slot:0 "
                    f"page:0x{rnd.getrandbits(24):x} offset:0x0 grain:32 - err_code:0x0000:0x009f)")
        add(0.9, "Kernel panic - not syncing: Fatal machine check")
    elif kind == "gpu_overtemp":
        temp = _gpu_temp(gpu)
        ipmi = f"ipmievd[{hw.slurmd_pid + 7}]: Temperature sensor GPU{gpu}_Temp"
        add(0.0, f"{ipmi}, Upper Critical going high Asserted (Reading {temp} > Threshold 90 degrees C)", False)
        _repeat(out, node, ts, until, 600, 400, label, lambda k: f"{ipmi}, Upper Critical going high "
                f"{'Deasserted' if k % 2 else 'Asserted'} (Reading {temp - 3 * (k % 2)} > Threshold 90 degrees C)",
                rnd, False)
    elif kind == "host_overtemp_shutdown":
        cpu = rnd.randrange(2)
        ipmi = f"ipmievd[{hw.slurmd_pid + 7}]: Temperature sensor CPU{cpu + 1}_Temp"
        add(-420.0, f"{ipmi}, Upper Critical going high Asserted (Reading 96 > Threshold 95 degrees C)", False)
        for k in range(3):
            add(-300.0 + k * 90, f"mce: CPU{cpu * 56 + rnd.randrange(56)}: Package temperature above threshold, "
                                 f"cpu clock throttled (total events = {rnd.randint(100, 9000)})")
        add(-4.0, f"{ipmi}, Upper Non-recoverable going high Asserted (Reading 106 > Threshold 105 degrees C)", False)
        add(0.0, "thermal thermal_zone0: critical temperature reached (106 C), shutting down")
    elif kind == "node_power_loss":
        ipmi = f"ipmievd[{hw.slurmd_pid + 7}]"
        add(-1.2, f"{ipmi}: Power Supply sensor PSU1_Status, Power Supply AC lost Asserted", False)
        add(-0.4, f"{ipmi}: Power Supply sensor PSU2_Status, Power Supply AC lost Asserted", False)
    elif kind == "psu_failure":
        add(-31.0, f"ipmievd[{hw.slurmd_pid + 7}]: Power Supply sensor PSU1_Status, Failure detected Asserted", False)
        add(-0.5, f"ipmievd[{hw.slurmd_pid + 7}]: Power Supply sensor PSU2_Status, Power Supply AC lost Asserted", False)
        add(0.0, "mce: CPUs not responding to MCE broadcast (may include false positives): 0-223")
    else:
        raise ValueError(f"no log burst for fault kind {kind!r}")
    return {"gpu": gpu, "link": link, "hca": hca}


def health_check_text(kind: str, hw: NodeHardware, device: dict[str, int], style: str = "lbnl") -> tuple[str, str]:
    """(NHC check name, its failure text) after a fault of ``kind`` on the device ``fault_burst`` picked;
    ``style`` other than ``lbnl`` uses the site's own checks (SITE_HEALTH_CHECKS)."""
    check, detail = (HEALTH_CHECKS if style == "lbnl" else SITE_HEALTH_CHECKS)[kind]
    gpu = device.get("gpu", 0)
    return check, detail.format(pci=f"{hw.gpu_pci(gpu)}.0", link=device.get("link", 0), hca=device.get("hca", 0),
                                gpu=gpu, temp=_gpu_temp(gpu))


def health_check_message(check: str, text: str, style: str = "lbnl") -> str:
    """One failing NHC line's message: ``lbnl`` ``ERROR:  nhc:  Health check failed:  check:  text``, ``bare``
    ``Health check failed: text`` (no check name), ``check_prefix`` ``check: text``."""
    if style == "bare":
        return f"Health check failed: {text}"
    if style == "check_prefix":
        return f"{check}: {text}"
    return f"ERROR:  nhc:  Health check failed:  {check}:  {text}"


def health_check_burst(out: EventLines, kind: str, ts: float, node: int, until: float, hw: NodeHardware,
                       device: dict[str, int], rnd: random.Random, interval_s: float = 300,
                       max_runs: int | None = 12, style: str = "lbnl") -> float:
    """NHC failing (and slurmd's HealthCheckProgram reporting it) from ~1 min after the fault, every
    ``interval_s`` while the node stays drained: ``max_runs`` runs, or (None) every run until ``until``
    (the repair), as NHC does. Returns the time of the first failing run (when NHC drains the node;
    returned even when it falls at or after ``until`` and nothing is logged)."""
    check, text = health_check_text(kind, hw, device, style)
    msg = health_check_message(check, text, style)
    t = first = ts + rnd.uniform(30, 110)
    k = 0
    while max_runs is None or k < max_runs:
        if t >= until:
            return first
        out.add(t, node, f"nhc[{hw.nhc_base_pid + 17 * k}]: {msg}", "health_check", False)
        out.add(t + 0.02, node, f"slurmd[{hw.slurmd_pid}]: error: health_check failed: rc:1 output:{msg}",
                "health_check", False)
        t += interval_s * rnd.uniform(0.95, 1.05)
        k += 1
    return first


def false_positive_health_check(out: EventLines, runs: list[float], node: int, hw: NodeHardware, check: str,
                                text: str, style: str = "lbnl") -> None:
    """A health check failing with no fault behind it (a daemon restarting, a transient resource
    shortage): one NHC failure (and slurmd's relay of it) per failing run at ``runs``; the next run
    passes and NHC puts the node back online. Deterministic: the caller draws the times."""
    msg = health_check_message(check, text, style)
    for k, t in enumerate(runs):
        out.add(t, node, f"nhc[{hw.nhc_base_pid + 17 * k + 5}]: {msg}", "health_check_false_positive", False)
        out.add(t + 0.02, node, f"slurmd[{hw.slurmd_pid}]: error: health_check failed: rc:1 output:{msg}",
                "health_check_false_positive", False)


def fabric_burst(out: EventLines, kind: str, ts: float, node: int, end: float, hw: NodeHardware,
                 rnd: random.Random) -> None:  # one wave; a second wave is a second call
    """One node's lines for a leaf-switch failure (all HCAs lose their link at once, back at ``end``)
    or a storage outage (Lustre connection lost, I/O hangs, restored at ``end``)."""
    label = f"incident:{kind}"
    if kind == "leaf_switch_down":
        for h in range(8):
            nic = hw.nic_pci(h)
            out.add(ts + h * 0.0007, node, f"mlx5_core {nic} mlx5_{h}: Port: 1 Link DOWN", label)
        for h in range(8):
            nic = hw.nic_pci(h)
            out.add(end + h * 0.0009, node, f"mlx5_core {nic} mlx5_{h}: Port: 1 Link INIT", label)
            out.add(end + 2.1 + h * 0.0009, node, f"mlx5_core {nic} mlx5_{h}: Port: 1 Link ACTIVE", label)
    elif kind == "storage_outage":
        ost = f"lustre-OST{rnd.randrange(16):04x}"
        client = f"{ost}-osc-{hw.lustre_client}"
        oss = f"10.10.0.{20 + int(ost[-1], 16)}@o2ib"
        out.add(ts, node, f"Lustre: {client}: Connection to {ost} (at {oss}) was lost; in progress operations using "
                "this service will wait for recovery to complete", label)
        out.add(ts + 0.001, node, f"LustreError: 11-0: {client}: operation ost_read to node {oss} failed: rc = -107", label)
        _repeat(out, node, ts + 1, end, 100, 20, label, lambda _k: f"LustreError: 11-0: {client}: operation "
                f"ost_connect to node {oss} failed: rc = -16", rnd)
        if end - ts > 125:
            out.add(ts + 122.5, node, f"INFO: task {rnd.choice(_PROCS)}:{rnd.randint(20_000, 4_000_000)} blocked for "
                    "more than 120 seconds.", label)
        out.add(end, node, f"Lustre: {client}: Connection restored to {oss} (at {oss})", label)
    else:
        raise ValueError(f"no log burst for fabric kind {kind!r}")


def user_xid_burst(out: EventLines, end: float, node: int, gpu: int, hw: NodeHardware, rnd: random.Random) -> int:
    """Application-caused Xids (13, 31 or 43) seconds before a user job crashes; returns the main code."""
    t = end - rnd.uniform(2.0, 25.0)
    pid, proc = rnd.randint(20_000, 4_000_000), rnd.choice(_PROCS)
    u = rnd.random()
    if u < 0.5:
        code = 31
        out.add(t, node, _xid(hw, gpu, 31, pid, proc, f"Ch 0000000{rnd.randrange(1, 9)}, intr 00000000. MMU Fault: "
                f"ENGINE GRAPHICS GPCCLIENT_T1_{rnd.randrange(4)} faulted @ 0x7f{rnd.getrandbits(24):06x}_"
                f"{rnd.getrandbits(32):08x}. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"), "user_xid")
    elif u < 0.85:
        code = 13
        for k in range(rnd.randint(2, 6)):
            gpc, tpc, sm = rnd.randrange(8), rnd.randrange(9), rnd.randrange(2)
            msg = (f"Graphics SM Warp Exception on (GPC {gpc}, TPC {tpc}, SM {sm}): Out Of Range Address",
                   f"Graphics SM Global Exception on (GPC {gpc}, TPC {tpc}, SM {sm}): Multiple Warp Errors",
                   f"Graphics Exception: ESR 0x5{rnd.getrandbits(16):04x}=0x11f000e 0x5{rnd.getrandbits(16):04x}=0x24")[k % 3]
            out.add(t + k * 0.0001, node, _xid(hw, gpu, 13, None, None, msg), "user_xid")
    else:
        code = 43
    if code == 43 or rnd.random() < 0.5:
        out.add(t + 0.002, node, _xid(hw, gpu, 43, pid, proc, f"Ch 0000000{rnd.randrange(1, 9)}"), "user_xid")
    return code


def oom_burst(out: EventLines, end: float, node: int, job_raw: str, uid: int, hw: NodeHardware,
              rnd: random.Random) -> None:
    """Kernel cgroup OOM kill and slurmstepd's report, seconds before an OUT_OF_MEMORY job ends."""
    t = end - rnd.uniform(0.5, 8.0)
    pid, proc = rnd.randint(20_000, 4_000_000), rnd.choice(_PROCS)
    memcg = f"/slurm/uid_{uid}/job_{job_raw}"
    rss = rnd.randint(200_000_000, 2_000_000_000)
    out.add(t, node, f"{proc} invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0", "oom")
    out.add(t + 0.0003, node, f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,"
            f"oom_memcg={memcg},task_memcg={memcg}/step_batch/user/task_0,task={proc},pid={pid},uid={uid}", "oom")
    out.add(t + 0.0004, node, f"Memory cgroup out of memory: Killed process {pid} ({proc}) total-vm:{rss + 9_000_000}kB, "
            f"anon-rss:{rss}kB, file-rss:{rnd.randint(10_000, 900_000)}kB, shmem-rss:0kB, UID:{uid} "
            f"pgtables:{rss // 500}kB oom_score_adj:0", "oom")
    out.add(t + 0.6, node, f"slurmstepd[{rnd.randint(20_000, 4_000_000)}]: error: Detected 1 oom_kill event in "
            f"StepId={job_raw}.batch. Some of the step tasks have been OOM Killed.", "oom", False)


def timeout_line(out: EventLines, end: float, node: int, job_raw: str, host: str, local_text: str,
                 rnd: random.Random) -> None:
    """slurmstepd's time-limit cancellation line at a TIMEOUT job's end."""
    out.add(end, node, f"slurmstepd[{rnd.randint(20_000, 4_000_000)}]: error: *** JOB {job_raw} ON {host} CANCELLED "
            f"AT {local_text} DUE TO TIME LIMIT ***", "timeout", False)


def benign_xid_line(out: EventLines, ts: float, node: int, hw: NodeHardware, rnd: random.Random) -> None:
    """An informational Xid that is not a failure: a single row remap (63) or an SBE-rate note (92)."""
    gpu = rnd.randrange(hw.gpus_per_node)
    if rnd.random() < 0.8:
        out.add(ts, node, _xid(hw, gpu, 63, None, None, f"Row Remapper: New row (0x{rnd.getrandbits(32):08x}) marked "
                "for remapping, reset gpu to activate."), "benign_xid")
    else:
        out.add(ts, node, _xid(hw, gpu, 92, None, None, "High single-bit ECC error rate detected"), "benign_xid")


def boot_burst(out: EventLines, boot: float, node: int, hw: NodeHardware) -> None:
    """Kernel banner, NVIDIA driver load and slurmd start after a (re)boot at ``boot``."""
    out.add(boot, node, f"Linux version {_KERNEL} (buildd@lcy02-amd64-051) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) "
            "11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #122-Ubuntu SMP Thu May 23 07:48:21 UTC 2024", "boot")
    out.add(boot, node, f"Command line: BOOT_IMAGE=/vmlinuz-{_KERNEL} root=/dev/md127p3 ro iommu=pt "
            "pci=realloc=off", "boot")
    out.add(boot + 21.4, node, "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build  "
            "(dvs-builder@U16-I3-C02-6-1)  Fri May 31 09:35:42 UTC 2024", "boot")
    out.add(boot + 38.2, node, "systemd[1]: Started slurmd.service - Slurm node daemon.", "boot", False)
    out.add(boot + 38.3, node, f"slurmd[{hw.slurmd_pid}]: slurmd version 23.11.4 started", "boot", False)
    out.add(boot + 38.4, node, f"slurmd[{hw.slurmd_pid}]: CPUs=224 Boards=1 Sockets=2 Cores=56 Threads=2 "
            "Memory=2063937 TmpDisk=3575000 Uptime=38 CPUSpecList=(null) FeaturesAvail=(null) "
            "FeaturesActive=(null)", "boot", False)
