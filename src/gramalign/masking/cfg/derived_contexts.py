"""Contexts whose token classes are another context's: the prefixes of an object's keys.

A key among named ones, written as far as ``"na``, is a lexer state of its own (``name``
and ``nickname`` may still come), yet every token reads alike from there and from ``"nax``
(no name left, any other key): the same bytes keep the lexeme alive and the same bytes can
end it; only the terminals a lexeme can still become differ, by the names. So the context
of ``"na`` takes the inside and dependent tokens of the context of its *free partner* (the
state after a byte that drops every name) instead of being classified anew.

Exactly: :func:`behaves_alike` checks, pair by pair of lexer states reached by the same
bytes from both starts, that a byte leads both to a live state or neither, and that both
accept or neither (with a parser-visible winner: ignored lexemes are not taken). Then every
token is inside, dependent or rejected in both contexts alike. The groups of the inside
tokens are not known (a token ending at ``me"`` becomes ``name``, from the partner any other
key), but each is a non-empty set of the winners reachable from the context's start, so
where the stack can shift every one of those, every inside token is allowed; any other
stack gets the context classified for real (:mod:`.stack_parts` asks for that).
"""

from __future__ import annotations

import numpy as np

from ...bitsets import intersects, lowest_common_bit
from ...jit import kernel
from ...parsing.lexing import fill_reach

MAX_TERMINALS = 16
"""Winners reachable from a context's start above which it is not derived: the stack must be
asked about each one (the opening of a key among hundreds of names asks less of its own
classification's groups)."""

MAX_PAIRS = 256
"""Pairs of states :func:`behaves_alike` looks at before giving up (the opening of a key
among hundreds of names would cost more than its classification)."""


@kernel
def _popcount(bits):
    count = 0
    for w in range(bits.shape[0]):
        x = bits[w]
        while x:
            x &= x - np.uint64(1)
            count += 1
    return count


@kernel
def free_partner(lx_trans, lx_accept, lx_alive, lx_class_byte, cand, reach_bits, reach_done, start):
    """The live state after one printable ASCII byte from ``start`` with the fewest
    reachable winners, if it has fewer than ``start`` and cannot end the lexeme; else -1
    (also where ``start`` has more than ``MAX_TERMINALS`` reachable winners)."""
    if not reach_done[start]:
        fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, start)
    best = -1
    fewest = _popcount(reach_bits[start])
    if fewest < 2 or fewest > MAX_TERMINALS:
        return -1
    for b in range(0x20, 0x7F):
        p = lx_trans[start, b]
        if p < 0 or p == best or not intersects(lx_alive[p], cand) or intersects(lx_accept[p], cand):
            continue
        if not reach_done[p]:
            fill_reach(lx_trans, lx_accept, lx_alive, lx_class_byte, reach_bits, reach_done, p)
        count = _popcount(reach_bits[p])
        if count < fewest:
            best = p
            fewest = count
    return best


@kernel
def behaves_alike(lx_trans, lx_accept, lx_alive, lx_class_byte, cand, term_column, start, partner, max_pairs):
    """Does every byte string read from ``start`` meet what it meets from ``partner`` (see
    the module docstring), looking at no more than ``max_pairs`` pairs of distinct states?"""
    first = np.empty(max_pairs, np.int32)
    second = np.empty(max_pairs, np.int32)
    # partner_of[p]: the partner state of the first pair met with p (pairs sharing p are rare)
    partner_of = np.full(lx_trans.shape[0], -1, np.int32)
    first[0] = start
    second[0] = partner
    partner_of[start] = partner
    n = 1
    k = 0
    while k < n:
        p = first[k]
        r = second[k]
        k += 1
        for c in range(lx_class_byte.shape[0]):
            byte = lx_class_byte[c]
            p2 = lx_trans[p, byte]
            r2 = lx_trans[r, byte]
            alive = p2 >= 0 and intersects(lx_alive[p2], cand)
            if alive != (r2 >= 0 and intersects(lx_alive[r2], cand)):
                return False
            if not alive or p2 == r2:
                continue
            winner = lowest_common_bit(lx_accept[p2], cand)
            other = lowest_common_bit(lx_accept[r2], cand)
            if (winner >= 0) != (other >= 0):
                return False
            if winner >= 0 and (term_column[winner] < 0 or term_column[other] < 0):
                return False  # an ignored lexeme could end: its shadows would differ
            if partner_of[p2] == r2:
                continue
            if partner_of[p2] >= 0:  # p2 met beside another state: look the pair up
                seen = False
                for j in range(n):
                    if first[j] == p2 and second[j] == r2:
                        seen = True
                        break
                if seen:
                    continue
            else:
                partner_of[p2] = r2
            if n == max_pairs:
                return False
            first[n] = p2
            second[n] = r2
            n += 1
    return True
