"""The cluster's time zone in a report's header: every time stays in UTC, but an on-call engineer in
Chicago needs to know that the cluster's clock is not, and on which report days the local day was not
24 h long (a DST change).

Where the zone comes from: ``cluster_timezone`` from the caller when given; else the warehouse's
``marts.fleet_coverage.timezone`` (cluster.yaml ``timezone`` of the run that built the marts); else,
for a warehouse built before that column, ``timezone`` of ``$GPUSRE_LANDING/cluster.yaml`` when that
variable is set. None of these: the header says nothing about a zone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import duckdb
import yaml

from gpusre.reports.kit.warehouse import scalar

__all__ = ["LANDING_ENV", "cluster_timezone", "local_day_hours", "zone_note"]

#: The environment variable that names the landing directory (as for the Dagster definitions).
LANDING_ENV = "GPUSRE_LANDING"


def _zone(name: str | None) -> ZoneInfo | None:
    if not name or not isinstance(name, str):
        return None
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _warehouse_timezone(con: duckdb.DuckDBPyConnection | None) -> str | None:
    """``marts.fleet_coverage.timezone`` when the warehouse has it, else None."""
    if con is None or not scalar(con, "SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'marts' "
                                      "AND table_name = 'fleet_coverage' AND column_name = 'timezone'"):
        return None
    name = scalar(con, "SELECT timezone FROM marts.fleet_coverage LIMIT 1")
    return name.strip() if isinstance(name, str) and _zone(name) else None


def cluster_timezone(explicit: str | None = None, con: duckdb.DuckDBPyConnection | None = None) -> str | None:
    """The cluster's IANA time zone: ``explicit`` when given (and known), else the warehouse's
    (``marts.fleet_coverage.timezone``), else ``timezone`` of ``$GPUSRE_LANDING/cluster.yaml`` when the
    variable is set and the file says one; else None."""
    if explicit is not None:
        return explicit.strip() if _zone(explicit) else None
    stored = _warehouse_timezone(con)
    if stored is not None:
        return stored
    landing = os.environ.get(LANDING_ENV)
    if not landing:
        return None
    try:
        doc = yaml.safe_load((Path(landing) / "cluster.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    name = doc.get("timezone") if isinstance(doc, dict) else None
    return name.strip() if isinstance(name, str) and _zone(name) else None


def local_day_hours(zone: ZoneInfo, day: date) -> float:
    """Hours of the local calendar day ``day`` in ``zone``: 24, or 23 / 25 on a DST change."""
    start = datetime.combine(day, time(0), tzinfo=zone).astimezone(timezone.utc)
    end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=zone).astimezone(timezone.utc)
    return (end - start).total_seconds() / 3600


def _same_as_utc(zone: ZoneInfo, year: int) -> bool:
    """No offset from UTC all year (UTC itself, Etc/UTC, a GMT zone without summer time)."""
    return all(datetime(year, m, 1, 12, tzinfo=zone).utcoffset() == timedelta(0) for m in range(1, 13))


def zone_note(zone_name: str | None, days: Iterable[date] = ()) -> str:
    """'Times in UTC; the cluster's time zone is America/Chicago', plus '(the local day 2026-11-01 had
    25 h)' for each of ``days`` (the UTC days the report is about) that is a DST-change day in that zone;
    '' when the zone is unknown or is UTC."""
    zone = _zone(zone_name)
    days = sorted(set(days))
    if zone is None or _same_as_utc(zone, (days[0] if days else date.today()).year):
        return ""
    odd = [(d, local_day_hours(zone, d)) for d in days]
    odd = [(d, h) for d, h in odd if abs(h - 24.0) > 1e-9]
    note = f"Times in UTC; the cluster's time zone is {str(zone_name).strip()}"
    if len(odd) == 1:
        note += f" (the local day {odd[0][0].isoformat()} had {odd[0][1]:g} h)"
    elif odd:
        parts = [f"{d.isoformat()} had {h:g} h" for d, h in odd]
        note += f" (the local days {', '.join(parts[:-1])} and {parts[-1]})"
    return note
