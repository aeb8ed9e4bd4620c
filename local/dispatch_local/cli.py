"""`dispatch`: the local stack (dev), migrations, and local bearer tokens."""

import argparse
import os
import signal
import sys
from typing import Any

from dispatch_local import home


def _database_url() -> str:
    from dispatch_local.services import owner_url

    if url := owner_url():
        return url
    from dispatch_local import embedded

    url = embedded.postgres(home() / "pg")
    os.environ["DATABASE_URL"] = url
    return url


def migrate(_: argparse.Namespace | None = None) -> None:
    from dispatch_local import services

    services.migrate(_database_url())


def token(args: argparse.Namespace) -> None:
    from dispatch_local import tokens

    print(tokens.issue(args.sub, args.role, ttl_seconds=args.ttl))


def openapi(_: argparse.Namespace) -> None:
    import json

    from dispatch_local.apidoc import with_fresh_examples
    from dispatch_local.gateway import openapi_document
    from dispatch_local.template import routes

    print(json.dumps(with_fresh_examples(openapi_document(routes())), indent=2))


def asyncapi(_: argparse.Namespace) -> None:
    import json

    from dispatch_local.asyncapi import document

    print(json.dumps(document(), indent=2))


def forget_sockets() -> None:
    """No socket outlives the local WebSocket API: the connections a stack that stopped (or
    was killed) left behind are gone, though their $disconnect never ran (left, they would
    keep their workers on the map as if another device were open)."""
    from dispatch import db

    db.run(lambda conn: conn.execute("DELETE FROM push_connections"))


def dev(args: argparse.Namespace) -> None:
    from dispatch_local import services

    # Before anything starts or prints: a second stack in the same clone says where the first
    # serves and leaves its state (stack.json, the embedded servers) alone.
    if not services.hold_the_stack():
        sys.exit(services.held_elsewhere())

    import warnings

    import uvicorn

    from dispatch_local import gateway

    push_settings(args.port)  # before the services: the stack's record names them too
    found = services.start()
    forget_sockets()
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "dispatch")
    stack = gateway.Gateway(environments=args.environments, readable_logs=not args.json_logs)
    sweep_every = int(os.environ.get("DISPATCH_SWEEP_INTERVAL_SECONDS", "60"))
    # In AWS one relay run polls for most of its minute; here it runs every second instead.
    relay_every = int(os.environ.get("DISPATCH_RELAY_INTERVAL_SECONDS", "1"))
    # Push: connections whose token expired are closed within a second (AWS: a minute).
    expire_every = int(os.environ.get("DISPATCH_PUSH_EXPIRE_INTERVAL_SECONDS", "1"))
    # The retention duty: hourly, as in AWS, unless asked to run sooner (to watch it work).
    retain_every = int(os.environ.get("DISPATCH_RETENTION_INTERVAL_SECONDS", "3600"))
    periods = {
        "LeaseSweeperFunction": sweep_every,
        "OutboxRelayFunction": relay_every,
        "PushSenderFunction": expire_every,
        "RetentionFunction": retain_every,
    }
    stack.run_schedules(lambda s: periods.get(s.function, s.every_seconds))
    stack.run_queue_consumers(
        {
            "OutboxQueue": os.environ["OUTBOX_QUEUE_URL"],
            "OfferQueue": os.environ["OFFER_QUEUE_URL"],
            "PushDeliveryQueue": os.environ["PUSH_DELIVERY_QUEUE_URL"],
            "PushGoneQueue": os.environ["PUSH_GONE_QUEUE_URL"],
        }
    )
    # Positions sent on the socket (its position route) reach Redis through the stream.
    stack.run_stream_consumers()
    # uvicorn calls its `websockets` implementation deprecated; it is the one that answers a
    # refused handshake without logging an error (see `ws=` below).
    warnings.filterwarnings("ignore", "The `websockets` implementation is deprecated")
    server = uvicorn.Server(
        uvicorn.Config(
            gateway.app(stack, log_requests=True),
            host=args.host,
            port=args.port,
            log_level="warning",
            access_log=False,  # the gateway prints its own line per request, with its id
            http=gateway.http_protocol(log_requests=True),
            # The push socket (/ws): this implementation answers a refused handshake with the
            # 401 it is given (the sans-I/O one sends it too, then logs an error for it).
            ws="websockets",
            # Hundreds of phones connecting in the same instant wait in the listen queue
            # instead of being reset; keep-alive lets each reuse its connection.
            backlog=4096,
            timeout_keep_alive=30,
        )
    )
    print(
        f"Dispatch API on http://{args.host}:{args.port}  (OpenAPI: /openapi.json, docs: /docs,"
        f" events: /asyncapi.json)\n"
        f"  token: .venv/bin/dispatch token --sub worker-1 --role worker\n"
        f"  AWS stand-ins: {os.environ['AWS_ENDPOINT_URL']}, lease sweep every {sweep_every} s\n"
        f"  one line per request (method, path, status, ms, request id); every event\n"
        f"  published to the bus prints a 'published' line here\n"
        f"  (offer.created too: report a location near a new job to get one)\n"
        f"  Ctrl-C stops everything.",
        flush=True,
    )
    # uvicorn stops on Ctrl-C or a plain kill (SIGINT, SIGTERM) and then everything this
    # command started stops too (embedded servers by their exit hooks), even when a shell
    # started us with SIGINT ignored.
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, _stop)
    services.record(found, f"http://{args.host}:{args.port}")
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        print("\nstopping", flush=True)
        services.forget()
        stack.close()


def push_settings(port: int) -> None:
    """What the push functions get from the template in AWS, pointing at this stack: the
    token's issuer and audience and the local signing secret (the $connect authorizer), and
    the management API's endpoint, this stack's own address (the poster)."""
    from dispatch_local import tokens

    os.environ.setdefault("JWT_ISSUER", tokens.ISSUER)
    os.environ.setdefault("JWT_AUDIENCE", tokens.AUDIENCE)
    os.environ["DISPATCH_JWT_SECRET"] = tokens.signing_key()
    os.environ.setdefault("PUSH_ENDPOINT", f"http://127.0.0.1:{port}")


def invoke(args: argparse.Namespace) -> None:
    from dispatch_local.invoke import UnknownFunction, main_invoke

    try:
        sys.exit(main_invoke(args.function, args.event, args.timeout))
    except UnknownFunction as error:
        sys.exit(str(error))


def generate_event(args: argparse.Namespace) -> None:
    import json

    from dispatch_local.invoke import UnknownFunction, generate_event

    body = sys.stdin.read() if args.body == "-" else args.body
    try:
        event = generate_event(args.method, args.path, args.sub, args.role, body, args.key)
    except UnknownFunction as error:
        sys.exit(str(error))
    print(json.dumps(event, indent=2))


def env_json(args: argparse.Namespace) -> None:
    import json

    from dispatch_local.invoke import env_json

    try:
        print(json.dumps(env_json(args.host_alias), indent=2))
    except RuntimeError as error:
        sys.exit(str(error))


def console(args: argparse.Namespace) -> None:
    """The console's address with an ops token in its fragment (never sent to the server)."""
    from dispatch_local import services, tokens

    base = args.url or services.running_url()
    if base is None:
        sys.exit(
            "no local stack is running from this DISPATCH_HOME: start `make dev` in another"
            " terminal first, or give the stack's address with --url"
        )
    address = f"{base}/console#token={tokens.issue(args.sub, 'ops', ttl_seconds=args.ttl)}"
    print(address)
    if args.open:
        import webbrowser

        webbrowser.open(address)


def listen(args: argparse.Namespace) -> None:
    """A phone's push socket in a terminal: one JSON line per event heard (issue 23)."""
    import asyncio

    import websockets

    from dispatch_local import services, tokens

    base = args.url or services.running_url()
    if base is None:
        sys.exit("no local stack is running from this DISPATCH_HOME: start `make dev` first")
    token = tokens.issue(args.sub, args.role, ttl_seconds=args.ttl)
    address = base.replace("http://", "ws://", 1).replace("https://", "wss://", 1)

    async def run() -> None:
        async with websockets.connect(f"{address}/ws?token={token}") as socket:
            print(f"listening as {args.sub} ({args.role})", file=sys.stderr, flush=True)
            heard = 0
            async for message in socket:
                print(message, flush=True)
                heard += 1
                if args.count and heard >= args.count:
                    return

    try:
        asyncio.run(asyncio.wait_for(run(), args.seconds) if args.seconds else run())
    except (TimeoutError, KeyboardInterrupt):
        pass
    except websockets.ConnectionClosed as closed:
        sys.exit(f"the server closed the socket: {closed.rcvd.code if closed.rcvd else ''}")


def url(_: argparse.Namespace) -> None:
    """The running stack's address, for scripts: API=$(.venv/bin/dispatch url)."""
    from dispatch_local import services

    running = services.running_url()
    if running is None:
        sys.exit("no local stack is running from this DISPATCH_HOME: start `make dev` first")
    print(running)


def preflight(args: argparse.Namespace) -> None:
    """Before `sam deploy`: what the account must have that the template cannot check."""
    from dispatch_local.preflight import run

    findings = run(args.vpc_id, args.engine_version)
    for finding in findings:
        print(finding)
    if not all(f.ok for f in findings):
        sys.exit("preflight: fix the FAIL lines above, then deploy")


def simulate(args: argparse.Namespace) -> None:
    from sim.cli import simulate as run_simulation

    run_simulation(args)


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


ROLES = ["business", "worker", "ops"]


def parser() -> argparse.ArgumentParser:
    """Every subcommand, each option with its help (`dispatch COMMAND --help`)."""
    from sim.cli import add_arguments as simulate_arguments

    top = argparse.ArgumentParser(
        prog="dispatch",
        description="The docker-free local stack of Dispatch and its tools.",
        epilog="`dispatch COMMAND --help` describes each command's options.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, run: Any) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=summary, description=summary)
        p.set_defaults(run=run)
        return p

    p = command("dev", "serve the API locally with embedded Postgres and Redis", dev)
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: %(default)s)"
    )
    p.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("PORT", "3000")),
        help="port to listen on (default: $PORT, else 3000)",
    )
    p.add_argument(
        "--environments",
        type=int,
        default=8,
        help="concurrent Lambda execution environments (default: %(default)s)",
    )
    p.add_argument(
        "--json-logs",
        action="store_true",
        help="print the functions' logs as JSON, as Lambda writes them (default: readable lines)",
    )

    command(
        "migrate", "apply pending migrations to DATABASE_URL (or the embedded Postgres)", migrate
    )

    p = command("token", "print a bearer token the local stack accepts", token)
    p.add_argument("--sub", required=True, help="the user's id (the token's subject)")
    p.add_argument("--role", required=True, choices=ROLES, help="the user's role")
    p.add_argument(
        "--ttl", type=int, default=12 * 3600, help="seconds until it expires (default: 12 h)"
    )

    command("openapi", "print the merged OpenAPI document", openapi)
    command("asyncapi", "print the AsyncAPI document of the events on the bus", asyncapi)

    p = command(
        "invoke",
        "run one function's handler with an event, as `sam local invoke` does (no Docker)",
        invoke,
    )
    p.add_argument("function", help="logical id (AcceptJobFunction) or folder (accept_job)")
    p.add_argument("-e", "--event", default="-", help="event file, or - for stdin (default)")
    p.add_argument("--timeout", type=int, help="seconds (default: the template's Timeout)")

    p = command("generate-event", "print a signed-in HTTP API event for a route", generate_event)
    p.add_argument("method", help="the HTTP method: GET, POST, PUT ...")
    p.add_argument("path", help="as requested, with its query: /jobs/nearby?lat=1&lng=2")
    p.add_argument("--sub", help="the caller's id (omit for no token)")
    p.add_argument("--role", choices=ROLES, help="the caller's role")
    p.add_argument("--body", help="the JSON body, or - for stdin")
    p.add_argument("--key", help="the Idempotency-Key (default: a new UUID on state changes)")

    command("url", "print the running local stack's address (API=$(dispatch url))", url)

    p = command("console", "print the operations console's address, signed in as ops", console)
    p.add_argument("--sub", default="ops-1", help="the ops user's id (default: %(default)s)")
    p.add_argument(
        "--ttl", type=int, default=12 * 3600, help="seconds until the token expires (default: 12 h)"
    )
    p.add_argument("--url", help="the stack's address (default: the running make dev's)")
    p.add_argument("--open", action="store_true", help="open it in the browser too")

    p = command("listen", "listen on the push socket as someone: one JSON line per event", listen)
    p.add_argument("--sub", required=True, help="whose events (the token's subject)")
    p.add_argument("--role", choices=ROLES, required=True, help="the caller's role")
    p.add_argument("--count", type=int, default=0, help="stop after this many (default: never)")
    p.add_argument("--seconds", type=float, default=0, help="stop after this long (default: never)")
    p.add_argument("--ttl", type=int, default=3600, help="seconds until the token expires")
    p.add_argument("--url", help="the stack's address (default: the running make dev's)")

    p = command(
        "preflight",
        "check the AWS account before a deploy: the VPC's DNS, API Gateway's role, the engine",
        preflight,
    )
    p.add_argument("--vpc-id", help="the VpcId you deploy with (omit with ExistingDatabaseUrl)")
    p.add_argument(
        "--engine-version",
        help="the DatabaseEngineVersion you deploy with (default: the template's default)",
    )

    p = command("simulate", "run a simulated city against the real dispatch (see sim/)", simulate)
    simulate_arguments(p)

    p = command(
        "env-json",
        "print env.json for `sam local invoke --env-vars`, for the running stack",
        env_json,
    )
    p.add_argument(
        "--host-alias",
        help="name a container reaches this machine by (host.docker.internal); default: none,"
        " for `--docker-network host`",
    )
    return top


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main(sys.argv[1:])
