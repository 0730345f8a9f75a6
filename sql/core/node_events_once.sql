-- core.node_events with each logged event once: one row per event the node logged, as the failure
-- marts read them — the events core.node_event_copies does not name (why a line is a copy: see
-- sql/core/node_event_copies.sql). Read it through gpusre.models.logs.node_event_copies.node_events_once_sql,
-- which falls back to working the copies out on the spot while core.node_event_copies is not in step
-- with core.node_events (a warehouse from before it, events written by hand).
SELECT * FROM core.node_events ANTI JOIN core.node_event_copies USING (event_id)
