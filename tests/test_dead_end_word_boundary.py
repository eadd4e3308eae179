"""A known dead end (found 2026-12-04, not fixed yet): a keyword that must end at a word
boundary, followed by the first byte of a two-byte character.

After ``x and`` the byte 0xC2 is allowed: it may start a character that is not a word
character (U+00A0, so ``and`` ends at a boundary) and it may start a NAME (U+00AA, a
letter), and the mask checks the two apart. No continuation satisfies both, and the mask
after ``x and\\xc2`` is empty: the matcher reached a state with no way on. The oracle is the
mask itself: every byte it allows must leave some byte allowed after it (or the end).
"""

from __future__ import annotations


import numpy as np
import pytest

import gramalign as ga
from support.grammar_walks import byte_vocabulary


def _allowed(compiled, prefix: bytes) -> np.ndarray:
    matcher = compiled.matcher()
    matcher.accept_string(prefix)
    bitmask = np.zeros((1, compiled.bitmask_width), dtype=np.int32)
    matcher.fill_next_token_bitmask(bitmask, 0)
    return np.flatnonzero(np.unpackbits(bitmask.view(np.uint8)[0], bitorder="little")[:compiled.vocabulary.size])


@pytest.mark.xfail(strict=True, reason="word boundary and the next lexeme are checked apart at a multi-byte "
                                       "character (issue 35 note, session 25)")
def test_no_byte_after_a_keyword_leads_to_a_dead_end():
    compiled = ga.compile(ga.Grammar.builtin("python"), byte_vocabulary())
    assert len(_allowed(compiled, b"x and")) > 0
    dead = [b for b in _allowed(compiled, b"x and").tolist() if b < 256 and len(_allowed(compiled, b"x and" + bytes([b]))) == 0]
    assert dead == []
