"""Masks for a whole batch of sequences in one call, optionally on a thread pool.

The expensive part of a mask (a numba walk of the token trie when a lexical context or a
stack shape is met for the first time) releases the GIL, so rows can run in parallel on a
thread pool; the cheap part (a cached row, a few microseconds of Python) holds it. Measured
with the JSON grammar (benchmarks/batch_masks.py, docs/benchmarks.md), the Python part
dominates and two threads are slower than one, so rows are filled in order on the calling
thread unless ``num_threads`` asks for a pool (worth trying for grammars whose masks are
mostly first encounters).

Filling and accepting run under :data:`gc_paused` (automatic garbage collection off, in
every thread, until the call returns), so no row's mask waits for a collection; one that
falls due runs after the call. See :mod:`gramalign.masking.gc_guard`.
"""

from __future__ import annotations

import operator
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Sequence

import numpy as np

from .bitmask import as_numpy_bitmask
from .compiler import CompiledGrammar
from .gc_guard import gc_paused
from .matcher import GrammarMatcher


def _row_index(index) -> int:
    """``index`` as a row number: an integer (numpy's and 0-d integer tensors too), never a
    float, str or bool that int() would quietly turn into some row."""
    if not isinstance(index, (bool, np.bool_)):
        try:
            return operator.index(index)
        except TypeError:
            pass
    raise TypeError(f"row indices must be ints, got {type(index).__name__} {index!r}")


class BatchMatcher:
    """One :class:`GrammarMatcher` per row of a batch, filled and advanced together.

    >>> import gramalign as ga
    >>> vocab = ga.Vocabulary.from_token_bytes([b"a", b"b", b"</s>"], eos_token_ids=[2])
    >>> batch = ga.BatchMatcher(ga.compile(ga.Grammar.from_regex("a+b"), vocab), batch_size=2)
    >>> batch.accept_tokens([0, 0])
    [True, True]
    >>> bitmask = ga.allocate_token_bitmask_numpy(2, vocab.size)
    >>> batch.fill_next_token_bitmask(bitmask)
    >>> batch.accept_tokens([1, 2], indices=[0, 1])   # row 1 cannot end after "a"
    [True, False]
    """

    def __init__(self, compiled: "CompiledGrammar | Sequence[CompiledGrammar]", batch_size: int | None = None, *,
                 num_threads: int | None = None):
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
                                       or batch_size < 1):
            # [compiled] * -1 is an empty list: a negative size would make a batch of no rows
            raise ValueError(f"batch_size must be a positive integer, not {batch_size!r}")
        if num_threads is not None and (isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer))
                                        or num_threads < 1):
            # None is the calling thread alone; 0 threads would mean nothing, not a default
            raise ValueError(f"num_threads must be a positive integer or None, not {num_threads!r}")
        if isinstance(compiled, CompiledGrammar):
            if batch_size is None:
                raise ValueError("batch_size is required with a single compiled grammar")
            compiled = [compiled] * int(batch_size)
        else:
            try:
                compiled = list(compiled)
            except TypeError:
                raise TypeError(f"BatchMatcher needs a CompiledGrammar or a sequence of them (one per row), got "
                                f"{type(compiled).__name__}") from None
            if not compiled:
                raise ValueError("a BatchMatcher needs at least one compiled grammar (one per row), got none")
            wrong = next((c for c in compiled if not isinstance(c, CompiledGrammar)), None)
            if wrong is not None:
                raise TypeError(f"BatchMatcher needs CompiledGrammar rows (from gramalign.compile), got "
                                f"{type(wrong).__name__}")
            if batch_size is not None and batch_size != len(compiled):
                raise ValueError(f"batch_size {batch_size} but {len(compiled)} compiled grammars")
        widths = {c.bitmask_width for c in compiled}
        if len(widths) > 1:
            raise ValueError("all rows' grammars must be compiled for vocabularies of one size")
        self.matchers: list[GrammarMatcher] = [c.matcher() for c in compiled]
        self._num_threads = num_threads
        self._pool: ThreadPoolExecutor | None = None
        self._pool_threads = 0

    def __len__(self) -> int:
        return len(self.matchers)

    def _rows(self, indices: "Sequence[int] | None") -> list[int]:
        if indices is None:
            return list(range(len(self.matchers)))
        rows = [_row_index(i) for i in indices]
        for row in rows:
            if not 0 <= row < len(self.matchers):
                raise IndexError(f"row {row} out of range for a batch of {len(self.matchers)}")
        return rows

    def _threads_for(self, rows: int) -> int:
        return max(1, min(self._num_threads or 1, rows))

    def fill_next_token_bitmask(self, bitmask, indices: "Sequence[int] | None" = None) -> None:
        """Fill row ``i`` of ``bitmask`` from row ``i``'s matcher, for every ``i`` in ``indices``
        (default: all rows); other rows are left as they are."""
        array = as_numpy_bitmask(bitmask)
        if array.shape[0] < len(self.matchers):
            raise ValueError(f"bitmask has {array.shape[0]} rows for a batch of {len(self.matchers)}")
        rows = self._rows(indices)
        threads = self._threads_for(len(rows))
        matchers = self.matchers
        if threads == 1:
            with gc_paused:
                for row in rows:
                    matchers[row].fill_next_token_bitmask(array, row)
            return
        if self._pool is None or self._pool_threads != threads:
            self.close()
            self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gramalign-mask")
            self._pool_threads = threads
        chunks = [rows[start::threads] for start in range(threads)]

        def fill(chunk: list[int]) -> None:
            for row in chunk:
                matchers[row].fill_next_token_bitmask(array, row)

        futures = []
        with gc_paused:  # held by this thread until every worker is done (the collector is process-wide)
            try:
                for chunk in chunks:
                    if chunk:
                        futures.append(self._pool.submit(fill, chunk))
            finally:
                wait(futures)  # all of them, even when one fails, so no worker outlives the guard
        for future in futures:
            future.result()  # re-raises a row's error here

    def accept_tokens(self, token_ids: "Sequence[int]", indices: "Sequence[int] | None" = None) -> list[bool]:
        """Feed ``token_ids[k]`` to row ``indices[k]`` (default: token ``i`` to row ``i``).

        Returns, per token, whether it was accepted; a rejected token leaves its row unchanged.
        Rows that have terminated are skipped (reported as True) when fed their EOS again, so a
        batch whose finished rows keep emitting EOS needs no bookkeeping.
        """
        rows = self._rows(indices)
        if len(rows) != len(token_ids):
            raise ValueError(f"{len(token_ids)} tokens for {len(rows)} rows")
        results = []
        with gc_paused:
            for row, token in zip(rows, np.asarray(token_ids).tolist()):
                matcher = self.matchers[row]
                if matcher.is_terminated() and token in matcher.compiled.vocabulary.eos_token_ids:
                    results.append(True)
                else:
                    results.append(matcher.try_accept_token(token))
        return results

    def is_terminated(self) -> list[bool]:
        """Per row: has it accepted EOS?"""
        return [m.is_terminated() for m in self.matchers]

    def rollback(self, num_steps: int = 1, indices: "Sequence[int] | None" = None) -> None:
        """Undo the last ``num_steps`` tokens of each row in ``indices`` (default: all)."""
        for row in self._rows(indices):
            self.matchers[row].rollback(num_steps)

    def close(self) -> None:
        """Stop the thread pool (it is started again when needed)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)
