"""A ``|`` inside a free-text field of ``sacct -P`` output (Slurm does not escape it): hand-written
dumps, hand-computed values.

* The header has one column of user-typed text (SubmitLine, JobName...): the extra fields are that
  column's pieces, rejoined with ``|``; every other field keeps its place, the record loads.
* Two or more such columns: which one held the ``|`` cannot be told; the record is rejected with a
  reason naming the columns (probe_v landing job 1053: JobName, SubmitLine, Comment).
"""

from __future__ import annotations

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


def test_pipe_with_two_free_text_columns_is_rejected_naming_them() -> None:
    text = ("JobID|JobName|State|Elapsed|AllocTRES|SubmitLine|Comment\n"
            "1|j|COMPLETED|01:00:00|gres/gpu=8|sbatch --wrap=\"a | b\"|\n"
            "2|j|COMPLETED|01:00:00|gres/gpu=8|sbatch x.sh|\n")
    r = parse_sacct_text(text, "sacct/m.psv")
    assert r.records["job_id"].to_list() == ["2"]
    assert r.rejects.select("line_no", "error").rows() == [
        (2, "expected 7 fields, got 8: a '|' inside a free-text field (JobName, SubmitLine, Comment) cannot be "
            "told apart from the delimiter; re-dump with --delimiter set to a string no field holds")]


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
    load, 28 GPU-h in all; the two-column dump's pipe line is the only reject."""
    landing, wh = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text("cluster: t\ntimezone: UTC\nnodes: 'gpu[01-04]'\ngpus_per_node: 8\n")
    (landing / "sacct" / "sacct_2026-11-29.psv").write_text(ONE_DUMP)
    (landing / "sacct" / "sacct_2026-11-30.psv").write_text(
        "JobID|JobName|State|Start|End|Elapsed|AllocTRES|SubmitLine\n"
        "1058|j|COMPLETED|2026-11-30T00:00:00|2026-11-30T02:00:00|02:00:00|gres/gpu=8|sbatch --wrap=\"a | b\"\n")
    result = dg.materialize([raw_sacct, core_jobs, sacct_rows_reconcile],
                            resources=default_resources(str(wh), str(landing), str(tmp_path / "rep")))
    assert result.success
    con = connect(wh, read_only=True)
    try:
        jobs = con.sql("SELECT job_id, n_gpus, gpu_hours FROM core.jobs ORDER BY job_id").fetchall()
        rejects = con.sql("SELECT source_file, line_no FROM raw.rejects").fetchall()
    finally:
        con.close()
    assert jobs == [("1053", 8, 8.0), ("1054", 16, 16.0), ("1055", 4, 4.0)]
    assert rejects == [("sacct/sacct_2026-11-30.psv", 2)]
