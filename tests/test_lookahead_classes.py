"""A lookahead that reads past the match (negative, or positive of one character) splits a
pattern's lexemes by what must (not) follow them (``regex_lookahead_classes``). Oracle:
``re`` itself. ``w`` is a match of the pattern at the start of ``text`` exactly when ``re.match(P(?<=\\Aw), text)`` succeeds (the
lookbehind pins the end, and ``re`` backtracks through every route to it, its lookaheads
reading the real text after ``w``); the classes must say the same for every prefix of
random texts.
"""

from __future__ import annotations

import random
import re

import pytest

from gramalign.grammar.automata.lookaround import LookaroundError
from gramalign.grammar.automata.regex import regex_lookahead_classes, regex_to_dfa

ALPHABET = "abc0\""


def random_pattern(rng: random.Random) -> str:
    def piece():
        return rng.choice(["a", "b", "c", "[ab]", "0", "(?:ab|b)", "a?", "b*", "(?:a|bc)+", '"'])

    def ahead():
        return rng.choice(["(?!b)", "(?!ab)", "(?!b*c)", "(?![ac])", '(?!"")', "(?!a?b)", "(?!(?:ab)+c)",
                           "(?=b)", "(?=[ac])", r"\b", r"\B"])

    alternatives = []
    for _ in range(rng.randint(1, 2)):
        parts = [piece() for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.3:  # an assertion that reads inside the match
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(["[ab](?<!a)", "(?=[ab])[ab]"]))
        parts.insert(rng.randint(max(0, len(parts) - 2), len(parts)), ahead())
        alternatives.append("".join(parts))
    return "|".join(alternatives)


def matches_at_start(compiled_with_end, text: str) -> bool:
    return compiled_with_end.match(text) is not None


def model_says(classes, word: bytes, after: bytes) -> bool:
    for lexemes, forbidden, needs_text in classes:
        if lexemes.matches(word):
            if needs_text and not after:
                return False
            return forbidden is None or not any(forbidden.matches(after[:k]) for k in range(1, len(after) + 1))
    return False


@pytest.mark.parametrize("seed", range(150))
def test_classes_say_what_re_match_says(seed):
    rng = random.Random(seed)
    pattern = random_pattern(rng)
    try:
        found = regex_lookahead_classes(pattern)
    except LookaroundError as refusal:  # how many: test_most_patterns_are_read
        assert any(reason in str(refusal) for reason in ("different texts the lookahead forbids",
                                                          "reads the character before")), (pattern, refusal)
        return
    if found is None:  # every lookahead reads inside the match: the language is re.fullmatch's
        dfa = regex_to_dfa(pattern)
        for _ in range(200):
            text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 8)))
            assert dfa.matches(text.encode()) == (re.fullmatch(pattern, text) is not None), (pattern, text)
        return
    assert_classes_say_what_re_says(pattern, found, rng)


def assert_classes_say_what_re_says(pattern: str, found, rng: random.Random) -> None:
    everything, classes = found
    for _ in range(120):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 8)))
        for end in range(1, len(text) + 1):
            word = text[:end]
            pinned = re.compile(f"(?:{pattern})(?<=\\A{re.escape(word)})")
            expected = matches_at_start(pinned, text)
            data = text.encode()
            assert model_says(classes, data[:end], data[end:]) == expected, (pattern, text, word)
            if expected:
                assert everything.matches(data[:end]), (pattern, word)


@pytest.mark.parametrize("pattern", [r"a(?=[\s\S])", r"(?:ab*|c)(?=[\s\S])", r"a(?=[\s\S])b?", r"b|a(?=[\s\S])"])
def test_a_lookahead_that_forbids_nothing_only_needs_text(pattern):
    """``(?=[\\s\\S])`` forbids no character: only the end of the text (python.lark's line
    continuation may not end it)."""
    found = regex_lookahead_classes(pattern)
    assert found is not None and any(needs for _, _, needs in found[1])
    assert_classes_say_what_re_says(pattern, found, random.Random(pattern))


def test_most_patterns_are_read():
    refused = []
    for seed in range(150):
        pattern = random_pattern(random.Random(seed))
        try:
            regex_lookahead_classes(pattern)
        except LookaroundError:
            refused.append(pattern)
    assert len(refused) < 30, refused[:10]


def test_python_lark_terminals():
    """``STRING``'s lookahead after the opening quote reads past the lexeme ``""`` only;
    ``DEC_NUMBER``'s reads the character after every lexeme."""
    _, classes = regex_lookahead_classes(r'''(?i:([ubf]?r?|r[ubf])("(?!"").*?(?<!\\)(\\\\)*?"|'(?!'').*?(?<!\\)(\\\\)*?'))''')
    conditional = sorted((lexemes.matches(b'""'), lexemes.matches(b"rb''"), forbidden.matches(b'"'))
                         for lexemes, forbidden, _ in classes if forbidden is not None)
    assert conditional == [(False, True, False), (True, False, True)]
    _, classes = regex_lookahead_classes(r'"0" ("_"? "0")* (?![1-9])'.replace('"', "").replace(" ", ""))
    assert len(classes) == 1 and classes[0][1].matches(b"7") and not classes[0][1].matches(b"0")


@pytest.mark.parametrize("pattern", [
    r"(?<=b)a",  # a lookbehind reading before the match
    r"a(?=bc)",  # a positive lookahead of two characters past the match
    r"\ba",  # a word boundary reading the character before the match
    r"a(?!b)(?!c)",  # two lookaheads past the match in one alternative
    r"a*(?!b)a*",  # "a" ends where the lookahead reads "b" past it, or inside "aa" where it reads "a"
])
def test_refused(pattern):
    with pytest.raises(LookaroundError):
        regex_lookahead_classes(pattern)


def test_a_positive_lookahead_of_one_character_needs_text_after():
    """``a(?=b)`` and the boundary of ``[ab-]+\\B``: the lexeme must be followed, and not by
    another character (by a word character, for the boundary, after a word character)."""
    _, classes = regex_lookahead_classes(r"a(?=b)")
    assert [(needs, forbidden.matches(b"c"), forbidden.matches(b"b")) for _, forbidden, needs in classes] == [
        (True, True, False)]
    _, classes = regex_lookahead_classes(r"[ab-]+\B")
    by_end = {lexemes.matches(b"ab"): (forbidden is not None and forbidden.matches(b"-"), needs)
              for lexemes, forbidden, needs in classes}
    assert by_end == {True: (True, True), False: (False, False)}  # "a-" may end a text; "ab" may not


def test_patterns_without_outside_lookaheads_have_no_classes():
    assert regex_lookahead_classes(r"a(?!b)b*c") is None
    assert regex_lookahead_classes(r"abc") is None
