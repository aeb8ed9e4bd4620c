"""`dispatch`: the local stack (dev), migrations, and local bearer tokens."""

import argparse
import os
import signal
import sys

from dispatch_local import REPO_ROOT, home


def _database_url() -> str:
    if url := os.environ.get("DATABASE_URL"):
        return url
    from dispatch_local import embedded

    url = embedded.postgres(home() / "pg")
    os.environ["DATABASE_URL"] = url
    return url


def migrate(_: argparse.Namespace | None = None) -> None:
    from dispatch import db, migrations

    url = _database_url()
    applied = migrations.apply_patiently(
        lambda: db.connect(url), migrations.load(REPO_ROOT / "migrations")
    )
    print(f"migrations applied: {', '.join(applied) or 'none pending'}")


def token(args: argparse.Namespace) -> None:
    from dispatch_local import tokens

    print(tokens.issue(args.sub, args.role, ttl_seconds=args.ttl))


def openapi(_: argparse.Namespace) -> None:
    import json

    from dispatch_local.gateway import openapi_document
    from dispatch_local.template import routes

    print(json.dumps(openapi_document(routes()), indent=2))


def asyncapi(_: argparse.Namespace) -> None:
    import json

    from dispatch_local.asyncapi import document

    print(json.dumps(document(), indent=2))


def dev(args: argparse.Namespace) -> None:
    import uvicorn

    from dispatch_local import embedded, gateway

    _database_url()
    if not os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = embedded.redis(home())
    if not os.environ.get("AWS_ENDPOINT_URL"):
        embedded.use_aws_stand_in(embedded.aws())
    from dispatch.config import settings

    embedded.ensure_bucket(settings().photo_bucket)
    if not os.environ.get("OUTBOX_QUEUE_URL"):
        os.environ["OUTBOX_QUEUE_URL"] = embedded.ensure_outbox(settings().event_bus_name)
    if not os.environ.get("OFFER_QUEUE_URL"):
        os.environ["OFFER_QUEUE_URL"] = embedded.ensure_offer_queue(settings().event_bus_name)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "dispatch")
    migrate()
    stack = gateway.Gateway(environments=args.environments)
    sweep_every = int(os.environ.get("DISPATCH_SWEEP_INTERVAL_SECONDS", "60"))
    stack.run_schedules(
        lambda s: sweep_every if s.function == "LeaseSweeperFunction" else s.every_seconds
    )
    stack.run_queue_consumers(
        {"OutboxQueue": os.environ["OUTBOX_QUEUE_URL"], "OfferQueue": os.environ["OFFER_QUEUE_URL"]}
    )
    server = uvicorn.Server(
        uvicorn.Config(
            gateway.app(stack),
            host=args.host,
            port=args.port,
            log_level="warning",
            access_log=False,
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
        f"  every event published to the bus prints a 'published' log line here\n"
        f"  (offer.created too: report a location near a new job to get one)\n"
        f"  Ctrl-C stops everything.",
        flush=True,
    )
    # uvicorn stops on Ctrl-C or a plain kill (SIGINT, SIGTERM) and then everything this
    # command started stops too (embedded servers by their exit hooks), even when a shell
    # started us with SIGINT ignored.
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, _stop)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        print("\nstopping", flush=True)
        stack.close()


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="dispatch")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("dev", help="serve the API locally with embedded Postgres and Redis")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "3000")))
    p.add_argument("--environments", type=int, default=8, help="concurrent Lambda environments")
    p.set_defaults(run=dev)

    p = sub.add_parser("migrate", help="apply pending migrations to DATABASE_URL")
    p.set_defaults(run=migrate)

    p = sub.add_parser("token", help="print a bearer token the local stack accepts")
    p.add_argument("--sub", required=True)
    p.add_argument("--role", required=True, choices=["business", "worker", "ops"])
    p.add_argument("--ttl", type=int, default=12 * 3600, help="seconds until it expires")
    p.set_defaults(run=token)

    p = sub.add_parser("openapi", help="print the merged OpenAPI document")
    p.set_defaults(run=openapi)

    p = sub.add_parser("asyncapi", help="print the AsyncAPI document of the events on the bus")
    p.set_defaults(run=asyncapi)

    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main(sys.argv[1:])
