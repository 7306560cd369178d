"""A real ComfyUI server for the integration tests: ``main.py --cpu`` on 127.0.0.1 (a free
port) from a base directory the test prepares (custom_nodes/, models/), its output in a log file.
Start-up and stop waits are bounded."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from conftest import COMFYUI_PATH

STARTUP_TIMEOUT_S = 180  # ComfyUI v0.33+ alone takes ~50 s to answer on a loaded 2-core machine


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 5.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


class Server:
    """``python`` runs main.py (default: this interpreter) with ``args`` after the usual ones; its
    environment is ``base_env`` (default: this process's) with ``env`` on top and the spill folder set."""

    def __init__(self, base: Path, log: Path, *, spill: Path | None = None, env: dict | None = None,
                 python: str | Path = sys.executable, base_env: dict | None = None, args: tuple = ()):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        env = {**(os.environ if base_env is None else base_env),
               "ZEROCOPY_SPILL_DIR": str(spill or base / "spill"), "PYTHONUNBUFFERED": "1", **(env or {})}
        self.log = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [
                str(python),
                str(Path(COMFYUI_PATH) / "main.py"),
                "--cpu",
                "--listen",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--base-directory",
                str(base),
                "--disable-auto-launch",
                "--database-url",
                "sqlite:///:memory:",
                "--preview-method",
                "none",
                *map(str, args),
            ],
            cwd=str(base),
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, path: str = "/api/zerocopy/buffers", timeout_s: float = STARTUP_TIMEOUT_S):
        """Until ``path`` answers 200; the log's tail in the error when the server exits or is
        silent for ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:  # bounded start-up wait, 0.25 s apart
            if self.process.poll() is not None:
                raise AssertionError(f"ComfyUI exited with {self.process.returncode}:\n{self.tail()}")
            try:
                status, _, _ = get(self.url + path, 2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.25)
        raise AssertionError(f"ComfyUI did not answer within {timeout_s} s:\n{self.tail()}")

    def tail(self, lines=60) -> str:
        self.log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        self.log.close()
