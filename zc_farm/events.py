"""The subscriber thread: every commit PUBLISHes one JSON message on ``<prefix>:events``; each
worker hears the others' and passes them on (the node layer tells the browsers' sidebars). Its
own messages are left out. When Redis goes away the thread waits and subscribes again."""

from __future__ import annotations

import json
import threading

from .. import zc_log as log


class Subscriber:
    def __init__(self, connection, channel: str, worker_id: str, on_event, *, poll_s: float = 1.0):
        self.connection = connection
        self.channel = channel
        self.worker_id = worker_id
        self.on_event = on_event
        self.poll_s = poll_s
        self.received = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="zerocopy-farm-events", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            pubsub = None
            try:
                pubsub = self.connection.bulk.pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(self.channel)
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=self.poll_s)
                    if message and message.get("type") == "message":
                        self._deliver(message.get("data"))
            except self.connection.errors:
                # the publisher and the quick calls say the outage once; here just wait
                self._stop.wait(self.connection.config.retry_s)
            except Exception:  # noqa: BLE001 - a bad message or callback must not end the thread
                log.debug("farm: event subscriber error", exc_info=True)
                self._stop.wait(self.poll_s)
            finally:
                if pubsub is not None:
                    try:
                        pubsub.close()
                    except Exception:  # noqa: BLE001
                        pass

    def _deliver(self, data) -> None:
        try:
            event = json.loads(data)
        except (TypeError, ValueError):
            return
        if not isinstance(event, dict) or event.get("published_by") == self.worker_id:
            return
        self.received += 1
        self.on_event(event)

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
