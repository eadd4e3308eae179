"""Exceptions shared by every layer of gramalign.

All of them derive from :class:`GramalignError`, so ``except ga.GramalignError`` catches
anything the library raises on purpose. Errors about bad user input also derive from
:class:`ValueError`.
"""

from __future__ import annotations


class GramalignError(Exception):
    """Base class of every exception gramalign raises on purpose."""


class GrammarError(GramalignError, ValueError):
    """A grammar, regex or schema is invalid or cannot be compiled."""


class RegexError(GrammarError):
    """A regular expression is invalid, unsupported, or too large.

    ``position`` is the 0-based offset into ``pattern`` where the problem starts, or None
    when the problem is not tied to one place (for example a size limit).
    """

    def __init__(self, message: str, pattern: str, position: int | None = None):
        self.message = message
        self.pattern = pattern
        self.position = position
        where = f" at position {position}" if position is not None else ""
        pointer = ""
        if position is not None:
            pointer = f"\n  {pattern}\n  {' ' * position}^"
        super().__init__(f"{message}{where} in regex {pattern!r}{pointer}")


class GrammarSourceError(GrammarError):
    """A grammar text is invalid or cannot be read exactly; ``line`` and ``column`` (1-based)
    locate the problem when known (the message starts with them)."""

    def __init__(self, message: str, line: "int | None" = None, column: "int | None" = None):
        self.line = line
        self.column = column
        where = (f"line {line}, column {column}: " if column is not None else f"line {line}: ") if line else ""
        super().__init__(f"{where}{message}")


class LarkGrammarError(GrammarSourceError):
    """A Lark grammar is invalid or cannot be read as lark reads it."""


class GbnfError(GrammarSourceError):
    """A GBNF grammar is invalid or cannot be read exactly."""


class SchemaCompileError(GrammarError):
    """A JSON Schema cannot be compiled exactly (or is invalid).

    ``pointer`` is the JSON pointer of the schema location at fault (``""`` for the root)
    and ``keyword`` the keyword there, or None when the problem is the location as a whole.
    """

    def __init__(self, message: str, pointer: str = "", keyword: "str | None" = None):
        self.message = message
        self.pointer = pointer
        self.keyword = keyword
        where = f"#{pointer}/{keyword}" if keyword else f"#{pointer}"
        super().__init__(f"{message} (at {where})")


class LimitExceeded(GrammarError):
    """Compiling went past one of its budgets (:class:`gramalign.CompileLimits`): ``limit``
    names the budget, ``value`` is its setting, ``reached`` what the input needed or had
    used when the compile stopped, and ``where`` the place (a JSON pointer as ``#/...``, a
    rule, a terminal, a compile phase) or ``""``."""

    def __init__(self, limit: str, value, reached, where: str = "", detail: str = ""):
        self.limit = limit
        self.value = value
        self.reached = reached
        self.where = where
        text = f"compile limit {limit}={value} exceeded: {reached}"
        if detail:
            text += f" ({detail})"
        if where:
            text += f", at {where}"
        super().__init__(text)


class InfillError(GramalignError, ValueError):
    """An infilling check was given input it cannot read: segments that are not bytes and
    ``ga.GAP``, token ids outside the vocabulary, a bad budget."""


class VocabularyError(GramalignError, ValueError):
    """A tokenizer cannot be turned into a Vocabulary (unknown kind, bad sizes, ...)."""


class BitmaskError(GramalignError, ValueError):
    """A token bitmask does not fit what it is applied to (shape, dtype, or logits narrower
    than the tokens it allows)."""


class TokenRejected(GramalignError, ValueError):
    """A matcher was fed a token that its grammar forbids; the matcher state is unchanged."""

    def __init__(self, token_id: int, reason: str):
        self.token_id = token_id
        self.reason = reason
        super().__init__(f"token id {token_id} rejected: {reason}")


class StringRejected(GramalignError, ValueError):
    """A matcher was fed text its grammar forbids; the matcher state is unchanged."""

    def __init__(self, text: "str | bytes", offset: int, reason: str):
        self.text = text
        self.offset = offset
        self.reason = reason
        super().__init__(f"{reason} at byte offset {offset} of {text!r}")


class ConcurrentUseError(GramalignError, RuntimeError):
    """A GrammarMatcher was used by a second thread while another thread was inside one of
    its methods. Matchers are not thread-safe: use one per sequence and thread (``fork()`` it
    to hand a copy to another thread); compiled grammars are the shared, thread-safe part."""


class ModelError(GramalignError, ValueError):
    """A language model returned something the samplers cannot use (bad shape, NaN, ...)."""


class SamplingError(GramalignError, RuntimeError):
    """Sampling cannot continue: every allowed token has probability zero under the model."""


class IncompleteGeneration(GramalignError, RuntimeError):
    """The token budget ran out before the grammar allowed the output to end; ``text`` is
    what was written so far (a prefix of a valid output, not one)."""

    def __init__(self, text: str, max_new_tokens: int):
        self.text = text
        self.max_new_tokens = max_new_tokens
        shown = text if len(text) <= 60 else text[:57] + "..."
        super().__init__(f"the output was not finished after max_new_tokens={max_new_tokens} tokens "
                         f"(raise it, or ask for shorter output): {shown!r}")


class SchemaKeywordWarning(UserWarning):
    """A JSON Schema has an unknown key that looks like a misspelled keyword (``propertes``),
    or a ``format`` gramalign does not know (``"phone"``): JSON Schema ignores either, so the
    constraint it was meant to be is not applied."""


class ParticlesExhausted(GramalignError, RuntimeError):
    """Every particle reached a dead end (all weights are zero)."""
