"""An independent oracle for the shipped Python grammar (``grammars/python.lark``): lark's
LALR parser with an indentation post-lexer that implements gramalign's documented layout
rules (docs/grammars.md, "Indentation"); standard-library files it accepts; and random
programs derived from the grammar.

``GramalignIndenter`` differs from lark's ``PythonIndenter`` where gramalign follows Python:

a) The column of a ``_NEWLINE`` lexeme is the width of the spaces and tabs after its *last*
   line break, up to a ``#`` (comment text never counts); a space adds 1, a tab moves to the
   next multiple of 8.
b) At the end of the text (brackets balanced): a ``_NEWLINE`` lexeme that ends exactly at
   the end of the text is passed on but its column is ignored, and then every open block is
   closed. If the text ends with anything else, it is accepted when either closing the open
   blocks, or a ``_NEWLINE`` followed by closing them, parses (Python's tokenizer supplies a
   missing final newline). A newline lexeme followed by ignored text (a line continuation,
   a form feed) is not the last lexeme: its column counts, as in gramalign.
c) Inside brackets, ``_NEWLINE`` lexemes are dropped (as lark does).
"""

from __future__ import annotations

import ast
import random
import sysconfig
import warnings
from functools import lru_cache
from pathlib import Path

import lark
from lark.indenter import DedentError, Indenter

from gramalign.grammar.builtin import builtin_grammar_text

from support.grammar_strings import bnf_alternatives, min_heights

__all__ = ["GramalignIndenter", "grammar_text", "oracle_accepts", "python_lark_parser", "python_random_strings",
           "stdlib_candidate_files", "stdlib_python_files", "newline_column"]

TAB_SIZE = 8


def grammar_text() -> str:
    """The shipped grammar's Lark source."""
    return builtin_grammar_text("python")


def newline_column(lexeme: str) -> int:
    """Column of a newline lexeme: spaces and tabs after its last line break, up to a ``#``."""
    column = 0
    for char in lexeme.rsplit("\n", 1)[-1]:
        if char == " ":
            column += 1
        elif char == "\t":
            column = (column // TAB_SIZE + 1) * TAB_SIZE
        else:  # '#': the rest is comment text
            break
    return column


class GramalignIndenter(Indenter):
    NL_type = "_NEWLINE"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = TAB_SIZE
    always_accept = ("_NEWLINE", "NAME")  # as Grammar.builtin("python").always_lexed

    # Set by oracle_accepts before each parse.
    text_length = 0  # a newline lexeme ending here is the last lexeme of the text
    supply_newline = False  # feed a _NEWLINE at the end when the last lexeme is not one

    def handle_NL(self, token):
        if self.paren_level > 0:
            return
        yield token
        if token.end_pos == self.text_length:
            return  # the final newline lexeme: its column does not matter
        column = newline_column(token)
        if column > self.indent_level[-1]:
            self.indent_level.append(column)
            yield lark.Token.new_borrow_pos(self.INDENT_type, "", token)
            return
        while column < self.indent_level[-1]:
            self.indent_level.pop()
            yield lark.Token.new_borrow_pos(self.DEDENT_type, "", token)
        if column != self.indent_level[-1]:
            raise DedentError(f"unindent to column {column} matches no open block {self.indent_level}")

    def _process(self, stream):
        # No look-ahead: lark's contextual lexer must read each lexeme in the parser state
        # left by the previous one (and its indents / dedents).
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
                self.paren_level = max(0, self.paren_level - 1)
        if self.paren_level:
            return  # unbalanced: the parser rejects the missing closing bracket
        if self.supply_newline:
            if last is None or last.type == self.NL_type:
                raise DedentError("no newline to supply")  # that case is tried without one
            yield lark.Token(self.NL_type, "\n")
        while len(self.indent_level) > 1:
            self.indent_level.pop()
            yield lark.Token(self.DEDENT_type, "")


@lru_cache(maxsize=None)
def python_lark_parser() -> lark.Lark:
    """lark's LALR parser for the shipped grammar, with :class:`GramalignIndenter` (strict:
    building it fails on any shift/reduce conflict or terminal collision)."""
    return lark.Lark(grammar_text(), parser="lalr", lexer="contextual", start="file_input",
                     postlex=GramalignIndenter(), strict=True)


def oracle_accepts(text: str) -> bool:
    """Is ``text`` a complete Python file under the shipped grammar, by lark's parser?"""
    parser = python_lark_parser()
    indenter = parser.options.postlex
    indenter.text_length = len(text)
    for supply in (False, True):
        indenter.supply_newline = supply
        try:
            parser.parse(text)
            return True
        except (lark.exceptions.LarkError, DedentError):
            continue
    return False


# --------------------------------------------------------------------------- stdlib files

_SKIP_DIRS = {"site-packages", "dist-packages", "__pycache__"}


@lru_cache(maxsize=None)
def _stdlib_candidates() -> tuple[Path, ...]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found = []
    for path in sorted(stdlib.rglob("*.py")):
        parts = path.relative_to(stdlib).parts
        if any(part in _SKIP_DIRS or part.startswith("test") or part.endswith("_test") for part in parts[:-1]):
            continue
        if parts[-1].startswith("test_"):
            continue
        try:
            if not 1_000 <= path.stat().st_size <= 40_000:
                continue
        except OSError:
            continue
        found.append(path)
    return tuple(found)


@lru_cache(maxsize=None)
def _compiles(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return False
    return True


def stdlib_candidate_files(count: int) -> list[Path]:
    """The first ``count`` standard-library modules (sorted by path, 1-40 KB, outside test
    directories) that Python's ``compile`` accepts, whether or not the oracle does."""
    found = []
    for path in _stdlib_candidates():
        if len(found) >= count:
            break
        if _compiles(path):
            found.append(path)
    return found


@lru_cache(maxsize=None)
def _oracle_accepts_file(path: Path) -> bool:
    return oracle_accepts(path.read_text(encoding="utf-8"))


def stdlib_python_files(count: int) -> list[Path]:
    """Up to ``count`` standard-library modules (in path order, as stdlib_candidate_files)
    that the oracle accepts; deterministic for a given interpreter."""
    found = []
    for path in _stdlib_candidates():
        if len(found) >= count:
            break
        if _compiles(path) and _oracle_accepts_file(path):
            found.append(path)
    return found


# --------------------------------------------------------------------------- random programs

_SPELLINGS = {
    "NAME": ["x", "y", "z", "i", "n", "foo", "bar", "spam_eggs", "_private", "self", "cls", "data",
             "result", "value", "items", "__init__", "print", "match", "case", "type", "_", "café",
             "λ", "Ünïcode", "x1", "CONSTANT"],
    "NUMBER": ["0", "1", "7", "42", "1_000", "3.14", ".5", "5.", "1e10", "2.5E-3", "0x1F", "0XdeadBEEF",
               "0o17", "0b1010", "1j", "2.5j", "0_0", "00", "1_0.0_1e+1_0J", "1.e5"],
    "STRING": ['"a"', "'b'", '""', "''", "'it\\'s'", '"tab\\tnewline\\n"', "r'\\d+'", 'R"raw\\"q"',
               "u'é'", 'f"{x}"', "F'{y!r:>10}'", 'rf"{z}\\w"', '"""doc"""',
               '"""multi\nline "quoted" ""text""\n"""', "'''a\\'''b'''", '"continued \\\nline"',
               "'#not a comment'", '"😀"', "'''\n    indented\n'''"],
    "BYTES": ["b''", 'b"bytes"', "B'\\x00\\xff'", "rb'\\d'", 'Br"x"', "b'''multi\nline'''", 'bR"""q"""'],
}
_TIGHT = set(",()[]{}.:;")
_OPEN, _CLOSE = {"LPAR", "LSQB", "LBRACE"}, {"RPAR", "RSQB", "RBRACE"}


class _ProgramGenerator:
    """Random derivations of the grammar's BNF (as lark builds it), depth- and size-bounded."""

    def __init__(self):
        parser = python_lark_parser()
        self.alternatives = bnf_alternatives(parser)
        self.literals = {t.name: t.pattern.value for t in parser.terminals
                         if isinstance(t.pattern, lark.lexer.PatternStr)}
        missing = {t.name for t in parser.terminals} - set(self.literals) - set(_SPELLINGS) - {"COMMENT", "_NEWLINE"}
        if any(not name.startswith("__IGNORE") for name in missing):
            raise ValueError(f"no spellings for terminals {sorted(missing)}")
        # Rules below `test`: kept short by derive()'s `plain` pressure.
        self.expression_rules = self._reachable("test")
        self.height = min_heights(self.alternatives)

    def _reachable(self, start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for alt in self.alternatives[todo.pop()]:
                for symbol, is_term in alt:
                    if not is_term and symbol not in seen:
                        seen.add(symbol)
                        todo.append(symbol)
        return seen

    @staticmethod
    def _weight(name: str, alt) -> float:
        """Relative weight of an alternative: recursion, and the rarer prefix keywords, less
        often; a plain name as an atom more often."""
        weight = 1.0 / len(alt) if alt else 1.0
        if any(symbol == name for symbol, _ in alt):
            weight *= 0.3
        if alt and alt[0][0] in ("AWAIT", "LAMBDA", "NOT", "YIELD", "ASYNC"):
            weight *= 0.3
        if alt == (("NAME", True),):
            weight *= 4.0
        return weight

    def _alt_height(self, alt) -> int:
        return 1 + max((self.height[s] for s, is_term in alt if not is_term), default=0)

    def derive(self, rng: random.Random, max_depth: int, budget: int, plain: float) -> list[str]:
        """Terminal names of a random derivation of file_input. Beyond ``max_depth`` levels or
        ``budget`` terminals, and with probability ``plain`` inside expressions, the
        alternatives that terminate soonest are taken."""
        out: list[str] = []

        def expand(name: str, depth: int) -> None:
            alts = self.alternatives[name]
            heights = [self._alt_height(a) for a in alts]
            fitting = [a for a, h in zip(alts, heights) if depth + h <= max_depth]
            if len(out) >= budget or not fitting or (name in self.expression_rules and rng.random() < plain):
                best = min(heights)
                fitting = [a for a, h in zip(alts, heights) if h == best]
            weights = [self._weight(name, a) for a in fitting]
            alt = rng.choices(fitting, weights)[0]
            for symbol, is_term in alt:
                if is_term:
                    out.append(symbol)
                else:
                    expand(symbol, depth + 1)

        expand("file_input", 0)
        return out

    def render(self, rng: random.Random, names: list[str], tight: bool) -> str:
        unit = rng.choice(["    ", "    ", "  ", "\t"])
        comments = rng.random() < 0.3
        out: list[str] = []
        level = brackets = 0
        for k, name in enumerate(names):
            if name == "_NEWLINE":
                depth = level
                for later in names[k + 1:]:
                    if later not in ("_INDENT", "_DEDENT"):
                        break
                    depth += 1 if later == "_INDENT" else -1
                if comments and rng.random() < 0.2:
                    out.append("  # note")
                if rng.random() < 0.1:
                    out.append("\n" + unit * rng.randint(0, 3))  # a blank line, any indentation
                out.append("\n" + unit * depth)
            elif name == "_INDENT":
                level += 1
            elif name == "_DEDENT":
                level -= 1
            else:
                piece = self.literals.get(name)
                if piece is None:
                    piece = rng.choice(_SPELLINGS[name])
                if out and not out[-1].startswith("\n") and out[-1] != "  # note":
                    previous = out[-1]
                    if brackets and previous == "," and rng.random() < 0.15:
                        out.append("\n" + " " * rng.randint(0, 9))  # a line break inside brackets
                    elif not brackets and rng.random() < 0.02:
                        out.append(" \\\n" + " " * rng.randint(0, 9))  # a line continuation
                    elif not (tight and (previous[-1] in _TIGHT or piece[0] in _TIGHT)):
                        out.append(" ")
                out.append(piece)
                brackets += (name in _OPEN) - (name in _CLOSE)
        return "".join(out)

    def one(self, rng: random.Random) -> str | None:
        names = self.derive(rng, rng.choice([40, 60, 80]), rng.choice([8, 20, 40, 80]),
                            rng.choice([0.5, 0.8, 0.95]))
        if names and names[-1] == "_NEWLINE" and rng.random() < 0.2:
            names = names[:-1]  # a file without a final line break
        for tight in ((True, False) if rng.random() < 0.5 else (False,)):
            text = self.render(rng, names, tight)
            if oracle_accepts(text):
                return text
        return None


@lru_cache(maxsize=None)
def _program_generator() -> _ProgramGenerator:
    return _ProgramGenerator()


def python_random_strings(count: int, seed: int) -> list[str]:
    """``count`` distinct random programs (20-400 bytes) that the oracle accepts; the same
    arguments always give the same list. Derived at random from the grammar, with regex
    terminals spelled from a fixed sample, _NEWLINE rendered as a line break plus the next
    line's indentation (one unit per open block), and now and then a comment, a blank
    line, a line break inside brackets or a line continuation."""
    generator = _program_generator()
    rng = random.Random(seed)
    found: list[str] = []
    seen: set[str] = set()
    for _ in range(100 * count + 100):
        if len(found) >= count:
            return found
        text = generator.one(rng)
        if text is not None and 20 <= len(text.encode("utf-8")) <= 400 and text not in seen:
            seen.add(text)
            found.append(text)
    raise RuntimeError(f"only {len(found)} of {count} random Python programs were accepted")


def ast_parses(text: "str | bytes") -> bool:
    """CPython's parser (``ast.parse``; ``compile`` would also refuse ``await`` outside an
    async function, which is no syntax error of the grammar)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


if __name__ == "__main__":
    import time

    start = time.perf_counter()
    candidates = stdlib_candidate_files(300)
    accepted = [path for path in candidates if _oracle_accepts_file(path)]
    print(f"stdlib: {len(accepted)} of {len(candidates)} files accepted "
          f"({time.perf_counter() - start:.1f} s)")
    for path in sorted(set(candidates) - set(accepted)):
        print("  rejected:", path)
    start = time.perf_counter()
    programs = python_random_strings(200, seed=1)
    print(f"random programs: 200 in {time.perf_counter() - start:.1f} s, "
          f"{sum(map(ast_parses, programs))} also pass ast.parse")
    for text in programs[:5]:
        print("-" * 40)
        print(text)
