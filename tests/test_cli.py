"""The ``gramalign`` command: exit codes and messages, checked against Python's ``re`` and json."""

from __future__ import annotations

import json
import re

import pytest

from gramalign.integrations.cli import main


def test_check_agrees_with_re_fullmatch(tmp_path, capsys):
    pattern = r"[a-z]+@[a-z]+\.(com|org)"
    grammar = tmp_path / "email.regex"
    grammar.write_text(pattern + "\n")
    for text in ["ann@example.com", "ann@example.co", "ann@@x.org", "bob@site.org"]:
        sample = tmp_path / "sample.txt"
        sample.write_text(text)
        status = main(["check", str(grammar), str(sample)])
        assert status == (0 if re.fullmatch(pattern, text) else 1), text
    out = capsys.readouterr().out
    assert "sample.txt:1:5: no match" in out  # the second '@' of ann@@x.org, line 1 column 5
    assert "ends too early" in out  # ann@example.co


def test_check_json_schema_and_builtin(tmp_path, capsys):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}},
                                  "required": ["n"]}))
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text('{"n":3}\n')
    bad.write_text('{"n":-3}')
    assert main(["check", str(schema), str(good), "--strip-newline"]) == 0
    assert main(["check", str(schema), str(bad)]) == 1
    assert main(["check", "builtin:json", str(bad)]) == 0


def test_compile_prints_stats_or_a_positioned_error(tmp_path, capsys):
    assert main(["compile", "builtin:sql"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["terminals"] > 10 and stats["rules"] > 10
    broken = tmp_path / "broken.lark"
    broken.write_text('start: "a" b\nb: "x" (\n')
    assert main(["compile", str(broken)]) == 2
    assert "line 2" in capsys.readouterr().err
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"properties": {"a": {"type": "string", "pattern": "(a"}}}))
    assert main(["compile", str(schema)]) == 2
    assert "/properties/a" in capsys.readouterr().err
    assert main(["compile", "[0-9", "--regex"]) == 2
    assert main(["compile", str(tmp_path / "missing.lark")]) == 2


def test_bad_usage_exits_through_argparse():
    with pytest.raises(SystemExit):
        main(["frobnicate"])
