"""Random walks drawn from a compiled grammar's masks, and the slow ways to replay them: the
valid token sequences of the draft and batch tests, a matcher fed token by token, one mask row,
and lockstep walks of two compiled grammars that must give the same masks."""

from __future__ import annotations

import numpy as np

import gramalign as ga
from gramalign.masking.compiler import CompiledGrammar

from oracles.brute_force_masks import brute_force_allowed


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


def valid_sequences(compiled: ga.CompiledGrammar, count: int, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    sequences = []
    for _ in range(count):
        tokens = []

        def pick(choices, rng, tokens=tokens):
            token = int(rng.choice(choices))
            tokens.append(token)
            return token

        matcher, _ = random_mask_walk(compiled, rng, steps=40, end_after=25, end_chance=0.1, pick=pick)
        if matcher.is_terminated():
            tokens.append(compiled.vocabulary.eos_token_ids[0])
        sequences.append(tokens)
    return sequences


def mask_row(matcher: ga.GrammarMatcher) -> np.ndarray:
    row = ga.allocate_token_bitmask_numpy(1, matcher.compiled.vocabulary.size)
    matcher.fill_next_token_bitmask(row, 0)
    return row[0]


def replay(compiled: ga.CompiledGrammar, tokens: list[int]) -> ga.GrammarMatcher:
    matcher = compiled.matcher()
    for token in tokens:
        matcher.accept_token(token)
    return matcher


def lockstep_walks(cached: CompiledGrammar, fresh: CompiledGrammar, seed: int, walks: int, steps: int) -> int:
    """Random walks drawn from the masks, asserting both grammars give the same mask at every
    step (and brute force agrees at a few); returns the number of masks compared."""
    rng = np.random.default_rng(seed)
    vocab = cached.vocabulary
    eos = set(vocab.eos_token_ids)
    compared = 0
    for walk in range(walks):
        a, b = cached.matcher(), fresh.matcher()
        text = b""
        for step in range(steps):
            got, expected = a.allowed_token_ids(), b.allowed_token_ids()
            assert np.array_equal(got, expected), text
            if step % 11 == 3:
                oracle = np.flatnonzero(brute_force_allowed(fresh, text))
                assert np.array_equal(got, oracle), text
            compared += 1
            choices = [t for t in got.tolist() if t not in eos]
            if not choices:
                break
            # Prefer tokens that stay in long lexemes (string bodies) now and then.
            token = int(rng.choice(choices))
            a.accept_token(token)
            b.accept_token(token)
            text += vocab.token_bytes[token]
    return compared
