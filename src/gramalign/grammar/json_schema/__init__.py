"""JSON Schema to grammar: exact, or a clear error naming the keyword and JSON pointer.

``compile_json_schema(schema)`` resolves references (:mod:`.resolve`), evaluates each
value reference into a typed :class:`~.shapes.Shape` (:mod:`.evaluate`) and emits a
deterministic grammar (:mod:`.emit`) whose leaves are exact automata for strings
(:mod:`.strings`, :mod:`.ecma_regex`, :mod:`.formats`) and numbers (:mod:`.numbers`).
"""

from __future__ import annotations

import json
import math
from decimal import Decimal

from ...errors import SchemaCompileError
from ..grammar import Grammar
from ..limits import DEFAULT_LIMITS, CompileLimits, applied
from .emit import Emitter, Layout
from .registry import document_lookup
from .resolve import SchemaIndex, draft_of, escape_pointer, inherited_draft, json_text
from .schema_grammar import SchemaGrammar, SchemaRecipe, schema_errors
from .strict import close_objects
from .types import is_schema_type, schema_of_type

__all__ = ["SchemaGrammar", "compile_json_schema", "lazy_json_schema_rules"]

WHITESPACE_MODES = ("compact", "flexible")
MAX_SCHEMA_BYTES = DEFAULT_LIMITS.max_schema_bytes


MAX_NUMBER_DIGITS = 1000
"""Longest number a schema may hold, in digits (and largest decimal exponent)."""
_DIGITS_LIMIT = 10 ** MAX_NUMBER_DIGITS


def _parse_int(text: str) -> int | Decimal:
    """Integers too long for ``int()`` stay Decimal, so the limit check can name their place."""
    return int(text) if len(text) <= MAX_NUMBER_DIGITS + 1 else Decimal(text)


def _plainly_json(schema) -> bool:
    """Every value JSON can hold, within the limits, and no container met twice: the common
    case, checked without the pointers :func:`_check_json_data` keeps for its errors (False:
    that check decides, and names the place)."""
    stack = [schema]
    seen: set[int] = set()
    while stack:
        value = stack.pop()
        kind = type(value)  # (exact types first: the common case, without isinstance's walks)
        if kind is str or kind is bool or value is None:
            continue
        if kind is dict:
            if id(value) in seen:
                return False
            seen.add(id(value))
            for key in value:
                if type(key) is not str:
                    return False  # (a subclass of str too: the thorough check decides)
            stack.extend(value.values())
        elif kind is list:
            if id(value) in seen:
                return False
            seen.add(id(value))
            stack.extend(value)
        elif isinstance(value, (dict, list, str)):
            return False  # subclasses: the thorough check decides
        elif isinstance(value, int):
            if abs(value) >= _DIGITS_LIMIT:
                return False
        elif isinstance(value, Decimal):  # (a schema given as text: its fractions are exact)
            if not value.is_finite() or len(value.as_tuple().digits) > MAX_NUMBER_DIGITS \
                    or abs(value.adjusted()) > MAX_NUMBER_DIGITS:
                return False
        elif not (isinstance(value, float) and math.isfinite(value)):
            return False
    return True


def _check_json_data(schema) -> None:
    """Raise SchemaCompileError at the first value JSON cannot hold (a set, NaN, a non-string
    key, a dict or list that contains itself) or that is beyond the documented limits (a
    number of more than 1000 digits)."""
    if _plainly_json(schema):
        return
    # depth first with exit marks, so "on the current path" (a cycle) is told apart from
    # "met before by another path" (shared, which JSON text cannot say but is harmless)
    stack = [(schema, "", None)]
    on_path: dict[int, str] = {}
    finished: set[int] = set()
    while stack:
        value, pointer, keyword = stack.pop()
        if value is _EXIT:
            del on_path[pointer]
            finished.add(pointer)
            continue
        if isinstance(value, (dict, list)):
            here = f"{pointer}/{escape_pointer(keyword)}" if keyword is not None else pointer
            if id(value) in on_path:
                raise SchemaCompileError(f"the schema contains itself: this value is the {type(value).__name__} "
                                         f"at #{on_path[id(value)]}, one of its own ancestors (JSON cannot "
                                         "hold a cycle)", pointer, keyword)
            if id(value) in finished:
                continue
            on_path[id(value)] = here
            stack.append((_EXIT, id(value), None))
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise SchemaCompileError(f"object keys must be strings, not {key!r}", pointer, keyword)
                    stack.append((item, here, key))
            else:
                stack.extend((item, here, str(i)) for i, item in enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _DIGITS_LIMIT:
            raise SchemaCompileError(f"a number here has more than {MAX_NUMBER_DIGITS} digits", pointer, keyword)
        elif isinstance(value, Decimal):
            if not value.is_finite():
                raise SchemaCompileError(f"not JSON data: {value!r}"[:120], pointer, keyword)
            if len(value.as_tuple().digits) > MAX_NUMBER_DIGITS or abs(value.adjusted()) > MAX_NUMBER_DIGITS:
                raise SchemaCompileError(f"a number here has more than {MAX_NUMBER_DIGITS} digits (or a larger "
                                         "exponent)", pointer, keyword)
        elif not (value is None or isinstance(value, (str, bool, int))
                  or (isinstance(value, float) and math.isfinite(value))):
            raise SchemaCompileError(f"not JSON data: {value!r}"[:120], pointer, keyword)


def _json_layout(indent, separators, whitespace: str, max_depth: int) -> tuple["str | None", str, str]:
    """(indentation text or None, item separator, key separator), as ``json.dumps`` reads its
    ``indent`` and ``separators`` (an int indent is that many spaces; with an indent the item
    separator defaults to ``","``)."""
    if indent is None and separators is None:
        return None, ",", ":"
    if whitespace != "compact":
        raise ValueError("indent and separators give the exact layout: use them with whitespace='compact'")
    if isinstance(indent, bool) or not (indent is None or isinstance(indent, (int, str))):
        raise ValueError(f"indent must be None, a number of spaces or a string, not {indent!r}")
    if isinstance(indent, int):
        indent = " " * max(indent, 0)
    if indent is not None and (indent.strip(" \t") or not isinstance(max_depth, int) or max_depth < 1):
        raise ValueError("indent must be spaces or tabs, and max_depth a positive integer")
    if separators is None:
        separators = (",", ": ") if indent is not None else (", ", ": ")
    if (not isinstance(separators, (tuple, list)) or len(separators) != 2
            or not all(isinstance(part, str) and part.strip(" \t\n\r") == mark for part, mark in zip(separators, ",:"))):
        raise ValueError(f"separators must be (item separator, key separator) such as (', ', ': '): a comma and a "
                         f"colon with whitespace around them, not {separators!r}")
    return indent, separators[0], separators[1]


_EXIT = object()


def compile_json_schema(schema, *, whitespace: str = "compact", max_whitespace: int = 8,
                        string_escapes: str = "minimal", property_order: str = "schema", integer_fraction: bool = False,
                        approximate=(), max_states: "int | None" = None, strict: bool = True,
                        indent: "int | str | None" = None, separators: "tuple[str, str] | None" = None,
                        max_depth: int = 32, default_draft: "int | None" = None, registry=None,
                        limits: "CompileLimits | None" = None, _lazy: "bool | str" = True) -> Grammar:
    """See :meth:`Grammar.from_json_schema`."""
    with applied(limits) as limits:
        if max_states is None:
            max_states = limits.max_states
        return _compile(schema, whitespace, max_whitespace, string_escapes, property_order, integer_fraction,
                        approximate, max_states, strict, indent, separators, max_depth, default_draft, registry, limits,
                        _lazy)


def lazy_json_schema_rules(schema, **options) -> Emitter:
    """The schema's rules as an :class:`Emitter` that computes each rule when first asked for
    it (``alternatives``), for an LR(0) automaton built on demand; options as for
    :func:`compile_json_schema`. Errors of the schema's parts are raised where they are
    reached; only the schema's syntax and its root are checked here."""
    return compile_json_schema(schema, **options, _lazy="emitter")


def _compile(schema, whitespace, max_whitespace, string_escapes, property_order, integer_fraction, approximate,
             max_states, strict, indent, separators, max_depth, default_draft, registry, limits, lazy) -> Grammar:
    if is_schema_type(schema):
        schema = schema_of_type(schema)
    if isinstance(schema, (str, bytes)):
        if len(schema) > limits.max_schema_bytes:
            raise SchemaCompileError(f"the schema is larger than {limits.max_schema_bytes / (1 << 20):g} MiB "
                                     f"(CompileLimits.max_schema_bytes={limits.max_schema_bytes})")
        try:  # exact decimals: a bound of 0.1000000000000000000001 is not the double 0.1
            schema = json.loads(schema, parse_float=Decimal, parse_int=_parse_int)
        except json.JSONDecodeError as exc:
            raise SchemaCompileError(f"the schema is not valid JSON: {exc}") from None
        except RecursionError:
            raise SchemaCompileError("the schema nests too deeply") from None
        except UnicodeDecodeError as exc:
            raise SchemaCompileError(f"the schema text is not UTF-8 (nor UTF-16/32): {exc.reason} at byte "
                                     f"{exc.start}") from None
    if not isinstance(schema, (dict, bool)):
        raise SchemaCompileError(f"a schema must be an object or a boolean, not {type(schema).__name__}")
    _check_json_data(schema)
    if whitespace not in WHITESPACE_MODES:
        raise ValueError(f"whitespace must be one of {WHITESPACE_MODES}, not {whitespace!r}")
    if not isinstance(max_whitespace, int) or max_whitespace < 1:
        raise ValueError("max_whitespace must be a positive integer")
    if string_escapes not in ("minimal", "all"):
        raise ValueError(f"string_escapes must be 'minimal' or 'all', not {string_escapes!r}")
    if property_order not in ("schema", "any"):
        raise ValueError(f"property_order must be 'schema' or 'any', not {property_order!r}")
    approximate = frozenset([approximate] if isinstance(approximate, str) else approximate)
    if strict:
        try:
            schema = close_objects(schema, draft_of(schema, default_draft))
        except RecursionError:
            raise SchemaCompileError("the schema nests too deeply") from None
    indent_text, item_separator, key_separator = _json_layout(indent, separators, whitespace, max_depth)
    layout = Layout(max_whitespace if whitespace == "flexible" else None, string_escapes, property_order,
                    integer_fraction, indent_text, item_separator, key_separator, max_depth)
    draft = draft_of(schema, default_draft)

    def prepare(document, uri):  # a registry's document, checked (and closed) like the schema
        _check_json_data(document)
        return close_objects(document, inherited_draft(document, draft)) if strict else document

    with schema_errors(None):
        index = SchemaIndex(schema, draft, document_lookup(registry, prepare))
    with schema_errors(index):
        root = frozenset([index.root_location()])
    source = json_text(schema, sort_keys=True)
    # tracking evaluated members where a schema may need it (emitted lazily, a later restart is no option)
    tracked = '"unevaluatedProperties"' in source or '"unevaluatedItems"' in source or registry is not None
    key = (source, layout, max_states, approximate, draft, object() if registry is not None else None)
    recipe = SchemaRecipe(index, layout, root, max_states, approximate, source, key, tracked)
    if lazy == "emitter":
        return recipe.emitter()
    if lazy:
        return SchemaGrammar(recipe, limits)
    return recipe.grammar()
