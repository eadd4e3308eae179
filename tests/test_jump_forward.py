"""Forced bytes and jump-forward against finite languages, whose every string is enumerated:
the forced text after a prefix is the longest common continuation of the strings that
extend it (nothing when the prefix is itself a string of the language)."""

from __future__ import annotations

import itertools
import json
import os

import numpy as np
import pytest

import gramalign as ga
from gramalign.samplers.jump_forward import jump_forward

from support.mask_walks import mask_row, replay
from support.tokenizer_zoo import gpt2_hf_fast
from support.vocabularies import gpt2_vocabulary


def finite_regex_language() -> tuple[ga.Grammar, list[bytes]]:
    fruits, dishes = ["apple", "apricot", "banana", "ba\u00f1o"], ["", " pie", " tart", " pie\u00e9"]
    strings = [f + d for f, d in itertools.product(fruits, dishes)]
    pattern = "(apple|apricot|banana|ba\u00f1o)( pie| tart| pie\u00e9)?"
    return ga.Grammar.from_regex(pattern), [s.encode() for s in strings]


def finite_schema_language() -> tuple[ga.Grammar, list[bytes]]:
    schema = {"type": "object", "additionalProperties": False, "required": ["kind", "n", "tag"],
              "properties": {"kind": {"enum": ["alpha", "alpine", "beta"]}, "n": {"const": 3},
                             "tag": {"enum": ["x", "xy"]}}}
    strings = [json.dumps({"kind": k, "n": 3, "tag": t}, separators=(",", ":")).encode()
               for k in ("alpha", "alpine", "beta") for t in ("x", "xy")]
    return ga.Grammar.from_json_schema(schema), strings


def forced_oracle(strings: list[bytes], prefix: bytes) -> bytes:
    rests = [s[len(prefix):] for s in strings if s.startswith(prefix)]
    if b"" in rests:
        return b""
    common = os.path.commonprefix(rests)
    while common:  # forced text ends at a whole character (it may finish one the prefix began)
        try:
            (prefix + common).decode("utf-8")
            return common
        except UnicodeDecodeError:
            common = common[:-1]
    return common


LANGUAGES = {"regex": finite_regex_language, "schema": finite_schema_language}


@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_forced_bytes_equal_the_common_continuation(name):
    grammar, strings = LANGUAGES[name]()
    compiled = ga.compile(grammar, gpt2_vocabulary())
    prefixes = {s[:cut] for s in strings for cut in range(len(s) + 1)}
    for prefix in sorted(prefixes):
        matcher = compiled.matcher()
        matcher.accept_string(prefix)
        before = mask_row(matcher)
        assert matcher.forced_bytes() == forced_oracle(strings, prefix), prefix
        np.testing.assert_array_equal(mask_row(matcher), before)  # state unchanged
    matcher = compiled.matcher()
    assert matcher.forced_bytes(max_bytes=2) == forced_oracle(strings, b"")[:2]


def compiled_for_gpt2(grammar: ga.Grammar):
    """The grammar compiled for GPT-2, the vocabulary, and GPT-2's encoder (no special tokens)."""
    tokenizer = gpt2_hf_fast()
    vocab = gpt2_vocabulary()
    return ga.compile(grammar, vocab), vocab, lambda text: tokenizer.encode(text, add_special_tokens=False)


@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_jump_forward_keeps_a_canonical_tokenization(name):
    grammar, strings = LANGUAGES[name]()
    compiled, vocab, encode = compiled_for_gpt2(grammar)
    rng = np.random.default_rng(3)
    eos = vocab.eos_token_ids[0]
    jumps = 0
    for _ in range(30):
        matcher, tokens = compiled.matcher(), []
        while not matcher.is_terminated():
            jump = jump_forward(matcher, encode, tokens)
            if jump is not None:
                jumps += 1
                kept = tokens[:len(tokens) - jump.rollback]
                tail_text = vocab.decode_bytes(tokens[len(kept):]) + jump.forced
                assert list(jump.token_ids) == encode(tail_text.decode())[:-1]  # canonical across the boundary
                tokens = kept + list(jump.token_ids)
                np.testing.assert_array_equal(mask_row(matcher), mask_row(replay(compiled, tokens)))
            text = vocab.decode_bytes(tokens)
            assert any(s.startswith(text) for s in strings), text
            allowed = matcher.allowed_token_ids()
            token = int(rng.choice(allowed))
            matcher.accept_token(token)
            tokens.append(token)
        assert vocab.decode_bytes(tokens[:-1]) in strings and tokens[-1] == eos
    assert jumps >= 3  # the walks do meet forced text (every jump above was checked)


def uniform_table_model(vocab: ga.Vocabulary) -> "ga.TableModel":
    return ga.TableModel(vocab.size, {}, default=np.ones(vocab.size))


@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_masked_sampling_with_jump_forward_stays_in_the_language(name):
    grammar, strings = LANGUAGES[name]()
    compiled, vocab, encode = compiled_for_gpt2(grammar)
    model = uniform_table_model(vocab)
    samples = ga.masked_sample(model, compiled, num_samples=24, rng=5, jump_forward_encode=encode)
    eos = vocab.eos_token_ids[0]
    for sample in samples:
        assert sample.finished and vocab.decode_bytes(sample.token_ids) in strings
        # the reported log-probability is the model's, token by token, EOS included
        tokens = list(sample.token_ids) + [eos]
        expected = sum(float(model.next_token_logprobs([tokens[:k]])[0, t]) for k, t in enumerate(tokens))
        assert sample.logprob == pytest.approx(expected, abs=1e-9)
    if name == "schema":  # `{"kind":"` and `,"n":3,"tag":"` are forced
        assert sum(s.forced_tokens for s in samples) > 0
    plain = ga.masked_sample(model, compiled, num_samples=24, rng=5)
    assert all(s.forced_tokens == 0 for s in plain)


def test_jump_forward_respects_the_token_budget():
    grammar, _ = finite_schema_language()  # `{"kind":"` is forced from the start: more than 3 tokens
    compiled, vocab, encode = compiled_for_gpt2(grammar)
    samples = ga.masked_sample(uniform_table_model(vocab), compiled, num_samples=3, max_new_tokens=3, rng=0,
                               jump_forward_encode=encode)
    for sample in samples:
        assert len(sample.token_ids) == 3 and not sample.finished and sample.forced_tokens >= 2
        assert vocab.decode_bytes(sample.token_ids).startswith(b'{"')
