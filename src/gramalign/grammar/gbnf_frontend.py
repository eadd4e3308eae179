"""llama.cpp's GBNF to the grammar IR.

GBNF rules are character-level (``root ::= "a" [0-9]+ | other``): string literals with
escapes, character classes ``[...]`` (ranges, ``^`` negation, escapes), ``.`` for any
character, grouping, ``* + ?`` and ``{m}``, ``{m,}``, ``{m,n}``, ``{,n}``, ``#`` comments;
``root`` is the start. A newline ends a rule except right after ``::=`` or ``|`` and
inside parentheses, as in llama.cpp's parser.

There is no lexer in GBNF, so the IR makes its own terminals. A rule from which no rule
can reach itself again is a regular language: where a recursive rule (or the start) uses
it, it is one terminal, its automaton (``ws``, ``identifier``, a whole JSON ``string``),
so its text is lexed, not parsed character by character, and the masks of its lexemes come
from the lexer's precomputed classes. The characters the recursive rules spell themselves
are split into disjoint *atoms* (each literal character, class and ``.`` becomes the
alternation of its atoms, one character wide). Terminals may overlap (``while`` is also an
identifier), so the grammar is lexed every way the text splits into them
(:attr:`~.grammar.Grammar.every_split`) and the parser keeps the readings it can take: the
language is exactly the GBNF one. Repetitions become left-recursive helper rules. Where
LALR(1) takes the rules over those terminals (strict: a shift/reduce conflict is never
settled silently), the parser is deterministic; where it does not, the grammar is
:attr:`~.grammar.Grammar.generalized`: any context-free GBNF loads, ambiguous or not, and
the generalized LR runtime follows every conflict.
"""

from __future__ import annotations

import bisect
import sys
from dataclasses import dataclass, replace

import numpy as np

from ..errors import GbnfError, GrammarError
from .automata.dfa import NFA, ByteDFA, StateLimitError, dfa_from_table, nfa_to_utf8_dfa
from .grammar import Grammar, Rule, Terminal
from .lalr import build_parse_table
from .limits import CompileLimits, applied, check_size
from .normalize import productive_rules, without_useless_rules

MAX_CODE_POINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-", "^": "^",
            "/": "/", "'": "'"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


# AST: ("chars", intervals) | ("ref", name, line, column) | ("seq", items) | ("alt", sequences)
#      | ("rep", item, low, high or None)


@dataclass
class _Reader:
    text: str
    pos: int = 0

    def where(self, pos: int | None = None) -> tuple[int, int]:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        return line, pos - (self.text.rfind("\n", 0, pos) + 1) + 1

    def fail(self, message: str, pos: int | None = None):
        raise GbnfError(message, *self.where(pos))

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def space(self, newlines: bool) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif char in " \t" or (newlines and char in "\r\n"):
                self.pos += 1
            else:
                return

    def name(self) -> str:
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] in "-_"):
            self.pos += 1
        if self.pos == start:
            self.fail("expected a rule name")
        return self.text[start:self.pos]

    def char(self, closing: str) -> int:
        """One (possibly escaped) character of a literal or class, as a code point."""
        what = "string" if closing == '"' else "character class"
        if self.pos >= len(self.text):
            self.fail(f"unterminated {what}")
        char = self.text[self.pos]
        if char != "\\":
            if char == "\n":
                self.fail(f"line break inside a {what}")
            self.pos += 1
            return ord(char)
        start = self.pos
        kind = self.text[self.pos + 1:self.pos + 2]
        if kind in _HEX_ESCAPES:
            digits = self.text[self.pos + 2:self.pos + 2 + _HEX_ESCAPES[kind]]
            if len(digits) != _HEX_ESCAPES[kind] or any(d not in "0123456789abcdefABCDEF" for d in digits):
                self.fail(f"\\{kind} needs {_HEX_ESCAPES[kind]} hex digits", start)
            value = int(digits, 16)
            if value > MAX_CODE_POINT:
                self.fail(f"\\{kind}{digits} is beyond U+10FFFF", start)
            self.pos += 2 + len(digits)
            return value
        if kind in _ESCAPES:
            self.pos += 2
            return ord(_ESCAPES[kind])
        self.fail(f"unknown escape \\{kind}", start)


def parse_gbnf(text: str) -> dict[str, tuple]:
    """The rules of GBNF ``text``: name -> (AST, line, column) in definition order."""
    if not isinstance(text, str):
        raise TypeError(f"a GBNF grammar is a str, not {type(text).__name__}")
    reader = _Reader(text)
    rules: dict[str, tuple] = {}
    while True:
        reader.space(True)
        if reader.pos >= len(text):
            break
        start = reader.pos
        name = reader.name()
        reader.space(False)
        if not text.startswith("::=", reader.pos):
            reader.fail(f"expected '::=' after the rule name {name!r}")
        reader.pos += 3
        reader.space(True)
        body = _alternates(reader, nested=False)
        if name in rules:
            reader.fail(f"rule {name!r} is defined twice (first at line {rules[name][1]})", start)
        rules[name] = (body, *reader.where(start))
        reader.space(False)
        if reader.pos < len(text) and reader.peek() not in "\r\n":
            reader.fail(f"unexpected {reader.peek()!r}: expected a newline after the rule")
    return rules


def _alternates(reader: _Reader, nested: bool) -> tuple:
    sequences = [_sequence(reader, nested)]
    while reader.peek() == "|":
        reader.pos += 1
        reader.space(True)
        sequences.append(_sequence(reader, nested))
    return sequences[0] if len(sequences) == 1 else ("alt", sequences)


def _sequence(reader: _Reader, nested: bool) -> tuple:
    items = []
    while True:
        char = reader.peek()
        start = reader.pos
        if char == '"':
            reader.pos += 1
            chars = []
            while reader.peek() != '"':
                chars.append(reader.char('"'))
            reader.pos += 1
            item = ("seq", [("chars", ((c, c),)) for c in chars])
        elif char == "[":
            reader.pos += 1
            negated = reader.peek() == "^"
            reader.pos += negated
            ranges = []
            while reader.peek() != "]":
                low = reader.char("]")
                high = low
                if reader.peek() == "-" and reader.text[reader.pos + 1:reader.pos + 2] not in ("]", ""):
                    reader.pos += 1
                    high = reader.char("]")
                    if high < low:
                        reader.fail("a character range runs backwards", start)
                ranges.append((low, high))
            reader.pos += 1
            intervals = _without_surrogates(_normalized(ranges))
            intervals = _complement(intervals) if negated else intervals
            if not intervals:
                reader.fail("this character class matches no character", start)
            item = ("chars", intervals)
        elif char == ".":
            reader.pos += 1
            item = ("chars", _complement(()))
        elif char == "(":
            reader.pos += 1
            reader.space(True)
            item = _alternates(reader, nested=True)
            reader.space(True)
            if reader.peek() != ")":
                reader.fail("expected ')'", start if not reader.peek() else None)
            reader.pos += 1
        elif char and (char.isalnum() or char in "-_"):
            line, column = reader.where()
            name = reader.name()
            item = ("ref", name, line, column)
        else:
            break
        item = _postfix(reader, item)
        items.append(item)
        reader.space(nested)
    return items[0] if len(items) == 1 else ("seq", items)


def _postfix(reader: _Reader, item: tuple) -> tuple:
    while True:
        char = reader.peek()
        if char in ("*", "+", "?"):
            reader.pos += 1
            item = ("rep", item, 1 if char == "+" else 0, 1 if char == "?" else None)
        elif char == "{":
            start = reader.pos
            end = reader.text.find("}", start)
            if end < 0:
                reader.fail("unterminated '{'")
            body = reader.text[start + 1:end].replace(" ", "")
            low_text, comma, high_text = body.partition(",")
            if not (low_text.isdigit() or (comma and not low_text)) or (high_text and not high_text.isdigit()):
                reader.fail(f"expected {{m}}, {{m,}}, {{m,n}} or {{,n}}, not {{{body}}}", start)
            low = int(low_text) if low_text else 0
            high = (int(high_text) if high_text else None) if comma else low
            if high is not None and high < low:
                reader.fail(f"{{{body}}}: the maximum is below the minimum", start)
            reader.pos = end + 1
            item = ("rep", item, low, high)
        else:
            return item


def _normalized(ranges) -> tuple:
    merged: list[list[int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return tuple((low, high) for low, high in merged)


def _complement(intervals) -> tuple:
    """Every character (code point that UTF-8 can encode) outside ``intervals``."""
    result, next_low = [], 0
    for low, high in intervals:
        if low > next_low:
            result.append((next_low, low - 1))
        next_low = max(next_low, high + 1)
    if next_low <= MAX_CODE_POINT:
        result.append((next_low, MAX_CODE_POINT))
    return _without_surrogates(result)


def _without_surrogates(intervals) -> tuple:
    out = []
    for low, high in intervals:
        if high < _SURROGATES[0] or low > _SURROGATES[1]:
            out.append((low, high))
            continue
        if low < _SURROGATES[0]:
            out.append((low, _SURROGATES[0] - 1))
        if high > _SURROGATES[1]:
            out.append((_SURROGATES[1] + 1, high))
    return tuple(out)


# --------------------------------------------------------------------------- to the IR


def grammar_from_gbnf(text: str, *, start: str = "root", limits: "CompileLimits | None" = None) -> Grammar:
    """The :class:`Grammar` of GBNF ``text`` (start rule ``start``, ``root`` by default);
    ``limits`` bounds the work (the text's length: ``max_grammar_chars``).

    A rule from which no rule can reach itself again (``number ::= "-"? [0-9]+``: a regular
    language) becomes one terminal, its automaton, wherever a recursive rule (or the start)
    uses it; the characters the recursive rules spell themselves are terminals of their own
    (see the module docstring). The grammar is lexed every way the text splits into those
    terminals (:attr:`~.grammar.Grammar.every_split`), so the language is exactly GBNF's;
    where LALR(1) cannot read the rules over those terminals, the grammar is generalized."""
    try:
        with applied(limits):
            if isinstance(text, str):
                check_size("max_grammar_chars", len(text), "the grammar text")
            return _grammar_from_gbnf(text, start)
    except RecursionError:  # the reader and the rule builder recurse once per nesting level
        raise GbnfError(f"the grammar nests too deeply (Python's recursion limit is {sys.getrecursionlimit()}); "
                        "flatten the deepest rule into several rules") from None


def _grammar_from_gbnf(text: str, start: str) -> Grammar:
    rules = parse_gbnf(text)
    if start not in rules:
        raise GbnfError(f"no {start!r} rule: GBNF starts from {start!r}")
    builder = _Builder(rules, start)
    builder.build()
    # a rule that derives no text (u ::= "c" u) would let the parser shift into a dead end:
    # it goes, with the alternatives that use it (same language)
    grammar = Grammar(terminals=tuple(builder.terminals), rules=tuple(builder.rules), start=_rule_name(start),
                      source=text, strict=True, every_split=True)
    try:
        grammar = without_useless_rules(grammar)
    except GrammarError:
        raise _derives_no_text(grammar, rules, start) from None
    if _is_lalr(grammar):
        return grammar
    # not LALR(1): the generalized LR parser reads it as it is, every conflict followed
    general = replace(grammar, strict=False, generalized=True)
    build_parse_table(general)
    return general


def _derives_no_text(grammar: Grammar, rules: dict[str, tuple], start: str) -> GbnfError:
    """The error for a start rule that derives no text, naming the user's rules that never end."""
    productive = productive_rules({rule.name: rule.alternatives for rule in grammar.rules},
                                  {t.name for t in grammar.terminals})
    reached = _reached(rules, start)
    endless = [name for name in rules if _rule_name(name) not in productive and name in reached]
    if len(endless) == 1:
        why = f"every alternative of {endless[0]!r} needs {endless[0]!r} again"
    else:
        why = f"every alternative of the rules {', '.join(map(repr, endless))} needs one of them again"
    return GbnfError(f"rule {start!r} derives no text: {why}; give one of them an alternative that ends",
                     *rules[start][1:])


def _reached(rules: dict[str, tuple], start: str) -> set:
    """The rules ``start`` refers to, directly or not, itself included."""
    seen, queue = {start}, [start]
    for name in queue:
        for ref in _refs(rules[name][0]) if name in rules else ():
            if ref not in seen:
                seen.add(ref)
                queue.append(ref)
    return seen


def _regular_rules(rules: dict[str, tuple]) -> frozenset:
    """The rules from which no rule can reach itself again: each is a regular language.
    (Rules are peeled off from those that refer to no rule left; what a cycle or an
    undefined name keeps stays.)"""
    refs = {name: _refs(body) for name, (body, _, _) in rules.items()}
    referrers: dict[str, list[str]] = {name: [] for name in rules}
    left = {}
    for name, names in refs.items():
        left[name] = len(names) + sum(r not in rules for r in names)  # an undefined name never goes
        for r in names:
            if r in rules:
                referrers[r].append(name)
    ready = [name for name, count in left.items() if count == 0]
    regular = set()
    while ready:
        name = ready.pop()
        regular.add(name)
        for referrer in referrers[name]:
            left[referrer] -= 1
            if left[referrer] == 0:
                ready.append(referrer)
    return frozenset(regular)


def _refs(node: tuple, out: "set | None" = None) -> set:
    """The names ``node`` refers to."""
    out = set() if out is None else out
    kind = node[0]
    if kind == "ref":
        out.add(node[1])
    elif kind in ("seq", "alt"):
        for item in node[1]:
            _refs(item, out)
    elif kind == "rep":
        _refs(node[1], out)
    return out


MAX_TERMINAL_STATES = 20_000
"""Automaton states (code points, then bytes) a regular rule's terminal may have; past it,
the rule stays rules over characters."""


MAX_LEXED_HEIGHT = 100
"""Rules a regular rule's terminal may reach through references one inside another (a rule
is inlined once per reference, recursively); a longer chain stays rules."""


def _heights(rules: dict[str, tuple], regular: frozenset) -> dict[str, int]:
    """Per regular rule: the longest chain of references below it (0: it refers to none)."""
    height: dict[str, int] = {}
    for name in regular:
        stack = [name]
        while stack:  # depth first without recursion: a chain may be thousands of rules long
            top = stack[-1]
            below = [r for r in _refs(rules[top][0]) if r not in height]
            if below:
                stack.extend(below)
                continue
            stack.pop()
            height[top] = 1 + max((height[r] for r in _refs(rules[top][0])), default=-1)
    return height


@dataclass(frozen=True)
class _Lexed:
    """A regular rule read as a terminal: its name in the IR (None where the rule matches
    only the empty text) and whether it also matches the empty text."""

    terminal: "str | None"
    nullable: bool


def _rule_dfa(rules: dict[str, tuple], name: str) -> ByteDFA:
    """The automaton (over UTF-8 bytes) of the regular rule ``name``."""
    nfa = NFA(max_states=MAX_TERMINAL_STATES)
    end = _add_to_nfa(nfa, rules, rules[name][0], nfa.initial)
    nfa.accepting.add(end)
    return nfa_to_utf8_dfa(nfa, max_states=MAX_TERMINAL_STATES)


def _add_to_nfa(nfa: NFA, rules: dict[str, tuple], node: tuple, source: int) -> int:
    """Thompson's construction of ``node`` entered at ``source``; returns the exit state."""
    kind = node[0]
    if kind == "chars":
        target = nfa.add_state()
        nfa.add_edge(source, node[1], target)
        return target
    if kind == "ref":
        return _add_to_nfa(nfa, rules, rules[node[1]][0], source)
    if kind == "seq":
        for item in node[1]:
            source = _add_to_nfa(nfa, rules, item, source)
        return source
    if kind == "alt":
        target = nfa.add_state()
        for item in node[1]:
            entry = nfa.add_state()
            nfa.add_epsilon(source, entry)
            nfa.add_epsilon(_add_to_nfa(nfa, rules, item, entry), target)
        return target
    _, body, low, high = node
    for _ in range(low):
        source = _add_to_nfa(nfa, rules, body, source)
    if high is None:  # a loop back to its entry
        loop = nfa.add_state()
        nfa.add_epsilon(source, loop)
        nfa.add_epsilon(_add_to_nfa(nfa, rules, body, loop), loop)
        return loop
    target = nfa.add_state()
    for _ in range(high - low):
        nfa.add_epsilon(source, target)
        source = _add_to_nfa(nfa, rules, body, source)
    nfa.add_epsilon(source, target)
    return target


def _without_empty(dfa: ByteDFA) -> ByteDFA:
    """``dfa``'s language without the empty text."""
    if dfa.num_states == 0 or not dfa.accepting[dfa.initial]:
        return dfa
    transitions = np.concatenate([dfa.transitions, dfa.transitions[dfa.initial:dfa.initial + 1]])
    return dfa_from_table(transitions, dfa.num_states, np.append(dfa.accepting, False))


def _rule_name(name: str) -> str:
    return f"g:{name}"


class _Builder:
    """The IR of GBNF rules: regular rules that a recursive rule (or the start) uses become
    terminals (:class:`_Lexed`), the other rules become IR rules over them and over atoms."""

    def __init__(self, rules: dict[str, tuple], start: str):
        self.source = rules
        self.start = start
        self.rules: list[Rule] = []
        self.terminals: list[Terminal] = []
        self.helpers = 0
        self.optional: dict[str, str] = {}  # lexed rule -> the helper rule "its terminal or nothing"
        self.lexed: dict[str, _Lexed] = {}
        regular = _regular_rules(rules)
        self.written = set(rules) - regular  # rules that stay rules
        height = _heights(rules, regular)
        work = [start] + [r for name in self.written for r in sorted(_refs(rules[name][0]))]
        while work:
            name = work.pop()
            if name not in regular or name in self.lexed or name in self.written:
                continue
            try:
                if height[name] > MAX_LEXED_HEIGHT:
                    raise StateLimitError("too deep a chain of rules to inline")
                dfa = _rule_dfa(rules, name)
            except StateLimitError:  # too large an automaton: its rules stay, their references are lexed
                self.written.add(name)
                work.extend(sorted(_refs(rules[name][0])))
                continue
            self._add_lexed(name, dfa)
        sets = []
        for name in self.written:
            _collect_sets(rules[name][0], sets)
        self.atoms, self.atoms_of = _atoms(sets)
        self.set_symbol: dict[tuple, str] = {}

    def _add_lexed(self, name: str, dfa: ByteDFA) -> None:
        nonempty = _without_empty(dfa)
        terminal = None
        if nonempty.num_states:
            terminal = f"T:{name}"
            self.terminals.append(Terminal.from_dfa(terminal, nonempty))
        self.lexed[name] = _Lexed(terminal, nonempty is not dfa)

    def build(self) -> None:
        for k, intervals in enumerate(self.atoms):
            pattern = "[" + "".join(_class_range(low, high) for low, high in intervals) + "]"
            self.terminals.append(Terminal(f"C{k}", pattern))
        for name, (body, _, _) in self.source.items():
            if name in self.written:
                self.rules.append(Rule(_rule_name(name), self.alternatives(body, name)))
        if self.start in self.lexed:
            lexed = self.lexed[self.start]
            alternatives = ([(lexed.terminal,)] if lexed.terminal else []) + ([()] if lexed.nullable else [])
            self.rules.append(Rule(_rule_name(self.start), tuple(alternatives)))

    def alternatives(self, node: tuple, owner: str) -> tuple[tuple[str, ...], ...]:
        if node[0] == "alt":
            return tuple(self.sequence(s, owner) for s in node[1])
        return (self.sequence(node, owner),)

    def sequence(self, node: tuple, owner: str) -> tuple[str, ...]:
        items = node[1] if node[0] == "seq" else [node]
        symbols: list[str] = []
        for item in items:
            if item[0] == "seq":
                symbols.extend(self.sequence(item, owner))
            else:
                symbol = self.symbol(item, owner)
                if symbol is not None:
                    symbols.append(symbol)
        return tuple(symbols)

    def helper(self, owner: str, alternatives) -> str:
        self.helpers += 1
        name = f"g:{owner}#{self.helpers}"
        self.rules.append(Rule(name, tuple(alternatives)))
        return name

    def symbol(self, node: tuple, owner: str) -> "str | None":
        """The IR symbol of ``node`` (None: a rule that matches only the empty text)."""
        kind = node[0]
        if kind == "chars":
            key = node[1]
            found = self.set_symbol.get(key)
            if found is None:
                atoms = self.atoms_of[key]
                if len(atoms) == 1:
                    found = f"C{atoms[0]}"
                else:
                    found = self.helper(owner, [(f"C{a}",) for a in atoms])
                self.set_symbol[key] = found
            return found
        if kind == "ref":
            _, name, line, column = node
            if name not in self.source:
                raise GbnfError(f"undefined rule {name!r}", line, column)
            lexed = self.lexed.get(name)
            if lexed is None:
                return _rule_name(name)
            if not lexed.nullable or lexed.terminal is None:
                return lexed.terminal
            if name not in self.optional:
                self.optional[name] = self.helper(name, [(lexed.terminal,), ()])
            return self.optional[name]
        if kind in ("alt", "seq"):
            return self.helper(owner, self.alternatives(node, owner))
        _, body, low, high = node
        one = self.sequence(body, owner)
        if high is None:  # R -> R body | ε after `low` copies
            loop = self.helper(owner, [()])
            self.rules[-1] = Rule(loop, ((), (loop,) + one))
            return self.helper(owner, [one * low + (loop,)])
        tail: tuple[str, ...] = ()
        for _ in range(high - low):  # nested optionals: O -> body O' | ε
            tail = (self.helper(owner, [(), one + tail]),)
        return self.helper(owner, [one * low + tail])


def _collect_sets(node: tuple, sets: list) -> None:
    kind = node[0]
    if kind == "chars":
        sets.append(node[1])
    elif kind == "seq":
        for item in node[1]:
            _collect_sets(item, sets)
    elif kind == "alt":
        for item in node[1]:
            _collect_sets(item, sets)
    elif kind == "rep":
        _collect_sets(node[1], sets)


def _atoms(sets: list) -> tuple[list[tuple], dict]:
    """Split the character sets into disjoint atoms: (the atoms' intervals, set -> atom ids)."""
    distinct = list(dict.fromkeys(s for s in sets if s))
    bounds = sorted({b for s in distinct for low, high in s for b in (low, high + 1)})
    members: list[set] = [set() for _ in bounds]
    for k, s in enumerate(distinct):
        for low, high in s:
            for j in range(bisect.bisect_left(bounds, low), bisect.bisect_left(bounds, high + 1)):
                members[j].add(k)
    by_signature: dict[frozenset, list] = {}
    for j in range(len(bounds) - 1):
        if members[j]:
            by_signature.setdefault(frozenset(members[j]), []).append((bounds[j], bounds[j + 1] - 1))
    atoms, atoms_of = [], {s: [] for s in distinct}
    for signature, intervals in by_signature.items():
        atom = len(atoms)
        atoms.append(_normalized(intervals))
        for k in signature:
            atoms_of[distinct[k]].append(atom)
    for s in sets:
        if not s:
            atoms_of[s] = []
    return atoms, atoms_of


def _class_range(low: int, high: int) -> str:
    escape = lambda cp: f"\\U{cp:08x}"  # noqa: E731
    return escape(low) if low == high else f"{escape(low)}-{escape(high)}"


def _is_lalr(grammar: Grammar) -> bool:
    """Does LALR(1) take the character-level grammar as it is (strict: no conflict settled)?"""
    try:
        build_parse_table(grammar)
        return True
    except GrammarError:
        return False
