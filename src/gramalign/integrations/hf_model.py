"""HFLanguageModel: a Hugging Face causal LM behind the samplers' LanguageModel protocol."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .extras import require

torch = require("torch", "hf")


class HFLanguageModel:
    """Next-token log-probabilities from a transformers causal LM, reusing its KV cache.

    When every sequence of a call extends a sequence of the previous call by the same
    number of tokens (the usual case: each step adds one token; SMC resampling reorders or
    duplicates rows), only the new tokens are run, on the cache reordered to match.
    Otherwise the call runs the full sequences (rows of different lengths one by one).
    """

    def __init__(self, model, *, vocab_size: "int | None" = None):
        self.model = model
        width = model.get_output_embeddings().weight.shape[0]
        self.vocab_size = int(vocab_size if vocab_size is not None else width)
        self._cache = None
        self._rows: dict[tuple[int, ...], int] = {}
        self._length = -1
        self.reused_calls = 0  # calls answered from the cache, for tests and benchmarks

    def reset(self) -> None:
        """Drop the KV cache."""
        self._cache, self._rows, self._length = None, {}, -1

    @torch.no_grad()
    def next_token_logprobs(self, sequences: Sequence[Sequence[int]]) -> np.ndarray:
        """Float64 ``[batch, vocab_size]`` log-probabilities after each sequence."""
        rows = [tuple(int(t) for t in s) for s in sequences]
        lengths = {len(r) for r in rows}
        if 0 in lengths:
            raise ValueError("every sequence needs at least one token (a prompt or BOS)")
        if len(lengths) != 1:
            self.reset()
            return np.concatenate([self.next_token_logprobs([r]) for r in rows])
        length = lengths.pop()
        if len(rows) == 1:
            return self.next_token_logprobs_along(rows[0], 1)
        logits = None
        if self._cache is not None and self._length < length:
            ancestors = [self._rows.get(r[: self._length]) for r in rows]
            if all(a is not None for a in ancestors):
                cache = self._cache
                if ancestors != list(range(len(self._rows))):
                    cache.batch_select_indices(torch.tensor(ancestors))
                new = torch.tensor([r[self._length:] for r in rows])
                out = self.model(input_ids=new, past_key_values=cache, use_cache=True)
                logits, self._cache = out.logits[:, -1], out.past_key_values
                self.reused_calls += 1
        if logits is None:
            out = self.model(input_ids=torch.tensor(rows), use_cache=True)
            logits, self._cache = out.logits[:, -1], out.past_key_values
        self._rows = {r: i for i, r in enumerate(rows)}
        self._length = length
        logprobs = torch.log_softmax(logits[:, : self.vocab_size].double(), dim=-1)
        return logprobs.cpu().numpy()

    @torch.no_grad()
    def next_token_logprobs_along(self, sequence: Sequence[int], num_positions: int) -> np.ndarray:
        """Float64 ``[num_positions, vocab_size]``: the log-probabilities after each of the last
        ``num_positions`` prefixes of ``sequence`` (the last one is ``sequence`` itself), from
        one forward pass. Speculative decoding scores a draft this way. The cache of the
        previous single-sequence call is cropped to the common prefix and reused, so a
        draft that was partly refused costs only the tokens after the divergence.
        """
        row = tuple(int(t) for t in sequence)
        if not 1 <= num_positions <= len(row):
            raise ValueError(f"num_positions must be in 1..{len(row)}, got {num_positions}")
        keep = 0
        if self._cache is not None and len(self._rows) == 1:
            cached = next(iter(self._rows))
            limit = min(len(cached), len(row) - num_positions)
            while keep < limit and cached[keep] == row[keep]:
                keep += 1
        if keep > 0:
            self._cache.crop(keep)
            out = self.model(input_ids=torch.tensor([row[keep:]]), past_key_values=self._cache, use_cache=True)
            self.reused_calls += 1
        else:
            out = self.model(input_ids=torch.tensor([row]), use_cache=True)
        self._cache = out.past_key_values
        self._rows, self._length = {row: 0}, len(row)
        logits = out.logits[0, -num_positions:, : self.vocab_size]
        return torch.log_softmax(logits.double(), dim=-1).cpu().numpy()



class HFDenoiser:
    """A transformers masked-LM style denoiser (LLaDA, Dream, a ``...ForMaskedLM``) behind
    the samplers' :class:`~gramalign.samplers.diffusion.DenoisingModel` protocol: one forward
    pass over the whole sequence (bidirectional attention, no cache) gives each position's
    token log-probabilities. ``mask_id`` is the model's mask token. ``shift=True`` is for
    models trained as Dream is, whose output at position ``i - 1`` predicts the token at
    ``i``: the logits move one position right (position 0 keeps its own).

    >>> import torch, transformers
    >>> config = transformers.BertConfig(vocab_size=12, hidden_size=8, num_hidden_layers=1,
    ...                                  num_attention_heads=2, intermediate_size=16)
    >>> denoiser = HFDenoiser(transformers.BertForMaskedLM(config).eval(), mask_id=11)
    >>> denoiser.token_logprobs([1, 11, 11]).shape
    (3, 12)
    """

    def __init__(self, model, *, mask_id: int, shift: bool = False, vocab_size: "int | None" = None):
        self.model = model
        width = model.get_output_embeddings().weight.shape[0]
        self.vocab_size = int(vocab_size if vocab_size is not None else width)
        self.mask_id = int(mask_id)
        self.shift = bool(shift)

    @torch.no_grad()
    def token_logprobs(self, ids: Sequence[int]) -> np.ndarray:
        """Float64 ``[len(ids), vocab_size]``: each position's token log-probabilities."""
        row = [int(t) for t in ids]
        if not row:
            raise ValueError("the sequence is empty")
        logits = self.model(input_ids=torch.tensor([row])).logits[0, :, : self.vocab_size]
        if self.shift:
            logits = torch.cat([logits[:1], logits[:-1]], dim=0)
        return torch.log_softmax(logits.double(), dim=-1).cpu().numpy()
