"""Bitmask layout and logits masking, checked against explicit per-token loops."""

import numpy as np
import pytest
import torch

import gramalign as ga
from gramalign.masking.bitmask import as_numpy_bitmask, pack_bool_mask, unpack_bitmask_row


@pytest.mark.parametrize("vocab_size", [1, 31, 32, 33, 1000, 50257])
def test_pack_unpack_roundtrip_and_layout(vocab_size):
    rng = np.random.default_rng(vocab_size)
    allowed = rng.random(vocab_size) < 0.3
    row = pack_bool_mask(allowed)
    assert row.dtype == np.int32 and row.shape == (ga.bitmask_width(vocab_size),)
    words = row.view(np.uint32)
    for token in range(vocab_size):  # bit i of word j is token 32*j+i
        assert bool((int(words[token // 32]) >> (token % 32)) & 1) == allowed[token]
    assert np.array_equal(unpack_bitmask_row(row, vocab_size), allowed)
    # the numpy and torch unpackers, named alike, read the same bits
    packed = np.stack([row, ~row])
    both = np.stack([allowed, ~allowed])
    assert np.array_equal(ga.unpack_token_bitmask_numpy(packed, vocab_size), both)
    assert np.array_equal(ga.unpack_token_bitmask(torch.from_numpy(packed), vocab_size).numpy(), both)


def test_allocate_shapes_and_all_allowed():
    bitmask = ga.allocate_token_bitmask(3, 100)
    assert bitmask.dtype == torch.int32 and tuple(bitmask.shape) == (3, 4)
    assert bool((bitmask == -1).all())
    assert ga.allocate_token_bitmask_numpy(2, 64).shape == (2, 2)
    with pytest.raises(ValueError):
        ga.allocate_token_bitmask(0, 10)


def _reference_apply(logits, allowed_rows, rows):
    expected = logits.clone()
    for k, row in enumerate(rows):
        for token in range(logits.shape[1]):
            if token >= allowed_rows.shape[1] or not allowed_rows[k, token]:
                expected[row, token] = float("-inf")
    return expected


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_apply_token_bitmask_matches_reference(dtype):
    rng = np.random.default_rng(0)
    vocab_size, width, batch = 70, 75, 3  # logits wider than the vocabulary: padding ids
    allowed = rng.random((batch, vocab_size)) < 0.5
    bitmask = torch.from_numpy(np.stack([pack_bool_mask(a) for a in allowed]))
    logits = torch.randn(batch, width).to(dtype)
    expected = _reference_apply(logits, allowed, range(batch))
    ga.apply_token_bitmask_inplace(logits, bitmask)
    assert torch.equal(logits, expected)


def test_apply_with_indices_masks_only_those_rows():
    rng = np.random.default_rng(1)
    allowed = rng.random((2, 40)) < 0.5
    bitmask = torch.from_numpy(np.stack([pack_bool_mask(a) for a in allowed]))
    logits = torch.randn(4, 40)
    expected = _reference_apply(logits, allowed, [3, 1])
    ga.apply_token_bitmask_inplace(logits, bitmask, indices=[3, 1])
    assert torch.equal(logits, expected)


def test_apply_rejects_narrow_logits_and_bad_shapes():
    bitmask = ga.allocate_token_bitmask(1, 100)
    with pytest.raises(ValueError, match="smaller"):
        ga.apply_token_bitmask_inplace(torch.zeros(1, 90), bitmask)
    with pytest.raises(ValueError, match="smaller than the vocabulary size"):
        ga.apply_token_bitmask_inplace(torch.zeros(1, 99), bitmask, vocab_size=100)
    with pytest.raises(ValueError, match="rows"):
        ga.apply_token_bitmask_inplace(torch.zeros(2, 100), bitmask)
    with pytest.raises(ValueError, match="int32"):
        ga.apply_token_bitmask_inplace(torch.zeros(1, 100), bitmask.to(torch.int64))
    with pytest.raises(IndexError):
        ga.apply_token_bitmask_inplace(torch.zeros(1, 100), bitmask, indices=[5])


def test_numpy_view_of_torch_bitmask_shares_memory():
    bitmask = ga.allocate_token_bitmask(2, 64)
    view = as_numpy_bitmask(bitmask)
    view[1, 0] = 7
    assert int(bitmask[1, 0]) == 7
    with pytest.raises(TypeError):
        as_numpy_bitmask([[1, 2]])
    with pytest.raises(ValueError):
        as_numpy_bitmask(np.zeros((1, 2), dtype=np.int64))
