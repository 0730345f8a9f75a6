"""sacct dumps as other sites make them: several clusters in one dump (`sacct -M all`), ReqTRES
instead of AllocTRES, the DST fall-back hour, malformed GPU counts.

Inputs under fixtures/sacct/other_sites/ (hand-written; see the README there)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import pytest

from gpusre.models.ingest.slurm_values import has_ambiguous_times
from gpusre.models.sources.sacct.ingest import ingest_sacct_files
from gpusre.models.sources.sacct.parse import (
    REJECT_SCHEMA,
    SACCT_RECORD_SCHEMA,
    SacctParseResult,
    parse_sacct_file,
    parse_sacct_json,
    parse_sacct_text,
    read_sacct_text,
    type_sacct_dumps,
)
from gpusre.models.warehouse import connect

FIX = Path(__file__).parent / "fixtures" / "sacct" / "other_sites"
MULTI = FIX / "multicluster_east_west.psv"


def _check(r: SacctParseResult) -> None:
    assert r.records.schema == pl.Schema(SACCT_RECORD_SCHEMA)
    assert r.rejects.schema == pl.Schema(REJECT_SCHEMA)
    assert r.rows_read == len(r.records) + len(r.rejects)


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def _alloc(r: SacctParseResult, job_id: str) -> dict:
    rows = r.records.filter((pl.col("job_id") == job_id) & (pl.col("record_type") == "allocation")).rows(named=True)
    assert len(rows) == 1, rows
    return rows[0]


# ----------------------------------------------------------------------------- several clusters


WEST_REASON = "record of Slurm cluster 'west'; this warehouse is cluster 'east' (cluster.yaml cluster)"


def test_multicluster_dump_keeps_the_configured_clusters_rows_and_rejects_the_others() -> None:
    # East's jobs 1001-1003 must not be replaced by west's records of the same JobIDs.
    r = parse_sacct_file(MULTI, "sacct/m.psv", cluster="east")
    _check(r)
    assert r.rows_read == 73
    assert set(r.records["cluster"]) == {"east"} and r.records.height == 61
    assert r.rejects.rows() == [
        ("sacct/m.psv", n, MULTI.read_text().splitlines()[n - 1], WEST_REASON) for n in range(63, 75)
    ]
    one = _alloc(r, "1001")
    assert (one["state"], one["start_ts"]) == ("COMPLETED", _utc("2026-11-02T01:00:00"))  # east's, not west's FAILED
    # The configured name matches whatever its case; the reason names it as configured.
    upper = parse_sacct_file(MULTI, "sacct/m.psv", cluster="EAST")
    assert upper.records.equals(r.records)
    assert set(upper.rejects["error"]) == {WEST_REASON.replace("'east'", "'EAST'")}


def test_multicluster_dump_without_the_configured_cluster_is_rejected_whole() -> None:
    r = parse_sacct_file(MULTI, "sacct/m.psv", cluster="h100-east")
    _check(r)
    assert r.records.is_empty() and r.rejects.height == 73
    assert set(r.rejects["error"]) == {
        "dump holds records of several Slurm clusters ('east', 'west') and none is this warehouse's cluster "
        "'h100-east': set cluster.yaml cluster to the Slurm cluster name this warehouse is for"
    }


def test_single_cluster_dump_loads_whatever_its_cluster_name() -> None:
    # Sites often give cluster.yaml a display name unlike Slurm's: a one-cluster dump loads as before.
    lines = MULTI.read_text().splitlines()
    west_only = "\n".join([lines[0], *(ln for ln in lines[1:] if ln.startswith("west|"))]) + "\n"
    r = parse_sacct_text(west_only, "w.psv", cluster="east")
    _check(r)
    assert r.rejects.is_empty() and r.records.height == 12 and set(r.records["cluster"]) == {"west"}
    # Per dump: typed in one batch with the two-cluster dump, the west-only dump still loads whole.
    together = type_sacct_dumps(
        [read_sacct_text(MULTI.read_bytes(), "m.psv"), read_sacct_text(west_only.encode(), "w.psv")], cluster="east"
    )
    _check(together)
    assert together.rejects["source_file"].unique().to_list() == ["m.psv"] and together.rejects.height == 12
    assert together.records.filter(pl.col("source_file") == "w.psv").height == 12
    # A library call without a cluster name keeps every cluster's rows (as the XDMoD fixtures need).
    assert parse_sacct_file(MULTI, "m.psv").rejects.is_empty()


def test_multicluster_json_follows_the_same_rule() -> None:
    def job(job_id: int, cluster: str) -> dict:
        return {"job_id": job_id, "cluster": cluster, "state": {"current": ["COMPLETED"]}, "time": {}}

    doc = json.dumps({"jobs": [job(1, "east"), job(1, "west"), job(2, "east")]})
    r = parse_sacct_json(doc, "j.json", cluster="east")
    _check(r)
    assert r.records["line_no"].to_list() == [1, 3]
    assert [(n, e) for _, n, _, e in r.rejects.rows()] == [(2, WEST_REASON)]
    assert parse_sacct_json(doc, "j.json", cluster="x").records.is_empty()
    assert parse_sacct_json(json.dumps({"jobs": [job(1, "west")]}), "j.json", cluster="east").rejects.is_empty()


def test_multicluster_rejects_reach_raw_rejects(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-11-04.psv").write_bytes(MULTI.read_bytes())
    con = connect(tmp_path / "w.duckdb")
    try:
        (result,) = ingest_sacct_files(con, landing, cluster="east")
        clusters = con.sql("SELECT DISTINCT cluster FROM raw.sacct_records").fetchall()
        rejects = con.sql("SELECT line_no, error FROM raw.rejects ORDER BY line_no").fetchall()
    finally:
        con.close()
    assert (result.status, result.rows_loaded, result.rows_rejected) == ("loaded", 61, 12)
    assert clusters == [("east",)]
    assert rejects == [(n, WEST_REASON) for n in range(63, 75)]


# ----------------------------------------------------------------------------- ReqTRES / ReqGRES


def test_reqtres_gives_the_gpu_count_when_the_dump_has_no_alloc_column() -> None:
    r = parse_sacct_file(FIX / "reqtres_only.psv", "r.psv", cluster="east")
    _check(r)
    assert r.rejects.is_empty()
    allocs = r.records.filter(pl.col("record_type") == "allocation")
    got = dict(zip(allocs["job_id"], allocs["n_gpus"], strict=True))
    assert (got["1001"], got["1003"], got["1005"]) == (8, 16, 1)
    assert allocs["n_gpus"].null_count() == 0 and (allocs["n_gpus"] > 0).sum() >= 10


def test_alloc_wins_when_present_and_not_empty_else_req() -> None:
    text = (
        "JobID|State|AllocTRES|ReqTRES\n"
        "1|COMPLETED|cpu=8,gres/gpu=4,node=1|cpu=8,gres/gpu=8,node=1\n"  # Alloc wins
        "2|PENDING||cpu=8,gres/gpu:h100=8,node=1\n"  # Alloc empty: Req
        "3|PENDING||\n"  # neither: no GPU count stated (unknown)
        "4|COMPLETED|cpu=8,mem=1G,node=1|cpu=8,gres/gpu=8,node=1\n"  # Alloc without GPU: CPU-only
        "5|COMPLETED|cpu=8,gres/gpu=2,node=1|gres/gpu=8x\n"  # Req unused: not checked
        "6|PENDING||gres/gpu=8x\n"  # Req used and malformed: reject
    )
    r = parse_sacct_text(text, "a.psv")
    _check(r)
    assert r.records.select("job_id", "n_gpus", "gpu_type").rows() == [
        ("1", 4, None), ("2", 8, "h100"), ("3", None, None), ("4", 0, None), ("5", 2, None),
    ]
    assert r.rejects.select("line_no", "error").rows() == [(7, "malformed GPU count in ReqTRES 'gres/gpu=8x'")]
    gres = parse_sacct_text("JobID|State|ReqGRES\n1|PENDING|gpu:a100:2\n2|PENDING|\n", "g.psv")
    _check(gres)
    assert gres.records.select("n_gpus", "gpu_type").rows() == [(2, "a100"), (None, None)]
    both = parse_sacct_text("JobID|State|AllocGRES|ReqTRES\n1|RUNNING|gpu:2|gres/gpu=8\n2|PENDING||gres/gpu=8\n", "b.psv")
    assert both.records["n_gpus"].to_list() == [2, 8]


# ----------------------------------------------------------------------------- DST fall-back


def test_ambiguous_start_and_end_are_resolved_with_elapsed() -> None:
    # America/Chicago, 2026-11-01: 02:00 CDT (UTC-5) becomes 01:00 CST (UTC-6); 01:00-01:59 happens twice.
    r = parse_sacct_file(FIX / "dst_fallback_chicago.psv", "d.psv", timezone="America/Chicago")
    _check(r)
    assert r.rejects.is_empty()
    got = {row["job_id"]: (row["start_ts"], row["end_ts"]) for row in r.records.iter_rows(named=True)}
    expected = {
        # 22:00 CDT -> 03:00Z; 03:00 CST -> 09:00Z (neither ambiguous; Elapsed 6 h).
        "7001": ("2026-11-01T03:00:00", "2026-11-01T09:00:00"),
        # 01:30-01:45, Elapsed 15 min: both CDT and both CST fit; the first pair (earliest) wins.
        "7002": ("2026-11-01T06:30:00", "2026-11-01T06:45:00"),
        # 01:50 -> 01:10, Elapsed 20 min: start 01:50 CDT = 06:50Z, end 01:10 CST = 07:10Z.
        "7003": ("2026-11-01T06:50:00", "2026-11-01T07:10:00"),
        # 00:30 CDT = 05:30Z; Elapsed 1 h: end 01:30 CDT = 06:30Z (01:30 CST would be 2 h).
        "7004": ("2026-11-01T05:30:00", "2026-11-01T06:30:00"),
        # end 02:30 CST = 08:30Z; Elapsed 1 h: start 01:30 CST = 07:30Z (earliest gave 06:30Z, 2 h).
        "7005": ("2026-11-01T07:30:00", "2026-11-01T08:30:00"),
        # 2026-11-02 20:00 CST = 2026-11-03 02:00Z, still running.
        "7006": ("2026-11-03T02:00:00", None),
    }
    for job_id, (start, end) in expected.items():
        assert got[job_id] == (_utc(start), end and _utc(end)), job_id
    # No job ends before it starts, and every span equals Elapsed.
    ended = r.records.filter(pl.col("end_ts").is_not_null() & pl.col("start_ts").is_not_null())
    assert ((ended["end_ts"] - ended["start_ts"]).dt.total_seconds() == ended["elapsed_s"]).all()


def test_ambiguous_times_without_a_matching_elapsed_keep_the_earliest() -> None:
    hdr = "JobID|State|Start|End|{}\n"
    row = "1|COMPLETED|2026-11-01T01:30:00|2026-11-01T01:40:00|{}\n"
    # Elapsed 30 min fits no pair: earliest both, as before.
    r = parse_sacct_text(hdr.format("Elapsed") + row.format("00:30:00"), "n.psv", timezone="America/Chicago")
    assert r.records.select("start_ts", "end_ts").row(0) == (_utc("2026-11-01T06:30:00"), _utc("2026-11-01T06:40:00"))
    # ElapsedRaw is read too: 70 min fits start CDT (06:30Z), end CST (07:40Z).
    r = parse_sacct_text(hdr.format("ElapsedRaw") + row.format("4200"), "n.psv", timezone="America/Chicago")
    assert r.records.select("start_ts", "end_ts").row(0) == (_utc("2026-11-01T06:30:00"), _utc("2026-11-01T07:40:00"))
    # Without Elapsed, End >= Start still resolves an End that read earliest would precede Start:
    # 01:50 CDT (06:50Z) .. 01:10 CST (07:10Z), a 20-minute run (not an End before its Start).
    r = parse_sacct_text("JobID|State|Start|End\n1|COMPLETED|2026-11-01T01:50:00|2026-11-01T01:10:00\n", "n.psv",
                         timezone="America/Chicago")
    assert r.records.select("start_ts", "end_ts", "elapsed_s").row(0) == (
        _utc("2026-11-01T06:50:00"), _utc("2026-11-01T07:10:00"), 20 * 60)


def test_fixed_offset_zones_skip_the_resolution() -> None:
    assert not has_ambiguous_times("UTC") and not has_ambiguous_times("Etc/GMT+5")
    assert not has_ambiguous_times("Asia/Kolkata")
    assert has_ambiguous_times("America/Chicago") and has_ambiguous_times("Australia/Lord_Howe")
    text = "JobID|State|Start|End|Elapsed\n1|COMPLETED|2026-11-01T01:30:00|2026-11-01T02:30:00|01:00:00\n"
    r = parse_sacct_text(text, "f.psv", timezone="Etc/GMT+5")
    assert r.records.select("start_ts", "end_ts").row(0) == (_utc("2026-11-01T06:30:00"), _utc("2026-11-01T07:30:00"))


# ----------------------------------------------------------------------------- GPU counts


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("AllocTRES", "cpu=8,gres/gpu=8x,node=1"),
        ("AllocTRES", "cpu=8,gres/gpu:h100=abc,node=1"),
        ("AllocTRES", "gres/gpu="),
        ("AllocGRES", "gpu:8x"),
        ("AllocGRES", "gpu:h100:abc"),
    ],
)
def test_malformed_gpu_count_is_rejected_not_guessed(field: str, value: str) -> None:
    r = parse_sacct_text(f"JobID|State|{field}\n1|COMPLETED|{value}\n2|COMPLETED|\n", "m.psv")
    _check(r)
    assert r.records["job_id"].to_list() == ["2"]
    bad = [e for e in value.split(",") if e.startswith(("gres/gpu", "gpu"))][0]
    assert r.rejects.rows() == [("m.psv", 2, f"1|COMPLETED|{value}", f"malformed GPU count in {field} '{bad}'")]


def test_legitimate_gpu_forms_still_parse() -> None:
    text = (
        "JobID|State|AllocTRES|AllocGRES\n"
        "1|COMPLETED|cpu=8,gres/gpu=8,node=1|\n"
        "2|COMPLETED|cpu=8,gres/gpu:h100=8,node=1|\n"
        "3|COMPLETED|cpu=8,gres/gpumem=80G,node=1|\n"
        "4|COMPLETED|cpu=8,gres/shard=4,node=1|\n"
        "5|COMPLETED||gpu:8\n"
        "6|COMPLETED||gpu:h100:8(IDX:0-7)\n"
        "7|COMPLETED||gpu:h100:4(IDX:0-1,4-5)\n"
        "8|COMPLETED|billing=8,cpu=8,gres/gpu:a100_3g.20gb=1,gres/gpu=1,gres/gpumem=20G,mem=1G|\n"
    )
    r = parse_sacct_text(text, "ok.psv")
    _check(r)
    assert r.rejects.is_empty()
    assert r.records.select("n_gpus", "gpu_type").rows() == [
        (8, None), (8, "h100"), (0, None), (0, None), (8, None), (8, "h100"), (4, "h100"), (1, "a100_3g.20gb"),
    ]
