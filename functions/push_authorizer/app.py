"""The WebSocket API's $connect authorizer (REQUEST, the token in `?token=`): the same JWT as
the HTTP API's, verified as its JWT authorizer would (dispatch.push.tokens); a missing or bad
one is refused at the handshake (401). It reaches no database: it runs outside the VPC, where
the issuer's published keys are."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch.entrypoints import lambda_entrypoint
from dispatch.push import tokens


def authorize_request(event: dict[str, Any], _: LambdaContext) -> dict[str, Any]:
    token = (event.get("queryStringParameters") or {}).get("token")
    try:
        verified = tokens.verify(token)
    except tokens.TokenRefused as refused:
        # API Gateway's own way of answering 401: the authorizer raises "Unauthorized".
        raise Exception("Unauthorized") from refused
    return {
        "principalId": verified.caller_id,
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [
                {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": event["methodArn"]}
            ],
        },
        # What the $connect route sees as requestContext.authorizer (strings and numbers only).
        "context": {
            "sub": verified.caller_id,
            "roles": " ".join(sorted(verified.roles)),
            "expires_at": int(verified.expires_at.timestamp()),
        },
    }


lambda_handler = lambda_entrypoint(authorize_request)
