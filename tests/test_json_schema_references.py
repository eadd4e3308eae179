"""Remote references through ``registry=``, ``$dynamicRef`` and ``$recursiveRef``.

Oracles: the JSON-Schema-Test-Suite (its ``remotes`` folder is the registry, served at
``http://localhost:1234/`` in the suite's own harness) and the ``jsonschema`` validator,
given the same documents through a ``referencing.Registry``, on instances enumerated from
small value pools. An invalid instance accepted is always a failure; a valid one rejected
only where it is written ``1.0`` for an integer (the output form writes ``1``).
"""

from __future__ import annotations

import itertools
import json
import sys

import jsonschema
import pytest
import referencing
import referencing.jsonschema

from gramalign.errors import SchemaCompileError
from gramalign.grammar.grammar import Grammar
from gramalign.grammar.json_schema.resolve import MAX_DYNAMIC_SCOPES
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from support.json_instances import has_integral_float
from support.shared_data import data_dir

REMOTE = "http://localhost:1234/"

# (file, group): why the group is refused; every other group must compile.
REFUSED = {
    ("draft2020-12/dynamicRef.json", "strict-tree schema, guards against misspelled properties"):
        "unevaluatedProperties",
    ("draft2019-09/recursiveRef.json", "multiple dynamic paths to the $recursiveRef keyword"):
        "if/else over propertyNames: the complement's 'some member' conditions multiply",
    ("draft2019-09/recursiveRef.json", "dynamic $recursiveRef destination (not predictable at schema compile time)"):
        "if/else over propertyNames: the complement's 'some member' conditions multiply",
}
FILES = ["draft2020-12/dynamicRef.json", "draft2020-12/refRemote.json", "draft2019-09/recursiveRef.json",
         "draft2019-09/refRemote.json", "draft7/refRemote.json", "draft6/refRemote.json", "draft4/refRemote.json"]


def _remotes() -> dict:
    folder = data_dir() / "json-schema-test-suite" / "remotes"
    return {REMOTE + path.relative_to(folder).as_posix(): json.loads(path.read_text(encoding="utf-8"))
            for path in sorted(folder.rglob("*.json"))}


def _suite_schema(file: str, schema):
    draft = {"draft7": 7, "draft6": 6, "draft4": 4}.get(file.split("/")[0])
    if draft is not None and isinstance(schema, dict) and "$schema" not in schema:
        return {"$schema": f"http://json-schema.org/draft-0{draft}/schema#", **schema}
    return schema


def _accepts(grammar: Grammar, value) -> bool:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return IncrementalParser(build_parser_tables(grammar)).accepts(text.encode("utf-8"))


@pytest.mark.parametrize("file", FILES)
def test_suite_groups_compile_and_agree(file):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    registry = _remotes()
    groups = json.loads((data_dir() / "json-schema-test-suite" / "tests" / file).read_text(encoding="utf-8"))
    failures = []
    for group in groups:
        schema = _suite_schema(file, group["schema"])
        try:
            grammar = Grammar.from_json_schema(schema, registry=registry, integer_fraction=True, strict=False).whole()
        except SchemaCompileError as exc:
            if (file, group["description"]) not in REFUSED:
                failures.append(("refused", group["description"], str(exc)))
            continue
        for test in group["tests"]:
            if _accepts(grammar, test["data"]) != test["valid"]:
                failures.append(("INVALID ACCEPTED" if not test["valid"] else "valid rejected", group["description"],
                                 test["description"]))
    assert not failures, "\n".join(map(repr, failures))


def _referencing_registry(documents: dict) -> referencing.Registry:
    draft = referencing.jsonschema.DRAFT202012
    return referencing.Registry().with_resources(
        [(uri, draft.create_resource(doc)) for uri, doc in documents.items() if "/draft2020-12/" in uri])


def test_a_referencing_registry_works_like_a_mapping():
    documents = _remotes()
    registry = _referencing_registry(documents)
    schema = {"$id": "http://localhost:1234/draft2020-12/", "type": "array",
              "items": {"$ref": "baseUriChange/folderInteger.json"}}
    by_mapping = Grammar.from_json_schema(schema, registry=documents)
    by_registry = Grammar.from_json_schema(schema, registry=registry)
    for value in ([], [1, 2], ["a"], [1.5], [None]):
        valid = jsonschema.Draft202012Validator(schema, registry=registry).is_valid(value)
        assert _accepts(by_mapping, value) == _accepts(by_registry, value) == valid, value


def test_an_unknown_uri_names_itself_and_the_place():
    schema = {"$id": "http://example.invalid/root/", "properties": {"a": {"$ref": "other.json#/$defs/x"}}}
    with pytest.raises(SchemaCompileError) as caught:
        Grammar.from_json_schema(schema).whole()
    assert "http://example.invalid/root/other.json" in str(caught.value)
    assert (caught.value.pointer, caught.value.keyword) == ("/properties/a", "$ref")
    with pytest.raises(SchemaCompileError, match="other.json"):
        Grammar.from_json_schema(schema, registry={"http://example.invalid/root/else.json": {}}).whole()


def test_errors_inside_a_registry_document_name_it():
    registry = {"http://example.invalid/bad.json": {"$defs": {"x": {"type": "no-such-type"}}}}
    with pytest.raises(SchemaCompileError) as caught:
        Grammar.from_json_schema({"$ref": "http://example.invalid/bad.json#/$defs/x"}, registry=registry).whole()
    assert "http://example.invalid/bad.json" in str(caught.value)
    assert (caught.value.pointer, caught.value.keyword) == ("/$defs/x", "type")
    for bad in ({"http://example.invalid/bad.json": 3}, {"http://example.invalid/bad.json": {"a": {1, 2}}}):
        with pytest.raises(SchemaCompileError, match="bad.json"):
            Grammar.from_json_schema({"$ref": "http://example.invalid/bad.json"}, registry=bad).whole()
    with pytest.raises(ValueError, match="referencing.Registry"):
        Grammar.from_json_schema({"$ref": "http://example.invalid/bad.json"}, registry=[1]).whole()


def test_metaschemas_come_from_jsonschema_specifications():
    schema = {"type": "array", "items": {"$ref": "https://json-schema.org/draft/2020-12/meta/validation#/$defs/"
                                                  "simpleTypes"}}
    grammar = Grammar.from_json_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for value in ([], ["null", "integer"], ["foo"], [1], ["object", "array", "string"]):
        assert _accepts(grammar, value) == validator.is_valid(value), value


# Generic containers: the item type is chosen by the dynamic scope ("multiple dynamic paths"),
# a tree whose nodes are extended (extendible-dynamic-ref), and a 2019-09 recursive tree.
GENERIC = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.invalid/main",
    "type": "object", "properties": {"kind": {"enum": ["n", "s"]}},
    "if": {"properties": {"kind": {"const": "n"}}, "required": ["kind"]},
    "then": {"$ref": "numbers"}, "else": {"$ref": "strings"},
    "$defs": {
        "list": {"$id": "list", "properties": {"list": {"type": "array", "maxItems": 3,
                                                          "items": {"$dynamicRef": "#item"}}},
                 "$defs": {"default": {"$dynamicAnchor": "item"}}},
        "numbers": {"$id": "numbers", "$defs": {"item": {"$dynamicAnchor": "item", "type": "integer"}},
                    "$ref": "list"},
        "strings": {"$id": "strings", "$defs": {"item": {"$dynamicAnchor": "item", "type": "string"}},
                    "$ref": "list"}}}
TREE = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.invalid/strict-tree",
    "$dynamicAnchor": "node", "$ref": "tree", "properties": {"data": {"type": "integer"}},
    "$defs": {"tree": {"$id": "tree", "$dynamicAnchor": "node", "type": "object",
                       "properties": {"data": True, "children": {"type": "array", "maxItems": 2,
                                                                 "items": {"$dynamicRef": "#node"}}}}}}
RECURSIVE = {
    "$schema": "https://json-schema.org/draft/2019-09/schema", "$id": "https://example.invalid/outer",
    "$recursiveAnchor": True, "anyOf": [{"type": "boolean"}, {"$ref": "inner"}],
    "$defs": {"inner": {"$id": "inner", "$recursiveAnchor": True,
                        "anyOf": [{"type": "integer"},
                                  {"type": "object", "maxProperties": 1,
                                   "additionalProperties": {"$recursiveRef": "#"}}]}}}


def _values(depth: int) -> list:
    leaves = [None, True, 1, -2, 1.5, "a", "n", "s"]
    if depth == 0:
        return leaves
    inner = _values(depth - 1)
    small = [v for v in inner if not isinstance(v, (dict, list))] + [[], {}]
    objects = [{"kind": k} for k in ("n", "s")]
    objects += [{"kind": k, "list": [a, b]} for k in ("n", "s") for a, b in itertools.product(small[:6], repeat=2)]
    objects += [{"data": d, "children": [c]} for d in (1, "x") for c in small[:6] + [{"data": 2}, {"data": "y"}]]
    objects += [{"x": v} for v in small] + [{"x": {"y": v}} for v in small[:6]]
    return leaves + objects + [[v] for v in small]


@pytest.mark.parametrize("schema", [GENERIC, TREE, RECURSIVE], ids=["generic-list", "tree", "recursive-2019"])
def test_dynamic_references_agree_with_jsonschema(schema):
    grammar = Grammar.from_json_schema(schema, strict=False)  # the spec's meaning, as jsonschema
    validator = jsonschema.validators.validator_for(schema)(schema)
    verdicts = {True: 0, False: 0}
    for value in _values(2):
        valid = validator.is_valid(value)
        verdicts[valid] += 1
        accepted = _accepts(grammar, value)
        assert accepted == valid or (valid and has_integral_float(value)), (value, valid)
    assert verdicts[True] > 5 and verdicts[False] > 5, verdicts


def test_dynamic_scopes_are_bounded():
    """A resource chain longer than the bound, each entered before the anchor is found."""
    count = MAX_DYNAMIC_SCOPES + 2
    defs = {f"r{i}": {"$id": f"r{i}", "$ref": f"r{i + 1}"} for i in range(count)}
    defs[f"r{count}"] = {"$id": f"r{count}", "type": "array", "items": {"$dynamicRef": "#x"},
                         "$defs": {"x": {"$dynamicAnchor": "x", "type": "integer"}}}
    schema = {"$id": "https://example.invalid/chain", "$ref": "r0", "$defs": defs}
    with pytest.raises(SchemaCompileError, match="dynamic scopes"):
        Grammar.from_json_schema(schema).whole()
    shorter = {"$id": "https://example.invalid/chain", "$ref": f"r{count - 8}", "$defs": defs}
    grammar = Grammar.from_json_schema(shorter)
    assert _accepts(grammar, [1, 2]) and not _accepts(grammar, ["a"])


def test_a_bad_registry_document_fails_only_where_it_is_used():
    registry = {"http://example.invalid/bad.json": {"$schema": "http://example.invalid/unknown-dialect"}}
    unused = {"$defs": {"never": {"$ref": "http://example.invalid/bad.json"}}, "type": "integer"}
    grammar = Grammar.from_json_schema(unused, registry=registry)
    assert _accepts(grammar, 3) and not _accepts(grammar, "3")
    with pytest.raises(SchemaCompileError, match="bad.json"):
        Grammar.from_json_schema({"$ref": "http://example.invalid/bad.json"}, registry=registry).whole()
