"""Per-keyword conformance on the JSON-Schema-Test-Suite: one row per suite file.

For each file of a draft: test groups whose schema compiled or was refused (with
SchemaCompileError), instances agreeing with the suite, valid instances rejected and
invalid instances accepted (instances serialized compactly; `integer_fraction=True`, the
spec-exact number spellings).

    python benchmarks/json_schema_suite_table.py [draft2020-12|draft7]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from gramalign.errors import SchemaCompileError
from gramalign.grammar.grammar import Grammar
from gramalign.grammar.parser import IncrementalParser, build_parser_tables


def main() -> None:
    sys.setrecursionlimit(10000)
    draft = sys.argv[1] if len(sys.argv) > 1 else "draft2020-12"
    root = Path(os.environ.get("GRAMALIGN_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))
    folder = root / "json-schema-test-suite" / "tests" / draft
    files = sorted(folder.glob("*.json")) + sorted((folder / "optional" / "format").glob("*.json"))
    print("| file | groups compiled | groups refused | instances agreeing | valid rejected | invalid accepted |")
    print("|---|---:|---:|---:|---:|---:|")
    total = [0] * 6
    for path in files:
        row = [0, 0, 0, 0, 0, 0]  # compiled, refused, agree, tests, valid rejected, invalid accepted
        for group in json.loads(path.read_text()):
            schema = group["schema"]
            if draft == "draft7" and isinstance(schema, dict):
                schema = {"$schema": "http://json-schema.org/draft-07/schema#", **schema}
            try:
                parser = IncrementalParser(build_parser_tables(Grammar.from_json_schema(schema, integer_fraction=True)))
            except SchemaCompileError:
                row[1] += 1
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


if __name__ == "__main__":
    main()
