"""The grammars and prompts the real-engine tests ask for, with an oracle for each output."""

from __future__ import annotations

import json
import re

import jsonschema
import lark

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
