"""Integer ranges as exact regular expressions over JSON's integer spellings.

``integer_range_regex(lo, hi)`` matches exactly the strings ``-?(0|[1-9][0-9]*)`` (JSON's
integer syntax, where ``-0`` is zero) whose value lies in ``[lo, hi]``; either bound may be
None. The size of the regex grows with the number of digits of the bounds, not with the
width of the range: linear in the digits, about 70 characters per digit of the bounds.
Its NFA, though, is quadratic in the digits (counted repeats), so for automata
``integer_range_dfa(lo, hi)`` builds the same language directly, in states linear in the
digits of the bounds (a 300-digit range: a few thousand states at most).
"""

from __future__ import annotations

from ...errors import GrammarError
from ..automata.dfa import NFA, ByteDFA, nfa_to_byte_dfa

__all__ = ["integer_range_dfa", "integer_range_regex"]


def integer_range_regex(lo: int | None, hi: int | None) -> str:
    """A Python regex for the JSON integers ``n`` with ``lo <= n <= hi`` (None: unbounded).

    Raises :class:`GrammarError` when the range is empty.

    >>> import re
    >>> pattern = integer_range_regex(-5, 12)
    >>> [s for s in ["-6", "-5", "-0", "0", "7", "12", "13", "012"] if re.fullmatch(pattern, s)]
    ['-5', '-0', '0', '7', '12']
    """
    if lo is not None and hi is not None and lo > hi:
        raise GrammarError(f"the integer range [{lo}, {hi}] is empty")
    alternatives: list[str] = []
    if hi is None or hi >= 0:  # zero and the positive integers
        alternatives += _nonnegative(max(lo, 0) if lo is not None else 0, hi)
        if (lo is None or lo <= 0) and (hi is None or hi >= 0):
            alternatives.append("-0")
    if lo is None or lo < 0:  # the negative integers: "-" and a magnitude
        smallest = max(-hi, 1) if hi is not None and hi < 0 else 1
        largest = -lo if lo is not None else None
        alternatives += ["-" + part for part in _nonnegative(smallest, largest)]
    return "(?:" + "|".join(alternatives) + ")"


def _nonnegative(lo: int, hi: int | None) -> list[str]:
    """Alternatives matching the canonical decimal spellings of ``lo..hi`` (0 <= lo)."""
    parts: list[str] = []
    if lo == 0:
        parts.append("0")
        lo = 1
    if hi is not None and hi < lo:
        return parts
    shortest = len(str(lo))
    longest = len(str(hi)) if hi is not None else shortest
    parts.append(_same_length(str(lo), str(hi) if hi is not None and longest == shortest else "9" * shortest))
    if hi is None:  # any longer number
        parts.append(f"[1-9][0-9]{{{shortest},}}")
        return parts
    if longest - shortest > 1:  # every number of the lengths in between
        parts.append(f"[1-9][0-9]{{{shortest},{longest - 2}}}")
    if longest > shortest:
        parts.append(_same_length("1" + "0" * (longest - 1), str(hi)))
    return parts


def _same_length(lo: str, hi: str) -> str:
    """Digit strings of ``len(lo)`` digits between ``lo`` and ``hi`` (leading zeros allowed)."""
    if not lo:
        return ""
    if lo == hi:
        return lo
    n = len(lo) - 1
    if set(lo[1:]) <= {"0"} and set(hi[1:]) <= {"9"}:  # a first-digit range, then anything
        if lo[0] == "0" and hi[0] == "9":
            return f"[0-9]{{{n + 1}}}"
        return f"[{lo[0]}-{hi[0]}]" + (f"[0-9]{{{n}}}" if n else "")
    if lo[0] == hi[0]:
        return lo[0] + _same_length(lo[1:], hi[1:])
    parts = [lo[0] + _same_length(lo[1:], "9" * n)]
    if int(hi[0]) - int(lo[0]) > 1:
        middle = f"[{int(lo[0]) + 1}-{int(hi[0]) - 1}]"
        parts.append(middle + (f"[0-9]{{{n}}}" if n else ""))
    parts.append(hi[0] + _same_length("0" * n, hi[1:]))
    return "(?:" + "|".join(parts) + ")"


def integer_range_dfa(lo: int | None, hi: int | None) -> ByteDFA:
    """The language of :func:`integer_range_regex`, built digit by digit (no regex)."""
    if lo is not None and hi is not None and lo > hi:
        raise GrammarError(f"the integer range [{lo}, {hi}] is empty")
    nfa = NFA()
    accept = nfa.add_state(accepting=True)
    if hi is None or hi >= 0:
        _add_nonnegative(nfa, nfa.initial, accept, max(lo, 0) if lo is not None else 0, hi)
    minus = nfa.add_state()
    nfa.add_edge(nfa.initial, [(45, 45)], minus)
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        nfa.add_edge(minus, [(48, 48)], accept)  # -0
    if lo is None or lo < 0:
        smallest = max(-hi, 1) if hi is not None and hi < 0 else 1
        _add_nonnegative(nfa, minus, accept, smallest, -lo if lo is not None else None)
    return nfa_to_byte_dfa(nfa, max_states=1_000_000)


_DIGITS = (48, 57)


def _add_nonnegative(nfa: NFA, source: int, accept: int, lo: int, hi: int | None) -> None:
    """Paths from ``source`` to ``accept`` spelling ``lo..hi`` canonically (0 <= lo)."""
    if lo == 0:
        nfa.add_edge(source, [(48, 48)], accept)
        lo = 1
    if hi is not None and hi < lo:
        return
    shortest = len(str(lo))
    longest = len(str(hi)) if hi is not None else shortest
    _add_same_length(nfa, source, accept, str(lo), str(hi) if hi is not None and longest == shortest
                     else "9" * shortest)
    if hi is not None and longest > shortest:
        _add_same_length(nfa, source, accept, "1" + "0" * (longest - 1), str(hi))
    # Every number with more digits than lo (and, when bounded, fewer than hi): a chain.
    first_length, last_length = shortest + 1, (longest - 1 if hi is not None else None)
    if last_length is not None and last_length < first_length:
        return
    state = nfa.add_state()
    nfa.add_edge(source, [(49, 57)], state)
    length = 1
    while True:
        following = nfa.add_state()
        nfa.add_edge(state, [_DIGITS], following)
        state, length = following, length + 1
        if length >= first_length:
            nfa.add_epsilon(state, accept)
        if last_length is None and length == first_length:
            nfa.add_edge(state, [_DIGITS], state)
            return
        if last_length is not None and length == last_length:
            return


def _add_same_length(nfa: NFA, source: int, accept: int, lo: str, hi: str) -> None:
    """Paths spelling the ``len(lo)``-digit strings between ``lo`` and ``hi``: the states are
    (position, still equal to lo's prefix, still equal to hi's prefix)."""
    length = len(lo)
    states = {(0, True, True): source}

    def state_of(position: int, low_tight: bool, high_tight: bool) -> int:
        if position == length:
            return accept
        key = (position, low_tight, high_tight)
        if key not in states:
            states[key] = nfa.add_state()
        return states[key]

    for position in range(length):
        for (where, low_tight, high_tight), state in list(states.items()):
            if where != position:
                continue
            low = int(lo[position]) if low_tight else 0
            high = int(hi[position]) if high_tight else 9
            for digit_lo, digit_hi in _split(low, high, low_tight, high_tight):
                target = state_of(position + 1, low_tight and digit_lo == low, high_tight and digit_hi == high)
                nfa.add_edge(state, [(48 + digit_lo, 48 + digit_hi)], target)


def _split(low: int, high: int, low_tight: bool, high_tight: bool) -> list[tuple[int, int]]:
    """The digits low..high cut so that each piece keeps the tightness flags constant."""
    if low > high:
        return []
    cuts = {low, high + 1}
    if low_tight:
        cuts.add(low + 1)
    if high_tight:
        cuts.add(high)
    points = sorted(c for c in cuts if low <= c <= high + 1)
    return [(a, b - 1) for a, b in zip(points, points[1:]) if a <= b - 1]
