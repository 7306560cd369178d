"""The farm's two redis-py clients and whether Redis is reachable.

``quick`` serves the calls on a node's path (allocation, the newest lookup of a fingerprint):
short timeouts, no retries. ``bulk`` serves the background transfers: longer timeouts. Both
share the up/down state: after a failure nothing is tried for ``retry_s`` (a fingerprint or a
put then costs nothing), the first failure of an outage is logged once as a warning, and the
first success after it once as information. ``on_connect`` (set by the Farm) runs after the first
success of the process and after each outage: the farm reads there what the server is (its
eviction policy).
"""

from __future__ import annotations

import threading
import time

from .. import zc_log as log
from .config import FarmConfig

REDIS_PIN = "redis==8.1.0"


class FarmUnavailable(RuntimeError):
    """Redis cannot be used now (unreachable, refusing, or redis-py missing); the worker goes
    on with its local store."""


def import_redis():
    """redis-py, or FarmUnavailable saying how to install it."""
    try:
        import redis
    except ImportError:
        raise FarmUnavailable(
            f"the farm tier needs redis-py: install it with ComfyUI's Python (python -m pip install "
            f"{REDIS_PIN}, or the pack's requirements.txt); until then this worker works locally") from None
    return redis


class Connection:
    def __init__(self, config: FarmConfig):
        redis = import_redis()
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.config = config
        self.errors = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
        self.response_error = redis.exceptions.ResponseError
        self.on_connect = None  # called (no argument, no lock held) when Redis answers after not having
        common = dict(password=config.password) if config.password else {}
        self.quick = redis.Redis.from_url(
            config.url, socket_timeout=config.timeout_s, socket_connect_timeout=config.timeout_s,
            retry=Retry(NoBackoff(), 0), **common)
        self.bulk = redis.Redis.from_url(
            config.url, socket_timeout=config.transfer_timeout_s,
            socket_connect_timeout=max(config.timeout_s, 2.0), retry=Retry(NoBackoff(), 1), **common)
        self._lock = threading.Lock()
        self.up: bool | None = None  # None: not tried yet
        self.retry_at = 0.0
        self.last_error: str | None = None
        self.outages = 0

    def usable(self) -> bool:
        """Worth trying now: up, never tried, or down for ``retry_s`` already."""
        return self.up is not False or time.monotonic() >= self.retry_at

    def call(self, what: str, fn):
        """fn()'s result; FarmUnavailable when Redis is down (now, or known to be, within retry_s).
        A ResponseError (Redis refused the command, e.g. out of memory) passes through."""
        if not self.usable():
            raise FarmUnavailable(f"Redis at {self.config.redacted_url} is unreachable "
                                  f"({self.last_error}); retrying within {self.config.retry_s:g} s")
        try:
            result = fn()
        except self.errors as exc:
            self.mark_down(what, exc)
            raise FarmUnavailable(f"Redis at {self.config.redacted_url} is unreachable ({self.last_error})") from None
        self.mark_up()
        return result

    def mark_down(self, what: str, exc: BaseException) -> None:
        with self._lock:
            first = self.up is not False
            self.up = False
            self.retry_at = time.monotonic() + self.config.retry_s
            self.last_error = f"{type(exc).__name__}: {exc}"
            if first:
                self.outages += 1
        if first:
            log.warning("farm: Redis at %s is unreachable (%s, during %s); this worker goes on with its "
                        "local store and publishes what Redis lacks when it is back (said once per outage)",
                        self.config.redacted_url, self.last_error, what)

    def mark_up(self) -> None:
        with self._lock:
            was_down = self.up is False
            connected = self.up is not True  # first contact, or back after an outage
            self.up = True
            self.last_error = None if was_down else self.last_error
        if was_down:
            log.info("farm: Redis at %s is reachable again", self.config.redacted_url)
        if connected and self.on_connect is not None:
            try:
                self.on_connect()
            except Exception:  # noqa: BLE001 - a look at the server must not fail the call that connected
                log.debug("farm: the connect hook failed", exc_info=True)

    def close(self) -> None:
        for client in (self.quick, self.bulk):
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing must not fail a reset
                pass
