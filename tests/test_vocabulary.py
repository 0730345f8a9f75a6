"""models/vocabulary.py: one definition of job-state sets and size buckets, the same in Python, Polars and SQL."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusre.models import vocabulary as v
from gpusre.models.warehouse import connect

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - DuckDB connection
    c = connect(tmp_path_factory.mktemp("vocab") / "w.duckdb")  # a real warehouse: apply_ddl made the macros
    yield c
    c.close()


@pytest.mark.parametrize(("n", "label", "order"), [
    (None, "0", 0), (0, "0", 0), (-1, "0", 0), (1, "1", 1), (2, "2-8", 2), (8, "2-8", 2), (9, "9-64", 3),
    (64, "9-64", 3), (65, "65-256", 4), (256, "65-256", 4), (257, "257-1024", 5), (1024, "257-1024", 5),
    (1025, ">1024", 6), (100_000, ">1024", 6),
])
def test_size_bucket_boundaries_by_hand(con, n: int | None, label: str, order: int) -> None:  # noqa: ANN001
    assert (v.size_bucket(n), v.size_bucket_order(n)) == (label, order)
    assert con.execute("SELECT core.size_bucket(?::INTEGER), core.size_bucket_order(?::INTEGER)",
                       [n, n]).fetchall() == [(label, order)]
    assert v.bucket_order_of(label) == order


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(min_value=-5, max_value=200_000)), min_size=1, max_size=40))
def test_size_bucket_python_polars_sql_agree(con, gpus: list[int | None]) -> None:  # noqa: ANN001
    frame = pl.DataFrame({"n_gpus": gpus}, schema={"n_gpus": pl.Int64})
    polars = frame.select(v.size_bucket_expr().alias("b"), v.size_bucket_order_expr().alias("o"))
    con.register("_g", frame.with_row_index("i").to_arrow())
    try:
        sql = con.sql("SELECT core.size_bucket(n_gpus) AS b, core.size_bucket_order(n_gpus) AS o FROM _g ORDER BY i").pl()
    finally:
        con.unregister("_g")
    python = [(v.size_bucket(n), v.size_bucket_order(n)) for n in gpus]
    assert list(zip(polars["b"], polars["o"], strict=True)) == python
    assert list(zip(sql["b"], sql["o"], strict=True)) == python


STATES = (*v.TERMINAL_STATES, "REQUEUED", "RUNNING", "PENDING", None)


@pytest.mark.parametrize("state", STATES)
def test_state_macros_follow_the_tuples(con, state: str | None) -> None:  # noqa: ANN001
    row = con.execute("SELECT core.is_terminal_state(?), core.is_failed_state(?), core.is_interrupted_state(?), "
                      "core.is_node_failure_state(?), core.job_outcome(?)", [state] * 5).fetchall()[0]
    expect = tuple(None if state is None else state in s for s in (
        v.TERMINAL_STATES, v.FAILED_STATES, v.INTERRUPTED_STATES, v.NODE_FAILURE_STATES)) + (v.job_outcome(state),)
    assert row == expect


def test_state_sets_relate_as_documented() -> None:
    assert set(v.FAILED_STATES) <= set(v.TERMINAL_STATES)
    assert set(v.NODE_FAILURE_STATES) <= set(v.FAILED_STATES) & set(v.INTERRUPTED_STATES)
    assert set(v.KILLED_STATES) <= set(v.FAILED_STATES)
    assert "COMPLETED" not in v.RESUBMIT_AFTER_STATES
    # Slurm ends a running job at its --deadline like at its time limit: an interruption by a job limit
    # (a DEADLINE before the start interrupted nothing; attribution weighs started jobs only).
    assert "DEADLINE" in v.INTERRUPTED_STATES
    assert set(v.LIMIT_STATES) == {"OUT_OF_MEMORY", "TIMEOUT", "DEADLINE"}
    assert set(v.LIMIT_STATES) <= set(v.FAILED_STATES) & set(v.INTERRUPTED_STATES)
    assert v.SIZE_BUCKET_LABELS[v.bucket_order_of("65-256")] == "65-256"


#: A quoted Slurm failure state in code (a docstring or comment may name one; a list of them may not).
_STATE_LIST = re.compile(r"""\(\s*['"](?:FAILED|NODE_FAIL|BOOT_FAIL|TIMEOUT)['"]\s*,\s*['"]|IN\s*\(\s*'(?:COMPLETED|FAILED|NODE_FAIL)'""")


def test_no_second_copy_of_a_state_set() -> None:
    """models/, assets/, sql/, pipelines/ and reports/ take state sets from the vocabulary (the source parsers excepted:
    they list every state Slurm can print, not a set with a meaning)."""
    owned = [*(ROOT / "models").rglob("*.py"), *(ROOT / "assets").rglob("*.py"), *(ROOT / "sql").rglob("*.sql"),
             *(ROOT / "pipelines").rglob("*.py"), *(ROOT / "reports").rglob("*.py")]
    skip = {ROOT / "models" / "vocabulary.py"}
    skip_dirs = (ROOT / "models" / "sources", ROOT / "models" / "ingest")
    offenders = [str(p.relative_to(ROOT)) for p in owned
                 if p not in skip and not p.is_relative_to(skip_dirs[0]) and not p.is_relative_to(skip_dirs[1])
                 and _STATE_LIST.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_component_classes_are_re_exported_not_copied() -> None:
    from gpusre.models import component_classes

    assert v.class_of is component_classes.class_of and v.CLASS_LABELS is component_classes.CLASS_LABELS
    assert v.class_label("nvlink") == "NVLink / NVSwitch"


def test_docstring_examples() -> None:
    assert doctest.testmod(v).failed == 0
