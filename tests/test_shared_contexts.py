"""The cross-grammar cache of context classifications (gramalign.masking.cfg.shared_contexts).

Independent oracle: a mask store that never uses the cache (``shared=None``) — itself
checked against brute force in test_grammar_masks.py — must give the same mask at every
step of random walks, for a second grammar served only from entries the first grammar
made; and signatures must tell apart contexts that differ in anything the classification
reads.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

import gramalign as ga
from types import SimpleNamespace

from gramalign.grammar.lexer import build_lexer
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.masking.compiler import CompiledGrammar, token_trie
from gramalign.grammar.automata.kernels import column_classes
from gramalign.masking.cfg.shared_contexts import MAX_SIGNATURE_STATES, ContextClassificationCache, context_signature
from gramalign.masking.cfg import GrammarMaskStore, contexts

from support.mask_walks import lockstep_walks
from support.vocabularies import gpt2_vocabulary

SCHEMA_A = {"type": "object", "properties": {
    "name": {"type": "string"}, "age": {"type": "integer"},
    "tags": {"type": "array", "items": {"type": "string"}}, "ok": {"type": "boolean"}},
    "required": ["name", "age", "tags", "ok"]}
SCHEMA_B = {"type": "object", "properties": {
    "title": {"type": "string"}, "score": {"type": "number"}, "count": {"type": "integer"},
    "notes": {"type": "array", "items": {"type": "string"}}},
    "required": ["title", "score", "count", "notes"]}


def compiled_with(grammar: ga.Grammar, vocabulary: ga.Vocabulary, shared) -> CompiledGrammar:
    store = GrammarMaskStore(build_parser_tables(grammar), vocabulary, token_trie(vocabulary), shared=shared)
    return CompiledGrammar(grammar, vocabulary, store=store)


@pytest.mark.parametrize("share_after_nodes", [0, contexts.SHARE_AFTER_NODES])
def test_second_schema_served_from_first_schemas_entries_matches_fresh_store(share_after_nodes, monkeypatch):
    monkeypatch.setattr(contexts, "SHARE_AFTER_NODES", share_after_nodes)  # 0: every context is shared
    vocab = gpt2_vocabulary()
    cache = ContextClassificationCache()
    # the schemas as the spec reads them (open objects), whose contexts this test counts on sharing
    first = compiled_with(ga.Grammar.from_json_schema(SCHEMA_A, strict=False), vocab, cache)
    lockstep_walks(first, compiled_with(ga.Grammar.from_json_schema(SCHEMA_A, strict=False), vocab, None), 1, 6, 40)
    # With the default threshold nothing of these schemas is shared: the only large contexts,
    # string bodies and keys, take their text tokens as blocks (test_text_blocks.py) instead.
    assert (len(cache) > 0) == (share_after_nodes == 0)
    cache.max_bytes = cache.nbytes  # from now on, every hit is an entry the first schema made
    hits_before = cache.hits
    second = compiled_with(ga.Grammar.from_json_schema(SCHEMA_B, strict=False), vocab, cache)
    compared = lockstep_walks(second, compiled_with(ga.Grammar.from_json_schema(SCHEMA_B, strict=False), vocab, None),
                              2, 6, 40)
    assert compared > 100
    if share_after_nodes == 0:
        assert cache.hits > hits_before  # numbers, punctuation, whitespace were shared


def test_builtin_json_and_a_schema_share_entries_exactly(monkeypatch):
    monkeypatch.setattr(contexts, "SHARE_AFTER_NODES", 0)
    vocab = gpt2_vocabulary()
    cache = ContextClassificationCache()
    builtin = compiled_with(ga.Grammar.builtin("json"), vocab, cache)
    lockstep_walks(builtin, compiled_with(ga.Grammar.builtin("json"), vocab, None), 3, 4, 40)
    schema = compiled_with(ga.Grammar.from_json_schema(SCHEMA_B), vocab, cache)
    lockstep_walks(schema, compiled_with(ga.Grammar.from_json_schema(SCHEMA_B), vocab, None), 4, 4, 40)


# -- signatures -------------------------------------------------------------------------

WORDS = """
start: item+
item: WORD | NUMBER
WORD: /[a-z]+/
NUMBER: /[0-9]+/
%ignore " "
"""

WORDS_ONLY = """
start: WORD+
WORD: /[a-z]+/
%ignore " "
"""


@lru_cache(maxsize=None)
def tables_of(text_or_grammar):
    """The grammar's terminals in one lexer with a single start (state 0) that tracks them
    all, so that a signature can be taken under any candidate set (the tests below make up
    candidate sets no parser state has)."""
    grammar = ga.Grammar.from_lark(text_or_grammar) if isinstance(text_or_grammar, str) else text_or_grammar
    tables = build_parser_tables(grammar)
    return SimpleNamespace(lexer=build_lexer(tables.lexer.terminals), term_column=tables.term_column)


INITIAL = 0


def lexer_state(tables, data: bytes) -> int:
    q = INITIAL
    for byte in data:
        q = int(tables.lexer.transitions[q, byte])
        assert q >= 0
    return q


def signature(tables, start: int, cand: np.ndarray, term_column=None, shadows=()) -> bytes:
    lexer = tables.lexer
    shadow_states = np.array([s for s, _ in shadows], dtype=np.int32)
    shadow_cands = np.array([c for _, c in shadows], dtype=np.uint64).reshape(len(shadows), lexer.words)
    sig, real_of = context_signature(lexer.transitions, lexer.accept_bits, lexer.alive_bits, np.int64(INITIAL),
                                     (lexer.transitions[INITIAL] >= 0).astype(np.uint8),
                                     tables.term_column if term_column is None else term_column, cand,
                                     shadow_states, shadow_cands, np.int64(start),
                                     *column_classes(lexer.transitions), MAX_SIGNATURE_STATES)
    assert sig.size
    return sig.tobytes()


def test_signature_reads_which_terminals_are_ignored():
    tables = tables_of(WORDS)
    lexer = tables.lexer
    word = lexer_state(tables, b"ab")
    cand = lexer.bits_of(["WORD", "NUMBER"] + [t.name for t in lexer.terminals if t.name not in ("WORD", "NUMBER")])
    columns = tables.term_column.copy()
    column_of_word = lexer.terminal_index("WORD")
    assert columns[column_of_word] >= 0
    ignored = columns.copy()
    ignored[column_of_word] = -1  # the word would now be skipped like whitespace
    assert signature(tables, word, cand) != signature(tables, word, cand, ignored)
    assert signature(tables, word, cand) == signature(tables, word, cand, columns)


def test_signature_reads_the_candidates():
    # At the start of a lexeme a digit starts an inside token or a rejected one.
    tables = tables_of(WORDS)
    lexer = tables.lexer
    others = [t.name for t in lexer.terminals if t.name not in ("WORD", "NUMBER")]
    with_numbers = lexer.bits_of(["WORD", "NUMBER"] + others)
    without_numbers = lexer.bits_of(["WORD"] + others)
    assert signature(tables, INITIAL, with_numbers) != signature(tables, INITIAL, without_numbers)
    # Inside a word, after which no ignored lexeme can end, the candidates the word cannot
    # become are never read: the same entry serves both.
    word = lexer_state(tables, b"ab")
    assert signature(tables, word, with_numbers) == signature(tables, word, without_numbers)


def test_signature_tells_a_byte_no_terminal_starts_from_one_no_candidate_starts():
    # After "ab" with only WORD (and whitespace) as candidates, a digit ends the word and
    # starts nothing the parser could take. With a NUMBER terminal in the grammar the digit
    # still starts a lexeme (so the token needs the parser); without it the token is
    # rejected by the lexer alone. Everything else the classification reads is equal.
    with_numbers, words_only = tables_of(WORDS), tables_of(WORDS_ONLY)
    sigs = []
    for tables in (with_numbers, words_only):
        lexer = tables.lexer
        cand = lexer.bits_of([t.name for t in lexer.terminals if t.name != "NUMBER"])
        sigs.append(signature(tables, lexer_state(tables, b"ab"), cand))
    assert sigs[0] != sigs[1]


def test_signature_is_shared_by_product_states_that_behave_alike():
    # Inside a JSON string value the product lexer still tracks which key literals the
    # text could be; with only string terminals as candidates none of that is read, so
    # one signature serves every such state.
    tables = tables_of(ga.Grammar.from_json_schema(SCHEMA_A))
    lexer = tables.lexer
    first, second = lexer_state(tables, b'"na'), lexer_state(tables, b'"zz')
    assert first != second
    strings = lexer.bits_of([t.name for t in lexer.terminals if t.name.startswith("STRING")])
    assert signature(tables, first, strings) == signature(tables, second, strings)
    keys = lexer.bits_of([t.name for t in lexer.terminals if t.name.startswith("KEY")])
    assert signature(tables, first, keys) != signature(tables, second, keys | strings)


@pytest.mark.parametrize("data", [b"ab", b"a", b"12"])
def test_signature_with_shadows_differs_from_without(data):
    tables = tables_of(WORDS)
    lexer = tables.lexer
    cand = lexer.bits_of([t.name for t in lexer.terminals])
    q = lexer_state(tables, data)
    plain = signature(tables, INITIAL, cand)
    shadowed = signature(tables, INITIAL, cand, shadows=[(q, cand)])
    assert plain != shadowed
