"""Context-free grammar masks against a brute-force scan of the vocabulary, and the
matcher's complete strings against lark's own LALR parser.

Brute force: for every token, the incremental parser is fed prefix + token bytes the slow
way (one numba call per token, no trie, no mask store); the mask must equal that set.
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
from gramalign.parsing import IncrementalParser
from gramalign.masking.bitmask import unpack_bitmask_row

from grammar_strings import random_strings, real_sql_queries
from shared_data import maskbench_documents
from tokenizer_zoo import gpt2_hf_fast, llama3_tokenizers

START = {"json": "value", "sql": "start"}
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


@lru_cache(maxsize=None)
def compiled_grammar(name: str, vocab_name: str) -> ga.CompiledGrammar:
    vocab = gpt2_vocabulary() if vocab_name == "gpt2" else llama_sample_vocabulary()
    return ga.compile(ga.Grammar.builtin(name), vocab)


@lru_cache(maxsize=None)
def lark_parser(name: str) -> lark.Lark:
    return lark.Lark(builtin_grammar_text(name), parser="lalr", start=START[name])


def brute_force_allowed(compiled: ga.CompiledGrammar, prefix: bytes) -> np.ndarray:
    parser = IncrementalParser(compiled.store.tables)
    state, _ = parser.feed(parser.initial_state(), prefix)
    assert state is not None, prefix
    vocab = compiled.vocabulary
    allowed = np.zeros(vocab.size, dtype=bool)
    mark = parser.pool.used
    for token in vocab.grammar_token_ids().tolist():
        following, _ = parser.feed(state, vocab.token_bytes[token])
        allowed[token] = following is not None
        parser.truncate(mark)
    if parser.can_end(state):
        allowed[list(vocab.eos_token_ids)] = True
    return allowed


def assert_mask_equals_brute_force(compiled: ga.CompiledGrammar, prefix: bytes) -> bool:
    """Check the matcher's mask after ``prefix`` against :func:`brute_force_allowed`; False
    (nothing checked) when ``prefix`` cuts a UTF-8 character that no token sequence can make."""
    matcher = compiled.matcher()
    try:
        matcher.accept_string(prefix)
    except ga.StringRejected:
        return False
    mask = np.zeros((1, compiled.bitmask_width), dtype=np.int32)
    matcher.fill_next_token_bitmask(mask, 0)
    got = unpack_bitmask_row(mask[0], compiled.vocabulary.size)
    expected = brute_force_allowed(compiled, prefix)
    wrong = np.flatnonzero(got != expected)
    assert wrong.size == 0, (prefix, [(int(t), compiled.vocabulary.token_bytes[t], bool(expected[t]))
                                      for t in wrong[:10]])
    return True


def random_mask_walk(compiled: ga.CompiledGrammar, rng: np.random.Generator, *, steps: int, end_after: int,
                     end_chance: float, pick=None):
    """(matcher, text): tokens drawn from the mask until EOS (taken with ``end_chance``, or
    always after ``end_after`` steps) or ``steps`` tokens. ``pick(choices, rng)`` chooses a
    non-EOS token (default: uniformly)."""
    vocab = compiled.vocabulary
    eos = set(vocab.eos_token_ids)
    matcher = compiled.matcher()
    text = b""
    for step in range(steps):
        allowed = matcher.allowed_token_ids()
        assert allowed.size, text
        ends = [t for t in allowed if t in eos]
        if ends and (step > end_after or rng.random() < end_chance):
            matcher.accept_token(ends[0])
            break
        choices = [t for t in allowed if t not in eos]
        token = pick(choices, rng) if pick is not None else int(rng.choice(choices))
        matcher.accept_token(token)
        text += vocab.token_bytes[token]
    return matcher, text


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
