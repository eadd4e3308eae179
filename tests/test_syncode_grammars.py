"""SynCode's Lark grammars (python.lark, sql.lark) and lark's examples/grammars/verilog.lark
(tests/data/lark_grammars, see PROVENANCE.md) load and mean what lark's LALR parser means.

Each needs a regex construct read in issue 34: SynCode's python ``_NL`` has lazy repeats and
a lookbehind inside a repeat, sql's ``ESCAPED_STRING`` is ``"(?:[^"\\]|\\.)*?"`` (a lazy
repeat of a body one or two characters wide), and verilog's ``MULTILINE_COMMENT`` has a
lookahead inside a repeat. Hand-written texts of each language, and random damaged copies,
get the same verdict from gramalign's parser as from ``lark.Lark(text, parser="lalr")``
(python.lark declares ``_INDENT``/``_DEDENT``: it is read with gramalign's
``Indentation(newline="_NL")`` and lark gets the indenter of ``oracles.python_layout`` for
that terminal, as SynCode itself gives lark an indenter).
"""

from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path

import lark
import pytest
from lark.indenter import DedentError

import gramalign as ga
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from oracles.python_layout import GramalignIndenter
from support.grammar_walks import lark_accepts

DATA = Path(__file__).parent / "data" / "lark_grammars"
FILES = {"python": DATA / "syncode" / "python.lark", "sql": DATA / "syncode" / "sql.lark",
         "verilog": DATA / "lark" / "verilog.lark"}
LAYOUT = ga.Indentation(newline="_NL")
DAMAGED_PER_SAMPLE = 500


def grammar_text(name: str) -> str:
    return FILES[name].read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def gramalign_parser(name: str) -> IncrementalParser:
    if name == "python":
        grammar = ga.Grammar.from_lark(grammar_text(name), indentation=LAYOUT, always_lexed=("_NL",))
    else:
        grammar = ga.Grammar.from_lark(grammar_text(name))
    return IncrementalParser(build_parser_tables(grammar))


class SyncodeIndenter(GramalignIndenter):
    """gramalign's layout rules (oracles.python_layout) for SynCode's newline terminal."""

    NL_type = "_NL"
    always_accept = ("_NL",)


@lru_cache(maxsize=None)
def lark_parser(name: str) -> lark.Lark:
    if name == "python":
        return lark.Lark(grammar_text(name), parser="lalr", postlex=SyncodeIndenter())
    return lark.Lark(grammar_text(name), parser="lalr")


def lark_verdict(name: str, text: str) -> bool:
    parser = lark_parser(name)
    if name != "python":
        return lark_accepts(parser, text)
    indenter = parser.options.postlex
    indenter.text_length = len(text)
    for supply in (False, True):  # a missing final newline is supplied (docs/grammars.md)
        indenter.supply_newline = supply
        try:
            parser.parse(text)
            return True
        except (lark.exceptions.LarkError, DedentError):
            continue
    return False


SAMPLES = {
    "python": [
        "x = 1\n",
        "import os\nfrom a.b import (c, d as e)\n",
        "def f(a, b=2, *args, **kw):\n    '''doc'''\n    return a + b  # sum\n",
        'class C(object):\n    """Doc\n    string."""\n\n    def m(self):\n        pass\n',
        "if x:\n    y = [1, 2,\n         3]\nelif z:\n    pass\nelse:\n    w = {'a': 1}\n",
        "for i in range(10):\n    if i % 2:\n        continue\n    print(i, end='')\n",
        "while True:\n    try:\n        break\n    except ValueError as e:\n        raise\n    finally:\n        x = 0\n",
        "s = 'ab' + \"c'd\" + r'\\n'\nt = b'x' f'y' '''x'''\n",
        "# comment\n\n\nx = lambda a: a ** 2\n",
        "def g():\n    \"\"\"a \"quoted\" doc\"\"\"\n    yield from h()\n",
        "with open(p) as f, g() as h:\n    data = f.read()[1:-1]\n",
        "x = (1 +\n     2)\nassert x, 'no'\n",
        "@dec\ndef f():\n    return\n",
        "a = 1; b = 2\nc = a if b else not a\n",
    ],
    "sql": [
        "SELECT a FROM t",
        "select a, b as x from t where a = 1 and b > 2.5;",
        'SELECT "col" FROM "tab" WHERE c LIKE \'abc\'',
        'SELECT "a\\"b", "c\\\\" FROM t',
        "SELECT COUNT(DISTINCT a) FROM t GROUP BY b HAVING a > 3 ORDER BY a DESC LIMIT 10 OFFSET 5",
        "SELECT a FROM t UNION ALL SELECT b FROM u",
        "-- a comment\nSELECT DISTINCT t.a FROM t INNER JOIN u ON t.a = u.b",
        "SELECT CAST(a AS integer) FROM t WHERE a IN (1, 2, 3) AND b IS NOT NULL",
        "SELECT CASE WHEN a = 1 THEN 2 ELSE 3 END FROM t",
        'SELECT "x" FROM "y" WHERE "z" = \'w\'',
        "SELECT SUM(a) OVER (PARTITION BY b ORDER BY c) FROM t",
    ],
    "verilog": [
        "module m(a, b, c);\n  input a, b;\n  output c;\n  assign c = a & b;\nendmodule\n",
        "module m;\n  wire w1, w2; // wires\n  assign w1 = ~w2 | (w1 ^ w2), w2 = 1'b0;\nendmodule\n",
        "/* a comment */ module top(x, y);\n  input x;\n  output y;\n  and g1(y, x, x);\nendmodule",
        "module m(a);\n  /* multi\n     line ** comment * with stars */\n  input a;\nendmodule\n",
        "module m(a);\n  /***/ input a; /* * / */\n  output b;\n  assign b = a ? 1'b1 : 1'bx;\nendmodule\n",
        "module \\esc$id (a);\n  input a;\n  sub u1(.p(a), .q(a ~^ a));\nendmodule\n",
    ],
}
# Texts both refuse, and would accept if a terminal were read greedily: a lazy string or
# docstring running on to a later quote, a comment to a later "*/".
REFUSED = {
    "python": ['x = "a" + 1"\n', 'x = 1\n"""a""" + """b"""\n', "x = '''a''' 1 '''\n"],
    "sql": ['SELECT "a" FROM t WHERE "b', 'SELECT "a\\" FROM t'],
    "verilog": ["module m; /* a */ input a; */ endmodule", "module m; /* a **/ b */ endmodule"],
}
INSERTS = {
    "python": ['"', "'", "\\", '"""', "'''", "\n", " ", "    ", "\t", "#", "(", ")", ":", "\r\n", "x", "b", "\\\n"],
    "sql": ['"', "\\", "'", " ", "\n", "--", "(", ")", ",", "*", "a", "SELECT ", ";"],
    "verilog": ["*/", "/*", "*", "/", "//", "\n", " ", "\\", '"', ";", "(", ")", "a"],
}


def damaged(text: str, rng: random.Random, inserts: list[str]) -> str:
    for _ in range(rng.randint(1, 2)):
        at = rng.randrange(len(text) + 1)
        kind = rng.randrange(3)
        if kind == 0:
            text = text[:at] + text[at + rng.randint(1, 3):]
        else:
            text = text[:at] + rng.choice(inserts) + text[at:]
    return text


@pytest.mark.parametrize("name", sorted(FILES))
def test_the_grammars_load_and_lark_builds_them(name):
    gramalign_parser(name)
    lark_parser(name)
    lark.Lark(grammar_text(name), parser="lalr")  # the oracle, without the indenter too


@pytest.mark.parametrize("name", sorted(FILES))
def test_the_samples_are_accepted_by_both(name):
    parser = gramalign_parser(name)
    for text in SAMPLES[name]:
        assert lark_verdict(name, text), text
        assert parser.accepts(text.encode("utf-8")), text


@pytest.mark.parametrize("name", sorted(FILES))
def test_texts_a_greedy_reading_would_accept_are_refused_by_both(name):
    parser = gramalign_parser(name)
    for text in REFUSED[name]:
        assert not lark_verdict(name, text), text
        assert not parser.accepts(text.encode("utf-8")), text


@pytest.mark.parametrize("name", sorted(FILES))
def test_verdicts_agree_with_lark_on_damaged_texts(name):
    parser = gramalign_parser(name)
    rng = random.Random(name)
    rejected = 0
    for text in SAMPLES[name]:
        for _ in range(DAMAGED_PER_SAMPLE):
            broken = damaged(text, rng, INSERTS[name])
            expected = lark_verdict(name, broken)
            assert parser.accepts(broken.encode("utf-8")) == expected, broken
            rejected += not expected
    assert rejected > DAMAGED_PER_SAMPLE * len(SAMPLES[name]) // 5  # the damage is real often enough


@pytest.mark.parametrize("text", [
    'x = 1\n"""a b"""y = 2\n',  # a newline lexeme that ends with a docstring: its column is 0
    'x = 1\n"""a#b"""y = 2\n',
    'if x:\n    y = 1\n    """a b"""z = 2\n',
    'if x:\n    y = 1\n  """a b"""z = 2\n',  # column 2 matches no open block
    'def f():\n    return 1\n    """a b"""',
])
def test_the_column_of_a_newline_lexeme_is_the_blanks_after_its_last_line_break(text):
    """SynCode's _NL takes comments and docstrings: the column is the spaces and tabs right
    after the last line break (docs/grammars.md), whatever follows them in the lexeme."""
    assert gramalign_parser("python").accepts(text.encode("utf-8")) == lark_verdict("python", text)
