"""Push: events reach connected devices over the WebSocket API (docs/architecture.md, "Push").

`tokens` verifies the caller at the handshake (the $connect authorizer), `connections` keeps
who is connected (Postgres, `push_connections`), `delivery` sends an event from the bus to
every connection allowed to hear it through API Gateway's management API
(`PostToConnection`), forgetting connections that are gone and closing those that expired.
"""
