"""Hostile JSON Schemas: the compiler must end within its documented limits with a clear
error or a correct grammar, never hang, crash or recurse out of the stack.

Every case runs in a forked child process (``run_in_child``) with a timeout, so a hang
fails its test after ``TIMEOUT`` seconds instead of stalling CI, and a RecursionError, a
KeyError or a dead process is reported as a crash. The child compiles the schema, builds
the parser tables and parses the instances; the parent decides what is right:

- a grammar must give every instance the verdict of an oracle: jsonschema, ``decimal`` /
  ``fractions`` arithmetic for numbers (jsonschema compares floats), set membership for
  enums, hand-checked verdicts for patterns (a backtracking regex engine would hang on
  exactly these instances);
- a refusal must be a SchemaCompileError whose ``pointer`` names an existing location of
  the schema and whose ``keyword`` (or message) names what is wrong;
- the parser's own documented size limit (GrammarError "grammar too large", docs/grammars.md)
  counts as a clear error only where a case says so.

Instances are serialized compactly with keys in schema order (the documented output form,
docs/json_schema.md). ``GRAMALIGN_HOSTILE_TIMEOUT`` raises the per-case timeout on slow machines.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import sys
import time
import traceback
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

import jsonschema
import pytest

import gramalign as ga
from gramalign.errors import GrammarError, SchemaCompileError
from gramalign.grammar.grammar import Grammar
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="each case runs in a forked process")

TIMEOUT = float(os.environ.get("GRAMALIGN_HOSTILE_TIMEOUT", "30"))
"""Seconds one case may take (compile, parser tables and parsing); passing cases need at most
about 7 s on a 2-core machine, so a busy CI machine has room."""

DRAFT7 = "http://json-schema.org/draft-07/schema#"
ANY_KEYWORD = object()  # expect_error: do not check the keyword

# ---------------------------------------------------------------------------- running a case


@dataclass
class Outcome:
    """What happened in the child: kind is "grammar", "schema_error", "parser_limit",
    "crash" or "timeout"."""

    kind: str
    message: str = ""
    pointer: str | None = None
    keyword: str | None = None
    verdicts: tuple = ()
    details: dict = field(default_factory=dict)
    seconds: float = 0.0

    def describe(self) -> str:
        text = f"{self.kind} after {self.seconds:.1f} s"
        if self.kind != "grammar":
            text += f": {self.message[:600]} (pointer={self.pointer!r}, keyword={self.keyword!r})"
        if "traceback" in self.details:
            text += "\n" + self.details["traceback"]
        return text


def _child_main(connection, function, args) -> None:
    # The same limits as a fresh interpreter: other test modules raise the recursion limit.
    sys.setrecursionlimit(1000)
    started = time.perf_counter()
    try:
        result = function(*args)
    except BaseException as exc:  # noqa: BLE001 - anything escaping is a crash to report
        result = {"kind": "crash", "message": f"{type(exc).__name__}: {exc}",
                  "details": {"traceback": traceback.format_exc()[-1500:]}}
    result["seconds"] = time.perf_counter() - started
    connection.send(result)
    connection.close()


def run_in_child(function, *args, timeout: float = TIMEOUT) -> Outcome:
    """``function(*args)`` (returning an Outcome's fields as a dict) in a forked process."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child_main, args=(sender, function, args), daemon=True)
    started = time.perf_counter()
    process.start()
    sender.close()  # so that a child that dies without sending gives EOF here
    try:
        if receiver.poll(timeout):
            try:
                result = receiver.recv()
            except EOFError:
                result = {"kind": "crash", "message": f"the child process died (exit code {process.exitcode})"}
        else:
            result = {"kind": "timeout", "message": f"no result within {timeout:.0f} s: a hang"}
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        receiver.close()
    result.setdefault("seconds", time.perf_counter() - started)
    return Outcome(**result)


def _compile_and_parse(schema, texts, options) -> dict:
    try:
        grammar = Grammar.from_json_schema(schema, **{"strict": False, **options}).whole()  # the spec's meaning
    except SchemaCompileError as exc:
        return {"kind": "schema_error", "message": exc.message, "pointer": exc.pointer, "keyword": exc.keyword,
                "details": {"rendered": str(exc)}}
    try:
        tables = build_parser_tables(grammar)
    except GrammarError as exc:
        if "too large" not in str(exc):
            raise  # a conflict or another parser error would be a compiler bug
        return {"kind": "parser_limit", "message": str(exc)}
    parser = IncrementalParser(tables)
    return {"kind": "grammar", "verdicts": tuple(parser.accepts(text.encode("utf-8")) for text in texts)}


def run_case(schema, texts=(), *, timeout: float = TIMEOUT, **options) -> Outcome:
    return run_in_child(_compile_and_parse, schema, list(texts), options, timeout=timeout)


@pytest.fixture(scope="module", autouse=True)
def warm_up():
    """Compile the parser's numba kernels once in the parent, so forked children inherit them."""
    IncrementalParser(build_parser_tables(Grammar.from_json_schema({"type": "integer"}))).accepts(b"1")


# ---------------------------------------------------------------------------- expectations


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def pointer_exists(schema, pointer: str) -> bool:
    node = schema
    for token in pointer.split("/")[1:] if pointer else ():
        name = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and name in node:
            node = node[name]
        elif isinstance(node, list) and name.isdigit() and int(name) < len(node):
            node = node[int(name)]
        else:
            return False
    return True


def expect_grammar(outcome: Outcome, texts, expected) -> None:
    assert outcome.kind == "grammar", outcome.describe()
    wrong = [(text[:80] + ("..." if len(text) > 80 else ""), want)
             for text, want, got in zip(texts, expected, outcome.verdicts) if want != got]
    assert not wrong, f"wrong verdicts (instance, expected): {wrong}"


def expect_error(outcome: Outcome, *, pointer: str, keyword=ANY_KEYWORD, words=()) -> None:
    assert outcome.kind == "schema_error", outcome.describe()
    assert outcome.pointer == pointer, outcome.describe()
    if keyword is not ANY_KEYWORD:
        assert outcome.keyword == keyword, outcome.describe()
    for word in words:
        assert word in outcome.message, f"{word!r} not in the message: {outcome.describe()}"


def expect_clear_refusal(outcome: Outcome, schema, *, names=()) -> None:
    """A SchemaCompileError pointing at a real location and naming one of ``names``
    (as its keyword or in its message) when given."""
    assert outcome.kind == "schema_error", outcome.describe()
    assert outcome.message.strip(), outcome.describe()
    assert pointer_exists(schema, outcome.pointer), f"no such location: {outcome.describe()}"
    if names:
        assert outcome.keyword in names or any(name in outcome.message for name in names), outcome.describe()


def expect_grammar_or_refusal(outcome: Outcome, schema, texts, expected, *, names=(), parser_limit=False) -> None:
    """The issue's contract: a correct grammar, or a clear error (never a hang or a crash)."""
    if outcome.kind == "grammar":
        expect_grammar(outcome, texts, expected)
    elif outcome.kind == "parser_limit" and parser_limit:
        assert "too large" in outcome.message, outcome.describe()
    else:
        expect_clear_refusal(outcome, schema, names=names)


def oracle(schema, instances) -> list[bool]:
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [validator.is_valid(instance) for instance in instances]


def check_against_jsonschema(schema, instances, **options) -> None:
    texts = [compact(instance) for instance in instances]
    expect_grammar(run_case(schema, texts, **options), texts, oracle(schema, instances))


# ---------------------------------------------------------------------------- 1. five megabytes

FIELDS = 30


def _definition(d: int) -> dict:
    kinds = [lambda: {"type": "integer", "minimum": 0, "maximum": 1000 + d, "description": "x" * 40},
             lambda: {"type": "string", "maxLength": 20, "description": "y" * 40},
             lambda: {"type": "boolean", "description": "z" * 40},
             lambda: {"type": "array", "items": {"type": "number"}, "description": "w" * 40}]
    return {"type": "object", "properties": {f"field_{p:03d}": kinds[p % 4]() for p in range(FIELDS)},
            "required": ["field_000"], "additionalProperties": False}


def five_megabyte_definitions(reachable: int) -> dict:
    """1,500 object definitions of 30 properties each; the root refers to ``reachable`` of them."""
    definitions = {f"def_{d:05d}": _definition(d) for d in range(1500)}
    schema = {"$defs": definitions, "type": "object",
              "properties": {f"p{d}": {"$ref": f"#/$defs/def_{d:05d}"} for d in range(reachable)},
              "additionalProperties": False}
    assert len(json.dumps(schema)) >= 5_000_000
    return schema


def test_five_megabytes_of_definitions_compile_what_is_reachable():
    schema = five_megabyte_definitions(reachable=5)
    instances = [{}, {"p0": {"field_000": 5}}, {"p0": {"field_000": -1}},
                 {"p4": {"field_000": 1004, "field_001": "abc", "field_002": True, "field_003": [1.5, 2]}},
                 {"p4": {"field_000": 1005}}, {"p1": {"field_001": "x"}},
                 {"p2": {"field_000": 1, "field_001": "0123456789" * 2 + "x"}}, {"p5": {}},
                 {"p0": {"field_000": 1, "extra": 1}}, {"p3": {"field_000": 3, "field_003": ["1"]}}]
    check_against_jsonschema(schema, instances)


def test_five_megabytes_all_reachable_end_with_a_grammar_or_a_clear_error():
    # 1,500 properties at the root, each an object of 30: far beyond what the LALR
    # construction handles quickly, so a documented limit must stop it early.
    schema = five_megabyte_definitions(reachable=1500)
    instances = [{}, {"p0": {"field_000": 5}}, {"p1499": {"field_000": 2499}}, {"p1499": {"field_000": 2500}}]
    texts = [compact(i) for i in instances]
    outcome = run_case(schema, texts)
    expect_grammar_or_refusal(outcome, schema, texts, oracle(schema, instances), names=("properties",),
                              parser_limit=True)


def test_five_megabyte_schema_text_compiles_like_the_dict():
    schema = five_megabyte_definitions(reachable=2)
    instances = [{"p1": {"field_000": 1001}}, {"p1": {"field_000": 1002}}]
    texts = [compact(i) for i in instances]
    expect_grammar(run_case(json.dumps(schema), texts), texts, oracle(schema, instances))


def test_schema_text_above_the_size_limit_is_refused_at_once():
    text = '{"enum": ["' + "a" * (16 << 20) + '"]}'
    outcome = run_case(text)
    expect_error(outcome, pointer="", words=("16 MiB",))


ENUM_PADDING = "-member-of-a-very-large-enumeration-padding"


def test_five_megabyte_enum_of_100k_strings():
    members = [f"{i:06d}{ENUM_PADDING}" for i in range(100_000)]
    schema = {"enum": members}
    assert len(json.dumps(schema)) >= 5_000_000
    member_set = set(members)
    candidates = [members[0], members[49_999], members[-1], f"{100_000:06d}{ENUM_PADDING}", members[0][:-1],
                  members[0] + "g", "", f"{5:05d}{ENUM_PADDING}", members[7].upper()]
    texts = [compact(c) for c in candidates] + ["1", "null"]
    expected = [c in member_set for c in candidates] + [False, False]
    expect_grammar(run_case(schema, texts), texts, expected)


# ---------------------------------------------------------------------------- 2. reference cycles

CYCLE = "cycle"


def _ring(length: int) -> dict:
    definitions = {f"d{i}": {"$ref": f"#/$defs/d{(i + 1) % length}"} for i in range(length)}
    return {"$defs": definitions, "$ref": "#/$defs/d0"}


CYCLES = {
    "a->b->c->a": ({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/c"},
                                                   "c": {"$ref": "#/$defs/a"}}},
                   {"", "/$defs/a", "/$defs/b", "/$defs/c"}),
    "self $ref #": ({"$ref": "#"}, {""}),
    "self $ref # draft-07": ({"$schema": DRAFT7, "$ref": "#"}, {""}),
    "allOf through $ref": ({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
                            "$ref": "#/$defs/a"}, {"", "/$defs/a", "/$defs/b", "/$defs/a/allOf/0", "/$defs/b/anyOf/0"}),
    "allOf [$ref #]": ({"allOf": [{"$ref": "#"}]}, {"", "/allOf/0"}),
    # anyOf [#, null] is not "null": validating any instance recurses forever (the
    # specification calls it an infinite loop), so it is a cycle too
    "anyOf [$ref #, null]": ({"anyOf": [{"$ref": "#"}, {"type": "null"}]}, {"", "/anyOf/0"}),
    "not $ref #": ({"not": {"$ref": "#"}}, {"", "/not"}),
    "ring of 5000 $refs": (_ring(5000), {""} | {f"/$defs/d{i}" for i in range(5000)}),
}


@pytest.mark.parametrize("name", list(CYCLES))
def test_reference_cycles_that_never_reach_a_value_are_named_cycles(name):
    schema, pointers = CYCLES[name]
    outcome = run_case(schema, ["null"])
    assert outcome.kind == "schema_error", outcome.describe()
    assert CYCLE in outcome.message, outcome.describe()
    assert outcome.pointer in pointers, outcome.describe()


def test_chain_of_5000_refs_reaching_a_value_compiles():
    # A chain of plain references is its last target; nothing nests, so no depth limit applies.
    definitions = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(5000)}
    target = definitions["d5000"] = {"type": "integer", "minimum": 3}
    schema = {"$defs": definitions, "$ref": "#/$defs/d0"}
    texts = ["3", "2", "1000", '"a"', "3.5", "null"]
    # jsonschema itself recurses once per reference: the oracle is the chain's end
    expect_grammar(run_case(schema, texts), texts, oracle(target, [json.loads(t) for t in texts]))


def test_chain_of_5000_allof_refs_ends_with_a_grammar_or_nests_too_deeply():
    definitions = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}], "minimum": i % 7} for i in range(5000)}
    definitions["d5000"] = {"type": "integer"}
    schema = {"$defs": definitions, "$ref": "#/$defs/d0"}
    texts = ["6", "5", '"a"']
    outcome = run_case(schema, texts)
    expect_grammar_or_refusal(outcome, schema, texts, [True, False, False], names=("nests too deeply",))


TREE = {
    "$defs": {"node": {"type": "object",
                       "properties": {"value": {"type": "integer", "minimum": 0},
                                      "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3}},
                       "required": ["value"], "additionalProperties": False}},
    "$ref": "#/$defs/node",
}


def _tree(depth: int, rng: random.Random) -> dict:
    node = {"value": rng.randint(0, 9)}
    if depth:
        node["children"] = [_tree(depth - 1, rng) for _ in range(rng.randint(1, 2))]
    return node


def _tree_instances() -> list:
    rng = random.Random(7)
    deep = {"value": 0}
    for i in range(60):  # a path 60 levels deep
        deep = {"value": i % 10, "children": [deep]}
    return [{"value": 1}, {"value": 1, "children": []}, _tree(4, rng), _tree(6, rng), deep,
            {"children": []}, {"value": -1}, {"value": 1, "children": [{"value": "x"}]},
            {"value": 1, "children": [{"value": 2}] * 4}, {"value": 1, "extra": 2},
            {"value": 1, "children": [{"value": 2, "children": [{"value": 3, "children": [{}]}]}]}, []]


def test_recursive_tree_compiles_and_agrees_with_jsonschema():
    check_against_jsonschema(TREE, _tree_instances())


def test_recursive_tree_pretty_printed_with_flexible_whitespace():
    instances = _tree_instances()[:5]
    texts = [json.dumps(i, indent=1) for i in instances]
    outcome = run_case(TREE, texts, whitespace="flexible", max_whitespace=140)
    expect_grammar(outcome, texts, oracle(TREE, instances))


def test_mutually_recursive_definitions():
    schema = {"$defs": {"list": {"type": "array", "items": {"$ref": "#/$defs/item"}},
                        "item": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/list"}]}},
              "$ref": "#/$defs/list"}
    instances = [[], [1, [2, [3, []]]], [[[[[[[[[[1]]]]]]]]]], [1, "a"], [[[None]]], 1, [1.5]]
    check_against_jsonschema(schema, instances)


def _token_walk(schema, text: str) -> dict:
    """Feed ``text`` byte by byte through a compiled grammar over a byte vocabulary; also
    record whether one wrong byte at each position is masked out."""
    vocab = ga.Vocabulary(token_bytes=tuple(bytes([b]) for b in range(128)) + (b"",), size=129,
                          special_token_ids=frozenset({128}), eos_token_ids=(128,), kind="raw",
                          add_prefix_space=False)
    matcher = ga.compile(Grammar.from_json_schema(schema), vocab).matcher()
    refused_bad = []
    for byte in text.encode():
        refused_bad.append(ord("@") not in set(matcher.allowed_token_ids().tolist()))
        matcher.accept_token(byte)
    return {"kind": "grammar", "details": {"can_terminate": matcher.can_terminate(), "refused_bad": refused_bad}}


def test_recursive_tree_token_level_masks():
    text = compact({"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4}]})
    outcome = run_in_child(_token_walk, TREE, text)
    assert outcome.kind == "grammar", outcome.describe()
    assert outcome.details["can_terminate"] and all(outcome.details["refused_bad"])


# ---------------------------------------------------------------------------- 3. schemas that accept nothing

NOTHING = {
    "not {}": {"not": {}},
    "not true": {"not": True},
    "false": False,
    "allOf string and number": {"allOf": [{"type": "string"}, {"type": "number"}]},
    "enum []": {"enum": []},
    "minimum above maximum": {"type": "integer", "minimum": 5, "maximum": 3},
    "required property that is false": {"type": "object", "properties": {"a": False}, "required": ["a"]},
    "required property that is not {}": {"type": "object", "properties": {"a": {"not": {}}}, "required": ["a"]},
    "array that needs an item but allows none": {"type": "array", "items": False, "minItems": 1},
}


@pytest.mark.parametrize("name", list(NOTHING))
def test_a_schema_that_accepts_no_value_says_so(name):
    # A grammar with no sentence could generate nothing; refusing it with a message that
    # says why is the clear behaviour (docs/json_schema.md, Limits).
    outcome = run_case(NOTHING[name])
    expect_error(outcome, pointer="", words=("accepts no JSON value",))


def test_a_forbidden_optional_property_is_not_an_empty_schema():
    schema = {"type": "object", "properties": {"a": {"not": {}}, "b": {"type": "integer"}}}
    check_against_jsonschema(schema, [{}, {"a": 1}, {"b": 2}, {"a": None, "b": 2}, {"c": 3}])


# ---------------------------------------------------------------------------- 4. enormous enums


def test_enum_of_100k_random_strings():
    rng = random.Random(11)
    members = sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 12)))
                      for _ in range(100_000)})
    schema = {"enum": members}
    member_set = set(members)
    candidates = members[:3] + members[-3:] + ["zzzzzzzzzzzzz", "ab", members[0] + "é", "A" + members[5]]
    texts = [compact(c) for c in candidates]
    outcome = run_case(schema, texts)
    expect_grammar_or_refusal(outcome, schema, texts, [c in member_set for c in candidates], names=("enum",))
    if outcome.kind == "schema_error":
        assert outcome.pointer == "" and outcome.keyword == "enum", outcome.describe()


def test_enum_of_10k_objects():
    members = [{"id": i, "name": f"n{i}"} for i in range(10_000)]
    schema = {"enum": members}
    instances = [members[0], members[-1], {"id": 1, "name": "n0"}, {"id": 10_000, "name": "n10000"}]
    texts = [compact(i) for i in instances]
    outcome = run_case(schema, texts)
    expect_grammar_or_refusal(outcome, schema, texts, [True, True, False, False], names=("enum",))
    if outcome.kind == "schema_error":  # the 64-alternative limit, said about the enum
        assert outcome.pointer == "" and outcome.keyword == "enum" and "64" in outcome.message, outcome.describe()


def test_enum_of_20k_numbers():
    members = [i + 0.5 for i in range(10_000)] + list(range(-5_000, 5_000))
    schema = {"enum": members}
    values = {Fraction(Decimal(repr(m)) if isinstance(m, float) else m) for m in members}
    texts = ["0", "-0", "-5000", "4999", "5000", "9999.5", "9999.50", "10000.5", "0.25", "-1.5", "17.5", "-5001"]
    expect_grammar(run_case(schema, texts), texts, [Fraction(Decimal(t)) in values for t in texts])


def test_enum_and_const_with_10k_character_strings():
    long_a, long_b, mixed = "a" * 10_000, "b" * 10_000, "a" * 9_999 + "b"
    schema = {"type": "object", "properties": {"e": {"enum": [long_a, long_b, mixed]}, "c": {"const": "x" * 10_000}}}
    instances = [{"e": long_a}, {"e": mixed}, {"e": "a" * 9_999}, {"e": "a" * 10_001}, {"c": "x" * 10_000},
                 {"c": "x" * 9_999}, {"e": long_b, "c": "x" * 10_000}]
    texts = [compact(i) for i in instances]
    outcome = run_case(schema, texts)
    expect_grammar_or_refusal(outcome, schema, texts, oracle(schema, instances), names=("enum", "const"))


# ---------------------------------------------------------------------------- 5. catastrophic patterns

# (pattern, [(string, matches)]): unanchored ECMA search semantics, verdicts checked by hand
# because a backtracking engine takes exponential time on exactly these strings.
PATTERNS = {
    "(a*)*b": [("b", True), ("aaab", True), ("xxaab", True), ("aaaa", False), ("", False), ("a" * 40, False)],
    "(a|aa)+$": [("a", True), ("xaa", True), ("ab", False), ("", False), ("a" * 40 + "b", False)],
    "^(\\w+\\s?)*$": [("", True), ("ab cd", True), ("ab  cd", False), ("ab-", False), ("a" * 40 + "!", False)],
    "(x+x+)+y": [("xxy", True), ("xy", False), ("zxxyz", True), ("x" * 40, False)],
    "(a{1,100}){1,100}": [("a", True), ("b", False), ("ba", True)],
    "^(a{1,100}){1,100}$": [("a", True), ("a" * 10_000, True), ("a" * 10_001, False), ("", False)],
    "[\\s\\S]{1000,5000}": [("a" * 999, False), ("a" * 1000, True), ("a" * 6000, True)],
    "^[\\s\\S]{1000,5000}$": [("a" * 999, False), ("a" * 1000, True), ("a" * 5000, True), ("a" * 5001, False)],
    "^.*a.{20}$": [("a" + "b" * 20, True), ("b" * 21, False), ("a" * 22, True)],
    "(.*a){20}": [("a" * 20, True), ("a" * 19, False), ("ba" * 20, True)],
}


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_catastrophic_patterns_compile_exactly_or_hit_a_named_limit(pattern):
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    cases = PATTERNS[pattern]
    texts = [compact({"s": s}) for s, _ in cases]
    outcome = run_case(schema, texts)
    if outcome.kind == "grammar":
        expect_grammar(outcome, texts, [matches for _, matches in cases])
    else:  # the limit names the pattern and where it is
        expect_error(outcome, pointer="/properties/s", keyword="pattern")


def test_a_long_string_length_range_names_its_keyword():
    # The same language as ^[\s\S]{1000,5000}$, written with length keywords.
    schema = {"type": "object", "properties": {"s": {"type": "string", "minLength": 1000, "maxLength": 5000}}}
    texts = [compact({"s": "a" * n}) for n in (999, 1000, 5000, 5001)]
    outcome = run_case(schema, texts)
    if outcome.kind == "grammar":
        expect_grammar(outcome, texts, [False, True, True, False])
    else:
        expect_error(outcome, pointer="/properties/s", keyword="maxLength")


# ---------------------------------------------------------------------------- 6. huge and tiny numbers

BIG = 10**300 - 1  # 300 nines
TINY = "0." + "0" * 299 + "1"  # 1e-300 written out


def _exact(text: str) -> Fraction:
    return Fraction(Decimal(text))


def _number_case(schema, texts, predicate, **options) -> None:
    outcome = run_case(schema, texts, **options)
    expect_grammar(outcome, texts, [predicate(_exact(t)) for t in texts])


def test_minimum_with_300_digits():
    bound = 10**299
    texts = [str(bound), str(bound - 1), str(bound * 10), "5", "-" + str(bound * 10), str(bound) + ".5"]
    _number_case({"type": "number", "minimum": bound}, texts, lambda x: x >= bound)


def test_maximum_with_300_digits():
    texts = [str(BIG), str(BIG) + ".5", str(BIG + 1), "-" + str(BIG * 10), "1.5", str(BIG - 1) + ".999"]
    _number_case({"type": "number", "maximum": BIG}, texts, lambda x: x <= BIG)


def test_negative_minimum_with_300_digits():
    # -bound is computed for the magnitude test: it must not be rounded to 28 digits
    texts = ["-" + str(BIG), "-" + str(BIG + 1), "-" + str(BIG - 1), "0", "-" + str(BIG) + ".5"]
    _number_case({"type": "number", "minimum": -BIG}, texts, lambda x: x >= -BIG)


def test_negative_exclusive_maximum_with_300_digits():
    texts = ["-" + str(BIG), "-" + str(BIG + 1), "-" + str(BIG) + ".1", "0", "-" + str(BIG - 1)]
    _number_case({"type": "number", "exclusiveMaximum": -BIG}, texts, lambda x: x < -BIG)


def test_exclusive_minimum_1e_minus_300_written_out():
    texts = [TINY, "0." + "0" * 299 + "2", "0." + "0" * 300 + "1", "0", "1", "-" + TINY]
    _number_case(json.loads('{"type": "number", "exclusiveMinimum": ' + TINY + "}"), texts,
                 lambda x: x > _exact(TINY))


PRECISE = "0.100000000000000000000000000001"  # not a double: 0.1 is below it


@pytest.mark.parametrize("form", ["text", "decimal dict"])
def test_bounds_more_precise_than_a_double_are_kept_exactly(form):
    text = '{"type": "number", "minimum": ' + PRECISE + "}"
    schema = text if form == "text" else json.loads(text, parse_float=Decimal)
    texts = ["0.1", PRECISE, "0.2", "0.1000000000000000000000000000009", PRECISE + "0001"]
    _number_case(schema, texts, lambda x: x >= _exact(PRECISE))


def test_multiple_of_1e_minus_300():
    texts = ["1", "0.5", TINY, "0." + "0" * 300 + "1", "3." + "0" * 299 + "7"]
    divisor = _exact(TINY)
    _number_case({"type": "number", "multipleOf": 1e-300}, texts, lambda x: (x / divisor).denominator == 1)


def test_multiple_of_needing_a_huge_remainder_automaton_is_refused():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "multipleOf": BIG}}}
    expect_error(run_case(schema, ["{}"]), pointer="/properties/n", keyword="multipleOf")


@pytest.mark.parametrize("divisor", [1e308, 1e30, 1000000, 2500, 40, 120, "0.0120", "0.00025"])
def test_multiple_of_with_factors_of_ten_is_exact_and_small(divisor):
    """Divisibility by 10**k is a test on the last k digits: 1e308 or 1000000 compile (they
    were refused as 10**k-state remainder automata) and agree with exact arithmetic on every
    short spelling and on multiples and near misses of the divisor."""
    from gramalign.grammar.json_schema.numbers import multiple_of

    exact = _exact(format(Decimal(str(divisor)), "f"))
    ga.Grammar.from_json_schema({"type": "integer", "multipleOf": json.loads(str(divisor))}).whole()  # compiles
    dfa = multiple_of(Decimal(str(divisor)))
    assert dfa.num_states < 400  # 10**308: one state per trailing zero, not 10**308 remainders
    texts = {"0", "-0", "0.0", "10", "100", "-1000", "1.5", "0.000"}
    rng = random.Random(7)
    for _ in range(150):
        k = rng.randint(-3, 3)
        texts.add(format(Decimal(exact.numerator * k) / Decimal(exact.denominator), "f"))
        texts.add(format(Decimal(exact.numerator * k + rng.choice([1, -1])) / Decimal(exact.denominator), "f"))
        texts.add(str(rng.randint(-10**7, 10**7)) + rng.choice(["", ".0", ".5", ".000", ".0120", ".00025"]))
    for text in sorted(texts):
        assert dfa.matches(text.encode()) == ((_exact(text) / exact).denominator == 1), (divisor, text)


def test_const_and_enum_with_300_digit_integers():
    schema = {"type": "object", "properties": {"c": {"const": BIG},
                                               "e": {"enum": [BIG, json.loads(TINY), -(10**299)]}}}
    values = {Fraction(BIG), _exact(TINY), Fraction(-(10**299))}
    checks = [("c", str(BIG), True), ("c", str(BIG - 1), False), ("c", "-" + str(BIG), False),
              ("e", str(BIG), True), ("e", TINY, True), ("e", TINY + "000", True), ("e", "-1" + "0" * 299, True),
              ("e", "0", False), ("e", str(BIG + 1), False)]
    texts = ["{" + f'"{key}":{number}' + "}" for key, number, _ in checks]
    outcome = run_case(schema, texts)
    expect_grammar(outcome, texts, [valid for _, _, valid in checks])
    assert all((_exact(n) in values) == v for k, n, v in checks if k == "e")  # the table above is right


def test_1e308_bounds_written_as_exponents_in_the_schema():
    schema = {"type": "object", "properties": {"lo": {"type": "number", "minimum": 1e308},
                                               "hi": {"type": "integer", "maximum": 1e308}}}
    checks = [("lo", "1" + "0" * 308, True), ("lo", "9" * 308, False), ("lo", "1" + "0" * 309, True),
              ("hi", "1" + "0" * 308, True), ("hi", "1" + "0" * 307 + "1", False), ("hi", "5", True)]
    texts = ["{" + f'"{key}":{number}' + "}" for key, number, _ in checks]
    expect_grammar(run_case(schema, texts), texts, [valid for _, _, valid in checks])


def test_a_bound_beyond_double_range_is_exact_or_refused():
    text = '{"type": "object", "properties": {"n": {"type": "number", "minimum": 1e309}}}'
    checks = [("1" + "0" * 309, True), ("9" * 309, False), ("1" + "0" * 310, True)]
    texts = ['{"n":' + n + "}" for n, _ in checks]
    outcome = run_case(text, texts)
    if outcome.kind == "grammar":
        expect_grammar(outcome, texts, [v for _, v in checks])
    else:  # 1e309 is not a double: refusing it is clear enough if it names the bound
        expect_error(outcome, pointer="/properties/n", keyword="minimum")


@pytest.mark.parametrize("form", ["text", "decimal dict"])
def test_a_number_too_long_to_write_out_is_refused(form):
    # 1e999999999 written without an exponent has a billion digits: it must not be attempted
    text = '{"type": "object", "properties": {"n": {"minimum": 1e999999999}}}'
    schema = text if form == "text" else json.loads(text, parse_float=Decimal)
    expect_error(run_case(schema, ['{"n":1}']), pointer="/properties/n", keyword="minimum")


def test_a_5000_digit_integer_in_schema_text():
    text = '{"type": "integer", "minimum": ' + "1" * 5000 + "}"
    texts = ["1" * 5000, "1" * 4999, "2" + "0" * 4999]
    outcome = run_case(text, texts)
    expect_grammar_or_refusal(outcome, {}, texts, [True, False, True], names=("digits", "minimum"))


# ---------------------------------------------------------------------------- 7. deep nesting and size

DEPTH = 10_000


# kind: (prefix, suffix) of one level as JSON text, and the same level as a dict
_LEVELS = {
    "properties": ('{"type":"object","properties":{"a":', '},"required":["a"]}',
                   lambda inner: {"type": "object", "properties": {"a": inner}, "required": ["a"]}, "/properties/a"),
    "items": ('{"type":"array","items":', "}", lambda inner: {"type": "array", "items": inner}, "/items"),
    "allOf": ('{"allOf":[', "]}", lambda inner: {"allOf": [inner]}, "/allOf/0"),
    "anyOf": ('{"anyOf":[', ',{"type":"null"}]}', lambda inner: {"anyOf": [inner, {"type": "null"}]}, "/anyOf/0"),
    "not": ('{"not":', "}", lambda inner: {"not": inner}, "/not"),
}


def _nested(kind: str, depth: int, *, as_text: bool = False):
    """(schema, pointer of the innermost location, a valid instance text, an invalid one).
    The text form is built without json.dumps, which recurses once per level."""
    prefix, suffix, wrap, step = _LEVELS[kind]
    if as_text:
        schema = prefix * depth + '{"type":"integer"}' + suffix * depth
    else:
        schema = {"type": "integer"}
        for _ in range(depth):
            schema = wrap(schema)
    even = depth % 2 == 0  # "not" nested an even number of times is the integer schema again
    valid = {"properties": '{"a":' * depth + "1" + "}" * depth, "items": "[" * depth + "1" + "]" * depth,
             "allOf": "1", "anyOf": "1", "not": "1" if even else '"x"'}[kind]
    invalid = {"properties": '{"a":' * depth + '"x"' + "}" * depth, "items": "[" * depth + '"x"' + "]" * depth,
               "allOf": '"x"', "anyOf": '"x"', "not": '"x"' if even else "1"}[kind]
    return schema, step * depth, valid, invalid


def test_nested_text_and_dict_agree():
    for kind in _LEVELS:
        assert json.loads(_nested(kind, 3, as_text=True)[0]) == _nested(kind, 3)[0]


@pytest.mark.parametrize("kind", ["properties", "items", "allOf", "anyOf", "not"])
@pytest.mark.parametrize("form", ["dict", "text"])
def test_10k_levels_of_nesting(kind, form):
    schema, path, valid, invalid = _nested(kind, DEPTH, as_text=form == "text")
    outcome = run_case(schema, [valid, invalid])
    if outcome.kind == "grammar":
        expect_grammar(outcome, [valid, invalid], [True, False])
        return
    assert outcome.kind == "schema_error", outcome.describe()  # not a RecursionError
    assert "nests too deeply" in outcome.message, outcome.describe()
    assert path.startswith(outcome.pointer), f"the pointer is not on the nesting path: {outcome.describe()}"


@pytest.mark.parametrize("kind", ["properties", "items", "allOf"])
def test_moderate_nesting_still_compiles(kind):
    # 60 levels: deep for a real schema, well within any documented limit
    schema, _, valid, invalid = _nested(kind, 60)
    expect_grammar(run_case(schema, [valid, invalid]), [valid, invalid], [True, False])


def test_anyof_with_5000_branches():
    schema = {"anyOf": [{"const": f"v{i}"} for i in range(2500)] + [{"const": i} for i in range(2500)]}
    instances = ["v0", "v2499", "v2500", "v", 0, 2499, 2500, -1, None, 1.5]
    check_against_jsonschema(schema, instances)


def test_anyof_with_5000_object_branches():
    schema = {"anyOf": [{"type": "object", "properties": {f"k{i}": {"type": "integer"}}, "required": [f"k{i}"]}
                        for i in range(5000)]}
    instances = [{"k0": 1}, {"k4999": 2}, {"k5000": 3}, {"k0": "x"}]
    texts = [compact(i) for i in instances]
    outcome = run_case(schema, texts)
    expect_grammar_or_refusal(outcome, schema, texts, oracle(schema, instances), names=("anyOf", "64"))


def test_allof_of_1000_schemas():
    branches = []
    for i in range(1000):
        branches.append([{"type": ["string", "integer"]}, {"minLength": i % 10}, {"maximum": 100 + i % 3},
                         {"pattern": "^[a-z]+$"}][i % 4])
    schema = {"allOf": branches}
    instances = ["abcdefghi", "abcdefgh", "abcdefghI", 100, 101, -5, 2.5, None, "ab1defghij"]
    check_against_jsonschema(schema, instances)


def test_required_list_of_1000_keys():
    keys = [f"k{i}" for i in range(1000)]
    schema = {"type": "object", "required": keys}
    full = {k: i for i, k in enumerate(keys)}
    missing = {k: v for k, v in full.items() if k != "k500"}
    instances = [full, missing, {**full, "zz": True}, {}, {"k0": 1}]
    check_against_jsonschema(schema, instances)


@pytest.mark.parametrize("required", [False, True], ids=["optional", "required"])
def test_10k_properties(required):
    names = [f"k{i}" for i in range(10_000)]
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}, "additionalProperties": False}
    if required:
        schema["required"] = names
    full = {n: i for i, n in enumerate(names)}
    instances = [full, {"k0": 1, "k9999": 2}, {"k9999": 2, "k0": 1}, {"k10000": 1}, {"k5": "x"}]
    texts = [compact(i) for i in instances]
    outcome = run_case(schema, texts)
    expected = oracle(schema, instances)
    expected[2] = False  # keys out of schema order: the documented output form rejects them
    expect_grammar_or_refusal(outcome, schema, texts, expected, names=("properties",), parser_limit=True)


# ---------------------------------------------------------------------------- 8. malformed schemas

# (schema, pointer, keyword): the pointer is the location of the schema holding the bad
# keyword, or the location of a non-schema where a schema is expected (keyword None).
MALFORMED = {
    "properties: 3": ({"type": "object", "properties": 3}, "", "properties"),
    "patternProperties: 3": ({"patternProperties": 3}, "", "patternProperties"),
    "a property schema that is 3": ({"properties": {"a": 3}}, "/properties/a", None),
    "items: 'x'": ({"items": "x"}, "/items", None),
    "nested items: 'x'": ({"properties": {"a": {"items": "x"}}}, "/properties/a/items", None),
    "draft-07 items: ['x']": ({"$schema": DRAFT7, "items": ["x"]}, "/items/0", None),
    "prefixItems: 3": ({"prefixItems": 3}, "", "prefixItems"),
    "additionalProperties: 3": ({"additionalProperties": 3}, "/additionalProperties", None),
    "not: 3": ({"not": 3}, "/not", None),
    "propertyNames: 3": ({"propertyNames": 3}, "/propertyNames", None),
    "minimum: '5'": ({"minimum": "5"}, "", "minimum"),
    "minimum: '5' under an escaped name": ({"properties": {"a b/c~d": {"minimum": "5"}}}, "/properties/a b~1c~0d",
                                           "minimum"),
    "multipleOf: 0": ({"multipleOf": 0}, "", "multipleOf"),
    "required: 'a'": ({"required": "a"}, "", "required"),
    "required: [1]": ({"properties": {"a": {"required": [1]}}}, "/properties/a", "required"),
    "pattern: '[' (invalid regex)": ({"pattern": "["}, "", "pattern"),
    "nested pattern: '['": ({"properties": {"x": {"pattern": "["}}}, "/properties/x", "pattern"),
    "pattern: 5": ({"pattern": 5}, "", "pattern"),
    "$ref to a missing pointer": ({"$ref": "#/$defs/missing"}, "", "$ref"),
    "nested $ref to a missing pointer": ({"properties": {"a": {"$ref": "#/$defs/missing"}}}, "/properties/a", "$ref"),
    "$ref: 5": ({"$ref": 5}, "", "$ref"),
    "nested $ref: 5": ({"properties": {"a": {"$ref": 5}}}, "/properties/a", "$ref"),
    "$ref into a non-object $defs": ({"$defs": 3, "$ref": "#/$defs/a"}, "", "$ref"),
    "type: 5": ({"type": 5}, "", "type"),
    "type: 'bogus'": ({"type": "bogus"}, "", "type"),
    "enum: 3": ({"enum": 3}, "", "enum"),
    "anyOf: 3": ({"anyOf": 3}, "", "anyOf"),
    "allOf: {}": ({"allOf": {}}, "", "allOf"),
    "maxItems: 'x'": ({"maxItems": "x"}, "", "maxItems"),
    "minItems: -1": ({"minItems": -1}, "", "minItems"),
    "maxProperties: 'x'": ({"maxProperties": "x"}, "", "maxProperties"),
    "minProperties: 1.5": ({"minProperties": 1.5}, "", "minProperties"),
    "minLength: -1": ({"minLength": -1}, "", "minLength"),
    "const: a Python set": ({"const": {1, 2}}, "", "const"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_schemas_name_the_place_and_keyword(name):
    schema, pointer, keyword = MALFORMED[name]
    outcome = run_case(schema, ["1"])
    expect_error(outcome, pointer=pointer, keyword=keyword)
    # what the user reads, "<message> (at #<pointer>/<keyword>)", names the keyword (or,
    # for a non-schema where a schema belongs, the keyword whose value it is)
    named = keyword or pointer.rsplit("/", 2)[-2 if pointer.rsplit("/", 1)[-1].isdigit() else -1]
    assert named in outcome.details["rendered"], outcome.describe()


@pytest.mark.parametrize("schema", [[1], 3, "[1, 2]", '{"type": '], ids=["list", "int", "list text", "broken text"])
def test_a_document_that_is_not_a_schema(schema):
    expect_error(run_case(schema), pointer="", keyword=None)
