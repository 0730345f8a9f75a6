"""cluster.yaml ``node_aliases`` (another name of a node: an address a syslog relay or an exporter
prints), rewrites on addresses, the annotation fallback for alerts, and hosts outside the node list
named in marts.log_coverage_daily and the nightly's data-quality section — on a hand-made landing."""

from __future__ import annotations

import doctest
import json
import shutil
from datetime import date
from pathlib import Path

import duckdb
import pytest

from gpusre.models.alerts import nodes as nodes_module
from gpusre.models.alerts.nodes import NodeMapping, NodeRewrite, locate, node_name, normalize_host
from gpusre.models.day_coverage import mark_partial_days
from gpusre.models.marts_runner import run_mart_sql
from gpusre.pipelines.config import ClusterConfigError, parse_cluster_config
from gpusre.pipelines.runner import run_pipeline
from gpusre.reports.nightly.sections import quality

# -- the rule --------------------------------------------------------------------------------------


def test_doctests() -> None:
    assert doctest.testmod(nodes_module).failed == 0


def test_alias_is_applied_before_the_address_check() -> None:
    mapping = NodeMapping(aliases={"10.0.4.8": "dgx-a-r04-n08"})
    known = {"dgx-a-r04-n08": "dgx-a-r04-n08"}
    assert node_name("10.0.4.8", mapping, known) == "dgx-a-r04-n08"
    assert node_name("10.0.4.8:9100", mapping, known) == "dgx-a-r04-n08"
    assert node_name("10.0.4.9", mapping, known) is None           # no alias: an address is no node
    assert node_name("10.0.4.8", NodeMapping(), known) is None      # the alias does it


def test_rewrites_apply_to_addresses() -> None:
    # The probe's variant B: a rewrite instead of an alias.
    mapping = NodeMapping(rewrites=[NodeRewrite(pattern=r"^10\.0\.4\.8$", replacement="dgx-a-r04-n08")])
    assert normalize_host("10.0.4.8:9100", mapping) == "dgx-a-r04-n08"
    assert node_name("10.0.4.8", mapping, {"dgx-a-r04-n08": "dgx-a-r04-n08"}) == "dgx-a-r04-n08"
    assert normalize_host("10.0.4.8") == "10.0.4.8"  # the default rewrites leave an address alone


def test_annotation_fallback_needs_one_node_of_a_list() -> None:
    labels = {"alertname": "NHCCheckFailed", "job": "nhc", "severity": "critical"}
    notes = {"summary": "NHC check_nv_healthmon failed on dgx-a-r04-n05"}
    known = ["dgx-a-r04-n05", "dgx-a-r04-n06"]
    assert locate(labels, None, known, notes).node == "dgx-a-r04-n05"
    assert locate(labels, None, None, notes).node is None          # no list: no word is a node
    assert locate(labels, None, known, {"summary": "dgx-a-r04-n05 and DGX-A-R04-N06 lost GPUs"}).node is None
    assert locate(labels, None, known, {"message": "see dgx-a-r04-n05x"}).node is None  # not a whole word


# -- cluster.yaml ----------------------------------------------------------------------------------


def test_node_aliases_expand_and_reach_the_host_rule() -> None:
    config = parse_cluster_config('nodes: "gpu[01-04]"\n'
                                  'node_aliases: {"10.0.0.[1-4]": "gpu[01-04]", "OLD-GPU7": GPU03}\n')
    expected = {"10.0.0.1": "gpu01", "10.0.0.2": "gpu02", "10.0.0.3": "gpu03", "10.0.0.4": "gpu04",
                "old-gpu7": "gpu03"}
    assert config.node_aliases == expected
    assert config.alerts.nodes.aliases == expected   # the mapping the alert and node-log ingests read


@pytest.mark.parametrize(("aliases", "message"), [
    ('{"10.0.0.9": gpu09}', "cluster.yaml: node_aliases: '10.0.0.9' -> 'gpu09': gpu09 is not a node of `nodes`"),
    ('{gpu01: gpu02}', "cluster.yaml: node_aliases: 'gpu01': gpu01 is itself a node of `nodes`, not another name "
                       "of one"),
    ('{"10.0.0.[1-3]": "gpu[01-02]"}', "cluster.yaml: node_aliases: '10.0.0.[1-3]' names 3 host(s) but "
                                       "'gpu[01-02]' 2 nodes: map one alias to one node, or a hostlist to a node "
                                       "hostlist of the same length"),
])
def test_bad_alias_is_a_one_line_config_error(aliases: str, message: str) -> None:
    with pytest.raises(ClusterConfigError) as err:
        parse_cluster_config(f'nodes: "gpu[01-04]"\nnode_aliases: {aliases}\n')
    assert str(err.value) == message


# -- through the pipeline --------------------------------------------------------------------------

CLUSTER = """cluster: t
timezone: UTC
nodes: "gpu[01-04]"
gpus_per_node: 8
node_aliases: {"10.0.0.3": gpu03}
"""
DUMP = """JobID|State|Submit|Start|End|Elapsed|AllocTRES|NNodes|NodeList
100|COMPLETED|2026-11-10T00:20:00|2026-11-10T00:30:00|2026-11-10T06:00:00|05:30:00|gres/gpu=16|2|gpu[01-02]
101|NODE_FAIL|2026-11-10T00:20:00|2026-11-10T00:30:00|2026-11-10T04:00:30|03:30:30|gres/gpu=16|2|gpu[03-04]
"""
#: gpu01 and gpu02 log by name; gpu03 and gpu04 only through a relay printing their address — 10.0.0.3
#: is gpu03's alias, 10.0.0.4 has none.
CENTRAL = "".join(f"Nov 10 {h:02d}:00:00 {n}.cluster.local systemd[1]: Started Session {h} of user root.\n"
                  for h in (1, 5) for n in ("gpu01", "gpu02"))
RELAY = """Nov 10 01:00:00 10.0.0.3 systemd[1]: Started Session 1 of user root.
Nov 10 01:00:00 10.0.0.4 systemd[1]: Started Session 1 of user root.
Nov 10 04:00:00 10.0.0.3 kernel: [600000.100000] EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x12345 offset:0x0 grain:32 syndrome:0x0 - err_code:0x0000:0x009f)
Nov 10 04:00:01 10.0.0.3 kernel: [600001.200000] Kernel panic - not syncing: Fatal machine check
Nov 10 05:00:00 10.0.0.4 systemd[1]: Started Session 2 of user root.
"""


def _alert(name: str, labels: dict[str, str], annotations: dict[str, str], starts: str, fp: str) -> dict:
    return {"status": "firing", "labels": {"alertname": name, **labels}, "annotations": annotations,
            "startsAt": starts, "endsAt": "0001-01-01T00:00:00Z", "fingerprint": fp}


def _landing(root: Path) -> Path:
    landing = root / "landing"
    for sub in ("sacct", "alerts", "syslog/central/2026-11-10", "syslog/relay01/2026-11-10"):
        (landing / sub).mkdir(parents=True)
    (landing / "cluster.yaml").write_text(CLUSTER)
    (landing / "sacct" / "sacct_2026-11-10.psv").write_text(DUMP)
    (landing / "syslog" / "central" / "2026-11-10" / "messages").write_text(CENTRAL)
    (landing / "syslog" / "relay01" / "2026-11-10" / "messages").write_text(RELAY)
    alerts = [
        _alert("NodeDown", {"instance": "10.0.0.3:9100", "severity": "critical"}, {"summary": "node down"},
               "2026-11-10T04:01:00Z", "00000000000000a1"),
        _alert("NHCCheckFailed", {"job": "nhc", "severity": "critical"},
               {"summary": "NHC check_nv_healthmon failed on gpu04"}, "2026-11-10T03:50:00Z", "00000000000000a2"),
        _alert("LinkFlap", {"job": "ib", "severity": "warning"},
               {"summary": "links flapped between gpu01 and gpu02"}, "2026-11-10T02:00:00Z", "00000000000000a3"),
    ]
    (landing / "alerts" / "am.json").write_text(json.dumps({"version": "4", "status": "firing", "alerts": alerts}))
    return landing


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("aliases")
    wh = root / "w.duckdb"
    run_pipeline(_landing(root), wh, root / "reports")
    return wh.with_name("w.snapshot.duckdb")


def test_relay_lines_and_alerts_land_on_the_aliased_node(warehouse: Path) -> None:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        events = sorted(con.sql("SELECT node, kind FROM core.node_events").fetchall())
        alerts = dict(con.sql("SELECT alertname, node FROM core.alerts").fetchall())
        incidents = con.sql("SELECT nodes FROM marts.hw_incidents").fetchall()
        silent = con.sql("SELECT silent_nodes FROM marts.log_coverage_daily WHERE day = '2026-11-10'").fetchall()
    finally:
        con.close()
    assert {n for n, _ in events} == {"gpu03"}         # the aliased address, never a node of its own
    assert len(events) == 2
    assert alerts == {"NodeDown": "gpu03", "NHCCheckFailed": "gpu04", "LinkFlap": None}
    assert [sorted(n) for (n,) in incidents] == [["gpu03"]]
    # 10.0.0.4 (gpu04's relay address, no alias) is no node: gpu04 ran a job and looks silent.
    assert silent == [(["gpu04"],)]


def test_hosts_outside_the_node_list_are_named(warehouse: Path, tmp_path: Path) -> None:
    # The mart reads the node list from the session variable gpusre_fleet (set by the data-coverage asset).
    copy = tmp_path / "w.duckdb"
    shutil.copy(warehouse, copy)
    con = duckdb.connect(str(copy))
    try:
        con.execute("SET VARIABLE gpusre_fleet = ?::VARCHAR[]", [["gpu01", "gpu02", "gpu03", "gpu04"]])
        run_mart_sql(con, "log_coverage_daily")
        mark_partial_days(con, "marts.log_coverage_daily")
        row = con.sql("SELECT nodes_logging, n_silent_nodes, silent_nodes, n_outside_hosts, outside_hosts "
                      "FROM marts.log_coverage_daily WHERE day = '2026-11-10'").fetchall()
        assert row == [(3, 1, ["gpu04"], 1, ["10.0.0.4"])]  # 3 nodes of the list logged; the address is apart
        note = quality._outside_hosts_note(con, _Meta(date(2026, 11, 10)))
        # Without a list every host that logged is a node (as before).
        con.execute("RESET VARIABLE gpusre_fleet")
        run_mart_sql(con, "log_coverage_daily")
        unlisted = con.sql("SELECT nodes_logging, n_outside_hosts FROM marts.log_coverage_daily").fetchall()
    finally:
        con.close()
    assert note == ("1 host outside cluster.yaml's node list logged on 2026-11-10: 10.0.0.4. Its lines are "
                    "loaded under the host name, not a node (its events and incidents too) — 1 node that ran "
                    "jobs logged nothing that day (gpu04): add it to cluster.yaml node_aliases if it is a node "
                    "(marts.log_coverage_daily.outside_hosts).")
    assert unlisted == [(4, 0)]


class _Meta:
    """The one field of NightlyMeta the note reads."""

    def __init__(self, report_date: date) -> None:
        self.report_date = report_date
