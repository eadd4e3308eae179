"""GrammarMatcher behaviour on a small explicit vocabulary, checked token by token."""

import numpy as np
import pytest

import gramalign as ga

TOKENS = [b"a", b"b", b"ab", b"ba", b"c", b"", b"\xc3", b"\xa9", b"\xc3\xa9", b"aa"]
EOS = 5  # the empty-bytes slot is the EOS special token
PADDED_SIZE = 40  # logits wider than the tokenizer: ids 10..39 are padding


def make_vocab():
    return ga.Vocabulary(token_bytes=tuple(TOKENS), size=PADDED_SIZE, special_token_ids=frozenset({EOS}),
                         eos_token_ids=(EOS,), kind="raw", add_prefix_space=False)


@pytest.fixture(scope="module")
def compiled():
    return ga.compile(ga.Grammar.from_regex(r"(ab)+c?|é"), make_vocab())


def allowed(matcher):
    return set(matcher.allowed_token_ids().tolist())


def test_initial_mask_and_progress(compiled):
    m = compiled.matcher()
    assert allowed(m) == {0, 2, 6, 8}  # a, ab, first byte of é, é
    m.accept_token(2)  # "ab" complete: may stop, continue with "ab" or end with "c"
    assert m.can_terminate() and allowed(m) == {0, 2, 4, EOS}
    m.accept_token(4)
    assert allowed(m) == {EOS}
    m.accept_token(EOS)
    assert m.is_terminated() and allowed(m) == {EOS}


def test_rejected_token_leaves_state_unchanged(compiled):
    m = compiled.matcher()
    m.accept_token(0)
    before = allowed(m)
    for bad in [0, 2, 4, EOS, 9]:
        with pytest.raises(ga.TokenRejected) as info:
            m.accept_token(bad)
        assert info.value.token_id == bad
        assert allowed(m) == before and m.num_accepted_tokens == 1
    assert not m.try_accept_token(4) and m.try_accept_token(1)


def test_out_of_range_padding_and_special_ids(compiled):
    m = compiled.matcher()
    for bad, message in [(-1, "out of range"), (PADDED_SIZE, "out of range"), (12, "padding")]:
        with pytest.raises(ga.TokenRejected, match=message):
            m.accept_token(bad)
    with pytest.raises(TypeError):
        m.accept_token("a")
    assert m.num_accepted_tokens == 0


def test_partial_utf8_tokens(compiled):
    m = compiled.matcher()
    m.accept_token(6)  # 0xC3: half of é
    assert allowed(m) == {7}
    m.accept_token(7)
    assert allowed(m) == {EOS}


def test_rollback_fork_reset_replay_identical(compiled):
    m = compiled.matcher()
    for token in [0, 1, 2]:
        m.accept_token(token)
    twin = m.fork()
    m.rollback(2)
    fresh = compiled.matcher()
    fresh.accept_token(0)
    assert allowed(m) == allowed(fresh) and m.num_accepted_tokens == 1
    assert allowed(twin) == {0, 2, 4, EOS}  # the fork did not move
    twin.accept_token(EOS)
    twin.rollback(1)
    assert not twin.is_terminated() and twin.can_terminate()
    with pytest.raises(ValueError):
        m.rollback(5)
    m.reset()
    assert allowed(m) == allowed(compiled.matcher()) and m.num_accepted_tokens == 0


def test_accept_string(compiled):
    m = compiled.matcher()
    m.accept_string("abab")
    assert m.can_terminate()
    with pytest.raises(ga.StringRejected) as info:
        m.accept_string("abx")
    assert info.value.offset == 2
    assert m.num_accepted_tokens == 1 and m.can_terminate()
    m.rollback(1)
    assert allowed(m) == allowed(compiled.matcher())


def test_fill_checks_shapes(compiled):
    m = compiled.matcher()
    with pytest.raises(ValueError, match="words"):
        m.fill_next_token_bitmask(np.zeros((1, 5), dtype=np.int32), 0)
    with pytest.raises(IndexError):
        m.fill_next_token_bitmask(np.zeros((1, 2), dtype=np.int32), 3)
    bitmask = np.zeros((2, 2), dtype=np.int32)
    m.fill_next_token_bitmask(bitmask, 1)
    assert bitmask[0].tolist() == [0, 0] and bitmask[1, 1] == 0  # padding words stay empty



def test_a_reused_bitmask_is_checked_again_where_it_changed(compiled):
    """The row of the last bitmask is remembered: another row, another array, or the same
    array reshaped or recast in place are each read anew (or refused), never the old row."""
    m = compiled.matcher()
    bitmask = np.zeros((2, 2), dtype=np.int32)
    m.fill_next_token_bitmask(bitmask, 0)
    m.fill_next_token_bitmask(bitmask, 1)
    assert bitmask[0].tolist() == bitmask[1].tolist() != [0, 0]
    bitmask[:] = 0
    m.fill_next_token_bitmask(bitmask, -1)
    assert bitmask[0].tolist() == [0, 0] and bitmask[1].tolist() != [0, 0]
    m.fill_next_token_bitmask(bitmask, 0)
    bitmask.shape = (1, 4)  # same buffer, rows twice as wide: refused, not written into row 0's old words
    with pytest.raises(ValueError, match="words"):
        m.fill_next_token_bitmask(bitmask, 0)
    bitmask.shape = (2, 2)
    m.fill_next_token_bitmask(bitmask, 0)
    bitmask.dtype = np.float32  # recast in place: refused as any float array is
    with pytest.raises((TypeError, ValueError)):
        m.fill_next_token_bitmask(bitmask, 0)

def test_empty_language_and_type_errors():
    with pytest.raises(ga.GrammarError, match="matches no string"):
        ga.compile(ga.Grammar.from_regex(r"[^\s\S]"), make_vocab())
    with pytest.raises(TypeError):
        ga.compile("abc", make_vocab())


def test_lazy_and_eager_indexes_agree():
    vocab = make_vocab()
    grammar = ga.Grammar.from_regex(r"(a|b|é)*c")
    eager, lazy = ga.compile(grammar, vocab, eager=True), ga.compile(grammar, vocab, eager=False)
    rng = np.random.default_rng(0)
    m1, m2 = eager.matcher(), lazy.matcher()
    for _ in range(20):
        assert allowed(m1) == allowed(m2)
        choices = sorted(allowed(m1) - {EOS})
        if not choices:
            break
        token = int(rng.choice(choices))
        m1.accept_token(token)
        m2.accept_token(token)


def test_states_no_token_can_complete_are_never_entered():
    """'a' then 'c' is only completable by byte 0x04, which no token spells: the token-level
    fixpoint must forbid 'a' (a byte-level mask would allow it and then get stuck)."""
    vocab = ga.Vocabulary.from_token_bytes([b"a", b"b", b"c", b"</s>"], eos_token_ids=[3])
    compiled = ga.compile(ga.Grammar.from_regex("(ac\x04|b)c?"), vocab)
    matcher = compiled.matcher()
    assert matcher.allowed_token_ids().tolist() == [1]
    matcher.accept_token(1)
    assert matcher.allowed_token_ids().tolist() == [2, 3]
    with pytest.raises(ga.GrammarError, match="spelled"):
        ga.compile(ga.Grammar.from_regex("a\x04"), vocab)
    with pytest.raises(ga.TokenRejected):
        matcher.rollback(1)
        matcher.accept_token(0)
