"""A shot's bytes into Redis and back.

Publishing uploads the bytes (``LatentStore.export_shot``: the engine's own safetensors file,
identity metadata and every tensor's digest included) as a list of chunks of at most
``chunk_bytes`` under a key of its own that expires, then COMMIT (scripts.py) makes them the
shot's blob and writes its record in one atomic step: a publish cut off half-way (Redis stopped,
the worker killed) leaves no record and no blob, only an upload key that expires.

Fetching reads the record and the chunks in one MULTI (a trim between the two cannot mix them),
and checks the bytes against the record's digest before anything else sees them; the engine
then checks every tensor's digest and the identity at import.
"""

from __future__ import annotations

import json
import uuid

from ..zc_engine import CorruptFile
from ..zc_engine.store import digest_bytes
from .keys import UPLOAD_TTL_S, Keys
from .records import ShotRecord, generation_of


class IncompleteBlob(CorruptFile):
    """The record is there, its bytes are not all there (chunks missing: evicted, or deleted)."""


def send_chunk(client, key: str, chunk: memoryview, first: bool) -> None:
    """Append one chunk to the upload list (the first one also sets its expiry)."""
    if first:
        pipe = client.pipeline(transaction=False)
        pipe.rpush(key, chunk)
        pipe.expire(key, UPLOAD_TTL_S)
        pipe.execute()
    else:
        client.rpush(key, chunk)


def upload(client, keys: Keys, tag: str, generation: int, data: bytes, chunk_bytes: int) -> tuple[str, int]:
    """(upload key, number of chunks) of the bytes sent."""
    key = keys.upload(tag, generation, uuid.uuid4().hex)
    view = memoryview(data)
    count = 0
    for offset in range(0, len(view), chunk_bytes):
        send_chunk(client, key, view[offset:offset + chunk_bytes], count == 0)
        count += 1
    return key, count


def commit(script, client, keys: Keys, record: ShotRecord, *, upload_key: str, mode: str,
           keep: int) -> tuple[str, int, str]:
    """COMMIT's answer: (status, number, repaired); for ``taken`` the number is the farm's
    counter; ``repaired`` is the counter's old value when it was no generation number (the
    script repaired it), else ''."""
    tag, generation = record.tag, record.generation
    event = json.dumps({"tag": tag, "generation": generation, "worker": record.worker,
                        "published_by": record.published_by, "bytes": record.size,
                        "renumbered_from": record.renumbered_from}, separators=(",", ":"))
    flat: list[str] = []
    for name, value in record.fields().items():
        flat += [name, value]
    status, number, repaired = script(
        keys=[keys.counter(tag), keys.shots(tag), keys.record(tag, generation), keys.blob(tag, generation),
              upload_key, keys.tags, keys.published],
        args=[generation, record.identity, mode, keep, record.chunks, keys.base(tag), keys.channel, event,
              tag, *flat],
        client=client)
    where = f"the farm's answer to the publish of tag {tag!r} generation {generation}"
    return _text(status), generation_of(number, where), _text(repaired)


def fetch(client, keys: Keys, tag: str, generation: int) -> tuple[ShotRecord, bytes] | None:
    """The record and the checked bytes of tag@generation, or None when Redis does not hold it.
    Raises CorruptFile (naming the tag, the generation and the worker) when the bytes are not the
    ones the record's digest describes."""
    pipe = client.pipeline(transaction=True)
    pipe.hgetall(keys.record(tag, generation))
    pipe.lrange(keys.blob(tag, generation), 0, -1)
    fields, chunks = pipe.execute()
    if not fields:
        return None
    record = ShotRecord.from_fields(tag, generation, fields)
    where = (f"the farm's copy of tag {tag!r} generation {generation} (made by worker {record.worker}, "
             f"published by {record.published_by})")
    size = sum(len(c) for c in chunks)
    if len(chunks) != record.chunks or size != record.size:
        raise IncompleteBlob(f"{where} has {len(chunks)} chunks of {size} bytes in all, but its record says "
                          f"{record.chunks} chunks of {record.size} bytes; nothing was stored locally. Publish "
                          f"it again from worker {record.worker}, or use a generation this worker holds")
    data = b"".join(chunks)
    got = digest_bytes(data)
    if got != record.blob_digest:
        raise CorruptFile(f"{where} does not match its digest: its bytes hash to {got}, the record says "
                          f"{record.blob_digest}; refused, nothing was stored locally. The blob in Redis "
                          f"(key {keys.blob(tag, generation)}) is damaged: publish the shot again from "
                          f"worker {record.worker}, or use a generation this worker holds")
    return record, data


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
