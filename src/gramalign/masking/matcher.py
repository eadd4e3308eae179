"""GrammarMatcher: the per-sequence state machine that says which token may come next."""

from __future__ import annotations

import numpy as np

from ..errors import StringRejected, TokenRejected
from ..grammar.dfa import DEAD
from .bitmask import as_numpy_bitmask
from .compiler import CompiledGrammar


class GrammarMatcher:
    """Tracks one sequence through a compiled grammar.

    The state is the DFA state plus whether EOS has been accepted. Every accepted token
    pushes the previous state on a history stack, so ``rollback(n)`` is O(n) and
    ``fork()`` copies only that stack.

    >>> m = compiled.matcher()                        # doctest: +SKIP
    >>> m.fill_next_token_bitmask(bitmask, 0)         # doctest: +SKIP
    >>> m.accept_token(token_id)                      # doctest: +SKIP
    """

    def __init__(self, compiled: CompiledGrammar):
        self.compiled = compiled
        self._transitions = compiled.dfa.transitions
        self._accepting = compiled.dfa.accepting
        self._state = compiled.dfa.initial
        self._terminated = False
        self._history: list[tuple[int, bool]] = []

    # -- queries -----------------------------------------------------------------------

    def is_terminated(self) -> bool:
        """True once EOS has been accepted: nothing but a rollback can follow."""
        return self._terminated

    def can_terminate(self) -> bool:
        """True when the text so far is a complete string of the language (EOS is allowed)."""
        return not self._terminated and bool(self._accepting[self._state])

    @property
    def num_accepted_tokens(self) -> int:
        """How many tokens (EOS included) have been accepted since the start or last reset."""
        return len(self._history)

    def fill_next_token_bitmask(self, bitmask, index: int = 0) -> None:
        """Write the allowed next tokens into row ``index`` of ``bitmask``.

        ``bitmask`` is an int32 numpy array or CPU torch tensor of shape
        ``[batch, ceil(vocab_size/32)]`` (see :func:`gramalign.allocate_token_bitmask`).
        After termination only EOS is allowed, so finished rows of a batch stay finished.
        """
        array = as_numpy_bitmask(bitmask)
        compiled = self.compiled
        if array.shape[1] != compiled.bitmask_width:
            raise ValueError(
                f"bitmask rows have {array.shape[1]} words but the vocabulary of size "
                f"{compiled.vocabulary.size} needs {compiled.bitmask_width}"
            )
        if not -array.shape[0] <= index < array.shape[0]:
            raise IndexError(f"bitmask row {index} out of range for batch size {array.shape[0]}")
        row = array[index].view(np.uint32)
        if self._terminated:
            row[:] = compiled.eos_words
            return
        row[:] = compiled.index.mask(self._state)
        if self._accepting[self._state]:
            row |= compiled.eos_words

    def allowed_token_ids(self) -> np.ndarray:
        """The ids allowed next, as a sorted int array (a convenience; the bitmask is faster)."""
        words = np.empty((1, self.compiled.bitmask_width), dtype=np.int32)
        self.fill_next_token_bitmask(words, 0)
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")[: self.compiled.vocabulary.size]
        return np.flatnonzero(bits)

    # -- transitions -------------------------------------------------------------------

    def accept_token(self, token_id: int) -> None:
        """Advance by one token; raises :class:`TokenRejected` and keeps the state if it is forbidden."""
        next_state, terminates = self._next(token_id)
        self._history.append((self._state, self._terminated))
        self._state = next_state
        self._terminated = terminates

    def try_accept_token(self, token_id: int) -> bool:
        """Like :meth:`accept_token` but returns False instead of raising."""
        try:
            self.accept_token(token_id)
        except TokenRejected:
            return False
        return True

    def is_token_allowed(self, token_id: int) -> bool:
        """True when ``accept_token(token_id)`` would succeed; never changes the state."""
        try:
            self._next(token_id)
        except TokenRejected:
            return False
        return True

    def accept_string(self, text: "str | bytes") -> None:
        """Advance by raw text (not a token); raises :class:`StringRejected` and keeps the state if forbidden.

        The whole string counts as one step for :meth:`rollback`.
        """
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        if self._terminated:
            raise StringRejected(text, 0, "the matcher has already terminated")
        state = self._state
        for offset, byte in enumerate(data):
            state = int(self._transitions[state, byte])
            if state == DEAD:
                raise StringRejected(text, offset, "no string of the language continues this way")
        self._history.append((self._state, self._terminated))
        self._state = state

    def rollback(self, num_steps: int = 1) -> None:
        """Undo the last ``num_steps`` accepted tokens (or strings)."""
        if num_steps < 0 or num_steps > len(self._history):
            raise ValueError(f"cannot roll back {num_steps} steps: only {len(self._history)} were accepted")
        if num_steps == 0:
            return
        self._state, self._terminated = self._history[-num_steps]
        del self._history[-num_steps:]

    def reset(self) -> None:
        """Back to the start of the language, history cleared."""
        self._state = self.compiled.dfa.initial
        self._terminated = False
        self._history.clear()

    def fork(self) -> "GrammarMatcher":
        """An independent copy with the same state and history."""
        twin = GrammarMatcher.__new__(GrammarMatcher)
        twin.compiled = self.compiled
        twin._transitions = self._transitions
        twin._accepting = self._accepting
        twin._state = self._state
        twin._terminated = self._terminated
        twin._history = list(self._history)
        return twin

    def _next(self, token_id: int) -> tuple[int, bool]:
        """(next DFA state, terminates) for ``token_id``, or raise TokenRejected."""
        compiled = self.compiled
        if isinstance(token_id, (bool, np.bool_)) or not isinstance(token_id, (int, np.integer)):
            raise TypeError(f"token id must be an int, got {type(token_id).__name__}")
        token_id = int(token_id)
        size = compiled.vocabulary.size
        if not 0 <= token_id < size:
            raise TokenRejected(token_id, f"out of range: the vocabulary has ids 0..{size - 1}")
        if self._terminated:
            raise TokenRejected(token_id, "the matcher has already terminated (EOS was accepted)")
        if token_id in compiled._eos_ids:
            if not self._accepting[self._state]:
                raise TokenRejected(token_id, "EOS before the text is a complete match")
            return self._state, True
        if not compiled._grammar_tokens[token_id]:
            raise TokenRejected(token_id, "special, added or padding tokens are never allowed by a grammar")
        state = self._state
        for byte in compiled.vocabulary.token_bytes[token_id]:
            state = int(self._transitions[state, byte])
            if state == DEAD:
                raise TokenRejected(token_id, f"its bytes {compiled.vocabulary.token_bytes[token_id]!r} "
                                              "cannot continue the text here")
        return state, False
