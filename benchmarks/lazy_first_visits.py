"""Where the lazy JSON Schema engine's slow masks go (issue 35): first visits, in one process.

    GRAMALIGN_DATA_DIR=../shared/data PYTHONPATH=src taskset -c 0 .venv/bin/python \
        benchmarks/lazy_first_visits.py [--sample 10] [--seed 77] [--slow-us 500] [--force] \
        [--fresh K] [--engine gramalign|gramalign-eager] [--profile FILE]

Compiles each sampled MaskBench schema (as ``maskbench.py``'s worker does, with its warm-up)
and walks its test instances, and with ``--fresh K`` K fresh walks too (made first by
``fresh_walks.py`` in a worker, as ``maskbench.py`` makes them, so their compiles warm
nothing here), timing every mask fill (the cyclic collector paused around it). Prints the
time to first mask and the masks' percentiles; then, for test and fresh walks apart, the masks
grouped by the parts their path went through (a memo hit, an exact walk, a lexeme that ended,
a stack part, a context looked up) with the mean time in each part; then for the masks slower
than ``--slow-us`` the share of their time in each part (building parser states, classifying
a new lexical context, re-binding the store to grown tables, the trie walk kernel), and for
every parser state built the share of the build time by what the state needed (new rules, a
new lexer start). ``--force`` builds every parser state of a schema before its first walk
(schemas whose states take over 3 s are left out): what the masks cost once first visits cost
nothing. ``--profile FILE`` writes a cProfile of the mask fills after each schema's first
(``python -m pstats FILE``): what the walks' first visits cost, without the compile.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import gc
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import maskbench  # noqa: E402
from grammar_masks import llama_tokenizer, percentile  # noqa: E402
from json_schema_conformance import sample_paths  # noqa: E402

PARTS = {"states": "parser states built", "contexts": "new lexical contexts classified",
         "bind": "store re-bound to grown tables", "walk": "trie walk kernel"}
PATHS = {"exact": "an exact walk", "ended": "a lexeme ended", "part": "a stack part", "context": "a context looked up"}
"""Parts a mask's path goes through, for ``--paths``: each mask is grouped by the set it touched."""


class Timers:
    """Seconds and calls per part, accumulated by wrappers around the functions that do it."""

    def __init__(self):
        self.seconds = collections.Counter()
        self.states: list[tuple[float, bool, bool]] = []  # (µs, new rules, new lexer start) per state

    def wrap(self, owner, name: str, part: str) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - started
        setattr(owner, name, timed)

    def install(self) -> None:
        from gramalign.grammar import parser_tables_lazy
        from gramalign.masking.cfg import contexts, stack_parts, store

        self.wrap(parser_tables_lazy.LazyParserTables, "build", "states")
        self.wrap(contexts.LexicalContexts, "_build_context", "contexts")
        self.wrap(store.GrammarMaskStore, "_bind", "bind")
        self.wrap(store, "walk_trie_grammar", "walk")
        self.wrap(store.GrammarMaskStore, "walk", "exact")
        self.wrap(store.GrammarMaskStore, "_lexeme_ended", "ended")
        self.wrap(stack_parts.StackParts, "part", "part")
        self.wrap(contexts.LexicalContexts, "of", "context")
        original = parser_tables_lazy.LazyParserTables._build

        def build_one(tables, state):
            rules, starts = len(tables.automaton.rules), len(tables.lexer._starts)
            started = time.perf_counter()
            try:
                original(tables, state)
            finally:
                self.states.append(((time.perf_counter() - started) * 1e6, len(tables.automaton.rules) > rules,
                                    len(tables.lexer._starts) > starts))
        parser_tables_lazy.LazyParserTables._build = build_one


def force_states(compiled, seconds: float = 3.0) -> bool:
    """Build every parser state of ``compiled``'s lazy tables; False past ``seconds`` or
    where a part of the schema no walk has reached is refused."""
    from gramalign.errors import GramalignError

    tables = compiled.store.tables
    started, state = time.perf_counter(), 0
    while state < tables.num_states:
        if time.perf_counter() - started > seconds:
            return False
        try:
            tables.build(state)
        except GramalignError:
            return False
        state += 1
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=10, help="schemas per MaskBench dataset")
    parser.add_argument("--seed", type=int, default=77)
    parser.add_argument("--slow-us", type=float, default=500.0, help="a mask slower than this is broken down")
    parser.add_argument("--force", action="store_true", help="build every state before the first walk")
    parser.add_argument("--fresh", type=int, default=0, help="fresh walks per schema too (fresh_walks.py)")
    parser.add_argument("--engine", default="gramalign", choices=["gramalign", "gramalign-eager"])
    parser.add_argument("--profile", help="write a cProfile of the fills after the first to this file")
    args = parser.parse_args()
    profile = cProfile.Profile() if args.profile else None
    tokenizer = llama_tokenizer()
    paths = list(sample_paths(args.sample, args.seed))
    documents = [json.loads(path.read_text()) for path in paths]
    fresh = [{"ids": []} for _ in paths]
    if args.fresh:  # in a worker first, so its compiles warm nothing here
        fresh = maskbench.make_fresh(paths, documents, args.fresh, args.seed, 120.0)
    engine = maskbench.ENGINES[args.engine](tokenizer)
    timers = Timers()
    timers.install()
    bitmask = np.zeros((1, (tokenizer.get_vocab_size() + 31) // 32), dtype=np.int32)
    ttfm, masks, slow, slow_parts = [], [], [], collections.Counter()
    by_path = {"test": collections.defaultdict(list), "fresh": collections.defaultdict(list)}
    for document, report in zip(documents, fresh):
        started = time.perf_counter()
        try:
            compiled = engine.compile(document["schema"])
            engine.fill(engine.matcher(compiled), bitmask)
        except Exception:  # noqa: BLE001 - a refusal; maskbench.py counts those
            continue
        ttfm.append((time.perf_counter() - started) * 1e3)
        if args.force and not force_states(compiled):
            ttfm.pop()
            continue
        walks = [("test", tokenizer.encode(json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False),
                                           add_special_tokens=False).ids) for test in document["tests"]]
        walks += [("fresh", ids) for ids in report["ids"]]
        for kind, ids in walks:
            matcher = engine.matcher(compiled)
            try:
                for token in ids + [None]:
                    before = timers.seconds.copy()
                    gc.disable()
                    started = time.perf_counter_ns()
                    if profile is not None:
                        profile.enable()
                    engine.fill(matcher, bitmask)
                    if profile is not None:
                        profile.disable()
                    spent = (time.perf_counter_ns() - started) / 1000
                    gc.enable()
                    masks.append(spent)
                    parts = timers.seconds.copy()
                    parts.subtract(before)
                    by_path[kind][frozenset(p for p in PATHS if parts[p] > 0)].append((spent, parts))
                    if spent > args.slow_us:
                        slow.append(spent)
                        slow_parts.update(parts)
                    if token is None or not engine.accept(matcher, token, bitmask):
                        break
            except Exception:  # noqa: BLE001 - a part the walk reached and the engine refuses
                continue
    if profile is not None:
        profile.dump_stats(args.profile)
    print(f"{len(ttfm)} schemas (seed {args.seed}, {args.sample} per dataset){', states built first' if args.force else ''}")
    print(f"TTFM p50 / p90: {statistics.median(ttfm):.2f} / {percentile(ttfm, 90):.2f} ms")
    print(f"{len(masks)} masks, p50 / p90 / p99 / p99.9 / max: " + " / ".join(
        f"{percentile(masks, q):.0f}" for q in (50, 90, 99, 99.9)) + f" / {max(masks):.0f} µs")
    for kind, groups in by_path.items():
        every = [m for group in groups.values() for m, _ in group]
        if not every:
            continue
        print(f"\n{kind}: {len(every)} masks, p50 / p90 / p99: " + " / ".join(
            f"{percentile(every, q):.0f}" for q in (50, 90, 99)) + " µs; by the parts their path went through:")
        for path, timed in sorted(groups.items(), key=lambda item: -len(item[1])):
            label = ", ".join(PATHS[p] for p in PATHS if p in path) or "a memo hit"
            group = [m for m, _ in timed]
            inside = collections.Counter()
            for _, parts in timed:
                inside.update(parts)
            print(f"  {label}: {len(group) / len(every):.0%} of masks, {sum(group) / sum(every):.0%} of the time, "
                  f"p50 {statistics.median(group):.0f} µs; mean µs in " + ", ".join(
                      f"{part} {inside[part] * 1e6 / len(group):.0f}" for part in (*PARTS, *PATHS) if inside[part] > 0))
    total = sum(slow) / 1e6
    print(f"\n{len(slow)} masks over {args.slow_us:.0f} µs, {total * 1e3:.0f} ms:")
    for part, label in PARTS.items():
        print(f"  {label}: {slow_parts[part] / total:.0%}" if total else f"  {label}: -")
    if timers.states:
        states = np.array(timers.states)
        built = states[:, 0].sum()
        print(f"\n{len(states)} parser states built, {built / 1e3:.0f} ms:")
        for rules in (False, True):
            for start in (False, True):
                chosen = (states[:, 1] == rules) & (states[:, 2] == start)
                if chosen.any():
                    print(f"  {'new rules' if rules else 'no new rules'}, {'a new' if start else 'no new'} lexer "
                          f"start: {chosen.sum()} states, {states[chosen, 0].sum() / built:.0%} of the time, "
                          f"{states[chosen, 0].mean():.0f} µs each")


if __name__ == "__main__":
    main()
