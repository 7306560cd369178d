"""What the farm tier takes from the rest of the pack: the engine's errors and digest, and the
pack's logger. zc_farm is imported inside the pack (``<pack>.zc_farm``, relative imports) and,
by the tests and the benchmark, as a top-level package beside zc_engine."""

from __future__ import annotations

if __package__ and "." in __package__:  # <pack>.zc_farm
    from ..zc_engine import CorruptFile, GenerationExists, NotFound
    from ..zc_engine.store import digest_bytes
    from .. import zc_log as log
else:  # zc_farm on sys.path beside zc_engine
    from zc_engine import CorruptFile, GenerationExists, NotFound
    from zc_engine.store import digest_bytes
    import zc_log as log

__all__ = ["CorruptFile", "GenerationExists", "NotFound", "digest_bytes", "log"]
