"""Tool calling: OpenAI-style ``tools`` become one grammar, and the output parses back.

The output is either free text (an answer) or one or more tool calls, each a JSON object
``{"name": ..., "arguments": {...}}`` whose arguments follow that tool's JSON Schema,
wrapped in the markers of a :class:`ToolCallFormat` (by default the ``<tool_call>`` blocks
of the Hermes / Qwen chat templates). ``tool_choice`` works as in the OpenAI API.

>>> tools = [{"type": "function", "function": {"name": "add", "description": "Add two integers",
...           "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
...                          "required": ["a", "b"]}}}]
>>> grammar = tool_calling_grammar(tools, tool_choice="required")
>>> parse_tool_calls('<tool_call>\\n{"name":"add","arguments":{"a":1,"b":2}}\\n</tool_call>').calls
(ToolCall(name='add', arguments={'a': 1, 'b': 2}),)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..errors import GrammarError
from ..grammar import automata
from ..grammar.grammar import Grammar, Rule, Terminal
from ..grammar.regex import regex_to_dfa


@dataclass(frozen=True)
class ToolCallFormat:
    """How calls are written: ``open`` + JSON + ``close``, consecutive calls joined by ``separator``."""

    open: str = "<tool_call>\n"
    close: str = "\n</tool_call>"
    separator: str = "\n"


HERMES = ToolCallFormat()
"""The format of the Hermes and Qwen chat templates."""


@dataclass(frozen=True)
class ToolCall:
    """One call: the tool's name and its arguments (already parsed JSON)."""

    name: str
    arguments: dict


@dataclass(frozen=True)
class ToolCallResult:
    """What a constrained answer contained: free text, or calls (then ``content`` is empty)."""

    content: str
    calls: tuple[ToolCall, ...]


def _function(tool: Mapping[str, Any], position: int) -> tuple[str, Any]:
    spec = tool.get("function", tool) if tool.get("type", "function") == "function" else None
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str) or not spec["name"]:
        raise GrammarError(f"tools[{position}] is not a function tool with a name "
                           "({'type': 'function', 'function': {'name': ..., 'parameters': {...}}})")
    return spec["name"], spec.get("parameters", {"type": "object", "properties": {}})


def tool_calling_grammar(tools: Sequence[Mapping[str, Any]], *, tool_choice: "str | Mapping" = "auto",
                         parallel_tool_calls: bool = True, format: ToolCallFormat = HERMES, strict: bool = True,
                         **schema_options) -> Grammar:
    """The language of answers to a request with ``tools``.

    ``tool_choice``: ``"auto"`` (free text not starting with ``format.open``, or calls),
    ``"required"`` (calls only), ``"none"`` (free text only), or
    ``{"type": "function", "function": {"name": NAME}}`` (exactly that tool).
    ``parallel_tool_calls=False`` allows one call only. ``strict`` (default True) closes the
    argument objects that say nothing about extra keys (see :meth:`Grammar.from_json_schema`),
    so a model cannot invent arguments. ``schema_options`` go to
    :meth:`Grammar.from_json_schema` (e.g. ``whitespace="flexible"``); errors in a tool's
    parameters name the tool's pointer (``#/anyOf/K/properties/arguments/...``).
    """
    functions = [_function(tool, k) for k, tool in enumerate(tools)]
    names = [name for name, _ in functions]
    if len(set(names)) != len(names):
        raise GrammarError(f"tool names must be unique, got {names}")
    if isinstance(tool_choice, Mapping):
        wanted = tool_choice.get("function", {}).get("name")
        if wanted not in names:
            raise GrammarError(f"tool_choice names {wanted!r}, which is not one of the tools {names}")
        functions = [f for f in functions if f[0] == wanted]
        calls_allowed, text_allowed = True, False
    elif tool_choice in ("auto", "required", "none"):
        calls_allowed, text_allowed = tool_choice != "none", tool_choice != "required"
    else:
        raise GrammarError(f"tool_choice must be 'auto', 'required', 'none' or a function, got {tool_choice!r}")
    if calls_allowed and not functions:
        raise GrammarError(f"tool_choice {tool_choice!r} needs at least one tool")

    text = regex_to_dfa(r"(?s).+")
    if not calls_allowed:
        return Grammar(terminals=(Terminal.from_dfa("TEXT", text),), rules=(Rule("start", (("TEXT",),)),),
                       start="start", source="tool calling: text")
    call_schema = {"anyOf": [{"type": "object", "additionalProperties": False, "required": ["name", "arguments"],
                              "properties": {"name": {"const": name}, "arguments": parameters}}
                             for name, parameters in functions]}
    call = Grammar.from_json_schema(call_schema, strict=strict, **schema_options)
    taken = set(call.terminal_names) | {rule.name for rule in call.rules}
    fresh = {base: _fresh(base, taken) for base in ("TOOL_OPEN", "TOOL_CLOSE", "TOOL_SEPARATOR", "TEXT",
                                                     "tool_answer", "tool_calls", "tool_call")}
    terminals = list(call.terminals) + [
        Terminal(fresh["TOOL_OPEN"], re.escape(format.open), literal=True),
        Terminal(fresh["TOOL_CLOSE"], re.escape(format.close), literal=True),
    ]
    block = (fresh["TOOL_OPEN"], call.start, fresh["TOOL_CLOSE"])
    rules = list(call.rules) + [Rule(fresh["tool_call"], (block,))]
    if parallel_tool_calls:
        if format.separator:
            terminals.append(Terminal(fresh["TOOL_SEPARATOR"], re.escape(format.separator), literal=True))
            repeat = (fresh["tool_calls"], fresh["TOOL_SEPARATOR"], fresh["tool_call"])
        else:
            repeat = (fresh["tool_calls"], fresh["tool_call"])
        rules.append(Rule(fresh["tool_calls"], ((fresh["tool_call"],), repeat)))
        calls_symbol = fresh["tool_calls"]
    else:
        calls_symbol = fresh["tool_call"]
    answers = [(calls_symbol,)]
    if text_allowed:
        # Free text may not start like a call, so text and calls never compete for a prefix.
        starts_like_call = automata.concatenate([regex_to_dfa(re.escape(format.open)),
                                                 regex_to_dfa(r"(?s).*")])
        terminals.append(Terminal.from_dfa(fresh["TEXT"], automata.difference(text, starts_like_call)))
        answers.append((fresh["TEXT"],))
    rules.append(Rule(fresh["tool_answer"], tuple(answers)))
    return Grammar(terminals=tuple(terminals), rules=tuple(rules), start=fresh["tool_answer"], ignore=call.ignore,
                   strict=True, source=f"tool calling: {', '.join(name for name, _ in functions)}")


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def parse_tool_calls(text: str, *, format: ToolCallFormat = HERMES) -> ToolCallResult:
    """Split a constrained answer into free text or :class:`ToolCall` objects.

    Raises ``ValueError`` (with the offset) when ``text`` starts like a call but is not a
    well-formed sequence of calls; with output constrained by :func:`tool_calling_grammar`
    that cannot happen.
    """
    if not text.startswith(format.open):
        return ToolCallResult(text, ())
    decoder = json.JSONDecoder()
    calls, position = [], 0
    while True:
        if not text.startswith(format.open, position):
            raise ValueError(f"expected {format.open!r} at offset {position} of the answer")
        position += len(format.open)
        value, position = decoder.raw_decode(text, position)
        if not (isinstance(value, dict) and isinstance(value.get("name"), str)
                and isinstance(value.get("arguments"), dict)):
            raise ValueError(f"the call ending at offset {position} is not {{'name': ..., 'arguments': {{...}}}}")
        calls.append(ToolCall(value["name"], value["arguments"]))
        if not text.startswith(format.close, position):
            raise ValueError(f"expected {format.close!r} at offset {position} of the answer")
        position += len(format.close)
        if position == len(text):
            return ToolCallResult("", tuple(calls))
        if format.separator and text.startswith(format.separator, position):
            position += len(format.separator)


def tools_system_prompt(tools: Sequence[Mapping[str, Any]], *, format: ToolCallFormat = HERMES) -> str:
    """A system message describing ``tools`` and the call format, for chat templates that
    have no tool support of their own."""
    listing = "\n".join(json.dumps(tool.get("function", tool), ensure_ascii=False) for tool in tools)
    example = format.open + '{"name": <tool name>, "arguments": <arguments object>}' + format.close
    return ("You can call these tools:\n" + listing + "\n\nTo call a tool, answer only with:\n" + example
            + "\nOtherwise answer the user in plain text.")


def generate_with_tools(model, tokenizer, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], *,
                        tool_choice: "str | Mapping" = "auto", parallel_tool_calls: bool = True,
                        format: ToolCallFormat = HERMES, max_new_tokens: int = 256, **generate_options) -> ToolCallResult:
    """One assistant turn of a Hugging Face chat model that may call ``tools``.

    Templates that render ``tools`` themselves get them; for the others a system message from
    :func:`tools_system_prompt` is put first. The answer is constrained by
    :func:`tool_calling_grammar` and parsed with :func:`parse_tool_calls`; calls cut short by
    ``max_new_tokens`` raise ``RuntimeError``.
    """
    from ..masking.compiler import compile as compile_grammar
    from .hf import generate_chat, vocabulary_for_model

    messages = [dict(message) for message in messages]
    template = getattr(tokenizer, "chat_template", None) or ""
    template_kwargs = {}
    if "tools" in template:
        template_kwargs["tools"] = list(tools)
    elif tools and tool_choice != "none":
        messages.insert(0, {"role": "system", "content": tools_system_prompt(tools, format=format)})
    grammar = tool_calling_grammar(tools, tool_choice=tool_choice, parallel_tool_calls=parallel_tool_calls,
                                   format=format)
    compiled = compile_grammar(grammar, vocabulary_for_model(tokenizer, model))
    answer = generate_chat(model, tokenizer, compiled, messages, max_new_tokens=max_new_tokens,
                           chat_template_kwargs=template_kwargs, **generate_options)
    if not answer.finished and answer.text.startswith(format.open):
        raise RuntimeError(f"the tool calls did not finish within {max_new_tokens} tokens: {answer.text[:200]!r}")
    return parse_tool_calls(answer.text, format=format)  # free text cut by the token budget stays as it is
