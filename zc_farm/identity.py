"""What makes two stored shots the same shot, whatever generation they are stored as: their
tensors' digests and their metadata. Every farm record carries it, so a shot published twice (a
retry, another worker that holds it) is recognised, and a different shot under the same number is
never taken for it.

The metadata keys the farm itself adds to the shots it stores are named here too.
"""

from __future__ import annotations

import json

from ..zc_engine.store import digest_bytes

WORKER_KEY = "farm_worker"
"""The worker that made the shot (ZEROCOPY_WORKER_ID)."""
NUMBERED_KEY = "farm_numbered"
"""``farm``: its generation came from Redis; ``local``: from the local store, Redis being unreachable."""
RENUMBERED_FROM_KEY = "farm_renumbered_from"
"""On a copy published under a new farm number: the local generation of the original."""
LINEAGE_PARENT_WAS_KEY = "farm_lineage_parent_was"
"""On a renumbered copy whose parent was renumbered too: the parent's local generation."""

NUMBERED_FARM, NUMBERED_LOCAL = "farm", "local"


def identity(digests: dict[str, str | None], meta: dict[str, str]) -> str:
    """The digest of a shot's tensor digests and metadata (canonical JSON)."""
    text = json.dumps({"digests": digests, "meta": meta}, sort_keys=True, separators=(",", ":"))
    return digest_bytes(text.encode("utf-8"))


def of_bundle(bundle) -> str:
    """The identity of a StoredBundle."""
    return identity({name: info.digest for name, info in bundle.info.items()}, dict(bundle.meta))
