"""Per-request grammars over a serving engine's persistent batch, independent of the engine.

An engine that batches continuously (vLLM) keeps one row per running request; requests join,
leave and move between rows from step to step, and each request's generated tokens live in a
list the engine appends to. :class:`ConstrainedRows` keeps one :class:`GrammarMatcher` per
constrained row, feeds it only the tokens appended since the last step, and fills one bitmask
row per constrained request. :class:`RequestConstraint` is what a request asks for (a JSON
Schema, a regex, a Lark grammar or a shipped grammar, plus compile options), parsed and checked
before any vocabulary is known so an engine's front end can refuse a bad request early.

The vLLM adapter is :mod:`gramalign.integrations.vllm`; this module imports neither vLLM nor torch.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..errors import GramalignError, GrammarError, TokenRejected
from ..grammar.grammar import Grammar
from ..masking.compiler import CompiledGrammar
from ..masking.gc_guard import gc_paused
from ..masking.matcher import GrammarMatcher
from . import built_grammars

logger = logging.getLogger(__name__)

EXTRA_ARGS_KEY = "gramalign"
"""The key of a request's extra arguments (vLLM's ``SamplingParams.extra_args``, the OpenAI
server's ``vllm_xargs``) that holds its constraint."""

GRAMMAR_KINDS = ("json_schema", "regex", "lark", "builtin")

_OPTIONS: dict[str, tuple[str, ...]] = {
    "json_schema": ("whitespace", "max_whitespace", "string_escapes", "property_order", "integer_fraction",
                    "approximate", "max_states", "strict"),
    "regex": ("flags",),
    "lark": ("start",),
    "builtin": (),
}

PLACEHOLDER_TOKEN = -1
"""Engines with asynchronous scheduling append this id for a token still being sampled."""


class ConstraintError(GrammarError):
    """A request's constraint is malformed (no grammar, two grammars, an unknown option), or its
    grammar cannot be compiled; the message says which."""


@dataclass(frozen=True)
class RequestConstraint:
    """One request's grammar: ``kind`` (one of :data:`GRAMMAR_KINDS`), its ``source`` text
    (a JSON Schema as canonical JSON text) and the compile options as sorted pairs.

    Equal constraints are equal objects, so they key caches: requests with the same schema
    share one compiled grammar.
    """

    kind: str
    source: str
    options: tuple[tuple[str, Any], ...] = ()

    def grammar(self, whole: bool = True) -> Grammar:
        """The grammar, built once per process for equal constraints (or loaded, where a
        server's admission built it in another process: see :mod:`.built_grammars`); raises
        :class:`ConstraintError` (with gramalign's message) when it cannot be built.

        ``whole=False`` is for an engine whose front end checked the whole grammar already: a
        JSON Schema's grammar is then the one built where its matchers go (see
        ``Grammar.from_json_schema``), its parts compiled as the request's matchers reach them."""
        return _grammars.get(self, whole)

    def check(self) -> None:
        """Raise :class:`ConstraintError` when the grammar cannot be built; nothing to do for a
        constraint this process already admitted (:func:`admit`) or checked."""
        if not admitted(self):
            self.grammar()

    def _build(self, whole: bool = True) -> Grammar:
        options = dict(self.options)
        with self._errors():
            if self.kind == "json_schema":
                if "approximate" in options:
                    options["approximate"] = tuple(options["approximate"])
                grammar = Grammar.from_json_schema(self.source, **options)
                return grammar.whole() if whole else grammar
            if self.kind == "regex":
                grammar = Grammar.from_regex(self.source, flags=_regex_flags(options.get("flags", 0)))
                if grammar.single_terminal().dfa.num_states == 0:  # compile() would refuse it in the engine
                    raise GrammarError(f"the pattern {self.source!r} matches no string at all")
                return grammar
            if self.kind == "lark":
                return Grammar.from_lark(self.source, **options)
            return Grammar.builtin(self.source)

    def _whole(self, grammar: Grammar) -> Grammar:
        """``grammar`` (built by :meth:`_build`) with every rule: bad parts are refused here,
        at admission, never in the engine's step."""
        with self._errors():
            return grammar.whole()

    @contextlib.contextmanager
    def _errors(self):
        try:
            yield
        except ConstraintError:
            raise
        except GramalignError as error:
            raise ConstraintError(f"gramalign could not compile the request's {self.kind}: "
                                  f"{type(error).__name__}: {error}") from error
        except (ValueError, TypeError, KeyError) as error:  # option values the front ends check themselves
            raise ConstraintError(f"gramalign could not compile the request's {self.kind}: {error}") from error


def _regex_flags(flags: Any) -> int:
    if isinstance(flags, bool) or not isinstance(flags, (int, str, list, tuple)):
        raise ConstraintError(f"regex flags must be an int or a list of names like 'IGNORECASE', got {flags!r}")
    if isinstance(flags, int):
        return flags
    names = [flags] if isinstance(flags, str) else list(flags)
    value = 0
    for name in names:
        flag = getattr(re.RegexFlag, str(name).upper(), None)
        if flag is None:
            raise ConstraintError(f"unknown regex flag {name!r} (use names of re.RegexFlag, e.g. 'IGNORECASE')")
        value |= int(flag)
    return value


def parse_request_constraint(extra_args: "Mapping[str, Any] | None") -> "RequestConstraint | None":
    """The constraint in a request's extra arguments, or None when it asks for none.

    ``extra_args["gramalign"]`` is a mapping, or the same as a JSON text (the OpenAI server's
    ``vllm_xargs`` holds only strings and numbers), with exactly one of ``json_schema`` (an
    object, a boolean or JSON text), ``regex``, ``lark`` or ``builtin``, and that kind's
    options (``json_schema``: those of :meth:`Grammar.from_json_schema`; ``regex``: ``flags``;
    ``lark``: ``start``). Raises :class:`ConstraintError` for anything else.

    >>> parse_request_constraint({"gramalign": {"regex": "[0-9]+"}})
    RequestConstraint(kind='regex', source='[0-9]+', options=())
    >>> parse_request_constraint({"other": 1}) is None
    True
    """
    if not extra_args or EXTRA_ARGS_KEY not in extra_args:
        return None
    spec = extra_args[EXTRA_ARGS_KEY]
    if isinstance(spec, (str, bytes)):
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError as error:
            raise ConstraintError(f"extra argument {EXTRA_ARGS_KEY!r} is text but not JSON: {error}") from None
    if not isinstance(spec, Mapping):
        raise ConstraintError(f"extra argument {EXTRA_ARGS_KEY!r} must be an object (or its JSON text) with one of "
                              f"{', '.join(GRAMMAR_KINDS)}; got {type(spec).__name__}")
    kinds = [kind for kind in GRAMMAR_KINDS if kind in spec]
    if len(kinds) != 1:
        found = f"got {' and '.join(kinds)}" if kinds else f"got keys {sorted(spec)}"
        raise ConstraintError(f"extra argument {EXTRA_ARGS_KEY!r} needs exactly one of {', '.join(GRAMMAR_KINDS)}; "
                              f"{found}")
    kind = kinds[0]
    unknown = sorted(set(spec) - {kind} - set(_OPTIONS[kind]))
    if unknown:
        allowed = ", ".join(_OPTIONS[kind]) or "none"
        raise ConstraintError(f"unknown option(s) {unknown} for a {kind} constraint (allowed: {allowed})")
    source = spec[kind]
    if kind == "json_schema":
        if isinstance(source, (str, bytes)):
            try:
                source = json.loads(source)
            except json.JSONDecodeError as error:
                raise ConstraintError(f"the json_schema is not valid JSON: {error}") from None
        if not isinstance(source, (dict, bool)):
            raise ConstraintError(f"json_schema must be an object or a boolean, got {type(source).__name__}")
        # Canonical text: equal schemas written with other key orders or spacing share a grammar;
        # key order inside "properties" is kept, since it fixes the output's key order.
        source = json.dumps(source, ensure_ascii=False, separators=(",", ":"))
    elif not isinstance(source, str):
        raise ConstraintError(f"{kind} must be a string, got {type(source).__name__}")
    options = []
    for name in sorted(set(spec) - {kind}):
        value = spec[name]
        options.append((name, tuple(value) if isinstance(value, list) else value))
    return RequestConstraint(kind, source, tuple(options))


class _GrammarCache:
    """Grammars by constraint, least recently used out. Compiled grammars are not kept here:
    :func:`gramalign.compile`'s own cache (bounded in bytes) holds them under the grammar."""

    def __init__(self, size: int = 256):
        self._size = size
        self._entries: "OrderedDict[RequestConstraint, Grammar]" = OrderedDict()
        self._lock = threading.Lock()

    def get(self, constraint: RequestConstraint, whole: bool = True) -> Grammar:
        """The grammar of ``constraint`` (see :meth:`RequestConstraint.grammar`). The one kept
        is as built: a JSON Schema's keeps its whole grammar once asked for it (see
        ``SchemaGrammar.whole``), so an engine in the process of the front end that checked it
        reads the same object."""
        with self._lock:
            grammar = self._entries.get(constraint)
            if grammar is not None:
                self._entries.move_to_end(constraint)
        if grammar is None:
            built = built_grammars.load(constraint)
            if built is not None:
                grammar = built[0]  # (its parser tables go with it)
            else:
                grammar = constraint._build(whole=False)
            with self._lock:
                grammar = self._entries.setdefault(constraint, grammar)
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
        return constraint._whole(grammar) if whole else grammar


_grammars = _GrammarCache()


class _Admitted:
    """Constraints whose grammars were built and checked elsewhere (a server's admission
    workers), most recent last, bounded."""

    def __init__(self, size: int = 4096):
        self._size = size
        self._entries: "OrderedDict[RequestConstraint, None]" = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, constraint: RequestConstraint) -> bool:
        with self._lock:
            return constraint in self._entries

    def add(self, constraint: RequestConstraint) -> None:
        with self._lock:
            self._entries[constraint] = None
            self._entries.move_to_end(constraint)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


_admitted = _Admitted()


def admit(constraint: RequestConstraint) -> None:
    """Record that ``constraint``'s grammar was built and checked in another process, so that
    :meth:`RequestConstraint.check` does not build it again here."""
    _admitted.add(constraint)


def admitted(constraint: RequestConstraint) -> bool:
    """Whether :func:`admit` recorded ``constraint`` (among the last few thousand)."""
    return constraint in _admitted


class _Row:
    """One constrained request: its matcher and the token list it is fed from."""

    __slots__ = ("matcher", "tokens", "fed", "forced_words", "request")

    def __init__(self, matcher: "GrammarMatcher | None", tokens: Sequence[int], forced_words: "np.ndarray | None",
                 request: str):
        self.matcher = matcher
        self.tokens = tokens          # the engine's list, appended to in place: read, never copied
        self.fed = 0                  # how many of ``tokens`` the matcher has accepted
        self.forced_words = forced_words  # set when the row can only end: a fixed mask row (EOS)
        self.request = request


class ConstrainedRows:
    """Matchers for the constrained rows of a persistent batch.

    ``add(index, compiled, tokens)`` puts a request on a row (replacing whatever was there),
    ``remove(index)`` drops one, ``move(a, b, swap)`` follows the engine's reordering, and
    :meth:`fill` catches every matcher up with its token list and writes its mask row. A row whose
    matcher would be fed a token its grammar forbids (another processor overrode the mask, or an
    engine bug), or that reaches a part of a grammar built where its matchers go that cannot be
    compiled (a ``SchemaCompileError`` of a lazily compiled JSON Schema), is logged once and
    from then on allowed only its end-of-sequence ids, so the request stops instead of the
    engine failing.
    """

    def __init__(self):
        self.rows: dict[int, _Row] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, index: int, compiled: CompiledGrammar, tokens: Sequence[int], request: str = "") -> None:
        """Constrain row ``index`` with a fresh matcher of ``compiled``, fed from ``tokens``
        (which may already hold tokens: a preempted request comes back with its output)."""
        self.rows[index] = _Row(compiled.matcher(), tokens, None, request)

    def add_ending(self, index: int, eos_words: np.ndarray, tokens: Sequence[int], request: str = "") -> None:
        """Put a request on row ``index`` that may only end (its grammar failed to compile)."""
        self.rows[index] = _Row(None, tokens, eos_words, request)

    def remove(self, index: int) -> None:
        self.rows.pop(index, None)

    def move(self, source: int, target: int, swap: bool) -> None:
        """The engine moved row ``source`` to ``target`` (one-way: ``target``'s request is gone)
        or swapped the two."""
        moving = self.rows.pop(source, None)
        staying = self.rows.pop(target, None)
        if moving is not None:
            self.rows[target] = moving
        if swap and staying is not None:
            self.rows[source] = staying

    def update(self, batch_update, constrain: "Callable[[Any], tuple[CompiledGrammar | None, str]]") -> None:
        """Apply a vLLM-shaped batch update (``removed`` indices, ``added`` tuples
        ``(index, params, prompt_ids, output_ids)``, ``moved`` ``(a, b, direction)`` with
        ``direction.name`` ``"SWAP"`` or ``"UNIDIRECTIONAL"``), in the documented order
        removed, added, moved. ``constrain(params)`` returns the request's compiled grammar (or
        None: unconstrained) and a label for log messages; it raises for a grammar that cannot
        be compiled, and the row is then only allowed to end. None (no change) does nothing."""
        if batch_update is None:
            return
        for index in batch_update.removed:
            self.remove(index)
        for index, params, _prompt, output in batch_update.added:
            try:
                compiled, label = constrain(params)
            except EndRequest as ending:
                logger.error("gramalign: request %s cannot be constrained and will be stopped: %s",
                             ending.label, ending.reason)
                self.add_ending(index, ending.eos_words, output, ending.label)
                continue
            if compiled is None:
                self.remove(index)  # an added request replaces whatever the row held
            else:
                self.add(index, compiled, output, label)
        for source, target, direction in batch_update.moved:
            self.move(source, target, getattr(direction, "name", direction) == "SWAP")

    def catch_up(self) -> None:
        """Feed every matcher the tokens its list gained since the last call (up to the first
        placeholder of a token still being sampled)."""
        with gc_paused:
            for row in self.rows.values():
                self._catch_up(row)

    def _catch_up(self, row: _Row) -> None:
        tokens = row.tokens
        count = len(tokens)
        if row.matcher is None or count == row.fed:
            return
        matcher = row.matcher
        if count < row.fed:
            # The engine dropped tokens it had appended (e.g. after a failed KV-cache load).
            matcher.rollback(min(row.fed - count, matcher.num_accepted_tokens))
            row.fed = count
            return
        for position in range(row.fed, count):
            token = tokens[position]
            if token == PLACEHOLDER_TOKEN:
                return
            if matcher.is_terminated() and token in matcher.compiled._eos_ids:
                pass  # the engine ignores EOS (ignore_eos) and went on: only EOS can follow
            else:
                try:
                    matcher.accept_token(token)
                except TokenRejected as error:
                    self._end(row, f"produced token {token} that its grammar forbids ({error.reason})")
                    return
                except GramalignError as error:
                    self._end(row, f"reached a part of its grammar that cannot be compiled ({type(error).__name__}: "
                                   f"{error})")
                    return
            row.fed = position + 1

    @staticmethod
    def _end(row: _Row, why: str) -> None:
        """From now on, allow ``row`` only its end-of-sequence ids (logged once)."""
        logger.error("gramalign: request %s %s; only end-of-sequence is allowed from now on", row.request, why)
        row.forced_words = row.matcher.compiled.eos_words
        row.matcher = None
        row.fed = len(row.tokens)

    def fill(self, bitmask: np.ndarray) -> list[int]:
        """Catch up and write row ``i`` of ``bitmask`` (int32 ``[rows, words]``) for every
        constrained row ``i``; returns those row indices, ascending."""
        indices = sorted(self.rows)
        rows = self.rows
        with gc_paused:
            for index in indices:
                row = rows[index]
                self._catch_up(row)
                if row.matcher is not None:
                    try:
                        row.matcher.fill_next_token_bitmask(bitmask, index)
                    except GramalignError as error:  # a part built where the matcher went, that failed
                        self._end(row, f"reached a part of its grammar that cannot be compiled "
                                       f"({type(error).__name__}: {error})")
                if row.matcher is None:
                    bitmask[index].view(np.uint32)[:] = row.forced_words
        return indices


class EndRequest(GramalignError):
    """Raised by a ``constrain`` callback: the request cannot be constrained (its grammar failed
    to compile in the engine) and must only end; ``eos_words`` is the mask row to use."""

    def __init__(self, label: str, reason: str, eos_words: np.ndarray):
        self.label = label
        self.reason = reason
        self.eos_words = eos_words
        super().__init__(f"request {label}: {reason}")


def stop_token_ids(eos_token_id: "int | None", stop_ids: "Iterable[int] | None") -> tuple[int, ...]:
    """The ids that end a request: its EOS (unless ignored) and its stop ids, sorted."""
    ids = set(int(i) for i in (stop_ids or ()))
    if eos_token_id is not None:
        ids.add(int(eos_token_id))
    return tuple(sorted(ids))
