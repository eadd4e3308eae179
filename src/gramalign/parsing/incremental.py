"""The incremental parser: bytes in, "can this still become a sentence?" out.

The Python face of the kernels of :mod:`.hypotheses`, used by matchers and by tests as the
slow, byte-by-byte oracle of the masks.
"""

from __future__ import annotations

import numpy as np

from ..grammar.parser_tables import ParserTables
from .hypotheses import advance_bytes, hypotheses_accept_end
from .stacks import StackPool
from .state import (BRACKETS, COLUMN, HYPOTHESES_FULL, HYPOTHESIS_FIELDS, INITIAL_HYPOTHESES, LEXEME, OK,
                    SHADOWS_FULL, STACK, narrowest, widen)


class IncrementalParser:
    """Byte-level parser state for one sequence: feed bytes, ask whether it can end.

    States are immutable int32 arrays of hypotheses; :meth:`feed` returns a new one (or
    None when the bytes are rejected) and never changes the old one, so callers keep a
    history for rollback. Nodes of rejected or rolled-back states are garbage in the pool;
    :meth:`truncate` reclaims the pool tail after a rollback.
    """

    def __init__(self, tables: ParserTables, pool: StackPool | None = None):
        self.tables = tables
        self.pool = pool if pool is not None else StackPool(tables.table.initial_state)
        self.pool.on_need = getattr(tables, "build", None)  # lazy tables build a state where a stack lands
        self._bind()
        self.rows = INITIAL_HYPOTHESES  # output rows of feed, doubled when text needs more

    def _bind(self) -> None:
        """Read the tables' arrays (again, after lazy tables grew: see ``version``)."""
        self._version = self.tables.version
        self._args = self.tables.kernel_args()
        self._accepting = self.tables.accepting

    def initial_state(self) -> np.ndarray:
        hyp = np.full((1, HYPOTHESIS_FIELDS), -1, dtype=np.int32)
        hyp[0, STACK] = 0
        hyp[0, LEXEME] = self.tables.candidate_id[self.tables.table.initial_state]
        hyp[0, BRACKETS] = 0
        hyp[0, COLUMN] = 0
        return hyp

    def fork(self) -> "IncrementalParser":
        return IncrementalParser(self.tables, self.pool.copy())

    def feed(self, hyps: np.ndarray, data: bytes) -> "tuple[np.ndarray | None, int]":
        """``(new state, pool size before)`` after ``data``, or ``(None, offset of the failing byte)``."""
        array = np.frombuffer(data, dtype=np.uint8)
        rows = max(self.rows, hyps.shape[0])
        while True:
            out = np.empty((rows, hyps.shape[1]), dtype=np.int32)
            pool = self.pool
            if self._version != self.tables.version:
                self._bind()
            count, used, status, offset = advance_bytes(*self._args, pool.arrays(), hyps, array, pool.used, out)
            if status == OK:
                break
            if status == HYPOTHESES_FULL:
                rows *= 2
            elif status == SHADOWS_FULL:
                hyps = widen(hyps)
            else:
                pool.grow(status)
        self.rows = rows
        if count == 0:
            return None, int(offset)
        before = pool.used
        pool.used = int(used)
        return narrowest(out[:count]), before

    def truncate(self, used: int) -> None:
        """Forget pool nodes from ``used`` on (they belong to rolled-back states only)."""
        pool = self.pool
        pool.used = used
        if used <= pool.memo_top:
            pool.forget()  # node ids from ``used`` on will be reused for other stacks

    def can_end(self, hyps: np.ndarray) -> bool:
        """Is the text so far a complete sentence?"""
        if self._version != self.tables.version:
            self._bind()
        is_start = self.tables.lexer.is_start
        if hyps.shape[0] == 1:  # (every fill asks: one hypothesis is the common case)
            q = hyps[0, LEXEME]
            if not (is_start[q] or self._accepting[q]):
                return False
        elif not any(is_start[q] or self._accepting[q] for q in hyps[:, LEXEME].tolist()):
            return False  # mid-lexeme, and no terminal accepts it yet
        while True:  # every fill asks: the loop without until_it_fits' closure
            if self._version != self.tables.version:
                self._bind()
            result, status = hypotheses_accept_end(*self._args, self.pool.arrays(), hyps, self.tables.end_column)
            if status == OK:
                return bool(result)
            self.pool.grow(status)

    def accepts(self, data: bytes) -> bool:
        """Is ``data`` a complete sentence? (From the start state; a convenience for tests.)"""
        state, _ = self.feed(self.initial_state(), data)
        return state is not None and self.can_end(state)

    def is_prefix(self, data: bytes) -> bool:
        """Can ``data`` be extended to a sentence?"""
        state, _ = self.feed(self.initial_state(), data)
        return state is not None
