"""The checker of MaskBench's fresh walks (benchmarks/fresh_walks.py) reads a schema as gramalign
does: ``pattern`` in ECMA-262's terms, formats asserted where that makes an instance valid."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from fresh_walks import _validator, ecma_pattern  # noqa: E402

# ECMA-262 (sections WhiteSpace and LineTerminator): what its \s matches
ECMA_WHITE = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F,
              0x205F, 0x3000, 0xFEFF}


def test_backslash_s_matches_what_ecma_262_calls_white_space_and_nothing_else():
    for pattern, inside in ((r"\s", True), (r"[\s]", True), (r"[x\s]", True), (r"\S", False)):
        translated = re.compile(ecma_pattern(pattern))
        for code in range(0x3100):
            if code == ord("x") and pattern == r"[x\s]":
                continue
            assert bool(translated.fullmatch(chr(code))) == ((code in ECMA_WHITE) == inside), (pattern, hex(code))
    assert ecma_pattern(r"\\s") == r"\\s"  # an escaped backslash, then the letter s


def test_an_instance_valid_where_formats_are_asserted_is_valid_and_others_are_not():
    validate = _validator({"type": "object", "properties": {
        "server": {"type": "string", "oneOf": [{"format": "ipv4"}, {"format": "ipv6"}, {"format": "hostname"}]},
        "password": {"type": "string", "pattern": r"^(?:\s*[a-z]){3}$"}}})
    assert validate('{"server": "T"}') == "valid"  # a host name only: one branch once formats assert
    assert validate('{"password": "a\\ufeffbc"}') == "valid"  # U+FEFF is \s in ECMA-262, not in Python
    assert validate('{"password": "a\\u001cbc"}').startswith("invalid")  # and U+001C the other way round
    assert validate('{"server": 5}').startswith("invalid")
    assert validate('{"password": "ab"}').startswith("invalid")
