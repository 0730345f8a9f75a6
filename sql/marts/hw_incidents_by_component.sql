-- marts.hw_incidents_by_component(date_from, date_to): a table macro, one row per component: the
-- hardware incidents of marts.hw_incidents that started on a UTC day in [date_from, date_to], and
-- their lost GPU-hours. A macro, not a table, because the SLO review's window is chosen per report.
-- Incidents the operator marked not a failure (incidents.csv: component not_a_failure) are left out.
CREATE OR REPLACE MACRO marts.hw_incidents_by_component(date_from, date_to) AS TABLE
SELECT component, count(*)::BIGINT AS incidents, COALESCE(sum(lost_gpu_hours), 0)::DOUBLE AS lost_gpu_hours
FROM marts.hw_incidents
WHERE CAST(timezone('UTC', start_ts) AS DATE) BETWEEN date_from AND date_to
  AND core.is_failure_incident(cause_class)
GROUP BY component
ORDER BY lost_gpu_hours DESC, incidents DESC, component;
