"""The bad-input matrix: every refusal is a clear error, and nothing already
stored is lost."""

from __future__ import annotations

import pytest
import torch

from zc_pack.zc_engine import (BudgetExceeded, InvalidInput, LatentStore, LimitExceeded, NotFound,
                       Unsupported)


@pytest.fixture
def store_with_a_shot():
    store = LatentStore(depth=4, host_budget_bytes=1 << 20)
    keep = torch.randn(1, 16, 5, 8, 8)
    store.put("kept", {"latent_tensor": keep}, {"family": "wan21"})
    yield store, keep
    store.close()


def assert_unchanged(store, keep):
    got = store.get("kept")
    assert got.generation == 1 and torch.equal(got.tensors["latent_tensor"], keep)
    assert store.stats()["slots"] == 1


@pytest.mark.parametrize("tag, fragment", [
    ("", "expected 1 to 64"),
    ("../../etc/passwd", "has '/' at character 3"),
    ("..", "starts with '.'"),
    ("a/b", "has '/' at character 2"),
    ("shot 1", "has a space at character 5"),
    ("x" * 65, "has 65 bytes; expected 1 to 64"),
    ("caf\u00e9", "has '\u00e9' at character 4; tags use only letters"),
    ("-rf", "starts with '-'"),
])
def test_bad_tags(store_with_a_shot, tag, fragment):
    store, keep = store_with_a_shot
    with pytest.raises(InvalidInput) as err:
        store.put(tag, {"latent_tensor": torch.zeros(2)})
    assert fragment in str(err.value)
    with pytest.raises(InvalidInput):
        store.get(tag)
    assert_unchanged(store, keep)


def test_nul_in_tag(store_with_a_shot):
    store, keep = store_with_a_shot
    with pytest.raises(InvalidInput, match="NUL"):
        store.put("a\0b", {"latent_tensor": torch.zeros(2)})
    assert_unchanged(store, keep)


def test_oversize_bundle(store_with_a_shot):
    store, keep = store_with_a_shot
    with pytest.raises(LimitExceeded, match="already holds 16 tensors"):
        store.put("kept", {f"t{i}": torch.zeros(1) for i in range(17)})
    assert_unchanged(store, keep)


def test_unsupported_dtype_names_the_tensor(store_with_a_shot):
    store, keep = store_with_a_shot
    with pytest.raises(InvalidInput, match='tensor "z".*not supported'):
        store.put("kept", {"ok": torch.zeros(1), "z": torch.zeros(2, dtype=torch.complex64)})
    assert_unchanged(store, keep)


def test_budget_exceeded(store_with_a_shot):
    store, keep = store_with_a_shot
    with pytest.raises(BudgetExceeded) as err:
        store.put("big", {"latent_tensor": torch.zeros(1 << 19)})  # 2 MiB > 1 MiB budget
    message = str(err.value)
    assert 'tag "big"' in message and "needs 2097152 bytes" in message and "budget is 1048576" in message
    assert "raise the host budget" in message
    assert_unchanged(store, keep)


def test_bad_metadata(store_with_a_shot):
    store, keep = store_with_a_shot
    with pytest.raises(InvalidInput, match="reserves"):
        store.put("kept", {"latent_tensor": torch.zeros(1)}, {"zc.digest.latent_tensor": "x"})
    with pytest.raises(LimitExceeded, match="value has"):
        store.put("kept", {"latent_tensor": torch.zeros(1)}, {"k": "v" * 70000})
    assert_unchanged(store, keep)


def test_not_found_messages(store_with_a_shot):
    store, keep = store_with_a_shot
    with pytest.raises(NotFound, match='no latent is stored under tag "nothing"'):
        store.get("nothing")
    with pytest.raises(NotFound, match="no generation 9"):
        store.get("kept", 9)
    with pytest.raises(NotFound):
        store.drop("nothing")
    assert_unchanged(store, keep)


def test_spill_without_directory(store_with_a_shot):
    store, keep = store_with_a_shot
    with pytest.raises(Unsupported, match="no spill directory"):
        store.put("kept", {"latent_tensor": torch.zeros(1)}, spill=True)
    assert_unchanged(store, keep)


def test_wrong_types(store_with_a_shot):
    store, keep = store_with_a_shot
    with pytest.raises(TypeError, match="not a torch.Tensor"):
        store.put("kept", {"latent_tensor": [1, 2, 3]})
    with pytest.raises(TypeError, match="non-empty mapping"):
        store.put("kept", {})
    assert_unchanged(store, keep)


def test_unwritable_spill_dir_is_reported(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    from zc_pack.zc_engine import EngineIOError
    with pytest.raises(EngineIOError, match="not a directory|cannot create"):
        LatentStore(spill_dir=blocker / "sub")
