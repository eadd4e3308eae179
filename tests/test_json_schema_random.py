"""Random schemas and random instances, with the ``jsonschema`` package as the oracle.

A seeded generator writes small draft 2020-12 schemas over the keywords the compiler claims
to handle exactly (docs/json_schema.md): ``type``, ``enum``, ``const``, the object,
array (``contains`` with ``minContains``/``maxContains`` too), string and number keywords,
``anyOf``/``oneOf``/``allOf``/``not``,
``if``/``then``/``else``, ``dependentRequired`` and ``$defs``/``$ref`` (with one recursive
definition), nested three levels deep at most. For each schema a second generator writes
candidate instances near the schema (its constants, boundary numbers, strings and arrays
of boundary lengths, objects built from its properties) and mutations of them (a key
dropped or added, a number bumped, a string lengthened, a type changed).

The oracle is ``jsonschema.Draft202012Validator`` with no format checker (the generator
never writes ``format``). For every schema that compiles, the grammar's verdict on each
instance must equal the validator's: an invalid instance accepted is always a failure, and
so is a valid one rejected, because every instance is written in the output form the
grammar promises to accept in full (docs/json_schema.md, "Output form"):

- compact JSON (``json.dumps`` with ``(",", ":")`` separators, ``ensure_ascii=False``);
  for every 5th compiled schema also pretty-printed (``indent=2``) under
  ``whitespace="flexible"``;
- object members in schema order. The generator makes that order unambiguous by
  construction: property names come from one pool, every ``properties`` lists them in pool
  order, and any schema whose object members get positions (see ``_anchor_key_order`` in
  support/random_schemas.py) lists *all* pool names, so that every ``allOf``/``anyOf``/
  ``not``/``if`` combination agrees on one order; extra keys come from a separate pool and
  are written last;
- numbers without exponents (short decimals whose ``repr`` has no exponent), and integral
  values written plainly (``3``, not ``3.0``) since ``integer_fraction`` is off by default;
  the flexible run passes ``integer_fraction=True`` and keeps ``3.0`` spellings. Bounds and
  ``multipleOf`` (an integer or 0.5) are exact for both the grammar and the validator's
  float arithmetic on such numbers.

The same values are also written outside the output form (``3.0`` for integral numbers,
members in reverse order, ``\\u`` escapes): the grammar may reject those, but no invalid
value may be accepted in any spelling.

Strings avoid ``\\n`` and ``\\r`` and patterns avoid ``\\d``/``\\w``: Python's ``re`` (which
the validator uses) and ECMA-262 differ there (``$`` before a final newline, ``.`` and
``\\r``, Unicode digits). A schema the compiler refuses must raise SchemaCompileError and
nothing else; a refusal claiming the schema accepts no value must not have a valid
candidate; and most schemas must compile, so the test cannot pass vacuously.

``REGRESSIONS`` holds disagreements the generator found, minimised by hand.
"""

from __future__ import annotations

import json
import random
import sys

import jsonschema
import pytest

from gramalign.errors import SchemaCompileError
from gramalign.grammar.grammar import Grammar
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from support.random_schemas import InstanceGenerator, SchemaGenerator, other_spellings, serialize

SEEDS = (0, 1, 2, 3, 4)
SCHEMAS_PER_SEED = 60
FLEXIBLE_EVERY = 5  # every 5th compiled schema is also checked pretty-printed
MIN_COMPILE_RATIO = 0.6


# ---------------------------------------------------------------------------- the comparison


def _compile(schema, **options):
    grammar = Grammar.from_json_schema(schema, strict=False, **options)  # the spec's meaning, as jsonschema
    return IncrementalParser(build_parser_tables(grammar))


def run_seed(seed: int):
    """Compare grammar and validator on ``SCHEMAS_PER_SEED`` schemas; returns counts and
    the disagreements as (kind, layout, schema, text) tuples."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    rng = random.Random(seed)
    schemas = SchemaGenerator(rng)
    counts = dict.fromkeys(["schemas", "compiled", "refused", "instances", "valid", "other spellings",
                            "pretty instances"], 0)
    failures = []
    for _ in range(SCHEMAS_PER_SEED):
        schema = schemas.schema()
        jsonschema.Draft202012Validator.check_schema(schema)  # the generator writes valid schemas
        validator = jsonschema.Draft202012Validator(schema)
        instances = InstanceGenerator(rng, schema).candidates(12)
        counts["schemas"] += 1
        try:
            parser = _compile(schema)
        except SchemaCompileError as exc:
            counts["refused"] += 1
            if "accepts no JSON value" in exc.message:
                # a refusal, but a claim we can check: no candidate may be valid
                valid = [serialize(value) for value in instances if validator.is_valid(value)]
                if valid:
                    failures.append(("REFUSED AS EMPTY", "compact", json.dumps(schema), valid[0]))
            continue
        except Exception as exc:  # noqa: BLE001 - anything else is a compiler bug to report
            failures.append(("CRASH", type(exc).__name__, json.dumps(schema), str(exc)[:200]))
            continue
        counts["compiled"] += 1

        def compare(layout, layout_parser, text, output_form):
            # the oracle judges the value the text spells (3.0 and 3 are the same value to it)
            expected = validator.is_valid(json.loads(text))
            got = layout_parser.accepts(text.encode("utf-8"))
            if got and not expected:
                failures.append(("INVALID ACCEPTED", layout, json.dumps(schema), text))
            elif expected and not got and output_form:
                failures.append(("valid rejected", layout, json.dumps(schema), text))
            return expected

        for value in instances:
            counts["instances"] += 1
            counts["valid"] += compare("compact", parser, serialize(value), True)
            for text in other_spellings(value):
                counts["other spellings"] += 1
                compare("compact, other spelling", parser, text, False)
        if counts["compiled"] % FLEXIBLE_EVERY == 0:
            # pretty-printed, and with integer_fraction=True: 3.0 is then in the output form
            try:
                pretty_parser = _compile(schema, whitespace="flexible", max_whitespace=32, integer_fraction=True)
            except Exception as exc:  # noqa: BLE001 - it compiled compactly, so it must compile here too
                failures.append(("CRASH flexible", type(exc).__name__, json.dumps(schema), str(exc)[:200]))
                continue
            for value in instances:
                counts["pretty instances"] += 1
                compare("flexible, integer_fraction", pretty_parser, serialize(value, True, False), True)
    return counts, failures


# Disagreements found by the generator, minimised: (schema, text). The expected verdict
# is the validator's on the value the text spells.
REGRESSIONS = {
    # contradictory string lengths (or a pattern no string of the allowed lengths
    # matches) must allow no string; the empty string language was read as "any string"
    "empty-string-lengths": ({"minLength": 3, "maxLength": 2}, '"x"'),
    "empty-string-pattern": ({"type": "string", "maxLength": 0, "pattern": "a"}, '""'),
    # a number inside an array (or object) inside a const/enum array
    "nested-const-number": ({"const": [[1.5]]}, "[[1.5]]"),
    # 1.0 is an integer for the validator: integer_fraction=False removes the spelling
    # "1.0" from integer, which must not put it into complements (not, oneOf, if)
    "not-integer-fraction": ({"not": {"type": "integer"}}, "1.0"),
    "oneOf-integer-fraction": ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, "1.0"),
    # the complement of an object schema must keep the members in the order of its
    # properties (a before b); here "a" may only follow "b"
    "not-properties-order": ({"not": {"properties": {"a": {"type": "string"}, "b": {"type": "object"}}}},
                             '{"a":"s","b":1}'),
    # the complement of an array schema: some item after prefixItems outside items
    "not-items-after-prefix": ({"type": "array", "not": {"prefixItems": [{"type": "integer"}],
                                                         "items": {"type": "boolean"}}}, "[8,null]"),
    # the same complement, refused as "accepts no JSON value at all"
    "not-items-after-true-prefix": ({"not": {"prefixItems": [True], "items": {"type": "boolean"}}}, "[8,null]"),
}


@pytest.mark.parametrize("name", list(REGRESSIONS))
def test_minimised_disagreements(name):
    schema, text = REGRESSIONS[name]
    expected = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
    try:
        parser = _compile(schema)
    except SchemaCompileError as exc:
        if not expected and "accepts no JSON value" in str(exc):
            return  # a schema nothing satisfies is refused as such: right for an invalid instance
        pytest.fail(f"refused ({exc}), but the validator's verdict on {text} is {expected}")
    assert parser.accepts(text.encode("utf-8")) == expected, (schema, text, expected)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_random_schemas_agree_with_jsonschema(seed):
    counts, failures = run_seed(seed)
    assert counts["compiled"] >= MIN_COMPILE_RATIO * counts["schemas"], counts
    assert counts["instances"] >= 10 * counts["compiled"], counts
    assert not failures, f"{len(failures)} disagreements ({counts}):\n" + "\n".join(map(repr, failures[:15]))
