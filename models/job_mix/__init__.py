"""models.job_mix."""
