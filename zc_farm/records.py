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
    parent_identity   the identity of the shot's parent (its lineage's parent_generation, same tag)
                      as the publishing worker holds it ('' for a root, or a parent it lacks): a
                      worker that holds another shot under that number knows the chain is not its
    renumbered_from   for a shot that was numbered locally while Redis was unreachable and whose
                      number another shot took: the generation it has on its worker ('' otherwise)

Records come from a server anyone with its password can write: ``from_fields`` checks every
field and raises CorruptFile naming the record and what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..zc_engine import CorruptFile

FORMAT = "zc-farm-1"
MAX_CHUNKS = 1 << 20
MAX_GENERATION = (1 << 63) - 1  # the engine's ZC_MAX_GENERATION


def generation_of(value, where: str) -> int:
    """A generation number Redis gave (bytes, str or int) as an int in 1..2^63-1, else
    CorruptFile naming where it came from and the value."""
    text = _text(value).strip() if value is not None else ""
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_GENERATION:
        raise CorruptFile(f"{where} is {text[:40]!r}, not a generation number 1..{MAX_GENERATION}; it was not "
                          "written by this pack's farm tier (delete the key, or republish the shot)")
    return int(text)


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
    parent_identity: str = ""

    def fields(self) -> dict[str, str]:
        return {
            "format": FORMAT, "tag": self.tag, "generation": str(self.generation), "worker": self.worker,
            "published_by": self.published_by, "identity": self.identity, "blob_digest": self.blob_digest,
            "size": str(self.size), "chunks": str(self.chunks), "primary_digest": self.primary_digest,
            "tensors": json.dumps(self.tensors, separators=(",", ":")),
            "meta": json.dumps(self.meta, sort_keys=True, separators=(",", ":")),
            "published_unix_ms": str(self.published_unix_ms),
            "renumbered_from": "" if self.renumbered_from is None else str(self.renumbered_from),
            "parent_identity": self.parent_identity,
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
            if not (value.isascii() and value.isdigit()) or not low <= int(value) <= MAX_GENERATION:
                raise CorruptFile(f"{where}: field {name!r} is {value[:40]!r}, not a whole number "
                                  f"{low}..{MAX_GENERATION}")
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
        if renumbered:
            generation_of(renumbered, f"{where}: field 'renumbered_from'")
        return cls(tag=tag, generation=generation, worker=need("worker"), published_by=need("published_by"),
                   identity=need("identity"), blob_digest=need("blob_digest"), size=number("size", 1),
                   chunks=chunks, primary_digest=need("primary_digest"), tensors=tensors,
                   meta={str(k): str(v) for k, v in meta.items()},
                   published_unix_ms=number("published_unix_ms"),
                   renumbered_from=int(renumbered) if renumbered else None,
                   parent_identity=text.get("parent_identity", ""))


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
