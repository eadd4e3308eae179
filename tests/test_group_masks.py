"""GroupMasks (the compact store of a context's group rows) against the dense rows it stands for."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gramalign.masking.group_masks import GroupMasks


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 17), st.integers(1, 300), st.lists(st.floats(0.0, 1.0), min_size=17, max_size=17),
       st.integers(0, 2**32 - 1))
def test_group_masks_give_back_each_row_exactly(n_groups, width, densities, seed):
    """Dense and sparse groups alike: OR-ing a group into a row adds exactly its dense row,
    and the rows read back whole (the on-disk cache's form)."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((n_groups, width), np.uint32)
    for g in range(n_groups):
        words = rng.random(width) < densities[g]
        rows[g, words] = rng.integers(1, 2**32, int(words.sum()), dtype=np.uint64).astype(np.uint32)
    groups = GroupMasks.from_rows(rows.copy())
    assert len(groups) == n_groups
    assert np.array_equal(groups.to_rows(width), rows)
    for g in range(n_groups):
        base = rng.integers(0, 2**32, width, dtype=np.uint64).astype(np.uint32)
        row = base.copy()
        groups.or_into(g, row)
        assert np.array_equal(row, base | rows[g])
    dense_rows = int((groups.dense_row >= 0).sum())
    assert groups.dense.shape == (dense_rows, width)
    assert groups.words.size == int((rows[groups.dense_row < 0] != 0).sum())
