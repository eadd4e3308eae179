"""One call from a prompt to a Python value: ``generate_as`` and ``stream``.

A *target* says what to generate and what to give back:

- a list or tuple of strings: one of them (``Grammar.from_choices``), returned as the string;
- an ``enum.Enum`` class: one of its values written out, returned as the member;
- ``typing.Literal["a", "b"]``: one of the literals, returned as the string;
- a Python type pydantic can describe (a model, dataclass, TypedDict, ``list[int]``,
  ``bool``...): its JSON, strict (no keys beyond the fields), returned as an instance;
- a JSON Schema dict: its JSON, returned as the parsed JSON value;
- a :class:`~gramalign.Grammar` or :class:`~gramalign.CompiledGrammar` (a regex, Lark,
  GBNF...): returned as the text.

An output the token budget cut short is never returned as if it were complete:
:class:`~gramalign.IncompleteGeneration` carries the text written so far.
"""

from __future__ import annotations

import codecs
import enum
import json
import typing
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import IncompleteGeneration
from ..grammar.grammar import Grammar
from ..grammar.json_schema.types import is_schema_type, parse_as
from ..masking.bitmask import allocate_token_bitmask_numpy, unpack_token_bitmask_numpy
from ..masking.compiler import CompiledGrammar, compile
from ..masking.gc_guard import gc_paused
from ..samplers.masked import SamplingOptions, check_model_fits, constrained_distribution, draw_tokens
from ..samplers.model import checked_logprobs
from .generate import generate, prompt_token_ids
from .hf import vocabulary_for_model
from .hf_model import HFLanguageModel


@dataclass(frozen=True)
class _Target:
    grammar: "Grammar | CompiledGrammar"
    convert: Callable[[str], Any]


def _target(target) -> _Target:
    """The grammar of ``target`` and how its text becomes the value returned."""
    if isinstance(target, (Grammar, CompiledGrammar)):
        return _Target(target, lambda text: text)
    if isinstance(target, (list, tuple)):
        choices = list(target)
        return _Target(Grammar.from_choices(choices), lambda text: text)
    if isinstance(target, type) and issubclass(target, enum.Enum):
        by_text = {str(member.value): member for member in target}
        if len(by_text) != len(target):
            raise TypeError(f"the values of {target.__name__} do not read back unambiguously as text")
        return _Target(Grammar.from_choices(list(by_text)), by_text.__getitem__)
    if typing.get_origin(target) is typing.Literal:
        values = typing.get_args(target)
        if not all(isinstance(value, str) for value in values):
            return _Target(Grammar.from_json_schema(target), lambda text: parse_as(target, text))
        return _Target(Grammar.from_choices(list(values)), lambda text: text)
    if isinstance(target, dict):
        return _Target(Grammar.from_json_schema(target), json.loads)
    if is_schema_type(target):
        return _Target(Grammar.from_json_schema(target), lambda text: parse_as(target, text))
    raise TypeError(f"cannot generate a {type(target).__name__!s} target: pass choices (a list of strings), an "
                    "Enum, a Literal, a Python type, a JSON Schema dict or a gramalign Grammar "
                    "(Grammar.from_regex / from_lark for text)")


def _compiled(target: _Target, tokenizer, model) -> CompiledGrammar:
    if isinstance(target.grammar, CompiledGrammar):
        return target.grammar
    return compile(target.grammar, vocabulary_for_model(tokenizer, model))


def generate_as(model, tokenizer, prompt: "str | Sequence[dict]", target, *, max_new_tokens: int = 256,
                **options) -> Any:
    """Generate from ``prompt`` a value of ``target`` (see the module docstring) and return it.

    ``options`` are :func:`gramalign.generate`'s (``sampler``, ``temperature`` (0: greedy),
    ``top_k``, ``top_p``, ``seed``, ``chat_template``...). Raises
    :class:`~gramalign.IncompleteGeneration` when ``max_new_tokens`` ends the output before the
    grammar does.

    >>> ga.generate_as(model, tokenizer, "Capital of France?", ["Paris", "Lyon"])  # doctest: +SKIP
    'Paris'
    """
    spec = _target(target)
    model_of = model.model if isinstance(model, HFLanguageModel) else model
    compiled = _compiled(spec, tokenizer, model_of)
    out = generate(model, tokenizer, prompt, grammar=compiled, max_new_tokens=max_new_tokens, **options)
    if not out.finished:
        raise IncompleteGeneration(out.text, max_new_tokens)
    return spec.convert(out.text)


def stream(model, tokenizer, prompt: "str | Sequence[dict]", target, *, max_new_tokens: int = 256,
           temperature: float = 1.0, top_k: "int | None" = None, top_p: "float | None" = None,
           seed: "int | np.random.Generator | None" = None, chat_template: bool = True) -> Iterator[str]:
    """The text of a constrained generation, piece by piece as tokens are sampled (masked
    sampling: the same law as :func:`gramalign.generate`'s default). A piece never splits a
    UTF-8 character; the pieces joined are the whole output. Raises
    :class:`~gramalign.IncompleteGeneration` after the last piece when ``max_new_tokens``
    ended the output before the grammar did.

    >>> for piece in ga.stream(model, tokenizer, "A haiku, please", grammar):  # doctest: +SKIP
    ...     print(piece, end="", flush=True)
    """
    spec = _target(target)
    language_model = model if isinstance(model, HFLanguageModel) else HFLanguageModel(model)
    compiled = _compiled(spec, tokenizer, language_model.model)
    check_model_fits(language_model, compiled)
    options = SamplingOptions(temperature=temperature, top_k=top_k, top_p=top_p)
    rng = np.random.default_rng(seed)
    vocabulary = compiled.vocabulary
    eos_ids = set(vocabulary.eos_token_ids)
    sequence = prompt_token_ids(tokenizer, prompt, chat_template=chat_template)
    matcher = compiled.matcher()
    bitmask = allocate_token_bitmask_numpy(1, vocabulary.size)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    written: list[str] = []
    language_model.reset()
    for _ in range(max_new_tokens):
        logprobs = checked_logprobs(language_model, [sequence])
        with gc_paused:
            matcher.fill_next_token_bitmask(bitmask, 0)
            probs = constrained_distribution(logprobs, unpack_token_bitmask_numpy(bitmask, vocabulary.size), options)
            token = int(draw_tokens(probs, rng)[0])
            matcher.accept_token(token)
        if token in eos_ids:
            tail = decoder.decode(b"", final=True)
            if tail:
                yield tail
            return
        sequence.append(token)
        piece = decoder.decode(vocabulary.token_bytes[token])
        if piece:
            written.append(piece)
            yield piece
    raise IncompleteGeneration("".join(written) + decoder.decode(b"", final=True), max_new_tokens)
