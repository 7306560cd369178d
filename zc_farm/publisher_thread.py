"""The publisher thread: publishes the shots this worker stores, off the node's path, in the
order they were stored, and what Redis lacks when it comes back.

Its tasks, first in first out: a shot to publish (after every put), or a tag to catch up (the
first time this process uses a tag: its farm-made shots newer than the farm's newest, e.g. made
before a restart while Redis was unreachable). While Redis is unreachable the task at the head
waits and is tried again every ``retry_s``; nothing is dropped for it. A task that fails for
another reason (Redis refusing a command) is logged and left: the shot stays in the local store.
A shot is read from the local store when its turn comes: one that ``keep`` newer queued shots of
its tag would push out of Redis at once is skipped (only farm-numbered ones: a claim's order
matters), and one the local store has let go meanwhile (shots stored faster than they are
published; the ring keeps ``depth``) is counted as ``gone``.
"""

from __future__ import annotations

import collections
import threading

from .. import zc_log as log
from . import publishing
from .connection import FarmUnavailable

SHOT, CATCH_UP = "shot", "catch_up"


class Publisher:
    def __init__(self, farm):
        self.farm = farm
        self._tasks: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._busy = False
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="zerocopy-farm-publisher", daemon=True)
        self._thread.start()

    def enqueue_shot(self, tag: str, generation: int, mode: str) -> None:
        self._add((SHOT, tag, generation, mode))

    def enqueue_catch_up(self, tag: str) -> None:
        self._add((CATCH_UP, tag))

    def _add(self, task) -> None:
        with self._cond:
            self._tasks.append(task)
            self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return len(self._tasks) + (1 if self._busy else 0)

    def wait_idle(self, timeout: float) -> bool:
        """True once every task is done (False after timeout, e.g. while Redis is down)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._tasks and not self._busy, timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._tasks or self._closing)
                if self._closing:
                    return
                task = self._tasks[0]
                self._busy = True
            done = True
            try:
                self._do(task)
            except FarmUnavailable:
                done = False  # Redis is down: the task waits at the head (the outage was logged once)
            except Exception as exc:  # noqa: BLE001 - one bad task must not stop the publishing
                self.farm.count("failed")
                self.farm.last_error = f"{type(exc).__name__}: {exc}"
                log.error("farm: could not publish %s: %s (the shot stays in the local store)",
                          _describe(task), self.farm.last_error)
            with self._cond:
                if done:
                    self._tasks.popleft()
                self._busy = False
                self._cond.notify_all()
                if not done:
                    self._cond.wait_for(lambda: self._closing, self.farm.config.retry_s)

    def _do(self, task) -> None:
        if task[0] == SHOT:
            _, tag, generation, mode = task
            if mode == publishing.ALLOCATED and self._newer_queued(tag, generation) >= self.farm.config.keep:
                self.farm.count("skipped")  # the newer ones queued would trim it from Redis at once
                return
            outcome = publishing.publish_shot(self.farm, tag, generation, mode)
            if outcome == "gone":
                self.farm.count("gone")
                log.debug("farm: tag %r generation %d left the local store before it could be "
                                 "published (newer shots of the tag came faster)", tag, generation)
            return
        tag = task[1]
        found = publishing.catch_up(self.farm, tag)
        with self._cond:  # right behind this task, before anything stored later
            queued = {(t[1], t[2]) for t in self._tasks if t[0] == SHOT}
            found = [(g, mode) for g, mode in found if (tag, g) not in queued]
            for index, (generation, mode) in enumerate(found, start=1):
                self._tasks.insert(index, (SHOT, tag, generation, mode))
        if found:
            log.info("farm: tag %r: publishing %d shot(s) of this worker that Redis lacks: generations %s",
                     tag, len(found), ", ".join(str(g) for g, _ in found))

    def queued_claims(self, tag: str) -> list[int]:
        """The generations of tag queued to be published as claims (numbered locally)."""
        with self._cond:
            return [t[2] for t in self._tasks if t[0] == SHOT and t[1] == tag and t[3] == publishing.CLAIM]

    def _newer_queued(self, tag: str, generation: int) -> int:
        with self._cond:
            return sum(1 for t in self._tasks if t[0] == SHOT and t[1] == tag and t[2] > generation)

    def close(self, timeout: float = 5.0) -> int:
        """Stop after at most ``timeout`` seconds of publishing what is queued; returns how many
        tasks were left (their shots stay local; a later process catches up on their tags)."""
        self.wait_idle(timeout)
        with self._cond:
            self._closing = True
            left = len(self._tasks)
            self._cond.notify_all()
        self._thread.join(timeout)
        return left


def _describe(task) -> str:
    if task[0] == SHOT:
        return f"tag {task[1]!r} generation {task[2]}"
    return f"the shots of tag {task[1]!r} that Redis lacks"
