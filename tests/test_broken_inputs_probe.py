"""Hand-written broken inputs from the outside probe M (2026-12-05): every bad record or file is a
reject with file, line and reason, and every good record still loads.

1. a sacct dump cut while written (last line without a line break, ``gres/gpu=16`` left as
   ``gres/gpu=1``) loaded a 1-GPU job; 2. a short incidents.csv row (no ``nodes`` field) became a
   cluster-wide incident; 3. an incident on a node outside cluster.yaml was accepted; 4. a node log
   with 4 KB of NULs after a crash was refused as UTF-16; 5. a cluster.yaml syntax error had no
   line; 6. a second sacct header with another field list rejected every record under it; 7. an
   empty sacct dump was refused (exit 1) while an empty alert dump loaded.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models.ingest.landing_files import (CUT_LAST_LINE, LandingRead, encoding_fault, read_landing_file,
                                                unterminated_last_line)
from gpusre.models.sources.incidents.parse import parse_operator_incidents
from gpusre.models.sources.sacct.parse import parse_sacct_text
from gpusre.models.sources.slurm_events.parse import parse_slurm_events_text
from gpusre.pipelines.config import ClusterConfigError, parse_cluster_config
from gpusre.pipelines.runner import run_pipeline

HEADER = "JobID|JobName|User|State|ExitCode|Submit|Start|End|Elapsed|NodeList|AllocTRES"
T = "2026-11-21T15:00:00|2026-11-21T15:00:00|2026-11-21T17:00:00|02:00:00"
JOB_16 = f"3001|big|zed|COMPLETED|0:0|{T}|gpu[1-2]|billing=28,cpu=28,gres/gpu=16,node=2"
INCIDENTS_HEADER = "id,start,end,component,root_cause,nodes,notes"


def _read(data: bytes) -> LandingRead:
    return LandingRead(data, "sha", len(data))


# ------------------------------------------------------------------ 1. a dump cut while written


def test_unterminated_last_line_is_numbered_and_nul_padding_is_no_line() -> None:
    assert unterminated_last_line(b"a\nb") == 2
    assert unterminated_last_line(b"a\nb\n") is None
    assert unterminated_last_line(b"a\n" + b"\x00" * 64) is None  # a crash in a preallocated file
    assert unterminated_last_line(b"") is None and unterminated_last_line("x") == 1


def test_sacct_last_line_cut_inside_its_tres_is_rejected_not_a_one_gpu_job() -> None:
    cut = f"3002|big|zed|COMPLETED|0:0|{T}|gpu[3-4]|billing=28,cpu=28,gres/gpu=1"
    r = parse_sacct_text("\n".join([HEADER, JOB_16, cut]), "sacct/t01.psv")
    assert r.records.select("job_id", "n_gpus").rows() == [("3001", 16)]
    assert r.rejects.select("line_no", "raw", "error").rows() == [(3, cut, CUT_LAST_LINE)]
    assert r.rows_read == 2
    # A cut that also loses fields says the same (not "expected 11 fields, got 8").
    r = parse_sacct_text(f"{HEADER}\n{JOB_16}\n3002|big|zed|COMPLETED|0:0|2026-11-21T15:00:00|2026", "s.psv")
    assert r.rejects["error"].to_list() == [CUT_LAST_LINE]


@pytest.mark.parametrize("text", [
    # the last field is free text: a cut there changes no number (the node-log rule for messages)
    "JobID|State|AllocTRES|JobName\n1|COMPLETED|gres/gpu=8|train\n2|COMPLETED|gres/gpu=8|eval",
    # --parsable: the trailing delimiter closes the last field
    "JobID|State|AllocTRES|\n1|COMPLETED|gres/gpu=8|\n2|COMPLETED|gres/gpu=8|",
    # a final comment line without a break is no record either way
    "JobID|State|AllocTRES\n1|COMPLETED|gres/gpu=8\n2|COMPLETED|gres/gpu=8\n# end",
])
def test_sacct_whole_last_line_without_its_break_loads(text: str) -> None:
    r = parse_sacct_text(text, "s.psv")
    assert r.rejects.is_empty() and r.records["n_gpus"].to_list() == [8, 8]


def test_sacctmgr_last_line_cut_is_rejected_whole_one_with_a_reason_loads() -> None:
    head = "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User"
    first = "c|gpu1|2026-11-20T10:00:00|2026-11-20T11:00:00|DRAIN|bad gpu|root(0)"
    r = parse_slurm_events_text(f"{head}\n{first}\nc|gpu2|2026-11-20T10:00:00|2026-11-20T11:00:00|DRAIN|x|roo",
                                "slurm_events/e.txt")
    assert r.records["node_name"].to_list() == ["gpu1"]
    assert r.rejects.select("line_no", "error").rows() == [(3, CUT_LAST_LINE)]
    # Reason last (free text): a whole line lacking only its break loads.
    r = parse_slurm_events_text("NodeName|TimeStart|TimeEnd|State|Reason\n"
                                "gpu1|2026-11-20T10:00:00|2026-11-20T11:00:00|DRAIN|bad gpu", "slurm_events/e.txt")
    assert r.rejects.is_empty() and r.records["reason"].to_list() == ["bad gpu"]


def test_incidents_last_row_cut_in_nodes_is_rejected_one_ending_in_notes_loads() -> None:
    head = "id,start,end,component,root_cause,nodes"
    incidents, rejects = parse_operator_incidents(_read(
        f"{head}\nOPS-1,2026-11-20T10:00:00Z,2026-11-20T11:00:00Z,gpu,x,gpu1\n"
        "OPS-2,2026-11-20T12:00:00Z,2026-11-20T13:00:00Z,gpu,y,gpu1".encode()))
    assert incidents["id"].to_list() == ["OPS-1"]
    assert rejects.select("line_no", "error").rows() == [(3, CUT_LAST_LINE)]
    incidents, rejects = parse_operator_incidents(_read(
        f"{INCIDENTS_HEADER}\nOPS-1,2026-11-20T10:00:00Z,2026-11-20T11:00:00Z,gpu,x,gpu1,RMA opened".encode()))
    assert rejects.is_empty() and incidents["notes"].to_list() == ["RMA opened"]


# ------------------------------------------------------------- 2./3. incidents.csv rows


def test_short_incident_row_is_rejected_not_a_cluster_wide_incident() -> None:
    text = (f"{INCIDENTS_HEADER}\n"
            "OPS-1,2026-11-20T11:58:00Z,2026-11-21T08:00:00Z,gpu,fell off bus,gpu5,RMA\n"
            "OPS-2,2026-11-21T01:00:00Z,2026-11-21T02:00:00Z,network,gpu3\n"
            "OPS-3,2026-11-21T03:00:00Z,2026-11-21T04:00:00Z,network,core switch,,whole cluster\n"
            "OPS-5,2026-11-21T05:00:00Z,2026-11-21T06:00:00Z,gpu,x,gpu1,a,b\n")
    incidents, rejects = parse_operator_incidents(_read(text.encode()))
    assert incidents.select("id", "nodes").rows() == [("OPS-1", "gpu5"), ("OPS-3", None)]  # empty field = cluster
    assert rejects.select("line_no", "raw", "error").rows() == [
        (3, "OPS-2,2026-11-21T01:00:00Z,2026-11-21T02:00:00Z,network,gpu3", "expected 7 fields, got 5"),
        (5, "OPS-5,2026-11-21T05:00:00Z,2026-11-21T06:00:00Z,gpu,x,gpu1,a,b", "expected 7 fields, got 8"),
    ]


def test_incident_on_a_node_outside_cluster_yaml_is_rejected() -> None:
    text = (f"{INCIDENTS_HEADER}\n"
            "OPS-1,2026-11-20T11:58:00Z,2026-11-21T08:00:00Z,gpu,a,gpu5,\n"
            "OPS-4,2026-11-21T03:00:00Z,2026-11-21T04:00:00Z,gpu,b,gpu99,\n"
            "OPS-6,2026-11-21T03:00:00Z,2026-11-21T04:00:00Z,gpu,c,\"gpu[7-10]\",\n"
            "OPS-7,2026-11-21T03:00:00Z,2026-11-21T04:00:00Z,network,d,,\n")
    nodes = [f"gpu{i}" for i in range(1, 9)]
    incidents, rejects = parse_operator_incidents(_read(text.encode()), cluster_nodes=nodes)
    assert incidents["id"].to_list() == ["OPS-1", "OPS-7"]
    assert rejects.select("line_no", "error").rows() == [
        (3, "node(s) not in cluster.yaml nodes: gpu99"), (4, "node(s) not in cluster.yaml nodes: gpu9, gpu10")]
    # Without a node list (cluster.yaml gives a count, or none) nothing can be checked: it loads.
    incidents, rejects = parse_operator_incidents(_read(text.encode()))
    assert incidents.height == 4 and rejects.is_empty()


def test_an_empty_incidents_csv_has_no_incidents_and_no_reject() -> None:
    # Found by the fuzz (was "not a readable CSV", refused): an empty list is the operator's word too.
    for data in (b"", b"\n", b"\xef\xbb\xbf"):
        incidents, rejects = parse_operator_incidents(_read(data))
        assert incidents.is_empty() and rejects.is_empty()


# --------------------------------------------------------------- 4. NULs are not UTF-16


def test_a_nul_block_after_a_crash_is_not_utf16() -> None:
    line = b"2026-11-21T16:59:00+00:00 gpu6 systemd[1]: Started Session 7.\n"
    assert encoding_fault(line + b"\x00" * 4096 + line) is None
    assert encoding_fault(b"\x00" * 4096) is None
    assert encoding_fault("JobID|State\n1|COMPLETED\n".encode("utf-16-le")) == "UTF-16 encoded: convert to UTF-8"
    assert encoding_fault("JobID|State\n".encode("utf-16-be")) == "UTF-16 encoded: convert to UTF-8"


# ------------------------------------------------------------------- 5. YAML error mark


def test_yaml_syntax_error_names_line_and_column_in_one_line() -> None:
    with pytest.raises(ClusterConfigError) as err:
        parse_cluster_config('cluster: a\nnodes: "gpu[1-8]"\n  gpus_per_node: 8\n')
    assert str(err.value) == ("cluster.yaml: not valid YAML: line 3, column 3: expected <block end>, but found "
                              "'<block mapping start>' (while parsing a block mapping)")
    with pytest.raises(ClusterConfigError) as err:
        parse_cluster_config("cluster: a\nnodes: gpu[1-8]\n  timezone: UTC\n")
    assert str(err.value) == "cluster.yaml: not valid YAML: line 3, column 11: mapping values are not allowed here"


# ----------------------------------------------------------------- 6. a second header


def test_second_header_with_other_fields_reads_the_records_under_it() -> None:
    text = ("JobID|State|AllocTRES\n1|COMPLETED|gres/gpu=8\n"
            "JobID|State|AllocTRES\n2|COMPLETED|gres/gpu=4\n"      # the same header again: skipped
            "State|JobID|NodeList|AllocTRES\nFAILED|3|gpu1|gres/gpu=2\n"
            "JobID|Elapsed\n4|01:00:00\n")                          # a header without State: its lines rejected
    r = parse_sacct_text(text, "s.psv")
    assert r.records.select("line_no", "job_id", "state", "n_gpus").rows() == [
        (2, "1", "COMPLETED", 8), (4, "2", "COMPLETED", 4), (6, "3", "FAILED", 2)]
    assert r.rejects["line_no"].to_list() == [7, 8]
    assert r.rejects["error"][0].startswith("under a second header with another field list (two dumps concatenated?)")
    assert "lack required State column" in r.rejects["error"][0]


# ------------------------------------------------------------------ end to end, one night


def test_broken_night_end_to_end(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    files: dict[str, bytes] = {
        "cluster.yaml": b"cluster: probe\nnodes: gpu[1-4]\ngpus_per_node: 8\ntimezone: UTC\n",
        # NNodes in every header: a dump without it leaves core.jobs.n_nodes NULL (see the report).
        "sacct/a_cut.psv": "\n".join([
            f"NNodes|{HEADER}", f"2|{JOB_16}",
            f"2|3002|big|zed|COMPLETED|0:0|{T}|gpu[3-4]|billing=28,cpu=28,gres/gpu=1"]).encode(),
        "sacct/b_concat.psv": (f"NNodes|{HEADER}\n1|3011|a|zed|COMPLETED|0:0|{T}|gpu1|gres/gpu=8\n"
                               "User|JobID|State|Start|End|NNodes|NodeList|AllocTRES\n"
                               "zed|3012|FAILED|2026-11-21T15:00:00|2026-11-21T16:00:00|1|gpu2|gres/gpu=4\n").encode(),
        "sacct/c_empty.psv": b"",
        "alerts/empty.jsonl": b"",
        "syslog/2026-11-21/gpu3.log": (b"2026-11-21T16:59:00+00:00 gpu3 systemd[1]: Started Session 7.\n"
                                       + b"\x00" * 4096 + b"2026-11-21T17:10:00+00:00 gpu3 kernel: NVRM: Xid "
                                       b"(PCI:0000:3b:00): 79, pid=777, name=python, GPU has fallen off the bus.\n"),
        "incidents.csv": (f"{INCIDENTS_HEADER}\n"
                          "OPS-1,2026-11-21T17:09:00Z,2026-11-21T20:00:00Z,gpu,fell off bus,gpu3,RMA\n"
                          "OPS-2,2026-11-21T01:00:00Z,2026-11-21T02:00:00Z,network,gpu3\n").encode(),
    }
    for name, data in files.items():
        (landing / name).parent.mkdir(parents=True, exist_ok=True)
        (landing / name).write_bytes(data)
    wh = tmp_path / "wh" / "gpusre.duckdb"
    summary = run_pipeline(landing, wh, tmp_path / "reports")
    assert summary.files_refused == []  # exit 0: nothing refused (an empty dump is no error)
    con = duckdb.connect(str(wh), read_only=True)
    try:
        jobs = dict(con.sql("SELECT job_id, n_gpus FROM core.jobs").fetchall())
        rejects = con.sql("SELECT source_file, line_no, error FROM raw.rejects ORDER BY ALL").fetchall()
        ledger = {f: (s, n, e) for f, s, n, e in con.sql(
            "SELECT source_file, status, rows_loaded, error FROM raw.ingested_files").fetchall()}
        xids = con.sql("SELECT count(*) FROM raw.syslog_lines WHERE message LIKE '%Xid%79%'").fetchall()[0][0]
        operator = pl.from_arrow(con.sql("SELECT operator_id, scope FROM marts.hw_incidents "
                                         "WHERE operator_id IS NOT NULL").arrow())
    finally:
        con.close()
    assert jobs == {"3001": 16, "3011": 8, "3012": 4}
    assert rejects == [("incidents.csv", 3, "expected 7 fields, got 5"), ("sacct/a_cut.psv", 3, CUT_LAST_LINE)]
    assert ledger["sacct/a_cut.psv"] == ("loaded", 1, None)
    assert ledger["sacct/b_concat.psv"] == ("loaded", 2, None)
    assert ledger["sacct/c_empty.psv"] == ("loaded", 0, None)
    assert ledger["alerts/empty.jsonl"] == ("loaded", 0, None)
    assert ledger["syslog/2026-11-21/gpu3.log"] == ("loaded", 2, None)
    assert xids == 1
    assert operator.rows() == [("OPS-1", "node")]  # OPS-2 is no cluster-wide incident
    assert read_landing_file(landing / "syslog/2026-11-21/gpu3.log").fault is None


def test_an_empty_file_loads_with_no_rows_in_every_source(tmp_path: Path) -> None:
    """One rule for empty landing files (outside probe M: a 0-byte sacct dump was refused and failed the
    night while a 0-byte alerts file loaded): `loaded`, no rows, no reject, in every source."""
    assert parse_slurm_events_text("", "slurm_events/e.txt").records.height == 0
    landing = tmp_path / "landing"
    for rel in ("sacct/sacct_2026-11-20.psv", "slurm_events/events_2026-11-20.txt", "alerts/am-2026-11-20.jsonl",
                "syslog/2026-11-20/gpu1.log"):
        (landing / rel).parent.mkdir(parents=True, exist_ok=True)
        (landing / rel).write_bytes(b"")
    (landing / "cluster.yaml").write_text('cluster: t\ntimezone: UTC\nnodes: "gpu[1-8]"\n')
    wh = tmp_path / "w.duckdb"
    run_pipeline(landing, wh, tmp_path / "reports")
    con = duckdb.connect(str(wh.with_name("w.snapshot.duckdb")), read_only=True)
    try:
        rows = con.sql("SELECT source_kind, status, rows_read FROM raw.ingested_files ORDER BY source_kind").fetchall()
        assert con.sql("SELECT count(*) FROM raw.rejects").fetchall() == [(0,)]
    finally:
        con.close()
    assert rows == [("alerts", "loaded", 0), ("sacct", "loaded", 0), ("slurm_events", "loaded", 0),
                    ("syslog", "loaded", 0)]
