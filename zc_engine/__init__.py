"""Python bridge to the ZeroCopy-Continuity C engine (libzc, from the zerocopy-engine wheel).

Importing it loads the library with ctypes (see _locate.py for where from) and imports torch.
"""

from .errors import (AccessDenied, BudgetExceeded, CorruptFile, EngineIOError, EngineNotBuilt,
                     GenerationExists, InvalidInput, InvalidState, LimitExceeded, NotFound,
                     OutOfMemory, Unsupported, ZeroCopyError)
from .store import (LatentStore, StoredBundle, check_tag, digest_bytes, digest_tensor, format_digest,
                    prefer_huge_pages)

__all__ = [
    "AccessDenied", "BudgetExceeded", "CorruptFile", "EngineIOError", "EngineNotBuilt", "GenerationExists",
    "InvalidInput",
    "InvalidState", "LatentStore", "LimitExceeded", "NotFound", "OutOfMemory", "StoredBundle",
    "Unsupported", "ZeroCopyError", "check_tag", "digest_bytes", "digest_tensor", "format_digest",
    "prefer_huge_pages",
]
