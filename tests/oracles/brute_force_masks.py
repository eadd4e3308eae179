"""The brute-force mask oracle: for every token, the incremental parser is fed prefix + token
bytes the slow way (one numba call per token, no trie, no mask store); a matcher's mask must
equal that set."""

from __future__ import annotations

import numpy as np

import gramalign as ga
from gramalign.masking.bitmask import unpack_bitmask_row
from gramalign.parsing import IncrementalParser


def brute_force_allowed(compiled: ga.CompiledGrammar, prefix: bytes) -> np.ndarray:
    if compiled.index is not None:  # one terminal, masked by a regex index: its automaton decides
        return _dfa_allowed(compiled, prefix)
    parser = IncrementalParser(compiled.store.tables)
    state, _ = parser.feed(parser.initial_state(), prefix)
    assert state is not None, prefix
    vocab = compiled.vocabulary
    allowed = np.zeros(vocab.size, dtype=bool)
    mark = parser.pool.used
    for token in vocab.grammar_token_ids().tolist():
        following, _ = parser.feed(state, vocab.token_bytes[token])
        allowed[token] = following is not None
        parser.truncate(mark)
    if parser.can_end(state):
        allowed[list(vocab.eos_token_ids)] = True
    return allowed


def _dfa_allowed(compiled: ga.CompiledGrammar, prefix: bytes) -> np.ndarray:
    dfa = compiled.grammar.single_terminal().dfa
    assert dfa.is_prefix(prefix), prefix
    vocab = compiled.vocabulary
    allowed = np.zeros(vocab.size, dtype=bool)
    for token in vocab.grammar_token_ids().tolist():
        allowed[token] = dfa.is_prefix(prefix + vocab.token_bytes[token])
    if dfa.matches(prefix):
        allowed[list(vocab.eos_token_ids)] = True
    return allowed


def assert_mask_equals_brute_force(compiled: ga.CompiledGrammar, prefix: bytes) -> bool:
    """Check the matcher's mask after ``prefix`` against :func:`brute_force_allowed`; False
    (nothing checked) when ``prefix`` cuts a UTF-8 character that no token sequence can make."""
    matcher = compiled.matcher()
    try:
        matcher.accept_string(prefix)
    except ga.StringRejected:
        return False
    mask = np.zeros((1, compiled.bitmask_width), dtype=np.int32)
    matcher.fill_next_token_bitmask(mask, 0)
    got = unpack_bitmask_row(mask[0], compiled.vocabulary.size)
    expected = brute_force_allowed(compiled, prefix)
    wrong = np.flatnonzero(got != expected)
    assert wrong.size == 0, (prefix, [(int(t), compiled.vocabulary.token_bytes[t], bool(expected[t]))
                                      for t in wrong[:10]])
    return True
