"""llama.cpp's GBNF to the grammar IR.

GBNF rules are character-level (``root ::= "a" [0-9]+ | other``): string literals with
escapes, character classes ``[...]`` (ranges, ``^`` negation, escapes), ``.`` for any
character, grouping, ``* + ?`` and ``{m}``, ``{m,}``, ``{m,n}``, ``{,n}``, ``#`` comments;
``root`` is the start. A newline ends a rule except right after ``::=`` or ``|`` and
inside parentheses, as in llama.cpp's parser.

There is no lexer in GBNF, so the IR gets one terminal per *atom*: the character sets the
grammar uses (each literal character, class and ``.``) are split into disjoint pieces, and
each set becomes the alternation of its atoms. Every terminal is one character wide and no
two overlap, so lexing is exact and the language is the GBNF one. Repetitions become
left-recursive helper rules (LALR-friendly). Where LALR(1) takes the character-level
grammar (strict: a shift/reduce conflict is never settled silently), the parser is
deterministic; where it does not, even after the regular rules are rewritten as automata,
the grammar is :attr:`~.grammar.Grammar.generalized`: any context-free GBNF loads, ambiguous
or not, and the generalized LR runtime follows every conflict.
"""

from __future__ import annotations

import bisect
import re
import sys
from dataclasses import dataclass, replace

from ..errors import GrammarError
from .grammar import Grammar, Rule, Terminal
from .lalr import build_parse_table
from .limits import CompileLimits, applied, check_size
from .normalize import without_useless_rules

MAX_CODE_POINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-", "^": "^",
            "/": "/", "'": "'"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


class GbnfError(GrammarError):
    """A GBNF grammar is invalid or cannot be read exactly; ``line`` and ``column`` are 1-based."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        self.line = line
        self.column = column
        where = (f"line {line}, column {column}: " if column is not None else f"line {line}: ") if line else ""
        super().__init__(f"{where}{message}")


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

    Rules are first taken as written. Where LALR(1) cannot read them, the rules that refer to
    no recursive rule (``number ::= [0-9] | [1-9] [0-9]{0,15}``: regular languages) are
    rewritten from their deterministic automaton, one rule per state (left-linear, else
    right-linear), which no longer hides an ambiguity inside the rule; what still conflicts
    is reported as the rules as written do."""
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
    grammar = _grammar(rules, start, text, frozenset())
    if _is_lalr(grammar):
        return grammar
    regular = _regular_rules(rules)
    # left-linear first (the stack stays one frame deep), then right-linear (one frame per
    # character, but the choice between a rule and what shares its prefix waits until they part)
    general = grammar
    for linear in ("left", "right") if regular else ():
        try:
            rewritten = _grammar(rules, start, text, regular, linear)
        except (_TooManyStates, RecursionError):  # a long chain of rules inlined
            continue
        if general is grammar:
            general = rewritten  # fewer forks: the regular rules are deterministic automata
        if _is_lalr(rewritten):
            return rewritten
    # not LALR(1) in any form: the generalized LR parser reads it as it is, every conflict followed
    general = replace(general, strict=False, generalized=True)
    build_parse_table(general)
    return general


def _grammar(rules: dict[str, tuple], start: str, text: str, as_automata: frozenset,
             linear: str = "left") -> Grammar:
    builder = _Builder(rules, as_automata, linear)
    builder.build()
    # a rule that derives no text (u ::= "c" u) would let the parser shift into a dead end:
    # it goes, with the alternatives that use it (same language)
    return without_useless_rules(Grammar(terminals=tuple(builder.terminals), rules=tuple(builder.rules),
                                         start=_rule_name(start), source=text, strict=True))


def _regular_rules(rules: dict[str, tuple]) -> frozenset:
    """The rules from which no rule can reach itself again: each is a regular language.
    (Rules are peeled off from those that refer to no rule left; what a cycle or an
    undefined name keeps stays.)"""
    refs = {name: set() for name in rules}
    for name, (body, _, _) in rules.items():
        _collect_refs(body, refs[name])
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


def _collect_refs(node: tuple, out: set) -> None:
    kind = node[0]
    if kind == "ref":
        out.add(node[1])
    elif kind in ("seq", "alt"):
        for item in node[1]:
            _collect_refs(item, out)
    elif kind == "rep":
        _collect_refs(node[1], out)


MAX_RULE_STATES = 2_000
"""Automaton states a rewritten regular rule may have (past it, the rule stays as written)."""


class _TooManyStates(Exception):
    pass


class _Automaton:
    """A regular rule's AST as an NFA over atom ids (Thompson), then its DFA (subsets)."""

    def __init__(self, rules: dict[str, tuple], atoms_of: dict):
        self.rules = rules
        self.atoms_of = atoms_of
        self.moves: list[list[tuple[int, int]]] = []  # per state: (atom, target)
        self.empty: list[list[int]] = []  # per state: ε targets

    def state(self) -> int:
        self.moves.append([])
        self.empty.append([])
        return len(self.moves) - 1

    def add(self, node: tuple, source: int) -> int:
        """States for ``node`` entered at ``source``; returns the exit state."""
        kind = node[0]
        if kind == "chars":
            target = self.state()
            for atom in self.atoms_of[node[1]]:
                self.moves[source].append((atom, target))
            return target
        if kind == "ref":
            return self.add(self.rules[node[1]][0], source)
        if kind == "seq":
            for item in node[1]:
                source = self.add(item, source)
            return source
        if kind == "alt":
            target = self.state()
            for item in node[1]:
                self.empty[self.add(item, source)].append(target)
            return target
        _, body, low, high = node
        for _ in range(low):
            source = self.add(body, source)
        if high is None:  # a loop back to its entry
            loop = self.state()
            self.empty[source].append(loop)
            self.empty[self.add(body, loop)].append(loop)
            return loop
        target = self.state()
        for _ in range(high - low):
            self.empty[source].append(target)
            source = self.add(body, source)
        self.empty[source].append(target)
        return target

    def dfa(self, body: tuple) -> tuple[list[dict[int, int]], set[int]]:
        """(per DFA state: atom -> next state, the accepting states); state 0 is the start."""
        start = self.state()
        end = self.add(body, start)
        first = self._closure({start})
        index = {first: 0}
        table: list[dict[int, int]] = [{}]
        accepting = set()
        work = [first]
        while work:
            subset = work.pop()
            here = index[subset]
            if end in subset:
                accepting.add(here)
            by_atom: dict[int, set] = {}
            for q in subset:
                for atom, target in self.moves[q]:
                    by_atom.setdefault(atom, set()).add(target)
            for atom, targets in sorted(by_atom.items()):
                nxt = self._closure(targets)
                if nxt not in index:
                    if len(index) >= MAX_RULE_STATES:
                        raise _TooManyStates()
                    index[nxt] = len(table)
                    table.append({})
                    work.append(nxt)
                table[here][atom] = index[nxt]
        return table, accepting

    def _closure(self, states) -> frozenset:
        seen = set(states)
        stack = list(states)
        while stack:
            for nxt in self.empty[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return frozenset(seen)


def _rule_name(name: str) -> str:
    return f"g:{name}"


class _Builder:
    def __init__(self, rules: dict[str, tuple], as_automata: frozenset = frozenset(), linear: str = "left"):
        self.source = rules
        self.as_automata = as_automata
        self.linear = linear
        self.rules: list[Rule] = []
        self.terminals: list[Terminal] = []
        self.helpers = 0
        sets = []
        for body, _, _ in rules.values():
            _collect_sets(body, sets)
        self.atoms, self.atoms_of = _atoms(sets)
        self.set_symbol: dict[tuple, str] = {}

    def build(self) -> None:
        for k, intervals in enumerate(self.atoms):
            pattern = "[" + "".join(_class_range(low, high) for low, high in intervals) + "]"
            self.terminals.append(Terminal(f"C{k}", pattern))
        for name, (body, _, _) in self.source.items():
            if name in self.as_automata:
                self.automaton_rules(name, body)
            else:
                self.rules.append(Rule(_rule_name(name), self.alternatives(body, name)))

    def automaton_rules(self, name: str, body: tuple) -> None:
        """A regular rule from its DFA, one rule per state; a DFA spells each text one way.
        Left-linear: L_q is the text that leads from the start to state q, ``L_q -> L_p C_a``
        per move p -a-> q, ``L_0 -> ε``, and the rule is every L_q of an accepting q.
        Right-linear: R_q is the text that leads from q to the end, ``R_p -> C_a R_q`` per
        move, ``R_q -> ε`` where q accepts, and the rule is R_0."""
        table, accepting = _Automaton(self.source, self.atoms_of).dfa(body)
        state_name = lambda q: f"g:{name}@{q}"  # noqa: E731
        if self.linear == "right":
            for p, moves in enumerate(table):
                alternatives = [(f"C{atom}", state_name(q)) for atom, q in moves.items()]
                alternatives += [()] if p in accepting else []
                self.rules.append(Rule(state_name(p), tuple(alternatives)))
            self.rules.append(Rule(_rule_name(name), ((state_name(0),),)))
            return
        into: list[list[tuple[str, str]]] = [[] for _ in table]
        for p, moves in enumerate(table):
            for atom, q in moves.items():
                into[q].append((state_name(p), f"C{atom}"))
        for q in range(len(table)):
            alternatives = [(p, c) for p, c in into[q]] + ([()] if q == 0 else [])
            self.rules.append(Rule(state_name(q), tuple(tuple(a) for a in alternatives)))
        self.rules.append(Rule(_rule_name(name), tuple((state_name(q),) for q in sorted(accepting))))

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
                symbols.append(self.symbol(item, owner))
        return tuple(symbols)

    def helper(self, owner: str, alternatives) -> str:
        self.helpers += 1
        name = f"g:{owner}#{self.helpers}"
        self.rules.append(Rule(name, tuple(alternatives)))
        return name

    def symbol(self, node: tuple, owner: str) -> str:
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
            return _rule_name(name)
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
