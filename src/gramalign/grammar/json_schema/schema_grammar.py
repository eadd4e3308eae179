"""A JSON Schema's grammar whose rules are emitted where a parser first needs them.

``Grammar.from_json_schema`` checks the schema's syntax and its root and returns a
:class:`SchemaGrammar`: ``gramalign.compile`` builds its parser states, rules and lexer states
as matchers reach them (:mod:`..parser_tables_lazy`), so a first mask costs the part of the
schema it reads, not the whole schema. Reading :attr:`~SchemaGrammar.rules` or
:attr:`~SchemaGrammar.terminals`, or :meth:`~SchemaGrammar.whole`, emits every rule (what
``compile(..., eager=True)``, the infilling check and the serving admission use); an error of
a part of the schema is raised there, or by the matcher step that first reaches the part.
"""

from __future__ import annotations

import sys
import threading
import weakref
from contextlib import contextmanager
from dataclasses import dataclass

from ...errors import SchemaCompileError
from ...heap import released_on_failure
from ..automata.dfa import StateLimitError
from ..grammar import Grammar
from ..limits import CompileLimits, applied
from .emit import Emitter, Layout
from .evaluate import Evaluator, TrackingNeeded
from .resolve import SchemaIndex, local_pointer

__all__ = ["SchemaGrammar"]


@dataclass(frozen=True, eq=False)
class SchemaRecipe:
    """What a schema's rules are emitted from, checked and resolved once."""

    index: SchemaIndex
    layout: Layout
    root: frozenset
    max_states: int
    approximate: frozenset
    source: str  # the schema's JSON text, keys sorted (objects closed where strict)
    key: tuple  # what two equal recipes share (see SchemaGrammar.__eq__)
    tracked: bool  # the schema may need evaluated members tracked (unevaluated*, or a registry's documents)

    def emitter(self) -> Emitter:
        """A fresh emitter of the rules on demand (its root's rule made, so checked)."""
        with schema_errors(self.index):
            evaluator = Evaluator(self.index, max_states=self.max_states, approximate=self.approximate,
                                  track_evaluated=self.tracked)
            return Emitter(evaluator, self.layout, self.root, max_states=self.max_states, lazy=True)

    def grammar(self) -> Grammar:
        """Every rule, emitted now."""
        with schema_errors(self.index):
            try:
                grammar = _emitted(Evaluator(self.index, max_states=self.max_states, approximate=self.approximate),
                                   self.layout, self.root, self.max_states, self.source)
            except TrackingNeeded:  # the schema uses unevaluatedProperties/unevaluatedItems
                grammar = _emitted(Evaluator(self.index, max_states=self.max_states, approximate=self.approximate,
                                             track_evaluated=True), self.layout, self.root, self.max_states,
                                   self.source)
        # LALR(1), not lr0: the grammar is LR(0), but default reductions read deeper into the stack
        # right after a shift, so fewer masks share the caches keyed by the top of the stack
        # (MaskBench, 210 schemas: TBM p90 103 -> 117 us, p99 379 -> 416 us). The lazy tables
        # (parser_tables_lazy.py), which cannot have look-aheads, are LR(0) all the same.
        return Grammar(grammar.terminals, grammar.rules, grammar.start, source=self.source, strict=True)


def _emitted(evaluator: Evaluator, layout: Layout, root, max_states: int, source: str) -> Grammar:
    """The whole grammar of ``root``, the emitter closed after (see ``Emitter.close``)."""
    emitter = Emitter(evaluator, layout, root, max_states=max_states)
    try:
        return emitter.grammar(source)
    finally:
        emitter.close()


@contextmanager
def schema_errors(index: "SchemaIndex | None"):
    """Errors of emitting a schema's rules in the schema's words: an automaton past its states
    as a SchemaCompileError, Python's recursion limit named, and a pointer into a registry's
    document given in that document (named)."""
    try:
        yield
    except StateLimitError as exc:
        raise SchemaCompileError(f"an automaton for this schema is too large: {exc}") from None
    except RecursionError:  # the evaluator recurses once per nested subschema
        raise SchemaCompileError(f"the schema nests too deeply (Python's recursion limit is "
                                 f"{sys.getrecursionlimit()})") from None
    except SchemaCompileError as exc:
        if index is None or exc.pointer == local_pointer(exc.pointer):
            raise
        uri = index.document_uri(exc.pointer)
        where = f" (in {uri})" if uri is not None and uri not in exc.message else ""
        raise SchemaCompileError(exc.message + where, local_pointer(exc.pointer), exc.keyword) from None


class _SchemaRules:
    """An emitter as the lazy tables' rule source, with its errors in the schema's words
    (``errors``, around each build of the tables)."""

    def __init__(self, emitter: Emitter, index: SchemaIndex):
        self._index = index
        for name in ("start", "terminals", "is_terminal", "alternatives", "derives_text", "first_bytes",
                     "empty_language_error", "close"):
            setattr(self, name, getattr(emitter, name))

    def errors(self):
        return schema_errors(self._index)


class SchemaGrammar(Grammar):
    """The grammar of a JSON Schema, its rules emitted where a parser first needs them (see the
    module docstring). Equal to another exactly when made from the same schema text with the
    same options (and no registry: a schema read with a registry equals only itself)."""

    def __init__(self, recipe: SchemaRecipe, limits: CompileLimits):
        spare = recipe.emitter()  # checks the root; the first compile's rules
        for name, value in (("start", spare.start), ("source", recipe.source), ("strict", True),
                            ("_recipe", recipe), ("_limits", limits), ("_lock", threading.Lock()),
                            ("_whole", None), ("_spare", spare),
                            # (closed if never handed over: see Emitter.close)
                            ("_spare_closer", weakref.finalize(self, spare.close))):
            object.__setattr__(self, name, value)

    @property
    def terminals(self) -> tuple:
        return self.whole().terminals

    @property
    def rules(self) -> tuple:
        return self.whole().rules

    def whole(self) -> Grammar:
        with self._lock:
            if self._whole is None:
                with released_on_failure(), applied(self._limits):
                    object.__setattr__(self, "_whole", self._recipe.grammar())
            return self._whole

    def _take_spare(self) -> "Emitter | None":
        with self._lock:
            spare = self._spare
            object.__setattr__(self, "_spare", None)
            self._spare_closer.detach()
            return spare

    def lazy_tables(self, limits: "CompileLimits | None" = None):
        from ..parser_tables_lazy import LazyParserTables

        spare = self._take_spare()
        limits = limits if limits is not None else self._limits
        with applied(limits):
            emitter = spare if spare is not None else self._recipe.emitter()
            return LazyParserTables(_SchemaRules(emitter, self._recipe.index), emitter.start, limits=limits)

    def single_terminal(self):
        return None  # a schema's start is a value rule, never one terminal

    def __eq__(self, other) -> bool:
        return isinstance(other, SchemaGrammar) and other._recipe.key == self._recipe.key

    def __hash__(self) -> int:
        return hash(self._recipe.key)

    def __repr__(self) -> str:
        text = self.source if len(self.source) <= 80 else self.source[:77] + "..."
        return f"SchemaGrammar({text!r})"

    def __reduce__(self):
        return _itself, (self.whole(),)  # a plain grammar (the emitter is not kept)


def _itself(grammar: Grammar) -> Grammar:
    return grammar
