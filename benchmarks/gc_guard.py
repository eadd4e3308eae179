"""What pausing the garbage collector around fills costs, and what it saves.

1. The guard alone: ``with gc_paused: pass`` (enter + exit), minus an empty call.
2. Cached fills (JSON grammar, Llama-3.2 vocabulary, valid MaskBench documents walked once
   beforehand so every mask is a cache hit): median time per fill of ``matcher.fill`` alone
   and under ``gc_paused``, interleaved over the same positions.
3. The tail it removes, in the MaskBench worker's situation (where the 21-71 ms masks were
   seen): schema after schema compiled in one process (large, long-lived object graphs) and
   every valid instance's masks filled, default thresholds; fills timed unguarded, under
   ``gc_paused``, and under ``gc_paused`` with ``ga.freeze_gc()`` after the vocabulary load,
   each in a fresh process, with the collections that started inside a fill (``gc.callbacks``).

    taskset -c 1 .venv/bin/python benchmarks/gc_guard.py [--docs 20] [--schemas 200]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import glob
import json
import platform
import statistics
import subprocess
import sys
import time
import timeit

import gramalign as ga
from gramalign.masking.gc_guard import gc_paused

from grammar_masks import DATA, json_documents, llama_tokenizer, percentile


def guard_ns(number: int = 1_000_000) -> float:
    def guarded():
        with gc_paused:
            pass

    def empty():
        pass

    best = min(timeit.repeat(guarded, number=number, repeat=7))
    base = min(timeit.repeat(empty, number=number, repeat=7))
    return (best - base) / number * 1e9


def positions(compiled, tokenizer, docs):
    """(matcher, tokens) per document, walked once so that later fills are cache hits."""
    walks = []
    bitmask = ga.allocate_token_bitmask_numpy(1, compiled.vocabulary.size)
    for doc in docs:
        tokens = tokenizer.encode(doc, add_special_tokens=False).ids
        matcher = compiled.matcher()
        for token in tokens:
            matcher.fill_next_token_bitmask(bitmask, 0)
            matcher.accept_token(token)
        matcher.fill_next_token_bitmask(bitmask, 0)
        matcher.reset()
        walks.append((matcher, tokens))
    return walks


def cached_fill_ns(walks, bitmask, rounds: int = 5):
    plain, guarded = [], []
    for _ in range(rounds):
        for matcher, tokens in walks:
            matcher.reset()
            for token in tokens:
                tick = time.perf_counter_ns()
                matcher.fill_next_token_bitmask(bitmask, 0)
                middle = time.perf_counter_ns()
                with gc_paused:
                    matcher.fill_next_token_bitmask(bitmask, 0)
                end = time.perf_counter_ns()
                plain.append(middle - tick)
                guarded.append(end - middle)
                matcher.accept_token(token)
    return statistics.median(plain), statistics.median(guarded)


def schema_instances(count: int):
    """(schema, valid instance texts) of the first ``count`` MaskBench files that have some."""
    out = []
    for path in sorted(glob.glob(str(DATA / "jsonschemabench" / "maskbench" / "data" / "*.json"))):
        with open(path) as f:
            entry = json.load(f)
        docs = [json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False)
                for t in entry.get("tests", []) if t.get("valid")]
        if docs:
            out.append((entry["schema"], docs))
        if len(out) >= count:
            break
    return out


def server_run(mode: str, schemas: int) -> None:
    """Like a MaskBench worker: compile schema after schema and fill along its valid
    instances (every fill timed); prints one table row."""
    tokenizer = llama_tokenizer()
    vocab = ga.Vocabulary.from_tokenizers(tokenizer, eos_token_ids=[128001])
    work = schema_instances(schemas)
    if mode == "freeze_gc":
        ga.freeze_gc()  # after loading the vocabulary; grammars are compiled as requests come
    guard = gc_paused if mode != "unguarded" else contextlib.nullcontext()
    state = {"in_fill": False, "inside": 0, "all": 0, "full": 0, "started": -1}

    def on_gc(phase, info):
        if phase == "start":
            state["all"] += 1
            state["full"] += info["generation"] == 2
            state["inside"] += state["in_fill"]
            if state["in_fill"]:
                state["started"] = max(state["started"], info["generation"])

    times, hit = [], []  # every fill's time; those of fills a collection started inside
    bitmask = ga.allocate_token_bitmask_numpy(1, vocab.size)
    gc.callbacks.append(on_gc)
    compiled_count = 0
    for schema, docs in work:
        try:
            compiled = ga.compile(ga.Grammar.from_json_schema(schema, strict=False), vocab)
        except ga.GramalignError:
            continue
        compiled_count += 1
        for doc in docs:
            matcher = compiled.matcher()
            for token in tokenizer.encode(doc, add_special_tokens=False).ids + [None]:
                tick = time.perf_counter_ns()
                with guard:
                    state["in_fill"] = True
                    matcher.fill_next_token_bitmask(bitmask, 0)
                    state["in_fill"] = False
                times.append((time.perf_counter_ns() - tick) / 1e3)
                if state["started"] >= 0:
                    hit.append((times[-1], state["started"]))
                    state["started"] = -1
                if token is None or not matcher.try_accept_token(token):
                    break
    gc.callbacks.remove(on_gc)
    inside = (f"{len(hit)}: " + ", ".join(f"{t:,.0f} (gen {g})" for t, g in sorted(hit, reverse=True)[:4])
              if hit else "0")
    print(f"| {mode} | {compiled_count} | {len(times)} | {percentile(times, 50):.1f} | {percentile(times, 99):.1f} "
          f"| {max(times):,.1f} | {state['all']} ({state['full']} full) | {inside} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20)
    parser.add_argument("--schemas", type=int, default=200, help="MaskBench schemas for part 3")
    parser.add_argument("--server-run", choices=["unguarded", "gc_paused", "freeze_gc"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.server_run:
        server_run(args.server_run, args.schemas)
        return
    print(f"python {platform.python_version()}, {platform.machine()}")
    print(f"guard alone (enter + exit): {guard_ns():.0f} ns")

    tokenizer = llama_tokenizer()
    vocab = ga.Vocabulary.from_tokenizers(tokenizer, eos_token_ids=[128001])
    compiled = ga.compile(ga.Grammar.builtin("json"), vocab)
    walks = positions(compiled, tokenizer, json_documents(args.docs))
    bitmask = ga.allocate_token_bitmask_numpy(1, vocab.size)
    plain, guarded = cached_fill_ns(walks, bitmask)
    fills = sum(len(t) for _, t in walks)
    print(f"cached JSON fill, {fills} positions x 5: median {plain / 1e3:.2f} µs alone, {guarded / 1e3:.2f} µs "
          f"under gc_paused (+{(guarded - plain):.0f} ns)")

    print(f"\n{args.schemas} MaskBench schemas compiled one after another, each instance's masks filled "
          "(one fresh process per row):")
    print("| fills | grammars | masks | p50 (µs) | p99 (µs) | max (µs) | collections | fills a collection "
          "started inside: count: slowest (µs, oldest generation collected) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for mode in ("unguarded", "gc_paused", "freeze_gc"):
        subprocess.run([sys.executable, __file__, "--server-run", mode, "--schemas", str(args.schemas)], check=True)


if __name__ == "__main__":
    main()
