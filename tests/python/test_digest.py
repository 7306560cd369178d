"""The engine's XXH64 against the xxhash package (the reference implementation)."""

import random

import torch
import xxhash

from zc_engine import digest_bytes, digest_tensor
from zc_engine._library import lib


def test_every_length_0_to_4096_matches_xxhash():
    rng = random.Random(1234)
    for length in range(4097):
        data = rng.randbytes(length)
        assert digest_bytes(data) == "xxh64:" + xxhash.xxh64(data).hexdigest(), length


def test_thousands_of_random_inputs_and_seeds():
    rng = random.Random(99)
    for _ in range(3000):
        data = rng.randbytes(rng.randrange(0, 70000))
        seed = rng.getrandbits(64)
        got = lib.zc_xxh64(data, len(data), seed)
        assert got == xxhash.xxh64(data, seed=seed).intdigest()


def test_large_inputs_including_odd_sizes():
    rng = random.Random(7)
    for size in (1 << 20, (1 << 20) + 31, 16 * (1 << 20) + 7, 64 * (1 << 20) + 3):
        data = rng.randbytes(size)
        assert digest_bytes(data) == "xxh64:" + xxhash.xxh64(data).hexdigest()


def test_tensor_digest_is_over_canonical_contiguous_bytes():
    t = torch.randn(4, 5, 6)
    strided = t.transpose(0, 2)
    expect = xxhash.xxh64(strided.contiguous().numpy().tobytes()).hexdigest()
    assert digest_tensor(strided) == "xxh64:" + expect
    assert digest_tensor(t) != digest_tensor(strided)
