"""ASAp (Park et al. 2024, "Grammar-Aligned Decoding"): sampling whose output distribution
converges to the model's distribution conditioned on the grammar.

The target is ``P(x | grammar) ∝ P(x) [x in grammar]``. Its exact next-token law after a
prefix ``w`` is ``P(v|w) EFG(wv) / EFG(w)``, where the expected future grammaticality
``EFG(w) = sum_v P(v|w) EFG(wv)`` is the probability that the model, continuing ``w``,
produces a string of the grammar (``EFG = 1`` once EOS ends a complete string). EFG is
unknown, so ASAp keeps an *over-approximation* in a trie of the prefixes it has sampled:
an unexplored child counts as 1 if the grammar mask allows it and 0 otherwise, and after
every sample the estimates along its path are recomputed bottom-up from the model's raw
probabilities, ``EFG_hat(w) = sum over allowed v of P(v|w) EFG_hat(wv)``. Each estimate
only decreases and stays >= the true EFG; on the explored part of the trie it becomes
exact, so the sampling distribution converges to the target. The first sample is
exactly masked sampling.

The trie stores, per visited prefix, the allowed probability mass, the current estimate
and the raw probability of each visited child, so it is small; it can be saved to JSON
and loaded to continue.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..masking.bitmask import allocate_token_bitmask_numpy, unpack_token_bitmask_numpy
from ..masking.compiler import CompiledGrammar
from ..masking.gc_guard import gc_paused
from ..errors import SamplingError
from .masked import check_model_fits
from .model import LanguageModel, checked_logprobs
from .result import Sample

_FORMAT = "gramalign-asap-trie"


@dataclass
class _Node:
    allowed_mass: float  # P(allowed next token | prefix)
    estimate: float  # EFG_hat(prefix), an upper bound on EFG(prefix)
    child_probs: dict[int, float] = field(default_factory=dict)  # P(v | prefix) for visited v


class ASApSampler:
    """Grammar-aligned sampling from ``model`` under ``compiled``, learning as it samples.

    Every call of :meth:`sample` draws one sequence and tightens the trie; keep one
    sampler per (model, grammar, prompt) and draw many samples from it.
    """

    def __init__(self, model: LanguageModel, compiled: CompiledGrammar, *, prompt_ids: Sequence[int] = ()):
        check_model_fits(model, compiled)
        self.model = model
        self.compiled = compiled
        self.prompt_ids = tuple(int(t) for t in prompt_ids)
        self._nodes: dict[tuple[int, ...], _Node] = {}
        self._eos_ids = set(compiled.vocabulary.eos_token_ids)
        self._bitmask = allocate_token_bitmask_numpy(1, compiled.vocabulary.size)

    @property
    def num_nodes(self) -> int:
        """How many prefixes the trie holds."""
        return len(self._nodes)

    def grammatical_mass_bound(self) -> float:
        """The current upper bound on P(the model produces a string of the grammar)."""
        root = self._nodes.get(())
        return 1.0 if root is None else root.estimate

    def _child_estimate(self, prefix: tuple[int, ...], token: int) -> float:
        if token in self._eos_ids:
            return 1.0  # EOS is allowed only where the text is complete
        child = self._nodes.get(prefix + (token,))
        return 1.0 if child is None else child.estimate

    def _recompute(self, prefix: tuple[int, ...]) -> None:
        node = self._nodes[prefix]
        if node.allowed_mass == 0:
            node.estimate = 0.0
            return
        lost = sum(prob * (1.0 - self._child_estimate(prefix, token)) for token, prob in node.child_probs.items())
        node.estimate = min(node.estimate, max(node.allowed_mass - lost, 0.0))

    def sample(self, *, max_new_tokens: int = 256, rng: "np.random.Generator | int | None" = None) -> Sample:
        """One sequence; afterwards the trie's estimates along its path are tightened."""
        rng = np.random.default_rng(rng)
        while True:
            sample = self._sample_once(max_new_tokens, rng)
            if sample is not None:
                return sample
            if self.grammatical_mass_bound() == 0:
                raise SamplingError("the model gives probability zero to every string of the grammar")

    def _sample_once(self, max_new_tokens: int, rng: np.random.Generator) -> "Sample | None":
        matcher = self.compiled.matcher()
        prefix: tuple[int, ...] = ()
        path = [prefix]
        logprob = 0.0
        finished = False
        for _ in range(max_new_tokens):
            logprobs = checked_logprobs(self.model, [self.prompt_ids + prefix])[0]
            probs = np.exp(logprobs)
            with gc_paused:  # no garbage collection inside the fill (gramalign.masking.gc_guard)
                matcher.fill_next_token_bitmask(self._bitmask, 0)
            allowed = unpack_token_bitmask_numpy(self._bitmask, len(probs))[0]
            weights = np.where(allowed, probs, 0.0)
            node = self._nodes.get(prefix)
            if node is None:
                mass = float(weights.sum())
                node = self._nodes[prefix] = _Node(mass, mass)
            for token in node.child_probs:
                weights[token] *= self._child_estimate(prefix, token)
            total = weights.sum()
            if total <= 0:  # a dead end the estimates did not know about yet
                node.allowed_mass = 0.0
                self._update(path)
                return None
            token = int(min(np.searchsorted(np.cumsum(weights), rng.random() * total, side="right"),
                            len(weights) - 1))
            node.child_probs[token] = float(probs[token])
            with gc_paused:
                matcher.accept_token(token)
            logprob += float(logprobs[token])
            if token in self._eos_ids:
                finished = True
                break
            prefix = prefix + (token,)
            path.append(prefix)
        self._update(path)
        return Sample(prefix, finished, logprob)

    def _update(self, path: list[tuple[int, ...]]) -> None:
        for prefix in reversed(path):
            if prefix in self._nodes:
                self._recompute(prefix)

    # -- persistence -------------------------------------------------------------------

    def save(self, path: "str | Path") -> None:
        """Write the trie as JSON (floats round-trip exactly)."""
        nodes = [[list(prefix), node.allowed_mass, node.estimate,
                  [[token, prob] for token, prob in node.child_probs.items()]]
                 for prefix, node in self._nodes.items()]
        document = {"format": _FORMAT, "version": 1, "vocabulary": self.compiled.vocabulary.fingerprint,
                    "prompt_ids": list(self.prompt_ids), "nodes": nodes}
        Path(path).write_text(json.dumps(document))

    @classmethod
    def load(cls, path: "str | Path", model: LanguageModel, compiled: CompiledGrammar) -> "ASApSampler":
        """A sampler that continues from a trie written by :meth:`save`."""
        try:
            document = json.loads(Path(path).read_text())
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not an ASAp trie file (invalid JSON: {error})") from None
        if not isinstance(document, dict) or document.get("format") != _FORMAT or document.get("version") != 1:
            raise ValueError(f"{path}: not an ASAp trie file (format {_FORMAT!r} version 1 expected)")
        if document["vocabulary"] != compiled.vocabulary.fingerprint:
            raise ValueError(f"{path}: the trie was built with another vocabulary than the grammar's")
        sampler = cls(model, compiled, prompt_ids=document["prompt_ids"])
        for prefix, allowed_mass, estimate, children in document["nodes"]:
            sampler._nodes[tuple(prefix)] = _Node(float(allowed_mass), float(estimate),
                                                  {int(token): float(prob) for token, prob in children})
        return sampler
