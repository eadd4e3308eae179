"""Constrained decoding of masked diffusion language models (LLaDA, Dream, DiffuCoder).

A masked diffusion model starts from a block of mask tokens and unmasks them in any order,
one or more per denoising step, scoring every position at once. :func:`diffusion_sample`
follows the loop of "Constrained Decoding of Diffusion LLMs with Context-Free Grammars"
(Mündler et al., 2025): at each step it proposes the most confident masked position and its
token, asks the infilling check whether the sequence, the proposal set and the other masks
as gaps, can still become a sentence, and on ``impossible`` removes that (position, token)
and proposes again. After ``max_rejections`` rejections it stops with an incomplete result,
or, with ``witness=True``, completes the text with the check's witness.

Two exact shortcuts keep checks few, each removing only tokens the check would call
impossible: the per-position filter of :class:`~gramalign.masking.infill_candidates.InfillCandidates`
(byte pairs against the fixed neighbours, EOS rules), and at the leftmost masked position,
whose left side is all fixed, the grammar's own token mask after that prefix.

>>> import gramalign as ga
>>> vocab = ga.Vocabulary.from_token_bytes([b"1", b"+", b"2", b"<eos>", b"<mask>"], eos_token_ids=[3])
>>> compiled = ga.compile(ga.Grammar.from_regex(r"[12](\\+[12])*"), vocab)
>>> model = ga.TableDenoiser(5, mask_id=4, scores=lambda ids: np.ones((len(ids), 5)))
>>> result = ga.diffusion_sample(model, compiled, 5, rng=0)
>>> result.finished, compiled.grammar.single_terminal().dfa.matches(result.text)
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import InfillError, ModelError
from ..masking.bitmask import allocate_token_bitmask_numpy, unpack_token_bitmask_numpy
from ..masking.compiler import CompiledGrammar
from ..masking.infill import InfillChecker
from ..masking.infill_candidates import InfillCandidates
from .model import log_softmax

__all__ = ["DenoisingModel", "DiffusionResult", "TableDenoiser", "diffusion_sample"]


@runtime_checkable
class DenoisingModel(Protocol):
    """A masked diffusion model: ``token_logprobs(ids)`` takes one sequence (prompt and
    block, masks as ``mask_id``) and returns float64 ``[len(ids), vocab_size]``: at each
    position, the log-probabilities of the token that belongs there (Dream-style models,
    which predict position ``i`` from the output at ``i - 1``, are shifted by their adapter)."""

    vocab_size: int
    mask_id: int

    def token_logprobs(self, ids: Sequence[int]) -> np.ndarray: ...


class TableDenoiser:
    """A toy denoiser over a small vocabulary: ``scores(ids)`` gives unnormalised
    non-negative scores ``[len(ids), vocab_size]`` (a callable of the whole sequence, so a
    test can make positions depend on each other). For tests and examples."""

    def __init__(self, vocab_size: int, *, mask_id: int, scores: Callable[[tuple[int, ...]], np.ndarray]):
        self.vocab_size = int(vocab_size)
        self.mask_id = int(mask_id)
        self._scores = scores
        self.num_calls = 0

    def token_logprobs(self, ids: Sequence[int]) -> np.ndarray:
        self.num_calls += 1
        scores = np.asarray(self._scores(tuple(int(t) for t in ids)), dtype=np.float64)
        if scores.shape != (len(ids), self.vocab_size) or (scores < 0).any() or not np.isfinite(scores).all():
            raise ModelError(f"TableDenoiser scores must be finite, non-negative, of shape ({len(ids)}, "
                             f"{self.vocab_size}); got shape {scores.shape}")
        with np.errstate(divide="ignore"):
            return log_softmax(np.log(scores))


@dataclass(frozen=True)
class DiffusionResult:
    """One decoded block: ``token_ids`` (``mask_id`` where still masked), whether every
    position was filled (``finished``), ``text`` (the bytes before the first EOS when
    finished; the check's witness when ``witness`` is True; else None), the denoising
    ``steps`` (model calls), the infilling ``checks`` made, the proposals ``rejected``, and
    the checks that were ``undecided`` (their proposals were let through)."""

    token_ids: tuple[int, ...]
    finished: bool
    text: "bytes | None"
    steps: int
    checks: int
    rejected: int
    undecided: int
    witness: bool = False


def diffusion_sample(model: DenoisingModel, compiled: CompiledGrammar, block: "int | Sequence[int]", *,
                     prompt_ids: Sequence[int] = (), temperature: float = 0.0,
                     max_rejections: int = 1000, witness: bool = False,
                     rng: "np.random.Generator | int | None" = None,
                     checker: "InfillChecker | None" = None,
                     candidates: "InfillCandidates | None" = None) -> DiffusionResult:
    """Decode ``block`` after ``prompt_ids`` one token per step (see the module docstring):
    ``block`` is a number of masks, or token ids with ``model.mask_id`` where tokens are to
    be decoded (multi-region infilling: the other ids stay). The block is the grammar's
    whole text: it ends at its first EOS, and the positions after it become EOS.
    ``temperature`` 0 takes the most likely token at the most confident position; above 0
    the token there is drawn from the model's distribution at that temperature (restricted
    to tokens not ruled out). ``checker`` (default: one for ``compiled``, 1 s per check) and
    ``candidates`` may be shared across calls.

    The check reads each remaining mask as a gap of any length, as the paper does, so a
    block can keep masks that no single token fills (a short block, a small vocabulary):
    the sampler then runs out of proposals and returns the incomplete block (or the
    witness), never a text outside the grammar."""
    if model.vocab_size != compiled.vocabulary.size:
        raise ValueError(f"the model has {model.vocab_size} tokens but the grammar was compiled for a vocabulary "
                         f"of {compiled.vocabulary.size}")
    mask_id = int(model.mask_id)
    if isinstance(block, bool) or (isinstance(block, int) and block < 1):
        raise InfillError(f"block must be a positive number of masks or a sequence of token ids, not {block!r}")
    block = [mask_id] * block if isinstance(block, int) else [int(t) for t in block]
    if not block:
        raise InfillError("block holds no token ids")
    length = len(block)
    if not 0 <= temperature < float("inf"):
        raise InfillError(f"temperature must be 0 or more, not {temperature!r}")
    vocabulary = compiled.vocabulary
    outside = [t for t in block if t != mask_id and not 0 <= t < vocabulary.size]
    if outside:
        raise InfillError(f"token id {outside[0]} of the block is outside the vocabulary (size {vocabulary.size})")
    rng = np.random.default_rng(rng)
    checker = checker if checker is not None else InfillChecker(compiled)
    candidates = candidates if candidates is not None else InfillCandidates(compiled, vocabulary)
    eos_ids = sorted(vocabulary.eos_token_ids)
    usable = vocabulary.grammar_token_mask.copy()
    usable[eos_ids] = True
    if 0 <= mask_id < vocabulary.size:
        usable[mask_id] = False
    prompt = [int(t) for t in prompt_ids]
    checks = rejected = undecided = steps = 0
    if any(t != mask_id for t in block):
        first = checker.check_tokens(block, vocabulary, mask_id)
        checks, undecided = 1, int(first.status == "undecided")
        if first.impossible:
            why = first.reason or "no filling of its masks completes them"
            raise InfillError(f"the block's fixed tokens are part of no sentence of the grammar ({why})")
    prefix = _Prefix(compiled)
    while mask_id in block:
        steps += 1
        logprobs = np.asarray(model.token_logprobs(prompt + block), dtype=np.float64)
        if logprobs.shape != (len(prompt) + length, vocabulary.size) or np.isnan(logprobs).any():
            raise ModelError(f"{type(model).__name__}.token_logprobs returned shape {logprobs.shape}, expected "
                             f"({len(prompt) + length}, {vocabulary.size})")
        rows = logprobs[len(prompt):].copy()
        filters = candidates.masked(block, mask_id)
        masked = list(filters)
        leftmost = prefix.extend(block, mask_id)
        for p, row in filters.items():
            allowed = usable & row
            if p == leftmost and prefix.mask is not None:
                allowed &= prefix.mask
            rows[p, ~allowed] = -np.inf
        while True:
            position, token = _propose(rows, masked, temperature, rng)
            if position is None:
                return _incomplete(block, witness, checker, vocabulary, mask_id, steps, checks, rejected, undecided)
            trial = block.copy()
            trial[position] = token
            if token in vocabulary.eos_token_ids:  # the text ends: the rest of the block is EOS
                trial[position:] = [token] * (length - position)
            verdict = checker.check_tokens(trial, vocabulary, mask_id)
            checks += 1
            if not verdict.impossible:
                undecided += verdict.status == "undecided"
                block = trial
                break
            rows[position, token] = -np.inf
            rejected += 1
            if rejected >= max_rejections:
                return _incomplete(block, witness, checker, vocabulary, mask_id, steps, checks, rejected, undecided)
    eos = next((p for p, t in enumerate(block) if t in vocabulary.eos_token_ids), length)
    return DiffusionResult(tuple(block), True, vocabulary.decode_bytes(block[:eos]), steps, checks, rejected,
                           undecided)


def _propose(rows: np.ndarray, masked: list[int], temperature: float, rng) -> "tuple[int | None, int]":
    """The most confident masked position (its best remaining token's probability) and its
    token (the best, or drawn at ``temperature``); (None, -1) when none is left."""
    best = rows[masked].max(axis=1)
    if not np.isfinite(best).any():
        return None, -1
    position = masked[int(np.argmax(best))]
    row = rows[position]
    if temperature == 0:
        return position, int(np.argmax(row))
    scaled = np.where(np.isfinite(row), row / temperature, -np.inf)
    weights = np.exp(scaled - scaled.max())
    return position, int(rng.choice(len(row), p=weights / weights.sum()))


def _incomplete(block, witness, checker, vocabulary, mask_id, steps, checks, rejected, undecided) -> DiffusionResult:
    """The block as it stands (masks left), with the check's witness as ``text`` if asked."""
    if not witness:
        return DiffusionResult(tuple(block), False, None, steps, checks, rejected, undecided)
    verdict = checker.check_tokens(block, vocabulary, mask_id)
    checks += 1
    text = verdict.text if verdict.completable else None
    return DiffusionResult(tuple(block), False, text, steps, checks, rejected,
                           undecided + (verdict.status == "undecided"), witness=text is not None)


class _Prefix:
    """A matcher over the block's fixed prefix (up to its first mask or EOS), grown as
    positions are filled; ``mask`` is the grammar's token mask after it (None where the
    prefix is not one the matcher accepts: a proposal an ``undecided`` check let through)."""

    def __init__(self, compiled: CompiledGrammar):
        self.matcher = compiled.matcher()
        self.vocabulary = compiled.vocabulary
        self.length = 0
        self.mask: "np.ndarray | None" = None
        self._bitmask = allocate_token_bitmask_numpy(1, compiled.vocabulary.size)
        self._broken = False

    def extend(self, block: list[int], mask_id: int) -> int:
        """Feed the newly fixed prefix tokens; the leftmost masked position (or -1)."""
        eos = self.vocabulary.eos_token_ids
        while self.length < len(block) and block[self.length] != mask_id and block[self.length] not in eos:
            if not self._broken and not self.matcher.try_accept_token(block[self.length]):
                self._broken = True
            self.length += 1
        if self.length == len(block) or block[self.length] != mask_id:
            self.mask = None
            return -1
        if self._broken:
            self.mask = None
        else:
            self.matcher.fill_next_token_bitmask(self._bitmask, 0)
            self.mask = unpack_token_bitmask_numpy(self._bitmask, self.vocabulary.size)[0]
        return self.length
