from gpusre.models.polars_allocator import keep_freed_memory

keep_freed_memory()  # before anything in this package loads Polars (see polars_allocator)
