"""gramalign.generate: one entry point joining a Hugging Face model, a grammar and a sampler."""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from ..grammar.grammar import Grammar
from ..masking.compiler import CompiledGrammar, compile
from ..samplers.asap import ASApSampler
from ..samplers.awrs import awrs_sample
from ..samplers.masked import SamplingOptions, masked_sample
from ..samplers.smc import smc_sample
from .generation import Generation
from .hf import vocabulary_for_model
from .hf_model import HFLanguageModel

SAMPLERS = ("masked", "asap", "awrs", "smc")


def prompt_token_ids(tokenizer, prompt: "str | Sequence[dict]", *, chat_template: bool = True) -> list[int]:
    """Token ids of ``prompt``: chat messages, or a string (as one user turn when the
    tokenizer has a chat template and ``chat_template`` is true, else plain text)."""
    if not isinstance(prompt, str):
        return list(tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, tokenize=True,
                                                  return_dict=True)["input_ids"])
    if chat_template and getattr(tokenizer, "chat_template", None):
        return prompt_token_ids(tokenizer, [{"role": "user", "content": prompt}])
    return list(tokenizer(prompt).input_ids)


def generate(model, tokenizer, prompt: "str | Sequence[dict]", *, grammar: "Grammar | CompiledGrammar",
             sampler: str = "masked", max_new_tokens: int = 256, temperature: float = 1.0,
             top_k: "int | None" = None, top_p: "float | None" = None, num_particles: int = 8,
             ess_threshold: float = 0.5, asap: "ASApSampler | None" = None, chat_template: bool = True,
             seed: "int | np.random.Generator | None" = None, jump_forward: bool = False,
             max_checks: "int | None" = None) -> Generation:
    """Generate text that follows ``grammar`` from a transformers causal LM.

    ``sampler``: "masked" (fast; temperature/top-k/top-p apply, temperature 0 is greedy),
    "asap" (pass ``asap=`` a sampler from a previous call's ``ASApSampler`` to keep
    learning across calls), "awrs" (one weighted sample, mask-free), or "smc"
    (``num_particles`` AWRS particles; ``max_checks`` bounds their constraint checks, see
    :func:`gramalign.smc_sample`). ``model`` may also be an HFLanguageModel.
    ``jump_forward`` (masked sampler only) writes the text the grammar forces (keys,
    punctuation) without sampling it, canonically tokenized, in one forward pass with the
    next token: fewer model calls, same validity, but the tokenization of forced text is no
    longer sampled (see :func:`gramalign.masked_sample`).

    >>> out = generate(model, tokenizer, "Is 7 prime?", grammar=ga.Grammar.from_regex("yes|no"))  # doctest: +SKIP
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}; got {sampler!r}")
    if sampler != "masked" and (temperature != 1.0 or top_k is not None or top_p is not None):
        raise ValueError(f"temperature, top_k and top_p apply to the masked sampler only: {sampler!r} samples the "
                         "model itself conditioned on the grammar, which they would change (use sampler='masked', "
                         "or leave them at their defaults)")
    if max_checks is not None and sampler != "smc":
        raise ValueError(f"max_checks bounds the smc sampler's constraint checks; {sampler!r} does not take it")
    if jump_forward and sampler != "masked":
        raise ValueError(f"jump_forward works with the masked sampler only: it would bias {sampler!r}, whose "
                         "law depends on sampling every token")
    language_model = model if isinstance(model, HFLanguageModel) else HFLanguageModel(model)
    if asap is not None:
        grammar = asap.compiled  # the trie's grammar; compiling again would give another object
    elif isinstance(grammar, Grammar):
        grammar = compile(grammar, vocabulary_for_model(tokenizer, language_model.model))
    elif not isinstance(grammar, CompiledGrammar):
        raise TypeError(f"grammar must be a gramalign Grammar or CompiledGrammar, got {type(grammar).__name__}")
    prompt_ids = prompt_token_ids(tokenizer, prompt, chat_template=chat_template)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    language_model.reset()
    log_normaliser = particles = None
    checks = 0
    if sampler == "masked":
        options = SamplingOptions(temperature=temperature, top_k=top_k, top_p=top_p)
        encode = (lambda text: tokenizer.encode(text, add_special_tokens=False)) if jump_forward else None
        sample = masked_sample(language_model, grammar, prompt_ids=prompt_ids, max_new_tokens=max_new_tokens,
                               options=options, rng=rng, jump_forward_encode=encode)[0]
    elif sampler == "asap":
        if asap is None:
            asap = ASApSampler(language_model, grammar, prompt_ids=prompt_ids)
        elif asap.prompt_ids != tuple(prompt_ids):
            raise ValueError("the ASAp sampler passed in was built for another prompt")
        language_model = asap.model
        sample = asap.sample(max_new_tokens=max_new_tokens, rng=rng)
    elif sampler == "awrs":
        sample = awrs_sample(language_model, grammar, prompt_ids=prompt_ids, max_new_tokens=max_new_tokens,
                             rng=rng)
        checks = sample.constraint_checks
    else:
        result = smc_sample(language_model, grammar, num_particles=num_particles, ess_threshold=ess_threshold,
                            prompt_ids=prompt_ids, max_new_tokens=max_new_tokens, rng=rng, max_checks=max_checks)
        sample, particles, log_normaliser = result.choose(rng), result.particles, result.log_normaliser
        checks = result.constraint_checks
    text = grammar.vocabulary.decode_bytes(sample.token_ids).decode("utf-8", errors="replace")
    return Generation(text, sample.token_ids, sample.finished, sample.logprob, sample.log_weight, particles,
                      log_normaliser, checks, asap, sample.forced_tokens, time.perf_counter() - start)


FIM_MARKERS = (("<fim_prefix>", "<fim_suffix>", "<fim_middle>"),  # StarCoder and its descendants
               ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"),  # Qwen2.5-Coder
               ("<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"))  # DeepSeek-Coder
"""Prefix, suffix and middle markers of the fill-in-the-middle templates recognised by name."""


def fim_prompt_ids(tokenizer, prefix: str, suffix: str, template=None) -> list[int]:
    """The prompt of a fill-in-the-middle model in prefix-suffix-middle order: the
    tokenizer's own markers (one of :data:`FIM_MARKERS`), or ``template(prefix, suffix)``
    returning the prompt as a string or as token ids."""
    if template is not None:
        made = template(prefix, suffix)
        return (list(tokenizer(made, add_special_tokens=False).input_ids) if isinstance(made, str)
                else [int(t) for t in made])
    known = tokenizer.get_vocab()
    for markers in FIM_MARKERS:
        if all(marker in known for marker in markers):
            pre, suf, mid = (known[marker] for marker in markers)
            return [pre, *tokenizer(prefix, add_special_tokens=False).input_ids,
                    suf, *tokenizer(suffix, add_special_tokens=False).input_ids, mid]
    raise ValueError(f"the tokenizer has none of the fill-in-the-middle markers gramalign knows "
                     f"({', '.join(markers[0] for markers in FIM_MARKERS)}): pass template=, a function "
                     "(prefix, suffix) -> the prompt as a string or token ids")


def generate_infill(model, tokenizer, prefix: str, suffix: str, *, grammar: "Grammar | CompiledGrammar",
                    max_new_tokens: int = 128, template=None, budget_s: "float | None" = 1.0,
                    seed: "int | np.random.Generator | None" = None) -> Generation:
    """The middle between ``prefix`` and ``suffix`` from a transformers causal LM trained for
    fill-in-the-middle, such that ``prefix + middle + suffix`` follows ``grammar``
    (:func:`gramalign.fim_sample`: each token of the middle must still let the suffix follow,
    each step samples the model restricted to those tokens). The prompt is the model's FIM
    template (see :func:`fim_prompt_ids`; ``template`` for another); the middle ends with the
    vocabulary's EOS. ``budget_s`` bounds each infilling check (an undecided check lets its
    token through: ``constraint_checks`` counts the checks). ``text`` is the middle.

    >>> out = generate_infill(model, tokenizer, "def f(x):\\n    return ", "\\n", grammar=g)  # doctest: +SKIP
    """
    from ..masking.infill import InfillChecker
    from ..samplers.fim import fim_sample

    language_model = model if isinstance(model, HFLanguageModel) else HFLanguageModel(model)
    if isinstance(grammar, Grammar):
        grammar = compile(grammar, vocabulary_for_model(tokenizer, language_model.model))
    elif not isinstance(grammar, CompiledGrammar):
        raise TypeError(f"grammar must be a gramalign Grammar or CompiledGrammar, got {type(grammar).__name__}")
    prompt_ids = fim_prompt_ids(tokenizer, prefix, suffix, template)
    start = time.perf_counter()
    language_model.reset()
    result = fim_sample(language_model, grammar, prefix, suffix, prompt_ids=prompt_ids,
                        max_new_tokens=max_new_tokens, rng=np.random.default_rng(seed),
                        checker=InfillChecker(grammar, budget_s=budget_s))
    return Generation(text=result.middle.decode("utf-8", errors="replace"), token_ids=result.token_ids,
                      finished=result.finished, logprob=result.logprob, constraint_checks=result.checks,
                      seconds=time.perf_counter() - start)
