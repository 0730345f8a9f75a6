"""Hand-made hardware incidents and node states over two months (2026-09, 2026-10), after the probe of a
monthly SLO review (48 H100 nodes, one GPU node down since 2026-10-29 20:00 and never back), and the
repair marts built from them the way the repair-time asset builds them.

Every repair runs from the first evidence to the node back in service (a drain 4 min after the evidence).
Hours to repair, by month of the incident's start (UTC):

* 2026-09: GPU 12, 24, 6, 18, 12, 48, 4, 20 (median 15, mean 18); network 6, 8, 10 (median 8, mean 8);
  storage 40 min (4 nodes, never drained: timed by the clients' "Connection restored"); host 6 h, started
  2026-09-30 22:00 and back 2026-10-01 04:00 — open when September ends.
  All 13: 0.67, 4, 6, 6, 6, 8, 10, 12, 12, 18, 20, 24, 48 -> median 10, mean 174.67 / 13 = 13.44.
* 2026-10: GPU 12, 24 and gpu038 from 2026-10-29 20:00 never back (ongoing); network 6, 12, 4 (median 6,
  mean 7.33). All 5 repaired: 4, 6, 12, 12, 24 -> median 12, mean 11.6.
* Whole record: GPU 10 repaired (median 15, mean 18) + 1 ongoing; network 4, 6, 6, 8, 10, 12 (median 7,
  mean 7.67).

The data end at 2026-10-31 23:59:59 (marts.day_coverage): gpu038 has been open 52.0 h by then.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import duckdb
import polars as pl

from gpusre.models.reliability.repair_times import link_incidents, repair_times
from gpusre.models.warehouse import replace_table

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")
DATA_END = datetime(2026, 10, 31, 23, 59, 59, tzinfo=UTC)

#: (incident, component, class, node, first evidence, hours to repair; None = never back, drain reason class)
INCIDENTS = [
    ("G1", "gpu", "gpu", "gpu005", "2026-09-03 04:10", 12.0, "gpu_xid"),
    ("G2", "gpu", "gpu", "gpu012", "2026-09-05 10:00", 24.0, "gpu_xid"),
    ("G3", "gpu", "gpu", "gpu020", "2026-09-08 13:20", 6.0, "gpu_xid"),
    ("G4", "gpu", "gpu", "gpu031", "2026-09-11 15:00", 18.0, "gpu_xid"),
    ("G5", "gpu", "gpu", "gpu007", "2026-09-14 20:00", 12.0, "gpu_xid"),
    ("G6", "gpu", "gpu", "gpu040", "2026-09-18 09:30", 48.0, "gpu_xid"),
    ("G7", "gpu", "gpu", "gpu015", "2026-09-22 02:00", 4.0, "gpu_xid"),
    ("G8", "gpu", "gpu", "gpu044", "2026-09-26 03:00", 20.0, "gpu_xid"),
    ("I1", "ib_link", "network", "gpu010", "2026-09-04 07:00", 6.0, "network"),
    ("I2", "ib_link", "network", "gpu022", "2026-09-16 21:00", 8.0, "network"),
    ("I3", "ib_link", "network", "gpu036", "2026-09-24 11:00", 10.0, "network"),
    ("H1", "dimm", "host", "gpu018", "2026-09-30 22:00", 6.0, "not_responding"),
    ("G9", "gpu", "gpu", "gpu009", "2026-10-09 05:00", 12.0, "gpu_xid"),
    ("G10", "gpu", "gpu", "gpu027", "2026-10-21 14:00", 24.0, "gpu_xid"),
    ("G11", "gpu", "gpu", "gpu038", "2026-10-29 20:00", None, "gpu_xid"),
    ("I4", "ib_link", "network", "gpu014", "2026-10-06 08:00", 6.0, "network"),
    ("I5", "ib_link", "network", "gpu033", "2026-10-15 16:00", 12.0, "network"),
    ("I6", "ib_link", "network", "gpu046", "2026-10-27 18:30", 4.0, "network"),
]
#: The Lustre blip: four clients lost the file system 14:00-14:40, never drained.
STORAGE = ("S1", "lustre", "storage", ["gpu001", "gpu002", "gpu003", "gpu004"], "2026-09-09 14:00", 40.0 / 60)


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def incidents() -> pl.DataFrame:
    rows = [(i, comp, klass, [node], ts(start)) for i, comp, klass, node, start, _, _ in INCIDENTS]
    sid, scomp, sclass, snodes, sstart, _ = STORAGE
    rows.append((sid, scomp, sclass, snodes, ts(sstart)))
    return pl.DataFrame(rows, schema={"incident_id": pl.String, "component": pl.String, "component_class": pl.String,
                                      "nodes": pl.List(pl.String), "start_ts": DT}, orient="row")


def node_states() -> pl.DataFrame:
    """One drain per incident, 4 min after its first evidence, until it is back (open for G11)."""
    rows = [(node, ts(start) + timedelta(minutes=4), None if h is None else ts(start) + timedelta(hours=h),
             f"drain for {i}", reason) for i, _, _, node, start, h, reason in INCIDENTS]
    return pl.DataFrame(rows, schema={"node": pl.String, "start_ts": DT, "end_ts": DT, "reason": pl.String,
                                      "reason_class": pl.String}, orient="row")


def recoveries() -> pl.DataFrame:
    sid, _, _, _, sstart, h = STORAGE
    return pl.DataFrame({"incident_id": [sid], "recovered_ts": [ts(sstart) + timedelta(hours=h)]},
                        schema={"incident_id": pl.String, "recovered_ts": DT})


def linked() -> pl.DataFrame:
    """marts.incident_repairs of the hand incidents."""
    return link_incidents(incidents(), node_states(), recoveries=recoveries())


def monthly(rows: pl.DataFrame) -> pl.DataFrame:
    """marts.repair_times_monthly as the asset builds it: the summary per month of the incidents' start."""
    parts = rows.with_columns(pl.col("incident_start_ts").dt.strftime("%Y-%m").alias("_m")).partition_by(
        "_m", as_dict=True, maintain_order=True)
    return pl.concat([repair_times(part.drop("_m")).with_columns(pl.lit(key[0]).alias("period"))
                      for key, part in sorted(parts.items(), key=lambda kv: str(kv[0][0]))],
                     how="vertical").select("period", pl.exclude("period"))


def write_repair_marts(con: duckdb.DuckDBPyConnection) -> None:
    """The three repair marts and the data's last day in marts.day_coverage."""
    rows = linked()
    con.execute("CREATE SCHEMA IF NOT EXISTS marts")
    replace_table(con, "marts.incident_repairs", rows)
    replace_table(con, "marts.repair_times", repair_times(rows))
    replace_table(con, "marts.repair_times_monthly", monthly(rows))
    con.execute("""CREATE OR REPLACE TABLE marts.day_coverage (day DATE, covered_from TIMESTAMPTZ,
                       covered_to TIMESTAMPTZ, covered_hours DOUBLE, partial BOOLEAN, sources VARCHAR)""")
    con.execute("""INSERT INTO marts.day_coverage
                   SELECT timezone('UTC', d)::DATE, d, least(d + INTERVAL 1 DAY, ?::TIMESTAMPTZ), 24.0, FALSE, 'sacct, syslog'
                   FROM range(TIMESTAMPTZ '2026-09-01 00:00:00+00', TIMESTAMPTZ '2026-11-01 00:00:00+00',
                              INTERVAL 1 DAY) AS t(d)""", [DATA_END])
