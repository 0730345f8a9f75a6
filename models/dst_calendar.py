"""The DST calendar: which instants a zone's fall-back repeats on a UTC day.

A calendar lookup, not data: the nightly's note on node-log lines whose repeated-hour local time was placed
by a guess (``raw.ingested_files.rows_dst_guessed``, :func:`~gpusre.models.ingest.slurm_values.localize_to_utc`
reads an ambiguous time as its earlier instant) names the day that hour's first pass lies on.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

__all__ = ["repeated_hour_first_passes"]


def repeated_hour_first_passes(zone_name: str | None, day: date) -> list[tuple[datetime, datetime]]:
    """``[start, end)`` (UTC) of the first pass of each hour ``zone_name`` repeated by a DST fall-back that
    lies on the UTC ``day``: the instants a guessed local time of that hour was placed at (the earlier
    reading). America/Chicago, 2026-11-01: 06:00-07:00; Australia/Sydney's April fall-back is on the UTC
    Saturday (15:00-16:00), a day before its 25-h local Sunday. Empty without a zone or fall-back."""
    try:
        zone = ZoneInfo(zone_name) if zone_name else None
    except (KeyError, ValueError):
        return []
    if zone is None:
        return []
    d0 = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
    out = []
    # Offsets a minute apart over the day and 3 h more (a fall-back at 00:30 UTC the next day repeats the
    # day's last half hour; no zone turns back more than 2 h): 1,620 look-ups, a calendar, not the data.
    # A drop at t is a fall-back: the hour(s) before it repeat.
    minutes = [d0 + timedelta(minutes=m) for m in range(27 * 60 + 1)]
    offsets = [t.astimezone(zone).utcoffset() for t in minutes]
    for t, before, after in zip(minutes[1:], offsets, offsets[1:]):
        if before is not None and after is not None and after < before:
            start, end = t - (before - after), t
            if start < d0 + timedelta(days=1) and end > d0:
                out.append((max(start, d0), min(end, d0 + timedelta(days=1))))
    return out
