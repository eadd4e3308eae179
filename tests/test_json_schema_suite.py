"""The JSON-Schema-Test-Suite as the oracle for the schema compiler.

For every test group whose schema compiles, the grammar's verdict on each instance
(serialized compactly; and pretty-printed with indent 2 under flexible whitespace) must
equal the suite's ``valid``. An invalid instance accepted fails the test, always. A valid
instance rejected fails it too unless it is listed in ``KNOWN_VALID_REJECTED`` with the
documented reason (docs/json_schema.md): schema-order output, exponent spellings.
Schemas the compiler refuses must raise SchemaCompileError (never another exception).
"""

from __future__ import annotations

import json
import sys

import pytest

from gramalign.errors import SchemaCompileError
from gramalign.grammar.grammar import Grammar
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from support.format_allowances import allowance as format_subset_allowance
from support.json_instances import has_integral_float, reversed_keys
from support.shared_data import data_dir

# (file, group description, test description): valid instances the grammar rejects on purpose.
KEY_ORDER = "keys in another order than the schema's (property_order='schema')"
KNOWN_VALID_REJECTED = {
    ("allOf.json", "allOf", "allOf"): KEY_ORDER,
    ("allOf.json", "allOf with base schema", "valid"): KEY_ORDER,
    ("const.json", "const with object", "same object with different property order is valid"): KEY_ORDER,
    ("dependentRequired.json", "dependencies with escaped characters", "CRLF"): KEY_ORDER,
    ("dependentSchemas.json", "single dependency", "valid"): KEY_ORDER,
    ("dependencies.json", "multiple dependencies subschema", "valid"): KEY_ORDER,
    ("dependencies.json", "dependencies with escaped characters", "valid object 1"): KEY_ORDER,
}
FORMAT_ASSERTED = "formats are asserted (generation must produce valid dates, emails...)"
FILES_SKIPPED = {"vocabulary.json": "custom metaschemas"}


def _remotes() -> dict:
    """The suite's remote documents, as its harness serves them, for ``registry=``."""
    folder = data_dir() / "json-schema-test-suite" / "remotes"
    return {"http://localhost:1234/" + path.relative_to(folder).as_posix(): json.loads(path.read_text(encoding="utf-8"))
            for path in sorted(folder.rglob("*.json"))}


def _groups(draft: str, with_formats: bool):
    folder = data_dir() / "json-schema-test-suite" / "tests" / draft
    files = sorted(folder.glob("*.json"))
    if with_formats:  # draft 7's format tests are nearly the same files, whitespace does not matter there
        files += sorted((folder / "optional" / "format").glob("*.json"))
    if not files:
        pytest.fail(f"no test suite files in {folder}")
    for path in files:
        if path.name in FILES_SKIPPED:
            continue
        for group in json.loads(path.read_text(encoding="utf-8")):
            yield path, group


def _run(draft: str, whitespace: str, property_order: str = "schema", integer_fraction: bool = False):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    counts = {"compiled": 0, "refused": 0, "agreed": 0}
    failures = []
    registry = _remotes()
    for path, group in _groups(draft, with_formats=draft == "draft2020-12" and whitespace == "compact"):
        schema = group["schema"]
        if draft == "draft7" and isinstance(schema, dict):
            schema = {"$schema": "http://json-schema.org/draft-07/schema#", **schema}
        try:
            grammar = Grammar.from_json_schema(schema, whitespace=whitespace, max_whitespace=64,
                                               property_order=property_order, integer_fraction=integer_fraction,
                                               registry=registry, strict=False).whole()  # the spec's meaning
        except SchemaCompileError:
            counts["refused"] += 1
            continue
        counts["compiled"] += 1
        parser = IncrementalParser(build_parser_tables(grammar))
        for test in group["tests"]:
            data = reversed_keys(test["data"]) if property_order == "any" else test["data"]
            if whitespace == "compact":
                text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
            else:
                text = json.dumps(data, indent=2, ensure_ascii=False)
            verdict = parser.accepts(text.encode("utf-8"))
            if verdict == test["valid"]:
                counts["agreed"] += 1
            elif not test["valid"]:
                failures.append(("INVALID ACCEPTED", path.name, group["description"], test["description"], text))
            elif not integer_fraction and has_integral_float(test["data"]):
                continue  # integers are written plainly by default: 1.0 is not generated
            elif path.name == "format.json" and "annotation" in test["description"]:
                continue  # FORMAT_ASSERTED
            elif (isinstance(schema, dict) and isinstance(test["data"], str) and "format" in schema
                  and format_subset_allowance(schema["format"], test["data"]) is not None):
                continue  # a documented format subset (tests/test_json_schema_formats.py)
            elif (property_order == "any"
                  or (path.name, group["description"], test["description"]) not in KNOWN_VALID_REJECTED):
                failures.append(("valid rejected", path.name, group["description"], test["description"], text))
    return counts, failures


@pytest.mark.slow
@pytest.mark.parametrize("draft,whitespace,property_order,integer_fraction", [
    ("draft2020-12", "compact", "schema", True), ("draft7", "compact", "schema", False),
    ("draft2020-12", "flexible", "schema", False), ("draft7", "compact", "any", True),
    ("draft2019-09", "compact", "any", True), ("draft2020-12", "compact", "any", True)])
def test_compiled_schemas_agree_with_the_suite(draft, whitespace, property_order, integer_fraction):
    """With property_order='any', every object is written with its members reversed and no
    valid instance may be rejected for its key order. Without integer_fraction, a valid 1.0
    for an integer may be rejected (the plain spelling is the output form)."""
    counts, failures = _run(draft, whitespace, property_order, integer_fraction)
    assert counts["compiled"] > 150, counts
    assert not failures, "\n".join(map(repr, failures[:20]))
