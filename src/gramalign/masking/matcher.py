"""GrammarMatcher: the per-sequence state machine that says which token may come next."""

from __future__ import annotations

import functools
import threading
from typing import Sequence

import numpy as np

from ..errors import ConcurrentUseError, StringRejected, TokenRejected
from ..grammar.automata.dfa import DEAD
from .bitmask import as_numpy_bitmask, unpack_bitmask_row
from .compiler import CompiledGrammar

_INT32 = np.dtype(np.int32)


class _RegexCursor:
    """Walks a single-regex grammar: the state is a DFA state number."""

    def __init__(self, compiled: CompiledGrammar):
        self.index = compiled.index
        self.transitions = compiled.dfa.transitions
        self.accepting = compiled.dfa.accepting

    def initial(self) -> int:
        return self.index.dfa.initial

    def advance(self, state: int, data: bytes) -> "tuple[int | None, int]":
        """(state after ``data`` or None, offset of the first rejected byte)."""
        table = self.transitions
        for offset, byte in enumerate(data):
            state = int(table[state, byte])
            if state == DEAD:
                return None, offset
        if not self.index.live[state]:
            return None, len(data)  # completable only by bytes no token spells
        return state, 0

    def can_end(self, state: int) -> bool:
        return bool(self.accepting[state])

    def fill(self, state: int, row: np.ndarray) -> None:
        row[:] = self.index.mask(state)

    def mark(self) -> int:
        return 0

    def release(self, mark: int) -> None:
        pass

    def fork(self) -> "_RegexCursor":
        return self  # stateless


class _ParserCursor:
    """Walks a context-free grammar: the state is an array of parser hypotheses.

    Owns the stack pool of its matcher; ``mark``/``release`` let a rollback reclaim the
    pool nodes that only the undone steps used.
    """

    def __init__(self, compiled: CompiledGrammar, parser=None):
        from ..parsing import IncrementalParser

        self.store = compiled.store
        self.parser = parser if parser is not None else IncrementalParser(self.store.tables)

    def initial(self) -> np.ndarray:
        return self.parser.initial_state()

    def advance(self, state: np.ndarray, data: bytes) -> "tuple[np.ndarray | None, int]":
        result, offset_or_mark = self.parser.feed(state, data)
        return result, (0 if result is not None else offset_or_mark)

    def can_end(self, state: np.ndarray) -> bool:
        return self.parser.can_end(state)

    def fill(self, state: np.ndarray, row: np.ndarray) -> None:
        self.store.fill(self.parser, state, row)

    def mark(self) -> int:
        return self.parser.pool.used

    def release(self, mark: int) -> None:
        self.parser.truncate(mark)

    def fork(self) -> "_ParserCursor":
        return _ParserCursor.__new__(_ParserCursor)._init_fork(self)

    def _init_fork(self, other: "_ParserCursor") -> "_ParserCursor":
        self.store = other.store
        self.parser = other.parser.fork()
        return self


def _exclusive(method):
    """Run ``method`` holding the matcher's guard (see :class:`GrammarMatcher`)."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        if not self._guard.acquire(False):
            self._concurrent_use(method.__name__.lstrip("_"))
        try:
            return method(self, *args, **kwargs)
        finally:
            self._guard.release()

    return guarded


class GrammarMatcher:
    """Tracks one sequence through a compiled grammar.

    Every accepted token pushes the previous state on a history stack, so ``rollback(n)``
    is O(n) and ``fork()`` copies only that stack (and, for context-free grammars, the
    parser's node pool).

    Threads: a :class:`CompiledGrammar` is thread-safe and meant to be shared; a matcher is
    not. Use each matcher from one thread at a time (handing it from thread to thread between
    calls is fine, as :class:`BatchMatcher`'s pool does); ``fork()`` gives another thread its
    own copy, and several threads may fork one matcher at once. Overlapping calls are
    detected, not serialised: every method that reads or changes the state (fills included:
    they use the parser's scratch pool) holds a non-blocking re-entrant lock, so a second
    thread entering while one is inside raises
    :class:`ConcurrentUseError` instead of corrupting the state. The check is atomic (the
    lock's acquire) and costs well under a microsecond per call; it catches every call that
    overlaps another, not calls that alternate between threads. The plain queries
    ``is_terminated``, ``can_terminate`` and ``num_accepted_tokens`` are not checked.

    >>> import gramalign as ga
    >>> vocab = ga.Vocabulary.from_token_bytes([b"1", b"2", b"+", b"</s>"], eos_token_ids=[3])
    >>> m = ga.compile(ga.Grammar.from_regex(r"[0-9]+\\+[0-9]+"), vocab).matcher()
    >>> m.accept_string("12+"); m.allowed_token_ids().tolist()
    [0, 1]
    >>> m.accept_token(1); m.can_terminate()
    True
    """

    def __init__(self, compiled: CompiledGrammar):
        self.compiled = compiled
        self._cursor = _RegexCursor(compiled) if compiled.index is not None else _ParserCursor(compiled)
        self._state = self._cursor.initial()
        self._terminated = False
        self._history: list[tuple[object, bool, int]] = []
        self._guard = threading.RLock()  # re-entrant: methods call each other
        self._fork_gate = threading.Lock()  # forks only read: threads forking one matcher take turns
        self._last_row: "tuple | None" = None  # (bitmask, index, its row as uint32, its shape) of the last fill

    def _concurrent_use(self, method: str) -> None:
        raise ConcurrentUseError(
            f"GrammarMatcher.{method} was called while another thread is using this matcher: a matcher follows "
            "one sequence from one thread at a time (fork() it to give another thread its own copy; the "
            "CompiledGrammar is the part to share)")

    # -- queries -----------------------------------------------------------------------

    def is_terminated(self) -> bool:
        """True once EOS has been accepted: nothing but a rollback can follow."""
        return self._terminated

    def can_terminate(self) -> bool:
        """True when the text so far is a complete string of the language (EOS is allowed)."""
        return not self._terminated and self._cursor.can_end(self._state)

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
        compiled = self.compiled
        last = self._last_row
        if last is not None and last[0] is bitmask and last[1] == index and bitmask.shape == last[3] \
                and bitmask.dtype is _INT32:
            row = last[2]  # the caller's array again: its row was checked and viewed last time
        else:
            if type(bitmask) is np.ndarray and bitmask.dtype is _INT32 and bitmask.ndim == 2:
                array = bitmask  # the common case, checked cheaply
            else:
                array = as_numpy_bitmask(bitmask)
            if array.shape[1] != compiled.bitmask_width:
                raise ValueError(
                    f"bitmask rows have {array.shape[1]} words but the vocabulary of size "
                    f"{compiled.vocabulary.size} needs {compiled.bitmask_width}"
                )
            if not -array.shape[0] <= index < array.shape[0]:
                raise IndexError(f"bitmask row {index} out of range for batch size {array.shape[0]}")
            row = array[index].view(np.uint32)
            # (a numpy array keeps its buffer while a view of it lives, and its shape and dtype
            # are checked again; a tensor's numpy view is made anew each call: not remembered)
            self._last_row = (bitmask, index, row, bitmask.shape) if array is bitmask else None
        if not self._guard.acquire(False):
            self._concurrent_use("fill_next_token_bitmask")
        try:
            if self._terminated:
                row[:] = compiled.eos_words
                return
            self._cursor.fill(self._state, row)
            if self._cursor.can_end(self._state):
                row |= compiled.eos_words
        finally:
            self._guard.release()

    def allowed_token_ids(self) -> np.ndarray:
        """The ids allowed next, as a sorted int array (a convenience; the bitmask is faster)."""
        words = np.empty((1, self.compiled.bitmask_width), dtype=np.int32)
        self.fill_next_token_bitmask(words, 0)
        return np.flatnonzero(unpack_bitmask_row(words[0], self.compiled.vocabulary.size))

    @_exclusive
    def forced_bytes(self, max_bytes: int = 256) -> bytes:
        """The bytes every continuation starts with, as far as the grammar forces them.

        Empty when the text may end here or more than one next byte is possible. Bytes are
        judged through the vocabulary (a byte no allowed token starts with is not a
        possibility), and the result is cut at a whole UTF-8 character. The state is unchanged;
        use it to write forced text without asking the model (see :mod:`gramalign.samplers.jump_forward`).
        """
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) or max_bytes < 0:
            raise ValueError(f"max_bytes must be a non-negative int, not {max_bytes!r}")
        if self._terminated:
            return b""
        vocabulary = self.compiled.vocabulary
        probe = self.fork()
        words = np.empty((1, self.compiled.bitmask_width), dtype=np.int32)
        row = words[0].view(np.uint32)
        forced = bytearray()
        while len(forced) < max_bytes and not probe.can_terminate():
            probe.fill_next_token_bitmask(words, 0)
            # The first byte of any allowed token is the candidate; it is forced when no
            # allowed token starts otherwise (one AND, no scan of the vocabulary).
            nonzero = np.flatnonzero(row)
            if nonzero.size == 0:
                break
            word = int(nonzero[0])
            token = word * 32 + (int(row[word]) & -int(row[word])).bit_length() - 1
            byte = int(vocabulary.first_bytes[token])
            if byte < 0 or np.any(row & ~vocabulary.first_byte_masks[byte]):
                break
            probe.accept_string(bytes([byte]))
            forced.append(byte)
        return _whole_characters(bytes(forced))

    # -- transitions -------------------------------------------------------------------

    def accept_token(self, token_id: int) -> None:
        """Advance by one token; raises :class:`TokenRejected` and keeps the state if it is forbidden."""
        if not self._guard.acquire(False):
            self._concurrent_use("accept_token")
        try:
            mark = self._cursor.mark()
            next_state, terminates = self._next(token_id)
            self._history.append((self._state, self._terminated, mark))
            self._state = next_state
            self._terminated = terminates
        finally:
            self._guard.release()

    def try_accept_token(self, token_id: int) -> bool:
        """Like :meth:`accept_token` but returns False instead of raising."""
        try:
            self.accept_token(token_id)
        except TokenRejected:
            return False
        return True

    @_exclusive
    def is_token_allowed(self, token_id: int) -> bool:
        """True when ``accept_token(token_id)`` would succeed; never changes the state."""
        mark = self._cursor.mark()
        try:
            self._next(token_id)
        except TokenRejected:
            return False
        finally:
            self._cursor.release(mark)
        return True

    @_exclusive
    def validate_draft(self, draft_tokens: "Sequence[int]", bitmask=None, *, row_offset: int = 0) -> int:
        """How many leading tokens of ``draft_tokens`` the grammar accepts; the state is unchanged.

        With ``bitmask``, row ``row_offset + i`` receives the mask before draft token ``i`` for
        ``i = 0 .. n`` (``n`` the returned count): the masks speculative sampling needs at every
        draft position, the last one being the bonus position (or the first rejected one). Later
        rows are not written.
        """
        accepted = 0
        try:
            for token_id in draft_tokens:
                if bitmask is not None:
                    self.fill_next_token_bitmask(bitmask, row_offset + accepted)
                if not self.try_accept_token(token_id):
                    return accepted
                accepted += 1
            if bitmask is not None:
                self.fill_next_token_bitmask(bitmask, row_offset + accepted)
            return accepted
        finally:
            self.rollback(accepted)

    @_exclusive
    def validate_draft_tree(self, draft_tokens: "Sequence[int]", parents: "Sequence[int]", bitmask=None, *,
                            row_offset: int = 0) -> np.ndarray:
        """Which nodes of a draft tree the grammar accepts; the state is unchanged.

        Node ``i`` holds ``draft_tokens[i]`` and follows node ``parents[i]`` (``-1``: the current
        state); parents come before their children. A node is accepted when its parent is and its
        token is allowed there. With ``bitmask``, row ``row_offset`` receives the mask of the
        current state and row ``row_offset + 1 + i`` the mask after each accepted node ``i`` (the
        distribution its children are checked against); rows of rejected nodes are not written.
        Returns a bool array, one entry per node.
        """
        count = len(draft_tokens)
        if len(parents) != count:
            raise ValueError(f"{count} draft tokens but {len(parents)} parent indices")
        children: list[list[int]] = [[] for _ in range(count + 1)]  # slot 0 is the root
        for node, parent in enumerate(parents):
            parent = int(parent)
            if not -1 <= parent < node:
                raise ValueError(f"draft node {node} has parent {parent}: parents must be -1 or an earlier node")
            children[parent + 1].append(node)
        accepted = np.zeros(count, dtype=bool)
        if bitmask is not None:
            self.fill_next_token_bitmask(bitmask, row_offset)
        # Depth-first, so each step is one accept and one rollback: O(nodes) matcher steps.
        start = len(self._history)
        pending = [(node, False) for node in reversed(children[0])]
        try:
            while pending:
                node, leaving = pending.pop()
                if leaving:
                    self.rollback(1)
                    continue
                if not self.try_accept_token(draft_tokens[node]):
                    continue
                accepted[node] = True
                if bitmask is not None:
                    self.fill_next_token_bitmask(bitmask, row_offset + 1 + node)
                pending.append((node, True))
                pending.extend((child, False) for child in reversed(children[node + 1]))
        finally:
            self.rollback(len(self._history) - start)
        return accepted

    @_exclusive
    def accept_string(self, text: "str | bytes") -> None:
        """Advance by raw text (not a token); raises :class:`StringRejected` and keeps the state if forbidden.

        The whole string counts as one step for :meth:`rollback`.
        """
        if isinstance(text, str):
            data = text.encode("utf-8")
        elif isinstance(text, (bytes, bytearray, memoryview)):
            data = bytes(text)
        else:  # bytes(5) would be five zero bytes, not an error
            raise TypeError(f"accept_string needs str or bytes, got {type(text).__name__}")
        if self._terminated:
            raise StringRejected(text, 0, "the matcher has already terminated")
        mark = self._cursor.mark()
        state, offset = self._cursor.advance(self._state, data)
        if state is None:
            self._cursor.release(mark)
            raise StringRejected(text, offset, "no string of the language continues this way")
        self._history.append((self._state, self._terminated, mark))
        self._state = state

    @_exclusive
    def rollback(self, num_steps: int = 1) -> None:
        """Undo the last ``num_steps`` accepted tokens (or strings)."""
        if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)):
            raise TypeError(f"num_steps must be an int, got {type(num_steps).__name__}")
        num_steps = int(num_steps)
        if num_steps < 0 or num_steps > len(self._history):
            raise ValueError(f"cannot roll back {num_steps} steps: only {len(self._history)} were accepted")
        if num_steps == 0:
            return
        self._state, self._terminated, mark = self._history[-num_steps]
        del self._history[-num_steps:]
        self._cursor.release(mark)

    @_exclusive
    def reset(self) -> None:
        """Back to the start of the language, history cleared."""
        if self._history:
            self._cursor.release(self._history[0][2])
        self._state = self._cursor.initial()
        self._terminated = False
        self._history.clear()

    def fork(self) -> "GrammarMatcher":
        """An independent copy with the same state and history.

        Several threads may fork one matcher at once (they wait for each other: a fork only
        reads); a fork overlapping a call that changes the state raises
        :class:`ConcurrentUseError` like any other overlap.
        """
        with self._fork_gate:
            return self._fork()

    @_exclusive
    def _fork(self) -> "GrammarMatcher":
        twin = GrammarMatcher.__new__(GrammarMatcher)
        twin.compiled = self.compiled
        twin._cursor = self._cursor.fork()
        twin._state = self._state
        twin._terminated = self._terminated
        twin._history = list(self._history)
        twin._guard = threading.RLock()
        twin._fork_gate = threading.Lock()
        twin._last_row = None
        return twin

    def _next(self, token_id: int) -> tuple[object, bool]:
        """(next state, terminates) for ``token_id``, or raise TokenRejected (pool released)."""
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
            if not self._cursor.can_end(self._state):
                raise TokenRejected(token_id, "EOS before the text is a complete match")
            return self._state, True
        if not compiled._grammar_tokens[token_id]:
            raise TokenRejected(token_id, "special, added or padding tokens are never allowed by a grammar")
        mark = self._cursor.mark()
        data = compiled.vocabulary.token_bytes[token_id]
        state, _ = self._cursor.advance(self._state, data)
        if state is None:
            self._cursor.release(mark)
            raise TokenRejected(token_id, f"its bytes {data!r} cannot continue the text here")
        return state, False


def _whole_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 character cut at its end."""
    for back in range(1, min(4, len(data)) + 1):
        lead = data[-back]
        if lead < 0x80:
            return data  # ASCII: nothing is cut
        if lead >= 0xC0:  # the lead byte of the last character
            length = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
            return data if back >= length else data[:-back]
    return data
