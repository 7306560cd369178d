"""A real Redis server for the farm tests: Debian's ``redis-server`` started on a free 127.0.0.1
port with no persistence, stopped and started again on the same port when a test says so. Never a
system server. ``skip_reason()`` says why the farm tests cannot run (no redis-server, no redis-py).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path


def skip_reason() -> str | None:
    if shutil.which("redis-server") is None:
        return "skipped: no redis-server (Debian: apt-get install redis-server; .ci/run installs it)"
    try:
        import redis  # noqa: F401
    except ImportError:
        return "skipped: redis-py is not installed (pip install -r requirements-test.txt)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """``start()`` / ``stop()`` / ``restart()``; ``url`` stays the same across restarts.
    ``options``: more command-line configuration, e.g. ``["--maxmemory", "2mb",
    "--maxmemory-policy", "allkeys-lru"]`` or ``["--rename-command", "CONFIG", ""]``."""

    def __init__(self, workdir: Path, port: int | None = None, *, password: str | None = None,
                 options: list[str] | tuple[str, ...] = ()):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.password = password
        self.options = list(options)
        self.process: subprocess.Popen | None = None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> "RedisServer":
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--dir", str(self.workdir), "--daemonize", "no",
                   "--loglevel", "warning"]
        if self.password:
            command += ["--requirepass", self.password]
        command += self.options
        self.log = open(self.workdir / f"redis-{self.port}.log", "ab")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}; see "
                                   f"{self.workdir / f'redis-{self.port}.log'}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer on port {self.port} within {timeout} s")

    def stop(self) -> None:
        """Kill the server (as a crash or a pulled cable would: no goodbye to the clients)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None
        if getattr(self, "log", None):
            self.log.close()

    def restart(self) -> None:
        self.stop()
        self.start()

    def client(self):
        import redis
        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password)


class TcpProxy:
    """A TCP relay from a free 127.0.0.1 port to the server, which a test can cut (every
    connection through it closed, new ones refused) and restore: one worker's network partition,
    while the server and the other workers go on."""

    def __init__(self, target_port: int):
        import threading

        self.target_port = target_port
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._threading = threading

    def start(self) -> "TcpProxy":
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        self._threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if listener is not self._listener:  # cut meanwhile
                client.close()
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                self._threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(1 << 16)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """Close every relayed connection and stop listening (connections are refused)."""
        if self._listener is not None:
            try:  # wakes the thread blocked in accept() (close alone would not, on Linux)
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def restore(self) -> None:
        self.start()
