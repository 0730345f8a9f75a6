"""Presentation defects of outside probe U (1,024 H100 nodes, 7 days of data), on hand-made values.

1. truncation never cuts an identifier (switch, node, hostlist, timestamp): only prose words go;
2. one "costliest incident" order for every report, and a tie said as one;
3. periods no wider than the data (suspect nodes' 28-day window, the taxonomy's months, MTBF rows);
5. the checkpoint what-if names the runs its measured ETTR is over (marts.checkpoint_what_if);
6. the goodput chart draws utilization on top, dashed;
7. identical per-node drain lanes of an incident timeline collapse into one hostlist lane;
8. the same helpers where they were missing: the nightly's top incidents and last night (one costliest, the
   tie, hostlists cut between names, suspect nodes' days of data), the monthly charts' days, the SLO window
   over the whole data span, a health check firing on several components labelled by their family.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb

from gpusre.reports.incident.terms import COSTLIEST_ORDER, nodes_phrase, tie_text
from gpusre.reports.kit.formatting import days_of_data_text, shorten
from gpusre.reports.nightly.meta import NightlyMeta
from gpusre.models.vocabulary import sql_macros

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
    con.execute(sql_macros())  # core.is_failure_incident, as every warehouse has it
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


# -- the shared helpers applied where they were missing (nightly, SLO window, health checks) ---------------


def _week() -> NightlyMeta:
    """The report of probe U: 7 days of data, 2026-11-18 … 2026-11-24."""
    return NightlyMeta(date(2026, 11, 24), date(2026, 11, 18), date(2026, 11, 24), datetime(2026, 11, 25, tzinfo=UTC),
                       "wh")


def test_nightly_top_incidents_name_the_same_costliest_and_the_tie() -> None:
    from gpusre.reports.nightly.sections.incidents import build

    con = duckdb.connect()
    _incidents_mart(con)
    con.execute("ALTER TABLE marts.hw_incidents ADD COLUMN recovered_ts TIMESTAMPTZ")
    con.execute("ALTER TABLE marts.hw_incidents ADD COLUMN nodes_recovered BIGINT")
    con.execute("UPDATE marts.hw_incidents SET recovered_ts = start_ts + INTERVAL 2 HOUR, nodes_recovered = len(nodes)")
    sec = build(con, _week())
    # 4 x 1,024 + 256 = 4,352 GPU-h; the leaf switch's incident first, as the SLO review names it.
    assert sec.lead == ("The top 5 of 5 incidents lost 4,352 GPU-hours (100.0 % of all incident losses); the costliest, "
                        "Interconnect switch under leaf05 from 2026-11-24 03:05 UTC, killed 1 job and lost 1,024 "
                        "GPU-hours (one of 4 incidents that each lost 1,024 GPU-hours); on every incident's nodes a "
                        "job started since its end has completed.")
    table = sec.items[-1]
    assert [r[1].text for r in table.rows] == ["inc-d", "inc-a", "inc-b", "inc-c", "inc-e"]
    assert table.rows[0][4].text == "gpu[0065-0080]"
    # A costliest that shares its loss with no other incident: no tie said.
    con.execute("UPDATE marts.hw_incidents SET lost_gpu_hours = 2000.0 WHERE incident_id = 'inc-b'")
    lead = build(con, _week()).lead
    assert "lost 2,000 GPU-hours; on every" in lead and "one of" not in lead
    # A scattered node list in the table is cut between whole names, never inside one (26 characters).
    con.execute("UPDATE marts.hw_incidents SET nodes = ? WHERE incident_id = 'inc-b'",
                [[f"gpu{i:04d}" for i in (1, 2, 3, 4, 9, 11, 13, 15, 17, 19, 21)]])
    cell = build(con, _week()).items[-1].rows[0][4]
    # 'gpu[0001-0002]' (14) + ' and 9 more nodes' (17) = 31 > 26: the first name only (25 characters).
    assert cell.text == "gpu0001 and 10 more nodes"
    assert cell.title == "gpu[0001-0004,0009,0011,0013,0015,0017,0019,0021]"


def test_last_night_costliest_tie_and_days_of_data() -> None:
    from gpusre.reports.nightly.sections import last_night as ln

    con = duckdb.connect()
    _incidents_mart(con)
    # Three of the four 1,024-GPU-h incidents began on the report day.
    con.execute("UPDATE marts.hw_incidents SET start_ts = start_ts + INTERVAL (date_diff('day', start_ts::DATE, "
                "DATE '2026-11-24')) DAY WHERE incident_id IN ('inc-a', 'inc-b')")
    meta = _week()
    inc = ln._incidents(con, meta, frozenset(), {})
    assert [r["incident_id"] for r in inc["rows"]] == ["inc-d", "inc-b", "inc-a"]
    assert ln._incident_text(inc) == (
        "3 began; the costliest, Interconnect switch failure under leaf05 (gpu[0065-0080]) at 03:05 UTC, killed 1 job "
        "on 2,048 GPUs and lost 1,024 GPU-h (one of 3 incidents that each lost 1,024 GPU-hours).")
    # A hostlist too long for the sentence is cut between whole names.
    long = {"nodes": [f"gpu{i:04d}" for i in (1, 2, 3, 4, 9, 11, 13, 15, 17, 19, 21)], "leaf_switch": None}
    assert ln._where(long) == "gpu[0001-0004,0009] and 6 more nodes"
    assert ln._where({**long, "leaf_switch": "leaf05"}) == "leaf05 (gpu[0001-0004] and 7 more nodes)"
    # Suspect nodes' 28 days said as the 7 days the warehouse holds.
    over = "the 7 days of data, 2026-11-18 … 2026-11-24, of a 28-day window"
    node = {"node": "gpu0010", "hw_episodes": 2, "xid_episodes": 0, "infra_failed_jobs": 1,
            "recommended_action": "drain, reboot"}
    assert ln._repeat_text({"reason": None, "rows": [node], "n": 1}, meta) == (
        f"over {over}: gpu0010 (2 hardware episodes, 1 infrastructure-failed job) \u2014 recommended: drain, reboot.")
    assert ln._repeat_text({"reason": None, "rows": [], "n": 0}, meta) == (
        f"no node of last night's incidents stands out from the fleet over {over}.")
    assert ln._lookback_days(meta) == 7
    full = NightlyMeta(date(2026, 11, 24), date(2026, 9, 1), date(2026, 11, 24), meta.generated_at, "wh")
    assert ln._repeat_text({"reason": None, "rows": [node], "n": 1}, full) == (
        "gpu0010 (2 hardware episodes, 1 infrastructure-failed job in the last 28 days) \u2014 recommended: "
        "drain, reboot.")
    assert ln._lookback_days(full) == 28


def _mtbf_month(con: duckdb.DuckDBPyConnection, *, coverage: bool = True) -> None:
    con.execute("CREATE SCHEMA marts")
    con.execute("CREATE TABLE marts.mtbf (period_type VARCHAR, period VARCHAR)")
    con.execute("INSERT INTO marts.mtbf VALUES ('all', 'all'), ('month', '2026-11')")
    if coverage:  # 7 complete days and the sliver of the 25th a dump cut at 00:15 reaches
        con.execute("""CREATE TABLE marts.day_coverage AS
                       SELECT d::DATE AS day, d::DATE = DATE '2026-11-25' AS partial
                       FROM generate_series(DATE '2026-11-18', DATE '2026-11-25', INTERVAL 1 DAY) t(d)""")


def test_mart_period_one_month_and_a_window_over_the_whole_data() -> None:
    from gpusre.reports.slo.window import MartPeriod, SloWindow, mart_period

    def w(a: date, b: date) -> SloWindow:
        return SloWindow(a, b, datetime(2026, 11, 25, tzinfo=UTC), "t")

    con = duckdb.connect()
    _mtbf_month(con)
    # 30 days ending on the last complete day hold all 7 days of data: the whole record is the window's figure,
    # named by its days (a week of November is not "2026-11").
    assert mart_period(con, w(date(2026, 10, 26), date(2026, 11, 24)), "mtbf") == MartPeriod(
        "all", "all", "2026-11-18 … 2026-11-24 (the whole record)", True)
    # A window short of the data: the whole record, its one month named once.
    assert mart_period(con, w(date(2026, 11, 20), date(2026, 11, 24)), "mtbf") == MartPeriod(
        "all", "all", "whole record (2026-11-18 … 2026-11-24)", False)
    # Without marts.day_coverage the span is unknown: as before, but the month once.
    bare = duckdb.connect()
    _mtbf_month(bare, coverage=False)
    assert mart_period(bare, w(date(2026, 10, 26), date(2026, 11, 24)), "mtbf") == MartPeriod(
        "all", "all", "whole record (2026-11)", False)


def test_monthly_charts_name_the_days_of_a_partial_month() -> None:
    from gpusre.reports.kit.formatting import months_or_days_text
    from gpusre.reports.nightly.sections import shift, states

    assert months_or_days_text("2026-11", "2026-11", date(2026, 11, 18), date(2026, 11, 24)) == (
        "2026-11-18 … 2026-11-24")
    assert months_or_days_text("2026-09", "2026-10", date(2026, 9, 1), date(2026, 10, 31)) == "2026-09 … 2026-10"
    assert months_or_days_text("2026-12", "2026-12", date(2026, 12, 1), date(2026, 12, 31)) == "2026-12"
    assert months_or_days_text(None, None, None, None) == "the whole period"
    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts")
    con.execute("CREATE TABLE marts.gpu_time_by_state (period_type VARCHAR, period VARCHAR)")
    con.execute("INSERT INTO marts.gpu_time_by_state VALUES ('all', 'all'), ('month', '2026-11')")
    assert states._state_period_label(con, _week()) == "2026-11-18 … 2026-11-24"
    con.execute("""CREATE TABLE marts.size_buckets AS SELECT * FROM (VALUES
                     ('month', '2026-11', '1', 1, 0.25), ('month', '2026-11', '2-8', 2, 0.75))
                     t(period_type, period, size_bucket, bucket_order, share_gpu_hours)""")
    sec = shift.build(con, _week())
    assert sec.lead.startswith("The GPU-hour share by job size over 2026-11-18 … 2026-11-24 is shown below")
    assert "Monthly share of GPU-hours by job size, 2026-11-18 … 2026-11-24" in str(sec.items[0])


def test_health_check_spanning_components_is_labelled_by_their_family() -> None:
    """NHC check_nv_healthmon fires on ECC, NVLink and GPU-lost faults: a GPU check, not "PCIe bus" (the most
    common of its firings' components)."""
    import polars as pl

    from gpusre.models.failures.health_checks import check_component, health_check_quality

    t0 = datetime(2026, 11, 20, tzinfo=UTC)

    def nhc(node: str, hours: int, check: str, component: str) -> dict:
        return {"node": node, "ts": t0 + timedelta(hours=hours), "kind": "health_check", "component": component,
                "message": f"Health check failed:  {check}:  x"}

    events = pl.DataFrame(
        [nhc("n1", 0, "check_nv_healthmon", "pcie_bus"), nhc("n2", 0, "check_nv_healthmon", "pcie_bus"),
         nhc("n3", 0, "check_nv_healthmon", "gpu_memory"), nhc("n4", 0, "check_nv_healthmon", "nvlink"),
         nhc("n1", 0, "check_fs_mount_rw", "storage"), nhc("n2", 5, "check_fs_mount_rw", "storage"),
         nhc("n1", 0, "check_nv_switch", "nvlink"), nhc("n2", 0, "check_nv_switch", "nvswitch"),
         nhc("n1", 0, "check_hw_mix", "host_cpu"), nhc("n2", 0, "check_hw_mix", "network")],
        schema={"node": pl.String, "ts": pl.Datetime("us", "UTC"), "kind": pl.String, "component": pl.String,
                "message": pl.String})
    for jobs in (None, pl.DataFrame(schema={"state": pl.String, "end_ts": pl.Datetime("us", "UTC"),
                                            "nodes": pl.List(pl.String)})):
        got = dict(health_check_quality(events, jobs).select("check_name", "component").iter_rows())
        assert got == {"check_nv_healthmon": "gpu",  # gpu class + nvlink class: the GPU family
                       "check_fs_mount_rw": "storage",  # one component: as it is
                       "check_nv_switch": "nvlink",  # two components of one class: the class's own
                       "check_hw_mix": "other"}  # host and network: several families
    assert check_component(["host_cpu", "host_memory"]) == "other"  # the host class has no generic component
    assert check_component(["pcie_bus"], "pcie_bus") == "pcie_bus"


def test_no_hostlist_is_cut_mid_name_in_the_nightly_sections() -> None:
    sections = ROOT / "reports" / "nightly" / "sections"
    for name in ("incidents.py", "last_night.py", "health_checks.py", "alert_hygiene.py"):
        src = (sections / name).read_text()
        assert "truncate(nodes_text(" not in src and "truncate(compress_hostlist(" not in src, name
        assert "truncate(_where(" not in src, name
