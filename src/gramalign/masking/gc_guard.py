"""Python's cyclic garbage collector kept out of mask fills.

A collection starts when an allocation crosses a threshold, so any fill may be the one that
pays for it; a generation-2 collection walks every tracked object of the process (compiled
grammars, vocabularies, a model's modules), tens of milliseconds in a server, and a batch
waits for its slowest row. The shipped integrations (``GrammarLogitsProcessor``,
``gramalign.generate`` and its samplers, ``BatchMatcher``) and the infilling check
(``InfillChecker.check``) therefore run their constraint work under :data:`gc_paused`:
automatic collection is off while any of them is filling, in any thread, and back to its
previous state when the last one leaves. The allocations made
meanwhile still count, so a collection that was due runs at the first allocation after the
fill, between fills rather than inside one. ``gc.collect()`` called explicitly still runs.

A long-lived server should also call :func:`freeze_gc` once its vocabularies are loaded and
its grammars compiled, so the collections that do run no longer walk those objects.
"""

from __future__ import annotations

import gc
import os
import threading

_lock = threading.Lock()
_acquire, _release = _lock.acquire, _lock.release
_depth = 0  # guards entered and not yet left, in all threads
_reenable = False  # automatic collection was on when the outermost guard was entered


class _GCPaused:
    """Context manager: automatic collection is off inside, restored after the last exit.

    Counted under a lock, so it nests, re-enters, and may be held by several threads at once:
    the first to enter records whether collection was enabled and disables it, the last to
    leave restores that state (so a collector disabled before stays disabled). One shared
    instance, :data:`gc_paused`, is all there is; entering it allocates nothing.

    >>> import gc
    >>> with gc_paused:
    ...     gc.isenabled()
    False
    """

    __slots__ = ()

    def __enter__(self) -> None:
        global _depth, _reenable
        _acquire()  # not ``with _lock``: acquire/release calls cost half as much
        try:
            if _depth == 0:
                _reenable = gc.isenabled()
                gc.disable()
            _depth += 1
        finally:
            _release()

    def __exit__(self, exc_type, exc_value, traceback) -> bool:
        global _depth
        _acquire()
        try:
            if _depth > 0:  # 0 only in a forked child, whose guards were reset (below)
                _depth -= 1
                if _depth == 0 and _reenable:
                    gc.enable()
        finally:
            _release()
        return False

    def __repr__(self) -> str:
        return "gramalign.masking.gc_guard.gc_paused"


gc_paused = _GCPaused()
"""``with gc_paused:`` runs its body with automatic garbage collection off (see the module).

Wrap your own loop of ``GrammarMatcher.fill_next_token_bitmask`` calls in it the way the
integrations do: enter once per decoding step, not once per row (about 0.3 µs per entry).
Do not toggle ``gc.enable()``/``gc.disable()`` yourself while a guard is held in another thread.
"""


def _after_fork_in_child() -> None:
    # Only the forking thread survives: guards other threads held will never be left, and the
    # lock may be held by one of them. Start clean, with the collector as it was before them.
    global _lock, _acquire, _release, _depth
    _lock = threading.Lock()
    _acquire, _release = _lock.acquire, _lock.release
    if _depth > 0:
        _depth = 0
        if _reenable:
            gc.enable()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def freeze_gc() -> int:
    """Collect, then move every object alive now into the collector's permanent generation.

    For long-lived servers, once vocabularies are loaded, grammars compiled and the model
    loaded: later collections (including the ones a fill defers) no longer walk those
    objects, so a full collection costs what the process allocated since. Frozen objects are
    never collected, even if they become garbage; ``gc.unfreeze()`` undoes it. Nothing in
    gramalign calls this for you. Returns ``gc.get_freeze_count()``.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
