"""Text tokens taken as blocks (gramalign.masking.cfg.text_blocks) and the reach kernel they use.

Oracles: Python's own UTF-8 decoder for which tokens are text; a search per lexer state
for the reachable winners; counting characters for how far a length-bounded string body
admits text; and, for the masks, a store that walks every token (``text_blocks=False``),
itself checked against brute force in test_grammar_masks.py, plus brute force here too.
"""

from __future__ import annotations

import gc
import itertools
import weakref

import numpy as np
import pytest

import gramalign as ga
from gramalign.grammar.json_schema import strings
from gramalign.grammar.parser_tables import build_parser_tables
from gramalign.parsing import IncrementalParser
from gramalign.parsing.lexing import fill_reach
from gramalign.parsing.state import LEXEME, STACK
from gramalign.masking.compiler import CompiledGrammar, token_trie
from gramalign.masking.cfg import GrammarMaskStore
from gramalign.masking.cfg.shared_contexts import _CACHES
from gramalign.masking.cfg.text_blocks import _SLICES, LEVELS, TEXT, step_bytes, text_coverage, text_slices_for

from support.mask_walks import lockstep_walks
from oracles.brute_force_masks import brute_force_allowed
from support.vocabularies import gpt2_vocabulary

CONTINUATIONS = (0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF)  # the ends of every second-byte range


def is_text(data: bytes) -> bool:
    """UTF-8 characters other than '"', '\\' and C0 controls, the last one possibly cut."""
    for cut in range(4):
        head, tail = data[:len(data) - cut], data[len(data) - cut:]
        try:
            chars = head.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if any(ch in '"\\' or ord(ch) < 0x20 for ch in chars):
            return False
        return not tail or is_cut_character(tail)
    return False


def is_cut_character(tail: bytes) -> bool:
    """Do some continuation bytes complete ``tail`` to exactly one character?"""
    for need in range(1, 4):
        for completion in itertools.product(CONTINUATIONS, repeat=need):
            try:
                if len((tail + bytes(completion)).decode("utf-8")) == 1:
                    return True
            except UnicodeDecodeError:
                continue
    return False


def is_word(data: bytes) -> bool:
    """ASCII letters and digits only (bytes.isalnum is ASCII-only)."""
    return data.isalnum()


ORACLES = {"text": (0, is_text), "word": (1, is_word)}


def test_text_tokens_are_what_the_utf8_decoder_says():
    vocab = gpt2_vocabulary()
    trie = token_trie(vocab)
    slices = text_slices_for(trie, ga.bitmask_width(vocab.size))[0]
    text_ids = set(trie.token_ids[slices.lengths > 0].tolist())
    for token in trie.token_ids.tolist():
        data = vocab.token_bytes[token]
        assert (token in text_ids) == is_text(data), data
    lengths = dict(zip(trie.token_ids.tolist(), slices.lengths.tolist()))
    assert all(lengths[t] == len(vocab.token_bytes[t]) for t in text_ids)
    assert len(text_ids) > 0.8 * len(lengths)  # most of a vocabulary is text


def test_word_tokens_are_the_ascii_alphanumeric_ones():
    vocab = gpt2_vocabulary()
    trie = token_trie(vocab)
    slices = text_slices_for(trie, ga.bitmask_width(vocab.size))[1]
    word_ids = set(trie.token_ids[slices.lengths > 0].tolist())
    assert word_ids == {t for t in trie.token_ids.tolist() if is_word(vocab.token_bytes[t])}
    assert len(word_ids) > 0.2 * trie.token_ids.size


@pytest.mark.parametrize("alphabet", sorted(ORACLES))
def test_blocks_hold_the_text_tokens_up_to_their_level(alphabet):
    vocab = gpt2_vocabulary()
    trie = token_trie(vocab)
    which, oracle = ORACLES[alphabet]
    slices = text_slices_for(trie, ga.bitmask_width(vocab.size))[which]
    for level in LEVELS:
        block = slices.block(level)
        expected = {t for t in trie.token_ids.tolist()
                    if oracle(vocab.token_bytes[t]) and len(vocab.token_bytes[t]) <= level}
        in_row = set(np.flatnonzero(np.unpackbits(block.row.view(np.uint8), bitorder="little")).tolist())
        assert in_row == expected
        assert set(block.rest.token_ids.tolist()) == set(trie.token_ids.tolist()) - expected
        for byte in range(256):
            ids = block.ids[block.offsets[byte]:block.offsets[byte + 1]].tolist()
            assert all(vocab.token_bytes[t][0] == byte for t in ids)


def reach_by_search(lexer, cand: np.ndarray, q: int) -> np.ndarray:
    """The winners of every lexeme reachable from ``q``: one search from this state alone."""
    words = cand.shape[0]
    out = np.zeros(words, dtype=np.uint64)
    seen, todo = {q}, [q]
    while todo:
        state = todo.pop()
        common = lexer.accept_bits[state] & cand
        for w in range(words):
            if common[w]:
                bit = int(common[w]) & -int(common[w])
                out[w] |= np.uint64(bit)
                break
        for target in lexer.transitions[state].tolist():
            if target >= 0 and target not in seen and np.any(lexer.alive_bits[target] & cand):
                seen.add(target)
                todo.append(target)
    return out


GRAMMARS = {
    "bounded string": lambda: ga.Grammar.from_json_schema({"type": "string", "minLength": 2, "maxLength": 12}),
    "keys": lambda: ga.Grammar.from_json_schema({"type": "object", "properties": {
        "name": {"type": "string"}, "nickname": {"type": "string", "maxLength": 5}, "age": {"type": "integer"}}}),
    "json": lambda: ga.Grammar.builtin("json"),
    "words": lambda: ga.Grammar.from_lark('start: (WORD | "if" | "then")+\nWORD: /[a-z]+/\n%ignore " "\n'),
}


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_fill_reach_equals_a_search_per_state(name):
    tables = build_parser_tables(GRAMMARS[name]())
    lexer = tables.lexer
    # fill_reach reads no candidate set: every state reachable from a start tracks only the
    # terminals of that start (a superset of its parser states' candidates, see
    # grammar/lexer_starts.py), so the search under those gives the same winners.
    reach_bits = np.zeros((lexer.num_states, lexer.words), dtype=np.uint64)
    reach_done = np.zeros(lexer.num_states, dtype=np.uint8)
    for state in range(tables.table.num_states):
        cid = int(tables.candidate_id[state])
        cand = tables.start_bits[cid]
        assert not np.any(tables.candidate_bits[state] & ~cand)
        reachable = sorted(reachable_states(lexer, cid))
        for q in np.random.default_rng(state).permutation(reachable)[:12].tolist():
            fill_reach(lexer.transitions, lexer.accept_bits, lexer.alive_bits, lexer.class_byte, reach_bits,
                       reach_done, q)
            assert reach_done[q]
        for q in reachable:
            if reach_done[q]:  # every state filled on the way, too
                assert np.array_equal(reach_bits[q], reach_by_search(lexer, cand, q)), (state, cid, q)


def reachable_states(lexer, start: int) -> set[int]:
    seen, todo = {start}, [start]
    while todo:
        for target in lexer.transitions[todo.pop()].tolist():
            if target >= 0 and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def coverage_after(compiled: CompiledGrammar, prefix: bytes) -> np.ndarray:
    """text_coverage's depth per first byte for the single hypothesis after ``prefix``."""
    store = compiled.store
    tables, lexer = store.tables, store.tables.lexer
    parser = IncrementalParser(tables)
    hyps, _ = parser.feed(parser.initial_state(), prefix)
    assert hyps is not None and hyps.shape[0] == 1
    q, parser_state = int(hyps[0, LEXEME]), int(parser.pool.state[hyps[0, STACK]])
    steps = step_bytes(lexer.byte_class, TEXT)  # as the mask store does
    depth, _, _ = text_coverage(tables.lexer_arrays, tables.candidate_bits[parser_state], tables.reach_bits,
                                tables.reach_done, np.int32(q), TEXT, *steps, LEVELS[-1],
                                np.zeros((lexer.num_states, TEXT.shape[0], 3), np.int32), np.int64(0), np.int64(1))
    return depth


def test_coverage_reuses_a_scratch_it_never_clears():
    # Searches are numbered on from the caller's count, so marks a kept scratch holds from
    # earlier calls (all below that count) never pass for pairs met now; memo entries count
    # only under the caller's stamp, and those kept from earlier calls under the same
    # candidates answer alike.
    vocab = ga.Vocabulary.from_token_bytes([b'"', b"a", b"</s>"], eos_token_ids=[2])
    compiled = ga.compile(ga.Grammar.from_json_schema({"type": "string", "maxLength": 40}), vocab)
    tables, lexer = compiled.store.tables, compiled.store.tables.lexer
    parser = IncrementalParser(tables)
    steps = step_bytes(lexer.byte_class, TEXT)
    dirty = np.random.default_rng(0).integers(0, 1000, (lexer.num_states, TEXT.shape[0], 3)).astype(np.int32)
    kept_memo = dirty.copy()
    for used in range(0, 40, 7):
        hyps, _ = parser.feed(parser.initial_state(), b'"' + b"a" * used)
        q, state = int(hyps[0, LEXEME]), int(parser.pool.state[hyps[0, STACK]])
        args = (tables.lexer_arrays, tables.candidate_bits[state], tables.reach_bits, tables.reach_done, np.int32(q),
                TEXT, *steps, LEVELS[-1])
        fresh = text_coverage(*args, np.zeros_like(dirty), np.int64(0), np.int64(1))
        kept = text_coverage(*args, dirty.copy(), np.int64(1000 + 300 * used), np.int64(7000))
        assert np.array_equal(fresh[0], kept[0]) and np.array_equal(fresh[1], kept[1])
        assert kept[2] - (1000 + 300 * used) == fresh[2] > 0  # as many searches, numbered on
        remembered = text_coverage(*args, kept_memo, np.int64(1000 + 300 * used), np.int64(5000))
        assert np.array_equal(fresh[0], remembered[0]) and np.array_equal(fresh[1], remembered[1])


@pytest.mark.parametrize("max_length", [3, 12, 40, 100])
def test_a_bounded_string_admits_as_many_bytes_of_text_as_characters_remain(max_length, monkeypatch):
    vocab = ga.Vocabulary.from_token_bytes([b'"', b"a", b"</s>"], eos_token_ids=[2])
    # the bound in the automaton, not counted (counted patterns: test_counted_patterns.py)
    monkeypatch.setattr(strings, "COUNTED_PATTERN_LENGTH", 1 << 30)
    schema = {"type": "string", "maxLength": max_length, "pattern": "^[\\s\\S]*$"}
    compiled = ga.compile(ga.Grammar.from_json_schema(schema), vocab)
    assert not any(t.length for t in compiled.store.tables.lexer.terminals)
    for used in range(max_length):
        depth = coverage_after(compiled, b'"' + b"a" * used)
        remaining = max_length - used
        assert depth[ord("a")] == min(remaining, LEVELS[-1])
        # A two-byte character counts once: texts starting with one are one byte longer.
        assert depth[0xC3] == min(remaining + 1, LEVELS[-1])
        assert depth[ord('"')] == depth[ord("\\")] == depth[0x0A] == 0


def test_a_pattern_string_admits_no_arbitrary_text():
    vocab = ga.Vocabulary.from_token_bytes([b'"', b"a", b"</s>"], eos_token_ids=[2])
    compiled = ga.compile(ga.Grammar.from_json_schema({"type": "string", "pattern": "^[a-z]+$"}), vocab)
    depth = coverage_after(compiled, b'"')
    assert depth.max() < LEVELS[0]  # "a" then "A" ends every match: no block for any byte


SCHEMAS = [
    {"type": "string", "maxLength": 20},
    {"type": "object", "properties": {"title": {"type": "string", "maxLength": 30},
                                      "tags": {"type": "array", "items": {"type": "string", "minLength": 2}}},
     "required": ["title"]},
    {"type": "object", "properties": {"name": {"type": "string"}, "nickname": {"type": "string"},
                                      "id": {"type": "integer"}}},  # keys: declared names or any other
    {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"},
                                      "note": {"type": "string", "maxLength": 70}}, "additionalProperties": False},
    {"type": "array", "items": {"enum": ["alpha", "beta", "gamma delta"]}},
    # Texts starting with a capital die at once: their block tokens must stay out.
    {"type": "array", "items": {"type": "string", "pattern": "^[^A-Z][\\s\\S]*$"}},
    # Letters and digits as blocks (a space ends these), up to a bound and around hyphens.
    {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{3,40}$"},
                                      "slug": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"}},
     "required": ["id", "slug"], "additionalProperties": False},
    {"type": "array", "items": {"type": "string", "format": "hostname"}},
]


WORD_SCHEMAS = (6, 7)


def _recorded(covers: list, cover):
    if cover is not None:
        covers.append(cover)
    return cover


# Lexemes of even length: after two characters one can end inside a longer text.
PAIRS = 'start: PAIRS+\nPAIRS: /([^"\\\\\\x00-\\x1f]{2})+/\n'


@pytest.mark.parametrize("index", range(len(SCHEMAS) + 1))
def test_masks_with_text_blocks_equal_masks_walking_every_token(index):
    vocab = gpt2_vocabulary()
    grammar = ga.Grammar.from_json_schema(SCHEMAS[index]) if index < len(SCHEMAS) else ga.Grammar.from_lark(PAIRS)
    trie = token_trie(vocab)
    stores = [GrammarMaskStore(build_parser_tables(grammar), vocab, trie, shared=None, text_blocks=blocks)
              for blocks in (True, False)]
    with_blocks, walking = (CompiledGrammar(grammar, vocab, store=store) for store in stores)
    covers = []  # the blocks the classifications took
    text = stores[0].contexts.text
    text_cover = text.cover
    text.cover = lambda start, cand: _recorded(covers, text_cover(start, cand))
    assert lockstep_walks(with_blocks, walking, index, 4, 40) >= 8  # with brute force now and then
    word_blocks = {id(block) for block in text.slices[1]._blocks.values()}
    if index in WORD_SCHEMAS:  # these must exercise the letters-and-digits blocks
        assert any(id(cover.block) in word_blocks for cover in covers)
    _assert_same_classes(stores)


def _assert_same_classes(stores) -> None:
    """Not only the masks: every context splits the tokens alike (groups may be numbered apart)."""
    for key, entry in stores[0].contexts.entries.items():
        reference = stores[1].contexts.entries[key]
        assert np.array_equal(entry.inside, reference.inside), key
        assert set(entry.dependent_ids.tolist()) == set(reference.dependent_ids.tolist()), key
        assert sorted(map(bytes, entry.group_reach)) == sorted(map(bytes, reference.group_reach)), key


# Keys among named ones that share their first letters: after `"l` the names a key can still
# become change at the next byte, so `l` is split by its second byte (`"lx` is any other key).
NAMED_KEYS = {"type": "object", "properties": {
    name: {"type": "integer"} for name in ("line_length", "line_ending", "linting", "max", "maximum_depth",
                                           "name", "names", "level", "a", "ab", "zz_top")}}


@pytest.mark.parametrize("additional", [True, {"type": "string"}, False])
def test_keys_among_named_ones_split_by_their_second_byte_as_a_walk_of_every_token_does(additional):
    vocab = gpt2_vocabulary()
    grammar = ga.Grammar.from_json_schema({**NAMED_KEYS, "additionalProperties": additional})
    trie = token_trie(vocab)
    stores = [GrammarMaskStore(build_parser_tables(grammar), vocab, trie, shared=None, text_blocks=blocks)
              for blocks in (True, False)]
    for store in stores:  # key prefixes classified, not derived from a partner (derived_contexts)
        store.contexts._derived = lambda *args: None
        store.contexts.walk_first = lambda *args: False  # nor walked exactly on a first visit
    with_blocks, walking = (CompiledGrammar(grammar, vocab, store=store) for store in stores)
    covers = []
    text = stores[0].contexts.text
    text_cover = text.cover
    text.cover = lambda start, cand: _recorded(covers, text_cover(start, cand))
    byte_token = {data[0]: token for token, data in enumerate(vocab.token_bytes) if len(data) == 1}
    for key in ("line_lx", "linting", "lev", "maximum_d", "mx", "namesake", "ab", "abc", "zz_tops", "q"):
        a, b = with_blocks.matcher(), walking.matcher()
        written = b""
        for byte in ('{"' + key).encode():
            assert np.array_equal(a.allowed_token_ids(), b.allowed_token_ids()), written
            if len(written) % 3 == 2:
                assert np.array_equal(a.allowed_token_ids(), np.flatnonzero(brute_force_allowed(walking, written)))
            if not b.try_accept_token(byte_token[byte]):
                assert additional is False and not a.try_accept_token(byte_token[byte]), written
                break
            a.accept_token(byte_token[byte])
            written += bytes([byte])
    _assert_same_classes(stores)
    if additional is not False:  # any other key: the split was taken
        assert any(cover.pair_covered.any() for cover in covers)


def test_a_narrow_context_is_walked_on_its_first_visit_kept_under_its_top_and_classified_on_another():
    """Inside a key only one byte goes on: its first mask is one exact walk (no context
    classified), kept under the stack's top parser state; the same key in another object of
    the same kind is a lookup, and in an object of another kind (another top, the same
    lexical context) it is classified. Every mask equals the brute-force scan."""
    vocab = gpt2_vocabulary()
    kind = lambda value: {"type": "object", "properties": {"description_of_it": value}}  # noqa: E731
    compiled = ga.compile(ga.Grammar.from_json_schema({"type": "object", "properties": {
        "a": {"type": "array", "items": kind({"type": "integer"})}, "b": kind({"type": "string"})}}), vocab)
    store = compiled.store

    def mask(text: str) -> np.ndarray:
        matcher = compiled.matcher()
        matcher.accept_string(text)
        allowed = matcher.allowed_token_ids()
        assert np.array_equal(allowed, np.flatnonzero(brute_force_allowed(compiled, text.encode()))), text
        return allowed

    mask('{"a":[{"descr')
    classified = store.num_contexts
    mask('{"a":[{"descr')  # the same state again
    mask('{"a":[{"description_of_it":1},{"descr')  # another stack, the same top
    assert store.num_contexts == classified  # walked once, then looked up
    mask('{"b":{"descr')  # another kind of object
    assert store.num_contexts > classified


def test_a_start_few_tokens_begin_is_walked_on_its_first_visit_and_one_text_follows_is_classified():
    """A JSON value's start (digits, a sign, a quote, brackets, literals) heads a small part
    of the trie: its first mask is one exact walk, no context classified; met again, it is
    classified. A start that any word may follow (a Lark grammar of words) heads most of
    the trie and is classified at once. Every mask is the brute-force scan."""
    vocab = gpt2_vocabulary()
    compiled = ga.compile(ga.Grammar.from_json_schema({"type": "object", "properties": {
        "a": {"type": "integer"}, "c": {"type": "integer"}}}), vocab, cache=False)

    def mask(compiled, text: str) -> list:
        """The lexer starts among the contexts classified so far."""
        matcher = compiled.matcher()
        matcher.accept_string(text)
        assert np.array_equal(matcher.allowed_token_ids(),
                              np.flatnonzero(brute_force_allowed(compiled, text.encode()))), text
        contexts = compiled.store.contexts
        return [key for key in contexts.entries if contexts.tables.lexer.is_start[key[0]]]

    for text in ("", '{"a":', '{"a":1,"c":'):  # the object's start, then (after the colon) the integer's
        assert mask(compiled, text) == []
    walked = compiled.store.contexts._walked
    assert sum(compiled.store.tables.lexer.is_start[q] for q, _ in walked) >= 2
    assert mask(compiled, '{"a":1,"c":') != []  # the integer's start again: classified
    words = ga.compile(ga.Grammar.from_lark('start: WORD (" " WORD)*\n%import common.WORD'), vocab, cache=False)
    assert mask(words, "") != []


def test_a_string_body_is_classified_once_for_every_candidate_set():
    """Inside a string only its terminal is alive: its context is shared by every candidate
    set the string starts under (a string or an integer, a string or a boolean: two lexer
    starts), and the masks stay the brute-force scan."""
    vocab = gpt2_vocabulary()
    compiled = ga.compile(ga.Grammar.from_json_schema(
        {"type": "object", "properties": {"a": {"type": ["string", "integer"]},
                                          "b": {"type": ["string", "boolean"]}},
         "required": ["a", "b"], "additionalProperties": False}), vocab)
    store = compiled.store
    for text in (b'{"a":"x y', b'{"a":"x y","b":"z w'):
        matcher = compiled.matcher()
        matcher.accept_string(text.decode())
        assert np.array_equal(matcher.allowed_token_ids(), np.flatnonzero(brute_force_allowed(compiled, text)))
    entries = store.contexts.entries
    shared = [key for key in entries if key[1] == -3]
    assert shared
    by_state = [key for key in entries if key[0] == shared[0][0] and key[1] >= 0]
    assert len({key[1] for key in by_state}) == 2  # two candidate sets, one classification
    assert all(entries[key] is entries[shared[0]] for key in by_state)


def test_a_vocabularys_trie_and_its_process_wide_slices_go_with_it():
    """The slices and the shared classifications are kept per trie in weak maps; a value that
    refers to its trie would keep both for the life of the process (TextSlices did)."""
    pieces = [bytes([b]) for b in range(32, 127)] + [b"ab", b"abc", b'"a', b""]
    vocabulary = ga.Vocabulary.from_token_bytes(pieces, eos_token_ids=[len(pieces) - 1],
                                                special_token_ids=[len(pieces) - 1])
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}, "required": ["name"]}
    matcher = ga.compile(ga.Grammar.from_json_schema(schema), vocabulary, cache=False).matcher()
    matcher.accept_string(b'{"name":"ab')
    assert matcher.allowed_token_ids().size
    trie = weakref.ref(vocabulary.token_trie)
    assert trie() in _SLICES and trie() in _CACHES
    del matcher, vocabulary
    gc.collect()
    assert trie() is None
