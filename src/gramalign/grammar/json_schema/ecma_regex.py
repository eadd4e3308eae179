"""JSON Schema ``pattern`` regexes (ECMA-262, ``u`` flag) compiled to byte DFAs.

:func:`ecma_pattern_dfa` returns a DFA accepting ``s.encode("utf-8")`` exactly when
``new RegExp(pattern, "u").test(s)`` is true: the pattern may match anywhere in ``s``.

The pipeline is a recursive-descent parser of ECMA syntax producing a small AST, a
Thompson NFA over code points whose ε-moves may carry an assertion (``^ $ \\b \\B``), and a
product of that NFA with a small context ("is this the start, was the previous character
a word character, must the next one be a word character or the end") that turns the
assertions into plain ε-moves wherever they appear. Search semantics come from wrapping
the pattern in ``[^]*`` on both sides; the anchors then test the whole string.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Union

from ...errors import RegexError
from ..automata.dfa import (
                            NFA,
                            UNICODE_SCALARS,
                            ByteDFA,
                            IntervalSet,
                            StateLimitError,
                            complement_intervals,
                            intersect_intervals,
                            intervals_from_points,
                            nfa_to_utf8_dfa,
                            normalize_intervals,
                            subtract_intervals,
                            union_intervals,
                            )

__all__ = ["ecma_pattern_dfa", "MAX_NFA_STATES"]

MAX_NFA_STATES = 100_000
"""Largest NFA a pattern may expand to; ``a{1000000}`` fails at once instead of building it."""

_WORK_LIMIT = 10_000_000
"""Bound on (DFA states) x (NFA states per DFA state), which determinisation time follows."""

# --------------------------------------------------------------------------- character sets

_DIGIT: IntervalSet = ((0x30, 0x39),)
_WORD = normalize_intervals([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
_LINE_TERMINATORS = intervals_from_points([0x0A, 0x0D, 0x2028, 0x2029])
# WhiteSpace (TAB VT FF ZWNBSP and the Zs characters) plus LineTerminator.
_SPACE = intervals_from_points(
    [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, *range(0x2000, 0x200B)]
    + [0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF]
)
_ANY = UNICODE_SCALARS
_DOT = complement_intervals(_LINE_TERMINATORS)
_CLASS_ESCAPES = {
    "d": _DIGIT,
    "D": complement_intervals(_DIGIT),
    "w": _WORD,
    "W": complement_intervals(_WORD),
    "s": _SPACE,
    "S": complement_intervals(_SPACE),
}
_CONTROL_ESCAPES = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_SYNTAX_CHARACTERS = "^$\\.*+?()[]{}|/"  # the only identity escapes allowed under the u flag
_ASCII_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

_BRACES = re.compile(r"\{([0-9]+)(?:(,)([0-9]*))?\}")
_HEX2 = re.compile(r"[0-9A-Fa-f]{2}")
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
_CODE_POINT_BRACES = re.compile(r"\{([0-9A-Fa-f]+)\}")
_PROPERTY = re.compile(r"\{([A-Za-z0-9_]+)(?:=([A-Za-z0-9_]+))?\}")
_MODIFIERS = re.compile(r"\(\?[ims]*(?:-[ims]*)?:")

# ECMA-262's table of General_Category value aliases -> unicodedata categories.
_GENERAL_CATEGORIES = [
    (("Cased_Letter", "LC"), "Lu Ll Lt"),
    (("Close_Punctuation", "Pe"), "Pe"),
    (("Connector_Punctuation", "Pc"), "Pc"),
    (("Control", "Cc", "cntrl"), "Cc"),
    (("Currency_Symbol", "Sc"), "Sc"),
    (("Dash_Punctuation", "Pd"), "Pd"),
    (("Decimal_Number", "Nd", "digit"), "Nd"),
    (("Enclosing_Mark", "Me"), "Me"),
    (("Final_Punctuation", "Pf"), "Pf"),
    (("Format", "Cf"), "Cf"),
    (("Initial_Punctuation", "Pi"), "Pi"),
    (("Letter", "L"), "Lu Ll Lt Lm Lo"),
    (("Letter_Number", "Nl"), "Nl"),
    (("Line_Separator", "Zl"), "Zl"),
    (("Lowercase_Letter", "Ll"), "Ll"),
    (("Mark", "M", "Combining_Mark"), "Mn Mc Me"),
    (("Math_Symbol", "Sm"), "Sm"),
    (("Modifier_Letter", "Lm"), "Lm"),
    (("Modifier_Symbol", "Sk"), "Sk"),
    (("Nonspacing_Mark", "Mn"), "Mn"),
    (("Number", "N"), "Nd Nl No"),
    (("Open_Punctuation", "Ps"), "Ps"),
    (("Other", "C"), "Cc Cf Cs Co Cn"),
    (("Other_Letter", "Lo"), "Lo"),
    (("Other_Number", "No"), "No"),
    (("Other_Punctuation", "Po"), "Po"),
    (("Other_Symbol", "So"), "So"),
    (("Paragraph_Separator", "Zp"), "Zp"),
    (("Private_Use", "Co"), "Co"),
    (("Punctuation", "P", "punct"), "Pc Pd Ps Pe Pi Pf Po"),
    (("Separator", "Z"), "Zs Zl Zp"),
    (("Space_Separator", "Zs"), "Zs"),
    (("Spacing_Mark", "Mc"), "Mc"),
    (("Surrogate", "Cs"), "Cs"),
    (("Symbol", "S"), "Sm Sc Sk So"),
    (("Titlecase_Letter", "Lt"), "Lt"),
    (("Unassigned", "Cn"), "Cn"),
    (("Uppercase_Letter", "Lu"), "Lu"),
]
_CATEGORIES_OF_ALIAS = {alias: categories.split() for aliases, categories in _GENERAL_CATEGORIES for alias in aliases}


@functools.cache
def _category_intervals() -> dict[str, IntervalSet]:
    """Code points of every two-letter general category (one scan of all code points)."""
    runs: dict[str, list[tuple[int, int]]] = {}
    category = unicodedata.category
    start, current = 0, category("\0")
    for code_point in range(1, 0x110000):
        this = category(chr(code_point))
        if this != current:
            runs.setdefault(current, []).append((start, code_point - 1))
            start, current = code_point, this
    runs.setdefault(current, []).append((start, 0x10FFFF))
    return {name: tuple(intervals) for name, intervals in runs.items()}


@functools.cache
def _unicode_property(name: str, value: str | None) -> IntervalSet | None:
    """Code points of ``\\p{name}`` / ``\\p{name=value}``; None when not supported."""
    if value is not None:
        if name not in ("General_Category", "gc"):
            return None  # Script=..., Script_Extensions=...: no data in unicodedata
        name = value
    elif name == "Any":
        return ((0, 0x10FFFF),)
    elif name == "ASCII":
        return ((0, 0x7F),)
    elif name == "Assigned":
        return complement_intervals(_category_intervals().get("Cn", ()), ((0, 0x10FFFF),))
    categories = _CATEGORIES_OF_ALIAS.get(name)
    if categories is None:
        return None
    table = _category_intervals()
    return union_intervals(*(table.get(category, ()) for category in categories))


# --------------------------------------------------------------------------- AST


@dataclass(frozen=True, eq=False)
class _Chars:
    """One code point out of ``symbols``."""

    symbols: IntervalSet


@dataclass(frozen=True, eq=False)
class _Seq:
    items: tuple["_Node", ...]


@dataclass(frozen=True, eq=False)
class _Alt:
    options: tuple["_Node", ...]


@dataclass(frozen=True, eq=False)
class _Repeat:
    body: "_Node"
    low: int
    high: int | None  # None: unbounded


@dataclass(frozen=True, eq=False)
class _Assert:
    kind: str  # "^", "$", "b" (word boundary) or "B" (not a word boundary)


_Node = Union[_Chars, _Seq, _Alt, _Repeat, _Assert]


# --------------------------------------------------------------------------- parser


def _count_capturing_groups(pattern: str) -> int:
    """Number of capturing groups, needed up front: ``\\2`` is a back-reference only if
    the pattern has two groups, wherever they are."""
    count = 0
    index = 0
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 1
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            if not pattern.startswith("?", index + 1):
                count += 1
            elif pattern.startswith("?<", index + 1) and pattern[index + 3 : index + 4] not in ("=", "!"):
                count += 1
        index += 1
    return count


def _decimal(digits: str) -> int:
    """Value of a decimal numeral, saturated at 10**18 (only compared with small limits;
    also avoids Python's limit on converting very long numerals)."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10**18


def _is_group_name(name: str) -> bool:
    """RegExpIdentifierName, approximated by Python's (XID-based) identifier rules."""
    if not name or not (name[0] in "$_" or name[0].isidentifier()):
        return False
    return all(char in "$\u200c\u200d" or ("a" + char).isidentifier() for char in name[1:])


class _Parser:
    """Recursive descent over ECMA-262 ``Pattern[+UnicodeMode]``; ``lenient`` admits one
    piece of Annex B, identity escapes of characters other than ASCII letters and digits."""

    def __init__(self, pattern: str, lenient: bool = False):
        self.pattern = pattern
        self.lenient = lenient
        self.pos = 0
        self.group_count = _count_capturing_groups(pattern)
        self.names: set[str] = set()  # group names that can take part in one match with what comes next

    def error(self, message: str, position: int) -> RegexError:
        return RegexError(message, self.pattern, position)

    def peek(self, offset: int = 0) -> str:
        """The character at ``pos + offset``, or "" past the end."""
        return self.pattern[self.pos + offset : self.pos + offset + 1]

    def next_is(self, chars: str, offset: int = 0) -> bool:
        char = self.peek(offset)
        return char != "" and char in chars

    def parse(self) -> _Node:
        node = self.disjunction()
        if self.pos < len(self.pattern):  # a disjunction only stops early at ")"
            raise self.error("unmatched ')'", self.pos)
        return node

    def disjunction(self) -> _Node:
        # Two groups may share a name only in different alternatives, where at most one of them
        # takes part in a match (ES2025; older editions refuse any repeat, and so does re).
        before = self.names
        self.names = set(before)
        options = [self.alternative()]
        after = self.names
        while self.peek() == "|":
            self.pos += 1
            self.names = set(before)
            options.append(self.alternative())
            after |= self.names
        self.names = after
        return options[0] if len(options) == 1 else _Alt(tuple(options))

    def alternative(self) -> _Node:
        items = []
        while self.pos < len(self.pattern) and not self.next_is("|)"):
            items.append(self.term())
        return items[0] if len(items) == 1 else _Seq(tuple(items))

    def term(self) -> _Node:
        char = self.peek()
        kind = char if char in ("^", "$") else None
        if char == "\\" and self.next_is("bB", 1):
            kind = self.peek(1)
        if kind is not None:
            self.pos += 1 if char != "\\" else 2
            if self.next_is("*+?{"):  # assertions cannot be quantified under the u flag
                raise self.error("nothing to repeat", self.pos)
            return _Assert(kind)
        node = self.atom()
        if self.next_is("*+?{"):
            node = self.quantifier(node)
        return node

    def quantifier(self, body: _Node) -> _Repeat:
        start = self.pos
        char = self.pattern[start]
        if char == "{":
            match = _BRACES.match(self.pattern, start)
            if match is None:
                raise self.error("incomplete quantifier", start)
            low = _decimal(match[1])
            high = low if match[2] is None else (_decimal(match[3]) if match[3] else None)
            if high is not None and high < low:
                raise self.error("numbers out of order in {} quantifier", start)
            self.pos = match.end()
        else:
            self.pos += 1
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
        if self.peek() == "?":
            self.pos += 1  # lazy: the same language as greedy
        return _Repeat(body, low, high)

    def atom(self) -> _Node:
        char = self.peek()
        if char == "(":
            return self.group()
        if char == "[":
            return self.char_class()
        if char == ".":
            self.pos += 1
            return _Chars(_DOT)
        if char == "\\":
            return self.atom_escape()
        if char in ("*", "+", "?"):
            raise self.error("nothing to repeat", self.pos)
        if char in ("{", "}"):
            raise self.error("lone quantifier brackets", self.pos)
        if char == "]":
            raise self.error("lone ']'", self.pos)
        code_point = self.literal()
        return _Chars(((code_point, code_point),))

    def literal(self) -> int:
        """The next pattern character; a surrogate pair in the pattern is one code point."""
        code_point = ord(self.pattern[self.pos])
        self.pos += 1
        if 0xD800 <= code_point <= 0xDBFF and self.pos < len(self.pattern):
            trail = ord(self.pattern[self.pos])
            if 0xDC00 <= trail <= 0xDFFF:
                self.pos += 1
                return 0x10000 + ((code_point - 0xD800) << 10) + (trail - 0xDC00)
        return code_point

    def group(self) -> _Node:
        start = self.pos
        self.pos += 1
        if self.peek() == "?":
            kind = self.pattern[self.pos + 1 : self.pos + 3]
            if kind[:1] in ("=", "!"):
                raise self.error("lookahead assertions are not supported", start)
            if kind in ("<=", "<!"):
                raise self.error("lookbehind assertions are not supported", start)
            if kind[:1] == ":":
                self.pos += 2
            elif kind[:1] == "<":
                self.pos += 2
                self.group_name(start)
            elif _MODIFIERS.match(self.pattern, start):
                raise self.error("inline modifiers (?ims-ims:...) are not supported", start)
            else:
                raise self.error("invalid group", start)
        body = self.disjunction()
        if self.peek() != ")":
            raise self.error("unterminated group", start)
        self.pos += 1
        return body

    def group_name(self, group_start: int) -> None:
        """Skip ``name>`` after ``(?<``; names may use ``\\u`` escapes."""
        name = []
        while self.peek() != ">":
            if self.pos >= len(self.pattern):
                raise self.error("unterminated group name", group_start)
            if self.peek() == "\\" and self.peek(1) == "u":
                escape_start = self.pos
                self.pos += 2
                name.append(chr(self.unicode_escape(escape_start)))
            else:
                name.append(chr(self.literal()))
        self.pos += 1
        text = "".join(name)
        if not _is_group_name(text):
            raise self.error("invalid capture group name", group_start)
        if text in self.names:
            raise self.error(f"duplicate capture group name {text!r}", group_start)
        self.names.add(text)

    def atom_escape(self) -> _Node:
        start = self.pos
        char = self.peek(1)
        if char != "" and char in "123456789":
            end = start + 1
            while end < len(self.pattern) and self.pattern[end] in "0123456789":
                end += 1
            if _decimal(self.pattern[start + 1 : end]) <= self.group_count:
                raise self.error("back-references are not supported", start)
            raise self.error("invalid escape: no such group to refer back to", start)
        if char == "k":
            if self.peek(2) == "<":
                raise self.error("back-references are not supported", start)
            raise self.error("invalid named reference", start)
        if char != "" and char in "dDwWsSpP":
            return _Chars(self.class_escape())
        code_point = self.character_escape(in_class=False)
        return _Chars(((code_point, code_point),))

    def class_escape(self) -> IntervalSet:
        """``\\d \\D \\w \\W \\s \\S`` or a property escape ``\\p{...}`` / ``\\P{...}``."""
        start = self.pos
        char = self.peek(1)
        if char in _CLASS_ESCAPES:
            self.pos += 2
            return _CLASS_ESCAPES[char]
        match = _PROPERTY.match(self.pattern, start + 2)
        if match is None:
            raise self.error("invalid property name", start)
        symbols = _unicode_property(match[1], match[2])
        if symbols is None:
            raise self.error(f"unsupported or unknown Unicode property {match[0]}", start)
        self.pos = match.end()
        return complement_intervals(symbols) if char == "P" else symbols

    def character_escape(self, in_class: bool) -> int:
        """A CharacterEscape (or ClassEscape ``\\b``/``\\-`` in a class) as a code point.

        Escaped lone surrogates are returned as they are; they match nothing, since the
        strings are made of Unicode scalar values.
        """
        start = self.pos
        char = self.peek(1)
        self.pos += 2
        if char == "":
            raise self.error("\\ at end of pattern", start)
        if char in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[char]
        if char == "c":
            letter = self.peek()
            if letter == "" or letter not in _ASCII_LETTERS:
                raise self.error("invalid control escape \\c", start)
            self.pos += 1
            return ord(letter) % 32
        if char == "0":
            if self.next_is("0123456789"):
                raise self.error("invalid decimal escape", start)
            return 0
        if char == "x":
            match = _HEX2.match(self.pattern, self.pos)
            if match is None:
                raise self.error("invalid escape \\x", start)
            self.pos = match.end()
            return int(match[0], 16)
        if char == "u":
            return self.unicode_escape(start)
        if in_class and char == "b":
            return 0x08
        if in_class and char == "-":
            return 0x2D
        if char in _SYNTAX_CHARACTERS or (self.lenient and not (char.isascii() and char.isalnum())):
            return ord(char)
        raise self.error("invalid escape", start)

    def unicode_escape(self, start: int) -> int:
        """The rest of ``\\uXXXX``, ``\\uXXXX\\uXXXX`` (a surrogate pair) or ``\\u{X...}``."""
        if self.peek() == "{":
            match = _CODE_POINT_BRACES.match(self.pattern, self.pos)
            if match is None or int(match[1], 16) > 0x10FFFF:
                raise self.error("invalid Unicode escape", start)
            self.pos = match.end()
            return int(match[1], 16)
        match = _HEX4.match(self.pattern, self.pos)
        if match is None:
            raise self.error("invalid Unicode escape", start)
        self.pos = match.end()
        code_point = int(match[0], 16)
        if 0xD800 <= code_point <= 0xDBFF and self.pattern.startswith("\\u", self.pos):
            trail = _HEX4.match(self.pattern, self.pos + 2)
            if trail is not None and 0xDC00 <= int(trail[0], 16) <= 0xDFFF:
                self.pos = trail.end()
                return 0x10000 + ((code_point - 0xD800) << 10) + (int(trail[0], 16) - 0xDC00)
        return code_point

    def char_class(self) -> _Chars:
        start = self.pos
        self.pos += 1
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        parts: list[IntervalSet] = []
        while self.peek() != "]":
            if self.pos >= len(self.pattern):
                raise self.error("unterminated character class", start)
            atom_start = self.pos
            low = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                high = self.class_atom()
                if not isinstance(low, int) or not isinstance(high, int):
                    raise self.error("invalid character class range", atom_start)
                if low > high:
                    raise self.error("range out of order in character class", atom_start)
                parts.append(((low, high),))
            else:
                parts.append(((low, low),) if isinstance(low, int) else low)
        self.pos += 1
        symbols = union_intervals(*parts)
        return _Chars(complement_intervals(symbols) if negated else symbols)

    def class_atom(self) -> int | IntervalSet:
        """A code point, or the set of a class escape (which cannot bound a range)."""
        if self.peek() != "\\":
            return self.literal()
        if self.next_is("dDwWsSpP", 1):
            return self.class_escape()
        return self.character_escape(in_class=True)


# --------------------------------------------------------------------------- NFA


def _size(node: _Node) -> int:
    """States :meth:`_ThompsonNFA.build` adds for ``node``, capped just above the limit."""
    if isinstance(node, (_Chars, _Assert)):
        size = 1
    elif isinstance(node, _Seq):
        size = sum(_size(item) for item in node.items)
    elif isinstance(node, _Alt):
        size = 1 + sum(_size(option) for option in node.options)
    else:
        copies = node.low + (1 if node.high is None else node.high - node.low)
        size = 0 if copies == 0 else 1 + _size(node.body) * copies
    return min(size, MAX_NFA_STATES + 1)


def _has_word_assertions(node: _Node) -> bool:
    if isinstance(node, _Assert):
        return node.kind in ("b", "B")
    if isinstance(node, _Seq):
        return any(_has_word_assertions(item) for item in node.items)
    if isinstance(node, _Alt):
        return any(_has_word_assertions(option) for option in node.options)
    if isinstance(node, _Repeat):
        return _has_word_assertions(node.body)
    return False


class _ThompsonNFA:
    """An NFA over code points whose ε-moves may be guarded by an assertion.

    ``build`` methods take the state to start from and return the state where the
    construct ends. Loops close onto fresh states, so an entry state shared by several
    constructs (alternatives, the search loop) never gains back edges.
    """

    def __init__(self) -> None:
        self.epsilon: list[list[tuple[str | None, int]]] = []
        self.edges: list[list[tuple[IntervalSet, int]]] = []

    def add_state(self) -> int:
        if len(self.edges) >= MAX_NFA_STATES:
            raise StateLimitError(f"the NFA needs more than {MAX_NFA_STATES} states")
        self.epsilon.append([])
        self.edges.append([])
        return len(self.edges) - 1

    def build(self, node: _Node, entry: int) -> int:
        if isinstance(node, _Chars):
            exit_state = self.add_state()
            self.edges[entry].append((node.symbols, exit_state))
            return exit_state
        if isinstance(node, _Assert):
            exit_state = self.add_state()
            self.epsilon[entry].append((node.kind, exit_state))
            return exit_state
        if isinstance(node, _Seq):
            for item in node.items:
                entry = self.build(item, entry)
            return entry
        if isinstance(node, _Alt):
            exit_state = self.add_state()
            for option in node.options:
                self.epsilon[self.build(option, entry)].append((None, exit_state))
            return exit_state
        return self.repeat(node, entry)

    def repeat(self, node: _Repeat, entry: int) -> int:
        if len(self.edges) + _size(node) > MAX_NFA_STATES:
            raise StateLimitError("repeat too large")  # fail before building the copies
        for _ in range(node.low):
            entry = self.build(node.body, entry)
        if node.high is None:
            loop = self.add_state()
            self.epsilon[entry].append((None, loop))
            self.epsilon[self.build(node.body, loop)].append((None, loop))
            return loop
        optional = node.high - node.low
        if optional == 0:
            return entry
        # body{0,n} as nested optionals that all skip to one exit (small ε-closures).
        exit_state = self.add_state()
        for _ in range(optional):
            self.epsilon[entry].append((None, exit_state))
            entry = self.build(node.body, entry)
        self.epsilon[entry].append((None, exit_state))
        return exit_state


# Context of a product state: what precedes the position, and what must follow it.
_AT_START, _AFTER_OTHER, _AFTER_WORD = 0, 1, 2  # without \b, _AFTER_OTHER means "after anything"
_FREE, _END, _NEXT_WORD, _NEXT_OTHER = 0, 1, 2, 3  # _NEXT_OTHER: a non-word character or the end


def _require(need: int, requirement: int) -> int | None:
    """Both requirements on what follows, or None when they contradict each other."""
    if need == requirement or requirement == _FREE:
        return need
    if need == _FREE:
        return requirement
    if {need, requirement} == {_END, _NEXT_OTHER}:
        return _END
    return None


def _assume(kind: str, before: int, need: int) -> int | None:
    """``need`` after passing assertion ``kind``; None when it cannot hold here."""
    if kind == "^":
        return need if before == _AT_START else None
    if kind == "$":
        return _require(need, _END)
    word_before = before == _AFTER_WORD
    if kind == "b":
        return _require(need, _NEXT_OTHER if word_before else _NEXT_WORD)
    return _require(need, _NEXT_WORD if word_before else _NEXT_OTHER)


def _resolve_assertions(raw: _ThompsonNFA, entry: int, final: int, track_words: bool) -> NFA:
    """Product of ``raw`` with the context, over reachable (state, before, need) triples.

    Assertion ε-moves update or check the context; consuming a character checks ``need``
    and sets ``before``. So ``^ $ \\b \\B`` are exact anywhere in the pattern.
    """
    nfa = NFA(max_states=MAX_NFA_STATES)
    ids = {(entry, _AT_START, _FREE): nfa.initial}
    todo = [(entry, _AT_START, _FREE)]
    splits: dict[tuple[int, int], list[tuple[IntervalSet, int]]] = {}

    def state(key: tuple[int, int, int]) -> int:
        found = ids.get(key)
        if found is None:
            found = ids[key] = nfa.add_state()
            todo.append(key)
        return found

    def split(symbols: IntervalSet, need: int) -> list[tuple[IntervalSet, int]]:
        """(allowed symbols, context after them) pairs for an edge under ``need``."""
        key = (id(symbols), need)
        cached = splits.get(key)
        if cached is None:
            if need == _NEXT_WORD:
                symbols = intersect_intervals(symbols, _WORD)
            elif need == _NEXT_OTHER:
                symbols = subtract_intervals(symbols, _WORD)
            if track_words:
                cached = [
                    (intersect_intervals(symbols, _WORD), _AFTER_WORD),
                    (subtract_intervals(symbols, _WORD), _AFTER_OTHER),
                ]
            else:
                cached = [(symbols, _AFTER_OTHER)]
            splits[key] = cached
        return cached

    while todo:
        key = todo.pop()
        q, before, need = key
        source = ids[key]
        if q == final and need != _NEXT_WORD:
            nfa.accepting.add(source)
        for kind, target in raw.epsilon[q]:
            new_need = need if kind is None else _assume(kind, before, need)
            if new_need is not None:
                nfa.add_epsilon(source, state((target, before, new_need)))
        if need == _END:
            continue
        for symbols, target in raw.edges[q]:
            for label, after in split(symbols, need):
                if label:
                    nfa.add_edge(source, label, state((target, after, _FREE)))
    return nfa


def _search_nfa(tree: _Node) -> NFA:
    """NFA of ``[^]*`` pattern ``[^]*`` with the assertions resolved."""
    raw = _ThompsonNFA()
    entry = raw.add_state()
    raw.edges[entry].append((_ANY, entry))
    final = raw.add_state()
    raw.epsilon[raw.build(tree, entry)].append((None, final))
    raw.edges[final].append((_ANY, final))
    return _resolve_assertions(raw, entry, final, _has_word_assertions(tree))


def _epsilon_closure(nfa: NFA, states) -> set[int]:
    """``states`` and every state their ε-moves reach."""
    seen, stack = set(states), list(states)
    while stack:
        for target in nfa.epsilon[stack.pop()]:
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def _widest_subset(nfa: NFA) -> int:
    """An upper bound on the NFA states (with edges, or accepting) in one DFA state.

    The states some string of length k can reach, ignoring labels, contain the subset of
    every string of length k; the sequence of these sets is eventually periodic, so its
    largest member is found by iterating until a set recurs. When that takes too long,
    every such state counts.
    """
    edges, accepting = nfa.edges, nfa.accepting

    def closure(states: set[int]) -> frozenset[int]:
        return frozenset(q for q in _epsilon_closure(nfa, states) if edges[q] or q in accepting)

    current = closure({nfa.initial})
    visited: set[frozenset[int]] = set()
    widest = work = 0
    while current not in visited:
        visited.add(current)
        widest = max(widest, len(current))
        work += len(current)
        if work > _WORK_LIMIT // 10:
            return sum(1 for q in range(nfa.num_states) if edges[q] or q in accepting)
        current = closure({target for q in current for _, target in edges[q]})
    return max(widest, 1)


# --------------------------------------------------------------------------- entry point


def ecma_pattern_dfa(pattern: str, *, max_states: int = 50_000, lenient_escapes: bool = False) -> ByteDFA:
    """Trimmed minimal DFA over UTF-8 bytes for the JSON Schema ``pattern`` keyword.

    Accepts ``s.encode("utf-8")`` exactly when ``new RegExp(pattern, "u").test(s)``: an
    unanchored search, ``^``/``$`` only at the very start/end of ``s``, ``.`` excluding
    line terminators. Results are cached and shared; treat their arrays as read-only.

    Supported: literals (surrogate pairs in the pattern are one code point), ``.``, every
    character escape (``\\t \\n \\v \\f \\r \\0 \\cX \\xHH \\uXXXX`` with surrogate pairs,
    ``\\u{X...}``, identity escapes of syntax characters and ``/``), ``\\d \\D \\w \\W \\s \\S``
    (ECMA's ASCII/whitespace definitions), ``\\p{...}``/``\\P{...}`` for General_Category
    values (``L``, ``Letter``, ``Lu``, ``Nd``, ``digit``, ``gc=Lu``, ...) and ``Any``,
    ``ASCII``, ``Assigned``, classes with ranges and negation (``[]`` matches nothing,
    ``[^]`` anything), capturing, non-capturing and named groups, alternation, greedy and
    lazy ``* + ? {n} {n,} {n,m}``, and ``^ $ \\b \\B`` anywhere.

    ``lenient_escapes`` reads ``\\X`` as the character X for any X but an ASCII letter or
    digit (``\\-``, ``\\_``, ``\\@``, ``\\ ``), as Annex B and Python's ``re`` do; real
    schemas often escape punctuation that the u flag does not allow escaping.

    Raises :class:`~gramalign.errors.RegexError` with the 0-based position of the
    offending construct for invalid syntax (u-flag rules) and for
    back-references, lookahead, lookbehind, inline modifiers and other Unicode properties
    (scripts, binary properties). Size limits raise RegexError without a position: an NFA
    above :data:`MAX_NFA_STATES` states, a DFA above ``max_states`` states, or a subset
    construction too slow to finish (counted repeats of thousands under unanchored
    search, such as ``a{4000}``, keep thousands of NFA states in every DFA state).
    """
    if not isinstance(pattern, str):
        raise TypeError(f"ecma_pattern_dfa needs a str pattern, not {type(pattern).__name__}")
    return _cached_pattern_dfa(pattern, int(max_states), bool(lenient_escapes))


def _pattern_nfa(pattern: str, lenient_escapes: bool) -> NFA:
    """The search NFA of ``pattern``; RegexError for what it refuses and what is too large."""
    try:
        return _search_nfa(_Parser(pattern, lenient_escapes).parse())
    except StateLimitError:
        raise RegexError(f"pattern too large: its NFA needs more than {MAX_NFA_STATES} states", pattern) from None
    except RecursionError:
        raise RegexError("pattern nested too deeply", pattern) from None


@functools.lru_cache(maxsize=256)
def _cached_pattern_nfa(pattern: str, lenient_escapes: bool) -> NFA:
    return _pattern_nfa(pattern, lenient_escapes)


def ecma_pattern_matches(pattern: str, text: str, *, lenient_escapes: bool = False) -> bool:
    """Does ``text`` match ``pattern`` (a search, as :func:`ecma_pattern_dfa` reads it)? The
    search NFA run over the text's code points, without determinising: a property name
    against the patterns of ``patternProperties``, where the object's own shape would build
    every pattern's automaton and the key languages between them. Raises RegexError as
    :func:`ecma_pattern_dfa` does for what it refuses.

    >>> ecma_pattern_matches("^x-[a-z]+$", "x-abc"), ecma_pattern_matches("b", "abc"), ecma_pattern_matches("^b", "abc")
    (True, True, False)
    """
    nfa = _cached_pattern_nfa(pattern, lenient_escapes)
    current = _epsilon_closure(nfa, [nfa.initial])
    for character in text:
        code = ord(character)
        current = _epsilon_closure(nfa, [target for q in current for label, target in nfa.edges[q]
                                         if any(lo <= code <= hi for lo, hi in nfa.labels[label])])
        if not current:
            return False
    return not current.isdisjoint(nfa.accepting)


@functools.lru_cache(maxsize=1024)
def ecma_pattern_matches_some(pattern: str, *, lenient_escapes: bool = False) -> bool:
    """Does some string match ``pattern`` (as :func:`ecma_pattern_dfa` reads it)? A path to
    acceptance in its search NFA, over edges with a code point UTF-8 can encode (not a lone
    surrogate): no determinisation, which costs milliseconds in Python, where a parent
    proving that its members have values asks this of every member. Raises RegexError as
    :func:`ecma_pattern_dfa` does for what it refuses (syntax, lookarounds, NFA size); a
    pattern whose DFA is too large can still be shown to match.

    >>> ecma_pattern_matches_some("^[a-z]+@x$"), ecma_pattern_matches_some("^a$b")
    (True, False)
    """
    nfa = _cached_pattern_nfa(pattern, lenient_escapes)
    encodable = [any(lo < 0xD800 or hi > 0xDFFF for lo, hi in label) for label in nfa.labels]
    seen = {nfa.initial}
    stack = [nfa.initial]
    while stack:
        q = stack.pop()
        if q in nfa.accepting:
            return True
        for target in nfa.epsilon[q]:
            if target not in seen:
                seen.add(target)
                stack.append(target)
        for label, target in nfa.edges[q]:
            if encodable[label] and target not in seen:
                seen.add(target)
                stack.append(target)
    return False


@functools.lru_cache(maxsize=1024)
def _cached_pattern_dfa(pattern: str, max_states: int, lenient_escapes: bool) -> ByteDFA:
    nfa = _cached_pattern_nfa(pattern, lenient_escapes)
    # Subset construction costs about (DFA states) x (NFA states per DFA state): with
    # unanchored search, a{30000} keeps 30000 threads alive, so bound the product too.
    widest = _widest_subset(nfa)
    limit = min(max_states, max(_WORK_LIMIT // widest, 1))
    try:
        return nfa_to_utf8_dfa(nfa, max_states=limit)
    except StateLimitError as exc:
        if limit < max_states:
            exc = f"its DFA needs more than {limit} states of up to {widest} NFA states each"
        raise RegexError(f"pattern too large: {exc}", pattern) from None
