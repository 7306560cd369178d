"""Lineage: the marker a Handoff writes, what the Store records, and the seed found in the prompt."""

from __future__ import annotations

import json

import pytest
import torch

from zc_pack.zc_continuity import ContinuityError, lineage
from zc_pack.zc_continuity.shot import describe_shot
from zc_pack.zc_nodes.prompt_graph import sampler_seed

MARK = lineage.marker(parent_tag="film", parent_generation=3, tail_frames=1, tail_digest="xxh3:01",
                      used_digest="xxh3:01", adapter="temporal_inpaint", trim=1,
                      prompt="  a long\n prompt  " + "x" * 300)


def test_marker_round_trips_through_the_store_metadata():
    assert MARK["prompt"].startswith("a long prompt") and len(MARK["prompt"]) == lineage.PROMPT_CHARS
    shot = describe_shot([torch.zeros(1, 16, 3, 2, 2)], other_keys=[lineage.MARKER, "noise_mask"],
                         lineage_marker=MARK, seed=42)
    recorded = json.loads(shot.meta[lineage.LINEAGE_KEY])
    assert recorded["parent_generation"] == 3 and recorded["seed"] == 42
    assert shot.meta["keys_not_kept"] == "noise_mask"  # the marker is recorded, not "not kept"
    assert lineage.parse(shot.meta[lineage.LINEAGE_KEY])["adapter"] == "temporal_inpaint"


def test_a_root_shot_records_its_seed_only():
    shot = describe_shot([torch.zeros(1, 16, 3, 2, 2)], seed=7)
    assert lineage.LINEAGE_KEY not in shot.meta and shot.meta["seed"] == "7"


def test_foreign_or_damaged_markers_are_refused_with_the_reason():
    with pytest.raises(ContinuityError, match="not the lineage a ZeroCopyLatentHandoff writes"):
        lineage.check("shot 3")
    with pytest.raises(ContinuityError, match="lacks a valid 'parent_generation'"):
        lineage.check(dict(MARK, parent_generation="3"))
    with pytest.raises(ContinuityError, match="lineage version 9"):
        lineage.check(dict(MARK, version=9))
    assert lineage.parse("{not json") is None and lineage.parse("") is None


def test_seed_of_the_sampler_behind_the_store():
    prompt = {
        "1": {"class_type": "PrimitiveInt", "inputs": {"value": 1234}},
        "2": {"class_type": "KSampler", "inputs": {"seed": ["1", 0], "latent_image": ["5", 0]}},
        "3": {"class_type": "ZeroCopyLatentStore", "inputs": {"samples": ["2", 0], "buffer_tag": "t"}},
        "4": {"class_type": "RandomNoise", "inputs": {"noise_seed": 99}},
        "6": {"class_type": "SamplerCustomAdvanced", "inputs": {"noise": ["4", 0]}},
        "7": {"class_type": "ZeroCopyLatentStore", "inputs": {"samples": ["6", 0]}},
        "8": {"class_type": "LatentUpscale", "inputs": {"samples": ["2", 0]}},
        "9": {"class_type": "ZeroCopyLatentStore", "inputs": {"samples": ["8", 0]}},
        "10": {"class_type": "ZeroCopyLatentStore", "inputs": {"samples": ["5", 0]}},
        "5": {"class_type": "EmptyLatentImage", "inputs": {"width": 64}},
    }
    assert sampler_seed(prompt, "3") == 1234  # linked to a primitive
    assert sampler_seed(prompt, "7") == 99  # SamplerCustomAdvanced's RandomNoise
    assert sampler_seed(prompt, "9") == 1234  # through a latent node
    assert sampler_seed(prompt, "10") is None  # no sampler: nothing guessed
    assert sampler_seed(None, "3") is None and sampler_seed(prompt, "404") is None
