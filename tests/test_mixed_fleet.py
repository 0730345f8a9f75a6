"""A mixed fleet: cluster.yaml ``gpus_per_node`` (the default) plus ``node_gpus`` (hostlist -> GPUs).

The fleet of the evaluator's report: 24 nodes, ``gpu[001-016]`` with 8 H100 and ``gpu[017-024]`` with
4 H200 = 16 x 8 + 8 x 4 = 160 GPUs, 160 x 24 = 3,840 GPU-hours a day (not 24 x 8 x 24 = 4,608).
Every expected value below is worked out by hand in the comments.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models.failures.node_loss import write_node_hardware_loss
from gpusre.models.reliability.goodput import goodput_daily
from gpusre.models.reliability.mtbf import mtbf_table, node_exposure
from gpusre.models.warehouse import apply_ddl
from gpusre.pipelines.config import ClusterConfigError, parse_cluster_config
from gpusre.pipelines.runner import run_pipeline

UTC = timezone.utc

MIXED_YAML = """\
cluster: c1
nodes: "gpu[001-024]"
gpus_per_node: 8
node_gpus:                 # nodes whose GPU count differs from gpus_per_node (hostlists)
  "gpu[017-024]": 4
"""


# --- config ---------------------------------------------------------------------------------------

def test_node_gpus_maps_each_node_and_sums_the_fleet() -> None:
    config = parse_cluster_config(MIXED_YAML)
    by_node = config.gpus_by_node
    assert len(by_node) == 24
    assert by_node["gpu001"] == 8 and by_node["gpu016"] == 8   # not named: gpus_per_node
    assert by_node["gpu017"] == 4 and by_node["gpu024"] == 4   # named by node_gpus
    assert config.capacity_gpus == 160                          # 16 x 8 + 8 x 4


def test_single_value_configs_are_unchanged() -> None:
    # no node_gpus: count x gpus_per_node, as before (24 x 8 = 192; the 100 x 8 default = 800)
    assert parse_cluster_config('nodes: "gpu[001-024]"\ngpus_per_node: 8\n').capacity_gpus == 192
    assert parse_cluster_config("nodes: 24\n").capacity_gpus == 192
    assert parse_cluster_config("").capacity_gpus == 800
    assert parse_cluster_config("nodes: 24\n").gpus_by_node == {}


def test_the_same_count_listed_twice_is_fine() -> None:
    config = parse_cluster_config(MIXED_YAML + '  "gpu020": 4\n')
    assert config.capacity_gpus == 160


@pytest.mark.parametrize(("text", "message"), [
    (MIXED_YAML.replace('"gpu[017-024]"', '"gpu[017-0"'), "node_gpus: 'gpu[017-0': unbalanced"),
    (MIXED_YAML + '  "gpu020": 8\n', "node gpu020 is listed twice with different GPU counts"),
    (MIXED_YAML.replace('nodes: "gpu[001-024]"', "nodes: 24"), "node_gpus: needs `nodes` as a hostlist"),
    (MIXED_YAML.replace('nodes: "gpu[001-024]"\n', ""), "node_gpus: needs `nodes` as a hostlist"),  # default count
    (MIXED_YAML.replace('"gpu[017-024]"', '"gpu[017-025]"'), "not in `nodes`, e.g. gpu025"),
    (MIXED_YAML.replace(": 4\n", ": 0\n"), "node_gpus.gpu[017-024]: Input should be greater than or equal to 1"),
    (MIXED_YAML.replace(": 4\n", ": 65\n"), "node_gpus.gpu[017-024]: Input should be less than or equal to 64"),
])
def test_node_gpus_validation(text: str, message: str) -> None:
    with pytest.raises(ClusterConfigError) as exc:
        parse_cluster_config(text)
    assert message in str(exc.value)


# --- goodput ----------------------------------------------------------------------------------------

_UTC_TS = pl.Datetime("us", "UTC")
NO_INSTANCES = pl.DataFrame(schema={"job_id": pl.String, "instance_no": pl.Int32, "n_gpus": pl.Int64,
                                    "interrupted": pl.Boolean, "start_ts": _UTC_TS, "end_ts": _UTC_TS,
                                    "lost_work_s": pl.Float64, "charged_overhead_s": pl.Float64})


def test_goodput_unavailable_counts_the_down_nodes_own_gpus() -> None:
    # Two nodes: n8 with 8 GPUs, n4 with 4 (node_gpus); capacity (8 + 4) x 24 = 288 GPU-h.
    # n4 is down 8 h: in service 24 x 8 + 16 x 4 = 256 GPU-h, unavailable 8 x 4 = 32 (not 8 x 8 = 64).
    day = date(2026, 11, 1)
    util = pl.DataFrame({"day": [day], "capacity_gpu_hours": [288.0], "allocated_gpu_hours": [96.0]})
    states = pl.DataFrame({"day": [day, day], "node": ["n8", "n4"], "in_service_hours": [24.0, 16.0],
                           "down_maintenance_hours": [0.0, 0.0]})
    gpus = pl.DataFrame({"node": ["n8", "n4"], "gpus": [8, 4]})
    row = goodput_daily(NO_INSTANCES, util, in_service=states, gpus_per_node=8, node_gpus=gpus).row(0, named=True)
    assert row["in_service_gpu_hours"] == 256.0
    assert row["unavailable_gpu_hours"] == 32.0
    assert row["goodput"] == pytest.approx(96 / 288)
    # the same node down for planned maintenance: 8 h x 4 GPUs = 32 maintenance GPU-hours
    maint = states.with_columns(pl.Series("down_maintenance_hours", [0.0, 8.0]))
    row = goodput_daily(NO_INSTANCES, util, in_service=maint, gpus_per_node=8, node_gpus=gpus).row(0, named=True)
    assert row["maintenance_gpu_hours"] == 32.0


# --- MTBF -------------------------------------------------------------------------------------------

def test_mtbf_exposure_gpu_hours_weighs_each_nodes_gpus() -> None:
    # gpu01 (8 GPUs) and gpu02 (4 GPUs), 2026-01-01..03-01 = 1,416 h each, no maintenance.
    # exposure_gpu_hours (GPU components) = 1,416 x 8 + 1,416 x 4 = 16,992 (one count of 8: 22,656);
    # two GPU-memory failures: MTBF 8,496 GPU-hours.
    t0, t1 = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)
    exp = node_exposure(["gpu01", "gpu02"], t0, t1)
    inc = pl.DataFrame([("a", "gpu_memory", datetime(2026, 1, 5, tzinfo=UTC), ["gpu02"], "node"),
                        ("b", "gpu_memory", datetime(2026, 2, 5, tzinfo=UTC), ["gpu01"], "node")],
                       schema={"incident_id": pl.String, "component": pl.String, "start_ts": _UTC_TS,
                               "nodes": pl.List(pl.String), "scope": pl.String}, orient="row")
    m = mtbf_table(inc, exp, 8, t0, t1, min_failures=1, node_gpus={"gpu01": 8, "gpu02": 4})
    row = m.filter((pl.col("period") == "all") & (pl.col("scope") == "component")
                   & (pl.col("component") == "gpu_memory")).row(0, named=True)
    assert row["exposure_hours"] == 2832.0
    assert row["exposure_gpu_hours"] == 16992.0
    assert row["mtbf_gpu_hours"] == 8496.0
    # January alone: 744 x 8 + 744 x 4 = 8,928
    jan = m.filter((pl.col("period") == "2026-01") & (pl.col("component") == "gpu_memory")
                   & (pl.col("scope") == "component")).row(0, named=True)
    assert jan["exposure_gpu_hours"] == 8928.0


# --- node_hardware_loss -------------------------------------------------------------------------------

def test_node_hardware_loss_uses_the_nodes_own_gpus(tmp_path: Path) -> None:
    # gpu022 (4 GPUs) down 18 h for hardware (incident 10-02 06:00 until it ran a job again 10-03 00:00):
    # 18 x 4 = 72 GPU-hours (not 18 x 8 = 144); gpu001 (8 GPUs) down 2 h: 16.
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        con.execute("SET TimeZone = 'UTC'")
        apply_ddl(con)
        con.execute("INSERT INTO lake.sacct_records (source_file, line_no, record_type, job_id, end_ts) VALUES "
                    "('s', 2, 'allocation', '1', ?), ('s', 3, 'allocation', '2', ?)",
                    [datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 10, 5, tzinfo=UTC)])
        con.execute("CREATE TABLE marts.hw_incidents (incident_id VARCHAR, nodes VARCHAR[], start_ts TIMESTAMPTZ, "
                    "recovered_ts TIMESTAMPTZ, scope VARCHAR, cause_class VARCHAR)")
        con.executemany("INSERT INTO marts.hw_incidents VALUES (?, ?, ?, ?, 'node', 'hardware')", [
            ("A", ["gpu022"], datetime(2026, 10, 2, 6, tzinfo=UTC), datetime(2026, 10, 3, tzinfo=UTC)),
            ("B", ["gpu001"], datetime(2026, 10, 2, 6, tzinfo=UTC), datetime(2026, 10, 2, 8, tzinfo=UTC))])
        con.execute("CREATE TABLE marts.job_failure_attribution (job_id VARCHAR, attribution VARCHAR, "
                    "incident_id VARCHAR, end_ts TIMESTAMPTZ, lost_gpu_hours DOUBLE)")
        con.execute("CREATE TABLE marts.instance_failure_attribution (job_id VARCHAR, instance_no INTEGER, "
                    "attribution VARCHAR, incident_id VARCHAR, end_ts TIMESTAMPTZ, lost_gpu_hours DOUBLE)")
        gpus = parse_cluster_config(MIXED_YAML).gpus_by_node
        assert write_node_hardware_loss(con, 8, datetime(2026, 10, 5, tzinfo=UTC), gpus) == 2
        rows = con.sql("SELECT node, gpus_per_node, down_hardware_hours, down_gpu_hours "
                       "FROM marts.node_hardware_loss ORDER BY node").fetchall()
        assert rows == [("gpu001", 8, 2.0, 16.0), ("gpu022", 4, 18.0, 72.0)]
    finally:
        con.close()


# --- end to end ---------------------------------------------------------------------------------------

SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|"
                "Timelimit|NNodes|NCPUS|AllocTRES|NodeList")


def _job(job_id: int, start: str, end: str, elapsed: str, nodes: int, gpus: int, nodelist: str) -> str:
    return (f"{job_id}|{job_id}|train|alice|llm|gpu|COMPLETED|0:0|{start}|{start}|{start}|{end}|{elapsed}|"
            f"2-00:00:00|{nodes}|{16 * gpus}|billing={gpus},cpu={16 * gpus},gres/gpu={gpus},node={nodes}|{nodelist}")


def _landing(root: Path) -> Path:
    landing = root / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "slurm_events").mkdir()
    (landing / "cluster.yaml").write_text(MIXED_YAML)
    (landing / "sacct" / "sacct_2026-11-01.psv").write_text("\n".join([
        SACCT_HEADER,
        _job(1, "2026-11-01T00:00:00", "2026-11-01T12:00:00", "12:00:00", 1, 8, "gpu001"),   # 8 x 12 = 96
        _job(2, "2026-11-01T00:00:00", "2026-11-02T00:00:00", "1-00:00:00", 1, 4, "gpu017"),  # 4 x 24 = 96
        # 8 GPUs on gpu018, which cluster.yaml gives 4: understated (8 x 1 = 8 GPU-h)
        _job(3, "2026-11-01T10:00:00", "2026-11-01T11:00:00", "01:00:00", 1, 8, "gpu018"),
        # a whole-node job over an 8- and a 4-GPU node: 12 GPUs, no excess (12 x 1 = 12 GPU-h)
        _job(4, "2026-11-01T12:00:00", "2026-11-01T13:00:00", "01:00:00", 2, 12, "gpu[003,019]"),
    ]) + "\n")
    # gpu022 (4 GPUs) drained 08:00-16:00 for a hardware fault
    (landing / "slurm_events" / "events_2026-11-01.txt").write_text(
        "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
        "c1|gpu022|2026-11-01T08:00:00|2026-11-01T16:00:00|DRAIN|gpu ecc errors: Xid 48 DBE|root(0)\n")
    return landing


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[duckdb.DuckDBPyConnection, Path]:
    root = tmp_path_factory.mktemp("mixed")
    wh = root / "wh" / "gpusre.duckdb"
    run_pipeline(_landing(root), wh, root / "reports")
    con = duckdb.connect(str(wh), read_only=True)
    con.execute("SET TimeZone = 'UTC'")
    yield con, root / "reports"
    con.close()


def test_e2e_capacity_and_utilization(mixed_run: tuple[duckdb.DuckDBPyConnection, Path]) -> None:
    con, _ = mixed_run
    # capacity 160 GPUs x 24 h = 3,840; allocated 96 + 96 + 8 + 12 = 212; utilization 212 / 3,840 = 0.05521
    cap, alloc, util = con.sql("SELECT capacity_gpu_hours, allocated_gpu_hours, utilization "
                               "FROM marts.utilization_daily WHERE day = '2026-11-01'").fetchall()[0]
    assert cap == 3840.0
    assert alloc == pytest.approx(212.0)
    assert util == pytest.approx(212 / 3840)


def test_e2e_goodput_unavailable_is_the_down_nodes_gpus(mixed_run: tuple[duckdb.DuckDBPyConnection, Path]) -> None:
    con, _ = mixed_run
    # The accounting spans 11-01 00:00 to 11-02 00:00: the whole day. gpu022 (4 GPUs) out 8 h: 32 GPU-h
    # unavailable; no interruption, so goodput = 212 / 3,840.
    cap, unavailable, goodput = con.sql("SELECT capacity_gpu_hours, unavailable_gpu_hours, goodput "
                                        "FROM marts.goodput_daily WHERE day = '2026-11-01'").fetchall()[0]
    assert cap == pytest.approx(3840.0)
    assert unavailable == pytest.approx(32.0)
    assert goodput == pytest.approx(212 / 3840)


def test_e2e_fleet_coverage_names_the_understated_node(mixed_run: tuple[duckdb.DuckDBPyConnection, Path]) -> None:
    con, reports = mixed_run
    row = con.sql("SELECT gpus_per_node, capacity_gpus, nodes_other_gpus, max_gpus_per_node_seen, "
                  "gpus_understated_nodes, gpus_understated_examples, fleet_understated "
                  "FROM marts.fleet_coverage").fetchall()[0]
    # gpus_per_node stays the default (8); job 3 used 8 GPUs on gpu018 (4 configured): only gpu018 is named —
    # job 4's 12 GPUs on gpu003 (8) + gpu019 (4) are no excess, although 12 / 2 = 6 > 4.
    assert row == (8, 160, 8, 8, 1, ["gpu018"], True)
    text = "\n".join(p.read_text(encoding="utf-8") for p in reports.rglob("*.md"))
    assert "gpu018" in text and "node_gpus" in text
