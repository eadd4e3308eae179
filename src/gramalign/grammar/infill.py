"""Partial texts (fixed pieces with gaps between them) and the exact check for one regex.

A partial text is ``x0 GAP x1 GAP ... xm``: fixed byte pieces, and between two of them a gap
that stands for any bytes (of any length, zero included). It is *completable* when some
fillers ``w1..wm`` make ``x0 w1 x1 ... wm xm`` a word of the language. With ``end=False``
anything may follow the last piece, which is the same as a trailing gap.

For a language that is one DFA this is exact and cheap: the set of states the text can be
in is carried through the pieces, and a gap replaces it with every state reachable from it.
The shortest fillers come from a Dijkstra over (piece, state) whose only costs are the
bytes written into gaps. Grammars go through :mod:`.lexings` and :mod:`.bar_hillel`.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..errors import InfillError
from .automata.dfa import DEAD, ByteDFA
from .earley_kernels import nearest_state
from .lexer import byte_classes_of
from .lexer_starts import reachable_from
from .limits import work_clock

__all__ = ["GAP", "Budget", "BudgetExhausted", "PartialText", "partial_text", "regex_fillers", "DFAPaths"]


class _Gap:
    """The gap sentinel: a stretch of unknown bytes, of any length."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "GAP"

    def __reduce__(self):  # pickles as the one sentinel
        return (_Gap, ())


GAP = _Gap()
"""A gap of any length (zero included) between two fixed pieces of a partial text."""


@dataclass(frozen=True)
class PartialText:
    """``pieces[0] GAP pieces[1] ... GAP pieces[-1]``: one gap between consecutive pieces
    (adjacent gaps are one gap, ``end=False`` is a trailing gap before an empty last piece)."""

    pieces: tuple[bytes, ...]

    @property
    def gaps(self) -> int:
        return len(self.pieces) - 1

    def fill(self, fillers: "Iterable[bytes]") -> bytes:
        """The text with gap k filled by ``fillers[k]``."""
        fillers = tuple(fillers)
        assert len(fillers) == self.gaps
        out = bytearray(self.pieces[0])
        for filler, piece in zip(fillers, self.pieces[1:]):
            out += filler
            out += piece
        return bytes(out)


def partial_text(segments, end: bool = True) -> PartialText:
    """Normalise user ``segments`` (bytes-like pieces and :data:`GAP`) into a :class:`PartialText`.
    Raises :class:`~gramalign.errors.InfillError` on anything else (a ``str`` included: the
    check is over bytes, so the caller picks the encoding)."""
    if not isinstance(end, bool):
        raise InfillError(f"end must be a bool, not {type(end).__name__}")
    if isinstance(segments, (bytes, bytearray, memoryview, str)) or segments is GAP:
        raise InfillError("segments must be a list of bytes pieces and ga.GAP, "
                          f"not a single {type(segments).__name__}")
    try:
        items = list(segments)
    except TypeError:
        raise InfillError(f"segments must be a list of bytes pieces and ga.GAP, not {type(segments).__name__}") from None
    pieces: list[bytes] = []
    current = bytearray()
    after_gap = False
    for position, item in enumerate(items):
        if item is GAP:
            if not after_gap:  # two gaps in a row are one gap
                pieces.append(bytes(current))
                current = bytearray()
            after_gap = True
        elif isinstance(item, (bytes, bytearray, memoryview)):
            current += item
            after_gap = after_gap and not len(item)
        else:
            hint = " (encode str pieces first, e.g. text.encode('utf-8'))" if isinstance(item, str) else ""
            raise InfillError(f"segment {position} is a {type(item).__name__}; segments are bytes and ga.GAP{hint}")
    if not end and not after_gap:
        pieces.append(bytes(current))
        current = bytearray()
    pieces.append(bytes(current))
    return PartialText(tuple(pieces))


class BudgetExhausted(Exception):
    """The check ran past its time budget (internal: the checker turns it into ``undecided``)."""


class Budget:
    """A wall-clock deadline, checked inside the long loops; numba's compilation of the
    kernels on their first use does not count (as for compile limits: a first check in a
    fresh process would otherwise be ``undecided`` whatever its input)."""

    def __init__(self, seconds: "float | None"):
        self.seconds = seconds
        self.started = work_clock()
        self.deadline = float("inf") if seconds is None else self.started + seconds

    def check(self) -> None:
        if self.exhausted():
            raise BudgetExhausted()

    def within(self, seconds: float) -> "Budget":
        """A budget that ends ``seconds`` from now, or with this one if that is sooner."""
        inner = Budget(seconds)
        inner.deadline = min(inner.deadline, self.deadline)
        return inner

    def exhausted(self) -> bool:
        return work_clock() > self.deadline

    @property
    def elapsed(self) -> float:
        return work_clock() - self.started


# Bytes tried first when a witness needs some byte of a transition: letters and digits read
# best and are least likely to start another token; markers (0xF8..0xFF) come last.
_PREFERENCE = np.array(
    list(b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ _-.,:;")
    + [b for b in range(0x20, 0x7F) if b not in b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ _-.,:;"]
    + list(range(0x20)) + [0x7F] + list(range(0x80, 0x100)),
    dtype=np.int64)
assert sorted(_PREFERENCE.tolist()) == list(range(256))


class DFAPaths:
    """Shortest byte paths inside one DFA (per-state successor lists built on first use)."""

    def __init__(self, dfa: ByteDFA):
        self.dfa = dfa
        self._moves: dict[int, list[tuple[int, int]]] = {}
        self._reach: dict[frozenset, np.ndarray] = {}
        self._table: "np.ndarray | None" = None
        self._accepting: "np.ndarray | None" = None

    def moves(self, state: int) -> "list[tuple[int, int]]":
        """``(target, byte)`` for every distinct target of ``state``, with a preferred byte."""
        found = self._moves.get(state)
        if found is None:
            row = self.dfa.transitions[state][_PREFERENCE]
            targets, first = np.unique(row, return_index=True)
            found = [(int(t), int(_PREFERENCE[i])) for t, i in zip(targets.tolist(), first.tolist()) if t != DEAD]
            self._moves[state] = found
        return found

    def reach(self, states: "Iterable[int]") -> np.ndarray:
        """Every state reachable from ``states`` (themselves included), sorted."""
        key = frozenset(states)
        found = self._reach.get(key)
        if found is None:
            # over the DFA's byte classes: a format's automaton (date-time: 11k states) took
            # 4 ms a call over all 256 bytes, a gap's first lexemes up to half a check
            _, columns = byte_classes_of(self.dfa)
            found = np.flatnonzero(reachable_from(columns, np.arange(columns.shape[1], dtype=np.int64),
                                                  np.fromiter(key, dtype=np.int64, count=len(key))))
            if len(self._reach) > 4096:
                self._reach.clear()
            self._reach[key] = found
        return found

    def nearest(self, sources: "Iterable[int]", following: "bytes | None" = None,
                ends_there: bool = False) -> "tuple[int | None, _Parents]":
        """The state nearest ``sources`` that accepts (``following`` None), or that reads
        ``following`` alive (and accepting, with ``ends_there``), and the parents to walk
        back with :func:`path_bytes` (the same as :meth:`explore` with that goal, in numba)."""
        if self._table is None:
            self._table = np.ascontiguousarray(self.dfa.transitions, dtype=np.int32)
            self._accepting = np.asarray(self.dfa.accepting, dtype=np.bool_)
        state, parent, via = nearest_state(self._table, self._accepting, np.fromiter(sources, dtype=np.int64),
                                           _PREFERENCE, np.frombuffer(following or b"", dtype=np.uint8),
                                           ends_there, following is None)
        return (None if state < 0 else int(state)), _Parents(parent, via)

    def explore(self, sources: "dict[int, int]", goal=None) -> "tuple[int | None, dict, dict]":
        """Dijkstra from ``sources`` (state -> cost so far, one byte costs 1): ``(goal state or
        None, cost of every state settled, parents)`` with ``parents[state] = (previous,
        byte)``, None at a source. With ``goal``, stops at the cheapest state it holds for;
        without, settles every reachable state."""
        parents: dict[int, "tuple[int, int] | None"] = {state: None for state in sources}
        best = dict(sources)
        heap = [(cost, state) for state, cost in sources.items()]
        heapq.heapify(heap)
        done: dict[int, int] = {}
        while heap:
            cost, state = heapq.heappop(heap)
            if state in done:
                continue
            done[state] = cost
            if goal is not None and goal(state):
                return state, done, parents
            for target, byte in self.moves(state):
                if target not in done and cost + 1 < best.get(target, 1 << 62):
                    best[target] = cost + 1
                    parents[target] = (state, byte)
                    heapq.heappush(heap, (cost + 1, target))
        return None, done, parents


class _Parents:
    """:meth:`DFAPaths.nearest`'s parents as :func:`path_bytes` reads them."""

    def __init__(self, parent: np.ndarray, via: np.ndarray):
        self.parent, self.via = parent, via

    def __getitem__(self, state: int) -> "tuple[int, int] | None":
        before = int(self.parent[state])
        return None if before == -1 else (before, int(self.via[state]))


def advance_all(table: np.ndarray, states: np.ndarray, data: bytes) -> np.ndarray:
    """Each of ``states`` after ``data`` (``DEAD`` where it dies): one vector step per byte,
    or a scalar walk for a single state."""
    if len(states) == 1:
        state = int(states[0])
        for byte in data:
            state = int(table[state, byte])
            if state == DEAD:
                break
        return np.array([state], dtype=np.int64)
    ends = states.copy()
    alive = np.arange(len(states))
    current = states.copy()
    for byte in data:
        current = table[current, byte]
        keep = current >= 0
        if not keep.all():
            ends[alive[~keep]] = DEAD
            alive, current = alive[keep], current[keep]
            if not alive.size:
                return ends
    ends[alive] = current
    return ends


def path_bytes(parents: dict, state: int) -> "tuple[int, bytes]":
    """Walk ``parents`` (from :meth:`DFAPaths.explore`) back to a source: ``(source, bytes)``."""
    out = bytearray()
    while parents[state] is not None:
        state, byte = parents[state]
        out.append(byte)
    return state, bytes(reversed(out))


def regex_fillers(paths: DFAPaths, text: PartialText, budget: "Budget | None" = None) -> "tuple[bytes, ...] | None":
    """The shortest fillers (fewest bytes in all) that put ``text`` in ``paths.dfa``'s
    language, or None when there are none (then the text is not completable: exact)."""
    dfa = paths.dfa
    if dfa.initial == DEAD:
        return None
    table, accepting = dfa.transitions, dfa.accepting
    # layer[k]: state after piece k -> (cost, state before piece k's bytes)
    layers: list[dict[int, tuple[int, int]]] = []
    gap_parents: list[dict] = []
    entering = {dfa.initial: 0}  # state at the start of piece k -> cost
    for k, piece in enumerate(text.pieces):
        if budget is not None:
            budget.check()
        after: dict[int, tuple[int, int]] = {}
        origins = np.fromiter(entering.keys(), dtype=np.int64, count=len(entering))
        costs = np.fromiter(entering.values(), dtype=np.int64, count=len(entering))
        ends = advance_all(table, origins, piece)
        for origin, cost, end in zip(origins.tolist(), costs.tolist(), ends.tolist()):
            if end != DEAD and (end not in after or after[end][0] > cost):
                after[end] = (cost, origin)
        layers.append(after)
        if not after:
            return None
        if k == text.gaps:
            break
        # the gap: every state reachable, at the cost of its shortest path
        _, entering, parents = paths.explore({state: cost for state, (cost, _) in after.items()})
        gap_parents.append(parents)
    final = [(cost, state) for state, (cost, _) in layers[-1].items() if accepting[state]]
    if not final:
        return None
    _, state = min(final)
    fillers: list[bytes] = []
    for k in range(text.gaps, 0, -1):
        state = layers[k][state][1]  # the state where piece k began: where gap k-1 ended
        state, filler = path_bytes(gap_parents[k - 1], state)
        fillers.append(filler)
    return tuple(reversed(fillers))
