"""Batch mask fill time: BatchMatcher over B sequences at once, serial vs a thread pool.

Each of the B rows walks a different real JSON document (valid MaskBench instances,
Llama-3.2 tokens) under the shipped JSON grammar; before every step the whole batch's
bitmask is filled. Two passes over the same documents: the first meets lexical contexts
for the first time (cold), the second reads the caches (warm). Prints one table row per
(batch size, threads): time per batch fill (p50, p99) and the mean time per row filled.

    .venv/bin/python benchmarks/batch_masks.py [--sizes 1 8 64] [--threads 1 2]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

import gramalign as ga

from grammar_masks import json_documents, llama_tokenizer, percentile


def walk_batch(compiled: ga.CompiledGrammar, token_lists: list[list[int]], threads: int) -> tuple[list[float], int]:
    """(seconds of every batch fill, rows filled in all)"""
    batch = ga.BatchMatcher(compiled, len(token_lists), num_threads=threads)
    bitmask = ga.allocate_token_bitmask_numpy(len(token_lists), compiled.vocabulary.size)
    times, rows_filled = [], 0
    for step in range(max(len(t) for t in token_lists)):
        rows = [i for i, tokens in enumerate(token_lists) if step < len(tokens)]
        tick = time.perf_counter()
        batch.fill_next_token_bitmask(bitmask, indices=rows)
        times.append(time.perf_counter() - tick)
        rows_filled += len(rows)
        accepted = batch.accept_tokens([token_lists[i][step] for i in rows], indices=rows)
        assert all(accepted), "a valid document was rejected"
    batch.close()
    return times, rows_filled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--max-tokens", type=int, default=120, help="tokens walked per document")
    args = parser.parse_args()
    tokenizer = llama_tokenizer()
    vocab = ga.Vocabulary.from_tokenizers(tokenizer, eos_token_ids=[128001])
    documents = json_documents(max(args.sizes))
    token_lists = [tokenizer.encode(doc, add_special_tokens=False).ids[:args.max_tokens] for doc in documents]
    print(f"# {platform.processor() or platform.machine()}, python {platform.python_version()}, "
          f"Llama-3.2 ({vocab.size} ids), JSON grammar, {len(documents)} documents")
    print("| batch | threads | pass | fills | batch fill p50 (µs) | batch fill p99 (µs) | mean per row (µs) |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for size in args.sizes:
        for threads in args.threads:
            compiled = ga.compile(ga.Grammar.builtin("json"), vocab, cache=False)  # fresh: no masks yet
            for label in ("cold", "warm"):
                seconds, rows_filled = walk_batch(compiled, token_lists[:size], threads)
                times = [t * 1e6 for t in seconds]
                print(f"| {size} | {threads} | {label} | {len(times)} | {percentile(times, 50):.1f} | "
                      f"{percentile(times, 99):.1f} | {sum(times) / rows_filled:.1f} |")


if __name__ == "__main__":
    main()
