"""Where the compiled kernels' reference counts happen, by the source line that made them.

    .venv/bin/python benchmarks/refcount_sites.py [--top 40] [walk_replay.py's options]

Runs ``walk_replay.py`` (its workload, then one replay: pass ``--repeats 1``) in a child
process under numba's NRT debug mode, with every ``NRT_incref``/``NRT_decref`` call tagged
when it is compiled by the Python line being lowered (an inlined helper's line; for the
helper's parameters, its ``def``), into a separate numba cache. The child prints a line per
call it executes; this process counts them and prints the totals per kernel and the top
sites. Slow (every call is printed): a few hundred tokens are enough.

What the counts are: calls left after LLVM's reference-count pruning (the tag is an
argument of the call, so pruning still pairs them), executed. perf shows what they cost
(``walk_replay.py --nrt``); this shows where they come from.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = "_GRAMALIGN_REFCOUNT_CHILD"
TAG = "REFCOUNT "


def _child() -> None:
    from numba.core import cgutils, lowering
    from numba.core.runtime import context

    def site() -> str:
        frame = sys._getframe(2)
        while frame is not None:
            lower = frame.f_locals.get("self")
            if isinstance(lower, lowering.BaseLower):
                return f"{Path(lower.loc.filename).name}:{lower.loc.line} {lower.fndesc.qualname}"
            frame = frame.f_back
        return "? ?"

    def tagged_incref_decref(self, builder, typ, value, funcname):
        from numba.core.runtime.nrtdynmod import incref_decref_ty

        self._require_nrt()
        for _, meminfo in self.get_meminfos(builder, typ, value):
            function = cgutils.get_or_insert_function(builder.module, incref_decref_ty, funcname)
            text = f"{TAG}{funcname} {site()} {str(typ).replace(' ', '')}\n".replace("%", "%%")
            tag = cgutils.global_constant(builder.module, "nrt_debug_printf_format",
                                          cgutils.make_bytearray((text + "\0").encode("ascii", "replace")))
            builder.call(function, [meminfo, builder.bitcast(tag, cgutils.voidptr_t)])

    context.NRTContext._call_incref_decref = tagged_incref_decref
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import walk_replay

    walk_replay.main()


def main() -> None:
    if os.environ.get(CHILD):
        return _child()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=40)
    args, rest = parser.parse_known_args()
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, **{CHILD: "1", "NUMBA_DEBUG_NRT": "1", "NUMBA_DEBUG_NRT_STACK_LIMIT": "1",
                                  "NUMBA_CACHE_DIR": cache})
        child = subprocess.Popen([sys.executable, __file__, *rest], env=env, stdout=subprocess.PIPE, text=True,
                                 errors="replace")
        sites = collections.Counter()
        for line in child.stdout:
            if line.startswith(TAG):
                sites[line[len(TAG):].rstrip("\n")] += 1
            elif not line.startswith("***"):
                print(line, end="", file=sys.stderr)
        if child.wait():
            sys.exit(child.returncode)
    kernels = collections.Counter()
    for key, count in sites.items():
        kernels[key.split()[2]] += count
    print(f"{sum(sites.values()):,} reference-count calls\n\nper kernel (inlined helpers count in their caller):")
    for name, count in kernels.most_common(args.top):
        print(f"{count:>12,}  {name}")
    print("\nper site (call, line, kernel, type):")
    for key, count in sites.most_common(args.top):
        print(f"{count:>12,}  {key}")


if __name__ == "__main__":
    main()
