"""Running fuzz cases: each in a forked child under a time and memory limit, judged by oracles.

The child compiles the case (front end, then :func:`gramalign.compile` for a byte-level
vocabulary, both under ``CompileLimits(max_compile_seconds=budget)``) with its address space
limited to what the parent uses plus ``memory_mib``, then checks what compiled:

- random walks of the matcher's mask (one byte per token; the mask decides every step), whose
  finished texts the oracle must accept: ``jsonschema`` (read with exact decimals, the
  validator of the schema's ``$schema`` draft), ``lark.Lark(..., parser="lalr")``, ``re.fullmatch``;
- texts near them (one byte dropped, inserted or changed) and, for schemas, the generator's
  values in every spelling: whatever the matcher accepts the oracle must accept, and for
  regexes and Lark grammars (exact languages) and schemas in the output form
  (``Case.output_form``), whatever the oracle accepts the matcher must accept.

The parent classifies (``OUTCOMES``): "result", "clear error" (a GramalignError), "other
exception", "over memory" (MemoryError), "crash" (the child died), "hang" (killed at
``timeout``), "over time budget" (a compile phase ran past ``budget`` + ``GRACE``), and the
check failures "invalid output", "invalid accepted", "valid rejected", "dead end" (the mask
allowed nothing before the text could end). "oracle error" (the oracle itself failed, e.g.
jsonschema recursing out on a 900-deep schema, or lark refusing a grammar gramalign accepted)
"unchecked" (jsonschema calls the schema itself invalid) and "lexing difference" (lark's LALR
parser rejects a matcher output that Earley with a dynamic lexer parses: gramalign lexes by
longest match, lark by first match, a documented difference) are counted, not failures. For
Lark grammars a text lark accepts and the matcher rejects is not a failure for the same reason.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import re
import resource
import sys
import time
import traceback
from decimal import Decimal

import gramalign as ga
from support.fuzz_cases import Case
from support.grammar_walks import byte_vocabulary, walk_to_eos  # token i is byte i, EOS = 256

OUTCOMES = ("result", "clear error", "other exception", "crash", "hang", "over memory", "over time budget",
            "invalid output", "invalid accepted", "valid rejected", "dead end", "oracle error", "unchecked",
            "lexing difference")
FAILURES = ("other exception", "crash", "hang", "over memory", "over time budget", "invalid output",
            "invalid accepted", "valid rejected", "dead end")
GRACE = 1.0
"""Seconds a compile phase may run past its budget: the steps between two checks (a kernel
sized by an estimate, a pass over a 300 KB schema, a garbage collection) take up to ~0.5 s."""

_VOCAB = None


def vocabulary() -> ga.Vocabulary:
    global _VOCAB
    if _VOCAB is None:
        _VOCAB = byte_vocabulary()
    return _VOCAB


# ------------------------------------------------------------------------- in the child


def vm_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def build_grammar(case: Case, limits: ga.CompileLimits) -> ga.Grammar:
    if case.kind == "schema":
        # strict=False: the specification's meaning, which the jsonschema oracle checks
        return ga.Grammar.from_json_schema(case.payload, limits=limits, **{"strict": False, **case.options})
    if case.kind == "lark":
        return ga.Grammar.from_lark(case.payload, limits=limits)
    return ga.Grammar.from_regex(case.payload, flags=case.options.get("flags", 0), limits=limits)


def random_walk(compiled, rng: random.Random, max_bytes: int) -> "bytes | None":
    """A text the mask lets through to EOS, or None when it grew past ``max_bytes``. Raises
    AssertionError at a dead end."""
    return walk_to_eos(compiled.matcher(), rng, max_bytes, pressure_bytes=40)


def matcher_accepts(compiled, text: bytes) -> bool:
    matcher = compiled.matcher()
    try:
        matcher.accept_string(text)
    except ga.StringRejected:
        return False
    return matcher.can_terminate()


def _neighbours(rng: random.Random, text: bytes, count: int) -> list[bytes]:
    found = []
    alphabet = b'ab01"{}[],:x -.\\'
    for _ in range(count):
        i = rng.randrange(len(text) + 1)
        roll = rng.random()
        if roll < 0.33 and text:
            j = min(i, len(text) - 1)
            found.append(text[:j] + text[j + 1:])
        elif roll < 0.66:
            found.append(text[:i] + bytes([rng.choice(alphabet)]) + text[i:])
        elif text:
            j = min(i, len(text) - 1)
            found.append(text[:j] + bytes([rng.choice(alphabet)]) + text[j + 1:])
    return found


class OracleFailure(Exception):
    """The oracle could not judge a text (not a defect of gramalign)."""


class _Oracle:
    """``accepts(text: bytes) -> bool``; ``exact``: the grammar promises the oracle's language."""

    exact = True

    def accepts(self, text: bytes) -> bool:
        raise NotImplementedError


def _decimals(value):
    if isinstance(value, float):
        return Decimal(repr(value)) if value == value and abs(value) != float("inf") else value
    if isinstance(value, dict):
        return {k: _decimals(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decimals(v) for v in value]
    return value


def _exact(text: str):
    """A JSON number as a Decimal, except exponents beyond Decimal's range (a float then)."""
    try:
        return Decimal(text)
    except ArithmeticError:
        return float(text)


class _SchemaOracle(_Oracle):
    def __init__(self, case: Case):
        import jsonschema

        schema = case.payload
        if isinstance(schema, (str, bytes)):
            schema = json.loads(schema, parse_float=Decimal)
        schema = _decimals(schema)
        base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        base.check_schema(schema)  # raises SchemaError: judged "unchecked"

        def is_integer(checker, instance):
            if isinstance(instance, Decimal):
                _, digits, exponent = instance.as_tuple()
                return exponent >= 0 or not any(digits[exponent:])
            return base.TYPE_CHECKER.is_type(instance, "integer")

        checker = base.TYPE_CHECKER.redefine("integer", is_integer)
        self.validator = jsonschema.validators.extend(base, type_checker=checker)(schema)
        self.exact = case.output_form

    def accepts(self, text: bytes) -> bool:
        try:
            instance = json.loads(text, parse_float=_exact, parse_int=_exact)
        except (ValueError, RecursionError):
            return False
        try:
            return self.validator.is_valid(instance)
        except ArithmeticError as exc:  # jsonschema's multipleOf on decimals it cannot divide
            raise OracleFailure(f"{type(exc).__name__} in jsonschema") from None


class LexingDifference(Exception):
    """lark's LALR parser rejects a text that is a sentence of the grammar under another
    split into lexemes: gramalign lexes by longest match, lark takes the first terminal that
    matches (docs/grammars.md, "Where this differs from lark")."""


class _LarkOracle(_Oracle):
    # lark's first-match lexing accepts some texts that longest match splits otherwise
    # (docs/grammars.md), so a text lark accepts may be rejected: not asserted
    exact = False

    def __init__(self, case: Case):
        import lark

        self.lark = lark
        self.text = case.payload
        self.parser = lark.Lark(case.payload, parser="lalr", start="start")
        self._earley = None

    def _parses(self, parser, text: str) -> bool:
        try:
            parser.parse(text)
        except self.lark.exceptions.LarkError:
            return False
        return True

    def accepts(self, text: bytes) -> bool:
        try:
            decoded = text.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return self._parses(self.parser, decoded)

    def judge_output(self, text: bytes) -> bool:
        """Whether an output of the matcher is a sentence: lark's verdict, and where lark
        refuses, Earley with a dynamic lexer (every split into lexemes) as the arbiter."""
        if self.accepts(text):
            return True
        if self._earley is None:
            self._earley = self.lark.Lark(self.text, parser="earley", lexer="dynamic", start="start")
        if self._parses(self._earley, text.decode("utf-8")):
            raise LexingDifference(repr(text[:200]))
        return False


class _RegexOracle(_Oracle):
    def __init__(self, case: Case):
        self.pattern = re.compile(case.payload, case.options.get("flags", 0))

    def accepts(self, text: bytes) -> bool:
        try:
            return self.pattern.fullmatch(text.decode("utf-8")) is not None
        except UnicodeDecodeError:
            return False


def _oracle(case: Case) -> _Oracle:
    return {"schema": _SchemaOracle, "lark": _LarkOracle, "regex": _RegexOracle}[case.kind](case)


def _samples(case: Case) -> list[tuple[bytes, bool]]:
    """(text, in the output form) for the generator's values of a schema case."""
    from support.random_schemas import other_spellings, serialize

    texts = []
    for value in case.values:
        try:
            texts.append((serialize(value).encode("utf-8"), True))
            texts += [(t.encode("utf-8"), False) for t in other_spellings(value)]
        except (TypeError, ValueError, RecursionError):
            continue
    return texts


def check_case(case: Case, budget: "float | None", walks: int, max_bytes: int, phase) -> dict:
    """Compile and check one case (in the child) under ``max_compile_seconds=budget`` (None:
    the default limits); returns the report."""
    limits = None if budget is None else ga.CompileLimits(max_compile_seconds=budget)
    if budget is None:
        budget = ga.CompileLimits().max_compile_seconds
    report = {"outcome": "result", "seconds": {}}
    rng = random.Random(f"walks:{case.index}")
    started = time.perf_counter()
    phase("front end")
    grammar = build_grammar(case, limits)
    report["seconds"]["front end"] = time.perf_counter() - started
    started = time.perf_counter()
    phase("compile")
    compiled = ga.compile(grammar, vocabulary(), limits=limits, cache=False)
    report["seconds"]["compile"] = time.perf_counter() - started
    for name in ("front end", "compile"):
        if report["seconds"][name] > budget + GRACE:
            report.update(outcome="over time budget", detail=f"{name}: {report['seconds'][name]:.2f} s")
            return report
    phase("walks")
    texts = []
    for _ in range(walks):
        try:
            text = random_walk(compiled, rng, max_bytes)
        except AssertionError as exc:
            report.update(outcome="dead end", detail=str(exc)[:300])
            return report
        if text is not None:
            texts.append(text)
    phase("oracle")
    try:
        oracle = _oracle(case)
    except RecursionError:
        report.update(outcome="oracle error", detail="RecursionError building the oracle")
        return report
    except Exception as exc:  # noqa: BLE001 - the oracle's own refusal, not ours
        import jsonschema

        kind = "unchecked" if isinstance(exc, jsonschema.SchemaError) else "oracle error"
        report.update(outcome=kind, detail=f"{type(exc).__name__}: {str(exc)[:200]}")
        return report
    try:
        for text in texts:
            if not getattr(oracle, "judge_output", oracle.accepts)(text):
                report.update(outcome="invalid output", detail=repr(text[:300]))
                return report
        phase("samples")
        samples = [(t, False) for text in texts for t in _neighbours(rng, text, 3)]
        if case.kind == "schema":
            samples += _samples(case)
        for text, in_form in samples:
            phase("matcher")
            got = matcher_accepts(compiled, text)
            phase("oracle")
            expected = oracle.accepts(text)
            if got and not expected:
                if case.kind == "lark":
                    oracle.judge_output(text)  # raises LexingDifference where only the lexing differs
                report.update(outcome="invalid accepted", detail=repr(text[:300]))
                return report
            if expected and not got and oracle.exact and (case.kind != "schema" or in_form):
                report.update(outcome="valid rejected", detail=repr(text[:300]))
                return report
    except RecursionError:
        report.update(outcome="oracle error", detail="RecursionError in the oracle")
        return report
    except OracleFailure as exc:
        report.update(outcome="oracle error", detail=str(exc))
        return report
    except LexingDifference as exc:
        report.update(outcome="lexing difference", detail=str(exc))
        return report
    report["walks"] = len(texts)
    report["samples"] = len(samples)
    return report


def _child(connection, case: Case, budget: "float | None", walks: int, max_bytes: int, memory_mib: int) -> None:
    limit = vm_bytes() + (memory_mib << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.setrecursionlimit(1000)  # what a fresh interpreter has (the parent may have raised it)

    def phase(name: str) -> None:
        connection.send(("phase", name))

    try:
        report = check_case(case, budget, walks, max_bytes, phase)
    except ga.GramalignError as exc:
        report = {"outcome": "clear error", "detail": f"{type(exc).__name__}: {str(exc)[:300]}"}
    except MemoryError:
        report = {"outcome": "over memory", "detail": traceback.format_exc()[-1500:]}
    except BaseException as exc:  # noqa: BLE001 - every other exception is a defect to report
        report = {"outcome": "other exception", "detail": f"{type(exc).__name__}: {str(exc)[:300]}\n"
                                                          + traceback.format_exc()[-3000:]}
    try:
        connection.send(("report", report))
    except MemoryError:
        connection.send(("report", {"outcome": "over memory", "detail": "sending the report"}))
    connection.close()
    os._exit(0)


class _Running:
    def __init__(self, case: Case, process, connection):
        self.case = case
        self.process = process
        self.connection = connection
        self.started = time.monotonic()
        self.phase = "start"
        self.report = None


def run_cases(cases, *, budget: "float | None" = 2.0, timeout: float = 20.0, memory_mib: int = 1024, walks: int = 3,
              max_bytes: int = 200, jobs: int = 1, on_result=None, stop_after: float = float("inf")
              ) -> list[tuple[Case, dict]]:
    """Run ``cases`` (an iterable of Case), ``jobs`` children at a time; returns (case, report)
    pairs in completion order. ``on_result(case, report)`` is called as each ends. No case
    starts after ``stop_after`` seconds (the run then returns what it has)."""
    deadline = time.monotonic() + stop_after
    context = multiprocessing.get_context("fork")
    pending = iter(cases)
    running: list[_Running] = []
    results = []
    exhausted = False
    while running or not exhausted:
        while not exhausted and len(running) < jobs:
            case = next(pending, None) if time.monotonic() < deadline else None
            if case is None:
                exhausted = True
                break
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(target=_child, args=(sender, case, budget, walks, max_bytes, memory_mib))
            process.start()
            sender.close()
            running.append(_Running(case, process, receiver))
        if not running:
            break
        multiprocessing.connection.wait([r.connection for r in running] + [r.process.sentinel for r in running],
                                        timeout=0.05)
        still = []
        for run in running:
            done = False
            try:
                while run.connection.poll():
                    tag, value = run.connection.recv()
                    if tag == "phase":
                        run.phase = value
                    else:
                        run.report = value
                        done = True
            except (EOFError, OSError):
                done = True
            if not done and not run.process.is_alive():
                done = True
            if not done and time.monotonic() - run.started > timeout:
                run.process.kill()
                # the oracle (lark building 3,000 terminals, a backtracking regex) is not gramalign
                kind = "oracle error" if run.phase == "oracle" else "hang"
                run.report = {"outcome": kind, "detail": f"killed after {timeout:.0f} s in phase {run.phase}"}
                done = True
            if done:
                run.process.join(5)
                if run.report is None:
                    code = run.process.exitcode
                    run.report = {"outcome": "crash", "detail": f"exit code {code} in phase {run.phase}"}
                run.report["wall"] = time.monotonic() - run.started
                run.connection.close()
                run.process.close() if run.process.exitcode is not None else None
                if on_result is not None:
                    on_result(run.case, run.report)
                # keep the outcome, not the input: hostile payloads are megabytes each, and a
                # parent that grows makes every fork slower
                run.case.description = run.case.describe()
                run.case.payload = run.case.values = None
                results.append((run.case, run.report))
            else:
                still.append(run)
        running = still
    return results


def warm_up() -> None:
    """Compile and walk one grammar of each kind in this process, so forked children find the
    numba kernels compiled (each child would otherwise JIT them again)."""
    from support.fuzz_cases import make_case

    rng = random.Random(0)
    vocab = vocabulary()
    grammars = [ga.Grammar.from_json_schema({"type": "object", "properties": {
                    "a": {"type": "string", "pattern": "^a+", "maxLength": 5}, "b": {"type": "array", "items": {
                        "type": "integer", "minimum": 2}}, "c": {"enum": ["x", 1, None]}}, "required": ["a"]}),
                ga.Grammar.from_json_schema({"oneOf": [{"type": "string", "format": "date"}, {"type": "number"}]}),
                ga.Grammar.from_lark('start: "(" start ")" | WORD\n%import common.WORD\n%import common.WS\n%ignore WS\n'),
                ga.Grammar.from_regex(r"[a-z]+\d{2,3}(x|yz)*")]
    for grammar in grammars:
        compiled = ga.compile(grammar, vocab, cache=False)
        for _ in range(3):
            text = random_walk(compiled, rng, 100)
            if text is not None:
                matcher_accepts(compiled, text)
    for index in range(8):  # the random families of the generators, in this process
        case = make_case(-1, index)
        if case.family != "random":
            continue
        try:
            check_case(case, 2.0, 1, 60, lambda name: None)
        except Exception:  # noqa: BLE001 - warming only
            pass


def summarize(results) -> dict:
    counts = dict.fromkeys(OUTCOMES, 0)
    for _, report in results:
        counts[report["outcome"]] = counts.get(report["outcome"], 0) + 1
    return counts
