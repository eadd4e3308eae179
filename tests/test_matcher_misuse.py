"""Matcher misuse raises a GramalignError or the conventional Python error, with a message
that says what was wrong, and leaves the matcher as it was; for a regex grammar (DFA index)
and a context-free one (incremental parser) alike."""

import numpy as np
import pytest

import gramalign as ga
from support.grammar_walks import EOS, byte_vocabulary

GRAMMARS = {
    "regex": lambda: ga.Grammar.from_regex(r"\[(1,)*1\]"),
    "schema": lambda: ga.Grammar.from_json_schema({"type": "array", "items": {"const": 1}}),
}


@pytest.fixture(scope="module", params=list(GRAMMARS))
def compiled(request):
    return ga.compile(GRAMMARS[request.param](), byte_vocabulary())


def _unchanged(matcher, before):
    assert matcher.num_accepted_tokens == before[0]
    assert matcher.allowed_token_ids().tolist() == before[1]


@pytest.mark.parametrize("token, error, words", [
    (1.0, TypeError, "must be an int"), (True, TypeError, "must be an int"), ("[", TypeError, "must be an int"),
    (None, TypeError, "must be an int"), (10 ** 30, ga.TokenRejected, "out of range"),
    (-1, ga.TokenRejected, "out of range"), (ord("x"), ga.TokenRejected, "rejected"),
])
def test_bad_token_ids(compiled, token, error, words):
    m = compiled.matcher()
    m.accept_token(ord("["))
    before = (m.num_accepted_tokens, m.allowed_token_ids().tolist())
    with pytest.raises(error, match=words):
        m.accept_token(token)
    _unchanged(m, before)
    if error is TypeError:
        with pytest.raises(TypeError, match="must be an int"):
            m.is_token_allowed(token)


@pytest.mark.parametrize("steps, error, words", [
    ("1", TypeError, "num_steps must be an int"), (1.5, TypeError, "num_steps must be an int"),
    (-1, ValueError, "cannot roll back -1"), (3, ValueError, "only 2 were accepted"),
])
def test_bad_rollbacks(compiled, steps, error, words):
    m = compiled.matcher()
    m.accept_string("[1")
    m.accept_token(ord(","))
    before = (m.num_accepted_tokens, m.allowed_token_ids().tolist())
    with pytest.raises(error, match=words):
        m.rollback(steps)
    _unchanged(m, before)
    m.rollback(np.int64(2))  # numpy integers are ints
    assert m.num_accepted_tokens == 0


@pytest.mark.parametrize("text", [5, None, 1.5, ["["]])
def test_accept_string_refuses_what_is_not_text(compiled, text):
    # bytes(5) is five zero bytes: taking it would reject (or accept) the wrong text
    m = compiled.matcher()
    with pytest.raises(TypeError, match="str or bytes"):
        m.accept_string(text)
    assert m.num_accepted_tokens == 0


def test_tokens_after_eos_and_strings_after_eos(compiled):
    m = compiled.matcher()
    m.accept_string("[1]")
    m.accept_token(EOS)
    assert m.is_terminated()
    with pytest.raises(ga.TokenRejected, match="terminated"):
        m.accept_token(ord("["))
    with pytest.raises(ga.StringRejected, match="terminated"):
        m.accept_string("[")
    # a finished row's mask offers only EOS (a batch pads with it), but the matcher itself
    # takes nothing more
    assert m.allowed_token_ids().tolist() == [EOS]
    with pytest.raises(ga.TokenRejected, match="terminated"):
        m.accept_token(EOS)
    m.rollback(1)  # the EOS only: "[1]" was one step
    assert not m.is_terminated() and m.can_terminate()


@pytest.mark.parametrize("bitmask, error, words", [
    ([[0] * 9], TypeError, "numpy array or a torch tensor"),
    (np.zeros((1, 9), dtype=np.float32), ValueError, "int32"),
    (np.zeros((1, 5), dtype=np.int32), ValueError, "words"),
])
def test_bad_bitmasks(compiled, bitmask, error, words):
    with pytest.raises(error, match=words):
        compiled.matcher().fill_next_token_bitmask(bitmask)


def test_forced_bytes_refuses_a_negative_length(compiled):
    with pytest.raises(ValueError, match="max_bytes"):
        compiled.matcher().forced_bytes(-1)
    assert compiled.matcher().forced_bytes(0) == b""
    assert compiled.matcher().forced_bytes() in (b"[", b"[1")  # "[1" for the regex: an item is required
