"""Jobs: the domain (commands, queries, rules). Knows nothing of Lambda or HTTP."""
