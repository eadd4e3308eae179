"""Text that keeps many longest-match decisions pending: the parser tracks as many
hypotheses and shadows as it needs (issue 20, item 5), verdicts equal lark's LALR parser
and masks equal a brute-force scan of the vocabulary; nothing raises.

Before, the parser had 16 hypothesis rows and 2 shadow slots and raised GrammarError
("lexically ambiguous") inside fill_next_token_bitmask beyond them.
"""

from __future__ import annotations

import random
from functools import lru_cache

import lark
import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser
from gramalign.parsing.state import HYPOTHESIS_FIELDS, INITIAL_HYPOTHESES

from oracles.brute_force_masks import assert_mask_equals_brute_force
from support.vocabularies import gpt2_vocabulary

# LONG stays undecided across any run of a's and b's, and its bounded count makes every
# pending lexeme start a shadow in a state of its own; the right recursion gives every
# way of splitting the run a stack of its own.
PENDING = 'start: item start |\nitem: A | B | LONG\nA: "a"\nB: "b"\nLONG: /[ab]{2,40}c/\n%ignore " "\n'
# Shadows in equal states (an unbounded LONG) on stacks that reduce to equal ones: the
# hypotheses that differ only by where the pending lexeme started are merged.
MERGING = 'start: (A | LONG)+\nA: "a"\nLONG: /a+c/\n%ignore " "\n'


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


@lru_cache(maxsize=None)
def pair(text: str):
    return lark.Lark(text, parser="lalr"), IncrementalParser(build_parser_tables(ga.Grammar.from_lark(text)))


def test_a_long_undecided_run_needs_more_rows_and_shadows_than_before():
    oracle, parser = pair(PENDING)
    data = b"b" * 30
    state, _ = parser.feed(parser.initial_state(), data)
    assert state.shape[0] > INITIAL_HYPOTHESES and state.shape[1] > HYPOTHESIS_FIELDS  # the old limits
    for text in ["b" * 30, "b" * 30 + "c", "ab" * 20 + "c", "ab" * 21 + "c", "b" * 29 + "cab", "b b" * 15 + "c"]:
        assert parser.accepts(text.encode()) == lark_accepts(oracle, text), text


PIECES = {PENDING: ["a", "b", "c", "ab", "bb", "bbbb", " "], MERGING: ["a", "c", "aa", "aaaa", " ", "ac"]}


@pytest.mark.parametrize("grammar", [PENDING, MERGING])
def test_verdicts_agree_with_lark(grammar):
    oracle, parser = pair(grammar)
    rng = random.Random(grammar)
    verdicts = set()
    for _ in range(1500):
        text = "".join(rng.choice(PIECES[grammar]) for _ in range(rng.randint(1, 30)))
        expected = lark_accepts(oracle, text)
        assert parser.accepts(text.encode()) == expected, text
        verdicts.add(expected)
    assert verdicts == {True, False}


def small_vocabulary() -> ga.Vocabulary:
    rng = random.Random(4)
    pieces = {"a", "b", "c", " "} | {"".join(rng.choice("aabbbc ") for _ in range(rng.randint(2, 6))) for _ in range(200)}
    tokens = sorted(p.encode() for p in pieces) + [b"<eos>"]
    return ga.Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])


@pytest.mark.parametrize("grammar", [PENDING, MERGING])
def test_masks_equal_brute_force_on_ambiguous_prefixes(grammar):
    compiled = ga.compile(ga.Grammar.from_lark(grammar), small_vocabulary(), cache=False)
    rng = random.Random(7)
    checked = 0
    prefixes = [c * n for c in (b"a", b"b") for n in (1, 2, 17, 33, 39, 40)] + [b"ab" * 12, b"bab" * 9, b"b b" * 8]
    prefixes += ["".join(rng.choice(PIECES[grammar]) for _ in range(rng.randint(1, 40))).encode() for _ in range(25)]
    for prefix in prefixes:
        checked += assert_mask_equals_brute_force(compiled, prefix)
    assert checked >= 12


def test_masks_along_walks_through_ambiguous_text_never_raise():
    compiled = ga.compile(ga.Grammar.from_lark(PENDING), gpt2_vocabulary())
    vocab = compiled.vocabulary
    ab_tokens = [t for t in vocab.grammar_token_ids().tolist()
                 if vocab.token_bytes[t] and set(vocab.token_bytes[t]) <= set(b"ab")]
    rng = np.random.default_rng(3)
    for _ in range(3):
        matcher = compiled.matcher()
        text = b""
        for _ in range(20):  # runs of a's and b's only: nothing is ever decided
            allowed = set(matcher.allowed_token_ids().tolist())
            token = int(rng.choice([t for t in ab_tokens if t in allowed]))
            matcher.accept_token(token)
            text += vocab.token_bytes[token]
        assert_mask_equals_brute_force(compiled, text)


# --------------------------------------------------------------------------- Python, SynCode style

# lark's own python.lark (read from the installed lark, as SynCode's Python grammar is
# derived from it) with its three terminals whose lookarounds read outside the lexeme or
# whose lazy repeats are not first-match-exact written greedily, as a user would.
_REGULAR_FORMS = {
    "STRING": r"""STRING: /([ubf]?r?|r[ubf])("([^"\\\n]|\\.)*"|'([^'\\\n]|\\.)*')/i""",
    "LONG_STRING": r"""LONG_STRING: /([ubf]?r?|r[ubf])("{3}("{0,2}([^"\\]|\\.))*"{3}|'{3}('{0,2}([^'\\]|\\.))*'{3})/is""",
    "DEC_NUMBER": r"""DEC_NUMBER: /0(_?0)*|[1-9](_?[0-9])*/""",
}


@lru_cache(maxsize=None)
def syncode_style_python() -> str:
    import re
    from pathlib import Path

    text = (Path(lark.__file__).parent / "grammars" / "python.lark").read_text()
    for name, form in _REGULAR_FORMS.items():  # a definition and its continuation lines
        text, count = re.subn(rf"(?m)^{name}\s*:.*(\n[ \t]+\|.*)*$", lambda _: form, text)
        assert count == 1, name
    return text


@lru_cache(maxsize=None)
def python_pair():
    from lark.indenter import PythonIndenter

    text = syncode_style_python()
    oracle = lark.Lark(text, parser="lalr", postlex=PythonIndenter(), start="file_input")
    grammar = ga.Grammar.from_lark(text, start="file_input", indentation=ga.Indentation())
    return oracle, grammar


def docstring_heavy_files(count: int):
    from oracles.python_layout import stdlib_python_files

    files = [(path.read_text(encoding="utf-8").count('"""'), path) for path in stdlib_python_files(40)]
    return [path for n, path in sorted(files, key=lambda item: -item[0])[:count] if n >= 6]


def test_stdlib_modules_with_docstrings_agree_with_lark_byte_by_byte():
    oracle, grammar = python_pair()
    parser = IncrementalParser(build_parser_tables(grammar))
    files = docstring_heavy_files(8)
    assert len(files) >= 6
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert lark_accepts(oracle, text), path
        assert parser.accepts(text.encode()), path
        # Damaged copies: a docstring opened and never closed, one closed twice, quotes mixed.
        at = text.index('"""')
        for damaged in (text[:at] + '"""' + text[at:], text[:at + 3] + '"""' + text[at + 3:],
                        text.replace('"""', "'''", 1), text + '"""\n'):
            assert parser.accepts(damaged.encode()) == lark_accepts(oracle, damaged), (path, damaged[at - 20:at + 20])


def test_masks_after_opening_triple_quotes_in_stdlib_modules():
    """Token by token through real modules: every mask is filled without an exception, and
    right after an opening triple quote the mask equals a brute-force scan."""
    from support.tokenizer_zoo import gpt2_hf_fast

    _, grammar = python_pair()
    compiled = ga.compile(grammar, gpt2_vocabulary())
    tokenizer = gpt2_hf_fast()
    mask = np.zeros((1, compiled.bitmask_width), dtype=np.int32)
    checked = 0
    for path in docstring_heavy_files(2):
        text = path.read_text(encoding="utf-8")
        cut = text.index('"""', text.index('"""', text.index('"""') + 3) + 3) + 200  # past the second docstring
        matcher = compiled.matcher()
        data = b""
        for token in tokenizer.encode(text[:cut]):
            matcher.fill_next_token_bitmask(mask, 0)
            assert (int(mask[0, token >> 5]) >> (token & 31)) & 1, (path, data[-40:])
            matcher.accept_token(token)
            data += compiled.vocabulary.token_bytes[token]
            if data.endswith(b'"""') and checked < 6:
                checked += assert_mask_equals_brute_force(compiled, data)
    assert checked >= 3
