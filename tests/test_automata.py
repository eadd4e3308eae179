"""DFA algebra and integer-range regexes against brute force over all short strings."""

from __future__ import annotations

import itertools
import random
import re

import pytest

from gramalign.errors import GrammarError
from gramalign.grammar.automata.algebra import complement, concatenate, difference, intersect, optional, repeat, star, union
from gramalign.grammar.automata.dfa import StateLimitError
from gramalign.grammar.json_schema.integer_ranges import integer_range_dfa, integer_range_regex
from gramalign.grammar.automata.regex import regex_to_dfa

ALPHABET = "ab,"
PATTERNS = [r"a*", r"(ab)*", r"a?b+", r"[ab]{2,3}", r"b(a|,)*", r"", r"a,b", r"(a|b),?"]


def strings(max_length: int = 6):
    for n in range(max_length + 1):
        for letters in itertools.product(ALPHABET, repeat=n):
            yield "".join(letters)


@pytest.mark.parametrize("p, q", list(itertools.combinations(PATTERNS, 2)))
def test_boolean_operations(p, q):
    a, b = regex_to_dfa(p), regex_to_dfa(q)
    universe = regex_to_dfa(r"[ab,]*")
    ops = {"and": intersect(a, b), "or": union(a, b), "minus": difference(a, b), "not": complement(a, universe)}
    for s in strings():
        in_a, in_b = re.fullmatch(p, s) is not None, re.fullmatch(q, s) is not None
        data = s.encode()
        assert ops["and"].matches(data) == (in_a and in_b), (s, "and")
        assert ops["or"].matches(data) == (in_a or in_b), (s, "or")
        assert ops["minus"].matches(data) == (in_a and not in_b), (s, "minus")
        assert ops["not"].matches(data) == (not in_a), (s, "not")


@pytest.mark.parametrize("p, q", [(r"a*", r"b"), (r"", r"ab"), (r"(ab)*", r"a?")])
def test_sequences(p, q):
    a, b = regex_to_dfa(p), regex_to_dfa(q)
    both = concatenate([a, b])
    many = star(a)
    maybe = optional(b)
    for s in strings():
        data = s.encode()
        assert both.matches(data) == (re.fullmatch(f"(?:{p})(?:{q})", s) is not None), s
        assert many.matches(data) == (re.fullmatch(f"(?:{p})*", s) is not None), s
        assert maybe.matches(data) == (re.fullmatch(f"(?:{q})?", s) is not None), s


@pytest.mark.parametrize("low, high", [(0, 0), (0, 2), (1, 3), (2, None), (0, None), (3, 3)])
def test_repeat_with_separator(low, high):
    item = regex_to_dfa(r"a|bb")
    dfa = repeat(item, low, high, separator=regex_to_dfa(","))
    bound = "" if high is None else str(high)
    for s in strings(7):
        items = s.split(",") if s else []
        expected = all(re.fullmatch(r"a|bb", i) for i in items) and low <= len(items) <= (high if high is not None else 99)
        if s == "":
            expected = low == 0
        assert dfa.matches(s.encode()) == expected, (s, low, bound)


def test_limits_raise():
    wide = regex_to_dfa(r"(a|b)*a(a|b){9}")
    with pytest.raises(StateLimitError):
        intersect(wide, regex_to_dfa(r"(a|b)*b(a|b){9}"), max_states=500)


def integer_strings(rng: random.Random, around: list[int]):
    values = set(range(-130, 131))
    for centre in around:
        values.update(centre + d for d in range(-3, 4))
    spelled = {str(v) for v in values} | {"-0", "00", "01", "-01", "+1", "1.0", "", "-"}
    spelled |= {str(rng.randrange(-10**40, 10**40)) for _ in range(300)}
    return sorted(spelled)


BOUNDS = [(0, 0), (-5, 12), (7, 7), (1, 99), (10, 1000), (-1000, -10), (None, 0), (0, None), (None, None),
          (123, None), (None, -123), (-99, 99), (19, 21), (100, 199), (None, 10**30), (-10**30 - 7, 10**30 + 3),
          (998, 1002), (5, 50)]


@pytest.mark.parametrize("low, high", BOUNDS)
def test_integer_ranges_exact(low, high):
    pattern = re.compile(integer_range_regex(low, high))
    dfa = integer_range_dfa(low, high)
    rng = random.Random(f"{low}-{high}")
    centres = [b for b in (low, high) if b is not None]
    for s in integer_strings(rng, centres):
        canonical = re.fullmatch(r"-?(0|[1-9][0-9]*)", s) is not None
        expected = canonical and (low is None or int(s) >= low) and (high is None or int(s) <= high)
        assert (pattern.fullmatch(s) is not None) == expected, (s, low, high)
        assert dfa.matches(s.encode()) == expected, (s, low, high, "dfa")


def test_integer_range_regex_stays_small_for_huge_bounds():
    pattern = integer_range_regex(-(10**300) + 17, 10**300 - 5)
    assert len(pattern) < 100 * 300  # linear in the digits of the bounds
    assert re.fullmatch(pattern, str(10**300 - 5)) and not re.fullmatch(pattern, str(10**300 - 4))


def test_integer_range_dfa_is_linear_in_the_digits():
    low, high = -(10**300) + 17, 10**300 - 5
    dfa = integer_range_dfa(low, high)
    assert dfa.num_states < 3_000
    rng = random.Random(9)
    for value in [high, high + 1, low, low - 1, 0, 10**299, -(10**300) + 16] + [
            rng.randrange(-(10**301), 10**301) for _ in range(200)]:
        assert dfa.matches(str(value).encode()) == (low <= value <= high), value


def test_empty_integer_range_is_an_error():
    with pytest.raises(GrammarError, match="empty"):
        integer_range_regex(3, 2)
    with pytest.raises(GrammarError, match="empty"):
        integer_range_dfa(3, 2)


@pytest.mark.parametrize("pattern", ["abc|ab|b{3}", "(ab)+c", "[0-9]{2,4}|x{5}", "a*", "(a|b)(a|b)c|bcd?"])
def test_shortest_word_is_accepted_and_no_shorter_word_is(pattern):
    """Oracle: every string over the pattern's letters up to the word's length, by ``re``."""
    dfa = regex_to_dfa(pattern)
    word = dfa.shortest_word()
    assert re.fullmatch(pattern, word.decode())
    letters = sorted(set(re.sub(r"[^a-z0-9]", "", pattern)) | set("0123456789"))
    for length in range(len(word)):
        for text in itertools.product(letters, repeat=length):
            assert not re.fullmatch(pattern, "".join(text)), "".join(text)


@pytest.mark.parametrize("pair", [("[a-c]+x", "b*x|cc*x"), ("(ab)+", "a(ba)*b"), ("[0-9]{3}", "1[0-9]*"), ("a+", "b+"),
                                  ("(a|b)*abb", "(a|b)*bab(a|b)*"), ("x{2,5}", "x{6}")])
def test_common_word_is_in_both_and_no_shorter_word_is(pair):
    """Oracle: ``re`` over every string of the patterns' letters up to the word's length (and
    up to six letters where the word is None: the two languages share no string)."""
    left, right = pair
    word = regex_to_dfa(left).common_word(regex_to_dfa(right))
    letters = sorted(set(re.sub(r"[^a-z0-9]", "", left + right)) | (set("0123456789") if "[0-9]" in left + right
                                                                       else set()))
    both = lambda text: re.fullmatch(left, text) and re.fullmatch(right, text)  # noqa: E731
    if word is not None:
        assert both(word.decode())
    for length in range(len(word) if word is not None else 7):
        for text in itertools.product(letters, repeat=length):
            assert not both("".join(text)), "".join(text)
    assert (word is None) == (pair in {("a+", "b+"), ("x{2,5}", "x{6}")})


def test_common_word_stops_at_its_budget():
    big = regex_to_dfa("[a-z]{0,6}z")
    with pytest.raises(StateLimitError):
        big.common_word(regex_to_dfa("[a-z]*q"), max_pairs=4)
