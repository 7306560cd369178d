"""Python bridge to the ZeroCopy-Continuity C engine (libzc.so).

Import cost is one ``ctypes.CDLL``; torch is imported by the modules that
need it.
"""

from .errors import (BudgetExceeded, CorruptFile, EngineIOError, EngineNotBuilt, InvalidInput,
                     InvalidState, LimitExceeded, NotFound, OutOfMemory, Unsupported,
                     ZeroCopyError)
from .store import LatentStore, StoredBundle, digest_bytes, digest_tensor, format_digest

__all__ = [
    "BudgetExceeded", "CorruptFile", "EngineIOError", "EngineNotBuilt", "InvalidInput",
    "InvalidState", "LatentStore", "LimitExceeded", "NotFound", "OutOfMemory", "StoredBundle",
    "Unsupported", "ZeroCopyError", "digest_bytes", "digest_tensor", "format_digest",
]
