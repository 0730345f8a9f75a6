"""A ``|`` inside a free-text field of ``sacct -P`` output (Slurm does not escape it): hand-written
dumps, hand-computed values.

* The header has one column of user-typed text (SubmitLine, JobName...): the extra fields are that
  column's pieces, rejoined with ``|``; every other field keeps its place, the record loads.
* Two or more such columns (JobName, SubmitLine, Comment: a full dump; probe_v landing job 1053):
  each column is tried with all the extra fields. The record loads when one try types (every
  other field has its form: stamps incl. ``Unknown``, durations, ``CANCELLED by N``, TRES,
  hostlists), or several that read the other fields alike (text columns side by side), the text
  then going to SubmitLine, Comment, ..., JobName last. Tries that read other fields differently,
  or none that types, reject the record with a reason naming the columns.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from gpusre.assets.core_jobs import core_jobs
from gpusre.assets.ingest_sacct import raw_sacct, sacct_rows_reconcile
from gpusre.models.sources.sacct.parse import parse_sacct_text
from gpusre.models.warehouse import connect
from gpusre.pipelines.resources import default_resources

#: SubmitLine is the one free-text column, in the middle: NodeList and AllocTRES come after it.
ONE = "JobID|State|Start|End|Elapsed|SubmitLine|NodeList|AllocTRES"
RUN = "2026-11-29T06:00:00|2026-11-29T07:00:00|01:00:00"  # 1 h
ONE_DUMP = (
    f"{ONE}\n"
    f"1053|COMPLETED|{RUN}|sbatch --wrap=\"python gen.py | tee out.log\"|gpu01|cpu=128,gres/gpu=8,node=1\n"
    f"1054|COMPLETED|{RUN}|sbatch --wrap=\"a | b | c\"|gpu[02-03]|cpu=256,gres/gpu=16,node=2\n"
    f"1055|FAILED|{RUN}|sbatch x.sh|gpu04|cpu=64,gres/gpu=4,node=1\n"
)


def test_pipe_in_the_only_free_text_column_is_rejoined_and_the_record_loads() -> None:
    r = parse_sacct_text(ONE_DUMP, "sacct/a.psv")
    assert r.rejects.is_empty() and r.rows_read == 3
    rows = r.records.select("line_no", "job_id", "state", "elapsed_s", "n_gpus", "nodes").rows()
    assert rows == [(2, "1053", "COMPLETED", 3600, 8, ["gpu01"]),
                    (3, "1054", "COMPLETED", 3600, 16, ["gpu02", "gpu03"]),
                    (4, "1055", "FAILED", 3600, 4, ["gpu04"])]
    # The line is kept as printed.
    assert r.records.item(0, "raw_line").count("|") == 8


def test_pipe_in_job_name_with_parsable_trailing_delimiter() -> None:
    """``--parsable`` (every line ends with ``|``): the trailing one is no field, the name keeps its ``|``."""
    text = ("JobID|JobName|State|Elapsed|AllocTRES|\n"
            "7|a|b|COMPLETED|02:00:00|gres/gpu=2|\n"
            "8|ok|COMPLETED|02:00:00|gres/gpu=1|\n")
    r = parse_sacct_text(text, "sacct/p.psv")
    assert r.rejects.is_empty()
    assert r.records.select("job_id", "name", "state", "elapsed_s", "n_gpus").rows() == [
        ("7", "a|b", "COMPLETED", 7200, 2), ("8", "ok", "COMPLETED", 7200, 1)]


def test_unterminated_last_line_with_pipe_in_its_trailing_free_text_loads() -> None:
    """A last line without a line break whose last field is free text is whole (a cut changes no
    number): its ``|`` is rejoined like any other line's."""
    text = "JobID|State|Elapsed|AllocTRES|JobName\n9|COMPLETED|00:30:00|gres/gpu=8|x | y"
    r = parse_sacct_text(text, "sacct/c.psv")
    assert r.rejects.is_empty()
    assert r.records.select("job_id", "n_gpus", "elapsed_s", "name").rows() == [("9", 8, 1800, "x | y")]


#: A full dump's shape: JobName, SubmitLine and Comment apart, numbers between them.
FULL = "JobID|JobName|State|Start|End|Elapsed|SubmitLine|NodeList|AllocTRES|Comment"
FULL_DUMP = (
    f"{FULL}\n"
    f"1053|gen|COMPLETED|{RUN}|sbatch --wrap=\"python gen.py | tee out.log\"|gpu01|cpu=128,gres/gpu=8,node=1|\n"
    f"1054|gen|CANCELLED by 1000|{RUN}|sbatch --wrap=\"a | b | c\"|gpu[02-03]|cpu=256,gres/gpu=16,node=2|\n"
    f"1055|train|v2|FAILED|{RUN}|sbatch x.sh|gpu04|cpu=64,gres/gpu=4,node=1|\n"
    "1056|j|RUNNING|2026-11-29T06:00:00|Unknown|01:00:00|a | b|gpu05|gres/gpu=2|\n"
    f"1057|j|COMPLETED|{RUN}|sbatch x.sh|gpu06|gres/gpu=1|tag a|b\n"
    f"1058|j|COMPLETED|{RUN}|sbatch x.sh|gpu07|gres/gpu=1|\n"
)


def test_pipe_in_one_of_several_free_text_columns_goes_where_the_record_types() -> None:
    """Each line's ``|`` fits one column only: in JobName the State would be a piece of the name,
    in Comment NodeList/AllocTRES would be text (``gpu01`` as TRES, `` tee out.log"`` as a host)."""
    r = parse_sacct_text(FULL_DUMP, "sacct/f.psv")
    assert r.rejects.is_empty() and r.rows_read == 6
    rows = r.records.select("job_id", "name", "state", "cancelled_by", "end_ts", "elapsed_s", "n_gpus", "nodes",
                            "comment").rows()
    end = datetime(2026, 11, 29, 7, tzinfo=UTC)
    assert rows == [
        ("1053", "gen", "COMPLETED", None, end, 3600, 8, ["gpu01"], None),  # SubmitLine holds the pipe
        ("1054", "gen", "CANCELLED", 1000, end, 3600, 16, ["gpu02", "gpu03"], None),
        ("1055", "train|v2", "FAILED", None, end, 3600, 4, ["gpu04"], None),  # the name rejoined
        ("1056", "j", "RUNNING", None, None, 3600, 2, ["gpu05"], None),  # End Unknown: still a valid field
        ("1057", "j", "COMPLETED", None, end, 3600, 1, ["gpu06"], "tag a|b"),
        ("1058", "j", "COMPLETED", None, end, 3600, 1, ["gpu07"], None),
    ]
    assert r.records.item(0, "raw_line").count("|") == 10  # kept as printed: 9 delimiters, 1 in the text


def test_pipe_next_to_other_text_columns_loads_and_goes_to_the_likeliest_column() -> None:
    """Text columns side by side: every try reads the numbers alike, so the record loads; the text
    goes to SubmitLine before Comment, Comment before JobName."""
    text = ("JobID|JobName|Comment|SubmitLine|State|Elapsed|NodeList|AllocTRES\n"
            "2001|train|note|sbatch --wrap=\"python gen.py | tee out.log\"|COMPLETED|01:00:00|gpu01|"
            "cpu=128,gres/gpu=8,node=1\n")
    r = parse_sacct_text(text, "sacct/adj.psv")
    assert r.rejects.is_empty()
    assert r.records.select("job_id", "name", "comment", "state", "elapsed_s", "n_gpus", "nodes").rows() == [
        ("2001", "train", "note", "COMPLETED", 3600, 8, ["gpu01"])]
    name_comment = parse_sacct_text("JobID|JobName|Comment|State|Elapsed|AllocTRES\n"
                                    "2002|a|b|c|COMPLETED|00:30:00|gres/gpu=4\n", "sacct/nc.psv")
    assert name_comment.rejects.is_empty()
    assert name_comment.records.select("name", "comment", "elapsed_s", "n_gpus").rows() == [("a", "b|c", 1800, 4)]


def _outcome(text: str) -> tuple[list[str], list[tuple[int, str]]]:
    """(JobIDs loaded, (line, reason) per reject) of a dump."""
    r = parse_sacct_text(text, "sacct/t.psv")
    return r.records["job_id"].to_list(), r.rejects.select("line_no", "error").rows()


def test_pipe_that_fits_two_columns_with_different_fields_or_none_is_rejected_naming_them() -> None:
    """Line 2: in JobName the Account is 'x', in Comment it is 'proj' (an account is any word): both
    type, the record cannot be told. Line 3: the extra field is no text ('extra' in Elapsed or
    State whichever column takes it)."""
    text = ("JobID|JobName|Account|Comment|State|Elapsed|AllocTRES\n"
            "5|a|proj|x|y|COMPLETED|01:00:00|gres/gpu=8\n"
            "6|j|proj|c|COMPLETED|extra|01:00:00|gres/gpu=8\n"
            "7|j|proj|c|COMPLETED|01:00:00|gres/gpu=8\n")
    told = "cannot be told apart from the delimiter"
    redump = "re-dump with --delimiter set to a string no field holds"
    assert _outcome(text) == (["7"], [
        (2, f"expected 7 fields, got 8: a '|' inside a free-text field (JobName, Comment) {told} (it fits JobName "
            f"or Comment, with other fields read differently); {redump}"),
        (3, f"expected 7 fields, got 8: a '|' inside a free-text field (JobName, Comment) {told}; {redump}"),
    ])


def test_fields_without_their_form_reject_the_record() -> None:
    """NodeList and TRES read any text (any name is a host, no GPU entry is 0 GPUs): their form is
    checked, which is also what tells a misplaced piece of text."""
    text = ("JobID|State|Elapsed|NodeList|AllocTRES\n"
            "1|COMPLETED|01:00:00|tee out.log|gres/gpu=8\n"
            "2|COMPLETED|01:00:00|gpu01|gpu01\n"
            "3|PENDING|00:00:00|None assigned|\n")
    assert _outcome(text) == (["3"], [(2, "malformed NodeList 'tee out.log'"), (3, "malformed AllocTRES 'gpu01'")])


def test_unterminated_last_line_with_pipe_and_several_text_columns_loads() -> None:
    text = "JobID|SubmitLine|State|Elapsed|AllocTRES|JobName\n9|sbatch x.sh|COMPLETED|00:30:00|gres/gpu=8|x | y"
    r = parse_sacct_text(text, "sacct/c2.psv")
    assert r.rejects.is_empty()
    assert r.records.select("job_id", "n_gpus", "elapsed_s", "name").rows() == [("9", 8, 1800, "x | y")]


def test_extra_field_without_free_text_column_and_short_lines_keep_the_field_count_reason() -> None:
    no_text = parse_sacct_text("JobID|State|AllocTRES\n1|COMPLETED|gres/gpu=8|x\n", "sacct/n.psv")
    assert no_text.records.is_empty()
    assert no_text.rejects.select("line_no", "error").rows() == [(2, "expected 3 fields, got 4")]
    short = parse_sacct_text(f"{ONE}\n1056|COMPLETED|{RUN}|gpu01\n", "sacct/s.psv")
    assert short.rejects.select("line_no", "error").rows() == [(2, "expected 8 fields, got 6")]


def test_rejoined_record_that_still_does_not_type_is_rejected_saying_so() -> None:
    """The extra field was no ``|`` in SubmitLine (a shifted State): rejoined, the record's State is
    not a state; the reason says the fields were rejoined."""
    text = f"{ONE}\n1057|COMPLETED|extra|{RUN}|sbatch x.sh|gpu01|gres/gpu=8\n"
    r = parse_sacct_text(text, "sacct/b.psv")
    assert r.records.is_empty()
    (error,) = r.rejects["error"].to_list()
    assert error.startswith("expected 8 fields, got 9 (the extra ones rejoined into SubmitLine as text holding '|'): ")
    assert "malformed Start timestamp 'extra'" in error


def test_pipe_in_submit_line_counts_in_core_jobs(tmp_path: Path) -> None:
    """Through the pipeline: 1053 (8 GPUs x 1 h = 8 GPU-h), 1054 (16 x 1 = 16) and 1055 (4 x 1 = 4)
    load, and from the dump with JobName and SubmitLine 1058 (8 x 2 h = 16 GPU-h), its ``|`` in
    SubmitLine; its line 3, whose extra field fits no text column, is the only reject."""
    landing, wh = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text("cluster: t\ntimezone: UTC\nnodes: 'gpu[01-04]'\ngpus_per_node: 8\n")
    (landing / "sacct" / "sacct_2026-11-29.psv").write_text(ONE_DUMP)
    (landing / "sacct" / "sacct_2026-11-30.psv").write_text(
        "JobID|JobName|State|Start|End|Elapsed|AllocTRES|SubmitLine\n"
        "1058|j|COMPLETED|2026-11-30T00:00:00|2026-11-30T02:00:00|02:00:00|gres/gpu=8|sbatch --wrap=\"a | b\"\n"
        "1059|j|COMPLETED|extra|2026-11-30T00:00:00|2026-11-30T02:00:00|02:00:00|gres/gpu=8|sbatch x.sh\n")
    result = dg.materialize([raw_sacct, core_jobs, sacct_rows_reconcile],
                            resources=default_resources(str(wh), str(landing), str(tmp_path / "rep")))
    assert result.success
    con = connect(wh, read_only=True)
    try:
        jobs = con.sql("SELECT job_id, n_gpus, gpu_hours FROM core.jobs ORDER BY job_id").fetchall()
        rejects = con.sql("SELECT source_file, line_no FROM raw.rejects").fetchall()
    finally:
        con.close()
    assert jobs == [("1053", 8, 8.0), ("1054", 16, 16.0), ("1055", 4, 4.0), ("1058", 8, 16.0)]
    assert rejects == [("sacct/sacct_2026-11-30.psv", 3)]
