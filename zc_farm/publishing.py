"""Publishing one local shot to the farm, and what happens when its number is taken.

A shot is published under the generation it has locally. A shot numbered by the farm (the usual
case) is published as ``allocated``: Redis handed that number to this worker alone. A shot numbered
locally while Redis was unreachable is published as a ``claim``: it keeps its number only if Redis
never handed that number out (no other worker stored a shot of the tag meanwhile). When the claim
fails, or another shot holds the number (``conflict``: e.g. Redis lost its data and numbered
again), the shot is *renumbered*: stored again locally under a new farm generation (the same
tensors; metadata ``farm_renumbered_from`` = its local generation) and that copy is published; the
record names both numbers. The original stays under its local number, untouched, so nothing this
worker made is overwritten or confused with the other worker's shot. A renumbered copy whose
parent (lineage, same tag) was renumbered too names the parent's new number (and
``farm_lineage_parent_was`` the old one), so the chain stays verifiable on every worker.
"""

from __future__ import annotations

import json
import math
import time

from .. import zc_log as log
from ..zc_engine import GenerationExists, NotFound
from ..zc_engine.store import digest_bytes
from . import identity, transfer
from .connection import FarmUnavailable
from .records import MAX_GENERATION, ShotRecord

ALLOCATED, CLAIM = "allocated", "claim"
LINEAGE_KEY = "lineage"  # zc_continuity.lineage.LINEAGE_KEY: the JSON a Store records
MAX_ATTEMPTS = 8


def parent_of(meta: dict, tag: str) -> int | None:
    """The generation of the shot's parent when its lineage continues a shot of the same tag
    (a number in 1..2^63-1 below nothing else checked here), else None."""
    try:
        lineage = json.loads(meta.get(LINEAGE_KEY) or "null")
    except ValueError:
        return None
    if not isinstance(lineage, dict) or lineage.get("parent_tag") != tag:
        return None
    parent = lineage.get("parent_generation")
    if not isinstance(parent, int) or isinstance(parent, bool) or not 1 <= parent <= MAX_GENERATION:
        return None
    return parent


def local_identity(store, tag: str, generation: int) -> str | None:
    """The identity of the local store's tag@generation (no tensor exported), None when absent."""
    try:
        _, infos = store.tensor_info(tag, generation)
        _, meta = store.meta(tag, generation)
    except NotFound:
        return None
    return identity.identity({name: info.digest for name, info in infos.items()}, meta)


def make_record(farm, bundle, ident: str, data: bytes) -> ShotRecord:
    parent = parent_of(bundle.meta, bundle.tag)
    parent_ident = local_identity(farm.store, bundle.tag, parent) if parent is not None else None
    tensors = [{"name": info.name, "dtype": info.dtype, "shape": list(info.shape), "nbytes": info.nbytes,
                "digest": info.digest} for info in bundle.info.values()]
    renumbered = bundle.meta.get(identity.RENUMBERED_FROM_KEY, "")
    return ShotRecord(
        tag=bundle.tag, generation=bundle.generation,
        worker=bundle.meta.get(identity.WORKER_KEY, farm.config.worker_id),
        published_by=farm.config.worker_id, identity=ident, blob_digest=digest_bytes(data),
        size=len(data), chunks=max(1, math.ceil(len(data) / farm.config.chunk_bytes)),
        primary_digest=tensors[0]["digest"] or "" if tensors else "", tensors=tensors, meta=dict(bundle.meta),
        published_unix_ms=int(time.time() * 1000),
        renumbered_from=int(renumbered) if renumbered.isdigit() else None, parent_identity=parent_ident or "")


def _send(farm, record: ShotRecord, data: bytes, mode: str) -> tuple[str, int, str]:
    client = farm.connection.bulk
    key, count = transfer.upload(client, farm.keys, record.tag, record.generation, data, farm.config.chunk_bytes)
    if count != record.chunks:
        raise AssertionError(f"sent {count} chunks, the record says {record.chunks}")
    return transfer.commit(farm.scripts.commit, client, farm.keys, record, upload_key=key, mode=mode,
                           keep=farm.config.keep)


def publish_shot(farm, tag: str, generation: int, mode: str) -> str:
    """Publish tag@generation of the local store; the outcome as a word (``ok``, ``duplicate``,
    ``trimmed``, ``gone``: no longer held locally, ``renumbered as N``). Raises FarmUnavailable
    (the caller retries later)."""
    try:
        bundle = farm.store.get(tag, generation)
        data = farm.store.export_shot(tag, generation)
    except NotFound:  # the local store let it go (or it was dropped) before its turn came
        return "gone"
    ident = identity.of_bundle(bundle)
    record = make_record(farm, bundle, ident, data)
    status, _, repaired = farm.connection.call(f"the publish of tag {tag!r} generation {generation}",
                                               lambda: _send(farm, record, data, mode))
    del data
    if repaired:
        farm.bad_counter(tag, repaired)
    if status in ("ok", "duplicate", "trimmed"):
        farm.count("published" if status == "ok" else status)
        return status
    if status == "incomplete":  # Redis lost the chunks between upload and commit (a restart)
        raise FarmUnavailable(f"Redis lost the upload of tag {tag!r} generation {generation}; it is sent again")
    return renumber(farm, bundle, generation)


def renumber(farm, bundle, local_generation: int) -> str:
    """Store bundle again under a new farm generation and publish that copy (see the module doc)."""
    tag = bundle.tag
    done = farm.renumbered.get((tag, local_generation))
    if done is None:
        meta = dict(bundle.meta)
        meta[identity.RENUMBERED_FROM_KEY] = str(local_generation)
        meta[identity.NUMBERED_KEY] = identity.NUMBERED_FARM
        _rename_parent(farm, tag, meta)
        for _ in range(MAX_ATTEMPTS):
            new = farm.allocate(tag, farm.local_last(tag))
            try:
                farm.store.put(tag, bundle.tensors, meta, spill=True, generation=new)
                break
            except GenerationExists:  # another process of this spill folder took it: allocate again
                continue
        else:
            raise GenerationExists(f"tag {tag!r}: no new farm generation could be stored after "
                                   f"{MAX_ATTEMPTS} attempts (other processes keep taking them)")
        done = farm.renumbered[(tag, local_generation)] = new
        farm.count("renumbered")
        farm.warn("Farm: a shot was renumbered",
                  f"farm: tag {tag!r} generation {local_generation} was numbered on this worker while Redis "
                  f"was unreachable (or Redis lost its data), and the farm's generation {local_generation} is "
                  f"another shot; stored again as generation {new} and published under that number (its "
                  "record names both; the original stays here until retention prunes it like any older shot)",
                  tag=tag, generation=new, renumbered_from=local_generation)
    outcome = publish_shot(farm, tag, done, ALLOCATED)
    return f"renumbered as {done}" if outcome in ("ok", "duplicate", "trimmed") else outcome


def _rename_parent(farm, tag: str, meta: dict) -> None:
    """A renumbered shot whose parent was renumbered too continues the parent's new number."""
    parent = parent_of(meta, tag)
    renamed = farm.renumbered.get((tag, parent)) if parent is not None else None
    if renamed is None:
        return
    lineage = json.loads(meta[LINEAGE_KEY])
    lineage["parent_generation"] = renamed
    meta[LINEAGE_KEY] = json.dumps(lineage, sort_keys=True, separators=(",", ":"))  # lineage.record's form
    meta[identity.LINEAGE_PARENT_WAS_KEY] = str(parent)


def catch_up(farm, tag: str) -> list[tuple[int, str]]:
    """(generation, mode) of the local shots of tag that a farm worker made and Redis lacks,
    oldest first: those newer than the farm's newest (after a restart, this process has no
    record of what it could not publish). Restores only those. Raises FarmUnavailable."""
    newest = farm.newest_published(tag, raise_unavailable=True)
    above = newest[0] if newest else 0
    found: list[tuple[int, str]] = []
    for generation in sorted(g for g in farm.store.generations(tag) if g > above):
        try:
            _, meta = farm.store.meta(tag, generation)  # the metadata alone: no tensor exported
        except NotFound:
            continue
        if identity.WORKER_KEY not in meta:
            continue  # stored without the farm: not the farm's to publish
        original = meta.get(identity.RENUMBERED_FROM_KEY, "")
        if original.isdigit():
            farm.renumbered.setdefault((tag, int(original)), generation)
        local = meta.get(identity.NUMBERED_KEY) == identity.NUMBERED_LOCAL
        found.append((generation, CLAIM if local else ALLOCATED))
    return [(g, mode) for g, mode in found if (tag, g) not in farm.renumbered]
