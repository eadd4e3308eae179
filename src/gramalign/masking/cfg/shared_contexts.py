"""Token classifications of lexical contexts, shared across grammars of one vocabulary.

:func:`.trie_walk.classify_tokens` splits the vocabulary for a lexical context (lexer
state, candidate terminals, shadows). Its answer reads only a small part of the grammar's
lexer: the states reachable from the context's start state, its shadows and the lexer
start of its candidate set (where a lexeme starts after an ignored one), whether any lexer
start reads a byte (where a parser-visible lexeme ends inside a token), each restricted to the
states still alive for the terminals it is checked against, and of those states only what
the walk looks at — which candidate terminal wins there, whether a shadow would accept, and
whether a terminal is ignored. :func:`context_signature` writes exactly that as a canonical
int32 array: the sub-automaton is minimised (Moore refinement over those outputs), its
states renumbered in breadth-first order from the roots, bytes grouped into classes
numbered by first appearance, terminals numbered by first appearance. Two contexts with
equal signatures therefore get the same classification up to the terminal numbering, which
the cache stores in canonical form and maps back.

JSON-Schema grammars share string bodies, numbers, punctuation and whitespace, and inside
one grammar a string body is met under many product-lexer states that differ only in the
key literals they still track; all of those are one entry here. The cache key is the full
signature (Python compares the bytes on every hit, the hash only finds the bucket), so a hit
can never change a mask.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ...bitsets import intersects, lowest_common_bit
from ...grammar.automata.kernels import column_classes
from ...jit import kernel

MAX_SIGNATURE_STATES = 1024
"""Sub-automata larger than this (before minimisation) are classified directly, without a
signature: the Moore refinement grows with states times refinement rounds, and on the
MaskBench sample a few closures of thousands of product states took 5-55 ms to sign."""

CACHE_BYTES = 256 << 20
"""Memory per vocabulary for shared classifications (more are computed, not kept)."""

_DEAD = -1
_CANDIDATES_DEAD = -2  # the initial state's byte starts a lexeme, but of no candidate
_STARTS_A_LEXEME = -3  # the initial state, not explored: some lexer start reads this byte


@kernel
def _row_hash(table, row, prefix):
    h = np.uint64(1469598103934665603) ^ np.uint64(prefix + 7)
    for c in range(table.shape[1]):
        h = (h ^ np.uint64(table[row, c] + 3)) * np.uint64(1099511628211)
    return h


@kernel
def _refine(keys, n):
    """Class ids (numbered by first appearance in ``range(n)``) of the rows of ``keys``
    (int64 [n, k]): equal rows, equal classes. Rows are bucketed by hash, then compared
    exactly, so a hash collision never merges two different rows."""
    hashes = np.empty(n, np.uint64)
    for r in range(n):
        hashes[r] = _row_hash(keys, r, 0)
    order = np.argsort(hashes)
    provisional = np.empty(n, np.int64)
    leaders = np.empty(n, np.int64)
    n_classes = 0
    start = 0
    while start < n:
        end = start
        while end < n and hashes[order[end]] == hashes[order[start]]:
            end += 1
        first_leader = n_classes
        for j in range(start, end):
            r = order[j]
            found = -1
            for c in range(first_leader, n_classes):
                other = leaders[c]
                same = True
                for k in range(keys.shape[1]):
                    if keys[r, k] != keys[other, k]:
                        same = False
                        break
                if same:
                    found = c
                    break
            if found < 0:
                found = n_classes
                leaders[n_classes] = r
                n_classes += 1
            provisional[r] = found
        start = end
    # Renumber by first appearance so that the ids do not depend on the hash order.
    renumber = np.full(n_classes, -1, np.int64)
    classes = np.empty(n, np.int64)
    next_id = 0
    for r in range(n):
        p = provisional[r]
        if renumber[p] < 0:
            renumber[p] = next_id
            next_id += 1
        classes[r] = renumber[p]
    return classes, n_classes


@kernel
def _grown_nodes(node_state, node_component, successors, n, capacity):
    """The three per-node arrays of :func:`context_signature` reallocated for ``capacity``
    nodes, their first ``n`` rows kept."""
    grown_state = np.empty(capacity, np.int64)
    grown_state[:n] = node_state[:n]
    grown_component = np.empty(capacity, np.int64)
    grown_component[:n] = node_component[:n]
    grown_successors = np.empty((capacity, successors.shape[1]), np.int64)
    grown_successors[:n] = successors[:n]
    return grown_state, grown_component, grown_successors


@kernel
def context_signature(lx_trans, lx_accept, lx_alive, initial, starts_any, term_column, cand, shadow_states,
                      shadow_cands, start, byte_class, class_byte, max_states):
    """(signature int32 array, real terminal of each canonical terminal int32 array) of the
    lexical context, or an empty signature when the sub-automaton has more than
    ``max_states`` states. See the module docstring for what the signature holds.
    ``initial`` is the lexer start of the context's candidate set (where a lexeme starts
    after an ignored one); ``starts_any[b]``: does any lexer start read byte ``b`` (what the
    classification reads where a parser-visible lexeme ends).
    ``byte_class``/``class_byte``: bytes the lexer treats alike (``LexerDFA.byte_class`` /
    ``class_byte``, or :func:`~gramalign.grammar.automata.kernels.column_classes` of its table);
    any partition finer than the table's columns gives the same signature."""
    n_lexer = lx_trans.shape[0]
    n_components = 1 + shadow_states.shape[0]
    n_columns = class_byte.shape[0]
    # index_of: node of (component, lexer state); -1 unseen, -2 not alive there.
    index_of = np.full(n_components * n_lexer, -1, np.int64)
    capacity = 64
    node_state = np.empty(capacity, np.int64)
    node_component = np.empty(capacity, np.int64)
    successors = np.empty((capacity, n_columns), np.int64)
    roots = np.full(4, -1, np.int64)
    n = 0
    # Roots in a fixed order: the start state, the initial state (read where a lexeme
    # ends inside a token), then each shadow with its own candidates.
    for slot in range(2 + shadow_states.shape[0]):
        if slot == 1:
            continue  # the initial state is added once the start's part is known
        if slot == 0:
            q, component = start, 0
        else:
            q, component = shadow_states[slot - 2], slot - 1
        key = component * n_lexer + q
        if index_of[key] < 0:
            index_of[key] = n
            node_state[n] = q
            node_component[n] = component
            n += 1
        roots[slot] = index_of[key]
    # The classification continues from the initial state only after an ignored lexeme
    # (whitespace) ends; otherwise it reads no more of it than "does some terminal start
    # with this byte" (a lexeme that ends before a byte no terminal starts is rejected,
    # any other ending needs the parser). So the initial state's own part is explored
    # only when the start's part can end an ignored lexeme, else it is a leaf whose row
    # says which bytes start a lexeme.
    follow_initial = start == initial
    initial_added = False
    done = 0
    while True:
        if done == n:
            if initial_added:
                break
            initial_added = True
            if index_of[initial] >= 0:
                roots[1] = index_of[initial]
                break  # reached from the start: explored like any other state
            if not follow_initial:
                for r in range(n):
                    if node_component[r] == 0:
                        winner = lowest_common_bit(lx_accept[node_state[r]], cand)
                        if winner >= 0 and term_column[winner] < 0:
                            follow_initial = True
                            break
            if n == capacity:
                capacity *= 2
                node_state, node_component, successors = _grown_nodes(node_state, node_component, successors, n,
                                                                      capacity)
            index_of[initial] = n
            node_state[n] = initial
            node_component[n] = 0
            roots[1] = n
            n += 1
            if not follow_initial:
                for c in range(n_columns):
                    successors[n - 1, c] = _STARTS_A_LEXEME if starts_any[class_byte[c]] else _DEAD
                done = n
                break
            continue
        q = node_state[done]
        component = node_component[done]
        offset = component * n_lexer
        for c in range(n_columns):
            t = lx_trans[q, class_byte[c]]
            if t < 0:
                successors[done, c] = _DEAD
                continue
            key = offset + t
            found = index_of[key]
            if found == -1:
                if component == 0:
                    alive = intersects(lx_alive[t], cand)
                else:
                    alive = intersects(lx_alive[t], shadow_cands[component - 1])
                if alive:
                    if n == max_states:
                        return np.empty(0, np.int32), np.empty(0, np.int32)
                    if n == capacity:
                        capacity *= 2
                        node_state, node_component, successors = _grown_nodes(node_state, node_component,
                                                                              successors, n, capacity)
                    index_of[key] = n
                    node_state[n] = t
                    node_component[n] = component
                    found = n
                    n += 1
                else:
                    index_of[key] = -2
                    found = -2
            if found == -2:
                # Only the initial state tells "dead" from "dead for these candidates" apart
                # (in a lexer whose start tracks more than the candidates; a per-candidate-set
                # start tracks nothing else): a lexeme ending before a byte that starts no
                # terminal at all is rejected outright, before the parser is consulted.
                successors[done, c] = _CANDIDATES_DEAD if (component == 0 and q == initial) else _DEAD
            else:
                successors[done, c] = found
        done += 1

    # What the classification reads of each state: its component, the winning candidate
    # (main component) or whether a shadow's candidates accept, and "is the initial state".
    outputs = np.empty((n, 3), np.int64)
    for r in range(n):
        q = node_state[r]
        component = node_component[r]
        outputs[r, 0] = component
        if component == 0:
            outputs[r, 1] = lowest_common_bit(lx_accept[q], cand)
            outputs[r, 2] = 1 if q == initial else 0
        else:
            outputs[r, 1] = 1 if intersects(lx_accept[q], shadow_cands[component - 1]) else 0
            outputs[r, 2] = 0
    classes, n_classes = _refine(outputs, n)
    # Moore refinement: split classes by the classes of their successors until stable.
    keys = np.empty((n, 1 + n_columns), np.int64)
    while True:
        for r in range(n):
            keys[r, 0] = classes[r]
            for c in range(n_columns):
                t = successors[r, c]
                keys[r, 1 + c] = classes[t] if t >= 0 else t
        refined, n_refined = _refine(keys, n)
        classes = refined
        if n_refined == n_classes:
            break
        n_classes = n_refined

    # Canonical numbering: breadth-first from the roots, bytes in order.
    canonical = np.full(n_classes, -1, np.int64)
    member = np.empty(n_classes, np.int64)
    m = 0
    for slot in range(4):
        if roots[slot] >= 0 and canonical[classes[roots[slot]]] < 0:
            c = classes[roots[slot]]
            canonical[c] = m
            member[m] = roots[slot]
            m += 1
    head = 0
    while head < m:
        r = member[head]
        for b in range(256):
            t = successors[r, byte_class[b]]
            if t >= 0 and canonical[classes[t]] < 0:
                canonical[classes[t]] = m
                member[m] = t
                m += 1
        head += 1
    quotient = np.empty((m, 256), np.int64)
    for s in range(m):
        r = member[s]
        for b in range(256):
            t = successors[r, byte_class[b]]
            quotient[s, b] = canonical[classes[t]] if t >= 0 else t
    canonical_class, first_byte = column_classes(quotient)
    n_byte_classes = first_byte.shape[0]
    # Terminals by first appearance as a winner, in canonical state order.
    real_of = np.empty(m, np.int32)
    n_terms = 0
    canonical_winner = np.full(m, -1, np.int64)
    for s in range(m):
        winner = outputs[member[s], 1] if outputs[member[s], 0] == 0 else -1
        if winner >= 0:
            found = -1
            for k in range(n_terms):
                if real_of[k] == winner:
                    found = k
                    break
            if found < 0:
                found = n_terms
                real_of[n_terms] = winner
                n_terms += 1
            canonical_winner[s] = found
    size = 7 + 2 * 256 + n_terms + m * (3 + n_byte_classes)
    signature = np.empty(size, np.int32)
    signature[0] = m
    signature[1] = n_byte_classes
    signature[2] = n_terms
    for slot in range(4):
        signature[3 + slot] = canonical[classes[roots[slot]]] if roots[slot] >= 0 else -1
    at = 7
    for b in range(256):
        signature[at + b] = canonical_class[b]
        signature[at + 256 + b] = starts_any[b]
    at += 2 * 256
    for k in range(n_terms):
        signature[at + k] = 1 if term_column[real_of[k]] < 0 else 0  # ignored terminal
    at += n_terms
    for s in range(m):
        r = member[s]
        signature[at] = outputs[r, 0]
        signature[at + 1] = canonical_winner[s] if outputs[r, 0] == 0 else outputs[r, 1]
        signature[at + 2] = outputs[r, 2]
        at += 3
        for c in range(n_byte_classes):
            signature[at + c] = quotient[s, first_byte[c]]
        at += n_byte_classes
    return signature, real_of[:n_terms].copy()


@kernel
def remap_terminal_bits(bits, mapping, out_words):
    """Rows of terminal bitsets with terminal ``k`` of ``bits`` moved to ``mapping[k]``."""
    out = np.zeros((bits.shape[0], out_words), np.uint64)
    for g in range(bits.shape[0]):
        for w in range(bits.shape[1]):
            x = bits[g, w]
            k = 0
            while x:
                if x & np.uint64(1):
                    t = mapping[w * 64 + k]
                    out[g, t >> 6] |= np.uint64(1) << np.uint64(t & 63)
                x >>= np.uint64(1)
                k += 1
    return out


class SharedClassification:
    """A context's classification with terminals in canonical numbering; read-only arrays."""

    __slots__ = ("group_reach", "group_masks", "inside", "dependent_ids", "dependent_trie", "nbytes")

    def __init__(self, group_reach, group_masks, inside, dependent_ids, dependent_trie):
        self.group_reach = group_reach  # uint64 [groups, canonical terminal words]
        self.group_masks = group_masks
        self.inside = inside
        self.dependent_ids = dependent_ids
        self.dependent_trie = dependent_trie
        self.nbytes = int(group_reach.nbytes + group_masks.nbytes + inside.nbytes + dependent_ids.nbytes
                          + len(dependent_ids) * 16 + 256)


class ContextClassificationCache:
    """Signature bytes -> :class:`SharedClassification`, for one vocabulary trie."""

    def __init__(self, max_bytes: int = CACHE_BYTES):
        self.max_bytes = max_bytes
        self.nbytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: dict[bytes, SharedClassification] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, signature: bytes) -> SharedClassification | None:
        found = self._entries.get(signature)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, signature: bytes, value: SharedClassification) -> SharedClassification:
        with self._lock:
            existing = self._entries.get(signature)
            if existing is not None:
                return existing
            if self.nbytes + value.nbytes + len(signature) <= self.max_bytes:
                self._entries[signature] = value
                self.nbytes += value.nbytes + len(signature)
            return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.nbytes = 0


_CACHES: "weakref.WeakKeyDictionary[object, ContextClassificationCache]" = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def shared_cache_for(trie) -> ContextClassificationCache:
    """The process-wide cache of the vocabulary trie ``trie``: every grammar compiled for
    one vocabulary walks the same trie object, and the cache goes when the trie does."""
    with _CACHES_LOCK:
        found = _CACHES.get(trie)
        if found is None:
            found = _CACHES[trie] = ContextClassificationCache()
        return found


_warm = False


def warm_kernels() -> None:
    """Compile (or load from numba's cache) this module's kernels on a two-state lexer, once
    per process: ~0.2 s that would otherwise land in the first mask needing a signature.
    Called when a mask store that uses the cache is created (compile time)."""
    global _warm
    if _warm:
        return
    c_order = np.full((2, 256), -1, np.int32)
    c_order[0, ord("a")] = 1
    bits = np.array([[0], [1]], dtype=np.uint64)
    # Lexer tables come in either memory order (the product lexer's is Fortran order).
    for transitions in (c_order, np.asfortranarray(c_order)):
        byte_class, class_byte = column_classes(transitions)
        signature, real_of = context_signature(transitions, bits, bits, np.int64(0),
                                               (transitions[0] >= 0).astype(np.uint8), np.zeros(1, np.int32),
                                               np.ones(1, np.uint64), np.zeros(0, np.int32),
                                               np.zeros((0, 1), np.uint64), np.int64(0), byte_class, class_byte,
                                               MAX_SIGNATURE_STATES)
    remap_terminal_bits(np.ones((1, 1), np.uint64), real_of, 1)
    _warm = True
