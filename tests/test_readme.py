"""The README's Python code runs as written: every ```python block, in order, in one namespace
(the quick start loads the demo model offline; later blocks use what earlier ones defined)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("pydantic")

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", README.read_text(encoding="utf-8"), flags=re.S | re.M)


def test_readme_has_python_blocks():
    assert len(readme_blocks()) >= 6


def test_readme_python_blocks_run_in_order(capsys):
    import gramalign as ga

    namespace: dict = {"__name__": "readme"}
    for k, block in enumerate(readme_blocks()):
        try:
            exec(compile(block, f"README.md python block {k + 1}", "exec"), namespace)
        except Exception as error:  # noqa: BLE001 - name the block that failed
            raise AssertionError(f"README python block {k + 1} failed: {type(error).__name__}: {error}\n{block}")
    # what the quick start promises, checked independently of the model's choices
    assert isinstance(namespace["answer"], namespace["Answer"])
    assert isinstance(namespace["city"], namespace["City"])
    printed = capsys.readouterr().out
    assert re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", printed), printed
    assert namespace["point"] == namespace["Point"](x=1, y=2)
    assert namespace["forced"] == b'{"x":'
    assert 1 <= namespace["accepted"] <= len(namespace["draft_ids"])
    assert isinstance(namespace["out"], ga.Generation)
