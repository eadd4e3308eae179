"""Load the numba kernels of compiling and masking once, at server start.

``gramalign warm-up [--schemas-only]`` compiles them into numba's cache ahead of a first use,
on :func:`pieces_vocabulary` (``make demo`` runs it beside the installs of a fresh environment).

gramalign's kernels are compiled by numba on first install and loaded from numba's disk
cache in every new process, each on the first call that needs it: 1-20 ms per kernel,
paid by whichever request first compiles a schema with named properties, a counted
string, a pattern, or fills the first mask of such a context. :func:`warm_up` pays all of
it up front, on one small fixed schema and a short walk of its masks, so that the first
request of a worker costs what later ones do.

It computes nothing for the user's schemas: no ``format`` automaton, no mask of their
contexts. What it leaves in the process caches is the fixed schema's own contexts (and
those of a small fixed GBNF grammar, whose walk loads the generalized parser's kernels).
"""

from __future__ import annotations

import time

import numpy as np

from ..grammar.grammar import Grammar
from ..grammar.json_schema.strings import any_string_contents
from ..tokens.vocabulary import Vocabulary
from .bitmask import bitmask_width
from .compiler import compile

# One of each construct whose compile or mask runs its own kernels: named properties (a
# product of key languages), a counted string, a pattern automaton, integers with bounds,
# numbers, an enum, an array, a boolean, optional keys.
_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 0, "maximum": 99999},
        "name": {"type": "string", "minLength": 1, "maxLength": 40},
        "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{1,6}$"},
        "score": {"type": "number"},
        "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 4},
        "ok": {"type": "boolean"},
        "note": {"type": ["string", "null"]},
    },
    "required": ["id", "name", "code"],
}
SAMPLE_TEXT = '{"id":42,"name":"Ada Lovelace","code":"AB-123","score":-1.5e3,"tags":["red"],"ok":true}'
"""A compact instance of the warm-up schema (as emitted)."""
_WALKS = 3
_STEPS = 48
# And a GBNF grammar (lexed every way, ambiguous: the generalized parser's kernels).
_GBNF = 'root ::= e (" " e)*\ne ::= e "+" e | "(" e ")" | num | name\nnum ::= [0-9]+\nname ::= [a-z] [a-z0-9]*\n'
_GBNF_TEXT = "(1+x2)+3+45 ab+c+d"


def warm_up(vocabulary: Vocabulary, *, seed: int = 0, general: bool = True, eager: bool = True) -> float:
    """Load every kernel a schema compile and a mask walk use; returns the seconds it took.
    ``general=False`` leaves out the generalized parser's (a GBNF grammar with conflicts);
    ``eager=False`` leaves out those of a schema's whole tables (``compile(..., eager=True)``,
    and the grammars a server's admission builds, see :mod:`gramalign.integrations.admission`):
    ``compile`` builds a schema's tables where the matchers go.

    Call it once per process after the vocabulary is loaded; a later call loads no kernel
    and costs milliseconds (the fixed schema's lazily built grammar is compiled again: the
    compile cache keeps such a grammar from its second compile, see ``compiler.SEEN_ONCE``).

    >>> import gramalign as ga
    >>> pieces = [bytes([b]) for b in range(256)] + [b"</s>"]
    >>> vocab = ga.Vocabulary.from_token_bytes(pieces, eos_token_ids=[256])
    >>> ga.warm_up(vocab) >= 0
    True
    """
    started = time.perf_counter()
    grammar = Grammar.from_json_schema(_SCHEMA)
    compiled = compile(grammar, vocabulary)
    # a string of a pattern and a format, shown to have a value without their product (see
    # json_schema/nonempty.py; on rules emitted on demand only)
    any_string_contents().common_word(any_string_contents())
    bitmask, drawable = _walk_buffers(vocabulary)
    rng = np.random.default_rng(seed)
    matcher = compiled.matcher()
    matcher.accept_string(SAMPLE_TEXT)  # byte-level: any vocabulary reads it
    matcher.fill_next_token_bitmask(bitmask)
    # Random walks of the masks: every fill kind (fresh contexts, cached ones, counted and
    # pattern blocks) runs at least once. Tokens are drawn from the mask, so never refused.
    for _ in range(_WALKS):
        _random_walk(compiled, bitmask, drawable, rng, _STEPS)
    if general:
        ambiguous = compile(Grammar.from_gbnf(_GBNF), vocabulary)
        matcher = ambiguous.matcher()
        for char in _GBNF_TEXT:  # a mask after each character: lexemes ending, forks, merged stacks
            matcher.accept_string(char)
            matcher.fill_next_token_bitmask(bitmask)
        _random_walk(ambiguous, bitmask, drawable, rng, _STEPS // 4)
    # A key that may still become a name or any other key: its context is derived from a
    # partner's (masking/cfg/derived_contexts), which random tokens seldom write.
    matcher = compiled.matcher()
    matcher.accept_string('{"id":1,"name":"a","code":"AB-1","s')
    matcher.fill_next_token_bitmask(bitmask)
    if eager:  # the same schema's whole tables: the LALR(1) and product-lexer kernels
        built = compile(grammar, vocabulary, eager=True)
        matcher = built.matcher()
        matcher.accept_string(SAMPLE_TEXT[:40])
        matcher.fill_next_token_bitmask(bitmask)
        _random_walk(built, bitmask, drawable, rng, _STEPS)
    return time.perf_counter() - started


def warm_up_masks(vocabulary: Vocabulary, *, seed: int = 1) -> float:
    """The mask kernels first: a random walk of the masks of the built-in JSON grammar (Lark),
    whose compile shares little with a JSON Schema's. ``gramalign warm-up`` runs it in a
    second process beside :func:`warm_up`, which reaches the masks last: with the kernel
    cache's compile locks (:mod:`gramalign.kernel_cache`), the two compile different kernels
    at the same time. Returns the seconds it took."""
    started = time.perf_counter()
    compiled = compile(Grammar.builtin("json"), vocabulary)
    bitmask, drawable = _walk_buffers(vocabulary)
    _random_walk(compiled, bitmask, drawable, np.random.default_rng(seed), _STEPS)
    return time.perf_counter() - started


def _walk_buffers(vocabulary: Vocabulary) -> "tuple[np.ndarray, np.ndarray]":
    """A one-row bitmask and which of its bits a random walk may draw (real tokens, no EOS)."""
    bitmask = np.zeros((1, bitmask_width(vocabulary.size)), dtype=np.int32)
    drawable = np.ones(bitmask.shape[1] * 32, dtype=bool)
    drawable[vocabulary.size:] = False
    drawable[list(vocabulary.eos_token_ids)] = False
    return bitmask, drawable


def _random_walk(compiled, bitmask: np.ndarray, drawable: np.ndarray, rng, steps: int) -> None:
    """Up to ``steps`` masks of a fresh matcher, each token drawn from the mask (never refused)."""
    matcher = compiled.matcher()
    for _ in range(steps):
        matcher.fill_next_token_bitmask(bitmask)
        allowed = np.flatnonzero(np.unpackbits(bitmask[0].view(np.uint8), bitorder="little").view(bool) & drawable)
        if allowed.size == 0:
            break
        matcher.accept_token(int(allowed[rng.integers(allowed.size)]))


def pieces_vocabulary(texts) -> Vocabulary:
    """Every byte, the 2-, 3- and 5-byte pieces of ``texts`` (so that mask walks go deeper than
    one byte) and an EOS token: a vocabulary that compiles the kernels a real one does."""
    pieces = {bytes([b]) for b in range(256)}
    for text in texts:
        data = text.encode()
        pieces.update(data[i:i + n] for n in (2, 3, 5) for i in range(len(data) - n + 1))
    pieces = sorted(pieces) + [b"</s>"]
    return Vocabulary.from_token_bytes(pieces, eos_token_ids=[len(pieces) - 1])
