"""End-to-end: tokens per second of SmolLM2-135M-Instruct on CPU, unconstrained vs constrained by JSON Schemas.

    .venv/bin/python benchmarks/e2e.py [--repeats 3] [--max-new-tokens 200]

For each schema the constrained run goes first (greedy, ``GrammarLogitsProcessor``), then an
unconstrained run of the same prompt is forced to generate exactly as many tokens
(``min_new_tokens = max_new_tokens = n``), so both runs do the same number of forward passes
over the same prompt length. Reported per schema: tokens, time per token of each run (best of
``--repeats``, warm), the overhead of the constraint in percent, and how much of the
constrained time the processor itself took (matcher update + mask fill + applying the mask).
The schema is compiled before timing (its compile time is reported separately).

A second table runs ``ga.generate`` (greedy, masked sampler) on the same prompts with and
without ``jump_forward=True``: forced text (keys, punctuation) is then written without
sampling and scored in the same forward pass as the next token. Reported: output tokens of
each run, time per output token, forward passes (model calls) and how many tokens were
forced.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import torch

import gramalign as ga
from gramalign.integrations.hf import GrammarLogitsProcessor
from gramalign.integrations.smollm2 import load_smollm2

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from demo import EVENT_SCHEMA  # noqa: E402

SCHEMAS = {
    "event (demo)": (EVENT_SCHEMA, "Describe the Woodstock music festival of 1969 as a JSON object."),
    "person": ({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
                                                   "email": {"type": "string", "format": "email"},
                                                   "languages": {"type": "array", "items": {"type": "string"}}},
                "required": ["name", "age", "email", "languages"]},
               "Give a JSON profile of a software engineer from Lisbon."),
    "tool call": ({"type": "object", "properties": {
        "tool": {"enum": ["search", "calculator", "weather"]},
        "arguments": {"type": "object", "properties": {"query": {"type": "string", "maxLength": 80},
                                                       "units": {"enum": ["metric", "imperial"]}},
                      "required": ["query"], "additionalProperties": False}},
        "required": ["tool", "arguments"], "additionalProperties": False},
        "Which tool call answers: what is the weather in Oslo tomorrow?"),
}


class TimedProcessor(GrammarLogitsProcessor):
    """The plain processor, with the time spent in its calls summed."""

    seconds = 0.0

    def __call__(self, input_ids, scores):
        start = time.perf_counter()
        result = super().__call__(input_ids, scores)
        self.seconds += time.perf_counter() - start
        return result


def run(model, prompt, max_new_tokens: int, processor=None, exact: int | None = None):
    options = {"max_new_tokens": exact or max_new_tokens, "do_sample": False}
    if exact:
        options["min_new_tokens"] = exact
    if processor is not None:
        options["logits_processor"] = [processor]
    start = time.perf_counter()
    output = model.generate(**prompt, **options)
    return output.shape[1] - prompt["input_ids"].shape[1], time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=200)
    args = parser.parse_args()
    torch.manual_seed(0)
    model, tokenizer = load_smollm2(show_progress=False)
    vocab = ga.vocabulary_for_model(tokenizer, model)
    print(f"machine: {platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"SmolLM2-135M-Instruct; greedy; best of {args.repeats}\n")
    print("| schema | compile (ms) | tokens | unconstrained (ms/token) | constrained (ms/token) | overhead | "
          "processor share |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    compiled_schemas = {}
    for name, (schema, question) in SCHEMAS.items():
        start = time.perf_counter()
        compiled = ga.compile(ga.Grammar.from_json_schema(schema), vocab)
        compile_ms = (time.perf_counter() - start) * 1000
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True,
                                               return_tensors="pt", return_dict=True)
        constrained, unconstrained, share = [], [], []
        for _ in range(args.repeats):
            processor = TimedProcessor(compiled)
            tokens, seconds = run(model, prompt, args.max_new_tokens, processor)
            constrained.append(seconds / tokens)
            share.append(processor.seconds / seconds)
            _, free_seconds = run(model, prompt, args.max_new_tokens, exact=tokens)
            unconstrained.append(free_seconds / tokens)
        best_c, best_u = min(constrained), min(unconstrained)
        print(f"| {name} | {compile_ms:.0f} | {tokens} | {best_u * 1000:.1f} | {best_c * 1000:.1f} | "
              f"{(best_c / best_u - 1) * 100:+.1f}% | {min(share) * 100:.1f}% |", flush=True)
        compiled_schemas[name] = (compiled, question)
    print("\nga.generate, greedy, with and without jump-forward:\n")
    print("| schema | jump-forward | tokens | forced tokens | forward passes | ms/token | speed-up |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, (compiled, question) in compiled_schemas.items():
        plain_ms = None
        for jump in (False, True):
            best, out, passes = float("inf"), None, 0
            for _ in range(args.repeats):
                lm = ga.HFLanguageModel(model)
                calls = []
                lm.model.forward = (lambda forward: lambda *a, **k: calls.append(1) or forward(*a, **k))(
                    type(model).forward.__get__(model))
                try:
                    start = time.perf_counter()
                    out = ga.generate(lm, tokenizer, question, grammar=compiled, temperature=0,
                                      max_new_tokens=args.max_new_tokens, jump_forward=jump)
                    seconds = time.perf_counter() - start
                finally:
                    del lm.model.forward
                best, passes = min(best, seconds / (len(out.token_ids) + out.finished)), len(calls)
            plain_ms = plain_ms or best
            print(f"| {name} | {'yes' if jump else 'no'} | {len(out.token_ids)} | {out.forced_tokens} | {passes} | "
                  f"{best * 1000:.1f} | {plain_ms / best:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
