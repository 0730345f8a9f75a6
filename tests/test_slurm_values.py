"""Tests for the Polars value parsers in gpusre.models.ingest.slurm_values."""

from __future__ import annotations

import doctest

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusre.models.ingest import slurm_values as slurm_values
from gpusre.models.ingest.slurm_values import (
    DURATION_NULL_TOKENS,
    TIMELIMIT_NULL_TOKENS,
    gres_gpus,
    has_space_for_t,
    invalid_value,
    parse_duration_s,
    parse_exit_code,
    parse_job_id,
    parse_naive_timestamp,
    parse_state,
    tres_count,
    tres_gpus,
)


def _apply(expr_fn, values: list[str | None]) -> list:
    return pl.DataFrame({"v": values}, schema={"v": pl.String}).select(expr_fn(pl.col("v"))).to_series().to_list()


def format_slurm_duration(seconds: int, style: str, millis: int = 0) -> str:
    """Print seconds the way sacct does: D-HH:MM:SS / HH:MM:SS, or MM:SS.mmm for short CPU times."""
    days, rem = divmod(seconds, 86_400)
    h, rem = divmod(rem, 3_600)
    m, s = divmod(rem, 60)
    if style == "mmss":
        return f"{m:02d}:{s:02d}.{millis:03d}"
    clock = f"{h:02d}:{m:02d}:{s:02d}"
    return f"{days}-{clock}" if days else clock


def test_module_doctests() -> None:
    assert doctest.testmod(slurm_values).failed == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=400 * 86_400), min_size=1, max_size=50))
def test_duration_round_trip_against_formatter(seconds: list[int]) -> None:
    texts = [format_slurm_duration(s, "full") for s in seconds]
    assert _apply(parse_duration_s, texts) == seconds


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=3_599), st.integers(min_value=0, max_value=999))
def test_short_cpu_time_with_millis_floors(seconds: int, millis: int) -> None:
    text = format_slurm_duration(seconds, "mmss", millis)
    assert _apply(parse_duration_s, [text]) == [seconds]
    assert _apply(parse_duration_s, [text.split(".")[0]]) == [seconds]


def test_duration_examples_and_invalid() -> None:
    values = ["3-00:00:00", "14:20:00", "00:09:34", "09:28.052", "01:27:42.5",
              "UNLIMITED", "Partition_Limit", "", None, "1-02:03", "00:61:00", "24:00:00", "x:y", "12"]
    got = _apply(parse_duration_s, values)
    assert got == [259200, 51600, 574, 568, 5262, None, None, None, None, None, None, None, None, None]
    bad = _apply(lambda e: invalid_value(e, parse_duration_s(e), TIMELIMIT_NULL_TOKENS), values)
    assert bad == [False] * 9 + [True] * 5
    assert _apply(lambda e: invalid_value(e, parse_duration_s(e), DURATION_NULL_TOKENS), ["UNLIMITED"]) == [True]


def test_timestamps() -> None:
    values = ["2015-06-26T13:57:00", "Unknown", "", "2015-02-30T00:00:00", "2015-06-26 13:57:00",
              "2015-06-26 13:57:00 x"]
    got = _apply(parse_naive_timestamp, values)
    # SLURM_TIME_FORMAT="%F %T" prints a space for the T: read by default; trailing text still fails.
    assert [g.isoformat() if g else None for g in got] == [
        "2015-06-26T13:57:00", None, None, None, "2015-06-26T13:57:00", None]
    # The sacct parse reads the T form alone unless a dump shows the space (has_space_for_t).
    strict = _apply(lambda e: parse_naive_timestamp(e, space_for_t=False), values)
    assert [g.isoformat() if g else None for g in strict] == ["2015-06-26T13:57:00"] + [None] * 5
    assert has_space_for_t(pl.Series(["Unknown", "2015-06-26 13:57:00"]))
    assert not has_space_for_t(pl.Series(["Unknown", "2015-06-26T13:57:00", "None"]))


def test_state_parser() -> None:
    got = _apply(parse_state, ["CANCELLED by 102216", "TIMEOUT", "OUT_OF_MEMORY", "FOO", "OUT_OF_ME+", "CANCELLED by x", "CANCELLED+"])
    assert got == [
        {"state": "CANCELLED", "cancelled_by": 102216},
        {"state": "TIMEOUT", "cancelled_by": None},
        {"state": "OUT_OF_MEMORY", "cancelled_by": None},
        *[{"state": None, "cancelled_by": None}] * 4,
    ]


def test_exit_code_parser() -> None:
    got = _apply(parse_exit_code, ["0:0", "1:0", "0:125", "137", "1:2:3", ""])
    assert [(g["exit_code"], g["exit_signal"]) for g in got] == [(0, 0), (1, 0), (0, 125), (None, None), (None, None), (None, None)]


def test_job_id_parser() -> None:
    got = _apply(parse_job_id, ["123", "123_4", "123_[1-5,7%2]", "123+0", "123+1.0", "123.batch", "123_4.extern", "12.0+1", "1x", "123_[]", "123.foo"])
    pick = [(g["job_id"], g["base"], g["task"], g["tasks"], g["het"], g["step"]) for g in got]
    assert pick == [
        ("123", "123", None, None, None, None),
        ("123_4", "123", "4", None, None, None),
        ("123_[1-5,7%2]", "123", None, "1-5,7", None, None),
        ("123+0", "123", None, None, "0", None),
        ("123+1", "123", None, None, "1", "0"),
        ("123", "123", None, None, None, "batch"),
        ("123_4", "123", "4", None, None, "extern"),
        ("12", "12", None, None, None, "0+1"),
        *[(None,) * 6] * 3,
    ]


def test_tres_and_gres() -> None:
    tres = ["billing=36,cpu=36,mem=48000M,node=3", "gres/gpu=2", "cpu=8,gres/gpu:a100=2,gres/gpu:v100=1,node=1", ""]
    assert _apply(tres_gpus, tres) == [
        {"n_gpus": None, "gpu_type": None},
        {"n_gpus": 2, "gpu_type": None},
        {"n_gpus": 3, "gpu_type": "a100"},
        {"n_gpus": None, "gpu_type": None},
    ]
    assert _apply(lambda e: tres_count(e, "cpu"), tres) == [36, None, 8, None]
    assert _apply(lambda e: tres_count(e, "node"), tres) == [3, None, 1, None]
    gres = ["gpu:8", "gpu:h100:8(IDX:0-7)", "gpu:tesla:2,mps:100", "mps:100", ""]
    assert _apply(gres_gpus, gres) == [
        {"n_gpus": 8, "gpu_type": None},
        {"n_gpus": 8, "gpu_type": "h100"},
        {"n_gpus": 2, "gpu_type": "tesla"},
        {"n_gpus": None, "gpu_type": None},
        {"n_gpus": None, "gpu_type": None},
    ]
