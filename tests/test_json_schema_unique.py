"""``uniqueItems`` where the items are a few values: exact, against the ``jsonschema`` validator.

Every array of up to three items drawn from a pool of JSON texts is checked, the pool
holding values that are equal as JSON but spelled differently (``1``, ``1.0``, ``1e0``,
``-0``, objects with their keys reordered, ``[1]`` and ``[1.0]``, ``"a"`` and ``"\\u0061"``),
so an array that repeats a value in another spelling must be rejected. The grammar is
compiled with ``integer_fraction=True``, ``property_order="any"`` and
``string_escapes="all"``: then every spelling
of a valid value is in its language, and the verdicts must be equal for every text; except
exponents, which the grammar writes only for unconstrained numbers (it may reject ``1e0``,
never accept an invalid one).
"""

from __future__ import annotations

import itertools
import json

import jsonschema
import pytest

from gramalign.errors import SchemaCompileError
from gramalign.grammar.grammar import Grammar
from gramalign.grammar.json_schema.unique import MAX_UNIQUE_SETS, subsets_needed
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from support.shared_data import data_dir

POOL = ["1", "1.0", "1e0", "2", "2.50", "2.5", "0", "-0", "0.0", "true", "false", "null", '"a"', '"\\u0061"', '"b"',
        "[1]", "[1.0]", "[1,2]", "[2,1]", '{"a":1,"b":2}', '{"b":2,"a":1}', '{"a":1}', "[]", "{}"]


SMALL_POOL = ["1", "1.0", "0", "-0", "true", "null", '"a"', '"\\u0061"', "[1]", "[1.0]", '{"a":1,"b":2}',
              '{"b":2,"a":1}']


def _texts():
    yield "[]"
    for size, pool in ((1, POOL), (2, POOL), (3, SMALL_POOL)):
        for items in itertools.product(pool, repeat=size):
            yield "[" + ",".join(items) + "]"


SCHEMAS = {
    "enum of mixed values": {"type": "array", "items": {"enum": [1, 2.5, "a", True, None, [1], {"a": 1, "b": 2}]},
                             "uniqueItems": True},
    "booleans": {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True},
    "bounded integers, at most 3": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2},
                                     "uniqueItems": True, "maxItems": 3},
    "tuple of booleans, no more items": {"prefixItems": [{"type": "boolean"}, {"type": "boolean"}], "items": False,
                                          "uniqueItems": True},
    "tuple items": {"type": "array", "uniqueItems": True,
                    "items": {"type": "array", "prefixItems": [{"enum": [1, 2]}, {"enum": [1, 2]}], "items": False,
                              "minItems": 1}},
    "records": {"type": "array", "uniqueItems": True,
                "items": {"type": "object", "properties": {"a": {"const": 1}, "b": {"enum": [2, 3]}},
                          "required": ["a", "b"], "additionalProperties": False}},
    "inside anyOf": {"anyOf": [{"type": "array", "items": {"enum": [0, 1]}, "uniqueItems": True},
                               {"type": "array", "items": {"type": "string"}}]},
    "with contains": {"type": "array", "items": {"enum": [0, 1, 2, "a"]}, "uniqueItems": True,
                      "contains": {"type": "string"}},
    "via allOf": {"allOf": [{"uniqueItems": True}, {"items": {"enum": [1, "a", None]}}]},
}


def _accepts(parser: IncrementalParser, text: str) -> bool:
    return parser.accepts(text.encode("utf-8"))


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_unique_arrays_agree_with_jsonschema(name):
    schema = SCHEMAS[name]
    parser = IncrementalParser(build_parser_tables(
        Grammar.from_json_schema(schema, integer_fraction=True, property_order="any", string_escapes="all")))
    validator = jsonschema.Draft202012Validator(schema)
    counts = {"valid": 0, "repeated": 0}
    for text in _texts():
        value = json.loads(text)
        valid = validator.is_valid(value)
        accepted = _accepts(parser, text)
        if accepted != valid:
            assert valid and "e" in text, f"{'INVALID ACCEPTED' if accepted else 'valid rejected'}: {text}"
        counts["valid"] += valid
        counts["repeated"] += (not valid and jsonschema.Draft202012Validator({k: v for k, v in schema.items()
                                                                              if k != "uniqueItems"}).is_valid(value))
    assert counts["valid"] >= 3, counts
    if "uniqueItems" in schema:  # the test must have met arrays that only uniqueItems refuses
        assert counts["repeated"] >= 2, counts


@pytest.mark.parametrize("schema", [
    {"uniqueItems": True},
    {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    {"type": "array", "items": {"type": "string", "maxLength": 3}, "uniqueItems": True},
    {"not": {"type": "array", "items": {"enum": [1, 2]}, "uniqueItems": True}},
    {"type": "array", "items": {"enum": list(range(11))}, "uniqueItems": True},
])
def test_refusals_name_unique_items(schema):
    with pytest.raises(SchemaCompileError) as caught:
        Grammar.from_json_schema(schema).whole()
    assert caught.value.keyword == "uniqueItems"
    assert caught.value.pointer in ("", "/not")
    Grammar.from_json_schema(schema, approximate={"uniqueItems"}).whole()  # the approximation stays available


def test_the_set_bound():
    assert subsets_needed(10, None) <= MAX_UNIQUE_SETS < subsets_needed(11, None)
    grammar = Grammar.from_json_schema({"type": "array", "items": {"enum": list(range(10))}, "uniqueItems": True})
    parser = IncrementalParser(build_parser_tables(grammar))
    assert _accepts(parser, json.dumps(list(range(10)), separators=(",", ":")))
    assert not _accepts(parser, "[0,1,2,3,4,5,6,7,8,0]")
    with_max = {"type": "array", "items": {"enum": list(range(40))}, "uniqueItems": True, "maxItems": 2}
    parser = IncrementalParser(build_parser_tables(Grammar.from_json_schema(with_max)))
    assert _accepts(parser, "[39,0]") and not _accepts(parser, "[7,7]") and not _accepts(parser, "[1,2,3]")


def test_suite_unique_items_groups():
    path = data_dir() / "json-schema-test-suite" / "tests" / "draft2020-12" / "uniqueItems.json"
    compiled = 0
    for group in json.loads(path.read_text(encoding="utf-8")):
        try:
            grammar = Grammar.from_json_schema(group["schema"], integer_fraction=True, property_order="any").whole()
        except SchemaCompileError as exc:
            assert exc.keyword == "uniqueItems", exc
            continue
        compiled += 1
        parser = IncrementalParser(build_parser_tables(grammar))
        for test in group["tests"]:
            text = json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False)
            assert _accepts(parser, text) == test["valid"], (group["description"], test["description"])
    assert compiled == 4  # uniqueItems=false (3 groups) and the closed boolean pair
