"""From shapes to a grammar: one rule per value reference, deterministic by construction.

Every parser state of the emitted grammar expects terminals with disjoint languages (keys
are disjoint atoms, values of different types start differently), so longest-match lexing
never has to guess and the LALR(1) table has no conflicts. An object is a chain of rules,
one per property position in schema order (optional properties may be skipped, extra keys
come last); a union of several object (or array) shapes is determinised member by member:
after a key, the value decides which alternatives go on, which is possible when the
alternatives' values for that key are pairwise equal, disjoint, or differ in JSON type.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal

import numpy as np

from ...errors import SchemaCompileError
from ..automata.algebra import MAX_STATES, difference, intersect
from ..automata.dfa import ByteDFA, StateLimitError
from ..grammar import Grammar, Rule, Terminal
from ..limits import DEFAULT_LIMITS, check_size, check_time
from .evaluate import Evaluator, first_pointer
from .nonempty import NonEmptyValues
from .numbers import all_numbers, integers
from .shapes import (ALL_NUMBERS, ArrayShape, ObjectShape, Ref, Shape, TooManyAlternatives, any_object, any_shape,
                     is_empty_dfa, meet)
from .strings import (CountedStrings, json_literal_dfa, json_string_dfa, literal_contents_dfa,
                      other_strings, string_contents_dfa)
from .unique import check_subsets, item_values, value_key

MAX_RULES = DEFAULT_LIMITS.max_rules
"""Rules one schema may compile to."""
MAX_VALUE_CLASSES = 64
"""Disjoint classes the competing value schemas of one key may split into."""
MAX_SHARED_OBJECT_REFS = 6
"""Competing value schemas of one key that take objects, read by one union tagged by the
subset of them an object satisfies (each subset is a family of rules; past this, objects
are told apart by complements)."""
MAX_ANY_ORDER_NAMES = 10
"""Named properties per object under property_order='any' (the rules track subsets of them)."""


@dataclass(frozen=True)
class Layout:
    """How values are written: whitespace (None for compact JSON, else the longest run on
    each side of a punctuation mark), string escapes, the order of object members, and
    whether integers may be written with a zero fraction."""

    max_whitespace: int | None = None
    escapes: str = "all"
    property_order: str = "schema"
    integer_fraction: bool = False
    # json.dumps's layout: ``indent`` (None: one line) and the separators between items and
    # after keys; with an indent, rules are specialised by nesting depth (up to max_depth)
    indent: str | None = None
    item_separator: str = ","
    key_separator: str = ":"
    max_depth: int = 32


class Emitter:
    """Rules and terminals of a schema's values. Every rule is registered with a function that
    computes its alternatives later (``_later``); ``lazy=False`` runs them all at once, and
    ``lazy=True`` leaves each until :meth:`alternatives` asks for its rule (the rule source of
    an LR(0) automaton built on demand, see ``grammar/lr0_lazy.py``)."""

    def __init__(self, evaluator: Evaluator, layout: Layout, root: Ref, *, max_states: int = MAX_STATES,
                 lazy: bool = False):
        self.evaluator = evaluator
        self.layout = layout
        self.max_states = max_states
        self.rules: dict[str, list[tuple[str, ...]]] = {}
        self.terminals: dict[str, Terminal] = {}
        self._terminal_names: dict[str, str] = {}
        self._value_rules: dict = {}
        self._value_of_rule: dict[str, tuple[Ref, int]] = {}
        # container states (members, items) shown to reach their closing bracket, by rule: each
        # a test that needs no emission of the states after them (derives_text)
        self._closes: dict[str, Callable[[], bool]] = {}
        self._nonempty = NonEmptyValues(evaluator, layout.indent, layout.max_depth)
        self._memo: dict = {}
        self._value_classes: dict = {}
        self._pending: dict = {}  # rule name -> function giving its alternatives: no deep recursion
        self.start = self._start_rule(root)
        if not lazy:
            while self._pending:
                name, alternatives = self._pending.popitem()
                self._rule(name, alternatives())

    def close(self) -> None:
        """Let go of everything, once done: the functions of the rules (nested, each naming
        the emitter and the others) make reference cycles that only the cyclic collector
        frees, and it freed every automaton and shape the emitter held with them (tens of
        milliseconds in a long-lived process, inside whatever mask set the collection off).
        Called by the lazy tables that own the emitter when they go, and after an eager
        emission; nothing of the emitter may be used after."""
        self.__dict__.clear()

    @staticmethod
    def first_bytes() -> np.ndarray:
        """uint8 [256]: 1 for each byte some lexeme of any schema's grammar may start with
        (punctuation, whitespace, a quote, a number, a literal), known before the rules are."""
        first = np.zeros(256, dtype=np.uint8)
        first[list(b'{}[],:"-0123456789tfn \t\n\r')] = 1
        return first

    def is_terminal(self, name: str) -> bool:
        """Is ``name`` a terminal? (A terminal is made before any alternative names it.)"""
        return name in self.terminals

    def alternatives(self, name: str) -> "tuple[tuple[str, ...], ...] | None":
        """The alternatives of rule ``name``, computed on first call; None for a terminal."""
        if name in self.terminals:
            return None
        alternatives = self._pending.get(name)
        if alternatives is not None:  # taken off once computed: a part that fails fails again
            self._rule(name, alternatives())
            del self._pending[name]
        return tuple(self.rules[name])

    # ------------------------------------------------------------------ terminals

    def _punctuation(self, name: str, char: str) -> str:
        if name not in self.terminals:
            ws = self.layout.max_whitespace
            separator = {",": self.layout.item_separator, ":": self.layout.key_separator}.get(char)
            if ws is None and separator is not None:
                self.terminals[name] = Terminal(name, re.escape(separator), literal=True)
                return name
            if ws is None:
                pattern = "\\" + char
            elif char in "{[":
                pattern = f"\\{char}[ \\t\\n\\r]{{0,{ws}}}"
            elif char in "}]":
                pattern = f"[ \\t\\n\\r]{{0,{ws}}}\\{char}"
            else:
                pattern = f"[ \\t\\n\\r]{{0,{ws}}}\\{char}[ \\t\\n\\r]{{0,{ws}}}"
            self.terminals[name] = Terminal(name, pattern, literal=ws is None)
        return name

    def _lead(self, comma: str, first: bool, depth: int) -> tuple[str, ...]:
        """What comes before a member or item: nothing or the item separator, and with an
        indent a line break and the indentation of the items of a container at ``depth``."""
        indent = self.layout.indent
        if indent is None:
            return () if first else (comma,)
        text = ("" if first else self.layout.item_separator) + "\n" + indent * (depth + 1)
        return (self._literal_terminal(f"{'NEWLINE' if first else 'NEXT'}{depth + 1}", text),)

    def _close(self, bracket: str, char: str, first: bool, depth: int) -> str:
        """The closing bracket of a container at ``depth``: on its own line when it has items."""
        if self.layout.indent is None or first:
            return bracket
        return self._literal_terminal(f"{bracket}{depth}", "\n" + self.layout.indent * depth + char)

    def _nested(self, depth: int) -> int:
        """The depth of a container's items (all one depth without an indent: rules are shared)."""
        return depth + 1 if self.layout.indent is not None else depth

    def _terminal(self, kind: str, dfa: ByteDFA) -> str:
        terminal = Terminal.from_dfa("X", dfa)
        name = self._terminal_names.get(terminal.pattern)
        if name is None:
            name = f"{kind}{len(self._terminal_names)}"
            self._terminal_names[terminal.pattern] = name
            self.terminals[name] = Terminal.from_dfa(name, dfa)
        return name

    def _key_terminal(self, contents: ByteDFA) -> str:
        return self._terminal("KEY", json_string_dfa(contents, escapes=self.layout.escapes, max_states=self.max_states))

    def _name_terminal(self, name: str) -> str:
        """The key terminal of one property name (``_key_terminal`` of its literal contents)."""
        return self._terminal("KEY", json_literal_dfa(name, escapes=self.layout.escapes, max_states=self.max_states))

    def _rule(self, name: str, alternatives: list[tuple[str, ...]]) -> str:
        self.rules[name] = alternatives
        check_size("max_rules", len(self.rules), f"rule {name}", "grammar rules of the schema")
        check_time(f"rule {name}")
        return name

    def _fresh(self, prefix: str) -> str:
        return f"{prefix}_{len(self.rules)}"

    def _later(self, memo: dict, key, prefix: str, alternatives) -> str:
        """The rule ``memo[key]``, created on first use; its alternatives are computed after
        the current rule's (so deep schemas do not recurse deeply)."""
        name = memo.get(key)
        if name is None:
            name = memo[key] = self._fresh(prefix)
            self.rules[name] = []
            self._pending[name] = alternatives
        return name

    # ------------------------------------------------------------------ values

    def _start_rule(self, root: Ref) -> str:
        value = self.value_rule(root, 0)
        if self.layout.max_whitespace is None:
            return self._rule("start", [(value,)])
        ws = f"[ \\t\\n\\r]{{1,{self.layout.max_whitespace}}}"
        self.terminals["WS"] = Terminal("WS", ws)
        # nothing after the value: a model has to stop (EOS) instead of trailing off in whitespace
        return self._rule("start", [(value,), ("WS", value)])

    def value_rule(self, ref: Ref, depth: int) -> str:
        name = self._later(self._value_rules, (ref, depth), "value", lambda: self._located_alternatives(ref, depth))
        self._value_of_rule.setdefault(name, (ref, depth))
        return name

    def derives_text(self, name: str) -> bool:
        """Is rule ``name`` shown to derive some text without emitting its rules? (A value's
        rule with a small witness, :mod:`.nonempty`; a container's state that offers its
        closing bracket, or an object union's state where one alternative gets there by its
        required members; False: not shown, the rules decide.) Proving an object's member
        state by its rules expands every successor state, one per key: quadratic in the
        keys, 80-200 ms for a first visit of a wide object."""
        found = self._value_of_rule.get(name)
        if found is not None:
            return self._nonempty.surely(*found)
        closes = self._closes.get(name)
        return closes is not None and closes()

    def _located_alternatives(self, ref: Ref, depth: int) -> list[tuple[str, ...]]:
        shape = self.evaluator.shape(ref)
        try:
            return self._value_alternatives(shape, depth)
        except StateLimitError as exc:  # a string's JSON spelling (escapes) outgrew its contents
            pointer = first_pointer(ref)
            try:
                node = self.evaluator.index.node(pointer)
            except SchemaCompileError:
                node = None
            keyword = next((k for k in ("pattern", "format", "maxLength", "minLength", "enum", "const")
                            if isinstance(node, dict) and k in node), None)
            raise SchemaCompileError(f"an automaton for this value is too large: {exc}", pointer, keyword) from None

    def _value_alternatives(self, shape: Shape, depth: int, objects: tuple | None = None,
                            arrays: tuple | None = None) -> list[tuple[str, ...]]:
        """The value's alternatives; ``objects``/``arrays`` = (groups, tag) when its object or
        array part shares its rules with overlapping value classes (see :meth:`_split_values`)."""
        alternatives: list[tuple[str, ...]] = []
        if shape.null:
            alternatives.append((self._literal_terminal("NULL", "null"),))
        if shape.true:
            alternatives.append((self._literal_terminal("TRUE", "true"),))
        if shape.false:
            alternatives.append((self._literal_terminal("FALSE", "false"),))
        if shape.number is not None:
            alternatives.append((self._terminal("NUMBER", self._number_spellings(shape.number)),))
        if isinstance(shape.string, CountedStrings) and (self.layout.escapes == "minimal"
                                                         or _within_bmp(shape.string.contents)):
            alternatives.append((self._counted_string_terminal(shape.string),))
        elif isinstance(shape.string, CountedStrings):
            # With every escape, a character outside the BMP is a surrogate pair, two escapes
            # for one code point: not counted here (yet), so the bounds are spelled out.
            alternatives.append((self._terminal("STRING", json_string_dfa(
                self._materialized(shape.string), escapes=self.layout.escapes,
                max_states=self.max_states)),))
        elif shape.string is not None:
            alternatives.append((self._terminal("STRING", json_string_dfa(shape.string, escapes=self.layout.escapes,
                                                                max_states=self.max_states)),))
        if depth >= self.layout.max_depth and self.layout.indent is not None:
            return alternatives  # indentation is exact up to max_depth: no deeper containers
        if shape.objects:
            alternatives.append((self.objects_rule(*(objects or ((shape.objects,), frozenset([0]))), depth),))
        if shape.arrays:
            alternatives.append((self.arrays_rule(*(arrays or ((shape.arrays,), 0)), depth),))
        return alternatives

    def _counted_string_terminal(self, strings: CountedStrings) -> str:
        """Strings of ``contents`` with ``minimum`` to ``maximum`` code points: the spelling of
        the contents, the bounds counted by the parser (see ``Terminal.length``)."""
        spelled = json_string_dfa(strings.contents, escapes=self.layout.escapes, max_states=self.max_states)
        length = (strings.minimum, -1 if strings.maximum is None else strings.maximum)
        key = ("counted", spelled.digest, length)
        name = self._terminal_names.get(key)
        if name is None:
            name = self._terminal_names[key] = f"STRING{len(self._terminal_names)}"
            self.terminals[name] = Terminal.from_dfa(name, spelled, length=length)
        return name

    def _materialized(self, strings: CountedStrings) -> ByteDFA:
        """The automaton of counted strings, where they cannot be counted (a StateLimitError
        names the schema location in ``_located_alternatives``)."""
        return string_contents_dfa(strings, max_states=self.max_states)

    def _number_spellings(self, numbers) -> ByteDFA:
        """The spellings to emit. Shapes hold every spelling of their values (complements
        rely on it); numbers that must be integers are written plainly (``3``, not ``3.0``)
        unless the layout allows the fraction."""
        if numbers == ALL_NUMBERS:
            return all_numbers()
        if not self.layout.integer_fraction and is_empty_dfa(difference(numbers, integers(True),
                                                                         max_states=self.max_states)):
            return intersect(numbers, integers(False), max_states=self.max_states)
        return numbers

    def _literal_terminal(self, name: str, text: str) -> str:
        if name not in self.terminals:
            self.terminals[name] = Terminal(name, text, literal=True)
        return name

    # ------------------------------------------------------------------ objects

    def objects_rule(self, groups: tuple[tuple[ObjectShape, ...], ...], tag: frozenset, depth: int) -> str:
        """Objects in every group of ``tag`` (indices into ``groups``) and in no other group;
        all groups' objects share the rules' states (the first token cannot tell them apart)."""
        lbrace = self._punctuation("LBRACE", "{")
        single = (len(groups) == 1 and len(groups[0]) == 1 and self.layout.property_order == "schema"
                  and not groups[0][0].some)
        return self._later(self._memo, ("objects", groups, tag, depth), "object",
                           lambda: [(lbrace, self._object_chain(groups[0][0], depth) if single
                                     else self._object_union(groups, tag, depth))])

    def _object_chain(self, shape: ObjectShape, depth: int) -> str:
        """Members in schema order: each property may appear at its position (optional ones
        may be skipped), then any number of extra keys, then ``}``."""
        comma, colon, rbrace = (self._punctuation("COMMA", ","), self._punctuation("COLON", ":"),
                                self._punctuation("RBRACE", "}"))
        counting = shape.min_properties > 0 or shape.max_properties is not None
        cap = shape.max_properties if shape.max_properties is not None else shape.min_properties
        n = len(shape.names)
        keys = [self._name_terminal(name) for name in shape.names]
        extras = [(self._key_terminal(contents), value) for contents, value in shape.extras]
        names: dict = {}
        last_required = max((k for k, name in enumerate(shape.names) if name in shape.required), default=-1)

        def next_count(count: int) -> int | None:
            if not counting:
                return 0
            if shape.max_properties is not None:
                return count + 1 if count < shape.max_properties else None
            return min(count + 1, cap)

        def chain(position: int, first: bool, count: int) -> str:
            name = self._later(names, (position, first, count), "members",
                               lambda: chain_alternatives(position, first, count))
            # every name left optional and enough written: skip them all and close
            self._closes.setdefault(name, lambda: count >= shape.min_properties and position > last_required)
            return name

        inner = self._nested(depth)

        def chain_alternatives(position: int, first: bool, count: int) -> list:
            lead = self._lead(comma, first, depth)
            alternatives = []
            following = next_count(count)
            if position < n:
                value = shape.values[position]
                if value is not None and following is not None:
                    alternatives.append(lead + (keys[position], colon, self.value_rule(value, inner),
                                                chain(position + 1, False, following)))
                if shape.names[position] not in shape.required:
                    alternatives.append((chain(position + 1, first, count),))
            else:
                if following is not None:
                    for key_terminal, value in extras:
                        alternatives.append(lead + (key_terminal, colon, self.value_rule(value, inner),
                                                    chain(n, False, following)))
                if count >= shape.min_properties:
                    alternatives.append((self._close(rbrace, "}", first, depth),))
            return alternatives

        return chain(0, True, 0)

    def _object_union(self, groups: tuple[tuple[ObjectShape, ...], ...], tag: frozenset, depth: int) -> str:
        """Object alternatives, determinised over (key, value class) members. The states
        track (alternative, progress, count) elements over the alternatives of all groups;
        ``}`` ends the rule only where the groups with an accepting element are exactly
        ``tag``, so each tag's rule reduces to its own nonterminal while the groups' members
        are read by the same LR states. (With disjoint groups, tags are single groups, and
        a repeated key that makes two groups accept leaves the value ambiguous: no ``}``.)"""
        shapes = tuple(shape for group in groups for shape in group)
        group_of = tuple(g for g, group in enumerate(groups) for _ in group)
        comma, colon, rbrace = (self._punctuation("COMMA", ","), self._punctuation("COLON", ":"),
                                self._punctuation("RBRACE", "}"))
        all_names = []
        for shape in shapes:
            all_names += [n for n in shape.names if n not in all_names]
        atoms = self._key_atoms(shapes, all_names)
        symbols = [(self._name_terminal(n), ("name", n)) for n in all_names]
        symbols += [(self._key_terminal(contents), ("atom", owners)) for contents, owners in atoms]
        key_languages = [literal_contents_dfa([n]) for n in all_names] + [contents for contents, _ in atoms]
        names: dict = {}
        # which `some` conditions a key symbol can satisfy (atoms lie inside or outside each one's keys)
        satisfies = [[tuple(j for j, (keys, _) in enumerate(shape.some)
                            if not is_empty_dfa(intersect(language, keys, max_states=self.max_states)))
                      for shape in shapes] for language in key_languages]

        # any order: the rules remember which names were written (no name twice); objects
        # with more names remember only the required ones, and optional names may repeat
        # (the last one wins, as JSON parsers read it; every occurrence is valid). An object
        # whose required names are too many to remember (or that counts members over more
        # names than it remembers) is read in schema order instead: its progress is a position.
        any_order = self.layout.property_order == "any"
        tracked = [frozenset(range(len(shape.names))) if len(shape.names) <= MAX_ANY_ORDER_NAMES
                   else frozenset(j for j, n in enumerate(shape.names) if n in shape.required) for shape in shapes]
        unordered = [any_order and len(remembered) <= MAX_ANY_ORDER_NAMES
                     and not (len(remembered) < len(shape.names) and shape.min_properties > 0)
                     for shape, remembered in zip(shapes, tracked)]

        def counted(shape: ObjectShape, count: int) -> int:
            cap = shape.max_properties if shape.max_properties is not None else shape.min_properties
            return min(count + 1, cap)

        def missing_required(x: int, progress) -> bool:
            """Whether a required name is still to come: ``progress`` is the set of names
            written (any order) or the position reached in the schema order."""
            shape = shapes[x]
            if unordered[x]:
                return any(name in shape.required and j not in progress for j, name in enumerate(shape.names))
            return any(shape.names[k] in shape.required for k in range(progress, len(shape.names)))

        def step(element, symbol):
            x, progress, count, _ = element
            shape = shapes[x]
            if shape.max_properties is not None and count >= shape.max_properties:
                return None
            kind, payload = symbol
            if kind == "name" and payload in shape.names:
                j = shape.names.index(payload)
                if shape.values[j] is None:
                    return None
                if unordered[x]:
                    if j in progress:  # written already: no duplicate keys
                        return None
                    return shape.values[j], (progress | {j} if j in tracked[x] else progress, counted(shape, count))
                if j < progress or any(shape.names[k] in shape.required for k in range(progress, j)):
                    return None
                return shape.values[j], (j + 1, counted(shape, count))
            if not unordered[x] and missing_required(x, progress):
                return None
            if kind == "name":
                value = shape.value_of(payload)  # not one of this shape's names: its extras decide
                if value is None:
                    return None
            else:
                index = payload[x]
                if index is None:
                    return None
                value = shape.extras[index][1]
            # extra keys come after the named ones in schema order, anywhere in any order
            return value, (progress if unordered[x] else len(shape.names), counted(shape, count))

        def moves(element, index: int, symbol) -> list:
            """(value ref, successor) for the member: one per way its value can settle the
            shape's open `some` conditions its key is eligible for."""
            found = step(element, symbol)
            if found is None:
                return []
            value, (progress, count) = found
            x, satisfied = element[0], element[3]
            cases = [(value, satisfied)]
            for j in satisfies[index][x]:
                if j in satisfied:
                    continue
                wanted = shapes[x].some[j][1]
                cases = [case for ref, done in cases
                         for case in ((ref | wanted, done | {j}), (ref | {("not", wanted, "")}, done))]
            return [(ref, (x, progress, count, done)) for ref, done in cases]

        def accepting(element) -> bool:
            x, progress, count, satisfied = element
            shape = shapes[x]
            return (count >= shape.min_properties and not missing_required(x, progress)
                    and len(satisfied) == len(shape.some))

        inner = self._nested(depth)

        def completes(element) -> bool:
            """Does ``element`` reach acceptance by its required names left alone, in order, each
            with a value shown by a witness (:mod:`.nonempty`)? The states on that way have an
            alternative for each of those members: the value class holding the witness carries
            the element on."""
            x, progress, count, satisfied = element
            shape = shapes[x]
            if len(satisfied) != len(shape.some):
                return False
            if unordered[x]:
                todo = [j for j, name in enumerate(shape.names) if name in shape.required and j not in progress]
            else:
                todo = [j for j in range(progress, len(shape.names)) if shape.names[j] in shape.required]
            if count + len(todo) < shape.min_properties or (
                    shape.max_properties is not None and count + len(todo) > shape.max_properties):
                return False
            return all(shape.values[j] is not None and self._nonempty.surely(shape.values[j], inner) for j in todo)

        def ends_in_tag(elements: frozenset) -> bool:
            """Is ``}`` reached from here by one element's required members (``completes``)?
            Then its group accepts; so must the other groups of ``tag``, and each does where it
            has an element of every object (carried on by every value, accepting everywhere);
            and no group outside ``tag`` may accept, which holds where it has no element."""
            present = {group_of[e[0]] for e in elements}
            if not present <= tag:
                return False
            everywhere = {group_of[e[0]] for e in elements if shapes[e[0]].accepts_all}
            return any(tag - everywhere <= {group_of[e[0]]} and completes(e) for e in elements)

        def state(elements: frozenset, first: bool) -> str:
            name = self._later(names, (elements, first), "members", lambda: state_alternatives(elements, first))
            self._closes.setdefault(name, lambda: _accepting_groups(elements, accepting, group_of) == tag
                                    or ends_in_tag(elements))
            return name

        def state_alternatives(elements: frozenset, first: bool) -> list:
            lead = self._lead(comma, first, depth)
            alternatives = []
            if _accepting_groups(elements, accepting, group_of) == tag:
                alternatives.append((self._close(rbrace, "}", first, depth),))
            for index, (terminal, symbol) in enumerate(symbols):
                member_moves = [m for e in elements for m in moves(e, index, symbol)]
                for value_rule, successors in self._split_values(member_moves, inner):
                    if tag <= {group_of[successor[0]] for successor in successors}:
                        alternatives.append(lead + (terminal, colon, value_rule, state(successors, False)))
            return alternatives

        return state(frozenset((x, frozenset() if unordered[x] else 0, 0, frozenset()) for x in range(len(shapes))),
                     True)

    def _key_atoms(self, shapes, all_names):
        """Disjoint key languages for keys no shape names: each with, per shape, the index of
        its extras entry covering it (None: forbidden there)."""
        atoms = [(other_strings(all_names, max_states=self.max_states), ())]
        for shape in shapes:
            refined = []
            for contents, owners in atoms:
                remaining = contents
                for index, (keys, _) in enumerate(shape.extras):
                    part = intersect(contents, keys, max_states=self.max_states)
                    if not is_empty_dfa(part):
                        refined.append((part, owners + (index,)))
                        remaining = difference(remaining, keys, max_states=self.max_states)
                if not is_empty_dfa(remaining):
                    refined.append((remaining, owners + (None,)))
            for keys, _ in shape.some:  # each atom inside or outside the condition's keys
                refined = [(part, owners) for contents, owners in refined
                           for part in (intersect(contents, keys, max_states=self.max_states),
                                        difference(contents, keys, max_states=self.max_states))
                           if not is_empty_dfa(part)]
            atoms = refined
            if len(atoms) > 64:
                raise SchemaCompileError("the keys of these object alternatives split into too many classes")
        return [(contents, owners) for contents, owners in atoms if any(o is not None for o in owners)]

    def _split_values(self, moves, depth: int):
        """Group member moves by value class: [(value rule at ``depth``, successor elements)].
        Where the competing refs take objects (at most MAX_SHARED_OBJECT_REFS of them), the
        objects are read by one union of the refs' objects, one rule per subset of refs an
        object can satisfy, and only the other values split into classes by complements.
        Telling objects apart by complements multiplies cases: an object outside a schema
        of ten optional properties is outside in one of ten ways, and each meets the
        others' (Vega-Lite's specs needed more than 64)."""
        if not moves:
            return []
        by_ref: dict = {}
        for ref, successor in moves:
            by_ref.setdefault(self.evaluator.canonical(ref), set()).add(successor)
        if len(by_ref) == 1:
            ref, successors = next(iter(by_ref.items()))
            return [(self.value_rule(ref, depth), frozenset(successors))]
        refs = list(by_ref)
        if _distinct_constants(refs) or all(_exclusive_refs(a, b) for k, a in enumerate(refs) for b in refs[k + 1:]):
            # the refs are the classes (e.g. an item matching `contains` or not)
            classes = [(ref, shape, frozenset(by_ref[ref])) for ref in refs
                       if not (shape := self.evaluator.shape(ref)).is_empty]
            return self._class_rules(classes, depth)
        holders = [ref for ref in refs if self.evaluator.shape(ref).objects]
        shared = len(holders) <= MAX_SHARED_OBJECT_REFS
        # partition refinement: split every class by each ref in turn, dropping empty classes
        classes = [((), frozenset())]
        for ref in refs:
            refined = []
            for path, successors in classes:
                for inside in (True, False):
                    if not self._value_class(path + ((ref, inside),), shared).is_empty:
                        refined.append((path + ((ref, inside),), successors | by_ref[ref] if inside else successors))
            classes = refined
            if len(classes) > MAX_VALUE_CLASSES:
                raise SchemaCompileError(f"the value schemas that compete for one key in these anyOf/oneOf "
                                         f"alternatives split into more than {MAX_VALUE_CLASSES} classes")
        # a ("keys", shape) literal stands for a synthesized shape (see Evaluator._literal)
        result = self._class_rules([(frozenset([("keys", piece)]), piece, successors)
                                    for path, successors in classes if successors
                                    for piece in [self._value_class(path, shared)]], depth)
        if not shared or not holders or (depth >= self.layout.max_depth and self.layout.indent is not None):
            return result  # (as _value_alternatives: no containers past max_depth)
        groups = tuple(self.evaluator.shape(ref).objects for ref in holders)
        apart = {(i, j) for i, j in itertools.combinations(range(len(groups)), 2)
                 if self.evaluator.objects_disjoint(groups[i], groups[j])}
        universal = {i for i, group in enumerate(groups) if any(shape.accepts_all for shape in group)}
        for size in range(1, len(holders) + 1):
            for tag in itertools.combinations(range(len(holders)), size):
                if any(pair in apart for pair in itertools.combinations(tag, 2)):
                    continue  # no object satisfies two of them: a rule that could never end
                if not universal <= set(tag):
                    continue  # every object satisfies a ref that takes them all: the same
                successors = frozenset().union(*(by_ref[holders[i]] for i in tag))
                result.append((self.objects_rule(groups, frozenset(tag), depth), successors))
        return result

    def _value_class(self, path: tuple, without_objects: bool) -> Shape:
        """The values in (``inside``) or outside each ref of ``path``, a tuple of (ref,
        inside), but no objects if ``without_objects``; one Shape object per path, so that
        rules keyed by it are shared wherever the same refs compete."""
        piece = self._value_classes.get((path, without_objects))
        if piece is None:
            if not path:
                piece = replace(any_shape(), objects=()) if without_objects else any_shape()
            else:
                ref, inside = path[-1]
                shape = self.evaluator.shape(ref)
                if without_objects:  # the complement of a shape that takes every object has none
                    shape = replace(shape, objects=() if inside else (any_object(),))
                try:
                    part = shape if inside else self.evaluator.complement(shape, "")
                    piece = meet(self._value_class(path[:-1], without_objects), part, self.max_states)
                except TooManyAlternatives as exc:
                    raise SchemaCompileError(f"{exc}: the value schemas that compete for one key here multiply "
                                             "out", first_pointer(ref)) from None
            self._value_classes[(path, without_objects)] = piece
        return piece

    def _class_rules(self, classes: list, depth: int) -> list:
        """[(value rule, successors)] for disjoint value classes [(ref, shape, successors)].
        Classes with objects (or arrays) all start with ``{`` (``[``), so when several have
        them, their objects are read by one shared, tagged union (see :meth:`_object_union`)
        whose end reduces to the class the object belongs to."""
        object_classes = [shape.objects for _, shape, _ in classes if shape.objects]
        array_classes = [shape.arrays for _, shape, _ in classes if shape.arrays]
        object_groups = tuple(object_classes) if len(object_classes) > 1 else None
        array_groups = tuple(array_classes) if len(array_classes) > 1 else None
        # A counted string's length is counted from its opening quote, so where several
        # classes have strings (their terminals all start with a quote), each is an automaton.
        uncounted = (sum(shape.string is not None for _, shape, _ in classes) > 1
                     and any(isinstance(shape.string, CountedStrings) for _, shape, _ in classes))
        if object_groups is None and array_groups is None and not uncounted:
            return [(self.value_rule(ref, depth), successors) for ref, _, successors in classes]
        result = []
        for ref, shape, successors in classes:
            objects = ((object_groups, frozenset([object_groups.index(shape.objects)]))
                       if object_groups and shape.objects else None)
            arrays = (array_groups, array_groups.index(shape.arrays)) if array_groups and shape.arrays else None
            if uncounted and isinstance(shape.string, CountedStrings):
                shape = replace(shape, string=self._materialized(shape.string))
            rule = self._later(self._memo, ("class", ref, objects, arrays, depth, uncounted), "value",
                               lambda shape=shape, objects=objects, arrays=arrays:
                               self._value_alternatives(shape, depth, objects, arrays))
            result.append((rule, successors))
        return result

    # ------------------------------------------------------------------ arrays

    def arrays_rule(self, groups: tuple[tuple[ArrayShape, ...], ...], tag: int, depth: int) -> str:
        """Arrays of ``groups[tag]``, determinised over item value classes like objects
        (:meth:`_object_union`): elements are (alternative, position, contains counts)."""
        lsqb = self._punctuation("LSQB", "[")
        comma, rsqb = self._punctuation("COMMA", ","), self._punctuation("RSQB", "]")
        shapes = tuple(shape for group in groups for shape in group)
        group_of = tuple(g for g, group in enumerate(groups) for _ in group)
        # positions are counted up to where nothing changes any more (contains may start later)
        caps = [s.max_items if s.max_items is not None else
                max([len(s.prefix), s.min_items] + [c.start for c in s.contains]) for s in shapes]
        names: dict = {}
        values = {}  # (x, i): the distinct values an item of a uniqueItems alternative can be there
        for x, shape in enumerate(shapes):
            if shape.unique is not None:
                reachable = range(shape.max_items if shape.max_items is not None else caps[x] + 1)
                for i in reachable:
                    if shape.item(i) is not None:
                        values[x, i] = item_values(self.evaluator, shape.item(i), shape.unique)
                check_subsets(len({key for (y, _), found in values.items() if y == x for key, _ in found}),
                              shape.max_items, shape.unique)

        def accepting(element) -> bool:
            x, i, counts, _ = element
            return i >= shapes[x].min_items and all(c >= needed.minimum for c, needed in
                                                   zip(counts, shapes[x].contains))

        def state(elements: frozenset, first: bool) -> str:
            name = self._later(names, (elements, first), "items", lambda: state_alternatives(elements, first))
            self._closes.setdefault(name, lambda: _accepting_groups(elements, accepting, group_of) == {tag})
            return name

        def state_alternatives(elements: frozenset, first: bool) -> list:
            alternatives = []
            if _accepting_groups(elements, accepting, group_of) == {tag}:
                alternatives.append((self._close(rsqb, "]", first, depth),))
            moves = []
            for x, i, counts, seen in elements:
                shape = shapes[x]
                if shape.max_items is not None and i >= shape.max_items:
                    continue
                ref = shape.item(i)
                if ref is None:
                    continue
                following = i + 1 if shape.max_items is not None else min(i + 1, caps[x])
                for item_ref, new_counts in _contains_cases(ref, shape.contains, counts, i):
                    if shape.unique is None:
                        moves.append((item_ref, (x, following, new_counts, seen)))
                        continue
                    # one move per value not written yet: the set written so far is the state
                    for key, value in values[x, min(i, caps[x])]:
                        if key not in seen:
                            moves.append((item_ref | value, (x, following, new_counts, seen | {key})))
            lead = self._lead(comma, first, depth)
            for value_rule, successors in self._split_values(moves, self._nested(depth)):
                if any(group_of[successor[0]] == tag for successor in successors):
                    alternatives.append(lead + (value_rule, state(successors, False)))
            return alternatives

        start = frozenset((x, 0, (0,) * len(shape.contains), frozenset()) for x, shape in enumerate(shapes))
        return self._later(self._memo, ("arrays", groups, tag, depth), "array", lambda: [(lsqb, state(start, True))])

    # ------------------------------------------------------------------ the grammar

    @staticmethod
    def empty_language_error() -> SchemaCompileError:
        """What a schema whose start rule derives nothing is refused with."""
        return SchemaCompileError("the schema accepts no JSON value at all")

    def grammar(self, source: str) -> Grammar:
        rules = _productive_rules(self.rules)
        if self.start not in rules:
            raise self.empty_language_error()
        rules = _reachable_rules(rules, self.start)
        used = {symbol for alternatives in rules.values() for alt in alternatives for symbol in alt}
        terminals = tuple(t for name, t in self.terminals.items() if name in used)
        return Grammar(terminals=terminals, rules=tuple(Rule(name, tuple(alts)) for name, alts in rules.items()),
                       start=self.start, source=source)


def _within_bmp(contents: ByteDFA) -> bool:
    """Do the strings of ``contents`` hold characters of the BMP only (so no escape of theirs is
    a surrogate pair)? Outside it, UTF-8 leads with F0-F4."""
    return not bool((contents.transitions[:, 0xF0:] >= 0).any())


def _productive_rules(rules: dict) -> dict:
    """Drop alternatives that can never derive a string (empty value sets, forbidden keys)."""
    # A worklist over alternatives, each waiting for its count of unproven rule symbols (one
    # pass over the grammar instead of a sweep of every rule per new productive rule).
    waiting_on: dict[str, list[tuple[str, list[int]]]] = {}
    pending: list[str] = []
    for name, alternatives in rules.items():
        check_time(f"rule {name}")
        for alt in alternatives:
            needed = [symbol for symbol in alt if symbol in rules]
            if not needed:
                pending.append(name)
            counter = [len(needed)]
            for symbol in needed:
                waiting_on.setdefault(symbol, []).append((name, counter))
    productive: set[str] = set()
    while pending:
        name = pending.pop()
        if name in productive:
            continue
        productive.add(name)
        for owner, counter in waiting_on.get(name, ()):
            counter[0] -= 1
            if counter[0] == 0 and owner not in productive:
                pending.append(owner)
    return {name: [alt for alt in alternatives if all(s in productive or s not in rules for s in alt)]
            for name, alternatives in rules.items() if name in productive}


def _reachable_rules(rules: dict, start: str) -> dict:
    seen = {start}
    stack = [start]
    while stack:
        check_time("the rules' reachability")
        for alt in rules[stack.pop()]:
            for symbol in alt:
                if symbol in rules and symbol not in seen:
                    seen.add(symbol)
                    stack.append(symbol)
    return {name: alts for name, alts in rules.items() if name in seen}


def _accepting_groups(elements, accepting, group_of) -> frozenset:
    """The groups with an alternative that accepts here. Where the groups are disjoint value
    classes, only a repeated key (``{"a":1,"a":2}``, which the rules do not track) can
    satisfy two; the value is then ambiguous, and a rule tagged with one group does not
    offer the closing bracket."""
    return frozenset(group_of[element[0]] for element in elements if accepting(element))


def _contains_cases(ref: Ref, contains: tuple, counts: tuple, position: int):
    """(item ref, new counts) for each way the item at ``position`` can match the
    ``contains`` schemas: it is in ``ref`` and, per constraint, in its schema (count + 1,
    capped) or not in it."""
    cases = [(set(ref), ())]
    for needed, count in zip(contains, counts):
        grown = []
        if position < needed.start:
            cases = [(literals, new_counts + (count,)) for literals, new_counts in cases]
            continue
        for literals, new_counts in cases:
            following = count + 1
            if needed.maximum is not None and following > needed.maximum:
                pass  # a further match would exceed maxContains: only non-matching items go on
            else:
                grown.append((literals | needed.ref, new_counts + (min(following, needed.cap),)))
            grown.append((literals | {("not", needed.ref, needed.pointer)}, new_counts + (count,)))
        cases = grown
    return [(frozenset(literals), new_counts) for literals, new_counts in cases]


@functools.lru_cache(maxsize=4096)
def _constant_key(text: str) -> str:
    return value_key(json.loads(text, parse_float=Decimal))


def _constants(ref: Ref) -> set:
    return {_constant_key(lit[1]) for lit in ref if isinstance(lit, tuple) and lit[0] == "const"}


def _distinct_constants(refs: list) -> bool:
    """Whether each ref holds one constant and no two the same value (uniqueItems' moves)."""
    keys = [_constants(ref) for ref in refs]
    return all(len(k) == 1 for k in keys) and len(set().union(*keys)) == len(refs)


@functools.lru_cache(maxsize=1 << 16)
def _exclusive_refs(a: Ref, b: Ref) -> bool:
    """Whether one ref holds the negation of (a subset of) the other's literals, or the two
    hold constants of different JSON values: then no value is in both. (Cached: an object
    union asks again for every pair of its competing refs in each of its states.)"""
    if any(isinstance(lit, tuple) and lit[0] == "not" and lit[1] <= other
           for ref, other in ((a, b), (b, a)) for lit in ref):
        return True
    constants = [_constants(a), _constants(b)]
    return bool(constants[0]) and bool(constants[1]) and not (constants[0] & constants[1])
