"""Contexts that take a free partner's token classes (gramalign.masking.cfg.derived_contexts):
the prefixes of an object's keys among named ones.

Oracles: a store that classifies every context itself (derivation switched off), brute force
over the vocabulary, and, for the kernel, classifying both contexts by a walk of every token.
"""

from __future__ import annotations

import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.masking.cfg import GrammarMaskStore
from gramalign.masking.cfg.derived_contexts import MAX_PAIRS, behaves_alike, free_partner
from gramalign.masking.compiler import CompiledGrammar, token_trie
from gramalign.parsing import IncrementalParser
from gramalign.parsing.state import LEXEME, STACK

from oracles.brute_force_masks import brute_force_allowed
from support.mask_walks import lockstep_walks
from support.vocabularies import gpt2_vocabulary

NAMES = ("name", "names", "nickname", "id", "idx", "kind", "tags", "note")
NAMED = {name: {"type": "integer"} for name in NAMES}

SCHEMAS = [
    {"type": "object", "properties": NAMED},  # any other key too
    {"type": "object", "properties": NAMED, "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": NAMED, "required": ["nickname", "kind"], "maxProperties": 4,
     "additionalProperties": {"type": "boolean"}},
    # keys by pattern beside names, no others
    {"type": "object", "properties": NAMED, "patternProperties": {"^n": {"type": "string"}},
     "additionalProperties": False},
    {"type": "object", "properties": NAMED, "propertyNames": {"maxLength": 6}},
    {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "object", "properties": NAMED},
                                                                 "name": {"type": "null"}}}},
]

PREFIXES = ("n", "na", "nam", "ni", "nick", "i", "id", "k", "ta", "no", "q", "x1")


def _compiled(schema):
    vocab = gpt2_vocabulary()
    grammar = ga.Grammar.from_json_schema(schema, strict=False)  # open objects: keys beside the named ones
    trie = token_trie(vocab)
    stores = [GrammarMaskStore(build_parser_tables(grammar), vocab, trie, shared=None) for _ in range(2)]
    stores[1].contexts._derived = lambda *args: None  # every context classified itself
    return [CompiledGrammar(grammar, vocab, store=store) for store in stores], stores


def _prefix_masks_agree(derived: CompiledGrammar, classified: CompiledGrammar, opening: str) -> None:
    vocab = derived.vocabulary
    byte_token = {data[0]: token for token, data in enumerate(vocab.token_bytes) if len(data) == 1}
    for key in PREFIXES:
        a, b = derived.matcher(), classified.matcher()
        text = b""
        for byte in (opening + key).encode():
            if not b.try_accept_token(byte_token[byte]):
                assert not a.try_accept_token(byte_token[byte]), text
                break
            a.accept_token(byte_token[byte])
            text += bytes([byte])
            allowed = a.allowed_token_ids()
            assert np.array_equal(allowed, b.allowed_token_ids()), text
        assert np.array_equal(a.allowed_token_ids(), np.flatnonzero(brute_force_allowed(classified, text))), text


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_masks_of_derived_contexts_equal_masks_of_contexts_classified_each(index):
    (derived, classified), stores = _compiled(SCHEMAS[index])
    _prefix_masks_agree(derived, classified, '[{"' if index == 5 else '{"')
    assert lockstep_walks(derived, classified, index, 6, 40) >= 30


def test_prefixes_of_named_keys_are_derived_from_one_partner():
    (derived, classified), stores = _compiled(SCHEMAS[0])
    _prefix_masks_agree(derived, classified, '{"')
    entries = stores[0].contexts.entries
    taken = [entry for entry in entries.values() if entry.derived_reach is not None]
    assert len(taken) >= 6
    # one partner: every derived context shares its inside tokens
    assert len({id(entry.inside) for entry in taken}) == 1
    assert len(entries) < len(stores[1].contexts.entries) + 2


def test_a_stack_that_refuses_a_terminal_the_prefix_can_become_gets_the_real_classes(monkeypatch):
    # After "name" its dependent "names" must come, so the stack refuses some of the keys
    # `"n` can still become: the context's classes are computed.
    schema = {"type": "object", "properties": {"name": {"type": "integer"}, "names": {"type": "string"}},
              "dependentRequired": {"name": ["names"]}}
    (derived, classified), stores = _compiled(schema)
    calls = []
    real = stores[0].contexts.classified
    monkeypatch.setattr(stores[0].contexts, "classified", lambda *args: calls.append(args) or real(*args))
    _prefix_masks_agree(derived, classified, '{"name":1,"n')
    assert calls
    assert lockstep_walks(derived, classified, 7, 6, 40) >= 30


def _state_after(compiled: CompiledGrammar, prefix: bytes) -> "tuple[int, np.ndarray]":
    tables = compiled.store.tables
    parser = IncrementalParser(tables)
    hyps, _ = parser.feed(parser.initial_state(), prefix)
    assert hyps is not None and hyps.shape[0] == 1
    state = int(parser.pool.state[hyps[0, STACK]])
    return int(hyps[0, LEXEME]), tables.start_bits[tables.candidate_id[state]]


def _alike(compiled: CompiledGrammar, start: int, partner: int, cand: np.ndarray) -> bool:
    tables = compiled.store.tables
    lexer = tables.lexer
    return bool(behaves_alike(lexer.transitions, lexer.accept_bits, lexer.alive_bits, lexer.class_byte, cand,
                              tables.term_column, np.int32(start), np.int32(partner), MAX_PAIRS))


def test_the_kernel_tells_states_that_end_lexemes_at_other_bytes_apart():
    # After "a a key may end as `"ab"` or as any other key, as after "x: alike; a name that
    # must go on (`"ab` of a schema whose only keys are `ab` and `abc`... closed) is not.
    (open_keys, _), _ = _compiled({"type": "object", "properties": {"ab": {}, "abc": {}}})
    a, cand = _state_after(open_keys, b'{"a')
    x, _ = _state_after(open_keys, b'{"x')
    tables = open_keys.store.tables
    lexer = tables.lexer
    partner = int(free_partner(lexer.transitions, lexer.accept_bits, lexer.alive_bits, lexer.class_byte, cand,
                               tables.reach_bits, tables.reach_done, np.int32(a)))
    assert partner >= 0 and _alike(open_keys, a, partner, cand) and _alike(open_keys, a, x, cand)
    # Closed: after "a only `b` goes on, after "ab `"` may end the key: not like each other.
    (closed, _), _ = _compiled({"type": "object", "properties": {"ab": {}, "abc": {}},
                                "additionalProperties": False})
    a, cand = _state_after(closed, b'{"a')
    ab, _ = _state_after(closed, b'{"ab')
    assert not _alike(closed, a, ab, cand)
    # A number and a key: other bytes end them.
    n, number_cand = _state_after(open_keys, b'{"ab":1')
    assert not _alike(open_keys, n, partner, number_cand)
