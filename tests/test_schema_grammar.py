"""``Grammar.from_json_schema`` returns a SchemaGrammar that ``ga.compile`` builds where the
matchers go (json_schema/schema_grammar.py).

Oracles: the whole grammar of the same schema (``whole()``, every rule emitted, its eager
LALR(1) table) and the jsonschema validator; errors against the ones the whole grammar raises.
"""

from __future__ import annotations

import json
import pickle

import jsonschema
import pytest

import gramalign as ga
from gramalign.grammar.json_schema import SchemaGrammar
from gramalign.grammar.parser_tables import ParserTables
from gramalign.grammar.parser_tables_lazy import LazyParserTables
from support.vocabularies import gpt2_vocabulary

SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer", "minimum": 0},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}},
    "kind": {"enum": ["a", "b"]}}, "required": ["id"]}

BIG = 10 ** 40 + 7  # multipleOf needing a remainder automaton past any limit


def byte_tokens(vocab) -> dict:
    return {data: t for t, data in enumerate(vocab.token_bytes) if len(data) == 1}


def walk(matcher, text: str, byte_token: dict) -> None:
    for char in text.encode():
        assert byte_token[bytes([char])] in matcher.allowed_token_ids().tolist(), (text, chr(char))
        matcher.accept_token(byte_token[bytes([char])])


def test_compile_builds_a_schema_where_the_matchers_go_and_eager_builds_it_whole():
    vocab = gpt2_vocabulary()
    grammar = ga.Grammar.from_json_schema(SCHEMA)
    assert isinstance(grammar, SchemaGrammar) and grammar.start == "start"
    lazy = ga.compile(grammar, vocab, cache=False)
    eager = ga.compile(grammar, vocab, cache=False, eager=True)
    assert isinstance(lazy.store.tables, LazyParserTables)
    assert isinstance(eager.store.tables, ParserTables)
    byte_token = byte_tokens(vocab)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for value in ({"id": 3}, {"id": 0, "tags": ["ab", ""], "kind": "b"}, {"id": 12, "kind": "a"}):
        text = json.dumps(value, separators=(",", ":"))
        assert validator.is_valid(value)
        for compiled in (lazy, eager):
            matcher = compiled.matcher()
            walk(matcher, text, byte_token)
            assert matcher.can_terminate(), text
    for bad in ('{"id":-1', '{"tags":["abcde', '{"kind":"c', '{"id":1,"x'):
        for compiled in (lazy, eager):
            matcher = compiled.matcher()
            with pytest.raises(ga.TokenRejected):
                for char in bad.encode():
                    matcher.accept_token(byte_token[bytes([char])])


def test_equal_schemas_make_equal_grammars_that_share_one_compile():
    vocab = gpt2_vocabulary()
    a = ga.Grammar.from_json_schema(SCHEMA)
    b = ga.Grammar.from_json_schema(json.dumps(SCHEMA))
    assert a == b and hash(a) == hash(b) and a is not b
    assert ga.compile(a, vocab) is ga.compile(b, vocab)
    assert a != ga.Grammar.from_json_schema(SCHEMA, whitespace="flexible")
    assert a != ga.Grammar.from_json_schema(SCHEMA, strict=False)  # objects closed or not
    assert a != a.whole() and a.whole() == ga.Grammar.from_json_schema(SCHEMA).whole()
    registry = {"http://example.invalid/s.json": {"type": "integer"}}
    ref = {"$ref": "http://example.invalid/s.json"}
    first = ga.Grammar.from_json_schema(ref, registry=registry)
    assert first == first and first != ga.Grammar.from_json_schema(ref, registry=registry)  # documents may differ


def test_the_whole_grammar_is_what_the_rules_and_pickles_hold():
    grammar = ga.Grammar.from_json_schema(SCHEMA)
    whole = grammar.whole()
    assert type(whole) is ga.Grammar and whole is grammar.whole()
    assert grammar.rules == whole.rules and grammar.terminals == whole.terminals
    copy = pickle.loads(pickle.dumps(grammar))
    assert type(copy) is ga.Grammar and copy == whole
    assert "SchemaGrammar" in repr(grammar) and grammar.single_terminal() is None


def test_a_grammar_is_hashed_once_and_its_hash_does_not_travel_in_a_pickle():
    whole = ga.Grammar.from_json_schema(SCHEMA).whole()
    again = ga.Grammar.from_json_schema(json.dumps(SCHEMA)).whole()
    assert whole is not again and whole == again and hash(whole) == hash(again)
    assert whole.__dict__["_hash"] == hash(whole)  # kept: a server hashes it on every request
    copy = pickle.loads(pickle.dumps(whole))
    assert "_hash" not in copy.__dict__  # str hashes differ between processes
    assert copy == whole and hash(copy) == hash(whole)
    other = ga.Grammar.from_json_schema({**SCHEMA, "required": []}).whole()
    assert other != whole and len({whole, again, copy, other}) == 2


def test_an_error_in_a_part_is_raised_by_the_step_that_reaches_it_in_the_whole_grammars_words():
    vocab = gpt2_vocabulary()
    schema = {"type": "object", "properties": {"ok": {"type": "integer"},
                                               "n": {"type": "integer", "multipleOf": BIG}}}
    grammar = ga.Grammar.from_json_schema(schema)  # the root is fine: no error yet
    with pytest.raises(ga.SchemaCompileError) as whole:
        grammar.whole()
    assert (whole.value.pointer, whole.value.keyword) == ("/properties/n", "multipleOf")
    with pytest.raises(ga.SchemaCompileError) as eager:
        ga.compile(grammar, vocab, cache=False, eager=True)
    assert str(eager.value) == str(whole.value)
    compiled = ga.compile(grammar, vocab, cache=False)
    byte_token = byte_tokens(vocab)
    matcher = compiled.matcher()
    walk(matcher, '{"ok":1}', byte_token)  # a part away from it works
    assert matcher.can_terminate()
    matcher = compiled.matcher()
    raised = None
    for char in '{"n":1':
        try:
            matcher.allowed_token_ids()
        except ga.SchemaCompileError as exc:
            raised = exc
            break
        matcher.accept_token(byte_token[char.encode()])
    assert raised is not None, "the part was never reached"
    assert str(raised) == str(whole.value)  # (the automaton's own error, in the schema's words)
    before = matcher.num_accepted_tokens
    with pytest.raises(ga.SchemaCompileError):
        matcher.allowed_token_ids()
    assert matcher.num_accepted_tokens == before


def test_an_error_in_a_registry_document_reached_later_names_the_document():
    vocab = gpt2_vocabulary()
    registry = {"http://example.invalid/bad.json": {"$defs": {"x": {"type": "no-such-type"}}}}
    schema = {"type": "object", "properties": {"a": {"type": "integer"},
                                               "b": {"$ref": "http://example.invalid/bad.json#/$defs/x"}}}
    grammar = ga.Grammar.from_json_schema(schema, registry=registry)
    compiled = ga.compile(grammar, vocab, cache=False)
    byte_token = byte_tokens(vocab)
    matcher = compiled.matcher()
    with pytest.raises(ga.SchemaCompileError) as caught:
        for char in '{"b":':
            matcher.allowed_token_ids()
            matcher.accept_token(byte_token[char.encode()])
        matcher.allowed_token_ids()
    assert "http://example.invalid/bad.json" in str(caught.value)
    assert (caught.value.pointer, caught.value.keyword) == ("/$defs/x", "type")


@pytest.mark.parametrize("given_to", ["compile", "from_json_schema"])
def test_each_lazy_build_runs_under_the_limits_it_was_given(given_to):
    # max_rules is read where the rules of "a" are emitted: by the step that reaches them
    vocab = gpt2_vocabulary()
    schema = {"type": "object", "properties": {"ok": {"type": "integer"}, "a": {"minItems": 501}}}
    small = ga.CompileLimits(max_rules=500)
    grammar = ga.Grammar.from_json_schema(schema, limits=small if given_to == "from_json_schema" else None)
    compiled = ga.compile(grammar, vocab, cache=False, limits=small if given_to == "compile" else None)
    byte_token = byte_tokens(vocab)
    matcher = compiled.matcher()
    walk(matcher, '{"ok":2}', byte_token)
    matcher = compiled.matcher()
    with pytest.raises(ga.LimitExceeded, match="max_rules=500") as info:
        for char in '{"a":':
            matcher.allowed_token_ids()
            matcher.accept_token(byte_token[char.encode()])
        matcher.allowed_token_ids()
    assert info.value.where == "#/properties/a/minItems"
    # without the limits, the same part builds
    matcher = ga.compile(ga.Grammar.from_json_schema(schema), vocab, cache=False).matcher()
    walk(matcher, '{"a":[', byte_token)
