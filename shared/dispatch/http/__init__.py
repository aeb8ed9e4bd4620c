"""HTTP glue shared by every API function: the resolver (access, errors, idempotent commands)
and the OpenAPI descriptions of the answers."""
