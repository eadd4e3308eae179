"""Where the shared conformance and benchmark data lives (../shared/data in CI).

Tests that need it call :func:`data_dir`: with ``GRAMALIGN_DATA_DIR`` unset they skip; with
it set, missing data is a failure, never a skip.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def data_dir() -> Path:
    value = os.environ.get("GRAMALIGN_DATA_DIR")
    if not value:
        pytest.skip("GRAMALIGN_DATA_DIR is not set")
    path = Path(value)
    if not path.is_dir():
        pytest.fail(f"GRAMALIGN_DATA_DIR={value} does not exist")
    return path


def maskbench_files() -> list[Path]:
    """JSONSchemaBench's maskbench schema files, sorted (failing when there are none)."""
    folder = data_dir() / "jsonschemabench" / "maskbench" / "data"
    files = sorted(folder.glob("*.json"))
    if not files:
        pytest.fail(f"no maskbench data in {folder}")
    return files


def maskbench_documents(count: int, every: int = 97) -> list[str]:
    """``count`` valid JSON instances from JSONSchemaBench's maskbench data, compactly
    serialized, from every ``every``-th schema file (a fixed, spread-out sample)."""
    documents = []
    for path in maskbench_files()[::every]:
        entry = json.loads(path.read_text(encoding="utf-8"))
        for test in entry.get("tests", []):
            if test.get("valid"):
                documents.append(json.dumps(test["data"], ensure_ascii=False))
                break
        if len(documents) == count:
            break
    return documents
