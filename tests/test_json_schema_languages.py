"""The leaf languages of the JSON Schema compiler, checked against json and decimal.

Strings: a contents language turned into JSON literals must accept every spelling of its
strings (raw, short escapes, \\u escapes in either case, surrogate pairs) and nothing else;
``json.loads`` decides what a literal denotes. Numbers: bounds, multipleOf and literals
against :class:`decimal.Decimal` arithmetic on many exponent-free spellings.
"""

import itertools
import json
import random
import re
from decimal import Decimal

import numpy as np
import pytest

from gramalign.grammar.json_schema.numbers import all_numbers, bounded, integers, multiple_of, number_literal
from gramalign.grammar.json_schema.strings import any_string_contents, json_string_dfa, length_dfa
from gramalign.grammar.automata.regex import regex_to_dfa

ALPHABET = ["a", "b", "é", "😀", "x", '"', "\\", "\n", "/", "\x00", "\u2028"]


def random_spelling(text: str, rng: random.Random) -> str:
    """A JSON literal for ``text`` mixing raw characters and every kind of escape."""
    out = []
    for ch in text:
        code = ord(ch)
        roll = rng.random()
        if code >= 0x10000 and roll < 0.5:
            v = code - 0x10000
            out.append("\\u%04x\\u%04X" % (0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)))
        elif ch in '"\\' or code < 0x20 or roll < 0.3:
            out.append(("\\u%04x" if rng.random() < 0.5 else "\\u%04X") % code if rng.random() < 0.5
                       else json.dumps(ch)[1:-1])
        elif ch == "/" and roll < 0.6:
            out.append("\\/")
        else:
            out.append(ch)
    literal = '"' + "".join(out) + '"'
    assert json.loads(literal) == text
    return literal


@pytest.mark.parametrize("pattern", [r"a[bé]{1,3}|😀x?", r"[^a]*", r"(\n|/)+\x00?", r".{0,2}"])
def test_json_string_dfa_accepts_exactly_the_spellings_of_its_contents(pattern):
    contents = regex_to_dfa(pattern, flags=re.DOTALL)
    literals = json_string_dfa(contents)
    rng = random.Random(hash(pattern) % 1000)
    for _ in range(3000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 4)))
        expected = re.fullmatch(pattern, text, re.DOTALL) is not None
        for literal in (json.dumps(text), json.dumps(text, ensure_ascii=False), random_spelling(text, rng)):
            assert literals.matches(literal.encode()) == expected, (pattern, literal)


def test_any_string_rejects_malformed_literals():
    literals = json_string_dfa(any_string_contents())
    rng = random.Random(3)
    for _ in range(2000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 5)))
        assert literals.matches(json.dumps(text).encode())
    for bad in ['"\\u12"', '"\\ud83d"', '"\\ud83d\\u0041"', '"\\udc00"', '"\\x"', '"a\nb"', '"a', 'a"',
                '"\\U0041"', '"""']:
        assert not literals.matches(bad.encode()), bad


def test_length_counts_code_points():
    rng = random.Random(4)
    dfa = length_dfa(2, 3)
    for _ in range(500):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 5)))
        assert dfa.matches(text.encode()) == (2 <= len(text) <= 3)


@pytest.mark.parametrize("minimum, maximum", [(0, 0), (0, 1), (1, 1), (2, 3), (0, 9), (4, 4), (1, None), (2, None),
                                              (5, None), (3, 70)])
def test_length_automaton_is_the_code_point_chain_encoded(minimum, maximum):
    # laid out directly; oracle: the chain of code points as an NFA, determinised and
    # encoded in UTF-8 (the construction it replaces), state for state; and Python's
    # own UTF-8 on random strings and byte strings (invalid UTF-8, surrogates, overlongs)
    from gramalign.grammar.automata.dfa import NFA, UNICODE_SCALARS, nfa_to_utf8_dfa

    nfa = NFA()
    top = minimum if maximum is None else maximum
    states = [nfa.initial] + [nfa.add_state() for _ in range(top)]
    nfa.accepting.update(states[minimum:])
    for k in range(top):
        nfa.add_edge(states[k], UNICODE_SCALARS, states[k + 1])
    if maximum is None:
        nfa.add_edge(states[top], UNICODE_SCALARS, states[top])
    expected, dfa = nfa_to_utf8_dfa(nfa), length_dfa(minimum, maximum)
    assert dfa.initial == expected.initial and np.array_equal(dfa.accepting, expected.accepting)
    assert np.array_equal(dfa.transitions, expected.transitions) and dfa.digest == expected.digest
    rng = random.Random(top)
    alphabet = list(ALPHABET) + list("\u0080\u07ff\u0800\ud7ff\ue000\uffff\U00010000\U0010ffff")
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, top + 2)))
        assert dfa.matches(text.encode()) == (minimum <= len(text) and (maximum is None or len(text) <= maximum))
        data = bytes(rng.choice(b"a\x7f\x80\xbf\xc0\xc1\xc2\xdf\xe0\xed\xa0\x9f\xf0\x90\xf4\x8f\xf5")
                     for _ in range(rng.randint(0, 8)))
        try:
            decoded = data.decode("utf-8")
        except UnicodeDecodeError:
            decoded = None
        assert dfa.matches(data) == (decoded is not None and minimum <= len(decoded)
                                     and (maximum is None or len(decoded) <= maximum)), data


def test_a_length_automaton_past_the_state_limit_is_refused():
    from gramalign.grammar.automata.dfa import StateLimitError

    with pytest.raises(StateLimitError, match="max_states=80"):
        length_dfa(0, 10, max_states=80)
    assert length_dfa(0, 9, max_states=80).num_states == 73


def _spellings(rng: random.Random) -> list[str]:
    out = set()
    for _ in range(4000):
        whole = rng.choice(["0", str(rng.randint(1, 9)), str(rng.randint(10, 99)), str(rng.randint(100, 999))])
        fraction = rng.choice(["", "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 4))),
                               ".0", ".00", ".5", ".25", ".250"])
        out.add(rng.choice(["", "-"]) + whole + fraction)
    return sorted(out | {"01", "1.", ".5", "-", "1e5", "--1", "1.2.3", "", "-0", "-0.0"})


SPELLINGS = _spellings(random.Random(1))
DECIMAL_SYNTAX = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")


def _value(spelling: str) -> Decimal | None:
    return Decimal(spelling) if DECIMAL_SYNTAX.fullmatch(spelling) else None


@pytest.mark.parametrize("lower,lower_exclusive,upper,upper_exclusive", [
    ("0.5", False, "12.25", True), ("-3.75", True, "0", False), ("0", True, None, False),
    (None, False, "-0.05", False), ("-10", False, "10", False), ("0", False, "0", False),
    ("99.9", False, None, True), ("-0.001", True, "0.001", True)])
def test_bounds_agree_with_decimal_arithmetic(lower, lower_exclusive, upper, upper_exclusive):
    lo = Decimal(lower) if lower is not None else None
    hi = Decimal(upper) if upper is not None else None
    dfa = bounded(lo, lower_exclusive, hi, upper_exclusive)
    for spelling in SPELLINGS:
        v = _value(spelling)
        expected = v is not None and (lo is None or (v > lo if lower_exclusive else v >= lo)) and (
            hi is None or (v < hi if upper_exclusive else v <= hi))
        assert dfa.matches(spelling.encode()) == expected, spelling


@pytest.mark.parametrize("divisor", ["1", "2", "3", "0.5", "0.25", "7", "0.01", "1.5", "10", "0.0001", "25", "1e1"])
def test_multiple_of_agrees_with_decimal_arithmetic(divisor):
    dfa = multiple_of(Decimal(divisor))
    for spelling in SPELLINGS:
        v = _value(spelling)
        assert dfa.matches(spelling.encode()) == (v is not None and v % Decimal(divisor) == 0), spelling


@pytest.mark.parametrize("value", ["0", "1", "-2.5", "0.001", "100"])
def test_number_literal_is_every_spelling_of_the_value(value):
    dfa = number_literal(Decimal(value))
    for spelling in SPELLINGS:
        v = _value(spelling)
        assert dfa.matches(spelling.encode()) == (v is not None and v == Decimal(value)), spelling


def test_integer_and_full_number_syntax():
    full = all_numbers()
    for text in ["0", "-0", "1e5", "1E+5", "-2.5e-3", "10.0"]:
        assert full.matches(text.encode()) and json.loads(text) is not None
    for text in ["01", "1.", ".5", "+1", "1e", "--1", "NaN", "Infinity"]:
        assert not full.matches(text.encode())
    assert integers(True).matches(b"3.000") and not integers(False).matches(b"3.0")
    assert not integers(True).matches(b"3.01")


def test_minimal_escapes_are_exactly_what_json_dumps_writes():
    literals = json_string_dfa(any_string_contents(), escapes="minimal")
    rng = random.Random(5)
    for _ in range(2000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 5)))
        assert literals.matches(json.dumps(text, ensure_ascii=False).encode())
        other = random_spelling(text, rng)
        assert literals.matches(other.encode()) == (other == json.dumps(text, ensure_ascii=False)) or \
            json.loads(other) == text and other.lower() == json.dumps(text, ensure_ascii=False).lower()


def test_code_point_lengths_match_enumeration():
    """Fewest and most code points of a pattern's strings, against enumerating its language
    (None when unbounded); a long maxLength the pattern already implies is then free."""
    from gramalign.grammar.json_schema.ecma_regex import ecma_pattern_dfa
    from gramalign.grammar.json_schema.strings import code_point_lengths, with_length

    alphabet = ["a", "b", "é", "😀"]
    for pattern in ["^[ab]{1,3}$", "^é{2}(a|😀)?$", "^(ab|b)$", "^$", "^a*$", "^(a|é😀){0,2}b$", "^(ab|abé😀)a?$",
                    "^[ab]{2,3}(é|b){1,2}$", "^(a*|b)é$"]:
        dfa = ecma_pattern_dfa(pattern)
        lengths = [n for n in range(6) for word in itertools.product(alphabet, repeat=n)
                   if dfa.matches("".join(word).encode())]
        shortest, longest = code_point_lengths(dfa)
        assert shortest == min(lengths)
        assert longest == (None if "*" in pattern else max(lengths))
    bounded = ecma_pattern_dfa("^[a-z0-9]{1,30}$")
    assert with_length(bounded, 1, 500) is bounded  # implied: no product built
    cut = with_length(bounded, 3, 500)
    assert not cut.matches(b"ab") and cut.matches(b"abc") and cut.matches(b"a" * 30)
