"""Fill-in-the-middle: sample the middle of a text whose prefix and suffix are fixed, so that
``prefix + middle + suffix`` is a word of the grammar.

At each step the model gives ``p`` over the vocabulary for the next token of the middle.
A token ``t`` is *allowed* when the middle can still be completed to meet the suffix:
:meth:`InfillChecker.check <gramalign.InfillChecker.check>` of ``[prefix + middle + t, GAP,
suffix]`` is not ``"impossible"``; EOS (the middle ends here) when ``prefix + middle +
suffix`` is a sentence. The sampler's law is ``p`` restricted to the allowed tokens and
renormalised, at every step (the masked law of masked sampling, with this allowed set).

Checking every token of the vocabulary would cost one infilling check each, so the sampler
draws from ``p`` restricted to the matcher's mask (the tokens after which the text can still
become *some* sentence, a superset of the allowed ones), checks only what it draws, and
removes a rejected token and draws again: the first accepted draw has exactly the law above
(each draw is ``p`` on the tokens not yet rejected, and rejection only removes tokens outside
the allowed set). A check that is ``"undecided"`` (its time budget ran out) lets the token
through and is counted in the result, never silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import InfillError, StringRejected
from ..grammar.infill import GAP
from ..masking.bitmask import allocate_token_bitmask_numpy, unpack_token_bitmask_numpy
from ..masking.compiler import CompiledGrammar
from ..masking.infill import InfillChecker
from .masked import check_model_fits
from .model import LanguageModel, checked_logprobs


@dataclass(frozen=True)
class FimResult:
    """One sampled middle: its token ids (EOS excluded) and bytes, whether EOS ended it
    (``finished``; False when ``max_new_tokens`` ran out first), its log-probability under
    the unconstrained model (EOS included), the infilling checks made and how many of them
    were ``undecided`` (their tokens were let through)."""

    token_ids: tuple[int, ...]
    middle: bytes
    finished: bool
    logprob: float
    checks: int
    undecided: int


def _as_bytes(name: str, value) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise InfillError(f"{name} must be str or bytes, not {type(value).__name__}")


def fim_sample(model: LanguageModel, compiled: CompiledGrammar, prefix, suffix, *, prompt_ids: Sequence[int] = (),
               max_new_tokens: int = 64, rng: "np.random.Generator | int | None" = None,
               checker: "InfillChecker | None" = None) -> FimResult:
    """Sample the middle between ``prefix`` and ``suffix`` (str or bytes) token by token.

    ``model`` scores ``prompt_ids`` followed by the middle's tokens (the prompt is how the
    model sees the prefix and suffix, e.g. a FIM template; the grammar sees the bytes).
    ``checker`` (default: one for ``compiled`` with a 1 s budget per check) decides which
    tokens can still meet the suffix. Raises :class:`~gramalign.InfillError` when the
    prefix is not a prefix of any sentence, or when no middle can meet the suffix.

    >>> import gramalign as ga
    >>> vocab = ga.Vocabulary.from_token_bytes([b"1", b"+", b"2", b"<eos>"], eos_token_ids=[3])
    >>> compiled = ga.compile(ga.Grammar.from_regex(r"[12](\\+[12])*"), vocab)
    >>> model = ga.TableModel(4, lambda prefix: [0.25, 0.25, 0.25, 0.25])
    >>> result = fim_sample(model, compiled, "1+", "+2", rng=0)
    >>> result.finished and ga.Grammar.from_regex(r"[12](\\+[12])*").single_terminal().dfa.matches(
    ...     b"1+" + result.middle + b"+2")
    True
    """
    check_model_fits(model, compiled)
    prefix, suffix = _as_bytes("prefix", prefix), _as_bytes("suffix", suffix)
    rng = np.random.default_rng(rng)
    checker = checker if checker is not None else InfillChecker(compiled)
    vocabulary = compiled.vocabulary
    eos_ids = set(vocabulary.eos_token_ids)
    matcher = compiled.matcher()
    if not _accepts(matcher, prefix):
        raise InfillError(f"the prefix {prefix[:40]!r} is not the beginning of any sentence of the grammar")
    first = checker.check([prefix, GAP, suffix])
    checks, undecided = 1, int(first.status == "undecided")
    if first.impossible:
        raise InfillError(f"no middle puts the prefix {prefix[:40]!r} and the suffix {suffix[:40]!r} "
                          "into one sentence of the grammar")
    middle = b""
    tokens: list[int] = []
    logprob = 0.0
    bitmask = allocate_token_bitmask_numpy(1, vocabulary.size)
    prompt = [int(t) for t in prompt_ids]
    while len(tokens) < max_new_tokens:
        logprobs = checked_logprobs(model, [prompt + tokens])[0]
        matcher.fill_next_token_bitmask(bitmask, 0)
        viable = unpack_token_bitmask_numpy(bitmask, vocabulary.size)[0]
        viable[list(eos_ids)] = True  # the mask's EOS says "the text ends here"; the middle's, "the suffix follows"
        weights = np.where(viable, np.exp(logprobs), 0.0)
        while True:
            total = weights.sum()
            if not total > 0:
                raise InfillError(f"no token the model can produce continues the middle {middle[-40:]!r} towards "
                                  f"the suffix (checks made: {checks})")
            token = int(rng.choice(len(weights), p=weights / total))
            if token in eos_ids:
                ends = matcher.fork()
                verdict = _accepts(ends, suffix) and ends.can_terminate()
            else:
                data = vocabulary.token_bytes[token]
                result = checker.check([prefix + middle + data, GAP, suffix])
                checks += 1
                undecided += result.status == "undecided"
                verdict = not result.impossible
            if verdict:
                break
            weights[token] = 0.0  # rejected: outside the allowed set, drawn again from the rest
        logprob += float(logprobs[token])
        if token in eos_ids:
            return FimResult(tuple(tokens), middle, True, logprob, checks, undecided)
        matcher.accept_token(token)
        middle += vocabulary.token_bytes[token]
        tokens.append(token)
    return FimResult(tuple(tokens), middle, False, logprob, checks, undecided)


def _accepts(matcher, data: bytes) -> bool:
    """Feed ``data`` to ``matcher``; False (state unchanged) when it is rejected."""
    try:
        matcher.accept_string(data)
    except StringRejected:
        return False
    return True
