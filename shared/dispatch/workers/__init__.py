"""Workers: profiles (skills, rating) in Postgres, positions in Redis GEO."""
