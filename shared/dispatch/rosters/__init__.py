"""A business's rosters: favourites (offered its jobs first) and blocked workers (never)."""
