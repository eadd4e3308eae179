"""Tool-calling grammars: random texts of the grammar parse into calls whose arguments the
jsonschema package validates against their tool's schema; hand-made wrong answers are rejected."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
import torch

import gramalign as ga
from gramalign.integrations import tools as ga_tools
from gramalign.integrations.tools import HERMES, ToolCallFormat, parse_tool_calls, tool_calling_grammar

from support.grammar_walks import byte_vocabulary, random_texts
from support.tokenizer_zoo import gpt2_hf_fast

WEATHER = {"type": "object", "required": ["city"], "additionalProperties": False,
           "properties": {"city": {"type": "string", "maxLength": 12},
                          "unit": {"enum": ["celsius", "fahrenheit"]}}}
ADD = {"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "integer", "minimum": -5, "maximum": 99},
                                                              "b": {"type": "integer"}}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters": WEATHER}},
         {"type": "function", "function": {"name": "add", "parameters": ADD}}]
SCHEMAS = {"get_weather": WEATHER, "add": ADD}


def accepts(grammar: ga.Grammar, text: str) -> bool:
    matcher = ga.compile(grammar, byte_vocabulary()).matcher()
    try:
        matcher.accept_string(text.encode())
    except ga.StringRejected:
        return False
    return matcher.can_terminate()


@pytest.mark.parametrize("choice", ["auto", "required", "none", "add"])
@pytest.mark.parametrize("parallel", [True, False])
def test_random_answers_parse_into_valid_calls(choice, parallel):
    tool_choice = {"type": "function", "function": {"name": "add"}} if choice == "add" else choice
    grammar = tool_calling_grammar(TOOLS, tool_choice=tool_choice, parallel_tool_calls=parallel)
    texts = random_texts(grammar, 25, seed=len(choice) * 2 + parallel, max_bytes=400)
    assert len(texts) >= 15
    kinds = set()
    for data in texts:
        result = parse_tool_calls(data.decode())
        kinds.add("calls" if result.calls else "text")
        if not result.calls:
            assert choice in ("auto", "none") and result.content and not result.content.startswith(HERMES.open)
            continue
        assert choice != "none" and result.content == ""
        assert parallel or len(result.calls) == 1
        for call in result.calls:
            assert choice != "add" or call.name == "add"
            jsonschema.validate(call.arguments, SCHEMAS[call.name])
    # (random bytes rarely spell the call marker, so 'auto' walks are mostly text; calls in
    # 'auto' are checked by hand in test_wrong_answers_are_rejected)
    assert kinds == {"required": {"calls"}, "none": {"text"}, "add": {"calls"}}[choice] if choice != "auto" \
        else "text" in kinds


def test_wrong_answers_are_rejected():
    grammar = tool_calling_grammar(TOOLS)
    call = '<tool_call>\n{"name":"add","arguments":{"a":1,"b":2}}\n</tool_call>'
    assert accepts(grammar, call) and accepts(grammar, call + "\n" + call) and accepts(grammar, "It is sunny.")
    for wrong in [call.replace('"a":1', '"a":100'),  # above the maximum
                  call.replace('"add"', '"mul"'),  # no such tool
                  call.replace('{"a":1,"b":2}', '{"a":1}'),  # a required argument missing
                  call + call,  # no separator
                  "<tool_call>\nnot json\n</tool_call>",
                  "<tool_call>\n"]:  # text may not start like a call
        assert not accepts(grammar, wrong), wrong
    single = tool_calling_grammar(TOOLS, parallel_tool_calls=False)
    assert not accepts(single, call + "\n" + call)


def test_other_formats_and_parse_back():
    fmt = ToolCallFormat(open="[CALL]", close="[/CALL]", separator="")
    grammar = tool_calling_grammar(TOOLS, tool_choice="required", format=fmt)
    text = '[CALL]{"name":"get_weather","arguments":{"city":"Oslo"}}[/CALL][CALL]{"name":"add","arguments":{"a":2,"b":3}}[/CALL]'
    assert accepts(grammar, text)
    calls = parse_tool_calls(text, format=fmt).calls
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Oslo"}), ("add", {"a": 2, "b": 3})]
    with pytest.raises(ValueError, match="offset"):
        parse_tool_calls('<tool_call>\n{"name":"add","arguments":{}}', format=HERMES)


def test_bad_tool_lists_are_named():
    with pytest.raises(ga.GrammarError, match=r"tools\[1\]"):
        tool_calling_grammar([TOOLS[0], {"type": "function", "function": {}}])
    with pytest.raises(ga.GrammarError, match="unique"):
        tool_calling_grammar([TOOLS[0], TOOLS[0]])
    with pytest.raises(ga.GrammarError, match="'sub'"):
        tool_calling_grammar(TOOLS, tool_choice={"type": "function", "function": {"name": "sub"}})
    with pytest.raises(ga.SchemaCompileError, match="anyOf/0/properties/arguments"):
        tool_calling_grammar([{"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {"x": {"type": "string", "pattern": "(a"}}}}}])


def test_generate_with_tools_in_a_real_generate_loop(tiny_model):
    """A random model through model.generate: only the grammar can make its call valid."""
    from gramalign.integrations.tools import generate_with_tools

    tokenizer = gpt2_hf_fast()
    tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    for seed in range(2):
        torch.manual_seed(seed)
        result = generate_with_tools(tiny_model, tokenizer, [{"role": "user", "content": "Weather in Oslo?"}], TOOLS,
                                     tool_choice={"type": "function", "function": {"name": "get_weather"}},
                                     parallel_tool_calls=False, max_new_tokens=120, do_sample=True)
        assert result.content == "" and len(result.calls) == 1 and result.calls[0].name == "get_weather"
        jsonschema.validate(result.calls[0].arguments, WEATHER)


def _chat_tokenizer():
    tokenizer = gpt2_hf_fast()
    tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    return tokenizer


@pytest.mark.parametrize("budget", [3, 12, 30])
def test_a_turn_cut_short_keeps_its_text_and_token_count(tiny_model, budget):
    """A required call that the token budget cuts, inside its opening marker or its JSON, has no
    content and no calls, and keeps what it wrote to be debugged (issue 40, item 3)."""
    from gramalign.integrations.tools import generate_with_tools

    tokenizer = _chat_tokenizer()
    torch.manual_seed(budget)
    result = generate_with_tools(tiny_model, tokenizer, [{"role": "user", "content": "Weather in Oslo?"}], TOOLS,
                                 tool_choice="required", parallel_tool_calls=False, max_new_tokens=budget,
                                 do_sample=True)
    assert result.truncated and result.content == "" and result.calls == ()
    assert result.num_tokens == budget  # the model's tokens, often not the tokenizer's spelling of the text
    assert result.text.startswith("<tool_call>") or "<tool_call>".startswith(result.text), result.text
    assert "text=" in repr(result) and "num_tokens=" in repr(result)
    finished = generate_with_tools(tiny_model, tokenizer, [{"role": "user", "content": "Hi"}], TOOLS,
                                   tool_choice="none", max_new_tokens=4)
    assert finished.content == finished.text and finished.num_tokens <= 4


def test_temperature_means_what_it_means_for_generate(tiny_model, monkeypatch):
    """temperature=0 is greedy and above 0 samples, as in ga.generate; model.generate gets
    options transformers finds valid, so it warns about none (issue 40, item 4)."""
    from transformers import GenerationConfig

    from gramalign.integrations.tools import generate_with_tools

    tokenizer = _chat_tokenizer()
    seen = []
    original = type(tiny_model).generate

    def spy(self, *args, **kwargs):
        seen.append({key: kwargs[key] for key in ("do_sample", "temperature") if key in kwargs})
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(tiny_model), "generate", spy)
    turn = ([{"role": "user", "content": "Weather in Oslo?"}], TOOLS)
    options = {"tool_choice": "required", "parallel_tool_calls": False, "max_new_tokens": 40}
    greedy = generate_with_tools(tiny_model, tokenizer, *turn, **options)
    at_zero = generate_with_tools(tiny_model, tokenizer, *turn, temperature=0, **options)
    assert at_zero.text == greedy.text and seen[0] == seen[1] == {"do_sample": False}
    torch.manual_seed(0)
    generate_with_tools(tiny_model, tokenizer, *turn, temperature=0.7, **options)
    assert seen[2] == {"do_sample": True, "temperature": 0.7}
    for kwargs in seen:
        GenerationConfig(**kwargs).validate(strict=True)  # what transformers would warn about raises here
    for temperature, do_sample in ((0, True), (0.5, False)):
        with pytest.raises(ValueError, match="contradicts"):
            generate_with_tools(tiny_model, tokenizer, *turn, temperature=temperature, do_sample=do_sample, **options)
    for temperature in (-1, float("nan"), "0"):
        with pytest.raises(ValueError, match="temperature must be"):
            generate_with_tools(tiny_model, tokenizer, *turn, temperature=temperature, **options)


@pytest.mark.parametrize("max_calls", [1, 2, 3])
def test_max_calls_bounds_the_number_of_calls(max_calls):
    grammar = tool_calling_grammar(TOOLS, tool_choice="required", max_calls=max_calls)
    call = '<tool_call>\n{"name":"add","arguments":{"a":1,"b":2}}\n</tool_call>'
    for n in range(1, 5):
        assert accepts(grammar, "\n".join([call] * n)) == (n <= max_calls), n
    with pytest.raises(ga.GrammarError, match="max_calls"):
        tool_calling_grammar(TOOLS, max_calls=0)


def test_calls_parse_without_newlines_and_with_ids():
    one_line = ('<tool_call>{"name":"add","arguments":{"a":1,"b":2}}</tool_call>'
                '<tool_call> {"name":"get_weather","arguments":{"city":"Oslo"}} </tool_call>')
    calls = parse_tool_calls(one_line).calls
    assert [(c.name, c.arguments) for c in calls] == [("add", {"a": 1, "b": 2}), ("get_weather", {"city": "Oslo"})]
    assert len({c.id for c in calls}) == 2 and all(re.fullmatch(r"call_[0-9a-f]{24}", c.id) for c in calls)
    entry = calls[0].to_openai()
    assert entry["type"] == "function" and entry["id"] == calls[0].id
    assert json.loads(entry["function"]["arguments"]) == {"a": 1, "b": 2}


def test_a_cut_answer_keeps_the_finished_calls():
    call = '<tool_call>\n{"name":"add","arguments":{"a":1,"b":2}}\n</tool_call>'
    for cut in ["\n<tool_", '\n<tool_call>\n{"name":"ad', '\n<tool_call>\n{"name":"add","arguments":{"a":1,"b":2}}\n</to']:
        result = parse_tool_calls(call + cut, partial=True)
        assert result.truncated and [(c.name, c.arguments) for c in result.calls] == [("add", {"a": 1, "b": 2})]
        with pytest.raises(ValueError):
            parse_tool_calls(call + cut)
    assert not parse_tool_calls(call).truncated
    assert parse_tool_calls(call + cut, partial=True).text == call + cut and parse_tool_calls(call).text == call
    for cut in ["<", "<tool_ca"]:  # cut inside the opening marker: a call, not free text
        assert parse_tool_calls(cut, partial=True) == ga_tools.ToolCallResult("", (), truncated=True)
        assert parse_tool_calls(cut, partial=True).text == cut
