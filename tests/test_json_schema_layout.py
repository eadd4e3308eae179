"""JSON layout options: ``indent`` and ``separators`` mean what ``json.dumps`` makes of them.

Oracles: every text a random walk of the grammar writes is a JSON value the jsonschema
validator accepts and is exactly ``json.dumps`` of itself with the same options; and
``json.dumps`` of instances (each layout) is accepted, while other layouts are not.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

import gramalign as ga
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from support.grammar_walks import random_texts

WORD = {"type": "string", "pattern": "^[a-z]{0,4}$"}
SCHEMA = {"type": "object", "properties": {
    "n": {"type": "integer", "minimum": -50, "maximum": 50},
    "tags": {"type": "array", "items": WORD, "maxItems": 3},
    "inner": {"type": "object", "properties": {"ok": {"type": "boolean"}, "list": {"type": "array", "maxItems": 2,
                                                                                   "items": {"type": "array", "maxItems": 2, "items": {"type": "integer", "minimum": 0, "maximum": 9}}}},
              "additionalProperties": False},
    "either": {"anyOf": [{"type": "object", "properties": {"x": {"type": "null"}}, "required": ["x"],
                          "additionalProperties": False}, {"type": "array", "items": WORD, "maxItems": 2}]}},
    "additionalProperties": False}
LAYOUTS = [{"indent": 2}, {"indent": 0}, {"indent": "\t"}, {"separators": (", ", ": ")},
           {"indent": 4, "separators": (" ,", " : ")}, {"separators": (",", ":")}]
INSTANCES = [{}, {"n": 3}, {"tags": []}, {"tags": ["a", "bc"], "inner": {}}, {"inner": {"ok": True, "list": [[], [1, 2]]}},
             {"n": -7, "tags": ["z"], "inner": {"list": [[0]]}, "either": {"x": None}}, {"either": []},
             {"either": ["ab", ""]}]


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_walks_are_exactly_json_dumps_of_themselves(layout):
    grammar = ga.Grammar.from_json_schema(SCHEMA, **layout)
    for text in random_texts(grammar, 40, seed=len(str(layout))):
        value = json.loads(text)
        jsonschema.validate(value, SCHEMA)
        assert text.decode() == json.dumps(value, **layout), (layout, text)


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_json_dumps_layouts_are_accepted_and_no_other(layout):
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_json_schema(SCHEMA, **layout)))
    for value in INSTANCES:
        jsonschema.validate(value, SCHEMA)
        assert parser.accepts(json.dumps(value, **layout).encode()), (layout, value)
        for other in LAYOUTS:
            text = json.dumps(value, **other)
            if text != json.dumps(value, **layout):
                assert not parser.accepts(text.encode()), (layout, other, value)


def test_recursive_schemas_are_indented_exactly_up_to_max_depth():
    tree = {"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                               "additionalProperties": False}}, "$ref": "#/$defs/node"}
    grammar = ga.Grammar.from_json_schema(tree, indent=1, max_depth=6)
    parser = IncrementalParser(build_parser_tables(grammar))

    def nested(levels: int) -> dict:
        return {} if levels == 0 else {"kids": [nested(levels - 1)]}

    for levels in range(5):
        depth = 2 * levels + 1  # each level is an object and an array
        assert parser.accepts(json.dumps(nested(levels), indent=1).encode()) == (depth <= 6), levels


def test_layout_options_are_checked():
    for options in [{"separators": (";", ":")}, {"separators": (",",)}, {"indent": "x"}, {"indent": True},
                    {"indent": 2, "whitespace": "flexible"}, {"indent": 2, "max_depth": 0}]:
        with pytest.raises(ValueError):
            ga.Grammar.from_json_schema(SCHEMA, **options).whole()
