"""A JSON Schema's rules emitted on demand (``lazy_json_schema_rules``), read through
``ProductiveRules`` (only alternatives that derive some text) by an LR(0) automaton built on
demand (``LazyLR0``).

Oracle: the eager grammar of the same schema (``Grammar.from_json_schema``, every rule
emitted, unproductive alternatives dropped by a fixpoint over all of them) and its table,
read by ``parse_terminals``. Terminal sequences drawn from each side (random derivations of
the eager grammar, random walks of the lazy automaton), and damaged copies, get the same
verdict from both. Terminals are matched by their language (pattern and counted length),
since names follow the order rules are emitted in.
"""

from __future__ import annotations

import json
import random

import pytest

import gramalign as ga
from gramalign.grammar.json_schema import lazy_json_schema_rules
from gramalign.grammar.lalr import build_parse_table, parse_terminals
from gramalign.grammar.lr0_lazy import LazyLR0
from gramalign.grammar.productive import ProductiveRules

from support.random_schemas import SchemaGenerator
from support.shared_data import maskbench_files


def key(terminal) -> tuple:
    return terminal.pattern, terminal.length


class Lazy:
    """The lazy side: emitter, productivity, automaton, and an LR(0) parser over them."""

    def __init__(self, schema):
        self.emitter = lazy_json_schema_rules(schema, strict=False)
        self.rules = ProductiveRules(self.emitter)
        self.automaton = LazyLR0(self.rules, self.emitter.start)

    def name_of(self, terminal_key) -> "str | None":
        for name, terminal in self.emitter.terminals.items():
            if key(terminal) == terminal_key:
                return name
        return None

    def _settle(self, stack: list) -> None:
        while True:
            row = self.automaton.row(stack[-1])
            assert not row.conflict
            if row.default < 0:
                return
            lhs, rhs = self.automaton.rules[row.default]
            del stack[len(stack) - len(rhs):]
            stack.append(self.automaton.row(stack[-1]).gotos[lhs])

    def accepts(self, keys: list) -> bool:
        stack = [0]
        self._settle(stack)
        for terminal_key in keys:
            name = self.name_of(terminal_key)
            target = self.automaton.row(stack[-1]).shifts.get(name) if name is not None else None
            if target is None:
                return False
            stack.append(target)
            self._settle(stack)
        return self.automaton.row(stack[-1]).accepts

    def walk(self, rng: random.Random, max_terminals: int) -> list:
        stack, keys = [0], []
        self._settle(stack)
        for _ in range(max_terminals):
            row = self.automaton.row(stack[-1])
            assert row.shifts or row.accepts, "a dead end: a state that neither shifts nor accepts"
            if not row.shifts or (row.accepts and rng.random() < 0.3):
                return keys
            name = rng.choice(sorted(row.shifts))
            keys.append(key(self.emitter.terminals[name]))
            stack.append(row.shifts[name])
            self._settle(stack)
        return keys if self.automaton.row(stack[-1]).accepts else None


class Eager:
    def __init__(self, schema):
        self.grammar = ga.Grammar.from_json_schema(schema, strict=False)
        self.table = build_parse_table(self.grammar)
        self.by_name = {t.name: t for t in self.grammar.terminals}
        self.by_key = {key(t): t.name for t in self.grammar.terminals}
        rules = {rule.name: rule.alternatives for rule in self.grammar.rules}
        self.rules = rules
        # the fewest terminals each nonterminal derives (a fixpoint), for derivations that end
        self.shortest = {}
        changed = True
        while changed:
            changed = False
            for name, alternatives in rules.items():
                for alternative in alternatives:
                    if all(s in self.by_name or s in self.shortest for s in alternative):
                        n = sum(self.shortest.get(s, 1) for s in alternative)
                        if n < self.shortest.get(name, 1 << 30):
                            self.shortest[name] = n
                            changed = True

    def accepts(self, keys: list) -> bool:
        names = [self.by_key.get(k) for k in keys]
        return None not in names and parse_terminals(self.table, names)

    def derive(self, rng: random.Random, depth: int = 0, symbol: "str | None" = None) -> list:
        symbol = symbol or self.grammar.start
        if symbol in self.by_name:
            return [key(self.by_name[symbol])]
        alternatives = [a for a in self.rules[symbol] if all(s in self.by_name or s in self.shortest for s in a)]
        if depth > 6:
            alternative = min(alternatives, key=lambda a: sum(self.shortest.get(s, 1) for s in a))
        else:
            alternative = rng.choice(alternatives)
        return [k for s in alternative for k in self.derive(rng, depth + 1, s)]


def damaged(rng: random.Random, keys: list, pool: list) -> list:
    keys = list(keys)
    i = rng.randrange(len(keys) + 1)
    kind = rng.randrange(3)
    if kind == 0 and keys:
        del keys[min(i, len(keys) - 1)]
    elif kind == 1:
        keys.insert(i, rng.choice(pool))
    elif keys:
        keys[min(i, len(keys) - 1)] = rng.choice(pool)
    return keys


def assert_same_language(schema, seed: int, samples: int = 25) -> int:
    eager, lazy = Eager(schema), Lazy(schema)
    rng = random.Random(seed)
    pool = list(eager.by_key)
    checked = 0
    for _ in range(samples):
        sentence = eager.derive(rng)
        assert lazy.accepts(sentence), (json.dumps(schema), sentence)
        walked = lazy.walk(rng, 60)
        if walked is not None:
            assert eager.accepts(walked), (json.dumps(schema), walked)
        for keys in (damaged(rng, sentence, pool), damaged(rng, walked or sentence, pool)):
            assert lazy.accepts(keys) == eager.accepts(keys), (json.dumps(schema), keys)
        checked += 1
    return checked


UNIONS = {"anyOf": [
    {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
    {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "array", "items": {"type": "string"}}},
     "required": ["kind", "y"]},
    {"type": "array", "items": {"$ref": "#"}}]}
UNPRODUCTIVE = {"type": "object", "properties": {
    "never": {"not": {}}, "deep": {"type": "object", "properties": {"x": {"allOf": [{"type": "string"},
                                                                                  {"type": "integer"}]}},
                                   "required": ["x"]},
    "fine": {"type": "boolean"}}}


@pytest.mark.parametrize("schema", [UNIONS, UNPRODUCTIVE], ids=["unions", "unproductive"])
def test_lazy_rules_have_the_eager_grammars_language(schema):
    assert assert_same_language(schema, 3, 60) == 60


@pytest.mark.parametrize("seed", range(6))
def test_random_schemas_lazy_and_eager_agree(seed):
    rng = random.Random(seed)
    checked = 0
    for _ in range(8):
        schema = SchemaGenerator(rng).schema()
        try:
            Eager(schema)
        except ga.SchemaCompileError:
            continue
        checked += assert_same_language(schema, seed, 10)
    assert checked >= 30


def test_maskbench_schemas_lazy_and_eager_agree():
    checked = 0
    for path in maskbench_files()[::97][:25]:
        schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        try:
            Eager(schema)
        except ga.GramalignError:
            continue
        checked += assert_same_language(schema, 11, 6)
    assert checked >= 100


def test_unvisited_parts_are_not_emitted():
    wide = {"type": "object", "properties": {
        "small": {"type": "integer"},
        "big": {"type": "object", "properties": {f"p{i}": {"type": "object", "properties": {
            f"q{j}": {"type": "string", "pattern": f"^x{j}[a-z]+$"} for j in range(20)}} for i in range(20)}}}}
    lazy = Lazy(wide)
    assert lazy.accepts([key(t) for t in []]) is False  # an object must be written
    eager = Eager(wide)
    rows_after_root = len(lazy.emitter.rules) - len(lazy.emitter._pending)
    assert rows_after_root < len(eager.grammar.rules) / 5
    assert assert_same_language(wide, 5, 20) == 20


class WithoutShortcut:
    """The emitter as a rule source without its ``derives_text``: productivity proved on the
    rules alone (the oracle of the shortcut)."""

    def __init__(self, emitter):
        self.emitter = emitter
        self.terminals = emitter.terminals

    def is_terminal(self, name: str) -> bool:
        return self.emitter.is_terminal(name)

    def alternatives(self, name: str):
        return self.emitter.alternatives(name)


def shortcut_verdicts(schema, **options) -> tuple[int, int, int, int]:
    """(value rules the emitter's ``derives_text`` shows, value rules in all, container
    states (members, items) it shows, container states in all), every one checked against
    the proof on rules: a rule shown must be productive there."""
    emitter = lazy_json_schema_rules(schema, strict=False, **options)
    LazyLR0(ProductiveRules(WithoutShortcut(emitter)), emitter.start).force(20000)
    oracle = ProductiveRules(WithoutShortcut(emitter))
    counts = []
    for names in (list(emitter._value_of_rule), list(emitter._closes)):
        shown = 0
        for name in names:
            if emitter.derives_text(name):
                shown += 1
                assert oracle.productive(name), (json.dumps(schema), name)
        counts += [shown, len(names)]
    return tuple(counts)


DEAD_ENDS = [  # values whose rules derive nothing, each behind an object or array that does
    {"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]},
    {"type": "object", "properties": {"a": {"not": {}}}, "required": ["a"]},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"], "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 2, "additionalProperties": False},
    {"type": "object", "required": ["a", "b"], "maxProperties": 1},
    {"type": "array", "items": {"const": 1}, "minItems": 2, "uniqueItems": True},
    {"type": "array", "items": {"not": {}}, "minItems": 1},
    {"type": "array", "prefixItems": [{"type": "null"}], "items": False, "minItems": 2},
    {"type": "string", "minLength": 3, "maxLength": 2},
    {"type": "string", "pattern": "^a$", "minLength": 2},
    {"type": "integer", "minimum": 1.5, "maximum": 1.7},
    {"type": "object", "properties": {"a": {"type": "array", "contains": {"not": {}}}}, "required": ["a"]},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"], "additionalProperties": {"not": {}}},
    {"type": "object", "properties": {"a": {"type": "object", "required": ["b"], "additionalProperties": False}},
     "required": ["a"]},
    {"type": "string", "oneOf": [{"pattern": "^a$"}, {"enum": ["a"]}]},  # one string, in both branches
    {"type": "string", "oneOf": [{"format": "ipv4"}, {"allOf": [{"format": "ipv4"}]}]},
    {"type": "string", "anyOf": [{"type": "integer"}, {"not": {}}]},
    {"type": "string", "oneOf": [{"maxLength": 0}, {"maxLength": 0}]},
    {"type": "string", "format": "date", "pattern": "^x"},  # no date starts with x
    {"type": "integer", "multipleOf": 0.5, "minimum": 0.1, "maximum": 0.9},
    {"type": "number", "multipleOf": 3, "minimum": 4, "maximum": 5, "title": "none"},
    {"type": "object", "required": ["c2"], "patternProperties": {"^c": {"not": {}}}},  # c2's pattern has no value
    {"type": "boolean", "enum": [1, "a", None]},
    {"type": "integer", "const": 1.5},
    {"const": "a", "enum": ["b"]},
    {"type": ["string", "integer"], "minLength": 5, "maxLength": 2, "minimum": 3, "maximum": 2},
    {"type": "array", "items": {"enum": [1]}, "minItems": 2, "uniqueItems": True},
    {"type": "array", "items": {"type": "string", "maxLength": 0}, "minItems": 3, "maxItems": 2},
    {"anyOf": [{"type": "string", "minLength": 2, "maxLength": 1}, {"not": {}}], "description": "neither"},
    {"type": "string", "pattern": "^a$b"},
]

SHOWN_BY_KEYWORDS = [  # each shown from its keywords (a value of its type they leave), without its shape
    {"type": "string", "minLength": 1, "maxLength": 40, "description": "x"},
    {"type": "integer", "minimum": 0, "maximum": 100, "multipleOf": 5},
    {"type": "number", "minimum": 0.25, "maximum": 0.35, "multipleOf": 0.1},
    {"type": "integer", "minimum": 1.5, "maximum": 2.5},
    {"type": "integer", "multipleOf": 0.75, "minimum": 2},
    {"type": "array", "items": {"type": "string", "pattern": "^x"}, "maxItems": 3},
    {"type": "object", "properties": {"a": {"not": {}}}, "additionalProperties": False},
    {"enum": ["a", "b"], "type": "string"},
    {"const": 5, "type": "integer"},
    {"type": ["null", "string"], "pattern": "^a+$"},
    {"type": "string", "_format": "date", "readonly": True, "maxLength": 10},
    {"minLength": 3, "pattern": "^$"},  # null (no type)
    {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{1,6}$", "description": "a code"},
    {"type": "array", "items": {"type": "integer", "minimum": 3}, "minItems": 2, "maxItems": 2},
    {"anyOf": [{"type": "string", "pattern": "^a"}, {"type": "integer", "maximum": 3}], "title": "either"},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "x-kind": "k",
     "definitions": {"unused": {"not": {}}}},
    # required members by the patterns their names match (b1: ^b; a: none, its property)
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b1"],
     "patternProperties": {"^b": {"type": "integer"}, "^c": {"not": {}}, "^(?:x|d)[0-9]+$": {"minimum": 1}},
     "additionalProperties": False},
]

STRING_UNIONS = [  # each shown by one branch's shortest string, without the union's own shape
    {"type": "string", "oneOf": [{"format": "hostname"}, {"format": "ipv4"}, {"format": "ipv6"}]},
    {"type": "string", "oneOf": [{"format": "ipv4"}, {"format": "ipv4"}, {"enum": ["x"]}]},
    {"type": "string", "anyOf": [{"pattern": "^[0-9]{3}$"}, {"format": "email"}], "description": "either"},
    {"type": "string", "oneOf": [{"maxLength": 3}, {"minLength": 2, "maxLength": 5}]},
    {"type": "string", "anyOf": [{"enum": ["a"]}], "oneOf": [{"enum": ["a"]}, {"enum": ["b"]}]},
]


PATTERNS_WITH_FORMATS = [  # each shown by a shortest string of both, without their product automaton
    {"type": "string", "format": "email", "pattern": "^[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+\\.[A-Za-z]{2,}$"},
    {"type": "string", "format": "date", "pattern": "^2"},
    {"type": "string", "format": "uri", "pattern": "^https://", "description": "a link"},
    {"type": "string", "format": "no-such-format", "pattern": "a+"},  # an unknown format: the pattern decides
]


@pytest.mark.parametrize("index", range(len(PATTERNS_WITH_FORMATS)))
def test_a_pattern_with_a_format_is_shown_by_a_string_of_both(index, monkeypatch):
    from gramalign.grammar.json_schema import evaluate

    def refused(*args, **kwargs):
        raise AssertionError("the product automaton was built")

    inner = PATTERNS_WITH_FORMATS[index]
    schema = {"type": "object", "properties": {"x": inner}, "required": ["x"]}
    emitter = lazy_json_schema_rules(schema, strict=False)
    root = next(iter(emitter._value_of_rule))
    monkeypatch.setattr(evaluate, "intersect", refused)
    assert emitter.derives_text(root)
    monkeypatch.undo()
    assert shortcut_verdicts(schema)[0] >= 2  # and the rule proof agrees with every value shown


@pytest.mark.parametrize("order", ["any", "schema"])
def test_a_container_state_that_can_close_is_shown_without_its_rules(order):
    # the members after {"a": ...} can close; those before it cannot (a is required): shown
    # from the state alone, without its rule (one alternative per key left, each proved)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                               "c": {"type": "array", "items": {"type": "null"}, "minItems": 1}},
              "required": ["a"]}
    emitter = lazy_json_schema_rules(schema, strict=False, property_order=order)
    LazyLR0(ProductiveRules(emitter), emitter.start).force(2000)
    verdicts = [emitter.derives_text(name) for name in emitter._closes]
    assert True in verdicts and False in verdicts
    assert shortcut_verdicts(schema, property_order=order)[2] >= 2  # each one shown is productive


@pytest.mark.parametrize("index", range(len(DEAD_ENDS)))
def test_value_rules_shown_to_derive_text_do_so(index):
    inner = DEAD_ENDS[index]
    wrapped = {"type": "object", "properties": {"x": inner, "y": {"type": "array", "items": inner}},
               "required": ["y"]}
    assert shortcut_verdicts(wrapped)[0] >= 1  # the root, at least (``y`` may be [])
    emitter = lazy_json_schema_rules({"type": "object", "properties": {"x": inner}, "required": ["x"]},
                                     strict=False)
    root = next(iter(emitter._value_of_rule))
    assert not emitter.derives_text(root)  # its one member has no value


@pytest.mark.parametrize("index", range(len(SHOWN_BY_KEYWORDS)))
def test_a_value_left_by_its_keywords_is_shown_without_its_shape(index, monkeypatch):
    from gramalign.grammar.json_schema import nonempty

    def refused(*args):
        raise AssertionError("the value's shape was read")

    schema = {"type": "object", "properties": {"x": SHOWN_BY_KEYWORDS[index]}, "required": ["x"]}
    emitter = lazy_json_schema_rules(schema, strict=False)
    root = next(iter(emitter._value_of_rule))
    monkeypatch.setattr(nonempty.NonEmptyValues, "_shape", refused)
    assert emitter.derives_text(root)
    monkeypatch.undo()
    assert shortcut_verdicts(schema)[0] >= 2  # and the rule proof agrees with every value shown


@pytest.mark.parametrize("index", range(len(STRING_UNIONS)))
def test_string_unions_are_shown_by_a_string_of_one_branch(index, monkeypatch):
    from gramalign.grammar.json_schema import evaluate

    def refused(*args):
        raise AssertionError("the union's shape was evaluated")

    inner = STRING_UNIONS[index]
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/u"}}, "required": ["x"], "$defs": {"u": inner}}
    emitter = lazy_json_schema_rules(schema, strict=False)
    root = next(iter(emitter._value_of_rule))
    if index < 3:  # (3: the shortest strings are in both branches; 4: two unions: the union's shape shows them)
        monkeypatch.setattr(evaluate.Evaluator, "_exactly_one", refused)
    assert emitter.derives_text(root)
    monkeypatch.undo()
    assert shortcut_verdicts(schema)[0] >= 2  # and the rule proof agrees with every value shown


def _wide_branch(required: str, **more) -> dict:
    return {"type": "object", "properties": {f"p{k}": {"type": "string"} for k in range(12)}, "required": [required],
            **more}


OBJECT_UNIONS = [  # unions whose member states are shown by one alternative's required members
    {"anyOf": [_wide_branch("p11"), _wide_branch("p10")]},
    # dead ends among the alternatives: a required member with no value, counts that cannot be met
    {"anyOf": [{"type": "object", "properties": {"a": {"not": {}}, "b": {"type": "string"}}, "required": ["a"]},
               _wide_branch("p3", maxProperties=0), _wide_branch("p2", minProperties=3, additionalProperties=False),
               _wide_branch("p5", maxProperties=2)]},
    # a key named by one alternative only: its value competes with the other's extra keys,
    # which take every object (objects read by one union tagged by the refs they satisfy)
    {"anyOf": [{"type": "object", "properties": {"k": {"type": "object", "properties": {
        f"q{j}": {"type": "integer"} for j in range(4)}, "required": ["q3"]}, "n": {"type": "null"}}},
        {"type": "object", "properties": {"n": {"type": "null"}}, "maxProperties": 3}]},
    {"oneOf": [{"type": "object", "properties": {"k": {"type": "object", "properties": {
        "a": {"type": "string"}}, "required": ["a"], "additionalProperties": False}}, "required": ["k"]},
        {"type": "object", "properties": {"m": {"type": "boolean"}}, "additionalProperties": {"type": "object"}}]},
]


@pytest.mark.parametrize("order", ["any", "schema"])
@pytest.mark.parametrize("index", range(len(OBJECT_UNIONS)))
def test_object_union_states_are_shown_by_required_members(index, order):
    schema = OBJECT_UNIONS[index]
    value_rules, _, shown, states = shortcut_verdicts(schema, property_order=order)  # each one shown is productive
    assert states > 4 and shown > states / 3
    assert assert_same_language(schema, index, 20) == 20  # (schema order: the eager grammar's)


def test_an_object_union_state_is_proved_without_the_states_after_it():
    # each key of the state after `{` leads to a state that no alternative can close yet (each
    # requires a key of its own): shown by the required member, not by expanding each state
    emitter = lazy_json_schema_rules(OBJECT_UNIONS[0], strict=False)
    automaton = LazyLR0(ProductiveRules(emitter), emitter.start)
    after_brace = automaton.row(0).shifts["LBRACE"]
    assert len(automaton.row(after_brace).shifts) == 12
    member_states = [name for name in emitter.rules if name.startswith("members")]
    emitted = [name for name in member_states if name not in emitter._pending]
    assert len(member_states) > 12 and len(emitted) == 1


def test_objects_every_object_satisfies_are_not_told_apart():
    # `k` is named by the first alternative only: its value competes with the second's extra
    # keys (any value). An object in the first's `k` is in both: no rule for "only the first"
    emitter = lazy_json_schema_rules(OBJECT_UNIONS[2], strict=False)
    LazyLR0(ProductiveRules(emitter), emitter.start).force(5000)
    unions = {(key[1], key[2]) for key in emitter._memo if key[0] == "objects" and len(key[1]) == 2}
    assert unions
    for groups, tag in unions:
        (every,) = [g for g, group in enumerate(groups) if any(shape.accepts_all for shape in group)]
        assert every in tag  # the extras' objects; {k's objects} alone would be a rule never ending


def test_shortcut_against_the_rule_proof_on_random_and_maskbench_schemas():
    rng = random.Random(7)
    counts = [0, 0, 0, 0]
    schemas = [SchemaGenerator(rng).schema() for _ in range(60)]
    schemas += [json.loads(path.read_text(encoding="utf-8"))["schema"] for path in maskbench_files()[::61][:40]]
    for schema in schemas:
        for options in ({}, {"indent": 2, "max_depth": 2}, {"property_order": "schema"}):
            try:
                verdicts = shortcut_verdicts(schema, **options)
            except ga.GramalignError:
                continue
            counts = [a + b for a, b in zip(counts, verdicts)]
    shown, total, closing, states = counts
    assert total > 300 and shown > total / 2  # the shortcut shows most values, and only true ones
    assert states > 300 and states / 4 < closing < states  # and container states that can close


def test_a_member_of_several_schemas_of_which_one_asserts_is_shown_by_that_one(monkeypatch):
    # x's value is met from two places, one of them only an annotation: x is shown by the
    # other's keywords, without the meet's shape (the root's own shape is read: its allOf)
    from gramalign.grammar.json_schema import nonempty

    schema = {"type": "object", "allOf": [{"properties": {"x": {"description": "d"}}},
                                          {"properties": {"x": {"type": "integer", "minimum": 2}}}],
              "required": ["x"]}
    emitter = lazy_json_schema_rules(schema, strict=False)
    root = next(iter(emitter._value_of_rule))
    original = nonempty.NonEmptyValues._shape
    members = []

    def shape(self, shape, depth, busy):
        members.append(shape)
        return original(self, shape, depth, busy)

    monkeypatch.setattr(nonempty.NonEmptyValues, "_shape", shape)
    assert emitter.derives_text(root)
    assert len(members) == 1  # the root's, not x's
    monkeypatch.undo()
    assert shortcut_verdicts(schema)[0] >= 2
