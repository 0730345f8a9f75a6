"""Utilization per pool (cluster.yaml ``pools``): config validation, ``marts.utilization_by_pool_daily`` on a
hand-made warehouse and landing, and the report rows.

A mixed fleet's blended utilization hides its pools: the evaluator's 2 GB200 NVL72 racks at 74.0 % beside 16
H100 nodes at 30.6 % read 53.6 % for the fleet. Every expected value below is worked out by hand in the comments.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

from gpusre.models.marts_runner import mart_sql, run_daily_marts, run_mart_sql
from gpusre.models.warehouse import apply_ddl
from gpusre.pipelines.config import ClusterConfigError, parse_cluster_config
from gpusre.pipelines.runner import run_pipeline

UTC = timezone.utc

FLEET_YAML = """\
cluster: c1
nodes: ["nvl72-r0[1-2]-ct[01-18]", "h100-[001-016]"]
gpus_per_node: 8
node_gpus: {"nvl72-r0[1-2]-ct[01-18]": 4}
pools: {gb200: "nvl72-r0[1-2]-ct[01-18]", h100: "h100-[001-016]"}
"""


# --- config ---------------------------------------------------------------------------------------

def test_pools_map_each_node_and_sum_to_the_fleet() -> None:
    config = parse_cluster_config(FLEET_YAML)
    # 2 racks x 18 trays x 4 GPUs = 144; 16 x 8 = 128; 272 in all
    assert config.pool_gpus == {"gb200": 144, "h100": 128}
    assert sum(config.pool_gpus.values()) == config.capacity_gpus == 272
    assert config.pool_by_node["nvl72-r02-ct18"] == "gb200" and config.pool_by_node["h100-016"] == "h100"
    assert len(config.pool_by_node) == 52


def test_nodes_in_no_pool_form_pool_other() -> None:
    config = parse_cluster_config(FLEET_YAML.replace('h100: "h100-[001-016]"', 'h100: "h100-[001-010]"'))
    assert config.pool_gpus == {"gb200": 144, "h100": 80, "other": 48}  # 6 H100 nodes in no pool
    assert config.pool_by_node["h100-011"] == "other"


def test_without_pools_the_fleet_is_pool_all() -> None:
    config = parse_cluster_config('nodes: "gpu[001-024]"\n')
    assert config.pool_gpus == {"all": 192}
    assert set(config.pool_by_node.values()) == {"all"}
    assert parse_cluster_config("nodes: 24\n").pool_gpus == {"all": 192}
    assert parse_cluster_config("").pool_gpus == {"all": 800}


@pytest.mark.parametrize(("text", "message"), [
    (FLEET_YAML.replace('h100: "h100-[001-016]"', 'h100: "h100-[001-016],nvl72-r01-ct03"'),
     "pools: node nvl72-r01-ct03 is in two pools: gb200 and h100"),
    (FLEET_YAML.replace('"h100-[001-016]"}', '"h100-[001-017]"}'), "not in `nodes`, e.g. h100-017"),
    (FLEET_YAML.replace('"h100-[001-016]"}', '"h100-[001-0"}'), "pools: h100: 'h100-[001-0': unbalanced"),
    (FLEET_YAML.replace("h100: ", "other: "), "pools: 'other' is reserved"),
    (FLEET_YAML.replace("h100: ", "all: "), "pools: 'all' is reserved"),
    ('nodes: 52\npools: {gb200: "nvl72-r01-ct01"}\n', "pools: needs `nodes` as a hostlist"),
    ('pools: {gb200: "nvl72-r01-ct01"}\n', "pools: needs `nodes` as a hostlist"),  # the default count
])
def test_pools_validation(text: str, message: str) -> None:
    with pytest.raises(ClusterConfigError) as exc:
        parse_cluster_config(text)
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


# --- the mart on a hand-made warehouse ----------------------------------------------------------------
#
# Pools: small = n1, n2 (4 GPUs each: 8 GPUs), big = m1, m2 (8 GPUs each: 16 GPUs); 24 GPUs in all.
# D1 = 2026-11-01, D2 = 2026-11-02; as_of D2 12:00, so D2 counts 12 capacity hours (more than 60 min after it).
#
# | job | nodes  | GPUs | run               | D1                          | D2                         |
# |-----|--------|------|-------------------|-----------------------------|----------------------------|
# | j1  | n1, m1 | 8    | D1 12:00-D2 06:00 | 8 x 12 = 96: small 48, big 48 | 8 x 6 = 48: small 24, big 24 |
# | j2  | m1, m2 | 16   | D1 00:00-06:00    | 16 x 6 = 96: big 96         |                            |
# | j3  | n2     | 4    | D2 10:00-running  |                             | 4 x 2 = 8 (as_of): small 8 |
# | j4  | (none) | 2    | D1 01:00-02:00    | 2 x 1 = 2: pool other       |                            |
#
# D1: capacity small 8 x 24 = 192, big 16 x 24 = 384 (576 = 24 x 24); allocated small 48, big 144, other 2
#     (194 = utilization_daily's 96 + 96 + 2); jobs small 1, big 2, other 1.
# D2: capacity small 8 x 12 = 96, big 16 x 12 = 192 (288 = 24 x 12); allocated small 32, big 24 (56 = 48 + 8);
#     jobs small 2, big 1. No row for other: nothing ran there and every node is in a pool.

D1, D2 = date(2026, 11, 1), date(2026, 11, 2)
AS_OF = datetime(2026, 11, 2, 12, tzinfo=UTC)
POOL_GPUS = {"small": 8, "big": 16}
POOL_BY_NODE = {"n1": "small", "n2": "small", "m1": "big", "m2": "big"}


def _ts(day: date, hour: float) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(hours=hour)


@pytest.fixture
def con(tmp_path: Path):
    c = duckdb.connect(str(tmp_path / "warehouse.duckdb"))
    c.execute("SET TimeZone = 'UTC'")
    apply_ddl(c)
    for job_id, nodes, gpus, start, end in [
        ("j1", ["n1", "m1"], 8, _ts(D1, 12), _ts(D2, 6)),
        ("j2", ["m1", "m2"], 16, _ts(D1, 0), _ts(D1, 6)),
        ("j3", ["n2"], 4, _ts(D2, 10), None),
        ("j4", None, 2, _ts(D1, 1), _ts(D1, 2)),
    ]:
        c.execute("""INSERT INTO core.job_instances (job_id, instance_no, is_latest, state, start_ts, end_ts, n_gpus,
                                                     nodes, source_file, line_no)
                     VALUES (?, 1, true, ?, ?, ?, ?, ?, 'test.psv', 1)""",
                  [job_id, "RUNNING" if end is None else "COMPLETED", start, end, gpus, nodes])
    yield c
    c.close()


def _by_pool(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.sql("""SELECT day, pool, gpus, capacity_gpu_hours, round(allocated_gpu_hours, 9), round(utilization, 9),
                             jobs_running
                      FROM marts.utilization_by_pool_daily ORDER BY day, pool""").fetchall()


def test_mart_header_says_what_a_row_means() -> None:
    assert mart_sql("utilization_by_pool_daily").startswith("-- marts.utilization_by_pool_daily: one row per UTC day "
                                                            "and pool")


def test_pools_split_capacity_and_allocation(con: duckdb.DuckDBPyConnection) -> None:
    for day in (D1, D2):
        run_daily_marts(con, day, 24, AS_OF, POOL_GPUS, POOL_BY_NODE)
    assert _by_pool(con) == [
        (D1, "big", 16, 384.0, 144.0, round(144 / 384, 9), 2),
        (D1, "other", 0, 0.0, 2.0, None, 1),
        (D1, "small", 8, 192.0, 48.0, 0.25, 1),
        (D2, "big", 16, 192.0, 24.0, 0.125, 1),
        (D2, "small", 8, 96.0, 32.0, round(32 / 96, 9), 2),
    ]
    # the pools sum to marts.utilization_daily, day by day
    assert con.sql("""SELECT u.day, u.capacity_gpu_hours, p.cap, u.allocated_gpu_hours, p.alloc
                      FROM marts.utilization_daily AS u
                      JOIN (SELECT day, sum(capacity_gpu_hours) AS cap, sum(allocated_gpu_hours) AS alloc
                            FROM marts.utilization_by_pool_daily GROUP BY day) AS p USING (day)
                      ORDER BY day""").fetchall() == [(D1, 576.0, 576.0, 194.0, 194.0), (D2, 288.0, 288.0, 56.0, 56.0)]


def test_rerunning_a_day_replaces_its_rows(con: duckdb.DuckDBPyConnection) -> None:
    run_daily_marts(con, D1, 24, AS_OF, POOL_GPUS, POOL_BY_NODE)
    run_daily_marts(con, D1, 24, AS_OF, POOL_GPUS, POOL_BY_NODE)
    assert con.sql("SELECT count(*) FROM marts.utilization_by_pool_daily").fetchall() == [(3,)]


def test_without_pools_one_row_per_day_equals_utilization_daily(con: duckdb.DuckDBPyConnection) -> None:
    for day in (D1, D2):
        run_daily_marts(con, day, 24, AS_OF)
    assert _by_pool(con) == [(D1, "all", 24, 576.0, 194.0, round(194 / 576, 9), 3),
                             (D2, "all", 24, 288.0, 56.0, round(56 / 288, 9), 2)]
    assert con.sql("""SELECT count(*) FROM marts.utilization_daily AS u JOIN marts.utilization_by_pool_daily AS p
                      USING (day) WHERE u.capacity_gpu_hours = p.capacity_gpu_hours
                      AND u.allocated_gpu_hours = p.allocated_gpu_hours AND u.jobs_running = p.jobs_running"""
                   ).fetchall() == [(2,)]


def test_window_macro_sums_each_pool(con: duckdb.DuckDBPyConnection) -> None:
    for day in (D1, D2):
        run_daily_marts(con, day, 24, AS_OF, POOL_GPUS, POOL_BY_NODE)
    con.execute("ALTER TABLE marts.utilization_by_pool_daily ADD COLUMN partial BOOLEAN")
    con.execute("UPDATE marts.utilization_by_pool_daily SET partial = day = ?", [D2])
    run_mart_sql(con, "utilization_by_pool")
    got = con.sql("SELECT pool, gpus, days, partial_days, capacity_gpu_hours, allocated_gpu_hours, "
                  "round(utilization, 9), max_jobs_running FROM marts.utilization_by_pool(?, ?)", params=[D1, D2]).fetchall()
    # big: 384 + 192 = 576 capacity, 144 + 24 = 168 allocated; small: 192 + 96 = 288, 48 + 32 = 80; other last
    assert got == [("big", 16, 2, 1, 576.0, 168.0, round(168 / 576, 9), 2),
                   ("small", 8, 2, 1, 288.0, 80.0, round(80 / 288, 9), 2),
                   ("other", 0, 1, 0, 0.0, 2.0, None, 1)]


# --- end to end: a landing with two pools, the mart and the report rows --------------------------------
#
# gb-01, gb-02: 4 GPUs (pool gb200, 8 GPUs); h-01, h-02: 8 GPUs (pool h100, 16 GPUs). On 2026-11-01:
#   job 1: 8 GPUs on gb-01 + h-01 (4 per node), 00:00-12:00: 96 GPU-h, gb200 48 and h100 48
#   job 2: 8 GPUs on h-02, 00:00-24:00: 192 GPU-h, h100
#   job 3: 4 GPUs on gb-02, 06:00-12:00: 24 GPU-h, gb200
# gb200: 72 of 8 x 24 = 192 GPU-h = 37.5 %; h100: 240 of 16 x 24 = 384 = 62.5 %; fleet 312 of 576 = 54.2 %.

E2E_YAML = """\
cluster: c1
nodes: ["gb-[01-02]", "h-[01-02]"]
gpus_per_node: 8
node_gpus: {"gb-[01-02]": 4}
pools: {gb200: "gb-[01-02]", h100: "h-[01-02]"}
"""
SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|"
                "Timelimit|NNodes|NCPUS|AllocTRES|NodeList")


def _job(job_id: int, start: str, end: str, elapsed: str, nodes: int, gpus: int, nodelist: str) -> str:
    return (f"{job_id}|{job_id}|train|alice|llm|gpu|COMPLETED|0:0|{start}|{start}|{start}|{end}|{elapsed}|"
            f"2-00:00:00|{nodes}|{16 * gpus}|billing={gpus},cpu={16 * gpus},gres/gpu={gpus},node={nodes}|{nodelist}")


@pytest.fixture(scope="module")
def pool_run(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("pools")
    landing = root / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text(E2E_YAML)
    (landing / "sacct" / "sacct_2026-11-01.psv").write_text("\n".join([
        SACCT_HEADER,
        _job(1, "2026-11-01T00:00:00", "2026-11-01T12:00:00", "12:00:00", 2, 8, "gb-01,h-01"),
        _job(2, "2026-11-01T00:00:00", "2026-11-02T00:00:00", "1-00:00:00", 1, 8, "h-02"),
        _job(3, "2026-11-01T06:00:00", "2026-11-01T12:00:00", "06:00:00", 1, 4, "gb-02"),
    ]) + "\n")
    wh = root / "wh" / "gpusre.duckdb"
    run_pipeline(landing, wh, root / "reports")
    c = duckdb.connect(str(wh), read_only=True)
    c.execute("SET TimeZone = 'UTC'")
    yield c, root / "reports"
    c.close()


def test_e2e_mart_rows_and_sums(pool_run) -> None:
    con, _ = pool_run
    rows = con.sql("""SELECT pool, gpus, capacity_gpu_hours, allocated_gpu_hours, utilization, jobs_running, partial
                      FROM marts.utilization_by_pool_daily WHERE day = '2026-11-01' ORDER BY pool""").fetchall()
    assert [r[:4] + (r[5], r[6]) for r in rows] == [("gb200", 8, 192.0, 72.0, 2, False),
                                                    ("h100", 16, 384.0, 240.0, 2, False)]
    assert [r[4] for r in rows] == [pytest.approx(0.375), pytest.approx(0.625)]
    cap, alloc = con.sql("SELECT capacity_gpu_hours, allocated_gpu_hours FROM marts.utilization_daily "
                         "WHERE day = '2026-11-01'").fetchall()[0]
    assert (cap, alloc) == (576.0, pytest.approx(312.0))


def test_e2e_reports_show_one_row_per_pool(pool_run) -> None:
    _, reports = pool_run
    nightly = "\n".join(p.read_text(encoding="utf-8") for p in reports.rglob("*.md") if "slo" not in p.name)
    slo = "\n".join(p.read_text(encoding="utf-8") for p in reports.rglob("*.md") if "slo" in p.name)
    assert nightly and slo
    for text in (nightly, slo):
        assert "37.5 %" in text and "62.5 %" in text, text[:2000]
        lines = [line for line in text.splitlines() if line.startswith("|") and ("gb200" in line or "h100" in line)]
        assert any("gb200" in line and "37.5 %" in line for line in lines)
        assert any("h100" in line and "62.5 %" in line for line in lines)
