"""Bitsets as uint64 word arrays (bit k of a set is bit ``k & 63`` of word ``k >> 6``): the
few numba helpers every layer reads them with. Terminal sets of the lexer, the LALR
analysis and the mask path all use this layout, so its bit tricks are written once."""

from __future__ import annotations

import numpy as np

from .jit import kernel

_DE_BRUIJN = np.uint64(0x03F79D71B4CB0A89)
_BIT_INDEX = np.zeros(64, dtype=np.int64)
for _i in range(64):
    _BIT_INDEX[(((1 << _i) * int(_DE_BRUIJN)) & (2**64 - 1)) >> 58] = _i


@kernel(inline="always")
def lowest_bit(word):
    """Index (0..63) of the lowest bit set in the non-zero uint64 ``word`` (a de Bruijn
    multiplication: no loop over the bits).

    >>> int(lowest_bit(np.uint64(0b1000)))
    3
    """
    lowest = word & (~word + np.uint64(1))
    return _BIT_INDEX[(lowest * _DE_BRUIJN) >> np.uint64(58)]


@kernel(inline="always")
def lowest_common_bit(a, b):
    """Index of the lowest bit set in both bitsets ``a`` and ``b``, or -1.

    >>> int(lowest_common_bit(np.array([0, 6], np.uint64), np.array([0, 4], np.uint64)))
    66
    """
    for w in range(a.shape[0]):
        x = a[w] & b[w]
        if x:
            return w * 64 + lowest_bit(x)
    return -1


@kernel(inline="always")
def intersects(a, b):
    """Do the bitsets ``a`` and ``b`` share a bit?"""
    for w in range(a.shape[0]):
        if a[w] & b[w]:
            return True
    return False


@kernel(inline="always")
def one_bit(bits):
    """Is exactly one bit set in the bitset ``bits``?"""
    found = False
    for w in range(bits.shape[0]):
        x = bits[w]
        if x:
            if found or x & (x - np.uint64(1)):
                return False
            found = True
    return found


@kernel(inline="always")
def several_common_bits(a, b):
    """Do the bitsets ``a`` and ``b`` share more than one bit?"""
    seen = False
    for w in range(a.shape[0]):
        x = a[w] & b[w]
        if x:
            if seen or x & (x - np.uint64(1)):
                return True
            seen = True
    return False


def bit_indexes(bits: np.ndarray) -> list[int]:
    """The indexes of the bits set in the bitset ``bits``, lowest first (plain Python).

    >>> bit_indexes(np.array([5, 1], np.uint64))
    [0, 2, 64]
    """
    return [w * 64 + k for w, word in enumerate(bits.tolist()) for k in range(64) if word >> k & 1]
