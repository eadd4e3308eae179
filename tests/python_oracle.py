"""An independent oracle for the shipped Python grammar: lark's LALR parser with an
indentation post-lexer that implements gramalign's documented layout rules
(docs/grammars.md, "Indentation"), plus standard-library files and random programs.

The post-lexer differs from lark's ``PythonIndenter`` where gramalign follows Python
instead: a tab moves to the next multiple of 8, comment text never counts towards a
column, and the end of the text supplies a missing final newline and ignores the column
of a final newline token.
"""

from __future__ import annotations

import random
import sysconfig
from functools import lru_cache
from pathlib import Path

import lark
from lark.indenter import DedentError, Indenter

from gramalign.grammar.builtin import builtin_grammar_text

from grammar_strings import _Generator

__all__ = ["oracle_accepts", "python_lark_parser", "python_random_strings", "stdlib_python_files"]

TAB_SIZE = 8


def newline_column(text: str) -> int:
    """The column of a newline lexeme: spaces and tabs after its last line break, up to a ``#``."""
    column = 0
    for char in text.rsplit("\n", 1)[-1]:
        if char == " ":
            column += 1
        elif char == "\t":
            column = (column // TAB_SIZE + 1) * TAB_SIZE
        elif char == "#":
            break
    return column


class GramalignIndenter(Indenter):
    NL_type = "_NEWLINE"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = TAB_SIZE
    supply_newline = False  # set per parse: add a newline at the end if the text lacks one

    text_length = 0  # set per parse: a newline token ending there is the final one

    def handle_NL(self, token):
        if self.paren_level > 0:
            return
        yield token
        if token.end_pos == self.text_length:
            return  # a final newline: its column does not matter
        indent = newline_column(token)
        if indent > self.indent_level[-1]:
            self.indent_level.append(indent)
            yield lark.Token.new_borrow_pos(self.INDENT_type, "", token)
        else:
            while indent < self.indent_level[-1]:
                self.indent_level.pop()
                yield lark.Token.new_borrow_pos(self.DEDENT_type, "", token)
            if indent != self.indent_level[-1]:
                raise DedentError(f"dedent to column {indent}, open blocks at {self.indent_level}")

    def _process(self, stream):
        # No look-ahead: lark's contextual lexer reads the next token only once the parser
        # has taken the previous one.
        last = None
        for token in stream:
            last = token
            if token.type == self.NL_type:
                yield from self.handle_NL(token)
            else:
                yield token
            if token.type in self.OPEN_PAREN_types:
                self.paren_level += 1
            elif token.type in self.CLOSE_PAREN_types:
                self.paren_level -= 1
        if self.supply_newline and last is not None and last.type != self.NL_type and self.paren_level == 0:
            yield lark.Token(self.NL_type, "\n")
        while len(self.indent_level) > 1:
            self.indent_level.pop()
            yield lark.Token(self.DEDENT_type, "")


@lru_cache(maxsize=None)
def python_lark_parser() -> lark.Lark:
    return lark.Lark(builtin_grammar_text("python"), parser="lalr", lexer="contextual", start="file_input",
                     postlex=GramalignIndenter())


def oracle_accepts(text: str) -> bool:
    """Is ``text`` a Python file under gramalign's grammar, by lark's parser?"""
    parser = python_lark_parser()
    parser.options.postlex.text_length = len(text)
    for supply in (False, True):
        parser.options.postlex.supply_newline = supply
        try:
            parser.parse(text)
            return True
        except (lark.exceptions.LarkError, DedentError, AssertionError):
            continue
    return False


def stdlib_python_files(count: int) -> list[Path]:
    """The first ``count`` standard-library modules (sorted by path, top level only, 1-40 KB)
    that the oracle accepts."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found = []
    for path in sorted(stdlib.glob("*.py")):
        if len(found) >= count:
            break
        if not 1_000 <= path.stat().st_size <= 40_000:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if oracle_accepts(text):
            found.append(path)
    return found


class _PythonGenerator(_Generator):
    """Random programs: derivations of the grammar, with _NEWLINE, _INDENT and _DEDENT
    rendered as a line break and the indentation of the next line (4 spaces per block)."""

    def __init__(self):
        super().__init__(builtin_grammar_text("python"), "file_input")
        self.ignore = []  # glue is plain spaces only: comments and tabs would move columns

    def accepts(self, text: str) -> bool:
        return oracle_accepts(text)

    def one(self, rng: random.Random, max_depth: int) -> str | None:
        budget = rng.choices([10, 30, 80], [0.3, 0.4, 0.3])[0]
        names = self.derive(rng, max_depth, budget, rng.choice([0.15, 0.3]), rng.choice([0.0, 0.5]))
        mood = {"unicode": rng.choice([0.0, 0.05]), "comments": 0.0}
        out, level = [], 0
        for k, name in enumerate(names):
            if name == "_NEWLINE":
                depth = level
                for later in names[k + 1:]:
                    if later == "_INDENT":
                        depth += 1
                    elif later == "_DEDENT":
                        depth -= 1
                    else:
                        break
                out.append("\n" + "    " * depth)
            elif name == "_INDENT":
                level += 1
            elif name == "_DEDENT":
                level -= 1
            else:
                piece = self.spell(rng, name, mood)
                if out and not out[-1].endswith((" ", "\n")) and not out[-1].startswith("\n"):
                    out.append(" ")
                out.append(piece)
        text = "".join(out)
        return text if self.accepts(text) else None


@lru_cache(maxsize=None)
def _python_generator() -> _PythonGenerator:
    return _PythonGenerator()


def python_random_strings(count: int, seed: int) -> list[str]:
    """``count`` distinct random programs the oracle accepts (deterministic per seed)."""
    generator = _python_generator()
    rng = random.Random(seed)
    found: list[str] = []
    for _ in range(200 * count):
        if len(found) >= count:
            break
        text = generator.one(rng, 30)
        if text and text not in found:
            found.append(text)
    if len(found) < count:
        raise RuntimeError(f"only {len(found)} of {count} random Python programs were accepted")
    return found


if __name__ == "__main__":
    files = stdlib_python_files(300)
    print(len(files), "stdlib files accepted")
    for text in python_random_strings(5, seed=1):
        print("----\n" + text)
