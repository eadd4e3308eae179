"""Fixtures for the real-engine tests: the SmolLM2 folder and the cases every test checks.

These run in vLLM's virtual environment (``make test-vllm``); vLLM is imported here so that a
missing or broken install fails the run instead of skipping it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import jsonschema
import lark
import pytest
import vllm  # noqa: F401  (fail, never skip, without vLLM)

PERSON = {"type": "object", "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "languages": {"type": "array", "items": {"enum": ["en", "fr", "de", "es"]}, "maxItems": 3}},
    "required": ["name", "age", "languages"], "additionalProperties": False}
ORDER = {"type": "object", "properties": {
    "item": {"enum": ["apple", "pear", "plum"]},
    "quantity": {"type": "integer", "minimum": 1, "maximum": 9},
    "express": {"type": "boolean"}},
    "required": ["item", "quantity", "express"], "additionalProperties": False}
PHONE = r"\(\d{3}\) \d{3}-\d{4}"
DATE = r"(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
SQL = r'''
start: "SELECT " columns " FROM " NAME ";"
columns: NAME ("," NAME)~0..2
NAME: /[a-z]{1,8}/
'''

# (prompt, constraint, checker of the output text). Every language is finite and short, so a
# constrained output always ends inside the token budget (JSON Schema allows extra keys unless
# additionalProperties is false, and a sampled model does write them).
CASES = {
    "person": ("Describe a person as JSON with name, age and languages.", {"json_schema": PERSON},
               lambda text: jsonschema.validate(json.loads(text), PERSON)),
    "order": ("Write a fruit order as JSON.", {"json_schema": ORDER},
              lambda text: jsonschema.validate(json.loads(text), ORDER)),
    "phone": ("Write a US phone number.", {"regex": PHONE}, lambda text: _fullmatch(PHONE, text)),
    "date": ("When did the first person walk on the moon? Answer with a date.", {"regex": DATE},
             lambda text: _fullmatch(DATE, text)),
    "sql": ("Write an SQL query listing the names and ages of users.", {"lark": SQL},
            lambda text: lark.Lark(SQL, parser="lalr").parse(text)),
}


def _fullmatch(pattern: str, text: str) -> None:
    assert re.fullmatch(pattern, text), f"{text!r} does not match {pattern!r}"


@pytest.fixture(scope="session")
def model_dir() -> str:
    folder = os.environ.get("GRAMALIGN_SMOLLM2_DIR")
    if not folder or not (Path(folder) / "config.json").exists():
        pytest.fail("GRAMALIGN_SMOLLM2_DIR must name the SmolLM2 folder that `make test-vllm` writes "
                    "(tests/vllm_engine/save_smollm2.py)")
    return folder


@pytest.fixture(scope="session")
def chat_prompt(model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)

    def render(text: str) -> str:
        return tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                             add_generation_prompt=True)

    return render
