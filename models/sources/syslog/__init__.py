"""models.sources.syslog."""
