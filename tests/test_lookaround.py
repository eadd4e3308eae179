"""Lookaheads and lookbehinds inside terminals (issue 20, item 1): where they read only
inside the match, the terminal's language is ``re.fullmatch``'s (oracle: ``re`` on every
short string and on random longer ones) and lark lexes text as gramalign does (oracle:
lark's LALR parser); where they would read the text around a lexeme they are refused,
naming the construct, the terminal and the ``%import`` it came from. Every terminal of
lark's ``common.lark`` loads and means what lark means.
"""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path

import lark
import numpy as np
import pytest

import gramalign as ga
from gramalign.errors import RegexError
from gramalign.grammar.lark_frontend import LarkGrammarError
from gramalign.grammar.automata.lookaround import LookaroundError
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser
from gramalign.grammar.automata.regex import regex_to_dfa

from support.grammar_walks import lark_accepts
from support.vocabularies import gpt2_vocabulary

INSIDE = [
    r'"(?!")[^"]*"',  # a lookahead at the start of what follows
    r'".*?(?<!\\)(\\\\)*?"',  # lark's ESCAPED_STRING, lazy repeats and all, under fullmatch
    r"\d+(?<!0)x",
    r"a(?=b)[a-c]+",
    r"(?:x(?=y)|z)[xyz]{2}",  # in an alternative
    r"(a|b)(?<=b)c+",
    r"(?:ab)*(?!c)..",
    r"(?i)a(?<=A)b",  # flags apply inside the assertion
    r"[a-c](?<!b)[a-c](?=[^a]).",
    r"[0-9a-c]{3}(?<=\d\d\d)",  # a lookbehind at the very end
    r"(?=\d{2})\w{2,}(?<![a-b])",
]


@pytest.mark.parametrize("pattern", INSIDE)
def test_lookarounds_inside_the_match_mean_re_fullmatch(pattern):
    dfa = regex_to_dfa(pattern)
    compiled = re.compile(pattern)
    alphabet = 'ab"\\xyz0123cA'
    strings = ["".join(t) for n in range(5) for t in itertools.product(alphabet, repeat=n)]
    rng = random.Random(pattern)
    strings += ["".join(rng.choice(alphabet) for _ in range(rng.randint(5, 12))) for _ in range(20_000)]
    matched = 0
    for text in strings:
        expected = compiled.fullmatch(text) is not None
        assert dfa.matches(text.encode()) == expected, text
        matched += expected
    assert matched > 0 or pattern == r"(?i)a(?<=A)b"


# Word characters and others, ASCII and not: "é" and "٣" (an Arabic-Indic digit) are word
# characters to re, "€" and " " are not.
BOUNDARY_ALPHABET = "aé_٣-€ 1"
BOUNDARIES_INSIDE = [
    r"a\b-",
    r"\w\B\w",
    r"(?:a|-)\b(?:é|€)",
    r"a(?:\b|_)[-é]",
    r"-\b\w+",  # the boundary reads the "-" before it and the word character after
    r"[^ ]+\B[^ ]+",
    r"(?a:é\B-|\w\b\w)",  # ASCII word characters only: "é" is not one
    r"٣\b€\B ",
]


@pytest.mark.parametrize("pattern", BOUNDARIES_INSIDE)
def test_word_boundaries_inside_the_match_mean_re_fullmatch(pattern):
    assert _fullmatches_on_short_strings(regex_to_dfa(pattern), pattern) > 0


def _fullmatches_on_short_strings(dfa, pattern: str) -> int:
    """Check ``dfa`` against ``re.fullmatch(pattern)`` on every string of up to 5 characters
    over BOUNDARY_ALPHABET; returns how many match."""
    compiled = re.compile(pattern)
    matched = 0
    for n in range(6):
        for letters in itertools.product(BOUNDARY_ALPHABET, repeat=n):
            text = "".join(letters)
            expected = compiled.fullmatch(text) is not None
            assert dfa.matches(text.encode()) == expected, text
            matched += expected
    return matched


@pytest.mark.parametrize("pattern, construct, position", [
    (r"0(?![1-9])", "lookahead", 1),  # reads the character after the lexeme
    (r"(?<=a)b", "lookbehind", 0),  # reads the character before it
    (r'"(?!"").*"', "lookahead", 1),  # reads past the end when the lexeme is ""
    (r"x(?=ab)[ab]?", "lookahead", 1),
    (r"(?:a(?=bb))+b", "repeat", 4),  # the last lookahead reads past the match
    (r"a(?=b+)b+", "unbounded", 1),
    (r"\bab", "word boundary reads the character before", 0),  # the start of the match
    (r"a+\B", "word boundary needs a word character after", 2),  # a positive lookahead past it
    (r"a(?:\ba)+", "repeat", 4),
])
def test_lookarounds_reading_outside_the_match_are_refused(pattern, construct, position):
    with pytest.raises(LookaroundError, match=construct) as info:
        regex_to_dfa(pattern)
    assert isinstance(info.value, RegexError) and info.value.position == position


# Boundaries at an end of a regex that stands alone read the start or the end of the text.
BOUNDARIES_AT_THE_ENDS = [
    r"\ba1\b",
    r"\Ba1\B",  # "a" after the start of the text is a boundary: nothing matches
    r"\b\w+\b",
    r"\b",  # nothing: the empty text has no word character on either side
    r"\B",  # only the empty text, but re's \B fails in the empty text before Python 3.14
    r"-?\B",  # "-" only
    r"\b-",  # nothing: "-" is no word character
    r"-\B",
    r"\B-+\B",
    r"(?:\ba|-\B)é?",
    r"\b(?:a|-)\b",
    r"(?i)\bA\b",
    r"(?a)\b\w+\b",  # ASCII word characters only: "é" and "٣" are not
    r"a\b|\b-|\B",
    r"^\b\w\b$",
    r"(?a)\b\w+\b \b\w+\b",  # boundaries inside the match too (ASCII: Unicode \w takes 15 s)
    r"(?=a)\w+\b",  # with a lookahead inside
    r"(?:\b\w|-)-",
    r"\b.*?\b",  # a lazy repeat: the same language under fullmatch
]


@pytest.mark.parametrize("pattern", BOUNDARIES_AT_THE_ENDS)
def test_word_boundaries_at_the_ends_of_a_standalone_regex_read_the_start_and_end_of_the_text(pattern):
    """``Grammar.from_regex`` is the whole text (issue 40, item 7): ``re.fullmatch`` on every
    string of up to 5 characters over word and other characters is the oracle."""
    matched = _fullmatches_on_short_strings(ga.Grammar.from_regex(pattern).single_terminal().dfa, pattern)
    assert matched > 0 or pattern in (r"\Ba1\B", r"\b", r"\b-", r"\B")


def test_a_standalone_regex_with_boundaries_at_its_ends_masks_tokens_as_re_says():
    """GPT-2's tokens after a few prefixes: allowed exactly where the text so far still starts
    a string ``re.fullmatch`` accepts (the automaton checked above against re)."""
    from gramalign.masking.bitmask import unpack_bitmask_row

    grammar = ga.Grammar.from_regex(r"(?a)\b\w+ \b\w+\b")
    dfa = grammar.single_terminal().dfa
    vocabulary = gpt2_vocabulary()
    compiled = ga.compile(grammar, vocabulary)
    for prefix in (b"", b"ca", b"cat ", b"cat sat"):
        matcher = compiled.matcher()
        matcher.accept_string(prefix)
        mask = np.zeros((1, compiled.bitmask_width), dtype=np.int32)
        matcher.fill_next_token_bitmask(mask, 0)
        got = unpack_bitmask_row(mask[0], vocabulary.size)
        for token in vocabulary.grammar_token_ids().tolist():
            assert got[token] == dfa.is_prefix(prefix + vocabulary.token_bytes[token]), (prefix, token)
        assert all(got[eos] == dfa.matches(prefix) for eos in vocabulary.eos_token_ids)


@pytest.mark.parametrize("pattern, construct", [
    (r"a(?!b)", "lookahead"),  # a lookahead past the end of the text: not read as the end of the text
    (r"(?<=a)b", "lookbehind"),
    (r"(?:\ba)+", "repeat"),
    (r"(?:\b\w)?-", "repeat"),
])
def test_other_assertions_at_the_ends_of_a_standalone_regex_stay_refused(pattern, construct):
    with pytest.raises(LookaroundError, match=construct):
        ga.Grammar.from_regex(pattern)


def test_lark_terminals_keep_reading_the_text_around_their_boundaries():
    """The same pattern as a lexeme among others: a boundary at its end reads the next lexeme."""
    grammar = ga.Grammar.from_lark('start: WORD+\nWORD: /cat\\b/ | /s/\n')
    parser = IncrementalParser(build_parser_tables(grammar))
    assert parser.accepts(b"cat") and parser.accepts(b"scat") and not parser.accepts(b"cats")
    with pytest.raises(LookaroundError, match="word boundary"):
        regex_to_dfa(r"cat\b")  # a lexeme's automaton, without the whole text around it


def _sample(rng: random.Random, pieces: list[str], joiner: str = "") -> str:
    return joiner.join(rng.choice(pieces) for _ in range(rng.randint(1, 8)))


def agree_with_lark(text: str, pieces: list[str], count: int, seed) -> tuple:
    """(grammar, lark parser, gramalign parser) of the Lark grammar ``text``, after checking
    that the two parsers give the same verdict on ``count`` random joins of ``pieces`` and
    that both verdicts occur."""
    grammar = ga.Grammar.from_lark(text)
    oracle = lark.Lark(text, parser="lalr")
    parser = IncrementalParser(build_parser_tables(grammar))
    rng = random.Random(seed)
    verdicts = set()
    for _ in range(count):
        sample = _sample(rng, pieces)
        expected = lark_accepts(oracle, sample)
        assert parser.accepts(sample.encode()) == expected, sample
        verdicts.add(expected)
    assert verdicts == {True, False}
    return grammar, oracle, parser


def masks_equal_brute_force(grammar: ga.Grammar, prefixes: list[bytes], vocabulary=None) -> None:
    from oracles.brute_force_masks import assert_mask_equals_brute_force
    from support.grammar_walks import byte_vocabulary

    compiled = ga.compile(grammar, byte_vocabulary() if vocabulary is None else vocabulary)
    for prefix in prefixes:
        assert_mask_equals_brute_force(compiled, prefix)


@pytest.mark.parametrize("pattern, pieces", [
    (r'/"(?!")[^"]*"/', ['"', "a", "b", " "]),
    (r"/[a-z]+(?<!q)/", ["a", "q", "b", " ", "qa"]),
    (r"/(?=[a-z]?\d)[a-z0-9]{2,}/", ["a", "1", "b", " ", "ab"]),
    (r"/#(?!#)[^\n]*\n/", ["#", "a", "\n", " "]),
    (r"/[a-z]+\b/", ["a", "b", " ", "ab", "-"]),  # the boundary: no word character after
    (r"/1\b-?|-\B/", ["1", "-", "a", " ", "1-", "-a"]),  # no word character after the "-"
])
def test_lark_terminals_with_lookarounds_lex_as_lark_does(pattern, pieces):
    agree_with_lark(f'start: (T | W)+\nT: {pattern}\nW: /[a-z]/\n%ignore " "\n', pieces, 1500, pattern)


BOUNDARY_GRAMMAR = r'''
start: (KW | NAME | NUM | "(" | ")")+
KW.2: /if\b|do\b/
NAME: /[a-z]+/
NUM: /[0-9]+/
%ignore " "
'''


def test_keywords_ending_in_a_word_boundary_lex_and_mask_as_lark_does():
    """``if\\b`` is a keyword only where no word character follows ("iffy" is a name). Where
    a word character follows a lexeme the keyword wins, lark falls back to another terminal
    and gramalign refuses the text ("if2", docs/grammars.md): the samples keep a space before
    numbers. Masks equal a brute-force scan."""
    pieces = ["if", "do", "i", "f", "x", " 2", " ", "(", ")"]
    grammar, oracle, _ = agree_with_lark(BOUNDARY_GRAMMAR, pieces, 3000, 5)
    assert [t.type for t in oracle.lex("if iffy(do)")] == ["KW", "NAME", "LPAR", "KW", "RPAR"]
    masks_equal_brute_force(grammar, [b"", b"i", b"if", b"if ", b"(do", b"iff", b"x if", b"do 2"])


FOLLOWED_GRAMMAR = r'''
start: (T D)+
T: /[a-z]+\B|-(?=[0-9])/
D: /[0-9]/
%ignore " "
'''


def test_positive_lookaheads_of_one_character_lex_and_mask_as_lark_does():
    """``[a-z]+\\B`` needs a word character after it, ``-(?=[0-9])`` a digit: a text may not
    end right after them, and another character may not follow. Masks equal a brute-force
    scan (after "ab", the end of the text is not allowed, nor a space)."""
    grammar, _, parser = agree_with_lark(FOLLOWED_GRAMMAR, ["a", "b", "-", "1", " ", "ab1", "-2"], 3000, 9)
    assert parser.accepts(b"ab1 -2") and not parser.accepts(b"ab") and not parser.accepts(b"ab 1")
    masks_equal_brute_force(grammar, [b"", b"a", b"ab", b"-", b"ab1", b"ab1 ", b"a1-"])


# lark's test_parse_textslice grammar: whole words, and fragments that start or end inside one.
BEFORE_GRAMMARS = {
    "fragments": (r'''
start: (WORD | FRAG_END | FRAG_START)+
WORD: /\b\w+\b/
FRAG_END: /\B\w+/
FRAG_START: /\w+\B/
%ignore /\s+/
''', ["a", "b", " ", "ab", "é", "\n", "1"]),
    "keywords": (r'''
start: (KW | NAME | NUM | OP)+
KW.2: /\bif\b|\bdo\b/
NAME: /[a-z]+/
NUM: /[0-9]+/
OP: /[-+(]/
%ignore " "
''', ["if", "do", "i", "f", "x", " 2", " ", "-", "+", "(", "if-", "+1if"]),
    "inside": (r'''
start: (T | W | D)+
T: /\Ba+/
W: /[b-z]+/
D: /[0-9-]/
%ignore " "
%ignore /~[0-9]/
''', ["a", "b", " ", "1", "-", "ba", "1a", "~1", "~"]),
}


@pytest.mark.parametrize("name", sorted(BEFORE_GRAMMARS))
def test_word_boundaries_at_the_start_of_a_lexeme_read_the_character_before(name):
    """A boundary at the start of a terminal reads the last character of the lexeme before
    (ignored ones included), or the start of the text: lark and gramalign agree on random
    texts, random mask walks are lark sentences, and masks equal a brute-force scan."""
    from support.grammar_walks import random_texts

    grammar, oracle, _ = agree_with_lark(*BEFORE_GRAMMARS[name], 3000, name)
    for walked in random_texts(grammar, 60, seed=3, max_bytes=30):
        assert lark_accepts(oracle, walked.decode()), walked
    masks_equal_brute_force(grammar, [b"", b"a", b"ab", b"a ", b"1", b"if", b"1i", b"x -", b"b", b"~", b"b~1"])


def _crossing_vocabulary() -> ga.Vocabulary:
    """Every byte, and tokens that hold lexeme boundaries of the grammars above (after an
    ignored lexeme that ends with a word character, "~1a"), then EOS."""
    pieces = [b"1a", b"~1a", b"~1b", b"1 a", b" a", b"a b", b"if ", b" if", b"x if", b"1if", b"ab cd", b"\n\xc3\xa9",
              b"-a", b"a-", b"~2~3a", b"b~1a"]
    return ga.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + pieces + [b""],
                                          eos_token_ids=256 + len(pieces), special_token_ids=[256 + len(pieces)])


@pytest.mark.parametrize("name", sorted(BEFORE_GRAMMARS))
def test_word_boundaries_at_the_start_of_a_lexeme_mask_tokens_across_lexemes(name):
    """Tokens cross lexemes ("1a", " if"): where a lexeme, ignored ones included ("~1"),
    ends inside a token, the next one starts after its last character. Masks equal a
    brute-force scan, over the vocabulary above and GPT-2's."""
    grammar = ga.Grammar.from_lark(BEFORE_GRAMMARS[name][0])
    prefixes = [b"", b"if", b"if ", b"x", b"1", b"1 ", b"ab", b"do-", b"~", b"b~", b"b~1", b"~1", b"-"]
    for vocabulary in (_crossing_vocabulary(), gpt2_vocabulary()):
        masks_equal_brute_force(grammar, prefixes, vocabulary)


@pytest.mark.parametrize("pattern, words", [
    (r"/\ba.*?b/", "lazy quantifier"),  # a boundary at the start and a lazy repeat
    (r"/(?:\ba)+/", "inside a repeat"),
    (r"/(?a)\bé/", "ASCII flag"),
])
def test_word_boundaries_that_stay_refused_in_lark_terminals(pattern, words):
    with pytest.raises(LarkGrammarError, match=words) as info:
        ga.Grammar.from_lark(f"start: X\nX: {pattern}\n")
    assert info.value.line == 2


def test_refused_imports_name_the_import_line(tmp_path):
    grammar = 'start: DEC\n// a comment\n%import numbers.DEC\n'
    (tmp_path / "numbers.lark").write_text("DEC: /(?<=x)0|[1-9][0-9]*/\n")
    with pytest.raises(LarkGrammarError, match=r"DEC \(from the %import at line 3\).*lookbehind") as info:
        ga.Grammar.from_lark(grammar, import_paths=[str(tmp_path)])
    assert info.value.line == 3 and "overriding any import" in str(info.value)


# --------------------------------------------------------------------------- common.lark

COMMON = Path(lark.__file__).parent / "grammars" / "common.lark"
PIECES = ["0", "1", "9", ".", "e", "E", "+", "-", "a", "Z", "_", '"', "\\", " ", "\t", "\r", "\n", "#", "/", "*",
          "x", "--", "//", "/*", "*/", '\\"', "12", "3.5", "ab"]


def common_terminals() -> list[str]:
    names = re.findall(r"^([A-Z][A-Z_0-9]*)\s*:", COMMON.read_text(), re.MULTILINE)
    assert len(names) >= 20
    return names


@pytest.mark.parametrize("name", common_terminals())
def test_every_common_terminal_means_what_lark_means(name):
    """``start: X ("," X)*`` with X imported from common.lark: lark and gramalign agree on
    random texts made of the characters the terminals are about, and on the pieces alone."""
    text = f'start: {name} ("," {name})*\n%import common.{name}\n'
    oracle = lark.Lark(text, parser="lalr")
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_lark(text)))
    rng = random.Random(name)
    samples = PIECES + [_sample(rng, PIECES) for _ in range(2500)]
    samples += [_sample(rng, PIECES, ",") for _ in range(1000)]
    samples += [f'"{_sample(rng, PIECES)}"' for _ in range(500)] + [f"/*{_sample(rng, PIECES)}*/" for _ in range(300)]
    accepted = 0
    for sample in samples:
        expected = lark_accepts(oracle, sample)
        assert parser.accepts(sample.encode()) == expected, (name, sample)
        accepted += expected
    assert accepted >= 3, name


# Terminals that start with a word boundary, for random grammars in which such a terminal may
# be the whole language, the first lexeme of the text, or follow ignored text or a lexeme
# ending with a word character or another one. Terminals that can match at one place differ
# in their first characters or take the same texts (/\b[a-c]+/, /\B[ab]+/, /[a-c]+/): where
# lark's first match is not the longest (a shorter terminal tried first, a literal a boundary
# regex also matches), lark and gramalign differ as docs/grammars.md says.
LEADING = [r"/\bfoo/", r"/\b[a-c]+/", r"/\B[ab]+/", r"/\b\d+\b/", r"/\b(?:if|do)\b/", r"/\B-/"]
PLAIN = [r"/[a-c]+/", r'"+"', r'"("', r"/x+/"]
BOUNDARY_PIECES = ["foo", "a", "b", "ab", "c", "1", "12", "-", "+", "(", "if", "do", " ", "~1", "~", "fo", "x",
                   "\xe9"]


def _random_boundary_grammar(rng: random.Random) -> str:
    starting = [pattern for pattern in LEADING if pattern != r"/\B[ab]+/"]  # can start the text
    if rng.random() < 0.25:  # the whole language is one such terminal
        return f"start: B0\nB0: {rng.choice(starting)}\n"
    chosen = rng.sample(LEADING, rng.randint(1, 3))
    chosen.sort(key=lambda pattern: pattern not in starting)  # B0 can start the text
    definitions = [f"B{k}: {pattern}" for k, pattern in enumerate(chosen)]
    plain = rng.sample(PLAIN, rng.randint(1, 3))
    definitions += [f"P{k}: {pattern}" for k, pattern in enumerate(plain)]
    names = [f"B{k}" for k in range(len(chosen))] + [f"P{k}" for k in range(len(plain))]
    first = rng.choice(["B0", "item"]) if chosen[0] in starting else "item"  # a boundary terminal first
    rules = [f"start: {first} item*", "item: " + " | ".join(names)]
    if rng.random() < 0.7:
        definitions.append('%ignore " "')
    if rng.random() < 0.4:
        definitions.append("%ignore /~[0-9]/")  # ignored text that ends with a word character
    return "\n".join(rules + definitions) + "\n"


@pytest.mark.parametrize("seed", range(40))
def test_random_grammars_with_leading_boundaries_agree_with_lark(seed):
    """Random grammars whose terminals start with ``\\b`` or ``\\B``, one of them possibly
    the whole language or the first lexeme: the matcher (over a byte vocabulary, so every
    byte of a text is one mask check) accepts exactly the texts lark's LALR parser accepts,
    and every random mask walk ends in a text lark accepts."""
    from support.fuzz_run import matcher_accepts
    from support.grammar_walks import byte_vocabulary, random_texts

    rng = random.Random(seed)
    text = _random_boundary_grammar(rng)
    try:
        oracle = lark.Lark(text, parser="lalr")
    except lark.exceptions.GrammarError:
        pytest.skip("lark's LALR does not build this random grammar")
    grammar = ga.Grammar.from_lark(text)
    compiled = ga.compile(grammar, byte_vocabulary(), cache=False)
    for _ in range(300):
        sample = _sample(rng, BOUNDARY_PIECES)
        assert matcher_accepts(compiled, sample.encode()) == lark_accepts(oracle, sample), (text, sample)
    walked = random_texts(grammar, 20, seed=seed, max_bytes=30)
    assert walked, text
    for sentence in walked:
        assert lark_accepts(oracle, sentence.decode()), (text, sentence)


INSIDE_REPEATS = [
    r"\/\*(\*(?!\/)|[^*])*\*\/",  # lark's examples/grammars/verilog.lark MULTILINE_COMMENT
    r"(?:a(?=b))+b",  # only the last pass can meet its lookahead: "ab"
    r"(?:[ab](?<=a)|c)+",
    r"x(?:(?<!a)[ab])*y",
    r"(?:ab(?!c)|c)*c",
    r"(?:x(?:a(?!b))*b)+",  # nested repeats
    r"(?:(?=[ab]c)[a-c]|c)+c",
    r"b(?:a(?<!ba)|b)+a",
    r"(?i:(?:A(?!B)|b)+)c",
]


@pytest.mark.parametrize("pattern", INSIDE_REPEATS)
def test_lookarounds_inside_repeats_mean_what_re_fullmatch_says(pattern):
    """Every string over the patterns' letters up to length 5, and random longer ones."""
    dfa = regex_to_dfa(pattern)
    compiled = re.compile(pattern)
    alphabet = "abcxy*/AB"
    matched = 0
    texts = ["".join(t) for n in range(6) for t in itertools.product("abcxy*/", repeat=n)]
    rng = random.Random(pattern)
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(6, 14))) for _ in range(3000)]
    texts += ["/*" + "".join(rng.choice("*/ a") for _ in range(rng.randint(0, 8))) + "*/" for _ in range(500)]
    for text in texts:
        expected = compiled.fullmatch(text) is not None
        assert dfa.matches(text.encode()) == expected, text
        matched += expected
    assert matched > 0


@pytest.mark.parametrize("pattern, position", [
    (r"(?:a(?!b)|b)*", 4),  # the last pass's lookahead reads the character after the match
    (r"(?:a(?=bc?)|[bc])*c", 4),  # room for one character, the lookahead reads two
    (r"(?:(?<=ab)c|a)+", 3),  # in the first pass the lookbehind reads before the match
    (r"(?:a(?=b+))*b", 4),  # unbounded width
])
def test_lookarounds_inside_repeats_that_read_outside_the_match_are_refused(pattern, position):
    with pytest.raises(LookaroundError) as info:
        regex_to_dfa(pattern)
    assert info.value.position == position
