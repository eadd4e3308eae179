"""Grammar.from_gbnf reads any context-free GBNF grammar (issue 34: a generalized LR runtime
in place of LALR(1)-only tables): ambiguous rules, empty alternatives, left, right and hidden
left recursion, unit cycles, cycles through the empty string, duplicate alternatives, unused
and unproductive rules. The oracle is the Earley recognizer of oracles/gbnf.py over the rules'
syntax trees (none of gramalign's IR, lexer or tables): whether a text is a sentence, and
whether it is the beginning of one (a viable prefix).

- Random grammars (oracles/random_cfg.py, seeded) and hand-written ones, one shape each:
  ``parser.accepts`` agrees with the oracle on random sentences, damaged copies and every
  string up to a length; masks equal the brute-force scan along random walks; a matcher walk
  that takes random allowed tokens agrees with the oracle at every step on ``can_terminate``
  and on the whole allowed set (allowed exactly when the text and the token begin a sentence).
- llama.cpp's eight shipped grammars load, and agree with the oracle and the brute-force masks.
- Highly ambiguous grammars (Catalan numbers of trees, or infinitely many) on texts of about
  200 characters: a matcher reads them token by token to the end, accepts the valid ones and
  rejects the damaged ones where the oracle does.

Until the generalized runtime lands, the grammars LALR(1) cannot read fail here with
"not LALR(1) at the character level"; the ones it reads pass.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

import pytest

import gramalign as ga
from gramalign.grammar.gbnf_frontend import parse_gbnf
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser

from oracles.brute_force_masks import assert_mask_equals_brute_force
from oracles.gbnf import Earley, earley_accepts, earley_prefix_verdicts, earley_prefix_viable, earley_verdicts, \
    random_sentence, sentences_up_to
from oracles.random_cfg import CHARS, MOTIFS, random_cfg

# -- sizes (the whole file is meant to take well under three minutes on one core) -------------

RANDOM_GRAMMARS = 48  # seeds 0 .. RANDOM_GRAMMARS - 1
SENTENCES = 25  # random sentences per grammar, each with DAMAGED damaged copies
DAMAGED = 2
SENTENCE_DEPTH = 8  # random_sentence's depth bound for the small grammars
MAX_SENTENCE_CHARS = 40  # longer random sentences of the small grammars are skipped
EXHAUSTIVE_STRINGS = 1500  # every string over the alphabet up to the longest length this many strings allow
ENUMERATED_STRINGS = 1500  # the same for the bottom-up enumeration that checks the Earley oracle
MASK_WALKS = 3  # oracle-driven random walks per grammar, masks checked at every step
MASK_WALK_STEPS = 8
MASK_SENTENCE_PREFIXES = 6  # and at cuts of random sentences
MATCHER_WALKS = 4  # matcher-driven random walks per grammar
MATCHER_WALK_STEPS = 12

LLAMA_SENTENCES = 400  # random sentences per llama.cpp grammar, each with LLAMA_DAMAGED damaged copies
LLAMA_DAMAGED = 1
LLAMA_SENTENCE_DEPTH = 10  # random_sentence's depth bound (12 makes C programs of thousands of characters)
LLAMA_MAX_SENTENCE_CHARS = 600  # longer ones are skipped
LLAMA_MASK_PREFIXES = 20

AMBIGUOUS_LENGTH = 200
AMBIGUOUS_DAMAGED = 3
AMBIGUOUS_MUTATIONS = "ab+1x"
AMBIGUOUS_MASK_PREFIXES = (0, 1, 2, 57, 100, 199)

LLAMA_DIR = Path(__file__).parent / "data" / "gbnf_llama_cpp"
LLAMA_GRAMMARS = sorted(path.stem for path in LLAMA_DIR.glob("*.gbnf"))

# -- hand-written grammars, one shape each (which LALR(1) reads today is noted) -------------

SHAPES = {
    # LALR(1) cannot read these
    "ambiguous-concatenation": 'root ::= s\ns ::= s s | "a" | "b"\n',
    "ambiguous-operators": 'root ::= e\ne ::= e "+" e | e "*" e | "(" e ")" | [0-2]\n',
    "hidden-left-recursion": 'root ::= a\na ::= b a "c" | "d"\nb ::= "" | "b"\n',
    "hidden-left-recursion-nullable-rule": 'root ::= a\na ::= b a "c" | "d"\nb ::= "b"?\n',
    "unit-cycle": 'root ::= a\na ::= b | "x"\nb ::= a | "y"\n',
    "duplicate-alternatives": 'root ::= a\na ::= "a" a "b" | "a" a "b" | "c"\n',
    "empty-cycle": 'root ::= s\ns ::= s s | "" | "a"\n',
    "palindromes": 'root ::= p\np ::= "a" p "a" | "b" p "b" | "a" | "b" | ""\n',
    "nullable-star": 'root ::= n\nn ::= ("a"?)* "b" n | ""\n',
    "lookahead-two": 'root ::= a "xy" | b "xz" | root "+" root\na ::= "q"\nb ::= "q"\n',
    "dangling-else": 'root ::= s\ns ::= "i" s | "i" s "e" s | "x"\n',
    "nullable-both-sides": 'root ::= a\na ::= n a n | "x"\nn ::= "" | "y"\n',
    "only-the-empty-string": 'root ::= e\ne ::= e e | ""\n',
    "unproductive-recursion": 'root ::= a | "b" u\na ::= a a | "a" | u\nu ::= u "c"\n',
    "optional-and-star": 'root ::= "x"? "y"* ("x" | "y" z)+\nz ::= "z" z | "x"\n',
    # LALR(1) reads these: they check the harness today
    "left-recursion": 'root ::= l\nl ::= l "a" | "b"\n',
    "right-recursion": 'root ::= r\nr ::= "a" r | "b"\n',
    "empty-alternatives": 'root ::= a b\na ::= "" | "x" a\nb ::= | "y"\n',
    "optional-and-star-lalr": 'root ::= "x"? "y"* ("z" "y"? | "(" root ")")+\n',
    # (the LALR(1) runtime lets a token into the unproductive rule through: no sentence begins "a")
    "unused-and-unproductive": 'root ::= "a" u | "b" x\nu ::= "c" u\nx ::= "d" | x "e"\nunused ::= "z"\n',
    "nested-parentheses": 'root ::= p\np ::= "(" p ")" p | ""\n',
}

CASES = [f"seed-{seed}" for seed in range(RANDOM_GRAMMARS)] + sorted(SHAPES)


@functools.lru_cache(maxsize=None)
def case(name: str) -> tuple[str, str]:
    """(GBNF text, alphabet) of a random grammar ("seed-N") or a hand-written one."""
    if name.startswith("seed-"):
        cfg = random_cfg(int(name[5:]))
        return cfg.text, cfg.alphabet
    text = SHAPES[name]
    return text, alphabet_of(parse_gbnf(text)) or "a"


def exhaustive_length(alphabet: str, budget: int = EXHAUSTIVE_STRINGS) -> int:
    length, count = 0, 1
    while count + len(alphabet) ** (length + 1) <= budget and length < 12:
        length += 1
        count += len(alphabet) ** length
    return length


def alphabet_of(rules: dict) -> str:
    chars: set[str] = set()

    def walk(node):
        if node[0] == "chars":
            for low, high in node[1]:
                assert high - low < 20, "a small alphabet"
                chars.update(chr(c) for c in range(low, high + 1))
        elif node[0] in ("seq", "alt"):
            for item in node[1]:
                walk(item)
        elif node[0] == "rep":
            walk(node[1])

    for body, _, _ in rules.values():
        walk(body)
    return "".join(sorted(chars))


@functools.lru_cache(maxsize=None)
def parser(text: str) -> IncrementalParser:
    return IncrementalParser(build_parser_tables(ga.Grammar.from_gbnf(text)))


def vocabulary(pieces) -> ga.Vocabulary:
    """The pieces (str or bytes) as tokens, and EOS last."""
    tokens = sorted({p.encode() if isinstance(p, str) else p for p in pieces if p}) + [b"<eos>"]
    return ga.Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])


def small_vocabulary(alphabet: str, rng: random.Random) -> ga.Vocabulary:
    """Every character of the alphabet, every pair, a few longer tokens, one character outside
    the alphabet and one of two bytes."""
    pieces = set(alphabet) | {a + b for a in alphabet for b in alphabet}
    pieces |= {"".join(rng.choice(alphabet) for _ in range(rng.randint(3, 5))) for _ in range(8)}
    pieces |= {next(c for c in CHARS + "q" if c not in alphabet), "é", alphabet[0] + "é"}
    return vocabulary(pieces)


@functools.lru_cache(maxsize=None)
def compiled_case(name: str) -> ga.CompiledGrammar:
    text, alphabet = case(name)
    return ga.compile(ga.Grammar.from_gbnf(text), small_vocabulary(alphabet, random.Random(name)), cache=False)


def damaged(text: str, rng: random.Random, extra: str) -> str:
    """A character inserted, deleted, replaced or duplicated, or two swapped."""
    at = rng.randrange(len(text) + 1)
    roll = rng.random()
    if text and roll < 0.3:
        return text[:at] + text[at + 1:]
    if text and roll < 0.45 and at < len(text):
        return text[:at] + rng.choice(extra) + text[at + 1:]
    if len(text) > 1 and roll < 0.6:
        at = min(at, len(text) - 2)
        return text[:at] + text[at + 1] + text[at] + text[at + 2:]
    if text and roll < 0.7:
        end = rng.randint(at, len(text))
        return text[:end] + text[at:end] + text[end:]
    return text[:at] + rng.choice(extra) + text[at:]


def sentences(rules: dict, rng: random.Random, count: int, depth: int = 12, longest: int | None = None):
    for _ in range(count):
        sentence = random_sentence(rules, rng, depth=depth)
        if sentence is not None and (longest is None or len(sentence) <= longest):
            yield sentence


def mask_equals_brute_force(compiled: ga.CompiledGrammar, prefix: bytes) -> bool:
    return assert_mask_equals_brute_force(compiled, prefix)


# -- the oracle and the generator themselves ---------------------------------------------------


def test_the_prefix_oracle_knows_dead_ends_and_unproductive_rules():
    rules = parse_gbnf(SHAPES["unused-and-unproductive"])
    viable = {t: earley_prefix_viable(rules, t) for t in ["", "a", "ac", "acc", "b", "bd", "bde", "be", "z", "c"]}
    assert viable == {"": True, "a": False, "ac": False, "acc": False, "b": True, "bd": True, "bde": True,
                      "be": False, "z": False, "c": False}
    assert [earley_accepts(rules, t) for t in ["bd", "bdee", "b", "a", "z"]] == [True, True, False, False, False]
    assert not earley_prefix_viable(parse_gbnf('root ::= "a" root\n'), "")  # no sentence at all
    # every string over the alphabet: viable exactly when some extension is accepted (for
    # these grammars a completion of at most five more characters is enough up to length 3)
    for name in ("empty-cycle", "nullable-both-sides", "unproductive-recursion", "palindromes",
                 "hidden-left-recursion"):
        rules = parse_gbnf(SHAPES[name])
        alphabet = alphabet_of(rules)
        verdicts = earley_verdicts(rules, alphabet, 8)
        for text, (viable, accepted) in verdicts.items():
            assert accepted == earley_accepts(rules, text), (name, text)
            assert not accepted or viable, (name, text)
            if len(text) <= 3:
                extended = any(accepted for other, (_, accepted) in verdicts.items() if other.startswith(text))
                assert viable == extended, (name, text)
        sample = max(verdicts, key=lambda t: (verdicts[t], len(t)))
        assert earley_prefix_verdicts(rules, sample) == [verdicts[sample[:i]] for i in range(len(sample) + 1)]


def test_random_grammars_are_well_formed_and_cover_every_shape():
    seen = set()
    for seed in range(RANDOM_GRAMMARS):
        cfg = random_cfg(seed)
        assert cfg == random_cfg(seed), "the same grammar for the same seed"
        rules = cfg.rules
        assert 2 <= len(cfg.alphabet) <= 4 and 2 <= len(rules) <= 6 and "root" in rules
        assert set(alphabet_of(rules)) <= set(cfg.alphabet)
        assert earley_prefix_viable(rules, "")  # the root derives a sentence
        seen.update(cfg.motifs)
    assert seen == set(MOTIFS)


@pytest.mark.parametrize("name", CASES)
def test_the_oracle_agrees_with_a_bottom_up_enumeration(name):
    """Earley's sentences up to a length are the ones a fixed point of every rule's strings
    finds: the oracle is right on the grammars that today's runtime cannot load."""
    text, alphabet = case(name)
    rules = parse_gbnf(text)
    length = max(exhaustive_length(alphabet, ENUMERATED_STRINGS), 2)
    verdicts = earley_verdicts(rules, alphabet, length)
    assert {t for t, (_, accepted) in verdicts.items() if accepted} == sentences_up_to(rules, alphabet, length), text


# -- random and hand-written grammars ----------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_accepts_what_the_oracle_accepts(name):
    """(a) random sentences and damaged copies, then every string up to a length; is_prefix is
    checked too (the masks rest on it: a prefix is alive exactly when some sentence begins so)."""
    text, alphabet = case(name)
    rules = parse_gbnf(text)
    reader = parser(text)
    rng = random.Random(name)
    extra = alphabet + next(c for c in CHARS + "q" if c not in alphabet)
    for sentence in sentences(rules, rng, SENTENCES, SENTENCE_DEPTH, MAX_SENTENCE_CHARS):
        assert earley_accepts(rules, sentence), (text, sentence)
        assert reader.accepts(sentence.encode()), (text, sentence)
        for _ in range(DAMAGED):
            sample = damaged(sentence, rng, extra)
            assert reader.accepts(sample.encode()) == earley_accepts(rules, sample), (text, sample)
    verdicts = earley_verdicts(rules, alphabet, exhaustive_length(alphabet))
    for sample, (viable, accepted) in verdicts.items():
        data = sample.encode()
        assert (reader.is_prefix(data), reader.accepts(data)) == (viable, accepted), (text, sample)
    assert any(accepted for _, accepted in verdicts.values())


@pytest.mark.parametrize("name", CASES)
def test_masks_equal_brute_force(name):
    """(b) at cuts of random sentences and at every step of random walks that the oracle
    steers (each character one that keeps a completion)."""
    text, alphabet = case(name)
    rules = parse_gbnf(text)
    compiled = compiled_case(name)
    rng = random.Random(name)
    prefixes = set()
    for sentence in sentences(rules, rng, MASK_SENTENCE_PREFIXES, SENTENCE_DEPTH, MAX_SENTENCE_CHARS):
        prefixes.add(sentence[:rng.randint(0, len(sentence))])
    earley = Earley(rules, productive_only=True)
    for _ in range(MASK_WALKS):
        charts, walked = earley.initial(), ""
        prefixes.add(walked)
        for _ in range(MASK_WALK_STEPS):
            options = [(c, following) for c in alphabet if (following := earley.advance(charts, c))[-1].items]
            if not options:
                break
            char, charts = rng.choice(options)
            walked += char
            prefixes.add(walked)
    for prefix in sorted(prefixes):
        assert earley_prefix_viable(rules, prefix)
        checked = mask_equals_brute_force(compiled, prefix.encode())
        assert checked or compiled.index is not None, (text, prefix, "a viable prefix the matcher rejects")


@pytest.mark.parametrize("name", CASES)
def test_matcher_walks_agree_with_the_oracle(name):
    """(c) take random allowed tokens (EOS included) and check at every step: can_terminate is
    the oracle's verdict on the text so far, and the allowed set is exactly the tokens after
    which the text still begins a sentence (so every allowed token keeps a completion)."""
    text, _ = case(name)
    rules = parse_gbnf(text)
    compiled = compiled_case(name)
    vocab = compiled.vocabulary
    eos = vocab.size - 1  # vocabulary() puts EOS last
    grammar_tokens = vocab.grammar_token_ids().tolist()
    earley = Earley(rules, productive_only=True)
    rng = random.Random(name)
    for _ in range(MATCHER_WALKS):
        matcher = compiled.matcher()
        charts, walked = earley.initial(), b""
        for _ in range(MATCHER_WALK_STEPS):
            accepted = earley.accepts(charts)
            assert matcher.can_terminate() == accepted, (text, walked)
            expected = {eos} if accepted else set()
            for token in grammar_tokens:
                following = charts
                for char in vocab.token_bytes[token].decode("utf-8"):
                    following = earley.advance(following, char)
                    if not following[-1].items:
                        break
                else:
                    expected.add(token)
            allowed = set(matcher.allowed_token_ids().tolist())
            assert allowed == expected, (text, walked, sorted(vocab.token_bytes[t] for t in allowed ^ expected))
            assert allowed, (text, walked, "a viable prefix with nothing allowed")
            token = rng.choice(sorted(allowed))
            matcher.accept_token(token)
            if token == eos:
                assert matcher.is_terminated() and not matcher.can_terminate()
                break
            for char in vocab.token_bytes[token].decode("utf-8"):
                charts = earley.advance(charts, char)
            walked += vocab.token_bytes[token]


# -- llama.cpp's grammars ----------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def llama(name: str) -> str:
    return (LLAMA_DIR / f"{name}.gbnf").read_text(encoding="utf-8")


LLAMA_MUTATIONS = ["", " ", "x", "0", "\"", "{", "]", ",", "-", "\n", "é", "\\", "e", "、", "(", ";", "=", "1"]


def test_the_eight_llama_cpp_grammars_are_there():
    assert LLAMA_GRAMMARS == ["arithmetic", "c", "chess", "english", "japanese", "json", "json_arr", "list"]


@pytest.mark.parametrize("name", LLAMA_GRAMMARS)
def test_llama_cpp_grammar_loads(name):
    text = llama(name)
    grammar = ga.Grammar.from_gbnf(text)
    build_parser_tables(grammar)
    rng = random.Random(name)
    sample = next(sentences(parse_gbnf(text), rng, 100, LLAMA_SENTENCE_DEPTH, LLAMA_MAX_SENTENCE_CHARS))
    matcher = ga.compile(grammar, vocabulary(set(sample)), cache=False).matcher()
    assert matcher.allowed_token_ids().size > 0
    matcher.accept_string(sample)
    assert matcher.can_terminate()


@pytest.mark.parametrize("name", LLAMA_GRAMMARS)
def test_llama_cpp_grammar_means_what_the_oracle_says(name):
    text = llama(name)
    rules = parse_gbnf(text)
    reader = parser(text)
    rng = random.Random(name)
    verdicts, checked = set(), 0
    for sentence in sentences(rules, rng, LLAMA_SENTENCES, LLAMA_SENTENCE_DEPTH, LLAMA_MAX_SENTENCE_CHARS):
        assert reader.accepts(sentence.encode()), (name, sentence)
        for _ in range(LLAMA_DAMAGED):
            sample = damaged(sentence, rng, LLAMA_MUTATIONS)
            expected = earley_accepts(rules, sample)
            assert reader.accepts(sample.encode()) == expected, (name, sample)
            verdicts.add(expected)
        checked += 1
    assert checked >= LLAMA_SENTENCES // 2 and verdicts == {True, False}


def llama_vocabulary(samples: list[str], rng: random.Random) -> ga.Vocabulary:
    """Each character of the samples, pieces of them (some cut inside a UTF-8 character), and a
    few tokens no grammar wants."""
    pieces: set = set("".join(samples)) | {"\u00a0", "\x00", "<|"}
    for sample in samples:
        data = sample.encode()
        for _ in range(4):
            if len(sample) >= 2:
                at = rng.randrange(len(sample) - 1)
                pieces.add(sample[at:at + rng.randint(2, 6)])
            if len(data) >= 2:
                at = rng.randrange(len(data) - 1)
                pieces.add(data[at:at + rng.randint(1, 3)])
    return vocabulary(pieces)


@pytest.mark.parametrize("name", LLAMA_GRAMMARS)
def test_llama_cpp_masks_equal_brute_force(name):
    text = llama(name)
    rules = parse_gbnf(text)
    rng = random.Random(name)
    samples = list(sentences(rules, rng, 40, LLAMA_SENTENCE_DEPTH, 300))[:20]
    assert len(samples) >= 10
    compiled = ga.compile(ga.Grammar.from_gbnf(text), llama_vocabulary(samples, rng), cache=False)
    checked = 0
    for k in range(LLAMA_MASK_PREFIXES):
        data = samples[k % len(samples)].encode()
        checked += mask_equals_brute_force(compiled, data[:rng.randint(0, len(data))])
    assert checked >= LLAMA_MASK_PREFIXES // 2


# -- highly ambiguous grammars on long texts ---------------------------------------------------

AMBIGUOUS = {
    # name: (grammar, a valid text, damaged texts besides random ones, the vocabulary's pieces)
    # Catalan-many trees: s ::= s s
    "concatenation": ('root ::= s\ns ::= s s | "a"\n', "a" * AMBIGUOUS_LENGTH,
                      ["a" * 100 + "b" + "a" * 99, "a" * AMBIGUOUS_LENGTH + "b", "b" + "a" * AMBIGUOUS_LENGTH],
                      ["a", "aa", "aaa", "aaaaaaa", "b", "ab"]),
    # infinitely many trees: s ::= s s | ""
    "concatenation-with-empty": ('root ::= s\ns ::= s s | "" | "a"\n', "a" * AMBIGUOUS_LENGTH,
                                 ["a" * 150 + "ba" + "a" * 48], ["a", "aa", "aaaaa", "b", "ba"]),
    "sum": ('root ::= e\ne ::= e "+" e | [0-9]\n',
            "+".join(str(i % 10) for i in range(AMBIGUOUS_LENGTH // 2 + 1)),
            ["+".join(str(i % 10) for i in range(AMBIGUOUS_LENGTH // 2 + 1)) + "+",
             "+".join(str(i % 10) for i in range(60)) + "++" + "+".join("7" * 40),
             "+".join(str(i % 10) for i in range(60)) + "12" + "+".join("7" * 40)],
            list("0123456789+") + ["1+", "+2", "3+4", "+5+", "++", "12", "x"]),
}


def feed_tokens(matcher: ga.GrammarMatcher, vocab: ga.Vocabulary, text: str, rng: random.Random,
                verdicts: list) -> tuple[bool, int]:
    """Feed ``text`` as random tokens of ``vocab`` (any token that fits next, single characters
    always do), checking ``can_terminate`` against the oracle's verdicts after each one:
    (all accepted, characters fed before the first rejected token or the end)."""
    by_bytes = {vocab.token_bytes[t]: t for t in vocab.grammar_token_ids().tolist()}
    at = 0
    while at < len(text):
        fits = [piece for piece in by_bytes if text.startswith(piece.decode(), at)]
        piece = rng.choice(fits)
        if not matcher.try_accept_token(by_bytes[piece]):
            return False, at
        at += len(piece.decode())
        assert matcher.can_terminate() == verdicts[at][1], (text, at)
    return True, at


@pytest.mark.parametrize("name", sorted(AMBIGUOUS))
def test_highly_ambiguous_grammars_on_long_texts(name):
    """A matcher reads the valid text token by token to the end and accepts it; a damaged text
    is rejected by the token that reaches the first dead prefix the oracle finds, or, when
    every prefix lives, at the end exactly when the oracle rejects it."""
    text, valid, broken, pieces = AMBIGUOUS[name]
    rules = parse_gbnf(text)
    rng = random.Random(name)
    pieces = pieces + list(AMBIGUOUS_MUTATIONS)  # every character of a damaged text is a token
    compiled = ga.compile(ga.Grammar.from_gbnf(text), vocabulary(pieces), cache=False)
    eos = compiled.vocabulary.size - 1
    samples = [valid] + broken + [damaged(valid, rng, AMBIGUOUS_MUTATIONS) for _ in range(AMBIGUOUS_DAMAGED)]
    outcomes = []
    for sample in samples:
        verdicts = earley_prefix_verdicts(rules, sample)  # (viable, accepted) after each prefix
        matcher = compiled.matcher()
        fed, at = feed_tokens(matcher, compiled.vocabulary, sample, rng, verdicts)
        if fed:
            assert all(viable for viable, _ in verdicts), sample
            assert matcher.try_accept_token(eos) == verdicts[-1][1], sample
            assert matcher.is_terminated() == verdicts[-1][1]
        else:  # rejected by a token: the one that reaches the oracle's first dead prefix
            first_dead = next(i for i, (viable, _) in enumerate(verdicts) if not viable)
            assert at < first_dead <= at + max(len(p) for p in pieces), (sample, at, first_dead)
        outcomes.append(fed and verdicts[-1][1])
    assert outcomes[0] and not any(outcomes[1:1 + len(broken)])
    for cut in AMBIGUOUS_MASK_PREFIXES:
        assert mask_equals_brute_force(compiled, valid[:cut].encode())
