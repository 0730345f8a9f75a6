"""models.failures."""
