"""Which keywords a draft defines, and whether their values are ones the metaschema allows.

A keyword a draft does not define is an annotation in a document that declares that draft:
``{"$schema": "http://json-schema.org/draft-04/schema#", "const": 5}`` accepts everything,
because ``const`` only exists from draft-06 on. :func:`draft_keywords` drops such keywords
before the evaluator reads a schema, the way the ``jsonschema`` validator of that draft
ignores them.

A keyword the draft defines but with a value of the wrong kind (``"maxLength": null``,
``"uniqueItems": 5``) must not be dropped silently either: :func:`check_keyword_values`
refuses it with the JSON pointer, from a hand-written table of what each metaschema allows
(the ``jsonschema`` package is not needed at run time). That includes a keyword the evaluator
never reads for this schema (``"then": 5`` without ``if``, ``"items": 5`` under ``"type":
"object"``): an invalid schema is refused, not compiled by what happens to be read.
"""

from __future__ import annotations

import difflib
import warnings
from decimal import Decimal

from ...errors import SchemaCompileError, SchemaKeywordWarning
from .resolve import UNDECLARED, escape_pointer, json_text
from .unique import value_key

__all__ = ["DRAFT_KEYWORDS", "check_keyword_values", "check_literal_strings", "draft_keywords",
           "warn_misspelled_keywords", "warn_unknown_format"]

# What the evaluator reads, per draft (as ``jsonschema``'s validators of each draft define
# them, plus the keywords that modify another: exclusiveMaximum/Minimum, then/else,
# additionalItems, minContains/maxContains).
_DRAFT4 = frozenset(["$ref", "additionalItems", "additionalProperties", "allOf", "anyOf", "dependencies", "enum",
                     "exclusiveMaximum", "exclusiveMinimum", "format", "items", "maxItems", "maxLength",
                     "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum", "multipleOf",
                     "not", "oneOf", "pattern", "patternProperties", "properties", "required", "type", "uniqueItems"])
_DRAFT6 = _DRAFT4 | {"const", "contains", "propertyNames"}
_DRAFT7 = _DRAFT6 | {"if", "then", "else"}
_DRAFT2019 = (_DRAFT7 - {"dependencies"}) | {"dependentRequired", "dependentSchemas", "minContains", "maxContains",
                                            "unevaluatedItems", "unevaluatedProperties", "$recursiveRef"}
_DRAFT2020 = (_DRAFT2019 - {"additionalItems", "$recursiveRef"}) | {"prefixItems", "$dynamicRef"}
DRAFT_KEYWORDS = {4: _DRAFT4, 6: _DRAFT6, 7: _DRAFT7, 2019: _DRAFT2019, 2020: _DRAFT2020,
                  UNDECLARED: _DRAFT2020 | {"additionalItems", "dependencies"}}
"""The assertion and applicator keywords each draft defines (annotations left out); a
document without ``$schema`` also keeps draft-07's (see :data:`.resolve.UNDECLARED`)."""

# Keywords no draft asserts with: annotations, containers and common vocabulary extensions.
_ANNOTATIONS = frozenset(["$schema", "$id", "id", "$ref", "$defs", "definitions", "$comment", "$anchor",
                          "$dynamicAnchor", "$recursiveAnchor", "$vocabulary", "title", "description", "default",
                          "examples", "example", "readOnly", "writeOnly", "deprecated", "contentMediaType",
                          "contentEncoding", "contentSchema", "nullable", "discriminator", "xml", "externalDocs"])
_ASSERTIONS = sorted(frozenset().union(*DRAFT_KEYWORDS.values()) - {"$ref"})
_KNOWN = frozenset(_ASSERTIONS) | _ANNOTATIONS


def warn_misspelled_keywords(node: dict, pointer: str) -> None:
    """Warn (:class:`SchemaKeywordWarning`) about keys of a schema that no draft defines but
    that look like a keyword misspelled (``propertes``): JSON Schema ignores unknown keys, so
    the constraint the author meant would be silently missing."""
    for key in node:
        # "_format", "x-foo": keys switched off or extended on purpose
        if not isinstance(key, str) or key in _KNOWN or key.startswith(("x-", "_", "$")):
            continue
        close = difflib.get_close_matches(key, _ASSERTIONS, n=1, cutoff=0.85)
        if close:
            warnings.warn(f"the schema at #{pointer} has the unknown keyword {key!r}, which JSON Schema ignores: "
                          f"did you mean {close[0]!r}?", SchemaKeywordWarning, stacklevel=2)


def warn_unknown_format(node: dict, pointer: str) -> None:
    """Warn (:class:`SchemaKeywordWarning`) about a ``format`` that gramalign does not know
    (``"phone"``): JSON Schema makes it an annotation, so any string is allowed there, which
    the author may not expect. Formats gramalign refuses (``idn-email``) are errors instead."""
    name = node.get("format")
    if not isinstance(name, str):
        return
    from .formats import FORMATS, UNSUPPORTED_FORMATS  # their automata load only where a schema has one

    if name in FORMATS or name in UNSUPPORTED_FORMATS:
        return
    close = difflib.get_close_matches(name, sorted(FORMATS), n=1, cutoff=0.8)
    hint = f": did you mean {close[0]!r}?" if close else " (a pattern would constrain it)"
    warnings.warn(f"the schema at #{pointer} has the unknown format {name!r}, which JSON Schema ignores, so any "
                  f"value is allowed there{hint}", SchemaKeywordWarning, stacklevel=2)


_COUNTS = ("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "minContains",
           "maxContains")
_NUMBERS = ("minimum", "maximum", "multipleOf")


def draft_keywords(node: dict, draft: int) -> dict:
    """``node`` without the keywords ``draft`` does not define (``node`` itself when it has none)."""
    known = DRAFT_KEYWORDS[draft]
    if all(key in known for key in node):
        return node
    return {key: value for key, value in node.items() if key in known}


def _is_number(value) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _is_count(value) -> bool:
    # 3.0 is accepted as 3, as draft-06 and later count it an integer
    return _is_number(value) and value >= 0 and value == int(value)


def _is_schema(value) -> bool:
    return isinstance(value, (dict, bool))


def _is_names(value) -> bool:
    return isinstance(value, list) and all(isinstance(name, str) for name in value)


# Keywords whose value is one subschema, an array of them, or an object of them (by name).
_ONE_SCHEMA = ("additionalItems", "additionalProperties", "contains", "else", "if", "not", "propertyNames", "then",
               "unevaluatedItems", "unevaluatedProperties")
_SCHEMA_ARRAYS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_OBJECTS = ("dependentSchemas", "patternProperties", "properties")


def _subschemas(node: dict, pointer: str):
    """(location, value) of every value of ``node`` that must be a schema; an array or object
    of them that is not one is refused with its keyword elsewhere, as are ``dependencies``."""
    for keyword in _ONE_SCHEMA:
        if keyword in node:
            yield f"{pointer}/{keyword}", node[keyword]
    if "items" in node:
        items = node["items"]
        if isinstance(items, list):
            yield from ((f"{pointer}/items/{i}", item) for i, item in enumerate(items))
        else:
            yield f"{pointer}/items", items
    for keyword in _SCHEMA_ARRAYS:
        if isinstance(node.get(keyword), list):
            yield from ((f"{pointer}/{keyword}/{i}", item) for i, item in enumerate(node[keyword]))
    for keyword in _SCHEMA_OBJECTS:
        if isinstance(node.get(keyword), dict):
            yield from ((f"{pointer}/{keyword}/{escape_pointer(name)}", item) for name, item in node[keyword].items())


def _repeated(values: list) -> bool:
    keys = [value_key(value) for value in values]
    return len(set(keys)) < len(keys)


def check_keyword_values(node: dict, pointer: str, draft: int) -> None:
    """Raise SchemaCompileError at the first keyword of ``node`` (already restricted to
    ``draft``'s keywords) whose value its metaschema does not allow, whether or not the
    evaluator reads it for this schema. A subschema that is not an object or a boolean is
    refused at its own location (keyword None), as where it is evaluated."""

    def refuse(keyword: str, expected: str) -> None:
        raise SchemaCompileError(f"{keyword} must be {expected}, not {json_text(node[keyword])[:40]}", pointer,
                                 keyword)

    for keyword in _COUNTS:
        if keyword in node and not _is_count(node[keyword]):
            refuse(keyword, "a non-negative integer")
    for keyword in _NUMBERS:
        if keyword in node and not _is_number(node[keyword]):
            refuse(keyword, "a number")
    for keyword in ("exclusiveMaximum", "exclusiveMinimum"):
        if keyword in node:
            if draft <= 4 and not isinstance(node[keyword], bool):
                refuse(keyword, "a boolean in draft-04 (it modifies maximum/minimum)")
            if draft > 4 and not _is_number(node[keyword]):
                refuse(keyword, "a number (booleans are the draft-04 form)")
    if "uniqueItems" in node and not isinstance(node["uniqueItems"], bool):
        refuse("uniqueItems", "a boolean")
    if "format" in node and not isinstance(node["format"], str):
        refuse("format", "a string")
    if "items" in node:
        items = node["items"]
        if draft == 2020 and isinstance(items, list):
            refuse("items", "a schema in draft 2020-12 (the array form is prefixItems there; declare an older "
                            "$schema for the draft-07 form)")
        if draft != 2020 and isinstance(items, list) and not items:
            refuse("items", "a schema or a non-empty array of schemas")
    if "prefixItems" in node and not (isinstance(node["prefixItems"], list) and node["prefixItems"]):
        refuse("prefixItems", "a non-empty array of schemas")
    if "dependentRequired" in node:
        value = node["dependentRequired"]
        if not isinstance(value, dict):
            refuse("dependentRequired", "an object")
        for name, names in value.items():
            if not _is_names(names):
                raise SchemaCompileError(f"dependentRequired: the value for {name!r} must be an array of property "
                                         f"names, not {json_text(names)[:40]}", pointer, "dependentRequired")
    if "dependencies" in node:
        value = node["dependencies"]
        if not isinstance(value, dict):
            refuse("dependencies", "an object")
        for name, requirement in value.items():
            if not (_is_names(requirement) or _is_schema(requirement)):
                raise SchemaCompileError(f"dependencies: the value for {name!r} must be a schema or an array of "
                                         f"property names, not {json_text(requirement)[:40]}", pointer,
                                         "dependencies")
    if "dependentSchemas" in node and not isinstance(node["dependentSchemas"], dict):
        refuse("dependentSchemas", "an object")
    # Arrays every metaschema wants non-empty or without repeats: type's (all drafts), required's
    # names (all drafts; non-empty in draft-04 only) and enum's members (draft-04 only: from
    # draft-06 on the metaschemas ask only for an array, so [] and [1, 1] are valid there).
    # Members are compared as JSON values, as the metaschema's uniqueItems does (1 equals 1.0).
    if _is_names(node.get("type")):  # other members are refused where the types are read
        if not node["type"]:
            refuse("type", "a type name or a non-empty array of them")
        if _repeated(node["type"]):
            refuse("type", "an array of distinct type names")
    if _is_names(node.get("required")):
        if draft <= 4 and not node["required"]:
            refuse("required", "a non-empty array of property names in draft-04 (an empty one is valid from "
                               "draft-06 on)")
        if _repeated(node["required"]):
            refuse("required", "an array of distinct property names")
    if isinstance(node.get("enum"), list) and draft <= 4:
        if not node["enum"]:
            refuse("enum", "a non-empty array in draft-04")
        if _repeated(node["enum"]):
            refuse("enum", "an array of distinct values in draft-04 (repeats are valid from draft-06 on)")
    for location, value in _subschemas(node, pointer):
        if not _is_schema(value):
            raise SchemaCompileError(f"a schema must be an object or a boolean, not {json_text(value)[:40]}", location)


def check_literal_strings(value, max_states: int, pointer: str, keyword: str) -> None:
    """Refuse, before any automaton is built, a string in ``value`` (a member of ``const``,
    ``enum``, a property name...; object keys included) that no automaton can hold: one with
    a lone surrogate (``"\\ud800"`` in JSON text), which has no UTF-8 spelling, or one whose
    automaton cannot fit: a literal of n UTF-8 bytes needs n + 1 states, and building one of
    millions only to find that out took seconds and gigabytes."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError as error:
                    raise SchemaCompileError(f"a string here holds the lone surrogate U+{ord(item[error.start]):04X}, "
                                             "which UTF-8 cannot encode", pointer, keyword) from None
            # a code point is at most 4 bytes: most strings are let through without encoding
            if 4 * len(item) + 1 > max_states:
                size = len(item.encode("utf-8"))
                if size + 1 > max_states:
                    raise SchemaCompileError(f"a string of {size} bytes ({json_text(item[:20])[:-1]}...) needs "
                                             f"more than max_states={max_states} automaton states (one per "
                                             "byte)", pointer, keyword)
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
