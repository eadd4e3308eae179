"""Value references that surely have a value the emitter writes, shown by a small witness.

Rules emitted on demand must be proved to derive some text before the parser may enter them
(``grammar/productive.py``); proving it on the rules means emitting them, and for an object
that is the rules (key automata, shapes) of its required members' values, and theirs, all the
way down: most of a schema's first parser states' cost. Here the same fact is read from the
evaluator's shapes: a value set surely holds ``null``, a boolean, a number or a string of its
own; or ``{}``/``[]``; or an object of just its required members (in schema order, each with
such a value), or an array of its first few items. The emitter writes every value of a shape
(its grammar is exact), so such a witness means the value's rule derives text.

A False only means "not shown here" (counted strings of a pattern, objects needing extra
members, unique items, ``contains``, reference cycles): the proof on rules decides then.

Most values are read from the schema itself, without their shapes (whose evaluation is most
of a first visit's cost, and would be spent on members the parser may never reach): a
subschema of a scalar ``type`` and annotations only, a string of a ``pattern`` and a
``format`` (a shortest string of both, not their product automaton), or an object of
``properties`` and ``required`` whose required members are such. Anything else goes by the
shape.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

from ...errors import GramalignError
from ..automata.dfa import ByteDFA
from .keywords import draft_keywords
from .resolve import escape_pointer
from .shapes import ALL_NUMBERS, ArrayShape, ObjectShape, Ref, Shape, is_empty_dfa
from .strings import MAX_COUNTED_LENGTH, CountedStrings, any_string_contents
from .unique import value_key

MAX_WITNESS_ITEMS = 4
"""Items an array witness may need (``minItems``) before the rule proof decides instead."""

_ANNOTATIONS = frozenset(["title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                          "writeOnly", "format"])
_SCALARS = frozenset(["string", "number", "integer", "boolean", "null"])
_TYPES = _SCALARS | {"object", "array"}
_OBJECT_KEYWORDS = frozenset(["type", "properties", "patternProperties", "required",
                              "additionalProperties"]) | _ANNOTATIONS
_STRING_UNION_KEYWORDS = (_ANNOTATIONS - {"format"}) | {"type", "anyOf", "oneOf"}
_PATTERN_FORMAT_KEYWORDS = _ANNOTATIONS | {"type", "pattern"}


_BY_TYPE_KEYWORDS = frozenset(["type", "enum", "const", "minLength", "maxLength", "pattern", "format", "minimum",
                                "maximum", "multipleOf", "items", "additionalItems", "prefixItems", "minItems",
                                "maxItems", "uniqueItems", "contains", "properties", "patternProperties",
                                "additionalProperties", "required", "minProperties", "maxProperties", "propertyNames",
                                "dependencies", "dependentRequired", "dependentSchemas"])
"""Keywords :meth:`NonEmptyValues._by_type` reads; with any other (applicators, ``not``,
exclusive bounds, whose meaning changes between drafts) the shape decides."""


_STRING_KEYWORDS = frozenset(["minLength", "maxLength", "pattern", "format"])


def _of_type(value, types: list) -> bool:
    """Is the JSON value ``value`` of one of ``types``?"""
    if value is None:
        return "null" in types
    if isinstance(value, bool):
        return "boolean" in types
    if isinstance(value, (int, float, Decimal)):
        return "number" in types or ("integer" in types and value == int(value))
    kinds = {str: "string", list: "array", dict: "object"}
    return kinds.get(type(value)) in types


def _some_length(minimum, maximum) -> bool:
    """Is there a length from ``minimum`` to ``maximum`` (None: no bound) that strings are
    counted up to (``strings.MAX_COUNTED_LENGTH``)?"""
    if not _plain_count(minimum) or (maximum is not None and not _plain_count(maximum)):
        return False
    return minimum <= MAX_COUNTED_LENGTH and (maximum is None or minimum <= maximum)


def _plain_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _some_number(keywords: dict, integer: bool) -> bool:
    """Is there a number (an integer if ``integer``) from ``minimum`` to ``maximum`` that is a
    multiple of ``multipleOf``? Exact, in rationals of the schema's decimal numbers."""
    bounds = [keywords.get(k) for k in ("minimum", "maximum", "multipleOf")]
    if not all(v is None or (isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)) for v in bounds):
        return False
    try:
        low, high, step = (None if v is None else Fraction(str(v)) if isinstance(v, float) else Fraction(v)
                           for v in bounds)
    except (ValueError, OverflowError):  # (infinities are refused before: not shown here)
        return False
    if step is not None and step <= 0:
        return False
    if integer:  # the integer multiples of p/q are the multiples of p
        step = Fraction(1) if step is None else Fraction(step.numerator)
    if step is None:
        return low is None or high is None or low <= high
    if low is not None:
        witness = math.ceil(low / step) * step
    elif high is not None:
        witness = math.floor(high / step) * step
    else:
        return True
    return (low is None or low <= witness) and (high is None or witness <= high)


def _contents(language) -> ByteDFA:
    return language.contents if isinstance(language, CountedStrings) else language


def _some_string(language) -> "bytes | None":
    """A shortest string of a (non-empty) string language; for counted strings, the shortest
    of their contents if it has a length they allow, else None (None too where the contents
    are not UTF-8: no JSON string has them)."""
    word = _contents(language).shortest_word()
    try:
        word.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return word if _holds(language, word) else None


def _holds(language, word: bytes) -> bool:
    """Is the string whose contents are ``word`` in ``language``?"""
    if not _contents(language).matches(word):
        return False
    if not isinstance(language, CountedStrings):
        return True
    length = len(word.decode("utf-8", "replace"))  # (only a word of _some_string is asked)
    return language.minimum <= length and (language.maximum is None or length <= language.maximum)


class NonEmptyValues:
    """``surely(ref, depth)``: does the emitter's rule for ``ref`` at ``depth`` derive text?"""

    def __init__(self, evaluator, indent: "str | None", max_depth: int):
        self._evaluator = evaluator
        self._indent = indent
        self._max_depth = max_depth
        self._shown: set = set()

    def surely(self, ref: Ref, depth: int) -> bool:
        return self._ref(ref, depth, set())

    def _ref(self, ref: Ref, depth: int, busy: set, shapes: bool = True) -> bool:
        """``surely``, where ``shapes=False`` shows only what the keywords show. A reference
        is read at the end of its chain of plain ``$ref``s: the members of a wide object that
        all refer to one definition are one question (eslintrc's 258 rules: 54 ms)."""
        if len(ref) == 1:
            (location,) = ref
            if isinstance(location, str):
                try:
                    ref = frozenset([self._evaluator.end_of_ref_chain(self._evaluator.index.normalize(location))])
                except (GramalignError, RecursionError):
                    return False
        key = (ref, depth if self._indent is not None else 0)
        if key in self._shown:
            return True
        if key in busy:  # a witness through itself is no witness
            return False
        busy.add(key)
        try:
            shown = self._schema(ref, depth, busy)
            if shown is None:
                shown = shapes and self._shape(self._evaluator.shape(ref), depth, busy)
        except (GramalignError, RecursionError):  # the rule proof meets (and reports) the error
            shown = False
        finally:
            busy.discard(key)
        if shown:
            self._shown.add(key)
        return shown

    def _schema(self, ref: Ref, depth: int, busy: set) -> "bool | None":
        """Shown from the subschema's keywords alone (a format's strings, a scalar type, a
        value of no ``type``: ``null``; an object of plain required members); None: its
        shape decides. (``format`` allows some string of every type it applies to.)"""
        index = self._evaluator.index
        if len(ref) != 1:
            return self._meet(ref, depth, busy)
        (location,) = ref
        if not isinstance(location, str):
            return None
        location = self._evaluator.end_of_ref_chain(index.normalize(location))
        node = index.node(location)
        if node is True or node == {}:
            return True
        if isinstance(node, dict) and node.get("type") == "string" and node.keys() <= _STRING_UNION_KEYWORDS \
                and not node.keys().isdisjoint(("anyOf", "oneOf")):
            return self._string_union(node, location)
        if isinstance(node, dict) and node.get("type") == "string" and "pattern" in node and "format" in node \
                and node.keys() <= _PATTERN_FORMAT_KEYWORDS:
            return self._evaluator.pattern_and_format_allow_some(node, location)
        if not isinstance(node, dict):
            return None
        node = draft_keywords(node, index.draft_at(location))  # (what the draft does not define is an annotation)
        if not node.keys() <= _OBJECT_KEYWORDS:
            if node.keys() == {"anyOf"} and isinstance(node["anyOf"], list):  # a value of one branch,
                branches = [frozenset([f"{location}/anyOf/{i}"]) for i in range(len(node["anyOf"]))]
                # one shown by its keywords first, then by shapes
                return any(self._ref(b, depth, busy, shapes=False) for b in branches) or any(
                    self._ref(b, depth, busy) for b in branches) or None
            return self._by_type(node, location, depth, busy)
        types = node.get("type")
        if types is None:
            return True  # ``null`` is a value of every such schema (``required`` binds objects only)
        types = [types] if isinstance(types, str) else types
        if not isinstance(types, list) or not types or not all(t in _TYPES for t in types):
            return None  # (an unknown type is the evaluator's error to report)
        if not _SCALARS.isdisjoint(types):
            return True
        if types != ["object"] or self._indent is not None:
            return self._by_type(node, location, depth, busy)  # (an array's [])
        properties, required = node.get("properties", {}), node.get("required", [])
        patterns = node.get("patternProperties", {})
        additional = node.get("additionalProperties", True)
        if not isinstance(properties, dict) or not isinstance(required, list) or not isinstance(patterns, dict):
            return None
        for name in required:
            if not isinstance(name, str):
                return None
            # a member's value is in its property's schema and in every pattern's it matches
            # (matched on the name alone: the object's shape builds every pattern's automaton
            # and the key languages between them)
            member = [f"{location}/properties/{escape_pointer(name)}"] if name in properties else []
            for pattern in patterns:
                matches = self._evaluator.pattern_matches_key(pattern, name)
                if matches is None:
                    return None
                if matches:
                    member.append(f"{location}/patternProperties/{escape_pointer(pattern)}")
            if not member:
                if additional is True or additional == {}:
                    continue
                if not isinstance(additional, dict):
                    return None
                member = [f"{location}/additionalProperties"]
            if not self._ref(frozenset(member), depth, busy):
                return False  # its shape has these very members: asking it would walk them again
        return True

    def _meet(self, ref: Ref, depth: int, busy: set) -> "bool | None":
        """The values of several subschemas at once (an ``allOf``, a property's schemas from
        several places) where all but one assert nothing (no keyword the draft defines): that
        one's. None otherwise."""
        index = self._evaluator.index
        asserting = []
        for literal in ref:
            if not isinstance(literal, str):
                return None
            location = self._evaluator.end_of_ref_chain(index.normalize(literal))
            node = index.node(location)
            if node is True or (isinstance(node, dict) and not draft_keywords(node, index.draft_at(location))):
                continue
            asserting.append(location)
        if len(asserting) > 1:
            return None
        return True if not asserting else self._ref(frozenset(asserting), depth, busy)

    def _by_type(self, keywords: dict, location: str, depth: int, busy: set) -> "bool | None":
        """A value of one of the ``type``s that its other keywords leave some value of:
        ``null`` or a boolean whatever the keywords of other types say, a string between its
        lengths or of its ``pattern`` alone, a number between its bounds (a multiple of ``multipleOf``), an empty array
        or object, an array of ``minItems`` copies of a value of ``items``; or an ``enum``/
        ``const`` member of the type. ``keywords``: those the draft defines (``_format``,
        ``readonly`` are annotations). None: not shown here."""
        if not keywords.keys() <= _BY_TYPE_KEYWORDS:
            return None
        types = keywords.get("type", sorted(_TYPES))
        types = [types] if isinstance(types, str) else types
        if not isinstance(types, list) or not types or not all(isinstance(t, str) and t in _TYPES for t in types):
            return None
        for keyword in ("enum", "const"):
            if keyword in keywords:
                values = keywords[keyword] if keyword == "enum" else [keywords[keyword]]
                if not isinstance(values, list) or keywords.keys() - {"type", "enum", "const"}:
                    return None
                return any(_of_type(value, types) and all(value_key(value) == value_key(other) for other in
                                                          ([keywords["const"]] if "const" in keywords else []))
                           for value in values) or None
        if "null" in types or "boolean" in types:
            return True  # (every other keyword here constrains one other type)
        if "string" in types:
            strings = keywords.keys() & _STRING_KEYWORDS
            if not strings - {"minLength", "maxLength"} and _some_length(keywords.get("minLength", 0),
                                                                         keywords.get("maxLength")):
                return True
            if strings == {"pattern"} and self._evaluator.pattern_allows_some(keywords["pattern"]):
                return True
        if ("number" in types or "integer" in types) and _some_number(keywords, "integer" in types
                                                                      and "number" not in types):
            return True
        if self._indent is not None:
            return None  # containers: the shapes know max_depth
        if "array" in types and "contains" not in keywords:
            count = keywords.get("minItems", 0)
            if not count:
                return True
            if _plain_count(count) and count <= MAX_WITNESS_ITEMS and count <= keywords.get("maxItems", count) \
                    and isinstance(keywords.get("items"), (dict, bool)) and "prefixItems" not in keywords \
                    and (count == 1 or keywords.get("uniqueItems") is not True) \
                    and self._ref(frozenset([f"{location}/items"]), depth, busy):
                return True
        if "object" in types and not keywords.get("required") and not keywords.get("minProperties", 0):
            return True
        return None

    def _string_union(self, node: dict, location: str) -> "bool | None":
        """A string ``anyOf``/``oneOf`` (``format``s, patterns: host names or addresses) by a
        string of one branch alone: the shortest of its branch, in no other branch for
        ``oneOf``. The union's own shape meets every branch with the complements of the
        others (for host name, IPv4 and IPv6: 0.4 s), and a parent proving its members
        asks it of every member the parser may reach. None: not shown here."""
        unions = node.keys() & {"anyOf", "oneOf"}
        if len(unions) != 1:
            return None
        (keyword,) = unions
        branches = node[keyword]
        if not isinstance(branches, list) or not branches:
            return None
        strings = []
        for i in range(len(branches)):
            language = self._evaluator.shape(frozenset([f"{location}/{keyword}/{i}"])).string
            strings.append(None if language is None or is_empty_dfa(_contents(language)) else language)
        for i, language in enumerate(strings):
            word = _some_string(language) if language is not None else None
            if word is None:
                continue
            if keyword == "anyOf" or not any(other is not None and _holds(other, word)
                                             for j, other in enumerate(strings) if j != i):
                return True
        return None

    def _shape(self, shape: Shape, depth: int, busy: set) -> bool:
        if shape.null or shape.true or shape.false:
            return True
        if shape.number is not None and (shape.number == ALL_NUMBERS or not is_empty_dfa(shape.number)):
            return True
        strings = shape.string
        if isinstance(strings, CountedStrings):
            if strings.contents is any_string_contents() and (strings.maximum is None
                                                               or strings.minimum <= strings.maximum):
                return True
        elif strings is not None and not is_empty_dfa(strings):
            return True
        if self._indent is not None and depth >= self._max_depth:
            return False  # no containers below max_depth with an indent
        inner = depth + 1 if self._indent is not None else depth
        return (any(self._object(o, inner, busy) for o in shape.objects)
                or any(self._array(a, inner, busy) for a in shape.arrays))

    def _object(self, shape: ObjectShape, inner: int, busy: set) -> bool:
        """Its required members alone, in schema order."""
        required = shape.required
        if shape.some or not required <= set(shape.names) or shape.min_properties > len(required):
            return False
        if shape.max_properties is not None and len(required) > shape.max_properties:
            return False
        for name, value in zip(shape.names, shape.values):
            if name in required and (value is None or not self._ref(value, inner, busy)):
                return False
        return True

    def _array(self, shape: ArrayShape, inner: int, busy: set) -> bool:
        """Its first ``minItems`` items, each some value of its position."""
        count = shape.min_items
        if any(c.minimum > 0 for c in shape.contains) or count > MAX_WITNESS_ITEMS:
            return False
        if (shape.max_items is not None and count > shape.max_items) or (shape.unique is not None and count > 1):
            return False
        for position in range(count):
            item = shape.prefix[position] if position < len(shape.prefix) else shape.rest
            if item is None or not self._ref(item, inner, busy):
                return False
        return True
