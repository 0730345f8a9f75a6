"""Presentation defects of outside probe U (1,024 H100 nodes, 7 days of data), on hand-made values.

1. truncation never cuts an identifier (switch, node, hostlist, timestamp): only prose words go;
2. one "costliest incident" order for every report, and a tie said as one;
3. periods no wider than the data (suspect nodes' 28-day window, the taxonomy's months, MTBF rows);
5. the checkpoint what-if names the runs its measured ETTR is over (marts.checkpoint_what_if);
6. the goodput chart draws utilization on top, dashed;
7. identical per-node drain lanes of an incident timeline collapse into one hostlist lane.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb

from gpusre.reports.incident.terms import COSTLIEST_ORDER, nodes_phrase, tie_text
from gpusre.reports.kit.formatting import days_of_data_text, shorten

ROOT = Path(__file__).resolve().parents[1]
UTC = timezone.utc


# -- 1. truncation ------------------------------------------------------------------------------


def test_shorten_drops_prose_never_identifiers() -> None:
    text = "Interconnect switch failure under leaf05 (ib_link_down)"  # 56 characters
    assert shorten(text, 80) == text
    # Middle-out: "under" (index 3), then "failure" (2): 44 characters still > 40, then "switch" (1).
    assert shorten(text, 44) == "Interconnect switch … leaf05 (ib_link_down)"
    assert shorten(text, 40) == "Interconnect … leaf05 (ib_link_down)"
    # Only identifiers left: longer than asked rather than "leaf0…".
    assert shorten("leaf05 gpu[0065-0080] 2026-11-24 03:08", 10) == "leaf05 gpu[0065-0080] 2026-11-24 03:08"
    # A word naming the number after it stays with it ("Xid"), words in capitals are kept ("DRAIN", "GPU").
    # Middle (index 5) outwards: "the" (5, -> 47 chars), "because" (4, 39), "fell" (7, 37), "off" (8, 33),
    # "since" (1, 30 <= 30): stop.
    assert shorten("DRAIN since Xid 79 because the GPU fell off the bus", 30) == "DRAIN … Xid 79 … GPU … the bus"
    # keep_head drops from the end: "bus", "the", "off", "fell" -> 'DRAIN since Xid 79 because the GPU …' (36),
    # then "the" (34), "because": 'DRAIN since Xid 79 … GPU …' (26 <= 30).
    assert shorten("DRAIN since Xid 79 because the GPU fell off the bus", 30, keep_head=True) == (
        "DRAIN since Xid 79 … GPU …")


def test_evidence_cell_keeps_the_drain_state_and_time() -> None:
    """Probe U: `DRAIN "Xid 79 GPU fell off the bus" since 202…` lost the drain time."""
    from gpusre.reports.nightly.sections.attribution import _evidence_cell

    state = 'DRAIN "Xid 79 GPU fell off the bus" since 2026-11-24 02:16:00Z'
    cell = _evidence_cell(3, state)
    # "3 log events; " (14) + the frame 'DRAIN "" since 2026-11-24 02:16:00Z' (35) leaves 11 of 60 for the
    # reason: its last prose words go ("bus", "the", "off", "fell"), "Xid 79 GPU" stays.
    assert cell.text == '3 log events; DRAIN "Xid 79 GPU …" since 2026-11-24 02:16:00Z'
    assert cell.title == f"3 log events; {state}"
    assert _evidence_cell(0, 'DOWN "x" since 2026-10-31 03:01:00Z').text == 'DOWN "x" since 2026-10-31 03:01:00Z'
    # A product name (a capital past the first letter) is kept like an identifier: only "error" goes, and
    # the cell stays at 64 characters (nothing else may go).
    assert (_evidence_cell(2, 'DRAIN "NVLink error Xid 74" since 2026-11-24 06:33:00Z').text
            == '2 log events; DRAIN "NVLink … Xid 74" since 2026-11-24 06:33:00Z')


def test_nodes_phrase_cuts_between_whole_names() -> None:
    nodes = [f"gpu{i:04d}" for i in (1, 2, 3, 4, 9, 11, 13, 15, 17, 19, 21)]
    assert nodes_phrase(nodes, 80) == "gpu[0001-0004,0009,0011,0013,0015,0017,0019,0021]"
    # 'gpu[0001-0004,0009]' (19) + ' and 6 more nodes' (17) = 36 <= 40; one more name would be 41.
    assert nodes_phrase(nodes, 40) == "gpu[0001-0004,0009] and 6 more nodes"
    assert nodes_phrase([f"gpu{i:04d}" for i in range(65, 81)], 20) == "gpu[0065-0080]"


# -- 2. the costliest incident --------------------------------------------------------------------


def _incidents_mart(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE SCHEMA marts")
    con.execute("""CREATE TABLE marts.hw_incidents (incident_id VARCHAR, component VARCHAR, cause_class VARCHAR,
                       severity VARCHAR, start_ts TIMESTAMPTZ, nodes VARCHAR[], scope VARCHAR, affected_jobs BIGINT,
                       affected_gpus BIGINT, lost_gpu_hours DOUBLE, root_cause VARCHAR, label_source VARCHAR,
                       leaf_switch VARCHAR, hours_to_recovery DOUBLE, n_events BIGINT)""")
    leaf = [f"gpu{i:04d}" for i in range(65, 81)]
    rows = [  # four incidents lose 1,024 GPU-h each, as in probe U; one loses 256.
        ("inc-a", "gpu_memory", "2026-11-18 10:00", ["gpu0010"], 1, None, 49),
        ("inc-b", "nvlink", "2026-11-20 03:00", ["gpu0150"], 1, None, 49),
        ("inc-c", "gsp_firmware", "2026-11-21 11:30", ["gpu0200"], 1, None, 1),
        ("inc-d", "network_switch", "2026-11-24 03:05", leaf, 1, "leaf05", 592),
    ]
    for iid, comp, start, nodes, jobs, sw, n_ev in rows:
        con.execute("INSERT INTO marts.hw_incidents VALUES (?, ?, 'hardware', 'high', ?::TIMESTAMPTZ, ?, 'node', ?, "
                    "2048, 1024.0, NULL, NULL, ?, 1.0, ?)", [iid, comp, f"{start}+00", nodes, jobs, sw, n_ev])
    con.execute("INSERT INTO marts.hw_incidents VALUES ('inc-e', 'pcie_bus', 'hardware', 'high', "
                "'2026-11-19 09:00+00'::TIMESTAMPTZ, ['gpu0333'], 'node', 1, 512, 256.0, 'xid 79', NULL, NULL, 2.0, 50)")
    con.execute((ROOT / "sql" / "marts" / "hw_incidents_by_component.sql").read_text())


def test_one_costliest_order_breaks_ties_by_jobs_then_nodes() -> None:
    con = duckdb.connect()
    _incidents_mart(con)
    got = [r[0] for r in con.execute(f"SELECT incident_id FROM marts.hw_incidents ORDER BY {COSTLIEST_ORDER}").fetchall()]
    # 1,024 GPU-h x4, 1 job each: the leaf switch's 16 nodes first, then the earliest start.
    assert got == ["inc-d", "inc-a", "inc-b", "inc-c", "inc-e"]
    assert tie_text(4, 1024.0) == " (one of 4 incidents that each lost 1,024 GPU-hours)"
    assert tie_text(1, 1024.0) == "" and tie_text(None, None) == ""


def test_slo_review_names_the_same_costliest_and_the_tie() -> None:
    from gpusre.reports.slo.sections.incidents import build
    from gpusre.reports.slo.window import SloWindow

    con = duckdb.connect()
    _incidents_mart(con)
    sec = build(con, SloWindow(date(2026, 11, 18), date(2026, 11, 24), datetime(2026, 11, 25, tzinfo=UTC), "t"))
    assert ("the costliest single incident, Interconnect switch failure under leaf05 on 2026-11-24 03:05 UTC, lost "
            "1,024.0 GPU-hours (one of 4 incidents that each lost 1,024 GPU-hours).") in sec.lead
    table = sec.items[-1]
    assert [r[1].text for r in table.rows] == ["inc-d", "inc-a", "inc-b", "inc-c", "inc-e"]
    assert table.rows[0][4].text == "gpu[0065-0080]"  # the hostlist whole (14 characters)


# -- 3. periods no wider than the data ----------------------------------------------------------------


def test_days_of_data_text() -> None:
    assert days_of_data_text(28, date(2026, 11, 18), date(2026, 11, 24)) == (
        "the 7 days of data, 2026-11-18 … 2026-11-24, of a 28-day window")
    assert days_of_data_text(28, date(2026, 10, 1), date(2026, 11, 24)) == "the last 28 days"
    assert days_of_data_text(28, date(2026, 10, 28), date(2026, 11, 24)) == "the last 28 days"  # exactly 28
    assert days_of_data_text(28, None, date(2026, 11, 24)) == "the last 28 days"


def test_taxonomy_period_is_the_data_unless_it_covers_whole_months() -> None:
    from gpusre.reports.nightly.meta import NightlyMeta
    from gpusre.reports.nightly.sections.taxonomy import _period_label

    now = datetime(2026, 11, 25, tzinfo=UTC)
    week = NightlyMeta(date(2026, 11, 24), date(2026, 11, 18), date(2026, 11, 24), now, "wh")
    assert _period_label("2026-11", "2026-11", week) == "2026-11-18 … 2026-11-24"
    whole = NightlyMeta(date(2026, 10, 31), date(2026, 8, 3), date(2026, 10, 31), now, "wh")
    assert _period_label("2026-09", "2026-10", whole) == "2026-09 … 2026-10"
    # Starts part-way into September: the days from the data's first.
    late = NightlyMeta(date(2026, 10, 31), date(2026, 9, 10), date(2026, 10, 31), now, "wh")
    assert _period_label("2026-09", "2026-10", late) == "2026-09-10 … 2026-10-31"
    assert _period_label(None, None, week) == "the whole period"


def test_one_month_of_mtbf_shows_the_whole_record_row_once() -> None:
    from gpusre.reports.slo.sections.mtbf import only_month

    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts")
    con.execute("CREATE TABLE marts.mtbf (period_type VARCHAR, period VARCHAR)")
    con.execute("INSERT INTO marts.mtbf VALUES ('all', 'all'), ('month', '2026-11'), ('month', '2026-11')")
    assert only_month(con, "mtbf") == "2026-11"
    con.execute("INSERT INTO marts.mtbf VALUES ('month', '2026-10')")
    assert only_month(con, "mtbf") is None


# -- 5. the checkpoint what-if's measured ETTR -----------------------------------------------------------


def test_what_if_says_whose_measured_ettr_it_quotes() -> None:
    src = (ROOT / "reports" / "slo" / "sections" / "ettr.py").read_text()
    assert "measured ETTR over the same runs" not in src
    assert "measured ETTR of all runs the ETTR SLO counts (its large runs, not only " in src


# -- 6. the goodput chart ---------------------------------------------------------------------------


def test_goodput_chart_draws_utilization_dashed_on_top() -> None:
    from gpusre.reports.kit.charts import UTILIZATION_LINE_COLOUR, goodput_daily_chart

    days = [date(2026, 11, 18) + timedelta(days=i) for i in range(7)]
    svg = goodput_daily_chart(days, [0.5] * 7, 0.7, "t", utilization=[0.5] * 7)  # they coincide
    colour = UTILIZATION_LINE_COLOUR.lower()
    paths = re.findall(r"<path [^>]*style=\"([^\"]*)\"", svg)
    util = [p for p in paths if colour in p.lower() and "stroke-dasharray" in p]
    goodput = [p for p in paths if "#1a3a5c" in p.lower()]
    assert util and goodput
    # Drawn after (above) the goodput line.
    assert svg.lower().rindex(colour) > svg.lower().index("#1a3a5c")


# -- 7. incident timeline lanes -----------------------------------------------------------------------


def test_same_drains_collapse_into_one_hostlist_lane() -> None:
    from gpusre.reports.incident.sections.timeline import _same_state_lanes

    t0 = datetime(2026, 11, 24, 3, 8, tzinfo=UTC)
    t1 = datetime(2026, 11, 24, 6, 5, tzinfo=UTC)

    def row(node: str, start: datetime = t0, end: datetime = t1, reason: str = "IB link down - leaf05 switch") -> dict:
        return {"node": node, "state": "DRAIN", "reason": reason, "start_ts": start, "end_ts": end,
                "availability_class": "hardware"}

    states = [row(f"gpu{i:04d}") for i in range(65, 81)]
    states.append(row("gpu0099", end=t1 + timedelta(hours=1)))  # came back later: its own lane
    states.append(row("gpu0098", start=t0 - timedelta(minutes=1), reason="other"))
    lanes = _same_state_lanes(states)
    assert [(len(nodes), nodes[0]) for nodes, _ in lanes] == [(1, "gpu0098"), (16, "gpu0065"), (1, "gpu0099")]
    assert len(lanes[1][1]) == 1  # one bar for the 16 nodes
