"""One capacity per UTC day for utilization, goodput, node availability and the SLIs (probe U, findings 1-2),
end to end with the real pipeline on a hand-made 2-node landing:

* cluster.yaml: gpu[001-002], 8 GPUs each → 16 GPUs, capacity 16 × 24 = 384 GPU-h a day;
* sacct, dumps taken at 00:05 the next day: job 2001 8 GPUs on gpu001 12-01 00:30 → 20:30 (160 GPU-h);
  2002 16 GPUs 12-01 22:00 → 12-02 04:00 (32 GPU-h on 12-01, RUNNING in the 12-01 dump; 64 on 12-02);
  2003 8 GPUs on gpu001 12-02 06:00 → 23:30 (140 GPU-h). The accounting speaks for 12-01 00:30 .. 12-02
  23:30: both days miss at most half an hour, so both are whole days (models/accounting_span.py);
* sacctmgr events: gpu002 DOWN 12-02 10:00-13:00 (3 h × 8 GPUs = 24 GPU-h unavailable); the dump is cut
  at 12-03 00:05 (its "Cluster Registered TRES" line's duration).

Hand-computed: utilization 12-01 = 192 / 384 = 0.5, 12-02 = 204 / 384 = 0.53125; no infrastructure
interruption, so goodput = utilization; in service 12-02 = 384 − 24 = 360 GPU-h.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hand_landing import SACCT_HEADER, query_rows, run_hand_landing

HEADER = SACCT_HEADER


def _job(jid: int, state: str, start: str, end: str, elapsed: str, nodes: int, gpus: int, nodelist: str) -> str:
    return (f"{jid}|{jid}|train{jid}|alice|2001|ml|ml|batch|normal|{state}|0:0|{start}|{start}|{start}|{end}|{elapsed}|"
            f"2-00:00:00|{nodes}|{nodes * 112}|billing={nodes * 112},cpu={nodes * 112},gres/gpu={gpus},mem=1000G,"
            f"node={nodes}|{nodelist}|")


EV_HEADER = "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User|Duration|Event|ClusterNodes"
FILES = {
    "cluster.yaml": 'cluster: tiny\ntimezone: UTC\nnodes: "gpu[001-002]"\ngpus_per_node: 8\ngpu_type: h100\n'
                    "slo:\n  window_days: 30\n  objectives:\n    - {sli: node_availability, objective: 0.99}\n"
                    "    - {sli: goodput, objective: 0.5}\n",
    "sacct/sacct_2026-12-01.psv": "\n".join([
        HEADER,
        _job(2001, "COMPLETED", "2026-12-01T00:30:00", "2026-12-01T20:30:00", "20:00:00", 1, 8, "gpu001"),
        _job(2002, "RUNNING", "2026-12-01T22:00:00", "Unknown", "02:05:00", 2, 16, "gpu[001-002]")]) + "\n",
    "sacct/sacct_2026-12-02.psv": "\n".join([
        HEADER,
        _job(2002, "COMPLETED", "2026-12-01T22:00:00", "2026-12-02T04:00:00", "06:00:00", 2, 16, "gpu[001-002]"),
        _job(2003, "COMPLETED", "2026-12-02T06:00:00", "2026-12-02T23:30:00", "17:30:00", 1, 8, "gpu001")]) + "\n",
    "slurm_events/events_2026-12-01.txt": "\n".join([
        EV_HEADER, "tiny||2026-11-01T00:00:00|Unknown||Cluster Registered TRES||31-00:05:00|Cluster|gpu[001-002]"]) + "\n",
    "slurm_events/events_2026-12-02.txt": "\n".join([
        EV_HEADER, "tiny||2026-11-01T00:00:00|Unknown||Cluster Registered TRES||32-00:05:00|Cluster|gpu[001-002]",
        "tiny|gpu002|2026-12-02T10:00:00|2026-12-02T13:00:00|DOWN|Not responding|root(0)|03:00:00|Node|"]) + "\n",
}


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("one_capacity"), FILES)


def test_utilization_and_goodput_share_one_capacity(wh: Path) -> None:
    rows = query_rows(wh, """SELECT u.day::VARCHAR, u.capacity_gpu_hours, g.capacity_gpu_hours, u.utilization, g.goodput
                             FROM marts.utilization_daily AS u JOIN marts.goodput_daily AS g USING (day) ORDER BY day""")
    assert [r[0] for r in rows] == ["2026-12-01", "2026-12-02"]
    for _, u_cap, g_cap, util, goodput in rows:
        assert u_cap == g_cap == pytest.approx(384.0)  # whole days: the half hours at 00:30 and 23:30 are idle
        assert goodput <= util + 1e-12  # goodput = allocated − losses ≤ allocated
    assert [r[3] for r in rows] == pytest.approx([192 / 384, 204 / 384])
    assert [r[4] for r in rows] == pytest.approx([192 / 384, 204 / 384])


def test_the_last_days_down_time_is_unavailable_capacity(wh: Path) -> None:
    got = dict((d, (u, s, gis)) for d, u, s, gis in query_rows(
        wh, "SELECT day::VARCHAR, unavailable_gpu_hours, in_service_gpu_hours, goodput_in_service FROM marts.goodput_daily"))
    assert got["2026-12-01"][:2] == pytest.approx((0.0, 384.0))
    # gpu002 down 3 h × 8 GPUs, though its node states run to the 00:05 dump after the capacity's day
    assert got["2026-12-02"] == pytest.approx((24.0, 360.0, 204 / 360))


def test_node_availability_and_its_sli_count_the_same_whole_days(wh: Path) -> None:
    daily = dict((d, (o, dn, p)) for d, o, dn, p in query_rows(
        wh, "SELECT day::VARCHAR, sum(observed_hours), sum(down_hours), bool_or(partial) "
            "FROM marts.node_availability_daily GROUP BY day"))
    assert daily["2026-12-01"] == (pytest.approx(48.0), pytest.approx(0.0), False)
    assert daily["2026-12-02"] == (pytest.approx(48.0), pytest.approx(3.0), False)
    # the minutes of 12-03 the event dump reaches are no full-looking day: a short row, flagged partial
    assert all(obs < 1.0 and partial for d, (obs, _, partial) in daily.items() if d > "2026-12-02")
    sli = dict((d, (g, t)) for d, g, t in query_rows(
        wh, "SELECT day::VARCHAR, good, total FROM marts.slo_daily WHERE sli = 'node_availability'"))
    assert sli == {"2026-12-01": pytest.approx((48.0, 48.0)), "2026-12-02": pytest.approx((45.0, 48.0))}
    goodput_sli = dict((d, t) for d, t in query_rows(
        wh, "SELECT day::VARCHAR, total FROM marts.slo_daily WHERE sli = 'goodput'"))
    assert goodput_sli == {"2026-12-01": pytest.approx(384.0), "2026-12-02": pytest.approx(384.0)}
