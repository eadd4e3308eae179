"""Latency of the infilling check (issue 37) on the builtin JSON, SQL or Python grammar, on JSON
Schemas, and a synthetic multi-region infilling task with a toy denoiser.

Valid texts of a target length (JSON: arrays of random mask walks of the grammar, joined with
", "; SQL: walks joined with "; "; Python: consecutive top-level statements of standard-library
modules; a Lark file: the walk nearest the length from below), then spans of 0-8 bytes blanked
at random positions (the gaps); every check's status
is counted and its wall time and CPU time (the thread's own, which other processes on a
shared core do not inflate) measured. Prints p50/p99 per (length, gaps) and the share of
``undecided``; ``impossible`` on these texts would be a soundness bug and is reported.

``--schemas N`` does the same on N MaskBench schemas (their valid test instances, compact,
1-8 gaps each; needs GRAMALIGN_DATA_DIR). ``--regions N`` runs the multi-region task on N
texts of the builtin JSON grammar: 1-4 spans of 1-6 bytes removed (masked, one byte token per
position), refilled by a toy byte-level denoiser that puts ``--fidelity`` of its mass on the
removed byte and the rest on printable ASCII, once unconstrained (its most confident masked
position and token, step by step) and once with ``gramalign.diffusion_sample``; it reports
the share of valid texts (CPython's json) and the constraint's time per text.

    taskset -c 0 .venv/bin/python benchmarks/infill.py [--grammar json|sql|python|FILE.lark [--start RULE]] [--lengths 64 256 1024 4096]
        [--gaps 1 8 64] [--checks 50] [--budget 1.0] [--schemas 50] [--regions 100]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import sysconfig
import time
from collections import Counter
from pathlib import Path

import numpy as np

import gramalign as ga

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.grammar_walks import random_texts  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def json_text(pool: list[bytes], rng: random.Random, length: int) -> bytes:
    """A JSON array of walks, about ``length`` bytes (the last element makes it a bit longer)."""
    out = bytearray(b"[")
    while len(out) < length - 1:
        out += rng.choice(pool) + b", "
    return bytes(out[:-2]) + b"]" if len(out) > 1 else b"[]"


def sql_text(pool: list[bytes], rng: random.Random, length: int) -> bytes:
    """Statements joined with "; ", about ``length`` bytes."""
    out = bytearray(rng.choice(pool))
    while len(out) < length:
        out += b"; " + rng.choice(pool)
    return bytes(out)


def lark_text(pool: list[bytes], rng: random.Random, length: int) -> bytes:
    """One walk of a Lark grammar of about ``length`` bytes: the longest of 50 draws that is
    not longer, or the shortest (a grammar's walks need not join into one text)."""
    draws = [rng.choice(pool) for _ in range(50)]
    fitting = [d for d in draws if len(d) <= length]
    return max(fitting, key=len) if fitting else min(draws, key=len)


def python_pool(checker, count: int = 40) -> list[list[bytes]]:
    """Standard-library modules of 2-20 KB that the checker's parser accepts, as lists of lines."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    pool = []
    for path in sorted(stdlib.glob("*.py")):
        if len(pool) >= count:
            break
        if 2_000 <= path.stat().st_size <= 20_000:
            data = path.read_bytes()
            if checker._accepts(data):
                pool.append(data.splitlines(keepends=True))
    return pool


def python_text(pool: list, rng: random.Random, length: int) -> bytes:
    """Consecutive top-level statements of a standard-library module, between 3/4 and 3/2 of
    ``length`` bytes (the run nearest the length from a random top-level line; another draw
    where it falls outside; the caller redraws what the parser refuses). Until session 44 the
    run went from a top-level line to the first one past the length, so a long class made a
    "1,024-byte" text of up to 14 KB, and those set the p99."""
    def top_level(line: bytes) -> bool:
        return line[:1].isalpha() or line[:1] in b"@_"

    nearest = None
    for _ in range(200):
        lines = rng.choice(pool)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        tops = [k for k, line in enumerate(lines) if top_level(line)] + [len(lines)]
        first = rng.choice(tops[:-1] or tops)
        last = min((e for e in tops if e > first), key=lambda e: abs(offsets[e] - offsets[first] - length),
                   default=len(lines))
        text = b"".join(lines[first:last])
        if 0.75 * length <= len(text) <= 1.5 * length:
            return text
        if nearest is None or abs(len(text) - length) < abs(len(nearest) - length):
            nearest = text
    return nearest


def blanked(text: bytes, rng: random.Random, gaps: int, width: int = 8) -> list:
    starts = sorted(rng.sample(range(len(text) + 1), min(gaps, len(text) + 1)))
    segments, previous = [], 0
    for start in starts:
        start = max(start, previous)
        segments += [text[previous:start], ga.GAP]
        previous = min(len(text), start + rng.randint(0, width))
    segments.append(text[previous:])
    return segments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grammar", default="json",
                        help="json, sql, python (standard-library code), or a .lark file (its texts: walks joined by newlines; --start names its rule)")
    parser.add_argument("--start", default="start", help="the start rule of a .lark --grammar")
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 256, 1024, 4096])
    parser.add_argument("--gaps", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--checks", type=int, default=50, help="checks per (length, gaps)")
    parser.add_argument("--budget", type=float, default=1.0, help="budget_s of each check")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--schemas", type=int, default=0, help="also check N MaskBench schemas' instances")
    parser.add_argument("--regions", type=int, default=0, help="also run the multi-region task on N texts")
    parser.add_argument("--fidelity", type=float, default=0.1, help="the toy denoiser's mass on the removed byte")
    parser.add_argument("--only-extras", action="store_true", help="skip the length x gaps table")
    args = parser.parse_args()
    if args.schemas:
        schema_checks(args.schemas, args.seed, args.budget)
    if args.regions:
        multi_region(args.regions, args.seed, args.budget, args.fidelity)
    if args.only_extras:
        return
    if args.grammar in ("json", "sql", "python"):
        grammar = ga.Grammar.builtin(args.grammar)
        make = {"json": json_text, "sql": sql_text, "python": python_text}[args.grammar]
    else:
        grammar = ga.Grammar.from_lark(Path(args.grammar).read_text(encoding="utf-8"), start=args.start)
        make = lark_text
    checker = ga.InfillChecker(grammar, budget_s=args.budget)
    if make is python_text:
        pool = python_pool(checker)
    else:
        pool = random_texts(grammar, 300, seed=args.seed, max_bytes=200 if make is not lark_text else max(args.lengths))
    if make is sql_text:  # statements that another may follow after "; " (not those ending in ";")
        pool = [walk for walk in pool if checker._accepts(walk + b"; " + walk)]
    rng = random.Random(args.seed)
    first = make(pool, rng, 16)
    # numba kernels load here, those of lexemes carried over gaps with the second check
    checker.check([first[:3], ga.GAP, first[-3:]])
    checker.check(blanked(first, random.Random(-1), 4))
    print(f"# infill check latency, {args.grammar} grammar, {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, budget {args.budget} s")
    print(f"{'bytes':>6} {'gaps':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'cpu p50':>8} {'cpu p99':>8}  statuses")
    total = Counter()
    for length in args.lengths:
        for gaps in args.gaps:
            times, cpu, statuses = [], [], Counter()
            for _ in range(args.checks):
                text = make(pool, rng, length)
                while not checker._accepts(text):  # (a JSON walk that ends in a comment, say)
                    text = make(pool, rng, length)
                segments = blanked(text, rng, gaps)
                started, started_cpu = time.perf_counter(), time.thread_time()
                result = checker.check(segments)
                times.append(time.perf_counter() - started)
                cpu.append(time.thread_time() - started_cpu)
                statuses[result.status] += 1
            total.update(statuses)
            print(f"{length:>6} {gaps:>5} {percentile(times, 0.5) * 1e3:>8.2f} {percentile(times, 0.99) * 1e3:>8.2f} "
                  f"{max(times) * 1e3:>8.2f} {percentile(cpu, 0.5) * 1e3:>8.2f} {percentile(cpu, 0.99) * 1e3:>8.2f}  "
                  f"{dict(statuses)}")
    checks = sum(total.values())
    print(f"# {checks} checks: undecided {total['undecided'] / checks:.1%}, impossible (unsound here) "
          f"{total['impossible']}")


def schema_checks(count: int, seed: int, budget: float) -> None:
    """Checks on valid instances of ``count`` MaskBench schemas (compact JSON): each instance
    once with 1-8 gaps, once with 8. Kernels load on the builtin JSON grammar first."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from json_schema_conformance import sample_paths

    if not os.environ.get("GRAMALIGN_DATA_DIR"):
        raise SystemExit("--schemas needs GRAMALIGN_DATA_DIR (the shared data)")
    # numba kernels load here (a string across two gaps loads those of lexemes carried over gaps)
    ga.InfillChecker(ga.Grammar.builtin("json")).check([b'{"a": [1, "x', ga.GAP, b"y", ga.GAP, b'z"]}'])
    rng = random.Random(seed)
    paths = sample_paths(0, 0)
    rng.shuffle(paths)
    statuses, used, refused, skipped = Counter(), 0, 0, 0
    times: dict = {}  # (gaps, size class) -> [(wall, cpu)]
    for path in paths:
        if used == count:
            break
        document = json.loads(path.read_text())
        instances = [json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False).encode()
                     for t in document["tests"] if t["valid"]]
        if not instances:
            continue
        try:
            checker = ga.InfillChecker(ga.Grammar.from_json_schema(document["schema"], strict=False), budget_s=budget)
        except ga.GramalignError:
            refused += 1
            continue
        used += 1
        for text in instances[:5]:
            if not checker._accepts(text):  # a valid instance gramalign's grammar refuses (docs/json_schema.md)
                skipped += 1
                continue
            size = "<= 256" if len(text) <= 256 else "257-1024" if len(text) <= 1024 else "> 1024"
            for gaps in ("1-8", "8"):
                segments = blanked(text, rng, rng.randint(1, 8) if gaps == "1-8" else 8)
                started, started_cpu = time.perf_counter(), time.thread_time()
                result = checker.check(segments)
                times.setdefault((gaps, size), []).append((time.perf_counter() - started,
                                                           time.thread_time() - started_cpu))
                statuses[result.status] += 1
    checks = sum(statuses.values())
    print(f"# JSON Schemas: {used} schemas ({refused} refused by the compiler skipped; {skipped} instances the "
          f"grammar rejects skipped), {checks} checks of valid instances: {dict(statuses)}; undecided "
          f"{statuses['undecided'] / checks:.1%}, impossible (unsound here) {statuses['impossible']}")
    print(f"# {'gaps':>5} {'bytes':>9} {'checks':>6} {'p50 ms':>8} {'p99 ms':>8} {'cpu p50':>8} {'cpu p99':>8} "
          f"{'cpu max':>8}")
    for (gaps, size), values in sorted(times.items()):
        wall, cpu = [v[0] for v in values], [v[1] for v in values]
        print(f"# {gaps:>5} {size:>9} {len(values):>6} {percentile(wall, 0.5) * 1e3:>8.2f} "
              f"{percentile(wall, 0.99) * 1e3:>8.2f} {percentile(cpu, 0.5) * 1e3:>8.2f} "
              f"{percentile(cpu, 0.99) * 1e3:>8.2f} {max(cpu) * 1e3:>8.2f}")


class ToyDenoiser:
    """Byte tokens (0-255), EOS 256, MASK 257: at each position ``fidelity`` of the mass on
    the original text's byte there (EOS past its end), the rest on printable ASCII, every
    score then multiplied by log-normal noise (sigma 1.5), so that the best token is often
    wrong."""

    def __init__(self, text: bytes, length: int, fidelity: float, rng: random.Random):
        self.vocab_size, self.mask_id = 258, 257
        noise = np.zeros(258)
        noise[0x20:0x7F] = 1.0
        noise /= noise.sum()
        self.table = np.tile(noise * (1 - fidelity), (length, 1))
        truth = list(text) + [256] * (length - len(text))
        self.table[np.arange(length), truth] += fidelity
        self.table *= np.exp(1.5 * np.array([[rng.gauss(0, 1) for _ in range(258)] for _ in range(length)]))
        self.seconds = 0.0

    def token_logprobs(self, ids) -> np.ndarray:
        started = time.perf_counter()
        out = np.log(self.table / self.table.sum(axis=1, keepdims=True))
        self.seconds += time.perf_counter() - started
        return out


def multi_region(count: int, seed: int, budget: float, fidelity: float) -> None:
    """Spans removed from valid JSON texts, refilled with and without the constraint."""
    grammar = ga.Grammar.builtin("json")
    vocab = ga.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [b"<eos>", b"<mask>"],
                                           eos_token_ids=[256])
    compiled = ga.compile(grammar, vocab)
    checker = ga.InfillChecker(compiled, budget_s=budget)
    candidates = ga.InfillCandidates(compiled, vocab)
    pool = random_texts(grammar, 300, seed=seed, max_bytes=120)
    rng = random.Random(seed)
    valid_free = valid_constrained = finished = 0
    spent, steps, rejected, undecided = [], 0, 0, 0
    for _ in range(count):
        text = json_text(pool, rng, rng.randint(40, 160))
        ids = list(text)
        for _ in range(rng.randint(1, 4)):
            start = rng.randrange(len(ids))
            for p in range(start, min(len(ids), start + rng.randint(1, 6))):
                ids[p] = 257
        model = ToyDenoiser(text, len(ids), fidelity, rng)
        free = _unconstrained(model, ids)
        valid_free += _is_json(free)
        started = time.perf_counter()
        result = ga.diffusion_sample(model, compiled, ids, checker=checker, candidates=candidates)
        spent.append(time.perf_counter() - started - model.seconds)
        steps += result.steps
        rejected += result.rejected
        undecided += result.undecided
        finished += result.finished
        valid_constrained += result.finished and _is_json(result.text)
    print(f"# multi-region infilling, {count} JSON texts of 40-160 bytes, 1-4 spans of 1-6 bytes, toy denoiser "
          f"(fidelity {fidelity}): valid unconstrained {valid_free / count:.1%}, constrained {valid_constrained / count:.1%} "
          f"(finished {finished / count:.1%}); constraint time per text p50 {percentile(spent, 0.5) * 1e3:.1f} ms, "
          f"p99 {percentile(spent, 0.99) * 1e3:.1f} ms, per step {sum(spent) / max(steps, 1) * 1e3:.2f} ms; "
          f"rejected proposals {rejected}, undecided checks {undecided}")


def _unconstrained(model: ToyDenoiser, ids: list[int]) -> bytes:
    """The denoiser alone: the most confident masked position and its best token, one per step."""
    block = list(ids)
    while 257 in block:
        rows = model.token_logprobs(block)
        masked = [p for p, t in enumerate(block) if t == 257]
        rows[:, 257] = -np.inf
        position = masked[int(np.argmax(rows[masked].max(axis=1)))]
        block[position] = int(np.argmax(rows[position]))
    end = block.index(256) if 256 in block else len(block)
    return bytes(block[:end])


def _is_json(data: "bytes | None") -> bool:
    try:
        json.loads(data)
    except (TypeError, ValueError):
        return False
    return True


if __name__ == "__main__":
    main()
