"""The inside tokens of a lexical context's groups, stored compactly.

A context's classification splits its inside tokens into groups (by what their lexemes can
still become, see :mod:`.grammar_walk`), up to 16 of them, and keeps them for the life of
the compiled grammar. As dense bitmask rows each group is ``width`` words (16 KB for a
128k vocabulary) of new memory, and new memory is not free: first touching it costs about
as much as the classification walk, and a context of object keys has a dozen groups that
mostly hold a handful of tokens. So a group is a dense row only when it is large, and
otherwise the sparse words its tokens fall in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .kernels import or_sparse_words

DENSE_FRACTION = 4
"""A group whose tokens fill more than 1/DENSE_FRACTION of the mask words is kept as a dense
row: OR-ing a sparse list that long costs more than a vectorised row."""


@dataclass(frozen=True, eq=False)
class GroupMasks:
    """Per group, its inside tokens: a row of ``dense`` or sparse (word, bits) pairs."""

    dense: np.ndarray  # uint32 [dense groups, width]
    dense_row: np.ndarray  # int32 [groups]: the group's row in ``dense``, -1 when sparse
    offsets: np.ndarray  # int64 [groups + 1]: a sparse group's pairs are words/bits[offsets[g]:offsets[g + 1]]
    words: np.ndarray  # int32
    bits: np.ndarray  # uint32

    @classmethod
    def from_rows(cls, rows: np.ndarray) -> "GroupMasks":
        """The compact form of dense rows (uint32 [groups, width]); ``rows`` is not kept."""
        nonzero = rows != 0
        counts = nonzero.sum(axis=1)
        is_dense = counts * DENSE_FRACTION > rows.shape[1]
        dense_row = np.full(rows.shape[0], -1, dtype=np.int32)
        dense_row[is_dense] = np.arange(int(is_dense.sum()), dtype=np.int32)
        sparse_counts = np.where(is_dense, 0, counts)
        offsets = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(sparse_counts, out=offsets[1:])
        group, words = np.nonzero(nonzero & ~is_dense[:, None])  # row-major: grouped, words ascending
        return cls(rows[is_dense].copy(), dense_row, offsets, words.astype(np.int32), rows[group, words])

    def __len__(self) -> int:
        return int(self.dense_row.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.dense.nbytes + self.dense_row.nbytes + self.offsets.nbytes + self.words.nbytes
                   + self.bits.nbytes)

    def or_into(self, group: int, row: np.ndarray) -> None:
        """``row |= `` the group's tokens."""
        r = self.dense_row[group]
        if r >= 0:
            np.bitwise_or(row, self.dense[r], out=row)
        else:
            o, end = self.offsets[group], self.offsets[group + 1]
            or_sparse_words(row, self.words[o:end], self.bits[o:end])

    def to_rows(self, width: int) -> np.ndarray:
        """The groups as dense rows, uint32 [groups, width] (for the on-disk cache)."""
        rows = np.zeros((len(self), width), dtype=np.uint32)
        _fill_rows(rows, self.dense, self.dense_row, self.offsets, self.words, self.bits)
        return rows

    def freeze(self) -> None:
        """Make the arrays read-only (shared across grammars from now on)."""
        for array in (self.dense, self.dense_row, self.offsets, self.words, self.bits):
            array.flags.writeable = False


@numba.njit(cache=True, nogil=True)
def _fill_rows(rows, dense, dense_row, offsets, words, bits):
    for g in range(rows.shape[0]):
        if dense_row[g] >= 0:
            rows[g] = dense[dense_row[g]]
        else:
            for k in range(offsets[g], offsets[g + 1]):
                rows[g, words[k]] = bits[k]
