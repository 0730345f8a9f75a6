"""Tests for gpusre.models.sources.sacct.parse against real sacct output (tests/fixtures/sacct) and edge cases."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import polars as pl
import pytest

from gpusre.models.sources.sacct.parse import (
    REJECT_SCHEMA,
    SACCT_RECORD_SCHEMA,
    SLURM_STATES,
    SacctFormatError,
    SacctParseResult,
    parse_sacct_file,
    parse_sacct_json,
    parse_sacct_text,
    read_sacct_text,
    type_sacct_dumps,
)

REPO = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures" / "sacct"
XDMOD_FIELDS = (FIX / "xdmod" / "field_order.txt").read_text().strip().splitlines()[-1].split(",")
REPORTSEFF_FIELDS = (
    "AdminComment,AllocCPUS,Elapsed,JobID,JobIDRaw,MaxRSS,NNodes,NTasks,REQMEM,State,Timelimit,TotalCPU"
).split(",")
UTC = dt.UTC


def _check_result(r: SacctParseResult) -> None:
    assert r.records.schema == pl.Schema(SACCT_RECORD_SCHEMA)
    assert r.rejects.schema == pl.Schema(REJECT_SCHEMA)
    assert r.rows_read == len(r.records) + len(r.rejects)


def _epoch(ts: dt.datetime | None) -> int | None:
    return None if ts is None else int(ts.timestamp())


def _row(r: SacctParseResult, **match: object) -> dict:
    df = r.records.filter(*(pl.col(k) == v for k, v in match.items()))
    assert len(df) == 1, f"{match} matched {len(df)} rows"
    return df.row(0, named=True)


# ----------------------------------------------------------------------------- schema


def test_schema_matches_ddl_column_order() -> None:
    ddl = (REPO / "sql" / "ddl" / "010_raw.sql").read_text()
    body = ddl.split("CREATE TABLE IF NOT EXISTS lake.sacct_records (", 1)[1].split(");", 1)[0]
    cols = [m.group(1) for m in re.finditer(r'^\s+"?([a-z_]+)"?\s+[A-Z]', body, re.M)]
    assert cols == list(SACCT_RECORD_SCHEMA)
    ddl_types = {
        m.group(1): m.group(2)
        for m in re.finditer(r'^\s+"?([a-z_]+)"?\s+([A-Z]+(?:\[\])?)', body, re.M)
    }
    expected = {
        "VARCHAR": pl.String(), "BIGINT": pl.Int64(), "INTEGER": pl.Int32(),
        "BIGINT[]": pl.List(pl.Int64), "VARCHAR[]": pl.List(pl.String),
        "TIMESTAMPTZ": pl.Datetime("us", "UTC"),
    }
    assert {k: expected[v] for k, v in ddl_types.items()} == SACCT_RECORD_SCHEMA


def test_module_doctests() -> None:
    import doctest

    from gpusre.models.sources.sacct import parse as sacct

    result = doctest.testmod(sacct)
    assert result.attempted >= 2 and result.failed == 0


def test_slurm_states_cover_base_states_and_flags() -> None:
    for s in ("COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "CANCELLED",
              "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REQUEUED", "REQUEUE_HOLD", "RESIZING",
              "SPECIAL_EXIT", "RESV_DEL_HOLD", "REVOKED", "STAGE_OUT", "SIGNALING", "STOPPED"):
        assert s in SLURM_STATES
    assert "FOO" not in SLURM_STATES and "OUT_OF_ME+" not in SLURM_STATES


# ----------------------------------------------------------------------------- XDMoD fixtures


def test_xdmod_accounting_logs_match_xdmod_expected_output() -> None:
    r = parse_sacct_file(FIX / "xdmod" / "accounting-logs.log", "xdmod/a.log", fields=XDMOD_FIELDS)
    _check_result(r)
    expected = json.loads((FIX / "xdmod" / "expected_output_accounting-logs.json").read_text())
    assert len(r.records) == len(expected) == 4 and r.rejects.is_empty()
    for got, exp in zip(r.records.iter_rows(named=True), expected, strict=True):
        assert got["record_type"] == "allocation"
        assert got["job_id"] == exp["job_id"] and got["job_id_raw"] == exp["job_id_raw"]
        assert got["array_task_id"] is None and got["array_job_id"] is None
        assert got["cluster"] == "ub-hpc"
        assert (got["partition"] or "") == exp["partition_name"]
        assert got["qos"] == exp["qos_name"] and got["account"] == exp["account_name"]
        assert got["group"] == exp["group_name"] and got["user"] == exp["user_name"]
        assert got["uid"] == int(exp["uid_number"])
        assert _epoch(got["submit_ts"]) == exp["submit_time"]
        assert _epoch(got["eligible_ts"]) == exp["eligible_time"]
        assert _epoch(got["start_ts"]) == exp["start_time"]
        assert _epoch(got["end_ts"]) == exp["end_time"]
        assert got["elapsed_s"] == exp["elapsed"]
        assert got["timelimit_s"] == exp["timelimit"]
        assert f"{got['exit_code']}:{got['exit_signal']}" == exp["exit_code"]
        assert got["state_raw"] == exp["state"]
        assert got["state"] == exp["state"].split(" by ")[0]
        assert got["n_nodes"] == int(exp["nnodes"]) and got["n_cpus"] == int(exp["ncpus"])
        assert got["n_gpus"] == exp["ngpus"]
        assert got["nodelist"] == exp["node_list"]
        assert got["name"] == exp["job_name"]
    first = r.records.row(0, named=True)
    assert len(first["nodes"]) == 32 == first["n_nodes"]
    assert first["nodes"][:2] == ["d07n07s02", "d07n19s02"]
    assert first["nodes"][-5:] == ["d13n03", "d13n05", "d13n07", "d13n08", "d13n16"]
    cancelled = _row(r, job_id="4107166")
    assert (cancelled["state"], cancelled["cancelled_by"]) == ("CANCELLED", 102216)


def test_xdmod_job_arrays_match_expected_indices() -> None:
    r = parse_sacct_file(
        FIX / "xdmod" / "accounting-logs-with-job-arrays.log", "xdmod/arr.log", fields=XDMOD_FIELDS
    )
    _check_result(r)
    expected = json.loads(
        (FIX / "xdmod" / "expected_output_accounting-logs-with-job-arrays.json").read_text()
    )
    assert r.records["array_task_ids"].to_list() == expected
    assert r.records["array_job_id"].to_list() == [4103947] * 6
    assert r.records["array_task_id"].to_list() == [100, None, None, None, None, None]
    assert r.records["job_id"].to_list()[:2] == ["4103947_100", "4103947_[1-3]"]


def test_xdmod_unknown_states_are_rejected_with_reason() -> None:
    r = parse_sacct_file(FIX / "xdmod" / "unknown-job-state.log", "u.log", fields=XDMOD_FIELDS)
    _check_result(r)
    assert r.records.is_empty()
    assert r.rejects["line_no"].to_list() == [1, 2]
    assert r.rejects["error"].to_list() == ["unknown Slurm state 'FOO'", "unknown Slurm state 'BAR'"]
    assert r.rejects["raw"][0].startswith("3451067|3451067|phillips|")


def test_unknown_state_lines_rejected_while_valid_lines_load() -> None:
    good = (FIX / "xdmod" / "non-ended-job-state.log").read_text().splitlines()
    bad = (FIX / "xdmod" / "unknown-job-state.log").read_text().splitlines()
    text = "\n".join([good[0], bad[0], good[1], bad[1]]) + "\n"
    r = parse_sacct_text(text, "mixed.log", fields=XDMOD_FIELDS)
    _check_result(r)
    assert r.records["state"].to_list() == ["RUNNING", "PENDING"]
    assert r.records["line_no"].to_list() == [1, 3]
    assert r.rejects["line_no"].to_list() == [2, 4]
    pending = _row(r, state="PENDING")
    assert pending["start_ts"] is None  # 'Unknown'
    assert pending["end_ts"] == dt.datetime(2020, 7, 1, 15, 28, 17, tzinfo=UTC)


def test_utf8_job_name_kept() -> None:
    r = parse_sacct_file(FIX / "xdmod" / "utf8-multibyte-chars.log", "u8.log", fields=XDMOD_FIELDS)
    _check_result(r)
    assert r.records["name"].to_list() == ["a\u00e0b"]
    assert r.records["n_cpus"].to_list() == [8]


def test_derived_header_file_equals_headerless_logs() -> None:
    r = parse_sacct_file(FIX / "derived" / "xdmod_accounting-logs_all_with_header.psv", "d.psv")
    _check_result(r)
    assert r.rows_read == 13 and r.rejects.is_empty()
    assert r.records["line_no"].to_list() == list(range(2, 15))  # header is line 1
    parts = [
        parse_sacct_file(FIX / "xdmod" / f, f, fields=XDMOD_FIELDS).records
        for f in ("accounting-logs.log", "accounting-logs-with-job-arrays.log",
                  "non-ended-job-state.log", "utf8-multibyte-chars.log")
    ]
    cols = [c for c in SACCT_RECORD_SCHEMA if c not in ("source_file", "line_no")]
    assert r.records.select(cols).equals(pl.concat(parts).select(cols))


# ----------------------------------------------------------------------------- other real dumps


def test_martius_lab_parsable2_steps() -> None:
    r = parse_sacct_file(
        FIX / "issue_pastes" / "martius-lab_cluster_utils_issue87_parsable2.psv", "m.psv",
        cluster="galvani",
    )
    _check_result(r)
    assert r.rows_read == 16 and r.rejects.is_empty()
    assert r.records["record_type"].value_counts().sort("record_type").rows() == [
        ("allocation", 4), ("step", 12)
    ]
    step0 = _row(r, job_id="239023", step_id="0")
    assert (step0["state"], step0["exit_code"], step0["exit_signal"]) == ("CANCELLED", 0, 10)
    assert step0["nodes"] == ["galvani-cn001"] and step0["cluster"] == "galvani"
    assert set(r.records["step_id"].drop_nulls()) == {"batch", "extern", "0"}
    # No AllocTRES/AllocGRES column: GPU count is unknown, not zero.
    assert r.records["n_gpus"].null_count() == 16


def test_fixed_width_pastes_refused() -> None:
    with pytest.raises(SacctFormatError, match=r"fixed-width sacct output; re-run sacct with -P/--parsable2"):
        parse_sacct_file(FIX / "issue_pastes" / "fixed_width_pastes.txt", "fw.txt")
    block = "\n".join(
        (FIX / "issue_pastes" / "fixed_width_pastes.txt").read_text().splitlines()[5:10]
    )
    assert block.startswith("       JobID")
    with pytest.raises(SacctFormatError, match="fixed-width"):
        parse_sacct_text(block, "fw2.txt")


def _reportseff_blocks() -> dict[str, str]:
    return json.loads((FIX / "reportseff" / "console_jobs_sacct_outputs.json").read_text())


@pytest.mark.parametrize("key", sorted(_reportseff_blocks()))
def test_reportseff_blocks_parse(key: str) -> None:
    text = _reportseff_blocks()[key]
    fields = [f for f in REPORTSEFF_FIELDS if not (key.endswith("_notime") and f == "Timelimit")]
    r = parse_sacct_text(text, f"rs/{key}", delimiter="^|^", fields=fields)
    _check_result(r)
    assert r.rejects.is_empty()
    assert r.rows_read == text.count("\n")
    alloc = r.records.filter(pl.col("record_type") == "allocation").row(0, named=True)
    assert alloc["job_id_raw"] == key.split("_")[0]
    if key == "24418435":
        assert alloc["timelimit_s"] == 3 * 3600 and alloc["elapsed_s"] == 5262
        assert r.records["timelimit_s"].to_list() == [10800, None, None]
    if key == "23000233":
        assert (alloc["state"], alloc["cancelled_by"]) == ("CANCELLED", 129319)
        assert alloc["timelimit_s"] == 6 * 86400 and alloc["n_cpus"] == 16
    if key == "24221219":
        assert (alloc["job_id"], alloc["array_job_id"], alloc["array_task_id"]) == (
            "24220929_421", 24220929, 421
        )
        batch = _row(r, step_id="batch")
        assert (batch["job_id"], batch["job_id_raw"]) == ("24220929_421", "24221219.batch")
    if key.endswith("_notime"):
        assert r.records["timelimit_s"].null_count() == len(r.records)


def test_reportseff_txt_with_comment_lines() -> None:
    """The concatenated txt: '###' lines are comments; the whole file is one field list per block."""
    text = (FIX / "reportseff" / "console_jobs_sacct_outputs.txt").read_text()
    r = parse_sacct_text(text, "rs.txt", delimiter="^|^", fields=REPORTSEFF_FIELDS)
    _check_result(r)
    assert r.rows_read == 22  # 30 lines minus 8 comment lines
    assert not any(raw.startswith("###") for raw in r.rejects["raw"])


@pytest.mark.parametrize(
    ("name", "state", "exit_code", "elapsed", "nodes"),
    [
        ("slurmdb-job-completed.json", "COMPLETED", 0, 60, ["cn3"]),
        ("slurmdb-job-failed.json", "FAILED", 1, 2, ["cn1"]),
        ("slurmdb-job-gpus-completed.json", "COMPLETED", 0, 31, ["gpu1"]),
        ("slurmdb-job-gpus-multi-nodes.json", "RUNNING", 0, 1, ["gpu1", "gpu2"]),
        ("slurmdb-job-timeout.json", "TIMEOUT", 0, 63, ["cn1"]),
    ],
)
def test_slurmrestd_json(name: str, state: str, exit_code: int, elapsed: int, nodes: list[str]) -> None:
    path = FIX / "slurmrestd_json_slurmweb" / name
    r = parse_sacct_file(path, f"json/{name}")
    _check_result(r)
    doc = json.loads(path.read_text())["jobs"][0]
    alloc = _row(r, record_type="allocation")
    assert alloc["job_id"] == str(doc["job_id"]) and alloc["line_no"] == 1
    assert (alloc["state"], alloc["exit_code"], alloc["elapsed_s"]) == (state, exit_code, elapsed)
    assert alloc["nodes"] == nodes and alloc["n_nodes"] == len(nodes)
    assert alloc["cluster"] == "hpc" and alloc["user"] == doc["user"]
    assert alloc["n_gpus"] == 0  # tres.allocated lists no gres/gpu in these captures
    assert _epoch(alloc["submit_ts"]) == doc["time"]["submission"]
    assert _epoch(alloc["start_ts"]) == doc["time"]["start"]
    assert _epoch(alloc["end_ts"]) == (doc["time"]["end"] or None)
    assert alloc["timelimit_s"] == doc["time"]["limit"]["number"] * 60
    assert json.loads(alloc["raw_line"])["job_id"] == doc["job_id"]
    step = _row(r, record_type="step")
    assert step["step_id"] == "batch" and step["job_id_raw"] == f"{doc['job_id']}.batch"
    assert step["line_no"] == 1 and step["job_id"] == alloc["job_id"]
    if name == "slurmdb-job-timeout.json":
        assert (step["state"], step["exit_signal"]) == ("CANCELLED", 15)
    if name == "slurmdb-job-gpus-multi-nodes.json":
        assert alloc["end_ts"] is None and step["nodes"] == ["gpu1"]


def test_json_variants_arrays_het_gpus_and_rejects() -> None:
    base = json.loads((FIX / "slurmrestd_json_slurmweb" / "slurmdb-job-completed.json").read_text())
    job = base["jobs"][0]
    arr = json.loads(json.dumps(job))
    arr["array"]["job_id"] = 4700
    arr["array"]["task_id"] = {"set": True, "infinite": False, "number": 3}
    arr["tres"]["allocated"].append({"type": "gres", "name": "gpu:h100", "id": 1001, "count": 4})
    het = json.loads(json.dumps(job))
    het["het"] = {"job_id": 4800, "job_offset": {"set": True, "infinite": False, "number": 1}}
    het["tres"]["allocated"].append({"type": "gres", "name": "gpu", "id": 1002, "count": 8})
    bad = json.loads(json.dumps(job))
    bad["state"]["current"] = ["FOO"]
    r = parse_sacct_json(json.dumps({"jobs": [arr, het, bad]}), "v.json", cluster="x")
    _check_result(r)
    a = _row(r, record_type="allocation", line_no=1)
    assert (a["job_id"], a["array_job_id"], a["array_task_ids"]) == ("4700_3", 4700, [3])
    assert (a["n_gpus"], a["gpu_type"]) == (4, "h100")
    h = _row(r, record_type="allocation", line_no=2)
    assert (h["job_id"], h["het_job_id"], h["het_job_offset"], h["n_gpus"]) == ("4800+1", 4800, 1, 8)
    assert r.rejects.rows() == [("v.json", 3, r.rejects["raw"][0], "unknown Slurm state 'FOO'")]
    with pytest.raises(SacctFormatError):
        parse_sacct_json("{}", "e.json")
    with pytest.raises(SacctFormatError):
        parse_sacct_json("not json", "e.json")
    empty = parse_sacct_json('{"jobs": []}', "e.json")
    assert empty.rows_read == 0 and empty.records.schema == pl.Schema(SACCT_RECORD_SCHEMA)


# ----------------------------------------------------------------------------- hand-written cases

HDR = "JobID|JobName|State|ExitCode|Start|End|Elapsed|Timelimit|NodeList|AllocTRES"


def test_parsable_trailing_delimiter_is_dropped() -> None:
    text = HDR + "|\n" + "7|train|COMPLETED|0:0|2024-01-01T00:00:00|2024-01-01T01:00:00|01:00:00|02:00:00|gpu[01-02]|cpu=16,gres/gpu=16,node=2|\n"
    r = parse_sacct_text(text, "p.psv")
    _check_result(r)
    row = r.records.row(0, named=True)
    assert row["n_gpus"] == 16 and row["nodes"] == ["gpu01", "gpu02"] and row["n_nodes"] == 2
    assert row["elapsed_s"] == 3600 and row["timelimit_s"] == 7200
    headerless = parse_sacct_text(text.split("\n", 1)[1], "p.psv", fields=HDR.split("|"))
    assert headerless.records["line_no"].to_list() == [1]
    assert headerless.records.drop("line_no").equals(r.records.drop("line_no"))


def test_extra_delimiter_in_job_name_is_rejoined_and_a_short_line_rejected_with_line_number() -> None:
    # JobName is HDR's one free-text column: a '|' in it is rejoined (tests/test_sacct_pipe_in_text.py).
    text = (
        HDR + "\n"
        "1|ok|COMPLETED|0:0|||00:01:00|UNLIMITED|n1|\n"
        "2|bad|name|FAILED|1:0|||00:01:00|UNLIMITED|n1|\n"
        "3|ok|FAILED|2:0|||00:01:00|Partition_Limit|None assigned|\n"
        "4|short|FAILED|1:0|||00:01:00|UNLIMITED|n1\n"
    )
    r = parse_sacct_text(text, "x.psv")
    _check_result(r)
    assert r.rejects.rows() == [("x.psv", 5, "4|short|FAILED|1:0|||00:01:00|UNLIMITED|n1", "expected 10 fields, got 9")]
    assert r.records["job_id"].to_list() == ["1", "2", "3"]
    assert r.records["name"].to_list() == ["ok", "bad|name", "ok"]
    assert r.records["timelimit_s"].to_list() == [None, None, None]
    assert r.records["nodes"].to_list() == [["n1"], ["n1"], []]
    assert r.records["nodelist"].to_list() == ["n1", "n1", "None assigned"]
    # AllocTRES column present but empty on every row: no allocation stated, unknown (not 0) GPUs
    assert r.records["n_gpus"].to_list() == [None, None, None]


def test_dumps_typed_together_equal_dumps_typed_alone() -> None:
    """The ingest types many small dumps in one pass; rows, rejects and line numbers must not change."""
    a = (HDR + "\n1|ok|COMPLETED|0:0|||00:01:00|UNLIMITED|n[1-2]|gres/gpu=8\n"
         "2|bad|name|FAILED|1:0|||00:01:00|UNLIMITED|n1|\n3|x|BOGUS|0:0|||00:01:00|UNLIMITED|n1|\n")
    b = (HDR.upper() + "\n\n4|ok|TIMEOUT|0:15|2024-03-01T00:00:00||01:00:00|01:00:00|n3|\n"
         "5|ok|FAILED|9:0|||00:00:05|UNLIMITED|n[3-x]|\n")
    together = type_sacct_dumps(
        [read_sacct_text(a.encode(), "a.psv"), read_sacct_text(b.encode(), "b.psv")], cluster="c"
    )
    _check_result(together)
    alone = [parse_sacct_text(text, name, cluster="c") for text, name in ((a, "a.psv"), (b, "b.psv"))]
    assert together.records.equals(pl.concat([r.records for r in alone]))
    assert together.rejects.equals(pl.concat([r.rejects for r in alone]))
    assert together.rows_read == sum(r.rows_read for r in alone) == 5
    # (a.psv line 3's '|' in JobName is rejoined: the record loads.)
    assert [(f, n) for f, n, *_ in together.rejects.rows()] == [("a.psv", 4), ("b.psv", 4)]


def test_stamps_with_a_space_for_the_t_load_like_the_t(tmp_path: Path) -> None:
    # A site's SLURM_TIME_FORMAT="%F %T" (and traces converted with pandas) print "2024-03-01 00:00:00".
    text = (FIX / "derived" / "xdmod_accounting-logs_all_with_header.psv").read_text()
    spaced = re.sub(r"(\d{4}-\d{2}-\d{2})T(\d{2}:)", r"\1 \2", text)
    assert spaced != text
    t, s = (parse_sacct_text(x, "m.psv", timezone="America/New_York") for x in (text, spaced))
    _check_result(s)
    assert s.rejects.is_empty() and s.records["start_ts"].null_count() == t.records["start_ts"].null_count()
    assert s.records.drop("raw_line").equals(t.records.drop("raw_line"))
    # Typed in one batch with a dump printed the default way, both load (the batch reads either form).
    together = type_sacct_dumps([read_sacct_text(text.encode(), "a.psv"), read_sacct_text(spaced.encode(), "b.psv")],
                                timezone="America/New_York")
    assert together.rejects.is_empty() and together.records.height == 2 * t.records.height
    assert together.records.filter(pl.col("source_file") == "b.psv")["start_ts"].equals(t.records["start_ts"])


def test_dumps_with_different_layouts_are_not_typed_together() -> None:
    one = read_sacct_text(b"JobID|State\n1|COMPLETED\n", "a.psv")
    two = read_sacct_text(b"JobID|State|\n1|COMPLETED|\n", "b.psv")  # same fields, --parsable
    assert one.present == two.present == {"jobid", "state"}
    with pytest.raises(ValueError, match="different layouts"):
        type_sacct_dumps([one, two])
    assert type_sacct_dumps([]).rows_read == 0


def test_crlf_blank_and_comment_lines() -> None:
    text = "\r\n# dump of 2024-01-01\r\njobid|STATE|exitcode\r\n\r\n5|TIMEOUT|0:0\r\n6|NODE_FAIL|0:0\r\n   \r\n7|OUT_OF_MEMORY|0:125\r\n"
    r = parse_sacct_text(text, "c.psv", cluster="demo")
    _check_result(r)
    assert r.rows_read == 3
    assert r.records["state"].to_list() == ["TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"]
    assert r.records["line_no"].to_list() == [5, 6, 8]
    assert r.records["raw_line"].to_list()[0] == "5|TIMEOUT|0:0"
    assert r.records["cluster"].to_list() == ["demo"] * 3
    assert r.records["exit_signal"].to_list() == [0, 0, 125]


def test_timezone_conversion_and_dst_edges() -> None:
    text = (
        "JobID|State|Submit|Start|End\n"
        "1|COMPLETED|2024-01-15T12:00:00|2024-07-15T12:00:00|Unknown\n"
        # 02:30 does not exist on 2021-03-14 in Chicago (spring forward): null, still loaded.
        "2|COMPLETED|2021-03-14T01:59:59|2021-03-14T02:30:00|2021-03-14T03:00:00\n"
        # 01:30 happens twice on 2021-11-07 (fall back): the earliest (CDT, UTC-5) is taken.
        "3|COMPLETED|2021-11-07T01:30:00|None|\n"
    )
    r = parse_sacct_text(text, "tz.psv", timezone="America/Chicago")
    _check_result(r)
    assert r.rejects.is_empty()
    one, two, three = r.records.iter_rows(named=True)
    assert one["submit_ts"] == dt.datetime(2024, 1, 15, 18, 0, tzinfo=UTC)  # CST
    assert one["start_ts"] == dt.datetime(2024, 7, 15, 17, 0, tzinfo=UTC)  # CDT
    assert one["end_ts"] is None
    assert two["submit_ts"] == dt.datetime(2021, 3, 14, 7, 59, 59, tzinfo=UTC)
    assert two["start_ts"] is None
    assert two["end_ts"] == dt.datetime(2021, 3, 14, 8, 0, tzinfo=UTC)
    assert three["submit_ts"] == dt.datetime(2021, 11, 7, 6, 30, tzinfo=UTC)
    assert three["start_ts"] is None and three["end_ts"] is None
    utc = parse_sacct_text(text, "tz.psv")
    assert utc.records["submit_ts"][0] == dt.datetime(2024, 1, 15, 12, 0, tzinfo=UTC)
    with pytest.raises(ValueError, match="timezone"):
        parse_sacct_text(text, "tz.psv", timezone="Mars/Olympus")


def test_states_cancelled_by_requeue_duplicates_and_het_steps() -> None:
    text = (
        "JobID|JobIDRaw|State|ExitCode|NodeList\n"
        "10|10|CANCELLED by 0|0:15|n[1-2]\n"
        "11|11|REQUEUED|0:0|n3\n"
        "11|11|COMPLETED|0:0|n4\n"
        "123+0|123|COMPLETED|0:0|n5\n"
        "123+1|124|FAILED|3:0|n6\n"
        "123+1.0|124.0|FAILED|3:0|n6\n"
        "123_4.0|130.0|COMPLETED|0:0|n7\n"
        "200_[1-100%4]|200|PENDING|0:0|None assigned\n"
        "300.interactive|300.interactive|RUNNING|0:0|n8\n"
        "301.0+1|301.0+1|RUNNING|0:0|n8\n"
    )
    r = parse_sacct_text(text, "s.psv")
    _check_result(r)
    assert r.rejects.is_empty()
    c = _row(r, job_id="10")
    assert (c["state"], c["cancelled_by"], c["state_raw"], c["exit_signal"]) == ("CANCELLED", 0, "CANCELLED by 0", 15)
    dup = r.records.filter(pl.col("job_id") == "11")
    assert dup["state"].to_list() == ["REQUEUED", "COMPLETED"] and dup["line_no"].to_list() == [3, 4]
    h0 = _row(r, job_id="123+0")
    assert (h0["het_job_id"], h0["het_job_offset"], h0["record_type"]) == (123, 0, "allocation")
    h1s = _row(r, job_id="123+1", record_type="step")
    assert (h1s["het_job_id"], h1s["het_job_offset"], h1s["step_id"], h1s["job_id_raw"]) == (123, 1, "0", "124.0")
    a = _row(r, job_id="123_4")
    assert (a["array_job_id"], a["array_task_id"], a["array_task_ids"], a["step_id"]) == (123, 4, [4], "0")
    p = _row(r, job_id="200_[1-100%4]")
    assert p["array_task_ids"] == list(range(1, 101)) and p["array_task_id"] is None
    assert p["nodes"] == []
    assert _row(r, job_id="300")["step_id"] == "interactive"
    assert _row(r, job_id="301")["step_id"] == "0+1"


def test_malformed_values_are_rejected_with_reasons() -> None:
    text = (
        "JobID|State|ExitCode|Start|Elapsed|NCPUS|NodeList\n"
        "1|COMPLETED|0:0|2024-01-01T00:00:00|00:10:00|4|n1\n"
        "abc|COMPLETED|0:0|||4|n1\n"
        "2|COMPLETED|zero|||4|n1\n"
        "3|COMPLETED|0:0|2024-13-01T00:00:00||4|n1\n"
        "4|COMPLETED|0:0||1:2:3:4|4|n1\n"
        "5|COMPLETED|0:0|||four|n1\n"
        "6|COMPLETED|0:0|||4|n[3-1]\n"
        "7|OUT_OF_ME+|0:0|||4|n1\n"
        "8.bogus|COMPLETED|0:0|||4|n1\n"
        "9|cancelled|x|||4|n1\n"
    )
    r = parse_sacct_text(text, "m.psv")
    _check_result(r)
    assert r.records["job_id"].to_list() == ["1"]
    errors = dict(zip(r.rejects["line_no"].to_list(), r.rejects["error"].to_list(), strict=True))
    assert errors[3] == "malformed JobID 'abc'"
    assert errors[4] == "malformed ExitCode 'zero'"
    assert errors[5] == "malformed Start timestamp '2024-13-01T00:00:00'"
    assert errors[6] == "malformed Elapsed '1:2:3:4'"
    assert errors[7] == "malformed NCPUS 'four'"
    assert errors[8].startswith("malformed NodeList 'n[3-1]'")
    assert errors[9] == "unknown Slurm state 'OUT_OF_ME+'"
    assert errors[10] == "malformed JobID '8.bogus'"
    assert errors[11] == "unknown Slurm state 'cancelled'; malformed ExitCode 'x'"


def test_gpu_counts_from_tres_and_gres() -> None:
    text = (
        "JobID|State|AllocTRES|AllocGRES\n"
        "1|RUNNING|cpu=64,gres/gpu=8,gres/gpu:h100=8,node=1|\n"
        "2|RUNNING|cpu=64,gres/gpu:a100=4,gres/gpu:h100=2,node=2|\n"
        "3|RUNNING|cpu=8,node=1|gpu:h100:8(IDX:0-7)\n"
        "4|RUNNING||gpu:2\n"
        "5|PENDING||\n"
    )
    r = parse_sacct_text(text, "g.psv")
    _check_result(r)
    assert r.records.select("n_gpus", "gpu_type", "n_cpus", "n_nodes").rows() == [
        (8, "h100", 64, 1),
        (6, "a100", 64, 2),
        (8, "h100", 8, 1),
        (2, None, None, None),
        (None, None, None, None),  # pending, both empty: no allocation stated, unknown
    ]


def test_header_case_aliases_and_unknown_fields() -> None:
    text = (
        "JOBID|state|jobname|AllocCPUS|NNodes|Submit|Eligible|Account|User|UID|Group|Partition|QOS|Cluster|MaxRSS|Comment|ElapsedRaw|Elapsed\n"
        "42|COMPLETED|llm|128|16|2024-05-01T10:00:00|2024-05-01T10:00:05|ml|ann|1001|mlg|gpu|high|c1|123K|ckpt run|3661|00:00:01\n"
    )
    r = parse_sacct_text(text, "h.psv", cluster="ignored")
    _check_result(r)
    row = r.records.row(0, named=True)
    assert (row["name"], row["n_cpus"], row["n_nodes"], row["account"], row["user"], row["uid"]) == (
        "llm", 128, 16, "ml", "ann", 1001
    )
    assert (row["group"], row["partition"], row["qos"], row["cluster"], row["comment"]) == (
        "mlg", "gpu", "high", "c1", "ckpt run"
    )
    assert row["elapsed_s"] == 3661  # ElapsedRaw wins over Elapsed
    assert row["state"] == "COMPLETED"
    assert row["submit_ts"] == dt.datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert row["eligible_ts"] == dt.datetime(2024, 5, 1, 10, 0, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "kwargs", "message"),
    [
        ("", {}, "empty"),
        ("  \n\n", {}, "empty"),
        ("1|COMPLETED\n", {}, "no sacct header"),
        ("JobID|ExitCode\n1|0:0\n", {}, "State"),
        ("JobID|State\n", {"delimiter": ","}, "delimiter ','"),
        ("JobID,State\n1,COMPLETED\n", {}, r"no delimiter '\|' \(it is ','-separated: export with sacct -P"),
        ("JobID;State\n1;COMPLETED\n", {}, r"it is ';'-separated"),
        ("1|COMPLETED\n", {"fields": ["JobName", "State"]}, "JobID"),
    ],
)
def test_whole_file_refusals(text: str, kwargs: dict, message: str) -> None:
    with pytest.raises(SacctFormatError, match=message):
        parse_sacct_text(text, "bad.psv", **kwargs)


def test_header_only_file_is_empty_not_error() -> None:
    r = parse_sacct_text("JobID|State\n", "h.psv")
    _check_result(r)
    assert r.rows_read == 0 and r.records.is_empty()


def test_file_with_invalid_utf8_keeps_record(tmp_path: Path) -> None:
    p = tmp_path / "latin1.psv"
    p.write_bytes(b"JobID|JobName|State\n1|caf\xe9|COMPLETED\n")
    r = parse_sacct_file(p, "latin1.psv")
    _check_result(r)
    assert r.records["name"].to_list() == ["caf\ufffd"]


@pytest.mark.parametrize(("header", "row"), [
    # the default order
    ("JobID|User|State|Start|End|Elapsed|AllocTRES|NodeList",
     "1700|alice|COMPLETED|2026-11-10T01:00:00|2026-11-10T03:00:00|02:00:00|cpu=8,gres/gpu=8,node=1|r1n01"),
    # a --format that does not begin with JobID
    ("User|JobID|State|Start|End|Elapsed|AllocTRES|NodeList",
     "alice|1700|COMPLETED|2026-11-10T01:00:00|2026-11-10T03:00:00|02:00:00|cpu=8,gres/gpu=8,node=1|r1n01"),
    # without Elapsed: End - Start
    ("State|User|JobID|Start|End|AllocTRES|NodeList",
     "COMPLETED|alice|1700|2026-11-10T01:00:00|2026-11-10T03:00:00|cpu=8,gres/gpu=8,node=1|r1n01"),
    # without Start: End - Elapsed
    ("JobID|State|User|End|Elapsed|AllocTRES|NodeList",
     "1700|COMPLETED|alice|2026-11-10T03:00:00|02:00:00|cpu=8,gres/gpu=8,node=1|r1n01"),
])
def test_any_field_order_or_subset_with_jobid_and_state_gives_the_same_job(header: str, row: str) -> None:
    # Hand-computed: 01:00-03:00 America/Chicago (CST) = 07:00-09:00 UTC, 7200 s, 8 GPUs.
    parsed = parse_sacct_text(f"{header}\n{row}\n", "x.psv", timezone="America/Chicago")
    assert parsed.rejects.height == 0
    got = parsed.records.select("job_id", "user", "start_ts", "end_ts", "elapsed_s", "n_gpus").row(0)
    utc = dt.timezone.utc
    assert got == ("1700", "alice", dt.datetime(2026, 11, 10, 7, tzinfo=utc), dt.datetime(2026, 11, 10, 9, tzinfo=utc),
                   7200, 8)


def test_a_running_job_without_elapsed_has_no_elapsed_yet() -> None:
    parsed = parse_sacct_text("JobID|State|Start|End\n1|RUNNING|2026-11-10T01:00:00|Unknown\n", "x.psv")
    assert parsed.records.select("elapsed_s", "end_ts").row(0) == (None, None)


@pytest.mark.parametrize(("text", "line"), [
    # a dump made with 2>&1: sacct's error before the header, then the records it could give
    ("sacct: error: Problem talking to the database: Connection refused\n"
     "JobID|State|Start|End\n1|COMPLETED|2026-11-10T01:00:00|2026-11-10T03:00:00\n", 1),
    ("JobID|State|Start|End\n1|COMPLETED|2026-11-10T01:00:00|2026-11-10T03:00:00\n"
     "sacct: error: slurmdbd: Getting response to message type: DBD_GET_JOBS_COND\n", 3),
])
def test_sacct_s_own_message_is_a_reject_that_says_the_dump_may_be_incomplete(text: str, line: int) -> None:
    parsed = parse_sacct_text(text, "x.psv")
    assert parsed.records.select("job_id", "state").rows() == [("1", "COMPLETED")]
    assert parsed.rejects.select("line_no", "error").rows() == [
        (line, "sacct's own message, not a record: the dump may be incomplete")]


def test_dumps_appended_to_one_file_repeat_their_header_which_is_not_a_record() -> None:
    one = "JobID|State|Start|End\n{}|COMPLETED|2026-11-10T01:00:00|2026-11-10T03:00:00\n"
    parsed = parse_sacct_text(one.format(1) + one.format(2), "x.psv")
    assert parsed.records["job_id"].to_list() == ["1", "2"] and parsed.rejects.height == 0
