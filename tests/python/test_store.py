"""put -> get -> spill -> restore is bit-identical; views are zero-copy; budgets evict."""

from __future__ import annotations

import gc

import pytest
import torch
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ALL_DTYPES, canonical_bytes, random_tensor, same_bits
from zc_pack.zc_engine import InvalidInput, LatentStore, check_tag, digest_tensor, format_digest


@st.composite
def tensors(draw):
    """Random dtype, rank 0-8, small dims (zeros included), and a random layout:
    contiguous, transposed, sliced with a step, or expanded (stride 0)."""
    dtype = draw(st.sampled_from(ALL_DTYPES))
    rank = draw(st.integers(0, 8))
    shape = tuple(draw(st.lists(st.integers(0, 4 if rank > 4 else 7), min_size=rank, max_size=rank)))
    seed = draw(st.integers(0, 2**31 - 1))
    base = random_tensor(shape, dtype, torch.Generator().manual_seed(seed))
    layout = draw(st.sampled_from(["contiguous", "transpose", "step", "expand"]))
    if layout == "transpose" and rank >= 2:
        i, j = draw(st.permutations(range(rank)))[:2]
        base = base.transpose(i, j)
    elif layout == "step" and rank >= 1:
        big = random_tensor(tuple(d * 2 for d in shape), dtype, torch.Generator().manual_seed(seed))
        base = big[tuple(slice(None, None, 2) for _ in shape)]
    elif layout == "expand" and rank >= 1:
        one = random_tensor((1,) + shape[1:], dtype, torch.Generator().manual_seed(seed))
        base = one.expand(shape)
    return base


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(t=tensors(), extra=tensors())
def test_put_get_spill_restore_bit_identical(tmp_path_factory, t, extra):
    spill = tmp_path_factory.mktemp("spill")
    with LatentStore(spill_dir=spill) as store:
        gen = store.put("shot", {"latent_tensor": t, "extra": extra}, {"family": "wan21"}, spill=True)
        got = store.get("shot")
        assert got.generation == gen
        for name, original in (("latent_tensor", t), ("extra", extra)):
            assert same_bits(got.tensors[name], original), name
            canonical = canonical_bytes(original).numpy().tobytes()
            assert got.info[name].digest == "xxh3:" + xxhash.xxh3_64(canonical).hexdigest()
        store.flush()
    with LatentStore(spill_dir=spill) as reopened:
        restored = reopened.get("shot")
        assert restored.generation == gen
        assert restored.meta == {"family": "wan21"}
        assert same_bits(restored.tensors["latent_tensor"], t)
        assert same_bits(restored.tensors["extra"], extra)
        assert restored.info["extra"].digest == got.info["extra"].digest


def test_get_is_zero_copy_and_aligned():
    with LatentStore() as store:
        x = torch.randn(1, 16, 21, 90, 160)
        store.put("a", {"latent_tensor": x})
        first = store.get("a").tensors["latent_tensor"]
        second = store.get("a").tensors["latent_tensor"]
        assert first.data_ptr() == second.data_ptr()
        assert first.data_ptr() != x.data_ptr()  # the host tier owns a copy
        assert first.data_ptr() % 64 == 0
        assert first.is_contiguous() and torch.equal(first, x)


def test_store_copy_is_independent_of_later_writes():
    with LatentStore() as store:
        x = torch.zeros(8)
        store.put("a", {"latent_tensor": x})
        x += 1
        assert torch.equal(store.get("a").tensors["latent_tensor"], torch.zeros(8))
        store.verify("a")


def test_generations_grow_and_ring_keeps_depth():
    with LatentStore(depth=3) as store:
        gens = [store.put("shot", {"latent_tensor": torch.full((4,), float(i))}) for i in range(6)]
        assert gens == [1, 2, 3, 4, 5, 6]
        assert store.get("shot").generation == 6
        assert store.get("shot", 4).tensors["latent_tensor"][0] == 3.0
        entry = store.describe()["tags"][0]
        assert [slot["generation"] for slot in entry["slots"]] == [6, 5, 4]


def test_budget_evicts_least_recently_used_whole_slots():
    one = 4096 * 4
    with LatentStore(depth=4, host_budget_bytes=3 * one) as store:
        store.put("a", {"latent_tensor": torch.zeros(4096)})
        store.put("a", {"latent_tensor": torch.ones(4096)})
        store.put("b", {"latent_tensor": torch.ones(4096)})
        store.put("c", {"latent_tensor": torch.ones(4096)})
        stats = store.stats()
        assert stats["evictions"] == 1 and stats["host_bytes"] == 3 * one
        described = {t["tag"]: [s["generation"] for s in t["slots"]] for t in store.describe()["tags"]}
        assert described == {"a": [2], "b": [1], "c": [1]}


def test_eviction_never_takes_a_slot_a_torch_view_holds():
    one = 1024 * 4
    with LatentStore(depth=4, host_budget_bytes=2 * one) as store:
        store.put("a", {"latent_tensor": torch.full((1024,), 1.0)})
        store.put("a", {"latent_tensor": torch.full((1024,), 2.0)})
        held = store.get("a", 1).tensors["latent_tensor"]
        from zc_pack.zc_engine import BudgetExceeded
        with pytest.raises(BudgetExceeded, match="held by readers"):
            store.put("b", {"latent_tensor": torch.zeros(1024)})
        assert held[0] == 1.0
        del held
        gc.collect()
        store.put("b", {"latent_tensor": torch.zeros(1024)})
        assert store.stats()["evictions"] == 1


def test_steady_state_store_cycles_do_not_grow():
    with LatentStore(depth=2) as store:
        for i in range(2000):
            store.put("loop", {"latent_tensor": torch.full((256,), float(i))})
            view = store.get("loop").tensors["latent_tensor"]
            assert view[0] == float(i)
        del view
        stats = store.stats()
        assert stats["slots"] == 2 and stats["retained_bytes"] == 0
        assert stats["host_bytes"] == 2 * 256 * 4


def test_describe_and_tags():
    with LatentStore() as store:
        store.put("shot_b", {"latent_tensor": torch.zeros(2, 3, dtype=torch.bfloat16)}, {"fps": "16"})
        store.put("shot_a", {"latent_tensor": torch.zeros(1)})
        assert store.tags() == ["shot_a", "shot_b"]
        entry = next(t for t in store.describe()["tags"] if t["tag"] == "shot_b")
        tensor = entry["slots"][0]["tensors"][0]
        assert tensor["dtype"] == "BF16" and tensor["shape"] == [2, 3] and tensor["tier"] == "host"
        assert entry["slots"][0]["meta"] == {"fps": "16"}
        store.drop("shot_b")
        assert store.tags() == ["shot_a"]


def test_concurrent_put_get_from_threads():
    import threading
    errors = []
    with LatentStore(depth=3) as store:
        def worker(k):
            try:
                for i in range(200):
                    tag = f"t{(k + i) % 5}"
                    store.put(tag, {"latent_tensor": torch.full((64,), float(i))})
                    got = store.get(tag).tensors["latent_tensor"]
                    assert got.shape == (64,)
                    if i % 50 == 0:
                        store.describe()
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors


def test_put_reports_the_digests_it_stored_and_digest_tensor_agrees():
    """``digests=`` is filled from the bundle before the put; it equals what the stored shot
    reports and what digest_tensor computes, for a strided view and an fp8 tensor too."""
    base = torch.randn(4, 6)
    view = base.t()[1:5]  # strided, offset
    fp8 = torch.randn(3, 5).to(torch.float8_e4m3fn)
    with LatentStore() as store:
        got = {}
        generation = store.put("d", {"latent_tensor": view, "extra": fp8}, {"k": "v"}, digests=got)
        _, info = store.tensor_info("d", generation)
        assert got == {name: i.digest for name, i in info.items()}
        assert got["latent_tensor"] == digest_tensor(view) == digest_tensor(view.contiguous())
        assert got["extra"] == digest_tensor(fp8)
        assert digest_tensor(torch.empty(0, 3)) == digest_tensor(torch.empty(2, 0))
        assert digest_tensor(torch.tensor(2.5)) == format_digest(xxhash.xxh3_64_intdigest(
            torch.tensor(2.5).numpy().tobytes()))


def test_check_tag_names_the_value_and_the_rule():
    check_tag("shot_01.take-2")
    with pytest.raises(InvalidInput) as refused:
        check_tag("../etc", "buffer_tag")
    assert "../etc" in str(refused.value)
    with pytest.raises(TypeError, match="buffer_tag must be a str"):
        check_tag(7, "buffer_tag")
