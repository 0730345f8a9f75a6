-- Warehouse layers: raw (as ingested, lossless, with source file + line), core (clean entities,
-- one row = one real thing), marts (analyses). Idempotent: safe to run on every connection.
CREATE SCHEMA IF NOT EXISTS raw;
-- lake: empty tables declaring the columns of the raw tables kept as Parquet (views raw.<table>).
CREATE SCHEMA IF NOT EXISTS lake;
CREATE SCHEMA IF NOT EXISTS core;
CREATE SCHEMA IF NOT EXISTS marts;
