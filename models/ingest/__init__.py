"""models.ingest."""
