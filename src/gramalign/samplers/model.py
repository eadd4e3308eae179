"""The LanguageModel protocol the samplers drive, and TableModel, an explicit toy model.

A language model here is anything that maps token-id sequences to next-token
log-probabilities, batched, as float64 numpy. The samplers never see torch: the Hugging
Face adapter lives in ``gramalign.integrations.hf_model``.
"""

from __future__ import annotations

from typing import Callable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import ModelError


@runtime_checkable
class LanguageModel(Protocol):
    """Token ids -> next-token log-probabilities.

    ``next_token_logprobs(sequences)`` takes a batch of token-id sequences (prompt and
    generated tokens together) and returns a float64 array ``[len(sequences), vocab_size]``
    of log-probabilities (``-inf`` for impossible tokens). Adapters may keep state between
    calls (a KV cache) but must return the same numbers as a fresh call would.
    """

    vocab_size: int

    def next_token_logprobs(self, sequences: Sequence[Sequence[int]]) -> np.ndarray: ...


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax in float64 (``-inf`` logits stay ``-inf``)."""
    logits = np.asarray(logits, dtype=np.float64)
    top = np.max(logits, axis=-1, keepdims=True)
    if not np.all(np.isfinite(top)):
        raise ModelError("a row of logits has no finite entry (every token impossible, or NaN/+inf)")
    shifted = logits - top
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def checked_logprobs(model: LanguageModel, sequences: Sequence[Sequence[int]]) -> np.ndarray:
    """``model.next_token_logprobs(sequences)`` with its shape and values checked."""
    out = np.asarray(model.next_token_logprobs(sequences), dtype=np.float64)
    if out.shape != (len(sequences), model.vocab_size):
        raise ModelError(f"{type(model).__name__}.next_token_logprobs returned shape {out.shape}, "
                         f"expected ({len(sequences)}, {model.vocab_size})")
    if np.isnan(out).any() or (out > 1e-9).any():
        raise ModelError(f"{type(model).__name__}.next_token_logprobs returned NaN or positive log-probabilities")
    return out



def logprobs_along(model: LanguageModel, sequence: Sequence[int], count: int) -> np.ndarray:
    """The model's log-probabilities after each of the last ``count`` prefixes of ``sequence``
    (``[count, V]``): one forward pass where the model offers ``next_token_logprobs_along``
    (HFLanguageModel), else one batched call."""
    sequence = list(sequence)
    along = getattr(model, "next_token_logprobs_along", None)
    if along is not None:
        rows = np.asarray(along(sequence, count), dtype=np.float64)
        if rows.shape != (count, model.vocab_size) or np.isnan(rows).any():
            raise ModelError(f"{type(model).__name__}.next_token_logprobs_along returned shape {rows.shape}")
        return rows
    return checked_logprobs(model, [sequence[:len(sequence) - count + 1 + i] for i in range(count)])

class TableModel:
    """An explicit model: a function (or table) from a token-id prefix to a next-token distribution.

    ``distribution`` maps a tuple of token ids to a probability vector of length
    ``vocab_size`` (it is normalised here; zeros are allowed). A mapping must hold every
    prefix that will be queried; ``default`` (a vector) answers prefixes it lacks.

    >>> model = TableModel(3, {(): [0.5, 0.5, 0.0]}, default=[0.0, 0.0, 1.0])
    >>> np.exp(model.next_token_logprobs([[], [0]])).round(2).tolist()
    [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]
    """

    def __init__(self, vocab_size: int,
                 distribution: "Callable[[tuple[int, ...]], Sequence[float]] | Mapping[tuple[int, ...], Sequence[float]]",
                 *, default: "Sequence[float] | None" = None):
        if vocab_size <= 0:
            raise ValueError(f"vocab_size must be positive, got {vocab_size}")
        self.vocab_size = int(vocab_size)
        self._distribution = distribution
        self._default = None if default is None else self._normalised(default, "default")
        self._cache: dict[tuple[int, ...], np.ndarray] = {}
        self.num_calls = 0  # rows queried, for tests that count model work

    def _normalised(self, probs, where: object) -> np.ndarray:
        vector = np.asarray(probs, dtype=np.float64)
        if vector.shape != (self.vocab_size,):
            raise ModelError(f"distribution for {where!r} has shape {vector.shape}, expected ({self.vocab_size},)")
        if (vector < 0).any() or not np.isfinite(vector).all() or vector.sum() <= 0:
            raise ModelError(f"distribution for {where!r} must be finite, non-negative and not all zero")
        with np.errstate(divide="ignore"):
            return np.log(vector / vector.sum())

    def distribution(self, prefix: Sequence[int]) -> np.ndarray:
        """The normalised next-token probabilities after ``prefix``."""
        return np.exp(self._logprobs(tuple(int(t) for t in prefix)))

    def _logprobs(self, prefix: tuple[int, ...]) -> np.ndarray:
        cached = self._cache.get(prefix)
        if cached is not None:
            return cached
        source = self._distribution
        if callable(source):
            row = self._normalised(source(prefix), prefix)
        elif prefix in source:
            row = self._normalised(source[prefix], prefix)
        elif self._default is not None:
            row = self._default
        else:
            raise ModelError(f"TableModel has no distribution for prefix {prefix!r} and no default")
        self._cache[prefix] = row
        return row

    def next_token_logprobs(self, sequences: Sequence[Sequence[int]]) -> np.ndarray:
        """Float64 ``[batch, vocab_size]`` log-probabilities, one row per sequence."""
        self.num_calls += len(sequences)
        out = np.empty((len(sequences), self.vocab_size), dtype=np.float64)
        for row, sequence in enumerate(sequences):
            out[row] = self._logprobs(tuple(int(t) for t in sequence))
        return out
