"""The custom socket type that links a Store to a Handoff in one graph."""

from .api_version import io

# A link from ZeroCopyLatentStore to ZeroCopyLatentHandoff orders execution
# (the Handoff runs after the Store) and makes the Handoff's cache key depend
# on the Store's result. The value is a small dict: tag, generation, digest.
ContinuityToken = io.Custom("ZEROCOPY_CONTINUITY")
