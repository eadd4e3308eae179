"""strict=True: objects that say nothing about extra keys are closed.

Oracles are hand-written schemas with ``additionalProperties: false`` where strict mode should
put it, judged by the jsonschema validator: random mask walks must produce texts the closed
schema validates, and a text with an extra key is accepted exactly when strict is off.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Optional

from typing_extensions import TypedDict

import jsonschema
import pydantic
import pytest
from support.grammar_walks import byte_vocabulary, is_valid_text, random_texts

import gramalign as ga
from gramalign.integrations.tools import parse_tool_calls, tool_calling_grammar

INT, STR = {"type": "integer"}, {"type": "string", "maxLength": 6}


class Point(pydantic.BaseModel):
    x: int
    y: int


class Loose(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
    a: int


@dataclasses.dataclass
class Inner:
    n: int


@dataclasses.dataclass
class Outer:
    name: str
    inner: Inner
    maybe: Optional[Inner] = None


class Movie(TypedDict, total=False):
    title: str
    year: int


def closed(properties, required=(), **more):
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False,
            **more}


INNER = closed({"n": INT}, ["n"])
# (what is compiled, options, the hand-written closed schema, texts with extra keys the closed one rejects)
CASES = {
    "pydantic model": (Point, {}, closed({"x": INT, "y": INT}, ["x", "y"]),
                       ['{"x":1,"y":2,"z":[1,2,3]}', '{"x":1,"y":2,"":null}']),
    "nested dataclasses": (Outer, {}, closed({"name": {"type": "string"}, "inner": INNER,
                                              "maybe": {"anyOf": [INNER, {"type": "null"}]}}, ["name", "inner"]),
                           ['{"name":"a","inner":{"n":1,"m":2}}', '{"name":"a","inner":{"n":1},"k":0}',
                            '{"name":"a","inner":{"n":1},"maybe":{"n":2,"x":{}}}']),
    "TypedDict": (Movie, {}, closed({"title": {"type": "string"}, "year": INT}),
                  ['{"title":"x","rating":5}', '{"rating":5}']),
    "schema, strict=True": (
        {"type": "object", "properties": {"p": {"type": "object", "properties": {"q": INT}},
                                          "l": {"type": "array", "items": {"properties": {"v": INT}}},
                                          "d": {"type": "object", "additionalProperties": INT}}},
        {"strict": True},
        closed({"p": closed({"q": INT}), "l": {"type": "array", "items": closed({"v": INT}, type=["object",
                "array", "string", "number", "boolean", "null"])}, "d": {"type": "object", "additionalProperties": INT}}),
        ['{"p":{"q":1,"r":2}}', '{"l":[{"v":1,"w":2}]}', '{"e":1}']),
    "allOf composes": (
        {"allOf": [{"type": "object", "properties": {"a": INT}, "required": ["a"]},
                   {"properties": {"b": STR}, "required": ["b"]}]},
        {"strict": True}, closed({"a": INT, "b": STR}, ["a", "b"]),
        ['{"a":1,"b":"x","c":0}']),
    "draft-04": ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
                  "properties": {"a": INT}}, {"strict": True}, closed({"a": INT}), ['{"a":1,"b":2}']),
}


def _accepts(grammar: ga.Grammar, text: str) -> bool:
    matcher = ga.compile(grammar, byte_vocabulary()).matcher()
    try:
        matcher.accept_string(text)
    except ga.StringRejected:
        return False
    return matcher.can_terminate()


@pytest.mark.parametrize("name", CASES)
def test_random_walks_validate_against_the_closed_schema(name):
    target, options, oracle, _ = CASES[name]
    jsonschema.Draft202012Validator.check_schema(oracle)
    texts = random_texts(ga.Grammar.from_json_schema(target, **options), 60, seed=19)
    assert len(texts) >= 30
    for text in texts:
        assert is_valid_text(oracle, text), text


@pytest.mark.parametrize("name", CASES)
def test_extra_keys_are_rejected_only_when_strict(name):
    target, options, oracle, extras = CASES[name]
    strict = ga.Grammar.from_json_schema(target, **options)
    lax = ga.Grammar.from_json_schema(target, **{**options, "strict": False})
    open_schema = pydantic.TypeAdapter(target).json_schema() if not isinstance(target, dict) else target
    for text in extras:
        assert jsonschema.validators.validator_for(open_schema)(open_schema).is_valid(json.loads(text)), text
        assert not jsonschema.Draft202012Validator(oracle).is_valid(json.loads(text)), text
        assert _accepts(lax, text), text
        assert not _accepts(strict, text), text


def test_defaults_and_explicit_choices_are_kept():
    schema = {"type": "object", "properties": {"a": INT}}
    # strict by default, a schema as a type (issue 40: a model may not invent keys); strict=False: the spec
    assert not _accepts(ga.Grammar.from_json_schema(schema), '{"a":1,"b":2}')
    assert _accepts(ga.Grammar.from_json_schema(schema), '{"a":1}')
    assert _accepts(ga.Grammar.from_json_schema(schema, strict=False), '{"a":1,"b":2}')
    assert _accepts(ga.Grammar.from_json_schema(Loose), '{"a":1,"b":2}')  # extra="allow" writes true
    assert not _accepts(ga.Grammar.from_json_schema(Loose), '{"b":2}')
    assert _accepts(ga.Grammar.from_json_schema(dict[str, int]), '{"k":1}')
    assert _accepts(ga.Grammar.from_json_schema(Point, strict=False), '{"x":1,"y":2,"z":3}')
    for schema in ({"type": "object", "properties": {"a": INT}, "additionalProperties": {"type": "boolean"}},
                   {"type": "object", "properties": {"a": INT}, "unevaluatedProperties": True}):
        assert _accepts(ga.Grammar.from_json_schema(schema, strict=True), '{"a":1,"b":true}')
    # under not, the schema is left as written: "not an object with an integer a"
    negated = {"not": {"type": "object", "properties": {"a": INT}}}
    assert _accepts(ga.Grammar.from_json_schema(negated, strict=True), '{"a":"x"}')
    assert not _accepts(ga.Grammar.from_json_schema(negated, strict=True), '{"a":1,"b":2}')


TOOLS = [{"type": "function", "function": {
    "name": "search_flights", "description": "Find flights",
    "parameters": {"type": "object", "required": ["origin", "destination"],
                   "properties": {"origin": STR, "destination": STR,
                                  "passengers": {"type": "object", "properties": {"adults": INT}}}}}}]


def test_tool_arguments_are_strict_by_default():
    arguments = TOOLS[0]["function"]["parameters"]
    oracle = closed({"origin": STR, "destination": STR, "passengers": closed({"adults": INT})},
                    ["origin", "destination"])
    grammar = tool_calling_grammar(TOOLS, tool_choice="required", parallel_tool_calls=False)
    texts = random_texts(grammar, 40, seed=7)
    assert len(texts) >= 20
    for text in texts:
        (call,) = parse_tool_calls(text.decode()).calls
        jsonschema.validate(call.arguments, oracle)
    extra = ('<tool_call>\n{"name":"search_flights","arguments":{"origin":"a","destination":"b",'
             '"description":{"type":"x"}}}\n</tool_call>')
    jsonschema.validate({"origin": "a", "destination": "b", "description": {"type": "x"}}, arguments)
    assert not _accepts(grammar, extra)
    assert _accepts(tool_calling_grammar(TOOLS, tool_choice="required", parallel_tool_calls=False, strict=False),
                    extra)
