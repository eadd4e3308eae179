"""Every lexing of a partial text, as an automaton over terminals.

The byte language of a grammar is over-approximated by "the CFG over all lexings": a text is
in it when it splits into lexemes (each a word of its terminal's DFA), ignored lexemes
anywhere between them, such that the non-ignored terminals derive from the start rule. The
real lexer (contextual longest match, priorities, lookaheads, counted strings) only ever
picks one of these splits, so whatever this automaton excludes no completion can reach:
that is what makes an ``impossible`` sound.

Nodes, in an order every edge respects (apart from a gap's loops):

* ``(k, i)``: a lexeme boundary after byte ``i`` of fixed piece ``k``;
* ``G_k``: somewhere inside gap ``k`` (after piece ``k``), with a loop on every terminal
  (whole lexemes written into the gap).

An edge ``a -t-> b`` is one lexeme of terminal ``t`` from ``a`` to ``b``; it may begin or
end inside a gap (a partial first or last lexeme of a piece) and may span gaps and whole
pieces between them (``"ab`` GAP ``cd"`` as one string). Ignored lexemes and the moves
``(k, end) -> G_k -> (k+1, 0)`` are ε-edges. Only nodes reachable from the start and from
which the end is reachable are kept. :meth:`LexingAutomaton.lexeme_pieces` turns an edge
back into the bytes it writes into gaps, for witnesses.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np

from .automata.dfa import DEAD
from .earley_kernels import REACH_LISTED, carried_lexemes, first_steps, lex_piece, reach_lists, reaching, states_across
from .grammar import Terminal
from .infill import Budget, DFAPaths, PartialText, advance_all, path_bytes
from .lexer import byte_classes_of

__all__ = ["Lexer", "LexerTables", "LexingAutomaton", "build_lexings"]

STRUCTURAL = -1
"""The lexer index of the ε-moves into and out of a gap."""

# Markers the lexer reads before a terminal that starts with a word boundary (lexer.py):
# such a terminal is entered past one of them, never at its initial state.
_AFTER_MARKERS = (0xFE, 0xFF)


@dataclass(eq=False)
class Lexer:
    """One terminal's automaton as the lexing automaton reads it."""

    terminal: Terminal
    ignored: bool
    paths: DFAPaths = field(init=False)
    starts: tuple[int, ...] = field(init=False)
    anywhere: np.ndarray = field(init=False)
    """Every state a lexeme begun inside a gap can be in when the next piece starts."""
    longest: bool = field(init=False)
    """Plain longest match: no lookahead, counted length or word-boundary entry, which
    could make the lexer refuse a longer lexeme."""
    _shortest: "bytes | None" = field(init=False, default=None, repr=False)

    def __post_init__(self):
        dfa = self.terminal.dfa
        self.paths = DFAPaths(dfa)
        if dfa.initial == DEAD:
            self.starts = ()
        else:
            after = [int(dfa.transitions[dfa.initial, m]) for m in _AFTER_MARKERS]
            if any(state != DEAD for state in after):
                self.starts = tuple(sorted({state for state in after if state != DEAD}))
            else:
                self.starts = (dfa.initial,)
        t = self.terminal
        self.longest = (t.lookahead is None and not t.needs_text_after and t.length is None
                        and t.ends_in_word is None)
        self.anywhere = self.paths.reach(self.starts) if self.starts else np.zeros(0, dtype=np.int64)

    def shortest(self) -> bytes:
        """The shortest lexeme (what a witness writes for a whole lexeme inside a gap; cached:
        a derivation can write hundreds)."""
        if self._shortest is None:
            state, parents = self.paths.nearest(self.starts)
            self._shortest = _counted(self, [path_bytes(parents, state)[1]], [0])[0]
        return self._shortest

    def lexes(self, data: bytes) -> bool:
        """Is ``data`` one lexeme of this terminal's automaton (from one of its starts)?"""
        dfa = self.paths.dfa
        for state in self.starts:
            end = dfa.advance(state, data)
            if end != DEAD and dfa.accepting[end]:
                return True
        return False


class LexerTables:
    """Every lexer's DFA in one table (states offset to be distinct), for the kernel that
    lexes the fixed pieces (:func:`.earley_kernels.lex_piece`)."""

    def __init__(self, lexers: "tuple[Lexer, ...]"):
        offsets, rows, accepting, starts, starts_start = [], [], [], [], [0]
        total = 0
        for lex in lexers:
            dfa = lex.paths.dfa
            table = np.asarray(dfa.transitions, dtype=np.int64)
            rows.append(np.where(table >= 0, table + total, -1))
            accepting.append(np.asarray(dfa.accepting, dtype=np.bool_))
            offsets.append(total)
            starts.extend(state + total for state in lex.starts)
            starts_start.append(len(starts))
            total += table.shape[0]
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.table = np.ascontiguousarray(np.concatenate(rows).astype(np.int32)) if rows else np.zeros((0, 256), np.int32)
        self.accepting = np.concatenate(accepting) if accepting else np.zeros(0, np.bool_)
        self.starts = np.asarray(starts, dtype=np.int64)
        self.starts_start = np.asarray(starts_start, dtype=np.int64)
        self.longest = np.asarray([lex.longest for lex in lexers], dtype=np.bool_)
        # the states each lexer's lexemes reach from its starts (where a lexeme begun in a gap is)
        reached = [lex.anywhere + offset for lex, offset in zip(lexers, offsets)]
        self.anywhere_start = np.cumsum([0] + [len(states) for states in reached]).astype(np.int64)
        self.anywhere = np.concatenate(reached).astype(np.int64) if reached else np.zeros(0, np.int64)
        self.lexer_ids = np.arange(len(lexers), dtype=np.int64)
        # each lexer's table over its own byte classes, flat: where a gap takes a lexeme
        # (:func:`~.earley_kernels.states_across`)
        found = [byte_classes_of(lex.paths.dfa) for lex in lexers]
        columns = [table for _, table in found]
        self.class_of = (np.stack([of for of, _ in found]).astype(np.uint8) if found
                         else np.zeros((0, 256), np.uint8))
        self.classes = np.asarray([c.shape[1] for c in columns], dtype=np.int64)
        self.moves_start = np.cumsum([0] + [c.size for c in columns]).astype(np.int64)[:-1].copy()
        self.moves = (np.concatenate([c.ravel() for c in columns]).astype(np.int32) if columns
                      else np.zeros(0, np.int32))
        self.walk = (self.offsets, self.moves, self.moves_start, self.classes, self.class_of)
        """What the lexing kernels step the lexers with (:func:`~.earley_kernels._step`)."""
        # per byte, (lexer, state) for every start that reads it (lexemes from a fixed position)
        lexer_of = np.repeat(np.arange(len(lexers), dtype=np.int64), np.diff(self.starts_start))
        after = self.table[self.starts].astype(np.int64) if len(self.starts) else np.zeros((0, 256), np.int64)
        byte, row = np.nonzero(after.T >= 0)
        self.first_moves = (np.searchsorted(byte, np.arange(257)).astype(np.int64), lexer_of[row],
                            after[row, byte])
        sizes = np.asarray([lex.paths.dfa.transitions.shape[0] for lex in lexers], dtype=np.int64)
        self.reach = reach_lists(self.offsets, sizes, self.moves, self.moves_start, self.classes, REACH_LISTED)
        self._first_steps: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def first_steps(self, byte: int) -> "tuple[np.ndarray, np.ndarray]":
        """Per lexer, the states its lexemes begun anywhere are in after ``byte`` (cached:
        :func:`~.earley_kernels.first_steps`)."""
        found = self._first_steps.get(byte)
        if found is None:
            found = self._first_steps[byte] = first_steps(self.walk, self.table.shape[0], self.anywhere_start,
                                                          self.anywhere, byte)
        return found


@dataclass(eq=False)
class LexingAutomaton:
    """The lexings of one partial text (see the module docstring)."""

    text: PartialText
    lexers: tuple[Lexer, ...]
    n_terminals: int
    """Lexers ``0 .. n_terminals-1`` are the grammar's terminals (symbol ids of the CFG);
    the rest are ignored terminals."""
    base: tuple[int, ...]
    """Node of ``(k, 0)``; ``(k, i)`` is ``base[k] + i`` and ``G_k`` is ``base[k] + len(piece k) + 1``."""
    node_count: int
    start: int
    final: int
    edges: np.ndarray
    """int64 [E, 3]: ``(from, to, lexer)`` of the trimmed automaton; ``lexer`` is
    ``STRUCTURAL`` for gap moves."""
    live: np.ndarray
    """bool per node: reachable from the start and reaching the final node."""

    def gap_node(self, k: int) -> int:
        return self.base[k] + len(self.text.pieces[k]) + 1

    @property
    def piece_of(self) -> np.ndarray:
        """int per node: the ``k`` of ``(k, i)`` and of ``G_k``."""
        sizes = [len(piece) + 2 for piece in self.text.pieces]
        return np.repeat(np.arange(len(sizes)), sizes)

    @property
    def is_gap(self) -> np.ndarray:
        """bool per node: a gap node ``G_k``."""
        flags = np.zeros(self.node_count, dtype=bool)
        flags[[self.gap_node(k) for k in range(self.text.gaps)]] = True
        return flags

    def locate(self, node: int) -> "tuple[int, int]":
        """``(k, i)`` for a boundary node, ``(k, -1)`` for ``G_k``."""
        k = bisect_right(self.base, node) - 1
        offset = node - self.base[k]
        return (k, -1) if offset > len(self.text.pieces[k]) else (k, offset)

    # ------------------------------------------------------------------ ε-moves

    def epsilon_successors(self) -> "dict[int, list[tuple[int, int]]]":
        """node -> [(target, lexer)] over ε-edges (ignored lexemes and gap moves)."""
        found: dict[int, list[tuple[int, int]]] = {}
        lexer = self.edges[:, 2]
        for a, b, j in self.edges[(lexer == STRUCTURAL) | (lexer >= self.n_terminals)].tolist():
            found.setdefault(a, []).append((b, j))
        return found

    def epsilon_path(self, successors, source: int, target: int) -> "list[tuple[int, int, int]]":
        """ε-edges from ``source`` to ``target`` (breadth first; the target must be in the closure)."""
        if source == target:
            return []
        parent = {source: None}
        frontier = [source]
        while frontier:
            nxt = []
            for node in frontier:
                for b, j in successors.get(node, ()):
                    if b <= target and b not in parent:
                        parent[b] = (node, j)
                        if b == target:
                            path = []
                            while parent[b] is not None:
                                a, lexer = parent[b]
                                path.append((a, b, lexer))
                                b = a
                            return path[::-1]
                        nxt.append(b)
            frontier = nxt
        raise AssertionError(f"node {target} is not in the ε-closure of {source}")

    # ------------------------------------------------------------------ witnesses

    @staticmethod
    def _lexeme_layers(lex: Lexer, items: list, greedy: bool) -> "list | None":
        """Forward through a lexeme's fixed parts and gaps: per item, ``("fixed", {end
        state: start state})`` or ``("gap", parents, reached)`` (shortest-path parents; the
        state a last or greedy gap stops at); None at a dead end. A gap before fixed bytes
        settles every state it reaches, or with ``greedy`` stops at the nearest that reads
        those bytes."""
        paths, dfa = lex.paths, lex.paths.dfa
        accepting = dfa.accepting
        layers: list = []
        current = {s: 0 for s in lex.starts}
        for position, (kind, value) in enumerate(items):
            last = position == len(items) - 1
            if kind == "fixed":
                origins = np.fromiter(current.keys(), dtype=np.int64, count=len(current))
                ends = advance_all(dfa.transitions, origins, value)
                after = {}
                for origin, end in zip(origins.tolist(), ends.tolist()):
                    if end != DEAD and end not in after and (not last or accepting[end]):
                        after[end] = origin
                layers.append(("fixed", after))
                current = {s: 0 for s in after}
            elif last or greedy:  # the nearest state that ends the lexeme, or reads what follows
                following = None if last else items[position + 1][1]
                reached, parents = paths.nearest(current, following, position + 1 == len(items) - 1)
                layers.append(("gap", parents, reached))
                current = {} if reached is None else {reached: 0}
            else:
                _, done, parents = paths.explore(current)
                layers.append(("gap", parents, None))
                current = done
            if not current:
                return None
        return layers

    def lexeme_pieces(self, lexer: int, a: int, b: int) -> "list[tuple[int, bytes, bool, bool]]":
        """The bytes one lexeme edge ``a -> b`` writes into gaps: ``(gap, bytes, begins in
        the gap, ends in the gap)`` per gap it touches, in order. ``a == b`` a gap node is a
        whole lexeme inside that gap."""
        if lexer == STRUCTURAL:
            return []
        lex = self.lexers[lexer]
        pieces = self.text.pieces
        ka, ia = self.locate(a)
        kb, ib = self.locate(b)
        if a == b:  # a whole lexeme inside gap ka: the shortest one
            return [(ka, lex.shortest(), True, True)]
        # what the lexeme covers, in order: fixed bytes and gaps
        items: list[tuple[str, object]] = []
        k, i = ka, ia
        if ia < 0:
            items.append(("gap", ka))
            k, i = ka + 1, 0
        while True:
            if k == kb and ib >= 0:
                items.append(("fixed", pieces[k][i:ib]))
                break
            items.append(("fixed", pieces[k][i:]))
            items.append(("gap", k))
            if k == kb:
                break
            k, i = k + 1, 0
        # forward: the states each item can end in, with how they were reached; first greedily
        # (a gap stops at the nearest state that reads the next fixed bytes), then, where that
        # runs into a dead end further on, every state a gap reaches
        for greedy in (True, False):
            layers = self._lexeme_layers(lex, items, greedy)
            if layers is not None:
                break
        else:
            raise AssertionError(f"lexeme edge {a}->{b} of lexer {lexer} has no path")
        current = layers[-1][1] if layers[-1][0] == "fixed" else {layers[-1][2]: 0}
        # backward: one path, and the bytes it writes into each gap
        state = min(current)
        out: list[tuple[int, bytes, bool, bool]] = []
        for position in range(len(items) - 1, -1, -1):
            kind, value = items[position]
            layer = layers[position][1]
            if kind == "fixed":
                state = layer[state]
            else:
                state, filler = path_bytes(layer, state)
                out.append((value, filler, position == 0, position == len(items) - 1))
        out.reverse()
        if lex.terminal.length is not None:
            gaps = [n for n, (kind, _) in enumerate(items) if kind == "gap"]
            parts = [value for kind, value in items]
            for n, (_, filler, _, _) in zip(gaps, out):
                parts[n] = filler
            parts = _counted(lex, parts, gaps)
            out = [(k, parts[n], begins, ends) for n, (k, _, begins, ends) in zip(gaps, out)]
        return out


def _counted(lex: Lexer, parts: "list[bytes]", gaps: "list[int]") -> "list[bytes]":
    """A counted JSON string's lexeme (``parts`` in order, ``parts[n]`` for n in ``gaps``
    written into gaps) with ``a``s written into a gap part until it has the fewest code
    points its terminal counts (``Terminal.length``), where a place keeps it a lexeme: the
    lexing automaton does not count, the parser does, and a witness string too short for
    it would be refused."""
    if lex.terminal.length is None:
        return parts
    fewest = lex.terminal.length[0]
    try:
        missing = fewest - len(json.loads(b"".join(parts)))
    except ValueError:
        return parts
    if missing <= 0:
        return parts
    for n in reversed(gaps):
        for at in range(len(parts[n]), -1, -1):
            trial = list(parts)
            trial[n] = parts[n][:at] + b"a" * missing + parts[n][at:]
            data = b"".join(trial)
            if lex.lexes(data):
                try:
                    if len(json.loads(data)) == fewest:
                        return trial
                except ValueError:
                    continue
    return parts


def _set_ends(history, piece: bytes, table, accepting, longest: bool, emit) -> None:
    """``emit(end)`` for each position where a lexeme of a state set ends (``history``:
    ``(position, sorted states after its byte)``); with ``longest``, a state that accepts
    again further on in the piece does not end one."""
    later = None  # per state of the next entry: does it accept again within the piece?
    found = []
    for index in range(len(history) - 1, -1, -1):
        position, states = history[index]
        if later is None or not longest:
            again = np.zeros(len(states), dtype=bool)
        else:
            following = history[index + 1][1]
            targets = table[states, piece[position + 1]]
            alive = targets >= 0
            again = np.zeros(len(states), dtype=bool)
            hit = np.searchsorted(following, targets[alive])
            again[alive] = accepting[targets[alive]] | later[hit]
        if (accepting[states] & ~again).any():
            found.append(position + 1)
        later = again
    for end in reversed(found):
        emit(end)


def build_lexings(lexers: "tuple[Lexer, ...]", n_terminals: int, text: PartialText,
                  budget: "Budget | None" = None, tables: "LexerTables | None" = None,
                  kernel: bool = True) -> LexingAutomaton:
    """The trimmed lexing automaton of ``text`` (see the module docstring). ``tables``:
    the lexers' :class:`LexerTables`, built here when not given. ``kernel=False`` lexes the
    fixed pieces in Python, lexeme by lexeme (the tests' reference for the kernel)."""
    if tables is None and kernel:
        tables = LexerTables(lexers)
    pieces = text.pieces
    m = text.gaps
    base = []
    total = 0
    for piece in pieces:
        base.append(total)
        total += len(piece) + 2
    node_count = total
    start = 0
    final = base[m] + len(pieces[m])
    reachable = np.zeros(node_count, dtype=bool)
    reachable[start] = True
    edges: list[tuple[int, int, int]] = []
    blocks: list[np.ndarray] = []  # the kernel's edges, piece by piece

    def gap_node(k):
        return base[k] + len(pieces[k]) + 1

    def run(j: int, lex: Lexer, a: int, k: int, i: int, states, read: int = 0) -> None:
        """(Python, the kernels' reference) Lexemes of lexer ``j`` from node ``a`` that read
        piece ``k`` from byte ``i`` on, from ``states`` (``read``: fixed bytes read before);
        appends their edges. A lexeme that its own automaton would extend to a longer one
        within the same piece is left out where lexing is longest match: the lexer, which
        sees those fixed bytes, never ends it there."""
        table, accepting = lex.paths.dfa.transitions, lex.paths.dfa.accepting
        while True:
            piece = pieces[k]
            if len(states) == 1:
                state = int(states[0])
                ends = []
                for position in range(i, len(piece)):
                    state = int(table[state, piece[position]])
                    if state == DEAD:
                        break
                    read += 1
                    if accepting[state]:
                        ends.append(position + 1)
                for end in ends[-1:] if lex.longest else ends:
                    edges.append((a, base[k] + end, j))
                    reachable[base[k] + end] = True
                if state == DEAD:
                    return
                states = np.array([state], dtype=np.int64)
            else:
                history = []
                for position in range(i, len(piece)):
                    states = table[states, piece[position]]
                    states = np.unique(states[states >= 0])
                    if not states.size:
                        break
                    read += 1
                    history.append((position, states))

                def emit(end):
                    edges.append((a, base[k] + end, j))
                    reachable[base[k] + end] = True
                _set_ends(history, piece, table, accepting, lex.longest, emit)
                if not states.size:
                    return
            if k == m or not read:
                return  # (a lexeme that reads no fixed byte is a gap's loop)
            edges.append((a, gap_node(k), j))
            reachable[gap_node(k)] = True
            states = lex.paths.reach(states.tolist())
            k, i = k + 1, 0

    capacity = 64
    arrays = [np.frombuffer(piece, dtype=np.uint8) for piece in pieces]
    # (kernel) lexemes alive at a gap's start, by the piece after it: rows (start node, lexer, global state)
    carried: "dict[int, list[np.ndarray]]" = {}
    n_lexers = len(lexers)
    n_states = max(1, len(tables.accepting)) if tables is not None else 1

    def carry(k: int, rows: np.ndarray) -> None:
        """``rows`` ((start node, lexer, global state)) alive at piece k's end: into gap k, on to piece k + 1."""
        if k == m or not len(rows):
            return
        node = gap_node(k)
        reachable[node] = True
        pairs = np.unique(rows[:, 0] * n_lexers + rows[:, 1])  # (each may end inside the gap)
        blocks.append(np.stack((pairs // n_lexers, np.full(len(pairs), node), pairs % n_lexers), axis=1))
        carried.setdefault(k + 1, []).append(rows)

    for k, piece in enumerate(pieces):
        if budget is not None:
            budget.check()
        if kernel and carried.get(k) and piece:  # lexemes begun before the gap ahead of this piece
            rows = np.concatenate(carried.pop(k))
            codes = np.unique((rows[:, 0] * n_lexers + rows[:, 1]) * n_states + rows[:, 2])
            pairs = codes // n_states
            first = np.flatnonzero(np.concatenate(([True], pairs[1:] != pairs[:-1])))
            group_a, group_j = pairs[first] // n_lexers, pairs[first] % n_lexers
            # the states the gap and the piece's first byte take them to
            after_start, after = states_across(piece[0], group_j, np.append(first, len(codes)), codes % n_states,
                                               tables.walk, tables.reach, n_states)
            found, alive = carried_lexemes(arrays[k], base[k], group_a, group_j, after_start, after, tables.walk,
                                           tables.accepting, tables.longest, reachable, 1)
            blocks.append(found)
            carry(k, np.stack((group_a[alive[:, 0]], group_j[alive[:, 0]], alive[:, 1]), axis=1))
        if piece and not kernel:
            for i in range(len(piece)):
                if reachable[base[k] + i]:
                    for j, lex in enumerate(lexers):
                        if lex.starts:
                            run(j, lex, base[k] + i, k, i, np.array(lex.starts, dtype=np.int64))
        elif piece:
            data = np.frombuffer(piece, dtype=np.uint8)
            while True:
                out = np.empty((max(capacity, 4 * len(piece)), 3), dtype=np.int64)
                survivors = np.empty((max(capacity, len(lexers) * 4), 3), dtype=np.int64)
                saved = reachable[base[k]:base[k] + len(piece) + 1].copy()
                n_edges, n_surv = lex_piece(data, 0, base[k], reachable, tables.walk, tables.accepting,
                                            tables.first_moves, tables.longest, out, survivors)
                if n_edges >= 0:
                    break
                reachable[base[k]:base[k] + len(piece) + 1] = saved
                capacity = 2 * max(capacity, len(out), len(survivors))
            blocks.append(out[:n_edges])
            carry(k, survivors[:n_surv])  # lexemes alive at the piece's end go on across the gap
        if k == m:
            break
        end, g = base[k] + len(piece), gap_node(k)
        if reachable[end]:
            edges.append((end, g, STRUCTURAL))
            reachable[g] = True
        if reachable[g]:
            edges.append((g, base[k + 1], STRUCTURAL))
            reachable[base[k + 1]] = True
            if not kernel:
                for j, lex in enumerate(lexers):
                    if lex.anywhere.size:
                        run(j, lex, g, k + 1, 0, lex.anywhere)
            elif pieces[k + 1]:  # (a lexeme that reads no fixed byte is a gap's loop)
                after_start, after = tables.first_steps(pieces[k + 1][0])
                found, alive = carried_lexemes(arrays[k + 1], base[k + 1], np.full(len(lexers), g, dtype=np.int64),
                                               tables.lexer_ids, after_start, after, tables.walk,
                                               tables.accepting, tables.longest, reachable, 1)
                blocks.append(found)
                # (alive at the next piece's end: they go on across the gap after it; rows (j, state))
                carry(k + 1, np.stack((np.full(len(alive), g), alive[:, 0], alive[:, 1]), axis=1))
    every = np.concatenate([np.asarray(edges, dtype=np.int64).reshape(-1, 3)] + blocks)
    # keep what reaches the end
    if reachable[final]:
        live = reaching(every[:, 0], every[:, 1], node_count, final) & reachable
    else:
        live = np.zeros(node_count, dtype=bool)
    kept = every[live[every[:, 0]] & live[every[:, 1]]]
    return LexingAutomaton(text, lexers, n_terminals, tuple(base), node_count, start, final, kept, live)
