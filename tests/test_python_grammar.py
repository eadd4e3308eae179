"""The shipped Python grammar: the incremental parser against lark's LALR parser with the
indentation post-lexer of ``oracles.python_layout`` (gramalign's documented layout semantics), and
masks against a brute-force scan of the vocabulary, on standard-library files and random
sentences of the grammar.
"""

from __future__ import annotations

import random
from functools import lru_cache

import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from oracles.brute_force_masks import assert_mask_equals_brute_force
from oracles.python_layout import oracle_accepts, python_random_strings, stdlib_python_files
from support.mask_walks import random_mask_walk
from support.tokenizer_zoo import gpt2_hf_fast
from support.vocabularies import gpt2_vocabulary, llama_sample_vocabulary

MUTATIONS = ("(", ")", "[", "]", ":", " ", "  ", "\t", "\n", "\n    ", "#", "x", "'", '"', "\\\n", "=", ",", "if ")


def python_parser() -> IncrementalParser:
    return IncrementalParser(build_parser_tables(ga.Grammar.builtin("python")))


def snippets(count: int, seed: int) -> list[str]:
    """Pieces of standard-library files: whole files cut after a random line."""
    rng = random.Random(seed)
    pieces = []
    for path in stdlib_python_files(count):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        pieces.append("".join(lines[:rng.randint(5, 60)]))
    return pieces


def mutate(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    kind = rng.randrange(5)
    if kind == 0 and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
        return "".join(lines)
    if kind == 1 and lines:
        k = rng.randrange(len(lines))
        lines[k] = " " * rng.randint(1, 5) + lines[k]
        return "".join(lines)
    if kind == 2 and lines:
        k = rng.randrange(len(lines))
        lines[k] = lines[k][rng.randint(1, 4):] if lines[k].startswith(" ") else "\t" + lines[k]
        return "".join(lines)
    if kind == 3:
        return text[:rng.randrange(len(text) + 1)]
    at = rng.randrange(len(text) + 1)
    return text[:at] + rng.choice(MUTATIONS) + text[at:]


def test_stdlib_files_are_accepted():
    parser = python_parser()
    files = stdlib_python_files(40)
    assert len(files) >= 30
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert oracle_accepts(text), path
        assert parser.accepts(text.encode("utf-8")), path


def test_parser_agrees_with_lark_on_mutated_code():
    """Accept/reject verdicts equal lark's on ~1,000 damaged pieces of real code."""
    parser = python_parser()
    rng = random.Random(11)
    texts = snippets(25, seed=3) + python_random_strings(30, seed=4)
    agreed = rejected = 0
    for text in texts:
        for _ in range(30):
            damaged = mutate(text, rng)
            expected = oracle_accepts(damaged)
            got = parser.accepts(damaged.encode("utf-8"))
            assert got == expected, damaged
            agreed += 1
            rejected += not expected
    assert agreed >= 900 and rejected >= 200


def test_prefixes_are_viable_exactly_when_lark_can_continue():
    """Every prefix of real code is viable, and cutting a rejected string at the failing
    byte leaves a viable prefix (the parser fails at the first impossible byte)."""
    parser = python_parser()
    rng = random.Random(5)
    for text in snippets(12, seed=6):
        data = text.encode("utf-8")
        for cut in sorted(rng.sample(range(len(data) + 1), 10)):
            assert parser.is_prefix(data[:cut]), data[:cut]


def python_texts() -> list[str]:
    return snippets(4, seed=8) + python_random_strings(4, seed=9) + [
        "def f(a, *args, b=1, **kw):\n    if a:\n        return [x for x in args if x]\n    else:\n"
        "        pass\n\n\nclass C(Base):\n    x: int = 3\n",
        "x = (1,\n     2)  # comment\nwhile x:\n\tx -= 1\n",
    ]


@lru_cache(maxsize=None)
def compiled_python(vocab_name: str) -> ga.CompiledGrammar:
    vocab = gpt2_vocabulary() if vocab_name == "gpt2" else llama_sample_vocabulary()
    return ga.compile(ga.Grammar.builtin("python"), vocab)


@pytest.mark.parametrize("vocab_name", ["gpt2", "llama-sample"])
def test_mask_equals_brute_force(vocab_name):
    compiled = compiled_python(vocab_name)
    rng = random.Random(f"python-{vocab_name}")
    checked = 0
    for text in python_texts():
        data = text.encode("utf-8")
        # Cut at random bytes, and right after line breaks and indentation, where layout matters.
        breaks = [k + 1 for k, b in enumerate(data) if b == 10]
        cuts = rng.sample(range(len(data) + 1), 2) + rng.sample(breaks, min(1, len(breaks)))
        cuts += [k + 4 for k in breaks[:1] if k + 4 <= len(data)]
        for cut in sorted(set(cuts)):
            checked += assert_mask_equals_brute_force(compiled, data[:cut])
    assert checked >= 25


def test_real_code_is_accepted_token_by_token():
    compiled = compiled_python("gpt2")
    tokenizer = gpt2_hf_fast()
    for path in stdlib_python_files(4):
        text = path.read_text(encoding="utf-8")
        matcher = compiled.matcher()
        for token in tokenizer.encode(text):
            matcher.accept_token(token)
        assert matcher.can_terminate(), text
        matcher.accept_token(compiled.vocabulary.eos_token_ids[0])
        assert matcher.is_terminated()


def test_sampled_programs_parse_with_lark():
    """Random walks through the masks end in programs that lark (with the layout post-lexer) parses."""
    compiled = compiled_python("gpt2")
    vocab = compiled.vocabulary
    rng = np.random.default_rng(7)

    def favour_layout(choices, rng):  # tokens with line breaks or colons, so blocks open and close
        layout = [t for t in choices if any(b in vocab.token_bytes[t] for b in b"\n:")]
        return int(rng.choice(layout if layout and rng.random() < 0.3 else choices))

    finished = 0
    for _ in range(8):
        matcher, text = random_mask_walk(compiled, rng, steps=80, end_after=40, end_chance=0.1,
                                         pick=favour_layout)
        if matcher.is_terminated():
            assert oracle_accepts(text.decode("utf-8")), text
            finished += 1
    assert finished >= 2


def test_layout_errors_and_limits():
    with pytest.raises(ga.GrammarError, match="newline terminal"):
        ga.Grammar.from_lark('start: (NAME _NL)+ [_INDENT NAME _DEDENT]\nNAME: /[a-z]+/\n_NL: /\\n/\n'
                             '%declare _INDENT _DEDENT', indentation=ga.Indentation(newline="_NL"))
    with pytest.raises(ga.GrammarError, match="declare"):
        ga.Grammar.from_lark('start: NAME\nNAME: /[a-z]+/\n%declare FOO')
