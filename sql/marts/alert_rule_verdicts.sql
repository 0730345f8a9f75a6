-- marts.alert_rule_verdicts: one row per verdict of marts.alert_rule_quality (noise, flapping, useful,
-- too few to judge) plus one '(all)' row: how many alert rules got that verdict and how often they fired;
-- judged counts the rules with a precision (enough firings to judge).
CREATE OR REPLACE TABLE marts.alert_rule_verdicts AS
SELECT * FROM (
SELECT CASE WHEN grouping(verdict) = 1 THEN '(all)' ELSE verdict END AS verdict, count(*)::BIGINT AS rules, COALESCE(sum(fired), 0)::BIGINT AS fired,
       count(precision)::BIGINT AS judged
FROM marts.alert_rule_quality
GROUP BY GROUPING SETS ((verdict), ())
)
ORDER BY verdict = '(all)', verdict;
