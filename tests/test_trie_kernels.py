"""The trie walk kernel against a brute-force walk of every token through random DFAs."""

import numpy as np
import pytest

from gramalign.masking.regex_index import fill_state_masks
from gramalign.tokens import TokenTrie


def random_tokens(rng, count, alphabet):
    tokens = []
    for _ in range(count):
        length = int(rng.integers(1, 7))
        tokens.append(bytes(rng.choice(alphabet, size=length).tolist()))
    return tokens


def brute_force_mask(transitions, state, tokens, ids, live):
    """(allowed token ids, states where the tokens that stay alive end)."""
    allowed, ends = set(), set()
    for token_id in ids:
        s = state
        for byte in tokens[token_id]:
            s = transitions[s, byte]
            if s < 0:
                break
        else:
            ends.add(int(s))
            if live[s]:
                allowed.add(int(token_id))
    return allowed, ends


@pytest.mark.parametrize("seed", range(8))
def test_trie_walk_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    alphabet = np.array([0x00, 0x61, 0x62, 0x63, 0x7F, 0x80, 0xC3, 0xFF], dtype=np.uint8)
    tokens = random_tokens(rng, 600, alphabet)
    tokens[5] = tokens[9]  # duplicate byte strings under different ids must both appear
    tokens[17] = b""  # empty tokens (specials) are never in the trie
    ids = np.array([i for i in range(len(tokens)) if tokens[i]], dtype=np.int32)
    trie = TokenTrie.from_tokens(tokens, ids)
    assert sorted(trie.token_ids.tolist()) == sorted(ids.tolist())
    n_states = 6
    transitions = rng.integers(-1, n_states, size=(n_states, 256)).astype(np.int32)
    # Make dead bytes common so subtree skipping is exercised.
    transitions[rng.random((n_states, 256)) < 0.35] = -1
    words = (len(tokens) + 31) // 32
    masks = np.zeros((n_states, words), dtype=np.uint32)
    live = rng.random(n_states) < 0.7
    successors = np.zeros((n_states, n_states), dtype=bool)
    fill_state_masks(transitions, np.arange(n_states, dtype=np.int32), trie.node_byte, trie.node_depth,
                     trie.subtree_end, trie.token_start, trie.token_ids, trie.max_depth, live, masks,
                     successors)
    for state in range(n_states):
        bits = np.unpackbits(masks[state].view(np.uint8), bitorder="little")[: len(tokens)]
        allowed, ends = brute_force_mask(transitions, state, tokens, ids, live)
        assert set(np.flatnonzero(bits).tolist()) == allowed
        assert set(np.flatnonzero(successors[state]).tolist()) == ends


def test_trie_structure_invariants():
    tokens = [b"ab", b"a", b"abc", b"b", b"abd", b"ba"]
    trie = TokenTrie.from_tokens(tokens, np.arange(len(tokens), dtype=np.int32))
    # Reconstruct every token's bytes from the pre-order layout and compare.
    path: list[int] = []
    rebuilt = {}
    for node in range(trie.num_nodes):
        depth = int(trie.node_depth[node])
        del path[depth - 1:]
        path.append(int(trie.node_byte[node]))
        for k in range(trie.token_start[node], trie.token_start[node + 1]):
            rebuilt[int(trie.token_ids[k])] = bytes(path)
        end = int(trie.subtree_end[node])
        assert all(trie.node_depth[j] > depth for j in range(node + 1, end))
        assert end == trie.num_nodes or trie.node_depth[end] <= depth
    assert rebuilt == dict(enumerate(tokens))
    assert trie.max_depth == 3


def test_trie_rejects_empty_tokens():
    with pytest.raises(ValueError, match="empty"):
        TokenTrie.from_tokens([b"", b"a"], np.array([0, 1], dtype=np.int32))


@pytest.mark.parametrize("seed", range(4))
def test_subset_trie_equals_a_trie_built_from_the_subset(seed):
    rng = np.random.default_rng(seed)
    alphabet = np.array([0x61, 0x62, 0x63, 0xC3], dtype=np.uint8)
    tokens = random_tokens(rng, 300, alphabet)
    ids = np.arange(len(tokens), dtype=np.int32)
    full = TokenTrie.from_tokens(tokens, ids)
    keep = (rng.random(len(tokens)) < 0.3).astype(np.uint8)
    sub = full.subset(keep)
    direct = TokenTrie.from_tokens(tokens, np.flatnonzero(keep).astype(np.int32))
    for name in ("node_byte", "node_depth", "subtree_end", "token_start"):
        assert np.array_equal(getattr(sub, name), getattr(direct, name)), name
    assert sorted(sub.token_ids.tolist()) == sorted(direct.token_ids.tolist())
    assert sub.max_depth == direct.max_depth
    assert full.subset(np.zeros(len(tokens), dtype=np.uint8)) is None
