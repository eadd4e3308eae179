"""Does gramalign read Lark grammars as lark does, on the grammars of lark's own test suite?

Three phases:

1. extract: every grammar text of lark's test suite (string literals and concatenations that look like a
   grammar in ``tests/*.py`` and ``tests/*/*.py``, the ``.lark`` files of ``tests/`` and ``tests/grammars/``,
   and lark's ``python.lark`` as ``test_python_grammar.py`` uses it), with the start symbols the tests pass
   and the strings of the test function as example texts. A text is kept for each start symbol that lark's
   LALR parser builds it with (``start``, else the tests' ``start=`` values and the first rule). Grammars that
   ``%declare`` only an INDENT/DEDENT pair get lark's ``Indenter`` as postlex and ``ga.Indentation`` with the
   same newline terminal and bracket pairs; other ``%declare``-d terminals need an external lexer and the
   grammar is skipped. A grammar whose regexps only the ``regex`` module compiles is built with ``regex=True``.
2. check: each kept grammar is loaded with gramalign (refusals grouped by error) and its verdicts are compared
   with lark's on texts: 40 random walks of gramalign's masks over a byte vocabulary (lark must accept each,
   and so must gramalign's tokenizer-free parser), and probe texts (the examples, the valid/invalid cases of
   ``test_python_grammar.py``, concatenations of the grammar's lexemes and one-step edits of accepted texts),
   on which the parser must agree with lark. A disagreement of an indentation grammar is flagged
   ``final_newline_supplied`` when lark agrees once the text ends in a newline (gramalign supplies a missing
   final newline, lark's Indenter does not). Each grammar runs in a forked worker; one that takes longer than
   ``--timeout`` seconds is recorded as a timeout and a fresh worker goes on with the next.
3. report: grammar counts by phase, gramalign's refusals grouped by error, the verdict totals and every
   grammar with disagreements (its text, categories and a few texts of each category).

Data: lark's sdist from the package registry, the version of the installed lark (the oracle):

    pip download --no-deps --no-binary :all: lark==1.3.1 -d /tmp/lark-sdist
    tar -xzf /tmp/lark-sdist/lark-1.3.1.tar.gz -C /tmp/lark-sdist

    python benchmarks/lark_test_suite.py --lark-sdist /tmp/lark-sdist/lark-1.3.1 [--timeout 60] [--seed 1]
        [--only ID ...] [--json OUT] [--verbose] [--parser earley [--lexer dynamic_complete]]

With ``--parser earley`` the oracle is lark's Earley parser (its dynamic lexer, or
``--lexer dynamic_complete``) and gramalign loads each grammar with the same options; grammars
with an indentation layout are skipped (a postlexer, which lark's Earley parser does not take).

IDs are the indices of the kept (text, start) pairs in extraction order, stable for one sdist.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime
import importlib
import json
import multiprocessing as mp
import os
import platform
import random
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

import lark  # noqa: E402

RULE_LINE = re.compile(r"^\s*[?!]?[_a-zA-Z][_a-zA-Z0-9]*(\.-?\d+)?(\{[^}\n]*\})?\s*:", re.MULTILINE)
DIRECTIVE = re.compile(r"^\s*%(import|ignore|declare|override|extend)[ \t]", re.MULTILINE)
FIRST_RULE = re.compile(r"^\s*[?!]?([_a-z][_a-z0-9]*)(\.-?\d+)?\s*:", re.MULTILINE)
DECLARE = re.compile(r"^[ \t]*%declare\b(.*)$", re.MULTILINE)
LARK_CALLS = {"Lark", "_Lark", "Lark_StandAlone", "make_lexer", "_make_lexer", "Lark.open", "_Lark_open"}
PARSE_CALLS = {"parse", "lex", "parse_interactive", "scan"}
PYTHON_STARTS = ["file_input", "number"]  # test_python_grammar.py parses with both
LARK_BUILD_SECONDS = 20
WALKS, WALK_MAX_BYTES, PROBES = 40, 120, 150
MAX_DISAGREEMENTS, MAX_PER_CATEGORY = 24, 4
DOCUMENTED_ERRORS = ("LarkGrammarError", "GrammarError", "RegexError")  # other load errors keep a traceback
LOAD_COUNTS = ("walk", "walk_disagree", "probe", "probe_disagree", "lark_yes")


def first_line(exc) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


# ---------------------------------------------------------------------------------------------- extract


def call_name(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def const_str(node, names: dict[str, str]):
    """The str value of a constant, also through ``dedent(...)``, ``"a" + "b"`` and module-level string
    ``names`` (test_reconstructor.py builds its grammars from a module-level ``common``); else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Call) and call_name(node) == "dedent" and node.args:
        inner = const_str(node.args[0], names)
        return None if inner is None else textwrap.dedent(inner)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = const_str(node.left, names), const_str(node.right, names)
        if a is not None and b is not None:
            return a + b
    return None


def module_strings(tree) -> dict[str, str]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = const_str(node.value, out)
            if value is not None:
                out[node.targets[0].id] = value
    return out


def module_lists(tree, names) -> dict[str, list[str]]:
    """Module-level ``NAME = [str, ...]`` (test_python_grammar.py's valid/invalid cases)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Tuple)):
            values = [const_str(e, names) for e in node.value.elts]
            if values and all(v is not None for v in values):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        out[target.id] = values
    return out


class Collector(ast.NodeVisitor):
    """Per innermost function or class: grammar candidates, the start symbols of its Lark calls, the arguments
    of its parse calls and its other short strings (the example texts)."""

    def __init__(self, key_prefix: str, names: dict[str, str]):
        self.key_prefix, self.names = key_prefix, names
        self.stack = ["<module>"]
        self.funcs: dict[str, dict] = {}

    def func(self) -> dict:
        return self.funcs.setdefault(f"{self.key_prefix}::{'.'.join(self.stack)}",
                                     {"grammars": {}, "parse_args": [], "strings": [], "call_starts": set()})

    def visit_FunctionDef(self, node):
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def _grammar(self, text, lineno, starts=()):
        self.func()["grammars"].setdefault(text, {"lineno": lineno, "starts": set()})["starts"].update(starts)

    def visit_Call(self, node):
        name = call_name(node)
        if name in LARK_CALLS and node.args:
            starts = set()
            for kw in node.keywords:
                if kw.arg == "start":
                    value = const_str(kw.value, self.names)
                    if value is not None:
                        starts.add(value)
                    elif isinstance(kw.value, (ast.List, ast.Tuple)):
                        starts.update(v for v in (const_str(e, self.names) for e in kw.value.elts) if v is not None)
            text = const_str(node.args[0], self.names)
            if text is not None:
                self._grammar(text, node.lineno, starts)
            self.func()["call_starts"].update(starts)
        if name in PARSE_CALLS and node.args:
            text = const_str(node.args[0], self.names)
            if text is not None:
                self.func()["parse_args"].append(text)
        self.generic_visit(node)

    def visit_BinOp(self, node):
        text = const_str(node, self.names)
        if text is not None and isinstance(node.op, ast.Add) and (RULE_LINE.search(text) or DIRECTIVE.search(text)):
            self._grammar(text, node.lineno)
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            if RULE_LINE.search(node.value) or DIRECTIVE.search(node.value):
                self._grammar(node.value, node.lineno)  # as written: lark reads indented grammars as they are
            elif len(node.value) <= 300:
                self.func()["strings"].append(node.value)


def make_indenter(indent):
    from lark.indenter import Indenter

    class _Indenter(Indenter):
        NL_type = indent["newline"]
        OPEN_PAREN_types = list(indent["open"])
        CLOSE_PAREN_types = list(indent["close"])
        INDENT_type = indent["indent"]
        DEDENT_type = indent["dedent"]
        tab_len = 8
    return _Indenter()


PARSER = {"parser": "lalr"}  # --parser/--lexer: which of lark's parsers is the oracle (set once, before any fork)


def build_lark(item, **extra):
    """lark's parser (LALR unless --parser earley) of a kept item (or a candidate with the same keys)."""
    kwargs = dict(start=item["start"], import_paths=item["import_paths"], **PARSER, **extra)
    if item.get("regex"):
        kwargs["regex"] = True
    if item["indent"]:
        kwargs["postlex"] = make_indenter(item["indent"])
    if item["path"]:
        return lark.Lark.open(item["path"], **kwargs)
    return lark.Lark(item["text"], **kwargs)


class LarkBuildTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise LarkBuildTimeout()


def build_lark_bounded(item):
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LARK_BUILD_SECONDS)
    try:
        return build_lark(item)
    finally:
        signal.alarm(0)


def indent_layout(text):
    """(skip reason, indentation layout) from a grammar's ``%declare`` lines; (None, None) without any."""
    declared = set()
    for m in DECLARE.finditer(text):
        declared |= set(m.group(1).split("//")[0].split())
    if not declared:
        return None, None
    ind = [d for d in declared if d.lstrip("_") == "INDENT"]
    ded = [d for d in declared if d.lstrip("_") == "DEDENT"]
    if declared != set(ind) | set(ded) or len(ind) != 1 or len(ded) != 1:
        return f"%declare {' '.join(sorted(declared))} (external lexer)", None
    nl = next((n for n in ("_NEWLINE", "NEWLINE", "_NL", "NL") if re.search(rf"\b{n}\b", text)), None)
    if nl is None:
        return "%declare of indent/dedent without a newline terminal", None
    pairs = [("LPAR", "RPAR", "()"), ("LSQB", "RSQB", "[]"), ("LBRACE", "RBRACE", "{}")]
    present = [p for p in pairs if (re.search(rf"\b{p[0]}\b", text) and re.search(rf"\b{p[1]}\b", text))
               or (f'"{p[2][0]}"' in text and f'"{p[2][1]}"' in text)]
    return None, {"newline": nl, "indent": ind[0], "dedent": ded[0],
                  "open": [p[0] for p in present], "close": [p[1] for p in present]}


def candidate_starts(text, call_starts) -> list[str]:
    starts = ["start"] + sorted(call_starts)
    m = FIRST_RULE.search(text)
    if m:
        starts.append(m.group(1))
    return list(dict.fromkeys(starts))


def find_grammars(tests: Path) -> dict[str, dict]:
    """Grammar text -> origins, start symbols, example texts, file path (for .lark files)."""
    found: dict[str, dict] = {}
    for path in sorted(list(tests.glob("*.py")) + list(tests.glob("*/*.py")), key=str):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        collector = Collector(str(path.relative_to(tests)), module_strings(tree))
        collector.visit(tree)
        for key, info in collector.funcs.items():
            examples = list(dict.fromkeys(info["parse_args"] + info["strings"]))
            for text, g in info["grammars"].items():
                e = found.setdefault(text, {"origins": [], "starts": set(), "examples": [], "path": None})
                e["origins"].append(f"{key}:{g['lineno']}")
                e["starts"] |= g["starts"] | info["call_starts"]
                e["examples"] += [x for x in examples if x not in e["examples"]]
    for path in sorted(list(tests.glob("*.lark")) + list(tests.glob("grammars/*.lark")), key=str):
        # loaded with Lark.open, so that relative imports resolve against the file
        e = found.setdefault(path.read_text(encoding="utf-8"), {"origins": [], "starts": set(), "examples": []})
        e["origins"].append(str(path.relative_to(tests)))
        e["path"] = str(path)
    # test_python_grammar.py opens the installed lark's python.lark, with its PythonIndenter
    python_lark = Path(lark.__file__).parent / "grammars" / "python.lark"
    tree = ast.parse((tests / "test_python_grammar.py").read_text(encoding="utf-8"))
    found[python_lark.read_text(encoding="utf-8")] = {
        "origins": ["lark/grammars/python.lark (test_python_grammar.py)"], "starts": {"file_input"},
        "path": str(python_lark), "examples": [], "python_lists": module_lists(tree, module_strings(tree))}
    return found


def extract(tests: Path) -> tuple[list[dict], dict]:
    """The (text, start) pairs lark builds (LALR unless --parser earley), and counts of what was found, skipped and rejected."""
    import_paths = [str(tests), str(tests / "grammars")]
    found = find_grammars(tests)
    stats = {"candidates": len(found), "skipped_declare": [], "lark_rejected": {}}
    kept = []
    with contextlib.chdir(tests):  # the tests' relative %import paths
        for text, e in found.items():
            skip, indent = indent_layout(text)
            if indent and PARSER["parser"] != "lalr":
                skip = "an indentation layout needs a postlexer, which lark's Earley parser does not take"
            if skip:
                stats["skipped_declare"].append({"origin": e["origins"][0], "reason": skip, "text": text})
                continue
            python = "python_lists" in e
            starts = PYTHON_STARTS if python else candidate_starts(text, e["starts"])
            ok_starts, errors, use_regex = [], [], False
            for start in starts:
                candidate = {"text": text, "start": start, "path": e["path"], "indent": indent,
                             "import_paths": import_paths}
                try:
                    try:
                        build_lark_bounded(candidate)
                    except lark.exceptions.LexError as exc:
                        if "Cannot compile token" not in str(exc):  # a pattern that needs the regex module
                            raise
                        build_lark_bounded({**candidate, "regex": True})
                        use_regex = True
                    ok_starts.append(start)
                except Exception as exc:  # noqa: BLE001 - lark's verdict on the grammar, whatever it is
                    errors.append((start, type(exc).__name__, first_line(exc)))
                if ok_starts and start == "start" and not python:
                    break  # the default start works: it is what the test used
            if not ok_starts:
                start, etype, msg = errors[0]
                stats["lark_rejected"].setdefault(etype, []).append(
                    {"origin": e["origins"][0], "error": f"{start}: {etype}: {msg}", "text": text[:300]})
                continue
            for start in ok_starts:
                item = {"id": len(kept), "text": text, "start": start, "origins": e["origins"], "path": e["path"],
                        "indent": indent, "examples": e["examples"], "regex": use_regex,
                        "import_paths": import_paths}
                if python:
                    item["python_lists"] = e["python_lists"]
                kept.append(item)
    stats["kept"] = len(kept)
    stats["kept_texts"] = len({k["text"] for k in kept})
    return kept, stats


# ---------------------------------------------------------------------------------------------- check


def lark_accepts(oracle, text: str):
    """lark's verdict; a crash of lark itself (not a LarkError) reads as a string, a disagreement either way."""
    try:
        oracle.parse(text)
    except lark.exceptions.LarkError:
        return False
    except Exception as exc:  # noqa: BLE001
        return f"lark crashed: {type(exc).__name__}: {first_line(exc)}"
    return True


def load_gramalign(item):
    import gramalign as ga

    kwargs = dict(start=item["start"], import_paths=item["import_paths"], **PARSER)
    if item["indent"]:
        i = item["indent"]
        kwargs["indentation"] = ga.Indentation(newline=i["newline"], indent=i["indent"], dedent=i["dedent"],
                                               open_brackets=tuple(i["open"]), close_brackets=tuple(i["close"]))
    if item["path"]:
        return ga.Grammar.from_lark_file(item["path"], **kwargs)
    return ga.Grammar.from_lark(item["text"], **kwargs)


def token_pool(item, oracle, texts) -> list[str]:
    """Lexemes to build probe texts from: the grammar's string terminals, and the tokens lark reads in
    ``texts`` (kept with keep_all_tokens)."""
    from lark import Token
    from lark.lexer import PatternStr

    pool = {t.pattern.value for t in oracle.terminals if isinstance(t.pattern, PatternStr) and t.pattern.value}
    try:
        keeper = build_lark(item, keep_all_tokens=True)
    except Exception:  # noqa: BLE001 - then the string terminals alone
        return sorted(pool)
    for text in texts:
        try:
            tree = keeper.parse(text)
        except Exception:  # noqa: BLE001
            continue
        tokens = [tree] if isinstance(tree, Token) else tree.scan_values(lambda v: isinstance(v, Token))
        pool.update(str(tok.value) for tok in tokens if tok.value)
    return sorted(pool)


def probes(pool, seeds, rng, count=PROBES) -> list[str]:
    """Concatenations of pool lexemes and one-step edits of accepted texts."""
    out = []
    for _ in range(count // 2):
        if not pool:
            break
        sep = rng.choice(["", "", " ", "\n"])
        out.append(sep.join(rng.choice(pool) for _ in range(rng.randint(1, 6))))
    for _ in range(count // 2):
        if not seeds:
            break
        s = rng.choice(seeds)
        op = rng.randrange(5)
        i = rng.randint(0, len(s))
        if op == 0 and s:
            i = min(i, len(s) - 1)
            s = s[:i] + s[i + 1:]
        elif op == 1 and pool:
            s = s[:i] + rng.choice(pool) + s[i:]
        elif op == 2:
            s = s[:i] + rng.choice(" \n\t") + s[i:]
        elif op == 3 and s:
            j = rng.randint(0, len(s))
            s = s[:min(i, j)] + s[max(i, j):]
        elif op == 4 and pool:
            s = s + rng.choice(pool)
        out.append(s)
    return out


def check_grammar(item, seed: int) -> dict:
    """Load one kept grammar with gramalign and compare its verdicts with lark's."""
    from gramalign.grammar.parser_tables import build_parser_tables
    from gramalign.parsing import IncrementalParser
    from support.grammar_walks import random_texts

    res = {"id": item["id"], "start": item["start"], "origin": item["origins"][0]}
    started = time.time()
    try:
        g = load_gramalign(item)
    except Exception as exc:  # noqa: BLE001 - a refusal, reported by error
        res.update(load="error", error_type=f"{type(exc).__module__}.{type(exc).__name__}", error=first_line(exc))
        if type(exc).__name__ not in DOCUMENTED_ERRORS:
            res["traceback"] = traceback.format_exc()[-3000:]
        return res
    res["load"] = "ok"
    res["load_s"] = round(time.time() - started, 2)
    oracle = build_lark(item)
    disagreements, categories = [], {}
    counts = dict.fromkeys(LOAD_COUNTS, 0)

    def note(kind, text, lark_v, ga_v, extra=None):
        """Count a disagreement; keep a few texts per (kind, verdicts, flags) category."""
        counts[kind + "_disagree"] += 1
        extra = extra or {}
        cat = f"{kind} lark={lark_v} gramalign={ga_v}" + "".join(f" {k}" for k in sorted(extra) if extra[k] is True)
        categories[cat] = categories.get(cat, 0) + 1
        kept_of_cat = sum(d["category"] == cat for d in disagreements)
        if kept_of_cat < MAX_PER_CATEGORY and len(disagreements) < MAX_DISAGREEMENTS:
            disagreements.append({"category": cat, "kind": kind, "text": text, "lark": lark_v, "gramalign": ga_v,
                                  **extra})

    def final_newline_supplied(text, verdict) -> bool:
        # gramalign supplies a missing final newline of an indentation grammar; lark's Indenter does not
        return bool(item["indent"]) and lark_accepts(oracle, text + "\n") is verdict

    # walks of gramalign's masks: sentences as the matcher sees them, which lark and the parser must accept
    try:
        walks = random_texts(g, WALKS, seed=seed, max_bytes=WALK_MAX_BYTES)
    except Exception as exc:  # noqa: BLE001
        res["walk_error"] = f"{type(exc).__name__}: {first_line(exc)}"
        walks = []
    parser = IncrementalParser(build_parser_tables(g))
    walk_strs = []
    for t in walks:
        counts["walk"] += 1
        try:
            s = t.decode()
        except UnicodeDecodeError:
            note("walk", repr(t), "not UTF-8", True)
            continue
        walk_strs.append(s)
        lv, pv = lark_accepts(oracle, s), parser.accepts(t)
        if lv is not True or not pv:
            extra = {"parser_accepts": pv}
            if lv is False and final_newline_supplied(s, True):
                extra["final_newline_supplied"] = True
            note("walk", s, lv, True, extra)
    # probe texts, on which the parser must agree with lark both ways
    texts = list(item["examples"])
    for values in (item.get("python_lists") or {}).values():
        texts += values + [v + "\n" for v in values]
    accepted = [s for s in walk_strs + texts if lark_accepts(oracle, s) is True]
    texts += probes(token_pool(item, oracle, accepted), accepted, random.Random(seed))
    for s in dict.fromkeys(texts):
        counts["probe"] += 1
        lv = lark_accepts(oracle, s)
        counts["lark_yes"] += lv is True
        pv = parser.accepts(s.encode())
        if lv is not pv:
            flagged = lv is False and final_newline_supplied(s, pv)
            note("probe", s, lv, pv, {"final_newline_supplied": True} if flagged else {})
    res.update(counts=counts, disagreements=disagreements, categories=categories,
               total_s=round(time.time() - started, 2))
    return res


def _worker(connection, items, tests: Path, seed: int):
    os.chdir(tests)  # the tests' relative %import paths
    for item in items:
        try:
            res = check_grammar(item, seed)
        except Exception as exc:  # noqa: BLE001 - a bug of this harness or of lark: report and go on
            res = {"id": item["id"], "load": "checker_error", "error": f"{type(exc).__name__}: {first_line(exc)}",
                   "traceback": traceback.format_exc()[-3000:]}
        connection.send(res)


def check(items, tests: Path, timeout: float, seed: int, on_result) -> dict[int, dict]:
    """Results by id. Grammars run one after another in a forked worker, which sends each result as soon
    as it has it; a grammar without a result after ``timeout`` seconds is a timeout, and a fresh worker goes
    on with the next grammar (so does one after a worker died)."""
    importlib.import_module("gramalign.parsing")  # once before forking rather than in every worker

    context = mp.get_context("fork")
    results, todo = {}, list(items)
    while todo:
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(target=_worker, args=(sender, todo, tests, seed), daemon=True)
        process.start()
        sender.close()  # so that a dead worker reads as EOF
        while todo:
            item = todo.pop(0)
            try:
                res = receiver.recv() if receiver.poll(timeout) else None
                if res is None:
                    res = {"id": item["id"], "load": "timeout", "error": f"over {timeout:g} s"}
            except (EOFError, OSError):
                process.join(5)
                res = {"id": item["id"], "load": "crash", "error": f"worker exit {process.exitcode}"}
            results[item["id"]] = res
            on_result(res)
            if res["load"] in ("timeout", "crash"):
                break
        process.kill()
        process.join()
        receiver.close()
    return results


# ---------------------------------------------------------------------------------------------- report


def reason(msg: str) -> str:
    """An error message without the names, positions and literals that tell grammars apart."""
    msg = re.sub(r"^line \d+(, column \d+)?: ", "", msg)
    msg = re.sub(r"terminal [A-Z_0-9]+( \(imported[^)]*\))?", "terminal X", msg)
    msg = re.sub(r"'[^']*'|\"[^\"]*\"|/[^ ]*/", "…", msg)
    return msg[:140]


def report(kept, stats, results, verbose: bool):
    print(f"grammar texts found: {stats['candidates']}")
    print(f"  skipped, %declare needing an external lexer: {len(stats['skipped_declare'])}")
    for e in stats["skipped_declare"]:
        print(f"        {e['origin']}: {e['reason']}")
    print(f"  rejected by lark ({PARSER['parser']}): {sum(len(v) for v in stats['lark_rejected'].values())}")
    for etype, rejected in sorted(stats["lark_rejected"].items(), key=lambda kv: -len(kv[1])):
        print(f"     {len(rejected):4d}  {etype}")
    print(f"  accepted by lark ({PARSER['parser']}): {stats['kept_texts']} texts, {stats['kept']} (text, start) pairs")

    by_load = {}
    for r in results:
        by_load.setdefault(r["load"], []).append(r)
    print(f"\ngramalign ({len(results)} checked): {', '.join(f'{k} {len(v)}' for k, v in by_load.items())}")
    groups = {}
    for r in by_load.get("error", []):
        groups.setdefault((r["error_type"], reason(r["error"])), []).append(r)
    print("\nrefused by gramalign, grouped:")
    for (etype, why), rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(rs):3d}  {etype}: {why}")
        for r in rs[:99 if verbose else 2]:
            print(f"        id {r['id']} {r['origin']} start={r['start']}\n          {r['error']}")
    for key in ("checker_error", "timeout", "crash"):
        for r in by_load.get(key, []):
            print(f"\n{key}: id {r['id']} {kept[r['id']]['origins'][0]}: {r.get('error')}\n{r.get('traceback', '')}")
    for r in by_load.get("error", []):
        if "traceback" in r:
            print(f"\nundocumented error, id {r['id']}: {r['error_type']}: {r['error']}\n{r['traceback']}")

    ok = by_load.get("ok", [])
    for r in ok:
        if r.get("walk_error"):
            print(f"\nwalk error, id {r['id']}: {r['walk_error']}")
    totals = {k: sum(r["counts"][k] for r in ok) for k in LOAD_COUNTS}
    print(f"\nverdict comparison over {len(ok)} loaded grammars: {totals}")
    bad = [r for r in ok if r["counts"]["walk_disagree"] or r["counts"]["probe_disagree"]]
    print(f"grammars with disagreements: {len(bad)}")
    for r in bad:
        k = kept[r["id"]]
        print(f"\n=== id {r['id']} {r['origin']} start={r['start']} indent={bool(k['indent'])}")
        print("    " + (k["text"].strip().replace("\n", "\n    ") if len(k["text"]) < 1500
                        else f"[{len(k['text'])} chars]"))
        print(f"    categories: {r['categories']}")
        for d in r["disagreements"]:
            print(f"      {d['category']}: {d['text']!r}")


def header_lines(sdist: Path) -> list[str]:
    """Machine, date, command and versions that start the report."""
    def git(*args) -> str:
        try:
            return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""
    commit = git("rev-parse", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no", "--", "src"):
        commit += " + uncommitted changes in src/"
    pkg_info = sdist / "PKG-INFO"
    sdist_version = next((line.split(":", 1)[1].strip() for line in pkg_info.read_text().splitlines()
                          if line.startswith("Version:")), "?") if pkg_info.exists() else "?"
    return [f"machine: {platform.machine()}, {os.cpu_count()} cores (affinity {sorted(os.sched_getaffinity(0))}), "
            f"{platform.system()} {platform.release()}, python {platform.python_version()}",
            f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
            f"command: {' '.join(shlex.quote(a) for a in sys.argv)}",
            f"lark {lark.__version__} (oracle), test suite of lark {sdist_version} from {sdist}",
            f"gramalign commit: {commit}"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lark-sdist", type=Path, required=True, help="the unpacked lark sdist (with tests/)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per grammar in the check")
    parser.add_argument("--only", type=int, nargs="+", metavar="ID", help="check only these kept grammars")
    parser.add_argument("--seed", type=int, default=1, help="of the mask walks and the probe texts")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the kept grammars and raw results here")
    parser.add_argument("--verbose", action="store_true", help="list every refused grammar, not two per group")
    parser.add_argument("--parser", choices=("lalr", "earley"), default="lalr", help="lark's parser, the oracle")
    parser.add_argument("--lexer", choices=("dynamic", "dynamic_complete"),
                        help="with --parser earley: lark's Earley lexer (default dynamic)")
    args = parser.parse_args(argv)
    PARSER.update(parser=args.parser, **({"lexer": args.lexer} if args.lexer else {}))
    sdist = args.lark_sdist.resolve()
    tests = sdist / "tests"
    if not tests.is_dir():
        parser.error(f"{tests} is not a directory: --lark-sdist is the unpacked sdist, containing tests/")
    header = header_lines(sdist)
    print("\n".join(header), flush=True)
    started = time.time()
    kept, stats = extract(tests)
    print(f"extract: {stats['kept']} (text, start) pairs kept of {stats['candidates']} texts, "
          f"{time.time() - started:.0f} s", flush=True)
    if args.only and not set(args.only) <= set(range(len(kept))):
        parser.error(f"--only: ids are 0 to {len(kept) - 1}")
    todo = [kept[i] for i in args.only] if args.only else kept
    done = [0]

    def on_result(res):
        done[0] += 1
        c = res.get("counts", {})
        if res["load"] != "ok" or c.get("walk_disagree") or c.get("probe_disagree"):
            print(f"  id {res['id']}: {res['load']} {res.get('error', '')[:100]} "
                  f"{c.get('walk_disagree', '')} {c.get('probe_disagree', '')}".rstrip(), flush=True)
        if done[0] % 25 == 0:
            print(f"... {done[0]}/{len(todo)} grammars, {time.time() - started:.0f} s", flush=True)

    results = check(todo, tests, args.timeout, args.seed, on_result)
    results = [results[i] for i in sorted(results)]
    print(f"check: {len(results)} grammars, {time.time() - started:.0f} s\n", flush=True)
    report(kept, stats, results, args.verbose)
    if args.json:
        args.json.write_text(json.dumps({"header": header, "extract": stats, "kept": kept,
                                         "results": results}, indent=1, default=sorted))
    return 0


if __name__ == "__main__":
    sys.exit(main())
