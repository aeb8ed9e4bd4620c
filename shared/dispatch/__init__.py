"""Dispatch: the shared Lambda layer (domain, data access, HTTP glue)."""
