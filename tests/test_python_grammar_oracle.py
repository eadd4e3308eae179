"""The shipped Python grammar and its lark oracle (oracles/python_layout.py) against Python itself:
hand-written snippets (layout above all) get CPython's verdict, standard-library files are
accepted and lexed into Python's own tokens, lark's contextual lexing is longest-match
lexing, and the random programs are sentences of the grammar.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings

import pytest
from lark.lexer import BasicLexer, PatternStr

from oracles.python_layout import (
                                   grammar_text,
                                   oracle_accepts,
                                   python_lark_parser,
                                   python_random_strings,
                                   stdlib_candidate_files,
                                   stdlib_python_files,
                                   )
from support.lark_terminals import lexeme_dfa


def python_accepts(text: str) -> bool:
    """CPython's verdict: ``compile`` (which also runs the checks after parsing)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<snippet>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def test_grammar_builds_strict_lalr_and_documents_itself():
    parser = python_lark_parser()  # strict=True: a conflict or terminal collision raises
    assert all(t.priority == 0 for t in parser.terminals)
    for t in parser.terminals:  # every regex is in gramalign's dialect
        lexeme_dfa(t.pattern.to_regexp())
    names = {t.name for t in parser.terminals}
    assert {"LPAR", "RPAR", "LSQB", "RSQB", "LBRACE", "RBRACE", "_NEWLINE", "NAME"} <= names
    header = [line for line in grammar_text().splitlines()[:80] if line.startswith("//")]
    assert any("Leaves out" in line for line in header) and any("match" in line for line in header)


VALID = [
    "x = 1\n",
    "x = 1",  # no final line break
    "x = 1\n    ",  # trailing spaces at the end
    "if x:\n    y = 2",  # a block ending the text without a line break
    "if x:\n    a = 1\n# at column 0\n        # deeper\n    b = 2\n",  # comment lines anywhere
    "x = [1,\n  2,\n        3,\n]\nf(a,\nb)\n",  # inside brackets the indentation is free
    "def f(x):\n\tif x:\n\t\treturn 1\n\treturn 2\n",  # tabs
    "class C(B, metaclass=M):\n    '''doc\n  with lines'''\n\n    @property\n"
    "    def f(self, /, a, b=1, *c, d, **e) -> int:\n"
    "        return a\n\n\n",
    "x = 1 + \\\n  2\nif x: pass\nelif y: pass\nelse: z = 3\n",
    "try:\n    pass\nexcept (A, B) as e:\n    raise X from e\nexcept:\n    pass\nelse:\n    pass\nfinally:\n    pass\n",
    "async def f():\n    async with a as b, c:\n        await b\n    return [i async for i in g() if i]\n",
    "with (open(a) as f, open(b) as g,):\n    pass\nwith (a, b) as c: pass\n",
    "print(*a, sep='')\nx[a:b, c]\ndel (a), b\nf = lambda *, x: x\na, *rest = b\n",
    "def g():\n    return *a, b\n",
    "x = {**a, 'b': 1, **c}\ny = {*a, b}\nz = (n := 10)\n",
    "from . import a\nfrom ...pkg.mod import (b as c,\n    d,)\nimport os.path as p, sys\n",
    "x = 0x_FF + 0o17 + 0b1 + 1_000.5e-3j + .5 + 5. + 00\ns = rb'\\d' b'x' B'''y'''\nt = f'{a!r}' 'u' R\"\\\"\"\n",
    "x: int\ny: list[int] = []\nz += 1, 2\n",
    "",
    "\n\n# only a comment",
    "x = 1\r\nif x:\r\n    y = '''a\r\nb'''\r\n",
]

INVALID = [
    "if x:\n    a = 1\n        b = 2\n",  # unexpected indent
    "x = 1\n  y = 2\n",  # unexpected indent
    "if x:\n    a\n  b\n",  # dedent to a column no block is at
    "if x:\npass\n",  # missing block
    "if x:\n",  # missing block at the end
    "def f():\n    return 1\n   x = 2\n",
    "x = (1,\n",  # unclosed bracket
    "x = 1)\n",
    "def f(a=1, b): pass\n",
    "f(a=1, b)\n",
    "f(**k, *a)\n",
    "lambda *: 1\n",
    "try:\n    pass\n",
    "try:\n    pass\nexcept E:\n    pass\nexcept* F:\n    pass\n",
    "x = 'a' b'b'\n",
    "x = b'\u00e9'\n",
    "x = 01\n",
    "x = 1__0\n",
    "x = '''a''''\n",
    "x := 1\n",
    "print x\n",
    "a <> b\n",
    "with (a as b), c: pass\n",
    "x = *a\n",
    "f(x for x in y, 1)\n",
    "x = 1 +\n",
    "class C(x for x in y): pass\n",
    "a = b orc\n",  # NAME is lexed everywhere, so keywords end at word boundaries
    "[x forx in y]\n",
    "if x:pass\nelse :pass\nelsex\n",
]


@pytest.mark.parametrize("text", VALID + INVALID)
def test_snippets_agree_with_python(text):
    assert oracle_accepts(text) == python_accepts(text), text


def test_documented_differences_from_python():
    """Where the layout rules (docs/grammars.md) and the grammar's lexing (its opening
    comment) knowingly differ from CPython."""
    assert oracle_accepts("  x = 1\n") and not python_accepts("  x = 1\n")  # first line not checked
    mixed = "if x:\n\ty = 1\n        y = 2\n"  # a tab and 8 spaces: the same column
    assert oracle_accepts(mixed) and not python_accepts(mixed)  # no TabError
    assert oracle_accepts("x.if = 1\n") and not python_accepts("x.if = 1\n")


def test_random_programs():
    programs = python_random_strings(60, seed=5)
    assert programs == python_random_strings(60, seed=5)
    assert len(set(programs)) == 60
    assert all(20 <= len(p.encode("utf-8")) <= 400 and oracle_accepts(p) for p in programs)
    assert sum("\n    " in p or "\n  " in p or "\n\t" in p for p in programs) >= 10  # blocks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = 0
        for p in programs:
            try:
                ast.parse(p)
                parsed += 1
            except SyntaxError:  # mostly targets: the grammar allows any expression there
                pass
    assert parsed >= 15


def test_stdlib_files_are_accepted():
    candidates = stdlib_candidate_files(60)
    assert len(candidates) == 60
    accepted = [path for path in candidates if oracle_accepts(path.read_text(encoding="utf-8"))]
    assert len(accepted) >= 0.95 * len(candidates), sorted(set(candidates) - set(accepted))
    assert stdlib_python_files(10) == accepted[:10]


# --------------------------------------------------------------------------- lexing


class _LexemeRecorder:
    """Records, for every lexeme lark's contextual lexer produces, the terminals its state's
    lexer could choose from, where it started scanning, and the token (None at the end)."""

    def __init__(self, monkeypatch):
        self.records: list[tuple[frozenset, int, object]] = []
        original = BasicLexer.next_token
        records = self.records

        def next_token(lexer, lex_state, parser_state=None):
            start = lex_state.line_ctr.char_pos
            candidates = frozenset(t.name for t in lexer.terminals)
            try:
                token = original(lexer, lex_state, parser_state)
            except EOFError:
                records.append((candidates, start, None))
                raise
            records.append((candidates, start, token))
            return token

        monkeypatch.setattr(BasicLexer, "next_token", next_token)


def _lexeme_texts(text: str, monkeypatch) -> list[str]:
    recorder = _LexemeRecorder(monkeypatch)
    assert oracle_accepts(text)
    return [str(token) for _, _, token in recorder.records if token is not None and token.type != "_NEWLINE"]


def test_lexemes_are_pythons_tokens(monkeypatch):
    skip = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT,
            tokenize.ENCODING, tokenize.ENDMARKER}
    for path in stdlib_python_files(12):
        text = path.read_text(encoding="utf-8")
        python = [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in skip]
        assert _lexeme_texts(text, monkeypatch) == python, path


LEXING_EDGE_CASES = [
    "x = 3.14\n",
    "x = rb'a' Rb\"b\" br'''c''' BR\"\"\"d\"\"\"\ny = f'{x}' fr'e' u'f' r\"\\\"\" '''a''' \"\"\"b\"\"\"\n",
    "x = '''a\"\"\"b''' \"\"\"''\\\"\"\"\" 'it\\'s'\n",
    "x = 1.e5j + 0x1F + .5 + 5. + 1_0 + 0o7 + 0b1 + 00 + 1e-5 + 1J + 3.14 + 2.5e-3j + 0e0\n",
    "y = x.real + 1 .real + 1..real + x[1:.5]\n",
    "x **= 2; y //= 3; z >>= 1; w <<= 2; v @= u; t = a != b <= c >= d == e\n",
    "def f() -> int: ...\nf = lambda: (x := 1)\na[x:=1, ::2, :]\n",
    "from ... import a\nfrom .... import b\nfrom .c import d\n",
    "iffy = orc = notin = lambda_ = None_ = rb = f = 1\nx = 1 if iffy else orc\n",
    "caf\u00e9 = \u03bb = 1\nprint(caf\u00e9)\n",
]


def _longest(dfa, data: bytes, pos: int) -> int:
    table, accepting, state, best = dfa.transitions, dfa.accepting, dfa.initial, -1
    i = pos
    while state >= 0:
        if accepting[state]:
            best = i - pos
        if i == len(data):
            break
        state = int(table[state, data[i]])
        i += 1
    return best


def test_contextual_lexing_is_longest_match(monkeypatch):
    """At every lexeme lark's contextual lexer emits, the candidates of its state (the
    terminals the parser can take, the ignored ones and _NEWLINE) matched by longest match
    -- on gramalign's DFAs, ties to a string literal -- give the same lexeme; and every
    candidate regex's leftmost (re) match is its longest match."""
    parser = python_lark_parser()
    terminals = {t.name: t for t in parser.terminals}
    dfas = {name: lexeme_dfa(t.pattern.to_regexp()) for name, t in terminals.items()}
    regexes = {name: re.compile(t.pattern.to_regexp()) for name, t in terminals.items()}
    ignored = set(parser.ignore_tokens)
    texts = LEXING_EDGE_CASES + [p.read_text(encoding="utf-8") for p in stdlib_candidate_files(6)]
    texts += python_random_strings(100, seed=12)
    recorder = _LexemeRecorder(monkeypatch)
    checked = 0
    for text in texts:
        recorder.records.clear()
        assert oracle_accepts(text), text
        data = text.encode("utf-8")
        offsets = [0]
        for char in text:
            offsets.append(offsets[-1] + len(char.encode("utf-8")))
        for candidates, start, token in recorder.records:
            pos = offsets[start]
            while True:
                matches = []
                for name in candidates:
                    length = _longest(dfas[name], data, pos)
                    m = regexes[name].match(text, start)
                    re_length = len(m.group().encode("utf-8")) if m and m.group() else -1
                    assert re_length == length, (name, text[start:start + 40])
                    if length > 0:
                        matches.append((length, isinstance(terminals[name].pattern, PatternStr), name))
                if not matches:
                    assert token is None, (token, text[start:start + 40])
                    break
                best = max(m[:2] for m in matches)
                winners = [m[2] for m in matches if m[:2] == best]
                assert len(winners) == 1, (winners, text[start:start + 40])
                length, name = best[0], winners[0]
                checked += 1
                if name in ignored:
                    pos += length
                    start += len(data[pos - length:pos].decode("utf-8"))
                    continue
                assert token is not None, (name, text[start:start + 40])
                got = (token.type, token.start_pos, offsets[token.end_pos])
                assert got == (name, start, pos + length), (name, text[start:start + 40], token)
                break
    assert checked > 5_000
