"""Sets of members (NFA states, LR items) as numbered states: the hash table that the subset
constructions of :mod:`.kernels`, the lexer's product (``grammar/lexer_kernels.py``) and the
LR(0) automaton (``grammar/lalr_kernels.py``) share.

A set is a sorted int64 array; the sets found so far are stored as CSR (``offsets``,
``pool``), and ``slots`` is an open-addressing table of their numbers, keyed by an FNV-1a
hash of the members: :func:`find_members` looks a set up, :func:`added_members` stores a
new one.
"""

from __future__ import annotations

import numpy as np

from ...jit import kernel

__all__ = ["added_members", "find_members", "hash_members", "rehashed_members", "store_members"]


@kernel(inline="always")
def hash_members(buffer, length):
    h = np.uint64(14695981039346656037)
    for i in range(length):
        h = (h ^ np.uint64(buffer[i])) * np.uint64(1099511628211)
    return h


@kernel
def find_members(slots, offsets, pool, buffer, length):
    """(state whose member array equals ``buffer[:length]`` or -1, its slot or the free slot
    to put it in) in the open-addressing table ``slots`` of states stored as CSR (``offsets``,
    ``pool``)."""
    mask = slots.shape[0] - 1
    slot = np.int64(hash_members(buffer, length) & np.uint64(mask))
    while slots[slot] >= 0:
        candidate = slots[slot]
        o = offsets[candidate]
        if offsets[candidate + 1] - o == length:
            same = True
            for i in range(length):
                if pool[o + i] != buffer[i]:
                    same = False
                    break
            if same:
                return candidate, slot
        slot = (slot + 1) & mask
    return -1, slot


@kernel
def store_members(pool, offsets, count, buffer, length):
    """Append ``buffer[:length]`` as the members of state ``count`` (``offsets`` must have room
    for ``count + 2`` entries); returns the pool, reallocated when full."""
    end = offsets[count]
    if end + length > pool.shape[0]:
        grown_pool = np.empty(2 * (end + length), dtype=np.int64)
        grown_pool[:end] = pool[:end]
        pool = grown_pool
    pool[end:end + length] = buffer[:length]
    offsets[count + 1] = end + length
    return pool


@kernel
def added_members(slots, slot, offsets, pool, count, buffer, length, first_hashed):
    """Add ``buffer[:length]`` as state ``count`` in ``slot``, the free slot
    :func:`find_members` named; ``offsets`` grows as needed and ``slots`` stays at most half
    full (states before ``first_hashed`` are never looked up). Returns (slots, offsets, pool)."""
    if count + 1 >= offsets.shape[0]:
        grown = np.zeros(2 * offsets.shape[0], dtype=np.int64)
        grown[:count + 1] = offsets[:count + 1]
        offsets = grown
    pool = store_members(pool, offsets, count, buffer, length)
    slots[slot] = count
    if 2 * (count + 1) > slots.shape[0]:
        slots = rehashed_members(slots, offsets, pool, first_hashed, count + 1)
    return slots, offsets, pool


@kernel
def rehashed_members(slots, offsets, pool, first, count):
    """A table twice the size of ``slots`` holding states ``first .. count - 1``."""
    bigger = np.full(2 * slots.shape[0], -1, dtype=np.int64)
    mask = bigger.shape[0] - 1
    for state in range(first, count):
        o = offsets[state]
        s = np.int64(hash_members(pool[o:offsets[state + 1]], offsets[state + 1] - o) & np.uint64(mask))
        while bigger[s] >= 0:
            s = (s + 1) & mask
        bigger[s] = state
    return bigger
