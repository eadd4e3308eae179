"""The exact trie walk alone: capture its calls on a real workload, then time replaying them.

    .venv/bin/python benchmarks/walk_replay.py [--grammar python|sql|json] [--tokens 1500] [--repeats 7]

Walks the first ``--tokens`` Llama-3.2 tokens of the workload of ``grammar_masks.py`` (the
first standard-library module for Python, the SQL queries, the JSON documents), filling a
mask before each, and records every call the mask store makes to
``trie_walk.walk_trie_grammar`` with a copy of its small arrays (pools, hypotheses, output
row; the tables and the trie are shared: they only grow caches). Then it replays the recorded
calls ``--repeats`` times and prints the total time of each pass, min and median.

It isolates the kernel from the rest of a mask (Python, classification, memo lookups), so a
change to the kernels' signatures or inlining can be compared between two checkouts in one
run each, pinned to one core. Run it under ``perf record`` with ``NUMBA_ENABLE_PROFILING=1``
to see where the kernel's time goes: numba's code has no symbols there, and ``--nrt``
prints the addresses of its reference-count functions (``NRT_incref``, ``NRT_decref``) in
this process, to match against the report's hot addresses.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import grammar_masks  # noqa: E402  (the workloads and the tokenizer)
from gramalign.masking.cfg import store  # noqa: E402

SHARED_BYTES = 4 << 20
"""Arrays from this size up are shared between the recorded calls, not copied."""


def _copied(value):
    if isinstance(value, np.ndarray):
        return value.copy() if value.nbytes < SHARED_BYTES else value
    if isinstance(value, tuple):
        return tuple(_copied(v) for v in value)
    return value


def _workload(grammar: str) -> list[str]:
    if grammar == "python":
        return grammar_masks.python_files(1)
    if grammar == "sql":
        return grammar_masks.sql_queries()
    return grammar_masks.json_documents(20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grammar", default="python", choices=("python", "sql", "json"))
    parser.add_argument("--tokens", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--nrt", action="store_true", help="print the addresses of NRT_incref and NRT_decref")
    args = parser.parse_args()

    kernel = store.walk_trie_grammar
    recorded = []

    def recording(*call):
        recorded.append(_copied(call))
        return kernel(*call)

    store.walk_trie_grammar = recording
    tokenizer = grammar_masks.llama_tokenizer()
    engine = grammar_masks.Gramalign(tokenizer)
    compiled = engine.compile(args.grammar)
    bitmask = np.zeros((1, compiled.bitmask_width), np.int32)
    left = args.tokens
    for text in _workload(args.grammar):
        matcher = compiled.matcher()
        for token in tokenizer.encode(text, add_special_tokens=False).ids[:left]:
            matcher.fill_next_token_bitmask(bitmask, 0)
            matcher.accept_token(token)
            left -= 1
        if left <= 0:
            break
    store.walk_trie_grammar = kernel
    passes = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for call in recorded:
            kernel(*call)
        passes.append(time.perf_counter() - start)
    print(f"{args.grammar}: {len(recorded)} walks recorded over {args.tokens - max(left, 0)} tokens; "
          f"replay min {min(passes):.3f} s, median {statistics.median(passes):.3f} s "
          f"({', '.join(f'{p:.3f}' for p in passes)})")
    if args.nrt:
        from numba.core.runtime import nrt  # initialized by the kernels' first calls

        print(", ".join(f"{name} {nrt.rtsys.library.get_pointer_to_function(name):#x}"
                        for name in ("NRT_incref", "NRT_decref")))


if __name__ == "__main__":
    main()
