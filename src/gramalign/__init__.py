"""gramalign: constrained generation whose every output matches a regex or grammar.

Quick start::

    import gramalign as ga
    vocab = ga.vocabulary_for_model(tokenizer, model)  # the model's logits width and EOS
    compiled = ga.compile(ga.Grammar.from_regex(r"\\d{4}-\\d{2}-\\d{2}"), vocab)
    processor = ga.GrammarLogitsProcessor(compiled)
    model.generate(input_ids, logits_processor=[processor])

Torch-facing names (``allocate_token_bitmask``, ``apply_token_bitmask_inplace``,
``GrammarLogitsProcessor``) are imported on first use, so ``import gramalign`` stays light.

In a long-lived server, call ``ga.warm_up(vocab)`` once the vocabulary is loaded (numba's
kernels load at once rather than inside the first requests, see
:mod:`gramalign.masking.warm_up`) and ``ga.freeze_gc()`` once models, vocabularies and
grammars are loaded (see :mod:`gramalign.masking.gc_guard`).
"""

from __future__ import annotations

from .errors import (BitmaskError, ConcurrentUseError, GbnfError, GramalignError, GrammarError, GrammarSourceError,
                     IncompleteGeneration, InfillError, LarkGrammarError, LimitExceeded, ModelError, ParticlesExhausted,
                     RegexError, SamplingError, SchemaCompileError, SchemaKeywordWarning, StringRejected,
                     TokenRejected, VocabularyError)
from .grammar.automata.dfa import ByteDFA
from .grammar.grammar import Grammar, Indentation
from .grammar.infill import GAP
from .grammar.json_schema.types import parse_as
from .grammar.limits import CompileLimits
from .masking.batch import BatchMatcher
from .masking.bitmask import allocate_token_bitmask_numpy, bitmask_width, unpack_token_bitmask_numpy
from .masking.compiler import CompiledGrammar, compile
from .masking.gc_guard import freeze_gc, gc_paused
from .masking.infill import InfillChecker, InfillResult
from .masking.infill_candidates import InfillCandidates
from .masking.matcher import GrammarMatcher
from .masking.warm_up import warm_up
from .samplers import (ASApSampler, DenoisingModel, DiffusionResult, FimResult, LanguageModel, Sample, SamplingOptions,
                       SMCResult, TableDenoiser, TableModel, awrs_sample, diffusion_sample, fim_sample, masked_sample,
                       smc_sample)
from .tokens import Vocabulary

__version__ = "0.1.0"

_TORCH_NAMES = {
    "allocate_token_bitmask": "gramalign.integrations.torch_ops",
    "apply_token_bitmask_inplace": "gramalign.integrations.torch_ops",
    "unpack_token_bitmask": "gramalign.integrations.torch_ops",
    "GrammarLogitsProcessor": "gramalign.integrations.hf",
    "vocabulary_for_model": "gramalign.integrations.hf",
    "generate": "gramalign.integrations.generate",
    "generate_infill": "gramalign.integrations.generate",
    "generate_as": "gramalign.integrations.typed",
    "stream": "gramalign.integrations.typed",
    "Generation": "gramalign.integrations.generation",
    "HFLanguageModel": "gramalign.integrations.hf_model",
    "HFDenoiser": "gramalign.integrations.hf_model",
}


def __getattr__(name: str):
    module_name = _TORCH_NAMES.get(name)
    if module_name is None:
        raise AttributeError(f"module 'gramalign' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


__all__ = [
    "BatchMatcher", "ByteDFA", "CompileLimits", "LimitExceeded", "CompiledGrammar", "ConcurrentUseError", "GramalignError", "Grammar", "GrammarError", "GrammarMatcher", "Indentation",
    "RegexError", "GrammarSourceError", "LarkGrammarError", "GbnfError", "BitmaskError", "SchemaCompileError", "SchemaKeywordWarning", "StringRejected", "TokenRejected", "Vocabulary", "VocabularyError",
    "allocate_token_bitmask", "allocate_token_bitmask_numpy", "apply_token_bitmask_inplace",
    "bitmask_width", "compile", "parse_as", "unpack_token_bitmask", "unpack_token_bitmask_numpy", "GrammarLogitsProcessor", "vocabulary_for_model",
    "GAP", "InfillCandidates", "InfillChecker", "InfillError", "InfillResult",
    "DenoisingModel", "DiffusionResult", "TableDenoiser", "diffusion_sample", "HFDenoiser",
    "ModelError", "ParticlesExhausted", "SamplingError", "ASApSampler", "LanguageModel", "Sample", "SamplingOptions", "SMCResult", "TableModel", "awrs_sample",
    "masked_sample", "smc_sample", "fim_sample", "FimResult", "generate", "generate_infill", "generate_as", "stream", "IncompleteGeneration", "Generation", "HFLanguageModel", "freeze_gc", "gc_paused", "warm_up",
]
