"""Cached vocabularies of real tokenizers shared by the mask tests: GPT-2's full vocabulary and
a fixed random sample of Llama-3.2's."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

import gramalign as ga

from support.tokenizer_zoo import gpt2_hf_fast, llama3_tokenizers

LLAMA_SAMPLE = 5000


@lru_cache(maxsize=None)
def gpt2_vocabulary() -> ga.Vocabulary:
    return ga.Vocabulary.from_hf(gpt2_hf_fast())


@lru_cache(maxsize=None)
def llama_sample_vocabulary() -> ga.Vocabulary:
    """Llama-3.2 with a fixed random sample of 5,000 tokens; all others are blanked."""
    full = ga.Vocabulary.from_tokenizers(llama3_tokenizers(), eos_token_ids=[128001])
    grammar_ids = full.grammar_token_ids()
    keep = set(np.random.default_rng(1234).choice(grammar_ids, LLAMA_SAMPLE, replace=False).tolist())
    blanked = [i for i in range(full.size) if i not in keep and i not in full.eos_token_ids]
    return ga.Vocabulary.from_token_bytes(full.token_bytes, eos_token_ids=full.eos_token_ids,
                                          special_token_ids=blanked, vocab_size=full.size)
