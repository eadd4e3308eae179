"""The packed token bitmask, in the layout other engines use.

A bitmask is an int32 array of shape ``[batch, ceil(vocab_size / 32)]``; bit ``i`` of word
``j`` (little-endian bit order) is token ``32 * j + i``. A set bit means "allowed".
This module is numpy-only; the torch versions live in ``gramalign.integrations.torch_ops``
under the same names without ``_numpy`` (``allocate_token_bitmask``, ``unpack_token_bitmask``).
"""

from __future__ import annotations

import numpy as np

from ..tokens.vocabulary import bitmask_width  # there for Vocabulary.eos_bitmask: tokens never imports masking


def allocate_token_bitmask_numpy(batch_size: int, vocab_size: int) -> np.ndarray:
    """A ``[batch_size, ceil(vocab_size/32)]`` int32 bitmask with every token allowed."""
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    return np.full((batch_size, bitmask_width(vocab_size)), -1, dtype=np.int32)


def unpack_token_bitmask_numpy(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """Bool ``[batch, vocab_size]`` of allowed tokens from an int32 ``[batch, words]`` bitmask."""
    bits = np.unpackbits(np.ascontiguousarray(bitmask).view(np.uint8), axis=1, bitorder="little")
    return bits[:, :vocab_size].astype(bool)


def unpack_bitmask_row(row: np.ndarray, vocab_size: int) -> np.ndarray:
    """Bool array of length ``vocab_size`` from one bitmask row."""
    return unpack_token_bitmask_numpy(np.asarray(row)[None, :], vocab_size)[0]


def pack_bool_mask(allowed: np.ndarray) -> np.ndarray:
    """One int32 bitmask row from a bool array of allowed tokens."""
    allowed = np.asarray(allowed, dtype=bool)
    padded = np.zeros(bitmask_width(allowed.shape[0]) * 32, dtype=bool)
    padded[: allowed.shape[0]] = allowed
    return np.packbits(padded, bitorder="little").view(np.int32)


def as_numpy_bitmask(bitmask) -> np.ndarray:
    """View a numpy array or a CPU torch tensor as a 2-D int32 numpy array, without copying."""
    if isinstance(bitmask, np.ndarray):
        array = bitmask
    elif hasattr(bitmask, "numpy") and hasattr(bitmask, "device"):
        if bitmask.device.type != "cpu":
            raise ValueError(
                f"the bitmask must live on the CPU to be filled (got device {bitmask.device}); "
                "fill a CPU bitmask and copy it with .to(device, non_blocking=True)"
            )
        array = bitmask.numpy()
    else:
        raise TypeError(f"bitmask must be a numpy array or a torch tensor, got {type(bitmask).__name__}")
    if array.dtype != np.int32 or array.ndim not in (1, 2):
        raise ValueError(f"bitmask must be int32 of shape [batch, words] or [words], got {array.dtype} {array.shape}")
    if array.ndim == 1:
        array = array[None, :]
    return array
