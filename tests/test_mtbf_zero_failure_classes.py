"""A component class that can fail but did not is a result, not a missing row (outside probe AO, finding 2).

Probe AO: 7 days of gpu[001-048], 7,742.6278 node-hours in service, no NVLink or thermal evidence:
``marts.mtbf`` had no row for them and the SLO report left them out. Right: "0 failures in 7,742.6 h:
MTBF ≥ 2,098.9 h" — T / 3.6889, the lower end of the two-sided 95 % Garwood interval the mart's ci_low
already is (chi2(0.975; 2) / 2 = 3.68888).
"""

from __future__ import annotations

from datetime import date, datetime, timezone

import duckdb
import polars as pl
import pytest

from gpusre.models.reliability.mtbf import failure_classes, mtbf_table, mtbf_trend, node_exposure
from gpusre.models.warehouse import replace_table
from gpusre.models.vocabulary import load_component_classes
from gpusre.reports.slo.sections import mtbf as mtbf_section
from gpusre.reports.slo.window import SloWindow

UTC = timezone.utc
T_PROBE = 7742.6278  # probe AO's exposure (EXPECTED.md): 8064 - 143.75 - 177.6222 node-h


def _exposure(total: float, period: str = "2026-11") -> pl.DataFrame:
    """One node carrying the whole exposure (per-node detail does not matter to the class rows)."""
    return pl.DataFrame({"period_type": ["all", "month"], "period": ["all", period], "node": ["n1", "n1"],
                         "exposure_hours": [total, total]})


def _incidents(rows: list[tuple[str, str, datetime]]) -> pl.DataFrame:
    return pl.DataFrame({"incident_id": [r[0] for r in rows], "component": [r[1] for r in rows],
                         "start_ts": [r[2] for r in rows], "nodes": [["n1"]] * len(rows), "scope": ["node"] * len(rows)},
                        schema_overrides={"start_ts": pl.Datetime("us", "UTC")})


def test_the_classes_come_from_the_catalog() -> None:
    catalog = set(load_component_classes()["component_class"])
    got = set(failure_classes()["component_class"])
    # every class a catalog component belongs to, except the bucket unknown components fall to
    assert got == catalog - {"other"} and {"nvlink", "thermal", "gpu"} <= got
    per_gpu = dict(failure_classes().rows())
    assert per_gpu["nvlink"] is True and per_gpu["thermal"] is False


def test_a_class_without_failures_has_its_lower_limit() -> None:
    t0, t1 = datetime(2026, 11, 2, tzinfo=UTC), datetime(2026, 11, 9, tzinfo=UTC)
    # five GPU faults (Xid 79 / 95 as pcie_bus / gpu_memory), no NVLink or thermal evidence
    inc = _incidents([(f"g{i}", "pcie_bus" if i % 2 else "gpu_memory", datetime(2026, 11, 3 + i, tzinfo=UTC))
                      for i in range(5)])
    table = mtbf_table(inc, _exposure(T_PROBE), 8, t0, t1, min_failures=3)
    classes = table.filter(pl.col("scope") == "component_class")
    for period in ("all", "2026-11"):
        for klass in ("nvlink", "thermal"):
            row = classes.filter((pl.col("period") == period) & (pl.col("component") == klass)).row(0, named=True)
            assert (row["failures"], row["mtbf_hours"], row["ci_high"], row["sufficient"]) == (0, None, None, False)
            assert row["ci_low"] == pytest.approx(2098.91, abs=0.01)  # 7,742.6278 / 3.688879
            assert row["rate_per_1000_node_days"] == 0.0
            assert row["note"] == "0 failures in 7,742.6 h: MTBF ≥ 2,098.9 h (95 % lower limit)"
    nvlink = classes.filter((pl.col("period") == "all") & (pl.col("component") == "nvlink")).row(0, named=True)
    assert nvlink["exposure_gpu_hours"] == pytest.approx(T_PROBE * 8)  # a per-GPU class: its GPU-hours too
    gpu = classes.filter((pl.col("period") == "all") & (pl.col("component") == "gpu")).row(0, named=True)
    assert gpu["mtbf_hours"] == pytest.approx(T_PROBE / 5) and gpu["note"] == ""  # 1,548.53 h, as before
    # "other" (not classified) gets no zero row; components only when they failed
    assert "other" not in classes["component"].to_list()
    assert sorted(table.filter(pl.col("scope") == "component").filter(pl.col("period") == "all")["component"]) == [
        "gpu_memory", "pcie_bus"]


def test_the_month_trend_skips_classes_that_failed_in_neither_month() -> None:
    t0, t1 = datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    # gpu: 4 in October, 1 in November (tested); storage: 1 in October only; nvlink never
    inc = _incidents([*[(f"g{i}", "pcie_bus", datetime(2026, 10, 5 + i, tzinfo=UTC)) for i in range(4)],
                      ("g9", "pcie_bus", datetime(2026, 11, 5, tzinfo=UTC)),
                      ("s1", "storage", datetime(2026, 10, 20, tzinfo=UTC))])
    exposure = node_exposure([f"n{i}" for i in range(1, 11)], t0, t1)
    trend = mtbf_trend(mtbf_table(inc, exposure, 8, t0, t1))
    got = {(r["scope"], r["component"]): (r["failures"], r["previous_failures"], r["direction"])
           for r in trend.iter_rows(named=True)}
    assert set(got) == {("cluster", "all"), ("component_class", "gpu"), ("component_class", "storage")}
    assert got[("component_class", "gpu")][:2] == (1, 4)
    assert got[("component_class", "storage")] == (0, 1, "insufficient data")


def test_the_slo_report_shows_the_lower_limit(tmp_path) -> None:  # noqa: ANN001 - pytest path
    t0, t1 = datetime(2026, 11, 2, tzinfo=UTC), datetime(2026, 11, 9, tzinfo=UTC)
    inc = _incidents([(f"g{i}", "pcie_bus", datetime(2026, 11, 3 + i, tzinfo=UTC)) for i in range(5)])
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute("SET TimeZone='UTC'")
    con.execute("CREATE SCHEMA marts")
    replace_table(con, "marts.mtbf", mtbf_table(inc, _exposure(T_PROBE), 8, t0, t1))
    sec = mtbf_section.build(con, SloWindow(date(2026, 11, 2), date(2026, 11, 8), t1, "t"))
    rows = [[c.text for c in r] for item in sec.items if hasattr(item, "rows") for r in item.rows]
    nvlink = next(r for r in rows if r[0] == "NVLink / NVSwitch")
    assert nvlink[2:6] == ["0", "7,743", "≥ 2,099 h (0 failures)", "≥ 2,099 h"]
    assert next(r for r in rows if r[0] == "Thermal")[4] == "≥ 2,099 h (0 failures)"
