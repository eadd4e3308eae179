"""The infilling check (issue 37) against independent oracles.

* Soundness: partial texts made by blanking 1-4 spans of valid texts (random mask walks of
  the builtin JSON grammar, of small Lark grammars with ignored text and keywords, and of
  JSON Schema instances, random Python programs) are never ``impossible``.
* Certificates: every witness keeps the pieces in order (a regex of the pieces) and is
  accepted by a fresh gramalign parser and by the independent oracle (``json.loads``,
  jsonschema, lark's own LALR parser, CPython's parser). Python texts called ``impossible``
  are also refused by CPython with every filler of up to two characters.
* Exactness: on grammars whose terminals are single bytes with nothing ignored, against the
  language enumerated up to a length by this file's own CFG enumerator, and on regexes
  against ``re.fullmatch`` over every string up to a length: a filler found by brute force
  means not ``impossible`` (and never ``undecided``); regex witnesses are the shortest.
"""

from __future__ import annotations

import itertools
import json
import random
import re

import lark
import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing.incremental import IncrementalParser
from oracles.python_layout import ast_parses, oracle_accepts, python_random_strings
from support.grammar_walks import byte_vocabulary, is_valid_text, lark_accepts, random_texts

GAP = ga.GAP


def blank_spans(text: bytes, rng: random.Random, spans: int, width: int = 6) -> list:
    """``text`` with ``spans`` random spans (0..width bytes each, disjoint) replaced by gaps."""
    starts = sorted(rng.sample(range(len(text) + 1), min(spans, len(text) + 1)))
    segments: list = []
    previous = 0
    for start in starts:
        if start < previous:
            continue
        stop = min(len(text), start + rng.randint(0, width))
        segments += [text[previous:start], GAP]
        previous = stop
    segments.append(text[previous:])
    return segments


def fits(segments: list, text: bytes, end: bool = True) -> bool:
    """Does ``text`` keep the pieces of ``segments`` in order, gaps filled by anything?"""
    pattern = b"".join(b".*" if item is GAP else re.escape(item) for item in segments)
    return re.fullmatch(pattern + (b"" if end else b".*"), text, re.DOTALL) is not None


def gramalign_accepts(grammar: ga.Grammar, text: bytes) -> bool:
    return IncrementalParser(build_parser_tables(grammar)).accepts(text)


# ---------------------------------------------------------------- soundness with certificates

@pytest.fixture(scope="module")
def json_grammar():
    return ga.Grammar.builtin("json")


def test_json_blanked_walks_are_never_impossible_and_witnesses_parse(json_grammar):
    checker = ga.InfillChecker(json_grammar, budget_s=None)
    rng = random.Random(37)
    texts = random_texts(json_grammar, 80, seed=37, max_bytes=400)
    # longer texts too: arrays of walks with whitespace
    texts += [b"[" + b",\n ".join(rng.sample(texts, 12)) + b"]" for _ in range(6)]
    _check_blanked_spans(checker, texts, rng, lambda text: _is_json(text) and gramalign_accepts(json_grammar, text),
                         min_completable=0.99)


def _is_json(text: bytes) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_json_corrupted_texts_are_decided_against_the_oracle(json_grammar):
    """Blanked walks with one byte changed outside the gaps: every answer is checked (a
    witness by json.loads); some must be impossible, which brute force cannot refute here
    but the test shows the check is not a constant."""
    checker = ga.InfillChecker(json_grammar, budget_s=None)
    rng = random.Random(5)
    texts = random_texts(json_grammar, 60, seed=5, max_bytes=200)
    seen = set()
    for text in texts:
        segments = blank_spans(text, rng, 2)
        fixed = [k for k, item in enumerate(segments) if item is not GAP and item]
        if not fixed:
            continue
        k = rng.choice(fixed)
        piece = bytearray(segments[k])
        piece[rng.randrange(len(piece))] = rng.choice(b'{}[],:"x1 ')
        segments[k] = bytes(piece)
        result = checker.check(segments)
        seen.add(result.status)
        if result.completable:
            assert fits(segments, result.text)
            json.loads(result.text)
        elif result.impossible:  # no filler of up to 2 bytes per gap of a JSON alphabet either
            alphabet = [b"", b"0", b'"', b"[", b"]", b"{", b"}", b",", b":"]
            gaps = sum(item is GAP for item in segments)
            for fillers in itertools.product(alphabet, repeat=gaps):
                filled = iter(fillers)
                candidate = b"".join(next(filled) if item is GAP else item for item in segments)
                try:
                    json.loads(candidate)
                except ValueError:
                    continue
                raise AssertionError(f"impossible, yet {candidate!r} is JSON")
    assert {"impossible", "completable"} <= seen


LARK_GRAMMARS = {
    "arithmetic": """
        start: expr
        expr: expr "+" term | expr "-" term | term
        term: term "*" factor | factor
        factor: NUMBER | NAME | "(" expr ")" | NAME "(" [expr ("," expr)*] ")"
        NUMBER: /[0-9]+(\\.[0-9]+)?/
        NAME: /[a-z_][a-z_0-9]*/
        %ignore /[ \\t]+/
    """,
    "statements": """
        start: stmt+
        stmt: "let" NAME "=" value ";" | "print" value ";" | "if" NAME "{" stmt* "}"
        value: NAME | STRING | "[" [value ("," value)*] "]"
        NAME: /[a-z_]+/
        STRING: /"[^"\\n]*"/
        COMMENT: /#[^\\n]*/
        %ignore /[ \\n]+/
        %ignore COMMENT
    """,
    "boundaries": r"""
        start: item+
        item: KW NAME | NUM
        KW: /\bif\b/
        NAME: /\b[a-z]+\b/
        NUM: /0(?![1-9])|[1-9][0-9]*/
        %ignore " "
    """,
    "comments": r"""
        start: stmt (";" stmt)* [";"]
        stmt: "select" expr ("," expr)* | "drop" NAME
        expr: expr "+" atom | atom
        atom: NAME | STRING | "(" expr ")" | "(" stmt ")"
        NAME: /[a-z]+/
        STRING: /'[^']*'/
        LINE: /--[^\n]*/
        BLOCK: /\/\*(?:[^*]|\*+[^*\/])*\*+\//
        %ignore /[ \n]+/
        %ignore LINE
        %ignore BLOCK
    """,
    "keys": """
        start: "{" [pair (";" pair)*] "}"
        pair: KEY "=" (INT | WORD | start)
        KEY: /[A-Z][a-z]*/
        WORD: /[a-z]+/
        INT: /-?[0-9]+/
    """,
}


@pytest.mark.parametrize("name", sorted(LARK_GRAMMARS))
def test_lark_blanked_walks_are_never_impossible_and_witnesses_parse(name):
    text = LARK_GRAMMARS[name]
    grammar = ga.Grammar.from_lark(text)
    oracle = lark.Lark(text, parser="lalr")
    samples = random_texts(grammar, 40, seed=len(name), max_bytes=200)
    assert all(lark_accepts(oracle, sample.decode()) for sample in samples)
    _check_blanked_spans(ga.InfillChecker(grammar, budget_s=None), samples, random.Random(name),
                         lambda text: lark_accepts(oracle, text.decode("utf-8")) and gramalign_accepts(grammar, text))


def _check_blanked_spans(checker, samples, rng, accepts, min_completable: float = 0.9) -> None:
    """Blank 1 to 4 spans of each sample: never ``impossible``, every witness keeps the pieces
    and is accepted by ``accepts`` (an independent oracle), and ``min_completable`` of the
    checks at least are witnessed (the rest undecided)."""
    statuses = []
    for sample in samples:
        for spans in (1, 2, 3, 4):
            segments = blank_spans(sample, rng, spans)
            result = checker.check(segments)
            statuses.append(result.status)
            assert result.status != "impossible", (sample, segments)
            if result.completable:
                assert fits(segments, result.text)
                assert accepts(result.text), result.text
    assert statuses.count("completable") >= min_completable * len(statuses), statuses.count("undecided")


SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"enum": ["a", "bc"]}},
                                      "n": {"type": "integer", "minimum": -5, "maximum": 500}},
     "required": ["name", "n"]},
    {"type": "array", "items": {"anyOf": [{"type": "boolean"}, {"type": "number"}, {"type": "null"}]}, "maxItems": 6},
    {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-f0-9]{4}$"},
                                      "point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
     "additionalProperties": False},
]


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_schema_instances_blanked_are_never_impossible_and_witnesses_validate(index):
    schema = SCHEMAS[index]
    grammar = ga.Grammar.from_json_schema(schema)
    samples = random_texts(grammar, 30, seed=index, max_bytes=300)
    assert all(is_valid_text(schema, sample) for sample in samples)
    _check_blanked_spans(ga.InfillChecker(grammar, budget_s=None), samples, random.Random(index),
                         lambda text: is_valid_text(schema, text))


# ---------------------------------------------------------------- exactness, brute force

# Grammars whose terminals are single bytes and nothing is ignored: the CFG over lexings is
# the language itself, so the check must decide every case.
SINGLE_BYTE = {
    "dyck": {"s": [["(", "s", ")", "s"], ["[", "s", "]", "s"], []]},
    "anbn": {"s": [["a", "s", "b"], ["c"]]},
    "expr": {"s": [["e"]], "e": [["e", "+", "t"], ["t"]], "t": [["x"], ["(", "e", ")"]]},
    "mirror": {"s": [["a", "s", "a"], ["b", "s", "b"], ["c"]]},
    "lists": {"s": [["[", "items", "]"]], "items": [[], ["item"], ["item", ",", "items"]], "item": [["1"], ["s"]]},
}


def as_lark(rules: dict) -> str:
    """The rules in Lark's syntax (an empty alternative as an optional group)."""
    def symbol(name):
        return name if name in rules else json.dumps(name)
    lines = []
    for name, alternatives in rules.items():
        body = " | ".join(" ".join(map(symbol, alt)) for alt in alternatives if alt)
        lines.append(f"{name}: ({body})?" if [] in alternatives else f"{name}: {body}")
    return "start: s\n" + "\n".join(lines)


def gap_count(segments: list, end: bool) -> int:
    """Gaps once adjacent ones (only empty pieces between) are one, plus a trailing one."""
    count, open_gap = 0, False
    for item in segments:
        if item is GAP:
            count += not open_gap
            open_gap = True
        elif item:
            open_gap = False
    return count + (not end and not open_gap)


def enumerate_language(rules: dict, start: str, max_len: int) -> set:
    """Every word of length <= max_len (strings), by a fixed point over the rules."""
    words = {name: set() for name in rules}
    changed = True
    while changed:
        changed = False
        for name, alternatives in rules.items():
            for alternative in alternatives:
                partial = {""}
                for symbol in alternative:
                    options = words[symbol] if symbol in rules else {symbol}
                    partial = {a + b for a in partial for b in options if len(a) + len(b) <= max_len}
                new = partial - words[name]
                if new:
                    words[name] |= new
                    changed = True
    return words[start]


def random_partial(rng: random.Random, alphabet: str, words: list) -> list:
    """A blanked word or a random string over the alphabet, with 1-3 gaps."""
    base = rng.choice(words) if words and rng.random() < 0.5 else "".join(
        rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
    return blank_spans(base.encode(), rng, rng.randint(1, 3), width=3)


def filler_exists(segments: list, words: set, end: bool = True) -> "str | None":
    """A word (length-bounded) that fills the gaps, else None."""
    pattern = b"".join(b".*" if item is GAP else re.escape(item) for item in segments) + (b"" if end else b".*")
    matches = [w for w in words if re.fullmatch(pattern, w.encode(), re.DOTALL)]
    return min(matches, key=len) if matches else None


@pytest.mark.parametrize("name", sorted(SINGLE_BYTE))
def test_single_byte_grammars_are_decided_exactly(name):
    rules = SINGLE_BYTE[name]
    text = as_lark(rules)
    grammar = ga.Grammar.from_lark(text)
    oracle = lark.Lark(text, parser="lalr")
    words = enumerate_language(rules, "s", 9)
    alphabet = "".join(sorted({s for alts in rules.values() for alt in alts for s in alt if s not in rules}))
    checker = ga.InfillChecker(grammar, budget_s=None)
    rng = random.Random(name)
    seen = set()
    for _ in range(150):
        segments = random_partial(rng, alphabet, sorted(words))
        end = rng.random() < 0.8
        result = checker.check(segments, end=end)
        seen.add(result.status)
        assert result.status != "undecided", (segments, result.reason)
        # words up to 9 bytes hold every filling of up to 9 - (fixed bytes) bytes
        found = filler_exists(segments, {w for w in words if len(w) <= 9}, end)
        if found is not None:
            assert result.completable, (segments, end, found)
        if result.completable:
            assert fits(segments, result.text, end)
            assert lark_accepts(oracle, result.text.decode()), result.text
            if len(result.text) <= 9:
                assert result.text.decode() in words
        else:
            assert found is None
    assert seen == {"impossible", "completable"}


REGEXES = [r"(ab|a)*c", r"a{2,3}b?c*", r"(a|b)*abb", r"[ab]*a[ab]{2}", r"(abc|cb)+", r"a(b|c)*a|c"]


@pytest.mark.parametrize("pattern", REGEXES)
def test_regex_grammars_are_exact_with_shortest_witnesses(pattern):
    words = {"".join(p) for n in range(9) for p in itertools.product("abc", repeat=n)
             if re.fullmatch(pattern, "".join(p))}
    checker = ga.InfillChecker(ga.Grammar.from_regex(pattern))
    rng = random.Random(pattern)
    seen = set()
    for _ in range(150):
        segments = random_partial(rng, "abc", sorted(words))
        end = rng.random() < 0.7
        result = checker.check(segments, end=end)
        seen.add(result.status)
        assert result.status in ("impossible", "completable")
        found = filler_exists(segments, words, end)
        if found is not None:
            assert result.completable
            assert len(result.text) <= len(found)  # the fewest filler bytes
        if result.completable:
            assert fits(segments, result.text, end)
            assert re.fullmatch(pattern, result.text.decode())
            assert len(result.fillers) == gap_count(segments, end)
    assert seen == {"impossible", "completable"}


# ---------------------------------------------------------------- tokens, errors, limits

def test_check_tokens_reads_masks_and_eos(json_grammar):
    vocab = byte_vocabulary()  # token b is byte b, 256 is EOS
    checker = ga.InfillChecker(json_grammar)
    mask, eos = 1000, 256

    def ids(text):
        return list(text)

    assert checker.check_tokens(ids(b"[1,") + [mask] * 3 + ids(b"]") + [eos, eos], vocab, mask).completable
    assert checker.check_tokens(ids(b"[1,") + [mask] * 3 + ids(b"}") + [eos, mask], vocab, mask).impossible
    assert checker.check_tokens(ids(b"[1,") + [mask] * 3 + ids(b"}") + [mask, eos], vocab, mask).completable
    assert checker.check_tokens(ids(b"[1]") + [eos] + ids(b"x"), vocab, mask).impossible
    assert checker.check_tokens(ids(b"[1") + [mask, eos, mask, eos], vocab, mask).completable
    assert checker.check_tokens(ids(b"[1") + [mask], vocab, mask, end=False).completable
    rng = random.Random(3)
    for text in random_texts(json_grammar, 20, seed=3, max_bytes=80):
        segments = blank_spans(text, rng, 2)
        tokens = [t for item in segments for t in ([mask] * rng.randint(1, 3) if item is GAP else ids(item))]
        assert checker.check_tokens(tokens, vocab, mask).status == checker.check(segments).status


def test_bad_input_is_an_infill_error(json_grammar):
    checker = ga.InfillChecker(json_grammar)
    for bad in ("[1]", b"[1]", ["[1", GAP], [b"[1", 3], None, [b"x"] * 0 + [object()]):
        with pytest.raises(ga.InfillError):
            checker.check(bad)
    with pytest.raises(ga.InfillError):
        checker.check([b"1"], end=1)
    for budget in (0, -1, float("nan"), "1", True):
        with pytest.raises(ga.InfillError):
            ga.InfillChecker(json_grammar, budget_s=budget)
    with pytest.raises(ga.InfillError):
        ga.InfillChecker("start: NAME")
    with pytest.raises(ga.InfillError):
        checker.check_tokens([[1, 2]], byte_vocabulary(), 1000)
    with pytest.raises(ga.InfillError):
        checker.check_tokens([5000], byte_vocabulary(), 1000)
    assert issubclass(ga.InfillError, ga.GramalignError)


def test_budget_is_undecided_with_a_reason(json_grammar):
    text = b"[" + b", ".join(b'{"k": [1, 2, {"x": null}]}' for _ in range(60)) + b"]"
    segments = blank_spans(text, random.Random(1), 8)
    checker = ga.InfillChecker(json_grammar, budget_s=1e-6)
    result = checker.check(segments)
    assert result.status == "undecided" and "budget" in result.reason
    assert checker.counts["undecided"] == 1


def test_a_refused_witness_from_the_ends_is_retried_briefly(json_grammar, monkeypatch):
    """Where the parser refuses the candidates from the text's ends (one string spans from
    the first gap to the last), a filling is known to exist: the whole text is searched for
    another witness for at most ``RETRY_S``, then the check is ``undecided`` saying so, never
    ``impossible``. The parser is made to refuse everything, and the construction to check its
    budget after every pop."""
    from gramalign.grammar import infill_search

    segments = [b'["a', ga.GAP, b"bc", ga.GAP, b"de", ga.GAP, b'f"]']
    checker = ga.InfillChecker(json_grammar)
    assert checker.check(segments).status == "completable"
    monkeypatch.setattr(checker, "_accepts", lambda data: False)
    result = checker.check(segments)  # (a construction this small checks no budget)
    assert result.status == "undecided" and "parser refused" in result.reason
    run = infill_search.earley_derivation
    monkeypatch.setattr(infill_search, "earley_derivation", lambda *args, **kwargs: run(*args, pops=1, **kwargs))
    monkeypatch.setattr(infill_search, "RETRY_S", 0.0)
    result = checker.check(segments)
    assert result.status == "undecided" and "ran past 0.0 s" in result.reason


def test_shortest_lexemes_against_brute_force():
    """What writing a terminal inside a gap costs a witness: its shortest lexeme's bytes, by
    breadth first over the lexer tables; oracle: re.fullmatch over every string of the
    terminals' letters up to 6 bytes."""
    from gramalign.grammar.earley_kernels import shortest_lexemes

    patterns = {"A": "a(b|cc)c+", "B": "(ab)+|c{4}", "C": "b?a?c", "D": "(cab|ba)+b"}
    text = "start: " + " ".join(patterns) + "\n" + "".join(f"{n}: /{r}/\n" for n, r in patterns.items())
    search = ga.InfillChecker(ga.Grammar.from_lark(text))._search
    tables = search.lexer_tables
    found = shortest_lexemes(tables.table, tables.accepting, tables.starts_start, tables.starts)
    for j, lexer in enumerate(search.lexers[:search.n_terminals]):
        pattern = patterns[lexer.terminal.name]
        expected = next(n for n in range(1, 7) for word in itertools.product("abc", repeat=n)
                        if re.fullmatch(pattern, "".join(word)))
        assert found[j] == expected, lexer.terminal.name


def test_witnesses_do_not_write_counted_repetitions_into_gaps():
    """A gap inside an array with maxItems: the construction can reach the same records by
    writing one element after another into the gap (each level of the count); the witness
    writes about what the blanked spans held, one element more at most (a record keeps the
    first way found to it unless another writes 16 bytes fewer), not hundreds of elements
    (6 KB at one stage)."""
    import jsonschema

    schema = {"type": "object", "properties": {"roles": {"type": "array", "maxItems": 300, "items": {
        "type": "object", "properties": {"id": {"type": "string"}, "role": {"type": "string"}},
        "required": ["id", "role"], "additionalProperties": False}}}, "required": ["roles"],
        "additionalProperties": False}
    checker = ga.InfillChecker(ga.Grammar.from_json_schema(schema))
    text = b'{"roles":[{"id":"5f9f1a7b","role":"view"},{"id":"5f9f","role":"edit"},{"id":"9c9d","role":"view"}]}'
    for cuts in ([(52, 53), (75, 77)], [(30, 36), (78, 80)], [(11, 11), (60, 70)]):
        segments, previous = [], 0
        for start, end in cuts:
            segments += [text[previous:start], GAP]
            previous = end
        segments.append(text[previous:])
        result = checker.check(segments)
        assert result.status == "completable" and fits(segments, result.text)
        assert jsonschema.validators.validator_for(schema)(schema).is_valid(json.loads(result.text))
        assert len(result.text) <= len(text) + len(b',{"id":"","role":""}'), result.fillers


def test_a_check_runs_without_automatic_garbage_collection(json_grammar, monkeypatch):
    """A collection inside a check cost 100+ ms (docs/benchmarks.md): the check runs under
    gc_paused, and the collector is as it was afterwards."""
    import gc

    checker = ga.InfillChecker(json_grammar)
    seen = []
    search = checker._search.search
    monkeypatch.setattr(checker._search, "search",
                        lambda *args, **kwargs: (seen.append(gc.isenabled()), search(*args, **kwargs))[1])
    was = gc.isenabled()
    gc.enable()
    try:
        assert checker.check([b'{"a": [1, ', GAP, b"]}"]).status == "completable"
        assert seen == [False] and gc.isenabled()
    finally:
        if not was:
            gc.disable()


@pytest.fixture(scope="module")
def python_checker():
    return ga.InfillChecker(ga.Grammar.builtin("python"), budget_s=None)


def test_python_blanked_programs_are_never_impossible_and_witnesses_parse(python_checker):
    """Python's indentation layout is checked through an over-approximation (indents and
    dedents left out, newlines anywhere inside brackets, the final one optional); the
    witnesses found there are kept where the real parser accepts them. Oracle: lark's LALR
    parser of the grammar with lark's own indenter (random programs of the grammar, which
    CPython's parser may refuse for what it checks beyond the grammar, ``False = 1``)."""
    grammar = ga.Grammar.builtin("python")
    samples = [text.encode() for text in python_random_strings(30, seed=37)]
    assert all(gramalign_accepts(grammar, sample) for sample in samples)
    _check_blanked_spans(python_checker, samples, random.Random(37),
                         lambda text: oracle_accepts(text.decode("utf-8")) and gramalign_accepts(grammar, text),
                         min_completable=0.75)


@pytest.mark.parametrize("segments", [
    [b"x = $", GAP],  # no lexeme holds "$" outside a string or a comment, and none is open
    [b"def f(:", GAP],
    [b"x = 1 + )", GAP],
])
def test_python_impossible_texts(python_checker, segments):
    assert python_checker.check(segments).status == "impossible"
    # the oracle agrees on the fillers of up to two characters
    alphabet = ["", " ", "\n", "#", "'", '"', "(", ")", "x", "1", ":", "\\"]
    gaps = sum(item is GAP for item in segments)
    for fillers in itertools.product(itertools.product(alphabet, repeat=2), repeat=gaps):
        filled = iter("".join(pair).encode() for pair in fillers)
        assert not ast_parses(b"".join(next(filled) if item is GAP else item for item in segments))


def test_python_indented_blocks_around_gaps(python_checker):
    for segments in ([b"import os\n", GAP], [b"if x:\n    y = 1\n", GAP, b"else:\n    y = 2\n"],
                     [b"x = [1, 2", GAP, b")\n"], [b"x = ", GAP, b" if ", GAP, b" else ", GAP, b"\n"]):
        result = python_checker.check(segments)
        assert result.completable, (segments, result.reason)
        assert fits(segments, result.text) and ast_parses(result.text)


def test_python_text_without_a_last_newline(python_checker):
    """The layout supplies the last line's newline at the end of the text (the check reads
    one there, GrammarInfill.final_newline): a text without one is still complete."""
    for segments in ([b"x = 1"], [b"x = ", GAP, b" + 1"], [b"if x:\n    y = 1", GAP, b"z"]):
        result = python_checker.check(segments)
        assert result.completable, (segments, result.reason)
        assert fits(segments, result.text) and ast_parses(result.text)
    assert python_checker.check([b"x = 1 +"]).impossible
    assert python_checker.check([b"if x:"]).impossible


def test_compiled_grammars_and_pieces_order():
    grammar = ga.Grammar.from_lark('start: NAME ("," NAME)*\nNAME: /[a-z]+/\n%ignore " "')
    compiled = ga.compile(grammar, byte_vocabulary())
    checker = ga.InfillChecker(compiled)
    result = checker.check([b"ab", GAP, b",", GAP, GAP, b"cd", GAP])
    assert result.completable and result.text.startswith(b"ab") and result.text.endswith(b"cd")
    assert len(result.fillers) == 3 and fits([b"ab", GAP, b",", GAP, b"cd", GAP], result.text)
    assert checker.check([b"ab,", GAP, b",,cd"]).impossible


# ---------------------------------------------------------------- the kernels against the reference

def corrupted(segments: list, rng: random.Random) -> list:
    """``segments`` with one fixed byte replaced (often making the text impossible)."""
    out = list(segments)
    fixed = [k for k, item in enumerate(out) if item is not GAP and item]
    if fixed:
        k = rng.choice(fixed)
        data = bytearray(out[k])
        data[rng.randrange(len(data))] = rng.choice(b'[]{},:"0a -=;(+#\n')
        out[k] = bytes(data)
    return out


def _named_grammar(name: str) -> ga.Grammar:
    """The builtin JSON grammar ("json"), the first test schema's ("schema") or a Lark grammar
    of LARK_GRAMMARS."""
    if name == "json":
        return ga.Grammar.builtin("json")
    if name == "schema":
        return ga.Grammar.from_json_schema(SCHEMAS[0])
    return ga.Grammar.from_lark(LARK_GRAMMARS[name])


def test_wide_records_decide_and_witness_as_narrow_ones(monkeypatch):
    """Records are int32 where every id and code fits (``record_codes_fit``), int64 otherwise
    (a text of some 100 KB with a large grammar): forced wide, the same checks give the same
    answers and witnesses."""
    from gramalign.grammar import earley_kernels as kernels

    grammar = _named_grammar("schema")
    rng = random.Random("wide")
    checks = [blank_spans(sample, rng, rng.randint(1, 4)) for sample in random_texts(grammar, 12, seed=3)]
    narrow = [ga.InfillChecker(grammar).check(segments) for segments in checks]
    monkeypatch.setattr(kernels, "NARROW_LIMIT", 0)
    wide = [ga.InfillChecker(grammar).check(segments) for segments in checks]
    assert [(r.status, r.text) for r in wide] == [(r.status, r.text) for r in narrow]
    assert {r.status for r in narrow} == {"completable"}


@pytest.mark.parametrize("name", ["json", "schema"])
def test_hashed_triples_decide_and_witness_as_near_ones(name, monkeypatch):
    """Triples from a gap to the node being settled live in a dense table (``near``) where
    gaps times symbols stay under ``NEAR_LIMIT``, in the hash table otherwise: forced hashed,
    the same checks, intact and corrupted, give the same answers and witnesses. (Records from
    gaps merge only with the dense table, which finds a triple's gaps: compared unmerged, and
    merged against hashed for the answers.)"""
    from gramalign.grammar import earley_kernels as kernels

    grammar = _named_grammar(name)
    rng = random.Random(f"near {name}")
    checks = []
    for sample in random_texts(grammar, 15, seed=5):
        segments = blank_spans(sample, rng, rng.randint(2, 6))
        checks.append(corrupted(segments, rng) if rng.random() < 0.4 else segments)
    merged = [ga.InfillChecker(grammar).check(segments).status for segments in checks]
    monkeypatch.setattr(kernels, "MERGE_GAP_ORIGINS", False)
    near = [ga.InfillChecker(grammar).check(segments) for segments in checks]
    monkeypatch.setattr(kernels, "NEAR_LIMIT", 0)
    hashed = [ga.InfillChecker(grammar).check(segments) for segments in checks]
    assert [(r.status, r.text) for r in hashed] == [(r.status, r.text) for r in near]
    assert [r.status for r in hashed] == merged
    assert {r.status for r in near} >= {"completable", "impossible"}


@pytest.mark.parametrize("name", ["json", "schema"] + sorted(LARK_GRAMMARS))
def test_earley_kernels_decide_as_the_bottom_up_worklist(name):
    """The numba path (fixed pieces lexed by a kernel, Earley over the automaton) against
    the reference it replaced: the same lexing automaton as the Python lexer, edge for
    edge, and the same emptiness decision as the bottom-up Bar-Hillel worklist
    (``tests/oracles/bar_hillel_worklist.py``), on blanked and corrupted random texts; and
    every derivation's candidates fill the gaps in order."""
    from gramalign.grammar.infill import partial_text
    from gramalign.grammar.infill_search import GrammarInfill
    from gramalign.grammar.lexings import build_lexings
    from oracles.bar_hillel_worklist import reference_possible

    grammar = _named_grammar(name)
    search = GrammarInfill(grammar)
    rng = random.Random(f"earley {name}")
    decisions = set()
    for sample in random_texts(grammar, 30, seed=7, max_bytes=120):
        for _ in range(3):
            segments = blank_spans(sample, rng, rng.randint(1, 4))
            if rng.random() < 0.5:
                segments = corrupted(segments, rng)
            end = rng.random() < 0.8
            text = partial_text(segments, end)
            fast = build_lexings(search.lexers, search.n_terminals, text, tables=search.lexer_tables)
            slow = build_lexings(search.lexers, search.n_terminals, text, kernel=False)
            assert sorted(set(map(tuple, fast.edges.tolist()))) == sorted(set(map(tuple, slow.edges.tolist()))), segments
            assert (fast.live == slow.live).all(), segments
            found = search.search(text)
            assert found.possible == reference_possible(search, text), (segments, end)
            decisions.add(found.possible)
            for fillers in found.candidates:
                assert len(fillers) == text.gaps
    assert decisions == {True, False}


def test_listed_and_walked_reaches_lex_alike(monkeypatch):
    """A lexeme carried across a gap reads the next byte from every state its lexer reaches:
    listed per state for small lexers (``reach_lists``), walked at each gap for larger ones (a
    date-time format's, a pattern's). Every lexer listed and none listed give the lexing
    automaton of the Python lexer, edge for edge, on texts with gaps inside keys, strings and
    formatted values."""
    from gramalign.grammar import lexings
    from gramalign.grammar.infill import partial_text
    from gramalign.grammar.infill_search import GrammarInfill
    from gramalign.grammar.lexings import LexerTables, build_lexings

    schema = {"type": "object", "properties": {
        "when": {"type": "string", "format": "date-time"}, "id": {"type": "string", "pattern": "^[a-f0-9]{2,6}-x$"},
        "name": {"type": "string"}, "names": {"type": "array", "items": {"type": "string"}}}}
    grammar = ga.Grammar.from_json_schema(schema)
    search = GrammarInfill(grammar)
    rng = random.Random("reach")
    texts = [partial_text(blank_spans(sample, rng, rng.randint(2, 6), width=5), True)
             for sample in random_texts(grammar, 25, seed=17, max_bytes=200)]
    sizes = [lex.paths.dfa.transitions.shape[0] for lex in search.lexers]
    assert max(sizes) > lexings.REACH_LISTED >= min(sizes)  # (both ways taken by default)
    for limit in (0, max(sizes)):
        monkeypatch.setattr(lexings, "REACH_LISTED", limit)
        tables = LexerTables(search.lexers)
        for text in texts:
            fast = build_lexings(search.lexers, search.n_terminals, text, tables=tables)
            slow = build_lexings(search.lexers, search.n_terminals, text, kernel=False)
            assert sorted(set(map(tuple, fast.edges.tolist()))) == sorted(set(map(tuple, slow.edges.tolist())))
            assert (fast.live == slow.live).all()

@pytest.mark.parametrize("merge", [False, True])
@pytest.mark.parametrize("name", ["json", "schema", "statements"])
def test_records_past_a_gap_have_twins_from_the_gap(name, merge, monkeypatch):
    """Whatever a symbol derives from a node before a gap G to a node past G it also derives
    from G (the gap can hold the text from that node on), and a gap's own items, implicit,
    must find it: every triple ``(o, A, q)`` with ``o < G < q``, G the last gap before q, has
    its twin ``(G', A, q)`` in the chart (for the nodes settled before the construction
    stopped), G' the origin G takes at q (a later gap its ε-edges reach stands for it: a
    comment begun in G can run into it); a twin that would end where it begins, at a gap, is
    one of the gap's implicit self-spans. A gap's own item lost (a rule list, a queued code)
    shows here first. (A grammar whose comments can run to the end of the text, as the
    "comments" one, finds its goal at the first gap: nothing past a gap to check.) With the
    records from gaps merged (``earley_kernels.MERGE_GAP_ORIGINS``), one from the twin's gap or
    an earlier one stands for it."""
    from gramalign.grammar import bar_hillel
    from gramalign.grammar import earley_kernels as kernels
    from gramalign.grammar.infill import partial_text
    from gramalign.grammar.infill_search import GrammarInfill

    grammar = _named_grammar(name)
    search = GrammarInfill(grammar)
    runs = []
    run = kernels.earley_run

    def recording(*args):
        state = run(*args)
        runs.append((args[2][3:7], state[3], args[12]))  # (closures, is_gap), triples, counters
        return state

    monkeypatch.setattr(bar_hillel.kernels, "earley_run", recording)
    monkeypatch.setattr(kernels, "MERGE_GAP_ORIGINS", merge)
    rng = random.Random(f"twins {name}")
    checked = 0
    for sample in random_texts(grammar, 40, seed=11, max_bytes=200):
        runs.clear()
        search.search(partial_text(blank_spans(sample, rng, rng.randint(2, 5)), True))
        if not runs:
            continue
        (clo_first, clo_last, clo_nodes, is_gap), triples, counters = runs[-1]
        rows = triples[:counters[kernels.C_TRIPLES]]
        found = set(map(tuple, rows[:, [kernels.T_ORIGIN, kernels.T_HEAD, kernels.T_END]].tolist()))
        gaps = np.flatnonzero(is_gap)
        for origin, head, end in found:
            last = gaps[np.searchsorted(gaps, end) - 1] if np.searchsorted(gaps, end) else -1
            if not origin < last < end < counters[kernels.C_NODE]:
                continue
            reach = clo_nodes[clo_first[last]:clo_last[last]]
            twin = max(int(g) for g in reach if is_gap[g] and g <= end)
            if twin != end:
                checked += 1
                stands = [g for g in gaps if g <= twin and (g, head, end) in found]
                assert (twin, head, end) in found or (merge and stands), (origin, head, end, twin)
    assert checked



NESTED_KINDS = {  # object types nested through references, closing alike (a Kubernetes schema's shape)
    "type": "object",
    "properties": {
        "kind": {"enum": ["Set", "Job"]},
        "metadata": {"$ref": "#/definitions/meta"},
        "spec": {"$ref": "#/definitions/spec"},
        "status": {"type": "object", "properties": {"ready": {"type": "integer"}, "conditions": {
            "type": "array", "items": {"$ref": "#/definitions/meta"}}}},
    },
    "definitions": {
        "meta": {"type": "object", "properties": {
            "name": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"}, "selector": {"$ref": "#/definitions/meta"},
            "template": {"type": "object", "properties": {
                "metadata": {"$ref": "#/definitions/meta"},
                "containers": {"type": "array", "items": {"$ref": "#/definitions/container"}}}}}},
        "container": {"type": "object", "properties": {
            "name": {"type": "string"}, "args": {"type": "array", "items": {"type": "string"}},
            "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
            "env": {"type": "array", "items": {"$ref": "#/definitions/meta"}}}},
    },
}


def test_merged_gap_records_decide_as_separate_ones(monkeypatch):
    """Records that differ only in the gap they begin at are one, the earliest gap's
    (``earley_kernels.MERGE_GAP_ORIGINS``): on a schema whose object types nest through
    references and close alike, with 3 to 8 spans blanked and a third of the texts corrupted,
    the merged construction decides as the separate one and as the bottom-up worklist, its
    witnesses validate, and it makes fewer triples."""
    from gramalign.grammar import bar_hillel
    from gramalign.grammar import earley_kernels as kernels
    from gramalign.grammar.infill import partial_text
    from gramalign.grammar.infill_search import GrammarInfill
    import jsonschema
    from oracles.bar_hillel_worklist import reference_possible

    grammar = ga.Grammar.from_json_schema(NESTED_KINDS)
    search = GrammarInfill(grammar)
    checker = ga.InfillChecker(grammar)
    triples = []
    run = kernels.earley_run

    def counting(*args):
        state = run(*args)
        triples[-1] += int(args[12][kernels.C_TRIPLES])
        return state

    monkeypatch.setattr(bar_hillel.kernels, "earley_run", counting)
    rng = random.Random("merged gaps")
    texts, decided = [], {}
    for sample in random_texts(grammar, 40, seed=13, max_bytes=400):
        segments = blank_spans(sample, rng, rng.randint(3, 8), width=4)
        texts.append(corrupted(segments, rng) if rng.random() < 0.35 else segments)
    made = {}
    for merge in (True, False):
        monkeypatch.setattr(kernels, "MERGE_GAP_ORIGINS", merge)
        triples.append(0)
        decided[merge] = [search.search(partial_text(segments, True)).possible for segments in texts]
        made[merge] = triples[-1]
    assert decided[True] == decided[False]
    assert set(decided[True]) == {True, False}
    assert made[True] < 0.9 * made[False], made
    for segments, possible in list(zip(texts, decided[True]))[:12]:
        assert possible == reference_possible(search, partial_text(segments, True)), segments
    monkeypatch.setattr(kernels, "MERGE_GAP_ORIGINS", True)
    schema_validator = jsonschema.Draft202012Validator(NESTED_KINDS)
    for segments, possible in zip(texts, decided[True]):
        result = checker.check(segments)
        assert result.impossible == (not possible)
        if result.completable:
            assert fits(segments, result.text) and schema_validator.is_valid(json.loads(result.text))

def test_gaps_joined_by_comments_decide_as_the_worklist_and_witnesses_parse():
    """Many gaps that a comment opened in one can run into the next (the renamed origins
    and the items copied into gaps of ``earley_kernels``): statements joined with "; ",
    3 to 8 spans blanked, half of them with a byte corrupted. Never ``impossible`` on an
    intact text, the decision equals the bottom-up worklist's, and every witness keeps the
    pieces and is accepted by lark's LALR parser and gramalign's."""
    from gramalign.grammar.infill import partial_text
    from oracles.bar_hillel_worklist import reference_possible

    source = LARK_GRAMMARS["comments"]
    grammar = ga.Grammar.from_lark(source)
    oracle = lark.Lark(source, parser="lalr")
    checker = ga.InfillChecker(grammar, budget_s=None)
    walks = random_texts(grammar, 60, seed=11, max_bytes=60)
    rng = random.Random("comment gaps")
    seen = set()
    texts = 0
    while texts < 24:
        text = b"; ".join(rng.choice(walks) for _ in range(rng.randint(3, 6)))
        if not lark_accepts(oracle, text.decode()):
            continue  # (a walk ending in ";" doubles it)
        texts += 1
        for corrupt in (False, True):
            segments = blank_spans(text, rng, rng.randint(3, 8))
            if corrupt:
                segments = corrupted(segments, rng)
            result = checker.check(segments)
            seen.add(result.status)
            if not corrupt:
                assert result.status != "impossible", segments
            assert result.impossible == (not reference_possible(checker._search, partial_text(segments))), segments
            if result.completable:
                assert fits(segments, result.text)
                assert lark_accepts(oracle, result.text.decode()) and gramalign_accepts(grammar, result.text)
    assert {"impossible", "completable"} <= seen


def test_a_comment_from_the_first_gap_to_the_last_is_found_at_the_ends(monkeypatch):
    """With ``SHORTCUT_GAPS`` gaps or more the search first tries the text's ends alone: a
    block comment opened in the first gap and closed in the last fills the text whatever lies
    between (a line break in the last piece keeps a line comment from running to the end).
    The construction that found it saw the ends only; the witness keeps every piece and both
    parsers accept it. Where no lexeme spans from the first gap to the last (a piece closes a
    block comment and a string and ends a line), only the whole text is checked, and decides
    as the worklist does."""
    from gramalign.grammar import infill_search
    from gramalign.grammar.infill import partial_text
    from oracles.bar_hillel_worklist import reference_possible

    source = LARK_GRAMMARS["comments"]
    grammar = ga.Grammar.from_lark(source)
    oracle = lark.Lark(source, parser="lalr")
    checker = ga.InfillChecker(grammar, budget_s=None)
    lives = []
    derivation = infill_search.earley_derivation

    def recording(*args, live=None, **kwargs):
        lives.append(int(live.sum()))
        return derivation(*args, live=live, **kwargs)

    monkeypatch.setattr(infill_search, "earley_derivation", recording)
    middle = b"select a + (select b, c); drop d; select e"
    segments = [b"select x", GAP, b"a; dro", GAP, middle, GAP, b"p f;\n select g + h"]
    result = checker.check(segments)
    assert result.completable and fits(segments, result.text)
    assert lark_accepts(oracle, result.text.decode()) and gramalign_accepts(grammar, result.text)
    assert len(lives) == 1 and lives[0] < len(middle)  # the ends: a few dozen nodes, not the middle's
    ends = lives[0]
    for last in (b"; select\n d", b"\n #"):  # completable, then not ("#" begins no lexeme)
        lives.clear()
        segments = [b"select x", GAP, b"select a '*/' +\n b", GAP, b"drop c", GAP, last]
        result = checker.check(segments)
        lexed = last != b"\n #"  # (the text that nothing lexes is refused before any construction)
        assert len(lives) == lexed and all(live > ends for live in lives)  # the whole text, once
        assert result.impossible == (not reference_possible(checker._search, partial_text(segments)))
        assert result.impossible == (last == b"\n #")
        if result.completable:
            assert fits(segments, result.text) and lark_accepts(oracle, result.text.decode())


def test_witness_strings_have_the_fewest_code_points_the_schema_asks():
    """The lexing automaton does not count a string's code points (the parser does), so a
    string written into a gap would be the shortest lexeme, ``""``, and the parser would
    refuse it; the witness pads it to ``minLength`` (also when fixed text opens it)."""
    import jsonschema

    schema = {"type": "object", "properties": {"a": {"type": "string", "minLength": 3},
                                               "b": {"type": "string", "minLength": 2, "maxLength": 4}},
              "required": ["a", "b"], "additionalProperties": False}
    checker = ga.InfillChecker(ga.Grammar.from_json_schema(schema), budget_s=None)
    for segments in ([b'{"a":', GAP, b',"b":', GAP, b"}"], [b'{"a":"x', GAP, b',"b":"', GAP, b"}"],
                     [b'{"a":', GAP, b'"}']):
        result = checker.check(segments)
        assert result.completable, (segments, result.reason)
        assert fits(segments, result.text)
        jsonschema.validate(json.loads(result.text), schema)


def test_the_shortcut_keeps_the_pieces_lexemes_do_not_jump_over(json_grammar):
    """Before the whole text, the search tries the pieces that lexemes spanning gaps do not
    jump over (greedily, the farthest jump from each piece kept): two strings across three
    gaps each leave the first, middle and last pieces of seven; one string across two gaps of
    four pieces leaves too many, and nothing is tried."""
    from gramalign.grammar.infill import partial_text
    from gramalign.grammar.infill_search import GrammarInfill, _jumped
    from gramalign.grammar.lexings import build_lexings

    search = GrammarInfill(json_grammar)
    segments = [b'["a', ga.GAP, b"b", ga.GAP, b"c", ga.GAP, b'd", "e', ga.GAP, b"f", ga.GAP, b"g", ga.GAP, b'h"]']
    text = partial_text(segments, True)
    automaton = build_lexings(search.lexers, search.n_terminals, text, tables=search.lexer_tables)
    kept = _jumped(automaton, automaton.edges)
    assert sorted(set(automaton.piece_of[:automaton.node_count][kept & ~automaton.is_gap].tolist())) == [0, 3, 6]
    result = ga.InfillChecker(json_grammar).check(segments)
    assert result.status == "completable" and isinstance(json.loads(result.text), list)
    short = partial_text([b'["a', ga.GAP, b"b", ga.GAP, b'c", 1', ga.GAP, b"]"], True)
    automaton = build_lexings(search.lexers, search.n_terminals, short, tables=search.lexer_tables)
    assert _jumped(automaton, automaton.edges) is None
