"""The Handoff's prompt encodes are cached per (text encoder object, prompt)."""

from __future__ import annotations

import gc

from zc_pack.zc_nodes import prompt_cache


class CountingClip:
    """Stands in for a ComfyUI CLIP: tokenize + encode_from_tokens_scheduled, counting encodes."""

    def __init__(self):
        self.encoded: list[str] = []

    def tokenize(self, text, **kwargs):
        return text

    def encode_from_tokens_scheduled(self, tokens, **kwargs):
        self.encoded.append(tokens)
        return [[f"cond:{tokens}", {}]]


def test_same_clip_same_prompt_encodes_once():
    prompt_cache.clear()
    clip = CountingClip()
    first = prompt_cache.encode(clip, "a shot")
    assert prompt_cache.encode(clip, "a shot") is first
    prompt_cache.encode(clip, "another shot")
    assert clip.encoded == ["a shot", "another shot"]


def test_another_clip_object_encodes_again_and_dropped_clips_are_not_kept():
    prompt_cache.clear()
    a, b = CountingClip(), CountingClip()
    prompt_cache.encode(a, "x")
    prompt_cache.encode(b, "x")
    assert a.encoded == ["x"] and b.encoded == ["x"]
    del a
    gc.collect()
    assert len(prompt_cache._by_clip) == 1


def test_each_clip_keeps_only_its_recent_prompts():
    prompt_cache.clear()
    clip = CountingClip()
    for i in range(prompt_cache.PROMPTS_PER_CLIP + 1):
        prompt_cache.encode(clip, f"p{i}")
    prompt_cache.encode(clip, "p0")  # the oldest was let go
    assert clip.encoded.count("p0") == 2
