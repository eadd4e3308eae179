"""Integer ranges as exact regular expressions over JSON's integer spellings.

``integer_range_regex(lo, hi)`` matches exactly the strings ``-?(0|[1-9][0-9]*)`` (JSON's
integer syntax, where ``-0`` is zero) whose value lies in ``[lo, hi]``; either bound may be
None. The size of the regex grows with the number of digits of the bounds, not with the
width of the range: linear in the digits, about 70 characters per digit of the bounds.
(Its NFA, though, is quadratic in the digits because of the counted repeats: bounds of
more than ~150 digits exceed ``regex.MAX_NFA_STATES``; building the digit automaton
directly is the planned fix for the JSON Schema compiler.)
"""

from __future__ import annotations

from ..errors import GrammarError

__all__ = ["integer_range_regex"]


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
