"""models.sources.alerts."""
