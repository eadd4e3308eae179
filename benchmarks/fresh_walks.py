"""Fresh JSON instances for a schema: seeded random walks of gramalign's own token mask.

MaskBench's test instances revisit few parser states, while a model writes new values. Here a
walk fills gramalign's full-vocabulary mask, picks one allowed token with a bias towards what a
model writes (word-like tokens inside strings, a growing pull towards closing the current
string, number, object or array and towards EOS), accepts it and goes on, up to
``MAX_TOKENS``; a walk that has not ended by then is dropped. Every finished walk is parsed as
JSON and validated with ``jsonschema`` (the schema's ``$schema`` draft, else 2020-12; no format
checking, but an instance valid only where formats are asserted, as gramalign asserts them, is
valid: a ``oneOf`` of ``ipv4``, ``ipv6`` and ``hostname`` has one branch for a host name;
``pattern`` read as ECMA-262 reads it, see :func:`ecma_pattern`): a finished walk that jsonschema
rejects is a gramalign bug, reported, never hidden.

Used by benchmarks/maskbench.py (``--fresh K``) through :func:`serve`, in a worker process of its
own so a schema that compiles slowly or grows large cannot stall or bloat the benchmark's
parent; the walks' time is not measured.
"""

from __future__ import annotations

import functools
import json
import math
import os
import random
import re

import numpy as np

from grammar_masks import LLAMA_EOS as EOS
from grammar_masks import llama_tokenizer

MAX_TOKENS = 300
_WORD = re.compile(rb" ?[A-Za-z0-9]+")
_NUMBER_MARKS = re.compile(rb"[.eE+][0-9.eE+-]*")


class TokenClasses:
    """Boolean masks over the vocabulary, one per class a walk weighs differently.

    A token's meaning depends on whether it starts inside a JSON string, so it gets two
    lexical profiles: from inside a string (does it close it?) and from outside (does it close
    or open a container, start a number?). Computed once per vocabulary, so a step is a few
    vectorised ANDs rather than a scan of 128k tokens.
    """

    def __init__(self, token_bytes, size: int):
        self.word = np.zeros(size, bool)
        self.closes_string = np.zeros(size, bool)
        self.closes_string_and_up = np.zeros(size, bool)  # '"}', '"]},': the string and a container
        self.plain = np.zeros(size, bool)  # printable ASCII, no backslash
        self.closes_container = np.zeros(size, bool)
        self.opens_container = np.zeros(size, bool)
        self.digits = np.zeros(size, bool)
        self.number_marks = np.zeros(size, bool)  # a fraction or an exponent
        self.any = np.ones(size, bool)
        for token, data in enumerate(token_bytes):
            if not data:
                continue
            self.word[token] = _WORD.fullmatch(data) is not None
            self.plain[token] = all(32 <= b < 127 for b in data) and b"\\" not in data
            inside = _lex(data, True)
            self.closes_string[token] = inside[0] == "closed"
            self.closes_string_and_up[token] = inside[0] == "closed" and inside[1] > inside[2]
            outside = _lex(data, False)
            # by net depth: "{}" or "]," + "[" neither closes nor opens
            self.closes_container[token] = outside[1] > outside[2]
            self.opens_container[token] = outside[2] > outside[1]
            self.digits[token] = data[:1].isdigit() or data[:1] == b"-"
            self.number_marks[token] = _NUMBER_MARKS.fullmatch(data) is not None


def _lex(data: bytes, in_string: bool) -> tuple[str, int, int]:
    """Scan one token from a string (or from outside one): whether a string was closed, and how
    many containers it closed and opened outside strings."""
    closed, closes, opens, escape, started_in = False, 0, 0, False, in_string
    for byte in data:
        if in_string:
            if escape:
                escape = False
            elif byte == 0x5C:
                escape = True
            elif byte == 0x22:
                in_string, closed = False, closed or started_in
        elif byte == 0x22:
            in_string = True
        elif byte in b"}]":
            closes += 1
        elif byte in b"{[":
            opens += 1
    return ("closed" if closed else "open"), closes, opens


class LexState:
    """Where the text written so far stands, as far as the walk's bias needs it."""

    def __init__(self):
        self.in_string = False
        self.escape = False
        self.depth = 0
        self.string_bytes = 0
        self.last = 0

    def feed(self, data: bytes) -> None:
        for byte in data:
            if self.in_string:
                self.string_bytes += 1
                if self.escape:
                    self.escape = False
                elif byte == 0x5C:
                    self.escape = True
                elif byte == 0x22:
                    self.in_string = False
            elif byte == 0x22:
                self.in_string, self.string_bytes = True, 0
            elif byte in b"{[":
                self.depth += 1
            elif byte in b"}]":
                self.depth -= 1
            self.last = byte


def class_weights(state: LexState, classes: TokenClasses, step: int) -> list[tuple[np.ndarray | str, float]]:
    """(token class, weight) pairs, "eos" standing for EOS; a token counts in the first class
    it is in, and within a class every allowed token is as likely.

    The weights make strings some 10-30 bytes long, numbers a token or two, containers a few
    members, and push ever harder towards closing as the walk grows, so most walks end well
    before ``MAX_TOKENS`` whatever the schema allows.
    """
    pressure = math.exp(step / 40)
    up = 0.15 * pressure * (1 + state.depth)  # the pull towards closing a container
    if state.in_string:
        close = (0.03 + state.string_bytes / 40) * (pressure if step > 120 else 1.0)
        return [(classes.closes_string_and_up, close * up), (classes.closes_string, close), (classes.word, 1.0),
                (classes.plain, 0.05), (classes.any, 0.01)]
    number_going = state.last in b"0123456789.eE-+"
    return [("eos", 1e6), (classes.closes_container, up),
            (classes.digits, 0.1 if number_going else 0.4), (classes.number_marks, 0.1),
            (classes.opens_container, 0.4 * 0.5 ** state.depth / pressure), (classes.any, 1.0)]


class WalkGenerator:
    """Seeded random walks of gramalign's mask for one vocabulary (the Llama-3.2 tokenizer's)."""

    def __init__(self, tokenizer):
        import gramalign as ga

        self.ga = ga
        self.vocab = ga.Vocabulary.from_tokenizers(tokenizer, eos_token_ids=[EOS])
        self.size = self.vocab.size
        self.classes = TokenClasses(self.vocab.token_bytes, self.size)
        self.bitmask = np.zeros((1, ga.bitmask_width(self.size)), np.int32)

    def instances(self, schema: dict, count: int, seed: str) -> dict:
        """Up to ``count`` finished walks (at most ``2 * count`` tries), validated."""
        result = empty_report()
        try:
            # eager: a schema with a part gramalign refuses is refused here, not inside a walk
            compiled = self.ga.compile(self.ga.Grammar.from_json_schema(schema, strict=False), self.vocab,
                                       eager=True)
        except Exception as exc:  # noqa: BLE001 - gramalign refuses it: no fresh instances
            result["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
            return result
        validate = _validator(schema)
        rng = random.Random(seed)
        while len(result["ids"]) < count and result["tries"] < 2 * count:
            result["tries"] += 1
            ids, outcome = self._walk(compiled.matcher(), rng)
            text = self.vocab.decode_bytes(ids).decode("utf-8", "replace")
            if outcome == "dead end":
                result["dead_ends"].append(text)
            elif outcome == "too long":
                result["dropped"] += 1
            else:
                verdict = validate(text)
                if verdict == "valid":
                    result["ids"].append(ids)
                    result["texts"].append(text)
                else:
                    result["unchecked" if verdict.startswith("unchecked") else "invalid"].append((text, verdict))
        return result

    def _walk(self, matcher, rng: random.Random) -> tuple[list[int], str]:
        state, ids = LexState(), []
        words = self.bitmask.view(np.uint8)[0]
        while len(ids) < MAX_TOKENS:
            matcher.fill_next_token_bitmask(self.bitmask)
            allowed = np.unpackbits(words, bitorder="little")[: self.size].astype(bool)
            token = self._choose(allowed, state, len(ids), rng)
            if token is None:
                return ids, "dead end"
            if token == EOS:
                return ids, "end"
            matcher.accept_token(token)
            ids.append(token)
            state.feed(self.vocab.token_bytes[token])
        return ids, "too long"

    def _choose(self, allowed: np.ndarray, state: LexState, step: int, rng: random.Random) -> int | None:
        taken = np.zeros(self.size, bool)
        candidates = []
        for members, weight in class_weights(state, self.classes, step):
            if isinstance(members, str):  # EOS, which all but ends the walk whenever allowed
                if allowed[EOS]:
                    candidates.append((weight, np.array([EOS])))
                continue
            ids = np.flatnonzero(allowed & members & ~taken)
            taken |= members
            if ids.size:
                candidates.append((weight, ids))
        if not candidates:
            return None
        pick = rng.random() * sum(w for w, _ in candidates)
        for weight, ids in candidates:
            pick -= weight
            if pick <= 0:
                break
        return int(ids[rng.randrange(ids.size)])


def empty_report(error: str | None = None) -> dict:
    """What instances() returns, before any walk; ``error``: why there are none."""
    return {"ids": [], "texts": [], "tries": 0, "dropped": 0, "dead_ends": [], "invalid": [], "unchecked": [],
            "error": error}


ECMA_SPACE = "\\t\\n\\x0b\\x0c\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
"""ECMA-262's white space and line terminators, which its ``\\s`` matches, as a class body
(written here from the standard, not taken from gramalign's regex compiler: the checker is
what gramalign's output is checked against)."""


@functools.lru_cache(maxsize=4096)
def ecma_pattern(pattern: str) -> str:
    """``pattern`` for Python's ``re`` with ECMA-262's ``\\s`` and ``\\S`` (U+FEFF is white
    space there, U+001C-U+001F and U+0085 are not; a ``\\S`` inside a class is left as is).

    >>> import re
    >>> bool(re.fullmatch(ecma_pattern(r"a\\sb"), "a\\ufeffb")), bool(re.fullmatch(r"a\\sb", "a\\ufeffb"))
    (True, False)
    """
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            escaped = pattern[i + 1]
            if escaped == "s":
                out.append(ECMA_SPACE if in_class else f"[{ECMA_SPACE}]")
            elif escaped == "S" and not in_class:
                out.append(f"[^{ECMA_SPACE}]")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        in_class = (in_class or c == "[") and not (in_class and c == "]")
        out.append(c)
        i += 1
    return "".join(out)


def _ecma_pattern_keyword(validator, pattern, instance, schema):
    import jsonschema

    if validator.is_type(instance, "string") and not re.search(ecma_pattern(pattern), instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _validator(schema: dict):
    """text -> "valid", "invalid: ...", or "unchecked: ..." when jsonschema itself fails."""
    import jsonschema

    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls = jsonschema.validators.extend(cls, {"pattern": _ecma_pattern_keyword})
        validator = cls(schema)  # no format_checker: formats are annotations here...
        asserting = cls(schema, format_checker=cls.FORMAT_CHECKER)  # ...unless asserting them makes it valid
    except Exception as exc:  # noqa: BLE001
        reason = f"unchecked: {type(exc).__name__}: {str(exc)[:120]}"  # exc is unbound after the block
        return lambda text: reason

    def validate(text: str) -> str:
        try:
            instance = json.loads(text)
        except ValueError as exc:
            return f"invalid: not JSON ({exc})"
        try:
            error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
            if error is not None and not any(asserting.iter_errors(instance)):
                error = None
        except Exception as exc:  # noqa: BLE001 - unresolvable $ref, bad schema, ...
            return f"unchecked: {type(exc).__name__}: {' '.join(str(exc).split())[:120]}"
        if error is None:
            return "valid"
        # gramalign documents that it does not track repeated keys (docs/json_schema.md), and
        # json.loads keeps the last of them: say so, as it explains most such rejections
        repeated = " [the instance repeats a key]" if _repeats_a_key(text) else ""
        return f"invalid{repeated}: {error.validator} at {error.json_path}: {' '.join(error.message.split())[-160:]}"

    return validate


def _repeats_a_key(text: str) -> bool:
    found = False

    def pairs(items):
        nonlocal found
        found = found or len({key for key, _ in items}) < len(items)
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)
    return found


def serve(name: str, connection) -> None:
    """Worker loop for maskbench's Worker: (document, count, seed) -> instances()."""
    os.environ.pop("GRAMALIGN_CACHE_DIR", None)  # never leave compiled masks for the timed workers
    generator = WalkGenerator(llama_tokenizer())
    connection.send("ready")
    while True:
        task = connection.recv()
        if task is None:
            return
        document, count, seed = task
        connection.send(generator.instances(document["schema"], count, seed))
