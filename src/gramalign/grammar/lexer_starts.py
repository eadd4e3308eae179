"""Which lexer start each candidate set lexes from: one start for a family of nested sets.

Every parser state has a candidate set (the terminals it can take); the lexer has a start
per set it is asked for (see :mod:`.lexer`). An object with n optional properties, written
in schema order, has n nested sets (the keys still allowed at each position), so n starts,
each a new lexical context whose masks are computed on first use: the tail of the time
between masks was such first encounters.

A parser state can lex from the start of a larger set U instead of its own K: every
decision of the parser and of the masks intersects the lexer's bits with K (the winner,
"a longer lexeme still matches", "can this still become a candidate"), so tracking more
terminals changes nothing, *unless* a terminal of U outside K could match a text that
extends one a terminal of K matches (longest match would then prefer it, or keep a
hypothesis alive for it). So K joins U's start only where no lexer state reachable from
that start accepts a terminal of K while a terminal of U \\ K is still alive there, which
holds for object keys (a quoted key ends at its quote) and is checked on the automaton.
"""

from __future__ import annotations

import numpy as np

from ..jit import kernel


@kernel
def largest_supersets(sets: np.ndarray) -> np.ndarray:
    """For each row of ``sets`` (uint64 [n, words] bitsets), the index of the row with the
    most bits among those that contain it (itself when none is larger; ties: the first)."""
    n, words = sets.shape
    sizes = np.zeros(n, np.int64)
    for i in range(n):
        for w in range(words):
            x = sets[i, w]
            while x:
                x &= x - np.uint64(1)
                sizes[i] += 1
    order = np.argsort(-sizes, kind="mergesort")
    root = np.arange(n)
    for i in range(n):
        for k in range(n):
            j = order[k]
            if sizes[j] <= sizes[i]:
                break
            inside = True
            for w in range(words):
                if sets[i, w] & ~sets[j, w]:
                    inside = False
                    break
            if inside:
                root[i] = j
                break
    return root


@kernel
def reachable_from(transitions, class_byte, sources):
    """bool [states]: the states reachable from one of ``sources`` (themselves included),
    reading the bytes ``class_byte`` (one per byte class, or every byte)."""
    seen = np.zeros(transitions.shape[0], np.bool_)
    stack = np.empty(transitions.shape[0], np.int64)
    top = 0
    for start in sources:
        if not seen[start]:
            seen[start] = True
            stack[top] = start
            top += 1
    while top:
        top -= 1
        s = stack[top]
        for c in range(class_byte.shape[0]):
            t = transitions[s, class_byte[c]]
            if t >= 0 and not seen[t]:
                seen[t] = True
                stack[top] = t
                top += 1
    return seen


def safe_to_share(lexer, sets: np.ndarray, root: np.ndarray, start_of_root: dict) -> np.ndarray:
    """bool per set: lexing from its root's start gives what lexing from its own would (see
    the module docstring). A counted string (``Terminal.length``) must also stay alone after
    its opening quote, as its own start would keep it."""
    counted = np.zeros(sets.shape[1], dtype=np.uint64)
    for k, terminal in enumerate(lexer.terminals):
        if terminal.length is not None:
            counted[k >> 6] |= np.uint64(1) << np.uint64(k & 63)
    safe = root == np.arange(root.shape[0])
    reached: dict[int, np.ndarray] = {}
    for k in np.flatnonzero(~safe).tolist():
        r = int(root[k])
        states = reached.get(r)
        if states is None:
            states = reached[r] = np.flatnonzero(reachable_from(lexer.transitions, lexer.class_byte,
                                                                np.array([start_of_root[r]], dtype=np.int64)))
        own, others = sets[k], sets[r] & ~sets[k]
        states = states[states != start_of_root[r]]
        accepts_own = (lexer.accept_bits[states] & own).any(axis=1)
        counted_alive = (lexer.alive_bits[states] & own & counted).any(axis=1)
        others_alive = (lexer.alive_bits[states] & others).any(axis=1)
        safe[k] = not ((accepts_own | counted_alive) & others_alive).any()
    return safe
