"""Lazy quantifiers read as lark reads them: the lexeme is ``re.match``'s first match.

``first_match_dfa`` claims that for its shapes the first match is the shortest prefix the
pattern fully matches, and builds the DFA of those prefixes. Random patterns of the shapes
it accepts are held to ``re.match`` on random texts; shapes it refuses include ones where
first and shortest differ.
"""

from __future__ import annotations

import random
import re

import pytest

from gramalign.grammar.first_match import LazyQuantifierError, first_match_dfa

ONE_WIDE = ["a", "b", "c", "[ab]", "[^a]", ".", "(?:a|c)", "(.|\\n)"]
FIXED = ONE_WIDE + ["ab", "(?:ab|ca)", "c{2}", "(?:[ab]c)", "[bc][bc]", "[abc]{2}"]
LAZY = ["*?", "+?", "??", "{1,3}?", "{2,}?"]


def random_shape(rng: random.Random) -> str:
    parts, lazy = [], 0
    for _ in range(rng.randint(2, 5)):
        if rng.random() < 0.6:
            body = rng.choice(FIXED if lazy == 0 else ONE_WIDE)
            parts.append(f"(?:{body}){rng.choice(LAZY)}")
            lazy += 1
        else:
            parts.append(rng.choice(FIXED))
    if not lazy:
        parts.append(f"(?:{rng.choice(FIXED)}){rng.choice(LAZY)}")
    return "".join(parts)


def dfa_lexeme(dfa, text: str):
    """The prefix of ``text`` the DFA accepts (its language has no word that is a proper
    prefix of another, so there is at most one)."""
    data, state, found = text.encode(), dfa.initial, []
    for end in range(len(data) + 1):
        if dfa.accepting[state]:
            found.append(data[:end].decode())
        if end == len(data) or (state := int(dfa.transitions[state, data[end]])) < 0:
            break
    assert len(found) <= 1, found
    return found[0] if found else None


@pytest.mark.parametrize("seed", range(300))
def test_first_match_of_accepted_shapes_is_res(seed):
    rng = random.Random(seed)
    pattern = random_shape(rng)
    dfa = first_match_dfa(pattern)
    compiled = re.compile(pattern)
    for _ in range(300):
        text = "".join(rng.choice("abc\n") for _ in range(rng.randint(0, 12)))
        found = compiled.match(text)
        expected = found.group() if found else None
        if expected == "":
            continue  # an empty lexeme: lark refuses such terminals anyway
        assert dfa_lexeme(dfa, text) == expected, (pattern, text)


@pytest.mark.parametrize("pattern", [
    r"a.*?([bc][bc])*?c",  # on 'abcc', re.match takes 'abcc', the shortest is 'abc'
    r"a(?:ab|a)*?b",  # a body without a fixed width
    r"a.*?b+",  # a greedy repeat after the lazy one
    r"(?:a.*?b|c.*?d)",  # lazy inside an alternation
    r"a.*?\b",  # an anchor reads past the match
])
def test_other_lazy_shapes_are_refused(pattern):
    with pytest.raises(LazyQuantifierError):
        first_match_dfa(pattern)


def test_the_refused_example_does_differ():
    pattern = r"a.*?([bc][bc])*?c"
    assert re.match(pattern, "abccabbcac").group() == "abcc"
    assert re.fullmatch(pattern, "abc")


def test_patterns_without_lazy_quantifiers_are_left_alone():
    for pattern in [r'"[^"]*"', r"a{3}?", r"(ab)+", r"x*"]:
        assert first_match_dfa(pattern) is None
