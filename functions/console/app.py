"""The operations console's page: GET /console and its files, no token needed (the page holds
no data; every call it makes needs an ops token). The files ship inside this function (a link
to the top-level console/ folder), so the stack the template builds serves them as it serves
the API, with no bucket or CDN."""

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aws_lambda_powertools.event_handler import Response

from dispatch.config.console import console_settings
from dispatch.errors import Code, DispatchError
from dispatch.http.resolver import DispatchResolver, entrypoint
from dispatch.models import to_json

app = DispatchResolver()
FILES = Path(__file__).parent / "static"
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".json": "application/json"}  # fmt: skip
SERVED = {p.name: p for p in FILES.iterdir() if p.suffix in TYPES}  # nothing else, ever


def origin(url: str | None) -> str:
    return f" {urlsplit(url).scheme}://{urlsplit(url).netloc}" if url else ""


def policy() -> str:
    """Nothing from another host, but the map tiles when a tile server is configured, the
    sign-in's token endpoint (the code is traded for the tokens there: PKCE), and the push
    socket when it is another host's (the WebSocket API in AWS; locally the same origin)."""
    s = console_settings()
    return (
        f"default-src 'self'; img-src 'self' data:{origin(s.console_tiles)}; style-src 'self'; "
        f"script-src 'self'; connect-src 'self'{origin(s.console_signin_url)}"
        f"{origin(s.console_push_url)}; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    )


def page(body: str, content_type: str) -> Response[Any]:
    return Response(
        200,
        content_type,
        body,
        headers={
            "Content-Security-Policy": policy(),
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-cache",
        },
    )


# Pages, not API operations: left out of the OpenAPI document.
@app.endpoint("GET", "/console", roles=None, operation_id="getConsole", include_in_schema=False)
def console() -> Response[Any]:
    return page(SERVED["index.html"].read_text(), TYPES[".html"])


@app.endpoint(
    "GET",
    "/console/<asset>",
    roles=None,
    operation_id="getConsoleAsset",
    include_in_schema=False,
)
def asset(asset: str) -> Response[Any]:
    if asset == "config.json":
        s = console_settings()
        config = {
            "bbox": s.console_bbox,
            "tiles": s.console_tiles,
            "signin_url": s.console_signin_url,
            "push_url": s.console_push_url,
        }
        return page(to_json(config), TYPES[".json"])
    found = SERVED.get(asset)
    if found is None:
        raise DispatchError(Code.NOT_FOUND)
    return page(found.read_text(), TYPES[found.suffix])


lambda_handler = entrypoint(app)
