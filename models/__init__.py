"""gpusre analytics: pure, typed functions (no Dagster)."""

from gpusre.models.polars_allocator import keep_freed_memory

# First thing, so that Polars' allocator reads it (see polars_allocator).
keep_freed_memory()
