"""The grammars shipped with gramalign (``grammars/*.lark`` beside this module).

``load_builtin("json")`` is RFC 8259 JSON text (start rule ``value``); ``load_builtin("sql")``
is a SQLite dialect (start rule ``start``); ``load_builtin("python")`` is Python 3 source
(start rule ``file_input``, with the :class:`Indentation` layout). Each file's opening
comment says what it covers and what it leaves out. They are written so that lark's
contextual lexer and gramalign's longest-match lexing agree on every string, which the
tests check.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from ..errors import GrammarError
from .grammar import Grammar, Indentation

__all__ = ["BUILTIN_ALWAYS_LEXED", "BUILTIN_GRAMMARS", "BUILTIN_LAYOUTS", "builtin_grammar_text", "load_builtin"]

BUILTIN_GRAMMARS: dict[str, str] = {"json": "value", "sql": "start", "python": "file_input"}
"""Name of each shipped grammar -> its start rule."""

BUILTIN_LAYOUTS: dict[str, Indentation] = {"python": Indentation()}
"""Shipped grammars laid out by indentation -> their layout."""

BUILTIN_ALWAYS_LEXED: dict[str, tuple[str, ...]] = {"python": ("NAME",)}
"""Terminals a shipped grammar's lexer tries in every state (so Python keywords end at word
boundaries, as in Python's tokenizer)."""


def _check_name(name: str) -> None:
    if name not in BUILTIN_GRAMMARS:
        available = ", ".join(repr(n) for n in sorted(BUILTIN_GRAMMARS))
        raise GrammarError(f"unknown builtin grammar {name!r}; available: {available}")


def builtin_grammar_text(name: str) -> str:
    """The Lark source of a shipped grammar, e.g. to hand to ``lark.Lark(..., parser="lalr")``
    with ``start=BUILTIN_GRAMMARS[name]``."""
    _check_name(name)
    return (resources.files("gramalign.grammar") / "grammars" / f"{name}.lark").read_text(encoding="utf-8")


def load_builtin(name: str, *, start: "str | None" = None, comments: bool = True) -> Grammar:
    """A shipped grammar as a :class:`Grammar`: ``"json"``, ``"sql"`` or ``"python"``.

    ``start`` picks another rule of the grammar as the start (e.g. ``"select_stmt"`` for one
    SQL query); ``comments=False`` drops the comments the grammar ignores between tokens (SQL's
    ``--`` and ``/* */``), so output has none. Raises :class:`GrammarError` listing the
    available names for any other name, and for a start rule the grammar does not define.
    """
    _check_name(name)
    return _load(name, start or BUILTIN_GRAMMARS[name], comments)


@lru_cache(maxsize=None)
def _load(name: str, start: str, comments: bool) -> Grammar:
    text = builtin_grammar_text(name)
    if not comments:
        if name == "python":
            raise GrammarError("comments=False is not available for the python grammar: comment lines are part "
                               "of its newline terminal")
        text = "\n".join(line for line in text.splitlines() if not _ignores_comment(line)) + "\n"
    return Grammar.from_lark(text, start=start, indentation=BUILTIN_LAYOUTS.get(name),
                             always_lexed=BUILTIN_ALWAYS_LEXED.get(name, ()))


def _ignores_comment(line: str) -> bool:
    words = line.split()
    return len(words) == 2 and words[0] == "%ignore" and "COMMENT" in words[1]
