"""The next shot's latent filled between shots (zc_nodes.prepared_latents, through
zc_continuity.fresh_latents' hook): what is handed out is exactly what fresh_latents would make,
once, to one caller; preparation waits for the Handoff's block to end; memory stays bounded and is
given back on request."""

from __future__ import annotations

import pytest
import torch

from zc_pack.zc_continuity import assemble, fresh_latents
from zc_pack.zc_nodes import memory_release, prepared_latents
from zc_pack.zc_nodes.prepared_latents import PreparedLatents

SHAPE = (1, 16, 5, 60, 104)  # 2 MB of float32: above MIN_BYTES
FILL = torch.linspace(-1.0, 1.0, 16)


def held_bytes(source: PreparedLatents) -> int:
    """The bytes of the latents the pool holds ready."""
    with source._lock:
        return source._bytes()


@pytest.fixture
def pool():
    source = PreparedLatents(max_bytes=64 << 20)
    fresh_latents.set_prepared_source(source)
    yield source
    fresh_latents.set_prepared_source(None)
    source.wait()


def expected(shape, value):
    return torch.empty(shape, dtype=value.dtype).copy_(value.expand(shape))


def test_the_second_request_is_served_ready_and_equals_a_fresh_fill(pool):
    first = fresh_latents.filled(SHAPE, FILL.reshape(1, 16, 1, 1, 1))
    pool.wait()
    second = fresh_latents.filled(SHAPE, FILL.reshape(1, 16, 1, 1, 1))
    assert (pool.served, pool.missed) == (1, 1)
    want = expected(SHAPE, FILL.reshape(1, 16, 1, 1, 1))
    assert torch.equal(first, want) and torch.equal(second, want)
    assert second.dtype == torch.float32 and tuple(second.shape) == SHAPE
    assert first.data_ptr() != second.data_ptr()


def test_a_served_tensor_belongs_to_its_caller_alone(pool):
    fill = FILL.reshape(1, 16, 1, 1, 1)
    fresh_latents.filled(SHAPE, fill)
    pool.wait()
    mine = fresh_latents.filled(SHAPE, fill)
    mine.zero_()  # the caller writes it, as the Handoff writes the tail in
    pool.wait()
    nxt = fresh_latents.filled(SHAPE, fill)
    assert torch.equal(nxt, expected(SHAPE, fill)) and nxt.data_ptr() != mine.data_ptr()
    assert pool.served == 2


def test_another_fill_or_shape_is_never_served_a_prepared_tensor_of_the_first(pool):
    fresh_latents.filled(SHAPE, FILL.reshape(1, 16, 1, 1, 1))
    pool.wait()
    other = fresh_latents.filled(SHAPE, (FILL + 1).reshape(1, 16, 1, 1, 1))
    assert torch.equal(other, expected(SHAPE, (FILL + 1).reshape(1, 16, 1, 1, 1)))
    wider = (1, 16, 5, 60, 112)
    assert torch.equal(fresh_latents.filled(wider, FILL.reshape(1, 16, 1, 1, 1)),
                       expected(wider, FILL.reshape(1, 16, 1, 1, 1)))
    assert pool.served == 0 and pool.missed == 3


def test_the_mask_and_samples_of_an_inpaint_come_prepared_and_exact(pool):
    shape = (1, 16, 21, 90, 160)  # Wan 2.1 720p: the 1.2 MB mask is prepared too
    tail = torch.randn(1, 16, 1, 90, 160)
    first = assemble.temporal_inpaint(shape, tail, FILL)
    pool.wait()
    second = assemble.temporal_inpaint(shape, tail, FILL)
    assert pool.served == 2  # samples and noise_mask
    for got in (first, second):
        assert torch.equal(got.samples[:, :, :1], tail)
        assert torch.equal(got.samples[:, :, 1:], expected((1, 16, 20, 90, 160), FILL.reshape(1, 16, 1, 1, 1)))
        assert got.noise_mask[:, :, :1].eq(0).all() and got.noise_mask[:, :, 1:].eq(1).all()


def wan_i2v_expected(tail, padding):
    image = padding.clone()
    image[:, :, :tail.shape[2]] = tail
    return image


def test_wan_i2vs_concat_image_comes_prepared_as_a_private_copy_of_the_cached_padding(pool):
    """The cached gray padding is a constant (known by identity): from the second hop on, the concat
    image and the empty latent come made ahead, equal to a fresh build, and the caller's alone: a
    write into one hop's tensors reaches neither the cache entry nor the next hop."""
    padding = torch.randn(SHAPE)
    kept = padding.clone()
    tail = torch.randn(1, 16, 1, 60, 104)
    first = assemble.wan_i2v_concat(SHAPE, tail, padding, padding_constant=True)
    pool.wait()
    second = assemble.wan_i2v_concat(SHAPE, tail, padding, padding_constant=True)
    assert (pool.served, pool.missed) == (2, 2)  # the image and the samples, ready the second time
    for got in (first, second):
        assert torch.equal(got.concat_latent_image, wan_i2v_expected(tail, padding))
        assert torch.equal(got.samples, torch.zeros(SHAPE)) and got.samples.dtype == torch.float32
        assert got.concat_latent_image.data_ptr() != padding.data_ptr()
    second.concat_latent_image.fill_(7.0)  # a downstream node writing in place
    second.samples.fill_(7.0)
    pool.wait()
    third = assemble.wan_i2v_concat(SHAPE, tail, padding, padding_constant=True)
    assert pool.served == 4 and torch.equal(padding, kept)
    assert torch.equal(third.concat_latent_image, wan_i2v_expected(tail, padding))
    assert torch.equal(third.samples, torch.zeros(SHAPE))


def test_a_constant_is_never_served_to_another_tensor_and_a_large_fill_is_left_to_alloc(pool):
    padding = torch.randn(SHAPE)
    tail = torch.zeros(1, 16, 1, 60, 104)
    assemble.wan_i2v_concat(SHAPE, tail, padding, padding_constant=True)
    pool.wait()
    twin = padding.clone()  # equal values, another tensor: its copy is made in the hop
    other = padding + 1
    for candidate in (twin, other):
        got = assemble.wan_i2v_concat(SHAPE, tail, candidate, padding_constant=True)
        assert torch.equal(got.concat_latent_image, wan_i2v_expected(tail, candidate))
        pool.wait()
    assert pool.served == 2  # the samples twice; no concat image
    served = pool.served
    plain = assemble.wan_i2v_concat(SHAPE, tail, padding)  # not said constant: never prepared
    assert torch.equal(plain.concat_latent_image, wan_i2v_expected(tail, padding))
    assert pool.served == served + 1  # the samples only
    assert pool(SHAPE, padding) is None  # a fill of many values that is not constant


def test_preparation_waits_for_the_deferred_block_to_end(pool):
    with pool.deferred():
        fresh_latents.filled(SHAPE, FILL.reshape(1, 16, 1, 1, 1))
        with pool.deferred():  # nested: still held back until the outer block ends
            pass
        pool.wait()
        assert held_bytes(pool) == 0
    pool.wait()
    assert held_bytes(pool) == 4 * torch.Size(SHAPE).numel()


def test_small_and_device_requests_are_left_to_alloc(pool):
    small = fresh_latents.filled((16, 8, 8), torch.ones(1))
    assert small.eq(1).all()
    pool.wait()
    assert pool.served == pool.missed == 0 and held_bytes(pool) == 0
    meta_value = torch.ones(1, device="meta")
    assert pool(SHAPE, meta_value) is None


def test_memory_stays_within_its_bounds_and_release_gives_it_back():
    source = PreparedLatents(max_bytes=5 << 20)  # room for two 2 MB tensors
    for k in range(4):
        source(SHAPE, torch.full((1,), float(k)))
    source.wait()
    assert held_bytes(source) <= 5 << 20 and len(source._ready) == 2
    assert source.release() == 2 * 4 * torch.Size(SHAPE).numel()
    assert held_bytes(source) == 0
    too_big = PreparedLatents(max_bytes=1 << 20)
    assert too_big(SHAPE, torch.ones(1)) is None  # larger than the whole budget: not prepared
    too_big.wait()
    assert held_bytes(too_big) == 0


def test_the_setting_is_read_and_a_bad_one_names_the_fix(monkeypatch):
    monkeypatch.setenv("ZEROCOPY_PREPARED_MB", "0")
    off = PreparedLatents()
    assert off(SHAPE, torch.ones(1)) is None
    off.wait()
    assert held_bytes(off) == 0
    monkeypatch.setenv("ZEROCOPY_PREPARED_MB", "lots")
    with pytest.raises(ValueError, match=r"ZEROCOPY_PREPARED_MB='lots'.*0 to fill"):
        PreparedLatents()
    monkeypatch.setenv("ZEROCOPY_PREPARED_MB", "-3")
    with pytest.raises(ValueError, match="negative"):
        PreparedLatents()


def test_a_ram_release_gives_back_the_prepared_latents_first(monkeypatch, tmp_path):
    source = PreparedLatents(max_bytes=64 << 20)
    monkeypatch.setattr(prepared_latents, "_pool", source)
    source(SHAPE, torch.ones(1))
    source.wait()
    held = held_bytes(source)
    asked = []

    class Store:
        def trim(self, nbytes, *, device=False):
            asked.append(nbytes)
            return 0

    monkeypatch.setattr(memory_release, "_available_ram", lambda: 0)
    wrapped = memory_release.wrap_extra_ram_release(lambda: Store(), lambda target, *a, **k: 0)
    wrapped(held + 100)
    assert held_bytes(source) == 0 and asked == [100]  # the store is asked only for the rest
    source(SHAPE, torch.ones(1))
    source.wait()
    wrapped(held)  # the prepared latents were enough: the store gives nothing
    assert asked == [100]
