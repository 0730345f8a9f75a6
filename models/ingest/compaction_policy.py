"""When the lake's old days are merged: the defaults of ``gpusre compact`` and the lake_compaction
asset (a module of its own so the CLI's argument parser reads them without importing DuckDB)."""

#: The newest days stay as written: a late or rotated file may still add rows to them.
KEEP_DAYS = 2
#: A day is merged once this many merge-ready files lie in it (fewer cost little to open: ~0.1 ms each).
MIN_FILES = 32
#: A merged day is merged again once this share of its compacted rows are of versions the ledger
#: no longer holds (landing files changed after the merge): their rows are dropped then.
DEAD_SHARE = 0.1
