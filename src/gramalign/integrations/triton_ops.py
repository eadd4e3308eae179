"""The token bitmask applied to logits by one fused Triton kernel (CUDA, or Triton's interpreter).

``apply_token_bitmask_inplace`` dispatches here for CUDA logits where Triton imports. The torch
path unpacks every bit into a boolean ``[rows, width]`` tensor, pads it, gathers the rows and
scatters them back (several launches and passes over the logits); this kernel reads each row's
packed words and writes ``-inf`` only where a token is forbidden, in one launch, rows picked by
an index tensor that stays on the device.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..errors import BitmaskError

__all__ = ["apply_token_bitmask_triton"]

# Columns per program: large enough that a 128k-token row is a few dozen programs, small enough
# that a handful of rows still spreads over every streaming multiprocessor.
BLOCK_SIZE = 4096


@triton.jit
def _apply_bitmask_kernel(logits_ptr, bitmask_ptr, indices_ptr, width, words, logits_stride, bitmask_stride,
                          HAS_INDICES: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    columns = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    target = row
    if HAS_INDICES:
        target = tl.load(indices_ptr + row)
    word_index = columns >> 5
    # Words past the bitmask (padding ids of the model) read as 0: forbidden.
    packed = tl.load(bitmask_ptr + row * bitmask_stride + word_index, mask=word_index < words, other=0)
    allowed = (packed >> (columns & 31)) & 1
    forbidden = (columns < width) & (allowed == 0)
    tl.store(logits_ptr + target.to(tl.int64) * logits_stride + columns, float("-inf"), mask=forbidden)


def apply_token_bitmask_triton(logits: torch.Tensor, bitmask: torch.Tensor, indices: "torch.Tensor | None") -> None:
    """Forbidden logits to -inf in place: bitmask row ``k`` masks logits row ``indices[k]`` (row
    ``k`` without indices). The caller has checked shapes and dtypes; ``bitmask`` and ``indices``
    (non-negative row numbers) are on the logits' device."""
    rows = bitmask.shape[0]
    width = logits.shape[1]
    if rows == 0 or width == 0:
        return
    if logits.stride(1) != 1:
        raise BitmaskError("the fused bitmask kernel needs logits whose columns are contiguous")
    bitmask = bitmask if bitmask.stride(1) == 1 else bitmask.contiguous()
    has_indices = indices is not None
    grid = (rows, triton.cdiv(width, BLOCK_SIZE))
    _apply_bitmask_kernel[grid](logits, bitmask, indices if has_indices else bitmask, width, bitmask.shape[1],
                                logits.stride(0), bitmask.stride(0), HAS_INDICES=has_indices, BLOCK=BLOCK_SIZE)
