"""FarmConfig: where the farm's Redis is and how this worker uses it.

From the environment (``FarmConfig.from_env``):

    ZEROCOPY_REDIS_URL        redis://[user:password@]host:6379/0, rediss:// for TLS, unix:///path;
                              unset or empty: no farm
    ZEROCOPY_REDIS_PASSWORD   the password, when the URL carries none (keeps it out of URLs,
                              settings files and process listings of the URL)
    ZEROCOPY_WORKER_ID        this worker's name in the farm (default <hostname>:<pid>)
    ZEROCOPY_REDIS_KEEP       shots Redis keeps per tag (default 8)
    ZEROCOPY_REDIS_CHUNK_MB   largest value written to Redis, in MiB (default 8)
    ZEROCOPY_REDIS_TIMEOUT_S  bound of the quick calls on a node's path: allocation, the newest
                              lookup of a fingerprint (default 1)

A URL's password never appears in a log line, an error or an API answer: ``redact_url``.
"""

from __future__ import annotations

import os
import socket
import stat
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit

ENV_URL = "ZEROCOPY_REDIS_URL"
ENV_PASSWORD = "ZEROCOPY_REDIS_PASSWORD"
ENV_WORKER = "ZEROCOPY_WORKER_ID"
ENV_KEEP = "ZEROCOPY_REDIS_KEEP"
ENV_CHUNK = "ZEROCOPY_REDIS_CHUNK_MB"
ENV_TIMEOUT = "ZEROCOPY_REDIS_TIMEOUT_S"

SCHEMES = ("redis", "rediss", "unix")
ACCEPTED = ("redis://host:6379/0 (redis://user:password@host:6379/0 with a password), rediss://host:6380/0 (TLS) "
            "or unix:///path/to/redis.sock "
            "(an existing socket)")
# what a URL from the settings panel (any client of ComfyUI's API) may carry in its query: no
# option that names a file (ssl_certfile, ssl_keyfile, ssl_ca_certs...) or changes the client
SETTINGS_QUERY = frozenset({"db", "password", "username", "protocol"})
DEFAULT_KEEP = 8
MAX_KEEP = 1000
DEFAULT_CHUNK_BYTES = 8 << 20
MAX_CHUNK_BYTES = 256 << 20  # well below Redis's proto-max-bulk-len (512 MiB)
DEFAULT_TIMEOUT_S = 1.0
MAX_URL_CHARS = 2048
MAX_WORKER_CHARS = 128


class FarmConfigError(ValueError):
    """A farm setting is wrong; the message names the setting, the value and the fix. Its module
    reads "ZeroCopy" in ComfyUI's error panel, not the server's path (see zc_continuity/errors.py)."""

    __module__ = "ZeroCopy"

    def __reduce__(self):  # pickle and copy rebuild it from this module, not from "ZeroCopy"
        return _rebuild, (self.args,), self.__dict__ or None


def _rebuild(args: tuple) -> FarmConfigError:
    return FarmConfigError(*args)


def redact_url(url: str) -> str:
    """The URL with its password (in the user part or a ``password=`` query) replaced by ***."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<an unparsable URL>"
    netloc = parts.netloc
    if "@" in netloc:  # user:password@host; a lone user part may be a password too: hide it
        user, _, host = netloc.rpartition("@")
        name, sep, _password = user.partition(":")
        netloc = f"{name}:***@{host}" if sep else f"***@{host}"
    query = parts.query
    if query:
        pairs = [(k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(query, keep_blank_values=True)]
        query = urlencode(pairs, safe="*")
    # by hand: urlunsplit drops the "//" of unix:///path
    return (f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
            + (f"#{parts.fragment}" if parts.fragment else ""))


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def check_url(url: str, setting: str = ENV_URL, *, from_settings: bool = False) -> str:
    """The URL stripped, or FarmConfigError naming what is wrong and the accepted forms (never
    echoing a password). Accepted: ``redis://`` and ``rediss://`` with a host, and ``unix://`` with
    an absolute path that is a socket. ``from_settings`` (a URL from the settings panel, that is
    from any client of ComfyUI's API): the socket must exist now, and the query may hold only
    ``db``, ``password``, ``username`` and ``protocol``. From the environment (chosen by whoever
    started the server) a socket path that does not exist yet is accepted (Redis may start later);
    one that exists and is not a socket never is."""
    if not isinstance(url, str):
        raise FarmConfigError(f"{setting} must be a string like redis://host:6379/0, not "
                              f"{type(url).__name__}")
    url = url.strip()
    if len(url) > MAX_URL_CHARS:
        raise FarmConfigError(f"{setting} has {len(url)} characters; the limit is {MAX_URL_CHARS}")
    if not url.isprintable():
        raise FarmConfigError(f"{setting} holds control characters; use {ACCEPTED}")
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in SCHEMES:
        raise FarmConfigError(f"{setting}={redact_url(url)!r} is not a Redis URL: use {ACCEPTED}")
    try:
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError as exc:
        raise FarmConfigError(f"{setting}={redact_url(url)!r} cannot be parsed ({exc}); use {ACCEPTED}") from None
    if from_settings:
        extra = sorted({k for k, _ in query if k.lower() not in SETTINGS_QUERY})
        if extra:
            raise FarmConfigError(
                f"{setting}={redact_url(url)!r} sets {', '.join(extra)} in its query; from the settings panel a "
                f"URL may set only {', '.join(sorted(SETTINGS_QUERY))} (set other redis-py options, such as TLS "
                f"files, in {ENV_URL} on the server)")
    if scheme != "unix":
        if not parts.hostname:
            raise FarmConfigError(f"{setting}={redact_url(url)!r} names no host; e.g. redis://10.0.0.5:6379/0")
        return url
    _check_socket(url, parts, setting, must_exist=from_settings)
    return url


def _check_socket(url: str, parts, setting: str, *, must_exist: bool) -> None:
    """A unix:// URL's path: absolute, and a socket (stat, following links as connect does)."""
    path = parts.path
    host = parts.netloc.rpartition("@")[2]
    if host or not path.startswith("/") or "\0" in path:
        raise FarmConfigError(f"{setting}={redact_url(url)!r}: a unix:// URL names an absolute socket path after "
                              f"three slashes, e.g. unix:///run/redis/redis.sock; use {ACCEPTED}")
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if must_exist:
            raise FarmConfigError(f"{setting}={redact_url(url)!r}: {path} does not exist; start Redis with "
                                  f"unixsocket {path} first, or use {ACCEPTED}") from None
        return
    except OSError as exc:
        raise FarmConfigError(f"{setting}={redact_url(url)!r}: {path} cannot be examined ({exc.strerror}); use "
                              f"{ACCEPTED}") from None
    if not stat.S_ISSOCK(info.st_mode):
        raise FarmConfigError(f"{setting}={redact_url(url)!r}: {path} is not a socket; a unix:// URL must name "
                              f"the socket Redis listens on (its unixsocket setting). Accepted: {ACCEPTED}")


def _int_setting(environ, name: str, default: int, low: int, high: int, unit: str = "") -> int:
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise FarmConfigError(f"{name}={text!r} is not a whole number; set it to {low}..{high}{unit} "
                              f"or leave it unset (default {default})") from None
    if not low <= value <= high:
        raise FarmConfigError(f"{name}={value} is out of range; set it to {low}..{high}{unit}")
    return value


@dataclass(frozen=True)
class FarmConfig:
    """A farm's settings. ``prefix`` starts every key (several farms may share one Redis)."""

    url: str
    worker_id: str
    keep: int = DEFAULT_KEEP
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    timeout_s: float = DEFAULT_TIMEOUT_S
    transfer_timeout_s: float = 30.0
    retry_s: float = 5.0
    password: str | None = None
    prefix: str = "zc"

    def __post_init__(self):
        check_url(self.url, "the farm's Redis URL")
        if not self.worker_id or len(self.worker_id) > MAX_WORKER_CHARS or not self.worker_id.isprintable():
            raise FarmConfigError(f"{ENV_WORKER}={self.worker_id!r}: give 1..{MAX_WORKER_CHARS} printable "
                                  "characters naming this worker (default <hostname>:<pid>)")
        if not 1 <= self.keep <= MAX_KEEP:
            raise FarmConfigError(f"{ENV_KEEP}={self.keep} is out of range; set it to 1..{MAX_KEEP}")
        if not 1 <= self.chunk_bytes <= MAX_CHUNK_BYTES:
            raise FarmConfigError(f"the chunk size {self.chunk_bytes} B is out of range (1 B..256 MiB)")
        if not self.timeout_s > 0 or not self.transfer_timeout_s > 0 or not self.retry_s > 0:
            raise FarmConfigError("the farm's timeouts must be positive")

    @property
    def redacted_url(self) -> str:
        return redact_url(self.url)

    @classmethod
    def from_env(cls, environ=None, *, url: str | None = None) -> "FarmConfig | None":
        """The configuration the environment gives (``url`` overrides ZEROCOPY_REDIS_URL, e.g.
        the one set in ComfyUI's settings panel); None when no URL is set: no farm."""
        environ = os.environ if environ is None else environ
        url = (url if url is not None else environ.get(ENV_URL, "")).strip()
        if not url:
            return None
        timeout_text = environ.get(ENV_TIMEOUT, "").strip()
        try:
            timeout = float(timeout_text) if timeout_text else DEFAULT_TIMEOUT_S
        except ValueError:
            raise FarmConfigError(f"{ENV_TIMEOUT}={timeout_text!r} is not a number of seconds (e.g. 1)") from None
        if not 0 < timeout <= 60:
            raise FarmConfigError(f"{ENV_TIMEOUT}={timeout} is out of range; set it to more than 0, at most 60")
        return cls(url=check_url(url), worker_id=environ.get(ENV_WORKER, "").strip() or default_worker_id(),
                   keep=_int_setting(environ, ENV_KEEP, DEFAULT_KEEP, 1, MAX_KEEP),
                   chunk_bytes=_int_setting(environ, ENV_CHUNK, DEFAULT_CHUNK_BYTES >> 20, 1,
                                            MAX_CHUNK_BYTES >> 20, " MiB") << 20,
                   timeout_s=timeout, password=environ.get(ENV_PASSWORD) or None)
