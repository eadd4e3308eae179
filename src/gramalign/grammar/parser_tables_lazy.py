"""Parser tables built where the parser goes: the arrays of :class:`.parser_tables.ParserTables`
for a grammar whose rules arrive on demand (a JSON Schema's, ``json_schema.lazy_json_schema_rules``).

A parser state's row (its shifts, gotos, default reduction, candidate set and lexer start) is
written the first time a stack lands in it; until then its ``DEFAULT`` cell holds ``UNBUILT``
and the kernel that lands there stops with ``NEED_STATE`` (the state in ``exposed[1]``, see
:mod:`gramalign.parsing.stacks`), and :meth:`LazyParserTables.build` writes the row. Building
a row asks the LR(0) automaton (:mod:`.lr0_lazy`) for it, which asks the rule source for the
rules it predicts (only alternatives proved to derive text, :mod:`.productive`), and the lazy
lexer (:mod:`.lexer_lazy`) for the start of its candidate set. Arrays grow by reallocation
(``version`` counts the reallocations, so readers that keep arrays know to read them again);
rows once written never change, so everything keyed by state ids stays valid.

The table's columns: terminal ``j`` (the lazy lexer's terminal ``j``) in column ``j``, then
``$END`` (column ``end_column``), then ``DEFAULT``; the columns are reserved ahead and grow by
doubling. JSON Schema grammars have no layout, ignored terminals, lookaheads, word boundaries
or forks; counted strings are marked as their blocks appear.
"""

from __future__ import annotations

import sys
import threading
import weakref
from contextlib import nullcontext

import numpy as np

from ..errors import GramalignError, GrammarError, SchemaCompileError
from .lalr import ACCEPT
from .limits import CompileLimits, applied
from .lalr_kernels import UNBUILT, merge_goto, pack_goto
from .lexer_lazy import GROWTH, LazyLexer
from .lr0_lazy import LazyLR0
from .parser_tables import (COUNTED, COUNTED_BOUNDS, LOOKAHEAD_STATE, MAX_COUNT, NEEDS_TEXT, OWN_LONGEST,
                            mark_counted_block)
from .productive import ProductiveRules

_WORD = (1 << 64) - 1

NEIGHBOURS = 3
"""States one shift or goto away built with a state (in symbol order, shifts first): all of
them for most states; a state of many keys builds the few its masks meet on demand. A
neighbour whose row needs rules not emitted yet (the state after a key's colon predicts the
member's value) waits until a stack lands there: most first masks never read that far, and
emitting the value cost a median schema a tenth of its time to first mask."""


class LazyParserTables:
    """See the module docstring. Readers use the same attribute names as ``ParserTables``."""

    built_on_demand = True  # (what the compile cache asks, see masking/compiler.SEEN_ONCE)

    def __init__(self, source, start: str, *, max_states: int = 1 << 22, limits: "CompileLimits | None" = None):
        """``source``: the rules (``is_terminal``, ``alternatives``) and ``terminals`` (name ->
        Terminal) of the grammar, emitted as they are asked for; its ``errors()``, where it has
        one, a context that puts the errors of emitting them in the source's words. Each build
        runs under ``limits`` (the defaults when None), as a compile does."""
        self.source = source
        self.limits = limits
        self._errors = getattr(source, "errors", nullcontext)
        if hasattr(source, "close"):  # (see Emitter.close) freed with these tables, not by the collector
            weakref.finalize(self, source.close)
        self.rules = ProductiveRules(source)
        self.automaton = LazyLR0(self.rules, start)
        self.lexer = LazyLexer()
        self.max_states = max_states
        self.lock = threading.RLock()
        self.version = 0
        self._column: dict[str, int] = {}
        self._nonterminal: dict[str, int] = {}
        self._gotos = np.zeros((64, 3), dtype=np.int64)  # (source, nonterminal, target) rows, capacity doubling
        self._num_gotos = 0
        self._gotos_packed = -1
        self._counted: list[int] = []
        self.reads_before = False  # no word boundaries in a JSON Schema's terminals (ParserTables' meaning)
        self.has_layout = False
        self._terms_cap = 64
        self._states_cap = 64
        self.action = np.zeros((self._states_cap, self._terms_cap + 2), dtype=np.int32)
        self.action[:, -1] = UNBUILT
        self.candidate_bits = np.zeros((self._states_cap, 1), dtype=np.uint64)
        self.candidate_id = np.zeros(2 * self._states_cap, dtype=np.int32)
        self.candidate_list = [0] * (2 * self._states_cap)  # the same as a list, for Python readers
        self.rule_lhs = np.zeros(64, dtype=np.int32)
        self.rule_len = np.zeros(64, dtype=np.int32)
        # per terminal, capacity arrays (doubling); the public names are views of the terminals there are
        self._term_column = np.zeros(64, dtype=np.int32)
        self._end_effects = np.zeros((64, 5), dtype=np.int32)
        self.term_column = self._term_column[:0]
        self.end_effects = self._end_effects[:0]
        self.layout = np.full(COUNTED_BOUNDS, -1, dtype=np.int32)
        self._lexer_states = 0
        self._lexer_terminals = 0
        # per lexer state, capacity arrays; the public names are views of the states there are
        self._tracks = np.zeros(0, dtype=np.int32)
        self._reach = np.zeros((0, 1), dtype=np.uint64)
        self._done = np.zeros(0, dtype=np.uint8)
        self._accepting = np.zeros(0, dtype=bool)
        self._start_bits = np.zeros((0, 1), dtype=np.uint64)  # the terminals a start tracks
        self._bits_of_start: dict[int, np.ndarray] = {}  # the same by start, as built (fewer words)
        self._unwritten_starts: list[int] = []  # new starts whose start_bits row _lexer_grown writes
        self._lexer_views()
        # the bytes any lexeme of the grammar may start with, known before its starts are built
        self.starts_any = np.asarray(source.first_bytes(), dtype=np.uint8)
        self.goto = pack_goto(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), 1)
        self.initial_state = 0
        with self._errors(), applied(limits):
            productive = self.rules.productive(start)
        if not productive:  # in the source's words where it has them (a schema)
            empty = getattr(source, "empty_language_error", None)
            raise empty() if empty is not None else GrammarError(f"the grammar derives no text: {start!r} "
                                                                 "has no complete derivation")
        self.build(0, gotos=False)

    # ------------------------------------------------------------------ what readers see

    @property
    def end_column(self) -> int:
        return self._terms_cap

    @property
    def table(self):
        return self

    @property
    def num_states(self) -> int:
        return self.automaton.num_states

    @property
    def lr_arrays(self) -> tuple:
        return self.action, self.goto, self.rule_lhs, self.rule_len

    @property
    def lexer_arrays(self) -> tuple:
        lx = self.lexer
        return lx.transitions, lx.accept_bits, lx.alive_bits, lx.is_start, lx.class_byte

    @property
    def glue_arrays(self) -> tuple:
        return (self.term_column, self.candidate_bits, self.candidate_id, self.reach_bits, self.reach_done, self.layout,
                self.end_effects, self.tracks_column)

    def kernel_args(self) -> tuple:
        return self.lexer_arrays, self.lr_arrays, self.glue_arrays

    def terminal_id(self, name: str) -> int:
        return self._column[name] if name != "$END" else self.end_column

    # ------------------------------------------------------------------ growth

    def build(self, state: int, gotos: bool = True) -> None:
        """Write parser state ``state``'s row (and whatever it needs: rules, terminals, its
        lexer start), and the rows of up to :data:`NEIGHBOURS` states one shift or goto away
        (one shift away only where ``gotos`` is False: the initial state's gotos follow a
        whole value, which a first mask rarely reads to), under the lock. A mask looks a
        token ahead, a few lexemes, so near neighbours are built with the state: a kernel
        stopped by an unbuilt state (NEED_STATE) starts again from scratch; but a state of
        a hundred keys would build a hundred states, for the few keys its tokens complete
        (MaskBench walks, three against all: p99 and p99.9 5-14% lower, the median alike;
        none at all made the p90 a fifth higher). An error
        (a part of the schema that cannot be compiled) is raised for ``state`` only, leaving
        it unbuilt; a neighbour that fails stays unbuilt until a stack lands there. The
        arrays every row shares (the packed gotos, the per-lexer-state arrays) are brought
        up to date once, after the last row."""
        with self.lock, self._errors(), applied(self.limits):
            try:
                if self.action[state, -1] == UNBUILT:
                    self._build(state)
                row = self.automaton.row(state)
                for target in (*row.shifts.values(), *(row.gotos.values() if gotos else ()))[:NEIGHBOURS]:
                    if self.action[target, -1] == UNBUILT and not self.automaton.needs_rules(target):
                        try:
                            self._build(target)
                        except GramalignError:
                            pass
            finally:
                self._lexer_grown()
                if self._gotos_packed != self._num_gotos:
                    self._pack_gotos()
                self.version += 1  # rows are written: readers' copies of the arrays are stale

    def _build(self, state: int) -> None:
        """Write parser state ``state``'s row (the lock is held; :meth:`build` brings the
        shared arrays up to date after). What can fail (emitting its rules, its terminals,
        its lexer start) comes first; the row is written last, its DEFAULT cell (which says
        "built") at the very end."""
        try:
            row = self.automaton.row(state)
        except RecursionError:  # the evaluator recurses once per nested subschema
            raise SchemaCompileError(f"the schema nests too deeply (Python's recursion limit is "
                                     f"{sys.getrecursionlimit()})") from None
        if row.conflict:
            raise GrammarError("the grammar is not LR(0) here (a state can reduce and shift, or reduce two "
                               "ways): it needs the eager LALR(1) table")
        if self.automaton.num_states > self.max_states:
            raise GrammarError(f"the parser needs more than {self.max_states} states")
        columns = [self._terminal_column(name) for name in row.shifts]
        start = self.lexer.add_start(columns)
        self._reserve(self.automaton.num_states)
        if row.default >= 0:
            self._rule(row.default)
        bits = self._bits_of_start.get(start)
        if bits is None:  # a new start: its bits go to start_bits when build() brings those up to date
            mask = 0
            for column in columns:
                mask |= 1 << column
            bits = self._bits_of_start[start] = np.array(
                [(mask >> (64 * w)) & _WORD for w in range(self.lexer.words)], dtype=np.uint64)
            self._unwritten_starts.append(start)
        # nothing below fails: the row
        self.candidate_bits[state, :bits.shape[0]] = bits
        self.candidate_id[state] = self.candidate_id[state + self._states_cap] = start
        self.candidate_list[state] = self.candidate_list[state + self._states_cap] = start
        if row.gotos:
            entries = [(state, self._nonterminal_id(name), target) for name, target in row.gotos.items()]
            if self._num_gotos + len(entries) > self._gotos.shape[0]:
                self._gotos = _grown(self._gotos, max(2 * self._gotos.shape[0], self._num_gotos + len(entries)))
            self._gotos[self._num_gotos:self._num_gotos + len(entries)] = entries
            self._num_gotos += len(entries)
        action = self.action  # (an unbuilt row is zero but for its DEFAULT cell)
        for column, target in zip(columns, row.shifts.values()):
            action[state, column] = target + 1
        if row.accepts:
            action[state, self.end_column] = ACCEPT
        action[state, -1] = -(row.default + 1) if row.default >= 0 else 0

    def _rule(self, r: int) -> None:
        if r >= self.rule_lhs.shape[0]:
            size = max(r + 1, 2 * self.rule_lhs.shape[0])
            self.rule_lhs = _grown(self.rule_lhs, size)
            self.rule_len = _grown(self.rule_len, size)
            self.version += 1
        lhs, rhs = self.automaton.rules[r]
        self.rule_lhs[r] = self._nonterminal_id(lhs)
        self.rule_len[r] = len(rhs)

    def _nonterminal_id(self, name: str) -> int:
        found = self._nonterminal.get(name)
        if found is None:
            found = self._nonterminal[name] = len(self._nonterminal)
        return found

    def _pack_gotos(self) -> None:
        """The packed goto table with the entries added since the last, over every state
        there is room for (the first call: none yet)."""
        new = self._gotos[max(0, self._gotos_packed):self._num_gotos]
        self._gotos_packed = self._num_gotos
        self.goto = merge_goto(self.goto, new[:, 0], new[:, 1], new[:, 2], self._states_cap)
        self.version += 1

    def _terminal_column(self, name: str) -> int:
        found = self._column.get(name)
        if found is not None:
            return found
        terminal = self.source.terminals[name]
        if terminal.lookahead is not None or terminal.ends_in_word is not None:
            raise GrammarError(f"terminal {name}: lookaheads and word boundaries need the eager parser tables")
        k = self.lexer.add_terminal(terminal)
        self._column[name] = k
        if k >= self._terms_cap:
            self._terms_cap *= 2
            grown = np.zeros((self.action.shape[0], self._terms_cap + 2), dtype=np.int32)
            grown[:, :k] = self.action[:, :k]
            grown[:, -2] = self.action[:, -2]
            grown[:, -1] = self.action[:, -1]
            self.action = grown
            self.version += 1
        if k >= self._term_column.shape[0]:
            self._term_column = _grown(self._term_column, 2 * self._term_column.shape[0])
            self._end_effects = _grown(self._end_effects, 2 * self._end_effects.shape[0])
        self._term_column[k] = k
        effects = self._end_effects[k]
        effects[LOOKAHEAD_STATE] = effects[OWN_LONGEST] = -1
        effects[NEEDS_TEXT] = terminal.needs_text_after
        # new views (new objects: readers that keep them see that terminals came, see version)
        self.term_column = self._term_column[:k + 1]
        self.end_effects = self._end_effects[:k + 1]
        words = self.lexer.words
        if words > self.candidate_bits.shape[1]:
            wider = np.zeros((self.candidate_bits.shape[0], words), dtype=np.uint64)
            wider[:, :self.candidate_bits.shape[1]] = self.candidate_bits
            self.candidate_bits = wider
        if terminal.length is not None:
            fewest, most = terminal.length
            if not (0 <= fewest <= MAX_COUNT and -1 <= most <= MAX_COUNT):
                raise GrammarError(f"terminal {terminal.name}: length bounds {terminal.length} outside "
                                   f"0..{MAX_COUNT} (the most may be -1: no bound)")
            self._counted.append(k)
            self.layout = np.append(self.layout, np.array([fewest, most], dtype=np.int32))
        self.version += 1
        return k

    def _reserve(self, states: int) -> None:
        """Room for ``states`` parser states; new states are UNBUILT."""
        if states <= self._states_cap:
            return
        cap = self._states_cap
        while cap < states:
            cap *= 2
        action = np.zeros((cap, self.action.shape[1]), dtype=np.int32)
        action[:self._states_cap] = self.action
        action[self._states_cap:, -1] = UNBUILT
        bits = np.zeros((cap, self.candidate_bits.shape[1]), dtype=np.uint64)
        bits[:self._states_cap] = self.candidate_bits
        ids = np.zeros(2 * cap, dtype=np.int32)
        ids[:self._states_cap] = self.candidate_id[:self._states_cap]
        ids[cap:cap + self._states_cap] = self.candidate_id[self._states_cap:]
        self.action, self.candidate_bits, self.candidate_id = action, bits, ids
        self.candidate_list = ids.tolist()
        self._states_cap = cap
        self._pack_gotos()
        self.version += 1

    def _lexer_views(self) -> None:
        n = self._lexer_states
        self.tracks_column, self.reach_bits, self.reach_done = self._tracks[:n], self._reach[:n], self._done[:n]
        self.accepting, self.start_bits = self._accepting[:n], self._start_bits[:n]

    def _lexer_grown(self) -> None:
        """The per-lexer-state arrays, for the states the lexer has now (capacity growing as the
        lexer's, by ``lexer_lazy.GROWTH``; a growth copies the rows there are)."""
        lexer = self.lexer
        n, old, words = lexer.num_states, self._lexer_states, lexer.words
        if n == old and self._reach.shape[1] == words:
            return
        if n > self._tracks.shape[0] or words != self._reach.shape[1]:
            cap = self._tracks.shape[0]
            if n > cap:
                cap = max(n, GROWTH * cap, 64)
            tracks = np.zeros(cap, dtype=np.int32)
            tracks[:old] = self._tracks[:old]
            reach = np.zeros((cap, words), dtype=np.uint64)
            done = np.zeros(cap, dtype=np.uint8)
            if words == self._reach.shape[1]:
                reach[:old] = self._reach[:old]
                done[:old] = self._done[:old]  # else cached reaches name fewer terminals: again
            accepting = np.zeros(cap, dtype=bool)
            accepting[:old] = self._accepting[:old]
            starts = np.zeros((cap, words), dtype=np.uint64)
            starts[:old, :self._start_bits.shape[1]] = self._start_bits[:old]
            self._tracks, self._reach, self._done, self._accepting, self._start_bits = (
                tracks, reach, done, accepting, starts)
        self._accepting[old:n] = np.any(lexer.accept_bits[old:n] != 0, axis=1)
        for start in self._unwritten_starts:
            bits = self._bits_of_start[start]
            self._start_bits[start, :bits.shape[0]] = bits
        self._unwritten_starts.clear()
        if self._counted:  # only the counted terminals some new state can still become
            alive = np.bitwise_or.reduce(lexer.alive_bits[old:n], axis=0) if n > old else None
            for j, k in enumerate(self._counted):
                if alive is not None and (int(alive[k >> 6]) >> (k & 63)) & 1:
                    self._mark_counted(k, COUNTED + 2 * j, self._tracks, old)
        if len(lexer.terminals) != self._lexer_terminals:  # finer byte classes with new terminals
            lexer.byte_class, lexer.class_byte = lexer.byte_classes()
            self._lexer_terminals = len(lexer.terminals)
        self._lexer_states = n
        self._lexer_views()
        self.version += 1

    def _mark_counted(self, k: int, kind: int, tracks: np.ndarray, old: int) -> None:
        """As ``parser_tables._mark_counted``, for the states added since ``old``."""
        lexer = self.lexer
        terminal, first = lexer.terminals[k], lexer.block_start[k]
        dfa = terminal.dfa
        word, bit = k >> 6, np.uint64(1) << np.uint64(k & 63)
        alive = old + np.flatnonzero((lexer.alive_bits[old:lexer.num_states, word] & bit) != 0)
        shared = alive[(lexer.is_start[alive] == 0) & ((alive < first) | (alive >= first + dfa.num_states))]
        if shared.size:
            raise GrammarError(f"the counted string terminal {terminal.name} overlaps another terminal after its "
                               "opening quote; its length cannot be counted")
        if first >= old:  # else its block is marked already (or not entered yet)
            mark_counted_block(terminal, first, kind, tracks)


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    grown = np.zeros((size,) + array.shape[1:], dtype=array.dtype)
    grown[:array.shape[0]] = array
    return grown
