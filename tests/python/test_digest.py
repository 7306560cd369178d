"""The engine's digests against the xxhash package (the reference implementation): XXH3-64,
which every new digest uses, with each stripe kernel this CPU runs; XXH64, kept to verify
files of engine 0.2 and earlier; and digests of strided tensors read in place."""

import os
import random
import subprocess
import sys

import pytest
import torch
import xxhash

from zc_pack.zc_engine import LatentStore, digest_bytes, digest_tensor, format_digest
from zc_pack.zc_engine._library import LIBRARY_PATH, lib

KERNELS = ("scalar", "sse2", "avx2", "avx512")


def test_every_length_0_to_4096_matches_xxhash():
    rng = random.Random(1234)
    for length in range(4097):
        data = rng.randbytes(length)
        assert digest_bytes(data) == "xxh3:" + xxhash.xxh3_64(data).hexdigest(), length


def test_thousands_of_random_inputs_and_seeds():
    rng = random.Random(99)
    for _ in range(3000):
        data = rng.randbytes(rng.randrange(0, 70000))
        seed = rng.getrandbits(64) if rng.random() < 0.5 else 0
        assert lib.zc_xxh3_64(data, len(data), seed) == xxhash.xxh3_64_intdigest(data, seed=seed)


def test_large_inputs_including_odd_sizes():
    rng = random.Random(7)
    for size in (1 << 20, (1 << 20) + 31, 16 * (1 << 20) + 7, 64 * (1 << 20) + 3):
        data = rng.randbytes(size)
        assert digest_bytes(data) == "xxh3:" + xxhash.xxh3_64(data).hexdigest()


# Each kernel in a process of its own: the engine chooses its kernel once per process, from
# the CPU or from ZC_DIGEST_KERNEL.
_KERNEL_CHECK = r"""
import ctypes, random, sys, xxhash
lib = ctypes.CDLL(sys.argv[1])
lib.zc_xxh3_64.restype = ctypes.c_uint64
lib.zc_xxh3_64.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64]
lib.zc_xxh3_kernel.restype = ctypes.c_char_p
print(lib.zc_xxh3_kernel().decode())
rng = random.Random(5)
cases = [(n, 0) for n in range(4097)]
cases += [(rng.randrange(0, 300000), rng.getrandbits(64)) for _ in range(200)]
cases += [((1 << 20) + 1, 0), ((8 << 20) + 63, 0), ((8 << 20) + 64, rng.getrandbits(64))]
for n, seed in cases:
    data = rng.randbytes(n)
    if lib.zc_xxh3_64(data, n, seed) != xxhash.xxh3_64_intdigest(data, seed=seed):
        print("mismatch", n, seed)
        sys.exit(1)
print("ok", len(cases))
"""


@pytest.mark.parametrize("kernel", KERNELS)
def test_each_kernel_matches_xxhash(kernel):
    env = dict(os.environ, ZC_DIGEST_KERNEL=kernel)
    proc = subprocess.run([sys.executable, "-c", _KERNEL_CHECK, str(LIBRARY_PATH)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    used, result = proc.stdout.split()[:2]
    if used != kernel:
        pytest.skip(f"this CPU does not run the {kernel} kernel (the engine used {used})")
    assert result == "ok"


def test_the_kernel_in_use_is_named():
    assert lib.zc_xxh3_kernel().decode() in KERNELS


def test_legacy_xxh64_matches_xxhash():
    """XXH64 stays, to verify files that engine 0.2 and earlier wrote."""
    rng = random.Random(3)
    for _ in range(1000):
        data = rng.randbytes(rng.randrange(0, 5000))
        seed = rng.getrandbits(64)
        assert lib.zc_xxh64(data, len(data), seed) == xxhash.xxh64(data, seed=seed).intdigest()
    data = rng.randbytes((4 << 20) + 5)
    assert lib.zc_xxh64(data, len(data), 0) == xxhash.xxh64_intdigest(data)


def test_format_digest_names_the_algorithm():
    assert format_digest(0x0123456789ABCDEF) == "xxh3:0123456789abcdef"
    assert format_digest(1, 1) == "xxh64:0000000000000001"


def _views():
    t = torch.randn(2, 16, 21, 9, 16)
    yield t
    yield t[:, :, -3:]                       # a tail view: long contiguous runs
    yield t.transpose(0, 4)                  # strided innermost dimension
    yield t[..., ::2]                        # every other element
    yield t.permute(4, 3, 2, 1, 0)[1:, :, 5]
    yield t.to(torch.bfloat16)[:, 3:5, :, ::3]
    yield t.to(torch.float64)[0, 0, 0].t()
    yield (t > 0)[:, :, 1]
    yield torch.arange(6, dtype=torch.int64).expand(5, 6)  # broadcast: stride 0
    yield torch.tensor(3.5)
    yield torch.empty(0, 4)
    yield t.to(torch.float8_e4m3fn)[:, :, :, 2:7]


def _canonical(t):
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


def test_tensor_digest_is_over_canonical_contiguous_bytes():
    for view in _views():
        raw = _canonical(view)
        assert digest_tensor(view) == "xxh3:" + xxhash.xxh3_64(raw).hexdigest(), view.shape
    t = torch.randn(4, 5, 6)
    assert digest_tensor(t) != digest_tensor(t.transpose(0, 2))


def test_tensor_digest_does_not_copy_a_strided_host_tensor(monkeypatch):
    view = torch.randn(1, 16, 21, 90, 16)[:, :, -2:]
    expect = "xxh3:" + xxhash.xxh3_64(view.contiguous().numpy().tobytes()).hexdigest()

    def refuse(*args, **kwargs):
        raise AssertionError("digest_tensor made the view contiguous")

    monkeypatch.setattr(torch.Tensor, "contiguous", refuse)
    assert digest_tensor(view) == expect


def test_tensor_digest_equals_the_digest_the_store_records():
    with LatentStore() as store:
        for i, view in enumerate(_views()):
            store.put(f"v{i}", {"t": view})
            assert store.tensor_info(f"v{i}")[1]["t"].digest == digest_tensor(view), view.shape


def test_tensor_digest_of_a_dtype_the_engine_does_not_store():
    t = torch.arange(12, dtype=torch.float32).to(torch.complex64).reshape(3, 4).t()
    raw = _canonical(t)
    assert digest_tensor(t) == "xxh3:" + xxhash.xxh3_64(raw).hexdigest()
