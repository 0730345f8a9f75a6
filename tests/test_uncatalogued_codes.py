"""An Xid / SXid code the event catalog does not list (a newer driver's) is visible as such: it keeps
its code and kind, gets cause class ``unknown``, action ``CHECK_CATALOG`` and at most the line's own
severity word (medium without one), is no failure evidence, and ``marts.uncatalogued_codes`` plus a
note of the nightly "New log templates" section name it, so an SRE reads NVIDIA's documentation and
extends ``models/catalog/xid.csv`` / ``sxid.csv``. Catalogued codes keep their classes.

Lines are hand-written in the real driver formats (NVRM Xid, NVSwitch SXid, Fabric Manager); the
codes 175, 180 and 29999 are not in the packaged catalogs (Xid 1-172; SXid 1xxxx-2xxxx listed)."""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, failure_events
from gpusre.models.logs.event_catalog import (
    CatalogError,
    classify_messages,
    load_log_patterns,
    load_sxid_catalog,
    load_xid_catalog,
)
from gpusre.models.logs.templates import canonical_forms
from gpusre.models.marts_runner import run_mart_sql
from gpusre.models.sources.syslog.ingest import _events
from gpusre.models.sources.syslog.parse import SyslogInput, parse_syslog_batch
from gpusre.reports.nightly.meta import NightlyMeta
from gpusre.reports.nightly.sections.templates import uncatalogued_notes

CATALOG_DIR = Path(__file__).resolve().parents[1] / "models" / "catalog"
YEAR = (datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 12, 31, tzinfo=timezone.utc))

XID_175 = "NVRM: Xid (PCI:0000:1b:00): 175, pid=4242, name=python3, Unknown event"
XID_79 = "NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def _classes(lines: list[str]) -> list[tuple]:
    out = classify_messages(pl.Series(lines))
    return out.select("kind", "code", "component", "cause_class", "severity", "action").rows()


# --- classification ---------------------------------------------------------------------------------


def test_an_uncatalogued_xid_is_unknown_and_a_catalogued_one_unchanged() -> None:
    assert 175 not in load_xid_catalog()["code"].to_list()
    assert _classes([XID_175, XID_79, "XID 180 Unknown event on GPU (<id>)"]) == [
        ("xid", 175, "gpu", "unknown", "medium", "CHECK_CATALOG"),
        ("xid", 79, "pcie_bus", "hardware", "critical", "RESTART_BM"),  # xid.csv row 79, as before
        ("xid", 180, "gpu", "unknown", "medium", "CHECK_CATALOG"),      # the legacy "XID <n> " form
    ]


def test_an_uncatalogued_code_on_a_specific_xid_shape_is_unknown_too() -> None:
    # The Row Remapper / page-retirement shapes are catalogued by code (63, 64); another code is not.
    rows = _classes(["NVRM: Xid (PCI:0000:10:1c): 175, pid=1896, Row Remapper: New row marked for remapping, "
                     "reset gpu to activate.",
                     "XID 175 Dynamic Page Retirement: New retired page, reload the driver to activate."])
    assert rows == [("ecc_row_remap", 175, "gpu_memory", "unknown", "medium", "CHECK_CATALOG"),
                    ("page_retirement", 175, "gpu_memory", "unknown", "medium", "CHECK_CATALOG")]


def test_an_uncatalogued_sxid_is_unknown_and_keeps_the_lines_own_fatality_word() -> None:
    assert 29999 not in load_sxid_catalog()["code"].to_list()
    fm = "detected NVSwitch {} error 29999 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61"
    assert _classes([
        "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 29999",
        "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 29999, Non-fatal, Link 48 something new",
        # The driver itself says Fatal: the severity says so too, but the class stays unknown (no evidence).
        "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 29999, Fatal, Link 48 something new",
        fm.format("non-fatal"),
        # A catalogued SXid keeps its classes.
        "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up",
    ]) == [
        ("sxid", 29999, "nvswitch", "unknown", "medium", "CHECK_CATALOG"),
        ("sxid", 29999, "nvswitch", "unknown", "medium", "CHECK_CATALOG"),
        ("sxid", 29999, "nvswitch", "unknown", "high", "CHECK_CATALOG"),
        ("sxid", 29999, "nvswitch", "unknown", "medium", "CHECK_CATALOG"),
        ("sxid", 20034, "nvswitch", "hardware", "high", "RESET_GPU"),
    ]


def test_uncatalogued_codes_are_no_failure_evidence() -> None:
    events = ingest([f"Nov 22 19:58:00 h100-002 kernel: [1234.5] {XID_175}",
                     "Nov 22 19:58:01 h100-002 kernel: [1234.6] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 29999, "
                     "Fatal, Link 48 something new",
                     f"Nov 22 19:59:00 h100-002 kernel: [1294.5] {XID_79}"], node="h100-002")
    assert events["cause_class"].to_list() == ["unknown", "unknown", "hardware"]
    got = failure_events(events.select([c for c in EVENT_SCHEMA if c in events.columns] + ["message"]))
    assert got["code"].to_list() == [79]


# --- the catalogs refuse invented classes -----------------------------------------------------------


def _copy_with(tmp_path: Path, name: str, old: str, new: str) -> Path:
    text = (CATALOG_DIR / name).read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path = tmp_path / name
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def test_a_catalog_pattern_row_must_carry_the_uncatalogued_classes(tmp_path: Path) -> None:
    # The generic xid row used to give an unknown code driver_firmware / CONTACT_SUPPORT.
    row = ",xid,gpu,gpu,unknown,medium,CHECK_CATALOG,"
    path = _copy_with(tmp_path, "log_patterns.csv", row, ",xid,gpu,gpu,driver_firmware,medium,CHECK_CATALOG,")
    with pytest.raises(CatalogError, match=r"\(xid\): column 'cause_class'.*'unknown'"):
        load_log_patterns(path)
    path = _copy_with(tmp_path, "log_patterns.csv", row, ",xid,gpu,gpu,unknown,medium,CONTACT_SUPPORT,")
    with pytest.raises(CatalogError, match=r"\(xid\): column 'action'.*'CHECK_CATALOG'"):
        load_log_patterns(path)
    path = _copy_with(tmp_path, "log_patterns.csv", row, ",xid,gpu,gpu,unknown,high,CHECK_CATALOG,")
    with pytest.raises(CatalogError, match=r"\(xid\): column 'severity'"):
        load_log_patterns(path)
    # The mart names the catalog by the kind: kind 'sxid' only with catalog 'sxid'.
    path = _copy_with(tmp_path, "log_patterns.csv", "fm_nvswitch_error,sxid,", "fm_nvswitch_error,fm_sxid,")
    with pytest.raises(CatalogError, match=r"\(fm_nvswitch_error\): column 'kind'"):
        load_log_patterns(path)


def test_a_catalogued_code_cannot_be_unknown(tmp_path: Path) -> None:
    row = "\n79,ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS,GPU has fallen off the bus,pcie_bus,"
    path = _copy_with(tmp_path, "xid.csv", row + "hardware,", row + "unknown,")
    with pytest.raises(CatalogError, match=r"xid\.csv: line 80: column 'cause_class': 'unknown' is not one of"):
        load_xid_catalog(path)


# --- mart and report ---------------------------------------------------------------------------------


def ingest(lines: list[str], node: str) -> pl.DataFrame:
    """``core.node_events``-like rows of RFC 3164 ``lines`` as the syslog ingest classifies them."""
    data = ("\n".join(lines) + "\n").encode()
    batch = parse_syslog_batch([SyslogInput(data, f"syslog/2026-11-22/{node}.log", node, YEAR)])
    assert batch.rejects.is_empty(), batch.rejects
    parsed = batch.lines
    events = _events(parsed, *canonical_forms(parsed["message"]))
    rows = pl.concat([parsed.select("ts", pl.col("host").alias("node"), "message"), events], how="horizontal")
    return (rows.with_row_index("event_id", offset=1).with_columns(pl.col("event_id").cast(pl.Int64))
            .filter(pl.col("kind").is_not_null()))


@pytest.fixture
def warehouse() -> duckdb.DuckDBPyConnection:
    """core.node_events of three nodes over two days, through the ingest's own classification:
    Xid 180 once on an idle tray on 11-20; Xid 175 on h100-002 at 19:58 and twice on h100-001 on 11-22
    (first on h100-002), SXid 29999 once; catalogued Xid 79 and a noise line that are not listed."""
    frames = [
        ingest(["Nov 20 18:00:00 nvl72-r01-ct07 kernel: [10.0] NVRM: Xid (PCI:0008:01:00): 180, pid=1, name=x, Unknown event"],
               "nvl72-r01-ct07"),
        ingest([f"Nov 22 19:58:00 h100-002 kernel: [20.0] {XID_175}",
                f"Nov 22 20:05:00 h100-002 kernel: [21.0] {XID_79}",
                "Nov 22 20:06:00 h100-002 systemd[1]: Started Session 4 of user root."], "h100-002"),
        ingest([f"Nov 22 20:10:00 h100-001 kernel: [30.0] {XID_175.replace('1b:00', '2b:00')}",
                f"Nov 22 21:15:30 h100-001 kernel: [31.0] {XID_175.replace('1b:00', '3b:00')}",
                "Nov 22 21:00:00 h100-001 kernel: [32.0] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 29999, "
                "Non-fatal, Link 4 something new"], "h100-001"),
    ]
    events = pl.concat(frames).drop("event_id").with_row_index("event_id", offset=1).with_columns(
        pl.col("event_id").cast(pl.Int64))
    con = duckdb.connect()
    con.execute("CREATE SCHEMA core; CREATE SCHEMA marts")
    con.register("_ev", events.select("event_id", "ts", "node", "kind", "code", "component", "cause_class",
                                      "severity", "action", "message").to_arrow())
    con.execute("CREATE TABLE core.node_events AS SELECT * FROM _ev")
    run_mart_sql(con, "uncatalogued_codes")
    return con


def test_the_mart_has_one_row_per_day_catalog_and_code(warehouse: duckdb.DuckDBPyConnection) -> None:
    rows = warehouse.sql("""SELECT day, catalog, code, events, n_nodes, nodes, strftime(timezone('UTC', first_ts), '%d %H:%M'),
                                   strftime(timezone('UTC', last_ts), '%d %H:%M'), example_message,
                                   strftime(timezone('UTC', first_seen_ts), '%d %H:%M'), catalog_file
                            FROM marts.uncatalogued_codes ORDER BY day, catalog, code""").fetchall()
    assert rows == [
        (date(2026, 11, 20), "xid", 180, 1, 1, ["nvl72-r01-ct07"], "20 18:00", "20 18:00",
         "NVRM: Xid (PCI:0008:01:00): 180, pid=1, name=x, Unknown event", "20 18:00", "models/catalog/xid.csv"),
        (date(2026, 11, 22), "sxid", 29999, 1, 1, ["h100-001"], "22 21:00", "22 21:00",
         "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 29999, Non-fatal, Link 4 something new", "22 21:00",
         "models/catalog/sxid.csv"),
        # 19:58 on h100-002, 20:10 and 21:15 on h100-001; the example is the first line of the day.
        (date(2026, 11, 22), "xid", 175, 3, 2, ["h100-001", "h100-002"], "22 19:58", "22 21:15", XID_175,
         "22 19:58", "models/catalog/xid.csv"),
    ]


def test_the_nightly_names_each_uncatalogued_code_of_its_day(warehouse: duckdb.DuckDBPyConnection) -> None:
    now = datetime(2026, 11, 23, 6, tzinfo=timezone.utc)
    notes = uncatalogued_notes(warehouse, NightlyMeta(date(2026, 11, 22), date(2026, 11, 20), date(2026, 11, 22), now, "wh"))
    assert notes == [
        "Xid 175 (3 events on h100-[001-002], 2026-11-22 19:58–21:15 UTC) is not in the event catalog, so its events "
        "are classed 'unknown' and count as no failure evidence: read NVIDIA's Xid documentation (Xid Errors, "
        "docs.nvidia.com/deploy/xid-errors) and add it to models/catalog/xid.csv.",
        "SXid 29999 (1 event on h100-001, 2026-11-22 21:00 UTC) is not in the event catalog, so its events are "
        "classed 'unknown' and count as no failure evidence: read the SXid list of NVIDIA's Fabric Manager User "
        "Guide and add it to models/catalog/sxid.csv.",
    ]
    notes = uncatalogued_notes(warehouse, NightlyMeta(date(2026, 11, 20), date(2026, 11, 20), date(2026, 11, 22), now, "wh"))
    assert [n.split(" is not")[0] for n in notes] == ["Xid 180 (1 event on nvl72-r01-ct07, 2026-11-20 18:00 UTC)"]
    assert uncatalogued_notes(warehouse, NightlyMeta(date(2026, 11, 21), None, None, now, "wh")) == []


def test_no_note_without_the_mart() -> None:
    con = duckdb.connect()
    now = datetime(2026, 11, 23, 6, tzinfo=timezone.utc)
    assert uncatalogued_notes(con, NightlyMeta(date(2026, 11, 22), None, None, now, "wh")) == []
