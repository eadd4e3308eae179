"""Sampler benchmarks: AWRS constraint checks per token against vocabulary size (toy model),
and wall time per token of masked vs. AWRS sampling with SmolLM2-135M (JSON schema, SQL).

Run: HF_HUB_OFFLINE=1 PYTHONPATH=src python benchmarks/samplers.py
"""

from __future__ import annotations

import time

import numpy as np

import gramalign as ga
from gramalign.samplers import TableModel, awrs_sample

ALPHABET = list(b"abcdefghijklmnopqrstuvwxyz0123456789 ,.")


def checks_table() -> None:
    print("AWRS constraint checks per token (random vocabulary, grammar [a-z ]+, Zipf-shaped random model)")
    print(f"{'vocab':>7} {'tokens':>7} {'checks/token':>13} {'max checks':>11}")
    for size in [256, 1024, 4096, 16384, 65536]:
        rng = np.random.default_rng(size)
        tokens = {bytes([c]) for c in ALPHABET}
        while len(tokens) < size - 1:
            tokens.add(bytes(rng.choice(ALPHABET, size=rng.integers(2, 6)).astype(np.uint8)))
        vocab = ga.Vocabulary.from_token_bytes(sorted(tokens) + [b"</s>"], eos_token_ids=[size - 1])
        compiled = ga.compile(ga.Grammar.from_regex(r"[a-z ]+"), vocab)
        ranks = np.arange(1, size + 1, dtype=float)

        def distribution(prefix, ranks=ranks, size=size):
            order = np.random.default_rng(hash(prefix) % 2**32).permutation(size)
            return 1.0 / ranks[order] ** 1.1  # Zipf over a per-prefix random order of the tokens

        model = TableModel(size, distribution)
        total_tokens = total_checks = peak = 0
        for seed in range(20):
            sample = awrs_sample(model, compiled, max_new_tokens=20, rng=seed)
            steps = len(sample.token_ids) + int(sample.finished)
            total_tokens += steps
            total_checks += sample.constraint_checks
            peak = max(peak, sample.constraint_checks / max(steps, 1))
        print(f"{size:>7} {total_tokens:>7} {total_checks / total_tokens:>13.2f} {peak:>11.2f}")


def timing_table() -> None:
    from gramalign.integrations.smollm2 import load_smollm2

    model, tokenizer = load_smollm2(show_progress=False)
    vocab = ga.vocabulary_for_model(tokenizer, model)
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    cases = [("JSON schema", ga.Grammar.from_json_schema(schema), "Describe a person as JSON with name and age."),
             ("SQL", ga.Grammar.builtin("sql"), "Write an SQL query selecting all users older than 30.")]
    print("\nSmolLM2-135M, ms per generated token (batch 1, CPU), 3 seeds x up to 48 tokens")
    print(f"{'grammar':<12} {'sampler':<7} {'tokens':>7} {'ms/token':>9} {'checks/token':>13}")
    for name, grammar, prompt in cases:
        compiled = ga.compile(grammar, vocab)
        ga.generate(model, tokenizer, prompt, grammar=compiled, max_new_tokens=4, seed=0)  # warm-up
        for sampler in ["masked", "awrs"]:
            tokens = checks = 0
            start = time.perf_counter()
            for seed in range(3):
                out = ga.generate(model, tokenizer, prompt, grammar=compiled, sampler=sampler, max_new_tokens=48,
                                  seed=seed)
                tokens += len(out.token_ids) + int(out.finished)
                checks += out.constraint_checks
            ms = 1000 * (time.perf_counter() - start) / tokens
            per = f"{checks / tokens:.2f}" if sampler == "awrs" else "-"
            print(f"{name:<12} {sampler:<7} {tokens:>7} {ms:>9.1f} {per:>13}")


if __name__ == "__main__":
    checks_table()
    timing_table()
