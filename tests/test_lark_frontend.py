"""Grammar.from_lark: the IR means what lark means, and bad grammars fail clearly."""

from __future__ import annotations

import random

import lark
import pytest

import gramalign as ga
from gramalign.grammar.lalr import build_parse_table, parse_terminals
from gramalign.grammar.lark_frontend import LarkGrammarError

EBNF = r'''
start: item+ ("|" item*)? [";"]
?item: NAME -> named | list | "!" atom
!atom: "x" | "y"
list: "(" _sep{item, ","} ")"
_sep{x, sep}: x (sep x)*
NAME.2: ("a".."c")+
%import common.WS
%ignore WS
'''


def lark_token_sequences(parser: lark.Lark, rng: random.Random, count: int) -> list[list[str]]:
    """Random terminal-name sequences: lexed sentences, and random corruptions of them."""
    names = [t.name for t in parser.terminals if t.name not in parser.ignore_tokens]
    base = [[tok.type for tok in parser.lex(text)] for text in
            ["a b (a, !x, (c)) ;", "abc | ", "(a)", "!y !x a", "a | b c;"]]
    out = []
    for _ in range(count):
        seq = list(rng.choice(base))
        for _ in range(rng.randint(0, 2)):
            position = rng.randrange(len(seq) + 1)
            if rng.random() < 0.5 and seq:
                del seq[min(position, len(seq) - 1)]
            else:
                seq.insert(position, rng.choice(names))
        out.append(seq)
    return out


def lark_accepts_terminals(parser: lark.Lark, names: list[str]) -> bool:
    interactive = parser.parse_interactive("")
    try:
        for name in names:
            interactive.feed_token(lark.Token(name, "?"))
        interactive.feed_eof()
    except lark.exceptions.UnexpectedInput:
        return False
    return True


def test_parse_table_agrees_with_lark_on_terminal_sequences():
    grammar = ga.Grammar.from_lark(EBNF)
    oracle = lark.Lark(EBNF, parser="lalr")
    table = build_parse_table(grammar)
    verdicts = set()
    for seq in lark_token_sequences(oracle, random.Random(0), 300):
        expected = lark_accepts_terminals(oracle, seq)
        assert parse_terminals(table, seq) == expected, seq
        verdicts.add(expected)
    assert verdicts == {True, False}


def test_ir_keeps_lark_terminals_priorities_and_ignores():
    grammar = ga.Grammar.from_lark(EBNF)
    by_name = {t.name: t for t in grammar.terminals}
    assert by_name["NAME"].priority == 2 and not by_name["NAME"].literal
    assert by_name["NAME"].dfa.matches(b"abca") and not by_name["NAME"].dfa.matches(b"abd")
    assert by_name["LPAR"].literal and by_name["LPAR"].dfa.matches(b"(")
    assert grammar.ignore == ("WS",)
    assert "start" in {r.name for r in grammar.rules}


def test_case_insensitive_literals_become_case_insensitive_terminals():
    grammar = ga.Grammar.from_lark('start: "select"i NAME\nNAME: /[a-z]+/\n%ignore " "')
    select = next(t for t in grammar.terminals if t.name == "SELECT")
    assert select.literal and select.dfa.matches(b"SeLeCt") and not select.dfa.matches(b"selec")


@pytest.mark.parametrize("text, message, line", [
    ('start: "a" (\nX: "x"', "Unclosed parenthesis", 1),
    ("start: foo\n", "foo", 1),
    ("start: X\n%declare X\n", "%declare", 2),
    ("start: X\nX: /a*/\n", "empty string", 2),
    ('start: a\na: "x" a\n', "language is empty", 1),
    ("start: X\nX: /a(?=b)/\n", "lookahead", 2),
    ('start: a | b\na: "x"\nb: "x"\n', "Reduce/Reduce", None),
])
def test_bad_grammars_raise_clear_errors(text, message, line):
    with pytest.raises(ga.GrammarError, match=message) as info:
        ga.Grammar.from_lark(text)
    if line is not None:
        assert isinstance(info.value, LarkGrammarError) and info.value.line == line


def test_missing_start_rule():
    with pytest.raises(ga.GrammarError, match="start rule 'begin'"):
        ga.Grammar.from_lark('start: "a"', start="begin")


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


def gramalign_accepts(grammar: ga.Grammar, text: str) -> bool:
    from gramalign.grammar.parser import IncrementalParser, build_parser_tables

    return IncrementalParser(build_parser_tables(grammar)).accepts(text.encode("utf-8"))


def test_rule_priorities_make_lark_grammars_load_with_larks_language():
    # Go-style: before "(", a name may be an operand (a call) or a type (a conversion);
    # lark settles that reduce/reduce conflict by the rules' priorities
    text = r'''
start: stmt+
stmt: expr ";"
?expr: call | conversion | operand
call: operand "(" NAME ")"
conversion: type "(" NAME ")"
operand.2: NAME
type: NAME | "[" "]" type
NAME: /[a-z]+/
%ignore " "
'''
    oracle = lark.Lark(text, parser="lalr")
    grammar = ga.Grammar.from_lark(text)
    rng = random.Random(3)
    pieces = ["f", "(", ")", "x", ";", "[", "]", " "]
    verdicts = set()
    for sample in ["f(x);", "[]f(x);", "f(x); []g(y);", "f(x)", "(x);"] + [
            "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(400)]:
        expected = lark_accepts(oracle, sample)
        assert gramalign_accepts(grammar, sample) == expected, sample
        verdicts.add(expected)
    assert verdicts == {True, False}
