"""The fused Triton bitmask kernel against the torch path of apply_token_bitmask_inplace.

Without a GPU the kernel runs in Triton's CPU interpreter (TRITON_INTERPRET=1, read when a kernel
is decorated, so the module is loaded afresh under that setting); where CUDA and Triton are both
present the same comparison also runs on the GPU through apply_token_bitmask_inplace's dispatch.
"""

import importlib.util

import numpy as np
import pytest
import torch

import gramalign as ga
from gramalign.errors import BitmaskError
from gramalign.masking.bitmask import pack_bool_mask

pytest.importorskip("triton")


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    """``apply_token_bitmask_triton`` from a fresh copy of triton_ops, its kernel interpreted."""
    import gramalign.integrations

    patch = pytest.MonkeyPatch()
    patch.setenv("TRITON_INTERPRET", "1")
    try:
        path = gramalign.integrations.__path__[0] + "/triton_ops.py"
        spec = importlib.util.spec_from_file_location("gramalign.integrations._triton_ops_interpreted", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        patch.undo()
    return module


def _case(seed, rows, vocab_size, width, density=0.5):
    rng = np.random.default_rng(seed)
    allowed = rng.random((rows, vocab_size)) < density
    allowed[rng.random(rows) < 0.2] = True  # rows that allow everything, as allocated
    bitmask = torch.from_numpy(np.stack([pack_bool_mask(a) for a in allowed])) if rows else \
        torch.zeros((0, ga.bitmask_width(vocab_size)), dtype=torch.int32)
    return bitmask, rng


def _torch_path(logits, bitmask, indices):
    expected = logits.clone()  # on the CPU: the torch path, whatever device the kernel ran on
    ga.apply_token_bitmask_inplace(expected.cpu(), bitmask.cpu(), indices=None if indices is None else indices.cpu())
    return expected


# vocabulary 70 in 75 columns: padding ids past the bitmask; 9,000 columns: three programs per row.
@pytest.mark.parametrize("vocab_size,width", [(70, 75), (64, 64), (9000, 9000), (8999, 9031)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_kernel_matches_torch_path_every_row(interpreted, vocab_size, width, dtype):
    bitmask, _ = _case(vocab_size + width, 4, vocab_size, width)
    logits = torch.randn(4, width).to(dtype)
    expected = _torch_path(logits, bitmask, None).cpu()
    interpreted.apply_token_bitmask_triton(logits, bitmask, None)
    assert torch.equal(logits, expected)
    assert bool(torch.isinf(logits).any())  # the case masks something


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_kernel_matches_torch_path_on_picked_rows_of_a_strided_batch(interpreted, index_dtype):
    vocab_size, width = 300, 320
    bitmask, rng = _case(1, 3, vocab_size, width)
    wide = torch.randn(6, width + 17)
    logits = wide[:, :width]  # rows strided by width + 17, as a slice of a larger buffer
    indices = torch.tensor([4, 0, 2], dtype=index_dtype)
    expected = _torch_path(logits.contiguous(), bitmask, indices.long())
    untouched = wide[:, width:].clone()
    interpreted.apply_token_bitmask_triton(logits, bitmask, indices)
    assert torch.equal(logits, expected)
    assert torch.equal(wide[:, width:], untouched)  # columns past the logits view are not written
    assert not torch.isinf(logits[[1, 3, 5]]).any()  # rows without a bitmask row are left alone


def test_kernel_with_no_rows_and_refuses_strided_columns(interpreted):
    logits = torch.randn(2, 64)
    before = logits.clone()
    interpreted.apply_token_bitmask_triton(logits, torch.zeros((0, 2), dtype=torch.int32), None)
    assert torch.equal(logits, before)
    with pytest.raises(BitmaskError, match="contiguous"):
        interpreted.apply_token_bitmask_triton(torch.randn(64, 2).t(), torch.zeros((2, 2), dtype=torch.int32), None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (the interpreter tests above run anywhere)")
@pytest.mark.parametrize("indices", [None, [3, -1, 0]])
def test_cuda_dispatch_matches_torch_path(indices):
    from gramalign.integrations.torch_ops import fused_bitmask_kernel

    assert fused_bitmask_kernel() is not None
    vocab_size, width = 128_256, 128_300
    rows = 5 if indices is None else len(indices)
    bitmask, _ = _case(7, rows, vocab_size, width)
    logits = torch.randn(5, width, dtype=torch.bfloat16)
    index = None if indices is None else torch.tensor(indices)
    expected = _torch_path(logits, bitmask, index)
    on_device = logits.cuda()
    ga.apply_token_bitmask_inplace(on_device, bitmask, indices=indices)
    assert torch.equal(on_device.cpu(), expected)
