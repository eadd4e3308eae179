"""Overlapping object/array value classes, contains counts, complements of arrays and of
closed objects.

These are the cases where the grammar must read values that several alternatives share a
first token for (two object-valued branches for one key, an item matching `contains` or
not) and decide at the end which one it read. Oracle: the jsonschema package on every
small instance built from a pool of values, plus random walks through the masks, whose
every finished text must validate.
"""

from __future__ import annotations

import itertools
import json

import jsonschema
import pytest

import gramalign as ga
from gramalign.grammar.parser import IncrementalParser, build_parser_tables

from grammar_walks import is_valid_text, random_texts

POOL = [None, 0, 1, -1, 2.5, "a", "b", True, {}, {"x": 1}, {"y": True}, {"t": "a"}, {"t": "b"}, {"t": "a", "u": 1}]

SCHEMAS = {
    "object-valued branches for one key": {"anyOf": [
        {"type": "object", "properties": {"a": {"type": "object", "properties": {"x": {"type": "integer"}},
                                                "required": ["x"]}, "k": {"const": 1}},
         "required": ["a", "k"], "additionalProperties": False},
        {"type": "object", "properties": {"a": {"type": "object", "properties": {"y": {"type": "boolean"}},
                                                "required": ["y"]}, "k": {"const": 2}},
         "required": ["a", "k"], "additionalProperties": False}]},
    "contains with object items and maxContains": {
        "type": "array", "items": {"type": "object", "properties": {"t": {"enum": ["a", "b"]}}, "required": ["t"]},
        "contains": {"properties": {"t": {"const": "a"}}}, "maxContains": 2, "maxItems": 4},
    "minContains after a prefix": {"type": "array", "prefixItems": [{"type": "integer"}],
                                   "contains": {"type": "string"}, "minContains": 2},
    "two contains in allOf": {"allOf": [{"contains": {"type": "string"}}, {"contains": {"type": "object"},
                                                                           "maxContains": 1}]},
    "oneOf over arrays (complement of items)": {"oneOf": [{"type": "array", "items": {"type": "integer"}},
                                                          {"type": "array", "items": {"type": "number",
                                                                                      "minimum": 0}}]},
    "not prefixItems": {"type": "array", "not": {"prefixItems": [{"type": "string"}], "items": False}},
    "if contains then maxItems": {"if": {"contains": {"const": "a"}}, "then": {"maxItems": 2},
                                  "else": {"minItems": 1}},
    "minContains 0 with maxContains": {"contains": {"type": "object"}, "minContains": 0, "maxContains": 1},
}


def _instances():
    for length in range(4):
        for combo in itertools.product(POOL, repeat=length):
            yield list(combo)
    yield from POOL
    for a in POOL:
        for k in (1, 2, 3):
            yield {"a": a, "k": k}
            yield {"k": k, "a": a}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_grammar_agrees_with_jsonschema_on_every_small_instance(name):
    schema = SCHEMAS[name]
    grammar = ga.Grammar.from_json_schema(schema)
    parser = IncrementalParser(build_parser_tables(grammar))
    validator = jsonschema.Draft202012Validator(schema)
    disagreements = []
    for instance in _instances():
        text = json.dumps(instance, separators=(",", ":"))
        expected = validator.is_valid(instance)
        if isinstance(instance, dict) and list(instance) != ["a", "k"] and expected:
            continue  # property_order="schema": only the schema's key order is generated
        if parser.accepts(text.encode()) != expected:
            disagreements.append((text, expected))
    assert not disagreements, disagreements[:10]


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_every_walk_through_the_masks_is_valid(name):
    schema = SCHEMAS[name]
    texts = random_texts(ga.Grammar.from_json_schema(schema), 40, seed=3)
    assert len(texts) >= 20
    for text in texts:
        assert is_valid_text(schema, text), text


CLOSED_OBJECT_SCHEMAS = {
    "not a closed object": {"type": "object", "not": {"properties": {"a": {"type": "integer"}},
                                                      "additionalProperties": False}},
    "not patternProperties": {"type": "object", "not": {"patternProperties": {"^x": {"type": "string"}}}},
    "oneOf a closed and an open object": {"oneOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
        {"type": "object", "properties": {"b": {"type": "integer"}}}]},
    "not not a closed object": {"type": "object", "not": {"not": {
        "patternProperties": {"^x": {"type": "string"}}, "additionalProperties": False}}},
    "if a closed object": {"type": "object", "if": {"properties": {"k": {"const": 1}}, "required": ["k"],
                                                    "additionalProperties": False},
                           "then": {"maxProperties": 1}, "else": {"minProperties": 2}},
}


@pytest.mark.parametrize("name", list(CLOSED_OBJECT_SCHEMAS))
def test_complements_of_closed_objects_agree_with_jsonschema(name):
    """Every object of up to two members over a few keys and values, in every key order."""
    schema = CLOSED_OBJECT_SCHEMAS[name]
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_json_schema(schema, property_order="any")))
    validator = jsonschema.Draft202012Validator(schema)
    disagreements = []
    for size in range(3):
        for keys in itertools.permutations(["a", "b", "k", "x1", "zz"], size):
            for values in itertools.product([None, 0, 1, "s", {}, {"a": 1}], repeat=size):
                instance = dict(zip(keys, values))
                text = json.dumps(instance, separators=(",", ":"))
                if parser.accepts(text.encode()) != validator.is_valid(instance):
                    disagreements.append(text)
    assert not disagreements, disagreements[:10]


def test_contains_limits_are_clear_errors():
    with pytest.raises(ga.SchemaCompileError) as error:
        ga.Grammar.from_json_schema({"contains": {"type": "string"}, "minContains": 1000})
    assert error.value.keyword == "minContains" and error.value.pointer == ""
    with pytest.raises(ga.SchemaCompileError) as error:
        ga.Grammar.from_json_schema({"contains": {"type": "string"}, "maxContains": -1})
    assert error.value.keyword == "maxContains"


def test_any_order_for_large_objects_tracks_required_names():
    """Above 10 names only required names are remembered: every order of a valid object is
    accepted, a missing or repeated required name is rejected, and an optional name may
    repeat (its last value is what parsers keep, and each one is valid)."""
    names = [f"p{i}" for i in range(12)]
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names},
              "required": ["p0", "p5", "p11"], "additionalProperties": False}
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_json_schema(schema, property_order="any")))
    validator = jsonschema.Draft202012Validator(schema)
    import random

    rng = random.Random(5)
    for _ in range(300):
        members = [(n, rng.choice([1, "x"])) for n in rng.sample(names, rng.randint(0, 12))]
        text = "{" + ",".join(f'"{n}":{json.dumps(v)}' for n, v in members) + "}"
        assert parser.accepts(text.encode()) == validator.is_valid(dict(members)), text
    assert not parser.accepts(b'{"p0":1,"p5":2,"p11":3,"p0":4}')  # a required name twice
    assert parser.accepts(b'{"p1":1,"p0":1,"p5":2,"p1":7,"p11":3}')  # an optional one twice
