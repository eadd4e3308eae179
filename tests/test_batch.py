"""BatchMatcher: rows filled serially or on a thread pool equal each matcher filled alone."""

from __future__ import annotations

import numpy as np
import pytest

import gramalign as ga

from support.mask_walks import mask_row, valid_sequences
from support.vocabularies import gpt2_vocabulary


@pytest.fixture(scope="module")
def json_compiled() -> ga.CompiledGrammar:
    return ga.compile(ga.Grammar.builtin("json"), gpt2_vocabulary())


@pytest.mark.parametrize("num_threads", [1, 4])
def test_batch_fill_equals_single_fills_and_skips_rows(json_compiled, num_threads):
    sequences = valid_sequences(json_compiled, 24, seed=4)
    batch = ga.BatchMatcher(json_compiled, len(sequences), num_threads=num_threads)
    singles = [json_compiled.matcher() for _ in sequences]
    longest = max(len(s) for s in sequences)
    rng = np.random.default_rng(0)
    for step in range(longest):
        rows = [i for i, s in enumerate(sequences) if step < len(s)]
        skipped = [i for i in rows if rng.random() < 0.2]
        filled = [i for i in rows if i not in skipped]
        bitmask = ga.allocate_token_bitmask_numpy(len(sequences), json_compiled.vocabulary.size)
        bitmask[:] = -1
        batch.fill_next_token_bitmask(bitmask, indices=filled)
        for i in range(len(sequences)):
            if i in filled:
                np.testing.assert_array_equal(bitmask[i], mask_row(singles[i]))
            else:
                assert (bitmask[i] == -1).all()
        tokens = [sequences[i][step] for i in rows]
        assert batch.accept_tokens(tokens, indices=rows) == [True] * len(rows)
        for i, token in zip(rows, tokens):
            singles[i].accept_token(token)
    assert batch.is_terminated() == [m.is_terminated() for m in singles]
    batch.close()


def test_batch_rejections_and_errors(json_compiled):
    batch = ga.BatchMatcher([json_compiled, json_compiled])
    vocab = json_compiled.vocabulary
    brace, letter = vocab.token_bytes.index(b"{"), vocab.token_bytes.index(b"x")
    assert batch.accept_tokens([brace, letter]) == [True, False]
    assert batch.matchers[1].num_accepted_tokens == 0  # the rejected row did not move
    batch.rollback(1, indices=[0])
    assert batch.matchers[0].num_accepted_tokens == 0
    with pytest.raises(ValueError, match="tokens for"):
        batch.accept_tokens([brace])
    with pytest.raises(IndexError, match="row 5"):
        batch.fill_next_token_bitmask(ga.allocate_token_bitmask_numpy(2, vocab.size), indices=[5])
    with pytest.raises(ValueError, match="rows for a batch"):
        batch.fill_next_token_bitmask(ga.allocate_token_bitmask_numpy(1, vocab.size))
    with pytest.raises(ValueError, match="batch_size"):
        ga.BatchMatcher(json_compiled)
