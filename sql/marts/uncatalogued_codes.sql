-- marts.uncatalogued_codes: one row per UTC day, catalog ('xid' or 'sxid') and code of the node events
-- whose Xid / SXid code the event catalog (models/catalog/xid.csv, sxid.csv) does not list: the
-- classifier gives them cause_class 'unknown' and action CHECK_CATALOG, so they are no failure
-- evidence until someone reads NVIDIA's documentation of the code and adds it to the catalog (new
-- drivers add Xids every release). events, the nodes that logged it (sorted, n_nodes), the first and
-- last event of that day, the first line's text as an example, when the code was first seen on any
-- day, and the catalog file to extend. Lines whose code did not parse (NULL code) are left out: a
-- garbled number is not a new code. The kind names the catalog: log_patterns.csv gives kind 'sxid'
-- exactly to its rows with catalog 'sxid' (event_catalog.load_log_patterns checks it).
CREATE OR REPLACE TABLE marts.uncatalogued_codes AS
WITH ev AS (
    SELECT CAST(timezone('UTC', ts) AS DATE) AS day,
           CASE WHEN kind = 'sxid' THEN 'sxid' ELSE 'xid' END AS catalog,
           code, node, ts, message, event_id
    FROM core.node_events
    WHERE cause_class = 'unknown' AND code IS NOT NULL
)
SELECT day, catalog, code,
       count(*)::BIGINT AS events,
       count(DISTINCT node)::BIGINT AS n_nodes,
       list_sort(list(DISTINCT node)) AS nodes,
       min(ts) AS first_ts,
       max(ts) AS last_ts,
       arg_min(message, (ts, event_id)) AS example_message,
       min(min(ts)) OVER (PARTITION BY catalog, code) AS first_seen_ts,
       'models/catalog/' || catalog || '.csv' AS catalog_file
FROM ev
GROUP BY day, catalog, code
ORDER BY day, catalog, code;
