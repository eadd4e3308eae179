"""Token bitmasks as torch tensors, and applying them to logits on any device.

On CUDA, where Triton imports, the mask is applied by one fused kernel (``triton_ops``); elsewhere
by unpacking the bits to a boolean tensor and filling.
"""

from __future__ import annotations

import numpy as np

from ..errors import BitmaskError
from ..masking.bitmask import bitmask_width
from .extras import require

torch = require("torch", "hf")

_BIT_POSITIONS: dict[torch.device, torch.Tensor] = {}


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> torch.Tensor:
    """An int32 CPU tensor ``[batch_size, ceil(vocab_size/32)]`` with every token allowed.

    Fill rows with ``matcher.fill_next_token_bitmask(bitmask, row)``.
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    return torch.full((batch_size, bitmask_width(vocab_size)), -1, dtype=torch.int32)


def _bit_positions(device: torch.device) -> torch.Tensor:
    positions = _BIT_POSITIONS.get(device)
    if positions is None:
        positions = torch.arange(32, dtype=torch.int32, device=device)
        _BIT_POSITIONS[device] = positions
    return positions


def unpack_token_bitmask(bitmask: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Bool tensor ``[batch, vocab_size]`` (True = allowed) from a packed int32 bitmask."""
    if bitmask.device.type == "cpu":
        # numpy's unpackbits is several times faster than shifting 32 lanes in torch on CPU.
        raw = np.ascontiguousarray(bitmask.numpy()).view(np.uint8)
        bits = np.unpackbits(raw, axis=1, count=vocab_size, bitorder="little")
        return torch.from_numpy(bits.view(np.bool_))
    bits = (bitmask.unsqueeze(-1) >> _bit_positions(bitmask.device)) & 1
    return bits.reshape(bitmask.shape[0], -1)[:, :vocab_size].bool()


def apply_token_bitmask_inplace(logits: torch.Tensor, bitmask: torch.Tensor, *,
                                vocab_size: int | None = None, indices: "list[int] | torch.Tensor | None" = None) -> None:
    """Set the logits of forbidden tokens to -inf, in place.

    ``logits`` is ``[batch, width]`` (or ``[width]``) on any device; ``bitmask`` is
    ``[batch, words]`` int32 on any device. ``indices`` picks which logits rows to mask,
    row ``k`` of the bitmask going to logits row ``indices[k]`` (default: all rows, one
    bitmask row each). Logits columns beyond the bitmask (padding ids a model may have)
    are always forbidden. ``vocab_size``, when given, is checked against the logits width;
    without it, logits narrower than a token some row allows are refused (a column cannot be
    dropped silently: it may be EOS). A row that allows every token (as allocated, never
    filled) says nothing about the vocabulary's width and is let through.
    """
    if logits.dim() == 1:
        apply_token_bitmask_inplace(logits.unsqueeze(0), bitmask.reshape(1, -1), vocab_size=vocab_size,
                                    indices=None if indices is None else indices)
        return
    if logits.dim() != 2 or bitmask.dim() != 2:
        raise BitmaskError(f"logits must be [batch, vocab] and bitmask [batch, words]; got {tuple(logits.shape)} "
                           f"and {tuple(bitmask.shape)}")
    if bitmask.dtype != torch.int32:
        raise BitmaskError(f"bitmask must be int32, got {bitmask.dtype}")
    width = logits.shape[1]
    words = bitmask.shape[1]
    if vocab_size is not None and width < vocab_size:
        raise BitmaskError(f"logits width {width} is smaller than the vocabulary size {vocab_size}: build the "
                           "vocabulary with gramalign.vocabulary_for_model(tokenizer, model), whose size is the "
                           "model's logits width")
    if width <= 32 * (words - 1):
        raise BitmaskError(f"logits width {width} is smaller than the vocabulary the bitmask covers "
                           f"({words} words hold {32 * (words - 1) + 1}..{32 * words} tokens): build the vocabulary "
                           "with gramalign.vocabulary_for_model(tokenizer, model)")
    if vocab_size is None and width < 32 * words:  # with vocab_size the width was checked above
        _check_no_allowed_token_beyond(bitmask, width)
    if indices is None:
        if bitmask.shape[0] != logits.shape[0]:
            raise BitmaskError(f"bitmask has {bitmask.shape[0]} rows but logits have {logits.shape[0]}; "
                               "pass indices= to mask a subset of rows")
        rows = None
    else:
        rows = torch.as_tensor(indices, dtype=torch.long, device=logits.device)
        if rows.dim() != 1 or rows.shape[0] != bitmask.shape[0]:
            raise BitmaskError(f"indices must list one logits row per bitmask row ({bitmask.shape[0]}), "
                               f"got {tuple(rows.shape)}")
        if rows.numel() and (int(rows.min()) < -logits.shape[0] or int(rows.max()) >= logits.shape[0]):
            raise IndexError(f"indices out of range for {logits.shape[0]} logits rows")
    bitmask = bitmask.to(logits.device, non_blocking=True)
    if logits.device.type == "cuda" and logits.stride(1) == 1 and fused_bitmask_kernel() is not None:
        if rows is not None:
            rows = torch.where(rows < 0, rows + logits.shape[0], rows)
        fused_bitmask_kernel()(logits, bitmask, rows)
    else:
        apply_token_bitmask_unpacked(logits, bitmask, rows)


def apply_token_bitmask_unpacked(logits: torch.Tensor, bitmask: torch.Tensor, rows: "torch.Tensor | None") -> None:
    """The torch path of ``apply_token_bitmask_inplace``, unchecked: bits unpacked to a boolean
    tensor, then filled (``bitmask`` and ``rows`` on the logits' device)."""
    width = logits.shape[1]
    allowed = unpack_token_bitmask(bitmask, min(width, 32 * bitmask.shape[1]))
    if allowed.shape[1] < width:
        padding = torch.zeros(allowed.shape[0], width - allowed.shape[1], dtype=torch.bool, device=logits.device)
        allowed = torch.cat([allowed, padding], dim=1)
    if rows is None:
        logits.masked_fill_(~allowed, float("-inf"))
    else:
        logits[rows] = logits[rows].masked_fill(~allowed, float("-inf"))


_FUSED: list = []


def fused_bitmask_kernel():
    """``triton_ops.apply_token_bitmask_triton`` where Triton imports, else None (looked up once)."""
    if not _FUSED:
        try:
            from .triton_ops import apply_token_bitmask_triton
        except ImportError:
            apply_token_bitmask_triton = None
        _FUSED.append(apply_token_bitmask_triton)
    return _FUSED[0]


def _check_no_allowed_token_beyond(bitmask: torch.Tensor, width: int) -> None:
    """Raise if a row allows a token id >= ``width`` (only the last word can hold one: the
    caller has checked that the logits reach into it)."""
    beyond = (0xFFFFFFFF << (width % 32)) & 0xFFFFFFFF  # the bits of ids >= width in the last word
    last = bitmask[:, -1]
    offending = (last & (beyond - (1 << 32))) != 0  # as int32: the top bit is always among them
    if not bool(offending.any()):
        return
    unfilled = (bitmask == -1).all(dim=1)
    offending &= ~unfilled
    if bool(offending.any()):
        row = int(offending.nonzero()[0, 0])
        bits = int(last[row]) & 0xFFFFFFFF
        token = 32 * (bitmask.shape[1] - 1) + next(b for b in range(width % 32, 32) if bits >> b & 1)
        raise BitmaskError(f"bitmask row {row} allows token {token}, but the logits have only {width} columns: "
                           "they are narrower than the vocabulary the bitmask was filled for (pass the logits "
                           "of the whole vocabulary, or vocab_size= to check the width)")
