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
    extra = tmp_path / "extra.json"
    extra.write_text('{"n":3,"m":4}')  # valid JSON Schema, but objects are closed unless --open-objects
    assert main(["check", str(schema), str(extra)]) == 1
    assert main(["check", str(schema), str(extra), "--open-objects"]) == 0


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


def test_check_reads_a_final_line_break_as_the_end_of_the_file(tmp_path, capsys):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}))
    data = tmp_path / "data.json"
    data.write_text('{"n":3}\n')
    assert main(["check", str(schema), str(data)]) == 0
    assert "without its final line break" in capsys.readouterr().out
    assert main(["check", str(schema), str(data), "--exact"]) == 1
    multi = tmp_path / "multi.txt"  # a grammar whose language has the line break: it counts as text
    multi.write_text("ab\n")
    lines = tmp_path / "lines.regex"
    lines.write_text(r"(ab\n)+")
    assert main(["check", str(lines), str(multi)]) == 0
    assert "final line break" not in capsys.readouterr().out
    data.write_text('{"n":3}\n\n')
    assert main(["check", str(schema), str(data)]) == 0


def test_version_and_a_model_folder_that_does_not_exist(tmp_path, capsys):
    from gramalign import __version__

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0 and __version__ in capsys.readouterr().out
    assert main(["generate", "builtin:json", "--prompt", "x", "--model", str(tmp_path)]) == 2
    assert "Hugging Face model folder" in capsys.readouterr().err


def test_generate_with_a_local_model_folder(tmp_path, capsys, tiny_model):
    """--model reads a Hugging Face folder offline (a tiny random Llama with GPT-2's tokenizer):
    only the grammar makes its output match."""
    from support.tokenizer_zoo import gpt2_hf_fast

    tiny_model.save_pretrained(tmp_path)
    tokenizer = gpt2_hf_fast()
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    tokenizer.save_pretrained(tmp_path)
    status = main(["generate", "[ab]{3}-[0-9]", "--regex", "--prompt", "go", "--model", str(tmp_path),
                   "--max-new-tokens", "20", "--quiet"])
    out = capsys.readouterr().out.strip()
    assert status == 0 and re.fullmatch(r"[ab]{3}-[0-9]", out), out


# llama.cpp's grammars/chess.gbnf
CHESS = '''# Specifies chess moves as a list in algebraic notation, using PGN conventions

# Force first move to "1. ", then any 1-2 digit number after, relying on model to follow the pattern
root    ::= "1. " move " " move "\\n" ([1-9] [0-9]? ". " move " " move "\\n")+
move    ::= (pawn | nonpawn | castle) [+#]?

# piece type, optional file/rank, optional capture, dest file & rank
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]

# optional file & capture, dest file & rank, optional promotion
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBKQR])?

castle  ::= "O-O" "-O"?
'''


def test_gbnf_files_and_kind(tmp_path, capsys):
    """.gbnf files are read as GBNF, and --kind names the kind of any file (issue 40, item 2)."""
    chess = tmp_path / "chess.gbnf"
    chess.write_text(CHESS)
    assert main(["compile", str(chess)]) == 0
    assert json.loads(capsys.readouterr().out)["terminals"] == 1  # a regular grammar: one automaton
    game = tmp_path / "game.pgn"
    game.write_text("1. e4 e5\n2. Nf3 Nc6\n")
    assert main(["check", str(chess), str(game)]) == 0
    game.write_text("1. e4 e9\n")
    assert main(["check", str(chess), str(game)]) == 1
    assert "game.pgn:1:8: no match" in capsys.readouterr().out
    for kind, text in (("gbnf", CHESS), ("lark", 'start: "x"+\n'), ("json", '{"type": "integer"}'),
                       ("regex", "x+\n")):
        unnamed = tmp_path / "grammar.g"
        unnamed.write_text(text)
        assert main(["compile", str(unnamed)]) == 2
        assert "--kind" in capsys.readouterr().err
        assert main(["compile", str(unnamed), "--kind", kind]) == 0, kind
    assert main(["compile", str(chess), "--kind", "lark"]) == 2  # the kind wins over the suffix
    broken = tmp_path / "broken.gbnf"
    broken.write_text('root ::= "a" (\n')
    assert main(["compile", str(broken)]) == 2
    assert "line 1" in capsys.readouterr().err


@pytest.mark.slow
def test_compile_with_the_demo_tokenizer_loads_no_model(tmp_path, capsys, monkeypatch):
    """The demo model's vocabulary comes from its GGUF file's header (issue 40, item 2): the same
    as the model's (vocabulary_for_model), without loading the weights or even the tokenizer."""
    import time

    import transformers

    from gramalign.integrations import smollm2

    def refuse(*args, **kwargs):
        raise AssertionError("the CLI loaded a model or tokenizer to get a vocabulary")

    monkeypatch.setattr(smollm2, "load_smollm2", refuse)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", refuse)
    schema = tmp_path / "person.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"name": {"type": "string"},
                                                                   "age": {"type": "integer"}}}))
    start = time.perf_counter()
    assert main(["compile", str(schema), "--tokenizer", "smollm2"]) == 0
    seconds = time.perf_counter() - start
    stats = json.loads(capsys.readouterr().out)
    assert stats["vocabulary_size"] == 49152
    assert seconds < 20, seconds  # it was 51 s with the model; the header takes milliseconds
    gguf = smollm2.smollm2_directory() / smollm2.GGUF_FILE
    assert main(["compile", str(schema), "--tokenizer", str(gguf)]) == 0


def test_warm_up_compiles_kernels_and_reports(capsys):
    from gramalign.masking.warm_up import SAMPLE_TEXT, pieces_vocabulary

    vocab = pieces_vocabulary([SAMPLE_TEXT])
    assert vocab.size == len({bytes([b]) for b in range(256)} | {SAMPLE_TEXT.encode()[i:i + n] for n in (2, 3, 5)
                                                                for i in range(len(SAMPLE_TEXT) - n + 1)}) + 1
    assert main(["warm-up", "--schemas-only"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gramalign kernels ready in ") and out.rstrip().endswith(" s")
