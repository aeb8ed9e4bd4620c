"""The WebSocket API's routes (docs/architecture.md, "Push"), after the $connect authorizer
(functions/push_authorizer) verified the token: $connect stores who connected (until its
token expires), $disconnect forgets it (and a worker's position, when it was the worker's last
connection), $default takes what a device sends and ignores it (push is one way; the device
pulls over HTTP; a worker's position goes to its own route, into the position stream).
"""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import db
from dispatch.auth import Role
from dispatch.entrypoints import lambda_entrypoint
from dispatch.push import connections, tokens
from dispatch.workers import locations

CONNECT, DISCONNECT = "$connect", "$disconnect"


def route(event: dict[str, Any], _: LambdaContext) -> dict[str, Any]:
    context = event["requestContext"]
    connection_id = context["connectionId"]
    if context["routeKey"] == CONNECT:
        authorizer = context["authorizer"]
        db.run(
            lambda conn: connections.connect(
                conn,
                connection_id,
                authorizer["sub"],
                str(authorizer["roles"]).split(),
                tokens.from_timestamp(authorizer["expires_at"]),
            )
        )
    elif context["routeKey"] == DISCONNECT:
        # Its authorizer's context, as at $connect: the row may be gone (the expiry sweep
        # forgets a connection before the poster closes it), the caller is still known.
        authorizer = context.get("authorizer") or {}
        caller, roles = str(authorizer.get("sub", "")), str(authorizer.get("roles", "")).split()
        last = db.run(lambda conn: connections.disconnect(conn, connection_id, caller))
        if last and caller and Role.WORKER in roles:  # its app is gone: off the map
            locations.forget_if_reachable(caller)
    return {"statusCode": 200}


lambda_handler = lambda_entrypoint(route, correlation_id_path="requestContext.requestId")
