"""The incremental parser against lark's own LALR parser, and grammar masks against a
brute-force scan, on small grammars chosen to stress lexing: longest match, keywords vs
identifiers, ignored whitespace and comments, terminals that are prefixes of others.

The grammar IR is built here straight from lark's loaded rules and terminals, so these
tests exercise the parser and the mask store independently of gramalign's Lark front end.
"""

from __future__ import annotations

import random
from functools import lru_cache

import lark
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gramalign as ga
from gramalign.grammar.grammar import Grammar, Rule, Terminal
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser
from gramalign.masking.bitmask import unpack_bitmask_row

GRAMMARS = {
    "json": (r'''
        ?value: object | array | STRING | NUMBER | "true" | "false" | "null"
        object: "{" [pair ("," pair)*] "}"
        pair: STRING ":" value
        array: "[" [value ("," value)*] "]"
        STRING: /"([^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/
        NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
        %ignore /[ \t\n\r]+/
        ''', "value",
        ['{"a": [1, 2.5e-3, true, null], "b": {"c": "x\\"y"}}', '[]', '-0', '"\\u00e9"', ' [ {} ] ']),
    "sql": (r'''
        start: stmt (";" stmt)* [";"]
        stmt: "select"i ["distinct"i] cols "from"i NAME [where] | "delete"i "from"i NAME [where]
        cols: "*" | expr ("," expr)*
        where: "where"i expr
        ?expr: expr "and"i cmp | cmp
        ?cmp: atom "=" atom | atom "<" atom | atom "<=" atom | atom "<>" atom | atom
        ?atom: NAME | NUMBER | STRING | NAME "." NAME | "(" expr ")"
        NAME: /[A-Za-z_][A-Za-z0-9_]*/
        NUMBER: /[0-9]+(\.[0-9]+)?/
        STRING: /'([^']|'')*'/
        %ignore /[ \t\n]+/
        %ignore /--[^\n]*/
        ''', "start",
        ["select a, b from t where a <= 1 and b <> 'it''s'", "SELECT * FROM selection; delete from t",
         "select distinct x.y from t -- done\n", "select fromage from t where (a=1)"]),
    "arith": (r'''
        ?sum: sum "+" product | sum "-" product | product
        ?product: product "*" atom | product "**" atom | atom
        ?atom: NUMBER | "-" atom | "(" sum ")" | NAME "(" [sum ("," sum)*] ")"
        NUMBER: /[0-9]+(\.[0-9]*)?/
        NAME: /[a-z]+/
        %ignore " "
        ''', "sum",
        ["1+2*3", "f(1, 2.)**-x(3)", "(1.5 - 2) * 3.", "max(1,2)-min()"]),
}


def ir_from_lark(text: str, start: str) -> tuple[Grammar, lark.Lark]:
    parser = lark.Lark(text, parser="lalr", start=start)
    terminals = tuple(Terminal(t.name, t.pattern.to_regexp(), 0, t.priority, isinstance(t.pattern, lark.lexer.PatternStr))
                      for t in parser.terminals)
    rules: dict[str, list[tuple[str, ...]]] = {}
    for rule in parser.rules:
        rules.setdefault(rule.origin.name, []).append(tuple(symbol.name for symbol in rule.expansion))
    grammar = Grammar(terminals, tuple(Rule(name, tuple(alts)) for name, alts in rules.items()), start,
                      tuple(parser.ignore_tokens))
    return grammar, parser


@lru_cache(maxsize=None)
def prepared(name):
    text, start, samples = GRAMMARS[name]
    grammar, oracle = ir_from_lark(text, start)
    return grammar, oracle, samples, build_parser_tables(grammar)


def lark_accepts(oracle: lark.Lark, data: bytes) -> bool:
    try:
        oracle.parse(data.decode("utf-8"))
    except (lark.exceptions.LarkError, UnicodeDecodeError):
        return False
    return True


def mutations(samples: list[str], rng: random.Random, count: int) -> list[bytes]:
    alphabet = sorted(set("".join(samples))) + ["\n", "é"]
    out = []
    for _ in range(count):
        text = list(rng.choice(samples))
        for _ in range(rng.randint(0, 3)):
            op = rng.random()
            position = rng.randrange(len(text) + 1)
            if op < 0.4 and text:
                del text[min(position, len(text) - 1)]
            elif op < 0.8:
                text.insert(position, rng.choice(alphabet))
            elif text:
                text[min(position, len(text) - 1)] = rng.choice(alphabet)
        out.append("".join(text).encode("utf-8"))
    return out


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_complete_strings_agree_with_lark(name):
    grammar, oracle, samples, tables = prepared(name)
    parser = IncrementalParser(tables)
    rng = random.Random(name)
    verdicts = set()
    for data in [s.encode() for s in samples] + mutations(samples, rng, 400):
        expected = lark_accepts(oracle, data)
        assert parser.accepts(data) == expected, data
        verdicts.add(expected)
    assert verdicts == {True, False}


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_prefixes_of_sentences_are_viable_and_dead_prefixes_stay_dead(name):
    grammar, oracle, samples, tables = prepared(name)
    parser = IncrementalParser(tables)
    rng = random.Random(name)
    sentences = [d for d in [s.encode() for s in samples] + mutations(samples, rng, 300) if lark_accepts(oracle, d)]
    for sentence in sentences:
        for cut in range(len(sentence) + 1):
            assert parser.is_prefix(sentence[:cut]), (sentence, cut)
    dead = [d for d in mutations(samples, rng, 300) if not parser.is_prefix(d)]
    assert dead
    for data in dead:
        for sentence in rng.sample(sentences, min(5, len(sentences))):
            for cut in (0, len(sentence) // 2, len(sentence)):
                assert not lark_accepts(oracle, data + sentence[cut:]), (data, sentence[cut:])


def small_vocabulary(samples: list[str]) -> ga.Vocabulary:
    """Every 1- and 2-character string over the samples' characters, plus 3-8 character
    pieces cut from the samples (they cross lexeme boundaries), plus EOS."""
    chars = sorted(set("".join(samples)) | {"\n"})
    pieces = set(chars) | {a + b for a in chars for b in chars}
    rng = random.Random(0)
    for sample in samples:
        for _ in range(60):
            start = rng.randrange(len(sample))
            pieces.add(sample[start:start + rng.randint(3, 8)])
    tokens = sorted(p.encode() for p in pieces if p) + [b"<eos>"]
    return ga.Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_masks_equal_brute_force_on_a_small_vocabulary(name):
    grammar, oracle, samples, tables = prepared(name)
    vocab = small_vocabulary(samples)
    compiled = ga.compile(grammar, vocab, cache=False)
    rng = random.Random(name)
    checked = 0
    for sample in samples:
        data = sample.encode()
        for cut in sorted(set(rng.sample(range(len(data) + 1), min(6, len(data) + 1)))):
            matcher = compiled.matcher()
            matcher.accept_string(data[:cut])
            mask = np.zeros((1, compiled.bitmask_width), dtype=np.int32)
            matcher.fill_next_token_bitmask(mask, 0)
            got = unpack_bitmask_row(mask[0], vocab.size)
            parser = IncrementalParser(tables)
            state, _ = parser.feed(parser.initial_state(), data[:cut])
            expected = np.zeros(vocab.size, dtype=bool)
            for token in vocab.grammar_token_ids().tolist():
                following, _ = parser.feed(state, vocab.token_bytes[token])
                expected[token] = following is not None
            expected[vocab.eos_token_ids[0]] = parser.can_end(state)
            assert np.array_equal(got, expected), (data[:cut], [vocab.token_bytes[t] for t in np.flatnonzero(got != expected)])
            checked += 1
    assert checked >= 10


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_matcher_follows_tokens_rolls_back_and_forks(name):
    grammar, oracle, samples, tables = prepared(name)
    vocab = small_vocabulary(samples)
    compiled = ga.compile(grammar, vocab)
    rng = np.random.default_rng(1)
    for _ in range(5):
        matcher = compiled.matcher()
        masks = []
        for step in range(25):
            allowed = [t for t in matcher.allowed_token_ids().tolist() if t not in vocab.eos_token_ids]
            masks.append(matcher.allowed_token_ids().tolist())
            if not allowed:
                break
            matcher.accept_token(int(rng.choice(allowed)))
        twin = matcher.fork()
        steps = matcher.num_accepted_tokens
        back = int(rng.integers(0, steps + 1))
        matcher.rollback(back)
        assert matcher.allowed_token_ids().tolist() == masks[steps - back]
        forbidden = [t for t in range(vocab.size) if t not in set(masks[steps - back])]
        if forbidden:
            with pytest.raises(ga.TokenRejected):
                matcher.accept_token(forbidden[0])
            assert matcher.allowed_token_ids().tolist() == masks[steps - back]
        assert twin.num_accepted_tokens == steps  # the fork did not move


def test_longest_match_beats_an_earlier_split():
    """'<=' is one lexeme: '<' followed by '=' must not parse as two terminals."""
    grammar, oracle, samples, tables = prepared("sql")
    parser = IncrementalParser(tables)
    assert parser.accepts(b"select a from t where a <= 1")
    assert parser.accepts(b"select a from t where a <> 1")
    assert not parser.accepts(b"select a from t where a < > 1")
    assert parser.accepts(b"select selectx from fromage")  # identifiers that start with keywords
    # Contextual lexing, as lark does it: after a column name no identifier can follow,
    # so "fromt" lexes as the keyword FROM and the table t.
    assert parser.accepts(b"select a fromt") and lark_accepts(oracle, b"select a fromt")


def test_lexer_automaton_limit_is_a_clear_error():
    from gramalign.grammar.lexer import build_lexer

    terminals = [Terminal("A", "(a|b)*a(a|b){6}"), Terminal("B", "(a|b)*b(a|b){6}")]
    assert build_lexer(terminals).num_states > 50
    with pytest.raises(ga.GrammarError, match="lexer automaton .* exceeds 50 states"):
        build_lexer(terminals, max_states=50)


def test_mask_cache_round_trips_through_disk(tmp_path):
    grammar, oracle, samples, tables = prepared("sql")
    vocab = small_vocabulary(samples)
    first = ga.compile(grammar, vocab, cache=False, cache_dir=tmp_path)
    text = samples[0].encode()
    masks = []
    matcher = first.matcher()
    for cut in range(0, len(text) + 1, 3):
        matcher.reset()
        matcher.accept_string(text[:cut])
        masks.append(matcher.allowed_token_ids().tolist())
    first.save_cache()
    assert first.cache_path.exists()
    second = ga.compile(grammar, vocab, cache=False, cache_dir=tmp_path)
    assert second.store.num_contexts == first.store.num_contexts > 0
    matcher = second.matcher()
    for k, cut in enumerate(range(0, len(text) + 1, 3)):
        matcher.reset()
        matcher.accept_string(text[:cut])
        assert matcher.allowed_token_ids().tolist() == masks[k]
    assert second.store.num_contexts == first.store.num_contexts  # nothing had to be recomputed
    other = small_vocabulary(samples + ["zzz"])
    with pytest.warns(UserWarning, match="another grammar, vocabulary"):
        third = ga.compile(grammar, other, cache=False)
        third.store.load(first.cache_path)



def test_the_mask_cache_names_a_grammar_by_everything_equality_compares():
    """Saved masks (and the engines' built grammars) are found by the grammar's digest: two
    unequal grammars must not share one. The same Lark text read by lark's LALR and by its
    Earley parser differs only in how it is lexed and parsed, and did share one."""
    from dataclasses import fields

    from gramalign.masking.cfg import disk_cache

    compared = {f.name for f in fields(Grammar) if f.compare} - {"terminals", "rules"}
    assert set(disk_cache.GRAMMAR_FIELDS) == compared
    assert set(disk_cache.TERMINAL_FIELDS) == {f.name for f in fields(Terminal) if f.compare}
    assert {f.name for f in fields(Rule) if f.compare} == {"name", "alternatives", "priority"}
    source = 'start: WORD (" " WORD)*\nWORD: /[a-z]+/\n'
    lalr, earley = ga.Grammar.from_lark(source), ga.Grammar.from_lark(source, parser="earley")
    assert lalr != earley and disk_cache.grammar_digest(lalr) != disk_cache.grammar_digest(earley)
    again = ga.Grammar.from_lark(source)
    assert again is not lalr and disk_cache.grammar_digest(again) == disk_cache.grammar_digest(lalr)

LEXER_TERMINALS = [("KW", "if"), ("ID", "[a-z]+"), ("NUM", "[0-9]+(\\.[0-9]+)?"), ("STR", '"([^"\\\\]|\\\\.){0,5}"'),
                   ("WORD", "[a-z0-9]{2,40}"), ("OP", "[-+*/]=?"), ("SP", " +")]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=len(LEXER_TERMINALS), max_size=len(LEXER_TERMINALS)),
                min_size=1, max_size=4),
       st.lists(st.text(alphabet='if"ab\\0.9+= ', max_size=12), min_size=1, max_size=20))
def test_lexer_states_track_exactly_their_starts_terminals(start_sets, texts):
    """From each start, the lexer state after a text has accept and alive bits equal to
    running each of that start's terminals alone (product states and the per-terminal
    blocks alike), and DEAD exactly where none of them survives."""
    from gramalign.grammar.lexer import build_lexer, rank_terminals, terminal_bits

    terminals = rank_terminals(tuple(Terminal(name, pattern) for name, pattern in LEXER_TERMINALS))
    start_sets = [chosen for chosen in start_sets if any(chosen)] or [[True] * len(terminals)]
    starts = np.stack([terminal_bits(terminals, [t.name for t, keep in zip(terminals, chosen) if keep])
                       for chosen in start_sets])
    lexer = build_lexer(terminals, starts=starts)
    for k, chosen in enumerate(start_sets):
        for text in texts:
            data = text.encode()
            state = k
            for byte in data:
                state = int(lexer.transitions[state, byte]) if state >= 0 else -1
            alive = [t.name for t, keep in zip(terminals, chosen) if keep and t.dfa.is_prefix(data)]
            accepting = [t.name for t, keep in zip(terminals, chosen) if keep and t.dfa.matches(data)]
            if not alive:
                assert state == -1, (k, text)
                continue
            assert state >= lexer.num_starts or not data, (k, text)
            assert np.array_equal(lexer.alive_bits[state], terminal_bits(terminals, alive)), (k, text)
            assert np.array_equal(lexer.accept_bits[state], terminal_bits(terminals, accepting)), (k, text)
            classes = lexer.byte_class
            assert all(np.array_equal(lexer.transitions[:, b], lexer.transitions[:, lexer.class_byte[classes[b]]])
                       for b in range(256))
