"""Benchmark: Drain3 templates, fast path (mask + dedupe + mine distinct + join back) vs per line.

Generates realistic node-log messages (the part after ``host program:``): ~98 % repetitive noise
from a few hundred message shapes whose numbers, ids, nodes, PCI addresses and IPs vary per line,
and ~2 % Xid / SXid / ECC / InfiniBand / PCIe / storage lines. Then, each in its own child process
so that peak RSS is the mining's own:

(a) fast path: ``mine_lines`` = canonicalize digits (NumPy) and ``unique()``, vectorized Polars
    masking of the distinct forms, Drain3 on the distinct masked messages only, ids joined back;
(b) baseline: the same vectorized masking, then the same Drain's ``add_log_message`` on every
    line. It is slow, so by default it runs on the first ``--baseline-lines`` lines and its rate
    is extrapolated (the output says so); pass ``--baseline-lines 0`` to run it on everything.

Both runs see the same first lines, and the benchmark also reports how well (a)'s grouping agrees
with (b)'s on them (grouping accuracy of (a) taking (b) as truth).

    python benchmarks/bench_templates.py [--lines 1000000] [--baseline-lines 100000] [--seed 7]

Targets (2-core machine): >= 500,000 lines/s (issue 3) and >= 7x per-line Drain3 (issues 3 and 16).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from isolated_run import run_child  # sibling module (run as a script)

# ---------------------------------------------------------------------------------------------
# Message generator

#: Noise shapes: {placeholders} are filled per line; {a|b|c} picks one word per *shape* (so each
#: alternative is its own shape, which is how a few dozen lines of text become a few hundred shapes).
NOISE = [
    "pam_unix(sshd:session): session {opened|closed} for user {user}{ by (uid=0)|}",
    "Accepted publickey for {user} from {ip} port {port} ssh2: RSA SHA256:{b64}",
    "Received disconnect from {ip} port {port}:11: {disconnected by user|Bye Bye}",
    "Disconnected from user {user} {ip} port {port}",
    "Started Session {n} of User {user}.",
    "Starting {Session|Cleanup|Daily apt|Rotate log|Check PMIE} {n} {of User root|}.",
    "{Started|Finished|Stopped} {Daily Cleanup of Temporary Directories|Rotate log files|Message of the Day|Discard unused blocks|Run anacron jobs|Time & Date Service|Prometheus node exporter}.",
    "{systemd-logind|systemd}: New session {n} of user {user}.",
    "Removed session {n}.",
    "_slurm_rpc_{submit_batch_job|complete_batch_script|kill_job|requeue|update_job}: JobId={job} {InitPrio=|uid=}{n}",
    "sched: Allocate JobId={job} NodeList={node} #CPUs={n} Partition={gpu|cpu|debug|long}",
    "job_complete: JobId={job} WEXITSTATUS {0|1|2} {done|}",
    "[job {job}] attempting to run prolog [/etc/slurm/prolog.d/{nvidia|epilog|health}.sh]",
    "launch task StepId={job}.{n} request from UID:{uid} GID:{uid} HOST:{ip} PORT:{port}",
    "{error|debug}: _rpc_terminate_job: uid = {uid} JobId={job}",
    "done with job {job}",
    "Warning: Note very large processing time from {_slurm_rpc_dump_jobs|_slurmctld_background|dump_all_job_state}: usec={n} began={ts}",
    "nvidia-persistenced: {Started|Verbose syslog connection opened|device {pci} - persistence mode enabled.}",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {535.129.03|550.54.15|570.86.10}  {Tue Nov  7 19:46:55 UTC 2023|Fri Feb 14 02:36:12 UTC 2025}",
    "nvidia-nvswitch{n}: {open|close} (major={n})",
    "nvidia-fabricmanager: {Successfully configured all the available NVSwitches|Fabric Manager {started|stopped} on {node}|Connected to {n} peers}",
    "dcgm-exporter: collecting metrics for GPU {n} uuid GPU-{uuid} {ok|}",
    "{eth|ib|enp}{d}: {renamed from {eth|ens}{d}|Link is Up - 100Gbps/Full|carrier {on|off}}",
    "mlx5_core {pci}: {mlx5_pcie_event:301:(pid {pid}): PCIe slot advertised sufficient power (75W).|E-Switch: Total vports {n}, per vport: max uc({n}) max mc({n})|Port module event: module {d}, Cable plugged}",
    "ib_srp: {connected|reconnecting} to target {hex} via {ip}",
    "{chronyd|ntpd}[{pid}]: {Selected source {ip}|Source {ip} replaced with {ip}|System clock wrong by {f} seconds}",
    "CRON[{pid}]: ({root|slurm|prometheus}) CMD ({/usr/lib/sa/sa1 1 1|command -v debian-sa1 > /dev/null && debian-sa1 1 1|/opt/health/check.sh --quick})",
    "audit: type={1400|1106|1105|1101} audit({f}:{n}): {pid}={pid} uid={uid} auid={uid} ses={n} msg='op={PAM:session_open|PAM:accounting} acct=\"{user}\" exe=\"/usr/sbin/sshd\" hostname={ip} addr={ip} terminal=ssh res=success'",
    "kernel: [{f}] {perf: interrupt took too long ({n} > {n}), lowering kernel.perf_event_max_sample_rate to {n}|TCP: request_sock_TCP: Possible SYN flooding on port {port}. Sending cookies.|nfs: server {node} OK}",
    "{lustre|Lustre}: {n}:0:(client.c:{n}:ptlrpc_expire_one_request()) @@@ Request sent has timed out for slow reply: [sent {n}/real {n}] req@{hex} x{n}/t0(0) o{n}->scratch-OST{d}{d}-osc-{hex}@{ip}@o2ib:28/4 lens {n}/{n} e 0 to 1 dl {n} ref 1 fl Rpc:X/0/ffffffff rc 0/-1",
    "systemd[1]: {user@{uid}.service|session-{n}.scope|slurmstepd.scope|docker-{cid}.scope}: {Succeeded.|Deactivated successfully.|Consumed {f}s CPU time.}",
    "rsyslogd: imjournal: {n} messages lost due to rate-limiting ({n} allowed within {n} seconds)",
    "containerd[{pid}]: time=\"{ts}\" level=info msg=\"{shim disconnected|cleaning up dead shim|loading plugin}\" id={cid} namespace={k8s.io|moby}",
    "node_exporter[{pid}]: ts={ts} caller={collector.go|textfile.go}:{n} level={info|warn} collector={textfile|hwmon|nvme} msg=\"{collector succeeded|collector failed}\" duration_seconds={f}",
    "smartd[{pid}]: Device: /dev/nvme{d}, {SMART Prefailure Attribute: 1 Raw_Read_Error_Rate changed from {n} to {n}|Temperature {n} Celsius reached limit of {n} Celsius}",
    "gpu-health: {node} GPU {d} ({pci}) temp={n}C power={f}W sm_clock={n}MHz mem_used={n}MiB util={n}%",
]

#: Signal shapes, ~2 % of lines: the lines the event catalog cares about.
SIGNAL = [
    "NVRM: Xid (PCI:{pci}): {79|48|63|64|74|92|94|95|119|13|31|43}, pid={pid}, name={python|pt_main_thread|nccl-test}, {GPU has fallen off the bus.|Ch {hex}, intr {hex}|DBE (double bit error) ECC error|Timeout after 6s of waiting for RPC response from GPU{d} GSP!}",
    "NVRM: Xid (PCI:{pci}): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC {d}, TPC {d}, SM {d}): Out Of Range Address",
    "NVRM: GPU at PCI:{pci}: GPU-{uuid}",
    "NVRM: GPU Board Serial Number: {n}",
    "nvidia-nvswitch{d}: SXid (PCI:{pci}): {12028|20034|22013|24007}, {Non-fatal|Fatal}, Link {n} {NVLink|MINION} {link training failure|receive error}",
    "mlx5_core {pci}: {mlx5_ib{d}: Port {d} link {down|up}|Port: {d} Link {DOWN|ACTIVE}}",
    "ib{d}: lost carrier",
    "pcieport {pci}: AER: {Corrected|Uncorrected (Non-Fatal)} error received: {pci}",
    "pcieport {pci}: pciehp: Slot({n}): Link Down",
    "EDAC MC{d}: {n} CE memory read error on CPU_SrcID#{d}_Ha#{d}_Chan#{d}_DIMM#{d} (channel:{d} slot:{d} page:{hex} offset:{hex} grain:32 syndrome:{hex})",
    "LustreError: {n}:0:(import.c:{n}:ptlrpc_connect_interpret()) scratch-MDT0000_UUID went back in time (transno {n} was previously committed, server now claims {n})!",
    "nfs: server {node} not responding, {still trying|timed out}",
    "Out of memory: Killed process {pid} ({python|java|slurmstepd}) total-vm:{n}kB, anon-rss:{n}kB, file-rss:{n}kB, shmem-rss:{n}kB, UID:{uid} pgtables:{n}kB oom_score_adj:0",
    "INFO: task {kworker/{d}:{d}|jbd2/nvme0n1p2-8|python}:{pid} blocked for more than {120|240} seconds.",
    "slurmstepd: error: *** JOB {job} ON {node} CANCELLED AT {ts} DUE TO {NODE FAILURE|TIME LIMIT} ***",
    "CPU{n}: Core temperature above threshold, cpu clock throttled (total events = {n})",
]

_USERS = [f"u{i:04d}" for i in range(300)] + ["root", "slurm", "prometheus"]
_POOL_RNG = random.Random(0)
_FINGERPRINTS = ["".join(_POOL_RNG.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(43)) for _ in range(400)]
_CONTAINERS = [f"{_POOL_RNG.getrandbits(256):064x}" for _ in range(2000)]


def _expand(shape: str) -> list[str]:
    """All concrete shapes of a ``{a|b}`` alternation pattern (innermost groups first)."""
    start = shape.find("{")
    while start != -1:
        depth, i = 0, start
        while i < len(shape):
            depth += shape[i] == "{"
            depth -= shape[i] == "}"
            if depth == 0:
                break
            i += 1
        body = shape[start + 1 : i]
        if "|" in body or "{" in body:
            parts, d, cur = [], 0, ""
            for ch in body:
                if ch == "|" and d == 0:
                    parts.append(cur)
                    cur = ""
                    continue
                d += ch == "{"
                d -= ch == "}"
                cur += ch
            parts.append(cur)
            out: list[str] = []
            for p in parts:
                out.extend(_expand(shape[:start] + p + shape[i + 1 :]))
            return out
        start = shape.find("{", i + 1)
    return [shape]


def _fill(shape: str, rng: random.Random, nodes: list[str]) -> str:
    """Fill one shape's value placeholders with fresh random values."""
    vals = {
        "n": lambda: str(rng.randrange(1, 10**rng.randrange(1, 7))),
        "d": lambda: str(rng.randrange(8)),
        "f": lambda: f"{rng.random() * 10**rng.randrange(1, 6):.{rng.randrange(1, 7)}f}",
        "pid": lambda: str(rng.randrange(300, 4_000_000)),
        "uid": lambda: str(rng.randrange(1000, 70000)),
        "job": lambda: str(rng.randrange(1_000_000, 9_999_999)),
        "port": lambda: str(rng.randrange(1024, 65535)),
        "node": lambda: rng.choice(nodes),
        "user": lambda: rng.choice(_USERS),
        "ip": lambda: f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
        "pci": lambda: f"0000:{rng.choice(['18', '2a', '3b', '5d', '9a', 'ab', 'ba', 'db'])}:00.{rng.randrange(2)}",
        "hex": lambda: f"0x{rng.getrandbits(rng.choice([16, 32, 48, 64])):x}",
        "uuid": lambda: "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}".format(
            rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(48)
        ),
        "ts": lambda: f"2025-0{rng.randrange(1, 10)}-{rng.randrange(10, 29)}T{rng.randrange(10, 24)}:{rng.randrange(10, 60)}:{rng.randrange(10, 60)}",
        # a user's key fingerprint and a container's id repeat across lines, as in real logs
        "b64": lambda: rng.choice(_FINGERPRINTS),
        "cid": lambda: rng.choice(_CONTAINERS),
    }
    out, i = [], 0
    while True:
        j = shape.find("{", i)
        if j == -1:
            out.append(shape[i:])
            return "".join(out)
        k = shape.index("}", j)
        out.append(shape[i:j])
        out.append(vals[shape[j + 1 : k]]())
        i = k + 1


def generate_messages(n: int, seed: int, signal_share: float = 0.02) -> tuple[list[str], int]:
    """``n`` messages and the number of distinct shapes they were drawn from."""
    rng = random.Random(seed)
    nodes = [f"gpu{i:04d}" for i in range(1, 2001)]
    noise = [s for pat in NOISE for s in _expand(pat)]
    signal = [s for pat in SIGNAL for s in _expand(pat)]
    # Zipf-like weights: a few shapes dominate the noise, as in real syslog.
    noise_w = [1 / (r + 1) ** 1.1 for r in range(len(noise))]
    rng.shuffle(noise)
    n_signal = int(n * signal_share)
    picks = rng.choices(noise, weights=noise_w, k=n - n_signal) + rng.choices(signal, k=n_signal)
    rng.shuffle(picks)
    return [_fill(s, rng, nodes) for s in picks], len(noise) + len(signal)


# ---------------------------------------------------------------------------------------------
# Child processes (so each reports its own peak RSS)

CHILD = r"""
import json, sys, time
from peak_memory import peak_rss_mb
from pathlib import Path
import polars as pl
from gpusre.models.logs.masking import mask_messages
from gpusre.models.logs.templates import TemplateMiner, distinct_first_seen, grouping_accuracy, mine_lines
mode, path, limit = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
lines = path.read_text().split("\n")[:-1]
if limit:
    lines = lines[:limit]
series = pl.Series("message", lines, dtype=pl.String)
del lines
rss0 = peak_rss_mb()
out = {"lines": len(series), "rss_before_mb": rss0}
if mode == "fast":
    from gpusre.models.logs.masking import canonical_digits, mask_canonical
    # the fast path step by step (what TemplateMiner.assign_messages does), to show where time goes
    t0 = time.perf_counter()
    keys = canonical_digits(series)
    # dedupe also yields each row's index among the distinct forms (the join back's lookup)
    distinct_keys, inverse = distinct_first_seen(keys)
    t1 = time.perf_counter()
    masked = mask_canonical(distinct_keys)
    t2 = time.perf_counter()
    miner = TemplateMiner.new()
    assigned = miner.assign(masked)
    t3 = time.perf_counter()
    ids = assigned["template_id"].gather(inverse)
    t4 = time.perf_counter()
    out.update(canon_s=t1 - t0, mask_s=t2 - t1, mine_s=t3 - t2, join_s=t4 - t3, seconds=t4 - t0,
               keys=len(distinct_keys), distinct=masked.n_unique(), templates=miner.templates().height)
    # same thing through the public convenience function (what the CLI calls)
    t0 = time.perf_counter()
    res = mine_lines(series)
    out["mine_lines_s"] = time.perf_counter() - t0
    # grouping of the baseline's subset alone, for the agreement check
    subset = int(sys.argv[5]) or len(series)
    Path(sys.argv[4]).write_text(json.dumps(mine_lines(series.head(subset))["template_id"].to_list()))
else:
    # The same Drain (variable-aware similarity, same config) fed every line, as a per-line
    # deployment would; calling Drain.add_log_message directly skips drain3.TemplateMiner's own
    # per-line overhead, so the baseline is if anything flattered.
    drain = TemplateMiner.new().drain
    t0 = time.perf_counter()
    masked = mask_messages(series).to_list()
    t1 = time.perf_counter()
    ids = [drain.add_log_message(m)[0].cluster_id for m in masked]
    t2 = time.perf_counter()
    out.update(mask_s=t1 - t0, mine_join_s=t2 - t1, seconds=t2 - t0, templates=len(drain.id_to_cluster))
    fast = json.loads(Path(sys.argv[4]).read_text())
    out["agreement"] = grouping_accuracy(ids, fast)
out["peak_rss_mb"] = peak_rss_mb()
print(json.dumps(out))
"""


def _child(mode: str, path: Path, limit: int, ids_path: Path, subset: int) -> dict[str, float]:
    """Run one measurement in a fresh interpreter and return its JSON report (exit if it failed)."""
    report = run_child(CHILD, mode, str(path), str(limit), str(ids_path), str(subset))
    if report is None:  # run_child printed the child's stderr
        raise SystemExit(1)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--baseline-lines", type=int, default=100_000,
                        help="lines for the per-line Drain3 baseline (0 = all); its rate is extrapolated")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    t0 = time.perf_counter()
    messages, n_shapes = generate_messages(args.lines, args.seed)
    print(f"generated {len(messages):,} messages from {n_shapes} shapes in {time.perf_counter() - t0:.1f} s")
    with tempfile.TemporaryDirectory(prefix="gpusre-bench-templates-") as tmp:
        path, ids_path = Path(tmp) / "messages.txt", Path(tmp) / "fast_ids.json"
        path.write_text("".join(m.replace("\n", " ") + "\n" for m in messages))
        del messages
        base_limit = 0 if args.baseline_lines <= 0 or args.baseline_lines >= args.lines else args.baseline_lines
        fast = _child("fast", path, 0, ids_path, base_limit)
        base = _child("baseline", path, base_limit, ids_path, base_limit)

    fast_rate = fast["lines"] / fast["seconds"]
    base_rate = base["lines"] / base["seconds"]
    print(f"(a) fast path  : {fast['lines']:,} lines in {fast['seconds']:.2f} s "
          f"(canonicalize+dedupe {fast['canon_s']:.2f} s -> {fast['keys']:,} forms, mask {fast['mask_s']:.2f} s, "
          f"Drain3 on {fast['distinct']:,} distinct masked {fast['mine_s']:.2f} s, join back {fast['join_s']:.2f} s) "
          f"= {fast_rate:,.0f} lines/s; {fast['templates']} templates; "
          f"mine_lines() end to end {fast['mine_lines_s']:.2f} s; peak RSS {fast['peak_rss_mb']:,.0f} MB "
          f"({fast['rss_before_mb']:,.0f} MB holding the input)")
    extrapolated = " (measured on this subset; rate extrapolated to all lines)" if base["lines"] < fast["lines"] else ""
    print(f"(b) per line   : {base['lines']:,} lines in {base['seconds']:.2f} s "
          f"(mask {base['mask_s']:.2f} s, Drain3 add_log_message x {base['lines']:,} {base['mine_join_s']:.2f} s) = "
          f"{base_rate:,.0f} lines/s{extrapolated}; {base['templates']} templates; peak RSS {base['peak_rss_mb']:,.0f} MB; "
          f"est. {fast['lines'] / base_rate:.1f} s for all {fast['lines']:,} lines")
    print(f"grouping agreement of (a) with (b), both mining the first {base['lines']:,} lines: {base['agreement']:.4f}")
    speedup = fast_rate / base_rate
    print(f"speed-up (a)/(b): {speedup:.1f}x")
    ok = fast_rate >= 500_000 and speedup >= 7
    print("target (>= 500,000 lines/s and >= 7x per-line Drain3):", "met" if ok else "NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
