"""Terminals with a negative lookahead past the lexeme (``0(?![1-9])``, python.lark's
``STRING``): the lexer takes the longest match as usual and then refuses the lexeme when
the text after it starts as the lookahead forbids (docs/grammars.md). Oracles: lark's
LALR parser, on grammars where that reading and lark's first-match lexer agree, lark's own
``python.lark`` (unmodified) on standard-library modules and damaged copies, and a
brute-force scan of the vocabulary for the masks.
"""

from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path

import lark
import pytest

import gramalign as ga
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from oracles.brute_force_masks import assert_mask_equals_brute_force
from support.grammar_walks import byte_vocabulary, lark_accepts, random_texts
from support.vocabularies import gpt2_vocabulary

# NUM's lexemes "0", "00", ... must not be followed by a digit 1-9 (a longer number would
# have to start with 1-9); Q is "?" not followed by a letter, or "+"; W a word; "q" a
# keyword. Spaces separate what would otherwise merge.
SMALL = r'''
start: item*
item: NUM | Q | W | "(" start ")"
NUM: /0+(?![1-9])|[1-9][0-9]*/
Q: /[+]|[?](?![a-z])/
W: /[a-z]+/
%ignore " "
'''
SMALL_PIECES = ["0", "00", "5", "?", "+", "a", "b", " ", "(", ")", "?a"]


@lru_cache(maxsize=None)
def small_pair():
    return lark.Lark(SMALL, parser="lalr"), ga.Grammar.from_lark(SMALL)


def test_small_grammar_agrees_with_lark():
    oracle, grammar = small_pair()
    parser = IncrementalParser(build_parser_tables(grammar))
    rng = random.Random(3)
    verdicts = set()
    for _ in range(3000):
        text = "".join(rng.choice(SMALL_PIECES) for _ in range(rng.randint(0, 7)))
        expected = lark_accepts(oracle, text)
        assert parser.accepts(text.encode()) == expected, text
        verdicts.add(expected)
    assert verdicts == {True, False}
    assert not parser.accepts(b"05") and parser.accepts(b"0 5") and parser.accepts(b"? a") and not parser.accepts(b"?a")


def test_small_grammar_masks_equal_brute_force():
    _, grammar = small_pair()
    compiled = ga.compile(grammar, byte_vocabulary())
    for prefix in [b"", b"0", b"00", b"?", b"( 0", b"0 ?", b"a 00"]:
        assert_mask_equals_brute_force(compiled, prefix)


def test_small_grammar_random_walks_are_lark_sentences():
    oracle, grammar = small_pair()
    for text in random_texts(grammar, 150, seed=7, max_bytes=40):
        assert lark_accepts(oracle, text.decode()), text


def damaged_copies_agree(parser, oracle, text: str, rng: random.Random, pieces: list[str], copies: int) -> set:
    """gramalign and lark give the same verdict on ``copies`` copies of ``text`` with one of
    ``pieces`` inserted at a random place; returns the verdicts seen."""
    verdicts = set()
    for _ in range(copies):
        at = rng.randrange(len(text) + 1)
        damaged = text[:at] + rng.choice(pieces) + text[at:]
        expected = lark_accepts(oracle, damaged)
        assert parser.accepts(damaged.encode()) == expected, damaged[max(0, at - 30):at + 30]
        verdicts.add(expected)
    return verdicts


# --------------------------------------------------------------------------- lark's python.lark


@lru_cache(maxsize=None)
def python_pair():
    from lark.indenter import PythonIndenter

    path = Path(lark.__file__).parent / "grammars" / "python.lark"
    oracle = lark.Lark(path.read_text(), parser="lalr", postlex=PythonIndenter(), start="file_input")
    grammar = ga.Grammar.from_lark_file(path, start="file_input", indentation=ga.Indentation())
    return oracle, grammar


@pytest.mark.parametrize("text", [
    'x = ""\n', 'x = """a"\n', 'x = "" "a"\n', 'x = """a"""\n', "x = ''''\n", "x = rb''\n", "x = Rb'a' b''\n",
    'x = f"{a}"\n', 'x = """"""\n', 'x = """""\n', "x = 0\n", "x = 05\n", "x = 00\n", "x = 0_0\n", "x = 00_5\n",
    "x = 0x1f\n", "x = 0.5\n", "x = 05.5\n", "x = 0j\n", "x = 0 if a else 1\n", "x = 1_000\n", "x = 0e5\n",
])
def test_python_lark_reads_strings_and_numbers_as_lark_does(text):
    oracle, grammar = python_pair()
    parser = IncrementalParser(build_parser_tables(grammar))
    assert parser.accepts(text.encode()) == lark_accepts(oracle, text), text


def test_python_lark_on_stdlib_modules_and_damaged_copies():
    from oracles.python_layout import stdlib_python_files

    oracle, grammar = python_pair()
    parser = IncrementalParser(build_parser_tables(grammar))
    rng = random.Random(11)
    checked = 0
    for path in stdlib_python_files(12):
        text = path.read_text(encoding="utf-8")
        if not lark_accepts(oracle, text):
            continue  # syntax python.lark does not cover
        assert parser.accepts(text.encode()), path
        damaged_copies_agree(parser, oracle, text, rng, ['"', '""', "'", "0", "5", '"""', "\\", "b", "_"], 6)
        checked += 1
    assert checked >= 6


def test_python_lark_masks_equal_brute_force_where_lookaheads_are_pending():
    _, grammar = python_pair()
    compiled = ga.compile(grammar, gpt2_vocabulary())
    for prefix in [b'x = ""', b"x = 0", b"x = 00", b"x = rb''", b'x = f""', b"y = 0_0", b'x = ("" ']:
        assert_mask_equals_brute_force(compiled, prefix)


# --------------------------------------------------------------------------- lark's lark.lark


@lru_cache(maxsize=None)
def lark_lark_pair():
    path = Path(lark.__file__).parent / "grammars" / "lark.lark"
    return lark.Lark(path.read_text(), parser="lalr"), ga.Grammar.from_lark_file(path)


def test_regexp_equivalent_lexes_as_re_match():
    """lark.lark's REGEXP is read through an equivalent with a lookahead past the lexeme
    (lark_frontend._FIRST_MATCH_EQUIVALENTS): the longest lexeme of its classes, refused
    when its lookahead matches what follows, is re.match's first match."""
    import re

    from gramalign.grammar.lark_frontend import _FIRST_MATCH_EQUIVALENTS
    from gramalign.grammar.automata.regex import regex_lookahead_classes

    [(original, equivalent)] = _FIRST_MATCH_EQUIVALENTS.items()
    _, classes = regex_lookahead_classes(equivalent)
    compiled = re.compile(original)
    rng = random.Random(4)
    for _ in range(5000):
        text = "".join(rng.choice(["/", "\\", "a", "i", "\n", " "]) for _ in range(rng.randint(0, 10)))
        data = text.encode()
        longest = max((end for end in range(1, len(data) + 1) for lexemes, _, _ in classes
                       if lexemes.matches(data[:end])), default=None)
        got = None
        if longest is not None:
            [forbidden] = [rest for lexemes, rest, _ in classes if lexemes.matches(data[:longest])]
            after = data[longest:]
            if forbidden is None or not any(forbidden.matches(after[:k]) for k in range(1, len(after) + 1)):
                got = text[:longest]
        found = compiled.match(text)
        assert got == (found.group() if found else None), text


@pytest.mark.parametrize("text", [
    "start: /a\\/\n", "start: /a\\/ b\n", "start: /a\\/b/\n", "start: /a\\/\nx: /b/\n", "start: /a\\/ \\/\n",
    "start: /a/i\n", "start: /a\\//\n", "start: //\n", "start: /\\//\n", "start: /\\/\n", 'start: "a"i\n',
    "start: a?\n", "start: ?a\n", "start: a ?b\n", "start: /a\\\\/\n", "start: /a\\\\/ /b\\/\n",
])
def test_lark_lark_reads_regexps_and_operators_as_lark_does(text):
    oracle, grammar = lark_lark_pair()
    parser = IncrementalParser(build_parser_tables(grammar))
    assert parser.accepts(text.encode()) == lark_accepts(oracle, text), text


def test_lark_lark_on_lark_grammars_and_damaged_copies():
    oracle, grammar = lark_lark_pair()
    parser = IncrementalParser(build_parser_tables(grammar))
    rng = random.Random(6)
    texts = [path.read_text() for path in sorted((Path(lark.__file__).parent / "grammars").glob("*.lark"))]
    texts += [SMALL, 'start: "a" _NEWLINE _INDENT item+ _DEDENT\nitem: "b" _NEWLINE\n%declare _INDENT _DEDENT\n']
    verdicts = set()
    for text in texts:
        assert lark_accepts(oracle, text) and parser.accepts(text.encode()), text[:80]
        verdicts |= damaged_copies_agree(parser, oracle, text, rng, ["/", "\\", '"', "//", "?", "a", "\n", "i", "/a\\/"],
                                         12)
    assert verdicts == {True, False}


def test_lark_lark_masks_equal_brute_force_after_a_pending_regexp():
    _, grammar = lark_lark_pair()
    compiled = ga.compile(grammar, byte_vocabulary())
    for prefix in [b"start: /a\\/", b"start: /a\\/ b", b"start: ?", b"start: a?"]:
        assert_mask_equals_brute_force(compiled, prefix)


def test_an_ignored_terminal_with_a_lookahead_past_its_lexeme_is_refused():
    """The masks read an ignored lexeme that ends inside a token without the parser (it only
    starts the next lexeme), so its lookahead would go unchecked: with a token "#x", the
    mask after "a" allowed it while the parser refuses "#" before "x"."""
    with pytest.raises(ga.GrammarError, match="C is ignored and has a lookahead"):
        ga.Grammar.from_lark('start: ("a" | "x")+\nC: /#(?!x)/\n%ignore C\n')
