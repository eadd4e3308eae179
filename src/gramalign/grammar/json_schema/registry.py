"""Documents a schema references by URI: the caller's registry, then the JSON-Schema meta-schemas.

``registry=`` is a mapping of absolute URIs to schemas, or a ``referencing.Registry`` (the
registry the ``jsonschema`` validator uses; it is a mapping of URIs to resources, read by
duck typing, so ``referencing`` is never imported here). The meta-schemas of drafts 3 to
2020-12 come from the ``jsonschema-specifications`` package when it is installed. Nothing
is ever fetched over the network: a URI found in neither is a
:class:`~gramalign.errors.SchemaCompileError` where it is referenced.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import SchemaCompileError

__all__ = ["document_lookup"]


def _metaschemas():
    try:
        from jsonschema_specifications import REGISTRY
    except ImportError:  # an optional dependency (installed with jsonschema)
        return None
    return REGISTRY


def _resources(registry) -> Mapping:
    """The registry as a mapping of URIs (no trailing ``#``) to resources or schemas."""
    if registry is None:
        return {}
    if not isinstance(registry, Mapping):
        raise ValueError("registry must be a mapping of URIs to schemas or a referencing.Registry (from the "
                         f"'referencing' package, installed with jsonschema), not {type(registry).__name__}")
    crawl = getattr(registry, "crawl", None)
    if callable(crawl) and hasattr(registry, "with_resource"):
        registry = crawl()  # a referencing.Registry: subresources ($id inside a document) become entries
        return registry
    resources = {}
    for uri, schema in registry.items():
        if not isinstance(uri, str):
            raise ValueError(f"registry keys must be URI strings, not {uri!r}")
        resources[uri[:-1] if uri.endswith("#") else uri] = schema
    return resources


def document_lookup(registry, prepare):
    """A function (uri, referring pointer) -> the document at ``uri`` passed through
    ``prepare(document, uri)`` (checks, strict closing), or None when neither the registry
    nor the meta-schemas have it."""
    if registry is not None and not isinstance(registry, Mapping):
        _resources(registry)  # the type error, at once
    found: dict[str, object] = {}
    resources: list = []  # the registry as a mapping, made at the first remote reference (crawling costs)

    def lookup(uri: str, pointer: str):
        if uri in found:
            return found[uri]
        if not resources:
            resources.append(_resources(registry))
        document = _get(resources[0], uri)
        if document is None:
            metaschemas = _metaschemas()
            document = _get(metaschemas, uri) if metaschemas is not None else None
        if document is not None:
            document = getattr(document, "contents", document)  # a referencing Resource
            if not isinstance(document, (dict, bool)):
                raise SchemaCompileError(f"the registry's document for {uri} is not a schema (an object or a "
                                         f"boolean) but {type(document).__name__}", pointer, "$ref")
            try:
                document = prepare(document, uri)
            except SchemaCompileError as exc:
                raise SchemaCompileError(f"in the registry's document {uri}: {exc}", pointer, "$ref") from None
        found[uri] = document
        return document

    return lookup


def _get(resources, uri: str):
    try:
        return resources[uri]
    except KeyError:  # referencing's NoSuchResource is one too
        return None
