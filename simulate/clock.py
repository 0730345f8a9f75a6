"""Simulation clock: integer UTC epoch seconds <-> cluster-local day boundaries and timestamp text.

The simulator runs on integer epoch seconds. Slurm prints cluster-local wall time, and formatting
millions of timestamps through ``datetime`` + ``zoneinfo`` is slow, so UTC offsets are precomputed
for the horizon and formatting is integer arithmetic plus a per-day string cache.
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

__all__ = ["LocalClock", "format_duration"]

_EPOCH = date(1970, 1, 1)


def format_duration(seconds: int) -> str:
    """Slurm duration text: ``HH:MM:SS`` or ``D-HH:MM:SS`` (Elapsed, Timelimit)."""
    seconds = max(0, int(seconds))
    days, rem = divmod(seconds, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    if days:
        return f"{days}-{h:02d}:{m:02d}:{s:02d}"
    return f"{h:02d}:{m:02d}:{s:02d}"


class LocalClock:
    """Day boundaries and timestamp formatting for ``days`` local days starting at ``start``."""

    def __init__(self, timezone: str, start: date, days: int, dump_delay_s: int = 15 * 60) -> None:
        self.tz = ZoneInfo(timezone)
        self.days = days
        #: UTC epoch of local midnight for day 0..days (days+1 entries; day d is [day_start[d], day_start[d+1])).
        self.day_start: list[int] = [self._local_epoch(start + timedelta(days=d), time(0, 0)) for d in range(days + 1)]
        #: When the nightly dump of day d runs: 00:15 local on day d+1.
        self.dump_time: list[int] = [self.day_start[d + 1] + dump_delay_s for d in range(days)]
        self.day_label: list[str] = [(start + timedelta(days=d)).isoformat() for d in range(days)]
        self._build_offsets(self.day_start[0] - 2 * 86400, self.day_start[-1] + 30 * 86400)
        self._date_cache: dict[int, str] = {}

    def _local_epoch(self, d: date, t: time) -> int:
        return int(datetime.combine(d, t, tzinfo=self.tz).timestamp())

    def _build_offsets(self, lo: int, hi: int) -> None:
        # Zone transitions fall on quarter hours; sampling every 15 min over the horizon finds them all.
        self._off_ts: list[int] = []
        self._off_val: list[int] = []
        prev = None
        for ts in range(lo - lo % 900, hi + 900, 900):
            delta = datetime.fromtimestamp(ts, UTC).astimezone(self.tz).utcoffset()
            off = int(delta.total_seconds()) if delta is not None else 0
            if off != prev:
                self._off_ts.append(ts)
                self._off_val.append(off)
                prev = off
        self._single_offset = self._off_val[0] if len(self._off_val) == 1 else None

    def offset(self, ts: int) -> int:
        """UTC offset in seconds of the cluster zone at epoch ``ts``."""
        if self._single_offset is not None:
            return self._single_offset
        i = bisect_right(self._off_ts, ts) - 1
        return self._off_val[max(i, 0)]

    def _date_text(self, day_number: int) -> str:
        text = self._date_cache.get(day_number)
        if text is None:
            text = (_EPOCH + timedelta(days=day_number)).isoformat()
            self._date_cache[day_number] = text
        return text

    def local(self, ts: int) -> str:
        """``YYYY-MM-DDTHH:MM:SS`` in cluster-local time (what sacct prints)."""
        return self._fmt(ts + self.offset(ts))

    def utc(self, ts: int) -> str:
        """``YYYY-MM-DDTHH:MM:SSZ`` (truth files)."""
        return self._fmt(ts) + "Z"

    def _fmt(self, shifted: int) -> str:
        day, rem = divmod(shifted, 86400)
        h, rem = divmod(rem, 3600)
        m, s = divmod(rem, 60)
        return f"{self._date_text(day)}T{h:02d}:{m:02d}:{s:02d}"

    def local_day_index(self, ts: int) -> int:
        """Index of the local day containing ``ts`` (may be < 0 or >= days outside the horizon)."""
        i = bisect_right(self.day_start, ts) - 1
        if i < 0:
            return -1
        return i
