"""Bad input that escaped as another exception or was accepted silently now ends in a clear
error (issue 41, items 3 and 4): what is wrong and where.

Oracles: lark itself (the Lark grammars refused here are refused by ``lark.Lark``), the
jsonschema package's metaschema check (every schema refused as invalid fails it, the draft
forms it allows still compile), ``re`` for regexes, and per-case expectations for the API.
"""

from __future__ import annotations

import json
import re

import jsonschema
import lark
import numpy as np
import pytest

import gramalign as ga
from gramalign.errors import RegexError, SchemaCompileError
from gramalign.grammar.json_schema.ecma_regex import ecma_pattern_dfa
from gramalign.grammar.lark_frontend import LarkGrammarError, grammar_from_lark, grammar_from_lark_file
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from support.grammar_walks import lark_refuses_grammar

D4 = "http://json-schema.org/draft-04/schema#"
D6 = "http://json-schema.org/draft-06/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"


def _metaschema_refuses(schema) -> bool:
    # validator_for itself fails on a $schema that is not a string: check those against 2020-12
    declared = schema if isinstance(schema.get("$schema"), str) else {}
    try:
        jsonschema.validators.validator_for(declared).check_schema(schema)
    except jsonschema.SchemaError:
        return True
    return False


def _accepts(grammar: ga.Grammar, text: str) -> bool:
    return IncrementalParser(build_parser_tables(grammar)).accepts(text.encode("utf-8"))


# ---------------------------------------------------------------------------- item 3: Lark patterns


@pytest.mark.parametrize("text,line,column", [
    ('start: A\nA: /(/', 2, 4),
    ('start: A\nA: /a{2,1}/', 2, 4),
    ('start: A\nA: "z".."a"', 2, 4),
    ('start: A\n\n\nA: "x" /(/', 4, 8),
    ('start: a\na: A\nA: /x/i /[/', 3, 9),
    ('start: A\nA.2 : "a".."c" | "z".."a"', 2, 18),
    ('start: A\nA: "x"  // not /(/ this one\n    | /b{3,2}/', 3, 7),
], ids=["unbalanced (", "a{2,1}", "range z..a", "second piece after a blank line", "unterminated [ after a flag",
        "second range of two alternatives", "alternative on the next line"])
def test_a_pattern_re_cannot_compile_is_a_lark_grammar_error_at_its_place(text, line, column):
    assert lark_refuses_grammar(text)
    with pytest.raises(LarkGrammarError) as caught:
        ga.Grammar.from_lark(text)
    assert (caught.value.line, caught.value.column) == (line, column), str(caught.value)
    assert "terminal A" in str(caught.value)


def test_a_terminal_error_after_blank_lines_names_the_definition_line():
    """The definition was looked for with ^\\s*, which could start on a blank line above it."""
    text = 'start: A\n\n\nA: /a*/'
    assert lark_refuses_grammar(text)
    with pytest.raises(LarkGrammarError, match="matches the empty string") as caught:
        ga.Grammar.from_lark(text)
    assert caught.value.line == 4


def test_valid_patterns_beside_the_same_shapes_still_compile():
    grammar = ga.Grammar.from_lark('start: A B\nA: /(a)/ | "a".."z"\nB: /b{1,2}/')
    assert lark.Lark('start: A B\nA: /(a)/ | "a".."z"\nB: /b{1,2}/', parser="lalr").parse("qbb")
    assert _accepts(grammar, "qbb") and not _accepts(grammar, "qbbb")


# ---------------------------------------------------------------------------- item 4: JSON Schema


INVALID_SCHEMAS = [
    ({"then": 5}, "/then", None),
    ({"else": 5}, "/else", None),
    ({"$schema": D7, "then": {}, "else": 5}, "/else", None),
    ({"type": "object", "contains": 5}, "/contains", None),
    ({"type": "object", "items": 5}, "/items", None),
    ({"type": "string", "properties": {"a": 5}}, "/properties/a", None),
    ({"$schema": 5}, "", "$schema"),
    ({"$schema": None, "type": "string"}, "", "$schema"),
    ({"properties": {"a": {"$schema": 5}}}, "/properties/a", "$schema"),
    ({"type": ["string", "string"]}, "", "type"),
    ({"$schema": D4, "type": ["integer", "null", "integer"]}, "", "type"),
    ({"type": []}, "", "type"),
    ({"$schema": D4, "enum": [1, 1]}, "", "enum"),
    ({"$schema": D4, "enum": [1, 1.0]}, "", "enum"),
    ({"$schema": D4, "enum": [{"a": [1]}, {"a": [1.0]}]}, "", "enum"),
    ({"$schema": D4, "enum": []}, "", "enum"),
    ({"$schema": D4, "properties": {"a": True}}, "/properties/a", None),
    ({"$schema": D4, "items": False}, "/items", None),
    ({"$schema": D4, "items": [{}, True]}, "/items/1", None),
    ({"$schema": D4, "not": True}, "/not", None),
    ({"$schema": D4, "anyOf": [{"type": "string"}, True]}, "/anyOf/1", None),
    ({"$schema": D4, "type": "array", "dependencies": {"a": True}}, "/dependencies/a", None),
    ({"$schema": D4, "definitions": {"a": True}, "$ref": "#/definitions/a"}, "/definitions/a", None),
    ({"$schema": D4, "type": "string", "properties": {"a": {"items": True}}}, "/properties/a/items", None),
    ({"$schema": D4, "required": []}, "", "required"),
    ({"required": ["a", "a"]}, "", "required"),
    ({"$schema": D7, "type": "object", "required": ["b", "a", "b"]}, "", "required"),
]


@pytest.mark.parametrize("schema,pointer,keyword", INVALID_SCHEMAS, ids=[repr(s) for s, _, _ in INVALID_SCHEMAS])
def test_schemas_the_metaschema_refuses_are_refused_with_their_place(schema, pointer, keyword):
    assert _metaschema_refuses(schema)
    with pytest.raises(SchemaCompileError) as caught:
        ga.Grammar.from_json_schema(schema).whole()
    assert (caught.value.pointer, caught.value.keyword) == (pointer, keyword), str(caught.value)


VALID_SCHEMAS = [
    # what a draft's metaschema allows must still compile: enum repeats and [] from draft-06 on
    # (jsonschema agrees, see the assertion), required [] from draft-06 on, draft-04's boolean
    # additionalProperties/additionalItems, and then/else in drafts that do not define them
    ({"$schema": D6, "enum": [1, 1]}, ["1", "2"]),
    ({"$schema": D7, "enum": [1, 1.0, "a"]}, ["1", '"a"', "2"]),
    ({"$schema": D2019, "enum": ["a", "a"]}, ['"a"', '"b"']),
    ({"$schema": D2020, "enum": [[1], [1]]}, ["[1]", "[2]"]),
    ({"enum": [None, None]}, ["null", "1"]),
    ({"$schema": D6, "required": [], "type": "object"}, ["{}", "1"]),
    ({"required": [], "type": "object"}, ["{}", "1"]),
    ({"$schema": D4, "type": "object", "additionalProperties": False}, ["{}", '{"a":1}']),
    ({"$schema": D4, "type": "array", "items": [{}], "additionalItems": True}, ["[1,2]", "{}"]),
    ({"$schema": D6, "then": 5, "type": "integer"}, ["1", '"a"']),
    ({"$schema": D4, "contains": True, "type": "integer"}, ["1", '"a"']),
    ({"type": ["string", "null"]}, ['"a"', "null", "1"]),
    ({"$schema": D4, "enum": [1, True, "1"]}, ["1", "true", '"1"', "0"]),
]


@pytest.mark.parametrize("schema,texts", VALID_SCHEMAS, ids=[repr(s) for s, _ in VALID_SCHEMAS])
def test_what_the_metaschema_allows_still_compiles_and_agrees(schema, texts):
    assert not _metaschema_refuses(schema)
    grammar = ga.Grammar.from_json_schema(schema)
    oracle = jsonschema.validators.validator_for(schema)(schema)
    for text in texts:
        assert _accepts(grammar, text) == oracle.is_valid(json.loads(text)), text


@pytest.mark.parametrize("schema,position", [
    ({"type": "string", "pattern": "(?<a>x)(?<a>y)"}, 7),
    ({"type": "string", "pattern": "((?<a>x)|(?<a>y))(?<a>z)"}, 17),
    ({"type": "string", "pattern": "(?<a>x(?<a>y))"}, 6),
    ({"type": "object", "patternProperties": {"(?<n>x)(?<n>y)": {}}}, 7),
], ids=["in a row", "after an alternation holding it", "nested", "patternProperties"])
def test_a_repeated_ecma_group_name_is_refused_with_its_position(schema, position):
    pattern = schema.get("pattern") or next(iter(schema["patternProperties"]))
    with pytest.raises(re.error):  # re (with its spelling of named groups) agrees
        re.compile(pattern.replace("(?<", "(?P<"))
    with pytest.raises(RegexError, match="duplicate capture group name") as caught:
        ecma_pattern_dfa(pattern)
    assert caught.value.position == position
    with pytest.raises(SchemaCompileError, match="duplicate capture group name") as schema_error:
        ga.Grammar.from_json_schema(schema).whole()
    keyword = "pattern" if "pattern" in schema else "patternProperties"
    assert (schema_error.value.pointer, schema_error.value.keyword) == ("", keyword)


def test_one_group_name_in_two_alternatives_is_allowed():
    """ES2025: the groups of different alternatives never take part in one match."""
    dfa = ecma_pattern_dfa("^(?:(?<a>x)|(?<a>y))$")
    assert dfa.matches(b"x") and dfa.matches(b"y") and not dfa.matches(b"xy")


def test_a_repeated_group_name_in_from_regex_is_a_regex_error_with_its_position():
    with pytest.raises(re.error):
        re.compile("(?P<a>x)(?P<a>y)")
    with pytest.raises(RegexError, match="redefinition of group name") as caught:
        ga.Grammar.from_regex("(?P<a>x)(?P<a>y)")
    assert caught.value.position == 12


# ---------------------------------------------------------------------------- item 4: API misuse


@pytest.fixture(scope="module")
def ab():
    vocab = ga.Vocabulary.from_token_bytes([b"a", b"b", b"</s>"], eos_token_ids=[2])
    return ga.compile(ga.Grammar.from_regex("a+b"), vocab)


@pytest.mark.parametrize("compiled,error,words", [
    ([], ValueError, "at least one compiled grammar"),
    ((), ValueError, "at least one compiled grammar"),
    (["a+b"], TypeError, "CompiledGrammar rows"),
    (5, TypeError, "a CompiledGrammar or a sequence"),
])
def test_batch_matcher_refuses_no_rows_and_rows_that_are_not_compiled_grammars(compiled, error, words):
    with pytest.raises(error, match=words):
        ga.BatchMatcher(compiled)


@pytest.mark.parametrize("num_threads", [0, -1, 1.0, True])
def test_batch_matcher_refuses_num_threads_that_is_not_a_positive_integer(ab, num_threads):
    with pytest.raises(ValueError, match="num_threads must be a positive integer or None"):
        ga.BatchMatcher(ab, 2, num_threads=num_threads)
    assert len(ga.BatchMatcher(ab, 2, num_threads=np.int64(2))) == 2


@pytest.mark.parametrize("index", [1.5, "0", True, None, np.float64(1.0)])
def test_batch_row_indices_must_be_integers_not_coerced(ab, index):
    batch = ga.BatchMatcher(ab, 2)
    bitmask = ga.allocate_token_bitmask_numpy(2, 3)
    before = bitmask.copy()
    with pytest.raises(TypeError, match="row indices must be ints"):
        batch.accept_tokens([0], indices=[index])
    with pytest.raises(TypeError, match="row indices must be ints"):
        batch.fill_next_token_bitmask(bitmask, indices=[index])
    with pytest.raises(TypeError, match="row indices must be ints"):
        batch.rollback(1, indices=[index])
    assert [m.num_accepted_tokens for m in batch.matchers] == [0, 0]
    assert np.array_equal(bitmask, before)
    assert batch.accept_tokens([0], indices=[np.int64(1)]) == [True]  # numpy integers are ints
    assert [m.num_accepted_tokens for m in batch.matchers] == [0, 1]


@pytest.mark.parametrize("grammar", [lambda: ga.Grammar.from_regex("a+b"), lambda: ga.Grammar.from_lark('start: "a"')],
                         ids=["regex", "lark"])
def test_compile_refuses_an_eager_that_is_not_a_bool_or_none(ab, grammar):
    with pytest.raises(TypeError, match="eager"):
        ga.compile(grammar(), ab.vocabulary, eager="yes", cache=False)


@pytest.mark.parametrize("value", ["NAME", b"NAME"])
def test_always_lexed_as_a_string_is_refused_not_read_letter_by_letter(tmp_path, value):
    text = 'start: NAME\nNAME: /[a-z]+/\nN: "n"\nA: "a"\nM: "m"\nE: "e"'
    with pytest.raises(TypeError, match="always_lexed must be a tuple of terminal names"):
        grammar_from_lark(text, always_lexed=value)
    path = tmp_path / "g.lark"
    path.write_text(text)
    with pytest.raises(TypeError, match="always_lexed must be a tuple of terminal names"):
        grammar_from_lark_file(path, always_lexed=value)
    assert grammar_from_lark(text, always_lexed=["NAME"]).always_lexed == ("NAME",)


def test_grammar_from_lark_refuses_always_lexed_as_a_string():
    with pytest.raises(TypeError, match="always_lexed must be a tuple of terminal names"):
        ga.Grammar.from_lark('start: NAME\nNAME: /[a-z]+/', always_lexed="NAME")


# ---------------------------------------------------------------------------- item 4: logits processor


def _processor_steps(compiled, rows: list[list[int]], width: int):
    """Run a GrammarLogitsProcessor over successive ``input_ids`` (each a list of rows)."""
    torch = pytest.importorskip("torch")
    processor = ga.GrammarLogitsProcessor(compiled)
    for ids in rows:
        processor(torch.tensor(ids), torch.zeros(len(ids), width))
    return processor


@pytest.mark.parametrize("steps,width,token", [
    ([[[5]], [[5, 7]]], 3, 7),
    ([[[5]], [[5, 3]]], 4, 3),
    ([[[5]], [[5, -1]]], 3, -1),
    ([[[5]], [[5, 0]], [[5, 0, 1]], [[5, 0, 1, 2]], [[5, 0, 1, 2, 9]]], 3, 9),
    ([[[5], [5]], [[5, 0], [5, 4]]], 4, 4),
    ([[[5], [5]], [[5, 0], [5, 3]]], 3, 3),
], ids=["sampling", "sampling a padding column", "negative", "after EOS", "beam search past the logits",
        "beam search past the vocabulary and the logits"])
def test_an_out_of_vocabulary_token_is_an_error_naming_it(ab, steps, width, token):
    """The vocabulary has 3 ids, the logits ``width`` columns (4: a padded model). Without
    beam search no column past the vocabulary can come back (it was masked); beam search may
    pick a padding column as a -inf filler (next test), but not an id past the logits."""
    with pytest.raises(ga.TokenRejected, match=f"token id {token} rejected: out of range") as caught:
        _processor_steps(ab, steps, width)
    assert caught.value.token_id == token


def test_beam_search_filler_in_the_padding_columns_still_ends_only_its_row(ab):
    processor = _processor_steps(ab, [[[5], [5]], [[5, 0], [5, 3]]], 4)
    assert processor.matchers[0] is not None and processor.matchers[1] is None
