"""Each quantity is stated once: the same number in two sections of one report has the same value,
and the pages carry no NaN / None, no broken anchor, no table outside its scrolling wrapper.

One small simulated cluster through the whole pipeline (``gpusre run``), then the nightly, SLO and
incident reports it renders."""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path

import pytest
from report_html import section, visible_text

from gpusre.models.vocabulary import FAILED_STATES
from gpusre.models.warehouse import connect
from gpusre.pipelines.runner import run_pipeline
from gpusre.reports.incident import render_incident_report
from gpusre.reports.kit.charts import _date_tick
from gpusre.reports.kit.formatting import fmt_int, fmt_pct, fmt_span, span_hours
from gpusre.reports.kit.labels import ACTION_LABELS, action_label
from gpusre.simulate import SimulationConfig, simulate_cluster

CONFIG = SimulationConfig(nodes=24, days=21, seed=5, node_failures_per_1000_node_days=40,
                          fabric_faults_kill_jobs=True, syslog_layout="central", log_lines_per_node_day=10)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("consistency")
    simulate_cluster(root / "landing", CONFIG)
    run_pipeline(root / "landing", root / "w.duckdb", root / "reports")
    con = connect(root / "w.duckdb", read_only=True)
    try:
        totals = con.execute("SELECT gpu_jobs, failed_share_gpu_hours FROM marts.job_totals "
                             "WHERE scope = 'all'").fetchone()
        inc = con.execute("""SELECT r.incident_id, r.hours_to_repair FROM marts.incident_repairs AS r
                             WHERE r.hours_to_repair IS NOT NULL ORDER BY r.hours_to_repair DESC LIMIT 1""").fetchone()
        incident = render_incident_report(con, root / "out", inc[0]).html.read_text(encoding="utf-8")
    finally:
        con.close()
    nightly = next((root / "reports").glob("nightly-*.html")).read_text(encoding="utf-8")
    slo = next((root / "reports").glob("slo-*.html")).read_text(encoding="utf-8")
    return {"nightly": nightly, "slo": slo, "incident": incident, "totals": totals, "repair": inc}


def _row(sec: str, first_cell: str) -> list[str]:
    """The visible cells of the table row whose first cell is ``first_cell``."""
    for tr in re.findall(r"<tr>(.*?)</tr>", sec, flags=re.S):
        cells = [visible_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, flags=re.S)]
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r}")


def test_gpu_job_count_is_one_number(pages: dict[str, object]) -> None:
    page = str(pages["nightly"])
    jobs = fmt_int(pages["totals"][0])  # type: ignore[index]
    headline = visible_text(section(page, "headline"))
    assert f"GPU jobs ended {jobs} whole period" in headline
    assert f"{jobs} GPU jobs ended, having used" in headline
    assert _row(section(page, "states"), "All GPU jobs")[1] == jobs
    assert _row(section(page, "sizes"), "All GPU jobs")[1] == jobs


def test_failed_share_is_one_number(pages: dict[str, object]) -> None:
    page = str(pages["nightly"])
    share = fmt_pct(pages["totals"][1])  # type: ignore[index]
    states = visible_text(section(page, "states"))
    assert f"runs that failed ({', '.join(FAILED_STATES)}) {share}." in states
    failures = visible_text(section(page, "failures"))
    quoted = re.findall(r"failed runs hold ([\d.]+ %) of GPU-hours", failures)
    assert quoted in ([share], [])  # stated when last night had failures, then with the same value
    # the headline's and the sections' statements of the failed share, wherever they appear, agree
    said = set(re.findall(r"runs that failed \([A-Z_, ]+\) ([\d.]+ %)|failed runs hold ([\d.]+ %) of GPU-hours",
                          "".join(visible_text(section(page, k)) for k in ("states", "failures"))))
    assert {v for pair in said for v in pair if v} == {share}


def test_one_recovery_duration_per_retrospective(pages: dict[str, object]) -> None:
    page = str(pages["incident"])
    hours = span_hours(pages["repair"][1])  # type: ignore[index]
    text = visible_text(page)
    assert f"every node was back in service {hours} after the first evidence" in visible_text(section(page, "summary"))
    assert f"back in service {hours} after the first evidence" in visible_text(section(page, "repair"))
    # no second, differently measured recovery duration anywhere on the page
    assert "ran a job to completion again" not in text
    assert not re.search(r"back in service at [^.]*? \d[\d.]* (?:h|min|days) after", text)


@pytest.mark.parametrize("name", ["nightly", "slo", "incident"])
def test_page_hygiene(pages: dict[str, object], name: str) -> None:
    page = str(pages[name])
    body = page.split("<body>", 1)[1]
    text = visible_text(body)
    for bad in (r"\bnan\b", r"\bNaN\b", r"\bNone\b", r"\binf\b"):
        assert not re.search(bad, text), f"{name}: {bad} in visible text"
    # every in-page link lands on an element
    ids = set(re.findall(r'id="([^"]+)"', body))
    targets = {htmllib.unescape(h) for h in re.findall(r'href="#([^"]+)"', body)}
    assert targets and targets <= ids, f"{name}: broken anchors {targets - ids}"
    # every table scrolls inside its own wrapper, so no table widens the page or loses a column
    assert body.count("<table") == body.count('<div class="table-wrap">\n<table')
    assert ".table-wrap { overflow-x:auto" in page and "repeat(2, minmax(0, 1fr))" in page
    # no chart without marks
    for svg in re.findall(r"<svg.*?</svg>", body, flags=re.S):
        assert "<path" in svg or "<use" in svg, f"{name}: an empty chart"


def test_durations_never_read_zero_hours() -> None:
    assert [span_hours(h) for h in (0.03, 0.4, 1.2, 37.5, 80)] == ["2 min", "24 min", "72 min", "37.5 h", "3.3 days"]
    assert fmt_span(40) == "40 s"


def test_date_ticks_name_their_own_month() -> None:
    from datetime import datetime

    import matplotlib.dates as mdates

    x = mdates.date2num(datetime(2026, 9, 29))
    assert _date_tick(x, span_days=30) == "29 Sep"
    assert _date_tick(x, span_days=400) == "Sep 2026"


@pytest.mark.parametrize("n_days", [1, 2, 3, 9, 12, 40])
def test_daily_charts_never_repeat_a_day_label(n_days: int) -> None:
    # A one-day trace drew '29 Nov, 29 Nov, 30 Nov, 30 Nov' (hourly ticks labelled by day).
    import re
    from datetime import date, timedelta

    from gpusre.reports.kit.charts import daily_state_chart, goodput_daily_chart

    days = [date(2026, 11, 30) - timedelta(days=n_days - 1 - i) for i in range(n_days)]
    for svg in (daily_state_chart(days, {"COMPLETED": [1.0] * n_days, "FAILED": [0.5] * n_days}, "t"),
                goodput_daily_chart(days, [0.8] * n_days, 0.7, "t")):
        labels = re.findall(r">(\d{1,2} [A-Z][a-z]{2})<", svg)
        assert labels and len(labels) == len(set(labels)), labels
        if n_days <= 3:
            assert set(labels) == {f"{d.day} {d:%b}" for d in days}
    # A day of 1.5 GPU-hours labelled its 0.2-steps '0, 0, 0, 1, 1, 1'.
    ticks = re.findall(r">(\d[\d,]*)<", daily_state_chart(days, {"COMPLETED": [1.0] * n_days,
                                                                "FAILED": [0.5] * n_days}, "t"))
    assert ticks and len(ticks) == len(set(ticks)), ticks


def test_every_catalog_action_has_a_label() -> None:
    import csv
    from importlib.resources import files

    actions = set()
    for name in ("xid.csv", "sxid.csv", "log_patterns.csv"):
        with files("gpusre.models.catalog").joinpath(name).open(encoding="utf-8") as fh:
            actions |= {r["action"] for r in csv.DictReader(fh) if r.get("action")}
    assert actions and actions <= set(ACTION_LABELS), actions - set(ACTION_LABELS)
    assert action_label("RESTART_BM") == "Reboot the node"
