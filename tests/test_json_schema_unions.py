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
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from support.grammar_walks import is_valid_text, random_texts

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
    grammar = ga.Grammar.from_json_schema(schema, strict=False)  # JSON Schema's meaning, as jsonschema
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
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_json_schema(schema, property_order="any",
                                                                               strict=False)))
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
        ga.Grammar.from_json_schema({"contains": {"type": "string"}, "minContains": 1000}).whole()
    assert error.value.keyword == "minContains" and error.value.pointer == ""
    with pytest.raises(ga.SchemaCompileError) as error:
        ga.Grammar.from_json_schema({"contains": {"type": "string"}, "maxContains": -1}).whole()
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


def test_any_order_with_too_many_required_names_reads_that_object_in_schema_order():
    """An object with more than 10 required names cannot remember which were written; under
    property_order='any' it is read in schema order (the rest of the schema keeps any order)
    instead of refusing the schema. Oracle: jsonschema on permutations and omissions."""
    names = [f"r{i}" for i in range(12)]
    inner = {"type": "object", "properties": {n: {"type": "integer"} for n in names}, "required": names,
             "additionalProperties": False}
    schema = {"type": "object", "properties": {"big": inner, "a": {"type": "string"}, "b": {"type": "boolean"}},
              "required": ["big"], "additionalProperties": False}
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_json_schema(schema, property_order="any")))
    validator = jsonschema.Draft202012Validator(schema)
    import random

    rng = random.Random(7)
    for _ in range(200):
        chosen = [n for n in names if rng.random() < 0.9]
        big = {n: rng.choice([1, "x"]) if rng.random() < 0.1 else 1 for n in chosen}
        outer = [("big", big)] + [(k, v) for k, v in (("a", "s"), ("b", True), ("a", 2)) if rng.random() < 0.4]
        rng.shuffle(outer)
        text = "{" + ",".join(f'"{k}":{json.dumps(v, separators=(",", ":"))}' for k, v in outer) + "}"
        valid = validator.is_valid(dict(outer)) and len({k for k, _ in outer}) == len(outer)
        assert parser.accepts(text.encode()) == valid, text
    ordered = json.dumps({n: 1 for n in names}, separators=(",", ":"))
    assert parser.accepts(f'{{"b":false,"big":{ordered}}}'.encode())  # outer object: any order
    swapped = json.dumps({n: 1 for n in names[1::-1] + names[2:]}, separators=(",", ":"))
    assert validator.is_valid({"big": json.loads(swapped)})
    assert not parser.accepts(f'{{"big":{swapped}}}'.encode())  # inner object: schema order only


def test_any_order_min_properties_over_untracked_names_uses_schema_order():
    """minProperties on an object naming more than 10 optional properties: an optional name
    may not repeat there (a repeat would count twice), so the object is read in schema order."""
    names = [f"p{i}" for i in range(12)]
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}, "minProperties": 3,
              "additionalProperties": False}
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_json_schema(schema, property_order="any")))
    validator = jsonschema.Draft202012Validator(schema)
    for size in range(5):
        for keys in itertools.combinations(names[:6], size):
            instance = {k: 1 for k in keys}
            text = json.dumps(instance, separators=(",", ":"))
            assert parser.accepts(text.encode()) == validator.is_valid(instance), text
    assert not parser.accepts(b'{"p0":1,"p0":1,"p0":1}')  # one member, written three times


def test_one_of_many_overlapping_strings_and_numbers_in_one_pass():
    """oneOf keeps the values in exactly one branch: checked against jsonschema on strings and
    numbers around overlapping patterns and ranges; and overlapping pattern branches that
    each appear twice leave nothing (computed in one pass; a pairwise difference of every branch
    with every other took minutes for 1,000 of them)."""
    import jsonschema

    from gramalign.grammar.parser_tables import build_parser_tables
    from gramalign.parsing import IncrementalParser

    schema = {"oneOf": [{"type": "string", "pattern": "^a+$"}, {"type": "string", "pattern": "^a{2,3}$"},
                        {"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 3},
                        {"type": "integer", "maximum": 5}, {"type": "number", "multipleOf": 2}]}
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_json_schema(schema)))
    validator = jsonschema.Draft202012Validator(schema)
    for value in ["", "a", "aa", "aaa", "aaaa", "b", "bb", "bbb", "ab", 0, 1, 2, 3, 4, 5, 6, 7, 8, 2.5, -2, -3]:
        text = json.dumps(value)
        assert parser.accepts(text.encode()) == validator.is_valid(value), value
    patterns = [{"pattern": f"^[a-z]*{chr(97 + i % 26)}[a-z]{{{i % 7}}}$"} for i in range(40)]
    with pytest.raises(ga.SchemaCompileError, match="no JSON value"):  # every pattern is there twice
        ga.Grammar.from_json_schema({"type": "string", "oneOf": patterns * 2}).whole()


def test_one_of_tool_branches_told_apart_by_a_const_name():
    """Branches whose required "name" is a different constant are disjoint without products:
    the oneOf is their union (checked against jsonschema), and 1,000 of them end with a clear
    error in about a second (the pairwise checks took 8 s before reaching it)."""
    import jsonschema

    from gramalign.grammar.parser_tables import build_parser_tables
    from gramalign.parsing import IncrementalParser

    def tool(name: str, argument: dict) -> dict:
        return {"type": "object", "properties": {"name": {"const": name}, "arguments": argument},
                "required": ["name", "arguments"], "additionalProperties": False}

    schema = {"oneOf": [tool("add", {"type": "integer"}), tool("echo", {"type": "string"}),
                        tool("echo2", {"type": "string"})]}
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_json_schema(schema)))
    validator = jsonschema.Draft202012Validator(schema)
    for value in [{"name": "add", "arguments": 1}, {"name": "add", "arguments": "x"}, {"name": "echo", "arguments": "x"},
                  {"name": "echo2", "arguments": "y"}, {"name": "mul", "arguments": 1}, {"name": "echo"}]:
        assert parser.accepts(json.dumps(value, separators=(",", ":")).encode()) == validator.is_valid(value), value
    many = {"oneOf": [tool(f"k{i}", {"type": "integer"}) for i in range(1000)]}
    with pytest.raises(ga.SchemaCompileError, match="more than 64 classes"):
        ga.Grammar.from_json_schema(many).whole()


@pytest.mark.parametrize("order", ["schema", "any"])
def test_any_of_branches_that_each_require_one_more_name(order):
    # anyOf: one base, each branch requires another name: "one of these names is present"
    base = {"type": "object", "properties": {"p": {"type": "integer"}, "q": {"type": "string"},
                                             "r": {"type": "boolean"}, "s": {"type": "null"}, "t": {}},
            "required": ["s"], "additionalProperties": False}
    schema = {"anyOf": [{"allOf": [base, {"required": [name]}]} for name in "pqr"]}
    grammar = ga.Grammar.from_json_schema(schema, property_order=order)
    parser = IncrementalParser(build_parser_tables(grammar))
    validator = jsonschema.Draft202012Validator(schema)
    members = {"p": 1, "q": "x", "r": True, "s": None, "t": 1}
    checked = 0
    for size in range(len(members) + 1):
        for names in itertools.combinations(members, size):
            value = {name: members[name] for name in names}
            text = json.dumps(value, separators=(",", ":"))
            assert parser.accepts(text.encode()) == validator.is_valid(value), text
            checked += validator.is_valid(value)
    assert checked > 5


def _spec(required: str, value: dict, encoding: dict, title: dict) -> dict:
    return {"type": "object", "properties": {"enc": encoding, "title": title, required: value},
            "required": [required], "additionalProperties": False}


# Vega-Lite's top level in small: closed specs told apart by one required name, sharing
# optional names whose object schemas overlap. Telling the encodings apart by complements
# (an object outside three alternatives of four optional properties each is outside them
# in 5 x 5 x 5 ways) multiplied past 64 cases and was refused; the objects are now read by
# one union tagged by the subset of schemas they satisfy.
def _closed(names: str, value: dict) -> dict:
    return {"type": "object", "properties": {p: value for p in names}, "additionalProperties": False}


SHARED_OBJECTS = {"anyOf": [
    _spec("mark", {"type": "string"},
          {"anyOf": [_closed("abcd", {"type": "integer"}), _closed("efgh", {"type": "integer"}),
                     _closed("ijkl", {"type": "null"}),
                     {"type": "object", "properties": {"row": {"type": "string"}}, "required": ["row"]}]},
          {"type": ["string", "object"]}),
    _spec("layer", {"type": "array"},
          {"anyOf": [_closed("abcd", {"type": "string"}), _closed("aefgh", {"type": "boolean"})]},
          {"type": "object", "properties": {"text": {"type": "string"}}}),
    _spec("facet", {"type": "integer"},
          {"type": "object", "properties": {"a": {"type": "number"}}},
          {"type": "string"}),
]}
SHARED_POOLS = {"enc": [{}, {"a": 1}, {"a": "x"}, {"a": True}, {"a": 1.5}, {"row": "r"}, {"row": 1}, {"a": 1, "b": "s"},
                        {"e": 2, "h": 1}, {"e": False}, {"row": "r", "zz": 1}, 3],
                "title": ["t", {}, {"text": "x"}, {"text": 1}, None],
                "mark": ["m", 1], "layer": [[], "l"], "facet": [1, 1.5]}


@pytest.mark.parametrize("order", ["schema", "any"])
def test_any_of_specs_sharing_overlapping_object_schemas(order):
    grammar = ga.Grammar.from_json_schema(SHARED_OBJECTS, property_order=order, strict=False)
    parser = IncrementalParser(build_parser_tables(grammar))
    validator = jsonschema.Draft202012Validator(SHARED_OBJECTS)
    names = list(SHARED_POOLS)
    checked = valid = 0
    for size in range(1, 4):
        for chosen in itertools.combinations(names, size):
            # the pools list names in schema order; any order also reads them backwards
            orders = [chosen] if order == "schema" else [chosen, chosen[::-1]]
            for keys in orders:
                for values in itertools.product(*(SHARED_POOLS[k] for k in keys)):
                    instance = dict(zip(keys, values))
                    expected = validator.is_valid(instance)
                    text = json.dumps(instance, separators=(",", ":"))
                    assert parser.accepts(text.encode()) == expected, text
                    checked += 1
                    valid += expected
    assert checked > 500 and valid > 50, (checked, valid)
    for text in random_texts(grammar, 40, seed=5):
        assert is_valid_text(SHARED_OBJECTS, text), text


def test_competing_value_schemas_that_multiply_out_are_a_clear_error():
    # the value classes of key "v" need "no value contains any of 0..7" beside "some value
    # contains one of 10..17": eight contains conditions on one array, past the limit
    def spec(name: str, first: int) -> dict:
        return {"type": "object", "required": [name], "additionalProperties": False,
                "properties": {"v": {"type": "array", "anyOf": [{"contains": {"const": i}}
                                                                for i in range(first, first + 8)]},
                               name: {"type": "integer"}}}
    with pytest.raises(ga.SchemaCompileError, match=r"contains constraints .* compete for one key .*properties/v"):
        ga.Grammar.from_json_schema({"anyOf": [spec("a", 0), spec("b", 10)]}).whole()
