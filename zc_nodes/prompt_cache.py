"""The Handoff's prompt encodes, cached per (text encoder object, prompt).

A Handoff re-runs whenever a new shot is stored under its tag, but its prompt
usually stays the same: encoding it again costs a text-encoder forward pass (a
UMT5-XXL or a Qwen-VL on real films) for an identical result. ComfyUI caches
CLIPTextEncode's output the same way, by its inputs. The key is the CLIP
object itself (held weakly: a CLIP ComfyUI drops is not kept alive here) and
the exact text; a patched CLIP (LoRA) is another object, so another entry.
Each CLIP keeps its most recent prompts only.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

from . import comfy_calls

PROMPTS_PER_CLIP = 16

_lock = threading.Lock()
_by_clip: "weakref.WeakKeyDictionary[object, OrderedDict[str, object]]" = weakref.WeakKeyDictionary()


def encode(clip, text: str):
    """CONDITIONING for ``text`` from ``clip``: cached, else encoded the way CLIPTextEncode does."""
    try:
        with _lock:
            entries = _by_clip.get(clip)
            if entries is not None and text in entries:
                entries.move_to_end(text)
                return entries[text]
    except TypeError:  # an object that cannot be weakly referenced: encode every time
        return comfy_calls.encode_prompt(clip, text)
    conditioning = comfy_calls.encode_prompt(clip, text)
    with _lock:
        entries = _by_clip.setdefault(clip, OrderedDict())
        entries[text] = conditioning
        while len(entries) > PROMPTS_PER_CLIP:
            entries.popitem(last=False)
    return conditioning


def clear() -> None:
    with _lock:
        _by_clip.clear()
