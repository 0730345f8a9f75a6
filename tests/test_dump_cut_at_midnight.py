"""A Slurm accounting dump cut exactly at midnight does not invent a data day (outside probe AK, finding 1).

``sacct -S 2026-11-14T18:00 -E 2026-11-15T18:00`` on a cluster in America/Chicago (CST = UTC-6) is cut at
2026-11-16 00:00:00Z. Probe AK's dump listed a job still running at the cut::

    2041302|…|RUNNING|0:0|2026-11-15T13:57:00|…|2026-11-15T14:00:00|Unknown|04:00:00|…|gpu002|

Start 14:00 CST = 20:00Z, + Elapsed 04:00:00 = 2026-11-16 00:00:00Z: the moment the dump was cut, the end of the
interval it saw — the end of 11-15, as ``counted_end`` and ``marts.day_coverage`` already said. ``raw.record_days``
dated it 11-16, and the nightly opened with "This report is for 2026-11-15, not 2026-11-16, the last day with
data"; ``--date 2026-11-16`` rendered an empty day; the SLO review named job MTTF's whole record "2026-11-09 …
2026-11-16" beside MTBF's "… 2026-11-15".

Two conventions of the cut: the probe's (local time, End ``Unknown``, Elapsed to the cut) and ``sacct --truncate``
in UTC (End written as the cut itself, 2026-11-16T00:00:00). Hand values: records of 11-14 and 11-15 only, so the
data's days are 11-14 … 11-15, the report day is 11-15 with no "later data" note, and the job-MTTF span is
"whole record 2026-11-14 … 2026-11-15". An *instant* at midnight (a node-log line at 00:00:00, a job submitted
at 00:00:00 and still pending) is the new day's.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import duckdb
import pytest
from hand_landing import run_hand_landing

from gpusre.models.accounting_span import counted_end
from gpusre.models.ingest.record_days import refresh_record_days
from gpusre.models.warehouse import apply_ddl, connect
from gpusre.pipelines.cli import main
from gpusre.reports.nightly import build_nightly_context
from gpusre.reports.nightly.meta import data_days, later_data_note, nightly_report_day
from gpusre.reports.slo.sections import mttf
from gpusre.reports.slo.sections.mttf import whole_record_text
from gpusre.reports.slo.window import SloWindow

UTC = timezone.utc
D14, D15, D16 = date(2026, 11, 14), date(2026, 11, 15), date(2026, 11, 16)
CUT = datetime(2026, 11, 16, tzinfo=UTC)

HEADER = "JobID|State|ExitCode|Submit|Start|End|Elapsed|AllocTRES|NNodes|NodeList\n"
#: America/Chicago, the probe's convention: a job running at the cut has End Unknown and Elapsed to the cut.
LOCAL = {
    "sacct/sacct_2026-11-14.psv": HEADER
    + "3001|COMPLETED|0:0|2026-11-13T18:10:00|2026-11-13T18:15:00|2026-11-14T17:00:00|22:45:00|gres/gpu=8|1|gpu01\n",
    "sacct/sacct_2026-11-15.psv": HEADER
    + "3002|COMPLETED|0:0|2026-11-14T18:05:00|2026-11-14T18:10:00|2026-11-15T15:15:09|21:05:09|gres/gpu=8|1|gpu01\n"
    # the probe's line 2041302, its columns cut to this header: 14:00 CST + 04:00:00 = 2026-11-16 00:00:00Z
    + "2041302|RUNNING|0:0|2026-11-15T13:57:00|2026-11-15T14:00:00|Unknown|04:00:00|gres/gpu=8|1|gpu02\n",
}
#: UTC and ``sacct --truncate``: the job's End is written as the cut.
TRUNCATE = {
    "sacct/sacct_2026-11-14.psv": HEADER
    + "3001|COMPLETED|0:0|2026-11-14T00:10:00|2026-11-14T00:15:00|2026-11-14T23:00:00|22:45:00|gres/gpu=8|1|gpu01\n",
    "sacct/sacct_2026-11-15.psv": HEADER
    + "3002|COMPLETED|0:0|2026-11-15T00:05:00|2026-11-15T00:10:00|2026-11-15T21:15:09|21:05:09|gres/gpu=8|1|gpu01\n"
    + "2041302|RUNNING|0:0|2026-11-15T19:57:00|2026-11-15T20:00:00|2026-11-16T00:00:00|04:00:00|gres/gpu=8|1|gpu02\n",
}


def _logs(day: date, zone: str) -> dict[str, str]:
    """A line at the start and the end of ``day`` (UTC) on both nodes: the node logs cover it whole."""
    if zone == "UTC":
        first, last = f"{day}T00:00:01Z", f"{day}T23:59:59Z"
    else:  # CST: 18:00:01 the evening before .. 17:59:59
        first, last = f"{date.fromordinal(day.toordinal() - 1)}T18:00:01-06:00", f"{day}T17:59:59-06:00"
    return {f"syslog/{day}/{n}.log": f"{first} {n} CRON[1]: (root) CMD (run-parts)\n"
                                      f"{last} {n} CRON[2]: (root) CMD (run-parts)\n" for n in ("gpu01", "gpu02")}


def _landing(sacct: dict[str, str], zone: str) -> dict[str, str]:
    return {"cluster.yaml": f"cluster: t\ntimezone: {zone}\nnodes: \"gpu[01-02]\"\ngpus_per_node: 8\n",
            **sacct, **_logs(D14, zone), **_logs(D15, zone)}


@pytest.fixture(scope="module", params=[(LOCAL, "America/Chicago"), (TRUNCATE, "UTC")], ids=["local", "truncate"])
def warehouse(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    sacct, zone = request.param
    return run_hand_landing(tmp_path_factory.mktemp("cut"), _landing(sacct, zone))


def test_the_cut_is_the_end_of_the_day_before(warehouse: Path) -> None:
    con = connect(warehouse, read_only=True)
    try:
        # the running job's record time is the cut; it counts on 11-15, the day it closes
        assert con.sql("SELECT max(last_ts), max(day) FROM raw.record_days WHERE source_kind = 'sacct'").fetchall() \
            == [(CUT, D15)]
        assert counted_end(CUT) == CUT  # the one rule: nothing of 11-16 is data
        assert data_days(con) == (D14, D15)
        assert nightly_report_day(con) == D15
        assert later_data_note(con, D15) == []
        assert con.sql("SELECT days_with_records, empty_days FROM marts.data_freshness WHERE source_kind = 'sacct'"
                       ).fetchall() == [(2, [])]
        ctx = build_nightly_context(con)  # the default day
        assert ctx["meta"]["report_date"] == "2026-11-15"
        assert not [w for w in ctx["warnings"] if "2026-11-16" in w or "last day with data" in w]
        # the job-MTTF (and expected-ETTR) span is the data's: 11-14 … 11-15, as MTBF's label names it
        assert whole_record_text(con) == "whole record 2026-11-14 … 2026-11-15"
        sec = mttf.build(con, SloWindow(D14, D15, datetime(2026, 11, 16, 6, tzinfo=UTC), "t"))
        assert sec.lead.startswith("Over the whole record 2026-11-14 … 2026-11-15 (the job MTTF marts")
        # its job count holds 2041302, still running at the cut: the table says it counts started jobs
        (table,) = sec.tables[:1]
        assert [r[1].text for r in table.rows] == ["3"]  # 3001, 3002, 2041302: 8 GPUs each
        assert table.caption.startswith("Jobs, instances: every GPU job (and run) that started, those still "
                                        "running at the end of the data included")
    finally:
        con.close()


def test_a_nightly_for_the_day_after_the_cut_is_refused(warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["report", "nightly", "--warehouse", str(warehouse), "--out", str(warehouse.parent / "r16"),
               "--date", str(D16)])
    assert rc != 0
    assert "2026-11-16 is outside the data (" in capsys.readouterr().err
    assert not (warehouse.parent / "r16" / "nightly-2026-11-16.md").exists()


@pytest.fixture
def bare(tmp_path: Path):  # noqa: ANN201 - DuckDB connection
    c = duckdb.connect(str(tmp_path / "w.duckdb"))
    c.execute("SET TimeZone = 'UTC'")
    apply_ddl(c)
    yield c
    c.close()


def _t(day: int, h: int = 0, m: int = 0) -> datetime:
    return datetime(2026, 11, day, h, m, tzinfo=UTC)


def test_only_an_end_at_midnight_belongs_to_the_day_before(bare: duckdb.DuckDBPyConnection) -> None:
    rows = [  # job_id, submit, start, end, elapsed_s -> record time, its day
        ("1", _t(15, 19, 57), _t(15, 20), None, 14400),      # running at the cut: 16 00:00 -> 11-15
        ("2", _t(15, 1), _t(15, 2), _t(16), 79200),          # ended at exactly midnight -> 11-15
        ("3", _t(16), None, None, None),                     # submitted at midnight, pending: an instant -> 11-16
        ("4", _t(15, 23, 50), _t(16), _t(16), 0),            # cancelled as it started at midnight: an instant -> 11-16
        ("5", _t(15, 9), _t(15, 10), _t(15, 21, 15), 40500),  # an ordinary end -> 11-15
    ]
    bare.executemany("INSERT INTO lake.sacct_records (source_file, line_no, record_type, job_id, submit_ts, start_ts, "
                     "end_ts, elapsed_s) VALUES ('sacct/s.psv', ?, 'allocation', ?, ?, ?, ?, ?)",
                     [(i + 2, *r) for i, r in enumerate(rows)])
    # node-log lines are instants: one at 00:00:00 is the new day's
    bare.executemany("INSERT INTO lake.syslog_lines (source_file, line_no, ts, node) VALUES ('l.log', ?, ?, 'gpu01')",
                     [(1, _t(15, 23, 59)), (2, _t(16))])
    refresh_record_days(bare)
    got = bare.sql("SELECT source_kind, day, records, first_ts, last_ts FROM raw.record_days "
                   "ORDER BY source_kind, day").fetchall()
    assert got == [("sacct", D15, 3, _t(15, 21, 15), _t(16)), ("sacct", D16, 2, _t(16), _t(16)),
                   ("syslog", D15, 1, _t(15, 23, 59), _t(15, 23, 59)), ("syslog", D16, 1, _t(16), _t(16))]


def test_doctests() -> None:
    import doctest

    from gpusre.models import accounting_span
    assert doctest.testmod(accounting_span).failed == 0
