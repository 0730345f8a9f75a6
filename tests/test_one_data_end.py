"""One data end and one first day across the marts (outside probe z, "the same quantity never shows two values").

A hand-built landing, 2 nodes x 8 GPUs, UTC, 2026-12-01 .. 12-02:

* accounting: the first job starts at 04:30 on 12-01, the last record is a job end at 23:30 on 12-02
  (30 min before midnight: the last day counts whole) — the data runs 12-01 00:00 .. 12-03 00:00;
* node logs: 00:17 on 12-01 .. 23:17 on 12-02 (an hourly cron line every six hours), with an Xid 79 on gpu02
  at 21:30 on 12-02;
* node states: gpu02 drained at 21:35 on 12-02, still open in the dump cut at 00:05 on 12-03, and the
  "Cluster Registered TRES" cluster event every sacctmgr dump lists, dated 2026-11-01 (a month before).

Hand-computed: gpu02 is down 21:35 .. 24:00 = 2 h 25 min = 29/12 h (not to 23:17, 23:30 nor 00:05). Every
node-day observes 24 h (the first day from midnight, not 04:30 or 00:17), 2 nodes x 2 days = 96 node-hours;
in service 96 - 29/12 = 93.5833; availability 1 - (29/12)/96 = 0.974826; MTBF exposure the same 93.5833
node-hours (the failure window 12-01 00:00 .. 12-03 00:00); no row for 12-03 anywhere; the node-state
data begins with gpu02's drain, the cluster event leaves it.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.hand_landing import query_rows, run_hand_landing

UTC = timezone.utc
DOWN_H = 29 / 12  # 21:35 .. 24:00
NODE_DAYS_H = 2 * 2 * 24.0

_SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
                 "Elapsed|Timelimit|NNodes|NCPUS|ReqTRES|AllocTRES|NodeList|Comment")
_TRES = "billing=96,cpu=96,gres/gpu=8,mem=512G,node=1"


def _job(job_id: int, node: str, start: str, end: str, elapsed: str) -> str:
    return (f"{job_id}|{job_id}|job-{job_id}|bob|1002|llm|llm|gpu|normal|COMPLETED|0:0|{start}|{start}|{start}|{end}|"
            f"{elapsed}|20:00:00|1|96|{_TRES}|{_TRES}|{node}|")


_EVENTS_HEADER = "Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User|Event|ClusterNodes"


def _cluster_event(duration: str) -> str:
    return f"tiny||2026-11-01T00:00:00|Unknown|{duration}||Cluster Registered TRES||Cluster|gpu[01-02]"


def _log(day: date, node: str, extra: list[str] | None = None) -> str:
    month = day.strftime("%b")
    lines = [(h, f"{node} CRON[{2000 + h}]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)")
             for h in (0, 6, 12, 18, 23)]
    text = [f"{month} {day.day:2d} {h:02d}:17:01 {msg}" for h, msg in lines]
    return "\n".join(sorted(text + (extra or []))) + "\n"


LANDING = {
    "cluster.yaml": 'cluster: tiny\ntimezone: UTC\nnodes: "gpu[01-02]"\ngpus_per_node: 8\n',
    "sacct/sacct_2026-12-01.psv": "\n".join([
        _SACCT_HEADER,
        _job(1, "gpu01", "2026-12-01T04:30:00", "2026-12-01T07:30:00", "03:00:00"),
        _job(2, "gpu02", "2026-12-01T10:00:00", "2026-12-01T12:00:00", "02:00:00")]) + "\n",
    "sacct/sacct_2026-12-02.psv": "\n".join([
        _SACCT_HEADER,
        _job(3, "gpu01", "2026-12-02T08:00:00", "2026-12-02T23:30:00", "15:30:00")]) + "\n",
    "slurm_events/events_2026-12-01.txt": "\n".join([_EVENTS_HEADER, _cluster_event("31-00:05:00")]) + "\n",
    "slurm_events/events_2026-12-02.txt": "\n".join([
        _EVENTS_HEADER, _cluster_event("32-00:05:00"),
        "tiny|gpu02|2026-12-02T21:35:00|Unknown|02:30:00|DRAIN|Xid 79 GPU fell off the bus|root(0)|Node|"]) + "\n",
    **{f"syslog/{d.isoformat()}/{n}.log": _log(d, n, [
        "Dec  2 21:30:00 gpu02 kernel: [1150000.000001] NVRM: Xid (PCI:0000:9b:00): 79, pid='<unknown>', "
        "name=<unknown>, GPU has fallen off the bus."] if (d.day, n) == (2, "gpu02") else None)
       for d in (date(2026, 12, 1), date(2026, 12, 2)) for n in ("gpu01", "gpu02")},
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("one_data_end"), LANDING)


def test_the_shared_span_rule() -> None:
    from gpusre.models.accounting_span import counted_end, day_start

    d = lambda h, m=0: datetime(2026, 12, 2, h, m, tzinfo=UTC)  # noqa: E731
    assert day_start(d(4, 30)) == d(0)
    assert counted_end(d(23, 30)) == d(0) + timedelta(days=1)       # 30 min before midnight: the day whole
    assert counted_end(d(23, 0)) == d(0) + timedelta(days=1)        # exactly 60 min: still whole
    assert counted_end(d(22, 59)) == d(22, 59)                      # 61 min: cut at the end
    assert counted_end(d(0)) == d(0)                                # at midnight: nothing of the next day


def test_day_coverage_counts_the_first_day_whole_and_ends_at_the_data_end(warehouse: Path) -> None:
    rows = query_rows(warehouse, "SELECT day, covered_hours, partial, covered_to FROM marts.day_coverage ORDER BY day")
    assert [(r[0], r[1], r[2]) for r in rows] == [(date(2026, 12, 1), 24.0, False), (date(2026, 12, 2), 24.0, False)]
    assert rows[-1][3] == datetime(2026, 12, 3, tzinfo=UTC)


def test_node_availability_has_no_row_after_the_last_day_and_the_drain_runs_to_midnight(warehouse: Path) -> None:
    days = query_rows(warehouse, "SELECT day, sum(observed_hours), sum(down_hours) FROM marts.node_availability_daily "
                                 "GROUP BY day ORDER BY day")
    assert [d for d, _, _ in days] == [date(2026, 12, 1), date(2026, 12, 2)]
    assert [o for _, o, _ in days] == [48.0, 48.0]
    assert days[1][2] == pytest.approx(DOWN_H)
    # the same days and capacity hours as utilization_daily
    util = query_rows(warehouse, "SELECT day, capacity_gpu_hours FROM marts.utilization_daily ORDER BY day")
    assert util == [(date(2026, 12, 1), 16 * 24.0), (date(2026, 12, 2), 16 * 24.0)]


def test_every_mart_counts_the_open_drain_to_the_same_end(warehouse: Path) -> None:
    (reasons,) = query_rows(warehouse, "SELECT sum(node_hours_lost) FROM marts.drain_reasons")[0]
    assert reasons == pytest.approx(DOWN_H)
    (loss,) = query_rows(warehouse, "SELECT down_hardware_hours FROM marts.node_hardware_loss WHERE node = 'gpu02'")[0]
    assert loss == pytest.approx(DOWN_H)
    down, scheduled, avail = query_rows(
        warehouse, "SELECT down_node_hours, scheduled_node_hours, availability FROM marts.availability_by_component "
                   "WHERE period_type = 'all' AND component_class = 'all'")[0]
    assert (down, scheduled) == (pytest.approx(DOWN_H), NODE_DAYS_H)
    assert avail == pytest.approx(1 - DOWN_H / NODE_DAYS_H)  # 0.974826
    good, total = query_rows(warehouse, "SELECT sum(good), sum(total) FROM marts.slo_daily "
                                        "WHERE sli = 'node_availability'")[0]
    assert (good, total) == (pytest.approx(NODE_DAYS_H - DOWN_H), NODE_DAYS_H)
    assert query_rows(warehouse, "SELECT max(day) FROM marts.slo_daily")[0][0] == date(2026, 12, 2)


def test_mtbf_exposure_is_the_in_service_node_hours(warehouse: Path) -> None:
    failures, exposure = query_rows(warehouse, "SELECT failures, exposure_hours FROM marts.mtbf "
                                               "WHERE period_type = 'all' AND scope = 'cluster'")[0]
    assert failures == 1
    assert exposure == pytest.approx(NODE_DAYS_H - DOWN_H)  # 93.5833, as the SLI's in-service hours


def test_a_cluster_event_does_not_date_the_node_state_data(warehouse: Path) -> None:
    first, n_empty, records = query_rows(warehouse, "SELECT first_record_ts, n_empty_days, records "
                                                    "FROM marts.data_freshness WHERE source_kind = 'slurm_events'")[0]
    assert first == datetime(2026, 12, 2, 21, 35, tzinfo=UTC)
    assert n_empty == 0
    assert records == 3  # every line loaded still counts: 2 cluster events + 1 drain
