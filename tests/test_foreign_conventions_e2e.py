"""A small landing written in conventions our simulator never writes, through the whole pipeline.

Every input is hand-written in a form real sites produce: sacct under SLURM_TIME_FORMAT="%F %T",
node logs from ``journalctl -o short-full`` / ``-o short-unix``, a space-separated ISO syslog, an
older driver's Xid line without "PCI:", Alertmanager payloads labelled
``Hostname`` / ``instance``, ``sacctmgr show event`` with spaced stamps, an incidents.csv saved
from a spreadsheet (BOM, CRLF, capitalised headers, padded cells, ``InfiniBand`` for the
component), and no cluster.yaml.
The trace covers part of one day. What an SRE must get: every record loads, the GPU that fell off
the bus is the cause of job 1001's NODE_FAIL and one hardware incident, the operator's incident is
a network one, the user's Xid 13 is the user's, the two alerts are one incident, the reports show that day (not the empty day before it),
and the fleet row says the default fleet (100 nodes of 8 GPUs) covers the accounting's 4 nodes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb

from gpusre.pipelines.runner import run_pipeline

_EPOCH = int(datetime(2026, 11, 30, 9, 29, 50, tzinfo=UTC).timestamp())

SACCT = """JobID|JobIDRaw|JobName|User|UID|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList
1001|1001|train-llm|alice|1001|ml|gpu|NODE_FAIL|0:0|2026-11-30 08:00:00|2026-11-30 08:05:00|2026-11-30 10:02:00|01:57:00|1-00:00:00|2|128|billing=128,cpu=128,gres/gpu=16,mem=1T,node=2|gpu[001-002]
1001.0|1001.0|python||||gpu|CANCELLED|0:9|2026-11-30 08:05:10|2026-11-30 08:05:10|2026-11-30 10:02:00|01:56:50||2|128|cpu=128,gres/gpu=16,node=2|gpu[001-002]
1002|1002|eval|bob|1002|ml|gpu|FAILED|1:0|2026-11-30 09:00:00|2026-11-30 09:01:00|2026-11-30 09:30:00|00:29:00|02:00:00|1|64|billing=64,cpu=64,gres/gpu=8,mem=500G,node=1|gpu003
1003|1003|sweep|carol|1003|ml|gpu|COMPLETED|0:0|2026-11-30 09:00:00|2026-11-30 09:10:00|2026-11-30 11:10:00|02:00:00|04:00:00|1|8|billing=8,cpu=8,gres/gpu=8,node=1|gpu004
"""
NODE_LOGS = {
    # journalctl -o short-full on gpu001; the older driver's Xid has no "PCI:"
    "gpu001.journal": ("Mon 2026-11-30 10:00:30 UTC gpu001 kernel: NVRM: Xid (0000:18:00): 79, pid='<unknown>', "
                       "name=<unknown>, GPU has fallen off the bus.\n"
                       "Mon 2026-11-30 10:01:00 UTC gpu001 nhc[4242]: ERROR:  nhc:  Health check failed:  "
                       "check_nv_healthmon:  GPU 0 is missing\n"),
    # journalctl -o short-unix on gpu003: the user's own fault
    "gpu003.journal": (f"{_EPOCH}.250000 gpu003 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=8812, name=python, "
                       "Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Illegal Instruction Encoding\n"),
    # a space-separated ISO template on gpu002 and gpu004
    "central.log": ("2026-11-30 09:50:00 gpu002 sshd[77]: Accepted publickey for alice\n"
                    "2026-11-30 10:30:00 gpu004 systemd[1]: Started Session 12 of user carol.\n"),
}
ALERTS = ('{"receiver":"sre","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"GPUFallenOffBus",'
          '"Hostname":"gpu001","severity":"critical"},"annotations":{"summary":"GPU fell off the bus"},'
          '"startsAt":"2026-11-30T10:01:00Z","endsAt":"0001-01-01T00:00:00Z","fingerprint":"a1"},'
          '{"status":"firing","labels":{"alertname":"NodeDown","instance":"gpu001:9100","severity":"critical"},'
          '"annotations":{},"startsAt":"2026-11-30T10:03:00Z","endsAt":"0001-01-01T00:00:00Z","fingerprint":"b2"}],'
          '"version":"4","groupKey":"{}:{}"}\n')
INCIDENTS = ("\ufeffID,Start,End,Component,Root cause,Nodes,Notes\r\n"
             "OPS-1 , 2026-11-30 10:20 , 2026-11-30 10:40 , InfiniBand , cable reseated , gpu004 , \r\n")
EVENTS = """Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User
c1|gpu001|2026-11-30 10:02:00|2026-11-30 16:00:00|DOWN|Not responding|slurm(64030)
"""


def test_a_trace_in_other_conventions_loads_and_is_analysed(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    for sub in ("sacct", "syslog", "alerts", "slurm_events"):
        (landing / sub).mkdir(parents=True)
    (landing / "sacct" / "accounting.psv").write_text(SACCT)
    for name, text in NODE_LOGS.items():
        (landing / "syslog" / name).write_text(text)
    (landing / "alerts" / "webhook.jsonl").write_text(ALERTS)
    (landing / "slurm_events" / "events.txt").write_text(EVENTS)
    (landing / "incidents.csv").write_bytes(INCIDENTS.encode("utf-8"))
    wh = tmp_path / "wh" / "gpusre.duckdb"
    run_pipeline(landing, wh, tmp_path / "reports")

    con = duckdb.connect(str(wh.with_name("gpusre.snapshot.duckdb")), read_only=True)
    try:
        assert con.sql("SELECT count(*) FROM raw.rejects").fetchall() == [(0,)]
        assert con.sql("SELECT count(*) FROM raw.syslog_lines").fetchall() == [(5,)]
        attribution = dict(con.sql("SELECT job_id, attribution || '/' || component "
                                   "FROM marts.job_failure_attribution").fetchall())
        assert attribution == {"1001": "infrastructure/pcie_bus", "1002": "user/user_application"}
        incidents = con.sql("SELECT label_source, operator_id, component, component_class, nodes, root_cause "
                            "FROM marts.hw_incidents ORDER BY start_ts").fetchall()
        assert incidents == [("events", None, "pcie_bus", "gpu", ["gpu001"], "xid 79"),
                             ("operator", "OPS-1", "network", "network", ["gpu004"], "cable reseated")]
        # 16 GPUs x 1 h 57 min held; lost work per the default checkpoint policy is part of it
        lost = con.sql("SELECT lost_gpu_hours FROM marts.job_failure_attribution WHERE job_id = '1001'").fetchall()
        assert 0 < lost[0][0] <= 16 * (117 / 60)
        assert con.sql("SELECT count(*) FROM marts.alert_incidents").fetchall() == [(1,)]
        assert con.sql("SELECT fleet_source, configured_nodes, nodes_with_jobs, fleet_understated "
                       "FROM marts.fleet_coverage").fetchall() == [("default", 100, 4, False)]
    finally:
        con.close()
    # The one day with data is the reports' day, not the empty day before it.
    names = sorted(p.name for p in (tmp_path / "reports").glob("*.html"))
    assert names == ["nightly-2026-11-30.html", "slo-2026-11-01_2026-11-30.html"]
