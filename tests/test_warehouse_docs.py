"""The warehouse documents itself: after a run every core and marts table and column has a comment
from the contract sql/contract/*.yaml, the contract names nothing the warehouse lacks, the README's
table reference is the one generated from the contract, and every query of examples/queries.sql
answers on a simulated warehouse with the columns it promises."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb
import pytest

from gpusre.models.warehouse import connect
from gpusre.models.warehouse_snapshot import snapshot_path
from gpusre.pipelines.cli import main
from gpusre.pipelines.warehouse_docs import (
    README_BEGIN,
    apply_comments,
    load_contract,
    readme_section,
    sync_readme,
    undocumented,
    unknown_entries,
)
from gpusre.pipelines.runner import RunSummary

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
QUERIES = REPO / "examples" / "queries.sql"


@pytest.fixture(scope="module")
def warehouse(rich_warehouse: tuple[Path, RunSummary]) -> Path:
    # Every mart the example queries read has rows in it.
    return rich_warehouse[0]


@pytest.fixture
def con(warehouse: Path):
    c = connect(warehouse, read_only=True)
    yield c
    c.close()


def test_every_core_and_marts_table_and_column_has_a_comment(con: duckdb.DuckDBPyConnection) -> None:
    missing = undocumented(con, ("core", "marts"))
    # The message is the list to add to sql/contract/<schema>.yaml, one schema.table[.column] per line.
    assert not missing, "no comment (add them to sql/contract/<schema>.yaml):\n" + "\n".join(missing)
    n_tables, n_columns = con.sql(
        """SELECT count(DISTINCT table_name), count(*) FROM duckdb_columns()
           WHERE schema_name IN ('core', 'marts') AND database_name = current_database()""").fetchall()[0]
    assert n_tables >= 50 and n_columns >= 500  # the whole warehouse was built, not an empty shell


def test_raw_tables_are_commented_too(con: duckdb.DuckDBPyConnection) -> None:
    tables = con.sql("""SELECT table_name, comment FROM duckdb_tables() WHERE schema_name = 'raw'
                        AND database_name = current_database()""").fetchall()
    assert tables and all(comment for _, comment in tables), [t for t, c in tables if not c]
    assert con.sql("""SELECT comment FROM duckdb_columns() WHERE schema_name = 'raw' AND table_name = 'rejects'
                      AND column_name = 'line_no'""").fetchall()[0][0].startswith("1-based physical line")


def test_contract_names_only_what_exists(con: duckdb.DuckDBPyConnection) -> None:
    extra = unknown_entries(con)
    assert not extra, "in sql/contract but not in the warehouse (remove or rename):\n" + "\n".join(extra)


def test_comments_are_the_contract_and_carry_units(con: duckdb.DuckDBPyConnection) -> None:
    contract = {d.name: d for d in load_contract()}
    rows = con.sql("""SELECT schema_name || '.' || table_name, column_name, comment FROM duckdb_columns()
                      WHERE schema_name IN ('raw', 'core', 'marts') AND database_name = current_database()""").fetchall()
    for table, column, comment in rows:
        assert comment == contract[table].columns[column], (table, column)
    comments = {(t, c): text for t, c, text in rows}
    assert "GPU-hours" in comments[("marts.hw_incidents", "lost_gpu_hours")]
    assert "seconds" in comments[("core.jobs", "elapsed_s")]
    assert "UTC" in comments[("core.jobs", "end_ts")]
    # A meaning is not the column name said again.
    lazy = [(t, c) for (t, c), text in comments.items() if text.strip().lower() in {c.lower(), c.replace("_", " ")}]
    assert not lazy, lazy


def test_comments_are_put_back_where_a_night_dropped_or_changed_them(warehouse: Path, tmp_path: Path) -> None:
    # apply_comments writes only the comments not in place: a table a night replaced (its comments gone),
    # a column comment changed by hand and a table comment emptied are all the contract's again, and the
    # counts are of every contract table and column present, written or not.
    copy = tmp_path / "w.duckdb"
    shutil.copy(warehouse, copy)
    con = duckdb.connect(str(copy))
    try:
        con.execute("CREATE OR REPLACE TABLE marts.failure_taxonomy AS SELECT * FROM marts.failure_taxonomy")
        con.execute("COMMENT ON COLUMN core.jobs.elapsed_s IS 'stale'")
        con.execute("COMMENT ON TABLE marts.hw_incidents IS ''")
        assert set(undocumented(con, ("core", "marts"))) >= {"marts.failure_taxonomy", "marts.hw_incidents"}
        tables, columns = apply_comments(con)
        assert undocumented(con, ("core", "marts")) == []
        contract = {d.name: d for d in load_contract()}
        comment = con.sql("""SELECT comment FROM duckdb_columns() WHERE schema_name = 'core' AND table_name = 'jobs'
                             AND column_name = 'elapsed_s'""").fetchall()[0][0]
        assert comment == contract["core.jobs"].columns["elapsed_s"]
        assert apply_comments(con) == (tables, columns) and tables >= 50 and columns >= 500
    finally:
        con.close()


def test_snapshot_carries_the_comments(warehouse: Path) -> None:
    snap = connect(snapshot_path(warehouse), read_only=True)
    try:
        assert undocumented(snap, ("core", "marts")) == []
    finally:
        snap.close()


def test_readme_table_reference_is_generated_from_the_contract() -> None:
    assert sync_readme(README, check=True), "README table reference is out of date: run `gpusre docs --readme`"
    section = readme_section()
    for doc in load_contract():
        assert f"#### `{doc.name}`" in section
        assert all(f"| `{c}` |" in section.split(f"#### `{doc.name}`")[1].split("#### ")[0] for c in doc.columns)


def test_docs_cli_checks_and_regenerates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "README.md"
    stale.write_text(README.read_text(encoding="utf-8").replace("| `job_id` |", "| `job_id` | stale |", 1),
                     encoding="utf-8")
    assert main(["docs", "--readme", str(stale), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["docs", "--readme", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == README.read_text(encoding="utf-8")
    no_markers = tmp_path / "other.md"
    no_markers.write_text("# nothing generated here\n", encoding="utf-8")
    assert main(["docs", "--readme", str(no_markers)]) == 2
    assert "no table-reference markers" in capsys.readouterr().err


def test_docs_cli_applies_comments_to_a_warehouse(warehouse: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "w.duckdb"
    shutil.copy(warehouse, copy)
    c = duckdb.connect(str(copy))
    c.execute("COMMENT ON COLUMN marts.mtbf.mtbf_hours IS NULL")
    c.execute("CREATE TABLE marts.brand_new (x INTEGER)")
    c.close()
    assert main(["docs", "--warehouse", str(copy)]) == 0
    out = capsys.readouterr().out
    # The table and its column, named: what to add to the contract.
    assert "2 without a contract entry: marts.brand_new, marts.brand_new.x" in out
    c = duckdb.connect(str(copy), read_only=True)
    try:
        assert c.sql("""SELECT comment FROM duckdb_columns() WHERE table_name = 'mtbf'
                        AND column_name = 'mtbf_hours'""").fetchall()[0][0]
    finally:
        c.close()


def test_malformed_contract_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "marts.yaml").write_text("marts.t:\n  description: One row is a thing\n  columns:\n    a: ''\n")
    with pytest.raises(ValueError, match=r"marts.t: columns without meaning: a"):
        load_contract(tmp_path)
    (tmp_path / "marts.yaml").write_text("core.t:\n  description: x\n  columns:\n    a: b\n")
    with pytest.raises(ValueError, match="schema prefix marts"):
        load_contract(tmp_path)


# --------------------------------------------------------------------------------------------
# examples/queries.sql


def _queries() -> list[tuple[str, list[str], str]]:
    """(question, expected columns, SQL) for every query of the file: statements end with ';' at a line end."""
    out = []
    for chunk in QUERIES.read_text(encoding="utf-8").split(";\n"):
        question = re.search(r"^-- Q: (.+)$", chunk, re.M)
        if question:
            columns = re.search(r"^-- columns: (.+)$", chunk, re.M)
            assert columns, f"query without a `-- columns:` line: {question.group(1)}"
            out.append((question.group(1), [c.strip() for c in columns.group(1).split(",")], chunk))
    return out


def test_at_least_ten_questions() -> None:
    assert len(_queries()) >= 10
    assert README_BEGIN in README.read_text(encoding="utf-8")


@pytest.mark.parametrize(("question", "columns", "sql"), _queries(), ids=[q[0][:60] for q in _queries()])
def test_example_query_answers(con: duckdb.DuckDBPyConnection, question: str, columns: list[str], sql: str) -> None:
    rel = con.sql(sql)
    assert rel.columns == columns, question
    rows = rel.fetchall()
    assert len(rows) >= 1, f"no rows: {question}"


def test_example_failure_queries_count_what_the_reports_count(con: duckdb.DuckDBPyConnection) -> None:
    """The two blame queries count every killed run, requeued ones too, so their infrastructure total is
    marts.failure_attribution_summary's (which the nightly report reads): they once read the final runs only."""
    by_question = {q: sql for q, _, sql in _queries()}
    why = next(sql for q, sql in by_question.items() if q.startswith("Why did jobs fail"))
    who = next(sql for q, sql in by_question.items() if q.startswith("Which users were hit by infrastructure"))
    runs, lost = con.sql(f"SELECT sum(runs), sum(gpu_hours_lost) FROM ({why}) WHERE attribution = 'infrastructure'"
                         ).fetchall()[0]
    cutoff = "(SELECT max(end_day) FROM core.jobs) - INTERVAL 30 DAY"
    want_runs, want_lost, requeued = con.sql(
        f"""SELECT sum(runs), sum(lost_gpu_hours), sum(runs - jobs) FROM marts.failure_attribution_summary
            WHERE scope = 'day' AND attribution = 'infrastructure' AND state = '(all)' AND day >= {cutoff}""").fetchall()[0]
    assert requeued > 0  # the simulated warehouse has requeued infrastructure kills: the case is exercised
    assert runs == want_runs
    assert lost == pytest.approx(want_lost, abs=0.05 * 20)  # rounded to 0.1 per row
    assert con.sql(f"SELECT sum(runs_killed) FROM ({who})").fetchall()[0][0] == want_runs
