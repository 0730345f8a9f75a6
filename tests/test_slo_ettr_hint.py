"""The SLO status says why the ETTR SLO has no events when smaller runs finished (outside probe P: a
GB200 NVL72 site's largest job is one 72-GPU NVLink domain, below the default 256 GPUs)."""

from __future__ import annotations

from datetime import date
from types import SimpleNamespace

import duckdb

from gpusre.reports.slo.sections.status import _ettr_size_hint


def _con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE SCHEMA marts")
    con.execute("CREATE TABLE marts.ettr_runs (n_gpus BIGINT, ongoing BOOLEAN, last_end_ts TIMESTAMPTZ)")
    con.execute("""INSERT INTO marts.ettr_runs VALUES (72, false, '2026-11-21 14:00:30+00'),
                   (32, false, '2026-11-20 10:00:00+00'), (144, true, '2026-11-22 23:00:00+00'),
                   (128, false, '2026-10-01 00:00:00+00')""")
    return con


def test_the_hint_names_the_largest_finished_run_in_the_window() -> None:
    w = SimpleNamespace(start=date(2026, 11, 20), end=date(2026, 11, 22))
    hint = _ettr_size_hint(_con(), w, [SimpleNamespace(sli="ettr_large_runs")])  # type: ignore[arg-type]
    # 144 is still running, 128 ended before the window: the largest finished in it has 72 GPUs
    assert hint == (" (no training run as large as the ETTR SLO judges finished in the window; the largest that "
                    "did had 72 GPUs: cluster.yaml `reliability.ettr_min_run_gpus` sets that size)")


def test_no_hint_for_other_slis_or_without_runs() -> None:
    w = SimpleNamespace(start=date(2026, 11, 20), end=date(2026, 11, 22))
    assert _ettr_size_hint(_con(), w, [SimpleNamespace(sli="goodput")]) == ""  # type: ignore[arg-type]
    empty = SimpleNamespace(start=date(2026, 12, 1), end=date(2026, 12, 2))
    assert _ettr_size_hint(_con(), empty, [SimpleNamespace(sli="ettr_large_runs")]) == ""  # type: ignore[arg-type]
