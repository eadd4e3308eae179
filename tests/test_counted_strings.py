"""Strings with length bounds, counted by the parser instead of spelled out as automata.

The language is checked against the jsonschema validator (lengths around both bounds, with
ASCII, multi-byte characters, escapes and surrogate pairs, which count as one code point);
masks against a brute-force scan of the vocabulary through the parser, at every position of
values that run into both bounds.
"""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser
from gramalign.masking.bitmask import unpack_bitmask_row

from oracles.brute_force_masks import assert_mask_equals_brute_force
from support.vocabularies import gpt2_vocabulary

BOUNDS = [(0, 1), (1, None), (2, 2), (0, 5), (3, 9), (0, 100), (64, 70), (22, 4096), (1, 131072), (90, None)]
CHARACTERS = ["a", "é", "中", "\U0001F642", "\n", '"', "\\", "\x01"]


def schema_of(low, high) -> dict:
    schema = {"type": "string"}
    if low:
        schema["minLength"] = low
    if high is not None:
        schema["maxLength"] = high
    return schema


def spellings(text: str, escapes: str) -> list[str]:
    """The minimal spelling; with every escape also each character outside ASCII as a
    u-escape (astral ones as surrogate pairs: two escapes, one code point)."""
    return [json.dumps(text, ensure_ascii=False)] + ([json.dumps(text)] if escapes == "all" else [])


# with every escape the bounds are spelled out as automata: only the smaller ones compile
@pytest.mark.parametrize("low,high,escapes", [(low, high, "minimal") for low, high in BOUNDS]
                         + [(low, high, "all") for low, high in BOUNDS if (high or 0) <= 1000])
def test_parser_agrees_with_jsonschema_around_the_bounds(low, high, escapes):
    schema = schema_of(low, high)
    grammar = ga.Grammar.from_json_schema(schema, string_escapes=escapes)
    counted = any(t.length is not None for t in grammar.terminals)
    assert counted == (escapes == "minimal"), "minimal escapes count the bounds; every escape spells them out"
    parser = IncrementalParser(build_parser_tables(grammar))
    lengths = {0, 1, 2, low - 1, low, low + 1} | ({high - 1, high, high + 1} if high is not None else {low + 300})
    checked = 0
    for length in sorted(n for n in lengths if 0 <= n <= 140_000):
        for k, character in enumerate(CHARACTERS):
            # mostly one character, with one other character somewhere, so escapes and
            # multi-byte sequences sit at the bounds
            text = list(character * length)
            if length:
                text[(k * 7) % length] = CHARACTERS[(k + 3) % len(CHARACTERS)]
            value = "".join(text)
            expected = jsonschema.Draft202012Validator(schema).is_valid(value)
            for spelled in spellings(value, escapes):
                assert parser.accepts(spelled.encode()) == expected, (low, high, length, spelled[:40])
                checked += 1
    assert checked >= 3 * len(CHARACTERS)


def test_unbounded_strings_next_to_counted_ones_keep_their_own_language():
    schema = {"type": "object", "properties": {"short": schema_of(1, 3), "free": {"type": "string"}},
              "required": ["short", "free"], "additionalProperties": False}
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_json_schema(schema)))
    validator = jsonschema.Draft202012Validator(schema)
    for short in ["", "a", "abc", "abcd", "\U0001F642\U0001F642\U0001F642"]:
        for free in ["", "x" * 50]:
            text = json.dumps({"short": short, "free": free}, separators=(",", ":"), ensure_ascii=False)
            assert parser.accepts(text.encode()) == validator.is_valid({"short": short, "free": free}), text


def test_competing_string_classes_are_spelled_exactly():
    # the strings of 1..5 code points and the others compete for one value: both are automata
    schema = {"type": "object", "properties": {"v": {"oneOf": [schema_of(1, 5), {"type": "string", "pattern": "^a"}]}},
              "required": ["v"]}
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_json_schema(schema)))
    validator = jsonschema.Draft202012Validator(schema)
    for value in ["", "a", "b", "abcde", "bcdef", "abcdef", "bcdefg"]:
        text = json.dumps({"v": value}, separators=(",", ":"))
        assert parser.accepts(text.encode()) == validator.is_valid({"v": value}), text


@pytest.mark.parametrize("low,high", [(0, 12), (5, 40), (30, None)])
def test_masks_equal_brute_force_up_to_both_bounds(low, high):
    schema = {"type": "object", "properties": {"s": schema_of(low, high)}, "required": ["s"]}
    compiled = ga.compile(ga.Grammar.from_json_schema(schema), gpt2_vocabulary())
    value = "ab é中\\\"x\U0001F642 " * 8
    value = value[:high + 2] if high is not None else value[:low + 8]
    text = json.dumps({"s": value}, separators=(",", ":"), ensure_ascii=False).encode()
    # prefixes inside the string, up to and past the most code points (every third byte, and
    # every byte near the end: a brute-force scan of GPT-2's 50k tokens each)
    cuts = sorted(set(range(5, len(text), 3)) | set(range(max(5, len(text) - 12), len(text))))
    checked = sum(assert_mask_equals_brute_force(compiled, text[:n]) for n in cuts)
    assert checked > 12


def random_output(compiled, rng, prefer_closing: float = 0.0) -> bytes:
    """A text the masks allow, token by token until EOS (a token that closes the string is
    drawn with probability ``prefer_closing``); fails on an empty mask before the end."""
    vocab = compiled.vocabulary
    mask = np.zeros((1, compiled.bitmask_width), dtype=np.int32)
    matcher = compiled.matcher()
    written = b""
    while not matcher.is_terminated():
        matcher.fill_next_token_bitmask(mask, 0)
        allowed = np.flatnonzero(unpack_bitmask_row(mask[0], vocab.size))
        assert allowed.size, f"dead end after {written!r}"
        closing = [t for t in allowed.tolist() if b'"' in vocab.token_bytes[t][1:]] if prefer_closing else []
        token = int(rng.choice(closing if closing and rng.random() < prefer_closing else allowed))
        matcher.accept_token(token)
        if token not in vocab.eos_token_ids:
            written += vocab.token_bytes[token]
    return written


def test_generated_values_respect_both_bounds():
    schema = schema_of(4, 9)
    compiled = ga.compile(ga.Grammar.from_json_schema(schema), gpt2_vocabulary())
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(30):
        value = json.loads(random_output(compiled, rng, prefer_closing=0.3).decode())
        jsonschema.validate(value, schema)
        seen.add(len(value))
    assert len(seen) > 1


def long_hosts(total: int) -> list[str]:
    """Host names of ``total`` octets and one more and one less, labels of at most 63."""
    names = []
    for length in (total - 1, total, total + 1):
        labels, left = [], length
        while left > 0:
            size = min(63, left)
            labels.append("a" * size)
            left -= size + 1
        names.append(".".join(labels)[:length])
    return names


@pytest.mark.parametrize("fmt", ["hostname", "email"])
def test_counted_formats_mean_their_automata(fmt):
    # the format's length bound is counted: the language is still the shipped automaton's
    from gramalign.grammar.json_schema.formats import format_dfa

    schema = {"type": "string", "format": fmt}
    grammar = ga.Grammar.from_json_schema(schema)
    assert any(t.length is not None for t in grammar.terminals)
    parser = IncrementalParser(build_parser_tables(grammar))
    exact = format_dfa(fmt)
    hosts = long_hosts(253) + long_hosts(190) + ["x", "a-b.c", "-a.b", "a..b", "a" * 64, "ab--c.d"]
    values = hosts if fmt == "hostname" else (
        [local + "@" + host for local in ["a", "a" * 64, "a" * 65, '"q \\" x"', "a.b"] for host in hosts])
    for value in values:
        assert parser.accepts(json.dumps(value).encode()) == exact.matches(value.encode()), value[:80]


@pytest.mark.parametrize("fmt, bounds", [("email", (0, 0)), ("email", (0, 1)), ("email", (2, 2)), ("email", (0, 3)),
                                         ("hostname", (0, 0)), ("hostname", (1, 1)), ("hostname", (254, None)),
                                         ("email", (255, 300)), ("email", (40, 70))])
def test_a_counted_format_under_length_bounds_it_cannot_meet_accepts_nothing(fmt, bounds):
    """Found by the fuzzer (seed 41): ``format: email`` with ``maxLength: 1`` compiled to a
    grammar whose first mask allowed nothing, a dead end. A bound the format's shortest (or
    longest) value cannot meet makes the schema accept nothing, which is refused; the others
    compile, and a random walk of their masks ends in a value jsonschema accepts. Oracle of
    emptiness: the format's own automaton (``format_dfa``) has no word of such a length."""
    from gramalign.grammar.json_schema.formats import format_dfa
    from gramalign.grammar.json_schema.strings import code_point_lengths

    from support.grammar_walks import random_texts

    low, high = bounds
    schema = {"type": "string", "format": fmt, "minLength": low}
    if high is not None:
        schema["maxLength"] = high
    shortest, longest = code_point_lengths(format_dfa(fmt))
    possible = (high is None or shortest <= high) and (longest is None or longest >= low)
    if not possible:
        with pytest.raises(ga.SchemaCompileError, match="accepts no JSON value"):
            ga.Grammar.from_json_schema(schema).whole()
        return
    grammar = ga.Grammar.from_json_schema(schema)
    oracle = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    for text in random_texts(grammar, 5, seed=1, max_bytes=400):
        assert oracle.is_valid(json.loads(text)), text


def test_masks_of_a_host_name_at_its_bound_equal_brute_force():
    schema = {"type": "object", "properties": {"h": {"type": "string", "format": "hostname"}}, "required": ["h"]}
    compiled = ga.compile(ga.Grammar.from_json_schema(schema), gpt2_vocabulary())
    host = long_hosts(253)[1]
    text = json.dumps({"h": host}, separators=(",", ":")).encode()
    checked = sum(assert_mask_equals_brute_force(compiled, text[:n]) for n in [6, 7, 70, 200] + list(range(240, 262)))
    assert checked > 20


@pytest.mark.parametrize("eager", [True, False], ids=["whole tables", "built where the walk goes"])
def test_masks_of_strings_with_different_bounds_in_one_schema_equal_brute_force(eager):
    # one automaton in three blocks: their contexts are classified once and shared
    schema = {"type": "object", "properties": {"a": schema_of(0, 5), "b": schema_of(3, 9), "c": schema_of(2, None)},
              "required": ["a", "b", "c"], "additionalProperties": False}
    compiled = ga.compile(ga.Grammar.from_json_schema(schema), gpt2_vocabulary(), eager=eager)
    if eager:
        assert sum(t.length is not None for t in compiled.store.tables.lexer.terminals) == 3
    text = json.dumps({"a": "é\\\"y", "b": "abc", "c": "longer text \U0001F642 here"}, separators=(",", ":"),
                      ensure_ascii=False).encode()
    checked = sum(assert_mask_equals_brute_force(compiled, text[:n]) for n in range(5, len(text), 2))
    assert checked > 15


def test_contexts_of_counted_strings_round_trip_through_the_disk_cache(tmp_path):
    schema = {"type": "object", "properties": {"a": schema_of(0, 5), "b": schema_of(3, 90)}, "required": ["a", "b"]}
    grammar = ga.Grammar.from_json_schema(schema)
    text = json.dumps({"a": "xy", "b": "some words here"}, separators=(",", ":")).encode()
    first = ga.compile(grammar, gpt2_vocabulary(), cache=False, cache_dir=tmp_path)
    masks = []
    for cut in range(4, len(text)):
        matcher = first.matcher()
        matcher.accept_string(text[:cut])
        masks.append(matcher.allowed_token_ids().tolist())
    first.save_cache()
    second = ga.compile(grammar, gpt2_vocabulary(), cache=False, cache_dir=tmp_path)
    assert second.store.num_contexts == first.store.num_contexts > 0
    for k, cut in enumerate(range(4, len(text))):
        matcher = second.matcher()
        matcher.accept_string(text[:cut])
        assert matcher.allowed_token_ids().tolist() == masks[k]


@pytest.mark.parametrize("fmt", ["hostname", "email"])
def test_counted_formats_with_every_escape(fmt):
    # ASCII formats count their length with u-escapes too (no surrogate pairs among them)
    from gramalign.grammar.json_schema.formats import format_dfa

    grammar = ga.Grammar.from_json_schema({"type": "string", "format": fmt}, string_escapes="all")
    assert any(t.length is not None for t in grammar.terminals)
    parser = IncrementalParser(build_parser_tables(grammar))
    exact = format_dfa(fmt)
    hosts = long_hosts(253) + ["a-b.c", "-a.b"]
    values = hosts if fmt == "hostname" else ["a@" + host for host in hosts] + ['"q \\" x"@b.c']
    for value in values:
        for spelled in (json.dumps(value), '"' + "".join(f"\\u{ord(c):04x}" for c in value) + '"'):
            assert parser.accepts(spelled.encode()) == exact.matches(value.encode()), spelled[:60]


TIGHT = [("email", 3), ("email", 5), ("email", 9), ("hostname", 1), ("hostname", 4)]


@pytest.mark.parametrize("fmt,most", TIGHT)
def test_counted_formats_under_a_tight_bound_have_no_dead_ends(fmt, most):
    # A prefix lives in the parser iff it can still end within the bound: "abcd" under
    # maxLength 5 has no room left for "@x". The oracle is the format's automaton cut to
    # `most` octets (ASCII formats: octets are code points), built without counting.
    from gramalign.grammar.json_schema.formats import _bound_length, format_dfa

    schema = {"type": "string", "format": fmt, "maxLength": most}
    grammar = ga.Grammar.from_json_schema(schema)
    assert any(t.length is not None for t in grammar.terminals)
    parser = IncrementalParser(build_parser_tables(grammar))
    exact = _bound_length(format_dfa(fmt), most)
    texts = ["a", "ab", "abc", "abcd", "a@", "a@b", "a.b", "ab@c", "a@b.c", "x-y", "a@b.cd", "ab.cd", "abcdefgh@i"]
    for text in texts:
        for cut in range(1, len(text) + 1):
            prefix = text[:cut].encode()
            live = exact.advance(exact.initial, prefix) >= 0
            state = parser.initial_state()
            assert (parser.feed(state, b"\"" + prefix)[0] is not None) == live, (text, cut)
            assert parser.accepts(b'"' + prefix + b'"') == exact.matches(prefix), (text, cut)
    # random walks of the masks end, and only in the language
    compiled = ga.compile(grammar, gpt2_vocabulary())
    rng = np.random.default_rng(most)
    for _ in range(25):
        written = random_output(compiled, rng)
        assert exact.matches(json.loads(written.decode()).encode()), written
