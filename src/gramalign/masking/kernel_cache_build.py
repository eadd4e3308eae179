"""Build the kernel cache that ships inside the package (see :mod:`gramalign.kernel_cache`).

    python -m gramalign.masking.kernel_cache_build [--workload full|regex] [--folder DIR]

Runs a workload in a child process that compiles its kernels for numba's generic CPU of this
machine's architecture (``NUMBA_CPU_NAME=generic``: code any CPU of that architecture runs)
into the shipped cache's folder, then records there what they were built for. ``full`` (the
default, for a wheel) is :func:`~gramalign.masking.warm_up.warm_up` and a walk of each
built-in Lark grammar and of a regex, on a vocabulary of bytes and multi-byte pieces; it
takes minutes. ``regex`` compiles and masks one regex (the tests build it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np

from ..kernel_cache import BUILD_ENV, MANIFEST, SHIPPED

_TEXTS = ('{"id": 42, "name": "Ada Lovelace", "tags": ["red", "green"], "ok": true, "x": -1.5e3}',
          "SELECT name, count(*) FROM users WHERE id > 10 GROUP BY name;",
          "def f(x):\n    return [y for y in x if y]\n", "2024-01-31")


def build(folder: "Path | str | None" = None, workload: str = "full") -> Path:
    """Fill ``folder`` (by default the package's ``_kernel_cache``) in a child process;
    returns the folder. Kernels already there are kept."""
    folder = Path(folder) if folder is not None else SHIPPED
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, NUMBA_CPU_NAME="generic", GRAMALIGN_SHIPPED_KERNELS=str(folder))
    env[BUILD_ENV] = "1"
    env.pop("NUMBA_CPU_FEATURES", None)
    env.pop("NUMBA_DISABLE_JIT", None)
    subprocess.run([sys.executable, "-m", "gramalign.masking.kernel_cache_build", "--child", workload], env=env,
                   check=True)
    return folder


def walk_vocabulary():
    """The vocabulary the build's walks use: bytes and pieces of its texts."""
    from .warm_up import pieces_vocabulary

    return pieces_vocabulary(_TEXTS)


def _walk(compiled, text: str) -> None:
    """A mask before every byte of ``text`` (stopping where the grammar does not take it)."""
    from ..errors import StringRejected
    from .bitmask import bitmask_width

    bitmask = np.zeros((1, bitmask_width(compiled.vocabulary.size)), dtype=np.int32)
    matcher = compiled.matcher()
    for char in text:
        matcher.fill_next_token_bitmask(bitmask)
        try:
            matcher.accept_string(char)
        except StringRejected:
            return


def _fill(workload: str) -> None:
    from numba.core.registry import cpu_target

    from ..grammar.grammar import Grammar
    from .compiler import compile
    from .warm_up import warm_up

    vocabulary = walk_vocabulary()
    _walk(compile(Grammar.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"), vocabulary), _TEXTS[3])
    if workload == "full":
        warm_up(vocabulary)
        for name, text in zip(("json", "sql", "python"), _TEXTS):
            _walk(compile(Grammar.builtin(name), vocabulary), text)
    manifest = {"numba": numba.__version__, "python": list(sys.version_info[:2]),
                "target": list(cpu_target.target_context.codegen().magic_tuple()), "workload": workload}
    (SHIPPED / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("full", "regex"), default="full")
    parser.add_argument("--folder", help="where to build (by default the package's _kernel_cache)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _fill(args.child)
    else:
        print(build(args.folder, args.workload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
