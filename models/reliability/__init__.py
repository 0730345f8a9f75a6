"""models.reliability."""
