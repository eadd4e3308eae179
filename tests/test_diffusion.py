"""Masked diffusion decoding (samplers/diffusion.py) and its per-position filter
(masking/infill_candidates.py).

Oracles: a filtered-out token is one no filling of the gaps can complete, by brute force
(every word of a regex grammar up to 16 bytes against the fixed pieces with ``.*`` between) and by the
infilling check (JSON); every finished block is a sentence by CPython's ``json`` or by
``re.fullmatch``; a witness keeps the fixed tokens in order. No diffusion model installs
here: the denoisers are small numpy tables and a tiny random ``BertForMaskedLM``.
"""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

import gramalign as ga
from gramalign.masking.infill_candidates import InfillCandidates, adjacent_bytes

JSON_TOKENS = [b"[", b"]", b"{", b"}", b"1", b"23", b",", b":", b'"a"', b'"b', b'c"', b" ", b"true", b"-",
               b"<eos>", b"<mask>"]
JSON_EOS, JSON_MASK = 14, 15

REGEX = r"(ab|c)+(-[0-9])?"
REGEX_TOKENS = [b"a", b"b", b"c", b"ab", b"ca", b"-", b"7", b"-7", b"b-", b"<eos>", b"<mask>"]
REGEX_EOS, REGEX_MASK = 9, 10


def json_vocab():
    return ga.Vocabulary.from_token_bytes(JSON_TOKENS, eos_token_ids=[JSON_EOS])


def regex_vocab():
    return ga.Vocabulary.from_token_bytes(REGEX_TOKENS, eos_token_ids=[REGEX_EOS])


def random_denoiser(vocab_size: int, mask_id: int, seed: int, peak: float = 3.0) -> ga.TableDenoiser:
    """Scores that depend on the whole sequence (seeded by it), peaked so that choices vary."""
    def scores(ids):
        rng = np.random.default_rng([seed, *ids])
        return np.exp(peak * rng.standard_normal((len(ids), vocab_size)))
    return ga.TableDenoiser(vocab_size, mask_id=mask_id, scores=scores)


def _regex_words(max_length: int) -> list[bytes]:
    """Every word of REGEX up to ``max_length`` bytes, by enumeration of its structure."""
    units, words = [b"ab", b"c"], set()
    bodies = {b""}
    for _ in range(max_length):
        bodies |= {b + u for b in bodies for u in units if len(b + u) <= max_length}
    for body in bodies - {b""}:
        for tail in [b""] + [b"-" + bytes([d]) for d in b"0123456789"]:
            if len(body + tail) <= max_length:
                words.add(body + tail)
    assert all(re.fullmatch(REGEX.encode(), w) for w in words)
    return sorted(words)


def _regex_completable(ids, vocab, mask_id, words) -> bool:
    """Brute force: some word of REGEX holds the fixed pieces in order with anything in the
    masked positions (the text ending at the first EOS)."""
    eos = set(vocab.eos_token_ids)
    pattern, ended = b"", False
    for t in ids:
        if ended:
            if t != mask_id and t not in eos:
                return False
            continue
        if t in eos:
            ended = True
        elif t == mask_id:
            pattern += b".*"
        else:
            pattern += re.escape(vocab.token_to_bytes(t))
    holds = re.compile(pattern, re.DOTALL)
    return any(holds.fullmatch(w) for w in words)


def test_adjacent_bytes_of_a_regex_are_its_pairs():
    pairs, first, last = adjacent_bytes(ga.Grammar.from_regex(REGEX))
    possible = {(a, b) for a, b in zip(b"abc-0123456789", b"abc-0123456789")}
    assert possible  # (a sanity check of the construction below)
    # exactly the pairs some word of (ab|c)+(-[0-9])? holds
    words = [b"ab", b"c", b"abab", b"abc", b"cab", b"cc", b"ab-1", b"c-9"]
    seen = {(a, b) for w in words for a, b in zip(w, w[1:])}
    digits = {(ord("-"), d) for d in b"0123456789"}
    expected = seen | digits | {(ord("b"), ord("-")), (ord("c"), ord("-"))}
    assert {(a, b) for a, b in zip(*np.nonzero(pairs))} == expected
    assert set(np.flatnonzero(first)) == {ord("a"), ord("c")}
    assert set(np.flatnonzero(last)) == {ord("b"), ord("c")} | set(b"0123456789")


def test_filter_never_removes_a_completable_token_regex():
    vocab = regex_vocab()
    candidates = InfillCandidates(ga.Grammar.from_regex(REGEX), vocab)
    words = _regex_words(16)  # the fixed pieces are at most 10 bytes: a shortest completion is shorter
    rng = random.Random(5)
    removed_total = 0
    for _ in range(60):
        length = rng.randint(2, 5)
        ids = [rng.choice(range(9)) if rng.random() < 0.5 else REGEX_MASK for _ in range(length)]
        if REGEX_MASK not in ids:
            ids[rng.randrange(length)] = REGEX_MASK
        if rng.random() < 0.2:
            ids[-1] = REGEX_EOS
        for position in [p for p, t in enumerate(ids) if t == REGEX_MASK]:
            allowed = candidates.at(ids, position, REGEX_MASK)
            for token in range(len(REGEX_TOKENS) - 1):
                if allowed[token]:
                    continue
                removed_total += 1
                trial = ids.copy()
                trial[position] = token
                assert not _regex_completable(trial, vocab, REGEX_MASK, words), (ids, position, token)
    assert removed_total > 100  # the filter does remove tokens


def test_filter_never_removes_what_the_check_keeps_json():
    vocab = json_vocab()
    grammar = ga.Grammar.builtin("json")
    candidates = InfillCandidates(grammar, vocab)
    checker = ga.InfillChecker(grammar, budget_s=5.0)
    rng = random.Random(11)
    removed = 0
    for _ in range(40):
        ids = [rng.choice(range(14)) if rng.random() < 0.5 else JSON_MASK for _ in range(rng.randint(2, 6))]
        if JSON_MASK not in ids:
            ids[0] = JSON_MASK
        position = rng.choice([p for p, t in enumerate(ids) if t == JSON_MASK])
        allowed = candidates.at(ids, position, JSON_MASK)
        assert np.array_equal(candidates.masked(ids, JSON_MASK)[position], allowed)  # one pass, the same rows
        for token in np.flatnonzero(~allowed[:JSON_MASK]).tolist():
            trial = ids.copy()
            trial[position] = token
            assert checker.check_tokens(trial, vocab, JSON_MASK).status == "impossible", (ids, position, token)
            removed += 1
    assert removed > 20


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_finished_blocks_are_json(temperature):
    vocab = json_vocab()
    compiled = ga.compile(ga.Grammar.builtin("json"), vocab)
    checker = ga.InfillChecker(compiled, budget_s=5.0)
    candidates = InfillCandidates(compiled, vocab)
    finished = 0
    for seed in range(12):
        model = random_denoiser(len(JSON_TOKENS), JSON_MASK, seed)
        result = ga.diffusion_sample(model, compiled, 7, temperature=temperature, rng=seed, checker=checker,
                                     candidates=candidates)
        assert len(result.token_ids) == 7 and result.steps >= 1
        if not result.finished:
            # gaps are read as any text, so a block can keep masks that no single token fills
            # (the sampler then runs out of proposals); what it fixed can still be completed
            assert result.text is None and JSON_MASK in result.token_ids
            assert checker.check_tokens(list(result.token_ids), vocab, JSON_MASK).completable
            continue
        finished += 1
        assert JSON_MASK not in result.token_ids
        json.loads(result.text)  # CPython's parser: a JSON text
        ids = list(result.token_ids)
        if JSON_EOS in ids:
            assert set(ids[ids.index(JSON_EOS):]) == {JSON_EOS}
        assert result.text == vocab.decode_bytes([t for t in ids if t != JSON_EOS])
    assert finished >= 5


def test_finished_blocks_match_the_regex():
    vocab = regex_vocab()
    compiled = ga.compile(ga.Grammar.from_regex(REGEX), vocab)
    for seed in range(15):
        result = ga.diffusion_sample(random_denoiser(len(REGEX_TOKENS), REGEX_MASK, seed), compiled, 4, rng=seed,
                                     temperature=0.7)
        assert result.finished
        assert re.fullmatch(REGEX.encode(), result.text), result


def _stubborn(ranking):
    """A denoiser that ranks tokens the same way at every position, most liked first."""
    scores = np.zeros(len(JSON_TOKENS))
    for rank, token in enumerate(ranking):
        scores[token] = 10.0 ** -rank
    scores[scores == 0] = 1e-12
    return ga.TableDenoiser(len(JSON_TOKENS), mask_id=JSON_MASK, scores=lambda ids: np.tile(scores, (len(ids), 1)))


def test_impossible_proposals_are_rejected_and_proposed_again():
    vocab = json_vocab()
    compiled = ga.compile(ga.Grammar.builtin("json"), vocab)
    # '"b' is the favourite everywhere: a string opens at position 0, and at the others
    # '"b' (text after a closed string) and the rest are impossible until 'c"' closes it
    model = _stubborn([9, 0, 4, 1, 10])
    result = ga.diffusion_sample(model, compiled, 3, checker=ga.InfillChecker(compiled, budget_s=5.0))
    assert result.finished and result.rejected > 0
    assert result.text == b'"b[c"' and json.loads(result.text) == "b[c"


def test_rejection_budget_gives_an_incomplete_block_or_the_witness():
    vocab = json_vocab()
    compiled = ga.compile(ga.Grammar.builtin("json"), vocab)
    model = _stubborn([9, 0, 4, 1, 10])
    checker = ga.InfillChecker(compiled, budget_s=5.0)
    stopped = ga.diffusion_sample(model, compiled, 3, max_rejections=1, checker=checker)
    assert not stopped.finished and stopped.text is None and stopped.rejected == 1
    assert JSON_MASK in stopped.token_ids
    completed = ga.diffusion_sample(model, compiled, 3, max_rejections=1, witness=True, checker=checker)
    assert completed.witness and not completed.finished
    json.loads(completed.text)
    fixed = [vocab.token_to_bytes(t) for t in completed.token_ids if t not in (JSON_MASK, JSON_EOS)]
    at = 0
    for piece in fixed:  # the witness keeps the fixed tokens, in order
        at = completed.text.index(piece, at) + len(piece)


def test_bad_arguments_are_clear_errors():
    vocab = regex_vocab()
    compiled = ga.compile(ga.Grammar.from_regex("abcabc"), vocab)
    with pytest.raises(ga.InfillError, match="block must be"):
        ga.diffusion_sample(random_denoiser(len(REGEX_TOKENS), REGEX_MASK, 0), compiled, 0)
    with pytest.raises(ValueError, match="tokens but the grammar"):
        ga.diffusion_sample(random_denoiser(3, 2, 0), compiled, 2)
    with pytest.raises(ga.InfillError, match="outside the vocabulary"):
        ga.diffusion_sample(random_denoiser(len(REGEX_TOKENS), REGEX_MASK, 0), compiled, [REGEX_MASK, 99])
    with pytest.raises(ga.InfillError, match="fixed tokens are part of no sentence"):
        ga.diffusion_sample(random_denoiser(len(REGEX_TOKENS), REGEX_MASK, 0), compiled, [5, REGEX_MASK])
    with pytest.raises(ga.InfillError, match="outside the sequence"):
        InfillCandidates(compiled, vocab).at([REGEX_MASK], 3, REGEX_MASK)


def test_hf_denoiser_shift_and_decoding():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(JSON_TOKENS), hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
    model = transformers.BertForMaskedLM(config).eval()
    plain = ga.HFDenoiser(model, mask_id=JSON_MASK)
    shifted = ga.HFDenoiser(model, mask_id=JSON_MASK, shift=True)
    ids = [0, JSON_MASK, JSON_MASK, 1]
    a, b = plain.token_logprobs(ids), shifted.token_logprobs(ids)
    assert a.shape == (4, len(JSON_TOKENS)) and np.allclose(np.exp(a).sum(axis=1), 1.0)
    assert np.allclose(b[1:], a[:-1]) and np.allclose(b[0], a[0])
    vocab = json_vocab()
    compiled = ga.compile(ga.Grammar.builtin("json"), vocab)
    finished = 0
    for seed in range(6):  # a random model: only the checks make its blocks JSON
        result = ga.diffusion_sample(plain, compiled, 6, prompt_ids=[0], temperature=1.0, rng=seed)
        if result.finished:
            finished += 1
            json.loads(result.text)
        else:
            assert ga.InfillChecker(compiled).check_tokens(list(result.token_ids), vocab, JSON_MASK).completable
    assert finished >= 1


def test_multi_region_blocks_keep_their_fixed_tokens():
    vocab = json_vocab()
    compiled = ga.compile(ga.Grammar.builtin("json"), vocab)
    checker = ga.InfillChecker(compiled, budget_s=5.0)
    rng = random.Random(3)
    texts = [[0, 4, 6, 5, 6, 2, 8, 7, 12, 3, 1], [2, 8, 7, 0, 4, 1, 6, 9, 10, 7, 13, 4, 3]]  # [1,23,{"a":true}], ...
    for ids in texts:
        assert json.loads(vocab.decode_bytes(ids)) is not None  # (the texts themselves are JSON)
    finished = 0
    for seed in range(16):
        ids = list(rng.choice(texts))
        for _ in range(rng.randint(1, 3)):  # regions of 1-2 tokens removed
            start, width = rng.randrange(len(ids)), rng.randint(1, 2)
            ids[start:start + width] = [JSON_MASK] * len(ids[start:start + width])
        result = ga.diffusion_sample(random_denoiser(len(JSON_TOKENS), JSON_MASK, seed), compiled, ids, rng=seed,
                                     checker=checker)
        for position, token in enumerate(ids):
            if token != JSON_MASK:
                assert result.token_ids[position] == token
        if result.finished:
            finished += 1
            json.loads(result.text)
        else:  # masks no single token fills (a gap is read as any text): stopped, never invalid
            assert result.text is None and checker.check_tokens(list(result.token_ids), vocab, JSON_MASK).completable
    assert finished >= 4
