"""Is a context-free language disjoint from a regular one? Bar-Hillel triples, Earley style.

The grammar is put in a binary form (every alternative a chain of two-symbol rules, the
empty word removed by unit rules around nullable symbols, symbols whose rules are alike
merged). Triples ``(p, X, q)`` (symbol
``X`` derives a non-empty word that labels a path from ``p`` to ``q`` in the automaton) are
derived by an Earley construction over the automaton (:mod:`.earley_kernels`): only the
symbols a derivation of the start can need at a node are predicted there, so a flat list of
k values costs about k items instead of the k² triples of a bottom-up worklist (which is
kept as the tests' reference, ``tests/oracles/bar_hillel_worklist.py``). The intersection
grammar is never built, and the search stops as soon as ``(start node, start symbol, a
final node)`` appears. Each triple remembers the first way it was derived, so a derivation
(hence a word of both languages) comes back with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import earley_kernels as kernels
from .grammar import Grammar
from .infill import Budget

__all__ = ["BinaryGrammar", "EarleyTables", "earley_derivation"]

RECORDS_PER_EDGE = 4
"""Room for records (items, triples) a construction starts with, per lexeme edge; it grows by
doubling. 8 cleared 5-6 MB of hash tables for a Kubernetes schema's 1,024-byte text, and its
slowest constructions ran 12 % slower with their records spread over them; 2 made the builtin
JSON grammar's 4,096-byte texts 5 % slower (docs/benchmarks.md)."""


@dataclass(frozen=True)
class BinaryGrammar:
    """A grammar over symbol ids (terminals ``0 .. n_terminals-1``) with rules ``A -> X Y``
    and ``A -> X`` only, generating the grammar's language minus the empty word."""

    n_terminals: int
    n_symbols: int
    start: int
    start_nullable: bool
    by_left: tuple[tuple[tuple[int, int], ...], ...]
    """``by_left[X]``: ``(A, Y)`` for every rule ``A -> X Y``."""
    by_right: tuple[tuple[tuple[int, int], ...], ...]
    """``by_right[Y]``: ``(A, X)`` for every rule ``A -> X Y``."""
    units: tuple[tuple[int, ...], ...]
    """``units[X]``: every ``A`` with a rule ``A -> X``."""

    @classmethod
    def from_grammar(cls, grammar: Grammar, terminal_names: "tuple[str, ...]", merge: bool = True) -> "BinaryGrammar":
        """``terminal_names`` fixes the terminal ids; names neither a terminal nor a rule
        (a ``%declare``-d terminal no lexer produces) are terminals nothing derives. With
        ``merge``, symbols whose rules are alike are one (:func:`alike_symbols`)."""
        ids = {name: n for n, name in enumerate(terminal_names)}
        rules = {}
        for rule in grammar.rules:
            rules.setdefault(rule.name, []).extend(rule.alternatives)
        for name in rules:
            if name not in ids:
                ids[name] = len(ids)
        for rule in grammar.rules:
            for alternative in rule.alternatives:
                for name in alternative:
                    if name not in ids:
                        ids[name] = len(ids)  # never derived: no lexer, no rule
        binary: list[tuple[int, int, int]] = []
        unit: list[tuple[int, int]] = []
        count = len(ids)
        chains: dict[tuple[int, ...], int] = {}  # a symbol deriving exactly these symbols, shared

        def chain(symbols: tuple[int, ...]) -> int:
            """The chain symbol of ``symbols`` (2 or more): ``c -> first c'``, ``c'`` that of the
            rest, down to a chain already made or the last two symbols."""
            nonlocal count
            if symbols in chains:
                return chains[symbols]
            first = left = chains[symbols] = count
            count += 1
            while len(symbols) > 2 and symbols[1:] not in chains:
                rest = chains[symbols[1:]] = count
                count += 1
                binary.append((left, symbols[0], rest))
                left, symbols = rest, symbols[1:]
            binary.append((left, symbols[0], chains[symbols[1:]] if len(symbols) > 2 else symbols[1]))
            return first

        prefixes: dict[tuple[int, ...], int] = {}

        def prefix(symbols: tuple[int, ...]) -> int:
            """The symbol ``p -> chain(X1 .. X(k-1)) Xk`` of ``symbols`` X1 .. Xk (2 or more), shared."""
            nonlocal count
            if symbols in prefixes:
                return prefixes[symbols]
            left = symbols[0] if len(symbols) == 2 else chain(symbols[:-1])
            made = prefixes[symbols] = count
            count += 1
            binary.append((made, left, symbols[-1]))
            return made

        for name, alternatives in rules.items():
            head = ids[name]
            for alternative in alternatives:
                symbols = tuple(ids[s] for s in alternative)
                if len(symbols) == 1:
                    unit.append((head, symbols[0]))
                elif len(symbols) == 2:
                    binary.append((head, symbols[0], symbols[1]))
                elif symbols and symbols[-1] >= len(terminal_names):
                    # A -> X1 .. Xn, Xn a nonterminal (a list's tail, an object's member chain
                    # in a JSON Schema grammar), is A -> P Xn, P -> chain(X1 .. X(n-2)) X(n-1):
                    # a symbol completed from a gap makes the heads of the rules it ends in one
                    # step (a gap's own items), where the chain of the whole rule climbed one
                    # chain symbol per symbol (20 % of the slowest schema checks); and so does
                    # a member's value (`, "key": value`), which climbed a chain symbol per
                    # symbol before it (a fully left-branching P predicted too much instead)
                    binary.append((head, prefix(symbols[:-1]), symbols[-1]))
                elif symbols:
                    # ends in a terminal (a closing bracket): A -> X1 chain(X2 .. Xn), since
                    # split, these added a layer to every object and array of a JSON text
                    binary.append((head, symbols[0], chain(symbols[1:])))
        # nullable symbols: an empty alternative, or a rule whose every symbol is nullable
        nullable = [False] * count
        for name, alternatives in rules.items():
            if any(len(alternative) == 0 for alternative in alternatives):
                nullable[ids[name]] = True
        changed = True
        while changed:
            changed = False
            for head, x, y in binary:
                if not nullable[head] and nullable[x] and nullable[y]:
                    nullable[head] = changed = True
            for head, x in unit:
                if not nullable[head] and nullable[x]:
                    nullable[head] = changed = True
        for head, x, y in binary:  # the empty word removed: drop a nullable side
            if nullable[x]:
                unit.append((head, y))
            if nullable[y]:
                unit.append((head, x))
        start = ids[grammar.start]
        start_nullable = nullable[start]
        if merge:
            alike = alike_symbols(len(terminal_names), count, binary, unit)
            binary = [(int(alike[head]), int(alike[x]), int(alike[y])) for head, x, y in binary]
            unit = [(int(alike[head]), int(alike[x])) for head, x in unit]
            start, count = int(alike[start]), int(alike.max(initial=len(terminal_names) - 1)) + 1
        by_left = [[] for _ in range(count)]
        by_right = [[] for _ in range(count)]
        units = [[] for _ in range(count)]
        for head, x, y in set(binary):
            by_left[x].append((head, y))
            by_right[y].append((head, x))
        for head, x in set(unit):
            if head != x:
                units[x].append(head)
        return cls(len(terminal_names), count, start, start_nullable,
                   tuple(map(tuple, by_left)), tuple(map(tuple, by_right)), tuple(map(tuple, units)))


def alike_symbols(n_terminals: int, count: int, binary, unit) -> np.ndarray:
    """Per symbol, its id once symbols whose rules are alike are one: the coarsest partition
    of the nonterminals in which two are together when their rules (``binary``: ``(A, X, Y)``,
    ``unit``: ``(A, X)``) are the same up to the parts of their symbols. Such symbols derive
    the same words by the same derivations, renamed, so the merged grammar has the same
    language; JSON Schema grammars repeat value rules per property (a Kubernetes schema's
    3,642 binary symbols are 2,241), and every repeat was another way to derive the same
    text in the infilling check. Terminals keep their ids (``0 .. n_terminals - 1``); the
    others are numbered from ``n_terminals`` in the order of their first symbol.

    Parts are split by a 64-bit hash of each symbol's rules (vectorised), and the result
    checked exactly; where two different rule sets collided, an exact refinement runs."""
    heads = np.asarray([h for h, _, _ in binary] + [h for h, _ in unit], dtype=np.int64)
    lefts = np.asarray([x for _, x, _ in binary] + [x for _, x in unit], dtype=np.int64)
    rights = np.asarray([y for _, _, y in binary] + [-1] * len(unit), dtype=np.int64)
    keep = (heads != lefts) | (rights >= 0)  # A -> A adds nothing
    heads, lefts, rights = heads[keep], lefts[keep], rights[keep]
    part = _parts(n_terminals, count, heads, lefts, rights, _hashed_rules)
    if not _is_stable(part, count, heads, lefts, rights):
        part = _parts(n_terminals, count, heads, lefts, rights, _exact_rules)
    # terminals keep their ids; the parts follow in the order of their first symbol
    ids = np.arange(count, dtype=np.int64)
    _, first, inverse = np.unique(part[n_terminals:], return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    ids[n_terminals:] = n_terminals + rank[inverse.reshape(-1)]
    return ids


def _code_room(count: int) -> int:
    return (count + 1) * (count + 1)


def _rule_pairs(part, count, heads, lefts, rights) -> np.ndarray:
    """Each symbol's rules as sorted unique ``head * room + code``, the code of a rule its
    symbols' parts (:func:`alike_symbols`)."""
    codes = part[lefts] * (count + 1) + np.where(rights >= 0, part[np.maximum(rights, 0)] + 1, 0)
    return np.unique(heads * _code_room(count) + codes)


def _mixed(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise (uint64)."""
    h = values.astype(np.uint64)
    with np.errstate(over="ignore"):
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def _parts(n_terminals, count, heads, lefts, rights, signatures) -> np.ndarray:
    """The terminals apart and the nonterminals in one part, then each part split by its
    symbols' ``signatures(pairs, count)`` (of their rules up to parts) until none splits: a
    round only splits parts, so there are at most ``count`` rounds."""
    part = np.minimum(np.arange(count, dtype=np.int64), n_terminals)
    parts = len(np.unique(part))
    while True:
        signature = signatures(_rule_pairs(part, count, heads, lefts, rights), count)
        order = np.lexsort((signature, part))
        changes = np.ones(count, dtype=np.bool_)
        changes[1:] = (part[order][1:] != part[order][:-1]) | (signature[order][1:] != signature[order][:-1])
        part = np.empty(count, dtype=np.int64)
        part[order] = np.cumsum(changes) - 1
        if int(changes.sum()) == parts:
            return part
        parts = int(changes.sum())


def _hashed_rules(pairs, count) -> np.ndarray:
    """Per symbol, a 64-bit hash of its rule codes (a sum of mixed codes: a set's hash)."""
    room = _code_room(count)
    signature = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        np.add.at(signature, pairs // room, _mixed(pairs % room + 1))  # (+ 1: the mix keeps 0 at 0)
    return signature


def _exact_rules(pairs, count) -> np.ndarray:
    """Per symbol, a number standing for its set of rule codes alone (equal sets, equal numbers)."""
    room = _code_room(count)
    bounds = np.searchsorted(pairs // room, np.arange(count + 1))
    codes = pairs % room
    numbers: dict = {}
    return np.array([numbers.setdefault(codes[bounds[symbol]:bounds[symbol + 1]].tobytes(), len(numbers))
                     for symbol in range(count)], dtype=np.int64)


def _is_stable(part, count, heads, lefts, rights) -> bool:
    """Do all symbols of each part have the same rules up to parts? (Each symbol's rule codes
    lie in its part's; the same number of them means the same set.)"""
    pairs = _rule_pairs(part, count, heads, lefts, rights)
    room = _code_room(count)
    own = np.bincount(pairs // room, minlength=count)
    merged = np.unique(part[pairs // room] * room + pairs % room)
    of_part = np.bincount(merged // room, minlength=count)
    return bool(np.array_equal(own, of_part[part]))


class EarleyTables:
    """A :class:`BinaryGrammar` as the Earley kernels read it: one row per rule.
    ``lexeme_bytes``: per terminal, the bytes of its shortest lexeme (0: none), what writing
    it inside a gap costs a witness."""

    def __init__(self, grammar: BinaryGrammar, lexeme_bytes):
        heads, lefts, rights = [], [], []
        for x, pairs in enumerate(grammar.by_left):
            for head, y in pairs:
                heads.append(head)
                lefts.append(x)
                rights.append(y)
        for x, unit_heads in enumerate(grammar.units):
            for head in unit_heads:
                heads.append(head)
                lefts.append(x)
                rights.append(-1)
        order = np.argsort(np.asarray(heads, dtype=np.int64), kind="stable")
        self.rule_head = np.asarray(heads, dtype=np.int64)[order]
        self.rule_left = np.asarray(lefts, dtype=np.int64)[order]
        self.rule_right = np.asarray(rights, dtype=np.int64)[order]
        self.rules_start = np.searchsorted(self.rule_head, np.arange(grammar.n_symbols + 1)).astype(np.int64)
        self.rules_of = np.arange(len(self.rule_head), dtype=np.int64)
        self.grammar = grammar
        weights = np.zeros(grammar.n_symbols, dtype=np.int64)
        weights[:len(lexeme_bytes)] = lexeme_bytes
        self.first_bits = _first_bits(grammar, self.rule_head, self.rule_left)
        self.follow_bits = _follow_bits(grammar, self.rule_head, self.rule_left, self.rule_right, self.first_bits)
        self.best_rule, self.word_length = _shortest_words(weights, self.rule_head, self.rule_left, self.rule_right)
        self.derives = self.word_length < kernels.COST_CAP
        # A gap's own items are never made (see earley_kernels): the rules a symbol starts
        # (``A -> X Y`` and ``A -> X`` by X) and those it ends after a left symbol that a gap
        # can hold (``A -> X Y`` by Y) stand for them.
        count = grammar.n_symbols
        self.by_left_start, self.by_left = _grouped(self.rule_left, np.arange(len(self.rule_head)), count)
        # (``A -> X Y`` where ``A -> Y`` is a rule too makes from a gap only what that one makes,
        # without X written inside the gap: a JSON Schema object's member lists, each property
        # optional, had every own climb twice, a third of the slowest checks' advances; and
        # ``A -> X A``, a list's repetition, makes from a gap only the triple it reads)
        unit = self.rule_right < 0
        skips = (np.isin(self.rule_head * count + self.rule_right, self.rule_head[unit] * count + self.rule_left[unit])
                 & ~unit) | (self.rule_head == self.rule_right)
        ends = np.flatnonzero((self.rule_right >= 0) & self.derives[self.rule_left] & ~skips)
        self.by_right_start, self.by_right = _grouped(self.rule_right[ends], ends, count)

    @property
    def rules(self) -> tuple:
        """The rule arrays the kernel takes as one bundle (see :func:`.earley_kernels.earley_run`)."""
        return (self.rule_head, self.rule_left, self.rule_right, self.rules_start, self.rules_of, self.first_bits,
                self.follow_bits, self.derives, self.word_length, self.by_left_start, self.by_left,
                self.by_right_start, self.by_right)


def _grouped(keys: np.ndarray, values: np.ndarray, count: int) -> "tuple[np.ndarray, np.ndarray]":
    """``values`` grouped by ``keys`` (``0 .. count-1``): ``out[start[k]:start[k + 1]]``."""
    order = np.argsort(keys, kind="stable")
    start = np.searchsorted(keys[order], np.arange(count + 1)).astype(np.int64)
    return start, np.ascontiguousarray(values[order], dtype=np.int64)


def _shortest_words(weights: np.ndarray, rule_head: np.ndarray, rule_left: np.ndarray,
                    rule_right: np.ndarray) -> "tuple[np.ndarray, np.ndarray]":
    """Per symbol, the rule that begins one of its shortest words (-1 for a terminal or a
    symbol that derives no word), and that word's length in bytes (``COST_CAP``: no word),
    a terminal weighing its ``weights`` (0: no lexeme). A rule is taken only where it makes
    the symbol strictly shorter, so following the rules always ends."""
    cap = np.int64(kernels.COST_CAP)
    length = np.where(weights > 0, weights, cap).astype(np.int64)
    best = np.full(len(weights), -1, dtype=np.int64)
    has_right = rule_right >= 0
    right = np.where(has_right, rule_right, 0)
    while True:
        candidate = np.minimum(length[rule_left] + np.where(has_right, length[right], 0), cap)
        shorter = length.copy()
        np.minimum.at(shorter, rule_head, candidate)
        improved = shorter < length
        if not improved.any():
            return best, length
        chosen = np.flatnonzero(improved[rule_head] & (candidate == shorter[rule_head]))
        best[rule_head[chosen]] = chosen
        length = shorter


def _follow_bits(grammar: BinaryGrammar, rule_head: np.ndarray, rule_left: np.ndarray, rule_right: np.ndarray,
                 first: np.ndarray) -> np.ndarray:
    """uint64 [symbols, words]: the terminals that can come right after a word of each symbol
    in a sentence, and bit ``n_terminals`` where it can end the text."""
    follow = np.zeros_like(first)
    end = grammar.n_terminals
    follow[grammar.start, end // 64] |= np.uint64(1) << np.uint64(end % 64)
    pairs = rule_right >= 0
    np.bitwise_or.at(follow, rule_left[pairs], first[rule_right[pairs]])  # A -> X Y: FIRST(Y) after X
    last = np.where(pairs, rule_right, rule_left)  # A -> X Y and A -> X: what follows A follows the last
    while True:
        before = follow.copy()
        np.bitwise_or.at(follow, last, follow[rule_head])
        if np.array_equal(before, follow):
            return follow


def _first_bits(grammar: BinaryGrammar, rule_head: np.ndarray, rule_left: np.ndarray) -> np.ndarray:
    """uint64 [symbols, words]: the terminals a word of each symbol can begin with (the
    grammar has no empty word, so only a rule's left symbol counts)."""
    words = (grammar.n_terminals + 64) // 64  # room for the end of the text (see _follow_bits)
    first = np.zeros((grammar.n_symbols, words), dtype=np.uint64)
    for t in range(grammar.n_terminals):
        first[t, t // 64] |= np.uint64(1) << np.uint64(t % 64)
    while True:
        before = first.copy()
        np.bitwise_or.at(first, rule_head, first[rule_left])
        if np.array_equal(before, first):
            return first


def earley_derivation(tables: EarleyTables, node_count: int, edges, epsilon, gaps, can_end,
                      budget: "Budget | None" = None, pops: int = 16384, live=None):
    """The leaves ``(r, q, t)`` (terminal ``t`` labels an edge ``r -> q``, or ``r == q`` a
    gap's loop), leftmost first, of a derivation of the start symbol along a path from node
    0 to a node whose ``can_end`` is set (its ε-edges reach the final node), or None when
    there is none (the intersection is empty).

    ``edges`` is int64 [E, 3] ``(r, q, t)`` lexeme edges, ``epsilon`` int64 [F, 2] ε-edges,
    ``gaps`` the gap nodes (each with a loop on every terminal of ``tables.derives``); every
    edge goes to a later node; ``live`` (bool per node, default all) the nodes to consider.
    The empty word is the caller's to check (``grammar.start_nullable``)."""
    grammar = tables.grammar
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 3)
    epsilon = np.asarray(epsilon, dtype=np.int64).reshape(-1, 2)
    order = np.argsort(edges[:, 0], kind="stable")
    edges = edges[order]
    edge_start = np.searchsorted(edges[:, 0], np.arange(node_count + 1)).astype(np.int64)
    order = np.argsort(epsilon[:, 0], kind="stable")
    epsilon = epsilon[order]
    eps_start = np.searchsorted(epsilon[:, 0], np.arange(node_count + 1)).astype(np.int64)
    live = np.ones(node_count, dtype=np.bool_) if live is None else np.asarray(live, dtype=np.bool_)
    eps_to = np.ascontiguousarray(epsilon[:, 1])
    clo_first, clo_last, clo_nodes = kernels.epsilon_closures(eps_start, eps_to, live)
    is_gap = np.zeros(node_count, dtype=np.bool_)
    is_gap[np.asarray(list(gaps), dtype=np.int64)] = True
    can_end = np.asarray(can_end, dtype=np.bool_)
    narrow = kernels.record_codes_fit(node_count, grammar.n_symbols, len(tables.rule_head))
    gap_rank = np.where(is_gap, np.cumsum(is_gap) - 1, -1).astype(np.int64)
    state = list(kernels.new_state(node_count, max(1024, RECORDS_PER_EDGE * len(edges)), narrow,
                                   int(is_gap.sum()), grammar.n_symbols))
    edge_to, edge_t = np.ascontiguousarray(edges[:, 1]), np.ascontiguousarray(edges[:, 2])
    ahead = kernels.terminals_ahead(edge_start, edge_t, clo_first, clo_last, clo_nodes, is_gap, can_end,
                                    grammar.n_terminals, tables.first_bits.shape[1])
    gap_of_first, gap_of = kernels.closures_holding(clo_first, clo_last, clo_nodes, is_gap)
    from_start = np.zeros(node_count, dtype=np.bool_)
    from_start[clo_nodes[clo_first[0]:clo_last[0]]] = True
    next_gap = np.full(node_count, node_count, dtype=np.int64)  # the first gap node after each node
    gap_ids = np.flatnonzero(is_gap)
    at = np.searchsorted(gap_ids, np.arange(node_count), side="right")
    next_gap[at < len(gap_ids)] = gap_ids[at[at < len(gap_ids)]]
    scans = kernels.scan_closures(eps_start, eps_to, live, is_gap, clo_first, clo_last, clo_nodes)
    start_gap = np.full(node_count, -1, dtype=np.int64)  # the latest gap up to each node where the start may begin
    for g in gap_ids[from_start[gap_ids]]:
        start_gap[g:] = g
    text = (edge_start, edge_to, edge_t, clo_first, clo_last, clo_nodes, is_gap, can_end, ahead, gap_of_first,
            gap_of, from_start, next_gap, scans, gap_rank, gap_ids, start_gap)
    counters = state[9]
    while True:
        out = kernels.earley_run(tables.rules, (grammar.n_terminals, grammar.n_symbols, grammar.start), text, *state,
                                 pops)
        state[:8], state[11] = out[:8], out[8]
        if counters[kernels.C_FOUND] >= 0 or counters[kernels.C_NODE] >= node_count:
            break
        if budget is not None:
            budget.check()
    goal = int(counters[kernels.C_FOUND])
    if goal < 0:
        return None
    origin, end = int(state[3][goal, kernels.T_ORIGIN]), int(state[3][goal, kernels.T_END])
    start = 0 if from_start[origin] else int(start_gap[end])  # (merged: from a gap before the start's)
    return kernels.unfold_leaves(state[0], state[3], goal, node_count, grammar.n_terminals, tables.best_rule,
                                 tables.rule_left, tables.rule_right, start)
