"""CompileLimits: every budget raises LimitExceeded naming the limit, its setting, what was
reached and where, before the work it bounds; the hostile inputs of issue 24 end that way.

The oracle of a size limit is the input's own size (the number of enum members, the array
bound, the table the LALR construction would need, counted here independently); time limits
are exercised with a deadline that has already passed, so the first check must fire whatever
the machine's speed (no test measures time).
"""

from __future__ import annotations

import json

import jsonschema
import pytest

import gramalign as ga
from gramalign.errors import LimitExceeded
from gramalign.grammar.lalr import build_parse_table
from gramalign.grammar.limits import active_limits, applied, check_time
from support.fuzz_run import byte_vocabulary, matcher_accepts

PAST = ga.CompileLimits(max_compile_seconds=1e-9)  # already over when the first check runs


def test_defaults_and_validation():
    limits = ga.CompileLimits()
    assert limits.max_compile_seconds > 0 and limits.max_rules == 200_000 and limits.max_states == 50_000
    assert ga.CompileLimits(max_compile_seconds=None).max_compile_seconds is None
    for bad in ({"max_compile_seconds": 0}, {"max_compile_seconds": float("nan")}, {"max_compile_seconds": "1"},
                {"max_rules": 0}, {"max_states": 1.5}, {"max_enum": True}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ga.CompileLimits(**bad)
    with pytest.raises(TypeError, match="CompileLimits"):
        ga.Grammar.from_json_schema({"type": "string"}, limits={"max_rules": 5}).whole()


def test_array_bounds_beyond_max_rules_are_refused_before_any_rule():
    # issue 24: minItems 10**30 took 1.5-6 s to reach max_rules one rule at a time
    for keyword in ("minItems", "maxItems"):
        with pytest.raises(LimitExceeded) as info:
            ga.Grammar.from_json_schema({"type": "array", keyword: 10 ** 30}).whole()
        assert (info.value.limit, info.value.value, info.value.reached) == ("max_rules", 200_000, 10 ** 30)
        assert info.value.where == f"#/{keyword}"
    small = ga.CompileLimits(max_rules=500)
    with pytest.raises(LimitExceeded, match="max_rules=500") as info:
        ga.Grammar.from_json_schema({"properties": {"a": {"minItems": 501}}}, limits=small).whole()
    assert info.value.where == "#/properties/a/minItems"
    ga.Grammar.from_json_schema({"type": "array", "items": {"type": "integer"}, "minItems": 40}, limits=small).whole()


def test_a_constant_array_longer_than_max_rules_is_refused_at_its_keyword():
    with pytest.raises(LimitExceeded) as info:
        ga.Grammar.from_json_schema({"const": [0] * 300}, limits=ga.CompileLimits(max_rules=200)).whole()
    assert (info.value.limit, info.value.reached, info.value.where) == ("max_rules", 300, "#/const")


@pytest.mark.parametrize("schema, limit, reached, where", [
    ({"enum": list(range(11))}, "max_enum", 11, "#/enum"),
    ({"properties": {"a": {"anyOf": [{"type": "null"}] * 11}}}, "max_branches", 11, "#/properties/a/anyOf"),
    ({"oneOf": [{"const": i} for i in range(12)]}, "max_branches", 12, "#/oneOf"),
])
def test_counts_of_members_and_branches(schema, limit, reached, where):
    limits = ga.CompileLimits(max_enum=10, max_branches=10)
    with pytest.raises(LimitExceeded) as info:
        ga.Grammar.from_json_schema(schema, limits=limits).whole()
    assert (info.value.limit, info.value.value, info.value.reached, info.value.where) == (limit, 10, reached, where)


def test_schema_text_and_grammar_text_sizes():
    with pytest.raises(ga.SchemaCompileError, match="max_schema_bytes=100"):
        ga.Grammar.from_json_schema('{"type": "string", "description": "' + "x" * 100 + '"}',
                                    limits=ga.CompileLimits(max_schema_bytes=100))
    grammar = 'start: "a" | "b"\n'
    with pytest.raises(LimitExceeded, match="max_grammar_chars") as info:
        ga.Grammar.from_lark(grammar, limits=ga.CompileLimits(max_grammar_chars=len(grammar) - 1))
    assert info.value.reached == len(grammar)
    with pytest.raises(LimitExceeded, match="max_grammar_chars"):
        ga.Grammar.from_regex("a" * 11, limits=ga.CompileLimits(max_grammar_chars=10))
    # the default refuses a 20,000-rule Lark text at once (lark's loader alone took 20 s on it)
    chain = "start: r0\n" + "\n".join(f'r{i}: r{i + 1} "x" | "y"' for i in range(20_000)) + '\nr20000: "z"\n'
    with pytest.raises(LimitExceeded) as info:
        ga.Grammar.from_lark(chain)
    assert info.value.limit == "max_grammar_chars" and info.value.reached == len(chain)


def test_an_elapsed_deadline_stops_every_front_end_and_compile():
    # inputs no other test uses: automata, shapes and tables are cached per process, and a
    # cache hit does no work to stop
    cases = [lambda: ga.Grammar.from_json_schema({"type": "object", "properties": {"probe7919": {"type": "string"}}},
                                                 limits=PAST),
             lambda: ga.Grammar.from_lark('start: WORD+\nWORD: /[a-z]+7919/\n%ignore " "\n', limits=PAST),
             lambda: ga.Grammar.from_regex(r"[a-z]+@[a-z]+7919\.(com|org)", limits=PAST)]
    for build in cases:
        with pytest.raises(LimitExceeded) as info:
            build()
        assert info.value.limit == "max_compile_seconds" and info.value.value == 1e-9
    # a grammar no other test compiles: parser tables are cached per process, and a cache hit
    # does no work to stop
    grammar = ga.Grammar.from_json_schema({"type": "array", "items": {"type": "integer", "minimum": -7919}})
    with pytest.raises(LimitExceeded, match="max_compile_seconds"):
        ga.compile(grammar, byte_vocabulary(), limits=PAST, cache=False)
    ga.compile(grammar, byte_vocabulary(), cache=False)  # the default budget is ample


def test_the_lalr_table_is_refused_from_its_size_before_it_is_built():
    grammar = ga.Grammar.from_lark("start: " + " | ".join(f'"w{i}" x' for i in range(40)) + '\nx: "a" | "b" x\n')
    table = build_parse_table(grammar)
    cells = table.action.size  # states x terminals, each int32
    with applied(ga.CompileLimits(max_table_bytes=4 * cells)):
        build_parse_table(grammar)
    with applied(ga.CompileLimits(max_table_bytes=4 * cells - 1)):
        with pytest.raises(LimitExceeded) as info:
            build_parse_table(grammar)
    assert info.value.limit == "max_table_bytes" and info.value.reached == 4 * cells


def test_nested_compiles_keep_the_earlier_deadline_and_the_inner_limits():
    with applied(PAST):
        with applied(ga.CompileLimits(max_compile_seconds=None, max_rules=7)):
            assert active_limits().max_rules == 7
            with pytest.raises(LimitExceeded):
                check_time("inner")
        with applied(None):
            assert active_limits() is PAST
    assert active_limits() == ga.CompileLimits()
    check_time("outside any compile: no budget")


def test_limit_exceeded_is_a_grammar_error_with_its_fields():
    exc = LimitExceeded("max_rules", 10, 11, "#/a", "grammar rules")
    assert isinstance(exc, ga.GrammarError) and isinstance(exc, ga.GramalignError) and isinstance(exc, ValueError)
    assert str(exc) == "compile limit max_rules=10 exceeded: 11 (grammar rules), at #/a"


def test_string_lengths_past_the_counter_are_refused_or_no_bound():
    # fuzz cases 2193 and 885 of the 10,000-case run: an OverflowError building the tables
    with pytest.raises(ga.SchemaCompileError, match="minLength") as info:
        ga.compile(ga.Grammar.from_json_schema({"minLength": 10 ** 30}), byte_vocabulary())
    assert info.value.keyword == "minLength" and "#/minLength" in str(info.value)
    # a maxLength no string can reach is no bound: the language is every string
    compiled = ga.compile(ga.Grammar.from_json_schema({"type": "string", "maxLength": 10 ** 30}), byte_vocabulary())
    matcher = compiled.matcher()
    matcher.accept_string('"' + "x" * 3000 + '"')
    assert matcher.can_terminate()


def test_quadratic_epsilon_closures_are_refused_before_they_are_allocated():
    # fuzz case 1905: (.*){1,32000} has closures of ~32k states each, a MemoryError in a kernel
    with pytest.raises(ga.SchemaCompileError, match="pattern"):
        ga.Grammar.from_json_schema({"type": "string", "pattern": "(.*){1,31999}"}).whole()
    with pytest.raises(ga.RegexError, match="max_subset_work"):
        ga.Grammar.from_regex("(a*){1,29000}")


# ---------------------------------------------------------------------------- issue 41: safe defaults

def _union_work_estimate_refuses(schema, where: str) -> LimitExceeded:
    with pytest.raises(LimitExceeded) as info:
        ga.Grammar.from_json_schema(schema, strict=False).whole()
    assert info.value.limit == "max_union_work" and info.value.where == where
    assert info.value.reached > info.value.value == ga.CompileLimits().max_union_work
    return info.value


def test_default_limits_refuse_oneofs_of_overlapping_branches_from_an_estimate():
    """Issue 41: with default limits, a oneOf of 1,000 object branches that may overlap took
    the full 60 s (999,000 complement meets); 1,000 minLength or maxLength branches built
    1,000 length automata and their differences. Each is refused from its branches, before
    the first product: the estimate counts one meet per ordered pair of branches."""
    objects = [{"type": "object", "properties": {f"k{i}": {"type": "integer"}}} for i in range(1000)]
    error = _union_work_estimate_refuses({"oneOf": objects}, "#/oneOf")
    assert "999000 meets" in str(error)
    arrays = [{"type": "array", "maxItems": i} for i in range(1000)]
    _union_work_estimate_refuses({"properties": {"a": {"oneOf": arrays}}}, "#/properties/a/oneOf")
    for keyword in ("minLength", "maxLength"):
        _union_work_estimate_refuses({"oneOf": [{"type": "string", keyword: i} for i in range(1000)]}, "#/oneOf")
    # a few overlapping branches stay exact: values in exactly one of them (jsonschema agrees)
    schema = {"oneOf": objects[:3]}
    grammar = ga.Grammar.from_json_schema(schema, strict=False)
    compiled = ga.compile(grammar, byte_vocabulary())
    oracle = jsonschema.Draft202012Validator(schema)
    for text in ['{"k0":1}', '{"k0":"x"}', '{"k0":"x","k1":"y"}', '{"k0":1,"k1":"x","k2":"y"}', "{}", "[]"]:
        assert matcher_accepts(compiled, text.encode()) == oracle.is_valid(json.loads(text)), text


def test_an_anyof_of_length_bounds_stays_counted():
    """anyOf of maxLength 0..999 is one counted range (maxLength 0 is counted too, so no
    branch turns the union into automata); its language is jsonschema's."""
    schema = {"anyOf": [{"type": "string", "maxLength": i} for i in range(1000)]}
    grammar = ga.Grammar.from_json_schema(schema, limits=ga.CompileLimits(max_states=100))
    compiled = ga.compile(grammar, byte_vocabulary())
    oracle = jsonschema.Draft202012Validator(schema)
    for text in ['""', '"a"', '"' + "b" * 999 + '"', '"' + "b" * 1000 + '"', "1"]:
        assert matcher_accepts(compiled, text.encode()) == oracle.is_valid(json.loads(text)), text[:20]


def test_memory_growth_past_the_limit_stops_a_compile():
    """``max_memory_bytes`` bounds how much the process grows during a compile (sampled with
    the wall time): an automaton of 40,000 states (~40 MB of transitions) with a 16 MiB bound."""
    limits = ga.CompileLimits(max_memory_bytes=16 << 20)
    with pytest.raises(LimitExceeded) as info:
        ga.Grammar.from_json_schema({"type": "string", "pattern": "^[a-z]{40000}$"}, limits=limits).whole()
    assert info.value.limit == "max_memory_bytes" and info.value.reached > 16 << 20


def test_numba_compilation_does_not_count_against_the_deadline():
    """A kernel's first compilation (numba's ``numba:compile`` event) costs the same for
    every input, so the deadline moves past it: a compile event of 0.3 s inside a budget of
    0.2 s leaves it within budget, and the time after it counts as before."""
    import time

    from numba.core import event

    with applied(ga.CompileLimits(max_compile_seconds=0.2)):
        with event.trigger_event("numba:compile", data={}):
            time.sleep(0.3)
        check_time("after a kernel compiled")
        time.sleep(0.25)
        with pytest.raises(LimitExceeded, match="max_compile_seconds"):
            check_time("later")
