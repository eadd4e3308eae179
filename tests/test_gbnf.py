"""Grammar.from_gbnf: llama.cpp's GBNF means what the GBNF definition says (oracle: the
Earley recognizer of oracles/gbnf.py over the rules' syntax trees, on random sentences
and damaged ones), masks equal a brute-force scan, and bad grammars fail with a line and
column. The grammars are written here in the style of llama.cpp's GBNF documentation.
"""

from __future__ import annotations

import random
import re

import pytest

import gramalign as ga
from gramalign.grammar.gbnf_frontend import GbnfError, parse_gbnf
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from oracles.brute_force_masks import assert_mask_equals_brute_force
from oracles.gbnf import earley_accepts, random_sentence

JSON = r'''
# JSON values, no leading zeros
root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ("0" | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws ::= | " " | "\n" [ \t]{0,20}
'''

ARITHMETIC = r'''
root  ::= expr
expr  ::= term (("+" | "-") term)*
term  ::= factor (("*" | "/") factor)*
factor ::= [0-9]+ | "(" expr ")" | "-" factor
'''

LIST = r'''
root ::= item{1,4}
item ::= "- " [a-z] [a-z0-9 ]{0,8} "\n"
'''

CHESS = r'''
# moves like "1. e4 e5 2. Nf3 Nc6", castling and captures
root   ::= number move (" " number? move)*
number ::= [1-9] [0-9]? ". "
move   ::= castle | piece? target promo? check?
target ::= [a-h] ([1-8] | "x"? square) | "x" square   # e4, exd5, Nbd7, Nxe5
castle ::= "O-O" ("-O")?
piece  ::= [KQRBN]
square ::= [a-h] [1-8]
promo  ::= "=" [QRBN]
check  ::= [+#]
'''

UNICODE = r'''
root ::= "¿" word ("、" word)* "?" | [\u4e00-\u9fff]{2,3}
word ::= [^\x00-\x40、?¿]+
'''

# Written the way llama.cpp's own grammars often are: alternatives that overlap inside a rule
# ("7" is both [0-9] and [1-9] [0-9]{0,15}; a word is both a keyword and a name), which no
# LALR(1) parser reads character by character. These rules refer to no recursive rule, so they
# are regular and are read from their deterministic automata.
AMBIGUOUS = r'''
root    ::= "[" ws (item ("," ws item)*)? "]" ws
item    ::= number | word | "(" ws root ")" ws
number  ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
word    ::= (keyword | name) ws
keyword ::= "if" | "then" | "else"
name    ::= [a-z] [a-z0-9]* | "x" [0-9]+
ws      ::= | " " | "\n" [ \t]{0,20}
'''

# A keyword and a name that share their first letters, side by side in a recursive rule: read
# with the names' automaton right-linear, so the choice waits until "int " and "intx" part.
KEYWORDS = r'''
root ::= "(" root ")" | kw root | name
kw   ::= "int " | "if "
name ::= [a-z]+
'''

GRAMMARS = {"json": JSON, "arithmetic": ARITHMETIC, "list": LIST, "unicode": UNICODE, "ambiguous": AMBIGUOUS,
            "keywords": KEYWORDS}
MUTATIONS = ["", " ", "x", "0", "\"", "{", "]", ",", "-", "\n", "é", "\\", "e", "、"]


def damaged(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text) + 1)
    if rng.random() < 0.5 and text:
        return text[:at] + text[at + 1:]
    return text[:at] + rng.choice(MUTATIONS) + text[at:]


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_gbnf_means_what_the_reference_recognizer_says(name):
    text = GRAMMARS[name]
    rules = parse_gbnf(text)
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_gbnf(text)))
    rng = random.Random(name)
    verdicts = set()
    checked = 0
    for _ in range(150):
        sentence = random_sentence(rules, rng)
        if sentence is None:
            continue
        for sample in [sentence] + [damaged(sentence, rng) for _ in range(3)]:
            expected = earley_accepts(rules, sample)
            assert parser.accepts(sample.encode("utf-8")) == expected, (name, sample)
            verdicts.add(expected)
            checked += 1
    assert verdicts == {True, False} and checked >= 300


def test_chess_moves():
    rules = parse_gbnf(CHESS)
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_gbnf(CHESS)))
    verdicts = set()
    for sample in ["1. e4 e5 2. Nf3 Nc6", "1. O-O-O", "12. exd5 Qxd5+", "3. e8=Q#", "1. e4 e5 2.", "1. Ke9",
                   "1. e4  e5", "1. O-O-O-O", "4. Nbd7 Nxe5"]:
        expected = earley_accepts(rules, sample)
        assert parser.accepts(sample.encode()) == expected, sample
        verdicts.add(expected)
    rng = random.Random(9)
    for _ in range(200):
        sample = random_sentence(rules, rng) or "1. e4"
        for text in (sample, damaged(sample, rng)):
            assert parser.accepts(text.encode()) == earley_accepts(rules, text), text
    assert verdicts == {True, False}


def small_vocabulary() -> ga.Vocabulary:
    rng = random.Random(2)
    alphabet = '{}[]",: 0123456789.-eEtrufalsn\\\n'
    pieces = set(alphabet) | {"".join(rng.choice(alphabet) for _ in range(rng.randint(2, 5))) for _ in range(300)}
    pieces |= {"true", "false", "null", '": ', '", "', "é", "\u00e9\""}
    tokens = sorted(p.encode() for p in pieces) + [b"<eos>"]
    return ga.Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])


@pytest.mark.parametrize("name", ["json", "ambiguous"])
def test_masks_equal_brute_force(name):
    text = GRAMMARS[name]
    compiled = ga.compile(ga.Grammar.from_gbnf(text), small_vocabulary(), cache=False)
    rng = random.Random(5)
    rules = parse_gbnf(text)
    checked = 0
    for _ in range(6):
        sentence = (random_sentence(rules, rng) or "[]").encode()
        for cut in sorted(rng.sample(range(len(sentence) + 1), min(4, len(sentence) + 1))):
            checked += assert_mask_equals_brute_force(compiled, sentence[:cut])
    assert checked >= 15


@pytest.mark.parametrize("text, message, line, column", [
    ('root ::= "a"\nroot ::= "b"\n', "defined twice", 2, 1),
    ('root ::= "a" item\n', "undefined rule 'item'", 1, 14),
    ('root ::= "abc\n', "line break inside a string", 1, 14),
    ('root ::= [a-\n', "line break inside a character class", 1, 13),
    ('root ::= "\\q"\n', "unknown escape", 1, 11),
    ('root ::= "\\x4"\n', "hex digits", 1, 11),
    ('root ::= [z-a]\n', "backwards", 1, 10),
    ('root ::= "a"{3,1}\n', "below the minimum", 1, 13),
    ('root ::= ("a" | "b"\n', "expected ')'", 1, 10),
    ('root "a"\n', "expected '::='", 1, 6),
    ('item ::= "a"\n', "no 'root' rule", None, None),
    ('root ::= "a" ) "b"\n', "expected a newline", 1, 14),
    # a start rule that never ends names the user's rules, not the IR's ('g:root')
    ('root ::= root "x"\n', "rule 'root' derives no text: every alternative of 'root' needs 'root' again", 1, 1),
    ('root ::= "x" a\na ::= b | "z" b\nb ::= "y" a\n', "of the rules 'root', 'a', 'b' needs one of them again",
     1, 1),
])
def test_bad_grammars_raise_with_line_and_column(text, message, line, column):
    with pytest.raises(GbnfError, match=re.escape(message)) as info:
        ga.Grammar.from_gbnf(text)
    assert isinstance(info.value, ga.GrammarError)
    assert (info.value.line, info.value.column) == (line, column)


def test_a_grammar_lalr_cannot_read_loads_generalized():
    # p is recursive, so not rewritten as an automaton: "aaa" needs to know where the middle is;
    # the generalized LR parser reads it as it is (also beside a regular rule, rewritten to no avail)
    for text in ('root ::= p\np ::= "a" p "a" | "a"\n', 'root ::= p x\np ::= "a" p "a" | "a"\nx ::= "b" | [b-c]\n'):
        grammar = ga.Grammar.from_gbnf(text)
        assert grammar.generalized and build_parser_tables(grammar).table.forks > 0
        parser = IncrementalParser(build_parser_tables(grammar))
        rules = parse_gbnf(text)
        for n in range(12):
            for tail in ("", "b", "c"):
                sample = "a" * n + tail
                assert parser.accepts(sample.encode()) == earley_accepts(rules, sample), (text, sample)


def test_overlapping_alternatives_of_a_regular_rule_are_read_from_its_automaton():
    # "a" is both x and y: LALR(1) cannot choose, but the language {a, b, c} is regular
    grammar = ga.Grammar.from_gbnf('root ::= x | y\nx ::= "a"\ny ::= [a-c]\n')
    parser = IncrementalParser(build_parser_tables(grammar))
    assert [parser.accepts(t) for t in (b"a", b"b", b"c", b"d", b"", b"ab")] == [True, True, True, False, False, False]


def test_hostile_gbnf_ends_with_a_clear_error():
    with pytest.raises(GbnfError, match="nests too deeply"):
        ga.Grammar.from_gbnf("root ::= " + "(" * 3000 + '"a"' + ")" * 3000 + "\n")
    with pytest.raises(ga.LimitExceeded, match="max_grammar_chars"):
        ga.Grammar.from_gbnf("root ::= " + " ".join(['"a"'] * 20_000) + "\n")
    small = ga.CompileLimits(max_grammar_chars=10)
    with pytest.raises(ga.LimitExceeded, match="max_grammar_chars=10"):
        ga.Grammar.from_gbnf('root ::= "abcdef"\n', limits=small)
    # a long chain of overlapping rules: the rewrite gives up (recursion), the generalized parser reads them
    chain = "".join(f"r{i} ::= r{i + 1} | [a-c]\n" for i in range(1500)).replace("r0 ::=", "root ::=") + 'r1500 ::= "a"\n'
    parser = IncrementalParser(build_parser_tables(ga.Grammar.from_gbnf(chain)))
    assert [parser.accepts(t) for t in (b"a", b"b", b"c", b"d", b"", b"ab")] == [True, True, True, False, False, False]
