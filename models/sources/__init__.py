"""models.sources."""
