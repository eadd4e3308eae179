"""Bad input ends in a GramalignError that says what and where, never in an internal
exception, a hang, or a silently different result (issue 24, "found beside").

Oracles: the jsonschema validator (schemas that now compile must agree with it, schemas
refused as invalid must fail its metaschema check), lark itself (grammars refused here are
refused by ``lark.Lark`` too), ``re`` (flags it does not know), and explicit per-token loops
for bitmasks.
"""

from __future__ import annotations

import json
import multiprocessing
import re
import sys
import time

import jsonschema
import lark
import numpy as np
import pytest

import gramalign as ga
from gramalign.errors import BitmaskError, GramalignError, RegexError, SchemaCompileError
from gramalign.grammar.lark_frontend import LarkGrammarError
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser
from gramalign.integrations.cli import main
from gramalign.masking.bitmask import pack_bool_mask

from support.grammar_walks import lark_refuses_grammar, random_texts
from support.shared_data import data_dir

D7 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"


def _accepts(grammar: ga.Grammar, text: str) -> bool:
    return IncrementalParser(build_parser_tables(grammar)).accepts(text.encode("utf-8"))


def _agrees_with_jsonschema(schema, grammar: ga.Grammar, instances) -> None:
    oracle = jsonschema.validators.validator_for(schema)(schema)
    for instance in instances:
        text = json.dumps(instance, separators=(",", ":"))
        assert _accepts(grammar, text) == oracle.is_valid(instance), text
    for text in random_texts(grammar, 20, seed=1):
        assert oracle.is_valid(json.loads(text)), text


def _in_child(function, *args, timeout: float = 20.0):
    """``function(*args)`` in a forked process: what it returned or raised (as a string), or
    "timeout" — so a hang fails the test instead of stalling the suite."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)

    def run():
        try:
            sender.send(("result", function(*args)))
        except BaseException as error:  # noqa: BLE001 - reported to the parent as data
            sender.send(("error", f"{type(error).__name__}: {error}"[:500]))

    process = context.Process(target=run, daemon=True)
    process.start()
    sender.close()
    try:
        return receiver.recv() if receiver.poll(timeout) else ("timeout", None)
    except EOFError:
        return ("crash", process.exitcode)
    finally:
        if process.is_alive():
            process.kill()
        process.join()


# ---------------------------------------------------------------------------- JSON Schema: no KeyError


@pytest.mark.parametrize("schema,instances", [
    ({"x": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "$ref": "#/x"}, ["a", 1, 1.5, None, [1]]),
    ({"$defs": {"a": {"full": {"oneOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]}}},
      "$ref": "#/$defs/a/full"}, ["a", 1, -1, None]),
    ({"$schema": D7, "definitions": {"a": {"full": {"items": [{"type": "string"}], "additionalItems": False}}},
      "$ref": "#/definitions/a/full"}, [[], ["a"], [1], ["a", "b"], 3]),
], ids=["$ref to an unknown keyword", "$ref into an unknown keyword under $defs", "draft-07 ref to items array"])
def test_a_ref_into_an_unknown_keyword_compiles_that_location_as_a_schema(schema, instances):
    _agrees_with_jsonschema(schema, ga.Grammar.from_json_schema(schema), instances)


@pytest.mark.parametrize("name", ["JsonSchemaStore---vtesttree-schema.json", "Github_hard---o53038.json"])
def test_real_schemas_that_raised_key_errors_compile_and_agree_with_jsonschema(name):
    """Both ``$ref`` into subschemas that sit under keywords the walk took for data."""
    schema = json.loads((data_dir() / "jsonschemabench" / "maskbench" / "data" / name).read_text(
        encoding="utf-8"))["schema"]
    grammar = ga.Grammar.from_json_schema(schema)
    oracle = jsonschema.validators.validator_for(schema)(schema)
    texts = random_texts(grammar, 15, seed=3, max_bytes=3000)
    assert texts
    for text in texts:
        assert oracle.is_valid(json.loads(text)), text


@pytest.mark.parametrize("schema,pointer,keyword", [
    ({"items": []}, "", "items"),
    ({"properties": {"a": {"items": []}}}, "/properties/a", "items"),
    ({"dependentRequired": {"a": 1}}, "", "dependentRequired"),
    ({"dependentRequired": {"a": ["b", 2]}}, "", "dependentRequired"),
    ({"$schema": D7, "dependencies": {"a": 3}}, "", "dependencies"),
    ({"dependentSchemas": []}, "", "dependentSchemas"),
    ({"prefixItems": []}, "", "prefixItems"),
], ids=["items []", "nested items []", "dependentRequired 1", "dependentRequired [b, 2]", "dependencies 3",
        "dependentSchemas []", "prefixItems []"])
def test_malformed_keywords_that_raised_key_errors_name_their_place(schema, pointer, keyword):
    with pytest.raises(SchemaCompileError) as caught:
        ga.Grammar.from_json_schema(schema).whole()
    assert (caught.value.pointer, caught.value.keyword) == (pointer, keyword)
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.validators.validator_for(schema).check_schema(schema)


@pytest.mark.parametrize("text", [b'{"type": "string", "const": "\xff"}', b'{"enum": ["\xc3"]}', b"\xff\xff\xff\xff"])
def test_schema_text_that_is_not_utf8_is_a_schema_error(text):
    with pytest.raises(SchemaCompileError, match="not UTF-8|not valid JSON"):
        ga.Grammar.from_json_schema(text).whole()


@pytest.mark.parametrize("schema,pointer,keyword", [
    ('{"const": "\\ud800"}', "", "const"),
    ({"enum": ["a", "x\udfff"]}, "", "enum"),
    ({"type": "object", "properties": {"\ud800": {}}}, "", "properties"),
    ({"required": ["\ud800"]}, "", "required"),
    ({"type": "object", "propertyNames": {"const": "\ud800"}}, "/propertyNames", "const"),
    ({"const": {"k": ["\u00e9\ud800"]}}, "", "const"),
], ids=["escaped in text", "enum", "property name", "required", "propertyNames const", "nested const"])
def test_a_lone_surrogate_in_a_literal_is_a_schema_error(schema, pointer, keyword):
    """JSON text may escape a lone surrogate; UTF-8 cannot encode it (this was a UnicodeEncodeError)."""
    with pytest.raises(SchemaCompileError, match="lone surrogate") as caught:
        ga.Grammar.from_json_schema(schema).whole()
    assert (caught.value.pointer, caught.value.keyword) == (pointer, keyword)


# ---------------------------------------------------------------------------- JSON Schema: invalid values


INVALID_VALUES = [
    ({"maxLength": None}, "", "maxLength"),
    ({"minLength": True}, "", "minLength"),
    ({"uniqueItems": 5}, "", "uniqueItems"),
    ({"uniqueItems": None}, "", "uniqueItems"),
    ({"minimum": "3"}, "", "minimum"),
    ({"maximum": None}, "", "maximum"),
    ({"multipleOf": None}, "", "multipleOf"),
    ({"exclusiveMinimum": None}, "", "exclusiveMinimum"),
    ({"maxItems": 1.5}, "", "maxItems"),
    ({"maxProperties": None}, "", "maxProperties"),
    ({"format": 5}, "", "format"),
    ({"$schema": D2019, "contains": {}, "minContains": None}, "", "minContains"),
    ({"type": "object", "properties": {"a/b": {"maxLength": None}}}, "/properties/a~1b", "maxLength"),
    ({"anyOf": [{"type": "string"}, {"type": "array", "maxItems": "2"}]}, "/anyOf/1", "maxItems"),
]


@pytest.mark.parametrize("schema,pointer,keyword", INVALID_VALUES, ids=[json.dumps(s) for s, _, _ in INVALID_VALUES])
def test_invalid_keyword_values_are_refused_with_their_pointer(schema, pointer, keyword):
    with pytest.raises(jsonschema.SchemaError):  # the metaschema agrees the value is invalid
        jsonschema.validators.validator_for(schema).check_schema(schema)
    with pytest.raises(SchemaCompileError) as caught:
        ga.Grammar.from_json_schema(schema).whole()
    assert (caught.value.pointer, caught.value.keyword) == (pointer, keyword)
    assert keyword in str(caught.value)


def test_valid_values_of_the_same_keywords_still_compile():
    schema = {"type": "string", "maxLength": 3, "minLength": 1.0, "format": "date-x-unknown"}
    _agrees_with_jsonschema(schema, ga.Grammar.from_json_schema(schema), ["", "a", "abcd", 1])
    schema = {"type": "array", "uniqueItems": False, "maxItems": 2}
    _agrees_with_jsonschema(schema, ga.Grammar.from_json_schema(schema), [[], [1, 1], [1, 2, 3]])


# ---------------------------------------------------------------------------- JSON Schema: cycles and sizes


def _compile_outcome(schema):
    try:
        ga.Grammar.from_json_schema(schema).whole()
    except SchemaCompileError as error:
        return ("SchemaCompileError", error.pointer, error.keyword, str(error))
    return ("grammar",)


def _self_containing_dict():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    schema["properties"]["child"] = schema
    return schema


def _self_containing_list():
    branches = [{"type": "string"}]
    branches.append({"anyOf": branches})
    return {"anyOf": branches}


@pytest.mark.parametrize("make,pointer,keyword", [
    (_self_containing_dict, "/properties", "child"),
    (_self_containing_list, "/anyOf/1", "anyOf"),
], ids=["dict", "list"])
def test_a_schema_object_that_contains_itself_is_refused_at_once(make, pointer, keyword):
    started = time.perf_counter()
    outcome = _in_child(_compile_outcome, make())
    assert outcome[0] == "result", outcome
    kind, found_pointer, found_keyword, message = outcome[1]
    assert kind == "SchemaCompileError" and (found_pointer, found_keyword) == (pointer, keyword), outcome
    assert "contains itself" in message
    assert time.perf_counter() - started < 10


def test_a_shared_but_acyclic_subschema_compiles():
    shared = {"type": "integer", "minimum": 0}
    schema = {"type": "object", "properties": {"a": shared, "b": {"type": "array", "items": shared}}}
    _agrees_with_jsonschema(schema, ga.Grammar.from_json_schema(schema), [{"a": 1, "b": [2]}, {"a": -1}, {"b": [-1]}])


def _refusal_seconds(schema) -> tuple:
    started = time.perf_counter()
    try:
        ga.Grammar.from_json_schema(schema).whole()
    except SchemaCompileError as error:
        return (time.perf_counter() - started, error.pointer, error.keyword, str(error))
    return (time.perf_counter() - started, None, None, "compiled")


@pytest.mark.parametrize("schema,keyword", [
    ({"const": "c" * 2_000_000}, "const"),
    ({"enum": ["a", "é" * 1_000_000]}, "enum"),
    ({"const": {"k": ["c" * 2_000_000]}}, "const"),
    ({"properties": {"c" * 2_000_000: {}}}, "properties"),
    ({"required": ["c" * 2_000_000]}, "required"),
], ids=["const", "enum of 2 MB strings", "nested const", "property name", "required name"])
def test_a_string_too_long_for_max_states_is_refused_before_building_it(schema, keyword):
    outcome = _in_child(_refusal_seconds, schema)
    assert outcome[0] == "result", outcome
    seconds, pointer, found_keyword, message = outcome[1]
    assert (pointer, found_keyword) == ("", keyword), message
    assert "max_states=50000" in message
    assert seconds < 2, f"refused only after {seconds:.1f} s"


def test_a_long_string_within_max_states_still_compiles():
    value = "c" * 3000
    grammar = ga.Grammar.from_json_schema({"const": value})
    assert _accepts(grammar, json.dumps(value)) and not _accepts(grammar, json.dumps(value[:-1]))


# ---------------------------------------------------------------------------- Lark front end


def test_a_deeply_nested_lark_grammar_is_a_grammar_error():
    text = "start: " + "(" * 3000 + '"a"' + ")" * 3000
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # Python's default (other tests raise it); 3000 levels need more
    try:
        with pytest.raises(LarkGrammarError, match="nests too deeply"):
            ga.Grammar.from_lark(text)
    finally:
        sys.setrecursionlimit(limit)
    moderate = "start: " + "(" * 40 + '"a"' + ")" * 40
    assert _accepts(ga.Grammar.from_lark(moderate), "a") and lark.Lark(moderate, parser="lalr").parse("a")


def test_a_range_lark_cannot_read_names_its_line_and_column():
    text = 'start: A\nA: "a".."bc"'
    assert lark_refuses_grammar(text)
    with pytest.raises(LarkGrammarError) as caught:
        ga.Grammar.from_lark(text)
    assert (caught.value.line, caught.value.column) == (2, 4)
    assert "single characters" in str(caught.value)


@pytest.mark.parametrize("text", ['start: FOO\n%import .missing_grammar_h24.FOO',
                                  'start: X\n\n%import no_such_grammar_h24.X'])
def test_an_import_of_a_missing_grammar_file_names_its_line(text):
    assert lark_refuses_grammar(text)
    with pytest.raises(LarkGrammarError) as caught:
        ga.Grammar.from_lark(text)
    assert caught.value.line == text.splitlines().index(next(r for r in text.splitlines() if "%import" in r)) + 1
    assert "cannot read the grammar file" in str(caught.value)


# ---------------------------------------------------------------------------- regex flags, BatchMatcher


@pytest.mark.parametrize("flags,re_refuses", [(1 << 40, True), (-1, True), (1 << 20, False), (re.LOCALE, False)])
def test_regex_flags_outside_the_supported_set_are_refused(flags, re_refuses):
    """re itself overflows on 1 << 40 and refuses -1; it ignores bits it does not know, which
    would be a silently different language here, so those are refused too."""
    if re_refuses:
        with pytest.raises((ValueError, OverflowError)):
            re.compile("a", flags)
    with pytest.raises(RegexError, match="unsupported regex flags"):
        ga.Grammar.from_regex("a", flags=flags)


def test_supported_regex_flags_still_work():
    grammar = ga.Grammar.from_regex("a.b", flags=re.IGNORECASE | re.DOTALL)
    dfa = grammar.single_terminal().dfa
    assert dfa.matches("A\nB".encode()) and not dfa.matches(b"ab")


@pytest.fixture(scope="module")
def ab_compiled():
    vocab = ga.Vocabulary.from_token_bytes([b"a", b"b", b"</s>"], eos_token_ids=[2])
    return ga.compile(ga.Grammar.from_regex("a+b"), vocab)


@pytest.mark.parametrize("batch_size", [-1, 0, 2.0, True])
def test_batch_matcher_refuses_a_size_that_is_not_a_positive_integer(ab_compiled, batch_size):
    with pytest.raises(ValueError, match="batch_size"):
        ga.BatchMatcher(ab_compiled, batch_size)
    assert len(ga.BatchMatcher(ab_compiled, 3)) == 3


# ---------------------------------------------------------------------------- token bitmask


def test_logits_narrower_than_an_allowed_token_are_refused():
    torch = pytest.importorskip("torch")
    tokens = [bytes([b]) for b in b"abcdefghij"] + [b"</s>"] * 0
    vocab = ga.Vocabulary.from_token_bytes(tokens + [b"<eos>"], eos_token_ids=[len(tokens)])
    matcher = ga.compile(ga.Grammar.from_regex("abc"), vocab).matcher()
    matcher.accept_string(b"abc")  # only EOS, the last id, is allowed now
    bitmask = ga.allocate_token_bitmask(1, vocab.size)
    matcher.fill_next_token_bitmask(bitmask, 0)
    with pytest.raises(BitmaskError, match=f"allows token {vocab.size - 1}"):
        ga.apply_token_bitmask_inplace(torch.zeros(1, vocab.size - 1), bitmask)
    logits = torch.zeros(1, vocab.size)
    ga.apply_token_bitmask_inplace(logits, bitmask)
    assert torch.isfinite(logits[0]).nonzero().flatten().tolist() == [vocab.size - 1]


def test_narrower_logits_that_lose_no_allowed_token_are_masked_as_before():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    allowed = rng.random((3, 70)) < 0.5
    allowed[:, 66:] = False  # nothing allowed among the columns the logits lack
    bitmask = torch.from_numpy(np.stack([pack_bool_mask(a) for a in allowed]))
    logits = torch.randn(3, 66)
    expected = logits.clone()
    for row in range(3):
        for token in range(66):
            if not allowed[row, token]:
                expected[row, token] = float("-inf")
    ga.apply_token_bitmask_inplace(logits, bitmask)
    assert torch.equal(logits, expected)
    unfilled = ga.allocate_token_bitmask(1, 70)  # allows everything: says nothing about the width
    logits = torch.zeros(1, 66)
    ga.apply_token_bitmask_inplace(logits, unfilled)
    assert bool(torch.isfinite(logits).all())
    assert issubclass(BitmaskError, GramalignError) and issubclass(BitmaskError, ValueError)


# ---------------------------------------------------------------------------- command line


@pytest.fixture
def tiny_tokenizer(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab["<eos>"] = len(vocab)
    tokenizer = tokenizers.Tokenizer(models.BPE(vocab, []))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(["<eos>"])
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    return path


def _one_line_error(capsys, status: int) -> str:
    captured = capsys.readouterr()
    assert status == 2, captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_cli_errors_are_one_line_with_exit_status_2(tmp_path, capsys, tiny_tokenizer):
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "integer"}')
    broken = tmp_path / "broken.json"
    broken.write_text('{"model": ')
    line = _one_line_error(capsys, main(["compile", str(schema), "--tokenizer", str(broken)]))
    assert "broken.json" in line and "tokenizer" in line
    folder = tmp_path / "folder"
    folder.mkdir()
    line = _one_line_error(capsys, main(["check", str(schema), str(folder)]))
    assert "directory" in line and "folder" in line
    line = _one_line_error(capsys, main(["bench", str(schema), "--tokenizer", str(tiny_tokenizer), "--walks", "0"]))
    assert "--walks" in line
    assert main(["bench", str(schema), "--tokenizer", str(tiny_tokenizer), "--walks", "1", "--steps", "3"]) == 0
    assert json.loads(capsys.readouterr().out)["masks"] >= 1


@pytest.mark.parametrize("schema,instances", [
    ({"type": "string", "maxLength": 3.0, "minLength": 1.0}, ["", "ab", "abcd"]),
    ({"type": "array", "maxItems": 2.0}, [[], [1, 2], [1, 2, 3]]),
    ({"type": "object", "minProperties": 1.0}, [{}, {"a": 1}]),
    ({"$schema": D2019, "type": "array", "contains": {"type": "string"}, "minContains": 2.0, "maxItems": 3},
     [["a"], ["a", "b"]]),
], ids=["lengths", "maxItems", "minProperties", "minContains"])
def test_integral_decimal_counts_in_schema_text_compile_like_the_dict(schema, instances):
    """Schema text is read with exact decimals, so ``3.0`` arrives as Decimal("3.0"); draft-06 on
    it is an integer (jsonschema agrees), as the float 3.0 in a dict already was."""
    jsonschema.validators.validator_for(schema).check_schema(schema)
    from_text = ga.Grammar.from_json_schema(json.dumps(schema))
    _agrees_with_jsonschema(schema, from_text, instances)
    _agrees_with_jsonschema(schema, ga.Grammar.from_json_schema(schema), instances)
