"""Number languages for JSON Schema: exact bounds, multipleOf and literals over decimal spellings.

A number with any numeric constraint (``minimum``, ``multipleOf``, ``enum``, ``type:
integer`` ...) is written without an exponent: ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?``. Within
that syntax every constraint is an exact regular language (bounds compare digit strings,
``multipleOf`` is a remainder automaton), whereas with exponents a bound compares a digit
count against an exponent's value, which no finite automaton can do. An unconstrained
``number`` keeps JSON's full syntax. Values are :class:`decimal.Decimal`, so ``0.1`` means
one tenth, not the nearest binary float.
"""

from __future__ import annotations

import functools
from decimal import Decimal

import numpy as np

from ..automata.algebra import MAX_STATES, concatenate, intersect, union
from ..automata.dfa import ByteDFA, dfa_from_table, empty_byte_dfa, literal_dfa
from ..automata.regex import regex_to_dfa
from .integer_ranges import integer_range_dfa

__all__ = ["MAX_MULTIPLE_STATES", "all_numbers", "bounded", "decimals", "integers", "multiple_of", "number_literal",
           "number_literals"]

MAX_MULTIPLE_STATES = 200_000
"""Largest remainder automaton ``multipleOf`` may need (numerator times fraction digits)."""

_UNSIGNED_DECIMAL = r"(?:0|[1-9][0-9]*)(?:\.[0-9]+)?"


@functools.lru_cache(maxsize=None)
def all_numbers() -> ByteDFA:
    """JSON's whole number syntax, exponents included."""
    return regex_to_dfa(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


@functools.lru_cache(maxsize=None)
def decimals() -> ByteDFA:
    """Every number written without an exponent."""
    return regex_to_dfa("-?" + _UNSIGNED_DECIMAL)


@functools.lru_cache(maxsize=None)
def integers(zero_fraction: bool) -> ByteDFA:
    """Integers without an exponent; with ``zero_fraction`` also ``1.0``, ``-3.000`` (draft 6 on)."""
    return regex_to_dfa(r"-?(?:0|[1-9][0-9]*)" + (r"(?:\.0+)?" if zero_fraction else ""))


def bounded(lower: Decimal | None, lower_exclusive: bool, upper: Decimal | None, upper_exclusive: bool,
            *, max_states: int = MAX_STATES) -> ByteDFA:
    """Exponent-free numbers within the bounds (None: unbounded on that side)."""
    result = decimals()
    if lower is not None:
        result = intersect(result, _at_least(lower, lower_exclusive), max_states=max_states)
    if upper is not None:
        result = intersect(result, _at_most(upper, upper_exclusive), max_states=max_states)
    return result


@functools.lru_cache(maxsize=512)  # a schema's fields share their bounds (0, 1, 100, 65535...)
def _at_least(bound: Decimal, strict: bool) -> ByteDFA:
    """x >= bound (x > bound when strict); a magnitude test on each sign."""
    parts = []
    if bound >= 0:
        parts.append(_magnitude(bound, above=True, strict=strict))
    else:
        parts.append(regex_to_dfa(_UNSIGNED_DECIMAL))
    if bound < 0 or (bound == 0 and not strict):
        parts.append(_negative(_magnitude(bound.copy_negate(), above=False, strict=strict)))
    return _union_all(parts)


@functools.lru_cache(maxsize=512)
def _at_most(bound: Decimal, strict: bool) -> ByteDFA:
    """x <= bound (x < bound when strict)."""
    parts = []
    if bound > 0 or (bound == 0 and not strict):
        parts.append(_magnitude(bound, above=False, strict=strict))
    if bound <= 0:
        parts.append(_negative(_magnitude(bound.copy_negate(), above=True, strict=strict)))
    else:
        parts.append(_negative(regex_to_dfa(_UNSIGNED_DECIMAL)))
    return _union_all(parts)


def _union_all(parts: list[ByteDFA]) -> ByteDFA:
    result = empty_byte_dfa()
    for part in parts:
        result = union(result, part)
    return result


def _negative(magnitudes: ByteDFA) -> ByteDFA:
    return concatenate([literal_dfa([b"-"]), magnitudes])


def _magnitude(bound: Decimal, *, above: bool, strict: bool) -> ByteDFA:
    """Unsigned exponent-free spellings whose value is >= bound (``above``) or <= bound; strict
    excludes the bound itself."""
    whole, fraction = _split(bound)
    equal_whole = literal_dfa([str(whole).encode()])
    beyond_whole = integer_range_dfa(whole + 1, None) if above else (
        integer_range_dfa(0, whole - 1) if whole > 0 else empty_byte_dfa())
    beyond_whole = intersect(beyond_whole, regex_to_dfa("[0-9]+"))  # integer_range_dfa spells -0 too
    parts = [concatenate([beyond_whole, regex_to_dfa(r"(?:\.[0-9]+)?")])]
    beyond_fraction = _fraction_regex(fraction, above)
    if beyond_fraction is not None:
        parts.append(concatenate([equal_whole, regex_to_dfa(beyond_fraction)]))
    if not strict:
        parts.append(concatenate([equal_whole, regex_to_dfa(_fraction_equal_regex(fraction))]))
    return _union_all(parts)


def _split(value: Decimal) -> tuple[int, str]:
    """(integer part, fraction digits without trailing zeros) of a non-negative decimal."""
    text = format(value, "f")
    whole, _, fraction = text.partition(".")
    return int(whole), fraction.rstrip("0")


def _fraction_equal_regex(fraction: str) -> str:
    """Optional ``.digits`` equal to 0.fraction (trailing zeros allowed)."""
    if not fraction:
        return r"(?:\.0+)?"
    return r"\." + fraction + "0*"


def _fraction_regex(fraction: str, above: bool) -> str | None:
    """Optional ``.digits`` strictly above (or below) 0.fraction, compared digit by digit."""
    alternatives = []
    for i, digit in enumerate(fraction):
        d = int(digit)
        prefix = fraction[:i]
        if above and d < 9:
            alternatives.append(rf"\.{prefix}[{d + 1}-9][0-9]*")
        if not above and d > 0:
            alternatives.append(rf"\.{prefix}[0-{d - 1}][0-9]*")
        if not above and i > 0:
            alternatives.append(rf"\.{prefix}")  # stops early: the rest of the bound is not all zeros
    if above:
        alternatives.append(rf"\.{fraction}0*[1-9][0-9]*")
    elif fraction:
        alternatives.append("")  # no fraction at all: below a bound with a non-zero fraction
    return "(?:" + "|".join(alternatives) + ")" if alternatives else None


def multiple_of(divisor: Decimal, *, max_states: int = MAX_MULTIPLE_STATES) -> ByteDFA:
    """Exponent-free numbers that are integer multiples of ``divisor`` (> 0).

    With ``divisor = a / 10**d`` (a an integer), x is a multiple when ``N = x * 10**d`` is an
    integer divisible by a: at most d significant fraction digits, and an automaton over the
    digits of N (see :func:`_divisibility`). Raises StateLimitError when its states times
    (d + 2) exceed ``max_states``.
    """
    sign, digits, exponent = divisor.as_tuple()
    while len(digits) > 1 and digits[-1] == 0:  # normalize() would round to 28 digits
        digits, exponent = digits[:-1], exponent + 1
    numerator = int("".join(map(str, digits)))
    places = -exponent if exponent < 0 else 0
    if exponent > 0:
        numerator *= 10 ** exponent
    from ..automata.dfa import StateLimitError

    modulus, zeros = _split_powers_of_ten(numerator)
    n_states = modulus * (zeros + 1) + 1
    if n_states * (places + 2) > max_states:
        raise StateLimitError(f"multipleOf {divisor} needs a {n_states}-state remainder automaton "
                              f"for each of {places + 1} fraction positions")
    step, divisible = _divisibility(modulus, zeros)
    step, divisible = np.asarray(step, dtype=np.int32), np.asarray(divisible, dtype=bool)
    nothing = n_states - 1  # no digit but zeros read: N == 0
    # complete[k][r]: is N divisible when k more fraction places are zeros?
    complete, state = [], np.arange(n_states)
    for _ in range(places + 1):
        complete.append(divisible[state])
        state = step[state, 0]
    # The automaton is deterministic as built, so it is written as a table: states init, after
    # '-', integer part "0", a tail of zeros (value complete), then per remainder state r: the
    # integer part's digits read (whole), its '.' read (dot), j fraction digits read (1..places).
    INIT, START, ZERO, ZERO_TAIL = range(4)
    whole = 4 + np.arange(n_states)
    dot = whole + n_states
    fraction = [None] + [dot + j * n_states for j in range(1, places + 1)]
    table = np.full((4 + n_states * (2 + places), 256), -1, dtype=np.int32)
    accepting = np.zeros(table.shape[0], dtype=bool)
    digits = 48 + np.arange(10)
    for source in (INIT, START):
        table[source, 48] = ZERO
        table[source, digits[1:]] = whole[step[nothing, 1:]]
    table[INIT, 45] = START
    table[ZERO, 46] = dot[nothing]
    table[ZERO_TAIL, 48] = ZERO_TAIL
    accepting[[ZERO, ZERO_TAIL]] = True
    table[whole[:, None], digits] = whole[step]
    table[whole, 46] = dot
    accepting[whole] = complete[places]
    if places:
        table[dot[:, None], digits] = fraction[1][step]
    else:
        table[dot[complete[0]], 48] = ZERO_TAIL
    for j in range(1, places + 1):
        accepting[fraction[j]] = complete[places - j]
        if j < places:
            table[fraction[j][:, None], digits] = fraction[j + 1][step]
        else:
            table[fraction[j][divisible], 48] = ZERO_TAIL
    return dfa_from_table(table, INIT, accepting)


def _split_powers_of_ten(n: int) -> tuple[int, int]:
    """(n / 10**k, k) for the largest k with 10**k dividing n."""
    zeros = 0
    while n % 10 == 0:
        n //= 10
        zeros += 1
    return n, zeros


def _divisibility(modulus: int, zeros: int) -> tuple[list[list[int]], list[bool]]:
    """A digit automaton for "N is divisible by modulus * 10**zeros", read most significant
    digit first: (step[state][digit], divisible[state]); the last state means "only zeros so
    far" (N == 0), where reading starts.

    Divisibility by 10**k is a test on the last k digits, so a power of ten costs k + 1
    states, not 10**k remainders (``multipleOf: 1e30``): a state is (q, t), t the length of
    the run of trailing zeros up to ``zeros``, q the remainder modulo ``modulus`` of the digits
    before the last ``t`` zeros (zeros beyond ``zeros`` are part of that prefix). N is
    divisible exactly when t == zeros and q == 0, or N == 0."""
    width = zeros + 1
    nothing = modulus * width
    step = [[0] * 10 for _ in range(nothing + 1)]
    for q in range(modulus):
        for t in range(width):
            row = step[q * width + t]
            row[0] = q * width + t + 1 if t < zeros else (10 * q) % modulus * width + zeros
            shifted = q * 10 ** (t + 1)
            for d in range(1, 10):
                row[d] = (shifted + d) % modulus * width
    step[nothing] = [nothing] + [d % modulus * width for d in range(1, 10)]
    divisible = [state == zeros for state in range(nothing)] + [True]  # q == 0, t == zeros; or N == 0
    return step, divisible


def number_literal(value: Decimal) -> ByteDFA:
    """Every exponent-free spelling of ``value``: ``1``, ``1.0``, ``1.00``; ``-0`` for zero too."""
    return number_literals([value])


def number_literals(values) -> ByteDFA:
    """Every exponent-free spelling of each of ``values`` (Decimals), built as two tries, so
    an enum of many numbers costs one automaton, not one union per member."""
    whole_numbers, fractional, zero = [], [], False
    for value in values:
        whole, fraction = _split(value.copy_abs())  # exact: abs() would round to 28 digits
        sign = "-" if value < 0 else ""
        if value == 0:
            zero = True
        elif fraction:
            fractional.append(f"{sign}{whole}.{fraction}".encode())
        else:
            whole_numbers.append(f"{sign}{whole}".encode())
    parts = [regex_to_dfa(r"-?0(?:\.0+)?")] if zero else []
    if whole_numbers:
        parts.append(concatenate([literal_dfa(whole_numbers), regex_to_dfa(r"(?:\.0+)?")]))
    if fractional:
        parts.append(concatenate([literal_dfa(fractional), regex_to_dfa("0*")]))
    return _union_all(parts)
