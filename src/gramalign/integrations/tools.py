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
>>> parse_tool_calls('<tool_call>{"name":"add","arguments":{"a":1,"b":2}}</tool_call>').calls[0].arguments
{'a': 1, 'b': 2}
"""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import GrammarError
from ..grammar.automata import algebra as automata
from ..grammar.automata.regex import regex_to_dfa
from ..grammar.grammar import Grammar, Rule, Terminal


@dataclass(frozen=True)
class ToolCallFormat:
    """How calls are written: ``open`` + JSON + ``close``, consecutive calls joined by ``separator``."""

    open: str = "<tool_call>\n"
    close: str = "\n</tool_call>"
    separator: str = "\n"


HERMES = ToolCallFormat()
"""The format of the Hermes and Qwen chat templates."""


def _call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


@dataclass(frozen=True)
class ToolCall:
    """One call: the tool's name, its arguments (already parsed JSON) and an ``id`` for the
    tool's answer to refer to (OpenAI's ``tool_call_id``; fresh for every parsed call)."""

    name: str
    arguments: dict
    id: str = field(default_factory=_call_id, compare=False, repr=False)

    def to_openai(self) -> dict:
        """The call as an OpenAI chat message's ``tool_calls`` entry (arguments as JSON text)."""
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)}}


@dataclass(frozen=True)
class ToolCallResult:
    """What a constrained answer contained: free text, or calls (then ``content`` is empty).
    ``truncated``: the token budget ended the answer inside a call; ``calls`` are the ones
    finished before it."""

    content: str
    calls: tuple[ToolCall, ...]
    truncated: bool = False
    text: str = field(default="", compare=False)
    """The answer as written, markers and all: what to read when a turn ends badly (a call cut
    short has no ``content`` and perhaps no ``calls``)."""
    num_tokens: "int | None" = field(default=None, compare=False)
    """How many tokens the model generated for the answer (its EOS not counted); None where
    the text did not come from :func:`generate_with_tools`."""


def _function(tool: Mapping[str, Any], position: int) -> tuple[str, Any]:
    spec = tool.get("function", tool) if tool.get("type", "function") == "function" else None
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str) or not spec["name"]:
        raise GrammarError(f"tools[{position}] is not a function tool with a name "
                           "({'type': 'function', 'function': {'name': ..., 'parameters': {...}}})")
    return spec["name"], spec.get("parameters", {"type": "object", "properties": {}})


def tool_calling_grammar(tools: Sequence[Mapping[str, Any]], *, tool_choice: "str | Mapping" = "auto",
                         parallel_tool_calls: bool = True, max_calls: "int | None" = None,
                         format: ToolCallFormat = HERMES, strict: bool = True, **schema_options) -> Grammar:
    """The language of answers to a request with ``tools``.

    ``tool_choice``: ``"auto"`` (free text not starting with ``format.open``, or calls),
    ``"required"`` (calls only), ``"none"`` (free text only), or
    ``{"type": "function", "function": {"name": NAME}}`` (exactly that tool).
    ``parallel_tool_calls=False`` allows one call only, ``max_calls`` at most that many (a small
    model may otherwise repeat a call until the token budget ends). ``strict`` (default True) closes the
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
    if max_calls is not None and (isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1):
        raise GrammarError(f"max_calls must be a positive integer or None, got {max_calls!r}")
    if max_calls == 1:
        parallel_tool_calls = False

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
        separator = ()
        if format.separator:
            terminals.append(Terminal(fresh["TOOL_SEPARATOR"], re.escape(format.separator), literal=True))
            separator = (fresh["TOOL_SEPARATOR"],)
        if max_calls is None:
            repeat = (fresh["tool_calls"], *separator, fresh["tool_call"])
            rules.append(Rule(fresh["tool_calls"], ((fresh["tool_call"],), repeat)))
            calls_symbol = fresh["tool_calls"]
        else:  # calls_k: at most k calls, as call (separator calls_{k-1})?
            names = [_fresh(f"{fresh['tool_calls']}_{k}", taken) for k in range(max_calls + 1)]
            rules.append(Rule(names[1], ((fresh["tool_call"],),)))
            for k in range(2, max_calls + 1):
                rules.append(Rule(names[k], ((fresh["tool_call"],), (fresh["tool_call"], *separator, names[k - 1]))))
            calls_symbol = names[max_calls]
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


def parse_tool_calls(text: str, *, format: ToolCallFormat = HERMES, partial: bool = False) -> ToolCallResult:
    """Split an answer into free text or :class:`ToolCall` objects.

    The markers are matched up to the whitespace around them, so ``<tool_call>{...}</tool_call>``
    on one line reads like the Hermes layout. With ``partial`` (an answer the token budget cut
    short), the calls finished before the cut are returned with ``truncated=True``; otherwise,
    and for text that starts like a call but is no well-formed sequence of calls, ``ValueError``
    names the offset (output constrained by :func:`tool_calling_grammar` is always well formed).
    """
    opening, closing, separator = format.open.strip(), format.close.strip(), format.separator.strip()
    if not text.startswith(opening):
        if partial and text and opening.startswith(text):  # cut inside the first call's opening marker
            return ToolCallResult("", (), truncated=True, text=text)
        return ToolCallResult(text, (), text=text)
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    position = 0

    def skip_space(at: int) -> int:
        while at < len(text) and text[at].isspace():
            at += 1
        return at

    def cut(reason: str) -> ToolCallResult:
        if partial:
            return ToolCallResult("", tuple(calls), truncated=True, text=text)
        raise ValueError(reason)

    while True:
        position = skip_space(position)
        if not text.startswith(opening, position):
            if partial and opening.startswith(text[position:]):
                return cut("")
            raise ValueError(f"expected {format.open!r} at offset {position} of the answer")
        position = skip_space(position + len(opening))
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            return cut(f"the call at offset {position} is not valid JSON: {error}")
        if not (isinstance(value, dict) and isinstance(value.get("name"), str)
                and isinstance(value.get("arguments"), dict)):
            raise ValueError(f"the call ending at offset {position} is not {{'name': ..., 'arguments': {{...}}}}")
        position = skip_space(position)
        if not text.startswith(closing, position):
            if partial and closing.startswith(text[position:]):
                return cut("")
            raise ValueError(f"expected {format.close!r} at offset {position} of the answer")
        calls.append(ToolCall(value["name"], value["arguments"]))
        position = skip_space(position + len(closing))
        if position == len(text):
            return ToolCallResult("", tuple(calls), truncated=partial, text=text)
        if separator and text.startswith(separator, position):
            position += len(separator)


def tools_system_prompt(tools: Sequence[Mapping[str, Any]], *, format: ToolCallFormat = HERMES) -> str:
    """A system message describing ``tools`` and the call format, for chat templates that
    have no tool support of their own."""
    listing = "\n".join(json.dumps(tool.get("function", tool), ensure_ascii=False) for tool in tools)
    example = format.open + '{"name": <tool name>, "arguments": <arguments object>}' + format.close
    return ("You can call these tools:\n" + listing + "\n\nTo call a tool, answer only with:\n" + example
            + "\nOtherwise answer the user in plain text.")


def generate_with_tools(model, tokenizer, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], *,
                        tool_choice: "str | Mapping" = "auto", parallel_tool_calls: bool = True,
                        max_calls: "int | None" = 4, format: ToolCallFormat = HERMES, max_new_tokens: int = 256,
                        **generate_options) -> ToolCallResult:
    """One assistant turn of a Hugging Face chat model that may call ``tools``.

    Templates that render ``tools`` themselves get them; for the others a system message from
    :func:`tools_system_prompt` is put first. The answer is constrained by
    :func:`tool_calling_grammar` (at most ``max_calls`` calls, default 4: small models repeat a
    call otherwise) and parsed with :func:`parse_tool_calls`; when ``max_new_tokens`` cuts a call
    short, the calls finished before it are returned with ``truncated=True``. The result keeps
    the answer's ``text`` and ``num_tokens``, to see what a turn that ended badly wrote. Greedy
    unless ``temperature`` is above 0 (0 is greedy, as for :func:`gramalign.generate`); other
    ``generate_options`` go to ``model.generate``.
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
                                   max_calls=max_calls if parallel_tool_calls else None, format=format)
    compiled = compile_grammar(grammar, vocabulary_for_model(tokenizer, model))
    answer = generate_chat(model, tokenizer, compiled, messages, max_new_tokens=max_new_tokens,
                           chat_template_kwargs=template_kwargs, **generate_options)
    # free text cut by the token budget stays as it is; calls cut short keep the finished ones
    result = parse_tool_calls(answer.text, format=format, partial=not answer.finished)
    return dataclasses.replace(result, num_tokens=len(answer.token_ids))
