"""The hostile inputs of issues 24 and 41 under the default limits (or ``--budget S``:
``CompileLimits(max_compile_seconds=S)``): each in a forked child (address space limited to
the parent's plus 1 GiB), front end then ``ga.compile`` for a byte vocabulary; prints the
outcome, the wall time and the child's peak RSS.

    python benchmarks/hostile_limits.py [--budget 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

import gramalign as ga  # noqa: E402
from support.fuzz_run import byte_vocabulary, vm_bytes  # noqa: E402


def _self_containing():
    schema = {"type": "object", "properties": {}}
    schema["properties"]["a"] = schema
    return schema


def _properties_300x30():
    inner = {"type": "object", "properties": {f"f{j}": {"type": ["string", "integer"]} for j in range(30)}}
    return {"type": "object", "properties": {f"p{i}": inner for i in range(300)}}


CASES = {
    "minItems 10**30": lambda: {"type": "array", "minItems": 10 ** 30},
    "oneOf of 1,000 overlapping patterns": lambda: {"oneOf": [{"type": "string", "pattern": f"^a{i}.*b"}
                                                              for i in range(1000)]},
    "oneOf of 1,000 object branches": lambda: {"oneOf": [{"type": "object", "properties": {f"k{i}": {
        "type": "integer"}}, "required": [f"k{i}"]} for i in range(1000)]},
    "oneOf of 1,000 object branches that may overlap": lambda: {"oneOf": [{"type": "object", "properties": {
        f"k{i}": {"type": "integer"}}} for i in range(1000)]},
    "oneOf of 1,000 maxLength branches": lambda: {"oneOf": [{"type": "string", "maxLength": i} for i in range(1000)]},
    "anyOf of 1,000 maxLength branches": lambda: {"anyOf": [{"type": "string", "maxLength": i} for i in range(1000)]},
    "oneOf of 1,000 minLength branches": lambda: {"oneOf": [{"type": "string", "minLength": i} for i in range(1000)]},
    "oneOf of 1,000 multipleOf branches": lambda: {"oneOf": [{"type": "integer", "multipleOf": i + 1}
                                                             for i in range(1000)]},
    "oneOf of 1,000 unanchored patterns": lambda: {"oneOf": [{"type": "string", "pattern": f"a{i}"} for i in range(1000)]},
    "a dict that contains itself": _self_containing,
    'const "c" * 2,000,000': lambda: {"const": "c" * 2_000_000},
    "300 properties of 30-field objects": _properties_300x30,
    "const array of 100,000 items": lambda: {"const": [0] * 100_000},
    "Lark chain of 20,000 rules": lambda: "start: r0\n" + "\n".join(f'r{i}: r{i + 1} "x" | "y"' for i in range(20_000))
    + '\nr20000: "z"\n',
    "regex of nested Unicode classes": lambda: r"((?:\.*?\s.{2}(?:😀*?\.[a-c]*x+?|[^ab]c*?\s?)|[^ab]{1,3}\.{0,2}|"
                                               r"(b{2}[a-c]{0,2})*?){1,3}){1,3}\w[0-9]",
}


def _child(connection, name, budget):
    limit = vm_bytes() + (1 << 30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    payload = CASES[name]()
    limits = None if budget is None else ga.CompileLimits(max_compile_seconds=budget)
    started = time.perf_counter()
    try:
        if name.startswith("Lark"):
            grammar = ga.Grammar.from_lark(payload, limits=limits)
        elif name.startswith("regex"):
            grammar = ga.Grammar.from_regex(payload, limits=limits)
        else:
            grammar = ga.Grammar.from_json_schema(payload, limits=limits, strict=False)
        front = time.perf_counter() - started
        # eager: the whole input built now (compile's default builds a schema where matchers go)
        ga.compile(grammar, byte_vocabulary(), limits=limits, cache=False, eager=True)
        outcome = f"compiled (front end {front:.2f} s)"
    except ga.GramalignError as exc:
        outcome = f"{type(exc).__name__}: {str(exc)[:110]}"
    except MemoryError:
        outcome = "MemoryError"
    seconds = time.perf_counter() - started
    connection.send((outcome, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=None, help="max_compile_seconds (default: the library's)")
    budget = parser.parse_args().budget
    ga.compile(ga.Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "string"}}}),
               byte_vocabulary())  # numba kernels compiled before the children fork
    context = multiprocessing.get_context("fork")
    print("| input | seconds | peak RSS (MiB) | outcome |\n|---|---:|---:|---|")
    for name in CASES:
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(target=_child, args=(sender, name, budget))
        process.start()
        if receiver.poll(60):
            outcome, seconds, rss = receiver.recv()
        else:
            process.kill()
            outcome, seconds, rss = "no result after 60 s", 60.0, 0
        process.join()
        print(f"| {name} | {seconds:.2f} | {rss} | {outcome.replace('|', '/')} |", flush=True)


if __name__ == "__main__":
    main()
