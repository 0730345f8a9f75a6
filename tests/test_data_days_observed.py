"""The days of data are the days a record was *observed* on (probe AU, F1 / F5): the node-less "Cluster
Registered TRES" event every ``sacctmgr show event`` dump lists (it says since when the cluster exists) and an
alert Alertmanager re-sends with a ``startsAt`` weeks old date nothing; a day before the first observation is
refused by the nightly and by the SLO review, as a one-line error naming the data's span.

Hand-made landing (cluster gpu[01-02] x 8 GPUs, UTC), D1 = 2026-11-10, D2 = 2026-11-11:

==========  ===================================================================================
sacct       job 101 gpu01 D1 08:00-10:00 COMPLETED; job 102 gpu02 D2 08:00-09:00 COMPLETED
syslog      every node logs 00:01 and 23:58 of both days
slurm       one dump per day; each lists the cluster registration of 2026-10-01 09:00 (TimeEnd
events      Unknown) and one drain: gpu02 D1 12:00-13:00, gpu01 D2 12:00-13:00
alerts      D1: one notification of NodeFilesystemAlmostFull on gpu01, firing since 2026-09-01 04:12
            (re-sent unchanged); D2: one notification of a DCGM Xid alert started D2 05:00
==========  ===================================================================================

Two conventions: ``probe`` (probe AU's dump columns ``Cluster|NodeName|TimeStart|TimeEnd|Duration|…``
with an empty node name; payload files ``alerts/2026-11-10.jsonl`` without a logger time) and ``event``
(``sacctmgr … Format=Cluster,ClusterNodes,NodeName,Event,…``: the registration as ``Event`` Cluster with
its node list; payload lines prefixed by the logger's receipt time in ``alerts/alertmanager-…jsonl``).

By hand: the first record observed is D1 (a job, a log line, gpu02's drain, the D1 delivery), the last D2,
so the data is D1 … D2 — not 2026-10-01 (the registration) nor 2026-09-01 (the alert's start).
``marts.alert_daily`` keeps a row per day from 2026-09-01 (alerts counts the day the alert started), but
notifications are known only on D1 (1) and D2 (1): NULL on the 70 days before D1, never 0.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

from hand_landing import run_hand_landing, sacct_dump, sacct_line
from gpusre.models.warehouse import connect
from gpusre.reports.nightly.meta import OutsideDataError, check_inside_data, data_days, later_data_note

D1, D2 = date(2026, 11, 10), date(2026, 11, 11)
REGISTERED = "2026-10-01T09:00:00"
ALERT_START = datetime(2026, 9, 1, 4, 12, tzinfo=timezone.utc)


def _payload(alertname: str, instance: str, start: str) -> str:
    alert = {"status": "firing", "labels": {"alertname": alertname, "instance": instance, "severity": "warning"},
             "annotations": {}, "startsAt": start, "endsAt": "0001-01-01T00:00:00Z", "fingerprint": f"fp-{alertname}"}
    return json.dumps({"version": "4", "status": "firing", "receiver": "oncall", "groupKey": "{}", "truncatedAlerts": 0,
                       "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {}, "externalURL": "x",
                       "alerts": [alert]})


def _events(convention: str, day: date, cut: str, node: str) -> str:
    """One day's dump: the cluster registration (open, Duration to the dump's cut) and one closed drain."""
    days = (datetime.fromisoformat(cut) - datetime.fromisoformat(REGISTERED)).days
    hours = (datetime.fromisoformat(cut) - datetime.fromisoformat(REGISTERED)).seconds // 3600
    open_for = f"{days}-{hours:02d}:00:00"
    if convention == "probe":
        return ("Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User\n"
                f"t||{REGISTERED}|Unknown|{open_for}||Cluster Registered TRES|\n"
                f"t|{node}|{day}T12:00:00|{day}T13:00:00|01:00:00|IDLE+DRAIN|NHC: check_hw_ib failed|root(0)\n")
    return ("Cluster|ClusterNodes|NodeName|Event|TimeStart|TimeEnd|Duration|State|Reason|User\n"
            f"t|gpu[01-02]||Cluster|{REGISTERED}|Unknown|{open_for}||Cluster Registered TRES|\n"
            f"t||{node}|Node|{day}T12:00:00|{day}T13:00:00|01:00:00|IDLE+DRAIN|NHC: check_hw_ib failed|root(0)\n")


def _landing(convention: str) -> dict[str, str]:
    files = {
        "cluster.yaml": 'cluster: t\ntimezone: UTC\nnodes: "gpu[01-02]"\ngpus_per_node: 8\n',
        f"sacct/sacct_{D1}.psv": sacct_dump([sacct_line("101", str(D1), "08:00:00", "10:00:00", "gpu01", 1,
                                                        state="COMPLETED", exit_code="0:0")]),
        f"sacct/sacct_{D2}.psv": sacct_dump([sacct_line("102", str(D2), "08:00:00", "09:00:00", "gpu02", 1,
                                                        state="COMPLETED", exit_code="0:0")]),
        f"slurm_events/events_{D1}.txt": _events(convention, D1, f"{D2}T00:00:00", "gpu02"),
        f"slurm_events/events_{D2}.txt": _events(convention, D2, "2026-11-12T00:00:00", "gpu01"),
    }
    for day in (D1, D2):
        for n in ("gpu01", "gpu02"):
            files[f"syslog/{day}/{n}.log"] = (f"{day}T00:01:00Z {n} CRON[1]: (root) CMD (run-parts)\n"
                                              f"{day}T23:58:00Z {n} CRON[2]: (root) CMD (run-parts)\n")
    old = _payload("NodeFilesystemAlmostFull", "gpu01:9100", "2026-09-01T04:12:00Z")
    new = _payload("DCGMXidErrors", "gpu02:9400", f"{D2}T05:00:00Z")
    if convention == "probe":
        files[f"alerts/{D1}.jsonl"] = old + "\n"
        files[f"alerts/{D2}.jsonl"] = new + "\n"
    else:  # the logger's receipt time before each JSON value
        files[f"alerts/alertmanager-{D1}.jsonl"] = f"{D1}T09:30:00Z {old}\n"
        files[f"alerts/alertmanager-{D2}.jsonl"] = f"{D2}T05:01:00Z {new}\n"
    return files


@pytest.fixture(scope="module", params=["probe", "event"])
def warehouse(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp(f"observed-{request.param}"), _landing(request.param))


def _gpusre(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpusre.pipelines.cli", *args], capture_output=True, text=True,
                          timeout=300)


def test_the_data_is_the_days_a_record_was_observed_on(warehouse: Path) -> None:
    con = connect(warehouse, read_only=True)
    try:
        # the inputs do hold the old times: the registration's start and the alert's start
        assert con.sql("SELECT count(*) FROM raw.slurm_events WHERE event_type = 'cluster'").fetchall() == [(2,)]
        assert con.sql("SELECT min(starts_at) FROM raw.alert_notifications").fetchall()[0][0] == ALERT_START
        assert data_days(con) == (D1, D2)
        assert later_data_note(con, D2) == []
        check_inside_data(con, D1, D1)  # a day of data: no error
        check_inside_data(con, date(2026, 11, 1), D1)  # a window that reaches D1: reported (with warnings)
        with pytest.raises(OutsideDataError) as refused:
            check_inside_data(con, date(2026, 11, 1), date(2026, 11, 1))
        assert str(refused.value) == ("2026-11-01 is outside the data (2026-11-10 … 2026-11-11): "
                                      "no source has a record that day to report on")
    finally:
        con.close()


def test_alert_daily_does_not_count_unobserved_days_as_quiet(warehouse: Path) -> None:
    con = connect(warehouse, read_only=True)
    try:
        rows = con.sql("SELECT day, notifications, deliveries, alerts FROM marts.alert_daily ORDER BY day").fetchall()
    finally:
        con.close()
    assert rows[0] == (date(2026, 9, 1), None, None, 1)  # the alert started then; nothing was received then
    assert len(rows) == 72  # 2026-09-01 … 2026-11-11
    before = [r for r in rows if r[0] < D1]
    assert len(before) == 70 and all(r[1] is None and r[2] is None for r in before)
    assert [r for r in rows if r[0] >= D1] == [(D1, 1, 1, 0), (D2, 1, 1, 1)]


def test_the_cli_refuses_a_night_and_a_window_outside_the_data(warehouse: Path, tmp_path: Path) -> None:
    night = _gpusre("report", "nightly", "--warehouse", str(warehouse), "--out", str(tmp_path / "n"),
                    "--date", "2026-11-01")
    assert night.returncode == 1
    assert night.stderr == ("gpusre: error: 2026-11-01 is outside the data (2026-11-10 … 2026-11-11): "
                            "no source has a record that day to report on\n")
    slo = _gpusre("report", "slo", "--warehouse", str(warehouse), "--out", str(tmp_path / "s"),
                  "--from", "2027-01-01", "--to", "2027-01-31")
    assert slo.returncode == 1
    assert slo.stderr == ("gpusre: error: 2027-01-01 … 2027-01-31 is outside the data (2026-11-10 … 2026-11-11): "
                          "no source has a record in that window to report on\n")
    assert not (tmp_path / "n").exists() and not (tmp_path / "s").exists()
    # a window that overlaps the data in part is still reviewed (its coverage warnings say the rest)
    part = _gpusre("report", "slo", "--warehouse", str(warehouse), "--out", str(tmp_path / "p"),
                   "--from", "2026-11-11", "--to", "2026-12-10")
    assert part.returncode == 0, part.stderr
    assert (tmp_path / "p" / "slo-2026-11-11_2026-12-10.md").is_file()
