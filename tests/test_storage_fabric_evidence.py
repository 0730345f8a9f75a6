"""Storage and fabric faults read from their log lines, on hand-made inputs with hand-computed values.

A Lustre client that loses its server connection stays disconnected until it logs ``Connection
restored`` of that target (a lasting fault, as a port ``Link DOWN``); a Lustre error whose return code
is the caller's (EDQUOT) is no infrastructure evidence; a port the subnet manager drops to ``INIT``
(no physical ``Link DOWN``) is a link loss, while the same ``INIT`` at a boot's bring-up is not.
Lines go through the catalog (``classify_messages``) and the syslog layer's port-state pass
(:func:`~gpusre.models.sources.syslog.link_states.with_logical_link_losses`) as in ingestion.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl

from gpusre.models.failures.attribution import attribute_failures
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, failure_events, merge_incidents
from gpusre.models.logs.event_catalog import classify_messages
from gpusre.models.sources.syslog.link_states import bring_up_downs, logical_link_losses, with_logical_link_losses

T0 = datetime(2026, 11, 28, 14, 0, tzinfo=timezone.utc)
H = timedelta(hours=1)

MDT_RC = "LustreError: 11-0: scratch-MDT0000-mdc-ffff9a1b2c3d4000: operation mds_getattr to node 10.10.0.2@o2ib failed: rc = -107"
MDT_LOST = ("Lustre: scratch-MDT0000-mdc-ffff9a1b2c3d4000: Connection to scratch-MDT0000 (at 10.10.0.2@o2ib) was lost; "
            "in progress operations using this service will wait for recovery to complete")
MDT_BACK = "Lustre: scratch-MDT0000-mdc-ffff9a1b2c3d4000: Connection restored to 10.10.0.2@o2ib (at 10.10.0.2@o2ib)"
OST_LOST = ("Lustre: scratch-OST0007-osc-ffff9a1b2c3d4000: Connection to scratch-OST0007 (at 10.10.0.5@o2ib) was lost; "
            "in progress operations using this service will wait for recovery to complete")
OST_BACK = "Lustre: scratch-OST0007-osc-ffff9a1b2c3d4000: Connection restored to 10.10.0.5@o2ib (at 10.10.0.5@o2ib)"
HUNG = "INFO: task python:230065 blocked for more than 120 seconds."
EDQUOT = ("LustreError: 48005:0:(vvp_io.c:1071:vvp_io_commit_write()) Write page 262144 of inode "
          "ffff9a1b2c3d4e80 failed -122")
NFS_OK = "nfs: server home01 OK"
MCAST = "ib0: multicast join failed for ff12:401b:ffff:0000:0000:0000:ffff:ffff, status -22"
BANNER = ("Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, "
          "GNU ld (GNU Binutils for Ubuntu) 2.38) #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023")


def port_line(rail: int, state: str) -> str:
    return f"mlx5_core 0000:{0x0c + 0x20 * rail:02x}:00.0 mlx5_{rail}: Port: 1 Link {state}"


def node_events(lines: list[tuple[float, str, str]]) -> pl.DataFrame:
    """``core.node_events``-like rows of ``(seconds after T0, node, message)`` lines, in log order, as
    ingestion classifies them (catalog, then the port-state pass); unrecognized lines dropped."""
    frame = pl.DataFrame({"ts": [T0 + timedelta(seconds=s) for s, _, _ in lines],
                          "node": [n for _, n, _ in lines], "message": [m for _, _, m in lines]},
                         schema={"ts": pl.Datetime("us", "UTC"), "node": pl.String, "message": pl.String})
    rows = with_logical_link_losses(pl.concat([frame, classify_messages(frame["message"])], how="horizontal"))
    return (rows.filter(pl.col("kind").is_not_null()).with_row_index("event_id", offset=1)
            .with_columns(pl.col("event_id").cast(pl.Int64))
            .select(*EVENT_SCHEMA, "device_pci", "port", "pattern_id"))


def job(job_id: str, nodes: list[str], end_s: float, *, elapsed: timedelta = 2 * H) -> dict:
    end = T0 + timedelta(seconds=end_s)
    return {"job_id": job_id, "state": "FAILED", "nodes": nodes, "n_gpus": 8 * len(nodes), "start_ts": end - elapsed,
            "end_ts": end, "elapsed_s": int(elapsed.total_seconds()), "exit_code": 1, "exit_signal": 0,
            "cancelled_by": None}


def attribute(job_rows: list[dict], events: pl.DataFrame, **merge: object) -> tuple[pl.DataFrame, dict[str, dict]]:
    incidents, _ = merge_incidents(events.select(*EVENT_SCHEMA, "device_pci", "port"), **merge)  # type: ignore[arg-type]
    jobs = pl.DataFrame(job_rows, schema={
        "job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
        "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"), "elapsed_s": pl.Int64,
        "exit_code": pl.Int64, "exit_signal": pl.Int64, "cancelled_by": pl.Int64})
    out = attribute_failures(jobs, events, incidents)
    return incidents, {r["job_id"]: r for r in out.iter_rows(named=True)}


# --- catalog: the lines' classes ----------------------------------------------------------------


def test_lustre_lines_carry_their_target_and_user_errnos_are_no_failure() -> None:
    lines = [MDT_RC, MDT_LOST, MDT_BACK, OST_LOST, EDQUOT, HUNG, MCAST,
             "LustreError: 11-0: scratch-OST0007-osc-ffff9a: operation ost_read to node 10.10.0.5@o2ib failed: rc = -108",
             "LustreError: 11-0: scratch-OST0002-osc-ffff9a: operation ost_write to node 10.10.0.5@o2ib failed: rc = -28",
             "LustreError: 3627:0:(events.c:201:client_bulk_callback()) event type 1, status -5, desc ffff8f1d2c3b4000",
             "LustreError: 12345:0:(file.c:4731:ll_inode_permission()) failure -13 inode [0x200000401:0x1:0x0]",
             "mmfs[3141]: [E] Disk quota exceeded for user 5123 on file system gpfs01"]
    out = classify_messages(pl.Series(lines)).select("kind", "port", "component", "cause_class", "severity")
    assert out.rows() == [
        ("lustre_disconnect", "scratch-MDT0000", "storage", "system_software", "high"),
        ("lustre_disconnect", "scratch-MDT0000", "storage", "system_software", "high"),
        ("lustre_recovered", "scratch-MDT0000", "storage", "informational", "info"),
        ("lustre_disconnect", "scratch-OST0007", "storage", "system_software", "high"),
        ("storage_quota", None, "storage", "system_software", "medium"),        # EDQUOT: housekeeping
        ("hung_task", None, "os", "system_software", "medium"),                 # a symptom: no failure
        ("ipoib_mcast_join_failed", None, "network", "system_software", "medium"),
        ("lustre_disconnect", "scratch-OST0007", "storage", "system_software", "high"),
        ("storage_quota", None, "storage", "system_software", "medium"),        # ENOSPC
        ("lustre_error", None, "storage", "system_software", "high"),           # a one-off I/O error
        ("storage_user_error", None, "storage", "informational", "info"),       # EACCES
        ("storage_quota", None, "storage", "system_software", "medium"),        # GPFS quota
    ]


# --- problem 1: a Lustre MDS outage is open until the connection is restored --------------------


def test_a_lustre_mds_outage_kills_every_job_until_the_connection_is_restored() -> None:
    # 40 nodes lose scratch-MDT0000 at 14:00 (rc = -107, then 'was lost'), hung-task lines every 120 s,
    # restored at 14:25. Job k (one node, 8 GPUs, 2 h) dies at 14:04:00 + 30 s * k (last: 14:23:30),
    # up to 23.5 min after the first line: all 40 infrastructure / storage, 40 x 8 GPUs x 0.5 h = 160 GPU-h.
    nodes = [f"n{k:03d}" for k in range(1, 41)]
    lines: list[tuple[float, str, str]] = []
    for k, node in enumerate(nodes):
        lines += [(0, node, MDT_RC), (1, node, MDT_LOST)]
        lines += [(123 + 120 * r, node, HUNG) for r in range(int((240 + 30 * k - 123) // 120) + 1)]
        lines.append((1500, node, MDT_BACK))
    lines.sort(key=lambda x: x[0])
    events = node_events(lines)
    jobs = [job(f"j{k}", [node], 240 + 30 * k) for k, node in enumerate(nodes)]
    incidents, got = attribute(jobs, events)
    assert [(r["attribution"], r["component"]) for r in got.values()] == [("infrastructure", "storage")] * 40
    assert sum(r["lost_gpu_hours"] for r in got.values()) == 160.0
    # One storage incident of the 40 nodes, not 40 client faults; every job points at it.
    assert incidents.select("component", "scope").rows() == [("storage", "cluster")]
    assert len(incidents["nodes"][0]) == 40
    assert {r["incident_id"] for r in got.values()} == {incidents["incident_id"][0]}


def test_a_restored_connection_ends_the_outage_of_its_own_target_only() -> None:
    # a: MDT lost and OST lost at 0; MDT restored at 5 min: the OST is still out when its job dies at 15 min.
    # b: OST lost at 0, restored at 5 min: its job dying at 15 min is the user's.
    # c: a one-off LustreError (rc = -5 I/O error) at 0: instantaneous, so a job dying 15 min later is the user's.
    # d: only hung-task lines (a symptom, medium): no failure evidence.
    lines = [(0, "a", MDT_LOST), (0, "a", OST_LOST), (300, "a", MDT_BACK),
             (0, "b", OST_LOST), (300, "b", OST_BACK),
             (0, "c", "LustreError: 3627:0:(events.c:201:client_bulk_callback()) event type 1, status -5, desc ffff8f1d2c3b4000"),
             (120, "d", HUNG), (240, "d", HUNG), (360, "d", HUNG)]
    events = node_events(lines)
    assert failure_events(events.select(*EVENT_SCHEMA)).filter(pl.col("node") == "d").is_empty()
    _, got = attribute([job(n, [n], 900) for n in "abcd"], events)
    assert (got["a"]["attribution"], got["a"]["component"], got["a"]["lost_gpu_hours"]) == ("infrastructure", "storage", 4.0)
    assert [got[n]["attribution"] for n in "bcd"] == ["user", "user", "user"]


# --- problem 2: a user's quota error is not a storage incident ----------------------------------


def test_a_quota_error_is_the_users_and_makes_no_incident() -> None:
    # The job fails with EDQUOT; its node logged the client's 'failed -122' 10 s before; an unrelated
    # NFS 'OK' line later. No incident, the job the user's, 0 GPU-h lost to the infrastructure.
    events = node_events([(590, "q1", EDQUOT), (1200, "q1", NFS_OK)])
    incidents, got = attribute([job("quota", ["q1"], 600)], events)
    assert incidents.is_empty()
    assert (got["quota"]["attribution"], got["quota"]["component"], got["quota"]["lost_gpu_hours"]) == (
        "user", "user_application", 0.0)


# --- problem 3: a subnet-manager failover without a physical Link DOWN --------------------------


def _failover(nodes: list[str]) -> list[tuple[float, str, str]]:
    """Every rail of every node INIT at ~0 s, ACTIVE 3 s later, two multicast joins failing after."""
    lines: list[tuple[float, str, str]] = []
    for i, node in enumerate(nodes):
        j = (i % 5) * 0.5  # nodes a few hundred ms apart
        lines += [(j + r * 0.01, node, port_line(r, "INIT")) for r in range(8)]
        lines += [(3 + j + r * 0.01, node, port_line(r, "ACTIVE")) for r in range(8)]
        lines += [(6 + j, node, MCAST), (8 + j, node, MCAST)]
    return sorted(lines, key=lambda x: x[0])


LEAVES = {f"leaf{leaf}": [f"s{leaf}{k}" for k in range(4)] for leaf in range(1, 5)}


def test_a_subnet_manager_failover_is_one_fabric_incident_that_kills_the_multi_node_jobs() -> None:
    # 16 nodes under 4 leaves, all 8 rails INIT -> ACTIVE within 5 s: one fabric incident (the 4 leaves in
    # lockstep), not 4 leaf incidents nor 16 NIC faults. A 2-node job dying 2 min later and a 4-node job
    # dying 12 min later (inside the 30-min collective timeout): infrastructure / network,
    # 16 x 0.5 + 32 x 0.5 = 24 GPU-h.
    nodes = [n for members in LEAVES.values() for n in members]
    events = node_events(_failover(nodes))
    assert events.filter(pl.col("kind") == "ib_link_down").height == 16 * 8
    incidents, got = attribute([job("two", ["s10", "s20"], 120), job("four", ["s11", "s21", "s31", "s41"], 720)],
                               events, topology=LEAVES)
    assert incidents.select("component", "scope").rows() == [("network_switch", "fabric")]
    assert len(incidents["nodes"][0]) == 16
    assert [(r["attribution"], r["component"]) for r in got.values()] == [("infrastructure", "network_switch")] * 2
    assert sum(r["lost_gpu_hours"] for r in got.values()) == 24.0


def test_multicast_join_failures_alone_make_no_incident() -> None:
    events = node_events([(0, "m1", MCAST), (2, "m1", MCAST)])
    incidents, got = attribute([job("m", ["m1"], 60)], events)
    assert incidents.is_empty() and got["m"]["attribution"] == "user"


def test_a_boot_bring_up_is_no_link_loss() -> None:
    # 16 nodes under 4 leaves reboot at once (a maintenance): the kernel banner, then every rail
    # DOWN -> INIT -> ARMED -> ACTIVE as the driver brings it up 40 s later (odd nodes print no DOWN). No
    # link loss, no incident, and a job failing on two of the nodes a minute later is the user's.
    nodes = [n for members in LEAVES.values() for n in members]
    lines: list[tuple[float, str, str]] = []
    for i, node in enumerate(nodes):
        lines.append((0, node, BANNER))
        states = ["INIT", "ARMED", "ACTIVE"] if i % 2 else ["DOWN", "INIT", "ARMED", "ACTIVE"]
        lines += [(40 + 2 * s + r * 0.01, node, port_line(r, state)) for s, state in enumerate(states) for r in range(8)]
    events = node_events(sorted(lines, key=lambda x: x[0]))
    assert set(events.filter(pl.col("pattern_id").is_in(["mlx5_port_state", "ib_link_down"]))["kind"]) == {"mlx5_port_state"}
    assert failure_events(events.select(*EVENT_SCHEMA)).is_empty()
    incidents, got = attribute([job("after", ["s10", "s20"], 110, elapsed=timedelta(seconds=30))], events,
                               topology=LEAVES)
    assert incidents.is_empty() and got["after"]["attribution"] == "user"


def test_port_state_sequences() -> None:
    # Per port: INIT after ACTIVE is a loss; INIT with nothing before it on a running node too; ARMED
    # after that INIT is the same loss (not a second one); INIT after DOWN (the link training again after
    # a physical loss) and INIT after a boot are bring-ups.
    lines = [(0, "a", port_line(0, "ACTIVE")), (10, "a", port_line(0, "INIT")), (11, "a", port_line(0, "ARMED")),
             (13, "a", port_line(0, "ACTIVE")),
             (0, "b", port_line(0, "INIT")),
             (0, "c", port_line(0, "DOWN")), (20, "c", port_line(0, "INIT")), (22, "c", port_line(0, "ACTIVE")),
             (0, "d", port_line(0, "ACTIVE")), (5, "d", BANNER), (40, "d", port_line(0, "INIT")),
             (0, "e", port_line(1, "ACTIVE")), (10, "e", port_line(0, "INIT"))]  # another rail's ACTIVE
    frame = pl.DataFrame({"ts": [T0 + timedelta(seconds=s) for s, _, _ in lines], "node": [n for _, n, _ in lines],
                          "message": [m for _, _, m in lines]})
    rows = pl.concat([frame, classify_messages(frame["message"])], how="horizontal")
    got = [(n, m.rsplit(" ", 1)[1]) for (_, n, m), lost in zip(lines, logical_link_losses(rows), strict=True) if lost]
    assert got == [("a", "INIT"), ("b", "INIT"), ("e", "INIT")]


def test_a_down_is_a_bring_up_only_right_after_a_boot_and_before_the_port_was_active() -> None:
    # a: boot, DOWN 40 s later (bring-up). b: boot, ACTIVE, DOWN (a real loss after the bring-up).
    # c: boot, DOWN 20 min later (past BRING_UP: a loss). d: DOWN, no boot (a loss).
    lines = [(0, "a", BANNER), (40, "a", port_line(0, "DOWN")),
             (0, "b", BANNER), (40, "b", port_line(0, "ACTIVE")), (100, "b", port_line(0, "DOWN")),
             (0, "c", BANNER), (1200, "c", port_line(0, "DOWN")),
             (0, "d", port_line(0, "DOWN"))]
    frame = pl.DataFrame({"ts": [T0 + timedelta(seconds=s) for s, _, _ in lines], "node": [n for _, n, _ in lines],
                          "message": [m for _, _, m in lines]})
    rows = pl.concat([frame, classify_messages(frame["message"])], how="horizontal")
    assert [n for (_, n, _), up in zip(lines, bring_up_downs(rows), strict=True) if up] == ["a"]
