"""The marts the reports read instead of computing: headline counts, the failed share of GPU time,
attribution totals, alert-incident scopes, rule verdicts, ingestion totals, incidents by component.

Each mart is one SQL file in ``sql/marts/`` (its header says what one row means). A mart whose
input table does not exist is skipped, not created empty, so the report section that reads it says
which mart has not been built.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from gpusre.models.marts_runner import run_mart_sql
from gpusre.models.vocabulary import FAILED_STATES
from gpusre.models.warehouse import table_exists, transaction

__all__ = ["REPORT_MARTS", "WINDOW_MACROS", "build_report_marts"]

#: mart name -> the table it is built from (the mart is skipped while that table does not exist).
REPORT_MARTS: dict[str, str] = {
    "job_totals": "marts.job_usage_daily",
    "job_states_daily": "marts.job_usage_daily",
    "failure_attribution_summary": "marts.job_failure_attribution",
    "alert_incident_scopes": "marts.alert_incidents",
    "alert_rule_verdicts": "marts.alert_rule_quality",
    "ingestion_by_source": "raw.ingested_files",
    "hw_incidents_by_component": "marts.hw_incidents",
    "ettr_window_by_size": "marts.ettr_runs",
    "ettr_window_policies": "marts.ettr_runs",
    "utilization_summary": "marts.utilization_daily",
    "utilization_by_pool": "marts.utilization_by_pool_daily",
    "uncatalogued_codes": "core.node_events",
}
#: The marts that are table macros over a report window (date_from, date_to), not tables.
WINDOW_MACROS: frozenset[str] = frozenset({"hw_incidents_by_component", "ettr_window_by_size", "ettr_window_policies",
                                           "utilization_summary", "utilization_by_pool"})


def build_report_marts(con: duckdb.DuckDBPyConnection,
                       failure_states: Sequence[str] = FAILED_STATES) -> dict[str, str | None]:
    """(Re)build every report mart whose input exists. Returns mart name -> None when built, else
    why not (input missing, or the one-line DuckDB error of an input with an unexpected shape: that
    mart is dropped, so its report section says it has not been built, and the other marts still build)."""
    status: dict[str, str | None] = {}
    for name, source in REPORT_MARTS.items():
        if not table_exists(con, source):
            status[name] = f"{source} does not exist"
            continue
        # One transaction per mart: a failed statement aborts its transaction, and the other marts must
        # still build (DuckDB has no savepoints).
        try:
            with transaction(con):
                run_mart_sql(con, name, {"failure_states": list(failure_states)})
            status[name] = None
        except duckdb.Error as exc:
            kind = "MACRO TABLE" if name in WINDOW_MACROS else "TABLE"
            with transaction(con):
                con.execute(f"DROP {kind} IF EXISTS marts.{name}")
            status[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return status
