"""A TCP forwarder that can cut a real server off and bring it back, standing for a network
partition or a server going away, without touching the server itself."""

import contextlib
import socket
import struct
import threading
from collections.abc import Callable

Connect = Callable[[], socket.socket]


def upstream_of(host: str, port: int) -> Connect:
    """How to reach the real server: a unix socket when `host` is a folder (libpq's way)."""
    if host.startswith("/"):
        path = f"{host}/.s.PGSQL.{port}"

        def unix() -> socket.socket:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            return s

        return unix
    return lambda: socket.create_connection((host, port))


CANCEL_REQUEST = struct.pack("!ii", 16, 80877102)  # Postgres' CancelRequest: length, code


class Proxy:
    """Listens on 127.0.0.1:<port>; forwards to the upstream until cut(). With
    `passes_cancels=False` it drops Postgres cancel requests, as RDS Proxy does."""

    def __init__(self, upstream: Connect, passes_cancels: bool = True) -> None:
        self.upstream = upstream
        self.passes_cancels = passes_cancels
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.open = threading.Event()
        self.open.set()
        self.live: set[socket.socket] = set()
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        """Drop every connection now, and refuse new ones (they are closed on arrival)."""
        self.open.clear()
        with self.lock:
            for s in self.live:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self.live.clear()

    def restore(self) -> None:
        self.open.set()

    def close(self) -> None:
        self.cut()
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            if not self.open.is_set():
                client.close()
                continue
            if not self.passes_cancels and self._is_cancel(client):
                client.close()
                continue
            try:
                server = self.upstream()
            except OSError:
                client.close()
                continue
            with self.lock:
                self.live |= {client, server}
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _is_cancel(client: socket.socket) -> bool:
        """A cancel request is a connection's whole first message (libpq sends it at once)."""
        client.settimeout(5)
        try:
            first = client.recv(8, socket.MSG_PEEK | socket.MSG_WAITALL)
        except OSError:
            return False
        finally:
            client.settimeout(None)
        return first == CANCEL_REQUEST

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, target):
                with contextlib.suppress(OSError):
                    s.close()
