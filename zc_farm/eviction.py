"""Whether the Redis server may evict the farm's keys, and what a key found missing means.

A Redis with ``maxmemory`` set and a ``maxmemory-policy`` other than ``noeviction`` deletes keys
when it is full: with an ``allkeys-*`` policy any key (a published shot's record or bytes, a tag's
list of shots or its counter, the farm's epoch), with a ``volatile-*`` policy the keys that
expire (the farm's uploads in progress; a published shot's keys never expire). A worker that
needs an evicted shot cannot fetch it, and an evicted epoch looks like a Redis that lost its
data. So the farm reads the policy when it connects (``CONFIG GET maxmemory*``; a server where
CONFIG is renamed or not permitted cannot be checked, and the farm says so), says it once, and
explains a missing key by it (``INFO stats``'s ``evicted_keys`` tells whether Redis has evicted
anything).
"""

from __future__ import annotations

from dataclasses import dataclass

NO_EVICTION = "noeviction"
FIX = ("set maxmemory-policy noeviction (a publish that does not fit then fails and the shot stays "
       "local) or raise maxmemory (docs/farm.md, Memory)")


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}".replace(".00 ", " ")
    return f"{nbytes} B"


@dataclass(frozen=True)
class EvictionPolicy:
    """What the server's configuration says. ``checked`` False: it could not be read (``reason``)."""

    checked: bool
    policy: str | None = None
    maxmemory: int | None = None
    reason: str | None = None

    @classmethod
    def unknown(cls, reason: str) -> "EvictionPolicy":
        return cls(False, reason=reason)

    @property
    def may_evict(self) -> bool | None:
        """True when Redis may delete the farm's keys when full; None when it could not be read."""
        if not self.checked:
            return None
        return self.policy != NO_EVICTION and bool(self.maxmemory)

    @property
    def any_key(self) -> bool:
        """An allkeys-* policy: any key may go (volatile-*: only keys that expire)."""
        return bool(self.may_evict) and not str(self.policy).startswith("volatile")

    def setting(self) -> str:
        """``maxmemory-policy allkeys-lru, maxmemory 2 MiB`` (what the server runs)."""
        limit = _size(self.maxmemory) if self.maxmemory else "0 (no limit)"
        return f"maxmemory-policy {self.policy}, maxmemory {limit}"

    def message(self, url: str) -> str | None:
        """The warning to say once at connect, or None when the farm's keys are safe."""
        if not self.checked:
            return (f"farm: cannot check whether Redis at {url} may evict the farm's keys ({self.reason}): "
                    "make sure its maxmemory-policy is noeviction, or maxmemory 0; with an eviction policy a "
                    "worker may find a published shot gone (docs/farm.md, Memory)")
        if not self.may_evict:
            return None
        if self.any_key:
            return (f"farm: Redis at {url} may evict the farm's keys ({self.setting()}): when it is full it "
                    "deletes any key, a published shot's record or bytes, a tag's list of shots or counter, the "
                    "farm's epoch. A worker then cannot fetch an evicted shot (its Load or Handoff says so) and "
                    f"an evicted counter restarts a tag's numbering; {FIX}")
        return (f"farm: Redis at {url} may evict keys that expire ({self.setting()}): the farm's uploads in "
                "progress (a publish then fails as incomplete and is tried again); published shots do not "
                f"expire and stay. For none at all, {FIX}")

    def status(self, url: str) -> dict:
        """The farm status's ``eviction`` field (GET /zerocopy/farm, the sidebar's farm line)."""
        return {"checked": self.checked, "policy": self.policy, "maxmemory_bytes": self.maxmemory,
                "may_evict": self.may_evict, "message": self.message(url)}


def read_policy(client, refused: tuple[type[BaseException], ...]) -> EvictionPolicy:
    """The server's eviction settings (one round trip). ``refused``: the exceptions of a command
    Redis refuses (CONFIG renamed away, or an ACL without it): then not checked, with the reason.
    Connection errors pass through (the caller tries again at the next connect)."""
    try:
        found = client.config_get("maxmemory*")
    except refused as exc:
        return EvictionPolicy.unknown(f"CONFIG GET is refused: {exc}")
    values = {_text(k): _text(v) for k, v in (found or {}).items()}
    if "maxmemory-policy" not in values or "maxmemory" not in values:
        return EvictionPolicy.unknown("CONFIG GET maxmemory* answered without maxmemory and maxmemory-policy")
    try:
        limit = int(values["maxmemory"])
    except ValueError:
        return EvictionPolicy.unknown(f"CONFIG GET answered maxmemory {values['maxmemory']!r}")
    return EvictionPolicy(True, values["maxmemory-policy"], limit)


def evicted_keys(client, refused: tuple[type[BaseException], ...]) -> int | None:
    """Keys Redis has evicted since it started (``INFO stats``), or None when it cannot be read."""
    try:
        stats = client.info("stats")
    except refused:
        return None
    try:
        return int(stats.get("evicted_keys"))
    except (TypeError, ValueError):
        return None
