"""Where a JSON Schema's subschemas are, and what each ``$ref`` points to.

Every subschema is identified by its JSON pointer from the document root (``""`` for the
root, ``"/properties/a"``...). :class:`SchemaIndex` walks the document once, tracking base
URIs (``$id``; ``id`` in draft 4), and records every pointer, every resource URI and every
anchor (``$anchor``, and plain-name ``$id: "#foo"`` before 2019-09), so that resolving a
reference is a dictionary lookup. Only references inside the document are supported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import unquote, urldefrag, urljoin

from ...errors import SchemaCompileError

__all__ = ["DRAFTS", "UNDECLARED", "SchemaIndex", "draft_of", "escape_pointer"]

DRAFTS = {
    "http://json-schema.org/draft-04/schema": 4,
    "http://json-schema.org/draft-06/schema": 6,
    "http://json-schema.org/draft-07/schema": 7,
    "https://json-schema.org/draft/2019-09/schema": 2019,
    "https://json-schema.org/draft/2020-12/schema": 2020,
}
DEFAULT_BASE = "https://gramalign.invalid/schema.json"  # urljoin does not resolve against urn: bases

# Keywords whose value is a subschema, a list of subschemas, or a map of subschemas.
_SCHEMA_VALUED = {"additionalProperties", "additionalItems", "contains", "not", "if", "then", "else",
                  "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
_SCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}


UNDECLARED = 2021
"""The draft of a document without ``$schema``: 2020-12, except that the forms of draft-07
that mean nothing in 2020-12 keep their draft-07 meaning (``items`` as an array, with
``additionalItems``; ``dependencies``), as the schemas written that way in the wild intend."""


def draft_of(schema, default: "int | None" = None) -> int:
    """The draft a document declares with ``$schema``; ``default`` (4, 6, 7, 2019, 2020) when
    it says nothing, else :data:`UNDECLARED`."""
    if isinstance(schema, dict) and isinstance(schema.get("$schema"), str):
        draft = _DRAFTS_ANY_SCHEME.get(_without_scheme(schema["$schema"].rstrip("#")))
        if draft is not None:
            return draft
        raise SchemaCompileError(f"unknown $schema {schema['$schema']!r}", "", "$schema")
    if default is None:
        return UNDECLARED
    if default not in DRAFTS.values():
        raise ValueError(f"default_draft must be one of {sorted(DRAFTS.values())}, not {default!r}")
    return default


def _without_scheme(uri: str) -> str:
    return uri.split("://", 1)[-1]


_DRAFTS_ANY_SCHEME = {_without_scheme(uri): draft for uri, draft in DRAFTS.items()}  # http or https


_MISSING = object()


def _child(node, token: str):
    """(the name a JSON-pointer token spells, the member or item of ``node`` it names, or
    ``_MISSING``)."""
    name = token.replace("~1", "/").replace("~0", "~")
    if isinstance(node, dict) and name in node:
        return name, node[name]
    if isinstance(node, list) and name.isdigit() and int(name) < len(node):
        return name, node[int(name)]
    return name, _MISSING


def escape_pointer(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


@dataclass
class _Location:
    node: object
    base: str


class SchemaIndex:
    """Every subschema of one document, by pointer, plus URI and anchor lookups."""

    def __init__(self, root, draft: int):
        self.root = root
        self.draft = draft
        self.locations: dict[str, _Location] = {}
        self._schemas: set[str] = set()  # locations walked as schemas (not only as unknown keywords' data)
        self.uris: dict[str, str] = {}  # absolute URI (with fragment for anchors) -> pointer
        self._canonical: dict[str, str] = {}
        self._by_text: dict[tuple, str] = {}
        self._walk(root, "", DEFAULT_BASE)

    def node(self, pointer: str):
        return self._location(pointer).node

    def _location(self, pointer: str) -> _Location:
        found = self.locations.get(pointer)
        if found is None:
            # a subschema the walk did not meet (a keyword that holds schemas in another draft):
            # found from the root, so a reader never sees a location that is not there
            node, path, known = self.root, "", ""
            for token in pointer.split("/")[1:]:
                _, node = _child(node, token)
                if node is _MISSING:
                    raise SchemaCompileError("no subschema at this location", pointer)
                path = f"{path}/{token}"
                known = path if path in self.locations else known
            self._walk(node, pointer, self.locations[known].base)
            found = self.locations[pointer]
        return found

    def canonical(self, pointer: str) -> str:
        """The first pointer seen whose subschema is the same text under the same base URI:
        copies of one subschema (pasted definitions, generated schemas) mean the same thing."""
        found = self._canonical.get(pointer)
        if found is None:
            location = self._location(pointer)
            key = (location.base, json_text(location.node, sort_keys=True))
            found = self._canonical[pointer] = self._by_text.setdefault(key, pointer)
        return found

    def base(self, pointer: str) -> str:
        return self._location(pointer).base

    def _walk(self, node, pointer: str, base: str) -> None:
        if not isinstance(node, (dict, bool)):  # not a schema: kept so the error can point at it
            self.locations.setdefault(pointer, _Location(node, base))
            return
        if isinstance(node, dict):
            identifier = node.get("id" if self.draft == 4 else "$id")
            if isinstance(identifier, str) and not (self.draft >= 7 and "$ref" in node and self.draft < 2019):
                resolved = urljoin(base, identifier)
                uri, fragment = urldefrag(resolved)
                if fragment and self.draft < 2019:
                    self.uris[resolved] = pointer  # plain-name fragment: an anchor
                else:
                    base = uri
                    self.uris.setdefault(uri, pointer)
            # anchors of drafts that define them: elsewhere they are annotations, and a $ref to
            # one does not resolve (as in jsonschema's validator for that draft)
            anchor = node.get("$anchor") if self.draft >= 2019 else None
            if isinstance(anchor, str):
                self.uris[f"{base}#{anchor}"] = pointer
            dynamic_anchor = node.get("$dynamicAnchor") if self.draft >= 2020 else None
            if isinstance(dynamic_anchor, str):
                self.uris.setdefault(f"{base}#{dynamic_anchor}", pointer)
        self.locations[pointer] = _Location(node, base)
        self._schemas.add(pointer)
        if pointer == "":
            self.uris.setdefault(base, "")
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            child = f"{pointer}/{escape_pointer(key)}"
            if key in ("enum", "const", "examples", "default"):
                continue
            if key in _SCHEMA_VALUED or (key == "items" and not isinstance(value, list)):
                self._walk(value, child, base)
            elif key in _SCHEMA_LISTS or key == "items":
                if isinstance(value, list):
                    for i, item in enumerate(value):
                        self._walk(item, f"{child}/{i}", base)
            elif key in _SCHEMA_MAPS or (key == "dependencies" and isinstance(value, dict)):
                if isinstance(value, dict):
                    for name, item in value.items():
                        self._walk(item, f"{child}/{escape_pointer(name)}", base)
            elif isinstance(value, dict) and key not in ("properties",):
                # unknown keywords may still hold schemas that a $ref points into
                self._walk_unknown(value, child, base)

    def _walk_unknown(self, node, pointer: str, base: str) -> None:
        if pointer in self.locations:
            return
        self.locations[pointer] = _Location(node, base)
        for key, value in node.items():
            if isinstance(value, dict):
                self._walk_unknown(value, f"{pointer}/{escape_pointer(key)}", base)

    def resolve(self, ref: str, pointer: str) -> str:
        """The pointer a ``$ref`` found at ``pointer`` refers to."""
        if not isinstance(ref, str):
            raise SchemaCompileError(f"$ref must be a string, not {json_text(ref)[:40]}", pointer, "$ref")
        base = self.base(pointer)
        target = urljoin(base, ref)
        uri, fragment = urldefrag(target)
        if target in self.uris:
            return self.uris[target]
        if uri not in self.uris:
            raise SchemaCompileError(f"$ref {ref!r} points outside this document ({uri}); only references "
                                     "within the schema are supported", pointer, "$ref")
        resource = self.uris[uri]
        if not fragment:
            return resource
        if not fragment.startswith("/"):
            raise SchemaCompileError(f"$ref {ref!r}: no anchor {fragment!r} in this document", pointer, "$ref")
        return self._follow_pointer(resource, unquote(fragment), ref, pointer)

    def _follow_pointer(self, resource: str, fragment: str, ref: str, pointer: str) -> str:
        node = self.node(resource)
        path = resource
        for token in fragment.split("/")[1:]:
            name, child = _child(node, token)
            if child is _MISSING:
                raise SchemaCompileError(f"$ref {ref!r} does not resolve: no {name!r} in "
                                         f"{json_text(node)[:60]}", pointer, "$ref")
            node = child
            path = f"{path}/{escape_pointer(name)}"
        if path not in self._schemas:  # unknown keywords' values were recorded as data, not walked as schemas
            self._walk(node, path, self.locations[path].base if path in self.locations else self.base(resource))
        return path


def json_text(value, *, sort_keys: bool = False) -> str:
    """``json.dumps`` that also writes Decimal numbers (schemas are read with exact decimals)."""
    try:
        return json.dumps(value, sort_keys=sort_keys)
    except TypeError:  # a Decimal somewhere inside
        return _exact_json_text(value, sort_keys)


def _exact_json_text(value, sort_keys: bool) -> str:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(_exact_json_text(item, sort_keys) for item in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value) if sort_keys else value
        return "{" + ",".join(json.dumps(key) + ":" + _exact_json_text(value[key], sort_keys) for key in keys) + "}"
    return json.dumps(value)
