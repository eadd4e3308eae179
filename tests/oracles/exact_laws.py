"""Exact distributions by enumeration on a toy model, the oracle of the sampler tests (and of
benchmarks/samplers_plot.py).

The toy is a TableModel over a few tokens with EOS forced at a fixed depth, so every complete
sequence can be listed with its model probability: the target law is the model conditioned
on the grammar, and masked sampling's output law is enumerated branch by branch. ``kl`` and
``empirical`` compare samples with them.
"""

from __future__ import annotations

import math

import numpy as np

import gramalign as ga
from gramalign.samplers import TableModel

TOKENS = [b"a", b"b", b"c", b"</s>"]
EOS = 3
MAX_DEPTH = 4


def distortion_case():
    """The GAD paper's shape: the model prefers 'a' first, but after 'a' the grammar's
    continuations are rare; after 'b' they are likely. Masked sampling follows 'a'."""
    vocab = ga.Vocabulary.from_token_bytes(TOKENS, eos_token_ids=[EOS])
    compiled = ga.compile(ga.Grammar.from_regex(r"a(c|cc)|b[ab]c?"), vocab)
    rng = np.random.default_rng(7)
    table = {}

    def distribution(prefix):
        if len(prefix) >= MAX_DEPTH:
            return [0, 0, 0, 1]
        if prefix == ():
            return [0.85, 0.15, 0.0, 0.0]
        if prefix == (0,):
            return [0.6, 0.38, 0.02, 0.0]  # after 'a', 'c' (the only grammatical step) is rare
        if prefix not in table:
            table[prefix] = rng.dirichlet(np.ones(4))
        return table[prefix]

    return vocab, compiled, TableModel(4, distribution)


def in_grammar(compiled, tokens):
    matcher = compiled.matcher()
    return all(matcher.try_accept_token(t) for t in tokens) and matcher.can_terminate()


def complete_sequences(model, prefix=()):
    """Every EOS-terminated sequence (EOS excluded) with its model probability."""
    probs = model.distribution(prefix)
    for token, p in enumerate(probs):
        if p == 0:
            continue
        if token == EOS:
            yield prefix, p
        else:
            for rest, q in complete_sequences(model, prefix + (token,)):
                yield rest, p * q


def target_distribution(model, compiled):
    weights = {seq: p for seq, p in complete_sequences(model) if in_grammar(compiled, seq)}
    total = sum(weights.values())
    return {seq: w / total for seq, w in weights.items()}, total


def masked_exact(model, compiled, prefix=(), matcher=None):
    """Masked sampling's exact output law, by walking every allowed branch."""
    matcher = matcher or compiled.matcher()
    probs = model.distribution(prefix)
    allowed = matcher.allowed_token_ids()
    z = probs[allowed].sum()
    out = {}
    for token in allowed:
        if probs[token] == 0:
            continue
        q = probs[token] / z
        if token == EOS:
            out[prefix] = out.get(prefix, 0) + q
            continue
        child = matcher.fork()
        child.accept_token(int(token))
        for seq, r in masked_exact(model, compiled, prefix + (int(token),), child).items():
            out[seq] = out.get(seq, 0) + q * r
    return out


def kl(q, target):
    """KL(q || target) for dicts of probabilities (q's support inside target's)."""
    return sum(p * math.log(p / target[s]) for s, p in q.items() if p > 0)


def empirical(samples, weights=None):
    counts = {}
    weights = np.ones(len(samples)) if weights is None else weights
    for seq, w in zip(samples, weights):
        counts[seq] = counts.get(seq, 0) + w
    total = sum(counts.values())
    return {s: c / total for s, c in counts.items()}
