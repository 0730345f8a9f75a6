"""A header naming a field twice (probe AQ F5; hand-written dumps, hand-computed values).

``sacct --format=JobID,State,...,State`` prints the repeated field twice with the same value, so a dump
whose copies agree loads (the first copy read); a record whose copies differ was edited by hand and is
rejected naming the field and both values — never a silent pick. Only the same name is a repeat: an
alias is another field (``NNodes`` is the requested node count, ``AllocNodes`` 0 while pending).
"""

from __future__ import annotations

from pathlib import Path

from gpusre.models.ingest.reconcile import mismatched_files
from gpusre.models.sources.sacct.parse import parse_sacct_text
from gpusre.models.warehouse import connect
from tests.sacct_nights import materialize_sacct

TRES = "billing=128,cpu=128,gres/gpu:h100=8,gres/gpu=8,mem=2000G,node=1"
#: the probe's file (line 2) and a record whose copies agree (line 3)
DUPCOL = (
    "JobID|State|Start|End|Elapsed|NNodes|AllocTRES|NodeList|State\n"
    f"2002|COMPLETED|2026-11-11T13:00:00|2026-11-11T14:00:00|01:00:00|1|{TRES}|gpu10|FAILED\n"
    f"2003|COMPLETED|2026-11-11T13:00:00|2026-11-11T14:00:00|01:00:00|1|{TRES}|gpu10|COMPLETED\n"
)


def test_copies_that_differ_reject_the_record_naming_the_field() -> None:
    r = parse_sacct_text(DUPCOL, "sacct/dupcol.psv")
    assert r.records.select("job_id", "state", "line_no").rows() == [("2003", "COMPLETED", 3)]
    assert r.rejects.select("line_no").to_series().to_list() == [2]
    error = r.rejects.item(0, "error")
    assert error.startswith("the header names State twice (fields 2 and 9) and this record's copies differ "
                            "('COMPLETED' and 'FAILED')")
    assert r.rows_read == 2


def test_another_spelling_a_lower_case_repeat_of_start() -> None:
    """`start` repeated in another case, last field, with --parsable's trailing delimiter."""
    text = ("JobID|State|Start|End|Elapsed|NNodes|AllocTRES|NodeList|start|\n"
            f"7|COMPLETED|2026-11-11T13:00:00|2026-11-11T14:00:00|01:00:00|1|{TRES}|gpu10|2026-11-11T12:00:00|\n"
            f"8|COMPLETED|2026-11-11T13:00:00|2026-11-11T14:00:00|01:00:00|1|{TRES}|gpu10|2026-11-11T13:00:00|\n")
    r = parse_sacct_text(text, "sacct/d.psv")
    assert r.records.select("job_id", "line_no").rows() == [("8", 3)]
    assert r.rejects.select("line_no").to_series().to_list() == [2]
    assert "names start twice (fields 3 and 9)" in r.rejects.item(0, "error")
    assert "('2026-11-11T13:00:00' and '2026-11-11T12:00:00')" in r.rejects.item(0, "error")


def test_an_alias_is_no_repeat() -> None:
    """A pending job: NNodes 2 (requested), AllocNodes 0 -> loads, no reject (NNodes, the first, read)."""
    text = ("JobID|State|Submit|Start|End|Elapsed|NNodes|AllocNodes|AllocTRES|NodeList\n"
            "9|PENDING|2026-11-11T13:00:00|Unknown|Unknown|00:00:00|2|0||None assigned\n")
    r = parse_sacct_text(text, "sacct/p.psv")
    assert r.rejects.is_empty()
    assert r.records.select("job_id", "n_nodes").rows() == [("9", 2)]


def test_the_ledger_counts_the_reject(tmp_path: Path) -> None:
    """Through the real materialization: 2 read, 1 loaded, 1 rejected; core.jobs has 2003 only (8 GPU-h)."""
    landing, wh = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text("cluster: t\ntimezone: UTC\nnodes: 'gpu[01-16]'\ngpus_per_node: 8\n")
    (landing / "sacct" / "dupcol_2026-11-11.psv").write_text(DUPCOL)
    materialize_sacct(landing, wh)
    con = connect(wh, read_only=True)
    try:
        ledger = con.sql("SELECT rows_read, rows_loaded, rows_rejected FROM raw.ingested_files").fetchall()
        jobs = con.sql("SELECT job_id, state, gpu_hours FROM core.jobs").fetchall()
        rejects = con.sql("SELECT line_no FROM raw.rejects").fetchall()
        assert mismatched_files(con, "sacct", "sacct_records") == []
    finally:
        con.close()
    assert ledger == [(2, 1, 1)]
    assert jobs == [("2003", "COMPLETED", 8.0)]
    assert rejects == [(2,)]
