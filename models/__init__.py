"""gpusre analytics: pure, typed functions (no Dagster)."""
