"""Tests for gpusre.models.ingest.hostlist: doctests, round-trip properties, malformed input."""

from __future__ import annotations

import doctest
import re

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusre.models.ingest import hostlist as hostlist
from gpusre.models.ingest.hostlist import HostlistError, compress_hostlist, expand_hostlist


def test_doctests() -> None:
    result = doctest.testmod(hostlist)
    assert result.attempted >= 3 and result.failed == 0


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("gpu[001-003,010]", ["gpu001", "gpu002", "gpu003", "gpu010"]),
        ("d13n[03,05,07-08,16]", ["d13n03", "d13n05", "d13n07", "d13n08", "d13n16"]),
        ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
        ("cpn-k16-35-01,cpn-k16-37-01", ["cpn-k16-35-01", "cpn-k16-37-01"]),
        ("n[8-11]", ["n8", "n9", "n10", "n11"]),
        ("None assigned", []),
        ("(null)", []),
        ("", []),
        (None, []),
    ],
)
def test_expand_examples(expr: str | None, names: list[str]) -> None:
    assert expand_hostlist(expr) == names


@pytest.mark.parametrize(
    "expr",
    ["n[1-2", "n1-2]", "n[[1]]", "n[]", "n[a-b]", "n[3-1]", "n[1-2,]", "n[0-99999999]", "a]b[1]"],
)
def test_malformed_raises(expr: str) -> None:
    with pytest.raises(HostlistError):
        expand_hostlist(expr)


_node = st.builds(
    lambda prefix, width, n: f"{prefix}{str(n).zfill(width)}",
    st.sampled_from(["gpu", "cn", "d07n", "rack1-n", "a-b"]),
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=0, max_value=2_000),
) | st.sampled_from(["login", "head-node", "gpu-a"])


def _group_key(name: str) -> tuple[str, int, int] | tuple[str, int, int, str]:
    m = re.match(r"^(.*?)(\d+)$", name)
    return (m.group(1), len(m.group(2)), int(m.group(2))) if m else (name, -1, -1)


@settings(max_examples=300, deadline=None)
@given(st.lists(_node, max_size=60))
def test_expand_of_compress_gives_unique_names_grouped_and_sorted(names: list[str]) -> None:
    expanded = expand_hostlist(compress_hostlist(names))
    assert sorted(expanded) == sorted(set(names))
    assert len(expanded) == len(set(expanded))
    # Within one prefix+width group the names come out in numeric order.
    groups: dict[tuple[str, int], list[int]] = {}
    for n in expanded:
        prefix, width, num = _group_key(n)[:3]
        groups.setdefault((prefix, width), []).append(num)
    assert all(nums == sorted(nums) for nums in groups.values())


@settings(max_examples=300, deadline=None)
@given(st.lists(_node, min_size=1, max_size=60))
def test_compress_of_expand_is_a_fixed_point(names: list[str]) -> None:
    expr = compress_hostlist(names)
    assert compress_hostlist(expand_hostlist(expr)) == expr
    # Compression never lengthens the list of names it stands for.
    assert len(expr) <= len(",".join(dict.fromkeys(names)))


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=500), st.integers(min_value=0, max_value=50), st.integers(1, 4))
def test_range_expression_round_trip(lo: int, span: int, width: int) -> None:
    names = [f"gpu{str(n).zfill(width)}" for n in range(lo, lo + span + 1)]
    expr = compress_hostlist(names)
    assert expand_hostlist(expr) == names


def _expected(expr: str) -> tuple[list[str] | None, str | None]:
    try:
        return expand_hostlist(expr), None
    except HostlistError as exc:
        return None, str(exc)


# Hostlists as Slurm prints them, and text near them: spaces, empty items, stray or doubled
# brackets, descending and oversized ranges, several groups, numbers wider than an Int64.
_hostlist_like = (
    st.lists(_node, max_size=30).map(compress_hostlist)
    | st.text(alphabet="gpu0139[]-, ", max_size=24)
    | st.sampled_from(["None assigned", "(null)", "Unknown", "n[3-1]", "n[0-99999999]", "n[1-2,]",
                       "n[00000000000000000001-00000000000000000002]", "rack[1-2]-n[01-02]", "a[1],b[2-3]"])
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_hostlist_like, max_size=20))
def test_expand_hostlists_equals_expand_hostlist_on_each_value(exprs: list[str]) -> None:
    """The vectorized expansion (sacct's parse) gives each value's expand_hostlist, error included."""
    out = hostlist.expand_hostlists(pl.Series("nodelist", [*exprs, None]), out="_nodes")
    assert out.columns == ["nodelist", "_nodes", "_nodes_err"]
    assert sorted(out["nodelist"].to_list()) == sorted(set(exprs))
    for expr, names, error in out.iter_rows():
        assert (names, error) == _expected(expr), expr
