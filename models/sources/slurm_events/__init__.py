"""models.sources.slurm_events."""
