-- Warehouse layers: raw (as ingested, lossless, with source file + line), core (clean entities,
-- one row = one real thing), marts (analyses). Idempotent: safe to run on every connection.
CREATE SCHEMA IF NOT EXISTS raw;
CREATE SCHEMA IF NOT EXISTS core;
CREATE SCHEMA IF NOT EXISTS marts;
