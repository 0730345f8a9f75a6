"""The nightly "Nodes out of service now" counts the fleet's nodes, as availability and MTBF do.

Outside probe AO (2026-12-06): a spare node Slurm knows but cluster.yaml's node list leaves out (gpu049,
drained "Xid 79 … RMA") was counted and listed among the fleet's nodes out of service ("2 of 48"), while
availability, MTBF and repair times leave it out (``mtbf.in_fleet``). Now the count and the table are the
fleet's (the nodes of marts.node_availability_daily: cluster.yaml's list, or every node seen without one),
and a node out of service outside the list is still named, in a note of its own. Without a node list
every node is the fleet's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hand_landing import query_rows, run_hand_landing

SACCT = "JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|NNodes|AllocTRES|NodeList"
EVENTS = "Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User|Event|ClusterNodes"
SPARE_REASON = "Xid 79 spare, RMA 5512"
IB_REASON = "IB link down mlx5_0"


def _files(nodes_line: str) -> dict[str, str]:
    """gpu01 runs a job all day; gpu02 drained at 20:00 (IB), open at the day's end; gpu09 — a spare Slurm
    knows, not in ``nodes: gpu[01-02]`` — drained at 06:00, open at the day's end."""
    job = ("101|101|train|alice|llm|gpu|COMPLETED|0:0|2026-12-01T00:10:00|2026-12-01T00:10:00|2026-12-01T00:10:00|"
           "2026-12-01T23:50:00|23:40:00|1|cpu=96,gres/gpu=8,node=1|gpu01")
    return {
        "cluster.yaml": f"cluster: spares\n{nodes_line}gpus_per_node: 8\ntimezone: UTC\n",
        "sacct/sacct_2026-12-01.psv": f"{SACCT}\n{job}\n",
        "slurm_events/events_2026-12-01.txt": "\n".join([
            EVENTS,
            f"spares|gpu09|2026-12-01T06:00:00|Unknown|18:00:00|IDLE+DRAIN|{SPARE_REASON}|root(0)|Node|",
            f"spares|gpu02|2026-12-01T20:00:00|Unknown|04:00:00|IDLE+DRAIN|{IB_REASON}|root(0)|Node|",
        ]) + "\n",
    }


def _section(md: str) -> str:
    start = md.index("## Nodes out of service now")
    return md[start: md.index("\n## ", start + 3)]


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("oos_listed")
    wh = run_hand_landing(root, _files('nodes: "gpu[01-02]"\n'))
    return wh, _section((root / "reports" / "nightly-2026-12-01.md").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def unlisted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("oos_unlisted")
    wh = run_hand_landing(root, _files(""))
    return wh, _section((root / "reports" / "nightly-2026-12-01.md").read_text(encoding="utf-8"))


def test_the_spare_is_not_counted_among_the_fleets_nodes(listed: tuple[Path, str]) -> None:
    wh, sec = listed
    # availability's population: the two listed nodes, not the spare
    assert query_rows(wh, "SELECT DISTINCT node FROM marts.node_availability_daily ORDER BY node") == [
        ("gpu01",), ("gpu02",)]
    # gpu02 out since 20:00 -> 4.0 h at midnight; 1 of the 2 fleet nodes (the spare is not in the 2)
    assert ("At the end of 2026-12-01 (UTC) 1 of 2 nodes was out of service (1 hardware); the longest, gpu02, "
            f"has been DRAIN since 2026-12-01 20:00 UTC (4.0 h) for “{IB_REASON}”.") in sec
    assert re.findall(r"^\| (gpu\d+) \|", sec, flags=re.M) == ["gpu02"]


def test_the_spare_is_still_named_apart(listed: tuple[Path, str]) -> None:
    _, sec = listed
    # gpu09 out since 06:00 -> 18.0 h at midnight, in a note of its own
    assert ("Also out of service, not in cluster.yaml's node list (not counted above, nor in availability, MTBF or "
            f"repair times): gpu09 (DRAIN since 2026-12-01 06:00 UTC, 18.0 h, “{SPARE_REASON}”).") in sec


def test_without_a_node_list_every_node_is_the_fleets(unlisted: tuple[Path, str]) -> None:
    wh, sec = unlisted
    # availability's population without a list: the nodes the node-state history shows
    assert query_rows(wh, "SELECT DISTINCT node FROM marts.node_availability_daily ORDER BY node") == [
        ("gpu02",), ("gpu09",)]
    assert "not in cluster.yaml" not in sec
    # both drains counted (both hardware reasons); gpu09 (18.0 h) is the longest
    assert ("At the end of 2026-12-01 (UTC) 2 of 2 nodes were out of service (2 hardware); the longest, gpu09, "
            f"has been DRAIN since 2026-12-01 06:00 UTC (18.0 h) for “{SPARE_REASON}”.") in sec
    assert re.findall(r"^\| (gpu\d+) \|", sec, flags=re.M) == ["gpu09", "gpu02"]
