"""Farm: what one worker holds to share its films through Redis.

    farm = Farm(store, FarmConfig.from_env())
    generation = farm.put(tag, tensors, meta)      # numbered by Redis, stored locally, published
    farm.pull(tag, notes=notes)                    # Redis has a newer shot? fetched, checked, imported
                                                   # (notes: why a published shot could not be)
    farm.newest_published(tag)                     # (generation, digest) for a fingerprint, or None
    farm.complete(tag)                             # the film's ancestors this worker lacks, imported
    farm.close()

The local store stays the source of truth: every method works (or does nothing) with Redis
unreachable, and ``put`` then numbers the shot locally and publishes it when Redis is back.
When it connects, the farm reads the server's eviction policy (eviction.py) and says once when
Redis may evict its keys; a published shot found missing later is named, with the cause.
"""

from __future__ import annotations

import collections
import threading
import uuid
from dataclasses import dataclass

from . import identity, transfer
from .. import zc_log as log
from ..zc_engine import CorruptFile, GenerationExists, NotFound
from .config import FarmConfig
from .connection import Connection, FarmUnavailable
from .eviction import FIX, EvictionPolicy, evicted_keys, read_policy
from .events import Subscriber
from .keys import Keys
from .publisher_thread import Publisher
from .publishing import ALLOCATED, CLAIM, local_identity, parent_of
from .records import MAX_GENERATION, ShotRecord, generation_of
from .scripts import Scripts

MAX_TOUCHED = 1024
MAX_MISSING_SAID = 1024  # missing shots already warned about (each is said once in the log)
MAX_PUT_ATTEMPTS = 8
MAX_TAGS_LISTED = 100
MAX_ANCESTORS = 1000   # ZEROCOPY_REDIS_KEEP's limit: Redis never holds a longer chain of one tag
PROGRESS_EVERY = 25    # an ancestor walk logs its progress every this many shots


class NumberClash(Exception):
    """Raised inside a pull: a number names one shot on this worker and another in the farm."""


@dataclass(frozen=True)
class PullResult:
    """A shot that came from the farm: its record, and whether this call imported it (False:
    another process of this spill folder imported it first)."""

    record: ShotRecord
    imported: bool


class Farm:
    def __init__(self, store, config: FarmConfig, *, on_event=None, on_warning=None):
        """``on_warning(title, message, fields)``: called with every warning the farm logs (the
        node layer shows it in the browser); never allowed to fail the farm."""
        self.store = store
        self.on_warning = on_warning
        self.epoch: str | None = None  # the Redis data set this worker numbers in (scripts.py)
        self.config = config
        self.connection = Connection(config)
        self.keys = Keys(config.prefix)
        self.scripts = Scripts(self.connection.bulk)
        self.renumbered: dict[tuple[str, int], int] = {}  # (tag, local generation) -> farm generation
        self.counts: collections.Counter = collections.Counter()
        self.last_error: str | None = None
        self._touched: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        self.eviction = EvictionPolicy.unknown("Redis was not reached yet")
        self._eviction_said: tuple | None = None
        self._missing_said: collections.OrderedDict = collections.OrderedDict()
        self.connection.on_connect = self.check_eviction
        self._heard: collections.OrderedDict = collections.OrderedDict()  # tag -> (newest generation, worker)
        self.publisher = Publisher(self)

        def heard(event: dict) -> None:
            self._hear(event)
            on_event(event)

        self.subscriber = (Subscriber(self.connection, self.keys.channel, config.worker_id, heard)
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

    def _hear(self, event: dict) -> None:
        """Another worker's commit event: the newest generation of each tag heard of, which tells
        this worker a shot was published even when Redis has evicted every index of it."""
        try:
            tag, generation = str(event["tag"]), int(event["generation"])
        except (KeyError, TypeError, ValueError):
            return
        with self._lock:
            if generation > self._heard.get(tag, (0, ""))[0]:
                self._heard[tag] = (generation, str(event.get("worker") or "another worker"))
            self._heard.move_to_end(tag)
            while len(self._heard) > MAX_TOUCHED:
                self._heard.popitem(last=False)

    def local_last(self, tag: str) -> int:
        """The highest generation the local spill folder handed out for tag (0: none)."""
        entry = self.store.describe_tag(tag)
        return int(entry["last_generation"]) if entry else 0

    # -- the server's eviction policy ------------------------------------------------------
    def check_eviction(self) -> EvictionPolicy:
        """Read the server's eviction settings (at every connect) and say once, in the log and the
        browser, when Redis may evict the farm's keys or cannot be asked."""
        try:
            found = read_policy(self.connection.quick, (self.connection.response_error,))
        except self.connection.errors:
            return self.eviction  # gone again: read at the next connect
        key = (found.checked, found.policy, found.maxmemory)
        with self._lock:
            self.eviction = found
            new, self._eviction_said = key != self._eviction_said, key
        message = found.message(self.config.redacted_url)
        if new and message:
            self.warn("Farm: Redis may evict the farm's shots" if found.checked else
                      "Farm: Redis's eviction policy cannot be checked", message, url=self.config.redacted_url)
        elif new:
            log.info("farm: Redis at %s evicts no key of the farm's (%s)", self.config.redacted_url, found.setting())
        return found

    def _eviction_cause(self) -> str | None:
        """Why a key of the farm may be gone because Redis evicted it (a phrase), or None when
        eviction does not explain it: Redis evicted keys since it started (INFO stats), or its
        policy evicts any key and the count cannot be read."""
        policy = self.eviction
        try:
            evicted = self.connection.call("the eviction count (INFO stats)", lambda: evicted_keys(
                self.connection.quick, (self.connection.response_error,)))
        except FarmUnavailable:
            evicted = None
        setting = policy.setting() if policy.checked else "its eviction policy could not be read"
        if evicted:
            return f"Redis evicts keys when full ({setting}; {evicted} key(s) evicted since it started)"
        if evicted is None and policy.any_key:
            return f"Redis evicts keys when full ({setting})"
        return None

    def _missing(self, tag: str, generation: int | None, notes: list | None, *, listed: bool,
                 what: str = "was published") -> None:
        """A shot of the farm that a pull wanted is not in Redis (``generation`` None: the tag's
        newest, any). ``listed``: the farm's index (the tag's list of shots, or the list of tags)
        says it was published. Said in ``notes`` (the Load's or Handoff's) and once in the log and
        the browser, with the cause when Redis evicted it; a shot never listed says nothing unless
        Redis evicts keys (else: not published yet, or trimmed by ZEROCOPY_REDIS_KEEP)."""
        cause = self._eviction_cause()
        if cause is None and not listed:
            return
        where = f"Redis at {self.config.redacted_url}"
        shot = f"the farm's tag {tag!r} generation {generation}" if generation else f"the farm's tag {tag!r}"
        if listed and cause is not None:
            note = f"{shot} {what}, but {where} no longer holds it: evicted ({cause}); {FIX}"
        elif listed:
            note = (f"{shot} {what}, but {where} no longer holds it: deleted by something other than the farm, or "
                    "lost by Redis; check what else writes to this Redis (docs/farm.md, Security)")
        else:
            note = (f"{where} holds no {'shot' if generation is None else 'such shot'} of {shot}: not published "
                    f"yet, trimmed (ZEROCOPY_REDIS_KEEP), or evicted with the tag's index ({cause}); {FIX}")
        note += "; this worker goes on with what it holds"
        if notes is not None:
            notes.append(note)
        self.count("evicted" if cause is not None and listed else "missing")
        with self._lock:
            first = (tag, generation) not in self._missing_said
            self._missing_said[(tag, generation)] = None
            while len(self._missing_said) > MAX_MISSING_SAID:
                self._missing_said.popitem(last=False)
        if first:
            self.warn("Farm: a published shot is gone from Redis", f"farm: {note}", tag=tag, generation=generation)
        else:
            log.info("farm: %s", note)

    # -- numbering and storing -------------------------------------------------------------
    def warn(self, title: str, message: str, **fields) -> None:
        """A warning the user must see: the pack's log, and the browser through on_warning."""
        log.warning("%s", message)
        if self.on_warning is not None:
            try:
                self.on_warning(title, message, fields)
            except Exception:  # noqa: BLE001 - a UI message must never fail the farm
                log.debug("farm: the warning could not be shown", exc_info=True)

    def allocate(self, tag: str, floor: int) -> int:
        """The next farm generation of tag, above floor. Raises FarmUnavailable, and
        GenerationExists when the farm's counter of the tag reached 2^63-1."""
        status, value = self._allocate(tag, floor, "next")
        if status == "exhausted":
            raise GenerationExists(f"tag {tag!r} has used every farm generation (its counter "
                                   f"{self.keys.counter(tag)} is {value}, the engine's highest); use a new tag")
        return value

    def _allocate(self, tag: str, floor: int, mode: str) -> tuple[str, int]:
        floor = int(floor)
        if not 0 <= floor <= MAX_GENERATION:
            raise ValueError(f"floor {floor} of tag {tag!r} is not a generation 0..{MAX_GENERATION}")
        status, value, epoch, repaired = self.connection.call(
            f"the allocation of a generation of tag {tag!r}",
            lambda: self.scripts.allocate(keys=[self.keys.counter(tag), self.keys.shots(tag), self.keys.epoch],
                                          args=[str(floor), mode, uuid.uuid4().hex],
                                          client=self.connection.quick))
        status, epoch = _text(status), _text(epoch)
        if _text(repaired):
            self.bad_counter(tag, _text(repaired))
        if mode == "seed" and _text(value) == "0":
            return _text(status), 0
        number = generation_of(value, f"the farm's counter of tag {tag!r} ({self.keys.counter(tag)})")
        if mode == "next":
            self._saw_epoch(epoch, tag)
        return status, number

    def bad_counter(self, tag: str, value: str) -> None:
        """The counter of tag held a value that is no generation number (the scripts repaired it)."""
        self.count("counter_repaired")
        self.warn("Farm: a generation counter was repaired",
                  f"farm: Redis key {self.keys.counter(tag)} held {value!r}, not a generation number "
                  f"1..{MAX_GENERATION}; it was set to the highest number this worker or the farm's records "
                  "know, and numbering goes on from there. Something other than this pack wrote it: check "
                  "who can write to the Redis (docs/farm.md, Security)", tag=tag, key=self.keys.counter(tag))

    def _saw_epoch(self, epoch: str, tag: str | None = None) -> None:
        """The farm's epoch as a script read it ('' when the key is absent). Another epoch than the
        one this worker numbered in, or none, means Redis lost its data (restarted empty, flushed)
        or is another Redis: its counters restarted, so a number it hands out may be one another
        worker already holds as another shot."""
        with self._lock:
            known = self.epoch
            if epoch:
                self.epoch = epoch
            lost = known is not None and epoch != known
            if lost and not epoch:
                self.epoch = None
        if lost:
            self._redis_lost_data(skip=tag)

    def _redis_lost_data(self, skip: str | None = None) -> None:
        with self._lock:
            tags = [t for t in self._touched if t != skip]
            self._touched.clear()  # their next use republishes what Redis lacks (catch_up)
        seeded = 0
        for tag in tags:  # raise every counter this worker knows to what it holds (below its claims)
            claims = self.publisher.queued_claims(tag)
            floor = min(claims) - 1 if claims else self.local_last(tag)
            try:
                if self._allocate(tag, floor, "seed")[1]:
                    seeded += 1
            except (FarmUnavailable, CorruptFile, ValueError):
                break
        cause = self._eviction_cause()
        if cause is not None:  # not a restart or a flush: Redis evicted the epoch key
            self.count("epoch_evicted")
            message = (f"farm: the farm's epoch key {self.keys.epoch} is gone from Redis at {self.config.redacted_url}: "
                       f"{cause}, and it evicted it; its data was not lost as a whole, but any key may go the same "
                       f"way, and an evicted counter restarts a tag's numbering. This worker raised the counters of "
                       f"the {seeded} tag(s) it used to what it holds and republishes what Redis lacks; {FIX}")
            if self.counts["epoch_evicted"] == 1:  # said once; each later one only in the log's info
                self.warn("Farm: Redis evicts the farm's keys", message, url=self.config.redacted_url)
            else:
                log.info("%s", message)
            return
        self.count("data_lost")
        self.warn("Farm: Redis lost its data",
                  f"farm: Redis at {self.config.redacted_url} lost its data (restarted empty or flushed, or it "
                  f"is another server): its generation counters started again. This worker raised the "
                  f"counters of the {seeded} tag(s) it used to what it holds and republishes what Redis lacks; "
                  "a number another worker handed out meanwhile may name another shot than this worker's: such "
                  "a shot is never imported over this worker's own (each case is logged). Turn on persistence "
                  "(appendonly yes) so that this cannot happen", url=self.config.redacted_url)

    def put(self, tag: str, tensors, meta: dict | None = None, *, spill: bool = True,
            digests: dict | None = None, seam=None) -> int:
        """Store a new shot of tag under a generation Redis allocates (locally numbered when Redis
        is unreachable), then publish it in the background. Returns the generation; ``digests``
        receives the stored tensors' digests and ``seam`` (a SeamRequest) is measured as the
        put builds the shot (LatentStore.put)."""
        meta = dict(meta or {})
        meta[identity.WORKER_KEY] = self.config.worker_id
        for _ in range(MAX_PUT_ATTEMPTS):
            try:
                generation = self.allocate(tag, self.local_last(tag))
            except FarmUnavailable:
                meta[identity.NUMBERED_KEY] = identity.NUMBERED_LOCAL
                generation = self.store.put(tag, tensors, meta, spill=spill, digests=digests, seam=seam)
                self.count("numbered_locally")
                self.publisher.enqueue_shot(tag, generation, CLAIM)
                self.touch(tag)  # after the shot's own task: a catch-up leaves queued shots alone
                return generation
            meta[identity.NUMBERED_KEY] = identity.NUMBERED_FARM
            try:
                self.store.put(tag, tensors, meta, spill=spill, generation=generation, digests=digests,
                               seam=seam)
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
                lambda: self.scripts.newest(keys=[self.keys.shots(tag), self.keys.epoch],
                                            args=[self.keys.base(tag)], client=self.connection.quick))
        except FarmUnavailable:
            if raise_unavailable:
                raise
            return None
        member, digest, epoch = (_text(v) for v in found)
        self._saw_epoch(epoch)
        if not member:
            return None
        return generation_of(member, f"the newest member of {self.keys.shots(tag)}"), digest

    def published_count(self) -> int | None:
        """Commits the farm has seen (any tag), or None when Redis is unreachable."""
        try:
            return int(self.connection.call("the publish count",
                                            lambda: self.connection.quick.get(self.keys.published)) or 0)
        except FarmUnavailable:
            return None

    def pull(self, tag: str, generation: int = 0, notes: list | None = None) -> PullResult | None:
        """Import from Redis the tag's newest shot when it is newer than every local one (or, with
        generation, that one when the local store lacks it), and the ancestors the local film
        needs: its lineage's parents (same tag) down to one this worker holds, or the root. None
        when there is nothing to import, Redis is unreachable, or the farm's chain is not this
        worker's (a number of it names another shot here: refused, with a warning). A shot the
        farm's index lists but Redis no longer holds (evicted: eviction.py) is said in ``notes``
        (the Load's or Handoff's) and the log, with the cause. Raises CorruptFile (naming the tag,
        the generation and the worker; nothing stored locally) when the farm's bytes of that shot
        fail a digest."""
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
            if newest is None:
                self._newest_gone(tag, max(local, default=0), notes)
                return None
            if local and newest[0] <= max(local):
                return None
            wanted = newest[0]
        try:
            found = self.connection.call(f"the fetch of tag {tag!r} generation {wanted}",
                                         lambda: transfer.fetch(self.connection.bulk, self.keys, tag, wanted))
        except FarmUnavailable:
            return None
        except transfer.IncompleteBlob:
            if self._eviction_cause() is None:
                raise
            self._missing(tag, wanted, notes, what="was published (its record is there, its bytes are not)",
                          listed=True)
            return None
        if found is None:  # trimmed since the lookup, never published, or evicted
            self._missing(tag, wanted, notes, what="was published", listed=self._listed(tag, wanted))
            return None
        record, data = found
        try:
            chain = self._ancestors(tag, record.generation, record.meta, record.parent_identity, set(local))
        except NumberClash as clash:
            self.count("clashes")
            self.warn("Farm: a shot was not imported", f"farm: {clash}", tag=tag, generation=wanted)
            return None
        except FarmUnavailable:
            return None
        try:
            self._import(record, data)
        except GenerationExists:
            return self._already_held(record)
        self._import_chain(tag, chain, wanted)
        return PullResult(record, imported=True)

    def _listed(self, tag: str, generation: int) -> bool:
        """Whether the tag's list of published shots holds generation (one round trip)."""
        try:
            return self.connection.call(f"the index of tag {tag!r}", lambda: self.connection.quick.zscore(
                self.keys.shots(tag), str(generation))) is not None
        except FarmUnavailable:
            return False

    def _newest_gone(self, tag: str, local_newest: int, notes: list | None) -> None:
        """The tag's list of shots is empty or gone. A newer shot than this worker's that it heard
        of (another worker's commit event) was published; when Redis may evict keys, the list of
        tags (scored by each tag's newest) tells it too."""
        with self._lock:
            heard = self._heard.get(tag)
        if heard is not None and heard[0] > local_newest:
            self._missing(tag, heard[0], notes, listed=True,
                          what=f"was published by worker {heard[1]} (this worker heard its commit)")
            return
        if self.eviction.may_evict is False:
            return  # nothing evicts here: an empty list means nothing was published
        try:
            score = self.connection.call("the farm's list of tags",
                                         lambda: self.connection.quick.zscore(self.keys.tags, tag))
        except FarmUnavailable:
            return
        if score is not None and int(score) > local_newest:
            self._missing(tag, int(score), notes, listed=True,
                          what="was published (the farm's list of tags says so; the tag's list of shots is gone)")
        elif score is None and not local_newest:  # this worker holds nothing: say what Redis may have lost
            self._missing(tag, None, notes, listed=False)

    def complete(self, tag: str) -> int:
        """Import the ancestors that the local film of tag lacks and the farm holds: from the local
        newest shot, down its lineage to the root (the film view's way to make a film whole before
        it is assembled). Returns how many shots were imported; never raises for Redis or a bad
        shot of the farm (each is logged)."""
        if not self.connection.usable():
            return 0
        local = self.store.generations(tag)
        if not local:
            return 0
        held = set(local)
        generation = max(local)
        try:
            for _ in range(MAX_ANCESTORS):  # down the local part of the line to its first gap
                _, meta = self.store.meta(tag, generation)
                parent = parent_of(meta, tag)
                if parent is None or parent not in held or parent >= generation:
                    break
                generation = parent
            chain = self._ancestors(tag, generation, meta, "", held)
        except NumberClash as clash:
            self.count("clashes")
            self.warn("Farm: the film's ancestors were not imported", f"farm: {clash}", tag=tag)
            return 0
        except (FarmUnavailable, NotFound):
            return 0
        return self._import_chain(tag, chain, generation)

    def _record(self, tag: str, generation: int) -> ShotRecord | None:
        fields = self.connection.call(f"the record of tag {tag!r} generation {generation}",
                                      lambda: self.connection.bulk.hgetall(self.keys.record(tag, generation)))
        return ShotRecord.from_fields(tag, generation, fields) if fields else None

    def _ancestors(self, tag: str, generation: int, meta: dict, parent_identity: str,
                   local: set[int]) -> list[ShotRecord]:
        """The farm's records of the ancestors of tag@generation (whose metadata is ``meta``) that
        this worker lacks, nearest first, read down the lineage until a parent this worker holds or
        the root; a parent it holds must be the very shot the farm's chain continues (NumberClash
        otherwise). A parent that neither holds (Redis trimmed it) ends the walk with a warning:
        the local film then starts after a gap. Bounded by MAX_ANCESTORS."""
        chain: list[ShotRecord] = []
        child, child_meta, expected = generation, meta, parent_identity
        for _ in range(MAX_ANCESTORS):
            parent = parent_of(child_meta, tag)
            if parent is None:
                return chain
            if parent >= child:
                log.warning("farm: tag %r generation %d names generation %d as its parent, which is not older; "
                            "its lineage is not followed further", tag, child, parent)
                return chain
            if parent in local:
                self._check_same(tag, parent, child, expected)
                return chain
            try:
                found = self._record(tag, parent)
            except CorruptFile as exc:
                log.warning("farm: %s; the film of tag %r on this worker lacks it", exc, tag)
                return chain
            if found is None:
                self.count("ancestors_missing")
                cause = self._eviction_cause()
                evicted = f", or evicted it: {cause}" if cause else ""
                self.warn("Farm: a film lacks its first shots",
                          f"farm: tag {tag!r} generation {parent}, an ancestor of generation {generation} that "
                          f"this worker continues, is neither on this worker nor in Redis any more (Redis keeps "
                          f"the newest {self.config.keep} shots of a tag, ZEROCOPY_REDIS_KEEP{evicted}): the film on this "
                          f"worker starts after a gap, and ZeroCopyFilmAssemble here names it. Assemble the film on "
                          f"the worker that made it, or set ZEROCOPY_REDIS_KEEP above the film's length on every "
                          "worker", tag=tag, generation=parent)
                return chain
            chain.append(found)
            if len(chain) % PROGRESS_EVERY == 0:
                log.info("farm: tag %r: %d ancestors of generation %d to import so far (now at generation %d)",
                         tag, len(chain), generation, parent)
            child, child_meta, expected = parent, found.meta, found.parent_identity
        log.warning("farm: tag %r: the lineage of generation %d is longer than %d shots; only those are imported",
                    tag, generation, MAX_ANCESTORS)
        return chain

    def _check_same(self, tag: str, parent: int, child: int, expected: str) -> None:
        """Raise NumberClash when this worker's tag@parent is not the shot the farm's child continues."""
        if not expected:  # a record without it (an older pack): the farm's record of the parent
            try:
                found = self._record(tag, parent)
            except CorruptFile:
                found = None
            expected = found.identity if found is not None else ""
        if not expected:
            return  # nothing to compare: the engine's hop check (zc film) has the last word
        held = local_identity(self.store, tag, parent)
        if held is not None and held != expected:
            raise NumberClash(
                f"tag {tag!r} generation {child} in Redis continues the farm's generation {parent}, but this "
                f"worker's generation {parent} is another shot: two workers numbered different shots alike "
                "(Redis lost its data, restarted empty or flushed, or a worker was cut off). Nothing of the "
                "farm's chain was imported; this worker keeps its own film. Continue the farm's shot on the "
                "worker that made it, or give one of the films a new tag")

    def _import(self, record: ShotRecord, data: bytes) -> None:
        tag, generation = record.tag, record.generation
        try:
            self.store.import_shot(tag, generation, data)
        except CorruptFile as exc:
            raise CorruptFile(
                f"the farm's copy of tag {tag!r} generation {generation} (made by worker {record.worker}) was "
                f"refused by the engine: {exc}. Nothing was stored locally; publish the shot again from "
                f"worker {record.worker}, or use a generation this worker holds") from None
        self.count("fetched")
        log.info("farm: imported tag %r generation %d (%d bytes) from worker %s", tag, generation, record.size,
                 record.worker)

    def _import_chain(self, tag: str, chain: list[ShotRecord], below: int) -> int:
        """Fetch and import the ancestors found (oldest first: each lands after its parent)."""
        done = 0
        for index, ancestor in enumerate(reversed(chain), start=1):
            generation = ancestor.generation
            try:
                found = self.connection.call(f"the fetch of tag {tag!r} generation {generation}",
                                             lambda: transfer.fetch(self.connection.bulk, self.keys, tag, generation))
                if found is None:
                    raise CorruptFile(f"the farm's tag {tag!r} generation {generation} was trimmed meanwhile")
                self._import(*found)
                done += 1
            except GenerationExists:  # another process of this folder imported it meanwhile
                continue
            except (CorruptFile, FarmUnavailable) as exc:
                self.warn("Farm: a film lacks a shot",
                          f"farm: tag {tag!r} generation {generation}, an ancestor of generation {below}, could "
                          f"not be imported: {exc}; the film on this worker has a gap there",
                          tag=tag, generation=generation)
            if index % PROGRESS_EVERY == 0:
                log.info("farm: tag %r: imported %d of %d ancestors of generation %d", tag, index, len(chain),
                         below)
        if done:
            log.info("farm: tag %r: imported %d ancestor(s) of generation %d that this worker lacked", tag, done,
                     below)
        return done

    def _already_held(self, record: ShotRecord) -> PullResult | None:
        """The local store holds record's generation already: the same shot (another process of
        this folder imported it), or this worker's own shot under a number the farm gave another."""
        held = self.store.get(record.tag, record.generation)
        if identity.of_bundle(held) == record.identity:
            return PullResult(record, imported=False)
        self.count("clashes")
        self.warn("Farm: a shot was not imported",
                  f"farm: tag {record.tag!r} generation {record.generation} in Redis (from worker {record.worker}) "
                  f"is another shot than this worker's own generation {record.generation} (numbered here while "
                  "Redis was unreachable, or before Redis lost its data); this worker keeps its own",
                  tag=record.tag, generation=record.generation, worker=record.worker)
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
                pipe.zrange(self.keys.shots(tag), 0, -1)  # at most ZEROCOPY_REDIS_KEEP
            newest = pipe.execute()
            pipe = client.pipeline(transaction=False)
            wanted = [(tag, max(_generations(gens))) for tag, gens in zip(tags, newest) if _generations(gens)]
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
                "eviction": self.eviction.status(self.config.redacted_url),
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


def _generations(members) -> list[int]:
    """The members of a tag's shots that are generation numbers (scores are doubles: not exact)."""
    out = []
    for member in members:
        try:
            out.append(generation_of(member, "a member"))
        except CorruptFile:
            continue
    return out


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
