"""Where a JSON Schema's subschemas are, and what each ``$ref`` points to.

Every subschema is identified by its location: its JSON pointer from the document root
(``""`` for the root, ``"/properties/a"``...), after ``"%n"`` for the n-th document read
from the registry (:mod:`.registry`). :class:`SchemaIndex` walks each document once,
tracking base URIs (``$id``; ``id`` in draft 4), and records every location, every resource
URI and every anchor (``$anchor``, ``$dynamicAnchor``, and plain-name ``$id: "#foo"`` before
2019-09), so that resolving a reference is a dictionary lookup; a URI outside the documents
read so far is looked up in the registry, never fetched.

``$dynamicRef`` and ``$recursiveRef`` depend on the dynamic scope: the resources evaluation
went through to get there. Where the documents use them, every location starts with
``"@k"``, the scope it is evaluated in, reduced to what can change a resolution (the first
``$dynamicAnchor`` of each name a ``$dynamicRef`` uses, the 2019-09 recursive-anchor run,
the innermost resource while something is still open), so a subschema reached through
different scopes is evaluated once per scope, and there are at most
:data:`MAX_DYNAMIC_SCOPES`. Schemas without dynamic references have plain locations.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import unquote, urldefrag, urljoin

from ...errors import SchemaCompileError

__all__ = ["DRAFTS", "MAX_DOCUMENTS", "MAX_DYNAMIC_SCOPES", "UNDECLARED", "SchemaIndex", "draft_of", "escape_pointer",
           "inherited_draft", "local_pointer", "split_location"]

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
# Where draft-04's metaschema wants a schema object: boolean schemas came with draft-06, and
# draft-04 allows a boolean only as additionalItems and additionalProperties.
_DRAFT4_SCHEMA_LISTS = {"items", "allOf", "anyOf", "oneOf"}
_DRAFT4_SCHEMA_MAPS = {"properties", "patternProperties", "definitions", "dependencies"}
_DRAFT4_SCHEMA_KEYWORDS = _DRAFT4_SCHEMA_LISTS | _DRAFT4_SCHEMA_MAPS | {"not"}


UNDECLARED = 2021
"""The draft of a document without ``$schema``: 2020-12, except that the forms of draft-07
that mean nothing in 2020-12 keep their draft-07 meaning (``items`` as an array, with
``additionalItems``; ``dependencies``), as the schemas written that way in the wild intend."""


def draft_of(schema, default: "int | None" = None) -> int:
    """The draft a document declares with ``$schema``; ``default`` (4, 6, 7, 2019, 2020) when
    it says nothing, else :data:`UNDECLARED`."""
    if isinstance(schema, dict) and "$schema" in schema:
        if not isinstance(schema["$schema"], str):  # every metaschema wants a URI string
            raise SchemaCompileError(f"$schema must be a string (the URI of a draft), not "
                                     f"{json_text(schema['$schema'])[:40]}", "", "$schema")
        draft = _DRAFTS_ANY_SCHEME.get(_without_scheme(schema["$schema"].rstrip("#")))
        if draft is not None:
            return draft
        raise SchemaCompileError(f"unknown $schema {schema['$schema']!r}", "", "$schema")
    if default is None:
        return UNDECLARED
    if default not in DRAFTS.values():
        raise ValueError(f"default_draft must be one of {sorted(DRAFTS.values())}, not {default!r}")
    return default


def inherited_draft(document, referrer: int) -> int:
    """The draft of a document read from the registry: its own ``$schema``, else the draft of
    the schema that references it."""
    return draft_of(document, None if referrer == UNDECLARED else referrer)


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
    if "~" not in token and "/" not in token:  # (most keys: no copies)
        return token
    return token.replace("~", "~0").replace("/", "~1")


@dataclass
class _Location:
    node: object
    base: str
    resource: str  # the location of the innermost schema resource (document root or $id) holding it


@dataclass
class _Document:
    root: object
    draft: int
    uri: str


MAX_DOCUMENTS = 256
"""Documents (the schema and those it references through the registry) one compile may read."""
MAX_DYNAMIC_SCOPES = 64
"""Dynamic scopes one compile may tell apart (each is a copy of the subschemas evaluated in it)."""

_LOCATION = re.compile(r"@(\d+)")


def document_of(location: str) -> int:
    """The document a location (without a dynamic scope) lies in: 0 for the schema itself."""
    return int(location[1:location.find("/")] if "/" in location else location[1:]) if location[:1] == "%" else 0


def split_location(location: str) -> tuple["int | None", str]:
    """(dynamic scope number or None, the location in its document)."""
    found = _LOCATION.match(location)
    return (int(found.group(1)), location[found.end():]) if found else (None, location)


def local_pointer(location: str) -> str:
    """The JSON pointer within its document of a location (scope and document marks removed)."""
    location = split_location(location)[1]
    if location[:1] == "%":
        slash = location.find("/")
        return "" if slash < 0 else location[slash:]
    return location


@dataclass(frozen=True)
class _Scope:
    """What a dynamic scope decides: the first (outermost) ``$dynamicAnchor`` of each name a
    ``$dynamicRef`` uses, the outermost resource of the innermost run of resources with
    ``$recursiveAnchor: true`` (2019-09), and the innermost resource (None once nothing a
    further resource could add is left open)."""

    winners: tuple = ()
    recursive: "str | None" = None
    resource: "str | None" = None


class SchemaIndex:
    """Every subschema of one document (and of the documents it references), by location,
    plus URI and anchor lookups and the dynamic scopes of ``$dynamicRef``/``$recursiveRef``.

    A location is a JSON pointer in the schema (``"/properties/a"``), or ``"%n"`` followed
    by one in the n-th document read from the registry. Where the documents use dynamic
    references, every location starts with ``"@k"``: the dynamic scope it is evaluated in,
    so that one subschema reached through different scopes is evaluated once per scope.
    """

    def __init__(self, root, draft: int, lookup=None):
        self.root = root
        self.draft = draft
        self._lookup = lookup  # uri -> document or None (see .registry)
        self.documents = [_Document(root, draft, DEFAULT_BASE)]
        self.locations: dict[str, _Location] = {}
        self._schemas: set[str] = set()  # locations walked as schemas (not only as unknown keywords' data)
        self.uris: dict[str, str] = {}  # absolute URI (with fragment for anchors) -> location
        self._canonical: dict[str, str] = {}
        self._by_text: dict[tuple, str] = {}
        self._resources: set[str] = set()
        self._dynamic_anchors: dict[str, dict[str, str]] = {}  # resource -> {name: location}
        self._dynamic_refs: set[str] = set()  # anchor names that $dynamicRef fragments use
        self._recursive = False  # a $recursiveRef somewhere
        self._references: list[tuple[str, str]] = []  # ($ref value, location), for loading documents
        self._walk(root, "", DEFAULT_BASE, "")
        self._scopes: list[_Scope] = []
        self._scope_numbers: dict[_Scope, int] = {}
        self._normalized: dict[str, str] = {}  # (a scope's resources walked anew on each call cost ~0.1 ms)
        self._normalized_for = -1  # len(self._resources) the memo was made with
        self.dynamic = False
        if lookup is not None:
            self._load_referenced()
        self.dynamic = bool(self._dynamic_refs) or self._recursive

    # ------------------------------------------------------------------ documents

    def _load_referenced(self) -> None:
        """Read every document a reference names that the registry has, before evaluation, so
        the dynamic anchors of all of them are known (unknown ones fail where they are used)."""
        done = 0
        while done < len(self._references):
            ref, location = self._references[done]
            done += 1
            if ref.startswith("#"):
                continue  # in the document it is met in, whose base the walk registered
            try:
                uri = urldefrag(_join(self.base(location), ref))[0]
            except ValueError:
                continue
            if uri not in self.uris:
                try:
                    self._load(uri, location)
                except SchemaCompileError:
                    pass  # a document that cannot be read fails where it is used, if it is

    def _load(self, uri: str, location: str) -> bool:
        if self._lookup is None:
            return False
        document = self._lookup(uri, local_pointer(location))
        if document is None:
            return False
        if len(self.documents) >= MAX_DOCUMENTS:
            raise SchemaCompileError(f"the schema references more than {MAX_DOCUMENTS} documents",
                                     local_pointer(location), "$ref")
        prefix = f"%{len(self.documents)}"
        try:
            draft = inherited_draft(document, self.draft)
        except SchemaCompileError as exc:
            raise SchemaCompileError(f"{exc.message} in {uri}", local_pointer(location), "$ref") from None
        self.documents.append(_Document(document, draft, uri))
        self.uris.setdefault(uri, prefix)
        self._walk(document, prefix, uri, prefix)
        return True

    def draft_at(self, location: str) -> int:
        return self.documents[document_of(split_location(location)[1])].draft

    def document_uri(self, location: str) -> "str | None":
        """The URI of the registry document a location lies in (None: the schema itself)."""
        number = document_of(split_location(location)[1])
        return self.documents[number].uri if number else None

    # ------------------------------------------------------------------ locations

    def node(self, location: str):
        return self._location(split_location(location)[1]).node

    def _location(self, pointer: str) -> _Location:
        found = self.locations.get(pointer)
        if found is None:
            # a subschema the walk did not meet (a keyword that holds schemas in another draft):
            # found from its document's root, so a reader never sees a location that is not there
            number = document_of(pointer)
            prefix = f"%{number}" if number else ""
            node, path, known = self.documents[number].root, prefix, prefix
            for token in pointer[len(prefix):].split("/")[1:]:
                _, node = _child(node, token)
                if node is _MISSING:
                    raise SchemaCompileError("no subschema at this location", pointer)
                path = f"{path}/{token}"
                known = path if path in self.locations else known
            self._walk(node, pointer, self.locations[known].base, self.locations[known].resource)
            found = self.locations[pointer]
        return found

    def canonical(self, location: str) -> str:
        """The first location seen whose subschema is the same text under the same base URI:
        copies of one subschema (pasted definitions, generated schemas) mean the same thing."""
        number, pointer = split_location(location)
        if number is not None:
            location = self.normalize(location)
            number, pointer = split_location(location)
        found = self._canonical.get(pointer)
        if found is None:
            place = self._location(pointer)
            key = (place.base, json_text(place.node, sort_keys=True))
            found = self._canonical[pointer] = self._by_text.setdefault(key, pointer)
        if number is None:
            return found
        resource = self._scopes[number].resource
        if resource is not None and not _under(found, resource):
            return location  # a copy in another resource would enter other scopes
        return f"@{number}{found}"

    def base(self, location: str) -> str:
        return self._location(split_location(location)[1]).base

    def _walk(self, node, pointer: str, base: str, resource: str) -> None:
        draft = self.documents[document_of(pointer)].draft
        if not isinstance(node, (dict, bool)):  # not a schema: kept so the error can point at it
            self.locations.setdefault(pointer, _Location(node, base, resource))
            return
        if pointer == resource:
            self._resources.add(pointer)
        if isinstance(node, bool) and draft == 4 and pointer == "":
            raise SchemaCompileError(f"a schema must be an object in draft-04, not {json_text(node)} (boolean "
                                     "schemas are draft-06 and later)")
        if isinstance(node, dict):
            if "$schema" in node and not isinstance(node["$schema"], str):  # every metaschema wants a URI string
                raise SchemaCompileError(f"$schema must be a string (the URI of a draft), not "
                                         f"{json_text(node['$schema'])[:40]}", pointer, "$schema")
            if draft == 4:
                _refuse_boolean_subschemas(node, pointer)
            identifier = node.get("id" if draft == 4 else "$id")
            if isinstance(identifier, str) and not (draft >= 7 and "$ref" in node and draft < 2019):
                resolved = _join(base, identifier)
                uri, fragment = urldefrag(resolved)
                if fragment and draft < 2019:
                    self.uris[resolved] = pointer  # plain-name fragment: an anchor
                else:
                    base = uri
                    resource = pointer
                    self._resources.add(pointer)
                    self.uris.setdefault(uri, pointer)
            # anchors of drafts that define them: elsewhere they are annotations, and a $ref to
            # one does not resolve (as in jsonschema's validator for that draft)
            anchor = node.get("$anchor") if draft >= 2019 else None
            if isinstance(anchor, str):
                self.uris[f"{base}#{anchor}"] = pointer
            dynamic_anchor = node.get("$dynamicAnchor") if draft >= 2020 else None
            if isinstance(dynamic_anchor, str):
                self.uris.setdefault(f"{base}#{dynamic_anchor}", pointer)
                self._dynamic_anchors.setdefault(resource, {}).setdefault(dynamic_anchor, pointer)
            for keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
                if isinstance(node.get(keyword), str):
                    self._references.append((node[keyword], pointer))
            if draft >= 2020 and isinstance(node.get("$dynamicRef"), str):
                fragment = urldefrag(node["$dynamicRef"])[1]
                if fragment and not fragment.startswith("/"):
                    self._dynamic_refs.add(fragment)
            if draft == 2019 and "$recursiveRef" in node:
                self._recursive = True
        self.locations[pointer] = _Location(node, base, resource)
        self._schemas.add(pointer)
        if pointer == resource:
            self.uris.setdefault(base, pointer)
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            if key in _SCHEMA_VALUED or (key == "items" and not isinstance(value, list)):
                self._walk(value, f"{pointer}/{escape_pointer(key)}", base, resource)
            elif key in _SCHEMA_LISTS or key == "items":
                if isinstance(value, list):
                    child = f"{pointer}/{key}"
                    for i, item in enumerate(value):
                        self._walk(item, f"{child}/{i}", base, resource)
            elif key in _SCHEMA_MAPS or (key == "dependencies" and isinstance(value, dict)):
                if isinstance(value, dict):
                    child = f"{pointer}/{key}"
                    for name, item in value.items():
                        self._walk(item, f"{child}/{escape_pointer(name)}", base, resource)
            elif isinstance(value, dict) and key not in ("properties", "enum", "const", "examples", "default"):
                # unknown keywords may still hold schemas that a $ref points into
                self._walk_unknown(value, f"{pointer}/{escape_pointer(key)}", base, resource)

    def _walk_unknown(self, node, pointer: str, base: str, resource: str) -> None:
        if pointer in self.locations:
            return
        self.locations[pointer] = _Location(node, base, resource)
        for key, value in node.items():
            if isinstance(value, dict):
                self._walk_unknown(value, f"{pointer}/{escape_pointer(key)}", base, resource)

    # ------------------------------------------------------------------ references

    def root_location(self) -> str:
        """The location of the schema's root (in its initial dynamic scope)."""
        return self._enter(_Scope(), "", "") if self.dynamic else ""

    def resolve(self, ref: str, location: str) -> str:
        """The location a ``$ref`` found at ``location`` refers to (in the dynamic scope it
        enters there)."""
        return self._entered(location, self._static(ref, location, "$ref"))

    def resolve_dynamic(self, ref: str, location: str) -> str:
        """``$dynamicRef`` (2020-12): where its static target is a ``$dynamicAnchor`` of the
        fragment's name, the outermost one of that name in the dynamic scope."""
        target = self._static(ref, location, "$dynamicRef")
        fragment = urldefrag(ref)[1]
        node = self.node(target)
        number = split_location(location)[0]
        if number is not None and isinstance(node, dict) and node.get("$dynamicAnchor") == fragment:
            target = dict(self._scopes[number].winners).get(fragment, target)
        return self._entered(location, target)

    def resolve_recursive(self, ref: str, location: str) -> str:
        """``$recursiveRef`` (2019-09): where its target has ``$recursiveAnchor: true``, the
        outermost resource of the innermost run of such resources in the dynamic scope (as
        the ``jsonschema`` validator reads the draft)."""
        target = self._static(ref, location, "$recursiveRef")
        node = self.node(target)
        number = split_location(location)[0]
        if number is not None and isinstance(node, dict) and node.get("$recursiveAnchor") is True:
            outermost = self._scopes[number].recursive
            target = target if outermost is None else outermost
        return self._entered(location, target)

    def _static(self, ref, location: str, keyword: str) -> str:
        if not isinstance(ref, str):
            raise SchemaCompileError(f"{keyword} must be a string, not {json_text(ref)[:40]}", location, keyword)
        base = self.base(location)
        try:
            target = _join(base, ref)
        except ValueError as exc:
            raise SchemaCompileError(f"{keyword} {ref!r} is not a URI reference: {exc}", location, keyword) from None
        uri, fragment = urldefrag(target)
        if target in self.uris:
            return self.uris[target]
        if uri not in self.uris and not self._load(uri, location):
            raise SchemaCompileError(f"{keyword} {ref!r} points to {uri}, which is neither in this document nor in "
                                     "the registry (schemas are never fetched over the network: pass "
                                     "registry={uri: schema})", location, keyword)
        if target in self.uris:
            return self.uris[target]
        resource = self.uris[uri]
        if not fragment:
            return resource
        if not fragment.startswith("/"):
            raise SchemaCompileError(f"{keyword} {ref!r}: no anchor {fragment!r} in {uri}", location, keyword)
        return self._follow_pointer(resource, unquote(fragment), ref, location, keyword)

    def _follow_pointer(self, resource: str, fragment: str, ref: str, location: str, keyword: str) -> str:
        node = self.node(resource)
        path = resource
        for token in fragment.split("/")[1:]:
            name, child = _child(node, token)
            if child is _MISSING:
                raise SchemaCompileError(f"{keyword} {ref!r} does not resolve: no {name!r} in "
                                         f"{json_text(node)[:60]}", location, keyword)
            node = child
            path = f"{path}/{escape_pointer(name)}"
        if path not in self._schemas:  # unknown keywords' values were recorded as data, not walked as schemas
            known = self.locations.get(path) or self._location(resource)
            self._walk(node, path, known.base, known.resource)
        return path

    # ------------------------------------------------------------------ dynamic scopes

    def _entered(self, origin: str, target: str) -> str:
        """``target`` in the dynamic scope of ``origin`` once the target's resource is entered."""
        number = split_location(origin)[0]
        if number is None:
            return target
        resource = self._location(target).resource
        return self._enter(self._scopes[number], resource, target)

    def normalize(self, location: str) -> str:
        """``location`` (made by appending keywords to a location of its scope) in its own
        scope: the one entered through the resources (``$id``) on the way to it."""
        number, pointer = split_location(location)
        if number is None:
            return location
        if self._normalized_for != len(self._resources):  # a subschema walked late named a resource
            self._normalized.clear()
            self._normalized_for = len(self._resources)
        found = self._normalized.get(location)
        if found is None:
            found = self._normalized[location] = self._normalize(number, pointer, location)
        return found

    def _normalize(self, number: int, pointer: str, location: str) -> str:
        scope = self._scopes[number]
        if scope.resource is None or pointer == scope.resource:
            return location
        if not _under(pointer, scope.resource):  # not a descendant: enter its own resource
            return self._enter(scope, self._location(pointer).resource, pointer)
        inner = self._location(pointer).resource
        if inner == scope.resource:
            return location
        path = scope.resource
        for token in pointer[len(scope.resource):].split("/")[1:]:
            path = f"{path}/{token}"
            if path in self._resources and _under(inner, path):
                scope = self._scopes[split_location(self._enter(scope, path, path))[0]]
        return self._enter(scope, inner, pointer)

    def _enter(self, scope: _Scope, resource: str, pointer: str) -> str:
        winners, recursive = scope.winners, scope.recursive
        if resource != scope.resource:
            named = dict(winners)
            for name, place in self._dynamic_anchors.get(resource, {}).items():
                if name in self._dynamic_refs and name not in named:
                    winners += ((name, place),)
            if self._recursive:
                node = self.node(resource)
                anchored = isinstance(node, dict) and node.get("$recursiveAnchor") is True
                recursive = (resource if recursive is None else recursive) if anchored else None
        open_names = any(name not in dict(winners) for name in self._dynamic_refs)
        entered = _Scope(winners, recursive, resource if open_names or self._recursive else None)
        number = self._scope_numbers.get(entered)
        if number is None:
            if len(self._scopes) >= MAX_DYNAMIC_SCOPES:
                raise SchemaCompileError(f"more than {MAX_DYNAMIC_SCOPES} dynamic scopes ($dynamicRef/$recursiveRef "
                                         "resolve differently in each, so each is a copy of the subschemas "
                                         "evaluated in it)", local_pointer(pointer))
            number = self._scope_numbers[entered] = len(self._scopes)
            self._scopes.append(entered)
        return f"@{number}{pointer}"


def _refuse_boolean_subschemas(node: dict, pointer: str) -> None:
    """Refuse a boolean where draft-04's metaschema wants a schema object (found here, where
    the document is walked, so also under keywords evaluation skips and behind a ``$ref``)."""
    places = []
    for keyword, value in node.items():
        if keyword not in _DRAFT4_SCHEMA_KEYWORDS:
            continue
        if isinstance(value, list) and keyword in _DRAFT4_SCHEMA_LISTS:
            places += [(f"{pointer}/{keyword}/{i}", item) for i, item in enumerate(value)]
        elif isinstance(value, dict) and keyword in _DRAFT4_SCHEMA_MAPS:
            places += [(f"{pointer}/{keyword}/{escape_pointer(name)}", item) for name, item in value.items()]
        else:
            places.append((f"{pointer}/{keyword}", value))
    for where, value in places:
        if isinstance(value, bool):
            raise SchemaCompileError(f"a schema must be an object in draft-04, not {json_text(value)} (boolean "
                                     "schemas are draft-06 and later)", where)


def _join(base: str, ref: str) -> str:
    """``ref`` resolved against ``base`` (RFC 3986); a fragment alone also against bases such
    as ``urn:uuid:...`` that ``urljoin`` leaves alone."""
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    return urljoin(base, ref)


def _under(pointer: str, ancestor: str) -> bool:
    return pointer == ancestor or pointer.startswith(ancestor + "/")


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
