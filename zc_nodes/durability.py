"""Stored shots reach the disk before anyone is told a prompt is done, and the user hears
at once, where they look, when one cannot.

The guarantee (README, docs/engine.md): a shot whose Store run succeeded is either durable on
disk, or the user was told loudly and at once that it is not, and a shot that is not on disk is
never evicted from memory (the engine pins it; see ``zc_store_flush`` in engine/include/zc.h).

- **Prompt end.** ComfyUI's prompt worker records a prompt in its history through
  ``PromptQueue.task_done``. ``install()`` wraps that method: when the prompt stored a shot, the
  store is flushed first (written, fsynced, renamed, directory synced), so once the history
  says success the shot survives anything that ends the process afterwards, SIGKILL and power
  loss included. The cost is the write itself, after the prompt's last node; the Store ->
  Handoff path inside a prompt is untouched.
- **Stop signals.** SIGTERM and SIGHUP (``systemctl stop``, ``docker stop``, a closed terminal;
  ComfyUI installs no handler for them, so Python's default would end the process without its
  exit hooks) flush the store, then do what the previous handler did: call it, ignore the
  signal, or re-raise it with the default action. Windows has SIGBREAK instead of SIGHUP.
- **Refused files.** Files of the spill folder the engine refused and renamed aside to
  ``*.rejected`` (a name out of range, a corrupt spill file, a hard link or FIFO planted in place
  of a counter, the folder lock or a spill file) are said once each, at open and after each
  prompt: a warning naming the newest (the engine's sentence: which file, why, what was done, the
  fix) and a toast.
- **Failures.** A spill that fails after the engine's own healing (a removed folder is created
  again, older files beyond ``disk_keep`` are pruned first) is reported as an error line naming
  the tag, the generation, the folder and the cause; as a ``zerocopy.spill_failed`` event (the
  Store node's badge turns red) and a toast that names each tag's shots with their own cause, the
  spill folder as the user set it (the REST answers keep it out), that a restart loses them, and
  the fix that fits the cause (a read-only drive, a folder ComfyUI may not write, a full drive, a
  file-size limit, a folder that is gone; ``FIXES``); and in the ZeroCopy sidebar, which lists
  memory-only shots. The files of the tags a prompt stored are looked at once more: one that
  vanished or changed is written again from memory, or said lost (``film_view.flush_own``). The Store run itself does not fail: the shot is in memory, pinned,
  the film can go on in this process, and the engine retries the write after every prompt. A
  failing prompt would hide the outputs it made (a decoded video) without saving the shot.

The one window left: a SIGKILL or a power loss during the prompt that is storing, before its
end, loses the shots of that prompt that were not yet written (at most ``spill_delay_ms`` after
each Store plus the write).
"""

from __future__ import annotations

import os
import signal
import threading
import weakref

from . import ui_events
from .. import zc_log as log

_lock = threading.RLock()  # RLock: a signal handler may interrupt the main thread holding it
# Shots stored since the last flush: (tag, generation, node id or None).
_unflushed: list[tuple[str, int, str | None]] = []
_reported: set[tuple[str, int]] = set()  # memory-only shots the user was told about
_recreated_seen = 0
_rejected_seen: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # store -> files_rejected said
_installed: dict[str, object] = {}
SIGNALS = ("SIGTERM", "SIGHUP", "SIGBREAK")
FAILED_EVENT = "zerocopy.spill_failed"


def note_stored(tag: str, generation: int, node_id: str | None) -> None:
    """A Store kept a shot: the end of its prompt makes it durable."""
    with _lock:
        _unflushed.append((tag, int(generation), None if node_id is None else str(node_id)))


def _store_if_open():
    from . import runtime
    return runtime.store_if_open()


def make_durable(reason: str = "the prompt finished") -> bool:
    """Flush the shared store if anything was stored since the last flush, or shots are memory
    only; report what could not be written. True when every stored shot is on disk."""
    with _lock:
        stored = list(_unflushed)
        _unflushed.clear()
    store = _store_if_open()
    if store is None:
        return True
    try:
        pending = store.stats()
    except Exception:  # noqa: BLE001 - a closed store: nothing of ours to write
        return True
    report_rejected(store, pending)
    if not stored and not pending.get("memory_only") and not pending.get("pending_spills"):
        return True
    error = None
    try:
        store.flush()
    except Exception as exc:  # noqa: BLE001 - reported below, never raised into ComfyUI
        error = str(exc)
    _check_files(store, stored)
    return _report(store, stored, error, reason)


def _check_files(store, stored) -> None:
    """The files of the tags this prompt stored, looked at once more (``film_view.flush_own``: one
    stat each): one that vanished or changed is written again from memory, or said lost. The cost
    follows the tags stored, never the tags held."""
    from . import film_view
    for tag in dict.fromkeys(tag for tag, _, _ in stored):
        try:
            film_view.flush_own(store, tag)
        except Exception as exc:  # noqa: BLE001 - the tag's own spill failure: _report says it
            log.debug("tag %r: %s", tag, exc)


def report_rejected(store, stats: dict | None = None) -> int:
    """Say the files of the spill folder the engine refused and renamed aside since the last
    call (``stats()["files_rejected"]`` grew): a warning naming the newest, in the engine's words
    (``describe()["last_rejected"]``: the file, why, what was done, the fix), and a toast. Returns
    how many were new."""
    try:
        rejected = int((stats or store.stats()).get("files_rejected", 0) or 0)
    except Exception:  # noqa: BLE001 - a closed store
        return 0
    new = rejected - _rejected_seen.get(store, 0)
    _rejected_seen[store] = rejected
    if new <= 0:
        return 0
    try:
        newest = store.describe().get("last_rejected")
    except Exception:  # noqa: BLE001 - an engine without it says the count alone
        newest = None
    message = (f"{new} file(s) in the spill folder {store.spill_dir} were refused and renamed aside to "
               "*.rejected (kept, never deleted)" + (f"; the newest: {newest}" if newest else
                                                     " (named like spill files but not ones: a generation out "
                                                     "of range, no regular file, or too small)"))
    log.warning("%s", message)
    ui_events.warn("ZeroCopy: files renamed aside in the spill folder", _redacted(message))
    return new


# The cause of each memory-only shot, from its slot's own "spill_problem" (engines that keep one).
_problems: dict[tuple[str, int], str] = {}


def _failed_slots(entry: dict | None) -> list[tuple[str, int]]:
    if not entry:
        return []
    failed = [slot for slot in entry.get("slots", []) if slot.get("spill") == "failed"]
    for slot in failed:
        if slot.get("spill_problem"):
            _problems[(entry["tag"], slot["generation"])] = slot["spill_problem"]
    return [(entry["tag"], slot["generation"]) for slot in failed]


def _memory_only(store, stored, stats: dict) -> tuple[list[tuple[str, int]], str | None]:
    """The shots whose spill failed (pinned in memory), and the store's ``spill_problem`` when the
    whole store had to be described to find them (else None).

    The engine counts them (``stats()["memory_only"]``, constant time); with none, nothing is
    described. Otherwise the tags stored since the last flush and those already reported are
    described one by one (``describe_tag``): the cost follows the shots concerned, never the tags
    held. Only when the engine counts more than those tags hold (a shot put outside the Store
    nodes) is the whole store described."""
    count = int(stats.get("memory_only", 0) or 0)
    if count == 0:
        return [], None
    with _lock:
        reported = sorted(_reported)
    found: list[tuple[str, int]] = []
    for tag in dict.fromkeys([tag for tag, _, _ in stored] + [tag for tag, _ in reported]):
        try:
            found += _failed_slots(store.describe_tag(tag))
        except Exception:  # noqa: BLE001 - a tag dropped meanwhile: the count check below decides
            continue
    if len(found) >= count:
        return found, None
    try:
        description = store.describe()
    except Exception:  # noqa: BLE001
        return found, None
    return ([shot for entry in description.get("tags", []) for shot in _failed_slots(entry)],
            description.get("spill_problem"))


def _report(store, stored, error, reason) -> bool:
    global _recreated_seen
    try:
        stats = store.stats()
    except Exception:  # noqa: BLE001 - closed meanwhile: nothing of ours to report
        return True
    memory_only, spill_problem = _memory_only(store, stored, stats)
    folder = store.spill_dir
    recreated = int(stats.get("spill_folder_recreated", 0) or 0)
    if recreated > _recreated_seen:
        _recreated_seen = recreated
        message = (f"the spill folder {folder} was removed while ComfyUI ran; it was created again "
                   "and the shots since are written there (files removed with it are gone from disk)")
        log.warning("%s", message)
        ui_events.warn("ZeroCopy: spill folder re-created", _redacted(message))
    if not memory_only:
        _problems.clear()
        if _reported:
            _reported.clear()
            log.info("every stored shot is on disk again (%s)", reason)
            ui_events.send("zerocopy.buffers", {"reason": "spills written"})
        return True
    new = [shot for shot in memory_only if shot not in _reported]
    _reported.intersection_update(memory_only)
    _reported.update(memory_only)
    if spill_problem is None and error is None:  # rare: a failure that this flush did not meet again
        try:
            spill_problem = store.describe().get("spill_problem")
        except Exception:  # noqa: BLE001
            spill_problem = None
    problem = spill_problem or error or "the spill failed"
    own = {shot: _problems.get(shot, problem) for shot in memory_only}
    for shot in [shot for shot in _problems if shot not in own]:
        del _problems[shot]
    shots = ", ".join(f"{tag} generation {gen}" for tag, gen in memory_only)
    fixes = list(dict.fromkeys(FIXES[cause_kind(own[shot])] for shot in memory_only))
    log.error("NOT ON DISK: %d shot(s) exist only in memory (%s): %s. Spill folder: %s. They stay "
              "in memory (never evicted) and are written again after each prompt, but a restart of "
              "ComfyUI loses them; %s.", len(memory_only), shots,
              "; ".join(dict.fromkeys(own.values())), folder, "; ".join(fixes))
    if new or error:
        nodes = {(tag, gen): node for tag, gen, node in stored}
        for tag, gen in memory_only:
            ui_events.send(FAILED_EVENT, {
                "node": nodes.get((tag, gen)), "tag": tag, "generation": gen,
                "message": _redacted(own[(tag, gen)]), "memory_only": [list(s) for s in memory_only]})
        ui_events.warn(f"ZeroCopy: {len(memory_only)} shot(s) NOT saved to disk",
                       toast_text(memory_only, own, folder), severity="error")
    return False


# What to do about a spill that failed, by its cause (the operating system's words in the engine's
# message; POSIX and Windows phrasings): a read-only drive, a folder ComfyUI may not write, a full
# drive, a file-size limit, a folder that is gone.
_CAUSES = (
    ("read_only", ("read-only file system", "write-protected")),
    ("denied", ("permission denied", "operation not permitted", "access is denied")),
    ("full", ("no space left on device", "disk quota exceeded", "not enough space on the disk",
              "disk is full")),
    ("too_large", ("file too large",)),
    ("removed", ("no such file or directory", "cannot find the path")),
)
FIXES = {
    "read_only": "the spill folder is on a read-only drive or mount: make it writable again (remount it "
                 "read-write), or set ZEROCOPY_SPILL_DIR to a writable folder and restart ComfyUI",
    "denied": "ComfyUI may not write in the spill folder: give the user ComfyUI runs as write permission on "
              "it, or set ZEROCOPY_SPILL_DIR to a folder it may write and restart ComfyUI",
    "full": "the drive of the spill folder is full: free space on it (drop old films in the ZeroCopy "
            "sidebar), or set ZEROCOPY_SPILL_DIR to a folder on a larger drive and restart ComfyUI",
    "too_large": "a file-size limit refuses the file (ulimit -f, or the drive's largest file): raise the "
                 "limit, or set ZEROCOPY_SPILL_DIR to a folder on another drive and restart ComfyUI",
    "removed": "the spill folder is gone and could not be made again: check that its drive is mounted and "
               "create the folder, or set ZEROCOPY_SPILL_DIR to an existing folder and restart ComfyUI",
    None: "fix the spill folder for the cause above, or set ZEROCOPY_SPILL_DIR to another folder and "
          "restart ComfyUI",
}


def cause_kind(problem: str) -> str | None:
    """Which of FIXES fits the engine's message (None: none known)."""
    lower = problem.lower()
    return next((kind for kind, words in _CAUSES if any(word in lower for word in words)), None)


def cause(problem: str) -> str:
    """The operating system's reason in the engine's message ("Read-only file system"), or the
    message without the engine's temporary file names when no known reason is in it."""
    kind = cause_kind(problem)
    if kind is not None:
        words = dict(_CAUSES)[kind]
        lower = problem.lower()
        at = min(lower.find(word) for word in words if word in lower)
        return problem[at:].split(" (")[0].strip().rstrip(".")
    from .api.redaction import without_temporary_names
    return without_temporary_names(problem)


def toast_text(memory_only, problems: dict, folder) -> str:
    """The toast of shots that could not be written: each tag's shots with their own cause, the
    folder as the user set it (theirs to see; the REST answers stay redacted for other callers),
    what a restart does to them and the fix that fits each cause."""
    by_tag: dict[str, list[int]] = {}
    for tag, gen in memory_only:
        by_tag.setdefault(tag, []).append(gen)
    lines = [f"tag {tag!r} generation {', '.join(str(g) for g in gens)}: "
             f"{cause(problems[(tag, gens[0])])}" for tag, gens in by_tag.items()]
    fixes = dict.fromkeys(FIXES[cause_kind(problems[shot])] for shot in memory_only)
    return (f"Could not write to the spill folder {folder}: " + "; ".join(lines) + ". These shots exist only in "
            "memory: a restart of ComfyUI loses them. They are kept in memory and written again after each "
            "prompt. To fix: " + "; ".join(fixes) + ".")


def _redacted(message: str) -> str:
    from .api.redaction import redact_paths
    return redact_paths(message)


# ---------------------------------------------------------------- prompt end


def _wrap_task_done(queue_cls) -> bool:
    original = queue_cls.task_done
    if getattr(original, "_zerocopy_durable", False):
        return True

    def task_done(self, *args, **kwargs):
        try:
            make_durable()
        except Exception as exc:  # noqa: BLE001 - never break ComfyUI's history
            log.error("could not make the prompt's shots durable: %s", exc)
        return original(self, *args, **kwargs)

    task_done._zerocopy_durable = True
    task_done.__wrapped__ = original
    queue_cls.task_done = task_done
    return True


# ---------------------------------------------------------------- signals


def _chain(signum, frame, previous) -> None:
    """What the handler before ours would have done."""
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_IGN:
        return
    else:  # SIG_DFL (or None: a handler not installed from Python): the default action
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _handler(previous):
    def on_signal(signum, frame):
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = str(signum)
        try:
            make_durable(f"{name} received")
            log.info("%s: stored shots are on disk; stopping", name)
        except Exception as exc:  # noqa: BLE001 - stop anyway, but say what was not written
            log.error("%s: could not write the stored shots before stopping: %s", name, exc)
        _chain(signum, frame, previous)
    on_signal._zerocopy_durable = True
    return on_signal


def install_signal_handlers() -> list[str]:
    """SIGTERM and SIGHUP (SIGBREAK on Windows) flush, then chain; main thread only (Python's
    rule). Returns the names installed."""
    if threading.current_thread() is not threading.main_thread():
        return []
    names = []
    for name in SIGNALS:
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        try:
            previous = signal.getsignal(signum)
            if getattr(previous, "_zerocopy_durable", False):
                names.append(name)
                continue
            signal.signal(signum, _handler(previous))
            names.append(name)
        except (ValueError, OSError):  # not allowed here (embedded interpreter)
            continue
    return names


def install() -> dict[str, object]:
    """Hook the prompt end and the stop signals, once; what was hooked (logged by the caller)."""
    if _installed:
        return _installed
    try:
        import execution
        _installed["prompt_end"] = _wrap_task_done(execution.PromptQueue)
    except Exception as exc:  # noqa: BLE001 - outside ComfyUI, or a ComfyUI without it
        _installed["prompt_end"] = False
        log.warning("stored shots are not flushed at the end of each prompt (%s): they reach the "
                    "disk about %s ms after each Store and at exit", exc, "50")
    _installed["signals"] = install_signal_handlers()
    return _installed
