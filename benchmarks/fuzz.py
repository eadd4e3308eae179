"""Fuzz the compilers with hostile and random schemas, Lark grammars and regexes.

    python benchmarks/fuzz.py --cases 10000 --seed 0 --jobs 1 [--budget default]

Each case runs in a forked child with ``--budget`` seconds of compile time
(``CompileLimits(max_compile_seconds=...)``, for the front end and for ``ga.compile``
each; ``--budget default`` passes no limits, so the defaults apply), ``--memory-mib`` of
address space above the parent's, and is killed after
``--timeout`` seconds; see ``tests/support/fuzz_run.py`` for the checks and outcomes,
``tests/support/fuzz_cases.py`` for the generators. Prints the outcome table (overall and
per family) and every failure with the command that reproduces it; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from support.fuzz_cases import make_case  # noqa: E402
from support.fuzz_run import FAILURES, OUTCOMES, run_cases, summarize, warm_up  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--case", type=int, action="append", help="run only this case index (repeatable)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--budget", type=lambda text: None if text == "default" else float(text), default=2.0,
                        help="max_compile_seconds of each compile phase ('default': the library's default limits)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds before a case counts as a hang")
    parser.add_argument("--memory-mib", type=int, default=1024)
    parser.add_argument("--walks", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=float("inf"),
                        help="start no case after this many seconds (the table then covers the cases run)")
    parser.add_argument("--verbose", action="store_true", help="print every case's outcome")
    args = parser.parse_args(argv)
    if args.cases < 1 or args.jobs < 1 or args.walks < 0:
        parser.error("--cases and --jobs must be positive, --walks non-negative")
    indices = args.case if args.case else range(args.cases)
    started = time.perf_counter()
    warm_up()
    print(f"warm-up {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    done = [0]
    failures = []

    def on_result(case, report):
        done[0] += 1
        if report["outcome"] in FAILURES:
            failures.append((case.index, report["outcome"]))
            print(f"FAIL {report['outcome']}: {case.describe()}\n    {report.get('detail', '')[:1500]}", flush=True)
        elif args.verbose:
            print(f"{report['outcome']} ({report.get('wall', 0):.2f} s): {case.describe()[:200]}"
                  f"\n    {report.get('detail', '')[:300]}", flush=True)
        if done[0] % 500 == 0:
            print(f"... {done[0]} cases, {time.perf_counter() - started:.0f} s", flush=True)

    results = run_cases((make_case(args.seed, i) for i in indices), budget=args.budget, timeout=args.timeout,
                        memory_mib=args.memory_mib, walks=args.walks, jobs=args.jobs, on_result=on_result,
                        stop_after=args.max_seconds)
    elapsed = time.perf_counter() - started
    counts = summarize(results)
    by_family = collections.defaultdict(collections.Counter)
    walls = collections.defaultdict(float)
    for case, report in results:
        by_family[f"{case.kind}/{case.family}"][report["outcome"]] += 1
        walls[f"{case.kind}/{case.family}"] = max(walls[f"{case.kind}/{case.family}"], report.get("wall", 0))
    print(f"\n{len(results)} cases, seed {args.seed}, budget {args.budget or 'default'} s, memory {args.memory_mib} MiB, "
          f"timeout {args.timeout} s, {elapsed:.0f} s\n")
    print("| outcome | cases |\n|---|---:|")
    for outcome in OUTCOMES:
        print(f"| {outcome} | {counts.get(outcome, 0)} |")
    print("\n| family | cases | result | clear error | failures | other | slowest case (s) |\n|---|---:|---:|---:|---:|---:|---:|")
    for family in sorted(by_family):
        c = by_family[family]
        bad = sum(c[o] for o in FAILURES)
        other = sum(c.values()) - c["result"] - c["clear error"] - bad
        print(f"| {family} | {sum(c.values())} | {c['result']} | {c['clear error']} | {bad} | {other} | "
              f"{walls[family]:.1f} |")
    for index, outcome in failures:
        print(f"\nreproduce: python benchmarks/fuzz.py --seed {args.seed} --case {index} --verbose  # {outcome}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
