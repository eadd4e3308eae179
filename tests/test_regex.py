"""regex_to_dfa against its oracle, Python's own ``re.fullmatch``; plus the DFA machinery."""

from __future__ import annotations

import functools
import itertools
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gramalign.errors import RegexError
from gramalign.grammar.automata.dfa import (
                                            DEAD,
                                            NFA,
                                            ByteDFA,
                                            dfa_from_table,
                                            literal_dfa,
                                            minimize,
                                            nfa_to_byte_dfa,
                                            )
from gramalign.grammar.automata.regex import regex_to_dfa

# --------------------------------------------------------------------------- helpers


def byte_trace(dfa: ByteDFA, data: bytes) -> list[int]:
    """States visited while reading ``data`` (stops after the first DEAD)."""
    state = dfa.initial
    trace = [state]
    for byte in data:
        if state == DEAD:
            break
        state = int(dfa.transitions[state, byte])
        trace.append(state)
    return trace


def assert_agrees_with_re(dfa: ByteDFA, pattern: str, text: str, flags: int = 0) -> None:
    data = text.encode("utf-8")
    expected = re.fullmatch(pattern, text, flags) is not None
    assert dfa.matches(data) == expected, (pattern, text)
    if expected:
        # Every prefix of a member must be a live prefix.
        assert DEAD not in byte_trace(dfa, data), (pattern, text)


@functools.cache
def all_code_points() -> tuple[np.ndarray, str, np.ndarray, np.ndarray]:
    """Every non-surrogate code point, as an array, as one string, and UTF-8 encoded.

    Returns (code points, text, encoded bytes [N, 4] zero-padded, encoded lengths).
    """
    cps = np.concatenate([np.arange(0xD800), np.arange(0xE000, 0x110000)]).astype(np.int64)
    text = cps.astype("<u4").tobytes().decode("utf-32-le")
    lengths = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)
    encoded = np.zeros((cps.size, 4), dtype=np.int64)
    for length, prefix in ((1, 0x00), (2, 0xC0), (3, 0xE0), (4, 0xF0)):
        rows = lengths == length
        cp = cps[rows]
        encoded[rows, 0] = prefix | (cp >> (6 * (length - 1)))
        for i in range(1, length):
            encoded[rows, i] = 0x80 | ((cp >> (6 * (length - 1 - i))) & 0x3F)
    return cps, text, encoded, lengths


def single_characters_accepted(dfa: ByteDFA) -> np.ndarray:
    """Boolean mask over all_code_points(): which one-character strings the DFA accepts."""
    cps, _, encoded, lengths = all_code_points()
    if dfa.num_states == 0:
        return np.zeros(cps.size, dtype=bool)
    state = np.full(cps.size, dfa.initial, dtype=np.int64)
    for i in range(4):
        active = (lengths > i) & (state != DEAD)
        state[active] = dfa.transitions[state[active], encoded[active, i]]
    return (state != DEAD) & dfa.accepting[state]


def single_characters_matched_by_re(pattern: str, flags: int) -> np.ndarray:
    cps, text, _, _ = all_code_points()
    mask = np.zeros(cps.size, dtype=bool)
    for match in re.finditer(f"(?:{pattern})+", text, flags):
        mask[match.start() : match.end()] = True
    return mask


def language_equivalent(a: ByteDFA, sa: int, b: ByteDFA, sb: int) -> bool:
    """Exact language equality of two DFA states, by exploring the product automaton."""
    seen = set()
    stack = [(sa, sb)]
    while stack:
        pair = stack.pop()
        if pair in seen:
            continue
        seen.add(pair)
        x, y = pair
        if x == DEAD and y == DEAD:
            continue
        accept_x = x != DEAD and bool(a.accepting[x])
        accept_y = y != DEAD and bool(b.accepting[y])
        if accept_x != accept_y:
            return False
        row_x = a.transitions[x] if x != DEAD else np.full(256, DEAD)
        row_y = b.transitions[y] if y != DEAD else np.full(256, DEAD)
        for pair_next in set(zip(row_x.tolist(), row_y.tolist())):
            stack.append(pair_next)
    return True


def assert_trimmed(dfa: ByteDFA) -> None:
    """The ByteDFA invariants: every state reachable and live."""
    n = dfa.num_states
    if n == 0:
        assert dfa.initial == DEAD
        return
    table = dfa.transitions
    assert table.dtype == np.int32 and table.shape == (n, 256)
    assert ((table >= DEAD) & (table < n)).all()
    reachable = {dfa.initial}
    frontier = [dfa.initial]
    while frontier:
        state = frontier.pop()
        for nxt in set(table[state].tolist()) - {DEAD}:
            if nxt not in reachable:
                reachable.add(nxt)
                frontier.append(nxt)
    assert len(reachable) == n
    live = set(np.flatnonzero(dfa.accepting).tolist())
    changed = True
    while changed:
        before = len(live)
        live |= {s for s in range(n) if live & set(table[s].tolist())}
        changed = len(live) != before
    assert len(live) == n


# --------------------------------------------------------------------------- property test

POOL = [
    "a", "b", "c", "A", "B", "k", "K", "s", "S", "i", "I", "é", "É", "ß", "ſ", "\u212a", "İ", "ı",
    "σ", "ς", "Σ", "中", "😀", "0", "7", "٣", "_", " ", "\n", "\t", "\x85", "\xa0", "-", ".", "\u2028",
]  # fmt: skip
ESCAPES = [
    r"\d", r"\w", r"\s", r"\D", r"\W", r"\S", ".", r"\x41", r"\u00e9", r"\U0001F600",
    r"\N{GREEK SMALL LETTER SIGMA}", r"\101", r"\0", r"\t",
]  # fmt: skip
CATEGORIES = [r"\d", r"\w", r"\s", r"\D", r"\W", r"\S"]
QUANTIFIERS = ["*", "+", "?", "{2}", "{1,3}", "{2,}", "{,2}", "{0}", "{0,1}"]


def class_char(c: str) -> str:
    return "\\" + c if c in "\\]^-[" else c


literal_atoms = st.sampled_from(POOL).map(re.escape)
escape_atoms = st.sampled_from(ESCAPES)
class_items = st.one_of(
    st.sampled_from(POOL).map(class_char),
    st.sampled_from(CATEGORIES),
    st.tuples(st.sampled_from(POOL), st.sampled_from(POOL)).map(
        lambda pair: "-".join(class_char(c) for c in sorted(pair, key=ord))
    ),
)
class_atoms = st.tuples(st.booleans(), st.lists(class_items, min_size=1, max_size=4)).map(
    lambda t: "[" + ("^" if t[0] else "") + "".join(t[1]) + "]"
)
atoms = st.one_of(literal_atoms, literal_atoms, escape_atoms, class_atoms)


def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map("".join),
        st.lists(children, min_size=2, max_size=3).map(lambda alts: "(?:" + "|".join(alts) + ")"),
        st.tuples(st.sampled_from(["(", "(?:", "(?i:", "(?-i:", "(?s:", "(?a:"]), children).map(
            lambda t: t[0] + t[1] + ")"
        ),
        st.tuples(children, st.sampled_from(QUANTIFIERS), st.sampled_from(["", "?"])).map(
            lambda t: "(?:" + t[0] + ")" + t[1] + t[2]
        ),
    )


bodies = st.recursive(atoms, extend, max_leaves=8)


@st.composite
def patterns(draw) -> str:
    prefix = draw(st.sampled_from(["", "", "(?i)", "(?s)", "(?a)", "(?is)", "(?ai)"]))
    alternatives = draw(st.lists(bodies, min_size=1, max_size=2))
    anchored = [
        draw(st.sampled_from(["", "", "^", r"\A"])) + body + draw(st.sampled_from(["", "", "$", r"\Z"]))
        for body in alternatives
    ]
    return prefix + "|".join(anchored)


oddities = st.sampled_from(POOL + ["\u212a", "\u017f", "\u0130", "\u1e9e", "\u03c2", "\n"])
any_char = st.characters(exclude_categories=("Cs",))
chars = st.one_of(oddities, oddities, any_char)


MAX_TEXT_LENGTH = 12


def mutate(draw, text: str) -> str:
    chars_list = list(text)
    for _ in range(draw(st.integers(1, 2))):
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        index = draw(st.integers(0, len(chars_list)))
        if op == "insert":
            chars_list.insert(index, draw(chars))
        elif chars_list and index < len(chars_list):
            if op == "delete":
                del chars_list[index]
            else:
                chars_list[index] = draw(chars)
    return "".join(chars_list)


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
@given(pattern=patterns(), data=st.data())
def test_random_patterns_agree_with_re_fullmatch(pattern: str, data) -> None:
    try:
        re.compile(pattern)
    except re.error:
        assume(False)
    dfa = regex_to_dfa(pattern)
    texts = [data.draw(st.text(chars, max_size=6)) for _ in range(2)]
    try:
        matching = st.from_regex(pattern, fullmatch=True)
        matching.validate()
    except Exception:
        matching = None
    if matching is not None:
        for _ in range(2):
            try:
                sample = data.draw(matching)
            except Exception:  # from_regex does not model every construct
                break
            texts.append(sample)
            texts.append(mutate(data.draw, sample))
    # re backtracks exponentially on nested repeats such as (?:a*)+: keep its inputs short.
    texts = [text[:MAX_TEXT_LENGTH] for text in texts]
    for text in texts:
        assert_agrees_with_re(dfa, pattern, text)
    assert_trimmed(dfa)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(pattern=patterns())
def test_random_patterns_give_minimal_dfas(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error:
        assume(False)
    dfa = regex_to_dfa(pattern)
    assert minimize(dfa).num_states == dfa.num_states


# --------------------------------------------------------------------------- Unicode, exhaustively

EXHAUSTIVE = [
    (r"\d", 0),
    (r"\w", 0),
    (r"\s", 0),
    (r"\D", 0),
    (r"\W", 0),
    (r"\S", 0),
    (r".", 0),
    (r".", re.DOTALL),
    (r"\w", re.ASCII),
    (r"\s", re.ASCII),
    (r"[^a-z\d]", 0),
    (r"[^\W\d_]", 0),
    (r"k", re.IGNORECASE),
    (r"s", re.IGNORECASE),
    (r"i", re.IGNORECASE),
    (r"ß", re.IGNORECASE),
    (r"\u0130", re.IGNORECASE),
    (r"σ", re.IGNORECASE),
    (r"\u1e9e", re.IGNORECASE),
    (r"[a-z]", re.IGNORECASE),
    (r"[^a-z]", re.IGNORECASE),
    (r"[\u0100-\u01ff]", re.IGNORECASE),
    (r"[k-s\d]", re.IGNORECASE | re.ASCII),
    (r"\W", re.IGNORECASE),
    (r"[^x]", re.IGNORECASE),
    (r"[\x00-\U0010ffff]", 0),
]


@pytest.mark.parametrize(("pattern", "flags"), EXHAUSTIVE)
def test_single_character_classes_on_every_code_point(pattern: str, flags: int) -> None:
    dfa = regex_to_dfa(pattern, flags=flags)
    accepted = single_characters_accepted(dfa)
    expected = single_characters_matched_by_re(pattern, flags)
    mismatches = np.flatnonzero(accepted != expected)
    cps = all_code_points()[0]
    assert mismatches.size == 0, [hex(cp) for cp in cps[mismatches[:10]]]


def test_case_insensitive_literals_on_every_code_point() -> None:
    """All ASCII letters and the case-folding special cases, in one DFA per flag set."""
    letters = "abcdefghijklmnopqrstuvwxyzßſıİσςµÅæ\u212a\u2126\u1e9e"
    for flags in (re.IGNORECASE, re.IGNORECASE | re.ASCII):
        for letter in letters:
            pattern = re.escape(letter)
            accepted = single_characters_accepted(regex_to_dfa(pattern, flags=flags))
            expected = single_characters_matched_by_re(pattern, flags)
            assert (accepted == expected).all(), (letter, flags)


def test_unicode_examples() -> None:
    cases = [
        (r"\d+", "٣٤٥", True),
        (r"(?a)\d+", "٣٤٥", False),
        (r"\s", "\x1c", True),
        (r"\s", "\x85", True),
        (r"\s", "\xa0", True),
        (r"(?a)\s", "\xa0", False),
        (r"(?i)k", "\u212a", True),
        (r"(?i)s", "\u017f", True),
        (r"(?ai)k", "\u212a", False),
        (r"(?i:é)É", "ÉÉ", True),
        (r"(?i:é)É", "éé", False),
        (r"\w+", "naïve中文😀", False),
        (r"\w+", "naïve中文", True),
        (r".", "😀", True),
        (r".", "\n", False),
        (r"(?s).", "\n", True),
        (r"\N{SNOWMAN}\u2603\U00002603\x41\101", "☃☃☃AA", True),
        (r"[^\s\S]", "", False),
    ]
    for pattern, text, expected in cases:
        assert (re.fullmatch(pattern, text) is not None) == expected, pattern
        assert regex_to_dfa(pattern).matches(text.encode()) == expected, pattern


def test_flags_argument_and_verbose() -> None:
    dfa = regex_to_dfa(r" a b # comment", flags=re.VERBOSE | re.IGNORECASE)
    assert dfa.matches(b"AB") and not dfa.matches(b"a b")
    dfa = regex_to_dfa("(?x) [ ]a  \\  b  # c\n")
    assert dfa.matches(b" a b") and not dfa.matches(b"a b")
    dfa = regex_to_dfa(r"(?x: a b )c d")
    assert dfa.matches(b"abc d")
    assert regex_to_dfa(r"\w", flags=re.ASCII).matches("é".encode()) is False
    assert regex_to_dfa(r"(?u)\w").matches("é".encode())


def test_repeats_and_groups() -> None:
    for pattern in [
        r"(a|bc){2,3}?d",
        r"(?P<year>\d{4})-(?P<month>\d\d)",
        r"x{,3}y{2,}z{0}",
        r"(?:ab)*?c+?",
        r"(a*)*b",
        r"(?:)*",
        r"()",
        r"a{0,0}b",
    ]:
        dfa = regex_to_dfa(pattern)
        for length in range(5):
            for letters in itertools.product("abcdxyz2", repeat=length):
                assert_agrees_with_re(dfa, pattern, "".join(letters))


# --------------------------------------------------------------------------- anchors


@pytest.mark.parametrize(
    "pattern",
    [r"^abc$", r"a$", r"\Aa\Z", r"^a|^b", r"^a|b$", r"(?:^a|b$)", r"^(?:a|b)$", r"(?m)^a$", r"^", r"$|a",
     r"^^a$$", r"(^a)", r"(?:$|$)", r"^(?:)a"],
)  # fmt: skip
def test_anchors_at_the_ends(pattern: str) -> None:
    dfa = regex_to_dfa(pattern)
    for text in ["", "a", "b", "abc", "a\n", "\na", "ab", "\n", "aa"]:
        assert_agrees_with_re(dfa, pattern, text)
        assert_agrees_with_re(dfa, pattern, text, re.MULTILINE)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("pattern", "position", "words"),
    [
        ("a^b", 1, "anchor"),
        ("a$b", 1, "anchor"),
        ("(a^)", 2, "anchor"),
        ("(?:^a)*", 3, "anchor"),
        ("x|y(^z)", 4, "anchor"),
        (r"a\Ab", 1, "anchor"),
        (r"a\Zb", 1, "anchor"),
        ("(?:$|$)a", 3, "anchor"),
        ("(?m)a$\nb", 5, "anchor"),
        (r"\bfoo", 0, "word boundary reads the character before"),  # test_lookaround.py
        (r"foo\B", 3, "word boundary needs a word character after"),
        (r"[\b]x\b", 5, "word boundary reads the character after"),
        (r"\\b\b", 3, "word boundary"),
        (r"(a)\1", 3, "back-reference"),
        (r"(a)\101\1", 7, "back-reference"),
        (r"(?P<n>a)(?P=n)", 8, "back-reference"),
        ("(?=ab)a", 0, "lookahead"),  # reads past the match (test_lookaround.py)
        ("a(?!b)", 1, "lookahead"),
        ("(?<=a)b", 0, "lookbehind"),
        ("(?<!a)b", 0, "lookbehind"),
        ("(a)?(?(1)b|c)", 4, "conditional"),
        ("(?>ab)", 0, "atomic"),
        ("a*+", 1, "possessive"),
        ("a{2,3}+", 1, "possessive"),
        ("(ab)++", 4, "possessive"),
        ("x?+", 1, "possessive"),
        ("(?x) a  b \\b", 10, "word boundary"),
        ("(?x)(a) [\\b] # \\b comment\n \\1", 27, "back-reference"),
        ("(?#a comment \\b)x(?=y)", 17, "lookahead"),
        ("a\\b(?=x)", 3, "lookahead"),  # the boundary itself reads inside: "a" before, "x" after
    ],
)
def test_unsupported_constructs_are_located(pattern: str, position: int, words: str) -> None:
    re.compile(pattern)  # valid for re itself
    with pytest.raises(RegexError) as info:
        regex_to_dfa(pattern)
    assert info.value.position == position
    assert words in info.value.message
    assert info.value.pattern == pattern


@pytest.mark.parametrize("pattern", ["a(b", "a)", "[a", "*a", "a{2,1}", "(?P<1>a)", r"\k", "a**", "(?<=a+)b", r"\u12"])
def test_invalid_patterns_report_re_position(pattern: str) -> None:
    with pytest.raises(re.error) as expected:
        re.compile(pattern)
    with pytest.raises(RegexError) as info:
        regex_to_dfa(pattern)
    assert info.value.position == expected.value.pos


def test_bytes_patterns_and_bad_flags_are_rejected() -> None:
    with pytest.raises(TypeError):
        regex_to_dfa(b"abc")  # type: ignore[arg-type]
    with pytest.raises(RegexError):
        regex_to_dfa("abc", flags=re.LOCALE)


def test_state_limits() -> None:
    with pytest.raises(RegexError) as info:
        regex_to_dfa(r"(a|b)*a(a|b){20}")
    assert info.value.position is None and "max_states" in info.value.message
    with pytest.raises(RegexError) as info:
        regex_to_dfa(r"a{100000}")
    assert info.value.position is None and "NFA" in info.value.message
    with pytest.raises(RegexError):
        regex_to_dfa(r"(?:a{1000}){1000}")
    with pytest.raises(RegexError):
        regex_to_dfa(r"[a-z]{10}", max_states=5)
    with pytest.raises(RegexError):  # small code point DFA, but too many UTF-8 states
        regex_to_dfa(r"\w{3}", max_states=50)
    assert regex_to_dfa(r"(a|b)*a(a|b){5}").num_states == 64


# --------------------------------------------------------------------------- DFA shape


def test_empty_language_has_no_states() -> None:
    for pattern in [r"[^\s\S]", r"a[^\s\S]b", r"[^\s\S]|[^\d\D]", r"(?:[^\w\W])+"]:
        dfa = regex_to_dfa(pattern)
        assert dfa.num_states == 0 and dfa.initial == DEAD
        assert dfa.transitions.shape == (0, 256) and dfa.accepting.shape == (0,)
        assert not dfa.matches(b"") and not dfa.is_prefix(b"")


@pytest.mark.parametrize(
    ("pattern", "states"),
    [
        (r"(a|b)*", 1),
        (r"[0-9]{4}-[0-9]{2}", 8),
        (r"abc|abd", 4),
        (r"", 1),
        (r"a*b*", 2),
        (r"(?s).*", 8),  # the UTF-8 validator
        (r"[\s\S]*", 8),
        (r".", 9),
    ],
)
def test_minimal_state_counts(pattern: str, states: int) -> None:
    assert regex_to_dfa(pattern).num_states == states


@pytest.mark.parametrize("pattern", [r"\w+@\w+", r"(?i)[a-zé]+\d*", r"[^\"\\\x00-\x1f]*", r"\d{2,4}|\s"])
def test_unicode_dfas_are_trimmed_and_minimal(pattern: str) -> None:
    dfa = regex_to_dfa(pattern)
    assert_trimmed(dfa)
    assert minimize(dfa).num_states == dfa.num_states


def test_invalid_utf8_is_never_accepted() -> None:
    for pattern in [r"(?s).*", r"[\s\S]*", r"[^a]*", r"(?:.|\n)*"]:
        dfa = regex_to_dfa(pattern)
        for bad in [b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
                    b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff",
                    b"\xfe", b"\x80", b"\xbf"]:  # fmt: skip
            assert not dfa.matches(bad), (pattern, bad)
            assert not dfa.is_prefix(b"x" + bad), (pattern, bad)
        for truncated in ["中".encode()[:1], "中".encode()[:2], "😀".encode()[:3], "é".encode()[:1]]:
            assert not dfa.matches(truncated) and dfa.is_prefix(truncated)
        assert dfa.matches("\ud7ff\ue000\U0010ffff\x7f\x80\u07ff\u0800\uffff\U00010000".encode())


def utf8_status(raw: bytes) -> tuple[bool, bool]:
    """(is valid UTF-8, is a prefix of valid UTF-8)."""
    try:
        raw.decode("utf-8")
        return True, True
    except UnicodeDecodeError:
        pass
    # A prefix of valid UTF-8 needs at most three more (continuation) bytes.
    for extra in range(1, 4):
        for completion in itertools.product((0x80, 0x90, 0xA0, 0xBF), repeat=extra):
            try:
                (raw + bytes(completion)).decode("utf-8")
                return False, True
            except UnicodeDecodeError:
                pass
    return False, False


def test_utf8_exhaustively_for_dot_star() -> None:
    """`.*` (DOTALL) accepts exactly valid UTF-8 and its live prefixes are exactly UTF-8 prefixes."""
    dfa = regex_to_dfa(r"(?s).*")
    raws = [bytes(data) for length in (1, 2) for data in itertools.product(range(256), repeat=length)]
    raws += [bytes([lead, second, third]) for lead in range(0xE0, 0x100) for second in range(0x80, 0xC0) for third in (0x41, 0x80, 0xBF)]
    raws += [bytes([lead, second, 0x80, fourth]) for lead in range(0xF0, 0xF8) for second in range(0x80, 0xC0) for fourth in (0x80, 0xBF)]
    for raw in raws:
        valid, prefix = utf8_status(raw)
        assert dfa.matches(raw) == valid, raw
        assert dfa.is_prefix(raw) == prefix, raw


# --------------------------------------------------------------------------- dfa.py machinery


def test_literal_dfa() -> None:
    words = [b"", b"abc", b"abd", b"b", b"\xff\x00"]
    dfa = literal_dfa(words)
    assert_trimmed(dfa)
    for word in words:
        assert dfa.matches(word)
    for other in [b"a", b"ab", b"abcd", b"bb", b"\xff"]:
        assert not dfa.matches(other)
    assert dfa.is_prefix(b"ab") and not dfa.is_prefix(b"ac")
    assert literal_dfa([b"ab", b"cb"]).num_states == 3
    assert literal_dfa([]).num_states == 0
    assert literal_dfa([b""]).num_states == 1


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(st.binary(max_size=6).map(lambda word: bytes(b % 4 + 0xFC * (b % 3 == 0) for b in word)),
                min_size=1, max_size=25))
def test_literal_dfa_is_minimal_and_canonical(words) -> None:
    """literal_dfa skips minimisation: its automaton must be exactly what minimising gives."""
    dfa = literal_dfa(words)
    reference = minimize(dfa)
    assert dfa.initial == reference.initial
    assert np.array_equal(dfa.transitions, reference.transitions)
    assert np.array_equal(dfa.accepting, reference.accepting)
    assert all(dfa.matches(word) for word in words)


def test_byte_nfa_to_dfa() -> None:
    nfa = NFA()
    # (ab|a)* over bytes with an ε-loop
    loop = nfa.add_state(accepting=True)
    nfa.add_epsilon(nfa.initial, loop)
    middle, after_a = nfa.add_state(), nfa.add_state()
    nfa.add_edge(loop, ((ord("a"), ord("a")),), after_a)
    nfa.add_epsilon(after_a, loop)
    nfa.add_edge(after_a, ((ord("b"), ord("b")),), middle)
    nfa.add_epsilon(middle, loop)
    dfa = nfa_to_byte_dfa(nfa)
    reference = regex_to_dfa(r"(?:ab|a)*")
    assert language_equivalent(dfa, dfa.initial, reference, reference.initial)
    assert dfa.num_states == reference.num_states == 2


@st.composite
def random_tables(draw) -> tuple[np.ndarray, int, np.ndarray]:
    n = draw(st.integers(1, 7))
    symbols = [0, 1, 2, 200]
    table = np.full((n, 256), DEAD, dtype=np.int32)
    for state in range(n):
        for symbol in symbols:
            table[state, symbol] = draw(st.integers(DEAD, n - 1))
    accepting = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return table, draw(st.integers(0, n - 1)), accepting


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(random_tables())
def test_minimization_on_random_tables(args) -> None:
    table, initial, accepting = args
    original = ByteDFA(table, initial, accepting)
    dfa = dfa_from_table(table, initial, accepting)
    assert_trimmed(dfa)
    if dfa.num_states:
        assert dfa.initial == 0
        assert language_equivalent(original, initial, dfa, dfa.initial)
        # Minimal: no two states accept the same language.
        for x, y in itertools.combinations(range(dfa.num_states), 2):
            assert not language_equivalent(dfa, x, dfa, y)
    else:
        assert language_equivalent(original, initial, dfa, DEAD)


def test_large_minimization_is_fast_enough() -> None:
    """A chain and a wide random table with tens of thousands of states minimise correctly."""
    n = 30_000
    chain = np.full((n, 256), DEAD, dtype=np.int32)
    chain[np.arange(n - 1), 97] = np.arange(1, n)
    accepting = np.zeros(n, dtype=bool)
    accepting[-1] = True
    assert dfa_from_table(chain, 0, accepting).num_states == n
    # A start state leading into two identical copies of a random DFA: the copies merge.
    rng = np.random.default_rng(0)
    half = 20_000
    copy = np.full((half, 256), DEAD, dtype=np.int32)
    copy[:, :4] = rng.integers(0, half, size=(half, 4))
    copy_accepting = rng.random(half) < 0.5
    table = np.full((1 + 2 * half, 256), DEAD, dtype=np.int32)
    table[1 : half + 1] = np.where(copy == DEAD, DEAD, copy + 1)
    table[half + 1 :] = np.where(copy == DEAD, DEAD, copy + half + 1)
    table[0, 4], table[0, 5] = 1, half + 1
    accepting = np.concatenate([[False], copy_accepting, copy_accepting])
    single = dfa_from_table(copy, 0, copy_accepting)
    assert single.num_states > half // 2
    assert dfa_from_table(table, 0, accepting).num_states == single.num_states + 1
