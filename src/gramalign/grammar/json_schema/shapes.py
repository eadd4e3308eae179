"""Sets of JSON values, split by type: the algebra the schema compiler evaluates into.

A :class:`Shape` is a union over JSON types: whether ``null``/``true``/``false`` are in,
the numbers (an automaton over their spellings), the strings (an automaton over their
contents), and lists of :class:`ObjectShape` and :class:`ArrayShape` alternatives. Object
members and array items are not shapes but *references* (:data:`Ref`): a frozenset of
literals whose conjunction is the value set — a schema location (its JSON pointer), a
constant (``("const", json)``), a negation (``("not", ref)``) or a disjunction
(``("or", refs)``: an item that ``contains`` or ``unevaluatedItems`` takes). References keep recursion
lazy: a property whose schema is ``{"$ref": "#"}`` is just the literal ``""``.

Intersection (``allOf``) is :func:`meet`, union (``anyOf``) :func:`join`; complements live
in the compiler, which can evaluate references.

Object and array alternatives also carry what their schema *evaluated* (the keys, the item
positions), for ``unevaluatedProperties``/``unevaluatedItems``: a value in several
alternatives of a union was evaluated by all of them, so :func:`meet` unites the sets and
:func:`join` keeps alternatives apart where their sets differ (see :mod:`.unevaluated`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Union

from ..automata.algebra import MAX_STATES, difference, intersect, union
from ..automata.dfa import DEAD, ByteDFA
from .numbers import decimals
from .strings import (COUNTED_PATTERN_LENGTH, CountedStrings, any_string_contents, code_point_lengths,
                      lengths_upward_closed, literal_contents_dfa, string_contents_dfa, with_length)

Literal = Union[str, tuple]
Ref = frozenset  # of literals; the empty frozenset is "any value"
ANY: Ref = frozenset()
ALL_KEYS = ("all",)  # ObjectShape.evaluated: every key (additionalProperties, unevaluatedProperties)
ALL_NUMBERS = "all"  # Shape.number: every JSON number, exponents included


def meet_refs(a: Ref | None, b: Ref | None) -> Ref | None:
    """Conjunction of two references (None means "no value allowed")."""
    if a is None or b is None:
        return None
    return a | b


def is_empty_dfa(dfa: ByteDFA | None) -> bool:
    return dfa is None or dfa.initial == DEAD


@dataclass(frozen=True, eq=False)
class ObjectShape:
    """Objects: named properties (schema order), their values (None: the name may not
    appear), required names, and ``extras`` — disjoint key-contents languages for the
    other keys, each with the value its members must have (keys in no extra are forbidden),
    and ``some``: (keys, value) pairs each needing at least one member with a key in
    ``keys`` and a value in ``value`` (complements of closed objects need them).
    ``evaluated`` names the keys the schema evaluated: ``("name", n)``, ``("pattern",
    regex)`` or :data:`ALL_KEYS` (empty unless the document uses ``unevaluatedProperties``).
    """

    names: tuple[str, ...] = ()
    values: tuple[Ref | None, ...] = ()
    required: frozenset[str] = frozenset()
    extras: tuple[tuple[ByteDFA, Ref], ...] = ()
    min_properties: int = 0
    max_properties: int | None = None
    some: tuple[tuple[ByteDFA, Ref], ...] = ()
    evaluated: frozenset = frozenset()

    def value_of(self, name: str) -> Ref | None:
        """The value constraint on key ``name`` (None: the key is forbidden)."""
        if name in self.names:
            return self.values[self.names.index(name)]
        encoded = name.encode("utf-8")
        for keys, value in self.extras:
            if keys.matches(encoded):
                return value
        return None

    @property
    def accepts_all(self) -> bool:
        """Every object is in it (what it evaluated aside)."""
        return (not self.names and not self.required and self.min_properties == 0 and self.max_properties is None
                and len(self.extras) == 1 and self.extras[0][1] == ANY
                and self.extras[0][0] is any_string_contents() and not self.some)

    @property
    def is_unconstrained(self) -> bool:
        """Every object, and nothing evaluated: a neutral element of :func:`meet_objects`."""
        return not self.evaluated and self.accepts_all

    @property
    def is_empty(self) -> bool:
        if self.max_properties is not None and self.min_properties > self.max_properties:
            return True
        if self.max_properties is not None and len(self.required) > self.max_properties:
            return True
        return any(self.value_of(name) is None for name in self.required)


@dataclass(frozen=True)
class Contains:
    """``contains``: between ``minimum`` and ``maximum`` (None: no bound) items at positions
    ``start`` and later are in ``ref`` (``start`` > 0 only in complements of ``items``)."""

    ref: Ref
    minimum: int = 1
    maximum: int | None = None
    pointer: str = field(default="", compare=False)
    start: int = 0

    @property
    def meaning(self) -> tuple:
        """What the condition says, without the pointers kept for error messages."""
        return frozenset(_without_pointer(literal) for literal in self.ref), self.minimum, self.maximum, self.start

    @property
    def cap(self) -> int:
        """The largest match count worth telling apart from larger ones."""
        return self.maximum if self.maximum is not None else self.minimum


@dataclass(frozen=True, eq=False)
class ArrayShape:
    """Arrays: a value per leading position, ``rest`` for the others (None: forbidden),
    length bounds, ``contains`` constraints (each counted separately), and ``unique``: the
    location of a ``uniqueItems: true`` that applies (None: items may repeat). The items the
    schema evaluated: the first ``evaluated_prefix``, all (``evaluated_all``), and those in
    any ref of ``evaluated_by`` (2020-12 ``contains``)."""

    prefix: tuple[Ref | None, ...] = ()
    rest: Ref | None = ANY
    min_items: int = 0
    max_items: int | None = None
    contains: tuple[Contains, ...] = ()
    unique: str | None = None
    evaluated_prefix: int = 0
    evaluated_all: bool = False
    evaluated_by: frozenset = frozenset()

    @property
    def evaluated(self) -> bool:
        return bool(self.evaluated_prefix or self.evaluated_all or self.evaluated_by)

    def item(self, position: int) -> Ref | None:
        return self.prefix[position] if position < len(self.prefix) else self.rest

    def normalized(self) -> "ArrayShape":
        """Forbidden positions become a length bound; the prefix is cut to what can occur."""
        max_items = self.max_items
        for i, ref in enumerate(self.prefix):
            if ref is None:
                max_items = i if max_items is None else min(max_items, i)
                break
        if self.rest is None:
            max_items = len(self.prefix) if max_items is None else min(max_items, len(self.prefix))
        prefix = self.prefix if max_items is None else self.prefix[:max_items]
        return replace(self, prefix=prefix, max_items=max_items)

    @property
    def accepts_all(self) -> bool:
        return (not self.prefix and self.rest == ANY and self.min_items == 0 and self.max_items is None
                and not self.contains and self.unique is None)

    @property
    def is_unconstrained(self) -> bool:
        return not self.evaluated and self.accepts_all

    @property
    def is_empty(self) -> bool:
        if any(c.maximum is not None and c.minimum > c.maximum for c in self.contains):
            return True
        most = self.max_items
        return most is not None and (self.min_items > most or any(c.minimum > most for c in self.contains))


@functools.cache
def any_object() -> ObjectShape:
    """The object shape of every object (built on first use: its key automaton compiles
    kernels, seconds in a fresh environment, which ``import gramalign`` should not pay)."""
    return ObjectShape(extras=((any_string_contents(), ANY),))


ANY_ARRAY = ArrayShape()


@dataclass(frozen=True, eq=False)
class Shape:
    null: bool = False
    true: bool = False
    false: bool = False
    number: ByteDFA | str | None = None  # None, ALL_NUMBERS, or exponent-free spellings
    string: "ByteDFA | CountedStrings | None" = None  # contents
    objects: tuple[ObjectShape, ...] = ()
    arrays: tuple[ArrayShape, ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def is_empty(self) -> bool:
        return not (self.null or self.true or self.false or self.number is not None or self.string is not None
                    or self.objects or self.arrays)

    @property
    def annotated(self) -> bool:
        """Whether an object or array alternative records what it evaluated."""
        return any(o.evaluated for o in self.objects) or any(a.evaluated for a in self.arrays)

    @property
    def is_any(self) -> bool:
        return (self.null and self.true and self.false and self.number == ALL_NUMBERS
                and self.string is any_string_contents() and len(self.objects) == 1
                and self.objects[0].is_unconstrained and len(self.arrays) == 1 and self.arrays[0].is_unconstrained)


@functools.cache
def any_shape() -> Shape:
    """The shape of every JSON value (built on first use, as :func:`any_object`)."""
    return Shape(True, True, True, ALL_NUMBERS, any_string_contents(), (any_object(),), (ANY_ARRAY,))
EMPTY_SHAPE = Shape()


_EVERY = object()  # `only`'s default for a type it does not constrain (None means "no values")


def only(*, null=True, booleans=True, number=ALL_NUMBERS, string=_EVERY, objects=_EVERY,
         arrays=_EVERY) -> Shape:
    """A shape that constrains some types and lets every value of the others through."""
    return Shape(null, booleans, booleans, number, any_string_contents() if string is _EVERY else string,
                 (any_object(),) if objects is _EVERY else objects, (ANY_ARRAY,) if arrays is _EVERY else arrays)


def _clean_dfa(dfa: ByteDFA | None) -> ByteDFA | None:
    return None if is_empty_dfa(dfa) else dfa


def _meet_leaves(a, b, everything, max_states: int):
    """Intersection of two leaf languages; None is "none", ``everything`` is "all"."""
    if a is None or b is None:
        return None
    if a is everything or a is b:
        return b
    if b is everything:
        return a
    return _clean_dfa(intersect(a, b, max_states=max_states))


def _join_leaves(a, b, everything, max_states: int):
    if a is None:
        return b
    if b is None or a is b:
        return a
    if a is everything or b is everything:
        return everything
    return union(a, b, max_states=max_states)


def meet_numbers(a, b, max_states: int = MAX_STATES):
    return _meet_leaves(a, b, ALL_NUMBERS, max_states)


def join_numbers(a, b, max_states: int = MAX_STATES):
    return _join_leaves(a, b, ALL_NUMBERS, max_states)


def complement_numbers(a, max_states: int = MAX_STATES):
    if a is None:
        return ALL_NUMBERS
    if a == ALL_NUMBERS:
        return None
    # Relative to exponent-free spellings: an exponent spelling of a value outside ``a``
    # is rejected, never a value inside ``a`` accepted.
    return _clean_dfa(difference(decimals(), a, max_states=max_states))


def meet_strings(a, b, max_states: int = MAX_STATES):
    if isinstance(a, CountedStrings) or isinstance(b, CountedStrings):
        if a is None or b is None:
            return None
        if isinstance(a, CountedStrings) and isinstance(b, CountedStrings):
            if a.contents is b.contents:
                return a.meet(b)
            b = b.dfa(max_states=max_states)
        counted, other = (a, b) if isinstance(a, CountedStrings) else (b, a)
        if other is any_string_contents():
            return counted
        if counted.contents is not any_string_contents():
            other = _clean_dfa(intersect(other, counted.contents, max_states=max_states))
            if other is None:
                return None
        if max(counted.minimum, counted.maximum or 0) > COUNTED_PATTERN_LENGTH and lengths_upward_closed(other):
            counted = CountedStrings(counted.minimum, counted.maximum, other)
            return None if counted.is_empty(max_states=max_states) else counted
        return _clean_dfa(with_length(other, counted.minimum, counted.maximum, max_states=max_states))
    return _meet_leaves(a, b, any_string_contents(), max_states)


def join_strings(a, b, max_states: int = MAX_STATES):
    if isinstance(a, CountedStrings) and isinstance(b, CountedStrings) and a.contents is b.contents:
        joined = a.join(b)
        if joined is not None:
            return joined
    for counted, other in ((a, b), (b, a)):
        # Strings no longer than a counted bound join it counted: host names or IP addresses
        # (anyOf of the formats), where one automaton was host name's 24k states by the others.
        if isinstance(counted, CountedStrings) and counted.minimum == 0 and counted.maximum is not None \
                and isinstance(other, ByteDFA) and other is not any_string_contents():
            longest = code_point_lengths(other)[1]
            if longest is not None and longest <= counted.maximum:
                return CountedStrings(0, counted.maximum, union(counted.contents, other, max_states=max_states))
    if a is not None and b is not None:
        a, b = string_contents_dfa(a, max_states=max_states), string_contents_dfa(b, max_states=max_states)
    return _join_leaves(a, b, any_string_contents(), max_states)


def complement_strings(a, max_states: int = MAX_STATES):
    if a is None:
        return any_string_contents()
    if a is any_string_contents():
        return None
    a = string_contents_dfa(a, max_states=max_states)
    return _clean_dfa(difference(any_string_contents(), a, max_states=max_states))


def minus_strings(a, b, max_states: int = MAX_STATES):
    """Strings of ``a`` not in ``b`` (None: none)."""
    if a is None or b is None:
        return a
    result = difference(string_contents_dfa(a, max_states=max_states), string_contents_dfa(b, max_states=max_states),
                        max_states=max_states)
    return _clean_dfa(result)


def meet_objects(a: ObjectShape, b: ObjectShape, max_states: int = MAX_STATES) -> ObjectShape | None:
    if a.is_unconstrained:
        return b
    if b.is_unconstrained:
        return a
    names = a.names + tuple(n for n in b.names if n not in a.names)
    values = tuple(meet_refs(a.value_of(n), b.value_of(n)) for n in names)
    extras = []
    named = literal_contents_dfa(names) if names else None
    for keys_a, value_a in a.extras:
        for keys_b, value_b in b.extras:
            keys = keys_a if keys_a is keys_b else intersect(keys_a, keys_b, max_states=max_states)
            if named is not None:
                keys = difference(keys, named, max_states=max_states)
            if not is_empty_dfa(keys):
                extras.append((keys, value_a | value_b))
    maxima = [m for m in (a.max_properties, b.max_properties) if m is not None]
    seen = {(id(keys), frozenset(map(_without_pointer, value))) for keys, value in a.some}
    some = a.some + tuple((keys, value) for keys, value in b.some
                          if (id(keys), frozenset(map(_without_pointer, value))) not in seen)
    if len(some) > MAX_SOME:
        raise TooManyAlternatives(f"more than {MAX_SOME} 'some member' conditions on one object")
    shape = ObjectShape(names, values, a.required | b.required, tuple(extras),
                        max(a.min_properties, b.min_properties), min(maxima) if maxima else None, some,
                        a.evaluated | b.evaluated)
    return None if shape.is_empty else shape


def meet_arrays(a: ArrayShape, b: ArrayShape) -> ArrayShape | None:
    if a.is_unconstrained:
        return b
    if b.is_unconstrained:
        return a
    length = max(len(a.prefix), len(b.prefix))
    prefix = tuple(meet_refs(a.item(i), b.item(i)) for i in range(length))
    maxima = [m for m in (a.max_items, b.max_items) if m is not None]
    seen = {c.meaning for c in a.contains}
    contains = a.contains + tuple(c for c in b.contains if c.meaning not in seen)
    if len(contains) > MAX_CONTAINS:
        raise TooManyAlternatives(f"more than {MAX_CONTAINS} contains constraints on one array")
    shape = ArrayShape(prefix, meet_refs(a.rest, b.rest), max(a.min_items, b.min_items),
                       min(maxima) if maxima else None, contains,
                       a.unique if a.unique is not None else b.unique, max(a.evaluated_prefix, b.evaluated_prefix),
                       a.evaluated_all or b.evaluated_all, a.evaluated_by | b.evaluated_by).normalized()
    return None if shape.is_empty else shape


MAX_CONTAINS = 6
"""contains constraints one array may have (each is a counter in the array's rules)."""
MAX_SOME = 6
"""'some member' conditions one object may have (each is a flag in the object's rules)."""
MAX_ALTERNATIVES = 64
"""Object (or array) alternatives one value may have after anyOf/allOf expansion."""


def meet(a: Shape, b: Shape, max_states: int = MAX_STATES) -> Shape:
    """Values in both ``a`` and ``b``."""
    if a.is_any:
        return b
    if b.is_any:
        return a
    objects = tuple(o for x in a.objects for y in b.objects if (o := meet_objects(x, y, max_states)) is not None)
    arrays = tuple(r for x in a.arrays for y in b.arrays if (r := meet_arrays(x, y)) is not None)
    _check_alternatives(objects, arrays)
    return Shape(a.null and b.null, a.true and b.true, a.false and b.false,
                 meet_numbers(a.number, b.number, max_states), meet_strings(a.string, b.string, max_states),
                 objects, arrays)


def join(a: Shape, b: Shape, max_states: int = MAX_STATES) -> Shape:
    """Values in ``a`` or ``b``."""
    if a.is_empty or (b.is_any and not a.annotated):
        return b
    if b.is_empty or (a.is_any and not b.annotated):
        return a
    objects = _join_alternatives(a.objects, b.objects)
    arrays = _join_alternatives(a.arrays, b.arrays)
    _check_alternatives(objects, arrays)
    return Shape(a.null or b.null, a.true or b.true, a.false or b.false,
                 join_numbers(a.number, b.number, max_states), join_strings(a.string, b.string, max_states),
                 objects, arrays)


def _join_alternatives(a: tuple, b: tuple) -> tuple:
    # an alternative taking every value absorbs the others unless they evaluated something
    if any(x.is_unconstrained for x in a) and not any(y.evaluated for y in b):
        return a
    if any(x.is_unconstrained for x in b) and not any(y.evaluated for y in a):
        return b
    return a + tuple(x for x in b if x not in a)


def _without_pointer(literal):
    """A ref literal without the JSON pointer a negation keeps for error messages."""
    return literal[:2] if isinstance(literal, tuple) and literal[0] == "not" else literal


class TooManyAlternatives(Exception):
    pass


def _check_alternatives(objects, arrays) -> None:
    if len(objects) > MAX_ALTERNATIVES or len(arrays) > MAX_ALTERNATIVES:
        raise TooManyAlternatives(f"more than {MAX_ALTERNATIVES} object or array alternatives")
