"""A sensor that starts the nightly job when new or changed files land in the landing directory.

The cursor (file mtimes and sizes) advances only with a run request: while the warehouse's run lock
is held (a `gpusre run`, a backfill, a run launched earlier), the sensor skips with "warehouse busy
…; will retry" and keeps its cursor, so the change set is requested on a later tick instead of
being lost to a run that could not start.
"""


import hashlib
import json
import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import dagster as dg

from gpusre.models.sources.registry import watched_files
from gpusre.pipelines.jobs import nightly_job
from gpusre.pipelines.partitions import DAILY_PARTITIONS
from gpusre.pipelines.resources import LandingResource
from gpusre.pipelines.run_lock import busy_holder

#: A calendar date in a landing path (``2026-11-18`` or ``20261118``), not part of a longer number.
_DATE_IN_NAME = re.compile(r"(?<!\d)(\d{4})-?(\d{2})-?(\d{2})(?!\d)")


def landing_snapshot(root: Path) -> dict[str, str]:
    """``{relative path: 'mtime_ns:size'}`` of every landing file of every source in the registry
    (:mod:`gpusre.models.sources.registry`, incidents.csv included) and of cluster.yaml."""
    snap: dict[str, str] = {}
    candidates = [root / "cluster.yaml", *watched_files(root)]
    for path in candidates:
        if path.is_file():
            st = path.stat()
            snap[path.relative_to(root).as_posix()] = f"{st.st_mtime_ns}:{st.st_size}"
    return snap


def _days_in_names(names: list[str]) -> list[date]:
    days: list[date] = []
    for name in names:
        for m in _DATE_IN_NAME.finditer(name):
            try:
                days.append(date(int(m[1]), int(m[2]), int(m[3])))
            except ValueError:
                continue
    return days


def partition_for(files: list[str], today: date, landing_files: list[str] | None = None) -> str:
    """The partition a batch of new files belongs to: the latest date in their names; for files
    without one (cluster.yaml, incidents.csv, an undated log), the latest date in the names of all
    ``landing_files`` (the last day the data covers, as far as the names tell); else yesterday."""
    days = _days_in_names(files) or _days_in_names(landing_files or [])
    # Not yesterday when the landing's names say where its data ends: a partition past the data's
    # end made the daily marts compute empty days up to it (utilization 0, flagged partial).
    day = max(days) if days else today - timedelta(days=1)
    key = day.isoformat()
    return key if DAILY_PARTITIONS.has_partition_key(key) else DAILY_PARTITIONS.get_last_partition_key()


def build_landing_sensor(warehouse: str | Path | None = None) -> dg.SensorDefinition:
    """``landing_sensor``, checking the run lock of ``warehouse`` before it requests a run (and
    before it advances its cursor). :func:`gpusre.pipelines.definitions.build_definitions` binds it
    to the warehouse of its resources; without a warehouse the sensor does not look at a lock."""

    @dg.sensor(name="landing_sensor", job=nightly_job, minimum_interval_seconds=60,
               default_status=dg.DefaultSensorStatus.STOPPED,
               description="Launches nightly_job when files in landing/ are new or changed (mtime or size); "
                           "waits (keeps its cursor) while the warehouse is busy.")
    def landing_sensor(context: dg.SensorEvaluationContext, landing: LandingResource) -> dg.SensorResult:
        root = landing.root
        if not root.is_dir():
            return dg.SensorResult(skip_reason=f"landing directory {root} does not exist")
        previous: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
        current = landing_snapshot(root)
        changed = sorted(k for k, v in current.items() if previous.get(k) != v)
        if not changed:
            return dg.SensorResult(skip_reason="no new or changed files", cursor=json.dumps(current))
        holder = busy_holder(Path(warehouse)) if warehouse is not None else None
        if holder is not None:
            # No cursor: the change set stays pending and is requested once the lock is free. A run
            # launched now would wait for the lock (or fail) while its files counted as handled.
            return dg.SensorResult(skip_reason=f"warehouse busy: {holder}; {len(changed)} new or changed "
                                               "file(s) wait, will retry")
        run_key = hashlib.sha256(json.dumps({k: current[k] for k in changed}).encode()).hexdigest()[:16]
        partition_key = partition_for(changed, datetime.now(timezone.utc).date(), list(current))
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=run_key, partition_key=partition_key,
                                        tags={"gpusre/changed_files": str(len(changed))})],
            cursor=json.dumps(current),
        )

    return landing_sensor


#: The sensor without a warehouse to watch (it never skips as busy); the Definitions hold
#: ``build_landing_sensor(<their warehouse>)``.
landing_sensor = build_landing_sensor()
