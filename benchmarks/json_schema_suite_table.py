"""Per-keyword conformance on the JSON-Schema-Test-Suite: one row per suite file, then the
refusals counted by the keyword they name.

For each file of a draft: test groups whose schema compiled or was refused (with
SchemaCompileError), instances agreeing with the suite, valid instances rejected and
invalid instances accepted (instances serialized compactly; ``integer_fraction=True``, the
spec-exact number spellings; ``property_order="any"`` unless ``--schema-order``). Draft-07
schemas get their ``$schema`` (the suite leaves it out). Required tests only, unless
``--optional`` adds ``optional/format``.

    python benchmarks/json_schema_suite_table.py [draft2020-12|draft2019-09|draft7] [--schema-order] [--optional]
"""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path

from gramalign.errors import SchemaCompileError
from gramalign.grammar.grammar import Grammar
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

_DECLARED = {"draft7": "http://json-schema.org/draft-07/schema#"}


def refusal_cause(error: SchemaCompileError) -> str:
    """The keyword a refusal names, or a short label when it names a location only."""
    if error.keyword:
        return error.keyword
    if "accepts no JSON value" in error.message:
        return "(accepts no value)"
    if "complement" in error.message:
        return "(complement too large)"
    return "(" + error.message.split(":")[0][:40] + ")"


def main() -> None:
    sys.setrecursionlimit(10000)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    draft = args[0] if args else "draft2020-12"
    order = "schema" if "--schema-order" in sys.argv else "any"
    root = Path(os.environ.get("GRAMALIGN_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))
    folder = root / "json-schema-test-suite" / "tests" / draft
    # the suite's remote documents, as its harness serves them (refRemote.json and others)
    served = root / "json-schema-test-suite" / "remotes"
    remotes = {"http://localhost:1234/" + path.relative_to(served).as_posix(): json.loads(path.read_text("utf-8"))
               for path in sorted(served.rglob("*.json"))}
    files = sorted(folder.glob("*.json"))
    if "--optional" in sys.argv:
        files += sorted((folder / "optional" / "format").glob("*.json"))
    print(f"{draft}, property_order={order!r}\n")
    print("| file | groups compiled | groups refused | instances agreeing | valid rejected | invalid accepted |")
    print("|---|---:|---:|---:|---:|---:|")
    total = [0] * 6
    causes: collections.Counter = collections.Counter()
    examples: dict = {}
    for path in files:
        row = [0, 0, 0, 0, 0, 0]  # compiled, refused, agree, tests, valid rejected, invalid accepted
        for group in json.loads(path.read_text()):
            schema = group["schema"]
            if draft in _DECLARED and isinstance(schema, dict) and "$schema" not in schema:
                schema = {"$schema": _DECLARED[draft], **schema}
            try:
                grammar = Grammar.from_json_schema(schema, integer_fraction=True, property_order=order,
                                                   registry=remotes, strict=False)
                parser = IncrementalParser(build_parser_tables(grammar))
            except SchemaCompileError as error:
                row[1] += 1
                cause = refusal_cause(error)
                causes[cause] += 1
                examples.setdefault(cause, f"{path.name}: {group['description']}")
                continue
            row[0] += 1
            for test in group["tests"]:
                text = json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False)
                verdict = parser.accepts(text.encode())
                row[3] += 1
                row[2] += verdict == test["valid"]
                row[4] += test["valid"] and not verdict
                row[5] += verdict and not test["valid"]
        total = [a + b for a, b in zip(total, row)]
        name = path.relative_to(folder).as_posix()
        print(f"| {name} | {row[0]} | {row[1]} | {row[2]}/{row[3]} | {row[4]} | {row[5]} |")
    print(f"| **total** | {total[0]} | {total[1]} | {total[2]}/{total[3]} | {total[4]} | {total[5]} |")
    groups = total[0] + total[1]
    print(f"\n{total[0]} of {groups} groups compiled ({100 * total[0] / max(groups, 1):.1f}%)\n")
    print("| refusals by keyword | groups | e.g. |")
    print("|---|---:|---|")
    for cause, count in causes.most_common():
        print(f"| `{cause}` | {count} | {examples[cause]} |")


if __name__ == "__main__":
    main()
