"""Strings with a ``pattern`` and length bounds, counted by the parser where that is exact.

A pattern's strings with ``maxLength: 200`` as one automaton take the pattern's states times
every length (``^(?:\\S+\\s+){0,9}\\S+$``: 37,000 states, or a refusal over 50,000). The
parser's count is exact only where, after any prefix, the completions take every length
from the shortest up (else a prefix could be allowed from which no completion fits the
bounds: a dead end). Oracles: Python's ``re`` on enumerated strings for that property,
jsonschema for the language, a brute-force scan of the vocabulary for masks, and random
outputs that never reach a dead end.
"""

from __future__ import annotations

import itertools
import json
import random
import re

import jsonschema
import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.json_schema.ecma_regex import ecma_pattern_dfa
from gramalign.grammar.json_schema.strings import lengths_upward_closed
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from oracles.brute_force_masks import assert_mask_equals_brute_force
from support.vocabularies import gpt2_vocabulary
from test_counted_strings import random_output

# ASCII patterns over a small alphabet, so that the property can be checked by enumeration
ALPHABET = "ab- "
PATTERNS = [r"^[ab]+$", r"^(ab)+$", r"^[ab]{2,3}$", r"^a", r"b$", r"^a|bb$", r"^[ab]+(-[ab]+)*$",
            r"^(?:[ab]+ ){0,2}[ab]+$", r"^-?a*b*$", r"^[ab]*-$", r"^(a|bb)+$", r"a-b", r"^(?:a|-b)*$"]


def _completion_lengths(pattern: re.Pattern, prefix: str, most: int) -> set[int]:
    return {n for n in range(most + 1) for tail in map("".join, itertools.product(ALPHABET, repeat=n))
            if pattern.search(prefix + tail)}


@pytest.mark.parametrize("source", PATTERNS)
def test_upward_closure_agrees_with_enumeration(source):
    # every prefix of up to 4 characters that some completion of up to 5 matches: are its
    # completion lengths (up to 5) every length from the shortest up?
    pattern = re.compile(source)
    closed = True
    for n in range(5):
        for prefix in map("".join, itertools.product(ALPHABET, repeat=n)):
            lengths = _completion_lengths(pattern, prefix, 5)
            if lengths and lengths != set(range(min(lengths), 6)):
                closed = False
    assert lengths_upward_closed(ecma_pattern_dfa(source, max_states=10_000)) == closed, source


def test_upward_closure_of_multibyte_patterns():
    assert lengths_upward_closed(ecma_pattern_dfa(r"^(?:\S+\s+){0,9}\S+$", max_states=10_000))
    assert lengths_upward_closed(ecma_pattern_dfa(r"^(é|ab)+$", max_states=10_000))
    assert not lengths_upward_closed(ecma_pattern_dfa(r"^(éé)+$", max_states=10_000))


WORDS = r"^(?:\S+\s+){0,9}\S+$"


def _schema(pattern: str, low: int, high: "int | None") -> dict:
    schema = {"type": "string", "pattern": pattern}
    if low:
        schema["minLength"] = low
    if high is not None:
        schema["maxLength"] = high
    return schema


MIXED = ["word", "é", "中", "-", "5-", " ", "  ", "\t", "\u3000", "x", "\U0001F642", '"', "\\"]


@pytest.mark.parametrize("pattern,low,high,pieces", [(WORDS, 0, 120, MIXED), (WORDS, 1, 200, MIXED),
                                                     (r"^[a-z]+(-[a-z]+)*$", 40, 90, ["word", "-word", "x", "-ab", "ab"]),
                                                     (r"^5-", 0, 500, MIXED), (WORDS, 30, None, MIXED)])
def test_counted_patterns_agree_with_jsonschema(pattern, low, high, pieces):
    grammar = ga.Grammar.from_json_schema(_schema(pattern, low, high))
    assert any(t.length is not None for t in grammar.terminals), "the bounds are counted"
    parser = IncrementalParser(build_parser_tables(grammar))
    validator = jsonschema.Draft202012Validator(_schema(pattern, low, high))
    rng = random.Random(7)
    lengths = {0, 1, low - 1, low, low + 1} | ({high - 1, high, high + 1} if high is not None else {low + 50})
    checked = valid = 0
    for target in sorted(n for n in lengths if n >= 0):
        for _ in range(12):
            value = rng.choice(["5-", pieces[0]]) if rng.random() < 0.5 else ""
            while len(value) < target:
                value += rng.choice(pieces)
            value = value[:target]
            expected = validator.is_valid(value)
            text = json.dumps(value, ensure_ascii=False).encode()
            assert parser.accepts(text) == expected, (value, expected)
            checked += 1
            valid += expected
    assert valid >= 5 and checked - valid >= 5


def test_a_pattern_whose_lengths_have_gaps_is_still_spelled_out():
    grammar = ga.Grammar.from_json_schema(_schema(r"^(ab)+$", 0, 100))
    assert all(t.length is None for t in grammar.terminals)
    parser = IncrementalParser(build_parser_tables(grammar))
    assert parser.accepts(json.dumps("ab" * 50).encode()) and not parser.accepts(json.dumps("ab" * 51).encode())


def test_masks_of_a_counted_pattern_equal_brute_force():
    schema = {"type": "object", "properties": {"s": _schema(WORDS, 3, 24)}, "required": ["s"]}
    compiled = ga.compile(ga.Grammar.from_json_schema(schema), gpt2_vocabulary())
    value = "one two\tthree  four five"[:26]
    text = json.dumps({"s": value}, separators=(",", ":"), ensure_ascii=False).encode()
    cuts = sorted(set(range(6, len(text), 2)) | set(range(len(text) - 6, len(text))))
    assert sum(assert_mask_equals_brute_force(compiled, text[:n]) for n in cuts) > 8


@pytest.mark.parametrize("low,high", [(0, 12), (10, 16), (20, 30)])
def test_generated_counted_patterns_have_no_dead_ends(low, high):
    schema = {"type": "object", "properties": {"s": _schema(WORDS, low, high)}, "required": ["s"],
              "additionalProperties": False}
    compiled = ga.compile(ga.Grammar.from_json_schema(schema), gpt2_vocabulary())
    validator = jsonschema.Draft202012Validator(schema)
    rng = np.random.default_rng(low)
    for k in range(12):
        text = random_output(compiled, rng, prefer_closing=0.1 * (k % 4))
        assert validator.is_valid(json.loads(text)), text


def test_the_pattern_and_length_family_that_was_refused_compiles():
    # Github_hard---o62061's shape: 0..500 code points of ten words (refused before: over
    # 50,000 automaton states)
    schema = {"type": "object", "properties": {"summary": _schema(WORDS, 0, 500),
                                               "benefits": {"type": "array", "items": _schema(WORDS, 1, 200)}}}
    grammar = ga.Grammar.from_json_schema(schema)
    parser = IncrementalParser(build_parser_tables(grammar))
    ok = {"summary": "a b c", "benefits": ["x" * 200, "one two"]}
    assert parser.accepts(json.dumps(ok, separators=(",", ":")).encode())
    for bad in ({"summary": "a " * 10 + "b"}, {"benefits": ["x" * 201]}, {"benefits": [""]}):
        assert not parser.accepts(json.dumps(bad, separators=(",", ":")).encode()), bad
