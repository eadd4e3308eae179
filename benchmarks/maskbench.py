"""MaskBench-style JSON Schema benchmark: gramalign vs XGrammar, llguidance and outlines-core, one run.

    .venv/bin/python benchmarks/maskbench.py [--sample N] [--timeout S] [--engines a,b]

For a stratified sample of JSONSchemaBench's MaskBench schemas (``--sample`` per dataset, the
dataset being the name before ``---``), every engine, with the Llama-3.2 tokenizer:

- compiles the schema and fills the first mask: time to first mask (TTFM);
- walks every test instance (compact serialization, tokenized by Llama-3.2) token by token,
  filling a full-vocabulary bitmask before each token: time between masks (TBM); a token the
  engine refuses ends the walk, and the instance counts as accepted when every token was
  taken and the engine then allows the end;
- compares that verdict with the test's ``valid`` flag.

Each engine runs in its own long-lived worker process (so per-process caches behave as in a
server that compiles one schema after another), one engine after the other, never two at a
time; a schema that takes longer than ``--timeout`` seconds kills the worker (a timeout), and a
fresh one carries on. Memory: resident-set growth of the worker across one schema (compile and
walk), and the largest growth over the sample.

Engine options, as close to the JSON Schema spec as each allows: gramalign defaults (schema
key order, compact); XGrammar ``strict_mode=False`` (additionalProperties default true),
compact separators; llguidance compact separators; outlines-core ``build_regex_from_schema``
with no whitespace. Every engine writes keys in schema order, so instances whose keys are in
another order are "valid rejected" for all of them alike.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grammar_masks import llama_tokenizer, percentile  # noqa: E402
from json_schema_conformance import sample_paths  # noqa: E402

EOS = 128001


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Engine:
    """What the walk needs from an engine; subclasses adapt one library each."""

    name = ""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def compile(self, schema: dict):
        raise NotImplementedError

    def matcher(self, compiled):
        raise NotImplementedError

    def fill(self, matcher, bitmask: np.ndarray) -> None:
        raise NotImplementedError

    def accept(self, matcher, token: int, bitmask: np.ndarray) -> bool:
        raise NotImplementedError

    def can_end(self, matcher) -> bool:
        raise NotImplementedError


class Gramalign(Engine):
    name = "gramalign"

    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        import gramalign as ga

        self.ga = ga
        self.vocab = ga.Vocabulary.from_tokenizers(tokenizer, eos_token_ids=[EOS])
        # Load the trie and every numba kernel a walk uses (from numba's disk cache) once per
        # process, as a server would at start: a walk fills and accepts.
        warm = ga.compile(ga.Grammar.from_json_schema({"type": "object"}), self.vocab).matcher()
        bitmask = np.zeros((1, ga.bitmask_width(self.vocab.size)), np.int32)
        for token in tokenizer.encode('{"a":"b c","n":[1,2.5e3,true,null],"o":{}}',
                                      add_special_tokens=False).ids:
            warm.fill_next_token_bitmask(bitmask)
            warm.accept_token(token)

    def compile(self, schema):
        return self.ga.compile(self.ga.Grammar.from_json_schema(schema), self.vocab)

    def matcher(self, compiled):
        return compiled.matcher()

    def fill(self, matcher, bitmask):
        matcher.fill_next_token_bitmask(bitmask, 0)

    def accept(self, matcher, token, bitmask):
        return matcher.try_accept_token(token)

    def can_end(self, matcher):
        return matcher.can_terminate()


class LLGuidance(Engine):
    name = "llguidance"

    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        import llguidance
        import llguidance.hf
        import llguidance.numpy
        from transformers import PreTrainedTokenizerFast

        self.llg = llguidance
        self.fill_bitmask = llguidance.numpy.fill_next_token_bitmask
        fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|end_of_text|>")
        self.llg_tokenizer = llguidance.hf.from_tokenizer(fast)

    def compile(self, schema):
        grammar = self.llg.LLMatcher.grammar_from_json_schema(
            schema, defaults={"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"})
        probe = self.llg.LLMatcher(self.llg_tokenizer, grammar)
        if probe.is_error():
            raise RuntimeError(probe.get_error())
        return grammar

    def matcher(self, compiled):
        return self.llg.LLMatcher(self.llg_tokenizer, compiled)

    def fill(self, matcher, bitmask):
        self.fill_bitmask(matcher, bitmask, 0)

    def accept(self, matcher, token, bitmask):
        return matcher.consume_token(token) and not matcher.is_error()

    def can_end(self, matcher):
        return matcher.is_accepting()


class XGrammar(Engine):
    name = "XGrammar"

    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        import torch
        import xgrammar as xgr
        from transformers import PreTrainedTokenizerFast

        self.xgr, self.torch = xgr, torch
        fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|end_of_text|>")
        info = xgr.TokenizerInfo.from_huggingface(fast, vocab_size=tokenizer.get_vocab_size())
        self.compiler = xgr.GrammarCompiler(info, cache_enabled=False)  # a new schema per request

    def compile(self, schema):
        return self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=False, separators=(",", ":"),
                                                 strict_mode=False)

    def matcher(self, compiled):
        return self.xgr.GrammarMatcher(compiled)

    def fill(self, matcher, bitmask):
        matcher.fill_next_token_bitmask(self.torch.from_numpy(bitmask), 0)

    def accept(self, matcher, token, bitmask):
        return matcher.accept_token(token)

    def can_end(self, matcher):
        return matcher.accept_token(EOS)


class OutlinesCore(Engine):
    name = "outlines-core"

    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        import gramalign as ga
        import outlines_core
        from outlines_core.json_schema import build_regex_from_schema
        from regex_index import outlines_vocabulary

        self.oc, self.to_regex = outlines_core, build_regex_from_schema
        self.vocabulary = outlines_vocabulary(ga.Vocabulary.from_tokenizers(tokenizer, eos_token_ids=[EOS]))

    def compile(self, schema):
        return self.oc.Index(self.to_regex(json.dumps(schema), whitespace_pattern=""), self.vocabulary)

    def matcher(self, compiled):
        return self.oc.Guide(compiled)

    def fill(self, matcher, bitmask):
        matcher.write_mask_into(bitmask.ctypes.data, bitmask.size, 4)

    def accept(self, matcher, token, bitmask):
        if not (int(bitmask[0, token >> 5]) >> (token & 31)) & 1:  # the mask just filled forbids it
            return False
        matcher.advance(token)
        return True

    def can_end(self, matcher):
        return matcher.is_finished()


ENGINES = {cls.name: cls for cls in (Gramalign, XGrammar, LLGuidance, OutlinesCore)}


def run_schema(engine: Engine, document: dict, walks: list[tuple[list[int], bool]]) -> dict:
    """Compile, first mask, then every walk; times in microseconds."""
    before = _rss_bytes()
    width = (engine.tokenizer.get_vocab_size() + 31) // 32
    bitmask = np.zeros((1, width), dtype=np.int32)
    started = time.perf_counter()
    try:
        compiled = engine.compile(document["schema"])
        engine.fill(engine.matcher(compiled), bitmask)
    except Exception as exc:  # noqa: BLE001 - any refusal is a compile error of that engine
        return {"status": "compile_error", "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"}
    ttfm = (time.perf_counter() - started) * 1e6
    masks, valid_rejected, invalid_accepted = [], 0, 0
    for ids, valid in walks:
        matcher = engine.matcher(compiled)
        accepted = True
        for token in ids:
            t0 = time.perf_counter_ns()
            engine.fill(matcher, bitmask)
            masks.append((time.perf_counter_ns() - t0) / 1000)
            if not engine.accept(matcher, token, bitmask):
                accepted = False
                break
        if accepted:
            t0 = time.perf_counter_ns()
            engine.fill(matcher, bitmask)
            masks.append((time.perf_counter_ns() - t0) / 1000)
            accepted = engine.can_end(matcher)
        valid_rejected += valid and not accepted
        invalid_accepted += accepted and not valid
    return {"status": "ok", "ttfm": ttfm, "masks": masks, "valid_rejected": valid_rejected,
            "invalid_accepted": invalid_accepted, "memory": max(0, _rss_bytes() - before)}


def _serve(name: str, connection) -> None:
    engine = ENGINES[name](llama_tokenizer())
    connection.send("ready")
    while True:
        task = connection.recv()
        if task is None:
            return
        connection.send(run_schema(engine, *task))


class Worker:
    """One engine in a child process; restarted after a timeout."""

    def __init__(self, name: str):
        self.name = name
        self.process = None
        self.connection = None

    def _start(self) -> None:
        context = mp.get_context("spawn")  # a clean interpreter: no state shared with the parent
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(self.name, child), daemon=True)
        self.process.start()
        if not self.connection.poll(600) or self.connection.recv() != "ready":
            raise RuntimeError(f"{self.name} did not start")

    def run(self, document: dict, walks, timeout: float) -> dict:
        if self.process is None:
            self._start()
        self.connection.send((document, walks))
        if self.connection.poll(timeout):
            try:
                return self.connection.recv()
            except EOFError:
                result = {"status": "crash"}
        else:
            result = {"status": "timeout"}
        self.process.kill()
        self.process.join()
        self.process = None
        return result

    def close(self) -> None:
        if self.process is not None:
            self.connection.send(None)
            self.process.join(10)


def summarize(results: list[dict]) -> dict:
    counts = collections.Counter(r["status"] for r in results)
    done = [r for r in results if r["status"] == "ok"]
    ttfm = [r["ttfm"] / 1000 for r in done]
    masks = [m for r in done for m in r["masks"]]
    return {
        "schemas": len(results), "compile errors": counts["compile_error"], "timeouts": counts["timeout"],
        "crashes": counts["crash"],
        "all tests pass": sum(r["valid_rejected"] == 0 and r["invalid_accepted"] == 0 for r in done),
        "valid rejected": sum(r["valid_rejected"] for r in done),
        "invalid accepted": sum(r["invalid_accepted"] for r in done),
        "TTFM p50 (ms)": statistics.median(ttfm) if ttfm else float("nan"),
        "TTFM p90 (ms)": percentile(ttfm, 90), "TTFM mean (ms)": statistics.fmean(ttfm) if ttfm else float("nan"),
        "TBM p50 (µs)": statistics.median(masks) if masks else float("nan"),
        "TBM p99 (µs)": percentile(masks, 99), "TBM max (µs)": max(masks, default=float("nan")),
        "masks": len(masks),
        "max memory (MiB)": max((r["memory"] for r in done), default=0) / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=10, help="schemas per dataset (0: all)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per schema and engine")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated, from " + ", ".join(ENGINES))
    parser.add_argument("--errors", help="write every compile error, timeout and disagreement to this file")
    args = parser.parse_args()

    tokenizer = llama_tokenizer()
    paths = sample_paths(args.sample, args.seed)
    documents, walks = [], []
    for path in paths:
        document = json.loads(path.read_text())
        documents.append(document)
        walks.append([(tokenizer.encode(json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False),
                                        add_special_tokens=False).ids, bool(t["valid"]))
                      for t in document["tests"]])
    by_lower = {name.lower(): name for name in ENGINES}
    names = [by_lower.get(n.strip().lower(), n.strip()) for n in args.engines.split(",") if n.strip()]
    unknown = [n for n in names if n not in ENGINES]
    if unknown:
        parser.error(f"unknown engine(s) {', '.join(unknown)}; choose from {', '.join(ENGINES)}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
          f"python {platform.python_version()}; tokenizer Llama-3.2 ({tokenizer.get_vocab_size()} ids)")
    print(f"sample: {len(paths)} schemas ({args.sample or 'all'} per dataset, seed {args.seed}), "
          f"{sum(map(len, walks))} instances, {sum(len(ids) for w in walks for ids, _ in w)} tokens; "
          f"timeout {args.timeout:.0f} s\n", flush=True)
    summaries, errors = {}, []
    for name in names:
        worker = Worker(name)
        results = []
        started = time.time()
        for path, document, walk in zip(paths, documents, walks):
            result = worker.run(document, walk, args.timeout)
            results.append(result)
            if result["status"] != "ok" or result["valid_rejected"] or result["invalid_accepted"]:
                errors.append(f"{name}\t{path.name}\t{result.get('error') or result['status']}\t"
                              f"valid rejected {result.get('valid_rejected', '-')}\t"
                              f"invalid accepted {result.get('invalid_accepted', '-')}")
        worker.close()
        summaries[name] = summarize(results)
        print(f"{name}: {time.time() - started:.0f} s", file=sys.stderr, flush=True)
    columns = list(next(iter(summaries.values())))
    print("| engine | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for name, summary in summaries.items():
        print(f"| {name} | " + " | ".join(_cell(summary[c]) for c in columns) + " |")
    if "gramalign" in summaries and len(summaries) > 1:
        ratios = ["TTFM p50 (ms)", "TTFM mean (ms)", "TBM p50 (µs)", "TBM p99 (µs)", "TBM max (µs)"]
        print("\nRatios gramalign / other (below 1: gramalign is faster)\n")
        print("| other | " + " | ".join(ratios) + " |")
        print("|---|" + "---:|" * len(ratios))
        for name, summary in summaries.items():
            if name != "gramalign":
                print(f"| {name} | " + " | ".join(f"{summaries['gramalign'][c] / summary[c]:.2f}" for c in ratios)
                      + " |")
    if args.errors:
        Path(args.errors).write_text("\n".join(errors) + "\n")


def _cell(value) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    main()
