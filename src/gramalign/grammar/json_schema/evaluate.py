"""From schema keywords to :class:`~.shapes.Shape`: what each location of a schema accepts.

:class:`Evaluator` turns a reference (a conjunction of schema locations, constants and
negations) into a shape, keyword by keyword, with the semantics of the document's draft.
Combinators are exact: ``allOf`` meets, ``anyOf`` joins, ``oneOf`` keeps the values of
exactly one branch, ``not`` complements, ``if``/``then``/``else`` is
``(if and then) or (not if and else)``. Whatever cannot be expressed exactly raises
:class:`~gramalign.errors.SchemaCompileError` with the pointer and keyword.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from decimal import Decimal

import numpy as np

from ...errors import LimitExceeded, RegexError, SchemaCompileError
from ..automata.algebra import MAX_STATES, difference, intersect, union
from ..automata.dfa import StateLimitError
from ..limits import check_size, check_time
from . import numbers as num
from .keywords import (check_keyword_values, check_literal_strings, draft_keywords, warn_misspelled_keywords,
                       warn_unknown_format)
from .resolve import SchemaIndex, escape_pointer, json_text
from .shapes import (ALL_KEYS, ALL_NUMBERS, ANY, ANY_ARRAY, EMPTY_SHAPE, ArrayShape, Contains, ObjectShape, Ref,
                     Shape, TooManyAlternatives, any_object, any_shape, complement_numbers, complement_strings,
                     is_empty_dfa, join, join_numbers, join_strings, meet, meet_arrays, meet_numbers, meet_objects,
                     meet_strings, minus_strings, only)
from .strings import (MAX_COUNTED_LENGTH, CountedStrings, any_string_contents, counted_or_dfa, literal_contents_dfa,
                      other_strings, string_contents_dfa)
from .unevaluated import unevaluated_items, unevaluated_properties

_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_STRING_KEYWORDS = ("minLength", "maxLength", "pattern", "format")
_OBJECT_KEYWORDS = ("properties", "patternProperties", "additionalProperties", "required", "propertyNames",
                    "minProperties", "maxProperties")
_ARRAY_KEYWORDS = ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains")
_PLAIN_REF_KEYWORDS = frozenset(["$ref", "$comment", "$defs", "definitions", "$id", "$anchor", "$schema", "title",
                                  "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
                                  "$dynamicAnchor", "$recursiveAnchor"])
MAX_PROPERTIES = 1000
"""Most names (``properties`` plus ``required``) one object schema may have."""
MAX_CONTAINS_COUNT = 50
"""Largest minContains/maxContains (every count is a state of the array's rules)."""


def _decimal(value) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number {value}")
        return Decimal(repr(value))
    return Decimal(value)


def _is_number(value) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


class TrackingNeeded(Exception):
    """An ``unevaluated*`` keyword was met by an evaluator that does not record what the
    schemas evaluate: the compile starts again with ``track_evaluated=True`` (what was
    evaluated so far is cheap: it stopped at the first such keyword it reached)."""


class Evaluator:
    """Evaluates references of one schema document; results are memoised.

    With ``track_evaluated``, shapes record what their schemas evaluated, which costs
    shortcuts (an object that evaluated a name no longer absorbs others in a union), so it
    is off until an ``unevaluated*`` keyword is met (:class:`TrackingNeeded`): documents
    without one do not pay for it."""

    def __init__(self, index: SchemaIndex, *, max_states: int = MAX_STATES, approximate: frozenset[str] = frozenset(),
                 track_evaluated: bool = False):
        self.index = index
        self.draft = index.draft
        self.max_states = max_states
        self.approximate = approximate
        self.track_evaluated = track_evaluated
        self._shapes: dict[Ref, Shape] = {}
        self._chain_ends: dict[str, str] = {}
        self._in_progress: set = set()

    # ------------------------------------------------------------------ references

    def shape(self, ref: Ref) -> Shape:
        found = self._shapes.get(ref)
        if found is not None:
            return found
        if ref in self._in_progress:
            raise SchemaCompileError("this reference cycle never reaches a value (a schema that is its own "
                                     "allOf/$ref/not without an object or array in between)",
                                     first_pointer(ref))
        self._in_progress.add(ref)
        try:
            result = any_shape()
            for literal in sorted(ref, key=repr):
                result = meet(result, self._literal(literal), self.max_states)
                if result.is_empty:
                    break
        except TooManyAlternatives as exc:
            raise SchemaCompileError(f"{exc}: the combinations here multiply out", first_pointer(ref)) from None
        finally:
            self._in_progress.discard(ref)
        self._shapes[ref] = result
        return result

    def canonical(self, ref: Ref) -> Ref:
        """``ref`` with every location replaced by the first copy of the same subschema."""
        return frozenset(self.index.canonical(lit) if isinstance(lit, str)
                         else ("not", self.canonical(lit[1]), lit[2]) if lit[0] == "not" else lit for lit in ref)

    def _literal(self, literal) -> Shape:
        if isinstance(literal, str):
            return self.shape_at(literal)
        kind = literal[0]
        if kind == "const":
            return self.const_shape(json.loads(literal[1], parse_float=Decimal))
        if kind == "not":
            return self.complement(self.shape(literal[1]), literal[2])
        if kind == "keys":  # a synthesized shape (see complement, and the emitter's value classes)
            return literal[1]
        if kind == "or":  # values in any of the refs (an item unevaluatedItems or a contains takes)
            shape = EMPTY_SHAPE
            for ref in sorted(literal[1], key=repr):
                shape = join(shape, self.shape(ref), self.max_states)
            return shape
        raise AssertionError(literal)

    # ------------------------------------------------------------------ locations

    def shape_at(self, pointer: str) -> Shape:
        pointer = self.end_of_ref_chain(self.index.normalize(pointer))
        node = self.index.node(pointer)
        if node is True or node == {}:
            return any_shape()
        if node is False:
            return EMPTY_SHAPE
        if not isinstance(node, dict):
            raise SchemaCompileError(f"a schema must be an object or a boolean, not {json_text(node)[:40]}", pointer)
        outer, self.draft = self.draft, self.index.draft_at(pointer)  # a registry document's own draft
        try:
            return self._shape_of_keywords(node, pointer)
        except TooManyAlternatives as exc:
            raise SchemaCompileError(f"{exc}: the anyOf/oneOf/allOf combinations here multiply out", pointer) from None
        except StateLimitError as exc:
            raise SchemaCompileError(f"an automaton for this schema is too large: {exc}", pointer) from None
        except LimitExceeded as exc:
            if exc.where.startswith("#"):
                raise
            # the innermost subschema names where a deep step (a product, a determinisation) ran out
            where = f"#{pointer} ({exc.where})" if exc.where else f"#{pointer}"
            raise LimitExceeded(exc.limit, exc.value, exc.reached, where) from None
        finally:
            self.draft = outer

    def end_of_ref_chain(self, pointer: str) -> str:
        """Follow schemas that are nothing but a ``$ref`` (and annotations) without recursing,
        so a chain of thousands of plain references is as cheap as its last target (kept:
        the members of a wide object that refer to one definition each ask it)."""
        found = self._chain_ends.get(pointer)
        if found is not None:
            return found
        start = pointer
        seen = {pointer}
        node = self.index.node(pointer)
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and (
                self.index.draft_at(pointer) < 2019 or node.keys() <= _PLAIN_REF_KEYWORDS):
            pointer = self.index.resolve(node["$ref"], pointer)
            if pointer in seen:
                raise SchemaCompileError("this reference cycle never reaches a value (a chain of $ref that "
                                         "comes back to itself)", min(seen, key=len))
            seen.add(pointer)
            node = self.index.node(pointer)
        self._chain_ends[start] = pointer
        return pointer

    def _shape_of_keywords(self, node: dict, pointer: str) -> Shape:
        check_time(f"#{pointer}")
        if "$ref" in node and self.draft < 2019:
            return self.shape(frozenset([self.index.resolve(node["$ref"], pointer)]))
        warn_misspelled_keywords(node, pointer)
        warn_unknown_format(node, pointer)
        node = draft_keywords(node, self.draft)  # what the declared draft does not define is an annotation
        check_keyword_values(node, pointer, self.draft)
        for keyword in ("enum", "const", "required", "dependentRequired", "properties", "dependentSchemas",
                        "dependencies"):
            if keyword in node:  # names and literals become automata of one state per byte
                value = node[keyword]
                if isinstance(value, dict) and keyword not in ("const", "dependentRequired"):
                    value = [name for name in value] + [v for v in value.values() if isinstance(v, list)]
                check_literal_strings(value, self.max_states, pointer, keyword)
        if not self.track_evaluated and ("unevaluatedProperties" in node or "unevaluatedItems" in node):
            raise TrackingNeeded
        result = any_shape()
        parts = []
        if "type" in node:
            parts.append(self._type_shape(node["type"], pointer))
        if "enum" in node:
            values = node["enum"]
            if not isinstance(values, list):
                raise SchemaCompileError("enum must be an array", pointer, "enum")
            check_size("max_enum", len(values), f"#{pointer}/enum", "enum members")
            parts.append(self._enum_shape(values, pointer))
        if "const" in node:
            parts.append(self.const_shape(node["const"], pointer, "const"))
        if any(k in node for k in _NUMBER_KEYWORDS):
            parts.append(only(number=self._number_constraint(node, pointer)))
        if any(k in node for k in _STRING_KEYWORDS):
            parts.append(only(string=self._string_constraint(node, pointer)))
        if any(k in node for k in _OBJECT_KEYWORDS):
            parts.append(only(objects=self._object_constraint(node, pointer)))
        if any(k in node for k in _ARRAY_KEYWORDS):
            parts.append(only(arrays=self._array_constraint(node, pointer)))
        if node.get("uniqueItems") is True and "uniqueItems" not in self.approximate:
            # exact where the items are few values (see .unique); one item cannot repeat
            if not (isinstance(node.get("maxItems"), int) and node["maxItems"] <= 1):
                parts.append(only(arrays=(ArrayShape(unique=pointer),)))
        if "$ref" in node:
            parts.append(self.shape(frozenset([self.index.resolve(node["$ref"], pointer)])))
        if "$dynamicRef" in node:
            parts.append(self.shape(frozenset([self.index.resolve_dynamic(node["$dynamicRef"], pointer)])))
        if "$recursiveRef" in node:
            parts.append(self.shape(frozenset([self.index.resolve_recursive(node["$recursiveRef"], pointer)])))
        parts += self._dependencies(node, pointer)
        for i, _ in enumerate(self._schema_list(node, "allOf", pointer) if "allOf" in node else ()):
            parts.append(self.shape(frozenset([f"{pointer}/allOf/{i}"])))
        for keyword in ("anyOf", "oneOf"):
            if keyword not in node:
                continue
            work = _UnionWork(f"#{pointer}/{keyword}", self.max_states, joins_only=keyword == "anyOf")
            branches = []
            for i, _ in enumerate(self._schema_list(node, keyword, pointer)):
                check_time(f"#{pointer}/{keyword}/{i}")
                branches.append(self.shape(frozenset([f"{pointer}/{keyword}/{i}"])))
                work.add(branches[-1])
            work.finish()
            if keyword == "oneOf":
                parts.append(self._exactly_one(branches, pointer))
                continue
            shape = EMPTY_SHAPE
            for branch in branches:
                shape = join(shape, branch, self.max_states)
            parts.append(shape)
        if "not" in node:
            parts.append(self.complement(self.shape(frozenset([f"{pointer}/not"])), f"{pointer}/not"))
        if "if" in node:
            condition = self.shape(frozenset([f"{pointer}/if"]))
            then = self.shape(frozenset([f"{pointer}/then"])) if "then" in node else any_shape()
            otherwise = self.shape(frozenset([f"{pointer}/else"])) if "else" in node else any_shape()
            # a passing `if` evaluates what it names, even without then/else
            if "then" in node or "else" in node or condition.annotated:
                negated = self.complement(condition, f"{pointer}/if")
                parts.append(join(meet(condition, then, self.max_states), meet(negated, otherwise, self.max_states),
                                  self.max_states))
        for part in parts:
            result = meet(result, part, self.max_states)
            if result.is_empty:
                break
        if self.track_evaluated:
            result = self._unevaluated(node, pointer, result)
        return result

    def _unevaluated(self, node: dict, pointer: str, shape: Shape) -> Shape:
        """``shape`` with unevaluatedProperties/unevaluatedItems applied (see :mod:`.unevaluated`)."""
        objects, arrays = shape.objects, shape.arrays
        try:
            if "unevaluatedProperties" in node and objects:
                value = _schema_ref(f"{pointer}/unevaluatedProperties", node["unevaluatedProperties"])
                objects = unevaluated_properties(objects, value, lambda p: self._pattern(p, pointer, "patternProperties"),
                                                 self._objects_disjoint, pointer, self.max_states)
            if "unevaluatedItems" in node and arrays:
                value = _schema_ref(f"{pointer}/unevaluatedItems", node["unevaluatedItems"])
                arrays = unevaluated_items(arrays, value, self._arrays_disjoint, pointer)
        except TooManyAlternatives as exc:
            raise SchemaCompileError(f"{exc}: the combinations unevaluated* splits into multiply out", pointer,
                                     "unevaluatedProperties" if "unevaluatedProperties" in node
                                     else "unevaluatedItems") from None
        if objects is shape.objects and arrays is shape.arrays:
            return shape
        return replace(shape, objects=objects, arrays=arrays)

    def _schema_list(self, node: dict, keyword: str, pointer: str) -> list:
        value = node.get(keyword, [])
        if not isinstance(value, list) or not value:
            raise SchemaCompileError(f"{keyword} must be a non-empty array of schemas", pointer, keyword)
        check_size("max_branches", len(value), f"#{pointer}/{keyword}", f"branches of {keyword}")
        return value

    # ------------------------------------------------------------------ types and constants

    def _type_shape(self, types, pointer: str) -> Shape:
        names = [types] if isinstance(types, str) else types
        if not isinstance(names, list) or not all(isinstance(t, str) for t in names):
            raise SchemaCompileError("type must be a string or an array of strings", pointer, "type")
        shape = EMPTY_SHAPE
        for name in names:
            if name == "null":
                part = Shape(null=True)
            elif name == "boolean":
                part = Shape(true=True, false=True)
            elif name == "number":
                part = Shape(number=ALL_NUMBERS)
            elif name == "integer":
                part = Shape(number=num.integers(self.draft >= 6))
            elif name == "string":
                part = Shape(string=any_string_contents())
            elif name == "object":
                part = Shape(objects=(any_object(),))
            elif name == "array":
                part = Shape(arrays=(ANY_ARRAY,))
            elif name == "any" and self.draft <= 4:
                part = any_shape()
            else:
                raise SchemaCompileError(f"unknown type {name!r}", pointer, "type")
            shape = join(shape, part, self.max_states)
        return shape

    def _enum_shape(self, values: list, pointer: str) -> Shape:
        """One automaton for all string members and one for all numbers (joining thousands of
        members one by one would be quadratic); objects and arrays join one by one."""
        strings = [v for v in values if isinstance(v, str)]
        numbers = [_decimal(v) for v in values if _is_number(v)]
        shape = EMPTY_SHAPE
        try:
            if strings:
                shape = join(shape, Shape(string=literal_contents_dfa(strings, max_states=self.max_states)),
                             self.max_states)
            if numbers:
                shape = join(shape, Shape(number=num.number_literals(numbers)), self.max_states)
            for value in values:
                if not (isinstance(value, str) or _is_number(value)):
                    shape = join(shape, self.const_shape(value, pointer, "enum"), self.max_states)
        except TooManyAlternatives as exc:
            raise SchemaCompileError(f"{exc} among the members", pointer, "enum") from None
        except StateLimitError as exc:
            raise SchemaCompileError(f"the enum needs too large an automaton: {exc}", pointer, "enum") from None
        return shape

    def const_shape(self, value, pointer: str = "", keyword: str | None = None) -> Shape:
        """The values equal to ``value`` (numbers by value: 1 and 1.0 are equal)."""
        if value is None:
            return Shape(null=True)
        if value is True:
            return Shape(true=True)
        if value is False:
            return Shape(false=True)
        if _is_number(value):
            return Shape(number=num.number_literal(_decimal(value)))
        if isinstance(value, str):
            return Shape(string=literal_contents_dfa([value]))
        if isinstance(value, list):
            where = f"#{pointer}/{keyword}" if keyword else f"#{pointer}"
            check_size("max_rules", len(value), where, "array items of a constant, one grammar rule each")
            prefix = tuple(_const_ref(item) for item in value if check_time(where) is None)
            return Shape(arrays=(ArrayShape(prefix, None, len(value), len(value)),))
        if isinstance(value, dict):
            names = tuple(value)
            return Shape(objects=(ObjectShape(names, tuple(_const_ref(value[n]) for n in names), frozenset(names)),))
        raise SchemaCompileError(f"not a JSON value: {value!r}"[:200], pointer, keyword)

    # ------------------------------------------------------------------ numbers and strings

    def _number_constraint(self, node: dict, pointer: str):
        lower = upper = None
        lower_exclusive = upper_exclusive = False

        def bound(keyword):
            value = node[keyword]
            if not _is_number(value):
                raise SchemaCompileError(f"{keyword} must be a number", pointer, keyword)
            try:
                return _decimal(value)
            except ValueError as exc:
                raise SchemaCompileError(str(exc), pointer, keyword) from None

        if "minimum" in node:
            lower = bound("minimum")
            lower_exclusive = self.draft <= 4 and node.get("exclusiveMinimum") is True
        if "maximum" in node:
            upper = bound("maximum")
            upper_exclusive = self.draft <= 4 and node.get("exclusiveMaximum") is True
        if self.draft >= 6:
            if "exclusiveMinimum" in node:
                value = bound("exclusiveMinimum")
                if lower is None or value >= lower:
                    lower, lower_exclusive = value, True
            if "exclusiveMaximum" in node:
                value = bound("exclusiveMaximum")
                if upper is None or value <= upper:
                    upper, upper_exclusive = value, True
        result = ALL_NUMBERS
        try:
            if lower is not None or upper is not None:
                result = num.bounded(lower, lower_exclusive, upper, upper_exclusive, max_states=self.max_states)
            if "multipleOf" in node:
                divisor = bound("multipleOf")
                if divisor <= 0:
                    raise SchemaCompileError("multipleOf must be greater than 0", pointer, "multipleOf")
                multiples = num.multiple_of(divisor)
                result = multiples if result == ALL_NUMBERS else intersect(result, multiples,
                                                                           max_states=self.max_states)
        except StateLimitError as exc:
            raise SchemaCompileError(f"the numbers allowed here need too large an automaton: {exc}",
                                     pointer, "multipleOf" if "multipleOf" in node else "minimum") from None
        return None if result != ALL_NUMBERS and is_empty_dfa(result) else result

    def _string_constraint(self, node: dict, pointer: str):
        contents = any_string_contents()
        minimum = _count(node, "minLength", pointer, 0)
        maximum = _count(node, "maxLength", pointer, None)
        if "pattern" in node:
            contents = self._pattern(node["pattern"], pointer, "pattern")
        if "format" in node and isinstance(node["format"], str):
            contents = self._format(node["format"], contents, pointer)
        if maximum is not None and maximum < minimum:
            return None
        if minimum > MAX_COUNTED_LENGTH:
            raise SchemaCompileError(f"minLength {minimum} is more code points than gramalign counts "
                                     f"({MAX_COUNTED_LENGTH}) or any generated string holds", pointer, "minLength")
        if maximum is not None and maximum > MAX_COUNTED_LENGTH:
            maximum = None  # no string a model writes reaches it
        try:
            contents = counted_or_dfa(contents, minimum, maximum, max_states=self.max_states)
        except StateLimitError:
            raise SchemaCompileError(f"string lengths {minimum}..{maximum} together with the other string "
                                     f"constraints need more than {self.max_states} automaton states",
                                     pointer, "maxLength" if maximum is not None else "minLength") from None
        if isinstance(contents, CountedStrings):
            return None if contents.is_empty(max_states=self.max_states) else contents
        return None if is_empty_dfa(contents) else contents

    def _pattern(self, pattern, pointer: str, keyword: str):
        if not isinstance(pattern, str):
            raise SchemaCompileError("a pattern must be a string", pointer, keyword)
        from .ecma_regex import ecma_pattern_dfa

        try:
            return ecma_pattern_dfa(pattern, max_states=self.max_states, lenient_escapes=True)
        except RegexError as exc:
            where = "" if exc.position is None else f" at position {exc.position}"
            raise SchemaCompileError(f"pattern {pattern!r}: {exc.message}{where}", pointer, keyword) from None

    def pattern_allows_some(self, pattern) -> "bool | None":
        """Does some string match ``pattern``, shown without its automaton
        (``ecma_regex.ecma_pattern_matches_some``)? None where the pattern is refused: its
        shape reports that, with the place."""
        from .ecma_regex import ecma_pattern_matches_some

        if not isinstance(pattern, str):
            return None
        try:
            return ecma_pattern_matches_some(pattern, lenient_escapes=True)
        except RegexError:
            return None

    def pattern_matches_key(self, pattern, key: str) -> "bool | None":
        """Does property name ``key`` match ``pattern`` (a ``patternProperties`` pattern), read
        without the pattern's automaton (``ecma_regex.ecma_pattern_matches``)? None where the
        pattern is refused: the object's shape reports that, with the place."""
        from .ecma_regex import ecma_pattern_matches

        if not isinstance(pattern, str):
            return None
        try:
            return ecma_pattern_matches(pattern, key, lenient_escapes=True)
        except RegexError:
            return None

    def pattern_and_format_allow_some(self, node: dict, pointer: str) -> "bool | None":
        """Does a string schema's ``pattern`` with its ``format`` (no lengths) allow some
        string? Decided by a shortest string of both, without their product automaton (a
        format's by a pattern's took up to a tenth of a second, for a parent proving that its
        members have values); None where that search is not enough (the shape decides)."""
        from .formats import UNSUPPORTED_FORMATS, format_dfa

        name = node["format"]
        if not isinstance(name, str) or name in UNSUPPORTED_FORMATS:
            return None
        pattern = self._pattern(node["pattern"], pointer, "pattern")
        dfa = format_dfa(name)
        if dfa is None:  # an unknown format is an annotation
            return not is_empty_dfa(pattern)
        try:
            return pattern.common_word(dfa) is not None
        except StateLimitError:
            return None

    def _format(self, name: str, contents, pointer: str):
        from .formats import UNSUPPORTED_FORMATS, counted_format, format_dfa

        if name in UNSUPPORTED_FORMATS and "format" not in self.approximate:
            raise SchemaCompileError(f"format {name!r} is not supported; pass approximate={{'format'}} to "
                                     "ignore it", pointer, "format")
        counted = counted_format(name)
        if counted is not None and contents is any_string_contents():
            return CountedStrings(0, counted[1], counted[0], known=lambda: format_dfa(name))
        dfa = format_dfa(name)
        if dfa is None:
            return contents  # unknown formats are annotations
        if contents is any_string_contents():
            return dfa
        if counted is not None:
            # The format's bound counted by the parser, as without a pattern: in one automaton
            # it multiplies the product's states (email by a pattern: 25k states, 0.3 s in the
            # mask that first meets them). (A least length the schema adds: counted_or_dfa.)
            return CountedStrings(0, counted[1], intersect(contents, counted[0], max_states=self.max_states))
        return intersect(contents, dfa, max_states=self.max_states)

    # ------------------------------------------------------------------ objects and arrays

    def _object_constraint(self, node: dict, pointer: str) -> tuple[ObjectShape, ...]:
        properties = node.get("properties", {})
        patterns = node.get("patternProperties", {})
        for keyword, value in (("properties", properties), ("patternProperties", patterns)):
            if not isinstance(value, dict):
                raise SchemaCompileError(f"{keyword} must be an object", pointer, keyword)
        required = node.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise SchemaCompileError("required must be an array of strings", pointer, "required")
        pattern_dfas = [(self._pattern(p, pointer, "patternProperties"), f"{pointer}/patternProperties/"
                         f"{escape_pointer(p)}") for p in patterns]
        additional = node.get("additionalProperties", True)
        additional_ref = None if additional is False else (
            ANY if additional is True or additional == {} else frozenset([f"{pointer}/additionalProperties"]))
        key_filter = None
        if "propertyNames" in node:
            key_shape = self.shape(frozenset([f"{pointer}/propertyNames"]))
            key_filter = (literal_contents_dfa([]) if key_shape.string is None
                          else string_contents_dfa(key_shape.string, max_states=self.max_states))
        names = list(properties) + [r for r in required if r not in properties]
        if len(names) > MAX_PROPERTIES:
            raise SchemaCompileError(f"an object with more than {MAX_PROPERTIES} named properties (this one names "
                                     f"{len(names)}; the grammar and its parser grow with every name)", pointer,
                                     "properties" if len(properties) > MAX_PROPERTIES else "required")
        values = []
        for name in names:
            encoded = name.encode("utf-8")
            matched = [ref for dfa, ref in pattern_dfas if dfa.matches(encoded)]
            if key_filter is None and name not in properties and not matched:
                value = additional_ref
            else:
                literals = set(matched)
                if name in properties:
                    literals.add(f"{pointer}/properties/{escape_pointer(name)}")
                elif not matched:
                    literals = None if additional_ref is None else set(additional_ref)
                value = None if literals is None else self._without_true(literals)
            if value is not None and key_filter is not None and not key_filter.matches(encoded):
                value = None
            values.append(value)
        if len(pattern_dfas) > 6:  # their key atoms are every subset of the patterns
            raise SchemaCompileError("more than 6 patternProperties", pointer, "patternProperties")
        # without patternProperties and additionalProperties other keys are refused outright:
        # no need for the product "any key but these names"
        extras = self._extra_keys(names, key_filter, pattern_dfas, additional_ref) \
            if pattern_dfas or additional_ref is not None else ()
        minimum = _count(node, "minProperties", pointer, 0)
        maximum = _count(node, "maxProperties", pointer, None)
        evaluated = frozenset()
        if self.track_evaluated:
            evaluated = frozenset([ALL_KEYS]) if "additionalProperties" in node else frozenset(
                [("name", name) for name in properties] + [("pattern", p) for p in patterns])
        shape = ObjectShape(tuple(names), tuple(values), frozenset(required), tuple(extras), int(minimum),
                            int(maximum) if maximum is not None else None, evaluated=evaluated)
        return () if shape.is_empty else (shape,)

    def _without_true(self, pointers) -> Ref:
        """The conjunction of schema locations without those that are ``true`` or ``{}``: a
        member whose schemas all allow anything is ``ANY``, which complements need not negate."""
        return frozenset(p for p in pointers if not (isinstance(p, str) and _allows_anything(self.index.node(p))))

    def _extra_keys(self, names: list, key_filter, pattern_dfas: list, additional_ref) -> list:
        """(keys, value ref) for the keys not in ``names``: one disjoint key language per
        subset of the patterns they match (``additional_ref`` for none)."""
        others = other_strings(names, max_states=self.max_states)
        if key_filter is not None:
            others = intersect(others, key_filter, max_states=self.max_states)
        # the keys split by each pattern in turn, inside and outside, the empty parts dropped:
        # products in proportion to the parts (disjoint patterns: one more per pattern), where
        # every subset of the patterns took one per pattern
        parts = [(0, others)] if not is_empty_dfa(others) else []
        for i, (dfa, _) in enumerate(pattern_dfas):
            parts = [part for mask, keys in parts
                     for part in ((mask | 1 << i, intersect(keys, dfa, max_states=self.max_states)),
                                  (mask, difference(keys, dfa, max_states=self.max_states)))
                     if not is_empty_dfa(part[1])]
        extras = []
        for mask, keys in sorted(parts, key=lambda part: part[0]):
            refs = {ref for i, (_, ref) in enumerate(pattern_dfas) if mask >> i & 1}
            if not refs:
                if additional_ref is None:
                    continue
                refs = set(additional_ref)
            extras.append((keys, self._without_true(refs)))
        return extras

    def _array_constraint(self, node: dict, pointer: str) -> tuple[ArrayShape, ...]:
        prefix: tuple = ()
        rest: Ref | None = ANY
        items = node.get("items")
        if self.draft >= 2020 and not isinstance(items, list):  # an array is draft-07's form (UNDECLARED)
            if "prefixItems" in node:
                if not isinstance(node["prefixItems"], list):
                    raise SchemaCompileError("prefixItems must be an array of schemas", pointer, "prefixItems")
                prefix = tuple(_schema_ref(f"{pointer}/prefixItems/{i}", s) for i, s in enumerate(node["prefixItems"]))
            if "items" in node:
                rest = _schema_ref(f"{pointer}/items", items)
        elif isinstance(items, list):
            prefix = tuple(_schema_ref(f"{pointer}/items/{i}", s) for i, s in enumerate(items))
            if "additionalItems" in node:
                rest = _schema_ref(f"{pointer}/additionalItems", node["additionalItems"])
        elif "items" in node:
            rest = _schema_ref(f"{pointer}/items", items)
        minimum = _count(node, "minItems", pointer, 0)
        maximum = _count(node, "maxItems", pointer, None)
        contains = self._contains(node, pointer)
        shape = ArrayShape(prefix, rest, minimum, maximum, contains).normalized()
        # every array position up to the last one that differs is a grammar rule: refuse
        # 10**30 positions here rather than after max_rules rules were built one by one
        positions = shape.max_items if shape.max_items is not None else max(
            [len(shape.prefix), shape.min_items] + [c.start for c in shape.contains])
        check_size("max_rules", positions, f"#{pointer}/{'maxItems' if shape.max_items is not None else 'minItems'}",
                   "array positions, one grammar rule each")
        if self.track_evaluated:
            shape = replace(shape, **self._items_evaluated(node, pointer))
        return () if shape.is_empty else (shape,)

    def _items_evaluated(self, node: dict, pointer: str) -> dict:
        """The items an array schema's keywords evaluate: its tuple, all items (``items`` as a
        schema, ``additionalItems`` after a tuple), and in 2020-12 those ``contains`` matches."""
        items = node.get("items")
        tuple_form = isinstance(items, list)
        prefix = node.get("prefixItems") if self.draft >= 2020 and not tuple_form else items if tuple_form else None
        every = ("items" in node and not tuple_form) or (tuple_form and "additionalItems" in node)
        matched = frozenset()
        if self.draft >= 2020 and "contains" in node:  # 2019-09's contains evaluates nothing
            ref = _schema_ref(f"{pointer}/contains", node["contains"])
            every = every or ref == ANY
            matched = frozenset([ref]) if ref not in (None, ANY) else matched
        return {"evaluated_prefix": len(prefix) if isinstance(prefix, list) else 0, "evaluated_all": every,
                "evaluated_by": matched}

    def _contains(self, node: dict, pointer: str) -> tuple[Contains, ...]:
        """``contains`` with minContains/maxContains (2019-09 on; before, at least one match)."""
        if "contains" not in node or self.draft < 6:
            return ()
        counts = {}
        for keyword, default in (("minContains", 1), ("maxContains", None)):
            value = node.get(keyword, default) if self.draft >= 2019 else default
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float, Decimal))
                                      or value != int(value) or value < 0):
                raise SchemaCompileError(f"{keyword} must be a non-negative integer", pointer, keyword)
            counts[keyword] = None if value is None else int(value)
        least, most = counts["minContains"], counts["maxContains"]
        if most is not None and most > MAX_CONTAINS_COUNT or least > MAX_CONTAINS_COUNT:
            raise SchemaCompileError(f"minContains/maxContains above {MAX_CONTAINS_COUNT} (each count is a state "
                                     f"of the array's rules)", pointer, "maxContains" if most else "minContains")
        ref = _schema_ref(f"{pointer}/contains", node["contains"])
        if ref is None:  # no item matches `false`: satisfiable only when no match is needed
            impossible = Contains(ANY, 1, 0, f"{pointer}/contains")  # at least one and at most zero
            return () if least == 0 else (impossible,)
        if least == 0 and most is None:
            return ()
        return (Contains(ref, least, most, f"{pointer}/contains"),)

    def _dependencies(self, node: dict, pointer: str) -> list[Shape]:
        """``dependentRequired``/``dependentSchemas`` (``dependencies`` before 2019-09): for each
        trigger name, objects without it, or with it and what it asks for."""
        triggers = []
        for keyword in ("dependentRequired", "dependentSchemas", "dependencies"):
            value = node.get(keyword)
            if value is None:
                continue
            if not isinstance(value, dict):
                raise SchemaCompileError(f"{keyword} must be an object", pointer, keyword)
            for name, requirement in value.items():
                triggers.append((keyword, name, requirement))
        parts = []
        for keyword, name, requirement in triggers:
            present = _object_with(name, ANY, required=True)
            absent = Shape(objects=(_object_with(name, None, required=False),))
            if isinstance(requirement, list):
                if not all(isinstance(r, str) for r in requirement):
                    raise SchemaCompileError(f"{keyword}/{name} must list property names", pointer, keyword)
                others = other_strings(requirement)
                required = ObjectShape(tuple(requirement), (ANY,) * len(requirement), frozenset(requirement),
                                       ((others, ANY),))
                both = meet_objects(required, present, self.max_states)  # requirements first: the usual key order
                needed = Shape(objects=(both,) if both is not None else ())
            else:
                needed = meet(Shape(objects=(present,)),
                              self.shape(frozenset([f"{pointer}/{keyword}/{escape_pointer(name)}"])), self.max_states)
            parts.append(only(objects=join(absent, needed, self.max_states).objects))
        return parts

    # ------------------------------------------------------------------ complements

    def complement(self, shape: Shape, pointer: str) -> Shape:
        """Every JSON value not in ``shape`` (objects and arrays only where that is a finite union)."""
        try:
            return Shape(not shape.null, not shape.true, not shape.false,
                         complement_numbers(shape.number, self.max_states),
                         complement_strings(shape.string, self.max_states),
                         self._complement_objects(shape.objects, pointer),
                         self._complement_arrays(shape.arrays, pointer))
        except StateLimitError as exc:
            raise SchemaCompileError(f"the complement needs too large an automaton: {exc}", pointer) from None

    def _complement_objects(self, objects, pointer: str) -> tuple[ObjectShape, ...]:
        if not objects:
            return (any_object(),)
        if any(o.accepts_all for o in objects):
            return ()
        result: tuple[ObjectShape, ...] = (any_object(),)
        for shape in objects:  # not (A or B) = not A and not B
            witnesses = self._object_witnesses(shape, pointer)
            result = tuple(m for x in result for y in witnesses
                           if (m := meet_objects(x, y, self.max_states)) is not None)
            if len(result) > 64:
                raise SchemaCompileError("the complement of these object constraints (for not, if/else, or to "
                                         "tell overlapping alternatives apart) has too many cases", pointer)
        return result

    def _object_witnesses(self, shape: ObjectShape, pointer: str) -> list[ObjectShape]:
        """Objects outside ``shape``, as a union: one reason to fail per alternative."""
        witnesses = []
        for keys, value in shape.some:  # no member with such a key has such a value
            others = difference(any_string_contents(), keys, max_states=self.max_states)
            negated = frozenset([("not", value, pointer)])
            witnesses.append(ObjectShape(extras=((keys, negated),) + (((others, ANY),) if not is_empty_dfa(others)
                                                                      else ())))
        # a key no name or extra allows, or an extra member whose value is outside its schema
        allowed = literal_contents_dfa(shape.names)
        for keys, value in shape.extras:
            allowed = union(allowed, keys, max_states=self.max_states)
            if value != ANY:
                witnesses.append(ObjectShape(extras=((any_string_contents(), ANY),),
                                             some=((keys, frozenset([("not", value, pointer)])),)))
        forbidden = difference(any_string_contents(), allowed, max_states=self.max_states)
        if not is_empty_dfa(forbidden):
            witnesses.append(ObjectShape(extras=((any_string_contents(), ANY),), some=((forbidden, ANY),)))
        # each witness lists the shape's names in order, so schema-order output stays possible
        for name in shape.required:
            witnesses.append(_object_with(name, None, required=False, order=shape.names))
        for name, value in zip(shape.names, shape.values):
            if value is None:
                witnesses.append(_object_with(name, ANY, required=True, order=shape.names))
            elif value != ANY:
                witnesses.append(_object_with(name, frozenset([("not", value, pointer)]), required=True,
                                              order=shape.names))
        if shape.min_properties > 0:
            witnesses.append(ObjectShape(extras=((any_string_contents(), ANY),), max_properties=shape.min_properties - 1))
        if shape.max_properties is not None:
            witnesses.append(ObjectShape(extras=((any_string_contents(), ANY),), min_properties=shape.max_properties + 1))
        return witnesses

    def _complement_arrays(self, arrays, pointer: str) -> tuple[ArrayShape, ...]:
        if not arrays:
            return (ANY_ARRAY,)
        if any(a.accepts_all for a in arrays):
            return ()
        result: tuple[ArrayShape, ...] = (ANY_ARRAY,)
        for shape in arrays:  # not (A or B) = not A and not B
            witnesses = _array_witnesses(shape, pointer)
            result = tuple(m for x in result for y in witnesses if (m := meet_arrays(x, y)) is not None)
            if len(result) > 64:
                raise SchemaCompileError("the complement of these array constraints (for not, if/else, or to "
                                         "tell overlapping alternatives apart) has too many cases", pointer)
        return result

    def _exactly_one(self, branches: list[Shape], pointer: str) -> Shape:
        """oneOf: values in exactly one branch."""
        numbers = _exactly_one_language([b.number for b in branches], _minus_numbers, meet_numbers, join_numbers,
                                        self.max_states)
        strings = _exactly_one_language([b.string for b in branches], minus_strings, meet_strings, join_strings,
                                        self.max_states)
        once = [sum(getattr(b, kind) for b in branches) == 1 for kind in ("null", "true", "false")]
        result = Shape(*once, numbers, strings)
        objects = self._exclusive([b.objects for b in branches], pointer, self._objects_disjoint,
                                  self._complement_objects, lambda a, b: meet_objects(a, b, self.max_states),
                                  self._object_tag)
        arrays = self._exclusive([b.arrays for b in branches], pointer, self._arrays_disjoint,
                                 self._complement_arrays, meet_arrays)
        return Shape(result.null, result.true, result.false, result.number, result.string, objects, arrays)

    def _exclusive(self, parts: list[tuple], pointer: str, disjoint, complement, meet_one, tag=None) -> tuple:
        """Alternatives of exactly one branch: a plain union when the branches are disjoint,
        else each branch meets the complements of the others. ``tag`` (optional) gives an
        alternative a (key, constant) it must have; alternatives with different constants
        for one key are disjoint without a product (tool-calling oneOfs tell 1,000 branches
        apart by a "name" const, and pairwise products took seconds)."""
        present = [i for i, p in enumerate(parts) if p]
        if len(present) <= 1:
            return parts[present[0]] if present else ()
        if sum(any(x.accepts_all for x in parts[i]) for i in present) >= 2:
            return ()  # two branches take every object (array): each one is in two or more
        if tag is not None:
            tags = [[tag(x) for x in parts[i]] for i in present]
            keys = {t[0] for row in tags for t in row if t is not None}
            if len(keys) == 1 and all(t is not None for row in tags for t in row):
                owners: dict = {}
                for i, row in zip(present, tags):
                    for t in row:
                        owners.setdefault(t[1], set()).add(i)
                if all(len(branches) == 1 for branches in owners.values()):
                    return tuple(x for i in present for x in parts[i])
        if all(disjoint(x, y) for k, i in enumerate(present) for j in present[k + 1:]
               for x in parts[i] for y in parts[j]):
            return tuple(x for i in present for x in parts[i])
        meets = sum(len(parts[i]) for i in present) * (len(present) - 1)
        check_size("max_union_work", MEET_WORK * meets, f"#{pointer}/oneOf",
                   f"{meets} meets of a branch with the complement of another, {MEET_WORK} each: the object or "
                   "array branches may overlap, so each must exclude every other")
        result: list = []
        for i in present:
            alternatives = list(parts[i])
            for j, other in enumerate(parts):
                if j == i or not other:
                    continue
                negated = complement(other, pointer)
                alternatives = [m for a in alternatives for b in negated if (m := meet_one(a, b)) is not None]
                if len(alternatives) > 64:
                    raise SchemaCompileError("oneOf: the branches' overlaps split into too many cases", pointer,
                                             "oneOf")
            result += [a for a in alternatives if a not in result]
        return tuple(result)

    def _object_tag(self, shape: ObjectShape) -> "tuple[str, bytes] | None":
        """(name, the one string its value may be) for the first required name whose value is a
        single string, or None."""
        for name in shape.names:
            if name not in shape.required:
                continue
            value = shape.value_of(name)
            if value is None:
                continue
            literal = _single_string(self.shape(value))
            if literal is not None:
                return name, literal
        return None

    def objects_disjoint(self, a: tuple[ObjectShape, ...], b: tuple[ObjectShape, ...]) -> bool:
        """True only when no object is in both unions of object alternatives (False when unsure)."""
        return all(self._objects_disjoint(x, y) for x in a for y in b)

    def _objects_disjoint(self, a: ObjectShape, b: ObjectShape, depth: int = 0) -> bool:
        if (a.max_properties is not None and b.min_properties > a.max_properties) or (
                b.max_properties is not None and a.min_properties > b.max_properties):
            return True
        for name in a.required | b.required:
            va, vb = a.value_of(name), b.value_of(name)
            if va is None or vb is None:
                return True
            if depth < 3 and self.refs_disjoint(va, vb, depth + 1):
                return True
        return False

    def _arrays_disjoint(self, a: ArrayShape, b: ArrayShape, depth: int = 0) -> bool:
        if (a.max_items is not None and b.min_items > a.max_items) or (
                b.max_items is not None and a.min_items > b.max_items):
            return True
        for i in range(min(max(len(a.prefix), len(b.prefix)), max(a.min_items, b.min_items))):
            va, vb = a.item(i), b.item(i)
            if va is None or vb is None or (depth < 3 and self.refs_disjoint(va, vb, depth + 1)):
                return True
        return False

    def refs_disjoint(self, a: Ref, b: Ref, depth: int = 0) -> bool:
        """True only when no value satisfies both (False when unsure)."""
        try:
            x, y = self.shape(a), self.shape(b)
        except SchemaCompileError:
            return False
        return self.shapes_disjoint(x, y, depth)

    def shapes_disjoint(self, x: Shape, y: Shape, depth: int = 0) -> bool:
        if (x.null and y.null) or (x.true and y.true) or (x.false and y.false):
            return False
        if x.number is not None and y.number is not None:
            if x.number == ALL_NUMBERS or y.number == ALL_NUMBERS or not is_empty_dfa(
                    intersect(x.number, y.number, max_states=self.max_states)):
                return False
        if x.string is not None and y.string is not None and meet_strings(x.string, y.string,
                                                                            self.max_states) is not None:
            return False
        if not all(self._objects_disjoint(a, b, depth) for a in x.objects for b in y.objects):
            return False
        return all(self._arrays_disjoint(a, b, depth) for a in x.arrays for b in y.arrays)


def _object_with(name: str, value: Ref | None, *, required: bool, order: tuple[str, ...] = ()) -> ObjectShape:
    """Objects whose member ``name`` has ``value`` (None: is absent), everything else free;
    ``order`` lists names to keep in that order (``name`` is added if missing)."""
    names = order if name in order else order + (name,)
    others = other_strings(names)
    return ObjectShape(names, tuple(value if n == name else ANY for n in names),
                       frozenset([name]) if required else frozenset(), ((others, ANY),))


def _array_witnesses(shape: ArrayShape, pointer: str) -> list[ArrayShape]:
    """Arrays outside ``shape``, as a union: one reason to fail per alternative."""
    if shape.unique is not None:
        raise SchemaCompileError("the complement of uniqueItems (arrays with a repeated item, for not, if/else or "
                                 "overlapping oneOf branches) cannot be compiled; pass approximate={'uniqueItems'} "
                                 "to ignore it", shape.unique, "uniqueItems")
    witnesses = []
    if shape.min_items > 0:
        witnesses.append(ArrayShape(max_items=shape.min_items - 1))
    if shape.max_items is not None:
        witnesses.append(ArrayShape(min_items=shape.max_items + 1))
    for i, ref in enumerate(shape.prefix):
        if ref != ANY:
            wrong = None if ref is None else frozenset([("not", ref, pointer)])
            witnesses.append(ArrayShape(prefix=(ANY,) * i + (wrong,), min_items=i + 1))
    start = len(shape.prefix)
    if shape.rest is None:
        witnesses.append(ArrayShape(min_items=start + 1))
    elif shape.rest != ANY:  # some item after the prefix outside `rest`
        wrong = frozenset([("not", shape.rest, pointer)])
        witnesses.append(ArrayShape(contains=(Contains(wrong, 1, None, pointer, start),)))
    for needed in shape.contains:  # too few matches, or too many
        if needed.minimum > 0:
            witnesses.append(ArrayShape(contains=(Contains(needed.ref, 0, needed.minimum - 1, needed.pointer,
                                                           needed.start),)))
        if needed.maximum is not None:
            witnesses.append(ArrayShape(contains=(Contains(needed.ref, needed.maximum + 1, None, needed.pointer,
                                                           needed.start),)))
    return [w.normalized() for w in witnesses if not w.is_empty]


def _single_string(shape: Shape) -> "bytes | None":
    """The one value of ``shape`` when it is a single string (its contents), else None."""
    if (shape.null or shape.true or shape.false or shape.number is not None or shape.objects or shape.arrays
            or shape.string is None or isinstance(shape.string, CountedStrings)):
        return None
    dfa, state, text, seen = shape.string, shape.string.initial, bytearray(), set()
    while state not in seen:
        seen.add(state)
        live = np.flatnonzero(dfa.transitions[state] >= 0)
        if dfa.accepting[state]:
            return bytes(text) if live.size == 0 else None
        if live.size != 1:
            return None
        text.append(int(live[0]))
        state = int(dfa.transitions[state, live[0]])
    return None


MEET_WORK = 5_000
"""``max_union_work`` units one oneOf meet of an object (array) branch with another's complement
counts: a oneOf of 60 overlapping object branches, 3,540 meets, took 3.5 s (the limit
stops at about 100 such branches, ~10,000 meets)."""


class _UnionWork:
    """The automaton states the unions of an ``anyOf`` (``oneOf``) visit, estimated from its
    branches before any product, and fed branch by branch so that a union too large is
    refused before its remaining branches are built: each step visits at least the union so
    far (never above ``max_states``), and a ``oneOf`` takes two steps a branch (differences,
    then joins; see :func:`_exactly_one_language`). Strings whose length is counted
    (:class:`CountedStrings`) of one contents stay counted under joins; a difference, or
    another kind of string joining them, builds them (the contents times the positions)."""

    def __init__(self, where: str, max_states: int, *, joins_only: bool):
        self.where = where
        self.max_states = max_states
        self.joins_only = joins_only
        self.languages: dict[str, list] = {"string": [], "number": []}
        self.running = dict.fromkeys(self.languages, 0)
        self.visited = dict.fromkeys(self.languages, 0)

    def add(self, shape: Shape) -> None:
        for kind, language in (("string", shape.string), ("number", shape.number)):
            if language is not None and not isinstance(language, str) and language is not any_string_contents():
                self.languages[kind].append(language)  # None: nothing; ALL_NUMBERS, all strings: no product
                self._visit(kind, language, built=not self.joins_only)

    def finish(self) -> None:
        strings = self.languages["string"]
        kinds = {s.contents.digest if isinstance(s, CountedStrings) else None for s in strings}
        if self.joins_only and len(kinds) > 1 and any(isinstance(s, CountedStrings) for s in strings):
            self.running["string"] = self.visited["string"] = 0
            for language in strings:
                self._visit("string", language, built=True)

    def _visit(self, kind: str, language, built: bool) -> None:
        size = language.num_states if not isinstance(language, CountedStrings) else language.contents.num_states
        if built and isinstance(language, CountedStrings):
            size *= 1 + (language.minimum if language.maximum is None else language.maximum)
        self.running[kind] = min(self.running[kind] + size, self.max_states)
        self.visited[kind] += self.running[kind]
        check_size("max_union_work", self.visited[kind] * (1 if self.joins_only else 2), self.where,
                   f"automaton states its {kind} branches' unions would visit, estimated before building them")


def _exactly_one_language(languages: list, minus, meet, join, max_states):
    """The values in exactly one of ``languages`` (None: empty), in one pass: the values seen
    once and those seen twice or more so far, four automaton operations per branch (a
    pairwise difference of every branch with every other was n² operations: a oneOf of 1,000
    patterns never finished)."""
    once = twice = None
    for language in languages:
        if language is None:
            continue
        both = meet(once, language, max_states)
        once = join(minus(once, language, max_states), minus(language, join(once, twice, max_states), max_states),
                    max_states)
        twice = join(twice, both, max_states)
    return once


def _minus_numbers(a, b, max_states):
    if a is None or b is None:
        return a
    if b == ALL_NUMBERS:
        return None
    if a == ALL_NUMBERS:
        return complement_numbers(b, max_states)
    result = difference(a, b, max_states=max_states)
    return None if is_empty_dfa(result) else result


def _count(node: dict, keyword: str, pointer: str, default):
    """A non-negative integer keyword (``3.0`` counts as 3), or ``default`` when absent."""
    value = node.get(keyword, default)
    if value is default:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)) or value != int(value) or value < 0:
        raise SchemaCompileError(f"{keyword} must be a non-negative integer, not {json_text(value)[:40]}",
                                 pointer, keyword)
    return int(value)


def _allows_anything(schema) -> bool:
    return schema is True or (isinstance(schema, dict) and not schema)


def _const_ref(value) -> Ref:
    return frozenset([("const", json_text(value))])


def _schema_ref(pointer: str, schema) -> Ref | None:
    if schema is False:
        return None
    if schema is True or schema == {}:
        return ANY
    return frozenset([pointer])


def first_pointer(ref: Ref) -> str:
    for literal in ref:
        if isinstance(literal, str):
            return literal
    return ""
