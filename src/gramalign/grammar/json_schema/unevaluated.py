"""``unevaluatedProperties`` and ``unevaluatedItems``: what the other keywords left unevaluated.

Which keys (items) of an instance count as evaluated depends on which subschemas the
instance passes: every object (array) alternative of a shape records what its conjunction of
keywords evaluated (:class:`~.shapes.ObjectShape` ``evaluated``), and an instance in several
alternatives was evaluated by all of them. So the instances an ``unevaluated*`` keyword
accepts are the union, over sets I of alternatives, of "in every alternative of I, and every
key (item) outside the union of their evaluated sets is in the keyword's schema". The union
is exact without complements: a smaller set I only asks more of an instance, and for every
instance the set of all alternatives it is in is one of the terms. Sets I where a member
adds nothing to what the others evaluate, or whose members are provably disjoint, are left
out; beyond :data:`MAX_COMBINATIONS` terms the schema is refused at the keyword.
"""

from __future__ import annotations

from dataclasses import replace

from ...errors import SchemaCompileError
from ..automata.algebra import MAX_STATES, difference, union
from .shapes import ALL_KEYS, ANY, ArrayShape, ObjectShape, Ref, is_empty_dfa, meet_arrays, meet_objects
from .strings import any_string_contents, literal_contents_dfa

__all__ = ["MAX_COMBINATIONS", "unevaluated_items", "unevaluated_properties"]

MAX_COMBINATIONS = 64
"""Most sets of overlapping alternatives one ``unevaluated*`` keyword may split into."""


def unevaluated_properties(objects: tuple, value: "Ref | None", pattern_dfa, disjoint, pointer: str,
                           max_states: int = MAX_STATES) -> tuple:
    """The object alternatives of ``objects`` whose unevaluated members are in ``value``
    (None: there are none), each recording that it evaluated every key. ``pattern_dfa`` maps
    a ``patternProperties`` regex to its key language; ``disjoint(a, b)`` is True only when
    no object is in both alternatives."""
    everything = frozenset([ALL_KEYS])
    if value == ANY:
        return tuple(replace(o, evaluated=everything) for o in objects)
    result = []
    for shape, evaluated in _combinations(objects, lambda o: o.evaluated, _covers_keys, meet_objects_of(max_states),
                                          disjoint, pointer, "unevaluatedProperties"):
        if ALL_KEYS not in evaluated:
            keys = _evaluated_keys(evaluated, pattern_dfa, max_states)
            others = difference(any_string_contents(), keys, max_states=max_states)
            extras = (() if is_empty_dfa(keys) else ((keys, ANY),)) + (
                ((others, value),) if value is not None and not is_empty_dfa(others) else ())
            shape = meet_objects(shape, ObjectShape(extras=extras), max_states)
        if shape is not None:
            result.append(replace(shape, evaluated=everything))
    return tuple(result)


def unevaluated_items(arrays: tuple, value: "Ref | None", disjoint, pointer: str) -> tuple:
    """The array alternatives of ``arrays`` whose unevaluated items are in ``value`` (None:
    there are none), each recording that it evaluated every item."""
    if value == ANY:
        return tuple(replace(a, evaluated_all=True) for a in arrays)
    result = []
    for shape, (prefix, every, matched) in _combinations(arrays, _items_evaluated, _covers_items,
                                                        lambda a, b: meet_arrays(a, b), disjoint, pointer,
                                                        "unevaluatedItems"):
        if not every:
            # an item after the prefix is evaluated when some `contains` it passed matches it
            alternatives = set(matched) | ({value} if value is not None else set())
            rest = (None if not alternatives else next(iter(alternatives)) if len(alternatives) == 1
                    else frozenset([("or", frozenset(alternatives))]))
            shape = meet_arrays(shape, ArrayShape(prefix=(ANY,) * prefix, rest=rest).normalized())
        if shape is not None:
            result.append(replace(shape, evaluated_all=True))
    return tuple(result)


def meet_objects_of(max_states: int):
    return lambda a, b: meet_objects(a, b, max_states)


def _items_evaluated(shape: ArrayShape) -> tuple:
    return shape.evaluated_prefix, shape.evaluated_all, shape.evaluated_by


def _covers_keys(big: frozenset, small: frozenset) -> bool:
    return ALL_KEYS in big or small <= big


def _covers_items(big: tuple, small: tuple) -> bool:
    return big[1] or (not small[1] and small[0] <= big[0] and small[2] <= big[2])


def _union_evaluated(a, b):
    if isinstance(a, frozenset):
        return a | b
    return max(a[0], b[0]), a[1] or b[1], a[2] | b[2]


def _combinations(alternatives: tuple, evaluated_of, covers, meet_one, disjoint, pointer: str, keyword: str):
    """(meet of a set of alternatives, what they evaluated together), for the sets worth a
    term of their own (see the module docstring)."""
    found: list = []  # (shape, evaluated, member indices)
    for i, alternative in enumerate(alternatives):
        mine = evaluated_of(alternative)
        grown = [(alternative, mine, (i,))]
        for shape, evaluated, members in found:
            if covers(evaluated, mine) or covers(mine, evaluated):
                continue  # the larger set's term is inside the smaller one's
            if any(disjoint(alternatives[j], alternative) for j in members):
                continue
            both = meet_one(shape, alternative)
            if both is not None:
                grown.append((both, _union_evaluated(evaluated, mine), members + (i,)))
        found += grown
        if len(found) > MAX_COMBINATIONS:
            raise SchemaCompileError(f"{keyword}: the alternatives it applies to overlap in more than "
                                     f"{MAX_COMBINATIONS} ways that evaluate different "
                                     f"{'properties' if keyword == 'unevaluatedProperties' else 'items'}",
                                     pointer, keyword)
    return [(shape, evaluated) for shape, evaluated, _ in found]


def _evaluated_keys(evaluated: frozenset, pattern_dfa, max_states: int):
    """The key contents in ``evaluated`` (names and patterns; not :data:`ALL_KEYS`)."""
    names = [item[1] for item in evaluated if item[0] == "name"]
    keys = literal_contents_dfa(names)
    for item in sorted(evaluated):
        if item[0] == "pattern":
            keys = union(keys, pattern_dfa(item[1]), max_states=max_states)
    return keys
