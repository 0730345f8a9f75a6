"""A "not a failure" operator row marks each tool incident it overlaps; it folds none together (outside
probe Y, 2026-12-05).

The probe's incidents.csv row ``fp-2`` (component ``none``, "IB cable swap test") covers ``h200-[017-018]``
10:50 .. 11:30; h200-017's link flapped at 11:00 and h200-018's at 11:20 (two node incidents: two nodes, no
leaf, 20 min apart). The row folded them into ONE incident (nodes [h200-017, h200-018], repaired 0.342 h
from the first flap to the second). Rule 6 (models/failures/hw_incidents.py): a not-a-failure row marks each
incident it overlaps — its class ``not_a_failure`` — and each keeps its own row, nodes, scope and times. An
operator row with a real component still folds what it overlaps (the operator says it is one fault).

Hand-computed: each flap is DOWN hh:mm:00, ACTIVE hh:mm:30: two rows, each 30 s long (0.008 h to repair).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest

from gpusre.models.failures import hw_incidents
from gpusre.models.failures.hw_incidents import incident_id, merge_incidents, not_a_failure_events
from gpusre.models.vocabulary import NOT_A_FAILURE, is_failure_incident
from tests.hand_landing import query_rows, run_hand_landing

UTC = timezone.utc
M = timedelta(minutes=1)


def t(h: int, m: int = 0, s: int = 0) -> datetime:
    """2026-12-01 h:m:s UTC (the probe's day)."""
    return datetime(2026, 12, 1, h, m, s, tzinfo=UTC)


LINK_DOWN = ("ib_link_down", None, "network", "hardware", "high", "CHECK_LINK")
#: Two flaps: h200-017 at 11:00, h200-018 at 11:20.
EVENTS = pl.DataFrame([
    {"event_id": i, "ts": at, "node": node, "kind": LINK_DOWN[0], "code": None, "gpu_pci": None,
     "component": LINK_DOWN[2], "cause_class": LINK_DOWN[3], "severity": LINK_DOWN[4], "action": LINK_DOWN[5]}
    for i, at, node in [(1, t(11), "h200-017"), (2, t(11, 20), "h200-018")]], schema=hw_incidents.EVENT_SCHEMA)


def operator(component: str) -> pl.DataFrame:
    return pl.DataFrame([("fp-2", t(10, 50), t(11, 30), component, "IB cable swap test", "h200-[017-018]",
                          "two flaps during cable swap")], orient="row", schema=hw_incidents.OPERATOR_SCHEMA)


def test_each_overlapped_incident_keeps_its_own_marked_row() -> None:
    incidents, members = merge_incidents(EVENTS, operator=operator(NOT_A_FAILURE))
    assert incidents.select("incident_id", "component", "component_class", "cause_class", "nodes", "scope",
                            "start_ts", "end_ts", "n_events", "operator_id", "label_source", "root_cause").rows() == [
        (incident_id("network", t(11), "h200-017"), *(NOT_A_FAILURE,) * 3, ["h200-017"], "node", t(11), t(11), 1,
         "fp-2", "operator", "IB cable swap test"),
        (incident_id("network", t(11, 20), "h200-018"), *(NOT_A_FAILURE,) * 3, ["h200-018"], "node", t(11, 20),
         t(11, 20), 1, "fp-2", "operator", "IB cable swap test")]
    assert members.sort("event_id").rows() == [(1, incidents["incident_id"][0]), (2, incidents["incident_id"][1])]
    assert incidents.filter(is_failure_incident()).is_empty()
    assert sorted(not_a_failure_events(incidents, members)["event_id"].to_list()) == [1, 2]


def test_a_real_component_still_folds_what_it_overlaps() -> None:
    # The operator says both flaps were one faulty cable: one incident, the operator's span and nodes.
    incidents, members = merge_incidents(EVENTS, operator=operator("network"))
    row = incidents.row(0, named=True)
    assert incidents.height == 1
    assert (row["incident_id"], row["nodes"], row["start_ts"], row["end_ts"], row["n_events"], row["cause_class"]) == (
        incident_id("network", t(11), "h200-017"), ["h200-017", "h200-018"], t(10, 50), t(11, 30), 2, "hardware")
    assert sorted(members["event_id"].to_list()) == [1, 2]


# -- the probe's shape through the pipeline ----------------------------------------------------------------------

_SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
                 "Elapsed|Timelimit|NNodes|NCPUS|ReqTRES|AllocTRES|NodeList|Comment")
_TRES = "billing=96,cpu=96,gres/gpu=8,mem=512G,node=1"


def _log(node: str, extra: list[str]) -> str:
    cron = [f"Dec  1 {h:02d}:17:01 {node} CRON[{2000 + h}]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)"
            for h in (0, 6, 12, 18, 23)]
    return "\n".join(sorted(cron + extra)) + "\n"


def _flap(node: str, hhmm: str, pci: str) -> list[str]:
    return [f"Dec  1 {hhmm}:00 {node} kernel: mlx5_core {pci} ibp26s0: Port: 1 Link DOWN",
            f"Dec  1 {hhmm}:30 {node} kernel: mlx5_core {pci} ibp26s0: Port: 1 Link ACTIVE"]


LANDING = {
    "cluster.yaml": 'cluster: tiny\ntimezone: UTC\nnodes: "h200-[017-018]"\ngpus_per_node: 8\n',
    "sacct/sacct_2026-12-01.psv": "\n".join([
        _SACCT_HEADER,
        "10|10|job-10|bob|1002|llm|llm|gpu|normal|COMPLETED|0:0|2026-12-01T00:30:00|2026-12-01T00:30:00|"
        f"2026-12-01T00:30:00|2026-12-01T23:30:00|23:00:00|24:00:00|1|96|{_TRES}|{_TRES}|h200-017|"]) + "\n",
    "incidents.csv": "id,start,end,component,root_cause,nodes,notes\n"
                     "fp-2,2026-12-01T10:50:00,2026-12-01T11:30:00,none,IB cable swap test,h200-[017-018],"
                     "two flaps during cable swap\n",
    "syslog/2026-12-01/h200-017.log": _log("h200-017", _flap("h200-017", "11:00", "0000:1a:00.0")),
    "syslog/2026-12-01/h200-018.log": _log("h200-018", _flap("h200-018", "11:20", "0000:1a:00.0")),
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("false_positive_each"), LANDING)


def test_pipeline_keeps_two_marked_rows(warehouse: Path) -> None:
    rows = query_rows(warehouse, "SELECT component_class, cause_class, nodes, scope, start_ts, operator_id "
                                 "FROM marts.hw_incidents ORDER BY start_ts")
    assert [(c, k, n, s, ts.astimezone(UTC), o) for c, k, n, s, ts, o in rows] == [
        (NOT_A_FAILURE, NOT_A_FAILURE, ["h200-017"], "node", t(11), "fp-2"),
        (NOT_A_FAILURE, NOT_A_FAILURE, ["h200-018"], "node", t(11, 20), "fp-2")]
    repairs = query_rows(warehouse, "SELECT nodes, round(hours_to_repair, 3) FROM marts.incident_repairs "
                                    "ORDER BY incident_start_ts")
    assert repairs == [(["h200-017"], 0.008), (["h200-018"], 0.008)]  # 30 s each, not 0.342 h
    assert query_rows(warehouse, "SELECT count(*) FROM marts.hw_incidents "
                                 "WHERE core.is_failure_incident(cause_class)") == [(0,)]
