"""Draft verification (``validate_draft``, ``validate_draft_tree``) against the slow oracle:
feeding the same tokens one by one to a fresh matcher that replays the prefix.

Drafts are valid token sequences (random walks through the masks) with random corruptions:
a token replaced by a random id, a token dropped, or EOS inserted early.
"""

from __future__ import annotations

import numpy as np
import pytest

import gramalign as ga

from support.mask_walks import mask_row, replay, valid_sequences
from support.vocabularies import gpt2_vocabulary

GRAMMARS = {
    "json": lambda: ga.Grammar.builtin("json"),
    "sql": lambda: ga.Grammar.builtin("sql"),
    "regex": lambda: ga.Grammar.from_regex(r"(name|age|city)=[a-z0-9]{1,12}(, (name|age|city)=[a-z0-9]{1,12}){0,4}"),
}


@pytest.fixture(scope="module", params=sorted(GRAMMARS))
def compiled(request) -> ga.CompiledGrammar:
    return ga.compile(GRAMMARS[request.param](), gpt2_vocabulary())


def corrupt(tokens: list[int], vocab: ga.Vocabulary, rng: np.random.Generator) -> list[int]:
    tokens = list(tokens)
    kind = rng.integers(4)
    if len(tokens) < 2 or kind == 0:
        return tokens  # left valid
    where = int(rng.integers(len(tokens)))
    if kind == 1:
        tokens[where] = int(rng.integers(vocab.size))
    elif kind == 2:
        del tokens[where]
    else:
        tokens.insert(where, vocab.eos_token_ids[0])
    return tokens


def test_validate_draft_agrees_with_feeding_tokens_one_by_one(compiled):
    vocab = compiled.vocabulary
    rng = np.random.default_rng(5)
    checked_rejections = 0
    for sequence in valid_sequences(compiled, 12, seed=11):
        for _ in range(3):
            cut = int(rng.integers(len(sequence) + 1))
            prefix, draft = sequence[:cut], corrupt(sequence[cut:], vocab, rng)
            matcher = replay(compiled, prefix)
            before = mask_row(matcher)
            bitmask = ga.allocate_token_bitmask_numpy(len(draft) + 3, vocab.size)
            bitmask[:] = 0x5A5A5A5A  # rows the call must not write keep this pattern
            accepted = matcher.validate_draft(draft, bitmask, row_offset=1)

            oracle = replay(compiled, prefix)
            expected = 0
            for token in draft:
                np.testing.assert_array_equal(bitmask[1 + expected], mask_row(oracle))
                if not oracle.try_accept_token(token):
                    break
                expected += 1
            else:
                np.testing.assert_array_equal(bitmask[1 + expected], mask_row(oracle))  # bonus position
            assert accepted == expected, (prefix, draft)
            checked_rejections += accepted < len(draft)
            assert (bitmask[0] == 0x5A5A5A5A).all() and (bitmask[2 + expected:] == 0x5A5A5A5A).all()

            # The matcher did not move: same mask, same history, and it goes on as a fresh replay does.
            assert matcher.num_accepted_tokens == len(prefix)
            np.testing.assert_array_equal(mask_row(matcher), before)
            assert matcher.validate_draft(draft) == accepted  # and without a bitmask
            for token in draft[:accepted]:
                matcher.accept_token(token)
            np.testing.assert_array_equal(mask_row(matcher), mask_row(replay(compiled, prefix + draft[:accepted])))
    assert checked_rejections > 5


def random_tree(sequence: list[int], vocab: ga.Vocabulary, rng: np.random.Generator) -> tuple[list[int], list[int]]:
    """A draft tree: the sequence as a chain, with random branches (valid or not) hanging off it."""
    tokens, parents = [], []
    previous = -1
    for token in sequence:
        tokens.append(token)
        parents.append(previous)
        previous = len(tokens) - 1
        for _ in range(int(rng.integers(3))):
            tokens.append(int(rng.integers(vocab.size)) if rng.random() < 0.7 else token)
            parents.append(int(rng.integers(-1, len(tokens) - 1)))
    return tokens, parents


def path(parents: list[int], node: int) -> list[int]:
    nodes = []
    while node != -1:
        nodes.append(node)
        node = parents[node]
    return nodes[::-1]


def test_validate_draft_tree_agrees_with_replaying_each_path(compiled):
    vocab = compiled.vocabulary
    rng = np.random.default_rng(8)
    for sequence in valid_sequences(compiled, 6, seed=3):
        cut = int(rng.integers(len(sequence) + 1))
        prefix = sequence[:cut]
        tokens, parents = random_tree(sequence[cut:][:12], vocab, rng)
        matcher = replay(compiled, prefix)
        before = mask_row(matcher)
        bitmask = ga.allocate_token_bitmask_numpy(len(tokens) + 1, vocab.size)
        bitmask[:] = 0x5A5A5A5A
        accepted = matcher.validate_draft_tree(tokens, parents, bitmask)
        np.testing.assert_array_equal(bitmask[0], before)
        for node in range(len(tokens)):
            oracle = replay(compiled, prefix)
            ok = all(oracle.try_accept_token(tokens[n]) for n in path(parents, node))
            assert accepted[node] == ok, (prefix, node)
            if ok:
                np.testing.assert_array_equal(bitmask[1 + node], mask_row(oracle))
            else:
                assert (bitmask[1 + node] == 0x5A5A5A5A).all()
        assert matcher.num_accepted_tokens == len(prefix)
        np.testing.assert_array_equal(mask_row(matcher), before)


def test_fork_and_rollback_leave_masks_of_a_fresh_replay(compiled):
    rng = np.random.default_rng(2)
    for sequence in valid_sequences(compiled, 8, seed=21):
        matcher = compiled.matcher()
        accepted: list[int] = []
        forks = []
        for token in sequence:
            matcher.accept_token(token)
            accepted.append(token)
            if rng.random() < 0.3:
                forks.append((matcher.fork(), list(accepted)))
            if rng.random() < 0.25:
                back = int(rng.integers(len(accepted) + 1))
                matcher.rollback(back)
                del accepted[len(accepted) - back:]
                np.testing.assert_array_equal(mask_row(matcher), mask_row(replay(compiled, accepted)))
                for redo in sequence[len(accepted):len(accepted) + back]:
                    if not matcher.try_accept_token(redo):
                        break
                    accepted.append(redo)
        for twin, twin_tokens in forks:  # forks never moved with the original
            np.testing.assert_array_equal(mask_row(twin), mask_row(replay(compiled, twin_tokens)))


def test_tree_rejects_bad_parent_indices(compiled):
    matcher = compiled.matcher()
    with pytest.raises(ValueError, match="parent"):
        matcher.validate_draft_tree([1, 2], [-1, 1])
    with pytest.raises(ValueError, match="parent indices"):
        matcher.validate_draft_tree([1, 2], [-1])
