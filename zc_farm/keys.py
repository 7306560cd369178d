"""The farm's key layout in Redis (``<p>`` is the prefix, ``zc`` by default; a tag is letters,
digits, ``_``, ``-``, ``.``, so it never holds the ``:`` that separates the parts):

    <p>:tag:<tag>:next            string  the highest generation handed out for the tag
    <p>:tag:<tag>:shots           zset    the published generations (score = generation)
    <p>:tag:<tag>:shot:<gen>      hash    the record of one published shot (records.py)
    <p>:tag:<tag>:blob:<gen>      list    its safetensors bytes, in chunks of at most chunk_bytes
    <p>:tag:<tag>:upload:<gen>:<token>
                                  list    chunks of a publish in progress (expires; renamed to the
                                          blob by the commit)
    <p>:tags                      zset    every tag published, scored by its newest generation
    <p>:published                 string  commits so far (a fingerprint for linked tags)
    <p>:epoch                     string  a token made when the data set is new: another token
                                          (or none) tells a worker that Redis lost its data
    <p>:events                    channel one JSON message per commit
"""

from __future__ import annotations

UPLOAD_TTL_S = 3600


class Keys:
    def __init__(self, prefix: str = "zc"):
        self.prefix = prefix
        self.tags = f"{prefix}:tags"
        self.published = f"{prefix}:published"
        self.channel = f"{prefix}:events"
        self.epoch = f"{prefix}:epoch"

    def base(self, tag: str) -> str:
        return f"{self.prefix}:tag:{tag}:"

    def counter(self, tag: str) -> str:
        return self.base(tag) + "next"

    def shots(self, tag: str) -> str:
        return self.base(tag) + "shots"

    def record(self, tag: str, generation: int) -> str:
        return self.base(tag) + f"shot:{generation}"

    def blob(self, tag: str, generation: int) -> str:
        return self.base(tag) + f"blob:{generation}"

    def upload(self, tag: str, generation: int, token: str) -> str:
        return self.base(tag) + f"upload:{generation}:{token}"
