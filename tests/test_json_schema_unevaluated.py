"""``unevaluatedProperties`` and ``unevaluatedItems`` against independent oracles.

- The JSON-Schema-Test-Suite groups of both keywords (draft 2020-12 and 2019-09), compiled
  with ``property_order="any"`` and every instance written with its members reversed: the
  grammar's verdict must be the suite's on every instance of every group that compiles,
  and the groups that do not compile are exactly the listed ones (other features).
- Schemas written the way generators write them (pydantic/OpenAPI 3.1 ``allOf`` + ``$ref``,
  a schema for the unevaluated members, tuples, ``contains``, overlapping ``anyOf``), judged
  on every instance of a small enumerated universe by ``jsonschema``'s validator.
- Texts the masks write (random walks over a byte vocabulary) for those schemas: each one
  valid for the validator.
- Random schemas of ``support.random_schemas`` with ``unevaluated*`` keywords sprinkled
  in, judged by the validator on the generator's instances.
"""

from __future__ import annotations

import itertools
import json
import random
import sys

import jsonschema
import pytest

from gramalign.errors import SchemaCompileError
from gramalign.grammar.grammar import Grammar
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from support.grammar_walks import is_valid_text, random_texts
from support.json_instances import reversed_keys
from support.random_schemas import InstanceGenerator, SchemaGenerator, serialize
from support.shared_data import data_dir

# Groups refused for a reason outside these keywords: (draft, file, group) -> why.
SUITE_REFUSALS = {
    # a oneOf of a oneOf of overlapping branches: its complement needs more than 64 cases
    ("draft2020-12", "unevaluatedProperties.json", "dynamic evalation inside nested refs"): "oneOf",
    ("draft2019-09", "unevaluatedProperties.json", "dynamic evalation inside nested refs"): "oneOf",
    # type object, bar required (not not) and forbidden (unevaluated): no value at all
    ("draft2019-09", "unevaluatedProperties.json", "unevaluatedProperties with not"): "empty",
}


def _parser(schema, **options):
    grammar = Grammar.from_json_schema(schema, property_order="any", integer_fraction=True,
                                       **{"strict": False, **options})  # the spec's meaning
    return IncrementalParser(build_parser_tables(grammar))


def _text(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("draft", ["draft2020-12", "draft2019-09"])
@pytest.mark.parametrize("file", ["unevaluatedProperties.json", "unevaluatedItems.json"])
def test_suite_groups(draft, file):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    path = data_dir() / "json-schema-test-suite" / "tests" / draft / file
    refused, disagreements = set(), []
    for group in json.loads(path.read_text(encoding="utf-8")):
        try:
            parser = _parser(group["schema"])
        except SchemaCompileError:
            refused.add((draft, file, group["description"]))
            continue
        for test in group["tests"]:
            for data in (test["data"], reversed_keys(test["data"])):
                if parser.accepts(_text(data)) != test["valid"]:
                    disagreements.append((group["description"], test["description"], _text(data)))
    assert not disagreements, disagreements
    assert refused == {key for key in SUITE_REFUSALS if key[:2] == (draft, file)}


BASE = {"type": "object", "properties": {"id": {"type": "integer"}, "kind": {"enum": ["a", "b"]}},
        "required": ["id"]}
CASES = {
    # pydantic / OpenAPI 3.1: a subclass closes the object its base schema left open
    "allOf-ref-closed": {"$defs": {"base": BASE}, "allOf": [{"$ref": "#/$defs/base"}],
                         "properties": {"name": {"type": "string"}}, "unevaluatedProperties": False},
    "ref-sibling-schema": {"$defs": {"base": BASE}, "$ref": "#/$defs/base",
                           "unevaluatedProperties": {"type": "string"}},
    "schema-for-the-rest": {"type": "object", "properties": {"id": {"type": "string"}},
                            "patternProperties": {"^k": {"type": "integer"}},
                            "unevaluatedProperties": {"type": ["integer", "null"]}},
    "overlapping-anyOf": {"anyOf": [{"properties": {"id": {"type": "integer"}}, "required": ["id"]},
                                    {"properties": {"name": {"type": "string"}}},
                                    {"properties": {"kind": True}, "required": ["kind"]}],
                          "unevaluatedProperties": False},
    "oneOf-tagged": {"oneOf": [{"properties": {"kind": {"const": "a"}, "id": {"type": "integer"}},
                                "required": ["kind"]},
                               {"properties": {"kind": {"const": "b"}, "name": {"type": "string"}},
                                "required": ["kind"]}],
                     "unevaluatedProperties": False},
    "if-then-else": {"if": {"properties": {"kind": {"const": "a"}}, "required": ["kind"]},
                     "then": {"properties": {"id": True}}, "else": {"properties": {"name": True}},
                     "unevaluatedProperties": False},
    "dependentSchemas": {"properties": {"kind": True}, "dependentSchemas": {"kind": {"properties": {"id": True}}},
                         "unevaluatedProperties": {"type": "string"}},
    "not-gives-nothing": {"properties": {"id": True}, "not": {"properties": {"name": {"type": "integer"}},
                                                            "required": ["name"]},
                          "unevaluatedProperties": {"type": "null"}},
}
ITEM_CASES = {
    "after-prefixItems": {"prefixItems": [{"type": "integer"}, {"type": "string"}],
                          "unevaluatedItems": {"type": "null"}},
    "after-items": {"allOf": [{"items": {"type": ["integer", "string"]}}], "unevaluatedItems": False},
    "after-contains": {"contains": {"type": "integer"}, "unevaluatedItems": {"type": "string"}},
    "contains-minContains-0": {"contains": {"type": "string"}, "minContains": 0, "unevaluatedItems": False},
    "anyOf-tuples": {"anyOf": [{"prefixItems": [{"type": "integer"}]},
                               {"prefixItems": [True, {"type": "string"}]}],
                     "unevaluatedItems": False},
    "if-contains": {"if": {"contains": {"type": "null"}}, "then": {"prefixItems": [True, True]},
                    "unevaluatedItems": {"type": "integer"}},
}
NAMES = ("id", "kind", "name", "k2")
VALUES = (1, "a", None)


def _objects():
    """Every object over NAMES with a value from VALUES (and nested {} for variety)."""
    for size in range(len(NAMES) + 1):
        for names in itertools.combinations(NAMES, size):
            for values in itertools.product(VALUES, repeat=size):
                yield dict(zip(names, values))


def _arrays():
    for size in range(4):
        yield from (list(items) for items in itertools.product(VALUES, repeat=size))


@pytest.mark.parametrize("name", list(CASES) + list(ITEM_CASES))
def test_generator_style_schemas(name):
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **(CASES.get(name) or ITEM_CASES[name])}
    validator = jsonschema.Draft202012Validator(schema)
    parser = _parser(schema)
    instances = list(_objects()) if name in CASES else list(_arrays())
    wrong = [(value, validator.is_valid(value)) for value in instances
             if parser.accepts(_text(value)) != validator.is_valid(value)]
    assert not wrong, wrong[:10]
    assert any(validator.is_valid(value) for value in instances)  # not vacuous


# a walk rarely spells a required name among any-string keys before it gives up
UNENDING_WALKS = {"ref-sibling-schema"}


@pytest.mark.parametrize("name", [n for n in list(CASES) + list(ITEM_CASES) if n not in UNENDING_WALKS])
def test_mask_walks_write_valid_instances(name):
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **(CASES.get(name) or ITEM_CASES[name])}
    texts = random_texts(Grammar.from_json_schema(schema, property_order="any"), 25, seed=21)
    assert len(texts) >= 10
    invalid = [text for text in texts if not is_valid_text(schema, text)]
    assert not invalid, invalid[:5]


def test_too_many_overlaps_are_refused_at_the_keyword():
    # seven branches that every object passes, each evaluating its own name: 127 cases
    schema = {"allOf": [{"$ref": "#/$defs/open"}],
              "$defs": {"open": {"anyOf": [{"properties": {f"p{i}": {"type": "integer"}}} for i in range(7)],
                                 "unevaluatedProperties": False}}}
    with pytest.raises(SchemaCompileError) as caught:
        Grammar.from_json_schema(schema, strict=False).whole()  # strict would close the branches first
    assert (caught.value.pointer, caught.value.keyword) == ("/$defs/open", "unevaluatedProperties")


def test_older_drafts_ignore_the_keywords():
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": True},
              "unevaluatedProperties": False}
    assert _parser(schema).accepts(b'{"a":1,"b":2}')


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_DATA = ("const", "enum", "required", "dependentRequired", "type")


def _sprinkle(node, rng: random.Random, depth: int = 0):
    """``node`` with unevaluatedProperties/unevaluatedItems added at random places (in
    place): false, true, or a small schema."""
    if not isinstance(node, dict):
        return node
    for keyword, value in list(node.items()):
        if keyword in _DATA:
            continue
        if keyword in _SCHEMA_MAPS:
            for item in value.values():
                _sprinkle(item, rng, depth + 1)
        elif isinstance(value, list):
            for item in value:
                _sprinkle(item, rng, depth + 1)
        else:
            _sprinkle(value, rng, depth + 1)
    for keyword in ("unevaluatedProperties", "unevaluatedItems"):
        if rng.random() < (0.6 if depth == 0 else 0.25):
            node[keyword] = rng.choice([False, True, {"type": "integer"}, {"type": ["string", "null"]}])
    return node


@pytest.mark.parametrize("seed", [0, 1])
def test_random_schemas_with_unevaluated_keywords(seed):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    rng = random.Random(1000 + seed)
    generator = SchemaGenerator(rng)
    compiled, failures = 0, []
    for _ in range(40):
        schema = _sprinkle(generator.schema(), rng)
        validator = jsonschema.Draft202012Validator(schema)
        instances = InstanceGenerator(rng, schema).candidates(12)
        try:
            parser = _parser(schema)
        except SchemaCompileError as exc:
            if "accepts no JSON value" in exc.message:
                assert not any(validator.is_valid(value) for value in instances), schema
            continue
        compiled += 1
        for value in instances:
            expected = validator.is_valid(value)
            for text in {serialize(value), _text(reversed_keys(value)).decode()}:
                if parser.accepts(text.encode("utf-8")) != expected:
                    failures.append(("INVALID ACCEPTED" if not expected else "valid rejected", json.dumps(schema),
                                     text))
    assert compiled >= 24, compiled
    assert not failures, failures[:10]
