"""Generators of fuzz cases: hostile and random JSON Schemas, Lark grammars and regexes.

``make_case(seed, i)`` is case ``i`` of a run: a pure function of ``(seed, i)``, so one case
is reproduced alone (``benchmarks/fuzz.py --seed S --case I``) and a run split over jobs
meets the same cases. A :class:`Case` carries the input as a user would send it (a dict, a
JSON text, bytes that are not UTF-8, a dict that contains itself, a Lark text, a pattern and
flags) and, for schemas written by ``support.random_schemas.SchemaGenerator``, values near
the schema whose serialisation is in the documented output form (docs/json_schema.md), so
a valid one must be accepted.

Families follow issue 24: nesting to thousands of levels, ``$ref`` cycles, enums of up to
100k members, thousands of properties, exploding patterns, 300-digit and astronomically
large bounds, wrong keyword types, non-JSON input, wide ``oneOf``/``anyOf``, schemas that
contain themselves, huge literals; random schemas, the same with random keywords grafted on
(any keyword, any JSON type of value); random and hostile Lark grammars and regexes.
"""

from __future__ import annotations

import json
import random
import re
import string
from dataclasses import dataclass, field

from support.random_schemas import InstanceGenerator, SchemaGenerator

DRAFTS = ("http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
          "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema",
          "https://json-schema.org/draft/2020-12/schema")

KEYWORDS = ("type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
            "maxLength", "minLength", "pattern", "format", "items", "prefixItems", "additionalItems", "maxItems",
            "minItems", "uniqueItems", "contains", "minContains", "maxContains", "maxProperties", "minProperties",
            "required", "properties", "patternProperties", "additionalProperties", "propertyNames",
            "dependentRequired", "dependentSchemas", "dependencies", "allOf", "anyOf", "oneOf", "not", "if", "then",
            "else", "$ref", "$defs", "definitions", "$schema", "$id", "$anchor", "$dynamicRef",
            "unevaluatedProperties", "unevaluatedItems", "title", "default", "nullable")

FORMATS = ("date", "time", "date-time", "email", "uuid", "ipv4", "ipv6", "hostname", "uri", "duration",
           "regex", "json-pointer", "no-such-format")

HOSTILE_PATTERNS = ("(a|aa)*b", "(a*)*b", "(.*a){20}", "^(a+)+$", "[a-z]{1000}", "(a{1,100}){1,100}", "\\w{3000}",
                    "(x+x+)+y", "^(\\d+|\\d+\\.\\d+)*$", "(?:a|b|ab)*c{2,5}", "(.*){1,32000}", "[^a]*a[^a]{40}",
                    "((a|b)*c){50}", "\\p{L}+", "(?<=a)b", "\\1(a)", "(", "[z-a]", "a{5,2}", "\\", "a**",
                    ".{0,65535}", "(ab|a|b){30}x", "[\\u0000-\\uffff]{500}", "(?i)k{200}")


@dataclass
class Case:
    """One input: ``kind`` is "schema", "lark" or "regex"; ``family`` the generator."""

    index: int
    kind: str
    family: str
    payload: object
    options: dict = field(default_factory=dict)
    values: list = field(default_factory=list)  # schema values near the schema (output-form candidates)
    output_form: bool = False  # the values' serialisations are in the documented output form

    description: str = ""  # set once the payload is dropped

    def describe(self) -> str:
        if self.payload is None and self.description:
            return self.description
        payload = self.payload
        try:
            text = payload if isinstance(payload, (str, bytes)) else json.dumps(payload)
        except (TypeError, ValueError, RecursionError):
            text = f"<{type(payload).__name__} that json cannot write>"
        text = repr(text)
        if len(text) > 300:
            text = text[:300] + f"... ({len(text)} chars)"
        return f"case {self.index} {self.kind}/{self.family} {self.options or ''} {text}"


# ------------------------------------------------------------------------- values of any type


def random_value(rng: random.Random, depth: int = 0):
    """Any JSON value, small."""
    kind = rng.randrange(8 if depth < 2 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, 1, -1, 2, 7, -3, 10 ** rng.randint(1, 40), -(10 ** 20)])
    if kind == 3:
        return rng.choice([0.5, -1.25, 1e-9, 3.0, 1e300, 2.5e-5])
    if kind in (4, 5):
        return "".join(rng.choice("ab\"\\é😀 \n\x01") for _ in range(rng.randint(0, 6)))
    if kind == 6:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "b", "type", "x"]): random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def random_keyword_value(rng: random.Random, keyword: str, depth: int):
    """A value for ``keyword``: usually of the right type, often not (a wrong type, a negative
    count, a huge number)."""
    roll = rng.random()
    if roll < 0.3:
        return random_value(rng)
    if roll < 0.4:
        return rng.choice([-1, 10 ** 30, 10 ** 400, 1.5, -0.0, "", [], {}, None, True])
    if keyword in ("items", "additionalItems", "contains", "not", "if", "then", "else", "additionalProperties",
                   "propertyNames", "unevaluatedProperties", "unevaluatedItems"):
        return small_schema(rng, depth + 1)
    if keyword in ("allOf", "anyOf", "oneOf", "prefixItems"):
        return [small_schema(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if keyword in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
        names = ["a", "b", "^x", "c+", "é"] if keyword != "patternProperties" else ["^x", "[0-9]", "(", "a{2}"]
        return {rng.choice(names): small_schema(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if keyword in ("required",):
        return rng.sample(["a", "b", "c", "a"], rng.randint(0, 3))
    if keyword in ("dependentRequired", "dependencies"):
        return {"a": rng.choice([["b"], [], ["a", "b"], small_schema(rng, depth + 1)])}
    if keyword == "type":
        types = ["null", "boolean", "integer", "number", "string", "array", "object", "any", "int"]
        return rng.choice(types) if rng.random() < 0.6 else rng.sample(types, rng.randint(0, 3))
    if keyword in ("enum",):
        return [random_value(rng) for _ in range(rng.randint(0, 5))]
    if keyword == "const":
        return random_value(rng)
    if keyword == "pattern":
        return rng.choice(["^a", "b$", "[0-9]+", "^(a|b)*$", "x{2,4}", "\\d", ".", "^$"] + list(HOSTILE_PATTERNS[:6]))
    if keyword == "format":
        return rng.choice(FORMATS)
    if keyword == "$ref":
        return rng.choice(["#", "#/$defs/a", "#/definitions/a", "#/properties/a", "#/nowhere", "other.json",
                           "#/$defs/a/properties/b", "#/items"])
    if keyword == "$schema":
        return rng.choice(DRAFTS + ("http://example.com/unknown",))
    if keyword in ("multipleOf",):
        return rng.choice([2, 0.5, 0.1, 3, 1e-8, 7.5, 0, -2])
    if keyword.startswith(("max", "min", "exclusive")):
        return rng.choice([0, 1, 2, 3, 5, 10, 100, 2.5, -3, 10 ** 6])
    if keyword == "uniqueItems":
        return rng.random() < 0.5
    return random_value(rng)


def small_schema(rng: random.Random, depth: int = 0):
    """A random combination of keywords with random values (valid or not)."""
    if depth > 3 or rng.random() < 0.15:
        return rng.choice([True, False, {}, {"type": "string"}, {"type": "integer"}])
    node = {}
    for _ in range(rng.randint(1, 4)):
        keyword = rng.choice(KEYWORDS)
        node[keyword] = random_keyword_value(rng, keyword, depth)
    if depth == 0 and rng.random() < 0.3:
        node["$defs"] = {"a": small_schema(rng, depth + 1)}
    return node


# ------------------------------------------------------------------------- schemas


def _nest(rng: random.Random, depth: int):
    wrapper = rng.choice(["items", "properties", "anyOf", "allOf", "not", "oneOf", "additionalProperties"])
    node = {"type": "integer"}
    for _ in range(depth):
        if wrapper == "properties":
            node = {"type": "object", "properties": {"a": node}}
        elif wrapper in ("anyOf", "allOf", "oneOf"):
            node = {wrapper: [node]}
        else:
            node = {wrapper: node}
    return node


def hostile_schema(rng: random.Random):
    """(family, schema) from the hostile families of issue 24, sizes drawn at random."""
    family = rng.choice(["deep", "ref_cycle", "ref_chain", "enum", "properties", "pattern", "bounds", "wrong_type",
                         "not_json", "wide_union", "self_containing", "literal", "format", "drafts", "deep_text"])
    if family == "deep":
        return family, _nest(rng, rng.choice([50, 200, 900, 1500, 5000]))
    if family == "deep_text":
        depth = rng.choice([500, 5000, 50000])
        return family, '{"items":' * depth + "{}" + "}" * depth
    if family == "ref_cycle":
        return family, rng.choice([
            {"$ref": "#"}, {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
            {"allOf": [{"$ref": "#"}]}, {"not": {"$ref": "#"}}, {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
            {"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]},
            {"type": "array", "items": {"$ref": "#"}, "minItems": 1},
            {"x": {"anyOf": [{"$ref": "#/x"}]}, "$ref": "#/x"},
            {"$defs": {"a": {"oneOf": [{"$ref": "#/$defs/a"}, {"type": "array", "items": {"$ref": "#/$defs/a"}}]}},
             "$ref": "#/$defs/a"}])
    if family == "ref_chain":
        n = rng.choice([10, 1000, 20000])
        defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(n)}
        defs[f"d{n}"] = rng.choice([{"type": "string"}, {"$ref": "#/$defs/d0"}])
        return family, {"$defs": defs, "$ref": "#/$defs/d0"}
    if family == "enum":
        n = rng.choice([10, 1000, 30000, 100000, 300000])
        kind = rng.choice(["strings", "numbers", "mixed", "long"])
        if kind == "strings":
            members = [f"member-{i}-{rng.random():.6f}" for i in range(n)]
        elif kind == "numbers":
            members = [rng.randint(-10 ** 12, 10 ** 12) + rng.choice([0, 0.5]) for _ in range(n)]
        elif kind == "long":
            members = ["".join(rng.choice(string.ascii_letters) for _ in range(rng.choice([100, 3000])))
                       for _ in range(min(n, 300))]
        else:
            members = [random_value(rng) for _ in range(min(n, 3000))]
        return family, {"enum": members}
    if family == "properties":
        n = rng.choice([100, 999, 1001, 10000])
        fields = rng.choice([1, 5, 30])
        inner = {"type": "object", "properties": {f"f{j}": {"type": ["string", "integer"]} for j in range(fields)}}
        schema = {"type": "object", "properties": {f"p{i}": inner if fields > 1 else {"type": "integer"}
                                                   for i in range(n if fields < 30 else min(n, 300))}}
        if rng.random() < 0.5:
            schema["required"] = [f"p{i}" for i in range(0, n, 3)]
        return family, schema
    if family == "pattern":
        patterns = [rng.choice(HOSTILE_PATTERNS) for _ in range(rng.randint(1, 3))]
        if len(patterns) == 1:
            schema = {"type": "string", "pattern": patterns[0]}
            if rng.random() < 0.5:
                schema["maxLength"] = rng.choice([10, 1000, 100000])
            return family, schema
        return family, {"allOf": [{"pattern": p} for p in patterns]}
    if family == "bounds":
        big = rng.choice([10 ** 30, 10 ** 300, 10 ** 999, -(10 ** 300), "1e999", "1e-999", "0." + "0" * 300 + "1"])
        keyword = rng.choice(["minimum", "maximum", "exclusiveMinimum", "multipleOf", "minItems", "maxItems",
                              "minLength", "maxLength", "minProperties", "maxProperties", "minContains",
                              "maxContains", "const"])
        value = json.loads(big) if isinstance(big, str) else big
        schema = {keyword: value}
        if keyword.endswith("Contains"):
            schema["contains"] = {"type": "integer"}
        if rng.random() < 0.5:  # as JSON text too: exact decimals
            text = json.dumps(schema) if not isinstance(big, str) else json.dumps({keyword: 0}).replace("0", big)
            return family, text
        return family, schema
    if family == "wrong_type":
        keyword = rng.choice(KEYWORDS)
        return family, {keyword: rng.choice([None, 5, -1, "x", [], {}, [1, "a"], {"a": 1}, True, 1.5, 10 ** 40])}
    if family == "not_json":
        return family, rng.choice([
            "", "{", '{"type": "string"', "[1,2]", "null", "42", '"string"', "{'type': 'string'}", "NaN",
            '{"minimum": NaN}', '{"maximum": Infinity}', b"\xff\xfe\x00{", b'{"type": "\xff"}', "\x00",
            '{"a": 1, "a": 2}', '{"type": "string"}trailing', "{" * 100000, '{"enum": [' + "1," * 1000 + "]}",
            bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))),
            "".join(rng.choice('{}[]":,0123abc ') for _ in range(rng.randint(1, 80)))])
    if family == "wide_union":
        n = rng.choice([10, 100, 1000, 3000])
        keyword = rng.choice(["oneOf", "anyOf", "allOf"])
        branch = rng.choice(["object", "pattern", "const", "number", "tool"])
        if branch == "object":
            branches = [{"type": "object", "properties": {f"k{i}": {"type": "integer"}}, "required": [f"k{i}"]}
                        for i in range(n)]
        elif branch == "pattern":
            branches = [{"type": "string", "pattern": f"^a{i}.*b"} for i in range(n)]
        elif branch == "const":
            branches = [{"const": f"c{i}"} for i in range(n)]
        elif branch == "number":
            branches = [{"type": "integer", "minimum": i, "maximum": i + 10} for i in range(n)]
        else:
            branches = [{"type": "object", "properties": {"name": {"const": f"tool{i}"},
                                                          "arguments": {"type": "object", "properties": {
                                                              "x": {"type": "string"}}}},
                         "required": ["name", "arguments"], "additionalProperties": False} for i in range(n)]
        return family, {keyword: branches}
    if family == "self_containing":
        schema = {"type": "object", "properties": {}}
        kind = rng.randrange(3)
        if kind == 0:
            schema["properties"]["a"] = schema
        elif kind == 1:
            items = [{"type": "string"}]
            items.append({"anyOf": items})
            schema["anyOf"] = items
        else:
            shared = {"type": "integer"}  # shared, not a cycle: harmless
            schema["properties"] = {"a": shared, "b": shared}
        return family, schema
    if family == "literal":
        size = rng.choice([1000, 60000, 2_000_000])
        return family, rng.choice([{"const": "c" * size}, {"enum": ["x" * size]}, {"required": ["k" * size]},
                                   {"const": [0] * min(size, 100000)}, {"const": {"a" * min(size, 100000): 1}},
                                   {"properties": {"p" * size: {}}}])
    if family == "format":
        schema = {"type": "string", "format": rng.choice(FORMATS)}
        if rng.random() < 0.5:
            schema["maxLength"] = rng.choice([5, 64, 400])
        if rng.random() < 0.3:
            schema["pattern"] = rng.choice(["^a", "[0-9]", "x$"])
        return family, schema
    schema = small_schema(rng)  # drafts: a random schema under a declared draft
    if isinstance(schema, dict):
        schema["$schema"] = rng.choice(DRAFTS)
    return "drafts", schema


# ------------------------------------------------------------------------- Lark grammars

_LARK_TERMINALS = ('/[a-z]+/', '/[0-9]+/', '"a"', '"b"', '"ab"', '/a+/', '/x|y/', '"("', '")"', '","', '/[a-c]{1,3}/',
                   '/"[^"]*"/')


def random_lark(rng: random.Random) -> str:
    """A small random Lark grammar: rules over each other and literal/regex terminals, with
    ?, *, +, groups and alternatives; sometimes %ignore of spaces."""
    n_rules = rng.randint(1, 4)
    names = ["start"] + [f"r{i}" for i in range(1, n_rules)]

    def item(depth: int, k: int) -> str:
        roll = rng.random()
        if roll < 0.45 or depth > 2:
            text = rng.choice(_LARK_TERMINALS)
        elif roll < 0.7 and k + 1 < n_rules:
            text = rng.choice(names[k + 1:])  # later rules only: no left recursion by accident
        elif roll < 0.8:
            text = rng.choice(names)  # any rule: recursion (may not terminate: a clear error)
        else:
            text = "(" + expansion(depth + 1, k) + ")"
        return text + rng.choice(["", "", "", "?", "*", "+"])

    def expansion(depth: int, k: int) -> str:
        alternatives = [" ".join(item(depth, k) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 3))]
        return " | ".join(alternatives)

    lines = [f"{name}: {expansion(0, k)}" for k, name in enumerate(names)]
    if rng.random() < 0.4:
        lines += ["%import common.WS", "%ignore WS"]
    return "\n".join(lines) + "\n"


def hostile_lark(rng: random.Random) -> tuple[str, str]:
    family = rng.choice(["deep", "wide", "chain", "overlap", "garbage", "undefined", "empty", "recursive",
                         "import", "long_literal", "many_terminals"])
    if family == "deep":
        depth = rng.choice([100, 900, 5000])
        return family, "start: " + "(" * depth + '"a"' + ")" * depth + "\n"
    if family == "wide":
        n = rng.choice([100, 3000, 30000])
        return family, "start: " + " | ".join(f'"w{i}"' for i in range(n)) + "\n"
    if family == "chain":
        n = rng.choice([100, 3000, 20000])
        rules = [f"r{i}: r{i + 1} \"x\" | \"y\"" for i in range(n)]
        return family, "start: r0\n" + "\n".join(reversed(rules)) + f'\nr{n}: "z"\n'
    if family == "overlap":
        k = rng.choice([6, 12, 18])
        return family, (f'start: (A | B)+\nA: /(a|b)*a(a|b){{{k}}}/\nB: /(a|b)*b(a|b){{{k}}}/\n')
    if family == "garbage":
        return family, "".join(rng.choice('start:|"a"/[]()?*+%ignore \n->.') for _ in range(rng.randint(1, 120)))
    if family == "undefined":
        return family, "start: missing \"a\"\n"
    if family == "empty":
        return family, "start: start \"a\"\n"
    if family == "recursive":
        return family, "start: \"(\" start \")\" | \"x\"\n"
    if family == "import":
        return family, rng.choice(["%import common.NOPE\nstart: NOPE\n", "%import .nowhere.X\nstart: X\n",
                                   "%import common (WORD, NUMBER)\nstart: WORD NUMBER\n"])
    if family == "long_literal":
        return family, 'start: "' + "q" * rng.choice([1000, 100000, 1000000]) + '"\n'
    n = rng.choice([50, 500, 1500])
    return family, "start: " + " | ".join(f"T{i}" for i in range(n)) + "\n" + "\n".join(
        f"T{i}: /[a-z]{{{i % 7 + 1}}}{i}/" for i in range(n)) + "\n"


# ------------------------------------------------------------------------- regexes

_ATOMS = ("a", "b", "c", "\\d", "\\w", "\\s", ".", "[a-c]", "[^ab]", "[0-9]", "é", "😀", "\\.", "x")


def random_regex(rng: random.Random, depth: int = 0) -> str:
    """A small random regex over a few atoms: concatenation, alternation, groups, quantifiers."""
    parts = []
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.6 or depth > 2:
            part = rng.choice(_ATOMS)
        elif roll < 0.85:
            part = "(" + random_regex(rng, depth + 1) + ")"
        else:
            part = "(?:" + "|".join(random_regex(rng, depth + 1) for _ in range(rng.randint(2, 3))) + ")"
        part += rng.choice(["", "", "", "?", "*", "+", "{2}", "{1,3}", "{0,2}", "*?", "+?"])
        parts.append(part)
    return "".join(parts)


def hostile_regex(rng: random.Random) -> tuple[str, str, int]:
    family = rng.choice(["exploding", "huge_count", "unsupported", "invalid", "flags", "long"])
    if family == "exploding":
        return family, rng.choice(["(a|aa)*b", "(a*)*b", "(.*a){25}", "^(a+)+$", "(x+x+)+y", "[^a]*a[^a]{30}",
                                   "((a|b)*c){60}", "(a|b)*a(a|b){20}"]), 0
    if family == "huge_count":
        return family, rng.choice(["a{1000}{1000}", "\\w{100000}", "(a{1,100}){1,100}", "[\\s\\S]{60000}",
                                   ".{0,65535}", "(?i)\\w{5000}", "(ab|cd){1,5000}"]), 0
    if family == "unsupported":
        return family, rng.choice(["(?<=a)b", "(a)\\1", "(?=a)a", "\\bword\\b", "(?P<x>a)(?P=x)", "(?(1)a|b)"]), 0
    if family == "invalid":
        return family, rng.choice(["(", "[z-a]", "a{5,2}", "\\", "a**", "*a", "(?<", "[", "\\p{L}", "(?x"]), 0
    if family == "flags":
        return family, rng.choice(["a", "[a-z]+", "k"]), rng.choice([1 << 40, -1, 2 ** 8, 256, 64, 1 << 30])
    return family, "".join(rng.choice("ab|()*+?[]{}.\\-^$0123") for _ in range(rng.choice([10, 200, 3000]))), 0


# ------------------------------------------------------------------------- cases


def make_case(seed: int, index: int) -> Case:
    """Case ``index`` of the run with ``seed``."""
    rng = random.Random(f"fuzz:{seed}:{index}")
    roll = rng.random()
    if roll < 0.30:  # random schemas in the output form: valid values must be accepted
        schema = SchemaGenerator(rng).schema()
        values = InstanceGenerator(rng, schema).candidates(6)
        return Case(index, "schema", "random", schema, values=values, output_form=True)
    if roll < 0.45:  # random keywords grafted onto a random schema, or random keywords alone
        if rng.random() < 0.5:
            schema = SchemaGenerator(rng).schema()
            for _ in range(rng.randint(1, 3)):
                keyword = rng.choice(KEYWORDS)
                schema[keyword] = random_keyword_value(rng, keyword, 1)
        else:
            schema = small_schema(rng)
        values = []
        # values near a schema the generator did not write, best effort; not where a count
        # is large (minItems 10**6 would build a million-item value in the parent)
        if not re.search(r"\d{4}", json.dumps(schema)):
            try:
                values = InstanceGenerator(rng, schema).candidates(4)
            except Exception:  # noqa: BLE001 - the generator reading a keyword of the wrong type
                values = []
        values += [random_value(rng) for _ in range(4)]
        return Case(index, "schema", "keywords", schema, values=values)
    if roll < 0.70:
        family, schema = hostile_schema(rng)
        options = {}
        if rng.random() < 0.15:
            options = rng.choice([{"whitespace": "flexible"}, {"strict": True}, {"property_order": "any"},
                                  {"approximate": ["uniqueItems", "format"]}, {"indent": 2},
                                  {"string_escapes": "all"}])
        return Case(index, "schema", family, schema, options=options)
    if roll < 0.80:
        return Case(index, "lark", "random", random_lark(rng))
    if roll < 0.86:
        family, text = hostile_lark(rng)
        return Case(index, "lark", family, text)
    if roll < 0.95:
        flags = rng.choice([0, 0, 0, 2, 16, 8])  # IGNORECASE, DOTALL, MULTILINE
        return Case(index, "regex", "random", random_regex(rng), options={"flags": flags})
    family, pattern, flags = hostile_regex(rng)
    return Case(index, "regex", family, pattern, options={"flags": flags})
