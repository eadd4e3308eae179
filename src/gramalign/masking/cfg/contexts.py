"""Lexical contexts and their token classes, computed on first use and kept.

A *lexical context* is what a parser hypothesis's mask depends on apart from its stack:
the lexer state of the current lexeme, the lexer start of its candidate terminals, and its
shadows. :class:`LexicalContexts` splits the vocabulary for each one met
(:func:`.trie_walk.classify_tokens`):

* the *inside* tokens, which extend the current lexeme (possibly across ignored lexemes
  such as whitespace) without ending a parser-visible one: grouped by the terminals their
  lexemes can still become, each group allowed as a block when the stack can shift one of
  them;
* the *dependent* tokens, inside which a parser-visible lexeme could end: a sub-trie that
  the exact walk checks against the real stack (:mod:`.stack_parts`).

Where a context reads any text as one lexeme (string bodies, keys), short plain-text
tokens are taken as precomputed blocks instead of being walked (:mod:`.text_blocks`). A
classification that goes on past a few thousand trie nodes is looked up first in, and then
added to, the cross-grammar cache of :mod:`.shared_contexts`, keyed by an exact signature
of what it reads from the lexer. Counted strings of one automaton share their contexts
(their *twins*).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from ...grammar.parser_tables import ENDS_IN_WORD, EVERY_SPLIT, ParserTables
from ...parsing.state import LEXEME, SHADOW1, SHADOW1_PARSER, SHADOW2, SHADOW2_PARSER
from ...tokens.trie import TokenTrie
from .derived_contexts import MAX_PAIRS, behaves_alike, free_partner
from .shared_contexts import (MAX_SIGNATURE_STATES, ContextClassificationCache, SharedClassification,
                              context_signature, remap_terminal_bits, shared_cache_for, warm_kernels)
from .text_blocks import TextCover
from .trie_walk import classify_tokens, classify_tokens_every_split, group_rows

MAX_INSIDE_GROUPS = 16
"""Kinds of lexeme endings per context kept as precomputed masks; rarer tokens go to the walk."""

SHARE_AFTER_NODES = 4096
"""Trie nodes a context's classification may visit before it is looked up in (and, when
missing, added to) the cross-grammar cache of :mod:`.shared_contexts`."""

UNSIGNED_TRIES = 2
"""Signatures that come out too large under one candidate set before no more are tried there."""

REFUSALS_TOLERATED = 4
"""Derived contexts under one candidate set that stacks may send to be classified before
derivation stops there, unless it succeeds four times as often."""

TWIN = -2
"""The candidate-set slot of a context key shared by counted strings (no start has that id)."""

ONE_TERMINAL = -3
"""The candidate-set slot of a context key shared by every candidate set, for a lexer state
that only one terminal is still alive in, in a grammar without ignored terminals: the
classification then reads nothing of the candidates (the winners reachable from the state
are that terminal, which the lexeme's candidates hold), so a string's body is classified
once, not once per property whose value it is."""

NARROW_BYTES = 2
"""A lexer state that at most this many bytes continue (inside a literal: a key, an enum
value) has its first mask walked exactly, and is classified only when it comes back."""

WALK_FIRST_NODES = 16384
"""A lexer start whose first bytes head at most this many trie nodes has its first mask
walked exactly too (a JSON value's start heads ~10k of Llama-3's 275k nodes, and its walk
dies after a byte or two on most of them). Measured with every parser state built first,
on MaskBench walks: a start's classification took 45-61 µs at the median and its exact walk
12-19 µs, the walk cheaper in 97% of fresh walks' first visits; a start that text follows
(an identifier, leading whitespace) heads most of the trie and is classified as before."""

_NO_SKIP = (np.zeros(256, dtype=np.int32), np.zeros((0, 256), dtype=np.uint8))
_NO_SIGNATURE = np.zeros(0, dtype=np.int32)
_NO_GROUP_MASKS = np.zeros((0, 0), dtype=np.uint32)  # a derived context's groups have no masks of their own


@dataclass(frozen=True, eq=False)
class ContextMasks:
    """The token classes of one lexical context, and the stack-dependent results cached on it."""

    inside: np.ndarray  # uint32 bitmask words: every inside token
    group_reach: np.ndarray  # uint64 [groups, terminal words]: what each group's lexemes can become
    group_masks: np.ndarray  # uint32 [groups, mask words]: the inside tokens of each group
    dependent_ids: np.ndarray  # int32: the dependent tokens (their sub-trie is built on first use)
    # Stack-dependent results, by layout and by how deep into the stack their computation
    # looked: {layout key: {depth: {parser states of the top depth + 1 nodes: (groups,
    # words, bits, whole)}}}, where the layout key is None without an indentation layout,
    # else (bracket depth, newline column, columns of the open blocks), groups lists the
    # inside groups the stack allows (None: all of them), (words, bits) are the allowed
    # dependent tokens as sparse mask words and whole is the finished row (or None).
    by_stack: dict = field(default_factory=dict)
    lazy: dict = field(default_factory=dict)
    # Set where the classes are a free partner's (see :mod:`.derived_contexts`): the winners
    # reachable from this context's start. Its groups are then those terminals one by one
    # (without masks): a stack that allows every one of them allows every inside token.
    derived_reach: "np.ndarray | None" = None

    def dependent(self, trie: TokenTrie) -> TokenTrie | None:
        """The sub-trie of the dependent tokens of the vocabulary trie ``trie``."""
        if "trie" not in self.lazy:
            if self.dependent_ids.size:
                keep = np.zeros(int(trie.token_ids.max()) + 1, dtype=np.uint8)
                keep[self.dependent_ids] = 1
                self.lazy["trie"] = trie.subset(keep)
            else:
                self.lazy["trie"] = None
        return self.lazy["trie"]


class LexicalContexts:
    """The :class:`ContextMasks` of every lexical context of one grammar and vocabulary met
    so far, by key (lexer state, candidate start, shadow 1 and its start, shadow 2 and its
    start). Thread-safe: concurrent first uses of a context may both classify it; one wins."""

    def __init__(self, tables: ParserTables, trie: TokenTrie, width: int,
                 shared: "ContextClassificationCache | None | bool" = True, text_blocks: bool = True):
        """``shared``: the cross-grammar cache to use (True: the process-wide one of
        ``trie``; None or False: none). ``text_blocks``: take plain-text tokens as blocks
        where a context admits any text; False walks every token (a reference for tests)."""
        self.tables = tables
        self.trie = trie
        self.width = width
        self.entries: dict[tuple[int, ...], ContextMasks] = {}
        # Where a terminal starts with a word boundary, a lexeme after an ignored one starts
        # where the ignored one's last character says: the shortcuts below (signatures,
        # derived contexts, text blocks) assume one start per candidate set, so they are off.
        self.reads_before = tables.reads_before
        # A grammar lexed every way classifies tokens by other rules (see classify_tokens), which
        # the shortcuts (shared classifications, derived contexts, text blocks) do not know.
        self.every_split = bool(tables.layout[EVERY_SPLIT] == 1)
        plain = not (self.reads_before or self.every_split)
        if shared is True:
            shared = shared_cache_for(trie)
        self.shared = None if shared is None or shared is False or not plain else shared
        if self.shared is not None:
            warm_kernels()
        self.text = TextCover(tables, trie, width) if text_blocks and plain else None
        self._unsigned: dict[int, int] = {}  # candidate set -> signatures that were too large
        self._scratch: list = []  # token position buffers for classify_tokens, one per concurrent build
        self._dependent_tries: dict = {}  # hash of dependent positions -> (ids, sub-trie), see _dependent_trie
        # per candidate start: contexts derived, and derived ones a stack made classify (see _derived)
        self._derived_count: dict[int, int] = {}
        self._refused: dict[int, int] = {}
        self._lock = threading.Lock()
        self._version = -1
        self._twins_for = -1  # lexer states when the counted-block twins were last listed
        self._twins: dict[int, tuple[int, int, int]] = {}
        self._twin_first: dict[bytes, int] = {}  # counted automaton (digest) -> its first terminal
        self._twins_listed = 0  # terminals whose blocks are in _twins
        # per lexer state, listed in bulk as the lexer grows (see _list_shapes): few bytes
        # continue it, or few tokens begin it where it is a start; one terminal is alive there
        # (not said of a start)
        self._narrow: list[bool] = []
        self._one_terminal: list[bool] = []
        root_node, root_byte = trie.roots[:2]
        self._first_nodes = np.zeros(256, dtype=np.int64)  # trie nodes under each first byte
        self._first_nodes[root_byte] = trie.subtree_end[root_node[:-1]] - root_node[:-1]
        self._one_terminal_ok = False  # contexts may be shared across candidate sets (see bind)
        self._end_effects = None  # the tables' per-terminal array the two above were read from
        self._walked: set = set()  # contexts met once whose mask was walked (see walk_first)
        self.bind()

    def bind(self) -> None:
        """Read the tables (again, after lazy tables grew: see ``ParserTables.version``)."""
        tables = self.tables
        if self._version == tables.version:
            return
        self._version = tables.version
        lexer = tables.lexer
        # bytes a lexeme may start with; lazy tables, whose starts arrive later, name every one
        # their grammar may ever start with, so no classification misses a later start's
        starts_any = getattr(tables, "starts_any", None)
        self._starts_any = (starts_any if starts_any is not None else
                            np.any(lexer.transitions[lexer.is_start != 0] >= 0, axis=0).astype(np.uint8))
        # per parser state: the lexer start of its candidates, then the same after a word character
        # (lazy tables keep this list current themselves, so a new row costs no copy here)
        listed = getattr(tables, "candidate_list", None)
        self.candidate_id = listed if listed is not None else tables.candidate_id.tolist()
        self.half = len(self.candidate_id) // 2
        self._start_after_word = {} if not self.reads_before else {
            self.candidate_id[s]: self.candidate_id[s + self.half] for s in range(self.half)}
        if tables.end_effects is not self._end_effects:  # (lazy tables: new terminals came)
            self._end_effects = tables.end_effects
            self._ends_in_word = np.ascontiguousarray(tables.end_effects[:, ENDS_IN_WORD])
            # candidates matter to a classification only where a lexeme restarts after an ignored one
            self._one_terminal_ok = not (self.reads_before or self.every_split) and bool((tables.term_column >= 0).all())
        if lexer.num_states != self._twins_for:  # counted blocks come with new lexer states
            self._twins_listed = add_counted_block_twins(tables, self._twins, self._twin_first, self._twins_listed)
            self._twins_for = lexer.num_states
        if self.text is not None:
            self.text.bind()

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, entries: "dict[tuple[int, ...], ContextMasks]") -> None:
        """Take ``entries`` (loaded from disk) where no context of that key exists yet."""
        with self._lock:
            for key, entry in entries.items():
                self.entries.setdefault(key, entry)

    def snapshot(self) -> "list[tuple[tuple[int, ...], ContextMasks]]":
        """The classified contexts (derived ones are not: their groups are a partner's)."""
        with self._lock:
            return [(key, entry) for key, entry in self.entries.items() if entry.derived_reach is None]

    def of(self, fields: list[int], state: int, hyp: np.ndarray) -> ContextMasks:
        """The context of the hypothesis ``hyp`` (its row as ``fields``) whose stack's top
        parser state is ``state``."""
        if self._version != self.tables.version:
            self.bind()
        cid = self.candidate_id
        shadow1, shadow2 = fields[SHADOW1], fields[SHADOW2]
        twin = self._twins.get(fields[LEXEME]) if self._twins else None
        if twin is not None and shadow1 < 0 and shadow2 < 0:
            return self._twin_context(twin, cid[state])
        key = (fields[LEXEME], cid[state],
               shadow1, cid[fields[SHADOW1_PARSER]] if shadow1 >= 0 else -1,
               shadow2, cid[fields[SHADOW2_PARSER]] if shadow2 >= 0 else -1)
        entry = self.entries.get(key)
        if entry is None:
            alike = self._any_candidates(fields)
            entry = self.entries.get(alike) if alike is not None else None
            if entry is None:
                entry = None if shadow1 >= 0 or shadow2 >= 0 else self._derived(key, state, hyp)
                if entry is None:
                    entry = self._build_context(key, state, hyp)
                    if alike is not None:
                        with self._lock:
                            entry = self.entries.setdefault(alike, entry)
            with self._lock:
                entry = self.entries.setdefault(key, entry)
        return entry

    def _any_candidates(self, fields: list[int]) -> "tuple[int, ...] | None":
        """The key of this context shared by every candidate set (see :data:`ONE_TERMINAL`),
        or None where the candidates matter."""
        q = fields[LEXEME]
        if fields[SHADOW1] >= 0 or fields[SHADOW2] >= 0 or not self._one_terminal_ok:
            return None
        if q >= len(self._one_terminal):
            self._list_shapes()
        return (q, ONE_TERMINAL, -1, -1, -1, -1) if self._one_terminal[q] and q not in self._twins else None

    def _list_shapes(self) -> None:
        """Extend ``_narrow`` and ``_one_terminal`` to every lexer state there is now: a fresh
        walk meets a new lexer state at most tokens, where one at a time cost more than its mask."""
        lexer = self.tables.lexer
        first, last = len(self._narrow), lexer.num_states
        not_start = lexer.is_start[first:last] == 0
        goes_on = lexer.transitions[first:last] >= 0
        narrow = not_start & (np.count_nonzero(goes_on, axis=1) <= NARROW_BYTES)
        # starts are few: their trie nodes counted for them alone (a format's block brings 11k
        # states at once, whose product with the node counts took 3 ms)
        starts = np.flatnonzero(~not_start)
        narrow[starts] = (goes_on[starts] @ self._first_nodes) <= WALK_FIRST_NODES
        self._narrow.extend(narrow.tolist())
        alive = lexer.alive_bits[first:last]
        single = (alive & (alive - np.uint64(1))) == 0  # (a zero word too: 0 & max is 0)
        self._one_terminal.extend((not_start & (np.count_nonzero(alive, axis=1) == 1) & single.all(axis=1)).tolist())

    def walk_first(self, fields: list[int], state: int) -> bool:
        """Is this the first time a narrow context (see :data:`NARROW_BYTES`, no shadows), or
        the start of a lexeme that few tokens can begin (:data:`WALK_FIRST_NODES`), is met?
        Then its mask is one exact walk, which follows a path or two through the trie (dies
        after a byte or two on most tokens), where a classification visits every token the
        context could ever take; it is classified when it comes back (a first visit is often
        the only one: a key is written once per object)."""
        q = fields[LEXEME]
        if fields[SHADOW1] >= 0 or fields[SHADOW2] >= 0 or (self._twins and q in self._twins):
            return False
        if q >= len(self._narrow):
            self._list_shapes()
        if not self._narrow[q]:
            return False
        key = (q, self.candidate_id[state])
        if key in self._walked:
            return False
        self._walked.add(key)
        alike = self._any_candidates(fields)
        return (q, key[1], -1, -1, -1, -1) not in self.entries and (alike is None or alike not in self.entries)

    def classified(self, fields: list[int], state: int, hyp: np.ndarray) -> ContextMasks:
        """The context of :meth:`of`, classified for real where it was derived (the stack
        could shift a terminal that only its own groups tell apart)."""
        entry = self.of(fields, state, hyp)
        if entry.derived_reach is None:
            return entry
        self.bind()
        cid = self.candidate_id
        key = (fields[LEXEME], cid[state], -1, -1, -1, -1)
        self._refused[key[1]] = self._refused.get(key[1], 0) + 1
        real = self._build_context(key, state, hyp)
        with self._lock:
            self.entries[key] = real
        return real

    def _derived(self, key, state: int, hyp: np.ndarray) -> "ContextMasks | None":
        """The context ``key`` (without shadows) as its free partner's classes, or None
        (see :mod:`.derived_contexts`)."""
        tables = self.tables
        lexer = tables.lexer
        start = key[0]
        if (lexer.is_start[start] or (self._twins and start in self._twins) or self.reads_before
                or self.every_split):
            return None
        refused = self._refused.get(key[1], 0)
        if refused > REFUSALS_TOLERATED and refused * 4 > self._derived_count.get(key[1], 0):
            return None  # under these candidates stacks mostly refuse a name: classify
        cand = tables.start_bits[key[1]]
        args = (lexer.transitions, lexer.accept_bits, lexer.alive_bits, lexer.class_byte, cand)
        partner = int(free_partner(*args, tables.reach_bits, tables.reach_done, np.int32(start)))
        if partner < 0 or (self._twins and partner in self._twins) or not behaves_alike(
                *args, tables.term_column, np.int32(start), np.int32(partner), MAX_PAIRS):
            return None
        partner_key = (partner,) + key[1:]
        base = self.entries.get(partner_key)
        if base is None:
            base = self._build_context(partner_key, state, hyp)
            with self._lock:
                base = self.entries.setdefault(partner_key, base)
        if base.derived_reach is not None:
            return None
        # One group per terminal the start can still become: the stack must allow each.
        reach = tables.reach_bits[start]
        terminals = np.flatnonzero(np.unpackbits(reach.view(np.uint8), bitorder="little"))
        rows = np.zeros((terminals.size, lexer.words), dtype=np.uint64)
        rows[np.arange(terminals.size), terminals >> 6] = np.left_shift(np.uint64(1), (terminals & 63).astype(np.uint64))
        entry = ContextMasks(base.inside, rows, _NO_GROUP_MASKS, base.dependent_ids, derived_reach=reach.copy())
        entry.lazy["trie"] = base.dependent(self.trie)
        self._derived_count[key[1]] = self._derived_count.get(key[1], 0) + 1
        return entry

    def _twin_context(self, twin: tuple[int, int, int], cid: int) -> ContextMasks:
        """The context of a state of a counted string's block, shared by every counted string
        that spells the same automaton (a schema's strings of different length bounds are one
        automaton in as many blocks): classified once, in the first such block, where only
        that terminal is alive, so the others' contexts differ in their terminal bit alone."""
        canonical, first, terminal = twin
        key = (canonical, TWIN, terminal, -1, -1, -1)  # the shape of the other keys (saved to disk alike)
        entry = self.entries.get(key)
        if entry is not None:
            return entry
        base = self.entries.get((canonical, TWIN, first, -1, -1, -1))
        if base is None:
            base = self._classify((canonical, cid, -1, -1, -1, -1), self.tables.lexer.bits_of(
                [self.tables.lexer.terminals[first].name]), np.zeros(0, np.int32),
                np.zeros((0, self.tables.lexer.words), np.uint64), self.trie.num_nodes)
            with self._lock:
                base = self.entries.setdefault((canonical, TWIN, first, -1, -1, -1), base)
        if terminal == first:
            return base
        # as wide as the terminals are now: lazy tables may have added some since base was classified
        reach = np.zeros((base.group_reach.shape[0], self.tables.lexer.words), dtype=np.uint64)
        has = (base.group_reach[:, first >> 6] >> np.uint64(first & 63)) & np.uint64(1)
        reach[:, terminal >> 6] = has << np.uint64(terminal & 63)
        entry = ContextMasks(base.inside, reach, base.group_masks, base.dependent_ids)
        entry.lazy.update(base.lazy)
        with self._lock:
            return self.entries.setdefault(key, entry)

    def _build_context(self, key, state: int, hyp: np.ndarray) -> ContextMasks:
        tables = self.tables
        cid = self.candidate_id
        lexer = tables.lexer
        shadow_states = np.array([s for s in (hyp[SHADOW1], hyp[SHADOW2]) if s >= 0], dtype=np.int32)
        # The context is shared by every parser state that lexes from this start, so it is
        # classified for the terminals the start tracks (a superset of the state's own; the
        # stack decides the rest, see grammar/lexer_starts.py).
        starts = tables.start_bits
        shadow_cands = np.array([starts[cid[p]] for s, p in ((hyp[SHADOW1], hyp[SHADOW1_PARSER]),
                                                             (hyp[SHADOW2], hyp[SHADOW2_PARSER])) if s >= 0],
                                dtype=np.uint64).reshape(len(shadow_states), lexer.words)
        cand = starts[cid[state]]
        if self.shared is None:
            return self._classify(key, cand, shadow_states, shadow_cands, self.trie.num_nodes)
        # Most contexts admit few first bytes and classify in a few thousand trie nodes,
        # less than a signature costs; only the walks that go on past that are shared.
        entry = self._classify(key, cand, shadow_states, shadow_cands, SHARE_AFTER_NODES)
        if entry is not None:
            return entry
        # The walk gave up, so the context takes no text blocks (those walks never give up):
        # the full walks below need not look for them again.
        if self._unsigned.get(key[1], 0) < UNSIGNED_TRIES:
            signature, real_of = context_signature(lexer.transitions, lexer.accept_bits, lexer.alive_bits,
                                                   np.int64(key[1]), self._starts_any, tables.term_column, cand,
                                                   shadow_states, shadow_cands, np.int64(key[0]), lexer.byte_class,
                                                   lexer.class_byte, MAX_SIGNATURE_STATES)
        else:
            signature = _NO_SIGNATURE
        if not signature.size:  # too large a sub-automaton to be worth a signature
            # Lexemes of a large automaton (a format, a long bounded string) meet a new
            # state at every byte; after a few of them the search is not tried again under
            # these candidates: it costs more than the walk it could save.
            self._unsigned[key[1]] = self._unsigned.get(key[1], 0) + 1
            return self._classify(key, cand, shadow_states, shadow_cands, self.trie.num_nodes, text_blocks=False)
        signature = signature.tobytes()
        shared = self.shared.get(signature)
        if shared is not None:
            group_reach = remap_terminal_bits(shared.group_reach, real_of, lexer.words)
            entry = ContextMasks(shared.inside, group_reach, shared.group_masks, shared.dependent_ids)
            entry.lazy["trie"] = shared.dependent_trie
            return entry
        entry = self._classify(key, cand, shadow_states, shadow_cands, self.trie.num_nodes, text_blocks=False)
        self._share(signature, real_of, entry)
        return entry

    def _classify(self, key, cand, shadow_states, shadow_cands, max_nodes: int,
                  text_blocks: bool = True) -> "ContextMasks | None":
        """The context's masks by :func:`classify_tokens`, or None past ``max_nodes`` trie nodes.

        Where the context reads any text as one lexeme for a while (string bodies, object
        keys), the short text tokens are taken as blocks by first byte (see
        :mod:`.text_blocks`) and only the other tokens are walked, whatever their number."""
        tables = self.tables
        lexer = tables.lexer
        cover = None
        if self.text is not None and text_blocks and not shadow_states.size:
            cover = self.text.cover(key[0], cand)
        if cover is None:
            walks = [(self.trie, _NO_SKIP)]
        else:
            whole, rest = cover.skips()
            walks = [(self.trie, whole), (cover.block.rest, rest)]
            max_nodes = self.trie.num_nodes
        group_reach = np.zeros((MAX_INSIDE_GROUPS, lexer.words), dtype=np.uint64)
        reach_cache = (tables.reach_bits, tables.reach_done)
        lexeme = (np.int32(key[0]), cand, shadow_states, shadow_cands)
        restart = (self._starts_any, tables.term_column, np.int32(key[1]),
                   np.int32(self._start_after_word.get(key[1], key[1])), self._ends_in_word)
        n_groups = 0
        pieces = []
        held = []  # scratch buffers in use, back to the free list at the end
        try:
            for trie, skip in walks:
                if trie is None:
                    continue
                try:
                    scratch = self._scratch.pop()
                except IndexError:  # none free (first build, another thread holds it, or a second walk)
                    scratch = (np.empty(self.trie.token_ids.shape[0], dtype=np.int32),
                               np.empty(self.trie.token_ids.shape[0], dtype=np.int32))
                held.append(scratch)
                positions, groups = scratch
                if self.every_split:
                    n_groups, n_written = classify_tokens_every_split(
                        tables.lexer_arrays, reach_cache, lexeme, self._starts_any, trie.arrays, trie.max_depth,
                        group_reach, np.int64(n_groups), scratch, max_nodes)
                else:
                    n_groups, n_written = classify_tokens(
                        tables.lexer_arrays, reach_cache, lexeme, restart, trie.arrays, trie.max_depth, group_reach,
                        np.int64(n_groups), skip[0], skip[1], scratch, max_nodes)
                if n_groups < 0:
                    return None
                pieces.append((trie, positions, groups, n_written))
            group_masks = inside = None
            dependent = []
            dependent_positions = None
            for trie, positions, groups, n_written in pieces:
                piece_masks, piece_inside, piece_dependent = group_rows(trie.token_ids, positions, groups, n_written,
                                                                        n_groups, self.width)
                if group_masks is None:
                    group_masks, inside, dependent_positions = piece_masks, piece_inside, piece_dependent
                else:
                    group_masks |= piece_masks
                    inside |= piece_inside
                dependent.append(trie.token_ids[piece_dependent])
        finally:
            self._scratch.extend(held)
        if group_masks is None:
            group_masks, inside = np.zeros((n_groups, self.width), np.uint32), np.zeros(self.width, np.uint32)
        dependent_ids = np.concatenate(dependent) if len(dependent) > 1 else (
            dependent[0] if dependent else np.zeros(0, np.int32))
        group_reach = group_reach[:n_groups].copy()
        if cover is not None:
            added = self.text.add_blocks(cover, group_reach, group_masks, inside, MAX_INSIDE_GROUPS)
            if added is None:  # more kinds of endings than group slots: walk every token
                return self._classify(key, cand, shadow_states, shadow_cands, max_nodes, text_blocks=False)
            group_reach, group_masks = added
            # The dependent tokens came from two tries: their sub-trie is cut from the whole one.
            dependent_positions = np.sort(self.text.position_of[dependent_ids])
            dependent_ids = self.trie.token_ids[dependent_positions]
        elif dependent_positions is None:
            dependent_positions = np.zeros(0, dtype=np.int64)
        dependent_ids, dependent_trie = self._dependent_trie(dependent_ids, dependent_positions)
        entry = ContextMasks(inside, group_reach, group_masks, dependent_ids)
        entry.lazy["trie"] = dependent_trie
        return entry

    def _dependent_trie(self, ids: np.ndarray, positions: np.ndarray) -> "tuple[np.ndarray, TokenTrie | None]":
        """(``ids``, the sub-trie of the tokens at ``positions``), both shared with an earlier
        context with the same dependent tokens if there is one: the keys of one object, say,
        all end alike."""
        digest = hash(positions.tobytes())
        found = self._dependent_tries.get(digest)
        if found is not None and np.array_equal(found[0], ids):
            return found
        made = (ids, self.trie.subset_positions(positions))
        self._dependent_tries[digest] = made
        return made

    def _share(self, signature: bytes, real_of: np.ndarray, entry: ContextMasks) -> None:
        """Put ``entry``'s classification into the cross-grammar cache, terminals renumbered
        canonically (the inverse of ``real_of``)."""
        canonical_of = np.full(self.tables.lexer.words * 64, -1, dtype=np.int32)
        canonical_of[real_of] = np.arange(real_of.size, dtype=np.int32)
        reach_terminals = np.flatnonzero(np.unpackbits(entry.group_reach.view(np.uint8), bitorder="little"))
        if np.any(canonical_of[reach_terminals % canonical_of.size] < 0):
            return  # cannot happen (reachable winners are winners of the signature's states); never guess
        canonical_reach = remap_terminal_bits(entry.group_reach, canonical_of, max(1, (real_of.size + 63) // 64))
        for array in (entry.inside, entry.group_masks, entry.dependent_ids):
            array.flags.writeable = False  # shared by every grammar of this vocabulary from now on
        self.shared.put(signature, SharedClassification(canonical_reach, entry.group_masks, entry.inside,
                                                        entry.dependent_ids, entry.lazy["trie"]))


def add_counted_block_twins(tables: ParserTables, twins: dict, first_of: dict, listed: int) -> int:
    """Add to ``twins`` (lexer state -> (the same state in the first block of that automaton,
    its terminal, this state's terminal)) the blocks of the counted strings among the lexer's
    terminals from ``listed`` on (see ``_twin_context``); ``first_of``: automaton digest ->
    its first terminal. Returns the terminals listed now: lazy tables add terminals, each
    with its block, as they go, so each is listed once. (A terminal without a block has no
    states to twin: the eager lexer builds only the blocks some lexeme enters.)"""
    lexer = tables.lexer
    while listed < len(lexer.terminals):
        terminal = lexer.terminals[listed]
        start = int(lexer.block_start[listed]) if lexer.block_start.size else -1
        if terminal.length is not None and start >= 0:
            first = first_of.setdefault(terminal.dfa.digest, listed)
            first_start = int(lexer.block_start[first])
            for local in range(terminal.dfa.num_states):
                twins[start + local] = (first_start + local, first, listed)
        listed += 1
    return listed
