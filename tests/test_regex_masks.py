"""Regex token masks on GPT-2's full vocabulary against two independent oracles.

Oracle 1 is interegular's character-level FSM (independent code, walked char by char;
patterns are compiled with re.ASCII so that its ASCII classes mean what Python's do).
Oracle 2 is the `regex` module's partial matching on prefix + token text. A token whose
bytes end inside a UTF-8 character is allowed when some code point starting with those
bytes can continue the text: oracle 1 checks that exactly over the FSM's alphabet.
"""

from __future__ import annotations

import re
import zlib
from functools import lru_cache

import interegular
import numpy as np
import pytest
import regex as regex_module

import gramalign as ga
from gramalign.masking.bitmask import unpack_bitmask_row

from support.tokenizer_zoo import gpt2_hf_fast

# (pattern, sample strings of the language used to reach states)
PATTERNS = [
    (r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])", ["2024-05-17", "1999-12-31"]),
    (r"[\w.+-]{1,20}@[\w-]{1,20}\.[a-z]{2,6}", ["jane.doe+x@example.com", "a@b.io"]),
    (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", ["123e4567-e89b-12d3-a456-426614174000"]),
    (r"((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)", ["192.168.0.1", "8.8.8.8"]),
    (r"\{\"name\": \"[^\"\\\n]{0,30}\", \"age\": (0|[1-9]\d{0,2})\}", ['{"name": "Zoë 中文 😀", "age": 42}']),
    (r"(Hello|Hi), [A-Z][a-z]+[.!]( [^\n]{0,12})?", ["Hello, World! Ça va? 日本", "Hi, Bob."]),
    (r".{0,5}é{1,3}[^a-z]*", ["xyz\u00e9\u00e9 !", "\u00e9"]),
]


@lru_cache(maxsize=None)
def code_point_range_of_prefix(tail: bytes) -> tuple[int, int] | None:
    """(lowest, highest) code point whose UTF-8 encoding starts with ``tail``, or None."""
    lengths = {1: 0x80, 2: 0x800, 3: 0x10000, 4: 0x110000}
    low = None
    high = None
    start = 0
    for length, end in lengths.items():
        for code_point in range(start, end):
            if 0xD800 <= code_point <= 0xDFFF:
                continue
            if chr(code_point).encode("utf-8").startswith(tail):
                if low is None:
                    low = code_point
                high = code_point
            elif low is not None:
                return low, high  # code points sharing a UTF-8 prefix are contiguous
        start = end
    return None if low is None else (low, high)


class FsmOracle:
    def __init__(self, pattern: str):
        self.fsm = interegular.parse_pattern(pattern).to_fsm()
        self.explicit = sorted(ch for ch in self.fsm.alphabet if isinstance(ch, str))

    def walk(self, state, text):
        for ch in text:
            if state is None:
                return None
            state = self.fsm.map.get(state, {}).get(self.fsm.alphabet[ch])
        return state

    def live(self, state) -> bool:
        return state is not None and self.fsm.islive(state)

    def any_live_char_in(self, state, low: int, high: int) -> bool:
        transitions = self.fsm.map.get(state, {})
        inside = [ch for ch in self.explicit if low <= ord(ch) <= high]
        symbols = {self.fsm.alphabet[ch] for ch in inside}
        if len(inside) < high - low + 1:  # some character of the range is not in the alphabet
            symbols.add(self.fsm.alphabet[interegular.fsm.anything_else])
        return any(self.live(transitions.get(symbol)) for symbol in symbols)


def split_utf8(data: bytes):
    """(complete text, incomplete tail) or None when ``data`` is not a UTF-8 prefix."""
    try:
        return data.decode("utf-8"), b""
    except UnicodeDecodeError as error:
        if error.reason != "unexpected end of data":
            return None
        return data[: error.start].decode("utf-8"), data[error.start:]


def oracle_mask(pattern: str, fsm: FsmOracle, vocab: ga.Vocabulary, prefix: bytes) -> np.ndarray:
    allowed = np.zeros(vocab.size, dtype=bool)
    compiled_regex = regex_module.compile(pattern, flags=regex_module.ASCII | regex_module.VERSION0)
    for token_id in vocab.grammar_token_ids():
        split = split_utf8(prefix + vocab.token_bytes[token_id])
        if split is None:
            continue
        text, tail = split
        state = fsm.walk(fsm.fsm.initial, text)
        if not tail:
            verdict = fsm.live(state)
            assert verdict == (compiled_regex.fullmatch(text, partial=True) is not None), (text, pattern)
        else:
            code_points = code_point_range_of_prefix(tail)
            verdict = code_points is not None and fsm.live(state) and fsm.any_live_char_in(state, *code_points)
        allowed[token_id] = verdict
    split = split_utf8(prefix)
    if split is not None and not split[1]:
        complete = fsm.walk(fsm.fsm.initial, split[0]) in fsm.fsm.finals
        assert complete == (re.fullmatch(pattern, split[0], re.ASCII) is not None)
        if complete:
            allowed[list(vocab.eos_token_ids)] = True
    return allowed


def matcher_mask(matcher: ga.GrammarMatcher, vocab: ga.Vocabulary) -> np.ndarray:
    bitmask = ga.allocate_token_bitmask_numpy(1, vocab.size)
    matcher.fill_next_token_bitmask(bitmask, 0)
    return unpack_bitmask_row(bitmask[0], vocab.size)


def reached_prefixes(compiled, vocab, samples, rng, count):
    """Token prefixes of sample strings (GPT-2 encoded) and random walks on allowed tokens."""
    tokenizer_prefixes = []
    encode = vocab_encoder()
    for sample in samples:
        ids = encode(sample)
        for cut in sorted(set(rng.integers(0, len(ids) + 1, size=3).tolist())):
            tokenizer_prefixes.append(ids[:cut])
    walks = []
    for _ in range(count):
        matcher = compiled.matcher()
        ids = []
        for _ in range(int(rng.integers(1, 12))):
            allowed = matcher.allowed_token_ids()
            allowed = allowed[~np.isin(allowed, vocab.eos_token_ids)]
            if allowed.size == 0:
                break
            token = int(rng.choice(allowed))
            matcher.accept_token(token)
            ids.append(token)
        walks.append(ids)
    return tokenizer_prefixes + walks


@lru_cache(maxsize=1)
def vocab_encoder():
    tokenizer = gpt2_hf_fast()
    return lambda text: tokenizer.encode(text, add_special_tokens=False)


@lru_cache(maxsize=1)
def gpt2_vocabulary() -> ga.Vocabulary:
    return ga.Vocabulary.from_hf(gpt2_hf_fast())


@pytest.mark.parametrize("pattern, samples", PATTERNS, ids=[p for p, _ in PATTERNS])
def test_mask_equals_brute_force_oracle(pattern, samples):
    vocab = gpt2_vocabulary()
    compiled = ga.compile(ga.Grammar.from_regex(pattern, flags=re.ASCII), vocab)
    fsm = FsmOracle(pattern)
    rng = np.random.default_rng(zlib.crc32(pattern.encode()))
    for ids in reached_prefixes(compiled, vocab, samples, rng, count=4):
        matcher = compiled.matcher()
        for token in ids:
            matcher.accept_token(token)
        prefix = b"".join(vocab.token_bytes[t] for t in ids)
        expected = oracle_mask(pattern, fsm, vocab, prefix)
        actual = matcher_mask(matcher, vocab)
        wrong = np.flatnonzero(expected != actual)
        assert wrong.size == 0, (
            f"prefix {prefix!r}: {wrong.size} tokens differ, e.g. "
            f"{[(int(t), vocab.token_bytes[t], bool(expected[t])) for t in wrong[:5]]}"
        )
