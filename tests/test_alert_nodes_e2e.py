"""Without a node list in cluster.yaml, an alert's host is a Slurm node only when Slurm's own records
(the accounting's node lists, the node-state history) name it, through the whole pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from gpusre.pipelines.runner import run_pipeline

DUMP = """JobID|State|Submit|Start|End|Elapsed|AllocTRES|NNodes|NodeList
100|COMPLETED|2026-11-10T00:20:00|2026-11-10T00:30:00|2026-11-10T02:00:00|01:30:00|gres/gpu=16|2|gpu[001-002]
"""


def _alert(name: str, labels: dict[str, str], starts: str) -> dict:
    return {"status": "firing", "labels": {"alertname": name, **labels}, "annotations": {},
            "startsAt": starts, "endsAt": "0001-01-01T00:00:00Z", "fingerprint": f"{abs(hash(name)):016x}"[:16]}


def test_hosts_slurm_does_not_know_are_no_nodes(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-11-10.psv").write_text(DUMP)
    (landing / "alerts").mkdir()
    alerts = [
        _alert("GpuXidError", {"Hostname": "gpu002", "instance": "10.0.0.2:9400"}, "2026-11-10T01:00:00Z"),
        _alert("NodeExporterDown", {"instance": "gpu001.cluster.local:9100"}, "2026-11-10T01:01:00Z"),
        # Slurm's exporter names the node in a label of its own; its pod is no node.
        _alert("SlurmNodeDown", {"instance": "slurm-exporter:8080", "node": "gpu002"}, "2026-11-10T01:02:00Z"),
        _alert("UfmPortDown", {"instance": "ufm01:9001", "switch": "leaf01"}, "2026-11-10T01:03:00Z"),
        _alert("LustreMdtDown", {"instance": "mds01:9169", "fsname": "scratch"}, "2026-11-10T01:04:00Z"),
        _alert("SlurmctldDown", {"instance": "slurmctl01:9341"}, "2026-11-10T01:05:00Z"),
    ]
    (landing / "alerts" / "am.json").write_text(json.dumps({"version": "4", "status": "firing", "alerts": alerts}))
    wh = tmp_path / "w.duckdb"
    run_pipeline(landing, wh, tmp_path / "reports")
    con = duckdb.connect(str(wh.with_name("w.snapshot.duckdb")), read_only=True)
    try:
        nodes = dict(con.sql("SELECT alertname, node FROM core.alerts").fetchall())
    finally:
        con.close()
    assert nodes == {"GpuXidError": "gpu002", "NodeExporterDown": "gpu001", "SlurmNodeDown": "gpu002",
                     "UfmPortDown": None, "LustreMdtDown": None, "SlurmctldDown": None}
