"""Parser tables built where the parser goes (grammar/parser_tables_lazy.py): a JSON Schema's
rules emitted on demand, LR(0) states and lexer starts built when a stack first lands there.

Oracles: the eager grammar and tables of the same schema: the incremental parser accepts the
same texts (instances jsonschema judges, and damaged copies), and matchers give the same
masks along random walks, with brute force over the vocabulary at some steps.
"""

from __future__ import annotations

import json
import random

import jsonschema
import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.json_schema import lazy_json_schema_rules
from gramalign.grammar.lalr_kernels import UNBUILT
from gramalign.grammar.parser_tables_lazy import LazyParserTables
from gramalign.masking.cfg import GrammarMaskStore
from gramalign.masking.compiler import CompiledGrammar, token_trie
from gramalign.parsing import IncrementalParser

from support.mask_walks import lockstep_walks
from support.random_schemas import InstanceGenerator, SchemaGenerator, serialize
from support.shared_data import maskbench_files
from support.vocabularies import gpt2_vocabulary


def lazy_tables(schema) -> LazyParserTables:
    emitter = lazy_json_schema_rules(schema, strict=False)
    return LazyParserTables(emitter, emitter.start)


def lazy_compiled(schema, vocab) -> CompiledGrammar:
    """What ``ga.compile`` makes of a JSON Schema by default."""
    compiled = ga.compile(ga.Grammar.from_json_schema(schema, strict=False), vocab, cache=False)
    assert isinstance(compiled.store.tables, LazyParserTables)
    return compiled


SCHEMAS = {
    "object": {"type": "object", "properties": {
        "id": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}},
        "kind": {"anyOf": [{"type": "null"}, {"enum": ["a", "bc"]},
                           {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]}]},
        "nested": {"type": "object", "properties": {"deep": {"type": "array", "items": {"type": "number"}}}},
    }, "required": ["id"]},
    "recursive": {"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "string", "pattern": "^[a-z]+$"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"]}}, "$ref": "#/$defs/node"},
    "counted": {"type": "object", "properties": {"name": {"type": "string", "minLength": 3, "maxLength": 200},
                                                 "code": {"type": "string", "pattern": "^[A-Z]+$", "maxLength": 90}},
                "required": ["name"]},
    "formats": {"type": "object", "properties": {"when": {"type": "string", "format": "date"},
                                                 "mail": {"type": "string", "format": "email"},
                                                 "n": {"type": "number", "exclusiveMaximum": 10}}},
}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_lazy_tables_accept_what_the_eager_tables_accept(name):
    schema = SCHEMAS[name]
    eager = IncrementalParser(ga.compile(ga.Grammar.from_json_schema(schema, strict=False), gpt2_vocabulary(), eager=True)
                              .store.tables)
    lazy = IncrementalParser(lazy_tables(schema))
    rng = random.Random(len(name))
    validator = jsonschema.Draft202012Validator(schema)
    checked = 0
    for value in InstanceGenerator(rng, schema).candidates(40):
        text = serialize(value)
        for candidate in (text, text[:-1], text[1:], text.replace(",", ",,", 1)):
            data = candidate.encode()
            assert lazy.accepts(data) == eager.accepts(data), candidate
            assert lazy.is_prefix(data) == eager.is_prefix(data), candidate
            checked += 1
        assert lazy.accepts(text.encode()) == validator.is_valid(value) or not eager.accepts(text.encode())
    assert checked >= 100


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_masks_of_lazy_and_eager_tables_agree_along_random_walks(name):
    vocab = gpt2_vocabulary()
    schema = SCHEMAS[name]
    eager = ga.compile(ga.Grammar.from_json_schema(schema, strict=False), vocab, cache=False, eager=True)
    assert lockstep_walks(lazy_compiled(schema, vocab), eager, 7, 4, 40) >= 40


@pytest.mark.parametrize("seed", range(3))
def test_random_schemas_lazy_and_eager_masks_agree(seed):
    vocab = gpt2_vocabulary()
    rng = random.Random(seed)
    compared = 0
    for _ in range(5):
        schema = SchemaGenerator(rng).schema()
        try:
            eager = ga.compile(ga.Grammar.from_json_schema(schema, strict=False), vocab, cache=False, eager=True)
        except ga.SchemaCompileError:
            continue
        compared += lockstep_walks(lazy_compiled(schema, vocab), eager, seed, 2, 25)
    assert compared >= 20


def test_maskbench_schemas_lazy_and_eager_masks_agree():
    vocab = gpt2_vocabulary()
    compared = schemas = 0
    for path in maskbench_files()[::83][:30]:
        schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        try:
            eager = ga.compile(ga.Grammar.from_json_schema(schema, strict=False), vocab, cache=False, eager=True)
        except ga.GramalignError:
            continue
        compared += lockstep_walks(lazy_compiled(schema, vocab), eager, schemas, 2, 30)
        schemas += 1
    assert schemas >= 20 and compared >= 600


def test_only_the_visited_part_is_built():
    wide = {"type": "object", "properties": {
        "small": {"type": "integer"},
        "big": {"type": "object", "properties": {f"p{i}": {"type": "object", "properties": {
            f"q{j}": {"type": "string", "pattern": f"^x{j}[a-z]+$"} for j in range(20)}} for i in range(20)}}}}
    tables = lazy_tables(wide)
    parser = IncrementalParser(tables)
    assert parser.accepts(b'{"small":3}')
    eager = ga.compile(ga.Grammar.from_json_schema(wide, strict=False), gpt2_vocabulary(), eager=True).store.tables
    built = int((tables.action[:tables.num_states, -1] != UNBUILT).sum())
    assert built < eager.table.num_states / 10
    assert tables.lexer.num_states < eager.lexer.num_states / 5


def test_a_neighbour_that_needs_new_rules_waits_for_a_stack_to_land_there():
    # the state after `"a":` predicts a's value (its shape, rules and lexer start): built when
    # a token reads past the colon, not with the state after the key (most first masks need
    # the state after `{` and its keys, not a member's value)
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}},
              "required": ["a"]}
    tables = lazy_tables(schema)
    after_brace = tables.automaton.row(0).shifts["LBRACE"]
    tables.build(after_brace)
    (after_key,) = tables.automaton.row(after_brace).shifts.values()
    tables.build(after_key)
    (after_colon,) = tables.automaton.row(after_key).shifts.values()
    assert tables.action[after_key, -1] != UNBUILT and tables.action[after_colon, -1] == UNBUILT
    assert tables.automaton.needs_rules(after_colon)
    value_rules = [name for name in tables.source.rules if name.startswith("value") and name != tables.source.start]
    assert value_rules and all(name in tables.source._pending for name in value_rules[1:])  # a's value: not emitted
    assert IncrementalParser(tables).accepts(b'{"a":{"b":"x"}}')  # and built when reached
    assert tables.action[after_colon, -1] != UNBUILT and not tables.automaton.needs_rules(after_colon)


@pytest.mark.parametrize("schema", [
    {"not": {}},
    # (MaskBench's Glaiveai2K calculate_area: every branch excludes a member all three require)
    {"type": "object", "properties": {"d": {"type": "object", "required": ["a", "b"], "oneOf": [
        {"not": {"required": ["b"]}}, {"not": {"required": ["a"]}}]}}, "required": ["d"]},
])
def test_a_schema_that_accepts_nothing_is_refused_as_the_eager_compile_refuses_it(schema):
    with pytest.raises(ga.SchemaCompileError) as eager:
        ga.Grammar.from_json_schema(schema, strict=False).whole()
    with pytest.raises(ga.SchemaCompileError) as lazy:
        lazy_tables(schema)
    assert str(lazy.value) == str(eager.value) and "accepts no JSON value" in str(lazy.value)


def test_an_error_in_a_part_reached_later_is_raised_where_it_is_reached():
    bad = {"type": "object", "properties": {"bad": {"type": "string", "pattern": "(?<=a)b"}}}
    schema = {"type": "object", "properties": {
        "ok": {"type": "integer"},
        "deep": {"type": "object", "properties": {"inner": {"type": "object", "properties": {"more": bad}}}}}}
    with pytest.raises(ga.SchemaCompileError, match="lookbehind"):
        ga.Grammar.from_json_schema(schema, strict=False).whole()  # the eager compile refuses it at once
    vocab = gpt2_vocabulary()
    compiled = lazy_compiled(schema, vocab)  # (the eager compile refused it)
    byte_token = {data: t for t, data in enumerate(vocab.token_bytes) if len(data) == 1}
    matcher = compiled.matcher()
    for char in '{"ok":1}':
        assert byte_token[char.encode()] in matcher.allowed_token_ids().tolist()
        matcher.accept_token(byte_token[char.encode()])
    assert matcher.can_terminate()
    matcher = compiled.matcher()
    text = '{"deep":{"inner":{"more":{'
    for k, char in enumerate(text):
        try:
            matcher.allowed_token_ids()
        except ga.SchemaCompileError as exc:  # reached: the parser's look-ahead is near the bad part
            assert k >= len('{"deep":{'), k  # not at the root: inside the parts that lead there
            assert (exc.pointer, exc.keyword) == ("/properties/deep/properties/inner/properties/more/properties/bad",
                                                  "pattern")
            break
        matcher.accept_token(byte_token[char.encode()])
    else:
        pytest.fail("the bad part was never reached")
    before = matcher.num_accepted_tokens
    with pytest.raises(ga.SchemaCompileError, match="lookbehind"):  # the same error each time
        matcher.allowed_token_ids()
    assert matcher.num_accepted_tokens == before  # the matcher is unchanged
    matcher.rollback(before)  # and the part of the language away from it still works
    for char in '{"ok":1}':
        matcher.accept_token(byte_token[char.encode()])
    assert matcher.can_terminate()


def lazy_compiled_without_eager(schema, vocab) -> CompiledGrammar:
    store = GrammarMaskStore(lazy_tables(schema), vocab, token_trie(vocab))
    return CompiledGrammar(None, vocab, store=store)


def test_terminals_added_past_64_after_contexts_were_classified():
    # The counted string of "a" is classified while the lexer has a few terminals; "more" then
    # brings 80 keys, and "b", a string of the same automaton with other bounds, takes its
    # context from a's (twins), with terminal bitsets of two words now.
    schema = {"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 100},
        "more": {"type": "object", "properties": {
            **{f"key{i}": {"type": "integer"} for i in range(80)},
            "b": {"type": "string", "maxLength": 120}}}}}
    vocab = gpt2_vocabulary()
    lazy = lazy_compiled_without_eager(schema, vocab)
    eager = ga.compile(ga.Grammar.from_json_schema(schema, strict=False), vocab, cache=False, eager=True)
    byte_token = {data: t for t, data in enumerate(vocab.token_bytes) if len(data) == 1}
    a, b = lazy.matcher(), eager.matcher()
    for char in '{"a":"xy","more":{"key3":1,"b":"zz"}}':
        assert np.array_equal(a.allowed_token_ids(), b.allowed_token_ids()), char
        a.accept_token(byte_token[char.encode()])
        b.accept_token(byte_token[char.encode()])
    assert a.can_terminate() and b.can_terminate()
    assert lazy.store.tables.lexer.words == 2


def test_a_dropped_grammar_frees_its_schema_front_end_without_the_cyclic_collector():
    """The emitter's pending rules are closures that name it: a cycle the collector alone
    frees, with every automaton the evaluator holds, in whatever mask sets a collection off.
    Dropping the tables must free the evaluator (and its shapes) at once."""
    import gc
    import weakref

    schema = {"type": "object", "properties": {"a": {"type": "string", "format": "date"},
                                               "b": {"type": "array", "items": {"$ref": "#"}}}}
    enabled = gc.isenabled()
    gc.disable()
    try:
        tables = lazy_tables(schema)
        parser = IncrementalParser(tables)
        assert parser.accepts(b'{"a":"2024-01-02","b":[{}]}')
        evaluator = weakref.ref(tables.source.evaluator)
        del tables, parser
        assert evaluator() is None
    finally:
        if enabled:
            gc.enable()


def test_gotos_merged_as_states_are_built_equal_gotos_packed_at_once():
    # the lazy table adds each built state's gotos to the packed table (merge_goto, copying
    # the old entries around them); oracle: pack_goto over every entry at once
    from gramalign.grammar.lalr_kernels import merge_goto, pack_goto

    rng = np.random.default_rng(5)
    for _ in range(40):
        n_states = int(rng.integers(1, 300))
        rows = [[(int(s), int(x), int(rng.integers(0, n_states))) for x in rng.choice(50, size=int(rng.integers(0, 4)),
                                                                                      replace=False)]
                for s in rng.permutation(n_states)]  # each state's gotos, states in the order built
        packed = pack_goto(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), 1)
        cap, done = 1, 0
        while done < len(rows):  # a few states at a time, the room growing as states come
            upto = done + int(rng.integers(1, 6))
            batch = np.array([e for row in rows[done:upto] for e in row], dtype=np.int64).reshape(-1, 3)
            cap = max(cap, 1 + int(batch[:, 0].max(initial=0)), int(rng.integers(1, 2 * n_states)))
            packed = merge_goto(packed, batch[:, 0], batch[:, 1], batch[:, 2], cap)
            done = upto
            whole = np.array([e for row in rows[:done] for e in row], dtype=np.int64).reshape(-1, 3)
            assert np.array_equal(packed, pack_goto(whole[:, 0], whole[:, 1], whole[:, 2], cap))
