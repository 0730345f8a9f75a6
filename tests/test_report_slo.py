"""SLO review report: rendered from a real warehouse (small simulation through the whole pipeline);
every takeaway's numbers are checked against the marts, insufficient rows never show a point estimate,
warehouse text is escaped, an empty or broken warehouse degrades per section, CLI errors are one line."""

from __future__ import annotations

import html

import re
import shutil
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pytest
from report_html import section, visible_text

from gpusre.reports.nightly import ReportPaths
from gpusre.reports.slo import render_slo_report
from gpusre.models.warehouse import connect
from gpusre.pipelines.cli import main
from gpusre.pipelines.runner import RunSummary

# The warehouse: sim_warehouse.RICH_CONFIG, built once per session (conftest.rich_warehouse). Fault
# rates raised so that every mart has rows: 45 days cross a month boundary (mtbf_trend), some
# component classes fall below min_failures in September (insufficient data), and 1-GPU jobs see no
# infrastructure failure at all.
XSS = "<script>alert(1)</script>"
EVIL_USER = "<img src=x>eve"
SECTIONS = {
    "slo": "SLO status and error budgets",
    "mtbf": "MTBF by component class",
    "failure-rate": "Node failure rate vs published figures",
    "mttf": "Job MTTF by size and projection",
    "ettr": "ETTR by run size: measured vs expected",
    "goodput": "Goodput",
    "incidents": "Top incidents by lost GPU-hours",
}
SLI_LABELS = {"node_availability": "Node availability", "job_infra_success": "Jobs not killed by the infrastructure",
              "ettr_large_runs": "ETTR of large runs", "goodput": "Goodput"}


# --------------------------------------------------------------------------------------------
# fixtures and helpers


@pytest.fixture(scope="module")
def warehouse(rich_warehouse: tuple[Path, RunSummary]) -> Path:
    return rich_warehouse[0]


@pytest.fixture(scope="module")
def window(warehouse: Path) -> tuple[date, date]:
    """The documented default: 30 days ending on the latest day of marts.slo_daily, but not after the last
    day the job dumps cover completely (the nightly report's "last night": the day before the latest
    activity seen in the dumps, and no later than the last job end day)."""
    con = connect(warehouse, read_only=True)
    try:
        last_slo = con.execute("SELECT max(day) FROM marts.slo_daily").fetchone()[0]
        seen, last_end = con.execute(
            """SELECT max(COALESCE(end_ts, start_ts + to_seconds(COALESCE(elapsed_s, 0))))::DATE - 1, max(end_day)
               FROM core.jobs""").fetchone()
    finally:
        con.close()
    end = min(last_slo, seen, last_end)
    return end - timedelta(days=29), end


@pytest.fixture(scope="module")
def report(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[ReportPaths, str, str]:
    con = connect(warehouse, read_only=True)
    try:
        paths = render_slo_report(con, tmp_path_factory.mktemp("out"), warehouse_label=str(warehouse))
    finally:
        con.close()
    return paths, paths.html.read_text(encoding="utf-8"), paths.markdown.read_text(encoding="utf-8")


@pytest.fixture
def mart(warehouse: Path):
    con = connect(warehouse, read_only=True)
    yield con
    con.close()


def _rows(fragment: str) -> list[list[str]]:
    """Body rows of every table in an HTML fragment, as lists of visible cell texts."""
    rows = []
    for body in re.findall(r"<tbody>(.*?)</tbody>", fragment, flags=re.S):
        for tr in re.findall(r"<tr>(.*?)</tr>", body, flags=re.S):
            rows.append([visible_text(td) for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, flags=re.S)])
    return rows


def _takeaways(fragment: str) -> list[str]:
    return [visible_text(t) for t in re.findall(r'<figcaption class="takeaway">(.*?)</figcaption>', fragment, flags=re.S)]


def _pct(x: float, decimals: int = 1) -> str:
    return f"{x * 100:.{decimals}f} %"


def _h(x: float) -> str:
    """Hours as the report prints them in sentences."""
    return f"{x:,.0f} h" if x >= 100 else f"{x:.1f} h" if x >= 10 else f"{x:.2f} h"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


# --------------------------------------------------------------------------------------------
# the report on the simulated warehouse


def test_default_window_file_names_and_self_contained(report: tuple[ReportPaths, str, str],
                                                      window: tuple[date, date]) -> None:
    paths, page, md = report
    start, end = window
    assert paths.html.name == f"slo-{start.isoformat()}_{end.isoformat()}.html"
    assert paths.markdown == paths.html.with_suffix(".md")
    assert not list(paths.html.parent.glob("*.tmp"))
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert f"{start.isoformat()} … {end.isoformat()}" in page
    assert not re.search(r"<script\b", page, re.I)
    assert not re.search(r"<(link|img|iframe)\b", page, re.I)
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", page, re.I)
    assert refs and all(r.startswith("#") for r in refs), "only in-page references allowed"
    assert "https://" not in page and "http://" not in page.replace("http://www.w3.org/", "")
    assert md.startswith("# GPU cluster SLO review") and paths.html.name in md


def test_every_section_present_with_chart_and_takeaway(report: tuple[ReportPaths, str, str]) -> None:
    _, page, md = report
    assert "Could not be computed" not in page
    for key, title in SECTIONS.items():
        sec = section(page, key)
        assert title in visible_text(sec), key
        assert "No data yet" not in sec, key
        assert "<svg" in sec, f"{key} has no chart"
        takes = _takeaways(sec)
        assert takes and all(re.search(r"\d", t) for t in takes), f"{key}: takeaways need numbers: {takes}"
        assert f"## {title}" in md
    assert page.count("<svg") >= 9  # burn-down, MTBF, r_f, projection, KM, ETTR, waterfall, daily goodput, incidents
    defs = visible_text(section(page, "definitions"))
    for term in ("MTBF", "Garwood CI", "r_f", "ETTR", "Goodput", "Burn rate", "Error budget"):
        assert term in defs
    for cite in ("Kokolis et al., HPCA 2025", "Llama 3 Herd of Models §3.3.4", "Google SRE Workbook"):
        assert cite in visible_text(page)


def test_sli_definitions_are_the_marts(report: tuple[ReportPaths, str, str], window: tuple[date, date],
                                       mart: duckdb.DuckDBPyConnection) -> None:
    """Each SLI is defined once, in marts.slo_daily.definition (ETTR's depends on settings): the report's
    Definitions and the status table's hover text quote it, never a text of their own."""
    _, page, _ = report
    defs = " ".join(visible_text(section(page, "definitions")).split())
    status = section(page, "slo")
    stored = mart.execute("SELECT sli, arg_max(definition, day) FROM marts.slo_daily WHERE day BETWEEN ? AND ? "
                          "GROUP BY sli", list(window)).fetchall()
    assert {sli for sli, _ in stored} == {"node_availability", "job_infra_success", "ettr_large_runs", "goodput"}
    for sli, definition in stored:
        assert definition[1:] in defs, sli
        assert f'title="{definition}"' in html.unescape(status), sli


def test_slo_status_numbers_match_the_mart(report: tuple[ReportPaths, str, str], window: tuple[date, date],
                                           mart: duckdb.DuckDBPyConnection) -> None:
    _, page, _ = report
    sec = section(page, "slo")
    text = visible_text(sec)
    rows = {r[0]: r for r in _rows(sec)}
    sums = mart.execute("""SELECT sli, sum(good), sum(total), any_value(objective) FROM marts.slo_daily
                           WHERE day BETWEEN ? AND ? GROUP BY sli""", list(window)).fetchall()
    assert len(sums) == 4
    checked = 0
    for sli, good, total, objective in sums:
        row = rows[SLI_LABELS[sli]]
        if total:
            value = good / total
            left = 1 - (total - good) / (round(1 - objective, 15) * total)
            assert row[2] == _pct(value, 2), (sli, row)
            assert row[3] == ("yes" if value >= objective else "no")
            assert row[4] == f"{left * 100:.0f} %".replace("-", "\u2212"), (sli, row)
            assert f"{_pct(value, 2)} (objective {objective * 100:.4g} %" in text
            checked += 1
        else:
            assert row[2] == "–" and "no events for" in text
    assert checked >= 3
    last = dict(mart.execute("SELECT sli, budget_remaining FROM marts.slo_daily WHERE day = ?", [window[1]]).fetchall())
    for sli, remaining in last.items():
        if remaining is not None:
            # column 6 is "Rolling budget exhausted" (the mart's first exhausted day in the window), 7 its budget
            assert rows[SLI_LABELS[sli]][7] == f"{remaining * 100:.0f} %".replace("-", "\u2212")
    spans = dict(mart.execute("SELECT sli, min(greatest(start_day, ?::DATE)) FROM marts.slo_exhausted_spans "
                              "WHERE end_day >= ? AND start_day <= ? GROUP BY sli",
                              [window[0], window[0], window[1]]).fetchall())
    for sli in last:
        gone = rows[SLI_LABELS[sli]][6]
        assert gone == (spans[sli].isoformat() if sli in spans else "–") or gone.startswith(spans[sli].isoformat()), sli
    met = sum(1 for _, g, t, o in sums if t and g / t >= o)
    assert text.count(f"{met} of {sum(1 for s in sums if s[2])} SLOs met their objective") == 1


def test_mtbf_takeaway_matches_trend_and_insufficient_rows_have_no_estimate(
        report: tuple[ReportPaths, str, str], mart: duckdb.DuckDBPyConnection) -> None:
    _, page, md = report
    sec = section(page, "mtbf")
    take = _takeaways(sec)[0]
    t = mart.execute("""SELECT period, previous_period, mtbf_hours, rate_ratio, p_value, direction FROM marts.mtbf_trend
                        WHERE scope = 'cluster'""").fetchone()
    lo, hi = mart.execute("""SELECT ci_low, ci_high FROM marts.mtbf WHERE period_type = 'month' AND scope = 'cluster'
                             AND period = ?""", [t[0]]).fetchone()
    assert f"Cluster MTBF per node was {_h(t[2])} in {t[0]} (95 % CI {lo:,.0f}–{hi:,.0f} h)" in take
    change = (1 / t[3] - 1) * 100
    assert f"{abs(change):.0f} % {'higher' if change > 0 else 'lower'} than in {t[1]} ({_p(t[4])}, {t[5]})" in take

    insufficient = mart.execute("""SELECT period, note, rate_per_1000_node_days, failures, ci_low FROM marts.mtbf
                                   WHERE scope = 'component_class' AND period_type = 'month' AND NOT sufficient
                                     AND period IN (SELECT DISTINCT period FROM marts.mtbf WHERE period_type = 'month')
                                   """).fetchall()
    assert insufficient, "the simulation should leave some class below min_failures"
    rows = _rows(sec)
    for period, note, rate, failures, lo in insufficient:
        row = next(r for r in rows if r[1] == period and r[-1] == note)
        # a class that did not fail shows its lower limit, one with too few failures "insufficient data"
        shown = f"≥ {_h(lo)} (0 failures)" if failures == 0 else "insufficient data"
        assert row[4] == shown and row[7] == "–" and (failures == 0 or f"{rate:.2f}" not in row), row
    assert "insufficient data" in re.search(r"<svg.*?</svg>", sec, flags=re.S).group(0)  # chart marks them too
    assert "insufficient data" in md

    # Job MTTF: the 1-GPU bucket saw no infrastructure failure; its row gives the note, never a point estimate.
    note, lo1, hi1 = mart.execute("SELECT note, ci_low, ci_high FROM marts.job_mttf_by_size WHERE NOT sufficient "
                                  "ORDER BY bucket_order LIMIT 1").fetchone()
    row = next(r for r in _rows(section(page, "mttf")) if r[-1] == note)
    assert row[5] == "insufficient data"
    assert row[6] == (f"≥ {_h(lo1)}" if hi1 is None else f"{_h(lo1)[:-2]}–{_h(hi1)}")


def test_failure_rate_and_mttf_takeaways_match_the_marts(report: tuple[ReportPaths, str, str],
                                                         mart: duckdb.DuckDBPyConnection) -> None:
    _, page, _ = report
    rate, lo, hi = mart.execute("""SELECT rate_per_1000_node_days, ci_low, ci_high FROM marts.node_failure_rate
                                   WHERE period_type = 'all' AND variant = 'hw_incidents'""").fetchone()
    take = _takeaways(section(page, "failure-rate"))[0]
    assert f"The cluster had {rate:.2f} hardware failures per 1,000 node-days (95 % CI {lo:.2f}–{hi:.2f})" in take
    # 28 per 1,000 node-days in this simulation: every published figure lies below the interval.
    assert "Meta RSC-1's 6.50, Meta RSC-2's 2.34 and Llama 3's ≈ 3.8 lie below it" in take

    sec = section(page, "mttf")
    take = _takeaways(sec)[0]
    proj = dict(mart.execute("SELECT n_gpus, mttf_hours FROM marts.job_mttf_projection "
                             "WHERE kind = 'projected'").fetchall())
    for n in (1024, 16384, 131072):
        assert f"{_h(proj[n])} at {n:,} GPUs" in take
    assert "against Meta RSC-1's published 7.9 h, 1.8 h, 0.23 h" in take
    ex, ex_lo, ex_hi = mart.execute("SELECT exponent, exponent_ci_low, exponent_ci_high FROM marts.job_mttf_projection "
                                    "LIMIT 1").fetchone()
    assert f"free exponent {ex:.2f}, 95 % CI {ex_lo:.2f}–{ex_hi:.2f}" in take
    largest = mart.execute("""SELECT gpus_bucket, mttf_hours FROM marts.job_mttf_by_size WHERE sufficient
                              ORDER BY bucket_order DESC LIMIT 1""").fetchone()
    assert f"to {_h(largest[1])}" in take and f"for {largest[0]} GPU jobs" in take
    assert "Meta RSC-1 (published)" in sec  # hollow reference markers in the chart's legend


def test_ettr_goodput_and_incident_takeaways_match_the_marts(report: tuple[ReportPaths, str, str],
                                                             window: tuple[date, date],
                                                             mart: duckdb.DuckDBPyConnection) -> None:
    _, page, _ = report
    runs = mart.execute("""SELECT n_gpus, ettr, ettr_excl_queue FROM marts.ettr_runs WHERE NOT ongoing AND ettr IS NOT NULL
                           AND CAST(timezone('UTC', last_end_ts) AS DATE) BETWEEN ? AND ?""", list(window)).fetchall()
    bounds = [(1, 1, "1"), (2, 8, "2-8"), (9, 64, "9-64"), (65, 256, "65-256"), (257, 1024, "257-1024")]
    bucket = max((next(i for i, (a, b, _) in enumerate(bounds) if a <= n <= b) for n, _, _ in runs))
    vals = sorted(e for n, e, _ in runs if bounds[bucket][0] <= n <= bounds[bucket][1])
    excl = [x for n, _, x in runs if bounds[bucket][0] <= n <= bounds[bucket][1]]
    median = mart.execute("SELECT median(v) FROM unnest(?::DOUBLE[]) t(v)", [vals]).fetchone()[0]
    median_excl = mart.execute("SELECT median(v) FROM unnest(?::DOUBLE[]) t(v)", [excl]).fetchone()[0]
    sec = section(page, "ettr")
    take = _takeaways(sec)[0]
    assert f"Runs of {bounds[bucket][2]} GPUs that ended in the window had a median ETTR of {median:.2f} " \
           f"with queue wait and {median_excl:.2f} without ({len(vals)} runs)" in take
    expected = mart.execute("SELECT expected_ettr FROM marts.ettr_by_size WHERE gpus_bucket = ?",
                            [bounds[bucket][2]]).fetchone()[0]
    assert f"against {expected:.2f} expected from failures alone" in take
    notes = visible_text(sec)
    assert "Assumptions, not measurements" in notes and "account override" in notes and "site default" in notes

    cap, idle, prod, maint = mart.execute("""SELECT sum(capacity_gpu_hours), sum(idle_gpu_hours),
                                                    sum(productive_gpu_hours), sum(maintenance_gpu_hours)
                                             FROM marts.goodput_daily WHERE day BETWEEN ? AND ?""",
                                          list(window)).fetchone()
    take = _takeaways(section(page, "goodput"))[0]
    assert f"Of {cap:,.0f} GPU-hours of capacity in the window, {_pct(idle / cap)} sat idle" in take
    # the goodput SLO leaves planned maintenance out of capacity (as node availability does): both are quoted
    slo = (f" ({_pct(prod / (cap - maint))} of the capacity outside planned maintenance, what the goodput SLO "
           "measures)" if maint else "")
    assert f"goodput was {_pct(prod / cap)}{slo} against an objective of 70 %" in take

    n, lost = mart.execute("""SELECT count(*), coalesce(sum(lost_gpu_hours), 0) FROM marts.hw_incidents
                              WHERE CAST(timezone('UTC', start_ts) AS DATE) BETWEEN ? AND ?""", list(window)).fetchone()
    take = _takeaways(section(page, "incidents"))[0]
    assert take.startswith(f"{n} hardware incidents started in the window") and f"lost {lost:,.1f} GPU-hours" in take
    assert len(_rows(section(page, "incidents"))) == min(n, 10)


def test_explicit_window_limits_the_windowed_numbers(warehouse: Path, tmp_path: Path,
                                                     mart: duckdb.DuckDBPyConnection) -> None:
    d0, d1 = date(2026, 9, 1), date(2026, 9, 7)
    con = connect(warehouse, read_only=True)
    try:
        paths = render_slo_report(con, tmp_path, d0, d1, warehouse_label="w")
    finally:
        con.close()
    assert paths.html.name == "slo-2026-09-01_2026-09-07.html"
    page = paths.html.read_text(encoding="utf-8")
    cap, prod = mart.execute("""SELECT sum(capacity_gpu_hours), sum(productive_gpu_hours) FROM marts.goodput_daily
                                WHERE day BETWEEN ? AND ?""", [d0, d1]).fetchone()
    assert f"Of {cap:,.0f} GPU-hours of capacity in the window" in _takeaways(section(page, "goodput"))[0]
    assert f"goodput was {_pct(prod / cap)}" in visible_text(section(page, "goodput"))
    with pytest.raises(ValueError, match="starts after it ends"):
        render_slo_report(mart, tmp_path, d1, d0)


def test_hostile_run_name_and_user_are_escaped(warehouse: Path, window: tuple[date, date], tmp_path: Path) -> None:
    copy = tmp_path / "evil.duckdb"
    shutil.copy(warehouse, copy)
    con = duckdb.connect(str(copy))
    end_ts = f"{window[1].isoformat()} 12:00:00+00"
    con.execute(f"""INSERT INTO marts.ettr_runs
                    SELECT * REPLACE ('evil-run' AS run_id, ? AS name, ? AS "user", 2048 AS n_gpus, 256 AS n_nodes,
                                      false AS ongoing, 0.42 AS ettr, TIMESTAMPTZ '{end_ts}' AS last_end_ts)
                    FROM marts.ettr_runs WHERE NOT ongoing LIMIT 1""", [XSS, EVIL_USER])
    paths = render_slo_report(con, tmp_path / "out", *window, warehouse_label=str(copy))
    con.close()
    page = paths.html.read_text(encoding="utf-8")
    md = paths.markdown.read_text(encoding="utf-8")
    assert XSS not in page and EVIL_USER not in page
    assert not re.search(r"<script\b", page, re.I) and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    row = next(r for r in _rows(section(page, "ettr")) if r[0] == "evil-run")
    assert row[1] == EVIL_USER and row[3] == XSS  # shown as text
    assert XSS not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert "Runs of >1024 GPUs that ended in the window had a median ETTR of 0.42 with queue wait and" in visible_text(page)


def test_broken_mart_only_breaks_its_section(warehouse: Path, window: tuple[date, date], tmp_path: Path) -> None:
    copy = tmp_path / "broken.duckdb"
    shutil.copy(warehouse, copy)
    con = duckdb.connect(str(copy))
    con.execute("CREATE OR REPLACE TABLE marts.goodput_daily AS SELECT 1 AS unexpected")
    paths = render_slo_report(con, tmp_path / "out", *window)
    con.close()
    page = paths.html.read_text(encoding="utf-8")
    assert "Could not be computed" in section(page, "goodput")
    for key in ("slo", "mtbf", "mttf", "ettr", "incidents"):
        assert "Could not be computed" not in section(page, key) and "<svg" in section(page, key), key


@pytest.mark.parametrize("kind", ["blank", "ddl"])
def test_empty_warehouse_renders_no_data_yet(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "empty.duckdb"
    con = duckdb.connect(str(path)) if kind == "blank" else connect(path)  # connect() applies the DDL
    paths = render_slo_report(con, tmp_path / "out", warehouse_label=str(path))
    con.close()
    page = paths.html.read_text(encoding="utf-8")
    assert "Could not be computed" not in page
    for key in SECTIONS:
        assert "No data yet" in section(page, key), key
    assert "No data yet" in section(page, "summary")
    assert "No data yet" in paths.markdown.read_text(encoding="utf-8")
    assert re.fullmatch(r"slo-\d{4}-\d\d-\d\d_\d{4}-\d\d-\d\d\.html", paths.html.name)


# --------------------------------------------------------------------------------------------
# command line


def test_cli_writes_the_report(warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["report", "slo", "--warehouse", str(warehouse), "--out", str(tmp_path), "--from", "2026-09-01",
               "--to", "2026-09-10"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    written = [Path(p) for p in out.split()]
    assert [p.name for p in written] == ["slo-2026-09-01_2026-09-10.html", "slo-2026-09-01_2026-09-10.md"]
    assert all(p.is_file() for p in written)


@pytest.mark.parametrize(("args", "code", "message"), [
    (["--from", "2026-13-01"], 2, "--from: not a date (YYYY-MM-DD): '2026-13-01'"),
    (["--to", "yesterday"], 2, "--to: not a date (YYYY-MM-DD): 'yesterday'"),
    (["--from", "2026-09-10", "--to", "2026-09-01"], 2, "--from 2026-09-10 is after --to 2026-09-01"),
])
def test_cli_bad_dates_are_one_line_errors(warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           args: list[str], code: int, message: str) -> None:
    rc = main(["report", "slo", "--warehouse", str(warehouse), "--out", str(tmp_path / "o"), *args])
    out, err = capsys.readouterr()
    assert rc == code and out == ""
    assert err.strip() == f"gpusre: error: {message}"
    assert not (tmp_path / "o").exists()


def test_cli_missing_warehouse_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["report", "slo", "--warehouse", str(tmp_path / "nope.duckdb"), "--out", str(tmp_path / "o")])
    _, err = capsys.readouterr()
    assert rc == 1
    assert err.count("\n") == 1 and "nope.duckdb" in err and "does not exist" in err and "Traceback" not in err
    assert not (tmp_path / "nope.duckdb").exists()  # a typo must not create an empty warehouse


def test_the_checkpoint_what_if_says_when_its_failure_rate_is_thin(warehouse: Path, tmp_path: Path) -> None:
    """The failure-rate section calls a whole-record rate from few failures insufficient; the what-if that
    uses the same rate says so instead of quoting it as a firm figure."""
    import shutil

    copy = tmp_path / "w.duckdb"
    shutil.copy(warehouse, copy)
    con = connect(copy)
    try:
        firm = visible_text(render_slo_report(con, tmp_path / "firm").html.read_text(encoding="utf-8"))
        con.execute("UPDATE marts.node_failure_rate SET sufficient = FALSE WHERE period = 'all' "
                    "AND variant = 'hw_incidents'")
        failures = con.execute("SELECT failures FROM marts.node_failure_rate WHERE period = 'all' "
                               "AND variant = 'hw_incidents'").fetchone()[0]
        thin = visible_text(render_slo_report(con, tmp_path / "thin").html.read_text(encoding="utf-8"))
    finally:
        con.close()
    caveat = f"from only {failures} failures, too few for a point estimate: indicative only"
    assert "Checkpoint what-if" in firm and "too few for a point estimate" not in firm
    assert caveat in thin


def _month_window(month: str) -> tuple[date, date]:
    y, m = (int(x) for x in month.split("-"))
    return date(y, m, 1), date(y + (m == 12), m % 12 + 1, 1) - timedelta(days=1)


def test_a_one_month_window_headlines_that_months_reliability_rows(warehouse: Path, tmp_path: Path,
                                                                   mart: duckdb.DuckDBPyConnection) -> None:
    """A monthly review quotes marts.mtbf / marts.node_failure_rate's month row, not the whole record's
    (which includes other months); a window the marts hold no row for names the whole record with its span."""
    months = [r[0] for r in mart.execute("SELECT DISTINCT period FROM marts.mtbf WHERE period_type = 'month' "
                                         "ORDER BY period").fetchall()]
    assert len(months) >= 2, "the simulation crosses a month boundary"
    month = months[0]
    d0, d1 = _month_window(month)
    con = connect(warehouse, read_only=True)
    try:
        page = render_slo_report(con, tmp_path / "m", d0, d1, warehouse_label="w").html.read_text(encoding="utf-8")
        rolling = render_slo_report(con, tmp_path / "r", d0 + timedelta(days=10), d1 + timedelta(days=10),
                                    warehouse_label="w").html.read_text(encoding="utf-8")
    finally:
        con.close()
    mtbf, lo, hi, ok, failures = mart.execute(
        """SELECT mtbf_hours, ci_low, ci_high, sufficient, failures FROM marts.mtbf
           WHERE period_type = 'month' AND period = ? AND scope = 'cluster'""", [month]).fetchone()
    whole = mart.execute("""SELECT mtbf_hours FROM marts.mtbf WHERE period_type = 'all' AND scope = 'cluster'""").fetchone()[0]
    assert f"{whole:,.0f}" != f"{mtbf:,.0f}" or not ok, "the month must differ from the whole record to tell them apart"
    summary = visible_text(section(page, "summary"))
    card = (f"MTBF per node {_h(mtbf) if ok else 'insufficient data'} 95 % CI {lo:,.0f}–{hi:,.0f} h · {month}")
    assert card in " ".join(summary.split()), summary
    rate, rlo, rhi, rok = mart.execute(
        """SELECT rate_per_1000_node_days, ci_low, ci_high, sufficient FROM marts.node_failure_rate
           WHERE period_type = 'month' AND period = ? AND variant = 'hw_incidents'""", [month]).fetchone()
    assert (f"Failures / 1,000 node-days {f'{rate:.2f}' if rok else 'insufficient data'} 95 % CI {rlo:.2f}–{rhi:.2f} "
            f"· {month} · RSC-1 6.50") in " ".join(summary.split())
    lead = visible_text(section(page, "mtbf"))
    if ok:
        assert (f"In {month} the cluster's MTBF per node was {_h(mtbf)} (95 % CI {lo:,.0f}–{hi:,.0f} h, "
                f"{failures} failures)") in lead
    take = _takeaways(section(page, "failure-rate"))[0]
    if rok:
        assert take.startswith(f"The cluster had {rate:.2f} hardware failures per 1,000 node-days "
                               f"(95 % CI {rlo:.2f}–{rhi:.2f}) in {month}")
    # Whole-record figures the marts hold no period for are named as the whole record, with its span.
    assert "Over the whole record 20" in _takeaways(section(page, "mttf"))[0]
    # A window no mart row matches: the whole-record figure, labelled with its span — its days, since the
    # simulated data starts / ends inside its months (marts.day_coverage's first to last complete day; a
    # partial last day only when a failure started on it). It read "whole record (2026-08 … 2026-09)" for
    # data ending 09-15.
    first, last, partial = mart.execute(
        "SELECT min(day), max(day) FILTER (WHERE NOT partial), max(day) FROM marts.day_coverage").fetchone()
    if partial > last and mart.execute("SELECT count(*) FROM marts.hw_incidents WHERE CAST(timezone('UTC', start_ts) "
                                       "AS DATE) > ?", [last]).fetchone()[0]:
        last = partial
    assert (first.day, last.day) != (1, _month_window(months[-1])[1].day), "the record is not whole months"
    record = f"whole record ({first:%Y-%m-%d} … {last:%Y-%m-%d})"
    assert f"MTBF per node {_h(whole)} " in " ".join(visible_text(section(rolling, "summary")).split())
    assert f"· {record}" in visible_text(section(rolling, "summary"))
    assert f"over the {record}, not the window" in _takeaways(section(rolling, "failure-rate"))[0]


def test_the_ettr_lead_names_the_size_that_lost_most_to_interruptions_when_not_the_largest() -> None:
    """Outside probe N: every interruption of the quarter hit 9-64-GPU runs; the lead quoted only the
    65-256 bucket ("restarts 0.0 %"). The bucket that lost most is named too — and nothing is added when
    the largest runs lost most, or nobody lost anything."""
    from gpusre.reports.slo.sections.ettr import most_interrupted

    def row(bucket: str, restart: float | None, lost: float | None) -> dict:
        return {"size_bucket": bucket, "restart_share": restart, "lost_work_share": lost}

    mid, big = row("9-64", 0.001, 0.006), row("65-256", 0.0, 0.0)
    assert most_interrupted([mid, big]) is mid
    assert most_interrupted([row("9-64", 0.001, 0.0), row("65-256", 0.002, 0.0)]) is None
    assert most_interrupted([row("9-64", 0.0, 0.0), row("65-256", 0.0, 0.0)]) is None
    assert most_interrupted([row("9-64", None, None), row("65-256", 0.0, None)]) is None
    assert most_interrupted([]) is None
