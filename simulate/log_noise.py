"""Background node-log noise: a few hundred ordinary syslog line shapes, rendered in bulk.

Real GPU nodes log mostly harmless lines (systemd units, sshd logins, cron, slurmd task launches,
chrony, audit, kernel chatter). The pipeline must sift its few events out of them, and template
mining must see the ~hundreds of shapes a real node shows, so the noise is a weighted table of
shapes, each a ``tag`` (``kernel`` or ``prog[pid]``) and a message with ``{placeholder}`` slots.

Rendering never formats one line at a time in Python: every slot is filled from a pre-rendered pool
of values of its type (random pids, IPs, ports, job ids, ...) by index, and lines are assembled with
one Polars ``concat_str`` over whole columns (~10 M lines/s). No shape contains ``Xid`` or a
catalogued failure (no ``Link DOWN``, ``LustreError``, ``error:`` from slurmd, OOM), so noise never
looks like a fault.

>>> import numpy as np
>>> noise = NoiseTemplates.build(np.random.default_rng(0))
>>> tids = noise.draw(5, np.random.default_rng(1))
>>> lines = noise.render(tids, np.random.default_rng(2))
>>> len(lines), any("Xid" in s for s in lines.to_list())
(5, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import polars as pl

__all__ = ["NOISE_SHAPES", "NoiseTemplates", "SYSTEMD_UNITS"]

#: systemd units whose start/stop lines make up much of a node's journal.
SYSTEMD_UNITS: tuple[str, ...] = (
    "logrotate.service", "man-db.service", "apt-daily.service", "apt-daily-upgrade.service",
    "fstrim.service", "systemd-tmpfiles-clean.service", "sysstat-collect.service", "sysstat-summary.service",
    "motd-news.service", "update-notifier-download.service", "nvidia-persistenced.service", "nvidia-dcgm.service",
    "nvidia-fabricmanager.service", "dcgm-exporter.service", "node_exporter.service", "telegraf.service",
    "slurmd.service", "munge.service", "chrony.service", "rsyslog.service", "sssd.service", "autofs.service",
    "ipmievd.service", "irqbalance.service", "smartd.service", "lldpd.service", "docker.service",
    "containerd.service", "snapd.service", "unattended-upgrades.service", "e2scrub_all.service",
    "dpkg-db-backup.service", "phpsessionclean.service", "certbot.service", "puppet.service",
)

# (tag, message, weight). Tags with "[{pid}]" get a random pid; "kernel" lines get the writer's uptime stamp.
_BASE: tuple[tuple[str, str, float], ...] = (
    # sshd / pam / logind: interactive logins to GPU nodes during jobs
    ("sshd[{pid}]", "Accepted publickey for {user} from {ip} port {port} ssh2: RSA SHA256:{fp}", 3),
    ("sshd[{pid}]", "Accepted publickey for {user} from {ip} port {port} ssh2: ED25519 SHA256:{fp}", 2),
    ("sshd[{pid}]", "pam_unix(sshd:session): session opened for user {user}(uid={uid}) by (uid=0)", 5),
    ("sshd[{pid}]", "pam_unix(sshd:session): session closed for user {user}", 5),
    ("sshd[{pid}]", "Received disconnect from {ip} port {port}:11: disconnected by user", 4),
    ("sshd[{pid}]", "Disconnected from user {user} {ip} port {port}", 4),
    ("sshd[{pid}]", "Connection closed by {ip} port {port} [preauth]", 1),
    ("sshd[{pid}]", "Connection closed by authenticating user {user} {ip} port {port} [preauth]", 0.5),
    ("sshd[{pid}]", "pam_slurm_adopt(sshd:account): Ignoring root user", 0.5),
    ("sshd[{pid}]", "pam_slurm_adopt(sshd:account): Process {pid} adopted into job {job}", 2),
    ("sshd[{pid}]", "Server listening on 0.0.0.0 port 22.", 0.1),
    ("systemd-logind[{pid}]", "New session {sess} of user {user}.", 5),
    ("systemd-logind[{pid}]", "Session {sess} logged out. Waiting for processes to exit.", 4),
    ("systemd-logind[{pid}]", "Removed session {sess}.", 4),
    ("systemd[1]", "Started Session {sess} of User {user}.", 4),
    ("systemd[1]", "session-{sess}.scope: Deactivated successfully.", 3),
    ("systemd[1]", "session-{sess}.scope: Consumed {secs}s CPU time.", 2),
    ("systemd[1]", "Created slice User Slice of UID {uid}.", 1),
    ("systemd[1]", "Removed slice User Slice of UID {uid}.", 1),
    ("systemd[1]", "Starting User Manager for UID {uid}...", 1),
    ("systemd[1]", "Started User Manager for UID {uid}.", 1),
    ("systemd[1]", "Stopping User Manager for UID {uid}...", 1),
    ("systemd[1]", "user@{uid}.service: Deactivated successfully.", 1),
    ("systemd[1]", "user-runtime-dir@{uid}.service: Deactivated successfully.", 1),
    ("systemd[{pid}]", "Reached target Main User Target.", 1),
    ("systemd[{pid}]", "Startup finished in {ms}ms.", 1),
    ("systemd[{pid}]", "Stopped target Main User Target.", 0.5),
    # cron
    ("CRON[{pid}]", "(root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)", 6),
    ("CRON[{pid}]", "(root) CMD (/usr/sbin/nhc -c /etc/nhc/nhc.conf -t 120 >/dev/null 2>&1)", 6),
    ("CRON[{pid}]", "(root) CMD (   cd / && run-parts --report /etc/cron.hourly)", 2),
    ("CRON[{pid}]", "(root) CMD (/usr/local/sbin/gpu-telemetry --push {ip} >/dev/null 2>&1)", 4),
    ("CRON[{pid}]", "(root) CMD (test -x /usr/sbin/anacron || ( cd / && run-parts --report /etc/cron.daily ))", 0.5),
    ("CRON[{pid}]", "pam_unix(cron:session): session opened for user root(uid=0) by (uid=0)", 6),
    ("CRON[{pid}]", "pam_unix(cron:session): session closed for user root", 6),
    # slurmd / slurmstepd: job launches and completions
    ("slurmd[{dpid}]", "launch task StepId={job}.0 request from UID:{uid} GID:{uid} HOST:{ip} PORT:{port}", 4),
    ("slurmd[{dpid}]", "task/affinity: lllp_distribution: JobId={job} manual binding: none,one_thread", 3),
    ("slurmd[{dpid}]", "task/affinity: batch_bind: job {job} CPU input mask for node: 0x{hex16}", 2),
    ("slurmd[{dpid}]", "task/affinity: batch_bind: job {job} CPU final HW mask for node: 0x{hex16}", 2),
    ("slurmd[{dpid}]", "Launching batch job {job} for UID {uid}", 4),
    ("slurmd[{dpid}]", "_run_prolog: run job script took usec={usec}", 3),
    ("slurmd[{dpid}]", "_run_prolog: prolog with lock for job {job} ran for {n} seconds", 3),
    ("slurmd[{dpid}]", "_run_epilog: run job script took usec={usec}", 3),
    ("slurmd[{dpid}]", "_run_epilog: epilog with lock for job {job} ran for {n} seconds", 2),
    ("slurmd[{dpid}]", "[{job}.batch] done with job", 3),
    ("slurmd[{dpid}]", "credential for job {job} revoked", 2),
    ("slurmd[{dpid}]", "Node reconfigured socket/core boundaries SocketsPerBoard=2:2(hw) CoresPerSocket=56:56(hw)", 0.1),
    ("slurmstepd[{pid}]", "[{job}.extern] done with job", 4),
    ("slurmstepd[{pid}]", "[{job}.batch] done with job", 4),
    ("slurmstepd[{pid}]", "[{job}.0] done with job", 3),
    ("slurmstepd[{pid}]", "[{job}.batch] task/cgroup: _memcg_initialize: job: alloc={mb}MB mem.limit={mb}MB memsw.limit=unlimited", 3),
    ("slurmstepd[{pid}]", "[{job}.batch] task/cgroup: _memcg_initialize: step: alloc={mb}MB mem.limit={mb}MB memsw.limit=unlimited", 3),
    ("slurmstepd[{pid}]", "[{job}.extern] task/cgroup: _memcg_initialize: job: alloc={mb}MB mem.limit={mb}MB memsw.limit=unlimited", 2),
    ("slurmstepd[{pid}]", "[{job}.0] task/cgroup: _memcg_initialize: step: alloc={mb}MB mem.limit={mb}MB memsw.limit=unlimited", 2),
    ("slurmstepd[{pid}]", "[{job}.batch] sending REQUEST_COMPLETE_BATCH_SCRIPT, error:0 status:0", 3),
    ("slurmstepd[{pid}]", "[{job}.0] task 0 (pid {pid}) exited with exit code 0.", 2),
    ("munged[{dpid}]", "Purged {n} credentials from replay hash", 2),
    # time, logging, monitoring daemons
    ("chronyd[{dpid}]", "Selected source {ip} (ntp{n}.cluster.internal)", 1),
    ("chronyd[{dpid}]", "Source {ip} replaced with {ip} (ntp{n}.cluster.internal)", 0.3),
    ("chronyd[{dpid}]", "System clock wrong by {frac} seconds", 0.5),
    ("chronyd[{dpid}]", "Can't synchronise: no majority", 0.1),
    ("rsyslogd[{dpid}]", '[origin software="rsyslogd" swVersion="8.2112.0" x-pid="{dpid}" x-info="https://www.rsyslog.com"] rsyslogd was HUPed', 1),
    ("rsyslogd[{dpid}]", "imjournal: journal files changed, reloading...  [v8.2112.0 try https://www.rsyslog.com/e/0 ]", 0.3),
    ("nv-hostengine[{dpid}]", "DCGM: Detected {n} new field watches for entity group 0", 0.5),
    ("dcgm-exporter[{dpid}]", 'level=info msg="Collecting DCGM metrics" interval={n}s', 1),
    ("node_exporter[{dpid}]", 'ts={isodate} caller=collector.go:169 level=info msg="collector succeeded" name=textfile duration_seconds={frac}', 1),
    ("telegraf[{dpid}]", "{isodate} I! [agent] Hang on, flushing any cached metrics before shutdown", 0.1),
    ("telegraf[{dpid}]", "{isodate} W! [outputs.influxdb] Metric buffer overflow; {n} metrics have been dropped", 0.3),
    ("nvidia-persistenced[{dpid}]", "Started ({dpid})", 0.1),
    ("nvidia-persistenced[{dpid}]", "device 0000:{bus}:00.0 - persistence mode enabled.", 0.2),
    ("dbus-daemon[{dpid}]", "[system] Activating via systemd: service name='org.freedesktop.hostname1' unit='dbus-org.freedesktop.hostname1.service' requested by ':1.{n}' (uid=0 pid={pid} comm=\"hostnamectl\")", 0.5),
    ("dbus-daemon[{dpid}]", "[system] Successfully activated service 'org.freedesktop.hostname1'", 0.5),
    ("systemd-hostnamed[{pid}]", "Hostname set to <{host}> (static)", 0.1),
    ("sssd_be[{dpid}]", "Backend is online", 0.5),
    ("sssd_nss[{dpid}]", "Enumeration requested but not enabled", 0.2),
    ("automount[{dpid}]", "expired /home/{user}", 2),
    ("automount[{dpid}]", "mount(nfs): mounted home:/export/home/{user} on /home/{user}", 2),
    ("lldpd[{dpid}]", "removal request for address of {ip}%{n}, but no knowledge of it", 0.2),
    ("smartd[{dpid}]", "Device: /dev/nvme{n1}, SMART/Health Information: Temperature {temp} Celsius", 0.5),
    ("ipmievd[{dpid}]", "Waiting for events...", 0.1),
    ("puppet-agent[{pid}]", "Applied catalog in {frac} seconds", 1),
    ("puppet-agent[{pid}]", "(/Stage[main]/Profile::Slurm::Node/File[/etc/slurm/gres.conf]/content) content changed '{{md5}}{hex16}' to '{{md5}}{hex16}'", 0.1),
    ("audit[{pid}]", "USER_START pid={pid} uid=0 auid={uid} ses={sess} msg='op=PAM:session_open grantors=pam_limits,pam_unix acct=\"{user}\" exe=\"/usr/sbin/sshd\" hostname={ip} addr={ip} terminal=ssh res=success'", 1),
    ("audit[{pid}]", "CRED_DISP pid={pid} uid=0 auid={uid} ses={sess} msg='op=PAM:setcred grantors=pam_unix acct=\"{user}\" exe=\"/usr/sbin/sshd\" hostname={ip} addr={ip} terminal=ssh res=success'", 1),
    ("sudo[{pid}]", "    root : PWD=/root ; USER=root ; COMMAND=/usr/bin/nvidia-smi -q -d ECC", 0.5),
    ("sudo[{pid}]", "pam_unix(sudo:session): session opened for user root(uid=0) by (uid=0)", 0.5),
    ("sudo[{pid}]", "pam_unix(sudo:session): session closed for user root", 0.5),
    ("snapd[{dpid}]", "storehelpers.go:{n}: cannot refresh: snap has no updates available: \"core20\", \"lxd\"", 0.2),
    ("kernel", "perf: interrupt took too long ({n4} > {n4}), lowering kernel.perf_event_max_sample_rate to {n4}", 0.3),
    ("kernel", "IPv6: ADDRCONF(NETDEV_CHANGE): eno{n1}: link becomes ready", 0.1),
    ("kernel", "EXT4-fs (md127p3): re-mounted {uuid} r/w. Quota mode: none.", 0.1),
    ("kernel", "workqueue: ib_cache_event_task [ib_core] hogged CPU for >10000us {n1} times, consider switching to WQ_UNBOUND", 0.3),
    ("kernel", "[UFW BLOCK] IN=eno1 OUT= MAC={mac} SRC={ip} DST={ip} LEN={n} TOS=0x00 PREC=0x00 TTL=64 ID={n4} DF PROTO=TCP SPT={port} DPT={port} WINDOW=64240 RES=0x00 SYN URGP=0", 1),
    ("kernel", "audit: type=1400 audit({epoch}.{ms3}:{n4}): apparmor=\"DENIED\" operation=\"open\" profile=\"snap.lxd.daemon\" name=\"/proc/{pid}/mounts\" pid={pid} comm=\"lxd\" requested_mask=\"r\" denied_mask=\"r\" fsuid=0 ouid=0", 0.5),
    ("kernel", "python[{pid}]: segfault at {hex8} ip {hex16} sp {hex16} error 4 in libc.so.6[{hex8}+195000]", 0.05),
    ("kernel", "TCP: request_sock_TCP: Possible SYN flooding on port {port}. Sending cookies.  Check SNMP counters.", 0.05),
    ("kernel", "nvidia-nvlink: Unregistered Nvlink Core, major device number {n}", 0.02),
    ("kernel", "NFSD: Using UMH upcall client tracking operations.", 0.02),
    ("kernel", "Lustre: {n4}:0:(client.c:2310:ptlrpc_expire_one_request()) @@@ Request sent has timed out for sent delay: [sent {epoch}] [real_sent {epoch}] [current {epoch}] [deadline 7s] [delay 0s]", 0.05),
    ("kernel", "device veth{hex4}: entered promiscuous mode", 0.3),
    ("kernel", "docker0: port {n1}(veth{hex4}) entered forwarding state", 0.3),
    ("kernel", "docker0: port {n1}(veth{hex4}) entered disabled state", 0.3),
    ("kernel", "cgroup: fork rejected by pids controller in /slurm/uid_{uid}/job_{job}", 0.05),
    ("kernel", "ICMPv6: NA: {mac} advertised our address fe80::{hex4}:{hex4}:{hex4}:{hex4} on eno1!", 0.05),
)

# Unit lifecycle lines: each unit x action is its own shape (as in a real journal).
_UNIT_ACTIONS: tuple[tuple[str, float], ...] = (
    ("Starting {u} - {d}...", 1.0), ("Started {u} - {d}.", 1.0), ("Finished {u} - {d}.", 0.6),
    ("{u}: Deactivated successfully.", 1.0), ("{u}: Consumed {{secs}}s CPU time.", 0.4),
)


def _unit_shapes() -> list[tuple[str, str, float]]:
    out = []
    for i, unit in enumerate(SYSTEMD_UNITS):
        desc = unit.split(".")[0].replace("-", " ").replace("_", " ").title()
        weight = 0.5 if i % 3 else 1.0  # hourly timers are more frequent than daily ones
        out.extend(("systemd[1]", action.format(u=unit, d=desc), weight * w) for action, w in _UNIT_ACTIONS)
    return out


#: Every noise shape: (tag, message, relative weight). ~350 shapes.
NOISE_SHAPES: tuple[tuple[str, str, float], ...] = _BASE + tuple(_unit_shapes())

_SLOT = re.compile(r"(?<!\{)\{([a-z0-9]+)\}(?!\})")

_HEX = np.array(list("0123456789abcdef"))
_USERS = ("alice", "bob", "chen", "dmitri", "eva", "farid", "gita", "hiro", "ines", "jonas", "kofi", "lena",
          "mateo", "nadia", "omar", "priya", "quinn", "rosa", "sven", "tariq", "uma", "viktor", "wen", "yara")


def _hex(rng: np.random.Generator, n: int, width: int) -> list[str]:
    digits = _HEX[rng.integers(0, 16, size=(n, width))]
    return ["".join(row) for row in digits]


def _pools(rng: np.random.Generator, size: int) -> dict[str, list[str]]:
    """Rendered values per placeholder type (``size`` each; few types need fewer)."""
    ints = lambda lo, hi: [str(v) for v in rng.integers(lo, hi, size=size)]  # noqa: E731
    b64 = np.array(list("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"))
    return {
        "pid": ints(1200, 4_194_304),
        "dpid": ints(600, 3000),
        "uid": ints(10_000, 60_000),
        "user": [f"{_USERS[i % len(_USERS)]}{'' if i < len(_USERS) else i}" for i in range(240)],
        "ip": [f"10.{a}.{b}.{c}" for a, b, c in rng.integers(0, 255, size=(size, 3))],
        "port": ints(1024, 65_536),
        "n": ints(1, 1000),
        "n1": ints(0, 8),
        "n4": ints(1000, 10_000),
        "usec": ints(900, 250_000),
        "mb": [str(v * 1024) for v in rng.integers(8, 2000, size=size)],
        "secs": [f"{v:.3f}" for v in rng.gamma(1.5, 2.0, size=size)],
        "ms": ints(40, 900),
        "ms3": [f"{v:03d}" for v in rng.integers(0, 1000, size=size)],
        "frac": [f"{v:.6f}" for v in rng.exponential(0.05, size=size)],
        "temp": ints(28, 61),
        "job": ints(1, 2_000_000),
        "sess": ints(1, 90_000),
        "epoch": ints(1_780_000_000, 1_800_000_000),
        "fp": ["".join(r) for r in b64[rng.integers(0, 64, size=(512, 43))]],
        "hex4": _hex(rng, 4096, 4),
        "hex8": _hex(rng, size, 8),
        "hex16": _hex(rng, size, 16),
        "uuid": [f"{a[:8]}-{a[8:12]}-{a[12:16]}-{a[16:20]}-{a[20:]}" for a in _hex(rng, 64, 32)],
        "mac": [":".join(h[i:i + 2] for i in range(0, 12, 2)) for h in _hex(rng, 1024, 12)],
        "bus": ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"],
        "host": [f"login{i:02d}" for i in range(1, 5)],
        "isodate": [f"2026-{m:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}Z"
                    for m, d, h, mi, s in zip(rng.integers(1, 13, size=size), rng.integers(1, 29, size=size),
                                              rng.integers(0, 24, size=size), rng.integers(0, 60, size=size),
                                              rng.integers(0, 60, size=size), strict=True)],
    }


@dataclass(frozen=True)
class NoiseTemplates:
    """The compiled shape table: literal pieces and slot types per shape, and the value pools."""

    #: ``literals[k][t]``: literal text before slot k of shape t (the last piece ends the line).
    literals: list[pl.Series]
    #: ``slot_types[k][t]``: pool type index of slot k of shape t (-1: no slot).
    slot_types: list[np.ndarray]
    pool: pl.Series
    pool_offset: np.ndarray
    pool_size: np.ndarray
    weights: np.ndarray
    #: True for ``kernel`` shapes (the writer adds ``kernel: [uptime] ``).
    is_kernel: np.ndarray

    @classmethod
    def build(cls, rng: np.random.Generator, pool_size: int = 8192) -> NoiseTemplates:
        """Compile :data:`NOISE_SHAPES` and draw the value pools from ``rng``."""
        pools = _pools(rng, pool_size)
        names = list(pools)
        type_index = {n: i for i, n in enumerate(names)}
        flat = [""]  # index 0: the empty value of an unused slot
        offsets, sizes = [], []
        for n in names:
            offsets.append(len(flat))
            sizes.append(len(pools[n]))
            flat.extend(pools[n])
        split: list[tuple[list[str], list[int]]] = []
        for tag, msg, _ in NOISE_SHAPES:
            text = msg if tag == "kernel" else f"{tag}: {msg}"
            pieces, types, pos = [], [], 0
            for m in _SLOT.finditer(text):
                pieces.append(text[pos:m.start()].replace("{{", "{").replace("}}", "}"))
                types.append(type_index[m.group(1)])
                pos = m.end()
            pieces.append(text[pos:].replace("{{", "{").replace("}}", "}"))
            split.append((pieces, types))
        k_max = max(len(t) for _, t in split)
        literals = []
        slot_types = []
        for k in range(k_max + 1):
            # Slot k's literal sits before slot k; a shape's closing text goes into its own last piece.
            literals.append(pl.Series([p[k] if k < len(p) else "" for p, _ in split], dtype=pl.String))
            if k < k_max:
                slot_types.append(np.array([t[k] if k < len(t) else -1 for _, t in split], dtype=np.int64))
        weights = np.array([w for _, _, w in NOISE_SHAPES], dtype=float)
        return cls(literals, slot_types, pl.Series(flat, dtype=pl.String), np.array(offsets), np.array(sizes),
                   weights / weights.sum(), np.array([t == "kernel" for t, _, _ in NOISE_SHAPES]))

    @property
    def n_shapes(self) -> int:
        """Number of distinct shapes."""
        return len(self.weights)

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` shape ids by weight."""
        return rng.choice(self.n_shapes, size=n, p=self.weights)

    def render(self, tids: np.ndarray, rng: np.random.Generator) -> pl.Series:
        """Message text (``prog[pid]: msg``, or the bare message of kernel shapes) for each shape id."""
        n_slots = (np.stack(self.slot_types) >= 0).sum(axis=0) if self.slot_types else np.zeros(self.n_shapes, int)
        per_row = n_slots[tids]
        # Render shapes with the same slot count together so concat_str only touches columns they use.
        order = np.argsort(per_row, kind="stable")
        sorted_tids, sorted_slots = tids[order], per_row[order]
        cuts = np.flatnonzero(np.diff(sorted_slots)) + 1
        chunks = [self._render_group(part, int(sorted_slots[lo]) if len(part) else 0, rng)
                  for part, lo in zip(np.split(sorted_tids, cuts), np.concatenate([[0], cuts]), strict=True)
                  if len(part)]
        if not chunks:
            return pl.Series("body", [], dtype=pl.String)
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        return pl.concat(chunks).gather(pl.Series(inverse, dtype=pl.UInt32))

    def _render_group(self, tids: np.ndarray, n_slots: int, rng: np.random.Generator) -> pl.Series:
        n = len(tids)
        idx = pl.Series(tids, dtype=pl.UInt32)
        parts: list[pl.Series] = []
        for k in range(n_slots + 1):
            parts.append(self.literals[k].gather(idx).alias(f"l{k}"))
            if k < n_slots:
                t = self.slot_types[k][tids]
                pick = self.pool_offset[t] + rng.integers(0, 1 << 31, size=n) % self.pool_size[t]
                parts.append(self.pool.gather(pl.Series(pick, dtype=pl.UInt32)).alias(f"s{k}"))
        if len(parts) == 1:
            return parts[0].alias("body")
        return pl.DataFrame(parts).select(pl.concat_str(pl.all()).alias("body")).to_series()
