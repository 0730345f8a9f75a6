-- core.node_events: one row per recognized node event (an Xid, SXid, ECC, link, storage, OOM,
-- panic, slurmd … line). The rows one node-log file version contributes, from the relation `rows`
-- (the columns of raw.syslog_lines over that version's lake files): core.node_events is kept per
-- file version (gpusre.models.logs.node_event_tables), not rebuilt from every line each night.
-- event_id is stable across runs: derived from the line's file and number, so a rerun or a
-- re-ingested neighbour file keeps the ids.
SELECT ('0x' || left(md5(source_file || ':' || line_no::VARCHAR), 15))::BIGINT AS event_id,
       ts, node, kind, code, gpu_pci, device_pci, port, component, cause_class, severity, action,
       template_id, message, program, source_file, line_no
FROM rows
WHERE kind IS NOT NULL
