"""models.alerts."""
