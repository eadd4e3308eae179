"""Does the JSON Schema compiler accept exactly what the schemas validate, on real schemas?

For every schema of JSONSchemaBench's MaskBench split (``$GRAMALIGN_DATA_DIR/jsonschemabench/
maskbench/data``) or a stratified sample of it, compile the schema and check every test
instance (serialized compactly) with the tokenizer-free incremental parser. Each schema runs
in a forked worker with a timeout, so a pathological schema cannot stall the run. Prints a
markdown table per dataset: schemas, compiled, all tests agreeing, valid instances rejected,
invalid instances accepted, refusals by reason, timeouts.

    python benchmarks/json_schema_conformance.py [--sample N] [--timeout S] [--whitespace compact]
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import multiprocessing as mp
import os
import random
import sys
import time
from pathlib import Path


def data_dir() -> Path:
    return Path(os.environ.get("GRAMALIGN_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))


def check_schema(path: str, whitespace: str, property_order: str) -> dict:
    from gramalign.errors import GrammarError, SchemaCompileError
    from gramalign.grammar.grammar import Grammar
    from gramalign.grammar.parser_tables import build_parser_tables
    from gramalign.parsing import IncrementalParser

    document = json.loads(Path(path).read_text())
    result = {"compiled": False, "valid_rejected": 0, "invalid_accepted": 0, "agree": 0, "tests": 0, "reason": None}
    started = time.perf_counter()
    try:
        # integer_fraction: the tests' 1.0 for an integer is valid; strict=False: extra keys too (the
        # spec-exact language)
        grammar = Grammar.from_json_schema(document["schema"], whitespace=whitespace, property_order=property_order,
                                           integer_fraction=True, strict=False)
        parser = IncrementalParser(build_parser_tables(grammar))
    except SchemaCompileError as exc:
        result["reason"] = f"{exc.keyword or exc.message.split(':')[0][:60]}"
        result["detail"] = str(exc)[:300]
        return result
    except GrammarError as exc:  # a documented limit of the parser tables, not a crash
        result["reason"] = str(exc).split(":")[0][:60]
        result["detail"] = str(exc)[:300]
        return result
    except Exception as exc:  # a crash is a bug: report it as such
        result["reason"] = f"CRASH {type(exc).__name__}: {str(exc)[:80]}"
        return result
    result["compiled"] = True
    result["compile_seconds"] = time.perf_counter() - started
    for test in document["tests"]:
        text = json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False)
        accepted = parser.accepts(text.encode("utf-8"))
        result["tests"] += 1
        if accepted == test["valid"]:
            result["agree"] += 1
        elif test["valid"]:
            result["valid_rejected"] += 1
            result.setdefault("rejected_valid", []).append(text[:300])
        else:
            result["invalid_accepted"] += 1
            result.setdefault("accepted_invalid", []).append(text[:200])
    return result


def _worker(connection, path, whitespace, property_order):
    sys.setrecursionlimit(20000)
    try:
        connection.send(check_schema(path, whitespace, property_order))
    except BaseException as exc:  # noqa: BLE001 - report anything, including RecursionError
        connection.send({"compiled": False, "reason": f"CRASH {type(exc).__name__}: {str(exc)[:80]}",
                         "valid_rejected": 0, "invalid_accepted": 0, "agree": 0, "tests": 0})


def run_one(path: str, whitespace: str, property_order: str, timeout: float) -> dict:
    context = mp.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_worker, args=(sender, path, whitespace, property_order))
    process.start()
    if receiver.poll(timeout):
        result = receiver.recv()
    else:
        result = {"compiled": False, "reason": "TIMEOUT", "valid_rejected": 0, "invalid_accepted": 0,
                  "agree": 0, "tests": 0}
        process.kill()
    process.join()
    return result


def dataset_of(name: str) -> str:
    return name.split("---")[0] if "---" in name else name.rsplit("_", 1)[0]


def sample_paths(per_dataset: int, seed: int) -> list[Path]:
    """MaskBench schema files, ``per_dataset`` drawn from each dataset (0: all), grouped by dataset."""
    root = data_dir() / "jsonschemabench" / "maskbench" / "data"
    by_dataset = collections.defaultdict(list)
    for path in sorted(root.glob("*.json")):
        by_dataset[dataset_of(path.stem)].append(path)
    rng = random.Random(seed)
    chosen = []
    for dataset in sorted(by_dataset):
        paths = by_dataset[dataset]
        chosen += sorted(rng.sample(paths, min(per_dataset, len(paths)))) if per_dataset else paths
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=0, help="schemas per dataset (0: all)")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--whitespace", default="compact")
    parser.add_argument("--property-order", default="schema")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=15, help="how many refusal reasons to list")
    parser.add_argument("--details", help="write every refusal message and rejected valid instance to this file")
    args = parser.parse_args()
    import gramalign.parsing  # noqa: F401 - import (and numba-compile) once before forking

    rows, reasons, accepted_invalid, details, seconds = [], collections.Counter(), [], [], []
    totals = collections.Counter()
    started = time.time()
    for dataset, paths in itertools.groupby(sample_paths(args.sample, args.seed), key=lambda p: dataset_of(p.stem)):
        counts = collections.Counter()
        for path in paths:
            result = run_one(str(path), args.whitespace, args.property_order, args.timeout)
            counts["schemas"] += 1
            counts["compiled"] += result["compiled"]
            counts["all_agree"] += result["compiled"] and result["agree"] == result["tests"]
            counts["valid_rejected"] += result["valid_rejected"]
            counts["invalid_accepted"] += result["invalid_accepted"]
            counts["timeouts"] += result.get("reason") == "TIMEOUT"
            if result["compiled"]:
                seconds.append((result["compile_seconds"], path.name))
            if result.get("reason"):
                reasons[result["reason"]] += 1
            for text in result.get("accepted_invalid", []):
                accepted_invalid.append((path.name, text))
            if "detail" in result or "rejected_valid" in result:
                details.append(f"{path.name}: {result.get('detail') or 'valid rejected: ' + ' | '.join(result['rejected_valid'][:2])}")
        rows.append((dataset, counts))
        totals.update(counts)
    print(f"| dataset | schemas | compiled | all tests agree | valid rejected | invalid accepted | timeouts |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for dataset, c in rows + [("**total**", totals)]:
        share = 100 * c["all_agree"] / max(c["schemas"], 1)
        print(f"| {dataset} | {c['schemas']} | {c['compiled']} | {c['all_agree']} ({share:.1f}%) | "
              f"{c['valid_rejected']} | {c['invalid_accepted']} | {c['timeouts']} |")
    seconds.sort(reverse=True)
    if seconds:  # front end and parser tables (the LALR table and the lexer), in a fresh fork
        print(f"\ncompile time: max {seconds[0][0]:.2f} s, p99 {seconds[len(seconds) // 100][0]:.3f} s; slowest: "
              + ", ".join(f"{name} {value:.2f} s" for value, name in seconds[:5]))
    print(f"\nrefusals and failures (top {args.show}):")
    for reason, count in reasons.most_common(args.show):
        print(f"- {count} × {reason}")
    if accepted_invalid:
        print("\ninvalid instances accepted:")
        for name, text in accepted_invalid[:20]:
            print(f"- {name}: {text}")
    if args.details:
        Path(args.details).write_text("\n".join(details) + "\n")
    print(f"\n{time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
