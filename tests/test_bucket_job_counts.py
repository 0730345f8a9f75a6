"""Each job-size table's count says what it counts (outside probe AK, minor finding).

Probe AK: the 2-8 GPU bucket read "Jobs 133" in the size and runtime tables and "136" in the queue-wait table and
the SLO review's job-MTTF table: the larger count held 3 jobs still running at the dump's cut (2041302 …, End
``Unknown``), unstated. Now the queue-wait mart carries ``running_jobs`` and the nightly writes "136 (3 still
running)"; the size and runtime tables say they count finished jobs, the job-MTTF table that it counts started ones.

Hand data (tests/test_marts.py's helpers, UTC, D1 = 2026-09-01, D2 = 2026-09-02), the 2-8 bucket:

=====  =========  ====  ===============  =========  =====
job    state      GPUs  start            end        wait
=====  =========  ====  ===============  =========  =====
b1     COMPLETED  4     D1 10:00         D1 11:00   0
b2     FAILED     8     D2 06:00         D2 09:00   30 m
b3     RUNNING    8     D2 20:00         –          5 m     (the probe's convention: End Unknown)
b4     SUSPENDED  2     D2 21:00         –          10 m    (started, not ended: another state that is no end)
=====  =========  ====  ===============  =========  =====

Queue wait: 4 started jobs, 2 of them not ended -> "4 (2 still running)"; runtime: the 2 finished jobs -> "2".
"""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb
import pytest
from test_marts import D1, D2, add_job, build, ts

from gpusre.models.warehouse import apply_ddl
from gpusre.reports.nightly.meta import NightlyMeta
from gpusre.reports.nightly.sections import quantiles, sizes


@pytest.fixture
def con(tmp_path):  # noqa: ANN001, ANN201 - DuckDB connection
    c = duckdb.connect(str(tmp_path / "warehouse.duckdb"))
    apply_ddl(c)
    add_job(c, "b1", "COMPLETED", 4, ts(D1, 10), ts(D1, 11), 0)
    add_job(c, "b2", "FAILED", 8, ts(D2, 6), ts(D2, 9), 30)
    add_job(c, "b3", "RUNNING", 8, ts(D2, 20), None, 5)
    add_job(c, "b4", "SUSPENDED", 2, ts(D2, 21), None, 10)
    build(c)
    yield c
    c.close()


def _meta() -> NightlyMeta:
    return NightlyMeta(D2, D1, D2, datetime(2026, 9, 3, tzinfo=timezone.utc), "t")


def test_the_queue_wait_mart_counts_the_jobs_still_running(con: duckdb.DuckDBPyConnection) -> None:
    assert con.sql("SELECT size_bucket, jobs, running_jobs FROM marts.queue_wait_quantiles ORDER BY bucket_order"
                   ).fetchall() == [("2-8", 4, 2), ("all", 4, 2)]
    assert con.sql("SELECT size_bucket, jobs FROM marts.runtime_quantiles ORDER BY bucket_order").fetchall() \
        == [("2-8", 2), ("all", 2)]


def test_each_table_says_what_its_count_is(con: duckdb.DuckDBPyConnection) -> None:
    queue = quantiles.QUEUE.build(con, _meta())
    (table,) = queue.tables
    assert [r[1].text for r in table.rows] == ["4 (2 still running)", "4 (2 still running)"]
    assert "those still running at the end of the data included" in table.caption
    runtime = quantiles.RUNTIME.build(con, _meta())
    (table,) = runtime.tables
    assert [r[1].text for r in table.rows] == ["2", "2"]
    assert table.caption.startswith("Jobs: GPU jobs that started and ended")
    (table,) = sizes.build(con, _meta()).tables
    assert table.caption.startswith("Jobs: GPU jobs that started and ended")


def test_a_mart_without_running_jobs_shows_the_plain_count(tmp_path) -> None:  # noqa: ANN001
    # a warehouse built before the column: the count as it was, no guess
    c = duckdb.connect(str(tmp_path / "old.duckdb"))
    c.execute("CREATE SCHEMA marts")
    c.execute("""CREATE TABLE marts.queue_wait_quantiles AS SELECT * FROM (VALUES
                 ('2-8', 2, 136, 0.0, 0.0, 4.3, 5.0, 0.2)) t(size_bucket, bucket_order, jobs, p50_min, p90_min,
                 p99_min, max_min, mean_min)""")
    (table,) = quantiles.QUEUE.build(c, _meta()).tables
    assert table.rows[0][1].text == "136"
    c.close()
