"""The tagged latent store, as torch sees it.

``LatentStore.put`` takes named torch tensors on any device: host tensors are
copied into C-owned aligned memory (and digested in the same pass); device
tensors are held by reference (optionally after a defensive clone on their
own device) with a host copy when they must be digested or spilled.
``LatentStore.get`` returns torch tensors that view the stored memory.

Several processes may share one ``spill_dir`` (one per GPU): generations are
allocated in the folder, unique among them, and ``get``/``generations``/
``describe_tag`` see what the others spilled. Between machines, shots travel
as bytes: ``export_shot`` on one, ``import_shot`` on the other, with
generations chosen by a farm-wide allocator (``put(..., generation=N)``).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import json
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import torch

from . import device, dlpack
from .errors import AccessDenied, CorruptFile, NotFound
from ._library import (DL_BFLOAT, DL_BOOL, DL_FLOAT, DL_FLOAT8_E4M3FN, DL_FLOAT8_E5M2, DL_INT, DL_UINT, SeamLayout,
                       SeamStats, StoreConfig, StoreStats, TensorInfo, VerifyReport, call_growing, check, encode,
                       lib)

DEFAULT_DEPTH = 4
PUT_SPILL = 1
PUT_MAY_EVICT_NEWEST = 2
DROP_DISK = 1
TIER_HOST, TIER_DEVICE, TIER_DISK = 0, 1, 2  # zc_tier
TIER_NAMES = {TIER_HOST: "host", TIER_DEVICE: "device", TIER_DISK: "disk"}
META_READ_BYTES = 8192  # a shot's metadata fits (a larger one is read again at its size)
MAX_SPILL_DELAY_MS = 60_000  # the engine's ZC_MAX_SPILL_DELAY_MS (a minute)
# The engine's bookkeeping files in a spill folder shared by processes (never tags or shots).
BOOKKEEPING_PREFIXES = (".zc-gen-", ".zc-owner-", ".zc-lock", ".zc-film-")
# DLPack type code of each engine dtype (zc_dtype order).
DLPACK_CODES = [DL_FLOAT, DL_FLOAT, DL_BFLOAT, DL_FLOAT, DL_FLOAT8_E4M3FN, DL_FLOAT8_E5M2, DL_INT, DL_INT, DL_INT,
                DL_INT, DL_UINT, DL_BOOL]
DTYPE_NAMES = ["F32", "F16", "BF16", "F64", "F8_E4M3", "F8_E5M2", "I8", "I16", "I32", "I64",
               "U8", "BOOL"]
# zc_digest_algo codes and their text prefixes.
DIGEST_XXH64 = 1
DIGEST_XXH3 = 2
DIGEST_ALGO_NAMES = {DIGEST_XXH64: "xxh64", DIGEST_XXH3: "xxh3"}
VERIFY_REHASH = 1
# zc_record_status: whether a shot's record (dtype, shape, metadata) is covered by its file's record
# digest (docs/engine.md, "Record digest"); a store never serves a shot whose record changed.
RECORD_NOT_COVERED, RECORD_OK, RECORD_BAD = 0, 1, 2
RECORD_NAMES = {RECORD_NOT_COVERED: "not_covered", RECORD_OK: "ok", RECORD_BAD: "bad"}
_SERIALS = itertools.count(1)  # LatentStore.serial: which store of this process a count is of
# Each engine dtype's zc_dtype code, for the CPU put's direct call (zc_bundle_add_host_copy).
_ZC_DTYPE_CODES = {dtype: code for code, dtype in enumerate(
    (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.float8_e4m3fn,
     torch.float8_e5m2, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool))}
# The dtypes the engine stores, which zc_digest_tensor reads in place.
_ENGINE_DTYPES = frozenset(_ZC_DTYPE_CODES)


def is_bookkeeping_file(name: str) -> bool:
    """True for the engine's own files in a spill folder (generation counters, owner and folder
    locks, a film's chosen takes): leave them alone, and leave them out when listing a folder's
    shots."""
    return name.startswith(BOOKKEEPING_PREFIXES)


def format_digest(value: int, algo: int = DIGEST_XXH3) -> str:
    """The engine's text form of a digest: the algorithm's name (``xxh3`` for every digest
    the engine makes, ``xxh64`` for one restored from a file of engine 0.2 or earlier), a
    colon and 16 hex digits."""
    return f"{DIGEST_ALGO_NAMES[algo]}:{value:016x}"


def prefer_huge_pages(tensor: torch.Tensor) -> None:
    """Back a fresh CPU tensor about to be filled with huge pages where the OS offers them
    (``zc_host_prefer_huge_pages``: a hint; changes no byte, never fails)."""
    if tensor.device.type == "cpu" and tensor.numel():
        lib.zc_host_prefer_huge_pages(tensor.data_ptr(), tensor.numel() * tensor.element_size())


_DIMS_PACKERS: dict[int, struct.Struct] = {}  # rank -> the packer of its sizes and strides


def _dims_packer(ndim: int) -> struct.Struct:
    packer = _DIMS_PACKERS.get(ndim)
    if packer is None:
        packer = _DIMS_PACKERS[ndim] = struct.Struct(f"={2 * ndim}q")
    return packer


def _plain_args(tensor: torch.Tensor) -> tuple | None:
    """(data, dtype code, rank, dims) of a plain CPU torch.Tensor of an engine dtype, as the
    engine's plain-values calls take them (dims: sizes then strides in elements); None for
    anything else (other devices and dtypes, subclasses: the DLPack path serves them).
    A put's hot path: each step here costs it (a 1 MiB put is about 30 µs)."""
    if type(tensor) is not torch.Tensor or not tensor.is_cpu or tensor.is_nested:
        return None
    code = _ZC_DTYPE_CODES.get(tensor.dtype)
    if code is None:
        return None
    ndim = tensor.dim()
    return (tensor.data_ptr() if tensor.numel() else None, code, ndim,
            _dims_packer(ndim).pack(*tensor.shape, *tensor.stride()) if ndim else None)


def check_tag(tag: str, what: str = "tag") -> None:
    """Raise InvalidInput with the engine's message when the store would refuse ``tag`` (the
    engine's rule, zc_tag_check); ``what`` names the value in the message. TypeError for a
    non-str."""
    check(lib.zc_tag_check(encode(tag, what)))


def digest_bytes(data: bytes | memoryview) -> str:
    """XXH3-64 (seed 0) of raw bytes, computed by the engine."""
    buf = (ctypes.c_char * len(data)).from_buffer_copy(data) if len(data) else None
    return format_digest(lib.zc_xxh3_64(buf, len(data), 0))


def digest_tensor(tensor: torch.Tensor) -> str:
    """XXH3-64 of a tensor's canonical contiguous bytes: what the store records for it.

    A host tensor is read in place through its strides (no contiguous copy); a device
    tensor is first copied to the host. Dtypes the engine does not store are made
    contiguous and hashed as bytes."""
    host = tensor.detach()
    if host.device.type != "cpu":
        host = host.to("cpu")
    plain = _plain_args(host)
    if plain is not None:  # plain values: no DLPack capsule
        value = ctypes.c_uint64()
        check(lib.zc_digest_host_tensor(*plain, ctypes.byref(value)))
        return format_digest(value.value)
    if host.dtype in _ENGINE_DTYPES:
        value = ctypes.c_uint64()
        with dlpack.borrowed_dltensor(host) as dl:
            check(lib.zc_digest_tensor(dl, ctypes.byref(value)))
        return format_digest(value.value)
    host = host.contiguous()
    return format_digest(lib.zc_xxh3_64(host.data_ptr() if host.numel() else None,
                                        host.numel() * host.element_size(), 0))


@dataclass(frozen=True)
class VerifyResult:
    """What ``LatentStore.verify`` did: the tensors it re-hashed (their bytes matched), the
    ones it skipped because no writer was possible since their digest was last checked, and
    the device-tier ones whose device memory it cannot check (their host copy, if any, is in
    one of the first two lists)."""

    hashed: tuple[str, ...]
    unchanged: tuple[str, ...]
    device: tuple[str, ...]
    hashed_bytes: int


@dataclass
class StoredTensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    tier: str
    digest: str | None


@dataclass
class StoredBundle:
    """One generation of one tag: tensors that view the store, and metadata."""

    tag: str
    generation: int
    tensors: dict[str, torch.Tensor]
    meta: dict[str, str]
    info: dict[str, StoredTensorInfo] = field(default_factory=dict)
    record: str = "ok"
    """``ok``: the shot's dtype, shape and metadata are covered (put in this process, or read from
    a file whose record digest matched); ``not_covered``: read from a file written before record
    digests, whose dtype, shape and metadata nothing checks (its tensors' digests still are)."""

    def digest(self, name: str) -> str | None:
        return self.info[name].digest

    @property
    def record_note(self) -> str | None:
        """One sentence for a certificate when the record is not covered, else None."""
        if self.record != "not_covered":
            return None
        return (f"generation {self.generation}: record not covered (its file was written before record "
                "digests, so its dtype, shape and metadata are not checked; its tensors' digests are)")


SEAM_STAT_FIELDS = tuple(name for name, _ in SeamStats._fields_)


@dataclass(frozen=True)
class SeamRequest:
    """What ``put`` asks the engine for the seam of a hop: summaries of both ends of the tensors
    ``layouts`` names (name -> (time_axis, head_skip, window, max_values), max_values 0 reading
    every value) and, with ``parent`` (tag, generation), the seam of the cut from the parent's
    stored tail to this shot's head. The put pays for none of it: the engine measures it after
    the put, on its spill writer's thread before it writes the file (or when ``hop_seam`` first
    asks), and keeps the record with the shot and in its file. No tensor is read in Python."""

    layouts: Mapping[str, tuple[int, int, int, int]]
    parent: tuple[str, int] | None = None
    calls: tuple = field(init=False, repr=False, compare=False)
    """The engine calls' arguments, made once here, so that the put only makes the calls."""

    def __post_init__(self):
        plans = tuple((encode(name, "tensor name"), SeamLayout(int(axis), max(0, int(skip)), int(window),
                                                               int(max_values)))
                      for name, (axis, skip, window, max_values) in self.layouts.items())
        parent = None if self.parent is None else (encode(self.parent[0], "tag"), int(self.parent[1]))
        object.__setattr__(self, "calls", (plans, parent))


@dataclass(frozen=True)
class SkippedGeneration:
    """A generation ``get_newest_verified`` passed over, and why."""

    generation: int
    reason: str

    def describe(self) -> str:
        return f"generation {self.generation} skipped: {self.reason}"


class LatentStore:
    """A thread-safe store of tagged latent bundles backed by the C engine.

    Parameters: ``depth`` slots kept per tag; byte budgets for the host and
    device tiers (0 = unlimited); ``spill_dir`` enables the disk tier;
    ``disk_keep`` spill files kept per tag (default: depth); ``spill_delay_ms`` how long a
    spill waits after its put before it is written (default: the engine's 50 ms, so a Handoff
    right after the Store has the memory bus and the cores to itself; ``flush`` and ``close``
    write at once).
    """

    def __init__(self, *, depth: int = DEFAULT_DEPTH, host_budget_bytes: int = 0,
                 device_budget_bytes: int = 0, spill_dir: str | Path | None = None,
                 disk_keep: int = 0, spill_delay_ms: int | None = None):
        config = StoreConfig()
        lib.zc_store_config_init(ctypes.byref(config))
        config.default_depth = depth
        config.host_budget_bytes = host_budget_bytes
        config.device_budget_bytes = device_budget_bytes
        config.disk_keep = disk_keep
        if spill_delay_ms is not None:
            whole = isinstance(spill_delay_ms, int) and not isinstance(spill_delay_ms, bool)
            if not whole or not 0 <= spill_delay_ms <= MAX_SPILL_DELAY_MS:
                raise ValueError(f"spill_delay_ms {spill_delay_ms!r} is not a whole number of "
                                 f"milliseconds from 0 to {MAX_SPILL_DELAY_MS}; use 0 to write each "
                                 "spill at once")
            config.spill_delay_ms = spill_delay_ms
        self.spill_dir = Path(spill_dir) if spill_dir is not None else None
        if self.spill_dir is not None:
            config.spill_dir = encode(str(self.spill_dir), "spill_dir")
        handle = ctypes.c_void_p()
        check(lib.zc_store_open(ctypes.byref(config), ctypes.byref(handle)))
        self._handle = handle.value
        self._close_lock = threading.Lock()
        self.serial = next(_SERIALS)  # a store opened later never repeats an earlier one's changes()

    # -- lifecycle -------------------------------------------------------
    def close(self) -> None:
        """Flush pending spills and free the store. Tensors already returned stay valid."""
        with self._close_lock:
            handle, self._handle = self._handle, None
        if handle:
            lib.zc_store_close(handle)

    def __enter__(self) -> "LatentStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    @property
    def handle(self) -> int:
        if not self._handle:
            raise RuntimeError("the LatentStore is closed")
        return self._handle

    # -- writing ---------------------------------------------------------
    def put(self, tag: str, tensors: Mapping[str, torch.Tensor], meta: Mapping[str, str] | None = None,
            *, spill: bool = False, host_copy: bool | None = None, defensive_clone: bool = True,
            may_evict_newest: bool = False, generation: int | None = None,
            digests: dict | None = None, seam: SeamRequest | None = None) -> int:
        """Store tensors under tag as its next generation; returns the generation.

        Host tensors are copied. Tensors on other devices are held by reference to a private
        clone made on their device (``device.hold``: later in-place writes by the caller, or by
        a node the original goes on to, cannot change what was stored; ``defensive_clone=False``
        holds the caller's own tensor, for a caller that guarantees no writer). ``host_copy``
        (default: when spilling) also keeps a host copy of the clone, which gives the tensor a
        digest and lets it spill.

        ``generation`` stores it as that generation instead (e.g. one a farm-wide
        allocator handed out): raises GenerationExists if the tag holds it in memory or
        in the spill folder; the store's own numbering continues above it.

        ``digests``, a dict, receives each stored tensor's digest text by name (the ones that
        have one), read from the bundle: no view of the new shot needed to report it.

        ``seam`` (a SeamRequest) has the engine summarise both ends of the named tensors and
        measure the cut from a parent's stored tail, after the put (``hop_seam`` reads it).
        """
        if (type(tensors) is not dict and not isinstance(tensors, Mapping)) or not tensors:
            raise TypeError("tensors must be a non-empty mapping of name -> torch.Tensor")
        keep_host = spill if host_copy is None else host_copy
        flags = (PUT_SPILL if spill else 0) | (PUT_MAY_EVICT_NEWEST if may_evict_newest else 0)
        if len(tensors) == 1 and not meta and generation is None and digests is None and seam is None:
            stored = self._put_one_host_tensor(tag, tensors, flags)
            if stored is not None:
                return stored
        return self._put(tag, tensors, meta, flags,
                         lambda bundle, name, tensor: self._add(bundle, name, tensor, keep_host,
                                                                defensive_clone), generation, digests,
                         seam)

    def _put_one_host_tensor(self, tag: str, tensors: Mapping[str, torch.Tensor], flags: int) -> int | None:
        """The commonest put, one CPU tensor of an engine dtype and no metadata, in one engine
        call; None when ``tensors`` is anything else (the general path handles it)."""
        (name, tensor), = tensors.items()
        plain = _plain_args(tensor)  # None for anything but a plain CPU tensor
        if plain is None:
            return None
        generation = ctypes.c_uint64()
        check(lib.zc_store_put_host_copy(self.handle, encode(tag, "tag"), encode(name, "tensor name"),
                                         *plain, flags, ctypes.byref(generation)))
        return generation.value

    def _put(self, tag: str, tensors: Mapping[str, torch.Tensor], meta: Mapping[str, str] | None,
             flags: int, add, chosen: int | None = None, digests: dict | None = None,
             seam: SeamRequest | None = None) -> int:
        """Build a bundle with add(bundle, name, tensor) for each tensor, then store it (the
        engine checks the tag when it stores; a bad one frees the bundle, nothing stored)."""
        tag_b = encode(tag, "tag")
        bundle = ctypes.c_void_p()
        check(lib.zc_store_bundle_create(self.handle, ctypes.byref(bundle)))
        try:
            for name, tensor in tensors.items():
                add(bundle.value, name, tensor)
            if seam is not None:  # after the copies: the engine reads nothing now
                self._plan_seam(bundle.value, seam)
            if meta:  # one engine call for every entry
                packed = b"".join(encode(key, "metadata key") + b"\0" + encode(str(value), f"metadata {key!r}")
                                  + b"\0" for key, value in meta.items())
                check(lib.zc_bundle_set_meta_packed(bundle.value, packed, len(packed)))
            if digests is not None:
                digests.update(self._bundle_digests(bundle.value, tensors))
            if chosen is not None:
                if not isinstance(chosen, int) or isinstance(chosen, bool) or chosen <= 0:
                    raise TypeError(f"generation must be a positive int, not {chosen!r}")
                check(lib.zc_store_put_generation(self.handle, tag_b, bundle.value, flags, chosen))
                bundle = None  # the store owns it now
                return chosen
            generation = ctypes.c_uint64()
            check(lib.zc_store_put(self.handle, tag_b, bundle.value, flags, ctypes.byref(generation)))
            bundle = None  # the store owns it now
            return generation.value
        finally:
            if bundle is not None:
                lib.zc_bundle_free(bundle.value)

    @staticmethod
    def _plan_seam(bundle: int, request: SeamRequest) -> None:
        """Tell the engine what to summarise of the tensors just added, and the hop's
        parent (``zc_bundle_seam_plan``, ``zc_bundle_seam_parent``)."""
        plans, parent = request.calls
        for name, layout in plans:
            if lib.zc_bundle_seam_plan(bundle, name, layout) != 0:
                return  # a seam is a report: a layout the engine refuses means none
        if parent is not None:
            lib.zc_bundle_seam_parent(bundle, *parent)

    def hop_seam(self, tag: str, generation: int) -> dict | None:
        """The seam record of the hop that made ``tag`` ``generation`` (the record docs/film.md
        defines), measured by the engine after the put; None when it has none (a root, the first
        shot, a parent gone or without summaries, an older engine's file)."""
        tag_b = encode(tag, "tag")
        try:
            buf, _ = call_growing(lambda b, size, needed: lib.zc_store_hop_seam_json(
                self.handle, tag_b, int(generation), b, size, needed), 1024)
        except NotFound:  # the engine's message says which; None is the answer here
            return None
        return json.loads(buf.value.decode("utf-8"))

    @staticmethod
    def _bundle_digests(bundle: int, tensors: Mapping[str, torch.Tensor]) -> dict[str, str]:
        """The digest text of each tensor of a bundle being built that has one, by name."""
        found = {}
        algo, value = ctypes.c_int(), ctypes.c_uint64()
        for index, name in enumerate(tensors):
            if lib.zc_bundle_tensor_digest(bundle, index, ctypes.byref(algo), ctypes.byref(value)) == 0:
                found[name] = format_digest(value.value, algo.value)
        return found

    @staticmethod
    def _add(bundle: int, name: str, tensor: torch.Tensor, host_copy: bool, clone: bool) -> None:
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"tensor {name!r} is a {type(tensor).__name__}, not a torch.Tensor")
        if tensor.is_nested:
            raise TypeError(f"tensor {name!r} is a nested tensor; put each of its streams "
                            "(tensor.unbind()) under its own name")
        if tensor.is_cpu:
            plain = _plain_args(tensor)
            if plain is not None:  # described by plain values: no DLPack capsule per put
                check(lib.zc_bundle_add_host_copy(bundle, encode(name, "tensor name"), *plain))
                return
            with dlpack.borrowed_dltensor(tensor) as dl:  # the engine names what it cannot store
                check(lib.zc_bundle_add_copy(bundle, encode(name, "tensor name"), dl))
            return
        LatentStore._add_reference(bundle, name, device.hold(tensor, clone=clone), host_copy)

    @staticmethod
    def _add_reference(bundle: int, name: str, tensor: torch.Tensor, host_copy: bool) -> None:
        """Hand tensor's memory to the bundle by reference (and a host copy if asked).

        Everything that can raise happens before the capsule is consumed, and nothing between
        consuming it and the engine call that takes it over: the managed tensor cannot leak."""
        name_b = encode(name, "tensor name")
        shadow = device.host_copy(tensor) if host_copy else None
        with contextlib.ExitStack() as stack:
            dl = stack.enter_context(dlpack.borrowed_dltensor(shadow)) if shadow is not None else None
            with device.on_device(tensor):
                managed, versioned = dlpack.consume(tensor)
            check(lib.zc_bundle_add_reference(bundle, name_b, managed, int(versioned), dl))
        if shadow is not None:
            device.give_back(shadow)  # the engine copied it: the pinned buffer can serve the next put

    def put_by_reference(self, tag: str, tensors: Mapping[str, torch.Tensor],
                         meta: Mapping[str, str] | None = None, *, host_copy: bool = False) -> int:
        """Store tensors of any device (CPU included) by reference, without a copy.

        This is the device tier's path; for CPU tensors it exists so the
        by-reference ownership can be exercised where no GPU is present.
        """
        return self._put(tag, tensors, meta, 0,
                         lambda bundle, name, tensor: self._add_reference(bundle, name, tensor,
                                                                          host_copy))

    # -- reading ---------------------------------------------------------
    @contextlib.contextmanager
    def _view(self, tag: str, generation: int = 0, *, look: bool = True):
        """A view of tag@generation (0 = newest), released on exit; restores from disk if needed.
        ``look=False``: the newest this store knows, without reading the tag's counter file."""
        view = ctypes.c_void_p()
        get = lib.zc_store_get if look else lib.zc_store_get_known
        check(get(self.handle, encode(tag, "tag"), generation, ctypes.byref(view)))
        try:
            yield view.value
        finally:
            lib.zc_view_release(view.value)

    def get(self, tag: str, generation: int = 0, *, verify: bool = False,
            stream: "torch.cuda.Stream | None" = None) -> StoredBundle:
        """The tag's newest bundle (or a given generation), as zero-copy torch views.

        A tag that lives only on disk (after a restart) is restored and every
        tensor verified against its digest first. ``verify`` also re-digests the
        host bytes of a slot already in memory (raises CorruptFile if they changed).
        Device tensors are handed to the consumer's stream: ``stream``, else the
        current one. It waits until the stored tensor is complete, and the
        tensor's memory outlives the reads that stream queues (``zc_engine.device``).
        """
        with self._view(tag, generation) as view:
            if verify:
                self._check_view(view, 0)  # raises when a byte changed; the report is not needed
            # torch.from_dlpack names the current stream to the export
            with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
                return self._bundle_from_view(view)

    def generations(self, tag: str) -> list[int]:
        """The generations of tag in memory or on disk, newest first (what ``get`` can serve)."""
        tag_b = encode(tag, "tag")
        out, count = call_growing(
            lambda buf, cap, count: lib.zc_store_generations(self.handle, tag_b, buf, cap, count),
            16, lambda n: (ctypes.c_uint64 * n)())
        return list(out[:count]) if count else []

    def get_newest_verified(self, tag: str) -> tuple[StoredBundle, list[SkippedGeneration]]:
        """The tag's newest generation that can be read and whose bytes verify against their
        digests, and the newer ones skipped on the way with the reason each failed: a corrupt or
        truncated spill file, or one that is not the store's own (a hard link, a symbolic link:
        the engine renames those aside, never deletes them), a spill file this process may not
        read (another user's, mode 0600: kept, its owner and mode named), or bytes in memory that
        changed. Raises NotFound when the tag holds nothing, CorruptFile when no generation can be
        read and verifies."""
        candidates = self.generations(tag)
        if not candidates:
            return self.get(tag, 0, verify=True), []  # raises NotFound with the engine's message
        bundle, skipped = self.first_verified(tag, candidates)
        if bundle is None:
            raise CorruptFile(f"no stored generation of tag {tag!r} verifies against its digests (or can "
                              "be read): " + "; ".join(s.describe() for s in skipped))
        return bundle, skipped

    def first_verified(self, tag: str, generations) -> tuple[StoredBundle | None,
                                                             list[SkippedGeneration]]:
        """The first of ``generations`` (in the order given) that can be read and whose bytes
        verify, and the ones skipped before it with the reason each failed; None when none does."""
        skipped: list[SkippedGeneration] = []
        for generation in generations:
            try:
                return self.get(tag, generation, verify=True), skipped
            # NotFound: another thread dropped it meanwhile; AccessDenied: another user's file
            except (CorruptFile, AccessDenied, NotFound) as exc:
                skipped.append(SkippedGeneration(generation, str(exc)))
        return None, skipped

    def tensor_info(self, tag: str, generation: int = 0) -> tuple[int, dict[str, StoredTensorInfo]]:
        """(generation, what each stored tensor is) of tag@generation, without exporting any
        tensor to torch: the cheap way to read a digest."""
        with self._view(tag, generation) as view:
            return lib.zc_view_generation(view), self._infos(view)

    def meta(self, tag: str, generation: int = 0, keys: tuple[str, ...] | None = None, *,
             look: bool = True) -> tuple[int, dict[str, str]]:
        """(generation, metadata) of tag@generation (0 = the newest), without exporting any
        tensor to torch (so nothing becomes a possible writer of the stored bytes); with
        ``keys``, only those entries (the ones present). ``look=False`` takes the newest this
        store already knows, without a look for files other processes spilled since (no file
        read: ``zc_store_get_known``)."""
        with self._view(tag, generation, look=look) as view:
            if keys is None:
                return lib.zc_view_generation(view), self._meta(view)
            found = {}
            for key in keys:
                value = lib.zc_view_meta(view, encode(key, "metadata key"))
                if value is not None:
                    found[key] = value.decode("utf-8")
            return lib.zc_view_generation(view), found

    @staticmethod
    def _meta(view: int) -> dict[str, str]:
        """Every metadata entry of a view, read in one engine call (packed "key\0value\0")."""
        buffer, size = call_growing(lambda buf, cap, size: lib.zc_view_meta_packed(view, buf, cap, size),
                                    META_READ_BYTES)
        items = buffer.raw[:size].decode("utf-8").split("\0")
        return dict(zip(items[0:-1:2], items[1::2]))

    @staticmethod
    def _infos(view: int, exports: list | None = None) -> dict[str, StoredTensorInfo]:
        """What each tensor of the view is, by name; ``exports`` (a list) also receives each
        one's (device, DLPack dtype code), what exporting it takes (one engine call a tensor)."""
        infos: dict[str, StoredTensorInfo] = {}
        ti = TensorInfo()
        for index in range(lib.zc_view_count(view)):
            check(lib.zc_view_tensor(view, index, ctypes.byref(ti)))
            name = ti.name.decode("utf-8")
            infos[name] = StoredTensorInfo(
                name=name, dtype=DTYPE_NAMES[ti.dtype], shape=tuple(ti.shape[: ti.ndim]),
                nbytes=ti.nbytes, tier=TIER_NAMES[ti.tier],
                digest=format_digest(ti.digest, ti.digest_algo) if ti.has_digest else None)
            if exports is not None:
                exports.append(((ti.device_type, ti.device_id), DLPACK_CODES[ti.dtype]))
        return infos

    @classmethod
    def _bundle_from_view(cls, view: int) -> StoredBundle:
        exports: list = []
        infos = cls._infos(view, exports)
        tensors = {name: dlpack.view_tensor(view, index, *exports[index])
                   for index, name in enumerate(infos)}
        record = RECORD_NAMES.get(lib.zc_view_record(view), "ok")
        return StoredBundle(tag=lib.zc_view_tag(view).decode("utf-8"),
                            generation=lib.zc_view_generation(view), tensors=tensors,
                            meta=cls._meta(view), info=infos, record=record)

    def verify(self, tag: str, generation: int = 0, *, rehash: bool = False) -> VerifyResult:
        """Check the stored host bytes against their digests; raises CorruptFile if any changed.

        A tensor is re-hashed only when a writer could have changed it since its digest was
        last checked (a tensor ``get`` returned, or another export, is alive or was released
        since); ``rehash`` re-hashes everything. The result says which were hashed."""
        with self._view(tag, generation) as view:
            return self._verify_view(view, VERIFY_REHASH if rehash else 0)

    @staticmethod
    def _check_view(view: int, flags: int) -> VerifyReport:
        """The engine's verify of a view (raises CorruptFile when a byte changed); its report."""
        report = VerifyReport()
        check(lib.zc_view_verify_ex(view, flags, ctypes.byref(report)))
        return report

    @classmethod
    def _verify_view(cls, view: int, flags: int) -> VerifyResult:
        report = cls._check_view(view, flags)
        names = []
        ti = TensorInfo()
        for index in range(lib.zc_view_count(view)):
            check(lib.zc_view_tensor(view, index, ctypes.byref(ti)))
            names.append(ti.name.decode("utf-8"))

        def having(mask: int) -> tuple[str, ...]:
            return tuple(n for i, n in enumerate(names) if mask >> i & 1)

        return VerifyResult(hashed=having(report.hashed), unchanged=having(report.unchanged),
                            device=having(report.device), hashed_bytes=report.hashed_bytes)

    def save(self, tag: str, path: str | Path, generation: int = 0) -> None:
        """Write a stored bundle as a safetensors/.latent file (crash-safe, synchronous)."""
        with self._view(tag, generation) as view:
            check(lib.zc_view_save(view, encode(str(path), "path")))

    # -- shots as bytes, between machines ---------------------------------
    def export_shot(self, tag: str, generation: int = 0) -> bytes:
        """The bytes of tag@generation's spill file (0 = the newest), serialized from the store:
        the same bytes its spill writes, with the identity metadata (``zc.tag``,
        ``zc.generation``), every tensor's digest and the hop's seam, ready for ``import_shot`` elsewhere. Works
        for shots never spilled too (device tensors need a host copy); raises Unsupported
        otherwise. The generation is in the bytes' metadata."""
        with self._view(tag, generation) as view:
            self.hop_seam(tag, lib.zc_view_generation(view))  # measured now if the writer has not yet
            buf, needed = call_growing(
                lambda buf, size, needed: lib.zc_view_serialize(view, buf, size, needed), 0)
            return buf.raw[:needed] if buf is not None else b""

    def import_shot(self, tag: str, generation: int, data: bytes | bytearray | memoryview) -> None:
        """Store the bytes of a shot (from ``export_shot`` or a spill file of this engine, e.g.
        fetched from another machine) as tag@generation in the spill folder, so that a following
        ``get`` restores it. The engine checks them first, as a restore would: a valid safetensors
        file that says it is tag@generation, every tensor's digest matching. Raises CorruptFile
        (nothing written) for bad bytes, GenerationExists when the tag holds that generation,
        Unsupported without a spill folder."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, not {type(data).__name__}")
        if not isinstance(generation, int) or isinstance(generation, bool) or generation <= 0:
            raise TypeError(f"generation must be a positive int, not {generation!r}")
        view = memoryview(data).cast("B")
        buf = (ctypes.c_char * len(view)).from_buffer_copy(view) if len(view) else None
        check(lib.zc_store_import(self.handle, encode(tag, "tag"), generation, buf, len(view)))

    # -- management ------------------------------------------------------
    def drop(self, tag: str, *, disk: bool = False) -> None:
        """Forget a tag (tensors already returned stay valid); ``disk`` also deletes its files."""
        check(lib.zc_store_drop(self.handle, encode(tag, "tag"), DROP_DISK if disk else 0))

    def set_depth(self, tag: str, depth: int) -> None:
        check(lib.zc_store_set_depth(self.handle, encode(tag, "tag"), depth))

    def trim(self, nbytes: int, *, device: bool = False) -> int:
        """Give back up to ``nbytes`` of host (or device) memory without losing anything: the
        recycled host buffers first, then slots whose spill file is complete and that no view
        holds, least recently used first (a later get restores them). Returns the bytes freed."""
        freed = ctypes.c_uint64(0)
        check(lib.zc_store_trim(self.handle, TIER_DEVICE if device else TIER_HOST, max(0, int(nbytes)),
                                ctypes.byref(freed)))
        return freed.value

    def flush(self) -> None:
        """Wait until every queued spill is on disk; raises the first spill error."""
        check(lib.zc_store_flush(self.handle))

    def flush_tag(self, tag: str) -> dict[str, list[int]]:
        """``flush`` for a reader of one tag's film (``zc_store_flush_tag``): only this tag's
        failed spills are retried and only its failure is raised, another tag's trouble never.
        Its files this store owns are looked at (one stat each): ``rewritten`` lists the
        generations whose file vanished or changed and that were written again from memory,
        ``lost`` those whose file vanished while the shot is no longer in memory (the store
        forgets them)."""
        cap = 64
        rewritten, lost = (ctypes.c_uint64 * cap)(), (ctypes.c_uint64 * cap)()
        n_rewritten, n_lost = ctypes.c_size_t(0), ctypes.c_size_t(0)
        check(lib.zc_store_flush_tag(self.handle, encode(tag, "tag"), rewritten, cap, ctypes.byref(n_rewritten),
                                     lost, cap, ctypes.byref(n_lost)))
        return {"rewritten": list(rewritten[:min(cap, n_rewritten.value)]),
                "lost": list(lost[:min(cap, n_lost.value)]),
                "rewritten_count": n_rewritten.value, "lost_count": n_lost.value}

    def stats(self) -> dict[str, int]:
        st = StoreStats()
        check(lib.zc_store_stats_get(self.handle, ctypes.byref(st)))
        return {name: getattr(st, name) for name, _ in StoreStats._fields_}

    def describe(self) -> dict:
        """Every tag with its slots, tensors, digests, metadata and disk files."""
        return json.loads(self.describe_text())

    def describe_text(self) -> str:
        """``describe()``'s JSON text, undecoded (its size grows with the tags held: a caller on a
        server decodes it piece by piece, zc_nodes/api/buffers.py ``parse_description``)."""
        buf, _ = call_growing(lambda b, size, needed: lib.zc_store_describe_json(self.handle, b, size, needed), 4096)
        return buf.value.decode("utf-8")

    def describe_tag(self, tag: str) -> dict | None:
        """One tag's entry of ``describe()`` (None when it holds nothing); restores nothing from
        disk and costs the same however many other tags the store holds."""
        tag_b = encode(tag, "tag")
        return self._json(lambda buf, size, needed: lib.zc_store_describe_tag_json(self.handle, tag_b, buf,
                                                                                  size, needed))

    def changes(self) -> int:
        """A count that grows whenever a tag's newest generation rises or a tag is dropped
        (``zc_store_changes``): equal counts mean every tag's ``last_generation`` is unchanged.
        Constant time whatever the number of tags."""
        out = ctypes.c_uint64(0)
        check(lib.zc_store_changes(self.handle, ctypes.byref(out)))
        return out.value

    @staticmethod
    def _json(call):
        buf, _ = call_growing(call, 4096)
        return json.loads(buf.value.decode("utf-8"))

    def tags(self) -> list[str]:
        return sorted(entry["tag"] for entry in self.describe()["tags"])
