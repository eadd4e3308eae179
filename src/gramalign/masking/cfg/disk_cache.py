"""A grammar's lexical contexts on disk (a .npz file), for servers that restart.

The file holds each context's token classes, not the stack-dependent parts; it names the
grammar (a hash of everything its masks depend on), the vocabulary (its fingerprint) and
the layout version, and a file made for anything else is ignored with a warning.
"""

from __future__ import annotations

import hashlib
import warnings
import weakref
from pathlib import Path

import numpy as np

from ...grammar.grammar import Grammar
from ...grammar.parser_tables import ParserTables
from ...tokens.vocabulary import Vocabulary
from .contexts import ContextMasks

CACHE_FORMAT = 4
"""Version of the on-disk mask cache layout; files of another version are ignored (2: one
lexer start per candidate set, so lexer states are numbered differently; 3: states of one
terminal numbered in its block, see grammar/lexer_kernels)."""


def grammar_digest(grammar: Grammar) -> str:
    """SHA-256 of everything about ``grammar`` that its masks depend on, as hex; equal grammars
    have equal digests. Computed once per grammar object: a large one's text takes
    milliseconds (a constant array of 100,000 items, 0.2 s), and a server compiles it for
    every request."""
    found = _digests.get(grammar)
    if found is None:
        found = _digests[grammar] = _grammar_digest(grammar)
    return found


def remember_grammar_digest(grammar: Grammar, digest: str) -> None:
    """``digest``, computed by :func:`grammar_digest` in another process (of the same code), is
    ``grammar``'s (see integrations/built_grammars)."""
    _digests[grammar] = digest


_digests: "weakref.WeakKeyDictionary[Grammar, str]" = weakref.WeakKeyDictionary()


TERMINAL_FIELDS = ("name", "pattern", "flags", "priority", "literal", "needs_text_after", "ends_in_word", "length",
                   "whole_text")
GRAMMAR_FIELDS = ("start", "ignore", "indentation", "always_lexed", "strict", "generalized", "every_split", "lr0",
                  "own_longest")
"""What the digest reads besides the rules: every field that equality compares (a test keeps these
lists complete; grammars that differ only in ``every_split``, say, lex the same text otherwise)."""


def _grammar_digest(grammar: Grammar) -> str:
    digest = hashlib.sha256()
    digest.update(repr((CACHE_FORMAT, [tuple(getattr(t, f) for f in TERMINAL_FIELDS) for t in grammar.terminals],
                        [(r.name, r.alternatives, r.priority) for r in grammar.rules],
                        tuple(getattr(grammar, f) for f in GRAMMAR_FIELDS))).encode("utf-8"))
    return digest.hexdigest()


def save_contexts(path: "str | Path", items: "list[tuple[tuple[int, ...], ContextMasks]]", tables: ParserTables,
                  vocabulary: Vocabulary, width: int) -> None:
    """Write the contexts ``items`` (key, masks) to ``path``, atomically."""
    words = tables.lexer.words
    keys = np.array([key for key, _ in items], dtype=np.int64).reshape(len(items), 6)
    group_counts = np.array([e.group_masks.shape[0] for _, e in items], dtype=np.int64)
    dependent_ids = [e.dependent_ids for _, e in items]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp.npz")
    np.savez_compressed(
        temporary,
        format=np.array([CACHE_FORMAT]),
        grammar=np.array([grammar_digest(tables.grammar)]),
        vocabulary=np.array([vocabulary.fingerprint]),
        keys=keys,
        group_counts=group_counts,
        group_reach=np.concatenate([e.group_reach for _, e in items]) if items else np.zeros((0, words), np.uint64),
        group_masks=np.concatenate([e.group_masks for _, e in items]) if items else np.zeros((0, width), np.uint32),
        dependent_counts=np.array([ids.size for ids in dependent_ids], dtype=np.int64),
        dependent_ids=np.concatenate(dependent_ids) if items else np.zeros(0, np.int32),
    )
    temporary.replace(path)  # atomic: readers never see half a file


def load_contexts(path: "str | Path", tables: ParserTables, vocabulary: Vocabulary,
                  width: int) -> "dict[tuple[int, ...], ContextMasks]":
    """The contexts saved in ``path``; empty, with a warning, for a file made for another
    grammar, vocabulary or format, or one that cannot be read."""
    try:
        with np.load(path) as data:
            meta_ok = (int(data["format"][0]) == CACHE_FORMAT
                       and str(data["grammar"][0]) == grammar_digest(tables.grammar)
                       and str(data["vocabulary"][0]) == vocabulary.fingerprint)
            if not meta_ok:
                warnings.warn(f"ignoring mask cache {path}: it was made for another grammar, "
                              "vocabulary or gramalign version", stacklevel=3)
                return {}
            arrays = {name: data[name] for name in ("keys", "group_counts", "group_reach", "group_masks",
                                                    "dependent_counts", "dependent_ids")}
    except (OSError, KeyError, ValueError) as exc:
        warnings.warn(f"ignoring unreadable mask cache {path}: {exc}", stacklevel=3)
        return {}
    group_ends = np.cumsum(arrays["group_counts"])
    dependent_ends = np.cumsum(arrays["dependent_counts"])
    loaded = {}
    for k, key in enumerate(arrays["keys"].tolist()):
        g0 = int(group_ends[k - 1]) if k else 0
        d0 = int(dependent_ends[k - 1]) if k else 0
        group_masks = arrays["group_masks"][g0:group_ends[k]]
        inside = (np.bitwise_or.reduce(group_masks, axis=0) if group_masks.shape[0]
                  else np.zeros(width, np.uint32))
        loaded[tuple(key)] = ContextMasks(inside, arrays["group_reach"][g0:group_ends[k]], group_masks,
                                          arrays["dependent_ids"][d0:dependent_ends[k]].astype(np.int32))
    return loaded
