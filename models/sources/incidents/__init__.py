"""models.sources.incidents."""
