"""Serving side by side in vLLM: gramalign's logits processor vs vLLM's own structured-output
backends (XGrammar, llguidance) on the same JSON-Schema requests, one run.

    .venv-vllm/bin/python benchmarks/vllm_serving.py --model .cache/smollm2-hf [--requests 16] [--max-tokens 128]

(after ``make .venv-vllm/.gramalign .cache/smollm2-hf/config.json``; see docs/benchmarks.md.)

vLLM's offline engine (``LLMEngine``, the engine under ``vllm.LLM``), one engine per backend, built
one after the other in this process with the same settings; only how the requests are constrained
differs: ``none`` (unconstrained, the ceiling), ``gramalign`` (``extra_args={"gramalign": ...}``,
through the processor's entry point), ``xgrammar`` and ``guidance`` (llguidance) as the engine's
``structured_outputs_config`` backend with ``StructuredOutputsParams(json=schema)``. Each backend
keeps its own defaults (whitespace, additional properties). Greedy decoding.

Requests: one JSON Schema per request, the first schema of each family of JSONSchemaBench's
maskbench data (../shared/data, GRAMALIGN_DATA_DIR) that is an object schema of at most
``--max-schema-chars``, cycled if there are more requests than families; the prompt shows the
schema. All requests are added at once and the engine is stepped until every one is done. Before
the timed rounds one small unrelated request warms the engine and backend up (kernels, vocabulary);
round 1 then meets every schema for the first time (compiles included), round 2 repeats the same
requests (caches warm).

Reported per backend and round: requests/s and output tokens/s over the round's wall time, time to
first token (from the moment the round starts adding requests; p50 and max), time per output token
after the first (median over requests: the engine's step time as each request saw it, which unlike
tokens/s does not drop when other rows finish early), requests refused at
admission, outputs that finished (EOS) within the token budget, outputs valid against their schema
(jsonschema, formats checked where jsonschema has a checker), and both.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("GRAMALIGN_DATA_DIR", ROOT.parent / "shared" / "data"))
BACKENDS = ("none", "gramalign", "xgrammar", "guidance")
WARM_UP_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                  "additionalProperties": False}


@dataclass
class Request:
    family: str
    schema: dict
    prompt: str


@dataclass
class Result:
    refused: str = ""
    first_token: float | None = None
    end: float | None = None
    tokens: int = 0
    finished: bool = False
    valid: bool = False
    text: str = ""


@dataclass
class Round:
    backend: str
    number: int
    seconds: float
    results: list[Result] = field(default_factory=list)


def maskbench_requests(count: int, max_chars: int) -> list[Request]:
    """The first small object schema of every maskbench family, cycled to ``count`` requests."""
    firsts: dict[str, dict] = {}
    for path in sorted((DATA / "jsonschemabench" / "maskbench" / "data").glob("*.json")):
        family = path.stem.rsplit("_", 1)[0].split("---")[0]
        if family in firsts:
            continue
        schema = json.loads(path.read_text())["schema"]
        text = json.dumps(schema)
        if len(text) <= max_chars and isinstance(schema, dict) and schema.get("type") == "object":
            firsts[family] = schema
    if not firsts:
        raise SystemExit(f"no maskbench schemas under {DATA} (set GRAMALIGN_DATA_DIR)")
    families = sorted(firsts)
    requests = []
    for k in range(count):
        family = families[k % len(families)]
        schema = firsts[family]
        prompt = ("Reply with one JSON object that is valid under this JSON Schema, and nothing else.\n"
                  f"Schema: {json.dumps(schema)}")
        requests.append(Request(family, schema, prompt))
    return requests


def is_valid(text: str, schema: dict) -> bool:
    import jsonschema

    try:
        instance = json.loads(text)
    except ValueError:
        return False
    validator = jsonschema.validators.validator_for(schema)
    return validator(schema, format_checker=validator.FORMAT_CHECKER).is_valid(instance)


def sampling_params(backend: str, schema: dict | None, max_tokens: int):
    from vllm import SamplingParams
    from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams

    extra = {}
    if schema is not None and backend == "gramalign":
        extra = {"extra_args": {"gramalign": {"json_schema": schema}}}
    elif schema is not None and backend != "none":
        extra = {"structured_outputs": StructuredOutputsParams(json=schema)}
    return SamplingParams(temperature=0, max_tokens=max_tokens, output_kind=RequestOutputKind.CUMULATIVE, **extra)


def run_round(engine, backend: str, number: int, prompts: list[str], requests: list[Request],
              max_tokens: int) -> Round:
    from vllm.exceptions import VLLMValidationError

    results = [Result() for _ in requests]
    prefix = f"{backend}-{number}-"
    start = time.perf_counter()
    for k, (prompt, request) in enumerate(zip(prompts, requests)):
        try:
            engine.add_request(prefix + str(k), prompt, sampling_params(backend, request.schema, max_tokens))
        except (ValueError, VLLMValidationError) as error:  # a request the backend refuses
            results[k].refused = f"{type(error).__name__}: {error}"[:200]
    while engine.has_unfinished_requests():
        for output in engine.step():
            now = time.perf_counter()
            index = int(output.request_id[len(prefix):])
            result = results[index]
            completion = output.outputs[0]
            if result.first_token is None and completion.token_ids:
                result.first_token = now - start
            if output.finished:
                result.end = now - start
                result.tokens = len(completion.token_ids)
                result.finished = completion.finish_reason == "stop"
                result.text = completion.text
                result.valid = is_valid(completion.text, requests[index].schema)
    seconds = max((r.end for r in results if r.end is not None), default=time.perf_counter() - start)
    return Round(backend, number, seconds, results)


def run_backend(backend: str, args, requests: list[Request]) -> list[Round]:
    from transformers import AutoTokenizer
    from vllm import LLM

    tokenizer = AutoTokenizer.from_pretrained(args.model)

    def chat(text: str) -> str:
        return tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                             add_generation_prompt=True)

    options = {"structured_outputs_config": {"backend": backend}} if backend in ("xgrammar", "guidance") else {}
    started = time.perf_counter()
    llm = LLM(model=args.model, dtype="bfloat16", max_model_len=args.max_model_len, max_num_seqs=args.max_num_seqs,
              seed=0, enforce_eager=True, disable_log_stats=True, **options)
    print(f"[{backend}] engine up in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    try:
        engine = llm.llm_engine
        warm_up = Request("warm-up", WARM_UP_SCHEMA, "Is the sky blue? Answer as JSON with the key ok.")
        started = time.perf_counter()
        run_round(engine, backend, 0, [chat(warm_up.prompt)], [warm_up], 16)
        print(f"[{backend}] warm-up request {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        prompts = [chat(r.prompt) for r in requests]
        rounds = []
        for number in range(1, args.rounds + 1):
            result = run_round(engine, backend, number, prompts, requests, args.max_tokens)
            print(f"[{backend}] round {number}: {result.seconds:.1f} s", file=sys.stderr, flush=True)
            rounds.append(result)
        return rounds
    finally:
        llm.llm_engine.engine_core.shutdown()
        del llm
        gc.collect()


def row(round_: Round) -> str:
    results = round_.results
    n = len(results)
    served = [r for r in results if not r.refused]
    tokens = sum(r.tokens for r in served)
    ttft = [r.first_token for r in served if r.first_token is not None]
    p50 = f"{statistics.median(ttft):.2f}" if ttft else "-"
    worst = f"{max(ttft):.2f}" if ttft else "-"
    per_token = [(r.end - r.first_token) / (r.tokens - 1) * 1000 for r in served
                 if r.first_token is not None and r.tokens > 1]
    tpot = f"{statistics.median(per_token):.0f}" if per_token else "-"
    finished = sum(r.finished for r in served)
    valid = sum(r.valid for r in served)
    both = sum(r.valid and r.finished for r in served)
    return (f"| {round_.backend} | {round_.number} | {len(served) / round_.seconds:.2f} | {tokens / round_.seconds:.1f} | "
            f"{p50} | {worst} | {tpot} | {n - len(served)} | {finished}/{n} | {valid}/{n} | {both}/{n} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(ROOT / ".cache" / "smollm2-hf"), help="a Hugging Face model folder")
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=128, help="token budget of each request")
    parser.add_argument("--rounds", type=int, default=2, help="1: schemas met for the first time only")
    parser.add_argument("--backends", default=",".join(BACKENDS), help=f"comma-separated, of {', '.join(BACKENDS)}")
    parser.add_argument("--max-schema-chars", type=int, default=1200)
    parser.add_argument("--max-num-seqs", type=int, default=16, help="vLLM's batch size")
    parser.add_argument("--max-model-len", type=int, default=2048)
    parser.add_argument("--show", action="store_true", help="print every output")
    args = parser.parse_args()
    backends = args.backends.split(",")
    unknown = set(backends) - set(BACKENDS)
    if unknown:
        parser.error(f"unknown backends {sorted(unknown)}")

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    import torch
    import vllm

    requests = maskbench_requests(args.requests, args.max_schema_chars)
    rounds = []
    for backend in backends:
        rounds.extend(run_backend(backend, args, requests))

    print(f"vLLM {vllm.__version__}, torch {torch.__version__}, {platform.processor() or platform.machine()}, "
          f"CPU affinity {sorted(os.sched_getaffinity(0))}, Python {platform.python_version()}")
    print(f"model {args.model}; {len(requests)} requests over {len(set(r.family for r in requests))} maskbench "
          f"schemas ({', '.join(sorted(set(r.family for r in requests)))}); max_tokens {args.max_tokens}, greedy, "
          f"max_num_seqs {args.max_num_seqs}")
    print()
    print("| backend | round | requests/s | tokens/s | TTFT p50 (s) | TTFT max (s) | ms/token p50 | refused | finished | "
          "valid | valid and finished |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for round_ in rounds:
        print(row(round_))
    for round_ in rounds:
        for request, result in zip(requests, round_.results):
            if result.refused or args.show:
                detail = result.refused or f"{'valid' if result.valid else 'INVALID'}, " \
                                           f"{'stop' if result.finished else 'budget'}: {result.text!r}"
                print(f"{round_.backend} round {round_.number} {request.family}: {detail}")


if __name__ == "__main__":  # vLLM starts its engine in spawned processes, which import this file
    main()
