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
to see where the kernel's time goes: numba's code has no symbols there; ``--perf-map``
writes perf's map of the walk kernel's functions (perf report then names them, and
``perf script -F ip,sym,symoff`` gives offsets to read in ``objdump -d`` of the object code),
and ``--nrt`` prints the addresses of its reference-count functions (``NRT_incref``,
``NRT_decref``) in this process, to match against the report's hot addresses.
"""

from __future__ import annotations

import argparse
import os
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
POOL_ARGUMENT = 3
"""``walk_trie_grammar(lexer, lr, glue, pool, hyps, trie, ...)``: the one bundle copied."""


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
    parser.add_argument("--perf-map", action="store_true",
                        help="write /tmp/perf-PID.map: the walk kernel's functions, so perf report names them")
    args = parser.parse_args()
    if args.perf_map:
        _keep_object_code()

    kernel = store.walk_trie_grammar
    recorded = []

    def recording(*call):
        # the bundles of tables and trie shared, the pool bundle (which the walk writes) copied
        recorded.append(tuple(_copied(value) if k == POOL_ARGUMENT or not isinstance(value, tuple) else value
                              for k, value in enumerate(call)))
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
    if args.perf_map:
        print(f"perf map: {_write_perf_map(kernel)}")


def _keep_object_code() -> None:
    """Keep each code library's object code (numba drops it once loaded), for the perf map."""
    from numba.core import codegen

    setter = codegen.CPUCodeLibrary._set_compiled_object

    def keeping(library, value):
        library._kept_object = value
        setter(library, value)

    codegen.CPUCodeLibrary._set_compiled_object = keeping


def _write_perf_map(kernel) -> str:
    """/tmp/perf-PID.map for every function in the object code of ``kernel``'s overloads
    loaded from the cache (its callees are linked into it), from the object's symbol table (``readelf``): a
    global symbol's address places the section, the others follow by offset."""
    import subprocess
    import tempfile

    lines = []
    for cres in kernel.overloads.values():
        library = cres.library
        if getattr(library, "_kept_object", None) is None:
            continue  # (compiled in this process, not loaded: run again with the cache filled)
        with tempfile.NamedTemporaryFile(suffix=".o") as obj:
            obj.write(library._kept_object)
            obj.flush()
            table = subprocess.run(["readelf", "-sW", obj.name], capture_output=True, text=True, check=True).stdout
        symbols = [(int(f[1], 16), int(f[2]), f[7], f[4], f[6]) for f in map(str.split, table.splitlines())
                   if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND"]
        base = next(((library.get_pointer_to_function(name) - offset, section)
                     for offset, _, name, bind, section in symbols
                     if bind == "GLOBAL" and library.get_pointer_to_function(name)), None)
        if base is None:
            continue
        for offset, size, name, _, section in symbols:
            if section == base[1]:
                lines.append(f"{base[0] + offset:x} {size:x} {name.split('B4v')[0]}")
    path = f"/tmp/perf-{os.getpid()}.map"
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")
    return path


if __name__ == "__main__":
    main()
