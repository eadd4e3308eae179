"""Constrained infilling: can fixed pieces with gaps between them still become a word?

:class:`InfillChecker` answers for one grammar, with one of three statuses:

* ``"impossible"``: proved. The grammar's byte language is over-approximated by the CFG
  over every lexing (:mod:`gramalign.grammar.infill_search`), so no filling of the gaps
  gives a text any lexer split could parse.
* ``"completable"``: with a witness ``text`` (the gaps filled) that gramalign's own parser
  accepts (for a one-regex grammar, its DFA: then the check is exact).
* ``"undecided"``: neither, with a ``reason`` (the time budget ran out, the parser refused
  the candidate witnesses). Never a silent yes or no. An indentation layout (Python) is
  checked through a layout-free grammar that holds it (``infill_search.without_layout``).

:meth:`InfillChecker.check_tokens` reads a diffusion model's sequence: masked positions are
gaps, and after the first EOS only EOS (or a mask, which must then become EOS) may follow.

>>> import gramalign as ga
>>> checker = ga.InfillChecker(ga.Grammar.builtin("json"))
>>> checker.check([b'{"a": ', ga.GAP, b'}']).status
'completable'
>>> checker.check([b'{"a": ', ga.GAP, b'}']).text
b'{"a": 0}'
>>> checker.check([b'[1, ', ga.GAP, b'}']).status
'impossible'
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..errors import InfillError
from ..grammar.grammar import Grammar
from ..grammar.infill import GAP, Budget, BudgetExhausted, DFAPaths, PartialText, partial_text, regex_fillers
from ..grammar.infill_search import GrammarInfill
from ..grammar.limits import CompileLimits, applied
from ..grammar.parser_tables import ParserTables, build_parser_tables
from ..parsing.incremental import IncrementalParser
from ..tokens.vocabulary import Vocabulary
from .compiler import CompiledGrammar
from .gc_guard import gc_paused

__all__ = ["GAP", "InfillChecker", "InfillResult"]

STATUSES = ("impossible", "completable", "undecided")


@dataclass(frozen=True)
class InfillResult:
    """The answer of one check. ``text`` and ``fillers`` (the bytes put into each gap, in
    order; a trailing one where ``end=False``) are set exactly when ``status`` is
    ``"completable"``; ``reason`` says why an ``"undecided"`` is one."""

    status: str
    text: "bytes | None" = None
    fillers: "tuple[bytes, ...] | None" = None
    reason: str = ""
    seconds: float = 0.0

    @property
    def impossible(self) -> bool:
        return self.status == "impossible"

    @property
    def completable(self) -> bool:
        return self.status == "completable"


def _margin(piece: bytes) -> bytes:
    """The spaces and tabs that start the last line of ``piece``."""
    line = piece[piece.rfind(b"\n") + 1:]
    return line[:len(line) - len(line.lstrip(b" \t"))]


class InfillChecker:
    """The infilling check of one grammar (see the module docstring).

    ``grammar_or_compiled`` is a :class:`~gramalign.Grammar` or a
    :class:`~gramalign.CompiledGrammar`; ``budget_s`` bounds one check's wall time (None:
    no bound), past which it is ``undecided``; ``limits`` bounds building the parser tables.
    ``counts`` tallies the statuses returned so far. One checker may be shared by threads
    (checks run one at a time).
    """

    def __init__(self, grammar_or_compiled, *, budget_s: "float | None" = 1.0,
                 limits: "CompileLimits | None" = None):
        if isinstance(grammar_or_compiled, CompiledGrammar):
            grammar = grammar_or_compiled.grammar
            tables = grammar_or_compiled.store.tables if grammar_or_compiled.store is not None else None
            if not isinstance(tables, ParserTables):
                tables = None  # (lazily built: the check reads the whole grammar)
        elif isinstance(grammar_or_compiled, Grammar):
            grammar, tables = grammar_or_compiled, None
        else:
            raise InfillError("InfillChecker needs a gramalign.Grammar or CompiledGrammar, not "
                              f"{type(grammar_or_compiled).__name__}")
        if budget_s is not None and (isinstance(budget_s, bool) or not isinstance(budget_s, (int, float))
                                     or not math.isfinite(budget_s) or budget_s <= 0):
            raise InfillError(f"budget_s must be a positive number of seconds or None, not {budget_s!r}")
        with applied(limits):
            grammar = grammar.whole()  # (a JSON Schema's rules all emitted, errors at once)
        self.grammar = grammar
        self.budget_s = budget_s
        self.counts: Counter = Counter()
        self._lock = threading.Lock()
        terminal = grammar.single_terminal()
        self._regex = DFAPaths(terminal.dfa) if terminal is not None else None
        self._parser = None
        self._search = None
        if self._regex is None:
            with applied(limits):
                self._parser = IncrementalParser(tables if tables is not None else build_parser_tables(grammar))
            self._search = GrammarInfill(grammar)

    def check(self, segments, end: bool = True) -> InfillResult:
        """Can ``segments`` (bytes pieces and :data:`~gramalign.GAP`, each gap any number of
        bytes) be completed to a word of the grammar? With ``end=False`` anything may follow
        the last segment (the witness then has a trailing filler)."""
        text = partial_text(segments, end)
        with self._lock, gc_paused:  # (a generation-2 collection inside a check cost 100+ ms: see gc_guard)
            result = self._check(text)
            self.counts[result.status] += 1
        return result

    def _check(self, text: PartialText) -> InfillResult:
        budget = Budget(self.budget_s)
        try:
            if self._regex is not None:
                fillers = regex_fillers(self._regex, text, budget)
                if fillers is None:
                    return InfillResult("impossible", seconds=budget.elapsed)
                return InfillResult("completable", text.fill(fillers), fillers, seconds=budget.elapsed)
            found = self._search.search(text, budget, verify=lambda fillers: self._accepts(text.fill(fillers)))
        except BudgetExhausted:
            return InfillResult("undecided", reason=f"the time budget of {self.budget_s} s ran out",
                                seconds=budget.elapsed)
        if not found.possible:
            return InfillResult("impossible", seconds=budget.elapsed)
        candidates = self._candidates(text, found.candidates)
        for k, fillers in enumerate(candidates):
            if k and budget.exhausted():
                return InfillResult("undecided", reason=f"the time budget of {self.budget_s} s ran out while the "
                                    f"parser checked witness candidates ({k} of {len(candidates)} refused)",
                                    seconds=budget.elapsed)
            candidate = text.fill(fillers)
            if self._accepts(candidate):
                return InfillResult("completable", candidate, fillers, seconds=budget.elapsed)
        if found.gave_up is not None:
            return InfillResult("undecided", reason=found.gave_up, seconds=budget.elapsed)
        return InfillResult("undecided", reason="a filling exists for some lexing, but the parser refused the "
                            f"{len(candidates)} witness candidate(s) (longest match, priorities or the layout "
                            "read them otherwise)", seconds=budget.elapsed)

    def _candidates(self, text: PartialText, found: tuple) -> list:
        """The fillers to verify: the search's, then (a layout's lines) the first two with each
        line break written into a gap indented as the line the gap starts in, then every gap
        empty and every gap one space (a gap that spans a removable part of a lexeme, or
        nothing at all, needs no lexeme of its own)."""
        candidates = list(found)
        if self.grammar.indentation is not None:
            margins = [_margin(piece) for piece in text.pieces[:-1]]
            for fillers in found[:2]:
                indented = tuple(f.replace(b"\n", b"\n" + m) for f, m in zip(fillers, margins))
                if indented != fillers:
                    candidates.append(indented)
        candidates += [(b"",) * text.gaps, (b" ",) * text.gaps]
        return list(dict.fromkeys(candidates))

    def _accepts(self, data: bytes) -> bool:
        parser = self._parser
        used = parser.pool.used
        try:
            return parser.accepts(data)
        finally:
            parser.truncate(used)  # the pool would otherwise keep every witness's stacks

    def check_tokens(self, ids, vocab: Vocabulary, mask_id: int, *, end: bool = True) -> InfillResult:
        """:meth:`check` on a diffusion model's sequence of token ids: positions holding
        ``mask_id`` are gaps (of any length: the gaps' token counts are not checked), the
        text stops at the first EOS id of ``vocab``, and after it only EOS or masks may come
        (masks there must become EOS), else the sequence is ``impossible``. ``end=False``
        reads the ids as a block that more text follows (no EOS in it)."""
        if not isinstance(vocab, Vocabulary):
            raise InfillError(f"vocab must be a gramalign.Vocabulary, not {type(vocab).__name__}")
        try:
            ids = np.asarray(ids)
        except Exception as error:  # noqa: BLE001 - any array-like the caller passed
            raise InfillError(f"ids must be a sequence of token ids: {error}") from None
        if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
            raise InfillError(f"ids must be a one-dimensional sequence of integers, not shape {ids.shape} "
                              f"of {ids.dtype}")
        if isinstance(mask_id, bool) or not isinstance(mask_id, (int, np.integer)):
            raise InfillError(f"mask_id must be an int, not {type(mask_id).__name__}")
        mask_id = int(mask_id)
        eos = frozenset(vocab.eos_token_ids)
        segments: list = []
        finished = None
        for position, token in enumerate(ids.tolist()):
            if finished is not None:
                if token != mask_id and token not in eos:
                    started = time.perf_counter()
                    with self._lock:
                        self.counts["impossible"] += 1
                    return InfillResult("impossible", reason=f"token {token} at position {position} follows EOS "
                                        f"(position {finished})", seconds=time.perf_counter() - started)
                continue
            if token == mask_id:
                segments.append(GAP)
            elif token in eos:
                finished = position
            elif not 0 <= token < vocab.size:
                raise InfillError(f"token id {token} at position {position} is outside the vocabulary "
                                  f"(size {vocab.size}) and is not mask_id {mask_id}")
            else:
                segments.append(vocab.token_to_bytes(token))
        if finished is not None and not end:
            raise InfillError("end=False reads a block that more text follows, but it holds EOS "
                              f"(position {finished})")
        return self.check(segments, end=end)
