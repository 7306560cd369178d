"""What Redis holds about one published shot: a hash of text fields, format ``zc-farm-1``.

    format            zc-farm-1
    tag, generation   the shot's identity in the farm (its bytes say the same)
    worker            the worker that made it (the shot's farm_worker metadata)
    published_by      the worker that published it (another one after a Redis restart)
    identity          identity.py's digest of its tensor digests and metadata
    blob_digest       the engine's digest of all its bytes (what a fetch checks first)
    size, chunks      the bytes' length and the number of list elements holding them
    primary_digest    the first tensor's digest (what a fingerprint compares)
    tensors           JSON: [{name, dtype, shape, nbytes, digest}, ...]
    meta              JSON: the shot's metadata (lineage included)
    published_unix_ms when the commit landed (the publishing worker's clock)
    renumbered_from   for a shot that was numbered locally while Redis was unreachable and whose
                      number another shot took: the generation it has on its worker ('' otherwise)

Records come from a server anyone with its password can write: ``from_fields`` checks every
field and raises CorruptFile naming the record and what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ._pack import CorruptFile

FORMAT = "zc-farm-1"
MAX_CHUNKS = 1 << 20


@dataclass(frozen=True)
class ShotRecord:
    tag: str
    generation: int
    worker: str
    published_by: str
    identity: str
    blob_digest: str
    size: int
    chunks: int
    primary_digest: str
    tensors: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    published_unix_ms: int = 0
    renumbered_from: int | None = None

    def fields(self) -> dict[str, str]:
        return {
            "format": FORMAT, "tag": self.tag, "generation": str(self.generation), "worker": self.worker,
            "published_by": self.published_by, "identity": self.identity, "blob_digest": self.blob_digest,
            "size": str(self.size), "chunks": str(self.chunks), "primary_digest": self.primary_digest,
            "tensors": json.dumps(self.tensors, separators=(",", ":")),
            "meta": json.dumps(self.meta, sort_keys=True, separators=(",", ":")),
            "published_unix_ms": str(self.published_unix_ms),
            "renumbered_from": "" if self.renumbered_from is None else str(self.renumbered_from),
        }

    def summary(self) -> dict:
        """The JSON the API shows (no metadata beyond the family)."""
        first = self.tensors[0] if self.tensors else {}
        return {"tag": self.tag, "generation": self.generation, "worker": self.worker,
                "published_by": self.published_by, "bytes": self.size, "digest": self.primary_digest,
                "shape": first.get("shape"), "dtype": first.get("dtype"),
                "family": self.meta.get("family"), "published_unix_ms": self.published_unix_ms,
                "renumbered_from": self.renumbered_from}

    @classmethod
    def from_fields(cls, tag: str, generation: int, raw: dict) -> "ShotRecord":
        where = f"the farm's record of tag {tag!r} generation {generation}"
        text = {_text(k): _text(v) for k, v in raw.items()}

        def need(name: str) -> str:
            if name not in text:
                raise CorruptFile(f"{where} lacks the field {name!r}; it was not written by this pack's "
                                  "farm tier (delete the key, or republish the shot)")
            return text[name]

        def number(name: str, low: int = 0) -> int:
            value = need(name)
            if not value.isdigit() or int(value) < low:
                raise CorruptFile(f"{where}: field {name!r} is {value[:40]!r}, not a whole number >= {low}")
            return int(value)

        if need("format") != FORMAT:
            raise CorruptFile(f"{where} has format {text['format'][:40]!r}, not {FORMAT!r}: every worker of "
                              "a farm must run the same version of the pack")
        if need("tag") != tag or number("generation", 1) != generation:
            raise CorruptFile(f"{where} says it is tag {text['tag'][:80]!r} generation {text['generation'][:24]}")
        try:
            tensors = json.loads(need("tensors"))
            meta = json.loads(need("meta"))
        except ValueError as exc:
            raise CorruptFile(f"{where}: its tensors or meta field is not JSON ({exc})") from None
        if not isinstance(tensors, list) or not isinstance(meta, dict):
            raise CorruptFile(f"{where}: tensors must be a JSON list and meta a JSON object")
        chunks = number("chunks", 1)
        if chunks > MAX_CHUNKS:
            raise CorruptFile(f"{where} claims {chunks} chunks; the limit is {MAX_CHUNKS}")
        renumbered = text.get("renumbered_from", "")
        return cls(tag=tag, generation=generation, worker=need("worker"), published_by=need("published_by"),
                   identity=need("identity"), blob_digest=need("blob_digest"), size=number("size", 1),
                   chunks=chunks, primary_digest=need("primary_digest"), tensors=tensors,
                   meta={str(k): str(v) for k, v in meta.items()},
                   published_unix_ms=number("published_unix_ms"),
                   renumbered_from=int(renumbered) if renumbered.isdigit() else None)


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
