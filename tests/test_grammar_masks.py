"""Context-free grammar masks against a brute-force scan of the vocabulary, and the
matcher's complete strings against lark's own LALR parser.

Brute force: for every token, the incremental parser is fed prefix + token bytes the slow
way (one numba call per token, no trie, no mask store; oracles/brute_force_masks.py); the
mask must equal that set.
States are reached by random prefixes (cut at token boundaries and at random bytes) of
strings generated from each shipped grammar and of real text.
"""

from __future__ import annotations

import os
import random
from functools import lru_cache

import lark
import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.builtin import builtin_grammar_text

from oracles.brute_force_masks import assert_mask_equals_brute_force
from support.grammar_strings import random_strings, real_sql_queries
from support.mask_walks import random_mask_walk
from support.shared_data import maskbench_documents
from support.tokenizer_zoo import gpt2_hf_fast
from support.vocabularies import gpt2_vocabulary, llama_sample_vocabulary

START = {"json": "value", "sql": "start"}


@lru_cache(maxsize=None)
def compiled_grammar(name: str, vocab_name: str) -> ga.CompiledGrammar:
    vocab = gpt2_vocabulary() if vocab_name == "gpt2" else llama_sample_vocabulary()
    return ga.compile(ga.Grammar.builtin(name), vocab)


@lru_cache(maxsize=None)
def lark_parser(name: str) -> lark.Lark:
    return lark.Lark(builtin_grammar_text(name), parser="lalr", start=START[name])


def sample_texts(name: str) -> list[str]:
    texts = random_strings(builtin_grammar_text(name), START[name], 6, seed=7)
    if name == "json":
        texts += ['{"name": "Zoë", "tags": ["a", "b\\n"], "n": -1.5e3, "ok": true, "x": null}',
                  '[1, 2, {"deep": [[], {}]}]']
        if os.environ.get("GRAMALIGN_DATA_DIR"):
            texts += maskbench_documents(3)  # real-world JSON
    else:
        texts += real_sql_queries()[:4]
    return texts


def prefixes(text: str, rng: random.Random, count: int) -> list[bytes]:
    data = text.encode("utf-8")
    cuts = sorted(rng.sample(range(len(data) + 1), min(count, len(data) + 1)))
    return [data[:cut] for cut in cuts]


@pytest.mark.parametrize("vocab_name", ["gpt2", "llama-sample"])
@pytest.mark.parametrize("name", ["json", "sql"])
def test_mask_equals_brute_force(name, vocab_name):
    compiled = compiled_grammar(name, vocab_name)
    rng = random.Random(f"{name}-{vocab_name}")
    checked = 0
    for text in sample_texts(name):
        for prefix in prefixes(text, rng, 3):
            checked += assert_mask_equals_brute_force(compiled, prefix)
    assert checked >= 20


@pytest.mark.parametrize("name", ["json", "sql"])
def test_lark_strings_are_accepted_token_by_token(name):
    """Every string lark parses is accepted one GPT-2 token at a time, and ends there."""
    compiled = compiled_grammar(name, "gpt2")
    tokenizer = gpt2_hf_fast()
    for text in sample_texts(name):
        lark_parser(name).parse(text)  # the oracle agrees it is a sentence
        matcher = compiled.matcher()
        for token in tokenizer.encode(text):
            matcher.accept_token(token)
        assert matcher.can_terminate(), text
        matcher.accept_token(compiled.vocabulary.eos_token_ids[0])
        assert matcher.is_terminated()


@pytest.mark.parametrize("name", ["json", "sql"])
def test_sampled_sentences_parse_with_lark(name):
    """Random walks through the masks end in strings that lark parses."""
    compiled = compiled_grammar(name, "gpt2")
    rng = np.random.default_rng(5)
    finished = 0
    for _ in range(8):
        matcher, text = random_mask_walk(compiled, rng, steps=60, end_after=30, end_chance=0.2)
        if matcher.is_terminated():
            lark_parser(name).parse(text.decode("utf-8"))
            finished += 1
    assert finished >= 2


@pytest.mark.parametrize("name", ["json", "sql", "python"])
def test_masks_after_rollback_and_fork_equal_a_fresh_replay(name):
    """Per-matcher caches keyed by stack nodes survive rollback (node ids are reused) and
    fork: masks always equal those of a fresh matcher fed the same tokens."""
    compiled = ga.compile(ga.Grammar.builtin(name), gpt2_vocabulary())
    vocab = compiled.vocabulary
    rng = np.random.default_rng(3)
    eos = set(vocab.eos_token_ids)
    matcher = compiled.matcher()
    tokens: list[int] = []
    for step in range(120):
        allowed = [t for t in matcher.allowed_token_ids().tolist() if t not in eos]
        if tokens and (not allowed or rng.random() < 0.25):
            k = int(rng.integers(1, min(4, len(tokens)) + 1))
            matcher.rollback(k)
            del tokens[-k:]
        elif allowed:
            token = int(rng.choice(allowed[:200] if rng.random() < 0.5 else allowed))
            matcher.accept_token(token)
            tokens.append(token)
        if step % 10 == 5:
            matcher = matcher.fork()
        replay = compiled.matcher()
        for token in tokens:
            replay.accept_token(token)
        assert np.array_equal(matcher.allowed_token_ids(), replay.allowed_token_ids()), (step, tokens)


def test_rollback_then_another_stack_at_the_same_node_id():
    """After a rollback a new stack reuses the node ids of the undone one; a mask
    remembered for the old stack must not be served for the new one."""
    compiled = compiled_grammar("json", "gpt2")
    matcher = compiled.matcher()
    for first, second in (('["ab', '{"ab'), ('{"ab', '["ab'), ('[[1, "x', '{"k": "x')):
        matcher.accept_string(first)
        matcher.allowed_token_ids()
        matcher.rollback(1)
        matcher.accept_string(second)
        replay = compiled.matcher()
        replay.accept_string(second)
        assert np.array_equal(matcher.allowed_token_ids(), replay.allowed_token_ids()), second
        matcher.rollback(1)
