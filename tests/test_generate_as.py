"""ga.generate_as and ga.stream with the demo model (SmolLM2-135M-Instruct, offline).

Every value is checked by an oracle that does not trust gramalign: membership in the choices,
``re.fullmatch``, the jsonschema validator, pydantic's own validation; and a stream is the
same sampling as ``ga.generate`` (same seed, same text).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import typing

import pytest

import gramalign as ga

pydantic = pytest.importorskip("pydantic")
jsonschema = pytest.importorskip("jsonschema")


@pytest.fixture(scope="module")
def demo():
    from gramalign.integrations.smollm2 import load_smollm2

    return load_smollm2(show_progress=False)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Size(enum.Enum):
    SMALL = 1
    LARGE = 2


@dataclasses.dataclass
class Pet:
    name: str
    age: int


SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                           "rank": {"type": "integer", "minimum": 1, "maximum": 9}},
          "required": ["city", "rank"], "additionalProperties": False}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_choices_enums_and_literals_come_back_as_their_values(demo, seed):
    model, tokenizer = demo
    fruits = ["apple", "banana", "cherry pie"]
    assert ga.generate_as(model, tokenizer, "Pick a fruit.", fruits, seed=seed) in fruits
    assert isinstance(ga.generate_as(model, tokenizer, "Pick a color.", Color, seed=seed), Color)
    assert isinstance(ga.generate_as(model, tokenizer, "Small or large?", Size, seed=seed), Size)
    assert ga.generate_as(model, tokenizer, "Up or down?", typing.Literal["up", "down"], seed=seed) in ("up", "down")


@pytest.mark.parametrize("seed", [0, 1])
def test_types_and_schemas_come_back_valid(demo, seed):
    model, tokenizer = demo
    pet = ga.generate_as(model, tokenizer, "A pet as JSON.", Pet, seed=seed, max_new_tokens=60)
    assert isinstance(pet, Pet) and isinstance(pet.age, int)
    value = ga.generate_as(model, tokenizer, "A city and its rank as JSON.", SCHEMA, seed=seed, max_new_tokens=60)
    jsonschema.validate(value, SCHEMA)
    numbers = ga.generate_as(model, tokenizer, "Three numbers.", list[int], seed=seed, max_new_tokens=40)
    assert isinstance(numbers, list) and all(isinstance(n, int) for n in numbers)
    text = ga.generate_as(model, tokenizer, "A time.", ga.Grammar.from_regex(r"[0-2][0-9]:[0-5][0-9]"), seed=seed)
    assert re.fullmatch(r"[0-2][0-9]:[0-5][0-9]", text)


@pytest.mark.parametrize("seed", [0, 3])
def test_stream_pieces_join_to_the_generation_of_the_same_seed(demo, seed):
    model, tokenizer = demo
    grammar = ga.Grammar.from_json_schema(SCHEMA)
    pieces = list(ga.stream(model, tokenizer, "A city and its rank as JSON.", grammar, seed=seed, max_new_tokens=60))
    whole = ga.generate(model, tokenizer, "A city and its rank as JSON.", grammar=grammar, seed=seed,
                        max_new_tokens=60)
    assert whole.finished and "".join(pieces) == whole.text
    assert len(pieces) > 1
    jsonschema.validate(json.loads("".join(pieces)), SCHEMA)


def test_a_budget_that_ends_the_output_early_raises_with_the_text_so_far(demo):
    model, tokenizer = demo
    grammar = ga.Grammar.from_regex("[a-z]{40}")
    with pytest.raises(ga.IncompleteGeneration) as info:
        ga.generate_as(model, tokenizer, "Write letters.", grammar, max_new_tokens=3, seed=0)
    assert re.fullmatch("[a-z]{1,39}", info.value.text) and info.value.max_new_tokens == 3
    with pytest.raises(ga.IncompleteGeneration) as streamed:
        "".join(ga.stream(model, tokenizer, "Write letters.", grammar, max_new_tokens=3, seed=0))
    assert streamed.value.text == info.value.text


def test_unsupported_targets_are_refused_clearly(demo):
    model, tokenizer = demo
    with pytest.raises(TypeError, match="Grammar.from_regex"):
        ga.generate_as(model, tokenizer, "x", "[a-z]+")
    with pytest.raises(ga.GrammarError, match="non-empty list of strings"):
        ga.generate_as(model, tokenizer, "x", [])


def test_from_choices_is_literal():
    grammar = ga.Grammar.from_choices(["a.b", "a*", "ünï"])
    dfa = grammar.single_terminal().dfa
    assert [dfa.matches(t.encode()) for t in ["a.b", "axb", "a*", "aaa", "ünï"]] == [True, False, True, False, True]
