"""models.sources.sacct."""
