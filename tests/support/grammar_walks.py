"""Random texts of a compiled grammar, by random walks over a one-byte-per-token vocabulary.

The masks decide every step (only bytes that keep a valid continuation are offered), so a
walk that ends is a sentence of the grammar as the matcher sees it; an independent oracle
(jsonschema, pydantic, ``json.loads``) then judges it. Walks prefer structural bytes as they
grow so that unbounded strings and arrays still end.
"""

from __future__ import annotations

import json
import random
from decimal import Decimal

import jsonschema

import gramalign as ga

EOS = 256
STRUCTURAL = frozenset(b'"]},:0123456789.-truefalsn')


def byte_vocabulary() -> ga.Vocabulary:
    """Token i is the byte i; token 256 is EOS."""
    return ga.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [b""], eos_token_ids=256,
                                          special_token_ids=[256])


def walk_to_eos(matcher, rng: random.Random, max_bytes: int, pressure_bytes: int = 80) -> "bytes | None":
    """One random walk of ``matcher``'s masks over the byte vocabulary: the text it lets
    through to EOS, or None once it grew past ``max_bytes``. The pull towards EOS and the
    structural bytes grows with the text, reaching its most after ``pressure_bytes`` bytes.
    Raises AssertionError at a dead end."""
    out = bytearray()
    while len(out) <= max_bytes:
        allowed = matcher.allowed_token_ids()
        if len(allowed) == 0:
            raise AssertionError(f"dead end after {bytes(out)!r}: the mask allows nothing")
        pressure = min(0.95, len(out) / pressure_bytes)
        if EOS in allowed and rng.random() < pressure:
            return bytes(out)
        preferred = [int(t) for t in allowed if t == EOS or t in STRUCTURAL]
        pool = preferred if preferred and rng.random() < pressure else allowed
        token = int(pool[rng.randrange(len(pool))])
        if token == EOS:
            return bytes(out)
        matcher.accept_token(token)
        out.append(token)
    return None


def random_texts(grammar: ga.Grammar, count: int, seed: int, *, max_bytes: int = 600,
                 vocab: ga.Vocabulary | None = None) -> list[bytes]:
    """Up to ``count`` texts the grammar accepts (walks longer than ``max_bytes`` are dropped)."""
    compiled = ga.compile(grammar, vocab or byte_vocabulary())
    rng = random.Random(seed)
    texts = [walk_to_eos(compiled.matcher(), rng, max_bytes) for _ in range(count)]
    return [text for text in texts if text is not None]


def _is_integer(checker, instance) -> bool:
    if isinstance(instance, Decimal):  # exact, even for 1e999999 (to_integral would overflow)
        _, digits, exponent = instance.as_tuple()
        return exponent >= 0 or not any(digits[exponent:])
    return jsonschema.Draft202012Validator.TYPE_CHECKER.is_type(instance, "integer")


_DECIMAL_TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer)
DecimalValidator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=_DECIMAL_TYPES)


def _decimal(text: str):
    """Exact, except exponents beyond Decimal's range (only unconstrained numbers have exponents)."""
    try:
        return Decimal(text)
    except ArithmeticError:
        return float(text)


def is_valid_text(schema, text: bytes | str, *, format_checker=None) -> bool:
    """The jsonschema verdict on ``text`` read with exact decimals (a float would round
    ``123456789012345678.5`` to an integer)."""
    instance = json.loads(text, parse_float=_decimal, parse_int=_decimal)
    return DecimalValidator(schema, format_checker=format_checker).is_valid(instance)


def lark_accepts(oracle, text: str) -> bool:
    """Does the ``lark.Lark`` parser ``oracle`` accept ``text``?"""
    import lark

    try:
        oracle.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


def lark_refuses_grammar(text: str) -> bool:
    """Does lark's LALR front end refuse the grammar ``text`` (with any exception)?"""
    import lark

    try:
        lark.Lark(text, parser="lalr")
    except Exception:  # noqa: BLE001 - any refusal by lark itself
        return True
    return False
