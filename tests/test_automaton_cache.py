"""The process-wide automaton caches: a hit is exactly a fresh computation, and the
caches stay within their byte budgets. Also the direct constructions that replaced
Python determinisation (minimal JSON string spellings) against the NFA route."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.automata import algebra as automata
from gramalign.grammar.automata import dfa
from gramalign.grammar.automata.cache import AutomatonCache, clear_automaton_caches
from gramalign.grammar.json_schema import strings
from gramalign.grammar.json_schema.ecma_regex import ecma_pattern_dfa
from gramalign.grammar.json_schema.formats import format_dfa
from gramalign.grammar.automata.regex import regex_to_dfa

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
                                      "email": {"type": "string", "format": "email"},
                                      "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}}},
     "required": ["name", "age"]},
    {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0, "maximum": 150},
                                      "name": {"type": "string", "pattern": "^[A-Z][a-z]+$"}},
     "additionalProperties": {"type": "number", "multipleOf": 0.5}},
    {"anyOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
                "required": ["kind"]},
               {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"enum": ["p", "q", 3]}},
                "required": ["kind"]}]},
    {"allOf": [{"type": "string", "minLength": 2}, {"not": {"enum": ["ab", "cd"]}}, {"format": "date"}]},
    {"oneOf": [{"type": "number", "minimum": 1.5}, {"type": "integer", "maximum": 10}]},
]


def same_automaton(a: dfa.ByteDFA, b: dfa.ByteDFA) -> bool:
    return (a.initial == b.initial and np.array_equal(a.transitions, b.transitions)
            and np.array_equal(a.accepting, b.accepting))


def terminal_automata(grammar: ga.Grammar) -> dict:
    return {t.name: t.dfa for t in grammar.terminals}


@pytest.mark.parametrize("schema", SCHEMAS)
def test_warm_caches_give_the_grammar_of_a_cold_compile(schema):
    clear_automaton_caches()
    cold = ga.Grammar.from_json_schema(schema)
    warm = ga.Grammar.from_json_schema(schema)  # every product, literal set and spelling is a hit now
    assert warm == cold  # terminals carry a digest of their automaton, rules are compared by name
    for name, automaton in terminal_automata(cold).items():
        assert same_automaton(automaton, terminal_automata(warm)[name]), name
    clear_automaton_caches()
    again = ga.Grammar.from_json_schema(schema)
    assert again == cold


def test_cached_products_equal_fresh_products_string_by_string():
    patterns = [r"[ab]*", r"a(ba)*", r"(ab|b)+", r"b?a{1,3}"]
    words = ["".join(p).encode() for n in range(7) for p in itertools.product("ab", repeat=n)]
    for p, q in itertools.permutations(patterns, 2):
        x, y = regex_to_dfa(p), regex_to_dfa(q)
        for operation, mode in ((automata.intersect, automata._INTERSECT), (automata.union, automata._UNION),
                                (automata.difference, automata._DIFFERENCE)):
            first = operation(x, y)
            hit = operation(x, y)
            assert hit is first  # the second call is served by the cache
            fresh = automata._compute_product(x, y, mode, automata.MAX_STATES)
            assert same_automaton(hit, fresh)
            assert [hit.matches(w) for w in words] == [fresh.matches(w) for w in words]


def test_cached_literal_sets_equal_fresh_ones():
    sets = [[b"name"], [b"a", b"ab", b"abc"], [b"", b"x"], ["\u00e9t\u00e9".encode(), b"ete"]]
    for words in sets:
        first = dfa.literal_dfa(words)
        assert dfa.literal_dfa(list(reversed(words))) is first  # keyed by the set, not the order
        fresh = dfa._literal_dfa(sorted(set(words)), None)
        assert same_automaton(first, fresh)
        assert same_automaton(first, dfa.minimize(first))  # the one-word chain is minimal and canonical


def test_literal_sets_from_the_trie_kernel_equal_the_incremental_construction(monkeypatch):
    """Small word sets are minimised from their trie in one kernel, large ones built
    incrementally (Daciuk et al.): the same minimal automaton, numbered alike."""
    rng = random.Random(3)
    pieces = [b"a", b"b", b"c", "\u00e9".encode(), b"\x00", b"\xff", b"zz"]
    compared = 0
    for _ in range(1500):
        words = sorted({b"".join(rng.choice(pieces) for _ in range(rng.randrange(7)))
                        for _ in range(rng.randrange(2, 12))})
        if len(words) < 2:
            continue
        monkeypatch.setattr(dfa, "TRIE_CELLS", 1 << 18)
        from_trie = dfa._literal_dfa(words, None)
        monkeypatch.setattr(dfa, "TRIE_CELLS", 0)
        incremental = dfa._literal_dfa(words, None)
        assert same_automaton(from_trie, incremental), words
        assert all(from_trie.matches(w) for w in words) and not from_trie.matches(b"azzb" * 3)
        compared += 1
    assert compared > 1400
    monkeypatch.setattr(dfa, "TRIE_CELLS", 1 << 18)
    with pytest.raises(dfa.StateLimitError):
        dfa._literal_dfa([b"abcd", b"xyz"], 5)


def test_without_words_equals_the_difference_with_the_literal_automaton():
    """``without_words`` grafts the words' trie onto the automaton and merges it bottom up:
    the automaton the product and minimisation give, state for state, whatever the words
    (outside the language, prefixes of each other, all of it, none)."""
    languages = [strings.any_string_contents(),
                 strings.json_string_dfa(strings.any_string_contents(), escapes="minimal"), regex_to_dfa("a(ba)*c?"), regex_to_dfa("[ab]{0,3}"), regex_to_dfa("x")]
    pieces = [b"a", b"b", b"c", "\u00e9".encode(), b'"', b"x", b"\xff"]
    rng = random.Random(5)
    for _ in range(1500):
        language = rng.choice(languages)
        words = [b"".join(rng.choice(pieces) for _ in range(rng.randrange(6))) for _ in range(rng.randrange(1, 8))]
        if rng.random() < 0.3:
            words = [b'"' + word + b'"' for word in words]
        assert same_automaton(automata.without_words(language, words),
                              automata._compute_product(language, dfa.literal_dfa(words), automata._DIFFERENCE,
                                                        automata.MAX_STATES)), words
    assert automata.without_words(regex_to_dfa("x"), [b"x"]).initial == dfa.DEAD
    with pytest.raises(dfa.StateLimitError):
        automata.without_words(strings.any_string_contents(), [b"abcdef"], max_states=4)


@pytest.mark.parametrize("contents", [
    strings.any_string_contents(),
    strings.literal_contents_dfa(['a"b', "\\", "\n\t\x01\x1f\x10x", "\u00e9", "plain"]),
    automata.difference(strings.any_string_contents(), strings.literal_contents_dfa(["name", "age", "\x00"])),
    strings.length_dfa(2, 5),
    ecma_pattern_dfa('a.*"', lenient_escapes=True),
    format_dfa("email"),
    format_dfa("json-pointer"),
    strings.literal_contents_dfa(["plain", "words", "\u00e9\U0001F600", ""]),  # nothing to escape: no minimisation
    ecma_pattern_dfa("^[a-z]+[0-9]?$"),
    format_dfa("date"),
], ids=["any", "literals", "any-but-keys", "length", "pattern", "email", "json-pointer", "plain-literals",
        "plain-pattern", "date"])
def test_minimal_spellings_built_directly_equal_the_nfa_route(contents):
    direct = strings.minimally_escaped(contents, automata.MAX_STATES)
    # the NFA route's subsets outgrow the cap first (email's spelling, 25k states, needs more)
    through_nfa = strings._escaped(contents, "minimal", 4 * automata.MAX_STATES)
    assert same_automaton(direct, through_nfa)
    assert same_automaton(strings.json_string_dfa(contents, escapes="minimal"), direct)


@pytest.mark.parametrize("text", ["name", "", "caf\u00e9 \U0001F600", 'a"b', "back\\slash", "tab\there", "\x01",
                                  "a/b"])
@pytest.mark.parametrize("escapes", ["minimal", "all"])
def test_one_literal_spelled_directly_equals_its_contents_route(text, escapes):
    direct = strings.json_literal_dfa(text, escapes=escapes)
    assert same_automaton(direct, strings.json_string_dfa(strings.literal_contents_dfa([text]), escapes=escapes))
    assert same_automaton(direct, dfa.minimize(direct))  # minimal and canonically numbered


@pytest.mark.parametrize("names", [["name", "age"], ["caf\u00e9", "\U0001F600", "", "a/b"], ['a"b', "plain"]])
def test_spellings_of_other_strings_equal_the_general_route(names):
    """other_strings registers its names so that json_string_dfa spells "any string but
    these names" by a product; it must be the automaton the general route builds."""
    clear_automaton_caches()
    others = strings.other_strings(names)
    fast = strings.json_string_dfa(others, escapes="minimal")
    clear_automaton_caches()  # the registry is emptied too: the general route runs
    assert same_automaton(strings.json_string_dfa(others, escapes="minimal"), fast)
    assert same_automaton(strings.minimally_escaped(others, automata.MAX_STATES), fast)


def test_cache_stays_within_its_byte_budget():
    budget = 300_000
    cache = AutomatonCache("test", budget)
    automata_made = [regex_to_dfa(f"a{{{n}}}") for n in range(1, 60)]  # (n + 1) KiB tables, each under budget / 2
    for n, automaton in enumerate(automata_made):
        assert cache.put(("a", n), automaton) is automaton
        assert cache.nbytes <= budget
    assert 0 < len(cache) < len(automata_made)
    assert cache.get(("a", 0)) is None  # the least recently used went first
    assert cache.get(("a", len(automata_made) - 1)) is automata_made[-1]
    huge = regex_to_dfa("b{200}")  # over half the budget: returned, not kept
    assert cache.put("huge", huge) is huge and cache.get("huge") is None
    cache.clear()
    assert cache.nbytes == 0 and len(cache) == 0


def _grammars(count: int) -> list[ga.Grammar]:
    return [ga.Grammar.from_json_schema({"type": "object", "properties": {f"key{n}": {"type": "integer"}},
                                         "required": [f"key{n}"]}) for n in range(count)]


def test_parser_tables_cache_is_bounded_in_bytes(monkeypatch):
    from gramalign.grammar import parser_tables as parser

    grammars = _grammars(6)
    one = parser.build_parser_tables(grammars[0]).nbytes
    cache = AutomatonCache("parser tables (test)", 3 * one, size=lambda tables: tables.nbytes)
    monkeypatch.setattr(parser, "_TABLES", cache)
    tables = [parser.build_parser_tables(g) for g in grammars]
    assert cache.nbytes <= 3 * one and 0 < len(cache) < len(grammars)
    assert parser.build_parser_tables(grammars[-1]) is tables[-1]  # recent: the same object
    again = parser.build_parser_tables(grammars[0])  # evicted: built again, equal tables
    assert again is not tables[0]
    assert np.array_equal(again.lexer.transitions, tables[0].lexer.transitions)
    assert np.array_equal(again.table.action, tables[0].table.action)


def test_compiled_grammars_cache_is_bounded_in_bytes(monkeypatch):
    from gramalign.masking import compiler

    vocab = ga.Vocabulary.from_token_bytes([b"{", b"}", b'"', b":", b"key", b"0", b"1", b"</s>"], eos_token_ids=[7])
    grammars = _grammars(5)
    monkeypatch.setattr(compiler, "_compiled", type(compiler._compiled)())
    monkeypatch.setattr(compiler, "_sizes", {})
    first = ga.compile(grammars[0], vocab, eager=True)  # (whole tables: cached from the first compile)
    assert ga.compile(grammars[0], vocab, eager=True) is first  # within the budget: the cached one
    monkeypatch.setattr(compiler, "COMPILE_CACHE_BYTES", int(2.5 * first.memory_bytes))
    compiled = [ga.compile(g, vocab, eager=True) for g in grammars[1:]]
    assert sum(c.memory_bytes for c in compiler._compiled.values()) <= compiler.COMPILE_CACHE_BYTES
    assert ga.compile(grammars[-1], vocab, eager=True) is compiled[-1]
    first_id = id(first)
    del first
    assert id(ga.compile(grammars[0], vocab, eager=True)) != first_id  # the oldest went first
    monkeypatch.setattr(compiler, "COMPILE_CACHE_BYTES", 0)
    newest = ga.compile(_grammars(6)[-1], vocab, eager=True)
    assert list(compiler._compiled.values()) == [newest]  # the newest is always kept


def test_grammars_built_where_matchers_go_are_cached_from_their_second_compile(monkeypatch):
    import gc
    import weakref

    from gramalign.masking import compiler

    vocab = ga.Vocabulary.from_token_bytes([b"{", b"}", b'"', b":", b"key", b"0", b"1", b"</s>"], eos_token_ids=[7])
    grammars = _grammars(3)
    monkeypatch.setattr(compiler, "_compiled", type(compiler._compiled)())
    monkeypatch.setattr(compiler, "_sizes", {})
    monkeypatch.setattr(compiler, "_seen_once", type(compiler._seen_once)())
    first = ga.compile(grammars[0], vocab)
    assert not compiler._compiled  # a first compile is not held by the cache...
    assert ga.compile(grammars[0], vocab) is first  # ...but shared while someone holds it
    gone = weakref.ref(first)
    del first
    gc.collect()
    assert gone() is None  # dropped by its last user, not by a later compile
    second = ga.compile(grammars[0], vocab)  # met again: compiled anew, and kept from now on
    del second
    gc.collect()
    assert list(compiler._compiled) and ga.compile(grammars[0], vocab) is next(iter(compiler._compiled.values()))
    assert ga.compile(grammars[1], vocab) is not ga.compile(grammars[2], vocab)
    assert len(compiler._compiled) == 1
