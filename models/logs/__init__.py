"""models.logs."""
