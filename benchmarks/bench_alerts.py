"""Benchmark: alerts end to end (payload files → raw.alert_notifications → core.alerts → incidents).

Generates N synthetic Alertmanager webhook notifications for a 2,000-node GPU cluster — a realistic
mix of node-exporter, dcgm-exporter, IPMI (BMC), InfiniBand-switch and Lustre alerts; every alert
occurrence is repeated with Alertmanager's repeat_interval (1 + geometric, mean ~3 firing
notifications) and most are resolved; some fire again later under the same fingerprint; payloads
group 1-8 alerts of one alertname; 10 % of payloads also go to a second receiver; 5 % of alerts
carry no fingerprint (computed from labels) — as daily JSON-lines files (a webhook receiver
appending request bodies). Then ingests them into a fresh DuckDB warehouse with the pipeline's own
``ingest_alert_files`` + ``build_core_alerts``, then clusters them into incidents with every alert mart
(``alert_marts``, as the ``marts/alert_incidents`` asset does, topology of 63 leaf switches), in a
child process, and prints notifications/s and the child's peak RSS.

    python benchmarks/bench_alerts.py [--notifications 1000000] [--days 30] [--workdir DIR]

Target (alerts issue, 2-core machine): >= 50,000 notifications/s, peak RSS <= 2 GB. The child's CPU
time is printed too: on a machine shared with other work, wall-clock throughput varies several-fold
between runs, CPU time much less.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from isolated_run import fresh_warehouse, run_child  # sibling module (run as a script)

CHILD = r"""
import json, resource, sys, time
from peak_memory import peak_rss_mb
from pathlib import Path
from gpusre.models.warehouse import connect
from gpusre.models.sources.alerts.ingest import build_core_alerts, ingest_alert_files
landing, warehouse = Path(sys.argv[1]), Path(sys.argv[2])
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
nodes = [f"gpu{i:04d}" for i in range(1, 2001)]
con = connect(warehouse)
t0, c0 = time.perf_counter(), cpu()
results = ingest_alert_files(con, landing)  # stages, then publishes in one transaction
t1, rss_ingest = time.perf_counter(), peak_rss_mb()
alerts, templates = build_core_alerts(con, known_nodes=nodes)
t2, rss_core = time.perf_counter(), peak_rss_mb()
import polars as pl
from gpusre.assets.alert_incidents import _ALERT_SQL
from gpusre.models.alerts.clustering import Topology, alert_marts
topology = Topology.from_groups({}, {f"leaf{i // 32 + 1:02d}": nodes[i:i + 32] for i in range(0, 2000, 32)})
marts = alert_marts(con.sql(_ALERT_SQL).pl(), topology=topology, hw_incidents=None, jobs=None, attribution=None)
t3, c2 = time.perf_counter(), cpu()
n, computed = con.sql("SELECT count(*), count(*) FILTER (WHERE fingerprint_computed) FROM raw.alert_notifications").fetchall()[0]
resolved, with_node = con.sql("SELECT count(*) FILTER (WHERE status = 'resolved'), count(node) FROM core.alerts").fetchall()[0]
con.close()
print(json.dumps({"files": len(results), "notifications": n, "computed_fingerprints": computed,
                  "rejected": sum(r.rows_rejected for r in results), "alerts": alerts, "resolved": resolved,
                  "with_node": with_node, "templates": templates, "ingest_s": t1 - t0, "core_s": t2 - t1, "cpu_s": c2 - c0,
                  "incidents_s": t3 - t2, "incidents": marts.incidents.height,
                  "peak_rss_ingest_mb": rss_ingest, "peak_rss_core_mb": rss_core, "peak_rss_mb": peak_rss_mb()}))
"""

NODES = [f"gpu{i:04d}" for i in range(1, 2001)]
LEAVES = [f"leaf{i:02d}" for i in range(1, 64)]

# (alertname, severity, weight, label builder, summary builder, description builder)
RULES = [
    ("HostHighCpuLoad", "warning", 14,
     lambda n, r: {"instance": f"{n}.cluster.local:9100", "job": "node-exporter"},
     lambda n, r: f"Host high CPU load (instance {n}.cluster.local:9100)",
     lambda n, r: f"CPU load is > 80%\n  VALUE = {r.uniform(80, 100):.2f}"),
    ("HostOutOfMemory", "warning", 10,
     lambda n, r: {"instance": f"{n}.cluster.local:9100", "job": "node-exporter"},
     lambda n, r: f"Host out of memory (instance {n}.cluster.local:9100)",
     lambda n, r: f"Node memory is filling up (< 10% left)\n  VALUE = {r.uniform(1, 10):.2f}"),
    ("HostOutOfDiskSpace", "warning", 6,
     lambda n, r: {"instance": f"{n}.cluster.local:9100", "job": "node-exporter", "device": "/dev/nvme0n1p2",
                   "mountpoint": "/scratch", "fstype": "xfs"},
     lambda n, r: f"Host out of disk space (instance {n}.cluster.local:9100)",
     lambda n, r: f"Disk is almost full (< 10% left)\n  VALUE = {r.uniform(1, 10):.2f}"),
    ("HostNetworkReceiveErrors", "warning", 6,
     lambda n, r: {"instance": f"{n}.cluster.local:9100", "job": "node-exporter", "device": f"ib{r.integers(0, 4)}"},
     lambda n, r: f"Host Network Receive Errors (instance {n}.cluster.local:9100)",
     lambda n, r: f"Host {n} interface has encountered {r.integers(1, 500)} receive errors in the last two minutes."),
    ("GpuXidError", "critical", 12,
     lambda n, r: {"instance": f"{n}:9400", "Hostname": n, "job": "dcgm-exporter", "gpu": str(r.integers(0, 8)),
                   "modelName": "NVIDIA H100 80GB HBM3", "xid": str(r.choice([13, 31, 43, 48, 63, 74, 79, 94, 119]))},
     lambda n, r: f"GPU Xid error on {n}",
     lambda n, r: f"DCGM_FI_DEV_XID_ERRORS = {r.choice([13, 31, 43, 48, 63, 74, 79, 94, 119])}"),
    ("GpuHighTemperature", "warning", 10,
     lambda n, r: {"instance": f"{n}:9400", "Hostname": n, "job": "dcgm-exporter", "gpu": str(r.integers(0, 8)),
                   "modelName": "NVIDIA H100 80GB HBM3"},
     lambda n, r: f"GPU temperature {r.integers(85, 95)}C on {n}",
     lambda n, r: "GPU temperature above 85C for 5 minutes"),
    ("GpuEccDoubleBitError", "critical", 3,
     lambda n, r: {"instance": f"{n}:9400", "Hostname": n, "job": "dcgm-exporter", "gpu": str(r.integers(0, 8))},
     lambda n, r: f"Uncorrectable ECC error on {n}",
     lambda n, r: f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL increased by {r.integers(1, 4)}"),
    ("IpmiFanSpeedSensorCritical", "critical", 5,
     lambda n, r: {"instance": f"{n}-bmc:9290", "job": "ipmi-exporter", "name": f"Fan{r.integers(1, 8)}"},
     lambda n, r: f"IPMI fan speed sensor critical (instance {n}-bmc:9290)",
     lambda n, r: f"IPMI fan sensor Fan{r.integers(1, 8)} on {n}-bmc:9290 is in critical state."),
    ("IpmiTemperatureSensorWarning", "warning", 5,
     lambda n, r: {"instance": f"{n}-bmc:9290", "job": "ipmi-exporter", "name": "CPU1 Temp"},
     lambda n, r: f"IPMI temperature sensor warning (instance {n}-bmc:9290)",
     lambda n, r: f"IPMI temperature sensor CPU1 Temp on {n}-bmc:9290 is in warning state."),
    ("NodeDown", "critical", 6,
     lambda n, r: {"instance": f"{n}.cluster.local:9100", "job": "node-exporter"},
     lambda n, r: f"Node {n} is down",
     lambda n, r: f"{n}.cluster.local:9100 of job node-exporter has been down for more than 5 minutes."),
    ("InfinibandPortDown", "critical", 4,
     lambda n, r: {"instance": f"{LEAVES[int(r.integers(0, len(LEAVES)))]}.mgmt:9100", "switch": LEAVES[int(r.integers(0, len(LEAVES)))],
                   "port": str(r.integers(1, 65)), "job": "ib-exporter"},
     lambda n, r: f"InfiniBand port {r.integers(1, 65)} down",
     lambda n, r: "Port state changed to DOWN"),
    ("LustreOstAlmostFull", "warning", 2,
     lambda n, r: {"instance": f"oss{r.integers(1, 9):02d}:9169", "filesystem": "lustre1",
                   "ost": f"lustre1-OST{r.integers(0, 64):04x}", "job": "lustre-exporter"},
     lambda n, r: f"Lustre OST {r.integers(70, 99)}% full",
     lambda n, r: "OST filling up"),
]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def write_landing(landing: Path, notifications: int, days: int, seed: int) -> int:
    """Write about ``notifications`` notifications as one ``.jsonl`` file per day; returns the count."""
    rng = np.random.default_rng(seed)
    weights = np.array([r[2] for r in RULES], dtype=float)
    weights /= weights.sum()
    day0 = datetime(2026, 9, 1, tzinfo=timezone.utc).timestamp()
    span = days * 86400
    # One alert occurrence: a label set (name, node, extra labels), a start, k firing repeats, maybe resolved.
    events: list[tuple[float, int, str, str]] = []  # (notification time, rule, alert JSON head, status/endsAt tail)
    label_sets: list[tuple[int, str, str, str | None]] = []  # reusable (rule, labels json, annotations json, fp)
    total = 0
    while total < notifications:
        if label_sets and rng.random() < 0.3:   # the same alert fires again later
            rule_idx, labels_json, ann_json, fp = label_sets[int(rng.integers(0, len(label_sets)))]
        else:
            rule_idx = int(rng.choice(len(RULES), p=weights))
            name, severity, _, labels_of, summary_of, description_of = RULES[rule_idx]
            node = NODES[int(rng.integers(0, len(NODES)))]
            labels = {"alertname": name, "cluster": "h100-east", "prometheus": "monitoring/k8s",
                      "severity": severity, **labels_of(node, rng)}
            labels = dict(sorted(labels.items()))
            labels_json = json.dumps(labels, separators=(",", ":"))
            ann_json = json.dumps({"summary": summary_of(node, rng), "description": description_of(node, rng),
                                   "runbook_url": f"https://runbooks.example.org/{name}"}, separators=(",", ":"))
            fp = None if rng.random() < 0.05 else hashlib.blake2b(labels_json.encode(), digest_size=8).hexdigest()
            label_sets.append((rule_idx, labels_json, ann_json, fp))
        starts = day0 + float(rng.uniform(0, span))
        fp_json = f',"fingerprint":"{fp}"' if fp else ""
        prefix = (f'{{"labels":{labels_json},"annotations":{ann_json},"startsAt":"{_iso(starts)}",'
                  f'"generatorURL":"http://prometheus-k8s-0:9090/graph?g0.expr=up"{fp_json}')
        repeats = int(rng.geometric(1 / 3))  # mean 3 firing notifications
        for k in range(repeats):   # repeat_interval 4 h; endsAt = resolve timeout (5 min after the evaluation)
            t = starts + 30 + k * 4 * 3600
            events.append((t, rule_idx, prefix, f',"status":"firing","endsAt":"{_iso(t + 300)}"}}'))
        total += repeats
        if rng.random() < 0.85:
            end = starts + float(rng.exponential(3600)) + 60
            events.append((end + 30, rule_idx, prefix, f',"status":"resolved","endsAt":"{_iso(end)}"}}'))
            total += 1
    events.sort(key=lambda e: (e[0], e[1]))
    by_day: dict[int, list[str]] = {}
    i, n, written = 0, len(events), 0
    while i < n:
        size = int(rng.integers(1, 9))
        j = i + 1
        while j < n and j - i < size and events[j][1] == events[i][1]:
            j += 1
        group = events[i:j]
        status = "firing" if any('"status":"firing"' in e[3] for e in group) else "resolved"
        name = RULES[group[0][1]][0]
        body = ",".join(e[2] + e[3] for e in group)
        day = int((group[0][0] - day0) // 86400)
        for receiver in ["slack"] + (["pagerduty"] if rng.random() < 0.1 else []):
            line = (f'{{"receiver":"{receiver}","status":"{status}","alerts":[{body}],'
                    f'"groupLabels":{{"alertname":"{name}"}},"commonLabels":{{"alertname":"{name}"}},'
                    f'"commonAnnotations":{{}},"externalURL":"http://alertmanager:9093","version":"4",'
                    f'"groupKey":"{{}}:{{alertname=\\"{name}\\"}}","truncatedAlerts":0}}')
            by_day.setdefault(day, []).append(line)
            written += len(group)
        i = j
    (landing / "alerts").mkdir(parents=True, exist_ok=True)
    for day, lines in sorted(by_day.items()):
        stamp = datetime.fromtimestamp(day0 + day * 86400, timezone.utc).strftime("%Y-%m-%d")
        (landing / "alerts" / f"webhook-{stamp}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notifications", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gpusre-bench-alerts-"))
    landing = workdir / f"landing-{args.notifications}-{args.days}-s{args.seed}"
    if not (landing / "alerts").is_dir():
        t0 = time.perf_counter()
        written = write_landing(landing, args.notifications, args.days, args.seed)
        size = sum(p.stat().st_size for p in (landing / "alerts").iterdir()) / 2**20
        print(f"generated {written:,} notifications ({size:,.0f} MiB) in {time.perf_counter() - t0:.1f} s")
    m = run_child(CHILD, str(landing), str(fresh_warehouse(workdir)))
    if m is None:
        return 1
    seconds = m["ingest_s"] + m["core_s"] + m["incidents_s"]
    rate = m["notifications"] / seconds
    print(f"input: {m['files']} files, {m['notifications']:,} notifications loaded ({m['rejected']} rejected, "
          f"{m['computed_fingerprints']:,} fingerprints computed)")
    print(f"core.alerts: {m['alerts']:,} alerts ({m['resolved']:,} resolved, {m['with_node']:,} on a node), "
          f"{m['templates']} templates")
    print(f"ingest (parse + stage + templates + publish): {m['ingest_s']:.1f} s; core.alerts: {m['core_s']:.1f} s; "
          f"incidents and alert marts: {m['incidents_s']:.1f} s ({m['incidents']:,} incidents)")
    print(f"total: {seconds:.1f} s = {rate:,.0f} notifications/s; CPU time {m['cpu_s']:.1f} s "
          f"(user + system, all threads: {m['notifications'] / m['cpu_s']:,.0f} notifications per CPU-second)")
    print(f"peak RSS (ingest process): {m['peak_rss_mb']:,.0f} MB (by the end of the ingest "
          f"{m['peak_rss_ingest_mb']:,.0f} MB, of core.alerts {m['peak_rss_core_mb']:,.0f} MB)")
    print("target (>= 50,000 notifications/s, <= 2 GB):",
          "met" if rate >= 50_000 and m["peak_rss_mb"] <= 2048 else "NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
