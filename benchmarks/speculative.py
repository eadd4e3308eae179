"""Speculative constrained decoding vs plain constrained decoding, SmolLM2-135M on CPU.

The draft is the demo model truncated to its first ``--draft-layers`` transformer layers
(same tokenizer, no extra download). Both runs are greedy, so they must write the same
tokens (checked); the table gives ms per generated token, the draft acceptance rate and
the target forward passes per token.

    .venv/bin/python benchmarks/speculative.py [--draft-layers 6 12] [--draft-tokens 4]
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gramalign as ga  # noqa: E402
from gramalign.integrations.smollm2 import load_smollm2  # noqa: E402
from gramalign.samplers import SamplingOptions, masked_sample, speculative_sample  # noqa: E402

from demo import EVENT_SCHEMA  # noqa: E402

PROMPTS = [("event (demo schema)", "Describe a jazz concert in Paris next Friday as JSON.", "event"),
           ("SQL", "Write an SQL query listing the ten largest cities by population.", "sql")]


def truncated(model, layers: int):
    draft = copy.deepcopy(model)
    draft.model.layers = draft.model.layers[:layers]
    draft.config.num_hidden_layers = layers
    return draft


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draft-layers", type=int, nargs="+", default=[6, 12])
    parser.add_argument("--draft-tokens", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=80)
    args = parser.parse_args()
    torch.set_num_threads(2)
    model, tokenizer = load_smollm2(show_progress=False)
    vocab = ga.vocabulary_for_model(tokenizer, model)
    grammars = {"event": ga.Grammar.from_json_schema(EVENT_SCHEMA), "sql": ga.Grammar.builtin("sql")}
    greedy = SamplingOptions(temperature=0)
    print(f"# {platform.machine()}, python {platform.python_version()}, torch {torch.__version__}, "
          f"SmolLM2-135M-Instruct ({model.config.num_hidden_layers} layers), greedy, k={args.draft_tokens}")
    print("| workload | draft layers | tokens | plain (ms/token) | speculative (ms/token) | speed-up | "
          "acceptance | target passes/token |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, question, grammar_name in PROMPTS:
        compiled = ga.compile(grammars[grammar_name], vocab)
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True,
                                               tokenize=True, return_dict=True)["input_ids"]
        start = time.perf_counter()
        plain = masked_sample(ga.HFLanguageModel(model), compiled, prompt_ids=prompt,
                              max_new_tokens=args.max_new_tokens, options=greedy)[0]
        plain_seconds = time.perf_counter() - start
        count = len(plain.token_ids) + plain.finished
        for layers in args.draft_layers:
            draft = truncated(model, layers)
            start = time.perf_counter()
            result = speculative_sample(ga.HFLanguageModel(model), ga.HFLanguageModel(draft), compiled,
                                        prompt_ids=prompt, num_draft_tokens=args.draft_tokens,
                                        max_new_tokens=args.max_new_tokens, options=greedy)
            seconds = time.perf_counter() - start
            assert result.sample.token_ids == plain.token_ids, "greedy outputs differ"
            print(f"| {label} | {layers} | {count} | {plain_seconds / count * 1e3:.1f} | {seconds / count * 1e3:.1f} | "
                  f"{plain_seconds / seconds:.2f}x | {result.acceptance_rate:.0%} | "
                  f"{result.target_calls / count:.2f} |")


if __name__ == "__main__":
    main()
