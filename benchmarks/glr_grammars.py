"""GBNF grammars beyond LALR(1) (issue 34): loads and mask times, gramalign vs XGrammar vs llguidance, one run.

    PYTHONPATH=src .venv/bin/python benchmarks/glr_grammars.py [--texts 50] [--repeats 5] [--grammar FILE]...
        [--engines gramalign,xgrammar,llguidance] [--sections loads,masks,ambiguous] [--json OUT] [--quick]

Pinning (``taskset -c N``) is the caller's job. Every engine gets the Llama-3.2 tokenizer
(``grammar_masks.llama_tokenizer``, offline) and the grammar text as written: gramalign
``Grammar.from_gbnf`` + ``compile``; XGrammar ``Grammar.from_ebnf`` + ``GrammarCompiler``
(cache off) + ``GrammarMatcher.fill_next_token_bitmask``; llguidance
``llguidance.grammar_from("gbnf", text)`` (its GBNF-to-Lark converter, then
``LLMatcher.grammar_from_lark``) + ``LLMatcher`` + ``llguidance.numpy.fill_next_token_bitmask``.
A grammar an engine cannot load is reported with the first line of its error, and that
engine sits the grammar out.

1. Loads: every ``.gbnf`` of tests/data/gbnf_llama_cpp (llama.cpp's eight), the grammars
   of sections 2 and 3 and any ``--grammar FILE``: ok or the error's first line, and the
   seconds the load and compile took (gramalign: ``from_gbnf`` + ``compile(cache=False)``;
   XGrammar: ``from_ebnf`` + ``compile_grammar``; llguidance: ``grammar_from`` + ``LLMatcher``).

2. Mask timing on ``arithmetic.gbnf``, ``c.gbnf``, an ambiguous JSON grammar (llama.cpp's
   json.gbnf with ``number`` written the natural, ambiguous way, and ``ws ::= (" " | "\\n"
   [ \\t]{0,20})?``: the same language as the original's ``ws ::= | " " | ...``, whose empty
   first alternative XGrammar's parser refuses) and every ``--grammar FILE``. Texts: seeded
   ``random_sentence`` of tests/oracles/gbnf.py (a random derivation of the GBNF rules,
   independent of every engine, so it works before gramalign loads the grammar), tokenized
   by Llama-3.2; of ``20 * --texts`` draws, the ``--texts`` longest distinct ones of 2 to
   ``--max-tokens`` tokens that the reference Earley recognizer of the same file accepts and
   that decode back to themselves are kept (the number dropped is printed: 0 expected).
   Every engine, in turn, walks the same token sequences: before each token and once after
   the last it fills a full-vocabulary bitmask (timed, Python's cyclic collector paused, as
   in maskbench.py); the token must be set in that mask and accepted, and the engine must
   allow the end after the last token. A token an engine refuses ends that sequence for it
   and is counted and listed: the engines disagree (the texts are in the language). Time
   to first mask (TTFM) = load + compile + matcher + first fill from the text, a fresh
   grammar object each time, ``--repeats`` times per engine (first, p50, max). Time between
   masks (TBM): every fill of the walks (p50, p99, max, µs); gramalign builds masks lazily,
   so its first encounters of a context are inside these figures. Ratios gramalign / other
   below 1: gramalign faster.

3. Highly ambiguous grammars: ``root ::= s`` / ``s ::= s s | "a"`` on ``a`` * N and
   ``root ::= e`` / ``e ::= e "+" e | [0-9]`` on seeded random ``d+d+...+d`` (N characters,
   N - 1 when N is even: the language has odd lengths), N = ``--ambiguous-chars`` (200; give
   several, e.g. ``100 200 400``, to see how the cost grows with the text).
   Per engine: load + first mask, mask p99 and max, total wall time (load to the end check)
   and peak resident-set growth over the resident set before the load (VmHWM, reset first).

Each (section, grammar, engine) walk stops at the first mask after ``--budget`` seconds (a
single mask is never interrupted) and says so ("partial"). ``--json OUT`` writes every raw
number (each fill's µs per sequence, every TTFM, every refusal). ``--quick``: a smoke run
(5 texts, 2 repeats, 60-character ambiguous texts, 10 s budgets), about a minute once the
engines are imported.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from grammar_masks import LLAMA_EOS as EOS  # noqa: E402
from grammar_masks import llama_tokenizer, percentile  # noqa: E402
from maskbench import _peak_rss_bytes, _reset_peak_rss, _rss_bytes, header_lines, print_table  # noqa: E402

GBNF_DIR = ROOT / "tests" / "data" / "gbnf_llama_cpp"
_JSON_NUMBER = re.compile(r"^number ::=.*$", re.M)
_JSON_WS = re.compile(r"^ws ::=.*$", re.M)


def ambiguous_json() -> str:
    """llama.cpp's json.gbnf with ``number`` written the natural, ambiguous way (a one-digit
    integer part is both ``[0-9]`` and ``[1-9] [0-9]*``) and ``ws`` as an optional group."""
    text = (GBNF_DIR / "json.gbnf").read_text()
    text, numbers = _JSON_NUMBER.subn(
        'number ::= "-"? ([0-9] | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws', text)
    text, spaces = _JSON_WS.subn(r'ws ::= (" " | "\\n" [ \\t]{0,20})?', text)
    assert numbers == 1 and spaces == 1, "json.gbnf changed: update ambiguous_json()"
    return "# json.gbnf with an ambiguous number rule (benchmarks/glr_grammars.py)\n" + text


AMBIGUOUS = {
    "s ::= s s | a": 'root ::= s\ns ::= s s | "a"\n',
    "e ::= e + e | digit": 'root ::= e\ne ::= e "+" e | [0-9]\n',
}


def ambiguous_text(name: str, chars: int, seed: int) -> str:
    if name.startswith("s "):
        return "a" * chars
    rng = random.Random(f"{seed}:{name}")
    digits = max(1, (chars + 1) // 2)  # d+d+...+d: 2 * digits - 1 characters
    return "+".join(str(rng.randrange(10)) for _ in range(digits))


def first_line(exc: BaseException) -> str:
    """An error's first non-empty line, without XGrammar's ``[hh:mm:ss] file.cc:N:`` prefix."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    line = lines[0] if lines else ""
    line = re.sub(r"^\[\d\d:\d\d:\d\d\] \S+:\d+: ", "", line)
    return f"{type(exc).__name__}: {line}"


# -- engines -------------------------------------------------------------------------------

def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "?"


class Engine:
    """One library: ``load`` a GBNF text into a compiled grammar (raising when it cannot), a
    ``matcher`` per sequence, ``fill`` into the engine's own bitmask, ``accept`` a token,
    ``can_end``."""

    name = ""

    def __init__(self, tokenizer):
        self.bitmask = np.zeros((1, (tokenizer.get_vocab_size() + 31) // 32), dtype=np.int32)

    def allowed(self, token: int) -> bool:
        """Whether the mask just filled allows ``token``."""
        return bool((int(self.bitmask[0, token >> 5]) >> (token & 31)) & 1)

    def why(self, matcher) -> str:
        return ""


class Gramalign(Engine):
    name = "gramalign"

    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        import gramalign as ga

        self.ga = ga
        self.version = getattr(ga, "__version__", "?")
        self.vocab = ga.Vocabulary.from_tokenizers(tokenizer, eos_token_ids=[EOS])
        ga.warm_up(self.vocab)  # kernels of a schema compile and walk, as a server does at start
        warm = ga.compile(ga.Grammar.from_gbnf('root ::= "(" [a-z]+ ")" [0-9]*'), self.vocab, cache=False).matcher()
        warm.fill_next_token_bitmask(self.bitmask)  # and a GBNF grammar's (none measured uses this one)
        warm.accept_string("(ab)1")
        warm.fill_next_token_bitmask(self.bitmask)

    def load(self, text):
        return self.ga.compile(self.ga.Grammar.from_gbnf(text), self.vocab, cache=False)

    def matcher(self, compiled):
        return compiled.matcher()

    def fill(self, matcher):
        matcher.fill_next_token_bitmask(self.bitmask, 0)

    def accept(self, matcher, token):
        return matcher.try_accept_token(token)

    def can_end(self, matcher):
        return matcher.can_terminate()


class XGrammar(Engine):
    name = "XGrammar"

    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        import torch
        import xgrammar as xgr
        from transformers import PreTrainedTokenizerFast

        self.xgr = xgr
        self.version = _version("xgrammar")
        fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|end_of_text|>")
        info = xgr.TokenizerInfo.from_huggingface(fast, vocab_size=tokenizer.get_vocab_size())
        self.compiler = xgr.GrammarCompiler(info, cache_enabled=False)  # every load compiles
        self.tensor = torch.from_numpy(self.bitmask)  # shares the numpy bitmask's memory

    def load(self, text):
        return self.compiler.compile_grammar(self.xgr.Grammar.from_ebnf(text))

    def matcher(self, compiled):
        return self.xgr.GrammarMatcher(compiled)

    def fill(self, matcher):
        matcher.fill_next_token_bitmask(self.tensor, 0)

    def accept(self, matcher, token):
        return matcher.accept_token(token)

    def can_end(self, matcher):
        return matcher.accept_token(EOS)


class LLGuidance(Engine):
    name = "llguidance"

    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        import llguidance
        import llguidance.hf
        import llguidance.numpy
        from transformers import PreTrainedTokenizerFast

        self.llg = llguidance
        self.version = _version("llguidance")
        self.fill_bitmask = llguidance.numpy.fill_next_token_bitmask
        fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|end_of_text|>")
        self.llg_tokenizer = llguidance.hf.from_tokenizer(fast)

    def load(self, text):
        grammar = self.llg.grammar_from("gbnf", text)  # GBNF -> Lark -> llguidance grammar
        matcher = self.llg.LLMatcher(self.llg_tokenizer, grammar)  # compiles; errors as a state
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return [grammar, matcher]  # the load's matcher serves the first sequence: constructing one is the compile

    def matcher(self, compiled):
        grammar, fresh = compiled
        if fresh is not None and not fresh.is_error() and not fresh.is_stopped():
            compiled[1] = None  # the load's own matcher serves the first sequence
            return fresh
        return self.llg.LLMatcher(self.llg_tokenizer, grammar)

    def fill(self, matcher):
        self.fill_bitmask(matcher, self.bitmask, 0)

    def accept(self, matcher, token):
        return matcher.consume_token(token) and not matcher.is_error()

    def can_end(self, matcher):
        return matcher.is_accepting()

    def why(self, matcher):
        return matcher.get_error() if matcher.is_error() else ""


ENGINES = {cls.name.lower(): cls for cls in (Gramalign, XGrammar, LLGuidance)}


# -- measurements ----------------------------------------------------------------------------

def timed_fill(engine: Engine, matcher, masks: list, preempted: list) -> None:
    """One fill, its µs appended to ``masks``; its index to ``preempted`` when the kernel
    switched this thread out meanwhile (the figure may be a wait, not work)."""
    switches = resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        engine.fill(matcher)
        masks.append((time.perf_counter_ns() - t0) / 1000)
    finally:
        if enabled:
            gc.enable()
    if resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw != switches:
        preempted.append(len(masks) - 1)


def walk(engine: Engine, matcher, ids: list[int], deadline: float, masks: list, preempted: list,
         filled: bool = False) -> dict:
    """Fill before every token (but the first when ``filled``: the matcher's first mask is in
    the bitmask already) and after the last; stops at a refused token or, between masks, at the
    deadline. Returns the outcome: ``accepted`` (every token taken and the end allowed), or
    where and why it stopped."""
    for position, token in enumerate(ids):
        if not (filled and position == 0):
            if time.perf_counter() > deadline:
                return {"outcome": "partial", "position": position}
            timed_fill(engine, matcher, masks, preempted)
        if not engine.allowed(token):
            return {"outcome": "refused", "position": position, "token": token, "how": "not in its mask"}
        if not engine.accept(matcher, token):
            return {"outcome": "refused", "position": position, "token": token,
                    "how": "accept failed " + engine.why(matcher)}
    timed_fill(engine, matcher, masks, preempted)
    if not engine.can_end(matcher):
        return {"outcome": "not final", "position": len(ids)}
    return {"outcome": "accepted", "position": len(ids)}


def first_mask_times(engine: Engine, text: str, repeats: int) -> list[float]:
    """Seconds from the text to the first filled mask, a fresh grammar each time."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        compiled = engine.load(text)
        engine.fill(engine.matcher(compiled))
        times.append(time.perf_counter() - t0)
        del compiled
    return times


def measure_loads(engines: list[Engine], grammars: dict[str, str]) -> list[dict]:
    rows = []
    for name, text in grammars.items():
        for engine in engines:
            t0 = time.perf_counter()
            try:
                engine.load(text)
                row = {"grammar": name, "engine": engine.name, "ok": True, "seconds": time.perf_counter() - t0}
            except Exception as exc:  # noqa: BLE001 - any failure to load is this engine's verdict
                row = {"grammar": name, "engine": engine.name, "ok": False, "seconds": time.perf_counter() - t0,
                       "error": first_line(exc)}
            rows.append(row)
            gc.collect()
    return rows


def sample_texts(text: str, name: str, tokenizer, count: int, max_tokens: int, seed: int) -> tuple[list, int]:
    """The ``count`` longest distinct random sentences of 2..max_tokens tokens among
    ``20 * count`` draws (ties in draw order), each checked by the reference Earley recognizer
    and by decoding its tokens back; returns them with the number dropped by those checks
    (0 unless the sampler or the recognizer is wrong)."""
    from oracles.gbnf import earley_accepts, random_sentence

    from gramalign.grammar.gbnf_frontend import parse_gbnf

    rules = parse_gbnf(text)
    rng = random.Random(f"{seed}:{name}")
    seen, candidates = set(), []
    for _ in range(20 * count):
        sentence = random_sentence(rules, rng)
        if sentence is None or sentence in seen:
            continue
        seen.add(sentence)
        try:
            ids = tokenizer.encode(sentence, add_special_tokens=False).ids
        except Exception:  # noqa: BLE001 - a sentence the tokenizer cannot take (lone surrogate)
            continue
        if 2 <= len(ids) <= max_tokens:
            candidates.append((len(candidates), sentence, ids))
    candidates.sort(key=lambda item: (-len(item[2]), item[0]))
    kept, dropped = [], 0
    for _, sentence, ids in candidates:
        if len(kept) == count:
            break
        if tokenizer.decode(ids, skip_special_tokens=False) == sentence and earley_accepts(rules, sentence):
            kept.append((sentence, ids))
        else:
            dropped += 1
    return kept, dropped


def measure_masks(engines: list[Engine], name: str, text: str, sequences, repeats: int, budget: float) -> dict:
    results = {}
    for engine in engines:
        gc.collect()
        try:
            ttfm = first_mask_times(engine, text, repeats)
            compiled = engine.load(text)
        except Exception as exc:  # noqa: BLE001
            results[engine.name] = {"error": first_line(exc)}
            print(f"{name}: {engine.name} cannot load it: {first_line(exc)}", file=sys.stderr, flush=True)
            continue
        masks, preempted, outcomes = [], [], []
        per_sequence = []
        deadline = time.perf_counter() + budget
        for _, ids in sequences:
            before = len(masks)
            try:
                outcomes.append(walk(engine, engine.matcher(compiled), ids, deadline, masks, preempted))
            except Exception as exc:  # noqa: BLE001 - an engine failing mid-walk is reported, not fatal
                outcomes.append({"outcome": "exception", "position": None, "how": first_line(exc)})
            per_sequence.append(masks[before:])
            if outcomes[-1]["outcome"] == "partial":
                break
        results[engine.name] = {"ttfm_s": ttfm, "masks_us": per_sequence, "preempted": len(preempted),
                                "outcomes": outcomes}
        del compiled
        print(f"{name}: {engine.name} done ({len(masks)} masks)", file=sys.stderr, flush=True)
    return results


def measure_ambiguous(engines: list[Engine], grammar: str, text: str, ids: list[int], budget: float) -> dict:
    results = {}
    for engine in engines:
        gc.collect()
        _reset_peak_rss()
        before = _rss_bytes()
        masks, preempted = [], []
        started = time.perf_counter()
        try:
            compiled = engine.load(text)
            matcher = engine.matcher(compiled)
            timed_fill(engine, matcher, masks, preempted)
        except Exception as exc:  # noqa: BLE001
            results[engine.name] = {"error": first_line(exc)}
            continue
        first = time.perf_counter() - started
        try:
            outcome = walk(engine, matcher, ids, started + budget, masks, preempted, filled=True)
        except Exception as exc:  # noqa: BLE001 - an engine failing mid-walk is reported, not fatal
            outcome = {"outcome": "exception", "position": None, "how": first_line(exc)}
        wall = time.perf_counter() - started
        results[engine.name] = {"first_mask_s": first, "masks_us": masks, "wall_s": wall, "preempted": len(preempted),
                                "peak_growth_bytes": max(0, _peak_rss_bytes() - before), **outcome}
        del compiled, matcher
        print(f"{grammar}: {engine.name} done ({len(masks)} masks, {wall:.2f} s)", file=sys.stderr, flush=True)
    return results


# -- reports ---------------------------------------------------------------------------------

def _ratio(ours, theirs) -> str:
    """ours / theirs, two decimals (two significant digits below 0.1); '-' for 0 or NaN."""
    if not theirs or theirs != theirs or ours != ours:
        return "-"
    ratio = ours / theirs
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"


def _short(message: str, width: int = 110) -> str:
    message = message.replace("|", "\\|")
    return message if len(message) <= width else message[:width - 1] + "…"


def print_loads(rows: list[dict], engines: list[Engine]) -> None:
    print("## 1. Loads (load + compile, seconds; errors: first line)\n")
    grammars = list(dict.fromkeys(r["grammar"] for r in rows))
    by = {(r["grammar"], r["engine"]): r for r in rows}
    table = []
    for grammar in grammars:
        cells = []
        for engine in engines:
            r = by[(grammar, engine.name)]
            cells.append(f"ok, {r['seconds']:.3f} s" if r["ok"] else _short(r["error"]))
        table.append(([_short(grammar)], cells))
    print_table(["grammar"], [e.name for e in engines], table)


def _outcome_counts(outcomes: list[dict]) -> tuple[int, int, int, int]:
    kinds = [o["outcome"] for o in outcomes]
    return (kinds.count("accepted"), kinds.count("refused") + kinds.count("exception"), kinds.count("not final"),
            kinds.count("partial"))


MASK_COLUMNS = ["sequences walked", "accepted", "refused a token", "end refused", "partial", "masks",
                "TTFM first (ms)", "TTFM p50 (ms)", "TTFM max (ms)", "TBM p50 (µs)", "TBM p99 (µs)", "TBM max (µs)",
                "preempted"]
RATIO_COLUMNS = ["TTFM p50", "TTFM max", "TBM p50", "TBM p99", "TBM max"]


def mask_summary(result: dict) -> dict:
    masks = [m for seq in result["masks_us"] for m in seq]
    ttfm = [t * 1000 for t in result["ttfm_s"]]
    accepted, refused, not_final, partial = _outcome_counts(result["outcomes"])
    nan = float("nan")
    return {"sequences walked": len(result["outcomes"]), "accepted": accepted, "refused a token": refused,
            "end refused": not_final, "partial": "yes" if partial else "no", "masks": len(masks),
            "TTFM first (ms)": ttfm[0], "TTFM p50 (ms)": statistics.median(ttfm), "TTFM max (ms)": max(ttfm),
            "TBM p50 (µs)": statistics.median(masks) if masks else nan, "TBM p99 (µs)": percentile(masks, 99),
            "TBM max (µs)": max(masks, default=nan), "preempted": result["preempted"]}


def print_masks(report: dict, engines: list[Engine]) -> None:
    print("## 2. Mask timing (same token sequences for every engine)\n")
    for name, entry in report.items():
        lengths = [len(ids) for ids in entry["ids"]]
        print(f"### {_short(name)}: {len(lengths)} texts, {sum(lengths)} tokens (median "
              f"{statistics.median(lengths) if lengths else 0:.0f}, max {max(lengths, default=0)}); "
              f"{entry['dropped']} draws dropped by the Earley / round-trip check\n")
        rows, summaries = [], {}
        for engine in engines:
            result = entry["engines"].get(engine.name)
            if result is None:
                continue
            if "error" in result:
                rows.append(([engine.name], [_short(result["error"], 90)] + ["-"] * (len(MASK_COLUMNS) - 1)))
                continue
            summaries[engine.name] = s = mask_summary(result)
            rows.append(([engine.name], [s[c] for c in MASK_COLUMNS]))
        print_table(["engine"], MASK_COLUMNS, rows)
        ours = summaries.get("gramalign")
        if ours and len(summaries) > 1:
            pairs = [("TTFM p50", "TTFM p50 (ms)"), ("TTFM max", "TTFM max (ms)"), ("TBM p50", "TBM p50 (µs)"),
                     ("TBM p99", "TBM p99 (µs)"), ("TBM max", "TBM max (µs)")]
            print("Ratios gramalign / other (below 1: gramalign is faster)\n")
            print_table(["other"], RATIO_COLUMNS, [([other], [_ratio(ours[key], s[key]) for _, key in pairs])
                                                   for other, s in summaries.items() if other != "gramalign"])
        refusals = [(engine, index, o) for engine, result in entry["engines"].items() if "outcomes" in result
                    for index, o in enumerate(result["outcomes"]) if o["outcome"] not in ("accepted", "partial")]
        if refusals:
            print(f"Disagreements ({len(refusals)}: an engine refusing a text the reference Earley recognizer "
                  "accepts; first 10):\n")
            for engine, index, o in refusals[:10]:
                text, ids = entry["texts"][index], entry["ids"][index]
                if o["outcome"] == "refused":
                    before = entry["decode"](ids[:o["position"]])
                    print(f"- {engine}, text {index}, token {o['position']} {entry['decode']([o['token']])!r} "
                          f"({o['how'].strip()}) after {before[-60:]!r}")
                elif o["outcome"] == "exception":
                    print(f"- {engine}, text {index}: raised {o['how']}")
                else:
                    print(f"- {engine}, text {index}: every token taken, the end refused: {text[-60:]!r}")
            print()


AMBIGUOUS_COLUMNS = ["chars", "tokens", "outcome", "load + first mask (ms)", "mask p99 (µs)", "mask max (µs)",
                     "wall (ms)", "peak RSS growth (MiB)", "preempted"]


def print_ambiguous(report: dict, engines: list[Engine]) -> None:
    print("## 3. Highly ambiguous grammars\n")
    rows = []
    for grammar, entry in report.items():
        for engine in engines:
            r = entry["engines"].get(engine.name)
            if r is None:
                continue
            label = [_short(entry["grammar"]), engine.name]
            if "error" in r:
                rows.append((label, [len(entry["text"]), len(entry["ids"]), _short(r["error"], 90)]
                             + ["-"] * (len(AMBIGUOUS_COLUMNS) - 3)))
                continue
            outcome = r["outcome"] if r["position"] is None or r["outcome"] == "accepted" else \
                f"{r['outcome']} at token {r['position']}"
            rows.append((label, [len(entry["text"]), len(entry["ids"]), outcome, r["first_mask_s"] * 1000,
                                 percentile(r["masks_us"], 99), max(r["masks_us"]), r["wall_s"] * 1000,
                                 r["peak_growth_bytes"] / 2**20, r["preempted"]]))
    print_table(["grammar", "engine"], AMBIGUOUS_COLUMNS, rows)


# -- main ------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=50, help="random texts per grammar (section 2)")
    parser.add_argument("--max-tokens", type=int, default=200, help="longest text kept, in tokens")
    parser.add_argument("--repeats", type=int, default=5, help="time-to-first-mask measurements per engine")
    parser.add_argument("--ambiguous-chars", type=int, nargs="+", default=[200],
                        help="text lengths in section 3 (several: one row each, to see the growth)")
    parser.add_argument("--budget", type=float, default=300.0,
                        help="seconds per grammar and engine for the walks (checked between masks)")
    parser.add_argument("--grammar", action="append", default=[], metavar="FILE",
                        help="another GBNF file for sections 1 and 2 (repeatable)")
    parser.add_argument("--no-default-grammars", action="store_true",
                        help="section 2 walks only the --grammar files (not arithmetic, c, ambiguous JSON)")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated, from " + ", ".join(ENGINES))
    parser.add_argument("--sections", default="loads,masks,ambiguous",
                        help="comma-separated, from loads,masks,ambiguous")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="OUT", help="write every raw number here")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: defaults --texts 5 --repeats 2 --ambiguous-chars 60 --budget 10")
    args = parser.parse_args()
    if args.quick:  # new defaults; flags given explicitly still win
        parser.set_defaults(texts=5, repeats=2, ambiguous_chars=[60], budget=10.0)
        args = parser.parse_args()
    sections = {s.strip() for s in args.sections.split(",") if s.strip()}
    unknown = sections - {"loads", "masks", "ambiguous"}
    names = [n.strip().lower() for n in args.engines.split(",") if n.strip()]
    if unknown or any(n not in ENGINES for n in names):
        parser.error(f"unknown sections {sorted(unknown)} or engines {[n for n in names if n not in ENGINES]}")

    tokenizer = llama_tokenizer()
    decode = lambda ids: tokenizer.decode(ids, skip_special_tokens=False)  # noqa: E731
    engines = []
    for name in names:
        started = time.perf_counter()
        try:
            engines.append(ENGINES[name](tokenizer))
        except ImportError as exc:
            print(f"skipping {ENGINES[name].name}: {exc}", file=sys.stderr)
            continue
        print(f"{ENGINES[name].name} ready in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)

    shipped = {p.name: p.read_text() for p in sorted(GBNF_DIR.glob("*.gbnf"))}
    extra = {}
    for file in args.grammar:
        text = Path(file).read_text()
        name = Path(file).name
        extra[name if shipped.get(name, text) == text and name not in extra else file] = text
    walked = {} if args.no_default_grammars else {
        "arithmetic.gbnf": (GBNF_DIR / "arithmetic.gbnf").read_text(), "c.gbnf": (GBNF_DIR / "c.gbnf").read_text(),
        "json, ambiguous number": ambiguous_json()}
    walked.update(extra)
    loads_set = {**shipped, "json, ambiguous number": ambiguous_json(), **AMBIGUOUS, **extra}

    header = header_lines(tokenizer, sys.argv)
    header.append("engines: " + ", ".join(f"{e.name} {e.version}" for e in engines))
    print("\n".join(header) + "\n", flush=True)
    dump = {"header": header, "args": vars(args)}

    if "loads" in sections:
        rows = measure_loads(engines, loads_set)
        dump["loads"] = rows
        print_loads(rows, engines)

    if "masks" in sections:
        report = {}
        for name, text in walked.items():
            try:
                sequences, dropped = sample_texts(text, name, tokenizer, args.texts, args.max_tokens, args.seed)
            except Exception as exc:  # noqa: BLE001 - e.g. a GBNF text the reference reader refuses
                print(f"{name}: no texts ({first_line(exc)})", file=sys.stderr)
                continue
            report[name] = {"texts": [s for s, _ in sequences], "ids": [ids for _, ids in sequences],
                            "dropped": dropped, "decode": decode,
                            "engines": measure_masks(engines, name, text, sequences, args.repeats, args.budget)}
        print_masks(report, engines)
        dump["masks"] = {name: {k: v for k, v in entry.items() if k != "decode"} for name, entry in report.items()}

    if "ambiguous" in sections:
        report = {}
        for grammar, text in AMBIGUOUS.items():
            for chars in args.ambiguous_chars:
                sentence = ambiguous_text(grammar, chars, args.seed)
                ids = tokenizer.encode(sentence, add_special_tokens=False).ids
                report[f"{grammar}, {len(sentence)} chars"] = {
                    "grammar": grammar, "grammar_text": text, "text": sentence, "ids": ids,
                    "engines": measure_ambiguous(engines, grammar, text, ids, args.budget)}
        print_ambiguous(report, engines)
        dump["ambiguous"] = report

    if args.json:
        Path(args.json).write_text(json.dumps(dump, ensure_ascii=False))
        print(f"raw numbers: {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
