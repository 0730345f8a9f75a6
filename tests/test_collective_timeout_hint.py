"""How long after a link came back each multi-node failure ended (marts.job_failure_attribution
.minutes_since_link_recovery), and the nightly's hint to raise attribution.collective_timeout_min when jobs blamed
on their users cluster there (an outside probe's PyTorch jobs with a 45-min NCCL watchdog, 2026-12-05)."""

from __future__ import annotations

from datetime import date, datetime, timezone

import duckdb
import polars as pl

from node_event_lines import events_with_parts

from gpusre.models.failures.attribution import minutes_since_link_recovery, prepare_evidence
from gpusre.models.failures.hw_incidents import merge_incidents
from gpusre.reports.nightly.meta import NightlyMeta
from gpusre.reports.nightly.sections.attribution import _collective_timeout_hint


def t(h: int, m: int = 0, s: int = 0) -> datetime:
    return datetime(2026, 11, 26, h, m, s, tzinfo=timezone.utc)


LINES = [(t(10), "a1", "mlx5_core 0000:40:00.0 mlx5_2: Port: 1 Link DOWN"),
         (t(10, 0, 30), "a1", "mlx5_core 0000:40:00.0 mlx5_2: Port: 1 Link ACTIVE")]


def test_minutes_from_the_last_link_recovery_on_a_multi_node_job_s_nodes() -> None:
    events = events_with_parts(LINES)
    evidence = prepare_evidence(events, merge_incidents(events)[0])
    jobs = pl.DataFrame({
        "job_id": ["j1", "j2", "j3", "j4", "j5"],
        "nodes": [["a1", "a2"], ["a1"], ["a2", "a3"], ["a1", "a3"], ["a1", "a2"]],
        # j1 45 min after 10:00:30; j2 one node; j3 no recovery on its nodes; j4 2 h 30 min after (beyond the
        # 2-h lookback); j5 ended before the link came back.
        "end_ts": [t(10, 45, 30), t(10, 45, 30), t(10, 45, 30), t(12, 30, 30), t(9, 59)],
    })
    got = minutes_since_link_recovery(jobs, evidence)
    assert got.sort("job_id").rows() == [("j1", 45.0), ("j2", None), ("j3", None), ("j4", None), ("j5", None)]


def test_the_nightly_names_the_setting_when_user_blamed_jobs_ended_after_a_link_came_back() -> None:
    con = duckdb.connect()
    con.sql("SET TimeZone='UTC'")
    con.sql("CREATE SCHEMA marts")
    con.sql("""CREATE TABLE marts.job_failure_attribution AS SELECT * FROM (VALUES
        ('j1', 'user', TIMESTAMPTZ '2026-11-26 10:45:30+00', 45.0),
        ('j2', 'user', TIMESTAMPTZ '2026-11-26 11:10:00+00', 52.4),
        ('j3', 'infrastructure', TIMESTAMPTZ '2026-11-26 10:20:00+00', 19.5),
        ('j4', 'user', TIMESTAMPTZ '2026-11-26 12:00:00+00', NULL))
        AS t(job_id, attribution, end_ts, minutes_since_link_recovery)""")
    day = date(2026, 11, 26)
    meta = NightlyMeta(day, day, day, datetime(2026, 11, 27, 6, tzinfo=timezone.utc), "wh")
    assert _collective_timeout_hint(con, meta) == (
        " 2 multi-node jobs blamed on their users ended 45–52 min after a link on their nodes came back "
        "(marts.job_failure_attribution.minutes_since_link_recovery): if the site's NCCL / PyTorch collective "
        "timeout is longer than cluster.yaml attribution.collective_timeout_min (default 30), raise it and those "
        "become the link's failures.")
    con.sql("UPDATE marts.job_failure_attribution SET minutes_since_link_recovery = NULL")
    assert _collective_timeout_hint(con, meta) == ""
