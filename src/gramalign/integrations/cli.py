"""The ``gramalign`` command: compile, check, generate and bench from the shell.

A grammar argument is a file (``.lark`` Lark EBNF, ``.json`` JSON Schema, ``.gbnf``
llama.cpp GBNF, ``.regex`` one regular expression; ``--kind`` names the kind of a file with
another suffix), ``builtin:NAME`` (``json``, ``sql``, ``python``) or, with ``--regex``, a
pattern given inline. A vocabulary (``--tokenizer``) is read from a tokenizer file alone,
never by loading a model. Errors are printed with their position and exit with status 2;
``check`` exits with 1 when the text does not match.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from ..errors import GramalignError, StringRejected, VocabularyError
from ..grammar.grammar import Grammar
from ..masking.bitmask import unpack_bitmask_row
from ..masking.compiler import compile as compile_grammar
from ..tokens.vocabulary import Vocabulary
from .extras import require

BYTE_TOKENS = Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [b""], eos_token_ids=256,
                                          special_token_ids=[256])
"""One token per byte: the vocabulary ``check`` uses, so any text can be fed."""


KINDS = {"lark": (".lark",), "json": (".json",), "gbnf": (".gbnf",), "regex": (".regex", ".re", ".txt")}
"""Grammar file kinds (``--kind``) and the suffixes that name them."""


def load_grammar(spec: str, *, regex: bool = False, kind: "str | None" = None, property_order: str = "schema",
                 whitespace: str = "compact", strict: bool = True) -> Grammar:
    """The grammar a command-line argument names (see the module docstring); ``kind`` is
    the file's kind, else its suffix tells. ``strict`` closes JSON Schema objects that say
    nothing about extra keys (see :meth:`Grammar.from_json_schema`)."""
    if regex:
        return Grammar.from_regex(spec)
    if spec.startswith("builtin:"):
        return Grammar.builtin(spec.split(":", 1)[1])
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"no grammar file {spec!r} (give a .lark, .json, .gbnf or .regex file, "
                                "builtin:NAME, or --regex PATTERN)")
    suffix = path.suffix.lower()
    if kind is None:
        kind = next((name for name, suffixes in KINDS.items() if suffix in suffixes), None)
        if kind is None:
            raise ValueError(f"cannot tell the kind of grammar of {spec!r} from its suffix {suffix!r} "
                             "(.lark, .json, .gbnf or .regex): name it with --kind")
    text = path.read_text(encoding="utf-8")
    if kind == "lark":
        return Grammar.from_lark(text)
    if kind == "json":
        return Grammar.from_json_schema(text, property_order=property_order, whitespace=whitespace, strict=strict)
    if kind == "gbnf":
        return Grammar.from_gbnf(text)
    if kind == "regex":
        return Grammar.from_regex(text.rstrip("\n"))
    raise ValueError(f"unknown grammar kind {kind!r} (one of {', '.join(KINDS)})")


def load_vocabulary(name: str) -> Vocabulary:
    """``smollm2`` (the demo model's, read from its GGUF file's header: no weights are
    loaded), a ``.gguf`` file, or a tokenizer.json path."""
    if name == "smollm2":
        from .smollm2 import GGUF_FILE, smollm2_directory

        return Vocabulary.from_gguf(smollm2_directory() / GGUF_FILE)
    path = Path(name)
    if path.is_file() and path.suffix.lower() == ".gguf":
        return Vocabulary.from_gguf(path)
    if path.is_file():
        Tokenizer = require("tokenizers", "hf").Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as error:  # the tokenizers library raises a bare Exception for a malformed file
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise VocabularyError(f"{name!r} is not a tokenizer.json the tokenizers library can read: "
                                  f"{reason}") from None
        return Vocabulary.from_tokenizers(tokenizer)
    raise FileNotFoundError(f"no tokenizer {name!r}: give 'smollm2', a .gguf file or the path of a tokenizer.json")


def _line_column(data: bytes, offset: int) -> tuple[int, int]:
    before = data[:offset]
    line = before.count(b"\n") + 1
    column = len(before) - (before.rfind(b"\n") + 1) + 1
    return line, column


def _grammar_options(args) -> dict:
    return {"regex": args.regex, "kind": args.kind, "property_order": args.property_order,
            "whitespace": args.whitespace, "strict": not args.open_objects}


def command_compile(args) -> int:
    start = time.perf_counter()
    grammar = load_grammar(args.grammar, **_grammar_options(args))
    whole = grammar.whole()  # a JSON Schema's every rule: every error of the file, here
    seconds = time.perf_counter() - start
    stats = {"terminals": len(whole.terminals), "rules": len(whole.rules), "grammar_seconds": round(seconds, 4)}
    if args.tokenizer:
        vocab = load_vocabulary(args.tokenizer)
        start = time.perf_counter()
        compiled = compile_grammar(grammar, vocab)
        matcher = compiled.matcher()
        matcher.allowed_token_ids()
        stats.update(vocabulary_size=vocab.size, first_mask_seconds=round(time.perf_counter() - start, 4),
                     memory_bytes=compiled.memory_bytes)
    print(json.dumps(stats, indent=2))
    return 0


def command_check(args) -> int:
    grammar = load_grammar(args.grammar, **_grammar_options(args))
    data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    if args.strip_newline and data.endswith(b"\n"):
        data = data[:-1]
    compiled = compile_grammar(grammar, BYTE_TOKENS)
    failure = _mismatch(compiled, data)
    if failure is None:
        print(f"{args.file}: matches")
        return 0
    # text files end with a line break that is seldom part of the language: say so, unless --exact
    if not args.exact and data.endswith(b"\n") and _mismatch(compiled, data.rstrip(b"\r\n")) is None:
        print(f"{args.file}: matches (without its final line break; --exact to count it)")
        return 0
    offset, reason = failure
    line, column = _line_column(data, offset)
    print(f"{args.file}:{line}:{column}: no match: {reason}")
    return 1


def _mismatch(compiled, data: bytes) -> "tuple[int, str] | None":
    """None when ``data`` is a sentence of the grammar, else (byte offset, reason)."""
    matcher = compiled.matcher()
    try:
        matcher.accept_string(data)
    except StringRejected as error:
        return error.offset, f"the grammar cannot continue with {data[error.offset:error.offset + 20]!r}"
    if not matcher.can_terminate():
        return len(data), "the text ends too early"
    return None


def load_model(name: str, *, quiet: bool):
    """(model, tokenizer): ``smollm2`` (the demo model) or a local Hugging Face model folder
    (read offline: nothing is downloaded)."""
    if name == "smollm2":
        from .smollm2 import load_smollm2

        return load_smollm2(show_progress=not quiet)
    path = Path(name)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"no model {name!r}: give 'smollm2' or a Hugging Face model folder (with "
                                "config.json and the tokenizer files)")
    transformers = require("transformers", "hf")

    tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
    return model, tokenizer


def command_generate(args) -> int:
    from .hf import generate_chat, vocabulary_for_model

    if args.max_new_tokens < 1:
        raise ValueError(f"--max-new-tokens must be at least 1, not {args.max_new_tokens}")
    grammar = load_grammar(args.grammar, **_grammar_options(args))
    model, tokenizer = load_model(args.model, quiet=args.quiet)
    compiled = compile_grammar(grammar, vocabulary_for_model(tokenizer, model))
    answer = generate_chat(model, tokenizer, compiled, [{"role": "user", "content": args.prompt}],
                           max_new_tokens=args.max_new_tokens)
    print(answer.text)
    if not answer.finished:
        print(f"(stopped after {args.max_new_tokens} tokens before the grammar was complete)", file=sys.stderr)
        return 1
    return 0


def command_bench(args) -> int:
    import numpy as np

    for option, value in (("--walks", args.walks), ("--steps", args.steps)):
        if value < 1:  # checked before the minutes of loading a model
            raise ValueError(f"{option} must be at least 1, not {value}")
    grammar = load_grammar(args.grammar, **_grammar_options(args))
    vocab = load_vocabulary(args.tokenizer)
    start = time.perf_counter()
    compiled = compile_grammar(grammar, vocab)
    matcher = compiled.matcher()
    bitmask = np.zeros((1, compiled.bitmask_width), dtype=np.int32)
    matcher.fill_next_token_bitmask(bitmask, 0)
    first_mask = time.perf_counter() - start
    rng = np.random.default_rng(args.seed)
    times = []
    eos = set(vocab.eos_token_ids)
    for _ in range(args.walks):
        matcher.reset()
        for _ in range(args.steps):
            tick = time.perf_counter()
            matcher.fill_next_token_bitmask(bitmask, 0)
            times.append(time.perf_counter() - tick)
            allowed = [t for t in unpack_bitmask_row(bitmask[0], vocab.size).nonzero()[0].tolist() if t not in eos]
            if not allowed:
                break
            matcher.accept_token(int(rng.choice(allowed)))
    micro = np.array(times) * 1e6
    print(json.dumps({"first_mask_ms": round(first_mask * 1e3, 2), "masks": len(times),
                      "mask_p50_us": round(float(np.percentile(micro, 50)), 1),
                      "mask_p99_us": round(float(np.percentile(micro, 99)), 1),
                      "mask_max_us": round(float(micro.max()), 1)}, indent=2))
    return 0


def command_warm_up(args) -> int:
    from ..masking.warm_up import SAMPLE_TEXT, pieces_vocabulary, warm_up, warm_up_masks

    started = time.perf_counter()
    helper = None
    if args.jobs > 1:  # the masks' kernels meanwhile, in a second process (see warm_up_masks)
        helper = subprocess.Popen([sys.executable, "-m", "gramalign", "warm-up", "--jobs", "1", "--masks-first"]
                                  + (["--schemas-only"] if args.schemas_only else []), stdout=subprocess.DEVNULL)
    try:
        vocabulary = pieces_vocabulary([SAMPLE_TEXT])
        if args.masks_first:
            warm_up_masks(vocabulary)
        warm_up(vocabulary, general=not args.schemas_only, eager=not args.schemas_only)
    except BaseException:
        if helper is not None:
            helper.kill()  # (not left compiling behind a warm-up that failed)
        raise
    if helper is not None and helper.wait() != 0:
        print("gramalign warm-up: the second process failed (its kernels compile on first use)", file=sys.stderr)
    print(f"gramalign kernels ready in {time.perf_counter() - started:.1f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(prog="gramalign", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"gramalign {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    def add(name: str, handler, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("grammar", help="a .lark/.json/.gbnf/.regex file, builtin:NAME, or a pattern with --regex")
        sub.add_argument("--regex", action="store_true", help="the grammar argument is a regular expression")
        sub.add_argument("--kind", choices=sorted(KINDS), help="the grammar file's kind (by default its suffix's)")
        sub.add_argument("--property-order", choices=["schema", "any"], default="schema",
                         help="JSON Schema objects: keys in schema order (default) or any order")
        sub.add_argument("--whitespace", choices=["compact", "flexible"], default="compact",
                         help="JSON Schema output whitespace")
        sub.add_argument("--open-objects", action="store_true",
                         help="JSON Schema objects without additionalProperties take extra keys, as the "
                              "specification says (by default they are closed: strict=False in Python)")
        sub.set_defaults(handler=handler)
        return sub

    sub = add("compile", command_compile, "compile a grammar and print its statistics, or the error")
    sub.add_argument("--tokenizer", help="also compile masks: 'smollm2', a .gguf file or a tokenizer.json path")
    sub = add("check", command_check, "does a file match the grammar? (exit 0: yes, 1: no)")
    sub.add_argument("file", help="the text to check ('-' for standard input)")
    sub.add_argument("--strip-newline", action="store_true", help="always ignore one final newline of the file")
    sub.add_argument("--exact", action="store_true",
                     help="a final line break counts (by default a text that matches without it matches)")
    sub = add("generate", command_generate, "generate text with the demo model (SmolLM2-135M-Instruct)")
    sub.add_argument("--prompt", required=True)
    sub.add_argument("--max-new-tokens", type=int, default=256)
    sub.add_argument("--quiet", action="store_true", help="no loading progress on stderr")
    sub.add_argument("--model", default="smollm2",
                     help="'smollm2' (the demo model, default) or a local Hugging Face model folder")
    sub = add("bench", command_bench, "time the first mask and masks along random walks")
    sub.add_argument("--tokenizer", default="smollm2",
                     help="'smollm2' (default), a .gguf file or a tokenizer.json path")
    sub.add_argument("--walks", type=int, default=5)
    sub.add_argument("--steps", type=int, default=100)
    sub.add_argument("--seed", type=int, default=0)
    help_text = ("compile the kernels of compiling and masking into numba's cache (a fresh environment "
                 "without a wheel's shipped kernels compiles them on first use, for minutes)")
    sub = commands.add_parser("warm-up", help=help_text, description=help_text)
    sub.add_argument("--schemas-only", action="store_true",
                     help="only the kernels of JSON Schemas as compile builds them (not the generalized "
                          "parser's, nor those of whole tables: eager=True, a server's admission)")
    sub.add_argument("--jobs", type=int, choices=(1, 2), default=min(2, os.cpu_count() or 1),
                     help="processes that compile (default: 2 where there are 2 cores)")
    sub.add_argument("--masks-first", action="store_true", help=argparse.SUPPRESS)
    sub.set_defaults(handler=command_warm_up)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gramalign`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (GramalignError, ValueError) as error:
        print(f"gramalign {args.command}: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a missing file, a directory where a file belongs, no permission...
        where = f": {error.filename}" if error.filename else ""
        print(f"gramalign {args.command}: {error.strerror or error}{where}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
