"""The VAE encoding of mid-gray frames, as core's WanImageToVideo pads its start image.

WanImageToVideo builds ``length`` pixel frames of 0.5 gray, puts the start
image in front and encodes the whole video; the model was trained on those
gray encodings in the padding frames of ``concat_latent_image``. The Handoff
has no start image (the tail is already a latent), so it encodes the gray
frames alone, with the VAE it received, and uses latents k..T-1 of that
encoding, position for position (the 1-frame gray latent 0 never fills a
4-frame slot).

The encoding costs one VAE call over the whole clip, so it is made once per
(VAE weights, VAE dtype and device kind, width, height, length) and kept:

- in memory (a small LRU of ``MEMORY_ENTRIES``), for the next hop of this process;
- on disk, as ``<spill folder>/gray_padding/wan_gray_<vae>_<dtype>_<device>_<W>x<H>x<L>.safetensors``,
  so a restarted ComfyUI does not pay the encode again. The file sits inside the spill
  folder (it moves, and is cleared, with it; the engine leaves names without ``@``
  alone) but outside the store: the padding is no shot, so it must not appear as a
  tag in the film views, the farm or the store's fingerprints. A file is used only
  when its metadata names the same key and its tensor's digest still matches; else it
  is encoded again and rewritten (written to a temporary name, then renamed: readers
  never see half a file). Files and the folder are never followed through a symbolic link.

The VAE is identified by the digest of its weights (``vae_identity``), computed
once per VAE object, so the same VAE file loaded after a restart finds its padding.

Difference from core: inside WanImageToVideo the gray frames after the start image
are encoded with the causal cache of that image, so core's first padding latents
(in practice all of them: the Wan encoder's causal cache reaches far) depend on the
start image; ours are the encoding of gray after gray. docs/families.md gives the
measured size of that difference.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import NamedTuple

import torch

from ... import zc_log as log
from ...zc_engine import digest_bytes, digest_tensor

GRAY = 0.5
"""WanImageToVideo's padding pixel value (``torch.ones(...) * 0.5``)."""
FOLDER = "gray_padding"
MEMORY_ENTRIES = 8
FILE_FORMAT = "zerocopy-gray-padding/1"

_lock = threading.Lock()
_memory: OrderedDict[tuple, tuple[torch.Tensor, Path | None]] = OrderedDict()  # key -> (latent, its file)
_identities: "weakref.WeakKeyDictionary[object, str]" = weakref.WeakKeyDictionary()
_THREADS = torch.get_num_threads()
"""torch's CPU pool size when the pack was imported: the one-time encode runs with it, also
from inside the Handoff's single-threaded block (``cpu_threads``)."""


class Padding(NamedTuple):
    """The gray encoding [1, C, T, H, W] and where this hop got it from."""

    latent: torch.Tensor
    source: str  # "encoded", "memory" or "disk"
    seconds: float  # time to get it (the encode, or the read)
    file: Path | None

    def note(self, width: int, height: int, length: int) -> str:
        where = {"encoded": f"encoded now with the VAE ({self.seconds:.2f} s, once per VAE and canvas)",
                 "memory": "from the in-memory cache (no VAE call)",
                 "disk": f"from the disk cache {self.file} ({self.seconds * 1000:.0f} ms, no VAE call)"}
        cached = f"; cached in memory and in {self.file}" if self.file else "; cached in memory"
        return (f"padding: the VAE encoding of {length} mid-gray (0.5) frames at {width}x{height}, as "
                f"WanImageToVideo pads its start image: {where[self.source]}"
                f"{cached if self.source == 'encoded' else ''}")


def vae_identity(vae) -> str | None:
    """A digest of the VAE's weights (class, names, dtypes, shapes and bytes of its state dict),
    computed once per VAE object; None for an object without a torch model (memory cache only)."""
    model = getattr(vae, "first_stage_model", None)
    if not isinstance(model, torch.nn.Module):
        return None
    try:
        known = _identities.get(vae)
    except TypeError:  # not weakly referenceable
        known = None
    if known is not None:
        return known
    parts = [f"{type(model).__module__}.{type(model).__qualname__}"]
    for name, tensor in model.state_dict().items():
        parts.append(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}:{digest_tensor(tensor)}")
    identity = digest_bytes("\n".join(parts).encode()).split(":", 1)[-1]
    try:
        _identities[vae] = identity
    except TypeError:
        pass
    return identity


def cache_key(vae, width: int, height: int, length: int) -> tuple:
    """(VAE identity, VAE dtype, device kind, width, height, length): what the encoding depends on."""
    identity = vae_identity(vae)
    dtype = str(getattr(vae, "vae_dtype", "")).replace("torch.", "")
    device = getattr(getattr(vae, "device", None), "type", None) or str(getattr(vae, "device", ""))
    return (identity if identity is not None else f"object-{id(vae)}", dtype, device,
            int(width), int(height), int(length))


def file_name(key: tuple) -> str:
    identity, dtype, device, width, height, length = key
    return f"wan_gray_{identity[:16]}_{dtype or 'na'}_{device or 'na'}_{width}x{height}x{length}.safetensors"


def _safe_folder(spill_dir) -> Path | None:
    """The padding folder inside the spill folder, made if missing; None if it is (or sits on) a
    symbolic link, or cannot be made."""
    if spill_dir is None:
        return None
    spill = Path(spill_dir)
    folder = spill / FOLDER
    try:
        if spill.is_symlink() or folder.is_symlink():
            return None
        folder.mkdir(parents=True, exist_ok=True)
        return folder if folder.is_dir() and not folder.is_symlink() else None
    except OSError:
        return None


def _metadata(key: tuple, latent: torch.Tensor) -> dict[str, str]:
    identity, dtype, device, width, height, length = key
    return {"format": FILE_FORMAT, "vae": identity, "vae_dtype": dtype, "device": device,
            "width": str(width), "height": str(height), "length": str(length),
            "digest": digest_tensor(latent)}


def read_file(path: Path, key: tuple) -> torch.Tensor | None:
    """The padding in ``path`` if it is a regular file (not a link) for exactly ``key`` whose
    tensor still has the digest recorded with it; else None."""
    from safetensors.torch import load

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        if path.is_symlink():
            return None
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read()
        tensors = load(data)
        latent = tensors.get("padding")
        header_len = int.from_bytes(data[:8], "little")
        meta = json.loads(data[8:8 + header_len]).get("__metadata__") or {}
    except Exception:  # noqa: BLE001 - a damaged cache file is only a cache miss
        return None
    if latent is None or meta.get("format") != FILE_FORMAT:
        return None
    expected = _metadata(key, latent)
    if any(meta.get(name) != value for name, value in expected.items()):
        return None
    return latent


def write_file(path: Path, key: tuple, latent: torch.Tensor) -> bool:
    """Write the padding for ``key`` to ``path`` (temporary name, then an atomic rename)."""
    from safetensors.torch import save

    latent = latent.detach().to("cpu").contiguous()
    data = save({"padding": latent}, metadata=_metadata(key, latent))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_BINARY", 0))
    try:
        fd = os.open(tmp, flags, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        return True
    except OSError as exc:
        log.warning("could not keep the gray padding in %s (%s); it stays cached in "
                     "memory only", path, exc)
        try:
            tmp.unlink()
        except OSError:
            pass
        return False


def encode_gray(vae, width: int, height: int, length: int) -> torch.Tensor:
    """What WanImageToVideo encodes when its start image is gray: ``length`` frames of 0.5."""
    image = torch.ones((length, height, width, 3)) * GRAY
    with _all_threads():
        return vae.encode(image)


def encode_after_start(vae, start: torch.Tensor, length: int) -> torch.Tensor:
    """What WanImageToVideo encodes for a start image: ``length`` frames of 0.5 with ``start``
    ([n, H, W, C], already on the canvas) in front, as one video (the first shot's padding; it
    depends on the image, so it is not cached)."""
    image = torch.ones((length,) + tuple(start.shape[1:]), device=start.device, dtype=start.dtype) * GRAY
    image[:start.shape[0]] = start[:length]
    with _all_threads():
        return vae.encode(image[:, :, :, :3])


@contextlib.contextmanager
def _all_threads():
    before = torch.get_num_threads()
    if before >= _THREADS:
        yield
        return
    torch.set_num_threads(_THREADS)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def gray_padding(vae, width: int, height: int, length: int, spill_dir=None) -> Padding:
    """The gray encoding for this VAE and canvas: from memory, else the disk cache, else encoded
    (then kept in both). Raises what ``vae.encode`` raises."""
    key = cache_key(vae, width, height, length)
    with _lock:
        hit = _memory.get(key)
        if hit is not None:
            _memory.move_to_end(key)
    if hit is not None:  # every hop of a film: no file system call
        return Padding(hit[0], "memory", 0.0, hit[1])
    folder = _safe_folder(spill_dir) if not key[0].startswith("object-") else None
    path = folder / file_name(key) if folder is not None else None
    start = time.perf_counter()
    if path is not None and path.exists():
        latent = read_file(path, key)
        if latent is not None:
            _remember(key, latent, path)
            return Padding(latent, "disk", time.perf_counter() - start, path)
    latent = encode_gray(vae, width, height, length).detach().to("cpu")
    seconds = time.perf_counter() - start
    if path is not None and not write_file(path, key, latent):
        path = None
    _remember(key, latent, path)
    return Padding(latent, "encoded", seconds, path)


def _remember(key: tuple, latent: torch.Tensor, path: Path | None) -> None:
    with _lock:
        _memory[key] = (latent, path)
        _memory.move_to_end(key)
        while len(_memory) > MEMORY_ENTRIES:
            _memory.popitem(last=False)


def forget_memory() -> None:
    """Empty the in-memory cache (what a restart does); the disk cache stays."""
    with _lock:
        _memory.clear()
