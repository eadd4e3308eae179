"""Byte-level deterministic finite automata: the form every terminal takes before it meets tokens."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEAD = -1
"""Transition target meaning "no continuation can be accepted"."""


@dataclass(frozen=True, eq=False)
class ByteDFA:
    """A trimmed, minimal DFA over bytes.

    ``transitions[s, b]`` is the state after reading byte ``b`` in state ``s``, or ``DEAD``.
    Every state is reachable from ``initial`` and can reach an accepting state, so a
    non-dead state always means "this prefix can still be completed". The empty language
    has no states and ``initial == DEAD``.
    """

    transitions: np.ndarray  # int32 [n_states, 256]
    initial: int
    accepting: np.ndarray  # bool [n_states]

    @property
    def num_states(self) -> int:
        return int(self.transitions.shape[0])

    def advance(self, state: int, data: bytes) -> int:
        """State after reading ``data`` from ``state``; ``DEAD`` as soon as no completion exists."""
        table = self.transitions
        for byte in data:
            if state == DEAD:
                return DEAD
            state = int(table[state, byte])
        return state

    def matches(self, data: bytes) -> bool:
        """True when ``data`` as a whole is in the language (``re.fullmatch`` semantics)."""
        state = self.advance(self.initial, data)
        return state != DEAD and bool(self.accepting[state])

    def is_prefix(self, data: bytes) -> bool:
        """True when ``data`` can be extended to a string of the language."""
        return self.advance(self.initial, data) != DEAD
