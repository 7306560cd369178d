"""Small CPU tensor work without waking torch's intra-op thread pool.

A Handoff runs once per shot, minutes after the last torch call, when the pool's workers have
gone to sleep: each small multi-threaded op then pays their wake-up (measured here: a 0.9 MB
`.contiguous()` of a tail view took 5-8 ms cold with 2 threads and 0.03-0.4 ms with 1; a 19 MB
fill 6 ms cold). The Handoff's own ops are memory-bound copies and fills, which one thread does
at memory speed, so they run with one thread and the setting is put back afterwards. ComfyUI
executes one node at a time on its worker thread, so nothing else's torch work shares the
window; GPU work is unaffected (the setting is the CPU pool's).
"""

from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def single_threaded():
    """Run the block with torch's CPU intra-op pool at one thread, then restore it."""
    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
