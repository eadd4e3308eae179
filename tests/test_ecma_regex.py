"""ecma_pattern_dfa against the JSON-Schema-Test-Suite and against the ``regex`` package.

The suite supplies ECMA-262 expectations directly. The differential test compares random
patterns built from constructs where ECMA (u flag) and ``regex`` (ASCII flag) agree once a
few spellings are translated: ECMA ``.`` -> ``[^\\n\\r\\u2028\\u2029]``, ``$`` -> ``\\Z``,
``\\s`` -> ECMA's explicit white-space class. ``regex`` rather than ``re`` because ``re``
(before 3.14) never matches ``\\B`` in the empty string, where ECMA does.
"""

from __future__ import annotations

import functools
import json
import random
import time
import unicodedata
from typing import Callable, NamedTuple

import numpy as np
import pytest
import regex

from gramalign.errors import RegexError
from gramalign.grammar.automata.dfa import DEAD
from gramalign.grammar.json_schema.ecma_regex import ecma_pattern_dfa
from support.shared_data import data_dir


def matches(pattern: str, text: str) -> bool:
    return ecma_pattern_dfa(pattern).matches(text.encode("utf-8"))


# --------------------------------------------------------------------------- JSON-Schema-Test-Suite

SUITE_FILES = [
    f"{draft}/{name}"
    for draft in ("draft2020-12", "draft2019-09", "draft7", "draft6", "draft4")
    for name in (
        "pattern.json",
        "patternProperties.json",
        "additionalProperties.json",
        "optional/ecmascript-regex.json",
        "optional/non-bmp-regex.json",
    )
] + [
    f"{draft}/{name}"
    for draft in ("draft2020-12", "draft2019-09", "draft7")
    for name in ("propertyNames.json", "optional/format/ecmascript-regex.json", "optional/format/regex.json")
] + ["draft6/propertyNames.json"]

# Valid ECMA patterns of the suite that ecma_pattern_dfa refuses on purpose (not regular).
UNSUPPORTED = {
    "(?<n>a)\\k<n>": "back-reference",
    "(?<=a+)b": "lookbehind",
}

_UNSET = object()


def _subschema_accepts(schema, value) -> bool | None:
    """Tiny validator for the subschemas patternProperties tests use; None if out of scope."""
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, dict) or set(schema) - {"type", "maximum"}:
        return None
    kind = schema.get("type")
    if kind is not None:
        checks = {
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "string": lambda v: isinstance(v, str),
            "null": lambda v: v is None,
            "boolean": lambda v: isinstance(v, bool),
        }
        if kind not in checks:
            return None
        if not checks[kind](value):
            return False
    maximum = schema.get("maximum")
    if maximum is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value <= maximum
    return True


def _expected_from_schema(schema: dict, instance):
    """The test's verdict recomputed with ecma_pattern_dfa, or _UNSET when out of scope.

    Handles ``pattern`` (with type string), ``propertyNames: {pattern}`` and
    ``patternProperties`` (with type object, additionalProperties false).
    """
    if not isinstance(schema, dict):
        return _UNSET
    keys = set(schema) - {"$schema"}
    if keys in ({"pattern"}, {"pattern", "type"}) and schema.get("type", "string") == "string":
        if not isinstance(instance, str):
            return _UNSET
        return matches(schema["pattern"], instance)
    names = schema.get("propertyNames")
    if keys == {"propertyNames"} and isinstance(names, dict) and set(names) == {"pattern"}:
        if not isinstance(instance, dict):
            return _UNSET
        return all(matches(schema["propertyNames"]["pattern"], key) for key in instance)
    if "patternProperties" in keys and keys <= {"patternProperties", "type", "additionalProperties"}:
        if schema.get("type", "object") != "object" or schema.get("additionalProperties", False) is not False:
            return _UNSET
        if not isinstance(instance, dict):
            return _UNSET if "type" not in schema else False
        for key, value in instance.items():
            matched = [sub for p, sub in schema["patternProperties"].items() if matches(p, key)]
            if not matched and "additionalProperties" in schema:
                return False
            for sub in matched:
                verdict = _subschema_accepts(sub, value)
                if verdict is None:
                    return _UNSET
                if not verdict:
                    return False
        return True
    return _UNSET


def _is_valid_regex(pattern: str) -> bool | None:
    """format "regex" verdict: False on a syntax error, None for refused valid constructs."""
    try:
        ecma_pattern_dfa(pattern)
    except RegexError:
        return None if pattern in UNSUPPORTED else False
    return True


@pytest.mark.parametrize("relative", SUITE_FILES)
def test_json_schema_test_suite(relative: str) -> None:
    path = data_dir() / "json-schema-test-suite" / "tests" / relative
    if not path.is_file():
        pytest.fail(f"missing {path}")
    checked = 0
    failures = []
    for group in json.loads(path.read_text(encoding="utf-8")):
        schema = group["schema"]
        for case in group["tests"]:
            instance = case["data"]
            if isinstance(schema, dict) and set(schema) - {"$schema"} == {"format"}:
                if schema["format"] != "regex" or not isinstance(instance, str):
                    continue
                got = _is_valid_regex(instance)
                if got is None:  # refused on purpose: the suite must call it valid
                    got = True
            else:
                try:
                    got = _expected_from_schema(schema, instance)
                except RegexError as exc:
                    failures.append(f"{group['description']} / {case['description']}: {exc}")
                    continue
                if got is _UNSET:
                    continue
            checked += 1
            if got != case["valid"]:
                failures.append(f"{group['description']} / {case['description']}: got {got}, expected {case['valid']}")
    assert not failures, "\n".join(failures)
    assert checked > 0, f"no applicable test case in {relative}"


def test_unsupported_allow_list_is_refused() -> None:
    for pattern in UNSUPPORTED:
        with pytest.raises(RegexError, match="not supported"):
            ecma_pattern_dfa(pattern)


# --------------------------------------------------------------------------- differential test

# (ECMA, Python) spellings of one character.
LITERALS = [
    ("a", "a"), ("b", "b"), ("1", "1"), ("_", "_"), (" ", " "), ("é", "é"), ("😀", "😀"),
    ("\\n", "\\n"), ("\\r", "\\r"), ("\\t", "\\t"), ("\\.", "\\."), ("\\$", "\\$"), ("\\/", "/"),
    ("\\x61", "\\x61"), ("\\u00e9", "\\u00e9"), ("\\u{1F600}", "\\U0001F600"), ("\\u{0062}", "b"),
    ("\\uD83D\\uDE00", "\\U0001F600"), ("\\cJ", "\\n"), ("\\ca", "\\x01"), ("\\u2028", "\\u2028"),
    ("(?:\\0)", "\\x00"),  # grouped: \0 followed by a digit is an error
    ("\\uD83D", "\\ud83d"),  # a lone surrogate matches nothing
]
SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
ESCAPES = [
    ("\\d", "\\d"), ("\\D", "\\D"), ("\\w", "\\w"), ("\\W", "\\W"), ("\\s", f"[{SPACE}]"), ("\\S", f"[^{SPACE}]"),
]
CLASS_ITEMS = [
    ("a", "a"), ("b", "b"), ("é", "é"), ("😀", "😀"), ("\\n", "\\n"), ("a-c", "a-c"), ("0-9", "0-9"),
    ("\\d", "\\d"), ("\\w", "\\w"), ("\\D", "\\D"), ("\\W", "\\W"), ("\\s", SPACE), ("\\-", "\\-"),
    ("\\b", "\\x08"), ("\\u2028", "\\u2028"), ("$", "$"), (".", "."), ("\\]", "\\]"), ("(", "("),
    ("\\x00-\\x1f", "\\x00-\\x1f"), ("\\u{e0}-\\u{1F600}", "\\xe0-\\U0001F600"),
]
ASSERTIONS = [("^", "^"), ("$", "\\Z"), ("\\b", "\\b"), ("\\B", "\\B")]
# (quantifier, fewest and most repetitions the samplers use)
QUANTIFIERS = [
    ("*", 0, 3), ("+", 1, 3), ("?", 0, 1), ("{0}", 0, 0),
    ("{2}", 2, 2), ("{1,}", 1, 3), ("{0,2}", 0, 2), ("{1,3}", 1, 3),
]
TEXT_ALPHABET = "aab1_ \n\ré😀\u2028\t\x01\x08"


class Piece(NamedTuple):
    """A generated construct: ECMA and Python spellings and a sampler of strings it matches
    (ignoring assertions), so that the texts often hit exact repeat counts and such."""

    ecma: str
    python: str
    sample: Callable[[random.Random], str]


SAMPLE_CANDIDATES = TEXT_ALPHABET + "bc09-.$]()\x00\x0b\xa0\u3000\ufeff\u2029\u202f\u1680\u200a\u200bàZ\U0010ffff"


@functools.cache
def single_characters(python: str) -> tuple[str, ...]:
    """Candidate characters a one-character Python construct matches, per the oracle."""
    compiled = regex.compile(python, regex.ASCII)
    return tuple(c for c in SAMPLE_CANDIDATES if compiled.fullmatch(c))


def character(ecma: str, python: str) -> Piece:
    return Piece(ecma, python, lambda rng: rng.choice(single_characters(python) or ("",)))


class PatternGenerator:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.groups = 0

    def disjunction(self, depth: int) -> Piece:
        options = [self.alternative(depth) for _ in range(self.rng.choice([1, 1, 1, 2, 3]))]
        return Piece(
            "|".join(o.ecma for o in options),
            "|".join(o.python for o in options),
            lambda rng: rng.choice(options).sample(rng),
        )

    def alternative(self, depth: int) -> Piece:
        terms = [self.term(depth) for _ in range(self.rng.randint(1 if depth == 0 else 0, 4))]
        return Piece(
            "".join(t.ecma for t in terms),
            "".join(t.python for t in terms),
            lambda rng: "".join(t.sample(rng) for t in terms),
        )

    def term(self, depth: int) -> Piece:
        rng = self.rng
        if rng.random() < 0.15:
            return Piece(*rng.choice(ASSERTIONS), lambda rng: "")
        atom = self.atom(depth)
        if rng.random() >= 0.35:
            return atom
        quantifier, low, high = rng.choice(QUANTIFIERS)
        lazy = "?" if rng.random() < 0.3 else ""
        return Piece(
            atom.ecma + quantifier + lazy,
            atom.python + quantifier + lazy,
            lambda rng: "".join(atom.sample(rng) for _ in range(rng.randint(low, high))),
        )

    def atom(self, depth: int) -> Piece:
        rng = self.rng
        roll = rng.random()
        if roll < 0.4:
            return character(*rng.choice(LITERALS))
        if roll < 0.5:
            return character(".", "[^\\n\\r\\u2028\\u2029]")
        if roll < 0.6:
            return character(*rng.choice(ESCAPES))
        if roll < 0.8 or depth >= 3:
            return self.char_class()
        body = self.disjunction(depth + 1)
        kind = rng.randrange(3)
        if kind == 0:
            return Piece(f"({body.ecma})", f"({body.python})", body.sample)
        if kind == 1:
            return Piece(f"(?:{body.ecma})", f"(?:{body.python})", body.sample)
        self.groups += 1
        return Piece(f"(?<g{self.groups}>{body.ecma})", f"(?P<g{self.groups}>{body.python})", body.sample)

    def char_class(self) -> Piece:
        rng = self.rng
        negated = rng.random() < 0.3
        items = [rng.choice(CLASS_ITEMS) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
        ecma = "".join(e for e, _ in items)
        python = "".join(p for _, p in items)
        if not items:  # [] matches nothing, [^] anything
            return character("[^]", "[\\x00-\\U0010ffff]") if negated else character("[]", "[^\\x00-\\U0010ffff]")
        return character(f"[^{ecma}]", f"[^{python}]") if negated else character(f"[{ecma}]", f"[{python}]")


def random_texts(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choice(TEXT_ALPHABET) for _ in range(rng.randint(0, 6))) for _ in range(count)]


def pattern_texts(pattern: Piece, rng: random.Random, count: int) -> list[str]:
    """Samples of the pattern, some with random context or one character changed."""
    texts = []
    for _ in range(count):
        text = pattern.sample(rng)
        if rng.random() < 0.5:
            text = random_texts(rng, 1)[0][:2] + text + random_texts(rng, 1)[0][:2]
        if text and rng.random() < 0.3:
            index = rng.randrange(len(text))
            text = text[:index] + rng.choice(["", rng.choice(TEXT_ALPHABET), text[index] * 2]) + text[index + 1 :]
        texts.append(text)
    return texts


def accepted_samples(dfa, rng: random.Random, count: int) -> list[str]:
    """Strings the DFA accepts, by random walks (they give the oracle positive cases)."""
    samples = []
    for _ in range(count):
        state, data = dfa.initial, bytearray()
        while state != DEAD and len(data) < 24:
            live = np.flatnonzero(dfa.transitions[state] != DEAD).tolist()
            if dfa.accepting[state] and (not live or rng.random() < 0.3):
                samples.append(data.decode("utf-8"))
                break
            byte = rng.choice(live)
            data.append(byte)
            state = int(dfa.transitions[state, byte])
    return samples


@pytest.mark.parametrize("seed", range(4))
def test_random_patterns_against_regex_package(seed: int) -> None:
    generator = PatternGenerator(seed)
    rng = random.Random(1000 + seed)
    for _ in range(150):
        pattern = generator.disjunction(0)
        oracle = regex.compile(pattern.python, regex.ASCII)
        dfa = ecma_pattern_dfa(pattern.ecma)
        texts = random_texts(rng, 25) + pattern_texts(pattern, rng, 25) + accepted_samples(dfa, rng, 10)
        for text in texts:
            expected = oracle.search(text) is not None
            assert dfa.matches(text.encode("utf-8")) == expected, (pattern.ecma, pattern.python, text)


@pytest.mark.parametrize("seed", range(2))
def test_matching_one_text_by_the_nfa_against_regex_package(seed: int) -> None:
    # ecma_pattern_matches runs the search NFA over the text's code points (a property name
    # against patternProperties, without the automaton)
    from gramalign.grammar.json_schema.ecma_regex import ecma_pattern_matches

    generator = PatternGenerator(20 + seed)
    rng = random.Random(2000 + seed)
    matched = 0
    for _ in range(120):
        pattern = generator.disjunction(0)
        oracle = regex.compile(pattern.python, regex.ASCII)
        for text in random_texts(rng, 10) + pattern_texts(pattern, rng, 10):
            expected = oracle.search(text) is not None
            assert ecma_pattern_matches(pattern.ecma, text) == expected, (pattern.ecma, text)
            matched += expected
    assert matched > 500


def test_anchors_and_boundaries_anywhere() -> None:
    """Hand-picked placements of ^ $ \\b \\B, still checked against the oracle."""
    pairs = [
        ("a^", "a^"), ("$a", "\\Za"), ("^a|b$", "^a|b\\Z"), ("(^a)", "(^a)"), ("(a|^)b", "(a|^)b"),
        ("a($|b)", "a(\\Z|b)"), ("(?:^|x)+a$", "(?:^|x)+a\\Z"), ("(^)*a", "(^)*a"), ("^$", "^\\Z"),
        ("$^", "\\Z^"), ("\\b", "\\b"), ("\\B", "\\B"), ("\\b\\B", "\\b\\B"), ("a\\b$", "a\\b\\Z"),
        ("(\\b|$)_", "(\\b|\\Z)_"), ("^\\B", "^\\B"), ("a\\B\\b", "a\\B\\b"), ("(?:a\\b)*b", "(?:a\\b)*b"),
    ]
    rng = random.Random(7)
    texts = ["", "a", "b", "ab", "ba", "_", "a b", "xa", "a_", "é", "aé"] + random_texts(rng, 100)
    for ecma, python in pairs:
        oracle = regex.compile(python, regex.ASCII)
        for text in texts:
            assert matches(ecma, text) == (oracle.search(text) is not None), (ecma, text)


# --------------------------------------------------------------------------- Unicode properties


def test_property_escapes_follow_unicodedata() -> None:
    categories = {
        "L": "Lu Ll Lt Lm Lo", "Letter": "Lu Ll Lt Lm Lo", "Lu": "Lu", "Ll": "Ll", "N": "Nd Nl No",
        "Nd": "Nd", "digit": "Nd", "gc=Lu": "Lu", "General_Category=Punctuation": "Pc Pd Ps Pe Pi Pf Po",
    }
    rng = random.Random(3)
    code_points = list(range(0x250)) + [cp for cp in rng.sample(range(0x110000), 3000) if not 0xD800 <= cp <= 0xDFFF]
    for name, wanted in categories.items():
        positive = ecma_pattern_dfa(f"^\\p{{{name}}}$")
        negative = ecma_pattern_dfa(f"^\\P{{{name}}}$")
        for cp in code_points:
            data = chr(cp).encode("utf-8")
            inside = unicodedata.category(chr(cp)) in wanted.split()
            assert positive.matches(data) == inside, (name, hex(cp))
            assert negative.matches(data) == (not inside), (name, hex(cp))


# --------------------------------------------------------------------------- errors

ERRORS = [  # (pattern, position of the offending construct)
    ("a(?=b)", 1), ("a(?!b)", 1), ("(?<=a)b", 0), ("x(?<!a)b", 1),
    ("(a)\\1", 3), ("(?<n>a)\\k<n>", 7), ("\\1(a)", 0), ("a\\2", 1), ("\\k", 0), ("(a)\\" + "1" * 5000, 3),
    ("(a", 0), ("a)", 1), ("((a)", 0), ("(?:a|b", 0), ("[a", 0), ("a]", 1), ("a{", 1), ("a}", 1),
    ("a{5,2}", 1), ("x{,5}", 1), ("[b-a]", 1), ("[\\d-z]", 1), ("[a-\\w]", 1),
    ("*a", 0), ("a**", 2), ("a|?", 2), ("^*", 1), ("\\b+", 2), ("a{2}{3}", 4),
    ("\\a", 0), ("\\-", 0), ("[\\B]", 1), ("\\c1", 0), ("\\x4", 0), ("\\u12", 0), ("\\u{110000}", 0),
    ("\\00", 0), ("a\\", 1), ("\\p{Foo}", 0), ("\\p{Script=Greek}", 0), ("\\pL", 0),
    ("(?P<n>x)", 0), ("(?#c)a", 0), ("(?i)abc", 0), ("(?i:a)", 0), ("(?<1a>x)", 0), ("(?<a", 0),
]


@pytest.mark.parametrize("pattern, position", ERRORS)
def test_errors_have_positions(pattern: str, position: int) -> None:
    with pytest.raises(RegexError) as info:
        ecma_pattern_dfa(pattern)
    assert info.value.position == position, info.value


@pytest.mark.parametrize(
    "pattern, max_states",
    [
        ("a{1000000}", 50_000),
        ("(a{1000}){1000}", 50_000),
        ("a{0,99999999999999999999}", 50_000),
        ("a{" + "9" * 5000 + "}", 50_000),  # longer than int() accepts by default
        ("((((((((((a{10}){10}){10}){10}){10}){10}){10}){10}){10}){10})", 50_000),
        ("[ab]*a[ab]{20}", 1_000),  # the classic exponential DFA
        ("a{30000}", 50_000),  # unanchored: 30000 live threads in every DFA state
        (".{0,30000}", 50_000),
        ("^(.*a){5000}$", 50_000),
    ],
)
def test_size_limits_fail_fast(pattern: str, max_states: int) -> None:
    start = time.perf_counter()
    with pytest.raises(RegexError, match="too large") as info:
        ecma_pattern_dfa(pattern, max_states=max_states)
    assert info.value.position is None
    assert time.perf_counter() - start < 30.0  # minutes without the limits (generous: CI machines are busy)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(RegexError):
        ecma_pattern_dfa("(" * 5000 + "a" + ")" * 5000)


def test_large_anchored_repeat_is_not_refused() -> None:
    """The determinisation budget counts live NFA states, not all of them."""
    oracle = regex.compile("^[a-z]{1,20000}\\Z")
    for text in ["", "a", "a" * 20000, "a" * 20001, "a" * 19999 + "1"]:
        assert matches("^[a-z]{1,20000}$", text) == (oracle.search(text) is not None)


def test_non_str_pattern_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        ecma_pattern_dfa(b"abc")  # type: ignore[arg-type]


@pytest.mark.parametrize("pattern", [r"^[\w\-\.]+\@[\w\-]+\.\w+$", r"\_\@\#\ \'\"\:\,\%\&\~\=\<\>\!", r"^\+?[0-9\ \-]{3,}$",
                                     r"[\é\ü]x"])
def test_lenient_escapes_read_punctuation_literally(pattern: str) -> None:
    """Real schemas escape punctuation the u flag forbids escaping; Python's re (the
    jsonschema package's engine) reads such escapes as the character, and so do we."""
    import re

    with pytest.raises(RegexError):
        ecma_pattern_dfa(pattern)
    dfa = ecma_pattern_dfa(pattern, lenient_escapes=True)
    rng = random.Random(pattern)
    alphabet = "ab_@# '\":,%&~=<>!-.+0é9üx"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        assert dfa.matches(text.encode()) == (re.search(pattern, text) is not None), text
    with pytest.raises(RegexError):
        ecma_pattern_dfa(r"\q", lenient_escapes=True)  # letters stay errors: \q means nothing


EMPTY_PATTERNS = ["^a$b", "[]", "a^", "$b", "\\bx\\B\\b", "^(?:a$)b", "[^\\s\\S]", "\\ud800", "[\\ud800-\\udfff]",
                  "^\\ud83d$", "(?:$a|b^)"]


@pytest.mark.parametrize("seed", range(2))
def test_matches_some_is_the_automatons_emptiness(seed: int) -> None:
    # ecma_pattern_matches_some searches the pattern's NFA (no determinisation); oracle: the
    # automaton ecma_pattern_dfa builds is empty exactly when no string matches
    from gramalign.grammar.json_schema.ecma_regex import ecma_pattern_matches_some

    generator = PatternGenerator(10 + seed)
    patterns = [generator.disjunction(0).ecma for _ in range(120)] + EMPTY_PATTERNS + ["^$", "\\b", "(?:a|$)"]
    empty = 0
    for pattern in patterns:
        dfa = ecma_pattern_dfa(pattern)
        has_some = dfa.num_states > 0 and dfa.initial != DEAD
        assert ecma_pattern_matches_some(pattern) == has_some, pattern
        empty += not has_some
    assert empty >= len(EMPTY_PATTERNS)
    with pytest.raises(RegexError):
        ecma_pattern_matches_some("(?=a)b")
