"""Time to first mask, phase by phase, over the MaskBench sample (gramalign only, one process).

    PYTHONPATH=src .venv/bin/python benchmarks/ttfm_phases.py [--sample 3] [--profile out.prof] [--prefault-mib N]

Compiles the sample schemas one after the other in one process (as benchmarks/maskbench.py's
long-lived worker does, so process-wide caches behave alike) and reports, per phase, the
median, p90 and total: schema -> grammar, LALR table, lexer DFA, the rest of the parser
tables and the mask store, the first mask, and everything after the schema front end.
``--profile`` writes a cProfile of the whole loop.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grammar_masks import llama_tokenizer, percentile  # noqa: E402
from json_schema_conformance import sample_paths  # noqa: E402

EOS = 128001
PHASES = ("schema", "lalr", "lexer", "tables", "first mask", "total")


def compile_in_phases(ga, vocab, schema) -> dict:
    from gramalign.grammar import parser_tables as parser_module
    from gramalign.grammar.lalr import build_parse_table
    from gramalign.grammar.lexer import build_lexer
    from gramalign.masking.compiler import token_trie
    from gramalign.masking.cfg import GrammarMaskStore

    times = {}
    t0 = time.perf_counter()
    grammar = ga.Grammar.from_json_schema(schema, strict=False)
    t1 = time.perf_counter()
    times["schema"] = t1 - t0
    # build_parser_tables, with its two big steps timed on their own
    original_table, original_lexer = parser_module.build_parse_table, parser_module.build_lexer
    spent = {"lalr": 0.0, "lexer": 0.0}

    def timed(name, function):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - start
        return wrapper

    parser_module.build_parse_table = timed("lalr", build_parse_table)
    parser_module.build_lexer = timed("lexer", build_lexer)
    try:
        tables = parser_module.build_parser_tables(grammar)
    finally:
        parser_module.build_parse_table, parser_module.build_lexer = original_table, original_lexer
    store = GrammarMaskStore(tables, vocab, token_trie(vocab))
    compiled = ga.masking.compiler.CompiledGrammar(grammar, vocab, store=store)
    t2 = time.perf_counter()
    times.update(spent)
    times["tables"] = (t2 - t1) - spent["lalr"] - spent["lexer"]
    bitmask = np.zeros((1, ga.bitmask_width(vocab.size)), np.int32)
    compiled.matcher().fill_next_token_bitmask(bitmask, 0)
    t3 = time.perf_counter()
    times["first mask"] = t3 - t2
    times["total"] = t3 - t0
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", help="write a cProfile of the compiles here")
    parser.add_argument("--slowest", type=int, default=8, help="list the slowest schemas")
    parser.add_argument("--prefault-mib", type=int, default=0,
                        help="touch and free this much memory first: on a fresh VM the first touch of a page is "
                             "slow (a lexer that copies the 11,049-state date-time automaton pays ~20 ms for it), "
                             "which a long-running server does not see")
    args = parser.parse_args()
    for _ in range(args.prefault_mib // 256):
        touched = np.ones(256 << 20, np.uint8)
        del touched
    import gramalign as ga
    import gramalign.masking.compiler  # noqa: F401

    vocab = ga.Vocabulary.from_tokenizers(llama_tokenizer(), eos_token_ids=[EOS])
    warm = ga.compile(ga.Grammar.from_json_schema({"type": "object"}), vocab).matcher()  # numba, trie
    warm.fill_next_token_bitmask(np.zeros((1, ga.bitmask_width(vocab.size)), np.int32))
    rows, errors = [], 0
    profiler = cProfile.Profile() if args.profile else None
    for path in sample_paths(args.sample, args.seed):
        schema = json.loads(path.read_text())["schema"]
        if profiler:
            profiler.enable()
        try:
            rows.append((path.stem, compile_in_phases(ga, vocab, schema)))
        except Exception:  # noqa: BLE001 - refusals are not timed, as in maskbench.py
            errors += 1
        finally:
            if profiler:
                profiler.disable()
    if profiler:
        profiler.dump_stats(args.profile)
    print(f"{len(rows)} schemas compiled, {errors} refused")
    print("| phase | p50 (ms) | p90 (ms) | mean (ms) | share of total |")
    print("|---|---:|---:|---:|---:|")
    grand = sum(times["total"] for _, times in rows)
    for phase in PHASES + ("after the schema",):
        values = [(times["total"] - times["schema"] if phase == "after the schema" else times[phase]) * 1000
                  for _, times in rows]
        print(f"| {phase} | {statistics.median(values):.1f} | {percentile(values, 90):.1f} | "
              f"{statistics.fmean(values):.1f} | {sum(values) / 1000 / grand:.0%} |")
    print("\nslowest:")
    for name, times in sorted(rows, key=lambda r: -r[1]["total"])[:args.slowest]:
        print(f"  {name}: " + ", ".join(f"{p} {times[p] * 1000:.0f} ms" for p in PHASES))


if __name__ == "__main__":
    main()
