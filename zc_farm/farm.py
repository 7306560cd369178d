"""Farm: what one worker holds to share its films through Redis.

    farm = Farm(store, FarmConfig.from_env())
    generation = farm.put(tag, tensors, meta)      # numbered by Redis, stored locally, published
    farm.pull(tag)                                 # Redis has a newer shot? fetched, checked, imported
    farm.newest_published(tag)                     # (generation, digest) for a fingerprint, or None
    farm.close()

The local store stays the source of truth: every method works (or does nothing) with Redis
unreachable, and ``put`` then numbers the shot locally and publishes it when Redis is back.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass

from . import identity, transfer
from ._pack import CorruptFile, GenerationExists, log
from .config import FarmConfig
from .connection import Connection, FarmUnavailable
from .events import Subscriber
from .keys import Keys
from .publisher import Publisher
from .publish import ALLOCATED, CLAIM
from .records import ShotRecord
from .scripts import Scripts

MAX_TOUCHED = 1024
MAX_PUT_ATTEMPTS = 8
MAX_TAGS_LISTED = 100


@dataclass(frozen=True)
class PullResult:
    """A shot that came from the farm: its record, and whether this call imported it (False:
    another process of this spill folder imported it first)."""

    record: ShotRecord
    imported: bool


class Farm:
    def __init__(self, store, config: FarmConfig, *, on_event=None):
        self.store = store
        self.config = config
        self.connection = Connection(config)
        self.keys = Keys(config.prefix)
        self.scripts = Scripts(self.connection.bulk)
        self.renumbered: dict[tuple[str, int], int] = {}  # (tag, local generation) -> farm generation
        self.counts: collections.Counter = collections.Counter()
        self.last_error: str | None = None
        self._touched: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        self.publisher = Publisher(self)
        self.subscriber = (Subscriber(self.connection, self.keys.channel, config.worker_id, on_event)
                           if on_event is not None else None)
        log.info("farm: on, Redis at %s, worker %r, keeping the newest %d shots per tag",
                 config.redacted_url, config.worker_id, config.keep)

    # -- bookkeeping -----------------------------------------------------------------------
    def count(self, name: str) -> None:
        with self._lock:
            self.counts[name] += 1

    def touch(self, tag: str) -> None:
        """The first use of a tag in this process catches up on what Redis lacks of it."""
        with self._lock:
            first = tag not in self._touched
            self._touched[tag] = None
            self._touched.move_to_end(tag)
            while len(self._touched) > MAX_TOUCHED:
                self._touched.popitem(last=False)
        if first:
            self.publisher.enqueue_catch_up(tag)

    def local_last(self, tag: str) -> int:
        """The highest generation the local spill folder handed out for tag (0: none)."""
        entry = self.store.describe_tag(tag)
        return int(entry["last_generation"]) if entry else 0

    # -- numbering and storing -------------------------------------------------------------
    def allocate(self, tag: str, floor: int) -> int:
        """The next farm generation of tag, above floor. Raises FarmUnavailable."""
        return int(self.connection.call(
            f"the allocation of a generation of tag {tag!r}",
            lambda: self.scripts.allocate(keys=[self.keys.counter(tag)], args=[int(floor)],
                                          client=self.connection.quick)))

    def put(self, tag: str, tensors, meta: dict | None = None, *, spill: bool = True,
            digests: dict | None = None) -> int:
        """Store a new shot of tag under a generation Redis allocates (locally numbered when Redis
        is unreachable), then publish it in the background. Returns the generation; ``digests``
        receives the stored tensors' digests (LatentStore.put)."""
        meta = dict(meta or {})
        meta[identity.WORKER_KEY] = self.config.worker_id
        for _ in range(MAX_PUT_ATTEMPTS):
            try:
                generation = self.allocate(tag, self.local_last(tag))
            except FarmUnavailable:
                meta[identity.NUMBERED_KEY] = identity.NUMBERED_LOCAL
                generation = self.store.put(tag, tensors, meta, spill=spill, digests=digests)
                self.count("numbered_locally")
                self.publisher.enqueue_shot(tag, generation, CLAIM)
                self.touch(tag)  # after the shot's own task: a catch-up leaves queued shots alone
                return generation
            meta[identity.NUMBERED_KEY] = identity.NUMBERED_FARM
            try:
                self.store.put(tag, tensors, meta, spill=spill, generation=generation, digests=digests)
            except GenerationExists:  # another process of this spill folder stored it meanwhile
                continue
            self.count("allocated")
            self.publisher.enqueue_shot(tag, generation, ALLOCATED)
            self.touch(tag)
            return generation
        raise GenerationExists(f"tag {tag!r}: {MAX_PUT_ATTEMPTS} farm generations in a row were taken in "
                               "the local spill folder meanwhile; is another process storing with a farm "
                               "of another Redis?")

    # -- reading ---------------------------------------------------------------------------
    def newest_published(self, tag: str, *, raise_unavailable: bool = False) -> tuple[int, str] | None:
        """(generation, first tensor's digest) of the newest shot Redis holds for tag; None when it
        holds none, or (unless raise_unavailable) is unreachable. One round trip, bounded by the
        quick timeout; nothing at all while Redis is known to be down."""
        try:
            found = self.connection.call(
                f"the newest lookup of tag {tag!r}",
                lambda: self.scripts.newest(keys=[self.keys.shots(tag)], args=[self.keys.base(tag)],
                                            client=self.connection.quick))
        except FarmUnavailable:
            if raise_unavailable:
                raise
            return None
        if not found:
            return None
        return int(found[0]), _text(found[1])

    def published_count(self) -> int | None:
        """Commits the farm has seen (any tag), or None when Redis is unreachable."""
        try:
            return int(self.connection.call("the publish count",
                                            lambda: self.connection.quick.get(self.keys.published)) or 0)
        except FarmUnavailable:
            return None

    def pull(self, tag: str, generation: int = 0) -> PullResult | None:
        """Import from Redis the tag's newest shot when it is newer than every local one (or, with
        generation, that one when the local store lacks it). None when there is nothing to import
        or Redis is unreachable. Raises CorruptFile (naming the tag, the generation and the worker;
        nothing stored locally) when the farm's bytes fail a digest."""
        self.touch(tag)
        if not self.connection.usable():
            return None
        local = self.store.generations(tag)
        if generation:
            if generation in local:
                return None
            wanted = generation
        else:
            newest = self.newest_published(tag)
            if newest is None or (local and newest[0] <= max(local)):
                return None
            wanted = newest[0]
        try:
            found = self.connection.call(f"the fetch of tag {tag!r} generation {wanted}",
                                         lambda: transfer.fetch(self.connection.bulk, self.keys, tag, wanted))
        except FarmUnavailable:
            return None
        if found is None:  # trimmed since the lookup, or never published
            return None
        record, data = found
        try:
            self.store.import_shot(tag, wanted, data)
        except CorruptFile as exc:
            raise CorruptFile(
                f"the farm's copy of tag {tag!r} generation {wanted} (made by worker {record.worker}) was "
                f"refused by the engine: {exc}. Nothing was stored locally; publish the shot again from "
                f"worker {record.worker}, or use a generation this worker holds") from None
        except GenerationExists:
            return self._already_held(record)
        self.count("fetched")
        log.info("farm: imported tag %r generation %d (%d bytes) from worker %s", tag, wanted, record.size,
                 record.worker)
        return PullResult(record, imported=True)

    def _already_held(self, record: ShotRecord) -> PullResult | None:
        """The local store holds record's generation already: the same shot (another process of
        this folder imported it), or this worker's own shot numbered while Redis was unreachable."""
        held = self.store.get(record.tag, record.generation)
        if identity.of_bundle(held) == record.identity:
            return PullResult(record, imported=False)
        log.warning("farm: tag %r generation %d in Redis (from worker %s) is another shot than this worker's "
                    "own generation %d (numbered here while Redis was unreachable); this worker keeps its own",
                    record.tag, record.generation, record.worker, record.generation)
        return None

    # -- state -----------------------------------------------------------------------------
    def listing(self, limit: int = MAX_TAGS_LISTED) -> list[dict]:
        """The newest record of the tags published most recently (at most limit). Raises
        FarmUnavailable."""
        def read():
            client = self.connection.quick
            tags = [_text(t) for t in client.zrevrange(self.keys.tags, 0, limit - 1)]
            pipe = client.pipeline(transaction=False)
            for tag in tags:
                pipe.zrange(self.keys.shots(tag), -1, -1)
            newest = pipe.execute()
            pipe = client.pipeline(transaction=False)
            wanted = [(tag, int(gens[0])) for tag, gens in zip(tags, newest) if gens]
            for tag, generation in wanted:
                pipe.hgetall(self.keys.record(tag, generation))
            return wanted, pipe.execute()

        wanted, records = self.connection.call("the farm's listing", read)
        out = []
        for (tag, generation), fields in zip(wanted, records):
            if not fields:
                continue
            try:
                out.append(ShotRecord.from_fields(tag, generation, fields).summary())
            except CorruptFile as exc:
                out.append({"tag": tag, "generation": generation, "error": str(exc)})
        return out

    def status(self) -> dict:
        connection = self.connection
        with self._lock:
            counts = dict(self.counts)
        return {"enabled": True, "url": self.config.redacted_url, "worker": self.config.worker_id,
                "keep": self.config.keep, "chunk_bytes": self.config.chunk_bytes,
                "connected": connection.up, "last_error": connection.last_error or self.last_error,
                "outages": connection.outages, "pending": self.publisher.pending(), "counts": counts,
                "events_received": self.subscriber.received if self.subscriber else 0}

    def wait_published(self, timeout: float) -> bool:
        """True once everything stored so far is published (False after timeout)."""
        return self.publisher.wait_idle(timeout)

    def close(self, timeout: float = 5.0) -> None:
        left = self.publisher.close(timeout)
        if left:
            log.warning("farm: closing with %d publish task(s) not done (Redis at %s unreachable?); the shots "
                        "stay in the local store and are published when this worker next uses their tags",
                        left, self.config.redacted_url)
        if self.subscriber is not None:
            self.subscriber.close()
        self.connection.close()


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
