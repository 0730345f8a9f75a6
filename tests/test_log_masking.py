"""``canonical_digits`` against a plain-Python reference, on random strings and edge cases."""

from __future__ import annotations

import random
import re

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusre.models.logs.masking import DIGIT_RUN_CAP, canonical_digits

# ASCII digits only: Python's ``\d`` also matches other Unicode digits ("٣"), which the byte-level
# implementation (and every masking rule, in Rust regex's ASCII-digit classes) leaves alone.
_DIGIT = re.compile(r"[0-9]")
_LONG_RUN = re.compile("0{%d,}" % (DIGIT_RUN_CAP + 1))


def _reference(text: str | None) -> str | None:
    """The definition: every ASCII digit -> '0', then runs of more than four zeros cut to four.

    Zeros that were already in the text count as digits, so cutting zero runs after the
    substitution is the same as cutting digit runs.
    """
    if text is None:
        return None
    return _LONG_RUN.sub("0" * DIGIT_RUN_CAP, _DIGIT.sub("0", text))


# Digits dominate so that runs of every length, and runs at string edges, are common.
_ALPHABET = st.sampled_from(list("0123456789" * 4 + "ab :.-x\t") + ["é", "ü", "٣", "😀", "\u00a0", "\x00"])
_TEXT = st.one_of(st.none(), st.text(alphabet=_ALPHABET, max_size=30), st.text(max_size=8))


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_TEXT, max_size=40), chunk_bytes=st.sampled_from([1, 3, 7, 64, 1 << 20]))
def test_canonical_digits_matches_reference(texts: list[str | None], chunk_bytes: int) -> None:
    series = pl.Series("m", texts, dtype=pl.String)
    out = canonical_digits(series, chunk_bytes=chunk_bytes)
    assert out.name == "m"
    assert out.dtype == pl.String
    assert out.to_list() == [_reference(t) for t in texts]


def test_canonical_digits_large_random_batch() -> None:
    # Many strings per chunk, runs crossing string boundaries, nulls and empties mixed in.
    rng = random.Random(11)
    pieces = ["1234567", "0", "99999", "12", "abc", "é", " ", "٣٣٣", "x00000y", ""]
    texts: list[str | None] = [
        None if rng.random() < 0.05 else "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 12)))
        for _ in range(20_000)
    ]
    series = pl.Series("m", texts, dtype=pl.String)
    expected = [_reference(t) for t in texts]
    for chunk_bytes in (5, 4096, 1 << 20):
        assert canonical_digits(series, chunk_bytes=chunk_bytes).to_list() == expected


def test_canonical_digits_sliced_and_chunked_input() -> None:
    # A slice has a non-zero Arrow offset (also in its validity bitmap); several chunks are combined.
    texts = [None, "a123456", "", "7777777", None, "b12", "123456789"] * 50
    series = pl.Series("m", texts, dtype=pl.String)
    sliced = series.slice(3, 200)
    assert canonical_digits(sliced).to_list() == [_reference(t) for t in texts[3:203]]
    chunked = pl.concat([series.slice(0, 100), series.slice(100)], rechunk=False)
    assert chunked.n_chunks() == 2
    assert canonical_digits(chunked).to_list() == [_reference(t) for t in texts]


def test_canonical_digits_empty_and_all_null() -> None:
    assert canonical_digits(pl.Series("m", [], dtype=pl.String)).to_list() == []
    assert canonical_digits(pl.Series("m", [None, None], dtype=pl.String)).to_list() == [None, None]
    assert canonical_digits(pl.Series("m", ["", ""], dtype=pl.String)).to_list() == ["", ""]
