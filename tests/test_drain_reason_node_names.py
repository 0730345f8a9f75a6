"""A node name in a drain reason is no evidence of a component (open item OI1, finding 1).

``sacctmgr show event`` reasons written by operators often lead with the host: ``gpu017 PSU fail``,
``dgx-a100-03: bad DIMM``, ``node gpu-12 ib link flap``, ``hgx07 fan``. Hosts are named after what they carry, so
the ``gpu`` rule read ``gpu017`` as a GPU: ``gpu017 PSU fail`` was ``gpu`` (right: the PSU, ``host_power``),
``node gpu-12 ib link flap`` ``gpu`` (right: ``network``), ``gpu017`` alone ``gpu`` (right: nothing said,
``unknown``/``other``). The row's own node, the other nodes of the batch and cluster.yaml's nodes are masked
(whole words, exact case) before the rules run. Expected values are worked out by hand from the rule file.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing

from gpusre.models.failures.drain_reasons import classify_reasons
from gpusre.models.sources.incidents.parse import catalog_component, read_operator_incidents


@pytest.mark.parametrize(("reason", "node", "reason_class", "component", "availability"), [
    # the probe's spellings: a host named after the GPU read as a GPU (was gpu / gpu / hardware)
    ("gpu017 PSU fail", "gpu017", "power", "host_power", "hardware"),
    ("node gpu-12 ib link flap", "gpu-12", "network", "network", "hardware"),
    ("gpu017", "gpu017", "unknown", "other", "unknown"),                # the host name is the only word
    ("gpu017: planned maintenance", "gpu017", "planned_maintenance", "other", "maintenance"),
    # other vendors' and sites' host names (the words beside them decide, with or without the mask)
    ("dgx-a100-03: bad DIMM", "dgx-a100-03", "host_memory", "host_memory", "hardware"),
    ("hgx07 fan", "hgx07", "thermal", "thermal", "hardware"),
    ("gb-r1-c07 lost power", "gb-r1-c07", "power", "host_power", "hardware"),   # GB200 NVL72 tray naming
    ("GPU-H100-04 eth0 down", "GPU-H100-04", "network", "network", "hardware"),  # upper-case host, as written
    # the name is masked, not the evidence beside it
    ("Xid 79 on gpu017", "gpu017", "gpu_xid", "pcie_bus", "hardware"),
    ("gpu017 GPU 3 fell off the bus", "gpu017", "gpu", "gpu", "hardware"),
])
def test_the_rows_own_node_is_no_evidence(reason: str, node: str, reason_class: str, component: str,
                                          availability: str) -> None:
    row = classify_reasons(pl.Series([reason]), nodes=pl.Series([node])).row(0, named=True)
    assert (row["reason_class"], row["reason_component"], row["availability_class"]) == (
        reason_class, component, availability)


def test_a_declared_node_named_in_another_nodes_reason_is_masked_too() -> None:
    # gpu020's reason names its neighbour gpu017 (cluster.yaml nodes): the PSU decides, not 'gpu'
    out = classify_reasons(pl.Series(["PSU swap pending, see gpu017", "gpu017 PSU fail"]),
                           nodes=pl.Series(["gpu020", None]), node_names=["gpu017", "gpu020"])
    assert out["reason_component"].to_list() == ["host_power", "host_power"]


def test_only_whole_names_in_their_exact_case_are_masked() -> None:
    # node gpu3: 'GPU3' (upper case, the GPU's index) and 'gpu31' (another word) stay evidence; without node names
    # nothing is masked (the old reading)
    reasons = pl.Series(["GPU3 missing", "gpu31 check", "gpu3 PSU fail", "gpu017 PSU fail"])
    got = classify_reasons(reasons, node_names=["gpu3"])["reason_component"].to_list()
    assert got == ["gpu", "gpu", "host_power", "gpu"]
    # a longer name is masked whole, not as its shorter neighbour plus a stray digit: 'gpu-1 2' is no node
    assert classify_reasons(pl.Series(["gpu-12 PSU fail"]), node_names=["gpu-1", "gpu-12"])[
        "reason_component"].to_list() == ["host_power"]


def test_operator_component_text_naming_a_host(tmp_path: Path) -> None:
    # incidents.csv: 'gpu017 PSU' in the component column of a row on gpu017 is the PSU (was gpu)
    assert catalog_component(pl.Series("component", ["gpu017 PSU"]), ["gpu017"]).to_list() == ["host_power"]
    path = tmp_path / "incidents.csv"
    path.write_text("id,start,end,component,root_cause,nodes,notes\n"
                    "INC-1,2026-11-03T10:00,2026-11-03T12:00,gpu017 PSU,PSU swapped,gpu017,\n"
                    "INC-2,2026-11-03T10:00,2026-11-03T11:00,gpu-12 IB,cable reseated,gpu-12,\n")
    incidents, rejects = read_operator_incidents(path, cluster_nodes=["gpu017", "gpu-12"])
    assert rejects.height == 0
    assert incidents["component"].to_list() == ["host_power", "network"]
    # the rows' own nodes mask even when cluster.yaml gives only a node count
    incidents, _ = read_operator_incidents(path)
    assert incidents["component"].to_list() == ["host_power", "network"]


# ---- the pipeline: sacctmgr events of six hosts, two with log evidence -------------------------------------------
NODES = "gpu017,gpu018,gpu-12,dgx-a100-03,hgx07,gb-r1-c07,gpu020"
CLUSTER = f'cluster: names\ntimezone: UTC\nnodes: "{NODES}"\ngpus_per_node: 8\n'
DAY = "2026-11-03"
EVENTS = [  # node | start | end | state | reason
    ("gpu017", "10:00:00", "12:00:00", "DRAIN", "gpu017 PSU fail"),               # 2.0 h power (was gpu)
    ("gpu-12", "11:00:00", "12:00:00", "DRAIN", "node gpu-12 ib link flap"),      # 1.0 h network (was gpu)
    ("dgx-a100-03", "10:00:00", "11:00:00", "DRAIN", "dgx-a100-03: bad DIMM"),    # 1.0 h host_memory
    ("hgx07", "10:00:00", "10:30:00", "DRAIN", "hgx07 fan"),                      # 0.5 h thermal
    ("gpu018", "10:00:00", "10:30:00", "DRAIN", "gpu018"),                        # 0.5 h unknown (was gpu)
    ("gb-r1-c07", "13:00:00", "14:00:00", "DRAIN", "gb-r1-c07 lost power"),       # 1.0 h power
]
LOGS = {  # the evidence the drains repair: a PSU on gpu017, an IB port on gpu-12
    "gpu017": [f"{DAY}T09:58:00+00:00 gpu017 ipmievd[4242]: Power Supply sensor PS2 Status, "
               "Power Supply AC lost Asserted"],
    "gpu-12": [f"{DAY}T10:58:00+00:00 gpu-12 kernel: mlx5_core 0000:08:00.0 mlx5_0: Port: 1 Link DOWN"],
}
SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
                "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")


def landing() -> dict[str, str]:
    """The hand landing (also used by the probe re-run under /tmp/fx_OI1)."""
    st, en = f"{DAY}T00:10:00", f"{DAY}T23:50:00"
    files = {
        "cluster.yaml": CLUSTER,
        # one job on gpu020 (no event) to 23:50: the data reach the day's end
        f"sacct/sacct_{DAY}.psv": "\n".join([
            SACCT_HEADER, f"901|901|train|alice|20001|alice|llm|gpu|normal|COMPLETED|0:0|{st}|{st}|{st}|{en}|"
                          "23:40:00|1-00:00:00|1|96|billing=96,cpu=96,gres/gpu=8,node=1|gpu020|"]) + "\n",
        f"slurm_events/events_{DAY}.txt": "\n".join(
            ["Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User"]
            + [f"names|{n}|{DAY}T{a}|{DAY}T{b}|00:00:00|{s}|{r}|root" for n, a, b, s, r in EVENTS]) + "\n",
    }
    for node in NODES.split(","):
        routine = [f"{DAY}T{h:02d}:48:04+00:00 {node} CRON[4000]: (root) CMD (/usr/sbin/nhc-wrapper)"
                   for h in range(0, 24, 2)]
        files[f"syslog/{DAY}/{node}.log"] = "\n".join(sorted(routine + LOGS.get(node, []))) + "\n"
    return files


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("drain_node_names"), landing())


def test_node_states_carry_the_component_the_words_name(warehouse: Path) -> None:
    rows = dict((n, (c, comp)) for n, c, comp in query_rows(
        warehouse, "SELECT node, reason_class, reason_component FROM core.node_states"))
    assert rows == {"gpu017": ("power", "host_power"), "gpu-12": ("network", "network"),
                    "dgx-a100-03": ("host_memory", "host_memory"), "hgx07": ("thermal", "thermal"),
                    "gpu018": ("unknown", "other"), "gb-r1-c07": ("power", "host_power")}


def test_availability_by_component_counts_no_gpu_down_time(warehouse: Path) -> None:
    # power: gpu017 2.0 h + gb-r1-c07 1.0 h; network (gpu-12) 1.0 h; host (dgx-a100-03's DIMM) 1.0 h; thermal
    # (hgx07) 0.5 h; gpu018's bare name 0.5 h, class other. Before: gpu 3.5 h (gpu017, gpu-12, gpu018), power 1.0 h.
    down = dict(query_rows(warehouse, """
        SELECT component_class, round(down_node_hours, 4) FROM marts.availability_by_component
        WHERE period_type = 'all' AND component_class <> 'all' AND down_node_hours > 0"""))
    assert down == {"power": 3.0, "network": 1.0, "host": 1.0, "thermal": 0.5, "other": 0.5}


def test_the_drains_repair_their_incidents(warehouse: Path) -> None:
    # PSU evidence 09:58, drain 10:00 -> 12:00: detected after 2 min, repaired 2 h 2 min after the evidence;
    # IB evidence 10:58, drain 11:00 -> 12:00: 2 min and 1 h 2 min. Before, both drains were class gpu: no link.
    rows = query_rows(warehouse, """
        SELECT component, repair_state, round(hours_to_detect, 4), round(hours_to_repair, 4), drain_reason_class
        FROM marts.incident_repairs WHERE list_contains(nodes, 'gpu017') OR list_contains(nodes, 'gpu-12')
        ORDER BY component""")
    assert rows == [("host_power", "repaired", round(2 / 60, 4), round(122 / 60, 4), "power"),
                    ("network", "repaired", round(2 / 60, 4), round(62 / 60, 4), "network")]
    # and no incident of any node is a GPU's: no reason here names a GPU
    assert query_rows(warehouse, "SELECT count(*) FROM marts.incident_repairs WHERE component_class = 'gpu'") == [(0,)]
