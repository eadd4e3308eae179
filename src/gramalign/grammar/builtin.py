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


def load_builtin(name: str) -> Grammar:
    """A shipped grammar as a :class:`Grammar`: ``"json"``, ``"sql"`` or ``"python"``.

    Raises :class:`GrammarError` listing the available names for any other name.
    """
    _check_name(name)
    return _load(name)


@lru_cache(maxsize=None)
def _load(name: str) -> Grammar:
    return Grammar.from_lark(builtin_grammar_text(name), start=BUILTIN_GRAMMARS[name],
                             indentation=BUILTIN_LAYOUTS.get(name), always_lexed=BUILTIN_ALWAYS_LEXED.get(name, ()))
