"""A schema means what its declared draft says: keywords of other drafts are annotations.

Oracle: the jsonschema validator for the schema's ``$schema``
(``jsonschema.validators.validator_for``), which ignores keywords its draft does not define.
Every case lists instances the oracle accepts and instances it rejects; the compiled grammar
must give each the oracle's verdict, and every text a random walk through the grammar's masks
produces must be valid.
"""

from __future__ import annotations

import json
import warnings

import jsonschema
import pytest
import referencing.exceptions

import gramalign as ga
from gramalign.errors import SchemaCompileError
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from support.grammar_walks import random_texts

D4 = "http://json-schema.org/draft-04/schema#"
D6 = "http://json-schema.org/draft-06/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"

OBJECT_AB = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
             "additionalProperties": False}
AB_INSTANCES = [{}, {"a": 1}, {"b": 2}, {"a": 1, "b": 2}, {"a": 1, "b": "x"}, "x"]


def _with(base: dict, **extra) -> dict:
    return {**base, **extra}


# name -> (schema, instances); instances are written compactly with keys in schema order
CASES = {
    "draft-04: const is unknown": (
        {"$schema": D4, "anyOf": [{"type": "string"}, {"type": "integer", "not": {"const": 5}}]},
        [5, 6, "a", None, True]),
    "draft-06: const": ({"$schema": D6, "anyOf": [{"type": "string"}, {"type": "integer", "not": {"const": 5}}]},
                        [5, 6, "a", None]),
    "draft-04: contains is unknown": ({"$schema": D4, "type": "array", "contains": {"type": "string"},
                                       "maxItems": 2}, [[], [1], ["a"], [1, "a"], "a"]),
    "draft-06: contains": ({"$schema": D6, "type": "array", "contains": {"type": "string"}, "maxItems": 2},
                           [[], [1], ["a"], [1, "a"]]),
    "draft-04: propertyNames is unknown": ({"$schema": D4, "type": "object", "propertyNames": {"maxLength": 1},
                                            "maxProperties": 1}, [{}, {"a": 1}, {"ab": 1}, []]),
    "draft-06: propertyNames": ({"$schema": D6, "type": "object", "propertyNames": {"maxLength": 1},
                                 "maxProperties": 1}, [{}, {"a": 1}, {"ab": 1}]),
    "draft-06: if/then/else are unknown": ({"$schema": D6, "type": "integer", "if": {"minimum": 5},
                                            "then": {"multipleOf": 2}, "else": {"multipleOf": 3}},
                                           [1, 3, 4, 6, 7, 8, 9, "a"]),
    "draft-07: if/then/else": ({"$schema": D7, "type": "integer", "if": {"minimum": 5},
                                "then": {"multipleOf": 2}, "else": {"multipleOf": 3}}, [1, 3, 4, 6, 7, 8, 9]),
    "draft-07: dependentRequired is unknown": (_with(OBJECT_AB, **{"$schema": D7, "dependentRequired": {"a": ["b"]}}),
                                               AB_INSTANCES),
    "2019-09: dependentRequired": (_with(OBJECT_AB, **{"$schema": D2019, "dependentRequired": {"a": ["b"]}}),
                                   AB_INSTANCES),
    "draft-07: dependentSchemas is unknown": (
        _with(OBJECT_AB, **{"$schema": D7, "dependentSchemas": {"a": {"required": ["b"]}}}), AB_INSTANCES),
    "2020-12: dependentSchemas": (
        _with(OBJECT_AB, **{"$schema": D2020, "dependentSchemas": {"a": {"required": ["b"]}}}), AB_INSTANCES),
    "draft-04: dependencies": (_with(OBJECT_AB, **{"$schema": D4, "dependencies": {"a": ["b"]}}), AB_INSTANCES),
    "draft-07: dependencies (schema form)": (
        _with(OBJECT_AB, **{"$schema": D7, "dependencies": {"a": {"required": ["b"]}}}), AB_INSTANCES),
    "2019-09: dependencies is unknown": (_with(OBJECT_AB, **{"$schema": D2019, "dependencies": {"a": ["b"]}}),
                                         AB_INSTANCES),
    "2020-12: dependencies is unknown": (_with(OBJECT_AB, **{"$schema": D2020, "dependencies": {"a": ["b"]}}),
                                         AB_INSTANCES),
    "draft-07: prefixItems is unknown": ({"$schema": D7, "type": "array", "prefixItems": [{"type": "string"}],
                                          "items": {"type": "integer"}, "maxItems": 2},
                                         [[], [1], ["a"], [1, 2], ["a", 1]]),
    "2020-12: prefixItems": ({"$schema": D2020, "type": "array", "prefixItems": [{"type": "string"}],
                              "items": {"type": "integer"}, "maxItems": 2}, [[], [1], ["a"], [1, 2], ["a", 1]]),
    "draft-07: items array and additionalItems": ({"$schema": D7, "type": "array", "items": [{"type": "string"}],
                                                   "additionalItems": False}, [[], ["a"], [1], ["a", "b"]]),
    "2020-12: additionalItems is unknown": ({"type": "array", "prefixItems": [{"type": "string"}],
                                             "additionalItems": False, "maxItems": 3},
                                            [[], ["a"], [1], ["a", 1], ["a", "b", 2]]),
    "draft-07: minContains/maxContains are unknown": ({"$schema": D7, "type": "array", "contains": {"type": "string"},
                                                      "minContains": 2, "maxContains": 2, "maxItems": 3},
                                                     [["a"], ["a", "b"], [1], ["a", "b", "c"], []]),
    "2019-09: minContains/maxContains": ({"$schema": D2019, "type": "array", "contains": {"type": "string"},
                                          "minContains": 2, "maxContains": 2, "maxItems": 3},
                                         [["a"], ["a", "b"], [1], ["a", "b", "c"], []]),
    "draft-07: unevaluatedProperties is unknown": ({"$schema": D7, "type": "object", "properties": {"a": {}},
                                                   "unevaluatedProperties": False, "maxProperties": 1},
                                                  [{}, {"a": 1}, {"b": 1}, 3]),
    "draft-04: exclusiveMaximum is a boolean": ({"$schema": D4, "type": "integer", "maximum": 5,
                                                 "exclusiveMaximum": True, "minimum": 3, "exclusiveMinimum": False},
                                                [2, 3, 4, 5, 6]),
    "draft-06: exclusiveMaximum is a number": ({"$schema": D6, "type": "integer", "exclusiveMaximum": 5,
                                                "minimum": 3}, [2, 3, 4, 5, 6]),
    "2019-09: $dynamicRef is unknown": ({"$schema": D2019, "type": "integer", "$dynamicRef": "#/$defs/s",
                                         "$defs": {"s": {"type": "string"}}}, [1, "a"]),
    "2020-12: $recursiveRef is unknown": ({"type": "integer", "$recursiveRef": "#/$defs/s",
                                           "$defs": {"s": {"type": "string"}}}, [1, "a"]),
    "draft-07: keywords of later drafts with values that would be invalid there": (
        {"$schema": D7, "type": "object", "properties": {"a": {"type": "integer"}},
         "dependentRequired": {"a": 1}, "minContains": "x", "prefixItems": 3, "unevaluatedItems": 5},
        [{}, {"a": 1}, {"a": "x"}]),
}


def _accepts(grammar: ga.Grammar, text: str) -> bool:
    return IncrementalParser(build_parser_tables(grammar)).accepts(text.encode("utf-8"))


@pytest.mark.parametrize("name", list(CASES))
def test_each_draft_enforces_its_own_keywords_only(name):
    schema, instances = CASES[name]
    oracle = jsonschema.validators.validator_for(schema)(schema)
    verdicts = [oracle.is_valid(instance) for instance in instances]
    assert True in verdicts and False in verdicts, "a case needs valid and invalid instances to mean anything"
    grammar = ga.Grammar.from_json_schema(schema)
    for instance, valid in zip(instances, verdicts):
        text = json.dumps(instance, separators=(",", ":"))
        assert _accepts(grammar, text) == valid, f"{text}: jsonschema says {'valid' if valid else 'invalid'}"
    for text in random_texts(grammar, 25, seed=len(name)):
        assert oracle.is_valid(json.loads(text)), f"the grammar produced {text!r}, which jsonschema rejects"


def test_draft_04_not_const_accepts_nothing():
    """The issue's case: in draft-04 ``const`` is unknown, so ``{"const": 5}`` is true and its
    ``not`` accepts nothing (draft-06 on, it accepts everything but 5)."""
    schema = {"$schema": D4, "not": {"const": 5}}
    oracle = jsonschema.validators.validator_for(schema)(schema)
    assert not any(oracle.is_valid(v) for v in (5, 6, "a", None, [], {}))
    with pytest.raises(SchemaCompileError, match="accepts no JSON value"):
        ga.Grammar.from_json_schema(schema).whole()
    later = {"$schema": D6, "not": {"const": 5}}
    grammar = ga.Grammar.from_json_schema(later)
    assert not _accepts(grammar, "5") and _accepts(grammar, "6") and _accepts(grammar, '"a"')


@pytest.mark.parametrize("schema,keyword", [
    ({"$schema": D4, "type": "integer", "maximum": 5, "exclusiveMaximum": 5}, "exclusiveMaximum"),
    ({"$schema": D7, "type": "integer", "exclusiveMaximum": True}, "exclusiveMaximum"),
    ({"$schema": D7, "items": []}, "items"),
    ({"$schema": D2020, "items": [{"type": "integer"}]}, "items"),
], ids=["draft-04 numeric exclusiveMaximum", "draft-07 boolean exclusiveMaximum", "draft-07 items []",
        "2020-12 items array"])
def test_draft_specific_forms_in_the_wrong_draft_are_refused(schema, keyword):
    with pytest.raises(SchemaCompileError) as caught:
        ga.Grammar.from_json_schema(schema).whole()
    assert caught.value.pointer == "" and caught.value.keyword == keyword
    with pytest.raises(jsonschema.SchemaError):  # the draft's metaschema agrees the value is invalid
        jsonschema.validators.validator_for(schema).check_schema(schema)


def test_anchor_is_a_2019_09_keyword():
    """Before 2019-09 ``$anchor`` is an annotation: a ``$ref`` to it does not resolve, in
    jsonschema as here; from 2019-09 on it names its subschema."""
    schema = {"$schema": D7, "definitions": {"a": {"$anchor": "num", "type": "integer"}},
              "type": "object", "properties": {"x": {"$ref": "#num"}}}
    with pytest.raises(referencing.exceptions.Unresolvable):
        jsonschema.validators.validator_for(schema)(schema).is_valid({"x": 1})
    with pytest.raises(SchemaCompileError) as caught:
        ga.Grammar.from_json_schema(schema).whole()
    assert caught.value.pointer == "/properties/x" and caught.value.keyword == "$ref"
    later = {**schema, "$schema": D2019}
    oracle = jsonschema.validators.validator_for(later)(later)
    grammar = ga.Grammar.from_json_schema(later)
    for instance in ({"x": 1}, {"x": "a"}, {}):
        assert _accepts(grammar, json.dumps(instance, separators=(",", ":"))) == oracle.is_valid(instance)


UNDECLARED_CASES = [
    ({"type": "array", "items": [{"type": "integer"}, {"type": "string"}]},
     [[], [1], [1, "a"], [1, "a", True], ["a"], [1, 2]]),
    ({"type": "array", "items": [{"type": "integer"}], "additionalItems": False}, [[], [1], [1, 2], ["a"]]),
    ({"type": "array", "items": [{"type": "integer"}], "additionalItems": {"type": "boolean"}},
     [[1, True], [1, 2], [1, True, False]]),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
      "dependencies": {"a": ["b"]}}, [{}, {"a": 1}, {"a": 1, "b": 2}, {"b": 2}]),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
      "dependencies": {"a": {"required": ["b"]}}}, [{}, {"a": 1}, {"a": 1, "b": 2}]),
]


@pytest.mark.parametrize("schema, instances", UNDECLARED_CASES, ids=range(len(UNDECLARED_CASES)))
def test_undeclared_schemas_read_draft_07_forms_with_their_draft_07_meaning(schema, instances):
    """Without $schema, the forms that mean nothing in 2020-12 (array items, additionalItems,
    dependencies) mean what draft-07 says (issue 21, item 5); default_draft=2020 is the spec's
    reading (they are ignored or refused)."""
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_json_schema(schema)))
    draft7 = jsonschema.Draft7Validator(schema)
    for instance in instances:
        text = json.dumps(instance, separators=(",", ":"))
        assert parser.accepts(text.encode()) == draft7.is_valid(instance), (schema, instance)
    for text in random_texts(ga.Grammar.from_json_schema(schema), 20, seed=1):
        draft7.validate(json.loads(text))
    if isinstance(schema.get("items"), list):
        with pytest.raises(SchemaCompileError, match="prefixItems"):
            ga.Grammar.from_json_schema(schema, default_draft=2020).whole()
    else:
        strict = IncrementalParser(build_parser_tables(ga.Grammar.from_json_schema(schema, default_draft=2020)))
        latest = jsonschema.Draft202012Validator(schema)
        for instance in instances:
            text = json.dumps(instance, separators=(",", ":"))
            assert strict.accepts(text.encode()) == latest.is_valid(instance), (schema, instance)
    with pytest.raises(ValueError, match="default_draft"):
        ga.Grammar.from_json_schema(schema, default_draft=5).whole()


def test_unknown_formats_warn_naming_the_pointer():
    """An unknown format is an annotation (any string passes, as jsonschema says), and the user is
    told so, like a misspelled keyword (issue 40, item 6)."""
    schema = {"type": "object", "properties": {"phone": {"type": "string", "format": "phone"},
                                               "when": {"type": "string", "format": "date_time"},
                                               "day": {"type": "string", "format": "date"},
                                               "n": {"type": "integer", "format": "int64"}}}
    with pytest.warns(ga.SchemaKeywordWarning) as caught:
        grammar = ga.Grammar.from_json_schema(schema).whole()
    messages = sorted(str(w.message) for w in caught)
    assert any("#/properties/phone" in m and "unknown format 'phone'" in m for m in messages), messages
    assert any("#/properties/when" in m and "did you mean 'date-time'?" in m for m in messages), messages
    assert any("#/properties/n" in m and "'int64'" in m for m in messages), messages
    assert not any("'date'" in m for m in messages)
    parser = IncrementalParser(build_parser_tables(grammar))
    for text in ('{"phone":"call me"}', '{"when":"noon"}', '{"day":"noon"}'):
        valid = jsonschema.Draft202012Validator(schema, format_checker=None).is_valid(json.loads(text))
        assert parser.accepts(text.encode()) == (valid and "day" not in text), text


def test_known_formats_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ga.SchemaKeywordWarning)
        ga.Grammar.from_json_schema({"type": "string", "format": "uuid"}).whole()
        ga.Grammar.from_json_schema({"anyOf": [{"format": "ipv4"}, {"type": "integer"}]}).whole()
    with pytest.raises(ga.SchemaCompileError, match="not supported"):  # refused, not warned about
        ga.Grammar.from_json_schema({"type": "string", "format": "idn-email"}).whole()


def test_misspelled_keywords_warn_with_a_suggestion():
    schema = {"type": "object", "propertes": {"a": {"type": "string", "maxLenght": 3}}, "requird": ["a"],
              "properties": {"b": {"type": "string", "maxLenght": 2, "title": "B", "x-note": 1, "_format": "date",
                                   "constraints": 1}}}
    with pytest.warns(ga.SchemaKeywordWarning) as caught:
        grammar = ga.Grammar.from_json_schema(schema).whole()
    messages = sorted(str(w.message) for w in caught)
    assert any("'propertes'" in m and "'properties'" in m for m in messages)
    assert any("'requird'" in m and "'required'" in m for m in messages)
    assert any("#/properties/b" in m and "'maxLength'" in m for m in messages)
    assert not any(name in m for m in messages for name in ("title", "x-note", "_format", "constraints"))
    # the unknown keys are ignored, as the validator ignores them: "b" may be as long as it likes
    parser = IncrementalParser(build_parser_tables(grammar))
    assert parser.accepts(b'{"b":"long text"}') == jsonschema.Draft202012Validator(schema).is_valid({"b": "long text"})
