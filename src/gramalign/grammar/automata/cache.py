"""Process-wide caches of automata (and parser tables), keyed by exact content and bounded in bytes.

Schemas compiled one after another share most of their pieces: the same key sets, the
same ``minimum: 0`` numbers, the same format and pattern automata, the same products of
them. Each cache here maps a key built from the *content* of the operands (a digest of
their tables, or the literal strings themselves; never object identities, which Python
reuses) to the resulting :class:`~.dfa.ByteDFA`, so a hit returns exactly the automaton a
fresh computation would. Entries are evicted least recently used first once the tables
held exceed the cache's byte budget. Cached automata are shared: treat them as read-only
(as every automaton of this package is).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # dfa.py itself keeps a cache: no import at run time
    from .dfa import ByteDFA

__all__ = ["AutomatonCache", "clear_automaton_caches"]

_ALL_CACHES: list["AutomatonCache"] = []


def _size(dfa: "ByteDFA") -> int:
    # the byte table's size, from the state count: a shipped automaton not expanded yet
    # (format_data) is not expanded to be measured
    return 1024 * dfa.num_states + int(dfa.accepting.nbytes) + 200  # plus the object itself


class AutomatonCache:
    """LRU map key -> ByteDFA holding at most ``max_bytes`` of automaton tables (an entry
    larger than half the budget is not kept). ``size`` measures other kinds of values."""

    def __init__(self, name: str, max_bytes: int, size: Callable[[object], int] | None = None):
        self.name = name
        self.max_bytes = max_bytes
        self._size = size or _size
        self.nbytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        _ALL_CACHES.append(self)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key) -> "ByteDFA | None":
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key, dfa: "ByteDFA") -> "ByteDFA":
        size = self._size(dfa)
        if 2 * size > self.max_bytes:
            return dfa
        with self._lock:
            if key in self._entries:
                return self._entries[key]
            self._entries[key] = dfa
            self.nbytes += size
            while self.nbytes > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self.nbytes -= self._size(evicted)
        return dfa

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.nbytes = 0


def clear_automaton_caches() -> None:
    """Empty every automaton cache of the process (tests; releasing memory)."""
    for cache in _ALL_CACHES:
        cache.clear()
