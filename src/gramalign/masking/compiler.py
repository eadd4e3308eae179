"""``compile``: a grammar and a vocabulary become a reusable, thread-safe CompiledGrammar."""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING


from ..errors import GrammarError
from ..grammar.grammar import Grammar
from ..grammar.limits import CompileLimits, applied
from ..heap import TRIM_AFTER_BYTES, release_freed_memory, released_on_failure
from ..tokens.trie import TokenTrie
from ..tokens.vocabulary import Vocabulary
from .bitmask import bitmask_width
from .regex_index import DFATokenIndex

if TYPE_CHECKING:  # (imported where used: the matcher imports this module)
    from .cfg import GrammarMaskStore
    from .matcher import GrammarMatcher


def token_trie(vocabulary: Vocabulary) -> TokenTrie:
    """The vocabulary's token trie (:attr:`Vocabulary.token_trie`), shared by its grammars."""
    return vocabulary.token_trie


class CompiledGrammar:
    """A grammar bound to a vocabulary: token masks ready to use, shared by many matchers.

    Create one with :func:`gramalign.compile`, then one :meth:`matcher` per sequence.
    Thread-safe: share one across threads (its mask caches are built under locks); the
    matchers are not (see :class:`GrammarMatcher`). A grammar that is one regular expression is served from a precomputed per-DFA-state
    index; any other grammar by the incremental parser and its mask store.
    """

    def __init__(self, grammar: Grammar, vocabulary: Vocabulary, *, index: DFATokenIndex | None = None,
                 store: "GrammarMaskStore | None" = None):
        self.grammar = grammar
        self.vocabulary = vocabulary
        self.index = index
        self.store = store
        self.dfa = index.dfa if index is not None else None
        self.bitmask_width = bitmask_width(vocabulary.size)
        self.eos_words = vocabulary.eos_bitmask
        self._grammar_tokens = vocabulary.grammar_token_mask
        self._eos_ids = frozenset(vocabulary.eos_token_ids)
        self.cache_path: "Path | None" = None

    def matcher(self) -> "GrammarMatcher":
        """A fresh matcher at the start of the language."""
        from .matcher import GrammarMatcher

        return GrammarMatcher(self)

    def save_cache(self, path: "str | os.PathLike | None" = None) -> None:
        """Save the masks computed so far (context-free grammars only) so that a later
        ``compile(..., cache_dir=...)`` in another process starts with them. ``path``
        defaults to this grammar's file in the ``cache_dir`` it was compiled with."""
        if self.store is None:
            raise TypeError("only context-free grammars keep a mask cache; regex indexes are rebuilt fast")
        path = path if path is not None else self.cache_path
        if path is None:
            raise ValueError("no path given and the grammar was compiled without cache_dir")
        self.store.save(path)

    @property
    def memory_bytes(self) -> int:
        """Bytes held by this compiled grammar's masks and tables (the shared trie not counted)."""
        if self.index is not None:
            return self.index.memory_bytes + int(self.dfa.transitions.nbytes)
        return self.store.memory_bytes


COMPILE_CACHE_SIZE = 64
"""Compiled grammars kept in memory (least recently used first out) ..."""

COMPILE_CACHE_BYTES = 64 << 20
"""... while their tables and the masks computed so far stay within this; the newest is
always kept."""

REMEASURE_EVERY = 16
"""Compiles between two measurements of every cached grammar, whose masks keep growing after
it was cached (~1 ms for 64 grammars after a few walks each, too much for every compile);
in between, each counts what it held when last measured."""

SEEN_ONCE = 4096
"""Grammars built where their matchers go (a JSON Schema's, by default) enter the cache the
second time they are compiled: the first compile is shared only while someone holds it (a
weak reference), and its hash remembered among the last ``SEEN_ONCE``. A server meeting new
schemas then never frees an evicted grammar's masks inside a new compile, while one it meets
again is kept from its second compile on (MaskBench's stream of new schemas, seed 9595: TTFM
p50 2.7-3.0 -> 2.5 ms, p90 8.4-9.4 -> 6.2 ms; without any cache 2.4 and 5.6 ms). Grammars
built whole before their first mask are cached at once (their compile is the costly part)."""

_compiled: "OrderedDict[tuple, CompiledGrammar]" = OrderedDict()
_sizes: dict = {}  # key of _compiled -> its memory_bytes when last measured
_held: "weakref.WeakValueDictionary[tuple, CompiledGrammar]" = weakref.WeakValueDictionary()
_seen_once: "OrderedDict[int, None]" = OrderedDict()  # hashes of keys compiled once, lazily built
_compiled_lock = threading.Lock()
_compiles = 0


def compile(grammar: Grammar, vocabulary: Vocabulary, *, eager: bool | None = None,
            cache: bool = True, cache_dir: "str | os.PathLike | None" = None,
            limits: "CompileLimits | None" = None) -> CompiledGrammar:
    """Bind ``grammar`` to ``vocabulary``; reuse the result across sequences and threads.

    Compiling an equal grammar for the same vocabulary again returns the cached result
    (the last ``COMPILE_CACHE_SIZE`` within ``COMPILE_CACHE_BYTES`` are kept), with every
    mask computed so far; a grammar built where its matchers go enters the cache on its
    second compile, and is shared meanwhile while someone holds it (see ``SEEN_ONCE``); pass
    ``cache=False`` for a fresh one. For a single-regex grammar, ``eager`` builds every DFA
    state's mask now (default: when they fit in 256 MiB), otherwise each state's mask is
    built the first time a matcher reaches it. A JSON Schema's grammar
    (``Grammar.from_json_schema``) is built where its matchers go: its rules, parser states
    and lexer states the first time a matcher reaches them, each step under ``limits`` (an
    error of a part of the schema is raised by the step that first reaches it, the matcher
    unchanged); ``eager=True`` builds its every rule and its whole LALR(1) table now, and
    raises every error of the schema here. Context-free grammars always build masks
    lazily, per lexical context, the first time a matcher needs them; with ``cache_dir``
    (default: the ``GRAMALIGN_CACHE_DIR`` environment variable) they start from the masks
    saved there by :meth:`CompiledGrammar.save_cache`, in a file named by the grammar and
    vocabulary hashes (a JSON Schema's grammar is then built whole, as with ``eager=True``:
    saved masks name the states of its whole table; with ``eager=False`` it is built where its
    matchers go all the same, and reads no saved masks). ``limits`` bounds the time and size of
    building the parser tables (a :class:`gramalign.CompileLimits`; raises
    :class:`gramalign.LimitExceeded`).
    """
    if not isinstance(grammar, Grammar):
        raise TypeError(f"compile() needs a gramalign.Grammar, got {type(grammar).__name__}")
    if not isinstance(vocabulary, Vocabulary):
        raise TypeError(f"compile() needs a gramalign.Vocabulary, got {type(vocabulary).__name__}")
    if eager is not None and not isinstance(eager, bool):  # "no" would be truthy
        raise TypeError(f"eager must be True, False or None, not {eager!r}")
    cache_dir = cache_dir if cache_dir is not None else os.environ.get("GRAMALIGN_CACHE_DIR") or None
    if not cache:
        with released_on_failure(), applied(limits):
            compiled = _compile(grammar, vocabulary, eager, cache_dir, limits)
        if compiled.memory_bytes >= TRIM_AFTER_BYTES:
            release_freed_memory()
        return compiled
    key = (grammar, id(vocabulary), eager)
    with _compiled_lock:
        found = _compiled.get(key)
        if found is not None and found.vocabulary is vocabulary:
            _compiled.move_to_end(key)
            return found
        found = _held.get(key)
        if found is not None and found.vocabulary is vocabulary:
            return found
    with released_on_failure(), applied(limits):
        compiled = _compile(grammar, vocabulary, eager, cache_dir, limits)
    with _compiled_lock:
        churn = _hold_once(key, compiled)
        if churn is None:
            churn = _cache(key, compiled)
    if churn >= TRIM_AFTER_BYTES:
        release_freed_memory()  # the scratch of a large build, and dropped grammars (see gramalign.heap)
    return compiled


def _hold_once(key: tuple, compiled: CompiledGrammar) -> "int | None":
    """A grammar built where its matchers go, compiled for the first time: shared only while
    someone holds it (see ``SEEN_ONCE``); returns the bytes it holds. None for the rest,
    which the cache keeps (the lock is held)."""
    if compiled.store is None or not getattr(compiled.store.tables, "built_on_demand", False):
        return None
    seen = hash(key)
    if _seen_once.pop(seen, False) is None:  # the second time: cached
        return None
    _seen_once[seen] = None
    if len(_seen_once) > SEEN_ONCE:
        _seen_once.popitem(last=False)
    _held[key] = compiled
    return compiled.memory_bytes


def _cache(key: tuple, compiled: CompiledGrammar) -> int:
    """Keep ``compiled`` under ``key``, letting the least recently used go past the bounds (the
    lock is held); returns the bytes it holds and those the cache let go."""
    global _compiles
    _compiled[key] = compiled
    _sizes[key] = compiled.memory_bytes
    _compiles += 1
    if _compiles % REMEASURE_EVERY == 0:
        for cached_key, entry in _compiled.items():
            _sizes[cached_key] = entry.memory_bytes
    held = sum(_sizes.values())
    churn = _sizes[key]  # what this compile built, and what the cache lets go below
    while (len(_compiled) > COMPILE_CACHE_SIZE or held > COMPILE_CACHE_BYTES) and len(_compiled) > 1:
        evicted_key, _ = _compiled.popitem(last=False)
        evicted = _sizes.pop(evicted_key)
        held -= evicted
        churn += evicted
    return churn


def _compile(grammar: Grammar, vocabulary: Vocabulary, eager: bool | None, cache_dir,
             limits: "CompileLimits | None") -> CompiledGrammar:
    terminal = grammar.single_terminal()
    if terminal is not None:
        dfa = terminal.dfa
        if dfa.num_states == 0:
            raise GrammarError(f"the pattern {terminal.pattern!r} matches no string at all")
        index = DFATokenIndex(dfa, vocabulary, token_trie(vocabulary), eager=eager)
        return CompiledGrammar(grammar, vocabulary, index=index)
    from ..grammar.parser_tables import build_parser_tables
    from .cfg import GrammarMaskStore
    from .cfg.disk_cache import grammar_digest

    # Saved masks are keyed by the eager table's states: with cache_dir, the table is built
    # whole, unless the caller asked for lazy tables (eager=False), which then read no saved masks.
    tables = grammar.lazy_tables(limits) if eager is False or (eager is None and cache_dir is None) else None
    lazy = tables is not None
    if tables is None:
        tables = build_parser_tables(grammar)
    store = GrammarMaskStore(tables, vocabulary, token_trie(vocabulary))
    compiled = CompiledGrammar(grammar, vocabulary, store=store)
    if cache_dir is not None and not lazy:
        path = Path(cache_dir) / f"{grammar_digest(tables.grammar)[:24]}-{vocabulary.fingerprint[:24]}.npz"
        compiled.cache_path = path
        if path.exists():
            store.load(path)
    return compiled
