"""``uniqueItems``, exactly, where the items are finitely many values.

A grammar cannot compare an item with the ones before it in general, but where an item can
only be one of a few JSON values (``enum``, ``const``, booleans, bounded integers, tuples
and closed objects of those), the array rules can track the *set* of values written so
far: one state per subset. :func:`item_values` lists those values, one per JSON value (not
per spelling: ``1`` and ``1.0``, or objects with their keys in another order, are one
value, the one ``("const", ...)`` reference the emitter writes in all its spellings), and
refuses with the pointer of ``uniqueItems`` where the language is infinite or too large.
"""

from __future__ import annotations

import functools
import itertools
import math
from decimal import Decimal

import numpy as np

from ...errors import SchemaCompileError
from ..automata.algebra import intersect
from ..automata.dfa import ByteDFA
from ..automata.regex import regex_to_dfa
from .resolve import json_text
from .shapes import ALL_NUMBERS, ArrayShape, ObjectShape, Ref, is_empty_dfa
from .strings import CountedStrings

__all__ = ["MAX_UNIQUE_SETS", "MAX_UNIQUE_VALUES", "check_subsets", "item_values", "subsets_needed", "value_key"]

MAX_UNIQUE_VALUES = 64
"""Most distinct values the items of a ``uniqueItems`` array may take."""
MAX_UNIQUE_SETS = 1024
"""Most sets of values written so far that a ``uniqueItems`` array tracks: 10 values with
no ``maxItems`` (2^10 sets; 12 values took 4 s to compile), 44 with ``maxItems: 2``."""
_MAX_TUPLE = 4  # positions of an array (members of an object) enumerated as a value


class NotFinite(Exception):
    """The values of a reference are not a short list."""


@functools.lru_cache(maxsize=None)
def _canonical_numbers() -> ByteDFA:
    """One spelling per number: no exponent, no trailing fraction zeros, no ``-0``."""
    return regex_to_dfa(r"0|-?(?:[1-9][0-9]*(?:\.[0-9]*[1-9])?|0\.[0-9]*[1-9])")


def _words(dfa: ByteDFA, limit: int) -> list[bytes]:
    """Every word of a finite ``dfa`` (NotFinite when it has a cycle or more than ``limit``)."""
    words: list[bytes] = []
    table, accepting = dfa.transitions, dfa.accepting
    stack = [(dfa.initial, b"", frozenset([dfa.initial]))]
    while stack:
        state, text, path = stack.pop()
        if accepting[state]:
            words.append(text)
            if len(words) > limit:
                raise NotFinite
        for byte in np.flatnonzero(table[state] >= 0):
            following = int(table[state, byte])
            if following in path:
                raise NotFinite
            stack.append((following, text + bytes([int(byte)]), path | {following}))
    return words


def value_key(value) -> str:
    """A text equal for JSON-equal values (numbers by value, objects by key set)."""
    if value is None or isinstance(value, bool):
        return json_text(value)
    if isinstance(value, (int, float, Decimal)):
        number = Decimal(value) if not isinstance(value, float) else Decimal(repr(value))
        return "n" + (format(number.normalize(), "f") if number != 0 else "0")
    if isinstance(value, str):
        return json_text(value)
    if isinstance(value, list):
        return "[" + ",".join(map(value_key, value)) + "]"
    return "{" + ",".join(json_text(k) + ":" + value_key(value[k]) for k in sorted(value)) + "}"


def _values_of_ref(evaluator, ref: Ref, limit: int, depth: int) -> list:
    if depth > 3:
        raise NotFinite
    shape = evaluator.shape(ref)
    values: list = [v for v, flag in ((None, shape.null), (True, shape.true), (False, shape.false)) if flag]
    if shape.number is not None:
        if shape.number == ALL_NUMBERS:
            raise NotFinite
        spelled = intersect(shape.number, _canonical_numbers(), max_states=evaluator.max_states)
        for word in (() if is_empty_dfa(spelled) else _words(spelled, limit)):
            text = word.decode()
            values.append(int(text) if "." not in text else Decimal(text))
    if isinstance(shape.string, CountedStrings):  # long length bounds only: far more than `limit`
        raise NotFinite
    if shape.string is not None:
        values += [word.decode("utf-8") for word in _words(shape.string, limit)]
    for array in shape.arrays:
        values += _tuples(evaluator, array, limit, depth)
    for obj in shape.objects:
        values += _records(evaluator, obj, limit, depth)
    if len(values) > limit:
        raise NotFinite
    return values


def _tuples(evaluator, array: ArrayShape, limit: int, depth: int) -> list:
    if array.max_items is None or array.max_items > _MAX_TUPLE or array.contains:
        raise NotFinite
    result = []
    for length in range(array.min_items, array.max_items + 1):
        positions = [_values_of_ref(evaluator, array.item(i), limit, depth + 1) for i in range(length)]
        if math.prod(map(len, positions)) > limit:
            raise NotFinite
        for items in itertools.product(*positions):
            if array.unique is None or len({value_key(v) for v in items}) == len(items):
                result.append(list(items))
    return result


def _records(evaluator, obj: ObjectShape, limit: int, depth: int) -> list:
    """Closed objects with every member required (``const`` objects, enums of records)."""
    if obj.extras or obj.some or set(obj.names) != obj.required or len(obj.names) > _MAX_TUPLE:
        raise NotFinite
    if not obj.min_properties <= len(obj.names) <= (obj.max_properties if obj.max_properties is not None
                                                     else len(obj.names)):
        return []
    members = [_values_of_ref(evaluator, value, limit, depth + 1) for value in obj.values]
    if math.prod(map(len, members)) > limit:
        raise NotFinite
    return [dict(zip(obj.names, combination)) for combination in itertools.product(*members)]


def item_values(evaluator, ref: Ref, pointer: str) -> list[tuple[str, Ref]]:
    """The distinct JSON values an item in ``ref`` can be, each as (key, ``const`` reference)."""
    try:
        values = _values_of_ref(evaluator, ref, MAX_UNIQUE_VALUES, 0)
    except NotFinite:
        raise SchemaCompileError(f"uniqueItems is exact only where the items are at most {MAX_UNIQUE_VALUES} "
                                 "values (enum, const, booleans, tuples and records of those); these items "
                                 "are not: pass approximate={'uniqueItems'} to ignore it", pointer,
                                 "uniqueItems") from None
    distinct: dict[str, Ref] = {}
    for value in values:
        distinct.setdefault(value_key(value), frozenset([("const", json_text(value))]))
    return list(distinct.items())


def subsets_needed(values: int, most_items: "int | None") -> int:
    """Sets of distinct values an array of at most ``most_items`` items can have written."""
    top = values if most_items is None else min(values, most_items)
    return sum(math.comb(values, k) for k in range(top + 1))


def check_subsets(values: int, most_items: "int | None", pointer: str) -> None:
    if subsets_needed(values, most_items) > MAX_UNIQUE_SETS:
        raise SchemaCompileError(f"uniqueItems over {values} distinct values needs more than {MAX_UNIQUE_SETS} "
                                 "states (one per set of values written so far); bound maxItems or pass "
                                 "approximate={'uniqueItems'} to ignore it", pointer, "uniqueItems")
