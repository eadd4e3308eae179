"""Latency of the infilling check (issue 37) on the builtin JSON or SQL grammar.

Valid texts of a target length (JSON: arrays of random mask walks of the grammar, joined with
", "; SQL: walks joined with "; "), then spans of 0-8 bytes blanked at random positions (the gaps); every check's status
is counted and its wall time and CPU time (the thread's own, which other processes on a
shared core do not inflate) measured. Prints p50/p99 per (length, gaps) and the share of
``undecided``; ``impossible`` on these texts would be a soundness bug and is reported.

    taskset -c 0 .venv/bin/python benchmarks/infill.py [--grammar json|sql] [--lengths 64 256 1024 4096]
        [--gaps 1 8 64] [--checks 50] [--budget 1.0]
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time
from collections import Counter
from pathlib import Path

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
    parser.add_argument("--grammar", choices=["json", "sql"], default="json")
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 256, 1024, 4096])
    parser.add_argument("--gaps", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--checks", type=int, default=50, help="checks per (length, gaps)")
    parser.add_argument("--budget", type=float, default=1.0, help="budget_s of each check")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    grammar = ga.Grammar.builtin(args.grammar)
    checker = ga.InfillChecker(grammar, budget_s=args.budget)
    pool = random_texts(grammar, 300, seed=args.seed, max_bytes=200)
    make = json_text if args.grammar == "json" else sql_text
    rng = random.Random(args.seed)
    checker.check([pool[0][:3], ga.GAP, pool[0][-3:]])  # numba kernels load here
    print(f"# infill check latency, builtin {args.grammar} grammar, {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, budget {args.budget} s")
    print(f"{'bytes':>6} {'gaps':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'cpu p50':>8} {'cpu p99':>8}  statuses")
    total = Counter()
    for length in args.lengths:
        for gaps in args.gaps:
            times, cpu, statuses = [], [], Counter()
            for _ in range(args.checks):
                text = make(pool, rng, length)
                while not checker._accepts(text):  # a walk that ends in a comment or with ";"
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


if __name__ == "__main__":
    main()
