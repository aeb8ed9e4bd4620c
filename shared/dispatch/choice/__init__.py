"""The business chooses: applications to a job, the applicants listed, the assign."""
