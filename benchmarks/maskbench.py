"""MaskBench-style JSON Schema benchmark: gramalign vs XGrammar, llguidance and outlines-core, one run.

    PYTHONPATH=src .venv/bin/python benchmarks/maskbench.py [--sample N] [--fresh K] [--timeout S] [--engines a,b]

For tail figures use ``--sample 20`` (413 schemas: 20 from each dataset, all 13 of BFCL_sql):
a p99.9 or a worst-10 table from the default sample's ~200 schemas says little.

For a stratified sample of JSONSchemaBench's MaskBench schemas (``--sample`` per dataset, the
dataset being the name before ``---``), every engine, with the Llama-3.2 tokenizer:

- compiles the schema and fills the first mask: time to first mask (TTFM);
- walks every test instance (compact serialization, tokenized by Llama-3.2) token by token,
  filling a full-vocabulary bitmask before each token: time between masks (TBM); a token the
  engine refuses ends the walk, and the instance counts as accepted when every token was
  taken and the engine then allows the end;
- compares that verdict with the test's ``valid`` flag.

Fresh instances (``--fresh K``, default 2; 0 for none): MaskBench's instances revisit few
parser states, while a model writes new values. Before the engines run, a worker of its own
makes up to K instances per schema by a seeded random walk of gramalign's mask (see
benchmarks/fresh_walks.py: word-like strings, a growing pull towards closing, at most 300
tokens, unfinished walks dropped) and validates each with jsonschema; the valid ones join the
schema's instances as valid tests, as token ids, so every engine walks exactly the same
sequences. A finished walk jsonschema rejects is a gramalign bug: counted ("fresh invalid")
and listed. No fresh instances for a schema gramalign cannot compile. Deterministic for a
given ``--seed``; the walks' own time is not measured.

Reported per engine: compile refusals (split by message into size/limits and other, plus
gramalign exceptions that are no GramalignError; all listed), timeouts, crashes and verdicts;
TTFM p50, p90, mean and max; TBM p50, p90, p99, p99.9 and max (and p50, p99 and max on test
instances and on fresh ones apart), the number of masks above 20 ms,
and how many masks the kernel preempted (an involuntary context switch of the worker's thread
during the fill: on a busy machine those make the tail); memory: the worker's peak resident set
while it handles one schema (VmHWM, reset before each schema through /proc/self/clear_refs), its
maximum over schemas and the number of schemas whose peak passes 1 GiB, and the largest
resident-set growth across one schema; the ratios gramalign / other; the 10 worst schemas by
worst mask.

Each engine runs in its own long-lived worker process (so per-process caches behave as in a
server that compiles one schema after another), one engine after the other, never two at a
time; a schema that takes longer than ``--timeout`` seconds kills the worker (a timeout), and a
fresh one carries on.

Engine options, as close to the JSON Schema spec as each allows: gramalign defaults (schema
key order, compact); XGrammar ``strict_mode=False`` (additionalProperties default true),
compact separators; llguidance compact separators; outlines-core ``build_regex_from_schema``
with no whitespace. Every engine writes keys in schema order, so instances whose keys are in
another order are "valid rejected" for all of them alike.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import gc
import json
import multiprocessing as mp
import os
import platform
import re
import resource
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fresh_walks  # noqa: E402
from grammar_masks import LLAMA_EOS as EOS  # noqa: E402
from grammar_masks import llama_tokenizer, percentile  # noqa: E402
from json_schema_conformance import sample_paths  # noqa: E402

# What a worker walks once at start so no kernel loads, lazy import or first-use cost lands in a
# timed mask: strings with a space, numbers, literals, nested containers
WARM_UP_INSTANCE = '{"a":"b c","n":[1,2.5e3,true,null],"o":{}}'
SLOW_MASK_MS = 20.0
LARGE_PEAK = 1 << 30

# Refusals for size or limits, by message: gramalign's state, MiB, nesting and count limits, and
# the like from the other engines (fuel, too complex); anything else is an "other" refusal.
SIZE_REFUSAL = re.compile(r"too (large|big|many|deep|complex|long)|more than|\bstates?\b|[KMG]iB|limit|exceed|"
                          r"budget|fuel|memory|above \d", re.IGNORECASE)


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak_rss() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := current RSS, so the next reading is this schema's peak


def _peak_rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def header_lines(tokenizer, argv: list[str]) -> list[str]:
    """Machine, date and command lines that start every report."""
    return [f"machine: {platform.machine()}, {os.cpu_count()} cores (affinity {sorted(os.sched_getaffinity(0))}), "
            f"{platform.system()} {platform.release()}, python {platform.python_version()}; "
            f"tokenizer Llama-3.2 ({tokenizer.get_vocab_size()} ids)",
            f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
            f"command: {' '.join(shlex.quote(a) for a in argv)}"]


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
    """gramalign as ``compile`` builds a JSON Schema: rules, LR(0) states and lexer starts
    built where the matchers go."""

    name = "gramalign"

    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        import gramalign as ga

        self.ga = ga
        self.vocab = ga.Vocabulary.from_tokenizers(tokenizer, eos_token_ids=[EOS])
        # Load the trie and every numba kernel a compile and a walk use (from numba's disk
        # cache) once per process, as a server does at start; then freeze what is alive, as
        # docs/serving.md asks of a long-lived process (numba's own objects, ~100k, made each
        # generation-2 collection of this worker 50-180 ms, half of them inside a mask).
        ga.warm_up(self.vocab)
        ga.freeze_gc()

    def compile(self, schema):
        return self.ga.compile(self.ga.Grammar.from_json_schema(schema, strict=False), self.vocab)

    def matcher(self, compiled):
        return compiled.matcher()

    def fill(self, matcher, bitmask):
        matcher.fill_next_token_bitmask(bitmask, 0)

    def accept(self, matcher, token, bitmask):
        return matcher.try_accept_token(token)

    def can_end(self, matcher):
        return matcher.can_terminate()


class GramalignEager(Gramalign):
    """gramalign with every rule, the whole LALR(1) table and the whole lexer built before the
    first mask (``compile(..., eager=True)``; what ``compile`` did for JSON Schemas before
    issue 35)."""

    name = "gramalign-eager"

    def compile(self, schema):
        return self.ga.compile(self.ga.Grammar.from_json_schema(schema, strict=False), self.vocab, eager=True)


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


ENGINES = {cls.name: cls for cls in (Gramalign, GramalignEager, XGrammar, LLGuidance, OutlinesCore)}


def run_schema(engine: Engine, document: dict, walks: list[tuple[list[int], bool]]) -> dict:
    """Compile, first mask, then every walk; times in microseconds, memory in bytes."""
    _reset_peak_rss()
    before = _rss_bytes()
    width = (engine.tokenizer.get_vocab_size() + 31) // 32
    bitmask = np.zeros((1, width), dtype=np.int32)
    started = time.perf_counter()
    try:
        compiled = engine.compile(document["schema"])
        engine.fill(engine.matcher(compiled), bitmask)
    except Exception as exc:  # noqa: BLE001 - any refusal is a compile error of that engine
        return _refusal(engine, exc)
    ttfm = (time.perf_counter() - started) * 1e6
    try:
        return _walk_all(engine, compiled, walks, bitmask, ttfm, before)
    except Exception as exc:  # noqa: BLE001 - gramalign compiles a part when a walk reaches it
        if not engine.name.startswith("gramalign") or not _deliberate(exc):
            raise
        return _refusal(engine, exc, " (raised in a mask: the walk reached the part)")


def _deliberate(exc: Exception) -> bool:
    return any(c.__name__ == "GramalignError" for c in type(exc).__mro__)


def _refusal(engine: Engine, exc: Exception, where: str = "") -> dict:
    message = " ".join(str(exc).split())
    # gramalign refuses on purpose with a GramalignError; any other exception is a bug. The
    # other engines' exception types do not tell, so theirs all count as refusals.
    deliberate = not engine.name.startswith("gramalign") or _deliberate(exc)
    return {"status": "compile_error", "error": f"{type(exc).__name__}: {message[:300]}{where}",
            "deliberate": deliberate}


def _walk_all(engine: Engine, compiled, walks, bitmask, ttfm: float, before: int) -> dict:
    masks, preempted, accepted_walks, valid_rejected, invalid_accepted = [], [], [], 0, 0
    walk_masks = []  # fills per walk, so callers can total masks over chosen walks
    for ids, valid in walks:
        filled = len(masks)
        matcher = engine.matcher(compiled)
        accepted = True
        for token in ids:
            _timed_fill(engine, matcher, bitmask, masks, preempted)
            if not engine.accept(matcher, token, bitmask):
                accepted = False
                break
        if accepted:
            _timed_fill(engine, matcher, bitmask, masks, preempted)
            accepted = engine.can_end(matcher)
        accepted_walks.append(accepted)
        walk_masks.append(len(masks) - filled)
        valid_rejected += valid and not accepted
        invalid_accepted += accepted and not valid
    return {"status": "ok", "ttfm": ttfm, "masks": masks, "preempted": preempted, "accepted": accepted_walks,
            "walk_masks": walk_masks,
            "valid_rejected": valid_rejected, "invalid_accepted": invalid_accepted,
            "memory": max(0, _rss_bytes() - before), "peak": _peak_rss_bytes()}


def _timed_fill(engine: Engine, matcher, bitmask, masks: list, preempted: list) -> None:
    """Append one fill's time (µs) to ``masks``, and its index to ``preempted`` when the kernel
    switched this thread out meanwhile (read outside the timing). On a busy core a 4 ms time
    slice lands in the tail: a short fill flagged so is most likely such a wait, a long one
    (tens of ms) is flagged on a busy core whatever its own cost, so the flag says "may be
    inflated", not "artifact".

    Python's cyclic collector is paused during the fill, for every engine alike, as a server
    does (gramalign's integrations run their fills under ``gc_paused``): a collection that
    falls due runs at the next allocation after the fill, outside the timing."""
    switches = resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        engine.fill(matcher, bitmask)
        masks.append((time.perf_counter_ns() - t0) / 1000)
    finally:
        if enabled:
            gc.enable()
    if resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw != switches:
        preempted.append(len(masks) - 1)


def _serve(name: str, connection) -> None:
    engine = ENGINES[name](llama_tokenizer())
    connection.send("ready")
    while True:
        task = connection.recv()
        if task is None:
            return
        connection.send(run_schema(engine, *task))


def compile_bytecode() -> None:
    """Write gramalign's bytecode once, as ``pip install`` does. Where PYTHONDONTWRITEBYTECODE
    is set (these machines set it) and the checkout has none, a worker would compile every
    module it imports lazily from source inside the first compile it times: ~50 ms for the
    format modules, a cost no installed package pays."""
    global _BYTECODE_WRITTEN
    if not _BYTECODE_WRITTEN:
        import compileall

        import gramalign

        compileall.compile_dir(Path(gramalign.__file__).parent, quiet=1)
        _BYTECODE_WRITTEN = True


_BYTECODE_WRITTEN = False


class Worker:
    """One child process running ``target(name, connection)``, which answers tasks (tuples) until
    it gets None; restarted after a timeout or a crash. The default target runs an engine."""

    def __init__(self, name: str, target=_serve):
        self.name = name
        self.target = target
        self.process = None
        self.connection = None

    def _start(self) -> None:
        compile_bytecode()
        context = mp.get_context("spawn")  # a clean interpreter: no state shared with the parent
        self.connection, child = context.Pipe()
        self.process = context.Process(target=self.target, args=(self.name, child), daemon=True)
        self.process.start()
        if not self.connection.poll(600) or self.connection.recv() != "ready":
            raise RuntimeError(f"{self.name} did not start")

    def run(self, task: tuple, timeout: float) -> dict:
        if self.process is None:
            self._start()
        self.connection.send(task)
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


def refusal_kind(result: dict) -> str:
    """A compile error is a refusal for size or limits, another refusal, or (gramalign only) an
    exception that is no GramalignError: a bug."""
    if not result["deliberate"]:
        return "exception"
    return "size/limits" if SIZE_REFUSAL.search(result["error"]) else "other"


def parse_engines(spec: str) -> list[str]:
    """Comma-separated engine names, any case; ValueError naming the unknown ones."""
    by_lower = {name.lower(): name for name in ENGINES}
    names = [by_lower.get(n.strip().lower(), n.strip()) for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in ENGINES]
    if unknown:
        raise ValueError(f"unknown engine(s) {', '.join(unknown)}; choose from {', '.join(ENGINES)}")
    return names


VERDICT_COLUMNS = ["schemas", "refused: size/limits", "refused: other", "compile exceptions", "timeouts", "crashes",
                   "all tests pass", "valid rejected", "fresh rejected", "invalid accepted"]
TTFM_COLUMNS = ["TTFM p50 (ms)", "TTFM p90 (ms)", "TTFM mean (ms)", "TTFM max (ms)"]
TBM_COLUMNS = ["masks", "TBM p50 (µs)", "TBM p90 (µs)", "TBM p99 (µs)", "TBM p99.9 (µs)", "TBM max (µs)",
               f"masks > {SLOW_MASK_MS:.0f} ms", "preempted masks", f"preempted > {SLOW_MASK_MS:.0f} ms"]
SPLIT_COLUMNS = [f"{kind} TBM {figure}" for kind in ("test", "fresh")
                 for figure in ("p50 (µs)", "p99 (µs)", "max (µs)")]
MEMORY_COLUMNS = ["peak RSS max (MiB)", "schemas peak > 1 GiB", "RSS growth max (MiB)"]
RATIO_COLUMNS = TTFM_COLUMNS + TBM_COLUMNS[1:-2] + SPLIT_COLUMNS + MEMORY_COLUMNS


def split_masks(result: dict, fresh_count: int) -> tuple[list, list]:
    """One schema's times between masks, (on its test instances, on its fresh ones): the
    fresh walks are the last ``fresh_count``."""
    test_walks = len(result["walk_masks"]) - fresh_count
    cut = sum(result["walk_masks"][:test_walks])
    return result["masks"][:cut], result["masks"][cut:]


def summarize(results: list[dict], fresh_counts: list[int]) -> dict:
    """One engine's figures over the sample; ``fresh_counts[i]``: how many of schema i's walks
    (the last ones) are fresh."""
    counts = collections.Counter(r["status"] for r in results)
    refusals = collections.Counter(refusal_kind(r) for r in results if r["status"] == "compile_error")
    done = [r for r in results if r["status"] == "ok"]
    ttfm = [r["ttfm"] / 1000 for r in done]
    masks = [m for r in done for m in r["masks"]]
    nan = float("nan")
    return {
        "schemas": len(results), "refused: size/limits": refusals["size/limits"], "refused: other": refusals["other"],
        "compile exceptions": refusals["exception"], "timeouts": counts["timeout"], "crashes": counts["crash"],
        "all tests pass": sum(r["valid_rejected"] == 0 and r["invalid_accepted"] == 0 for r in done),
        "valid rejected": sum(r["valid_rejected"] for r in done),
        "fresh rejected": sum(not ok for r, k in zip(results, fresh_counts) if r["status"] == "ok"
                              for ok in r["accepted"][len(r["accepted"]) - k:]),
        "invalid accepted": sum(r["invalid_accepted"] for r in done),
        "TTFM p50 (ms)": statistics.median(ttfm) if ttfm else nan, "TTFM p90 (ms)": percentile(ttfm, 90),
        "TTFM mean (ms)": statistics.fmean(ttfm) if ttfm else nan, "TTFM max (ms)": max(ttfm, default=nan),
        "masks": len(masks),
        "TBM p50 (µs)": statistics.median(masks) if masks else nan, "TBM p90 (µs)": percentile(masks, 90),
        "TBM p99 (µs)": percentile(masks, 99), "TBM p99.9 (µs)": percentile(masks, 99.9),
        "TBM max (µs)": max(masks, default=nan),
        f"masks > {SLOW_MASK_MS:.0f} ms": sum(m > SLOW_MASK_MS * 1000 for m in masks),
        "preempted masks": sum(len(r["preempted"]) for r in done),
        f"preempted > {SLOW_MASK_MS:.0f} ms": sum(r["masks"][i] > SLOW_MASK_MS * 1000 for r in done
                                                 for i in r["preempted"]),
        **_split_figures(results, fresh_counts),
        "peak RSS max (MiB)": max((r["peak"] for r in done), default=0) / 2**20,
        "schemas peak > 1 GiB": sum(r["peak"] > LARGE_PEAK for r in done),
        "RSS growth max (MiB)": max((r["memory"] for r in done), default=0) / 2**20,
    }


def _split_figures(results: list[dict], fresh_counts: list[int]) -> dict:
    """TBM p50, p99 and max on test instances and on fresh instances, apart (the issue's
    targets hold for each)."""
    parts = [split_masks(r, k) for r, k in zip(results, fresh_counts) if r["status"] == "ok"]
    figures = {}
    for kind, masks in (("test", [m for t, _ in parts for m in t]), ("fresh", [m for _, f in parts for m in f])):
        figures[f"{kind} TBM p50 (µs)"] = statistics.median(masks) if masks else float("nan")
        figures[f"{kind} TBM p99 (µs)"] = percentile(masks, 99)
        figures[f"{kind} TBM max (µs)"] = max(masks, default=float("nan"))
    return figures


def print_table(labels: list[str], columns: list[str], rows: list[tuple[list, list]]) -> None:
    """A markdown table: left-aligned label columns, then right-aligned figures."""
    print("| " + " | ".join(labels + columns) + " |")
    print("|" + "---|" * len(labels) + "---:|" * len(columns))
    for names, cells in rows:
        print("| " + " | ".join([str(n) for n in names] + [_cell(c) for c in cells]) + " |")
    print()


def _cell(value) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def _ratio(ours, theirs) -> str:
    if not theirs or theirs != theirs or ours != ours:  # zero or NaN
        return "-"
    return f"{ours / theirs:.2f}"


def worst_schemas(paths: list[Path], results: list[dict], count: int = 10) -> list[tuple[list, list]]:
    """Timeouts and crashes first (a user waited longest there), then by worst mask."""
    failed = [([p.name], [r["status"], "-", "-", "-"]) for p, r in zip(paths, results)
              if r["status"] in ("timeout", "crash")]
    done = sorted(((max(r["masks"], default=0.0), p, r) for p, r in zip(paths, results) if r["status"] == "ok"),
                  key=lambda item: -item[0])
    rows = [([p.name], [worst / 1000, _worst_preempted(r), r["ttfm"] / 1000,
                        sum(m > SLOW_MASK_MS * 1000 for m in r["masks"])]) for worst, p, r in done]
    return (failed + rows)[:count]


def _worst_preempted(result: dict) -> str:
    if not result["masks"]:
        return "-"
    return "yes" if int(np.argmax(result["masks"])) in result["preempted"] else "no"


def make_fresh(paths, documents, count: int, seed: int, timeout: float) -> list[dict]:
    """fresh_walks.WalkGenerator.instances() for every schema, in a worker of its own."""
    worker = Worker("fresh", target=fresh_walks.serve)
    reports = []
    for path, document in zip(paths, documents):
        report = worker.run((document, count, f"{seed}:{path.name}"), timeout)
        if "status" in report:  # the worker timed out or died
            report = fresh_walks.empty_report(f"generator {report['status']}")
        reports.append(report)
    worker.close()
    return reports


def print_fresh(paths, reports: list[dict], count: int) -> None:
    lengths = [len(ids) for r in reports for ids in r["ids"]]
    invalid = [(p.name, text, verdict) for p, r in zip(paths, reports) for text, verdict in r["invalid"]]
    print(f"fresh instances: {len(lengths)} kept of {sum(r['tries'] for r in reports)} walks ({count} wanted per "
          f"schema) for {sum(bool(r['ids']) for r in reports)} schemas; tokens median "
          f"{statistics.median(lengths) if lengths else 0:.0f}, p90 {percentile(lengths, 90):.0f}, max "
          f"{max(lengths, default=0)}; dropped (over {fresh_walks.MAX_TOKENS} tokens) "
          f"{sum(r['dropped'] for r in reports)}; no fresh instances (gramalign refused, or the generator timed "
          f"out) {sum(r['error'] is not None for r in reports)}")
    print(f"fresh invalid (a gramalign bug: a finished walk jsonschema rejects): {len(invalid)}, of which "
          f"{sum('repeats a key' in v for _, _, v in invalid)} repeat a key; dead ends (no token allowed, no end): "
          f"{sum(len(r['dead_ends']) for r in reports)}; unchecked (jsonschema failed): "
          f"{sum(len(r['unchecked']) for r in reports)}")
    for name, text, verdict in invalid:
        print(f"- invalid {name}: {verdict}\n  {text[:400]}")
    for path, r in zip(paths, reports):
        for text in r["dead_ends"]:
            print(f"- dead end {path.name}: {text[:400]}")
        for text, verdict in r["unchecked"]:
            print(f"- unchecked {path.name}: {verdict}")
    print()


def print_report(paths, summaries: dict, results: dict, fresh: list[dict], fresh_counts: list[int]) -> None:
    rows = lambda columns: [([name], [s[c] for c in columns]) for name, s in summaries.items()]  # noqa: E731
    for columns in (VERDICT_COLUMNS, TTFM_COLUMNS, TBM_COLUMNS, SPLIT_COLUMNS, MEMORY_COLUMNS):
        print_table(["engine"], columns, rows(columns))
    if "gramalign" in summaries and len(summaries) > 1:
        print("Ratios gramalign / other (below 1: gramalign is faster, smaller or has fewer; '-': other is 0)\n")
        ours = summaries["gramalign"]
        print_table(["other"], RATIO_COLUMNS, [([name], [_ratio(ours[c], s[c]) for c in RATIO_COLUMNS])
                                             for name, s in summaries.items() if name != "gramalign"])
    for name, engine_results in results.items():
        print(f"{name}: 10 worst schemas by worst mask (timeouts and crashes first)\n")
        print_table(["schema"], ["worst mask (ms)", "worst preempted", "TTFM (ms)", f"masks > {SLOW_MASK_MS:.0f} ms"],
                    worst_schemas(paths, engine_results))
    for name, engine_results in results.items():
        refused = [(p.name, r) for p, r in zip(paths, engine_results) if r["status"] == "compile_error"]
        print(f"{name}: {len(refused)} compile refusals")
        for file_name, r in sorted(refused, key=lambda item: refusal_kind(item[1])):
            print(f"- [{refusal_kind(r)}] {file_name}: {r['error'][:240]}")
        print()
    for name, engine_results in results.items():
        rejected = [(p.name, text) for p, r, f, k in zip(paths, engine_results, fresh, fresh_counts)
                    if r["status"] == "ok" for ok, text in zip(r["accepted"][len(r["accepted"]) - k:], f["texts"])
                    if not ok]
        if rejected:
            print(f"{name}: fresh instances it rejects ({len(rejected)}; first 10)")
            for file_name, text in rejected[:10]:
                print(f"- {file_name}: {text[:300]}")
            print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=10, help="schemas per dataset (0: all; 20 for tail figures)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per schema and engine")
    parser.add_argument("--seed", type=int, default=0, help="seeds the sample and the fresh walks")
    parser.add_argument("--fresh", type=int, default=2, help="fresh instances per schema (0: none)")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated, from " + ", ".join(ENGINES))
    parser.add_argument("--errors", help="write every compile error, timeout and disagreement to this file")
    args = parser.parse_args()
    if args.fresh < 0:
        parser.error("--fresh must be 0 or more")
    try:
        names = parse_engines(args.engines)
    except ValueError as exc:
        parser.error(str(exc))

    tokenizer = llama_tokenizer()
    paths = sample_paths(args.sample, args.seed)
    documents, walks = [], []
    for path in paths:
        document = json.loads(path.read_text())
        documents.append(document)
        walks.append([(tokenizer.encode(json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False),
                                        add_special_tokens=False).ids, bool(t["valid"]))
                      for t in document["tests"]])
    print("\n".join(header_lines(tokenizer, sys.argv)))
    print(f"sample: {len(paths)} schemas ({args.sample or 'all'} per dataset, seed {args.seed}), "
          f"{sum(map(len, walks))} test instances, {sum(len(ids) for w in walks for ids, _ in w)} tokens; "
          f"timeout {args.timeout:.0f} s\n", flush=True)
    if args.sample >= 20 and len(paths) < 400:
        print(f"warning: only {len(paths)} schemas; tail figures want 400 or more\n")
    fresh = [fresh_walks.empty_report() for _ in paths]
    if args.fresh:
        started = time.time()
        fresh = make_fresh(paths, documents, args.fresh, args.seed, 2 * args.timeout)
        print(f"fresh walks: {time.time() - started:.0f} s", file=sys.stderr, flush=True)
        print_fresh(paths, fresh, args.fresh)
        for walk, report in zip(walks, fresh):
            walk += [(ids, True) for ids in report["ids"]]
    fresh_counts = [len(report["ids"]) for report in fresh]

    summaries, results, errors = {}, {}, []
    for name in names:
        worker = Worker(name)
        results[name] = []
        started = time.time()
        for path, document, walk in zip(paths, documents, walks):
            result = worker.run((document, walk), args.timeout)
            results[name].append(result)
            if result["status"] != "ok" or result["valid_rejected"] or result["invalid_accepted"]:
                errors.append(f"{name}\t{path.name}\t{result.get('error') or result['status']}\t"
                              f"valid rejected {result.get('valid_rejected', '-')}\t"
                              f"invalid accepted {result.get('invalid_accepted', '-')}")
        worker.close()
        summaries[name] = summarize(results[name], fresh_counts)
        print(f"{name}: {time.time() - started:.0f} s", file=sys.stderr, flush=True)
    print_report(paths, summaries, results, fresh, fresh_counts)
    if args.errors:
        Path(args.errors).write_text("\n".join(errors) + "\n")


if __name__ == "__main__":
    main()
