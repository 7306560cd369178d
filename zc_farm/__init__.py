"""The farm tier: ComfyUI workers on several machines share films through one Redis.

Pure Python over redis-py, which is imported only when a farm is opened (never at import time,
so the pack starts without it). Nothing here imports ComfyUI; the node layer's glue is
``zc_nodes/farm_link.py``. One module per job:

    config      FarmConfig: the URL (redacted for logs), worker id, how many shots Redis keeps
    keys        the key layout in Redis
    scripts     the Lua scripts that make allocation, commit and the newest lookup atomic
    connection  the two redis-py clients (quick lookups, bulk transfers), up/down state, warn once
    records     what Redis holds about one published shot
    transfer    a shot's bytes into Redis in bounded chunks, and back, checked against its digest
    identity    what makes two stored shots the same shot
    publishing  which local shots Redis lacks, and publishing one (renumbered when taken)
    publisher_thread  the background thread that publishes in order, retries and catches up
    events      the subscriber thread that hears other workers' new shots
    farm        Farm: the one object a worker holds (allocate + put, pull, status)

See docs/farm.md for what is guaranteed and what is not.
"""

from .config import FarmConfig, redact_url
from .farm import Farm, PullResult

__all__ = ["Farm", "FarmConfig", "PullResult", "redact_url"]
