"""Landing files deleted after they were loaded, and incidents.csv in the run's figures.

The lake is the archive: a deleted file's rows stay, but the ledger (``gone_since``), the run
summary and the nightly "Data quality" section say so. Hand-computed on a landing of two sacct
dumps (job 1001 in ``a.psv``, a wrong cluster's job 77001 — 64 GPUs, NODE_FAIL — in ``wrong.psv``)
and an incidents.csv of 1 good and 1 bad row:

- run 1: 2 jobs; incidents.csv loaded (1 incident, 1 rejected): the run counts 1 record rejected,
  marts.ingestion_by_source '(all)' 3 files (2 dumps + incidents.csv) and 1 row rejected, as raw.rejects
  holds (the report says "1 rows rejected" and "1 rejected rows and 0 whole-file refusals");
- run 2, ``wrong.psv`` deleted: still 2 jobs (rows kept), ``gone_files == ['sacct/wrong.psv']``, the
  summary line and the report name it, ``files_gone`` 1 for sacct;
- run 3, ``wrong.psv`` back as its header alone: present again, job 77001 retracted (1 job);
- run 4, incidents.csv saved as UTF-16: refused in one line among the run's refused files.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from gpusre.models.ingest.ledger import FileIngest, LandingStats, gone_files, mark_gone, record_files
from gpusre.models.warehouse import connect
from gpusre.pipelines.runner import gone_line, run_pipeline

HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
          "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment\n")
JOB_1001 = ("1001|1001|pretrain-a|alice|1001|alice|research|gpu|normal|COMPLETED|0:0|2026-11-02T01:00:00|"
            "2026-11-02T01:00:00|2026-11-02T01:00:00|2026-11-02T05:00:00|04:00:00|08:00:00|2|224|"
            "billing=224,cpu=224,gres/gpu:h100=16,mem=4000G,node=2|gpu[001-002]|\n")
JOB_77001 = ("77001|77001|big|mallory|1009|mallory|other|gpu|normal|NODE_FAIL|0:0|2026-11-02T06:00:00|"
             "2026-11-02T06:00:00|2026-11-02T06:00:00|2026-11-02T08:00:00|02:00:00|04:00:00|8|896|"
             "billing=896,cpu=896,gres/gpu:h100=64,mem=16000G,node=8|gpu[001-008]|\n")
INCIDENTS = ("id,start,end,component,root_cause,nodes,notes\n"
             "OPS-1,2026-11-02T06:00:00,2026-11-02T08:00:00,GPU,baseboard,gpu003,\n"
             "OPS-2,2026-11-02T99:00,2026-11-02T10:00,GPU,bad row,gpu001,\n")


def _jobs(wh: Path) -> list[str]:
    con = duckdb.connect(str(wh.with_suffix(".snapshot.duckdb")), read_only=True)
    try:
        return [j for (j,) in con.execute("SELECT job_id FROM core.jobs ORDER BY job_id").fetchall()]
    finally:
        con.close()


def _by_source(wh: Path) -> dict[str, tuple[int, int, int]]:
    con = duckdb.connect(str(wh.with_suffix(".snapshot.duckdb")), read_only=True)
    try:
        rows = con.execute("SELECT source_kind, files, rows_rejected, files_gone FROM marts.ingestion_by_source").fetchall()
        return {kind: (files, rejected, gone) for kind, files, rejected, gone in rows}
    finally:
        con.close()


def test_mark_gone_and_back(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    for name in ("a.psv", "b.psv"):
        (landing / "sacct" / name).write_text(HEADER + JOB_1001)
    os.symlink(landing / "nowhere", landing / "sacct" / "dangling.psv")  # cannot be stat'ed, but is there
    con = connect(tmp_path / "wh" / "gpusre.duckdb")
    try:
        record_files(con, "sacct", [(FileIngest(f"sacct/{n}", "loaded", 2, 2), "ab", 10)
                                    for n in ("a.psv", "b.psv", "dangling.psv")])
        stats = LandingStats(0, {"sacct/a.psv": (1, 1)}, landing)  # b.psv stat'ed or not: it is listed
        assert mark_gone(con, "sacct", stats) == []
        (landing / "sacct" / "b.psv").unlink()
        assert mark_gone(con, "sacct", stats) == ["sacct/b.psv"]
        first = con.execute("SELECT gone_since FROM raw.ingested_files WHERE source_file = 'sacct/b.psv'").fetchall()
        assert mark_gone(con, "sacct", stats) == []  # already gone: its time is the first run that missed it
        assert con.execute("SELECT gone_since FROM raw.ingested_files "
                           "WHERE source_file = 'sacct/b.psv'").fetchall() == first
        assert gone_files(con) == ["sacct/b.psv"]
        # Without a landing root nothing is judged (no name can be checked).
        assert mark_gone(con, "sacct", LandingStats(0, {})) == []
        (landing / "sacct" / "b.psv").write_text(HEADER)
        mark_gone(con, "sacct", stats)
        assert gone_files(con) == []
    finally:
        con.close()


def test_gone_line_names_the_first_few() -> None:
    assert gone_line(["sacct/x.psv"]) == ("1 landing file(s) loaded earlier are gone from the landing directory; "
                                          "their rows stay (the lake is the archive): sacct/x.psv")
    assert gone_line([f"f{i}" for i in range(5)]).endswith(": f0, f1, f2, ...")


def test_deleted_dump_keeps_its_rows_visibly_and_an_empty_one_retracts_them(tmp_path: Path) -> None:
    landing, wh, reports = tmp_path / "landing", tmp_path / "wh" / "gpusre.duckdb", tmp_path / "reports"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "a.psv").write_text(HEADER + JOB_1001)
    (landing / "sacct" / "wrong.psv").write_text(HEADER + JOB_77001)
    (landing / "incidents.csv").write_text(INCIDENTS)
    lines: list[str] = []

    # Run 1: incidents.csv is a ledger file; its bad row counts in the run and in the marts.
    summary = run_pipeline(landing, wh, reports, progress=lines.append)
    assert _jobs(wh) == ["1001", "77001"]
    assert summary.incidents is not None
    assert (summary.incidents.status, summary.incidents.rows_loaded, summary.incidents.rows_rejected) == ("loaded", 1, 1)
    assert summary.rows_rejected == 1 and summary.files_refused == [] and summary.gone_files == []
    assert "      incidents: incidents.csv new/changed, loaded; 1 operator incident(s) loaded, 1 rejected" in lines
    by_source = _by_source(wh)
    assert by_source["incidents"] == (1, 1, 0) and by_source["(all)"] == (3, 1, 0)
    assert by_source["(last day)"][1] == 1  # the headline's "Rejects, last ingestion"
    md = summary.report_markdown.read_text()
    assert "1 rows rejected" in md and "1 rejected rows and 0 whole-file refusals" in md

    # Run 2: the wrong dump is deleted. Its job stays (the lake is the archive), and every reader is told.
    (landing / "sacct" / "wrong.psv").unlink()
    lines.clear()
    summary = run_pipeline(landing, wh, reports, progress=lines.append)
    assert _jobs(wh) == ["1001", "77001"]
    assert summary.gone_files == ["sacct/wrong.psv"]
    assert ("      1 landing file(s) loaded earlier are gone from the landing directory; their rows stay "
            "(the lake is the archive): sacct/wrong.psv") in lines
    assert summary.incidents is not None and summary.incidents.status == "unchanged" and summary.rows_rejected == 0
    assert _by_source(wh)["sacct"] == (2, 0, 1)
    md = summary.report_markdown.read_text()
    assert ("1 landing file loaded earlier is gone from the landing directory; its rows stay (the lake is the "
            "archive) and count in this report: sacct/wrong.psv") in md

    # Run 3: the dump back as its header alone gives up the job's rows; the file is present again.
    (landing / "sacct" / "wrong.psv").write_text(HEADER)
    summary = run_pipeline(landing, wh, reports)
    assert _jobs(wh) == ["1001"] and summary.gone_files == []
    assert _by_source(wh)["sacct"] == (2, 0, 0)

    # Run 4: an unreadable incidents.csv is refused in one line, like any landing file.
    (landing / "incidents.csv").write_bytes(INCIDENTS.encode("utf-16"))
    summary = run_pipeline(landing, wh, reports)
    assert summary.files_refused == ["incidents.csv: UTF-16 encoded: convert to UTF-8"]
    assert summary.incidents is not None and summary.incidents.status == "refused"
